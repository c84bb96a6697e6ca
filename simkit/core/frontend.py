"""Frontend: a kernel's Python AST, walked once, into the typed IR of ``ir.py``.

Statements and control flow live here; expressions in ``exprs.py``, element access
in ``access.py`` and calls in ``calls.py`` (mixins), so each file reads as one concern.

Control flow is lowered so that the adjoint can be generated mechanically:
``break``, ``continue`` and ``return`` become boolean flags with the rest of the
block guarded by them; ``and``/``or``/ternaries become branches (short-circuit kept);
constant-trip ``range`` loops are unrolled; other loops become :class:`ir.Loop`
with explicit loop-carried variables.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

from . import builtins as B
from . import ir
from . import types as T
from .config import config
from .errors import CompileError
from .access import AccessMixin
from .calls import CallMixin
from .exprs import ExprMixin, Py, Retype, Undefined, type_str


class _NeedReturnSlots(Exception):
    def __init__(self, types):
        self.types = types


def build(pyfunc, arg_types: dict, *, is_kernel: bool, name: str, cname: str,
          adjoint_of: int | None = None) -> ir.FunctionIR:
    """Build the IR of ``pyfunc`` for the given parameter types; ``adjoint_of``: it is an
    @sk.func_grad body whose first ``adjoint_of`` parameters are those of its function."""
    overrides: dict = {}
    ret_slots = None
    for _ in range(64):
        try:
            b = Builder(pyfunc, arg_types, is_kernel, name, cname, overrides, ret_slots)
            b.adjoint_of = adjoint_of
            return b.run()
        except Retype as r:
            if r.key in overrides and overrides[r.key] is not r.type:
                local, line = r.key
                raise CompileError(f"'{local}' (initialised from a literal) is used both as "
                                   f"{type_str(overrides[r.key])} and as {type_str(r.type)}; give it a type "
                                   f"(e.g. {local} = {type_str(r.type)}(0.0))", inspect.getsourcefile(pyfunc) or
                                   "<unknown>", line) from None
            overrides[r.key] = r.type
        except _NeedReturnSlots as r:
            ret_slots = r.types
    raise RuntimeError(f"type inference for {name} did not settle")


def _assigned_names(stmts) -> set:
    out = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


def _element_targets(stmts) -> list:
    """Assignment targets that are an element or a field (``v[i] = x``, ``s.f += y``)."""
    return [n for s in stmts for n in ast.walk(s)
            if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store)]


def _contains(stmts, kinds, stop_at_loops: bool) -> bool:
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, kinds):
            return True
        if stop_at_loops and isinstance(n, (ast.For, ast.While)):
            continue
        if isinstance(n, (ast.FunctionDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return False


class Builder(ExprMixin, AccessMixin, CallMixin):
    def __init__(self, pyfunc, arg_types, is_kernel, name, cname, overrides, ret_slots):
        self.pyfunc = pyfunc
        self.arg_types = arg_types
        self.is_kernel = is_kernel
        self.name = name
        self.cname = cname
        self.overrides = overrides
        self.ret_slots = ret_slots
        self.file = inspect.getsourcefile(pyfunc) or "<unknown>"
        try:
            lines, self.first_line = inspect.getsourcelines(pyfunc)
        except (OSError, TypeError):
            raise CompileError(f"cannot read the source of '{name}': kernels and functions must be defined in a "
                               "file (or a notebook cell), not built with exec or typed at a bare REPL",
                               self.file, pyfunc.__code__.co_firstlineno) from None
        self.source = {self.first_line + i: l.rstrip("\n") for i, l in enumerate(lines)}
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, self.first_line - 1)
        self.fdef = tree.body[0]
        self.globals = pyfunc.__globals__
        self.closure = {}
        if pyfunc.__closure__:
            for n, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
                try:
                    self.closure[n] = cell.cell_contents
                except ValueError:
                    pass
        self.line = self.fdef.lineno
        self.all_vars: list[ir.Var] = []
        self.vars: dict[str, Any] = {}
        self.block = ir.Block()
        self.loop_depth = 0
        self.loop_flags: list[dict] = []  # per enclosing loop: {'brk': name, 'cont': name}
        self.tid_dims = 0
        self.arg_names: set = set()
        self.returns_value = False
        self.ret_types: list | None = None
        self.structs_used: dict = {}  # ordered sets
        self.funcs_used: dict = {}
        # Where each array/struct value comes from: var id -> {(parameter name, field path)}.
        self.origins: dict[int, set] = {}
        self.reads: set = set()
        self.writes: set = set()
        self.gathers: set = set()
        self.adds: set = set()
        self.stores: set = set()
        self.shared_atomics = False
        self.untracked = False
        self.extrema: set = set()
        self.forwarded: set = set()
        # Store-to-load forwarding (access.py): origin -> the value this thread last stored at its
        # own element on every path to here; store_log lists every origin written, in order.
        self.stored: dict = {}
        self.store_log: list = []
        self.statement_call = None  # the call an expression statement discards the result of
        self.tid_component: dict[int, int] = {}  # var id -> k for the values sk.tid() returned
        self.top_block = self.block  # statements here run in every thread (no branch or loop around them)
        self.tid_indexed: dict = {}  # see ir.FunctionIR.tid_indexed
        self.view_ids: set = set()  # ids of the Vars that are sub-array views (access.py, view)
        self.adjoint_of: int | None = None  # see build()

    # -- helpers ------------------------------------------------------------
    def error(self, msg: str, node=None):
        line = getattr(node, "lineno", None) or self.line
        kind = "kernel" if self.is_kernel else "function"
        raise CompileError(msg, self.file, line, self.source.get(line, ""), f"in {kind} '{self.name}'")

    def new_var(self, type_, name=None, cname=None) -> ir.Var:
        v = ir.Var(type_, name, cname)
        v.loop_depth = self.loop_depth
        self.all_vars.append(v)
        return v

    def emit(self, outs, args, fwd, adj=None, *, replay=True, replay_fwd=None, tan=None, tan_fused=False, what=""):
        self.block.append(ir.Op(list(outs), list(args), fwd, adj, self.line, replay, replay_fwd, tan, tan_fused, what))

    def copy(self, dst: ir.Var, src):
        self.emit([dst], [src], "$o0 = $a0;", "$adj_a0 += $adj_o0; $adj_o0 = {};", tan=ir.LINEAR)
        self.inherit_origin(dst, src)

    def inherit_origin(self, dst, src, field=None):
        """``dst`` holds (a field of) ``src``: it refers to the same parameter arrays."""
        if field is None and isinstance(src, ir.Var) and src.id in self.view_ids:
            self.view_ids.add(dst.id)
        if isinstance(src, ir.Var) and src.id in self.origins:
            add = {(n, p + (field,)) if field else (n, p) for n, p in self.origins[src.id]}
            self.origins.setdefault(dst.id, set()).update(add)

    # -- entry ----------------------------------------------------------------
    def run(self) -> ir.FunctionIR:
        params = []
        for a in self.fdef.args.args:
            t = self.arg_types[a.arg]
            v = self.new_var(t, a.arg, cname=ir.cpp_ident(a.arg))
            params.append(v)
            self.vars[a.arg] = v
            self.arg_names.add(a.arg)
            self.note_type(t)
            if getattr(t, "_sk_kind", "") in ("array", "struct"):
                self.origins[v.id] = {(a.arg, ())}
        body = self.fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # docstring
        if self.uses_adjoint(body):
            if self.adjoint_of is None:
                self.error("sk.adjoint[...] is only available in the body of an @sk.func_grad")
            body = self.adjoint_body(body, params[:self.adjoint_of])
        needs_ret_flag = _contains(body[:-1], ast.Return, False) or (
            body and _contains([body[-1]], ast.Return, False) and not isinstance(body[-1], ast.Return))
        if needs_ret_flag:
            self.bind_flag("__ret", False)
            if self.ret_slots:
                for k, t in enumerate(self.ret_slots):
                    v = self.new_var(t, f"__rv{k}")
                    self.emit([v], [], "$o0 = {};")
                    self.vars[f"__rv{k}"] = v
        self.stmts(body)
        returns = []
        if self.ret_types:
            for k in range(len(self.ret_types)):
                v = self.vars.get(f"__rv{k}")
                if not isinstance(v, ir.Var):
                    raise _NeedReturnSlots(self.ret_types)
                returns.append(v)
        ir.number_locally(self.all_vars, self.block)
        fir = ir.FunctionIR(self.name, self.cname, params, self.block, returns, self.ret_types or [],
                            self.is_kernel, self.file, self.fdef.lineno, self.source, self.all_vars, self.tid_dims,
                            list(self.structs_used), list(self.funcs_used), self.reads, self.writes,
                            self.gathers, self.adds, self.stores, self.shared_atomics, self.untracked,
                            self.extrema, self.forwarded)
        fir.tid_indexed = self.tid_indexed
        return fir

    # -- binding ----------------------------------------------------------------
    def bind_flag(self, name, value: bool):
        v = self.new_var(T.bool_, name)
        self.emit([v], [], f"$o0 = {'true' if value else 'false'};")
        self.vars[name] = v

    def assign_name(self, name: str, value, node):
        if self.is_kernel and name in self.arg_names and getattr(self.vars.get(name), "type", None) is not None:
            kind = getattr(self.vars[name].type, "_sk_kind", "")
            if kind != "struct":
                self.error(f"cannot assign to kernel argument '{name}' ({type_str(self.vars[name].type)}): "
                           "arguments are read-only; write into an array element or use a new local name", node)
        old = self.vars.get(name)
        if isinstance(value, Py):
            self.vars[name] = value
            return
        if isinstance(value, ir.Const):
            t = value.type
            key = (name, self.line)
            if isinstance(t, B.Weak):
                t = self.overrides.get(key, t.default())
            v = self.new_var(t, name)
            v.weak_origin = key if isinstance(value.type, B.Weak) else None
            self.emit([v], [], f"$o0 = {self.literal(value.value, t)};")
            value = v
        elif isinstance(value, ir.Var) and (value.name is not None or value in self.vars.values()):
            # Give the name its own value so later updates of either never alias.
            v = self.new_var(value.type, name)
            self.copy(v, value)
            value = v
        else:
            value.name = name
            value.base = ir.cpp_ident(name.lstrip('_'))
            value.cname = f"{value.base}_{value.id}"
        if isinstance(old, ir.Var) and not self.same_type(old, value):
            self.type_conflict(name, old, value, node)
        self.vars[name] = value

    def same_type(self, a, b) -> bool:
        return a.type is b.type or a.type == b.type

    def type_conflict(self, name, old, new, node):
        if old.weak_origin is not None and isinstance(old.type, T.ScalarType) and isinstance(new.type, T.ScalarType):
            raise Retype(old.weak_origin, new.type)
        if new.weak_origin is not None and isinstance(old.type, T.ScalarType) and isinstance(new.type, T.ScalarType):
            raise Retype(new.weak_origin, old.type)
        self.error(f"'{name}' changes type from {type_str(old.type)} to {type_str(new.type)}; "
                   "a local keeps one type (convert explicitly, e.g. float(x), or use another name)", node)

    # -- statements -------------------------------------------------------------
    def stmts(self, stmts):
        for k, s in enumerate(stmts):
            self.line = s.lineno
            self.stmt(s)
            rest = stmts[k + 1:]
            if rest and self.may_exit(s):
                guard = self.guard_condition()
                if guard is None:
                    return
                self.branch(guard, lambda: self.stmts(rest), None, s)
                return

    def may_exit(self, s) -> bool:
        if _contains([s], ast.Return, False):
            return True
        if self.loop_flags and _contains([s], (ast.Break, ast.Continue), True):
            return True
        return False

    def guard_condition(self):
        """A bool value that is true while no break/continue/return flag is set (None: always false)."""
        flags = [n for n in ("__ret",) if n in self.vars]
        if self.loop_flags:
            flags += [n for n in self.loop_flags[-1].values() if n in self.vars]
        cond = None
        for f in flags:
            v = self.vars[f]
            if isinstance(v, ir.Const):
                if v.value:
                    return None
                continue
            nv = self.new_var(T.bool_)
            self.emit([nv], [v], "$o0 = !$a0;")
            if cond is None:
                cond = nv
            else:
                c2 = self.new_var(T.bool_)
                self.emit([c2], [cond, nv], "$o0 = $a0 && $a1;")
                cond = c2
        return cond if cond is not None else ir.Const(True, T.bool_)

    def stmt(self, s):
        meth = getattr(self, "stmt_" + type(s).__name__, None)
        if meth is None:
            self.error(f"unsupported statement '{type(s).__name__}' in a kernel", s)
        meth(s)

    def stmt_Pass(self, s):
        pass

    def stmt_Expr(self, s):
        if isinstance(s.value, ast.Constant):
            return
        self.statement_call = s.value
        self.expr(s.value)

    def stmt_Assign(self, s):
        if len(s.targets) != 1:
            self.error("chained assignment (a = b = c) is not supported", s)
        target = s.targets[0]
        if isinstance(target, ast.Tuple):
            values = self.expr_multi(s.value, len(target.elts))
            for t, v in zip(target.elts, values):
                self.assign_target(t, v, s)
            return
        self.assign_target(target, self.expr(s.value), s)

    def stmt_AnnAssign(self, s):
        if s.value is None:
            self.error("a declaration needs a value: write 'x: float = 0.0'", s)
        want = T.resolve(self.static_eval(s.annotation))
        value = self.convert(self.expr(s.value), want, s)
        self.assign_target(s.target, value, s)

    def assign_target(self, target, value, s):
        if isinstance(target, ast.Name):
            if isinstance(value, Undefined):
                self.error(value.message, s)
            self.assign_name(target.id, value, s)
        elif isinstance(target, ast.Subscript):
            self.assign_subscript(target, value, s)
        elif isinstance(target, ast.Attribute):
            self.assign_attribute(target, value, s)
        else:
            self.error(f"cannot assign to {type(target).__name__}", s)

    def stmt_AugAssign(self, s):
        op = self.binop_name(s.op, s)
        t = s.target
        if isinstance(t, ast.Subscript):
            base = self.expr(t.value)
            if isinstance(base, ir.Var) and getattr(base.type, "_sk_kind", "") == "array":
                # a[i] += v is an atomic add, so scatter kernels are correct under threads.
                if op not in ("add", "sub"):
                    self.error(f"array elements support += and -= (atomic); for '{op}' read, compute and store", s)
                idx = self.indices(t.slice, s)
                self.atomic("atomic_" + op, base, idx, self.expr(s.value), s, want_result=False)
                return
        if isinstance(t, ast.Attribute) and op in ("add", "sub"):
            element = self.struct_element(t)
            if element is not None:  # a[i].field += v of an array of structs: atomic, as a[i] += v
                arr, idx, path = element
                self.atomic("atomic_" + op, arr, idx, self.expr(s.value), s, want_result=False, field=path)
                return
        current = self.expr(t if not isinstance(t, ast.Name) else ast.Name(t.id, ast.Load(), lineno=s.lineno))
        self.assign_target(t, self.binop(op, current, self.expr(s.value), s), s)

    def stmt_Return(self, s):
        if s.value is None:
            values = []
        elif isinstance(s.value, ast.Tuple):
            values = [self.expr(e) for e in s.value.elts]
        else:
            values = [self.expr(s.value)]
        if self.is_kernel and values:
            self.error("a kernel cannot return a value; write results into an output array", s)
        types = []
        for k, v in enumerate(values):
            if isinstance(v, Py) or isinstance(v, Undefined):
                self.error("a function can only return values (scalars, vectors, matrices, structs)", s)
            t = v.type.default() if isinstance(v.type, B.Weak) else v.type
            types.append(t)
        if self.ret_types is None:
            self.ret_types = types
            self.returns_value = bool(types)
        elif [type_str(t) for t in types] != [type_str(t) for t in self.ret_types]:
            self.error(f"return types differ: {', '.join(map(type_str, types))} here, "
                       f"{', '.join(map(type_str, self.ret_types))} earlier", s)
        for k, v in enumerate(values):
            v = self.convert(v, self.ret_types[k], s)
            slot = self.vars.get(f"__rv{k}")
            nv = self.new_var(self.ret_types[k], f"__rv{k}")
            self.copy(nv, v)
            if isinstance(slot, ir.Var) and not self.same_type(slot, nv):
                self.type_conflict("return value", slot, nv, s)
            self.vars[f"__rv{k}"] = nv
        if "__ret" in self.vars:
            self.bind_flag("__ret", True)

    def stmt_Break(self, s):
        if not self.loop_flags:
            self.error("'break' outside a loop", s)
        self.bind_flag(self.loop_flags[-1]["brk"], True)

    def stmt_Continue(self, s):
        if not self.loop_flags:
            self.error("'continue' outside a loop", s)
        self.bind_flag(self.loop_flags[-1]["cont"], True)

    # -- branches -----------------------------------------------------------------
    def stmt_If(self, s):
        cond = self.to_bool(self.expr(s.test), s.test)
        self.branch(cond, lambda: self.stmts(s.body), (lambda: self.stmts(s.orelse)) if s.orelse else None, s)

    def branch(self, cond, then_fn, else_fn, node, result_name=None):
        """Emit an If; values rebound differently in the two arms are merged afterwards."""
        if isinstance(cond, ir.Const):  # decided at compile time: only the taken arm exists
            fn = then_fn if cond.value else else_fn
            if fn is not None:
                fn()
            return
        before = dict(self.vars)
        outer = self.block
        arms = []
        stored, logged = self.stored, len(self.store_log)
        for fn in (then_fn, else_fn):
            self.vars = dict(before)
            self.block = ir.Block()
            self.stored = dict(stored)
            if fn is not None:
                fn()
            arms.append((self.block, self.vars))
        self.block = outer
        self.stored = self.stores_surviving(stored, logged)
        (tb, tv), (eb, ev) = arms
        merged = dict(before)
        for name in sorted(set(tv) | set(ev)):
            a, b = tv.get(name), ev.get(name)
            if a is b:
                merged[name] = a
                continue
            if isinstance(a, Py) or isinstance(b, Py):
                if isinstance(a, Py) and isinstance(b, Py) and a.obj is b.obj:
                    merged[name] = a
                    continue
                self.error(f"'{name}' is bound to different compile-time objects in the branches", node)
            if a is None or b is None or isinstance(a, Undefined) or isinstance(b, Undefined):
                merged[name] = Undefined(f"'{name}' is assigned only in one branch of the if at line "
                                         f"{node.lineno}; assign it before the if")
                continue
            t = self.unify(name, a, b, node)
            m = self.new_var(t, name)
            for blk, val in ((tb, a), (eb, b)):
                outer_block, self.block = self.block, blk
                self.copy(m, self.convert(val, t, node))
                self.block = outer_block
            merged[name] = m
        self.vars = merged
        self.block.append(ir.If(cond, tb, eb, node.lineno))

    def unify(self, name, a, b, node):
        ta = a.type.default() if isinstance(a.type, B.Weak) else a.type
        tb = b.type.default() if isinstance(b.type, B.Weak) else b.type
        if isinstance(a, ir.Const) and isinstance(a.type, B.Weak):
            return tb
        if isinstance(b, ir.Const) and isinstance(b.type, B.Weak):
            return ta
        if ta is tb or ta == tb:
            return ta
        if isinstance(a, ir.Var) and isinstance(b, ir.Var):
            if a.weak_origin or b.weak_origin:
                self.type_conflict(name, a, b, node)
        self.error(f"'{name}' is {type_str(ta)} in one branch and {type_str(tb)} in the other", node)

    # -- loops ----------------------------------------------------------------------
    def stmt_For(self, s):
        it = s.iter
        backwards = isinstance(it, ast.Call) and self.is_reversed(it.func)
        if backwards:
            if len(it.args) != 1 or it.keywords:
                self.error("reversed() takes one range(...)", s)
            it = it.args[0]
        if not (isinstance(it, ast.Call) and self.is_range(it.func)):
            self.error("kernels loop with 'for i in range(...)' or 'for i in reversed(range(...))' only", s)
        if s.orelse:
            self.error("'for ... else' is not supported", s)
        if not isinstance(s.target, ast.Name):
            self.error("the loop variable must be a single name", s)
        args = [self.expr(a) for a in it.args]
        if not 1 <= len(args) <= 3:
            self.error("range takes 1 to 3 arguments", s)
        for a in args:
            if not self.is_int_value(a):
                self.error(f"range arguments must be integers, got {type_str(a.type) if hasattr(a, 'type') else a}", s)
        if all(isinstance(a, ir.Const) for a in args):
            if len(args) == 3 and int(args[2].value) == 0:
                self.error("range step must not be zero", s)
            trip = range(*[int(a.value) for a in args])
            trip = trip[::-1] if backwards else trip
            if len(trip) <= config.max_unroll:
                self.unrolled_for(s, trip)
                return
            args, backwards = [ir.Const(v, B.WEAK_INT) for v in (trip.start, trip.stop, trip.step)], False
        start, end, step = (ir.Const(0, B.WEAK_INT), args[0], ir.Const(1, B.WEAK_INT)) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else ir.Const(1, B.WEAK_INT))
        itype = T.int32
        for a in (start, end, step):
            if isinstance(a, ir.Var):
                itype = a.type if a.type.np_dtype.itemsize > itype.np_dtype.itemsize else itype
        if isinstance(step, ir.Const) and int(step.value) == 0:
            self.error("range step must not be zero", s)
        loop = ir.Loop("range", ir.Block(), s.lineno)
        loop.start, loop.end, loop.step = (self.convert(a, itype, s) for a in (start, end, step))
        if backwards:  # reversed(range(a, b, c)) runs range(last, a - c, -c)
            loop.start, loop.end, loop.step = self.reversed_bounds(itype, loop.start, loop.end, loop.step)

        def bind_index():
            loop.index = self.new_var(itype, s.target.id)
            self.vars[s.target.id] = loop.index
        self.loop(s, loop, s.body, bind_index)

    def reversed_bounds(self, itype, start, end, step) -> tuple:
        """``(first, stop, step)`` of the range that runs ``range(start, end, step)`` backwards."""
        first, stop = self.new_var(itype), self.new_var(itype)
        self.emit([first, stop], [start, end, step],
                  "$o0 = sk::reversed_first_($a0, $a1, $a2); $o1 = $a0 - $a2;")
        if isinstance(step, ir.Const):
            return first, stop, ir.Const(-int(step.value), itype)
        neg = self.new_var(itype)
        self.emit([neg], [step], "$o0 = -$a0;")
        return first, stop, neg

    def unrolled_for(self, s, trip):
        has_break = _contains(s.body, ast.Break, True)
        has_cont = _contains(s.body, ast.Continue, True)
        flags = {"brk": f"__brk{s.lineno}", "cont": f"__cont{s.lineno}"}
        if has_break:
            self.bind_flag(flags["brk"], False)
        self.loop_flags.append({k: v for k, v in flags.items() if (has_break if k == "brk" else has_cont)})
        for value in trip:
            if has_cont:
                self.bind_flag(flags["cont"], False)
            self.vars[s.target.id] = ir.Const(value, B.WEAK_INT)
            if has_break:
                guard = self.guard_condition()
                if guard is None:
                    break
                self.branch(guard, lambda: self.stmts(s.body), None, s)
            else:
                self.stmts(s.body)
        self.loop_flags.pop()
        for f in flags.values():
            self.vars.pop(f, None)

    def stmt_While(self, s):
        if s.orelse:
            self.error("'while ... else' is not supported", s)
        loop = ir.Loop("while", ir.Block(), s.lineno)
        self.loop(s, loop, s.body, None, cond_node=s.test)

    def local_written(self, target) -> str | None:
        """The local variable an element/field assignment makes a new version of (``v`` in
        ``v[i] = x`` or ``s.f = y``), or None when it stores into array memory (``a[i] = x``,
        ``s.arr[i] = x``): a loop must carry the former like a reassigned name."""
        chain, node = [], target
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            chain.append(node)
            node = node.value
        v = self.vars.get(node.id) if isinstance(node, ast.Name) else None
        if not isinstance(v, ir.Var):
            return None
        t = v.type
        for n in reversed(chain):
            if getattr(t, "_sk_kind", "") == "array":
                return None
            fields = getattr(t, "_sk_fields", None)
            if not isinstance(n, ast.Attribute) or fields is None or n.attr not in fields:
                return node.id
            t = fields[n.attr]
        return node.id

    def loop(self, s, loop: ir.Loop, body, bind_index, cond_node=None):
        has_break = _contains(body, ast.Break, True)
        has_cont = _contains(body, ast.Continue, True)
        flags = {}
        if has_break:
            flags["brk"] = f"__brk{s.lineno}"
            self.bind_flag(flags["brk"], False)
        if has_cont:
            flags["cont"] = f"__cont{s.lineno}"
        assigned = _assigned_names(body) | set(flags.values()) - {flags.get("cont")}
        assigned |= {n for n in map(self.local_written, _element_targets(body)) if n}
        if "__ret" in self.vars and _contains(body, ast.Return, False):
            assigned |= {"__ret"} | {n for n in self.vars if n.startswith("__rv")}
        carried = []
        for name in sorted(assigned):
            v = self.vars.get(name)
            if v is None or isinstance(v, Undefined):
                continue
            if isinstance(v, Py):
                self.error(f"'{name}' holds a compile-time object and cannot change inside a loop", s)
            t = v.type
            if isinstance(t, B.Weak):
                t = self.overrides.get((name, self.line), t.default())
            c = self.new_var(t, name)
            if isinstance(v, ir.Var) and v.weak_origin:
                c.weak_origin = v.weak_origin
            self.copy(c, self.convert(v, t, s))
            self.vars[name] = c
            carried.append((name, c))
        loop.exit_flags = [c for n, c in carried if n in (flags.get("brk"), "__ret")]
        before = dict(self.vars)
        # A later iteration may store again before this one's reads: nothing from outside is forwarded.
        stored, logged = self.stored, len(self.store_log)
        self.stored = {}
        outer = self.block
        self.loop_depth += 1
        if cond_node is not None:
            self.block = loop.cond_block = ir.Block()
            loop.cond = self.to_bool(self.expr(cond_node), cond_node)
            if isinstance(loop.cond, ir.Const):
                if not loop.cond.value:
                    self.block, self.loop_depth = outer, self.loop_depth - 1
                    self.stored = stored
                    return
                c = self.new_var(T.bool_)
                self.emit([c], [], "$o0 = true;")
                loop.cond = c
        self.block = loop.body
        if bind_index:
            bind_index()
        if has_cont:
            self.bind_flag(flags["cont"], False)
        self.loop_flags.append(flags)
        self.stmts(body)
        self.loop_flags.pop()
        for name, c in carried:
            final = self.vars.get(name)
            if isinstance(final, Undefined):
                self.error(final.message, s)
            if final is not c:
                if isinstance(final, ir.Var) and not self.same_type(final, c):
                    self.type_conflict(name, c, final, s)
                final = self.convert(final, c.type, s)
                if not isinstance(final, ir.Var):
                    fv = self.new_var(c.type)
                    self.emit([fv], [], f"$o0 = {self.literal(final.value, c.type)};")
                    final = fv
                loop.carried.append((c, final))
        self.loop_depth -= 1
        self.block = outer
        self.stored = self.stores_surviving(stored, logged)
        after = dict(before)
        for name in _assigned_names(body):
            if name not in dict(carried):
                after[name] = Undefined(f"'{name}' is assigned only inside the loop at line {s.lineno}; "
                                        "assign it before the loop to use it after")
        for f in flags.values():
            after.pop(f, None)
        self.vars = after
        self.block.append(loop)
