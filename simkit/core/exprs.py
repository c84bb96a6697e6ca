"""Frontend, expressions: names, constants, operators, short-circuit logic and conversions.

Mixed into :class:`frontend.Builder`; every method here turns one Python
expression form into IR ops and returns a value: an ``ir.Var``, an ``ir.Const``
(folded at compile time) or a :class:`Py` (a compile-time Python object such as
a module, a type or a function).
"""

from __future__ import annotations

import ast
import builtins as pybuiltins
import math

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


type_str = B.type_str  # where the frontend's modules import it from


_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Mod: "mod",
           ast.FloorDiv: "floordiv", ast.MatMult: "matmul", ast.Pow: "pow", ast.BitAnd: "bit_and",
           ast.BitOr: "bit_or", ast.BitXor: "bit_xor", ast.LShift: "lshift", ast.RShift: "rshift"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_PY_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "div": lambda a, b: a / b, "mod": lambda a, b: a % b, "floordiv": lambda a, b: a // b,
            "pow": lambda a, b: a ** b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
            "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b,
            "ne": lambda a, b: a != b, "bit_and": lambda a, b: a & b, "bit_or": lambda a, b: a | b,
            "bit_xor": lambda a, b: a ^ b, "lshift": lambda a, b: a << b, "rshift": lambda a, b: a >> b}
