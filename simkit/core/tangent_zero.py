"""Tangents known to be zero when a kernel's struct-field arrays carry none (forward mode).

A simulation's kernels read the model through struct arguments (a cloth's triangle poses,
stiffnesses, areas) and differentiate with respect to the state: during such a tangent
launch every float array inside a struct argument has no tangent buffer, and the tangent
arithmetic that multiplies their zero tangents is wasted (IEEE rules keep the C++ compiler
from dropping ``x * 0``). codegen_tangent emits a second tangent body for that case, in
which those loads have a zero tangent known here, values computed from zero tangents only
have one too (:func:`static_zero`), and a builtin's tangent rule of the form
``return t1 + t2 - ...`` (each term a product holding one input's tangent) loses the terms of
zero tangents (:func:`drop_zero_terms`). The launch picks that body when the struct fields'
tangents are all absent (simkit.autograd.forward), and the general one otherwise.

Dropping a term whose tangent factor is exactly zero changes the result only where the
other factors are infinite or NaN, where a tangent is meaningless anyway.

Example::

    drop_zero_terms("return tan_a * b + a * tan_b;", {"b"})   # "tan_a * b"
"""

from __future__ import annotations

import re

from . import types as T
from . import builtins as B
from . import ir


def _differentiable(t) -> bool:
    kind = getattr(t, "_sk_kind", "")
    if kind == "scalar":
        return t.is_float
    return kind in ("vec", "mat", "quat", "transform") and t._sk_scalar.is_float


_FIELD = re.compile(r"^\$o0 = \$a0\.(\w+);$")
_LOAD = "sk::tan_load(sk::grad_ptr<Dense>($a0"


def _walk(block: ir.Block):
    """Every statement of ``block``, nested blocks included (loop carries as ``(c, final)``)."""
    for s in block.stmts:
        if isinstance(s, ir.Op):
            yield s
        elif isinstance(s, ir.If):
            yield from _walk(s.then)
            yield from _walk(s.orelse)
        elif isinstance(s, ir.Loop):
            if s.cond_block is not None:
                yield from _walk(s.cond_block)
            yield from _walk(s.body)
            yield from s.carried


def struct_field_arrays(f: ir.FunctionIR) -> set:
    """Ids of the variables holding a float array read from a field of a struct parameter of
    kernel ``f`` (at any depth): the arrays whose tangents the constant-fields body drops."""
    source = {v.id for v in f.params if getattr(v.type, "_sk_kind", "") == "struct"}
    arrays = set()
    for s in _walk(f.body):
        if not isinstance(s, ir.Op) or len(s.outs) != 1 or not s.args or not isinstance(s.args[0], ir.Var):
            continue
        m = _FIELD.match(s.fwd)
        if m is None or s.args[0].id not in source:
            continue
        out = s.outs[0]
        kind = getattr(out.type, "_sk_kind", "")
        if kind == "struct":
            source.add(out.id)
        elif kind == "array" and getattr(out.type.dtype, "_sk_scalar", None) is not None \
                and T.holds_floats(out.type.dtype):
            arrays.add(out.id)
    return arrays


def _zero_op(s: ir.Op, zero: set, inactive: set) -> bool:
    """Whether op ``s`` gives its outputs zero tangents when the tangents of ``zero`` are zero."""
    tan = s.tan
    if tan is None or tan == ir.ZERO:
        return True
    if s.tan_fused:
        return False  # a function call: its body may load arrays
    if tan != ir.LINEAR and _LOAD in tan:
        return isinstance(s.args[0], ir.Var) and s.args[0].id in inactive
    if tan != ir.LINEAR and "grad_ptr" in tan:
        return False
    return all(a.id in zero for a in s.args if isinstance(a, ir.Var) and _differentiable(a.type))


