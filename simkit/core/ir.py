"""The typed intermediate representation between the frontend and codegen.

A function body is a tree of :class:`Block` s holding three kinds of statement:

- :class:`Op`: one forward C++ statement, its adjoint and its tangent (forward mode),
  as templates over the op's outputs and arguments (``$o0 $a1 $adj_o0 $adj_a1 $tan_a1``);
- :class:`If`: a structured branch; values that differ between the branches are
  merged by copy ops at the end of each branch (SSA phi nodes made explicit);
- :class:`Loop`: a dynamic ``range`` or ``while`` loop with its loop-carried
  variables; constant-trip loops never get here, the frontend unrolls them.

Every :class:`Var` is declared once at the top of the generated function, so the
adjoint's reverse sweep can see any value the forward replay computed.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count()
_CPP_RESERVED = set(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char class compl const constexpr
    const_cast continue decltype default delete do double dynamic_cast else enum explicit export extern false
    float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq
    private protected public register reinterpret_cast return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid typename union unsigned
    using virtual void volatile wchar_t while xor xor_eq args launch sk m std""".split()
)


def cpp_ident(name: str) -> str:
    """A C++-safe spelling of a Python identifier."""
    name = re.sub(r"\W", "_", name)
    return name + "_" if name in _CPP_RESERVED else name


class Var:
    """A typed value; ``name`` is the Python name it was bound to, if any."""

    __slots__ = ("id", "name", "type", "cname", "base", "weak_origin", "loop_depth")

    def __init__(self, type: Any, name: str | None = None, cname: str | None = None):
        self.id = next(_ids)
        self.name = name
        self.type = type
        self.weak_origin: tuple | None = None  # (name, line) when initialised from a bare literal
        self.loop_depth = 0
        # a generated C++ name is the base and a number, renumbered per function (number_locally)
        self.base = None if cname is not None else cpp_ident(name.lstrip("_")) if name else ""
        self.cname = cname if cname is not None else f"{self.base}_{self.id}" if self.base else f"_{self.id}"

    def __repr__(self):
        return f"Var({self.cname}: {getattr(self.type, '__name__', self.type)})"


@dataclass
class Const:
    """A compile-time constant; ``type`` is a simkit type or a ``builtins.Weak``."""

    value: Any
    type: Any


# An Op's tangent that is its forward statement over tangents: the op is linear in its float
# values (a copy, a component or field access, a constructor); integers (indices) stay primal.
LINEAR = "<linear>"
ZERO = "<zero>"  # a tangent that is zero although the op has an adjoint (an int converted to float)


@dataclass
class Op:
    outs: list
    args: list
    fwd: str
    adj: str | None
    line: int
    replay: bool = True  # False: a side effect (store, atomic, printf) the adjoint's replay must skip
    replay_fwd: str | None = None  # what the replay runs instead, when it must still produce outputs
    # Tangent (codegen.TangentWriter): a template over $tan_oK/$tan_aK (and the primal $oK/$aK),
    # LINEAR, ZERO, or None: zero where adj is None too (no derivative), else no rule (refused).
    tan: str | None = None
    tan_fused: bool = False  # the tangent statement also computes the outputs (a call's tangent)
    what: str = ""           # what the op is, for the refusal of a missing tangent rule


@dataclass
class Block:
    stmts: list = field(default_factory=list)

    def append(self, s):
        self.stmts.append(s)


@dataclass
class If:
    cond: Any
    then: Block
    orelse: Block
    line: int


@dataclass
class Loop:
    kind: str                 # "range" or "while"
    body: Block
    line: int
    carried: list = field(default_factory=list)   # [(carried Var, final Var)]
    exit_flags: list = field(default_factory=list)  # carried bool Vars that end the loop when set
    index: Var | None = None  # range: the loop variable
    start: Any = None
    end: Any = None
    step: Any = None
    cond_block: Block | None = None  # while: statements computing `cond`
    cond: Any = None
    id: int = field(default_factory=lambda: next(_ids))


def number_locally(variables: list, block: Block) -> None:
    """Number the generated C++ names of one function's ``variables`` (in the order they were
    made) and its loops from 0, so its C++ text does not depend on what the process compiled
    before: the same kernel gives the same source, and so the same cache key, in every process.

    Example::

        number_locally(builder.all_vars, builder.block)    # x_1042 -> x_3, L1050_n -> L0_n
    """
    taken = {v.cname for v in variables if v.base is None}  # a parameter may be called x_3
    for k, v in enumerate(variables):
        if v.base is not None:
            v.cname = f"{v.base}_{k}" if v.base else f"_{k}"
            while v.cname in taken:
                v.cname += "_"
    loops = itertools.count()

    def walk(b: Block) -> None:
        for s in b.stmts:
            if isinstance(s, If):
                walk(s.then)
                walk(s.orelse)
            elif isinstance(s, Loop):
                s.id = next(loops)
                if s.cond_block is not None:
                    walk(s.cond_block)
                walk(s.body)
    walk(block)


