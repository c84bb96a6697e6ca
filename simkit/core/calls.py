"""Frontend, calls: builtins, @sk.func calls, type constructors and casts, and the special builtins
(``tid``, ``printf``, ``identity``, ``len``, atomics).

Mixed into :class:`frontend.Builder`. Builtin overloads come from the table in
``builtins.py``; a failed match reports every accepted signature.
"""

from __future__ import annotations

import ast
import builtins as pybuiltins

import numpy as np

from . import builtins as B
from . import call_keywords
from . import ir
from . import packed_results
from . import types as T
from .exprs import _MATH_BUILTINS, Py, Retype, Undefined, type_str
from .lang import GradOf, grad as lang_grad


def firm_float(a) -> bool:
    """A value of a definite float type (not a literal's, nor a literal-initialised local's)."""
    t = getattr(a, "type", None)
    s = getattr(t, "_sk_scalar", None)
    return not isinstance(t, B.Weak) and getattr(a, "weak_origin", None) is None and bool(s and s.is_float)


class CallMixin:
    def is_range(self, fnode) -> bool:
        f = self.expr(fnode)
        return isinstance(f, Py) and f.obj is pybuiltins.range

    def is_reversed(self, fnode) -> bool:
        f = self.expr(fnode)
        return isinstance(f, Py) and f.obj is pybuiltins.reversed

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
                      "bit_and": "&", "bit_or": "|", "bit_xor": "^", "lshift": "<<", "rshift": ">>", "invert": "~",
                      "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}.get(name)
            what = f"operator '{opname}'" if opname else f"{name}()"
            hint = " (for element-wise products use sk.cw_mul, for the dot product sk.dot)" if name == "mul" else ""
            self.error(f"{what} does not accept ({got}){hint}; expected one of:\n      {sigs}", node)
        b, concrete, ret = found
        if ret is None:  # a statement (expect_eq): forward only, the adjoint pass does not repeat it
            args = [self.convert(a, t, node) for a, t in zip(args, concrete)]
            ins = ", ".join(f"$a{k}" for k in range(len(args)))
            self.emit([], args, f"sk::{b.cname}({ins});", None, replay=False, what=f"builtin '{name}'")
            return Py(None)
        out = self.new_var(ret)
        self.inherit_weak_origin(out, args)
        args = [self.convert(a, t, node) for a, t in zip(args, concrete)]
        ins = ", ".join(f"$a{k}" for k in range(len(args)))
        adj = tan = None
        if b.variadic:  # templates over the result type; linear, so the adjoint takes no inputs
            r = ret._sk_ctype
            if b.differentiable:
                adj = f"sk::adj_{b.cname}<{r}>($adj_o0, {', '.join(f'$adj_a{k}' for k in range(len(args)))});"
            if b.tan is not None:
                tan = f"$tan_o0 = sk::tan_{b.cname}<{r}>({', '.join(f'$tan_a{k}' for k in range(len(args)))});"
            self.emit([out], args, f"$o0 = sk::{b.cname}<{r}>({ins});", adj, tan=tan, what=f"builtin '{name}'")
            return out
        if b.differentiable:
            adjs = ", ".join(f"$adj_a{k}" for k in range(len(args)))
            adj = f"sk::adj_{b.cname}({ins}, {adjs}, $adj_o0);"
        if b.tan is not None:
            tan = f"$tan_o0 = sk::tan_{b.cname}({ins}, {', '.join(f'$tan_a{k}' for k in range(len(args)))});"
        self.emit([out], args, f"$o0 = sk::{b.cname}({ins});", adj, tan=tan, what=f"builtin '{name}'")
        return out

    def out_param_form(self, name, node):
        """Warp's older spelling of a mesh query (``B.OUT_PARAM_FORMS``): the struct form's fields
        assigned to the locals named, the call's value its ``result``."""
        first, fields = B.OUT_PARAM_FORMS[name]
        outs = node.args[first:first + len(fields)]
        if not all(isinstance(a, ast.Name) for a in outs):
            self.error(f"{name}(...): the out-parameters ({', '.join(fields)}) must be local names", node)
        args = [self.expr(a) for a in node.args[:first] + node.args[first + len(fields):]]
        hidden = f"__{name}_{node.lineno}_{node.col_offset}"
        self.vars[hidden] = self.call_builtin(name, args, node)

        def field(f):
            load = ast.Attribute(value=ast.Name(id=hidden, ctx=ast.Load()), attr=f, ctx=ast.Load())
            return self.expr(ast.fix_missing_locations(ast.copy_location(load, node)))
        for target, f in zip(outs, fields):
            if target.id not in self.vars:
                self.error(f"{name}(...): declare the out-parameter '{target.id}' before the call "
                           f"(e.g. {target.id} = {'int(0)' if f == 'face' else 'float(0.0)'})", node)
            self.assign_name(target.id, field(f), node)
        return field("result")

    def multi_result(self, name, node):
        """A builtin of several results (``B.MULTI_RESULTS``): their tuple, ``axis, angle =
        sk.quat_to_axis_angle(q)``, or Warp's out-parameter spelling ``sk.quat_to_axis_angle(q, axis,
        angle)``, which assigns the locals named and has no value."""
        n_in, parts = B.MULTI_RESULTS[name]
        if len(node.args) not in (n_in, n_in + len(parts)):
            self.error(f"{name}() takes {n_in} argument(s), or {n_in + len(parts)} with Warp's out-parameters "
                       f"({', '.join(p.split('__')[1] for p in parts)}); got {len(node.args)}", node)
        args = [self.expr(a) for a in node.args[:n_in]]
        outs = node.args[n_in:]
        if outs and not all(isinstance(a, ast.Name) for a in outs):
            self.error(f"{name}(...): the out-parameters ({', '.join(p.split('__')[1] for p in parts)}) must be "
                       "local names", node)
        values = [self.call_builtin(p, args, node) for p in parts]
        if not outs:
            return Py(tuple(values))
        for target, v in zip(outs, values):
            self.assign_name(target.id, v, node)
        return Py(None)

    def random_draw(self, name, args, node):
        """A random builtin: its value from the draws after the state, and a state held in a local
        advanced past them (``B.STATE_DRAWS``), so the next call draws afresh, as in Warp."""
        value = self.call_builtin(name, args, node)
        target = node.args[0] if node.args else None
        if isinstance(target, ast.Name) and isinstance(self.vars.get(target.id), ir.Var):
            if self.is_kernel and target.id in self.arg_names:
                self.error(f"{name}({target.id}) advances its state in place, and kernel argument '{target.id}' "
                           f"is read-only: copy it to a local first (rng = {target.id})", node)
            state = self.vars[target.id]
            moved = self.new_var(state.type)
            self.emit([moved], [state], f"$o0 = sk::rand_advance_($a0, {B.STATE_DRAWS[name]});")
            self.assign_name(target.id, moved, node)
        return value

    def inherit_weak_origin(self, out, args):
        """A float computed only from literals and literal-initialised locals (``0.5 * (lo + hi)``)
        is literal-typed too: should it meet a wider float later, the local it came from is
        retyped (and the kernel rebuilt), as the local itself would be."""
        if not (isinstance(out.type, T.ScalarType) and out.type.is_float):
            return
        weak = [getattr(a, "weak_origin", None) for a in args]
        if any(weak) and all(w is not None or not firm_float(a) for a, w in zip(args, weak)):
            out.weak_origin = next(w for w in weak if w)

    def retype_literal_locals(self, name, args, types):
        """``acc = 0.0; acc += x64``: let a literal-initialised local take the wider type, then rebuild."""
        for a in args:
            origin = getattr(a, "weak_origin", None)
            if origin is None or not isinstance(a.type, T.ScalarType):
                continue
            for other in types:
                if isinstance(other, T.ScalarType) and other.kind == a.type.kind \
                        and other.np_dtype.itemsize > a.type.np_dtype.itemsize:  # only ever widen
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
        if isinstance(obj, GradOf):
            return self.call_grad(obj.of, node)
        if obj is lang_grad:  # sk.grad(f) is made at compile time; calling it is call_grad
            f = self.expr(node.args[0]) if len(node.args) == 1 and not node.keywords else None
            if not isinstance(f, Py):
                self.error("sk.grad takes one @sk.func or builtin, e.g. sk.grad(square)(x)", node)
            try:
                return Py(GradOf(f.obj))
            except TypeError as e:
                self.error(str(e), node)
        if hasattr(obj, "_sk_kernel"):
            self.error("a kernel cannot call another kernel; make the helper an @sk.func", node)
        if obj is pybuiltins.type:
            return self.type_of(node)
        if getattr(obj, "_sk_type_factory", False):
            if call_keywords.factory_constructs(self, obj, node):
                return call_keywords.factory_value(self, obj, node)
            return self.type_factory(obj, node)
        if name in B.PACKED_RESULTS and not getattr(obj, "_sk_packed", False):  # the host runner's call is packed
            return packed_results.call(self, name, node)
        if node.keywords and name is not None and name not in ("tid", "printf", "identity", "len"):
            return call_keywords.kernel_call(self, name, node)
        if node.keywords and not (getattr(obj, "_sk_kind", "") == "struct"):
            self.error(f"keyword arguments are not supported here ({node.keywords[0].arg}=...)", node)
        form = B.OUT_PARAM_FORMS.get(name)
        if form and len(node.args) >= form[0] + len(form[1]):
            return self.out_param_form(name, node)
        if name in B.MULTI_RESULTS:
            return self.multi_result(name, node)
        args = [self.expr(a) for a in node.args]
        if name in B.STATE_DRAWS:
            return self.random_draw(name, args, node)
        if name in ("atomic_add", "atomic_sub", "atomic_min", "atomic_max"):
            if len(args) < 3:
                self.error(f"{name}(array, index..., value) needs at least 3 arguments", node)
            return self.atomic(name, args[0], [self.index_const(i, node) if isinstance(i, ir.Const) else i
                                               for i in args[1:-1]], args[-1], node,
                               want_result=node is not self.statement_call)
        if name is not None:
            return self.call_builtin(name, args, node)
        if obj is pybuiltins.round:
            self.error("Python's round() rounds halves to even; in kernels use sk.round (halves away from zero) "
                       "or sk.floor(x + 0.5)", node)
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

    def type_of(self, node):
        """``type(x)``: the type of a value, a compile-time object (``type(dt)(0.5)``,
        ``sk.vector(3, type(dt))``), so a generic kernel can name its instance's types."""
        if len(node.args) != 1 or node.keywords:
            self.error("type() takes one value", node)
        arg = node.args[0]
        if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name) and isinstance(arg.slice, ast.Constant):
            # type(v[0]) of a local vector or quat: its component type, known without reading v[0]
            t = getattr(self.expr(arg.value), "type", None)
            if getattr(t, "_sk_kind", None) in ("vec", "quat"):
                return Py(t._sk_scalar)
        v = self.expr(arg)
        t = getattr(v, "type", None)
        if t is None:
            self.error("type() takes a value, not a compile-time object", node)
        return Py(t.default() if isinstance(t, B.Weak) else t)

    def compile_time_arg(self, a, what: str, node):
        """The value of argument ``a`` of ``what()``, which must be known at compile time: a number,
        a type (``type(dt)``, ``a.dtype``, ``sk.float64``) or a tuple of them."""
        if isinstance(a, ast.Tuple):  # a shape: (3, 3)
            return tuple(self.compile_time_arg(e, what, node) for e in a.elts)
        v = self.expr(a)
        if isinstance(v, ir.Const):
            return v.value
        if isinstance(v, Py):
            return v.obj
        self.error(f"{what}() takes compile-time arguments (numbers and types) in a kernel", node)

    def type_factory(self, fn, node):
        """``sk.vector(3, F)``, ``sk.matrix((3, 3), F)``, ...: made at compile time from constants and types."""
        def static(a):
            return self.compile_time_arg(a, fn.__name__, node)
        try:
            return Py(fn(*[static(a) for a in node.args], **{k.arg: static(k.value) for k in node.keywords}))
        except (TypeError, ValueError) as e:
            self.error(f"{fn.__name__}(): {e}", node)

    def map_callee_access(self, spec, args):
        """Arrays a called function reads or writes through its parameters count for this caller too."""
        names = list(spec.fn.arg_types)
        callee = spec.ir
        for theirs, mine in ((callee.reads, self.reads), (callee.writes, self.writes), (callee.gathers, self.gathers),
                             (callee.adds, self.adds), (callee.stores, self.stores),
                             (callee.extrema, self.extrema), (callee.forwarded, self.forwarded)):
            for pname, path in theirs:
                arg = args[names.index(pname)]
                origins = self.origins.get(getattr(arg, "id", None), ())
                if not origins:
                    self.untracked = True
                for n, p in origins:
                    mine.add((n, p + path))
        if callee.writes:
            self.forget_stores()  # the callee may have overwritten an element this thread stored
        self.shared_atomics |= callee.shared_atomics
        self.untracked |= callee.untracked

    # -- sk.adjoint[x] (Warp-style custom adjoints) ---------------------------------
    def is_adjoint_marker(self, node) -> bool:
        """Whether ``node`` (a name or attribute, evaluated in the function's globals) is ``sk.adjoint``."""
        if not isinstance(node, (ast.Name, ast.Attribute)) or (isinstance(node, ast.Name) and node.id in self.vars):
            return False
        env = dict(self.globals)
        env.update(self.closure)
        try:
            obj = eval(compile(ast.Expression(node), self.file, "eval"), env)
        except Exception:  # noqa: BLE001 - not a compile-time object, so not the marker
            return False
        return getattr(obj, "_sk_adjoint", False) is True

    def uses_adjoint(self, body) -> bool:
        return any(isinstance(n, ast.Subscript) and self.is_adjoint_marker(n.value) for s in body for n in ast.walk(s))

    def adjoint_body(self, body, params) -> list:
        """A body accumulating into ``sk.adjoint[x]``: each non-array parameter gets a zeroed
        accumulator, and the body returns them all at its end (what @sk.func_grad expects)."""
        if any(isinstance(n, ast.Return) for s in body for n in ast.walk(s)):
            self.error("an @sk.func_grad body that accumulates into sk.adjoint[...] returns nothing; drop the "
                       "'return' (or return the adjoints instead of using sk.adjoint)", next(
                           n for s in body for n in ast.walk(s) if isinstance(n, ast.Return)))
        names = []
        for v in params:
            if getattr(v.type, "_sk_kind", "") == "array":
                continue
            acc = self.new_var(v.type, f"__adj_{v.name}")
            self.emit([acc], [], "$o0 = {};")
            self.vars[acc.name] = acc
            names.append(acc.name)
        line = body[-1].lineno if body else self.fdef.lineno
        ret = ast.Return(value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load(), lineno=line) for n in names],
                                         ctx=ast.Load(), lineno=line), lineno=line)
        return list(body) + [ret]

    def adjoint_slot(self, index, node) -> str:
        """The accumulator name of ``sk.adjoint[index]``: ``index`` must name a non-array parameter."""
        name = getattr(index, "id", None)
        slot = f"__adj_{name}"
        if not isinstance(index, ast.Name) or slot not in self.vars:
            params = [a.arg for a in self.fdef.args.args if f"__adj_{a.arg}" in self.vars]
            self.error(f"sk.adjoint[...] takes a parameter of this @sk.func_grad that is not an array "
                       f"({', '.join(params) or 'none'})", node)
        return slot

    def tid(self, n, node):
        if self.tid_dims and self.tid_dims != n:
            self.error(f"sk.tid() unpacked into {n} names here but {self.tid_dims} elsewhere", node)
        if not self.is_kernel:
            self.error("sk.tid() is only available in kernels; pass the index to the function", node)
        self.tid_dims = n
        outs = [self.new_var(T.int32) for _ in range(n)]
        for k, o in enumerate(outs):
            self.emit([o], [], f"$o0 = sk::tid<Dense>(args.launch, _idx, {k});")
            self.tid_component[o.id] = k
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
        self.emit([out], [v], f"$o0 = sk::cast<{t._sk_ctype}>($a0);", adj, tan=ir.LINEAR if adj else None)
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
                      f"sk::adj_convert<{t._sk_ctype}>($a0, $adj_a0, $adj_o0);" if t._sk_scalar.is_float else None,
                      tan=ir.LINEAR if args[0].type._sk_scalar.is_float else ir.ZERO)
            return out
        if len(args) == 1 and (args[0].type is t):
            return args[0]
        if len(args) == 1 and (isinstance(args[0].type, (T.ScalarType, B.Weak))):
            v = self.convert(args[0], t._sk_scalar, node) if isinstance(args[0], ir.Const) else args[0]
            if v.type is not t._sk_scalar:
                self.error(f"{type_str(t)}(x) broadcasts a {type_str(t._sk_scalar)}, got {type_str(v.type)}", node)
            out = self.new_var(t)
            self.emit([out], [v], f"$o0 = sk::splat<{t._sk_ctype}>($a0);", f"sk::adj_splat<{t._sk_ctype}>($a0, $adj_a0, $adj_o0);", tan=ir.LINEAR)
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
        self.emit([out], conv, f"$o0 = sk::construct<{t._sk_ctype}>({ins});", f"sk::adj_construct($adj_o0, {adjs});", tan=ir.LINEAR)
        return out

    def construct_struct(self, t, node):
        names = list(t._sk_fields)
        if len(node.args) > len(names):
            self.error(f"struct {t.__name__}() takes at most {len(names)} positional field value(s) "
                       f"(fields: {', '.join(names)}), got {len(node.args)}", node)
        given = list(zip(names, node.args)) + [(kw.arg, kw.value) for kw in node.keywords]
        seen = set()
        v = self.default_struct(t, node)
        for name, value in given:  # positional values fill the fields in declaration order
            if name in seen:
                self.error(f"struct {t.__name__}() got field '{name}' both by position and by keyword", node)
            seen.add(name)
            v = self.setfield(v, name, self.expr(value), node)
        return v

    def default_struct(self, t, node):
        """A struct value equal to Python's ``t()``: class defaults, identity quats/transforms, else zeros."""
        self.note_type(t)
        v = self.new_var(t)
        self.emit([v], [], "$o0 = {};")
        defaults = getattr(t, "_sk_defaults", {})
        for name, ft in t._sk_fields.items():
            kind = ft._sk_kind
            if kind == "struct":
                v = self.setfield(v, name, self.default_struct(ft, node), node)
            elif kind != "array" and (name in defaults or kind in ("quat", "transform")):
                value = np.asarray(ft(*([defaults[name]] if name in defaults else [])))
                v = self.setfield(v, name, ir.Const(value.item() if kind == "scalar" else value, ft), node)
        return v

    def identity(self, node):
        kw = {k.arg: self.compile_time_arg(k.value, "identity", node) for k in node.keywords}
        pos = [self.compile_time_arg(a, "identity", node) for a in node.args]
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

    def call_grad(self, f, node):
        """``sk.grad(f)(args)``: f's adjoint run with a unit seed, its input adjoints the result.
        Forward only: the op has no adjoint of its own, so the kernel's gradient treats it as a constant."""
        if node.keywords:
            self.error("keyword arguments to sk.grad(f)(...) are not supported", node)
        given = [self.expr(a) for a in node.args]
        if getattr(f, "_sk_func", False):
            spec = f.specialize_for(given, self, node)
            params, rets, label = spec.param_types, spec.ret_types, f"function '{f.name}'"
            if any(ir.holds_arrays(t) for t in params):
                self.error(f"sk.grad({f.name}): a function taking arrays has no gradient by value", node)
            self.funcs_used.setdefault(spec, None)
            call = f"adj_{spec.cname}"
        else:
            name = f._sk_builtin
            found = B.resolve(name, [getattr(a, "type", None) for a in given])
            if found is None or not found[0].differentiable or found[0].variadic:
                self.error(f"sk.grad({name}) takes the arguments of a differentiable overload of {name}()", node)
            b, params, ret = found
            rets, label, call = [ret], f"builtin '{name}'", f"sk::adj_{b.cname}"
        if len(rets) != 1 or getattr(rets[0], "_sk_kind", "") != "scalar" or not rets[0].is_float:
            self.error(f"sk.grad needs a function returning one float, {label} returns "
                       f"({', '.join(T.type_name(t) for t in rets)})", node)
        args = [self.convert(a, t, node) for a, t in zip(given, params)]
        for t in params:
            self.note_type(t)
        outs = [self.new_var(t) for t in params]
        ins = ", ".join(f"$a{k}" for k in range(len(args)))
        zero = " ".join(f"$o{k} = {{}};" for k in range(len(outs)))
        adjs = ", ".join(f"$o{k}" for k in range(len(outs)))
        self.emit(outs, args, f"{zero} {call}({ins}, {adjs}, {rets[0]._sk_ctype}(1));", None, what=f"sk.grad of {label}")
        return outs[0] if len(outs) == 1 else Py(tuple(outs))

    def call_func(self, fn, node):
        if node.keywords:
            self.error("keyword arguments to @sk.func calls are not supported", node)
        given = args = [self.expr(a) for a in node.args]
        spec = fn.specialize_for(args, self, node)
        args = [self.convert(a, t, node) for a, t in zip(args, spec.param_types)]
        self.funcs_used.setdefault(spec, None)
        self.map_callee_access(spec, args)
        for t in spec.param_types:
            self.note_type(t)
        outs = [self.new_var(t) for t in spec.ret_types]
        for o in outs:
            self.inherit_weak_origin(o, given)
        ins = ", ".join(f"$a{k}" for k in range(len(args)))
        diff = [k for k, t in enumerate(spec.param_types) if getattr(t, "_sk_kind", "") != "array"]
        adj_ins = "".join(f", $adj_a{k}" for k in diff)
        adj_outs = "".join(f", $adj_o{k}" for k in range(len(outs)))
        # A function taking arrays is a template over their layout: it runs as its caller does.
        name = spec.cname + ("<Dense>" if any(ir.holds_arrays(t) for t in spec.param_types) else "")
        if len(outs) == 1:
            fwd = f"$o0 = {name}({ins});"
        else:
            fwd = f"{name}({ins}{''.join(f', $o{k}' for k in range(len(outs)))});"
        adj = f"adj_{name}({ins}{adj_ins}{adj_outs});"
        # tangent: one call computing the outputs and their tangents (codegen.function_tangent_source)
        tan_ins = "".join(f", $tan_a{k}" for k in diff)
        tan_outs = "".join(f", $o{k}, $tan_o{k}" for k in range(len(outs)))
        tan = f"tan_{name}({ins}{tan_ins}{tan_outs});"
        # a call returning nothing only writes arrays (or prints): the backward's forward replay
        # skips it, as it skips stores (primal data is never written there)
        self.emit(outs, args, fwd.replace("(, ", "("), adj.replace("(, ", "("), tan=tan.replace("(, ", "("),
                  tan_fused=True, what=f"function '{fn.name}'", replay=bool(outs))
        if len(outs) == 1:
            return outs[0]
        return Py(tuple(outs)) if outs else Py(None)
