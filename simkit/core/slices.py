"""Constant slices of vectors, quaternions and matrices in kernels: ``v[1:]``, ``v[::2]``,
``m[0, 1:]``, ``m[1:, :2]``, ``m[:, 0]``, read, assigned (``v[1:] = w``) and updated in place
(``v[:2] += w``).

A slice is made of the component reads and component assignments the frontend already has
(``Builder.extract`` / ``Builder.insert``), so its adjoint is theirs: a read passes each
component's gradient back to the component it came from, and an assignment gives the
components it overwrote no gradient (the value they held no longer reaches the result).

The bounds and steps must be known at compile time (numbers or captured constants); they
follow Python's rules (negative bounds count from the end). A slice along one dimension
gives a vector, along both of a matrix a matrix; an integer index drops its dimension.

Example::

    @sk.kernel
    def tail(v: sk.array(dtype=sk.vec4), out: sk.array(dtype=sk.vec3)):
        i = sk.tid()
        w = v[i]
        w[:2] += sk.vec2(1.0, 1.0)
        out[i] = w[1:]
"""

from __future__ import annotations

import ast
import itertools

from . import ir
from . import types as T
from .builtins import type_str


def has_slice(sl) -> bool:
    """Whether subscript ``sl`` (the ``slice`` of an ``ast.Subscript``) holds a slice.

    Example::

        has_slice(ast.parse("v[1:]").body[0].value.slice)    # True
    """
    return any(isinstance(e, ast.Slice) for e in (sl.elts if isinstance(sl, ast.Tuple) else [sl]))


def _bound(builder, e, node):
    return None if e is None else builder.static_int(e, node)


def _positions(builder, base, sl, node):
    """Per dimension of ``base``'s type: (component indices, whether the dimension is kept)."""
    t = base.type
    kind = getattr(t, "_sk_kind", "")
    if kind == "array":
        builder.error("slices of arrays are not supported in kernels (vectors, quaternions and matrices take "
                      "constant slices: v[1:], m[0, :2])", node)
    if kind not in ("vec", "quat", "mat"):
        builder.error(f"{type_str(t)} cannot be sliced (vectors, quaternions and matrices can)", node)
    elts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    shape = t._sk_shape
    if len(elts) > len(shape):
        builder.error(f"{type_str(t)} takes at most {len(shape)} indices, got {len(elts)}", node)
    elts += [ast.Slice(None, None, None)] * (len(shape) - len(elts))  # m[1:] keeps every column
    dims = []
    for e, n in zip(elts, shape):
        if isinstance(e, ast.Slice):
            step = _bound(builder, e.step, node)
            if step == 0:
                builder.error("slice step cannot be zero", node)
            picked = list(range(*slice(_bound(builder, e.lower, node), _bound(builder, e.upper, node), step)
                                .indices(n)))
            if not picked:
                builder.error(f"the slice selects no component of {type_str(t)} (length {n})", node)
            dims.append((picked, True))
        else:
            k = builder.static_int(e, node)
            if not -n <= k < n:
                builder.error(f"index {k} out of range for length {n}", node)
            dims.append(([k % n], False))
    return dims


def _slice_type(t, dims):
    sizes = [len(p) for p, kept in dims if kept]
    if len(sizes) == 1:
        return T.vector(sizes[0], t._sk_scalar)
    return T.matrix((sizes[0], sizes[1]), t._sk_scalar)


def _const_index(k: int) -> ir.Const:
    return ir.Const(k, T.int32)


def read(builder, base, sl, node):
    """The value of ``base[sl]`` (a vector or matrix of the selected components).

    Example::

        read(builder, v, subscript.slice, subscript)    # v[1:] of a vec4: a vec3
    """
    if isinstance(base, ir.Const):
        base = builder.materialize(base)
    dims = _positions(builder, base, sl, node)
    comps = [builder.extract(base, [_const_index(k) for k in at], node)
             for at in itertools.product(*(p for p, _kept in dims))]
    return builder.construct(_slice_type(base.type, dims), comps, node)


def write(builder, target, value, node):
    """Assign ``value`` to ``target`` (an ``ast.Subscript`` holding a slice of a local value):
    each selected component of the local takes the matching component of ``value``.

    Example::

        write(builder, assign.targets[0], builder.expr(assign.value), assign)    # v[1:] = w
    """
    base = builder.expr(target.value)
    if isinstance(base, ir.Const):
        base = builder.materialize(base)
    if not isinstance(base, ir.Var):
        builder.error("only local vectors, quaternions and matrices accept slice assignment", node)
    dims = _positions(builder, base, target.slice, node)
    want = _slice_type(base.type, dims)
    if isinstance(value, ir.Const):
        value = builder.materialize(value)
    vt = getattr(value, "type", None)
    if getattr(vt, "_sk_kind", "") not in ("vec", "quat", "mat") or vt._sk_shape != want._sk_shape:
        got = type_str(vt) if vt is not None else repr(getattr(value, "obj", value))
        builder.error(f"the slice is a {type_str(want)}; it takes a value of that shape, got {got}", node)
    kept = [k for k, (_p, keep) in enumerate(dims) if keep]
    for at in itertools.product(*(p for p, _kept in dims)):
        src = [dims[k][0].index(at[k]) for k in kept]
        comp = builder.extract(value, [_const_index(k) for k in src], node)
        base = builder.insert(base, [_const_index(k) for k in at], comp, node)
    builder.assign_target(target.value, base, node)
