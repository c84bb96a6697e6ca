"""Frontend, second half: expressions, calls, builtins, array access and conversions.

Mixed into :class:`frontend.Builder`; every method here turns one Python
expression form into IR ops and returns a value: an ``ir.Var``, an ``ir.Const``
(folded at compile time) or a :class:`Py` (a compile-time Python object such as
a module, a type or a function).
"""

from __future__ import annotations

import ast
import builtins as pybuiltins
import math
from typing import Any

import numpy as np

from . import builtins as B
from . import ir
from . import types as T
from .config import config


class Py:
    """A compile-time Python object (module, type, function, tuple of values...)."""

    def __init__(self, obj):
        self.obj = obj


class Undefined:
    """A name that is not bound on every path; using it is a compile error."""

    def __init__(self, message):
        self.message = message


class Retype(Exception):
    """A local first bound to a bare literal needs a wider type: the frontend builds again with it."""

    def __init__(self, key, type_):
        self.key, self.type = key, type_


class ShapeOf:
    def __init__(self, arr):
        self.arr = arr


def type_str(t) -> str:
    if isinstance(t, B.Weak):
        return repr(t)
    if getattr(t, "_sk_kind", None) == "array":
        return repr(t)
    return T.type_name(t)


_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Mod: "mod",
           ast.FloorDiv: "floordiv", ast.MatMult: "matmul", ast.Pow: "pow"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_PY_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "div": lambda a, b: a / b, "mod": lambda a, b: a % b, "floordiv": lambda a, b: a // b,
            "pow": lambda a, b: a ** b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
            "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b,
            "ne": lambda a, b: a != b}
_MATH_BUILTINS = {getattr(math, n): n for n in B.TABLE if hasattr(math, n) and callable(getattr(math, n))}
_MATH_BUILTINS.update({math.fabs: "abs", pybuiltins.abs: "abs", pybuiltins.min: "min", pybuiltins.max: "max",
                       pybuiltins.round: "round", pybuiltins.pow: "pow"})
_COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}


def _weak_of(v) -> B.Weak:
    if isinstance(v, (bool, np.bool_)):
        return B.WEAK_BOOL
    return B.WEAK_INT if isinstance(v, (int, np.integer)) else B.WEAK_FLOAT


def literal(value, t) -> str:
    """C++ spelling of a constant of type ``t``."""
    if getattr(t, "_sk_kind", "") in ("vec", "mat", "quat", "transform"):
        comps = ", ".join(literal(x, t._sk_scalar) for x in np.ravel(value))
        return f"sk::construct<{t._sk_ctype}>({comps})"
    if t is T.bool_:
        return "true" if value else "false"
    if t.is_float:
        f = float(value)
        if math.isnan(f):
            return f"{t._sk_ctype}(sk::nan_())"
        if math.isinf(f):
            return f"{t._sk_ctype}({'-' if f < 0 else ''}sk::inf_())"
        text = repr(f) if t is T.float64 else repr(float(np.float32(f)))
        if "e" not in text and "." not in text:
            text += ".0"
        return text + ("f" if t is T.float32 else "")
    iv = int(value)
    return {"int32_t": f"{iv}", "int64_t": f"int64_t({iv}LL)", "uint32_t": f"{iv}u"}[t._sk_ctype]


