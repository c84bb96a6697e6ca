"""Frontend, builtins with several results (``B.PACKED_RESULTS``: Warp's ``svd3``, ``svd2``, ``qr3``,
``eig3``), in Warp's two spellings.

The table entry of such a builtin returns its results packed side by side in one matrix
(``svd3``: ``[U | sigma | V]``). Its call is compiled as that entry's call, then one component
copy per part, whose adjoint passes each part's gradient back into the packed matrix's and
whose tangent is the same copy of the tangents: so the decomposition runs once per call, and
its adjoint once in the backward pass.

- ``U, sigma, V = sk.svd3(A)``: the call is the tuple of its parts;
- ``sk.svd3(A, U, sigma, V)``: Warp's older out-parameter form; the parts are assigned to the
  locals named, which must be declared before (``U = sk.mat33()``), of the parts' types.

Example::

    call(builder, "qr3", node)     # node: the ast.Call of sk.qr3(A); a Py holding (Q, R)
"""

from __future__ import annotations

import ast

from . import builtins as B
from . import ir
from . import types as T
from .exprs import Py


def _part(builder, packed, first: int, cols: int):
    """Columns first .. first + cols of the packed matrix: a matrix, or a vector for one column."""
    rows = packed.type._sk_shape[0]
    F = packed.type._sk_scalar
    if cols == 1:
        out = builder.new_var(T.vector(rows, F))
        loop = f"SK_UNROLL for (int i = 0; i < {rows}; ++i)"
        builder.emit([out], [packed], f"{loop} $o0[i] = $a0[i][{first}];",
                     f"{loop} $adj_a0[i][{first}] += $adj_o0[i];", tan=ir.LINEAR)
        return out
    out = builder.new_var(T.matrix((rows, cols), F))
    loop = f"SK_UNROLL for (int i = 0; i < {rows}; ++i) SK_UNROLL for (int j = 0; j < {cols}; ++j)"
    builder.emit([out], [packed], f"{loop} $o0[i][j] = $a0[i][j + {first}];",
                 f"{loop} $adj_a0[i][j + {first}] += $adj_o0[i][j];", tan=ir.LINEAR)
    return out


def call(builder, name: str, node):
    """A call of multi-result builtin ``name`` (``node`` an ``ast.Call``) compiled by ``builder``:
    a ``Py`` holding the tuple of its parts, or, in the out-parameter form, ``Py(None)``."""
    parts = B.PACKED_RESULTS[name]
    names = ", ".join(p for p, _first, _cols in parts)
    if node.keywords:
        builder.error(f"sk.{name}() takes its arguments by position in a kernel: sk.{name}(A) or "
                      f"sk.{name}(A, {names})", node)
    if len(node.args) not in (1, 1 + len(parts)):
        builder.error(f"sk.{name}() takes a matrix A, or A and the out-parameters {names} "
                      f"({'; '.join(B.signatures(name))}); got {len(node.args)} arguments", node)
    outs = node.args[1:]
    if outs and not all(isinstance(a, ast.Name) for a in outs):
        builder.error(f"sk.{name}(A, {names}): the out-parameters must be local names", node)
    packed = builder.call_builtin(name, [builder.expr(node.args[0])], node)
    values = [_part(builder, packed, first, cols) for _p, first, cols in parts]
    if not outs:
        return Py(tuple(values))
    for target, value, (part, _first, _cols) in zip(outs, values, parts):
        if target.id not in builder.vars:
            builder.error(f"sk.{name}(...): declare the out-parameter '{target.id}' ({part}) before the call, "
                          f"e.g. {target.id} = {T.type_name(value.type)}()", node)
        builder.assign_name(target.id, value, node)
    return Py(None)
