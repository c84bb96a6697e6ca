"""``@sk.func`` overloaded by parameter types, as in Warp.

An ``@sk.func`` defined again under the same name in the same scope (same module, same
qualified name, its previous definition still bound there) with different parameter
types adds an overload; one with the same parameter types replaces the definition it
matches. The name is then bound to a function that picks, at each call, the definition
whose annotations the arguments match: exactly (an int32 value for ``x: int``) or as a
literal (``1`` is an int32 first, then any int type; ``1.0`` a float32, then any float type); an
unannotated parameter takes anything, with the lowest preference. No match, or two
equally good ones, is a CompileError naming the definitions.

Example::

    @sk.func
    def custom(x: int):
        return x + 1

    @sk.func
    def custom(x: float):
        return x + 1.0

    # in a kernel: custom(1) is 2 (the int definition), custom(1.0) is 2.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import builtins as B
from . import types as T
from .array import Array, ArrayType, GenericArrayType
from .modules import generic_accepts, is_generic

EXACT, LITERAL, ANY = 2, 1, 0  # how well one argument matches one annotation
_KINDS = {"i": ("i", "u"), "f": ("f",), "b": ("b",)}  # the scalar kinds a literal of each kind can take
_DEFAULT = {"i": T.int32, "f": T.float32, "b": T.bool_}


def signature(fn) -> tuple:
    """The parameter types of one definition (None for an unannotated parameter)."""
    return tuple(fn.arg_types.values())


def group_with_previous(new, scope: dict) -> None:
    """Make ``new`` the overload set of its name if ``scope`` (the namespace it is defined in)
    still binds that name to an earlier definition of the same function."""
    prev = scope.get(new.name)
    if not getattr(prev, "_sk_func", False) or prev.grad_of is not None or new.grad_of is not None:
        return
    if (prev.func.__module__, prev.func.__qualname__) != (new.func.__module__, new.func.__qualname__):
        return
    sig = signature(new)
    members = [m for m in prev.members if signature(m) != sig] + [new]
    if len(members) > 1:
        for m in members:
            m.grouped = True
        new.members = members


def _type_name(t: Any) -> str:
    if t is None:
        return "Any"
    if isinstance(t, (ArrayType, GenericArrayType)):
        return repr(t)
    return T.type_name(t)


def describe(fn) -> str:
    """``name(x: int32, y: vec3)`` with the file line of the definition."""
    params = ", ".join(f"{n}: {_type_name(t)}" for n, t in fn.arg_types.items())
    return f"{fn.name}({params}) at line {fn.func.__code__.co_firstlineno}"


def _kernel_match(want, t) -> int | None:
    if want is None:
        return ANY
    if isinstance(want, T.ScalarCategory) and isinstance(t, B.Weak):
        return LITERAL if any(k in want.kinds for k in _KINDS[t.kind]) else None
    if is_generic(want):
        return LITERAL if generic_accepts(want, t) else None
    if t is want or (isinstance(want, ArrayType) and t == want):
        return EXACT
    if isinstance(t, B.Weak) and isinstance(want, T.ScalarType):
        if want is t.default():  # a literal is of its default type first, as in Warp
            return EXACT
        return LITERAL if want.kind in _KINDS[t.kind] else None
    return None


def _python_match(want, v) -> int | None:
    if want is None:
        return ANY
    if isinstance(v, Array):
        if isinstance(want, GenericArrayType):
            return LITERAL if want.accepts(v.type()) else None
        return EXACT if isinstance(want, ArrayType) and want == v.type() else None
    if isinstance(want, T.ScalarCategory):
        kind = v.dtype.kind if isinstance(v, np.generic) else "b" if isinstance(v, bool) else \
            "i" if isinstance(v, int) else "f" if isinstance(v, float) else None
        return LITERAL if kind is not None and any(k in want.kinds for k in _KINDS.get(kind, kind)) else None
    if T.is_generic_value(want):
        return LITERAL if generic_accepts(want, type(v)) else None
    if not isinstance(want, T.ScalarType):
        return EXACT if type(v) is want else None
    if isinstance(v, np.generic):
        return EXACT if np.dtype(v.dtype) == want.np_dtype else None
    kind = "b" if isinstance(v, bool) else "i" if isinstance(v, int) else "f" if isinstance(v, float) else None
    if kind is None or want.kind not in _KINDS[kind]:
        return None
    return EXACT if want is _DEFAULT[kind] else LITERAL


def _pick(group, scores: list, given: str, fail) -> Any:
    """The member with the best score (a list per member: one score per argument, or None)."""
    ranked = [(sum(s), m) for m, s in zip(group.members, scores) if s is not None and None not in s]
    if not ranked:
        fail(f"no definition of {group.name}() takes ({given}); its definitions: "
             + "; ".join(describe(m) for m in group.members))
    best = max(r for r, _m in ranked)
    top = [m for r, m in ranked if r == best]
    if len(top) > 1:
        fail(f"the call {group.name}({given}) is ambiguous: it matches "
             + "; ".join(describe(m) for m in top) + ". Pass arguments of the exact parameter types "
             "(e.g. sk.float32(1.0), sk.int32(1))")
    return top[0]


def pick_for_kernel(group, args: list, builder, node) -> Any:
    """The definition a call in a kernel or function takes (a CompileError where none or several fit)."""
    scores = [[_kernel_match(w, getattr(a, "type", None)) for w, a in zip(m.arg_types.values(), args)]
              if len(m.arg_types) == len(args) else None for m in group.members]
    given = ", ".join(repr(getattr(a, "type", None)) if isinstance(getattr(a, "type", None), B.Weak)
                      else _type_name(getattr(a, "type", None)) for a in args)

    def fail(msg):
        builder.error(msg, node)
    return _pick(group, scores, given, fail)


def pick_for_python(group, args: tuple) -> Any:
    """The definition a call from Python runs (a TypeError where none or several fit)."""
    scores = [[_python_match(w, v) for w, v in zip(m.arg_types.values(), args)]
              if len(m.arg_types) == len(args) else None for m in group.members]
    given = ", ".join(type(v).__name__ for v in args)

    def fail(msg):
        raise TypeError(msg)
    return _pick(group, scores, given, fail)