def static_zero(f: ir.FunctionIR, inactive: set) -> set:
    """Ids of the variables of kernel ``f`` whose tangent is zero wherever they are assigned,
    given that the arrays ``inactive`` have no tangent: a fixpoint from all variables down,
    since a loop may carry a value computed later in its body."""
    sites: dict = {}
    for s in _walk(f.body):
        if isinstance(s, ir.Op):
            for o in s.outs:
                sites.setdefault(o.id, []).append(s)
        else:
            c, final = s
            sites.setdefault(c.id, []).append(final)
    zero = {v.id for v in f.vars if _differentiable(v.type)} | {v.id for v in f.params if _differentiable(v.type)}
    changed = True
    while changed:
        changed = False
        for vid in list(zero):
            for site in sites.get(vid, ()):
                ok = _zero_op(site, zero, inactive) if isinstance(site, ir.Op) else (
                    not isinstance(site, ir.Var) or site.id in zero)
                if not ok:
                    zero.discard(vid)
                    changed = True
                    break
    return zero


def _split_terms(expr: str) -> list | None:
    """``[(sign, term)]`` of ``expr`` split at its top-level binary ``+`` and ``-``, or None."""
    terms, depth, start, sign = [], 0, 0, "+"
    text = expr.strip()
    if text.startswith("-"):
        sign, text = "-", text[1:]
    for k, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch in "+-" and depth == 0 and k > 0:
            prev = text[:k].rstrip()
            if not prev or prev[-1] in "+-*/(,?:<>=!&|":
                continue  # a unary sign
            if prev[-1] in "eE" and len(prev) > 1 and prev[-2].isdigit():
                continue  # an exponent (1e-5)
            terms.append((sign, text[start:k].strip()))
            sign, start = ch, k + 1
    if depth != 0:
        return None
    terms.append((sign, text[start:].strip()))
    return terms


def drop_zero_terms(rule: str, zero_params: set) -> str | None:
    """The expression of tangent ``rule`` without the terms of the inputs ``zero_params`` (names),
    or None when the rule is not a sum of terms each holding exactly one input's tangent."""
    m = re.fullmatch(r"\s*return (.*);\s*", rule)
    if m is None or ";" in m.group(1):
        return None
    terms = _split_terms(m.group(1))
    if not terms:
        return None
    kept = []
    for sign, term in terms:
        tans = set(re.findall(r"\btan_(\w+)\b", term))
        if len(tans) != 1:
            return None
        if tans.pop() not in zero_params:
            kept.append((sign, term))
    if not kept:
        return "{}"
    out = ("-" if kept[0][0] == "-" else "") + kept[0][1]
    for sign, term in kept[1:]:
        out += f" {sign} {term}"
    return out


# Helpers a rule may call besides operators: inlined into a kernel they need their namespace.
_HELPERS = {"dot_", "cross_", "outer_", "matvec", "matmat", "qmul"}
_BY_CNAME = {b.cname: b for entries in B.TABLE.values() for b in entries}
_CALL = re.compile(r"^\$tan_o0 = sk::tan_(\w+)\((.*)\);$")


def simplified_rule(op: ir.Op, zero_args: set, arg_text, tan_text) -> str | None:
    """The C++ statement of builtin op ``op``'s tangent without the terms of its arguments at
    positions ``zero_args`` (their tangents known zero), inlined over the argument texts; None
    when the rule cannot be simplified so (the general call then runs)."""
    m = _CALL.match(op.tan or "")
    b = _BY_CNAME.get(m.group(1)) if m else None
    if b is None or b.tan is None or not zero_args:
        return None
    names = [n for n, _p in b.params]
    if len(names) != len(op.args):
        return None
    expr = drop_zero_terms(b.tan, {names[k] for k in zero_args})
    if expr is None:
        return None
    if expr == "{}":
        return "$tan_o0 = {};"
    if expr.startswith("-") and getattr(op.outs[0].type, "_sk_kind", "") not in ("scalar", "vec"):
        return None  # unary minus is defined for scalars and vectors
    values = {n: f"({arg_text(a)})" for n, a in zip(names, op.args)}
    values.update({f"tan_{n}": f"({tan_text(a)})" for n, a in zip(names, op.args)})

    def sub(mm):
        word = mm.group(0)
        if word in values:
            return values[word]
        if word in _HELPERS:
            return f"sk::{word}"
        raise KeyError(word)
    try:
        inlined = re.sub(r"\b[A-Za-z_]\w*\b", sub, expr)
    except KeyError:
        return None  # a template parameter or another helper: only the header knows it
    return f"$tan_o0 = {inlined};"