@dataclass
class FunctionIR:
    """What codegen needs for one kernel or function body."""

    name: str
    cname: str
    params: list              # Vars
    body: Block
    returns: list             # Vars holding the return values at the end (funcs)
    ret_types: list
    is_kernel: bool
    file: str
    line: int
    source_lines: dict        # line -> source text, for the // file:line markers
    vars: list                # every Var created while building, for declarations
    tid_dims: int = 0
    structs: list = field(default_factory=list)  # struct types used, nested ones first
    funcs: list = field(default_factory=list)    # FuncSpecs called directly
    reads: set = field(default_factory=set)      # {(parameter, field path)} of arrays read
    writes: set = field(default_factory=set)     # ... and written (stores, atomics)
    # How threads share those arrays, for a CPU launch split without atomics (core/private.py):
    gathers: set = field(default_factory=set)    # read at an element other than the thread's own
    adds: set = field(default_factory=set)       # += (atomic add/sub, old value unused) at such an element
    stores: set = field(default_factory=set)     # written any other way (=, min/max, add whose old value is used)
    shared_atomics: bool = False  # min/max or fetch-add: threads must see each other's results
    untracked: bool = False       # an array access whose parameter is unknown
    # Targets of float atomic_min/max: their adjoint compares against the value the launch left.
    extrema: set = field(default_factory=set)
    # Arrays a thread reads back at its own element after storing it there (the read takes the
    # stored value, access.py); two parameters of such a kernel must not share memory.
    forwarded: set = field(default_factory=set)
    # {(parameter, field path, axis, tid component): first line} of the array axes that every
    # thread indexes by that component of its thread index (kernels; see Builder.note_tid_index)
    tid_indexed: dict = field(default_factory=dict)
    enable_backward: bool = True  # False: the kernel's adjoint is empty (@sk.kernel(enable_backward=False))


def walk_vars(block: Block):
    """Every Var assigned in ``block`` (nested), in order."""
    for s in block.stmts:
        if isinstance(s, Op):
            yield from s.outs
        elif isinstance(s, If):
            yield from walk_vars(s.then)
            yield from walk_vars(s.orelse)
        elif isinstance(s, Loop):
            if s.index is not None:
                yield s.index
            if s.cond_block is not None:
                yield from walk_vars(s.cond_block)
            yield from walk_vars(s.body)


# A dynamic loop's trip count is unknown at compile time: its body counts this many times.
LOOP_WEIGHT = 4


def op_count(block: Block, adjoint: bool = False) -> int:
    """Statements one thread runs through ``block`` (both branches of an ``if``), as an
    estimate of its work; ``adjoint``: those of the adjoint (forward replay plus reverse)."""
    n = 0
    for s in block.stmts:
        if isinstance(s, Op):
            n += 1 + (adjoint and s.adj is not None)
        elif isinstance(s, If):
            n += op_count(s.then, adjoint) + op_count(s.orelse, adjoint)
        elif isinstance(s, Loop):
            body = op_count(s.body, adjoint) + (op_count(s.cond_block, adjoint) if s.cond_block else 0)
            n += LOOP_WEIGHT * body
    return n


def work_estimate(f: FunctionIR, adjoint: bool = False) -> int:
    """:func:`op_count` of a body plus that of every function it calls (each counted once)."""
    return op_count(f.body, adjoint) + sum(work_estimate(spec.ir, adjoint) for spec in f.funcs)


def holds_arrays(t) -> bool:
    """Whether a value of type ``t`` is or contains an array (a struct field, at any depth).

    A function taking one is generated as a template over the array layout (``Dense``,
    see codegen.kernel_source): its array accesses index densely in the kernel's dense loop."""
    kind = getattr(t, "_sk_kind", "")
    if kind == "array":
        return True
    return kind == "struct" and any(holds_arrays(f) for f in t._sk_fields.values())


def holds_float_arrays(t) -> bool:
    """Whether a value of type ``t`` is or contains (a struct field, at any depth) an array of
    elements that carry adjoints: what a call of a function returning nothing can pass
    gradients through."""
    kind = getattr(t, "_sk_kind", "")
    if kind == "array":
        return getattr(t, "dtype", None) is Any or differentiable(getattr(t, "dtype", None))
    return kind == "struct" and any(holds_float_arrays(f) for f in t._sk_fields.values())


def differentiable(t) -> bool:
    """Does a value of type ``t`` carry an adjoint (contains float values)?"""
    kind = getattr(t, "_sk_kind", "")
    if kind == "scalar":
        return t.is_float
    if kind in ("vec", "mat", "quat", "transform"):
        return t._sk_scalar.is_float
    if kind == "struct":
        return any(differentiable(f) for f in t._sk_fields.values())
    return False