class ExprMixin:
    # -- values -------------------------------------------------------------------
    def expr(self, node):
        self.line = getattr(node, "lineno", self.line)
        meth = getattr(self, "expr_" + type(node).__name__, None)
        if meth is None:
            self.error(f"unsupported expression '{type(node).__name__}' in a kernel", node)
        v = meth(node)
        if isinstance(v, Undefined):
            self.error(v.message, node)
        return v

    def expr_multi(self, node, n):
        """Values for an n-target unpacking ``a, b = ...``."""
        if isinstance(node, ast.Call):
            f = self.expr(node.func)
            if isinstance(f, Py) and getattr(f.obj, "_sk_builtin", None) == "tid":
                t = self.tid(n, node)
                return list(t.obj) if isinstance(t, Py) else [t]
        if isinstance(node, ast.Tuple):
            vals = [self.expr(e) for e in node.elts]
        else:
            v = self.expr(node)
            vals = v.obj if isinstance(v, Py) and isinstance(v.obj, tuple) else [v]
        if len(vals) != n:
            self.error(f"cannot unpack {len(vals)} value(s) into {n} names", node)
        return list(vals)

    def capture(self, obj):
        """Classify a Python object found by name: numbers become constants."""
        if isinstance(obj, (bool, np.bool_)):
            return ir.Const(bool(obj), T.bool_)
        if isinstance(obj, (int, float)):
            return ir.Const(obj, _weak_of(obj))
        if isinstance(obj, np.generic):
            return ir.Const(obj.item(), T.scalar_from_numpy(obj.dtype))
        if isinstance(obj, T.Composite):
            return ir.Const(np.asarray(obj), type(obj))
        return Py(obj)

    def expr_Constant(self, node):
        v = node.value
        if isinstance(v, str):
            return Py(v)
        if isinstance(v, (bool, int, float)):
            return self.capture(v)
        self.error(f"unsupported constant {v!r}", node)

    def expr_Name(self, node):
        n = node.id
        if n in self.vars:
            return self.vars[n]
        if n in self.closure:
            return self.capture(self.closure[n])
        if n in self.globals:
            return self.capture(self.globals[n])
        if hasattr(pybuiltins, n):
            return Py(getattr(pybuiltins, n))
        self.error(f"unknown name '{n}'", node)

    def expr_Attribute(self, node):
        base = self.expr(node.value)
        a = node.attr
        if isinstance(base, Py):
            if not hasattr(base.obj, a):
                self.error(f"{getattr(base.obj, '__name__', base.obj)!s} has no attribute '{a}'", node)
            return self.capture(getattr(base.obj, a))
        if isinstance(base, ir.Const):
            base = self.materialize(base)
        kind = getattr(base.type, "_sk_kind", "")
        if kind in ("vec", "quat") and a in _COMPONENTS and _COMPONENTS[a] < base.type._sk_shape[0]:
            return self.extract(base, [ir.Const(_COMPONENTS[a], T.int32)], node)
        if kind == "transform" and a in ("p", "q"):
            t = T.vector(3, base.type._sk_scalar) if a == "p" else T.quat_of(base.type._sk_scalar)
            out = self.new_var(t)
            self.emit([out], [base], f"$o0 = $a0.{a};", f"$adj_a0.{a} += $adj_o0;")
            return out
        if kind == "struct":
            fields = base.type._sk_fields
            if a not in fields:
                self.error(f"struct {base.type.__name__} has no field '{a}' (fields: {', '.join(fields)})", node)
            out = self.new_var(fields[a])
            self.note_type(fields[a])
            adj = None if fields[a]._sk_kind == "array" else f"$adj_a0.{a} += $adj_o0;"
            self.emit([out], [base], f"$o0 = $a0.{a};", adj)
            return out
        if kind == "array" and a == "shape":
            return Py(ShapeOf(base))
        self.error(f"{type_str(base.type)} has no attribute '{a}'", node)

    def expr_Subscript(self, node):
        base = self.expr(node.value)
        if isinstance(base, Py):
            if isinstance(base.obj, ShapeOf):
                k = self.static_int(node.slice, node)
                arr = base.obj.arr
                if not 0 <= k < arr.type.ndim:
                    self.error(f"shape index {k} out of range for a {arr.type.ndim}-d array", node)
                out = self.new_var(T.int32)
                self.emit([out], [arr], f"$o0 = int32_t($a0.shape[{k}]);")
                return out
            if isinstance(base.obj, tuple):
                return base.obj[self.static_int(node.slice, node)]
            self.error("only arrays, vectors, matrices and quaternions can be indexed", node)
        if isinstance(base, ir.Const):
            base = self.materialize(base)
        kind = getattr(base.type, "_sk_kind", "")
        idx = self.indices(node.slice, node)
        if kind == "array":
            return self.load(base, idx, node)
        return self.extract(base, idx, node)

    def static_int(self, node, where) -> int:
        v = self.expr(node)
        if not (isinstance(v, ir.Const) and isinstance(v.value, (int, np.integer))):
            self.error("expected a constant integer index", where)
        return int(v.value)

    def indices(self, sl, node) -> list:
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(e, ast.Slice) for e in elts):
            self.error("slices are not supported in kernels; index single elements", node)
        out = []
        for e in elts:
            v = self.expr(e)
            if not self.is_int_value(v):
                self.error(f"indices must be integers, got {type_str(getattr(v, 'type', v))}", node)
            out.append(self.convert(v, T.int32, node) if isinstance(v, ir.Const) else v)
        return out

    def is_int_value(self, v) -> bool:
        t = getattr(v, "type", None)
        if isinstance(t, B.Weak):
            return t.kind == "i"
        return isinstance(t, T.ScalarType) and t.is_int

    # -- arrays ---------------------------------------------------------------------
    def bounds_check(self, n_idx: int) -> str:
        if config.mode != "debug":
            return ""
        idx = ", ".join(f"$a{k + 1}" for k in range(n_idx))
        return f"if (!sk::check_bounds(&sk_error, {self.line}, $a0, {idx})) $RETURN; "

    def check_index_count(self, arr, idx, node):
        if len(idx) != arr.type.ndim:
            self.error(f"{arr.type.ndim}-d array indexed with {len(idx)} index(es); give exactly {arr.type.ndim}", node)

    def load(self, arr, idx, node):
        self.check_index_count(arr, idx, node)
        out = self.new_var(arr.type.dtype)
        ix = ", ".join(f"$a{k + 1}" for k in range(len(idx)))
        fwd = self.bounds_check(len(idx)) + f"$o0 = sk::at($a0, {ix});"
        self.emit([out], [arr, *idx], fwd, f"sk::accum_grad(sk::grad_ptr($a0, {ix}), $adj_o0);")
        return out

    def store(self, arr, idx, value, node):
        self.check_index_count(arr, idx, node)
        value = self.convert(value, arr.type.dtype, node)
        ix = ", ".join(f"$a{k + 1}" for k in range(len(idx)))
        v = f"$a{len(idx) + 1}"
        fwd = self.bounds_check(len(idx)) + f"sk::at($a0, {ix}) = {v};"
        adj = f"if (auto* g = sk::grad_ptr($a0, {ix})) $adj_a{len(idx) + 1} += *g;"
        self.emit([], [arr, *idx, value], fwd, adj, replay=False)

    def atomic(self, name, arr, idx, value, node, want_result=True):
        if not (isinstance(arr, ir.Var) and getattr(arr.type, "_sk_kind", "") == "array"):
            self.error(f"{name} needs an array as its first argument", node)
        self.check_index_count(arr, idx, node)
        dt = arr.type.dtype
        if name in ("atomic_min", "atomic_max") and dt._sk_kind not in ("scalar", "vec"):
            self.error(f"{name} works on scalar and vector arrays", node)
        value = self.convert(value, dt, node)
        ix = ", ".join(f"$a{k + 1}" for k in range(len(idx)))
        v = f"$a{len(idx) + 1}"
        adj_v = f"$adj_a{len(idx) + 1}"
        fn = {"atomic_add": "atomic_add_any", "atomic_sub": "atomic_add_any",
              "atomic_min": "atomic_min_any", "atomic_max": "atomic_max_any"}[name]
        operand = f"-{v}" if name == "atomic_sub" else v
        check = self.bounds_check(len(idx))
        out = self.new_var(dt) if want_result else None
        assign = "$o0 = " if out is not None else ""
        fwd = check + f"{assign}sk::{fn}(&sk::at($a0, {ix}), {operand});"
        if name == "atomic_add":
            adj = f"if (auto* g = sk::grad_ptr($a0, {ix})) {adj_v} += *g;"
        elif name == "atomic_sub":
            adj = f"if (auto* g = sk::grad_ptr($a0, {ix})) {adj_v} -= *g;"
        elif dt._sk_kind == "scalar":
            # The thread whose value is the final extremum receives its gradient.
            adj = f"if (auto* g = sk::grad_ptr($a0, {ix})) if (sk::at($a0, {ix}) == {v}) {adj_v} += *g;"
        else:
            adj = None
        replay_fwd = (check + f"$o0 = sk::at($a0, {ix});") if out is not None else None
        self.emit([out] if out is not None else [], [arr, *idx, value], fwd, adj, replay=False, replay_fwd=replay_fwd)
        return out

    # -- composites -----------------------------------------------------------------
    def extract(self, base, idx, node):
        t = base.type
        kind = getattr(t, "_sk_kind", "")
        if kind in ("vec", "quat"):
            if len(idx) != 1:
                self.error(f"{type_str(t)} takes one index", node)
            self.static_bounds(idx[0], t._sk_shape[0], node)
            out = self.new_var(t._sk_scalar)
            self.emit([out], [base, idx[0]], "$o0 = $a0[$a1];", "$adj_a0[$a1] += $adj_o0;")
            return out
        if kind == "mat":
            r, c = t._sk_shape
            if len(idx) == 2:
                self.static_bounds(idx[0], r, node)
                self.static_bounds(idx[1], c, node)
                out = self.new_var(t._sk_scalar)
                self.emit([out], [base, *idx], "$o0 = $a0[$a1][$a2];", "$adj_a0[$a1][$a2] += $adj_o0;")
                return out
            if len(idx) == 1:
                self.static_bounds(idx[0], r, node)
                out = self.new_var(T.vector(c, t._sk_scalar))
                self.emit([out], [base, idx[0]], f"for (int k = 0; k < {c}; ++k) $o0[k] = $a0[$a1][k];",
                          f"for (int k = 0; k < {c}; ++k) $adj_a0[$a1][k] += $adj_o0[k];")
                return out
        self.error(f"{type_str(t)} cannot be indexed like this", node)

    def static_bounds(self, i, n, node):
        if isinstance(i, ir.Const) and not 0 <= int(i.value) < n:
            self.error(f"index {int(i.value)} out of range for length {n}", node)

    def insert(self, base, idx, value, node):
        """A copy of composite ``base`` with component ``idx`` replaced (differentiable)."""
        t = base.type
        kind = getattr(t, "_sk_kind", "")
        out = self.new_var(t)
        if kind in ("vec", "quat") and len(idx) == 1:
            self.static_bounds(idx[0], t._sk_shape[0], node)
            value = self.convert(value, t._sk_scalar, node)
            self.emit([out], [base, idx[0], value], "$o0 = $a0; $o0[$a1] = $a2;",
                      "$adj_a2 += $adj_o0[$a1]; $adj_o0[$a1] = 0; $adj_a0 += $adj_o0; $adj_o0 = {};")
            return out
        if kind == "mat" and len(idx) == 2:
            self.static_bounds(idx[0], t._sk_shape[0], node)
            self.static_bounds(idx[1], t._sk_shape[1], node)
            value = self.convert(value, t._sk_scalar, node)
            self.emit([out], [base, *idx, value], "$o0 = $a0; $o0[$a1][$a2] = $a3;",
                      "$adj_a3 += $adj_o0[$a1][$a2]; $adj_o0[$a1][$a2] = 0; $adj_a0 += $adj_o0; $adj_o0 = {};")
            return out
        self.error(f"cannot assign to this component of {type_str(t)}", node)

    def setfield(self, base, name, value, node):
        t = base.type
        kind = getattr(t, "_sk_kind", "")
        out = self.new_var(t)
        if kind == "struct":
            if name not in t._sk_fields:
                self.error(f"struct {t.__name__} has no field '{name}' (fields: {', '.join(t._sk_fields)})", node)
            ft = t._sk_fields[name]
            value = self.convert(value, ft, node)
            if ft._sk_kind == "array":
                self.emit([out], [base, value], f"$o0 = $a0; $o0.{name} = $a1;", "$adj_a0 += $adj_o0; $adj_o0 = {};")
            else:
                self.emit([out], [base, value], f"$o0 = $a0; $o0.{name} = $a1;",
                          f"$adj_a1 += $adj_o0.{name}; $adj_o0.{name} = {{}}; $adj_a0 += $adj_o0; $adj_o0 = {{}};")
            return out
        if kind in ("vec", "quat") and name in _COMPONENTS:
            return self.insert(base, [ir.Const(_COMPONENTS[name], T.int32)], value, node)
        if kind == "transform" and name in ("p", "q"):
            ft = T.vector(3, t._sk_scalar) if name == "p" else T.quat_of(t._sk_scalar)
            value = self.convert(value, ft, node)
            self.emit([out], [base, value], f"$o0 = $a0; $o0.{name} = $a1;",
                      f"$adj_a1 += $adj_o0.{name}; $adj_o0.{name} = {{}}; $adj_a0 += $adj_o0; $adj_o0 = {{}};")
            return out
        self.error(f"{type_str(t)} has no assignable attribute '{name}'", node)

    def assign_subscript(self, target, value, s):
        base = self.expr(target.value)
        idx = self.indices(target.slice, s)
        if isinstance(base, ir.Var) and getattr(base.type, "_sk_kind", "") == "array":
            self.store(base, idx, value, s)
            return
        if not isinstance(base, ir.Var):
            self.error("only arrays and local vectors/matrices accept element assignment", s)
        self.assign_target(target.value, self.insert(base, idx, value, s), s)

    def assign_attribute(self, target, value, s):
        base = self.expr(target.value)
        if not isinstance(base, ir.Var):
            self.error("attribute assignment needs a struct, vector, quaternion or transform value", s)
        self.assign_target(target.value, self.setfield(base, target.attr, value, s), s)

    # -- conversions ----------------------------------------------------------------
    def literal(self, value, t) -> str:
        return literal(value, t)

    def materialize(self, c: ir.Const) -> ir.Var:
        t = c.type.default() if isinstance(c.type, B.Weak) else c.type
        v = self.new_var(t)
        self.emit([v], [], f"$o0 = {self.literal(c.value, t)};")
        return v

    def convert(self, v, want, node):
        """``v`` as type ``want``: literals adapt, typed values must already match."""
        if isinstance(v, Py) or isinstance(v, Undefined):
            self.error(f"expected a value of type {type_str(want)}", node)
        if isinstance(v, ir.Const):
            if isinstance(v.type, B.Weak):
                if isinstance(want, T.ScalarType) and B._weak_to(v.type, want):
                    return ir.Const(want(v.value).item(), want)
                self.error(f"expected {type_str(want)}, got {v.type} {v.value!r}", node)
            if v.type is want or v.type == want:
                return v
            self.error(f"expected {type_str(want)}, got constant of type {type_str(v.type)}", node)
        if v.type is want or v.type == want:
            return v
        self.error(f"expected {type_str(want)}, got {type_str(v.type)}"
                   + (f" (convert explicitly, e.g. {type_str(want)}(x))" if isinstance(want, T.ScalarType) else ""), node)

    def to_bool(self, v, node):
        if isinstance(v, ir.Const):
            return ir.Const(bool(v.value), T.bool_)
        if isinstance(v, ir.Var) and v.type is T.bool_:
            return v
        if isinstance(v, ir.Var) and isinstance(v.type, T.ScalarType):
            out = self.new_var(T.bool_)
            self.emit([out], [v], f"$o0 = $a0 != {v.type._sk_ctype}(0);")
            return out
        self.error(f"a condition must be a bool or a number, got {type_str(getattr(v, 'type', v))}", node)

    def note_type(self, t):
        """Record struct types so codegen emits their definitions."""
        if getattr(t, "_sk_kind", "") == "struct":
            self.structs_used.setdefault(t, None)
            for ft in t._sk_fields.values():
                self.note_type(ft)

    def static_eval(self, node):
        env = dict(self.globals)
        env.update(self.closure)
        try:
            return eval(compile(ast.Expression(node), self.file, "eval"), env)
        except Exception as e:  # noqa: BLE001 - any failure is a compile error for the user
            self.error(f"cannot evaluate at compile time: {e}", node)

    # -- operators ------------------------------------------------------------------
    def binop_name(self, op, node):
        name = _BINOPS.get(type(op))
        if name is None:
            self.error(f"unsupported operator {type(op).__name__}", node)
        return name

    def expr_BinOp(self, node):
        return self.binop(self.binop_name(node.op, node), self.expr(node.left), self.expr(node.right), node)

    def binop(self, name, a, b, node):
        if isinstance(a, ir.Const) and isinstance(b, ir.Const) and np.ndim(a.value) == 0 and np.ndim(b.value) == 0:
            return self.fold(name, a, b, node)
        if name == "div" and all(self.is_int_value(x) for x in (a, b)):
            self.error("'/' on two integers: use '//' for integer division or convert with float(x)", node)
        if name == "pow" and isinstance(b, ir.Const) and b.value == 2 and not isinstance(a, ir.Const):
            return self.call_builtin("mul", [a, a], node)  # exact and cheaper than pow(x, 2)
        return self.call_builtin(name, [a, b], node)

    def fold(self, name, a, b, node):
        try:
            r = _PY_FOLD[name](a.value, b.value)
        except ZeroDivisionError:
            self.error("division by zero in a constant expression", node)
        if isinstance(a.type, B.Weak) and isinstance(b.type, B.Weak):
            return ir.Const(r, _weak_of(r))
        t = a.type if not isinstance(a.type, B.Weak) else b.type
        if isinstance(r, bool):
            return ir.Const(r, T.bool_)
        return ir.Const(t(r).item(), t)

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            c = self.to_bool(v, node)
            if isinstance(c, ir.Const):
                return ir.Const(not c.value, T.bool_)
            out = self.new_var(T.bool_)
            self.emit([out], [c], "$o0 = !$a0;")
            return out
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.USub):
            if isinstance(v, ir.Const) and np.ndim(v.value) == 0:
                return ir.Const(-v.value, v.type)
            return self.call_builtin("neg", [v], node)
        self.error(f"unsupported unary operator {type(node.op).__name__}", node)

    def expr_Compare(self, node):
        left = node.left
        parts = []
        for op, right in zip(node.ops, node.comparators):
            name = _CMPOPS.get(type(op))
            if name is None:
                self.error(f"unsupported comparison {type(op).__name__}", node)
            parts.append((name, left, right))
            left = right
        if len(parts) == 1:
            n, l, r = parts[0]
            return self.compare(n, self.expr(l), self.expr(r), node)
        chain = ast.BoolOp(ast.And(), [ast.Compare(l, [ast.Lt()], [r]) for _n, l, r in parts], lineno=node.lineno)
        for (n, _l, _r), cmp in zip(parts, chain.values):
            cmp.ops = [next(k for k, v in _CMPOPS.items() if v == n)()]
        return self.expr_BoolOp(chain)

    def compare(self, name, a, b, node):
        if isinstance(a, ir.Const) and isinstance(b, ir.Const) and np.ndim(a.value) == 0 and np.ndim(b.value) == 0:
            return self.fold(name, a, b, node)
        return self.call_builtin(name, [a, b], node)

    def expr_BoolOp(self, node):
        # Short-circuit: later operands are evaluated only when needed (e.g. i < n and a[i] > 0).
        is_and = isinstance(node.op, ast.And)
        result = self.to_bool(self.expr(node.values[0]), node)
        for rhs in node.values[1:]:
            if isinstance(result, ir.Const):
                if result.value != is_and:
                    return result
                result = self.to_bool(self.expr(rhs), node)
                continue
            tmp = f"__bool{node.lineno}_{id(rhs)}"
            self.vars[tmp] = result
            cond = result
            if not is_and:
                cond = self.new_var(T.bool_)
                self.emit([cond], [result], "$o0 = !$a0;")
            self.branch(cond, lambda: self.vars.__setitem__(tmp, self.to_bool(self.expr(rhs), node)), None, node)
            result = self.vars.pop(tmp)
        return result

    def expr_IfExp(self, node):
        cond = self.to_bool(self.expr(node.test), node)
        if isinstance(cond, ir.Const):
            return self.expr(node.body if cond.value else node.orelse)
        tmp = f"__ifexp{node.lineno}_{id(node)}"
        self.branch(cond, lambda: self.vars.__setitem__(tmp, self.expr(node.body)),
                    lambda: self.vars.__setitem__(tmp, self.expr(node.orelse)), node)
        return self.vars.pop(tmp)

    def expr_Tuple(self, node):
        return Py(tuple(self.expr(e) for e in node.elts))

    # -- calls ----------------------------------------------------------------------
    def is_range(self, fnode) -> bool:
        f = self.expr(fnode)
        return isinstance(f, Py) and f.obj is pybuiltins.range

    def call_builtin(self, name, args, node):
        types = []
        for a in args:
            if isinstance(a, (Py, Undefined)) or a is None:
                self.error(f"{name}() takes values, got {getattr(a, 'obj', a)!r}", node)
            types.append(a.type)
        found = B.resolve(name, types)
        if found is None:
            self.retype_literal_locals(name, args, types)
            got = ", ".join(type_str(t) for t in types)
            sigs = "\n      ".join(B.signatures(name))
            opname = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@", "mod": "%", "floordiv": "//",
                      "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}.get(name)
            what = f"operator '{opname}'" if opname else f"{name}()"
            hint = " (for element-wise products use sk.cw_mul, for the dot product sk.dot)" if name == "mul" else ""
            self.error(f"{what} does not accept ({got}){hint}; expected one of:\n      {sigs}", node)
        b, concrete, ret = found
        args = [self.convert(a, t, node) for a, t in zip(args, concrete)]
        out = self.new_var(ret)
        ins = ", ".join(f"$a{k}" for k in range(len(args)))
        adj = None
        if b.differentiable:
            adjs = ", ".join(f"$adj_a{k}" for k in range(len(args)))
            adj = f"sk::adj_{b.cname}({ins}, {adjs}, $adj_o0);"
        self.emit([out], args, f"$o0 = sk::{b.cname}({ins});", adj)
        return out

    def retype_literal_locals(self, name, args, types):
        """``acc = 0.0; acc += x64``: let a literal-initialised local take the wider type, then rebuild."""
        for a in args:
            origin = getattr(a, "weak_origin", None)
            if origin is None or not isinstance(a.type, T.ScalarType):
                continue
            for other in types:
                if isinstance(other, T.ScalarType) and other is not a.type and other.kind == a.type.kind:
                    trial = [other if t is a.type else t for t in types]
                    if B.resolve(name, trial) is not None:
                        raise Retype(origin, other)

    def expr_Call(self, node):
        f = self.expr(node.func)
        if not isinstance(f, Py):
            self.error("only functions, builtins and types can be called", node)
        obj = f.obj
        if getattr(obj, "_sk_static", False):
            if len(node.args) != 1:
                self.error("sk.static takes one expression", node)
            return self.capture(self.static_eval(node.args[0]))
        name = getattr(obj, "_sk_builtin", None) or _MATH_BUILTINS.get(obj)
        if name in ("tid",):
            return self.tid(1, node)
        if name in ("printf",):
            return self.printf(node)
        if name == "identity":
            return self.identity(node)
        if obj is pybuiltins.len or name == "len":
            return self.length_of(node)
        if getattr(obj, "_sk_func", False):
            return self.call_func(obj, node)
        if hasattr(obj, "_sk_kernel"):
            self.error("a kernel cannot call another kernel; make the helper an @sk.func", node)
        if node.keywords and not (getattr(obj, "_sk_kind", "") == "struct"):
            self.error(f"keyword arguments are not supported here ({node.keywords[0].arg}=...)", node)
        args = [self.expr(a) for a in node.args]
        if name in ("atomic_add", "atomic_sub", "atomic_min", "atomic_max"):
            if len(args) < 3:
                self.error(f"{name}(array, index..., value) needs at least 3 arguments", node)
            return self.atomic(name, args[0], [self.convert(i, T.int32, node) if isinstance(i, ir.Const) else i
                                               for i in args[1:-1]], args[-1], node)
        if name is not None:
            return self.call_builtin(name, args, node)
        if obj in (float, int, bool):
            obj = T.resolve(obj)
        kind = getattr(obj, "_sk_kind", None)
        if kind == "scalar":
            return self.cast(obj, args, node)
        if kind in ("vec", "mat", "quat", "transform"):
            return self.construct(obj, args, node)
        if kind == "struct":
            return self.construct_struct(obj, node)
        self.error(f"cannot call {getattr(obj, '__name__', obj)!s} in a kernel", node)

    def tid(self, n, node):
        if self.tid_dims and self.tid_dims != n:
            self.error(f"sk.tid() unpacked into {n} names here but {self.tid_dims} elsewhere", node)
        if not self.is_kernel:
            self.error("sk.tid() is only available in kernels; pass the index to the function", node)
        self.tid_dims = n
        outs = [self.new_var(T.int32) for _ in range(n)]
        for k, o in enumerate(outs):
            self.emit([o], [], f"$o0 = sk::tid(args.launch, _idx, {k});")
        return outs[0] if n == 1 else Py(tuple(outs))

    def cast(self, t, args, node):
        if len(args) != 1:
            self.error(f"{type_str(t)}() takes one argument", node)
        v = args[0]
        if isinstance(v, ir.Const):
            if np.ndim(v.value):
                self.error(f"cannot convert a {type_str(v.type)} to {type_str(t)}", node)
            return ir.Const(t(v.value).item(), t)
        if not isinstance(v, ir.Var) or not isinstance(v.type, T.ScalarType):
            self.error(f"{type_str(t)}() converts scalars, got {type_str(getattr(v, 'type', v))}", node)
        if v.type is t:
            return v
        out = self.new_var(t)
        adj = f"$adj_a0 += {v.type._sk_ctype}($adj_o0);" if t.is_float and v.type.is_float else None
        self.emit([out], [v], f"$o0 = sk::cast<{t._sk_ctype}>($a0);", adj)
        return out

    def construct(self, t, args, node):
        size = int(np.prod(t._sk_shape))
        if all(isinstance(a, ir.Const) for a in args):
            try:
                return ir.Const(np.asarray(t(*[a.value for a in args])), t)
            except (ValueError, TypeError) as e:
                self.error(f"{type_str(t)}(...): {e}", node)
        if len(args) == 1 and getattr(args[0].type, "_sk_shape", None) == t._sk_shape and args[0].type is not t \
                and getattr(args[0].type, "_sk_kind", "") == t._sk_kind:
            out = self.new_var(t)
            self.emit([out], args, f"$o0 = sk::convert<{t._sk_ctype}>($a0);",
                      f"sk::adj_convert<{t._sk_ctype}>($a0, $adj_a0, $adj_o0);" if t._sk_scalar.is_float else None)
            return out
        if len(args) == 1 and (args[0].type is t):
            return args[0]
        if len(args) == 1 and (isinstance(args[0].type, (T.ScalarType, B.Weak))):
            v = self.convert(args[0], t._sk_scalar, node) if isinstance(args[0], ir.Const) else args[0]
            if v.type is not t._sk_scalar:
                self.error(f"{type_str(t)}(x) broadcasts a {type_str(t._sk_scalar)}, got {type_str(v.type)}", node)
            out = self.new_var(t)
            self.emit([out], [v], f"$o0 = sk::splat<{t._sk_ctype}>($a0);", f"sk::adj_splat<{t._sk_ctype}>($a0, $adj_a0, $adj_o0);")
            return out
        conv, count = [], 0
        for a in args:
            at = a.type
            if isinstance(at, (T.ScalarType, B.Weak)):
                a = self.convert(a, t._sk_scalar, node)
                count += 1
            elif getattr(at, "_sk_kind", "") in ("vec", "quat", "mat") and at._sk_scalar is t._sk_scalar:
                count += int(np.prod(at._sk_shape))
            else:
                self.error(f"{type_str(t)}() cannot take a {type_str(at)} component", node)
            conv.append(a)
        if count != size:
            self.error(f"{type_str(t)}() needs {size} components, got {count}", node)
        out = self.new_var(t)
        ins = ", ".join(f"$a{k}" for k in range(len(conv)))
        adjs = ", ".join(f"$adj_a{k}" for k in range(len(conv)))
        self.emit([out], conv, f"$o0 = sk::construct<{t._sk_ctype}>({ins});", f"sk::adj_construct($adj_o0, {adjs});")
        return out

    def construct_struct(self, t, node):
        if node.args:
            self.error(f"struct {t.__name__}() takes field values as keywords only", node)
        self.note_type(t)
        v = self.new_var(t)
        self.emit([v], [], "$o0 = {};")
        for kw in node.keywords:
            v = self.setfield(v, kw.arg, self.expr(kw.value), node)
        return v

    def identity(self, node):
        kw = {k.arg: self.static_eval(k.value) for k in node.keywords}
        pos = [self.static_eval(a) for a in node.args]
        n = kw.get("n", pos[0] if pos else 3)
        dtype = T.resolve(kw.get("dtype", pos[1] if len(pos) > 1 else T.float32))
        t = T.matrix((n, n), dtype)
        return ir.Const(np.eye(n), t)

    def length_of(self, node):
        if len(node.args) != 1:
            self.error("len() takes one argument", node)
        v = self.expr(node.args[0])
        kind = getattr(getattr(v, "type", None), "_sk_kind", "")
        if kind in ("vec", "quat", "mat", "transform"):
            return ir.Const(v.type._sk_shape[0], B.WEAK_INT)
        if kind == "array":
            out = self.new_var(T.int32)
            self.emit([out], [v], "$o0 = int32_t($a0.shape[0]);")
            return out
        self.error(f"len() of {type_str(getattr(v, 'type', v))} is not defined", node)

    def printf(self, node):
        if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
            self.error('sk.printf needs a format string literal first: sk.printf("x=%f\\n", x)', node)
        fmt = node.args[0].value.encode("unicode_escape").decode().replace('"', '\\"')
        vals = []
        for a in node.args[1:]:
            v = self.expr(a)
            if isinstance(v, ir.Const):
                v = self.materialize(v)
            if not isinstance(v.type, T.ScalarType):
                self.error("sk.printf prints scalars; pass components (v[0], v[1], ...)", node)
            vals.append(v)
        # C varargs: floats go as double; ints keep their width (%d for int32, %lld for int64).
        casts = "".join(f", double($a{k})" if v.type.is_float else f", $a{k}" for k, v in enumerate(vals))
        self.emit([], vals, f'printf("{fmt}"{casts});', None, replay=False)
        return Py(None)

    def call_func(self, fn, node):
        if node.keywords:
            self.error("keyword arguments to @sk.func calls are not supported", node)
        args = [self.expr(a) for a in node.args]
        spec = fn.specialize_for(args, self, node)
        args = [self.convert(a, t, node) for a, t in zip(args, spec.param_types)]
        self.funcs_used.setdefault(spec, None)
        for t in spec.param_types:
            self.note_type(t)
        outs = [self.new_var(t) for t in spec.ret_types]
        ins = ", ".join(f"$a{k}" for k in range(len(args)))
        diff = [k for k, t in enumerate(spec.param_types) if getattr(t, "_sk_kind", "") != "array"]
        adj_ins = "".join(f", $adj_a{k}" for k in diff)
        adj_outs = "".join(f", $adj_o{k}" for k in range(len(outs)))
        if len(outs) == 1:
            fwd = f"$o0 = {spec.cname}({ins});"
        else:
            fwd = f"{spec.cname}({ins}{''.join(f', $o{k}' for k in range(len(outs)))});"
        adj = f"adj_{spec.cname}({ins}{adj_ins}{adj_outs});"
        self.emit(outs, args, fwd.replace("(, ", "("), adj.replace("(, ", "("))
        if len(outs) == 1:
            return outs[0]
        return Py(tuple(outs)) if outs else Py(None)