_MATH_BUILTINS = {getattr(math, n): n for n in B.TABLE if hasattr(math, n) and callable(getattr(math, n))}
_MATH_BUILTINS.update({math.fabs: "abs", pybuiltins.abs: "abs", pybuiltins.min: "min", pybuiltins.max: "max",
                       pybuiltins.pow: "pow"})
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
        if t is T.float16 or t is T.bfloat16:
            return f"{t._sk_ctype}({text}f)"
        return text + ("f" if t is T.float32 else "")
    iv = int(value)
    return {"int32_t": f"{iv}", "int64_t": f"int64_t({iv}LL)", "uint32_t": f"{iv}u", "uint64_t": f"uint64_t({iv}ULL)",
            "int8_t": f"int8_t({iv})", "uint8_t": f"uint8_t({iv})", "int16_t": f"int16_t({iv})",
            "uint16_t": f"uint16_t({iv})"}[t._sk_ctype]


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

    def static_type_of(self, node):
        """The type of a name or of a chain of struct fields on one (``bodies.inv_mass``), known
        without emitting code; None for anything else."""
        if isinstance(node, ast.Name):
            return getattr(self.expr(node), "type", None)  # a name emits nothing
        if isinstance(node, ast.Attribute):
            t = self.static_type_of(node.value)
            if getattr(t, "_sk_kind", None) == "struct":
                return t._sk_fields.get(node.attr)
        return None

    def expr_Attribute(self, node):
        if node.attr == "dtype" and isinstance(node.value, ast.Attribute):
            # a.b.dtype of a struct's array field: a compile-time type, no load of the field
            t = self.static_type_of(node.value)
            if getattr(t, "_sk_kind", None) == "array":
                return Py(t.dtype)
        element = self.struct_element(node)
        if element is not None:  # a[i].field of an array of structs: that field alone is read
            arr, idx, path = element
            return self.load(arr, idx, node, field=path)
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
            self.emit([out], [base], f"$o0 = $a0.{a};", f"$adj_a0.{a} += $adj_o0;", tan=ir.LINEAR)
            return out
        if kind == "struct":
            return self.get_field(base, a, node)
        if kind == "array" and a == "shape":
            return Py(ShapeOf(base))
        if kind == "array" and a == "dtype":
            return Py(base.type.dtype)
        self.error(f"{type_str(base.type)} has no attribute '{a}'", node)

    def get_field(self, base, a, node):
        """Field ``a`` of the struct value ``base``."""
        fields = base.type._sk_fields
        if a not in fields:
            self.error(f"struct {base.type.__name__} has no field '{a}' (fields: {', '.join(fields)})", node)
        out = self.new_var(fields[a])
        self.note_type(fields[a])
        self.inherit_origin(out, base, field=a)
        adj = None if fields[a]._sk_kind == "array" else f"$adj_a0.{a} += $adj_o0;"
        self.emit([out], [base], f"$o0 = $a0.{a};", adj, tan=ir.LINEAR)
        return out

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
            if getattr(base.obj, "_sk_adjoint", False) is True:
                return self.vars[self.adjoint_slot(node.slice, node)]
            self.error("only arrays, vectors, matrices and quaternions can be indexed", node)
        if isinstance(base, ir.Const):
            base = self.materialize(base)
        from . import slices  # slices.py builds on this module

        if slices.has_slice(node.slice):
            return slices.read(self, base, node.slice, node)
        kind = getattr(base.type, "_sk_kind", "")
        idx = self.indices(node.slice, node)
        if kind == "array":
            if len(idx) < base.type.ndim:
                return self.view(base, idx, node)
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
            self.error("slices of arrays are not supported in kernels (vectors, quaternions and matrices take "
                       "constant slices: v[1:], m[0, :2])", node)
        out = []
        for e in elts:
            v = self.expr(e)
            if not self.is_int_value(v):
                self.error(f"indices must be integers, got {type_str(getattr(v, 'type', v))}", node)
            out.append(self.index_const(v, node) if isinstance(v, ir.Const) else v)
        return out

    def index_const(self, v, node):
        """A constant index as an int32 constant: a literal, or a constant of any integer type
        (``a[sk.uint8(0)]``, ``sk.atomic_min(a, sk.uint32(0), x)``, as Warp accepts)."""
        if isinstance(v.type, T.ScalarType) and v.type.is_int and v.type is not T.int32:
            if not -2**31 <= int(v.value) < 2**31:
                self.error(f"index {int(v.value)} does not fit an int32", node)
            return ir.Const(int(v.value), T.int32)
        return self.convert(v, T.int32, node)

    def is_int_value(self, v) -> bool:
        t = getattr(v, "type", None)
        if isinstance(t, B.Weak):
            return t.kind == "i"
        return isinstance(t, T.ScalarType) and t.is_int

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
        if getattr(t, "_sk_kind", "") == "array":
            self.note_type(t.dtype)
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
        if name in ("floordiv", "mod") and config.mode == "debug" and self.is_int_value(a) and self.is_int_value(b):
            self.check_divisor(b)
        return self.call_builtin(name, [a, b], node)

    def check_divisor(self, b):
        """Debug mode: an integer divisor of zero stops the thread and raises ZeroDivisionError
        naming the line (release mode defines the result as 0: native/base.h)."""
        if isinstance(b, ir.Const) and b.value != 0:
            return
        self.emit([], [b], f"if ($a0 == 0) {{ sk::report_error(&sk_error, 3, {self.line}); $RETURN; }}")

    def fold(self, name, a, b, node):
        try:
            r = _PY_FOLD[name](a.value, b.value)
        except ZeroDivisionError:
            self.error("division by zero in a constant expression", node)
        except ValueError as e:  # a negative shift count
            self.error(f"{e} in a constant expression", node)
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
        if isinstance(node.op, ast.Invert):
            if isinstance(v, ir.Const) and isinstance(v.value, (int, np.integer)) and not isinstance(v.value, bool):
                return ir.Const(~v.value, v.type)
            if getattr(v, "type", None) is T.bool_:
                self.error("'~' on a bool is an integer in Python (~True == -2); use 'not'", node)
            return self.call_builtin("invert", [v], node)
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

    def scratch_name(self, prefix: str) -> str:
        """A fresh Python-side name for a value merged across branches; numbered per
        function, so the generated source (and the cache key) is the same in every process."""
        self.scratch_count = getattr(self, "scratch_count", 0) + 1
        return f"{prefix}{self.scratch_count}"

    def bind_scratch(self, name: str, make) -> None:
        """Bind ``name`` to ``make()`` in the current arm of a branch. ``make`` runs first: an
        operand that branches itself (a nested and / or / if-else) replaces ``self.vars``, and
        the binding must land in the replacement, not in the dict it replaced."""
        value = make()
        self.vars[name] = value

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
            tmp = self.scratch_name("__bool")
            self.vars[tmp] = result
            cond = result
            if not is_and:
                cond = self.new_var(T.bool_)
                self.emit([cond], [result], "$o0 = !$a0;")
            self.branch(cond, lambda: self.bind_scratch(tmp, lambda: self.to_bool(self.expr(rhs), node)), None, node)
            result = self.vars.pop(tmp)
        return result

    def expr_IfExp(self, node):
        cond = self.to_bool(self.expr(node.test), node)
        if isinstance(cond, ir.Const):
            return self.expr(node.body if cond.value else node.orelse)
        tmp = self.scratch_name("__ifexp")
        self.branch(cond, lambda: self.bind_scratch(tmp, lambda: self.expr(node.body)),
                    lambda: self.bind_scratch(tmp, lambda: self.expr(node.orelse)), node)
        return self.vars.pop(tmp)

    def expr_Tuple(self, node):
        return Py(tuple(self.expr(e) for e in node.elts))
