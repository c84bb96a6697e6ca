"""Codegen: typed IR -> readable C++ (one source for the CPU and, via NVRTC, CUDA).

For every kernel it writes an argument struct, a forward body, an adjoint body
(forward replay, then the reverse sweep) and the entry points of both targets.
Statements keep the user's line structure: each group is preceded by a
``// file:line  source`` comment, and the reverse sweep carries the same markers.

Dynamic loops in the adjoint: the replay pushes each iteration's loop-carried
values on a per-thread stack (``sk.config.max_loop_iterations`` deep on the CPU,
``cuda_max_loop_iterations`` on GPUs, as the macro ``SK_LOOP_STACK``; overflow is a
runtime error), and the reverse sweep restores them iteration by iteration,
re-runs that iteration forward and then its reverse.
"""

from __future__ import annotations

import os
import re

from . import builtins as B
from . import ir
from .adjoint_flow import live_adjoints, seeds_adjoints
from .config import config
from .exprs import literal
from .ir import differentiable
from .codegen_structs import element_grads, order_structs as _order_structs, struct_source  # noqa: F401

_PLACEHOLDER = re.compile(r"\$(adj_|tan_)?([oa])(\d+)|\$RETURN")


def ctype(t) -> str:
    return t._sk_ctype


class FunctionWriter:
    """Writes the forward and adjoint C++ of one FunctionIR."""

    def __init__(self, f: ir.FunctionIR):
        self.f = f
        self.lines: list[str] = []
        self.indent = 1
        self.last_line = None
        self.dummies: dict[str, str] = {}
        self.loops: list[ir.Loop] = []
        self.params = set(v.id for v in f.params)
        self.local_adjoints: dict = {}
        self.file = os.path.basename(f.file)

    # -- small helpers -----------------------------------------------------------
    def put(self, text: str):
        self.lines.append("    " * self.indent + text)

    def marker(self, line: int):
        if line != self.last_line:
            self.last_line = line
            # A Python line continuation (trailing backslash) would continue the C++
            # comment onto the next generated statement and silently delete it.
            src = self.f.source_lines.get(line, "").strip().rstrip("\\").rstrip()
            self.put(f"// {self.file}:{line}  {src}")

    def adj_name(self, v: ir.Var) -> str:
        return f"adj_{v.cname}"

    def dummy(self, t) -> str:
        """A scratch adjoint for values that carry none (constants, integers)."""
        key = ctype(t)
        if key not in self.dummies:
            self.dummies[key] = f"adj_unused_{len(self.dummies)}"
        return self.dummies[key]

    def arg_text(self, a, adj: bool) -> str:
        if isinstance(a, ir.Const):
            t = a.type.default() if isinstance(a.type, B.Weak) else a.type
            return self.dummy(t) if adj else literal(a.value, t)
        if adj:
            return self.adj_name(a) if differentiable(a.type) else self.dummy(a.type)
        return a.cname

    def render(self, template: str, op: ir.Op, ret: str) -> str:
        def sub(m):
            if m.group(0) == "$RETURN":
                return ret
            prefix, kind, k = m.group(1), m.group(2), int(m.group(3))
            v = op.outs[k] if kind == "o" else op.args[k]
            if prefix == "tan_":
                return self.tan_text(v)
            return self.arg_text(v, bool(prefix))
        return _PLACEHOLDER.sub(sub, template)

    def ret_stmt(self, adjoint: bool) -> str:
        if self.f.is_kernel or adjoint or not self.f.returns:
            return "return"
        return "return {}" if len(self.f.returns) == 1 else "return"

    def cond_text(self, c) -> str:
        return self.arg_text(c, False)

    # -- forward ---------------------------------------------------------------------
    def forward(self, block: ir.Block, replay: bool, adjoint: bool):
        ret = self.ret_stmt(adjoint)
        for s in block.stmts:
            if isinstance(s, ir.Op):
                text = s.fwd
                if replay and not s.replay:
                    if s.replay_fwd is None:
                        continue
                    text = s.replay_fwd
                self.marker(s.line)
                self.emit_op(s, text, ret)
            elif isinstance(s, ir.If):
                self.put(f"if ({self.cond_text(s.cond)}) {{")
                self.indent += 1
                self.forward(s.then, replay, adjoint)
                self.indent -= 1
                if s.orelse.stmts:
                    self.put("} else {")
                    self.indent += 1
                    self.forward(s.orelse, replay, adjoint)
                    self.indent -= 1
                self.put("}")
                self.last_line = None
            elif isinstance(s, ir.Loop):
                self.loop_forward(s, replay, adjoint)

    def loop_header(self, s: ir.Loop) -> str:
        if s.kind == "while":
            return "while (true) {"
        i = s.index.cname
        start, end, step = (self.arg_text(x, False) for x in (s.start, s.end, s.step))
        if isinstance(s.step, ir.Const):
            cmp = "<" if int(s.step.value) > 0 else ">"
            return f"for ({i} = {start}; {i} {cmp} {end}; {i} += {step}) {{"
        return f"for ({i} = {start}; ({step} > 0) ? ({i} < {end}) : ({i} > {end}); {i} += {step}) {{"

    def loop_prologue(self, s: ir.Loop, ret: str):
        self.indent += 1
        if s.exit_flags:
            self.put(f"if ({' || '.join(v.cname for v in s.exit_flags)}) break;")
        if s.kind == "while":
            self.put(f"if (SK_STOPPING()) {ret};")  # Ctrl-C or an error elsewhere: leave an endless loop
            self.forward(s.cond_block, True, False)
            self.put(f"if (!{self.cond_text(s.cond)}) break;")

    def loop_forward(self, s: ir.Loop, replay: bool, adjoint: bool):
        ret = self.ret_stmt(adjoint)
        self.marker(s.line)
        if replay and adjoint:
            self.put(f"L{s.id}_n = 0;")
        self.put(self.loop_header(s))
        self.loop_prologue(s, ret)
        if replay and adjoint:
            self.put(f"if (L{s.id}_n == SK_LOOP_STACK) {{ sk::report_error(&sk_error, 2, {s.line}); {ret}; }}")
            for k, v in enumerate(self.stacked(s)):
                self.put(f"L{s.id}_s{k}[L{s.id}_n] = {v.cname};")
            self.put(f"++L{s.id}_n;")
        self.forward(s.body, replay, adjoint)
        for c, final in s.carried:
            self.carry(c, final)
        self.indent -= 1
        self.put("}")
        self.last_line = None

    def emit_op(self, s: ir.Op, text: str, ret: str):
        """One forward statement (the tangent writer adds the op's tangent after it)."""
        self.put(self.render(text, s, ret))

    def carry(self, c: ir.Var, final: ir.Var):
        """A loop-carried value's update at the end of an iteration."""
        self.put(f"{c.cname} = {final.cname};")

    def tan_text(self, v) -> str:
        raise NotImplementedError("tangent placeholders are rendered by codegen_tangent.TangentWriter")

    def stacked(self, s: ir.Loop) -> list:
        vs = [c for c, _f in s.carried]
        if s.index is not None:
            vs.append(s.index)
        return vs

    # -- reverse ---------------------------------------------------------------------
    def branch_adjoints(self) -> dict:
        """id(branch block) -> the variables whose every appearance lies in that branch of an
        ``if`` (outside loops). Their adjoints are declared, zeroed, at the head of the
        branch's reverse rather than at the top of the function: a thread that does not take
        the branch (most of a contact kernel's) then does not clear them, which it had to do
        in memory wherever they are passed to an adjoint kept out of line."""
        paths: dict = {}
        found: dict = {}

        def see(v, path):
            if not isinstance(v, ir.Var):
                return
            found[v.id] = v
            old = paths.get(v.id, path)
            if old is None or path is None:
                paths[v.id] = None
                return
            n = 0
            while n < min(len(old), len(path)) and old[n] == path[n]:
                n += 1
            paths[v.id] = old[:n]

        def visit(block, path):
            for s in block.stmts:
                if isinstance(s, ir.Op):
                    for v in (*s.outs, *s.args):
                        see(v, path)
                elif isinstance(s, ir.If):
                    see(s.cond, path)
                    visit(s.then, None if path is None else (*path, id(s.then)))
                    visit(s.orelse, None if path is None else (*path, id(s.orelse)))
                elif isinstance(s, ir.Loop):
                    for v in (s.index, s.start, s.end, s.step, s.cond, *s.exit_flags, *(x for c in s.carried for x in c)):
                        see(v, None)
                    visit(s.body, None)
                    if s.cond_block:
                        visit(s.cond_block, None)

        visit(self.f.body, ())
        for v in (*self.f.params, *self.f.returns):
            see(v, None)
        out: dict = {}
        for vid, path in paths.items():
            if path and differentiable(found[vid].type):
                out.setdefault(path[-1], []).append(found[vid])
        return out

    def reverse(self, block: ir.Block):
        for v in self.local_adjoints.get(id(block), ()):
            self.put(f"{ctype(v.type)} {self.adj_name(v)} = {{}};")
        for s in reversed(block.stmts):
            if isinstance(s, ir.Op):
                if s.adj is None:
                    continue
                if not any(differentiable(v.type) or (not s.outs and ir.holds_float_arrays(v.type))
                           for v in (s.outs or s.args) if isinstance(v, ir.Var)):
                    continue  # no float flows through this op (a call returning nothing may write arrays)
                if not seeds_adjoints(s) and not any(o.id in self.live for o in s.outs):
                    continue  # its outputs' adjoints are zero: so is everything it would add
                self.marker(s.line)
                self.put(self.render(s.adj, s, "return"))
                for o in s.outs:
                    # an int result (a function's count beside its floats) has no adjoint to clear
                    if o.loop_depth > 0 and differentiable(o.type) and "$adj_o0 = {}" not in s.adj:
                        self.put(f"{self.adj_name(o)} = {{}};")
            elif isinstance(s, ir.If):
                self.put(f"if ({self.cond_text(s.cond)}) {{")
                self.indent += 1
                self.reverse(s.then)
                self.indent -= 1
                if s.orelse.stmts:
                    self.put("} else {")
                    self.indent += 1
                    self.reverse(s.orelse)
                    self.indent -= 1
                self.put("}")
                self.last_line = None
            elif isinstance(s, ir.Loop):
                self.loop_reverse(s)

    def loop_reverse(self, s: ir.Loop):
        self.marker(s.line)
        self.put(f"for (int64_t L{s.id}_k = L{s.id}_n - 1; L{s.id}_k >= 0; --L{s.id}_k) {{")
        self.indent += 1
        for k, v in enumerate(self.stacked(s)):
            self.put(f"{v.cname} = L{s.id}_s{k}[L{s.id}_k];")
        self.forward(s.body, True, True)
        for c, final in reversed(s.carried):
            if differentiable(c.type):
                self.put(f"{self.adj_name(final)} += {self.adj_name(c)}; {self.adj_name(c)} = {{}};")
        self.reverse(s.body)
        self.indent -= 1
        self.put("}")
        self.last_line = None

    # -- whole functions ---------------------------------------------------------------
    def declarations(self, adjoint: bool) -> list[str]:
        out = []
        local = {v.id for vs in self.local_adjoints.values() for v in vs}
        for v in self.f.vars:
            if v.id in self.params:
                continue
            out.append(f"{ctype(v.type)} {v.cname} = {{}};")
            if adjoint and differentiable(v.type) and v.id not in local:
                out.append(f"{ctype(v.type)} {self.adj_name(v)} = {{}};")
        if adjoint:
            for loop in self.all_loops(self.f.body):
                out.append(f"int64_t L{loop.id}_n = 0;")
                for k, v in enumerate(self.stacked(loop)):
                    out.append(f"{ctype(v.type)} L{loop.id}_s{k}[SK_LOOP_STACK];")
        return out

    def all_loops(self, block):
        for s in block.stmts:
            if isinstance(s, ir.Loop):
                yield s
                if s.cond_block:
                    yield from self.all_loops(s.cond_block)
                yield from self.all_loops(s.body)
            elif isinstance(s, ir.If):
                yield from self.all_loops(s.then)
                yield from self.all_loops(s.orelse)

    def body(self, adjoint: bool) -> list[str]:
        self.lines, self.last_line, self.dummies = [], None, {}
        self.local_adjoints = self.branch_adjoints() if adjoint else {}
        self.live = live_adjoints(self.f) if adjoint else set()
        if not adjoint:
            self.forward(self.f.body, False, False)
            return self.lines
        self.put("// forward replay (stores and atomics skipped: primal data is never written)")
        self.forward(self.f.body, True, True)
        self.last_line = None
        self.put("// reverse sweep")
        for k, r in enumerate(self.f.returns):
            if differentiable(r.type):
                self.put(f"{self.adj_name(r)} += adj_ret{k};")
        self.reverse(self.f.body)
        return self.lines

    def assemble(self, signature: str, adjoint: bool, prologue: list[str], epilogue: list[str]) -> str:
        body = self.body(adjoint)
        decls = ["    " + d for d in self.declarations(adjoint)]
        dummies = [f"    {t} {n} = {{}};" for t, n in self.dummies.items()]
        lines = [signature + " {", *prologue, *decls, *dummies, *body, *epilogue, "}"]
        return "\n".join(lines)


# The forward of a user function of at most this many statements (its callees included)
# is always inlined, like a builtin: g++ kept small ones out of line, which made the
# rigid broad phase 4x and the cloth bending kernel 1.3x slower. So is the adjoint of one
# of at most ADJOINT_INLINE_STATEMENTS (forward replay and reverse counted): out of line,
# its adjoint variables live on the stack (the joints adjoint ran 0.85x warp's; inlined,
# 1.1x). Larger functions stay the compiler's choice: forcing them into every call site
# made the XPBD body modules compile 1.7x (all small adjoints) to 6x (everything) slower;
# adjoints up to 32 statements cost six sim kernel modules 1% more compile time (64: 13%).
INLINE_STATEMENTS = 64
ADJOINT_INLINE_STATEMENTS = 32


def param_decl(v: ir.Var) -> str:
    return f"const {ctype(v.type)}& {v.cname}"


def dense_template(types) -> str:
    """The template head of a function taking arrays (``types``: its parameters'): it is
    instantiated for the kernel's dense loop and for its strided one (kernel_source)."""
    return "template <bool Dense>\n" if any(ir.holds_arrays(t) for t in types) else ""


def custom_adjoint(f: ir.FunctionIR, w: "FunctionWriter", grad) -> list[str]:
    """Body of an adjoint that calls the user's @sk.func_grad and adds what it returns."""
    ins = [v.cname for v in f.params] + [f"adj_ret{k}" for k in range(len(f.ret_types))]
    targets = [v for v in f.params if getattr(v.type, "_sk_kind", "") != "array"]
    name = grad.cname + ("<Dense>" if dense_template(grad.param_types) else "")
    lines = [f"    // custom adjoint: {grad.fn.name} (@sk.func_grad)"]
    if len(targets) == 1:
        lines.append(f"    {w.adj_name(targets[0])} += {name}({', '.join(ins)});")
    elif targets:
        lines += [f"    {ctype(v.type)} g{k} = {{}};" for k, v in enumerate(targets)]
        lines.append(f"    {name}({', '.join(ins + [f'g{k}' for k in range(len(targets))])});")
        lines += [f"    {w.adj_name(v)} += g{k};" for k, v in enumerate(targets)]
    return lines


def function_source(f: ir.FunctionIR, grad=None, writer=FunctionWriter) -> str:
    """Forward and adjoint C++ of an @sk.func specialisation (``grad``: its custom adjoint, if any;
    ``writer``: the FunctionWriter class that writes it)."""
    w = writer(f)
    params = [param_decl(v) for v in f.params]
    rets = f.ret_types
    attr = "SK_FUNC" if ir.work_estimate(f) <= INLINE_STATEMENTS else "SK_USER_FUNC"
    tmpl = dense_template(v.type for v in f.params)
    if len(rets) == 1:
        sig = f"{tmpl}static {attr} {ctype(rets[0])} {f.cname}({', '.join(params)})"
        epi = [f"    return {f.returns[0].cname};"]
    else:
        outs = [f"{ctype(t)}& ret{k}" for k, t in enumerate(rets)]
        sig = f"{tmpl}static {attr} void {f.cname}({', '.join(params + outs)})"
        epi = [f"    ret{k} = {r.cname};" for k, r in enumerate(f.returns)]
    fwd = w.assemble(sig, False, [], epi)
    adj_params = [f"{ctype(v.type)}& {w.adj_name(v)}" for v in f.params if getattr(v.type, "_sk_kind", "") != "array"]
    adj_rets = [f"const {ctype(t)}& adj_ret{k}" for k, t in enumerate(rets)]
    adj_attr = "SK_FUNC" if ir.work_estimate(f, True) <= ADJOINT_INLINE_STATEMENTS else "SK_DERIVED_FUNC"
    sig = f"{tmpl}static {adj_attr} void adj_{f.cname}({', '.join(params + adj_params + adj_rets)})"
    if grad is not None:
        adj = "\n".join([sig + " {", *custom_adjoint(f, w, grad), "}"])
    else:
        adj = w.assemble(sig, True, [], [])
    head = f"// function {f.name}  ({os.path.basename(f.file)}:{f.line})"
    return "\n".join([head, fwd, "", adj])


def array_paths(params) -> list[str]:
    """C++ paths (``x``, ``model.springs.ke``) of every array among ``params`` and their
    struct fields, at any depth."""
    out = []

    def visit(path, t):
        kind = getattr(t, "_sk_kind", "")
        if kind == "array":
            out.append(path)
        elif kind == "struct":
            for name, ft in t._sk_fields.items():
                visit(f"{path}.{name}", ft)
    for v in params:
        visit(v.cname, v.type)
    return out


def dense_check(f: ir.FunctionIR) -> str:
    """``{kernel}_dense(args)``: whether a launch may run the kernel's dense loop."""
    checks = [f"sk::dense(args.{p})" for p in array_paths(f.params)]
    return (f"// Whether every array of a launch (struct fields included) is row-major without gaps.\n"
            f"static SK_FUNC bool {f.cname}_dense(const {f.cname}_args& args) {{\n"
            f"    return {' && '.join(checks) or 'true'};\n}}")


def _all_funcs(f: ir.FunctionIR):
    """Every @sk.func specialisation ``f`` calls, directly or not (custom adjoints included)."""
    seen = {}

    def visit(spec):
        if spec.cname not in seen:
            seen[spec.cname] = spec
            for d in spec.ir.funcs:
                visit(d)
    for s in f.funcs:
        visit(s)
    return seen.values()


def has_dense_loop(f: ir.FunctionIR, adjoint: bool) -> bool:
    """Whether the CPU entry of ``f``'s forward (``adjoint``: backward) gets a dense loop.

    Not for kernels with 2-D to 4-D thread indices: they divide per element anyway, and
    one loop halves their compile time. Nor where the per-element work calls a function
    g++ may keep out of line (every adjoint of an @sk.func, large forwards): a second
    loop gives it a second call site, and g++ then stops inlining it (the cloth bending
    adjoint got 1.2x slower); such kernels are compute-bound and do not vectorize."""
    if f.tid_dims > 1:
        return False
    funcs = list(_all_funcs(f))
    if adjoint:
        return not funcs
    return all(ir.work_estimate(s.ir) <= INLINE_STATEMENTS for s in funcs)


# elements a CPU entry runs between two looks at its module's error code: Ctrl-C (or an
# error in another thread) stops a launch within this many elements, however long each is
STOP_EVERY = 32


def _stopping_loop(index: str, call: str, indent: str = "    ") -> list[str]:
    """The lines of a CPU entry's loop over [start, end): ``call`` per element ``i``, in
    blocks of STOP_EVERY elements, leaving between two blocks once the launch is stopped
    (the inner loop stays one the C++ compiler can vectorize)."""
    return [indent + line for line in [
        f"for ({index} i0 = {index}(start); i0 < {index}(end);) {{  // a stopped launch leaves between two blocks",
        f"    const {index} i1 = {index}(end) - i0 > {STOP_EVERY} ? i0 + {STOP_EVERY} : {index}(end);",
        f"    for ({index} i = i0; i < i1; ++i) {call}",
        "    i0 = i1;",
        "    if (SK_STOPPING()) return;",
        "}"]]


def cpu_entry(f: ir.FunctionIR, which: str, body: str) -> str:
    """The CPU entry of the forward or backward: runs elements [start, end).

    Where has_dense_loop allows, two loops over the same per-element function:
    instantiated Dense (element strides known at compile time, an int32 index that cannot
    wrap: the C++ compiler vectorizes it where the body allows, and checks at run time
    that the arrays it writes do not overlap those it reads) when the launch is 1-D and
    every array dense, else strided. The dense loop is a function of its own: inlined into
    the entry beside the strided loop, the soft grid's tet adjoint ran 1.1x slower."""
    name = f"{f.cname}_{which}"
    entry = f"{f.cname}_cpu_{which}"
    dense = has_dense_loop(f, which == "backward")  # a tangent inlines the functions its forward inlines
    lines = []
    if dense:
        lines += [f"static SK_NOINLINE void {entry}_dense(const {f.cname}_args* args, int32_t start, int32_t end) {{",
                  f"    const {f.cname}_args a = *args;  // a local copy: no store in the loop can alias it",
                  *_stopping_loop("int32_t", f"{name}<true>(a, i);"),
                  "}"]
    lines += [f"SK_EXPORT void {entry}(const {f.cname}_args* args, int64_t start, int64_t end, bool exclusive) {{",
              "    sk::plain_adds.store(exclusive, std::memory_order_relaxed);"]
    if dense:
        lines += [f"    if (args->launch.ndim == 1 && end <= INT32_MAX && {f.cname}_dense(*args)) {{",
                  f"        {entry}_dense(args, int32_t(start), int32_t(end));",
                  "        return;",
                  "    }"]
    lines += [f"    const {f.cname}_args a = *args;",
              *_stopping_loop("int64_t", f"{name}<false>(a, i);"), "}",
              f"SK_EXPORT const int {f.cname}_cpu_{which}_scatters = {int(scatters(body))};"]
    return "\n".join(lines)


def entry_points(f: ir.FunctionIR, which: str, body: str) -> str:
    """The CUDA entry (``{kernel}_cuda_{which}``) and the CPU one of a per-element function."""
    return (f"#ifdef SK_CUDA\n"
            f'extern "C" __global__ void {f.cname}_cuda_{which}({f.cname}_args args) {{\n'
            f"    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < args.launch.size;"
            f" i += int64_t(blockDim.x) * gridDim.x) {f.cname}_{which}<false>(args, i);\n}}\n"
            f"#else\n"
            f"{cpu_entry(f, which, body)}\n"
            f"#endif")


def kernel_source(f: ir.FunctionIR) -> str:
    """Argument struct, forward and adjoint bodies and the entry points of a kernel."""
    w = FunctionWriter(f)
    fields = ["    sk::launch_t launch;"] + [f"    {ctype(v.type)} {v.cname};" for v in f.params]
    args_struct = f"struct {f.cname}_args {{\n" + "\n".join(fields) + "\n};"
    pro = [f"    const {ctype(v.type)}& {v.cname} = args.{v.cname};" for v in f.params]
    adj_pro = pro + [f"    {ctype(v.type)} {w.adj_name(v)} = {{}};" for v in f.params if differentiable(v.type)]
    sig = f"template <bool Dense>\nstatic SK_FUNC void {f.cname}_forward(const {f.cname}_args& args, int64_t _idx)"
    fwd = w.assemble(sig, False, pro, [])
    sig = f"template <bool Dense>\nstatic SK_FUNC void {f.cname}_backward(const {f.cname}_args& args, int64_t _idx)"
    adj = w.assemble(sig, True, adj_pro, []) if f.enable_backward else sig + " {}  // enable_backward=False"
    entries = [entry_points(f, which, body) for which, body in (("forward", fwd), ("backward", adj))]
    head = f"// kernel {f.name}  ({os.path.basename(f.file)}:{f.line})"
    dense = [dense_check(f), ""] if has_dense_loop(f, False) or has_dense_loop(f, True) else []
    return "\n".join([head, args_struct, "", fwd, "", adj, "", *dense, *entries])


def scatters(body: str) -> bool:
    """Whether a generated function accumulates into memory other threads may share (atomic
    adds into arrays or gradients): split over threads, each such add is an atomic."""
    return "sk::atomic_" in body or "accum_grad(" in body


def _order_funcs(funcs) -> list:
    seen, out = set(), []

    def visit(spec):
        if spec.cname in seen:
            return
        seen.add(spec.cname)
        for d in spec.ir.funcs:
            visit(d)
        out.append(spec)
    for s in funcs:
        visit(s)
    return out


def module_source(kernels: list[ir.FunctionIR], header_name: str) -> str:
    """The whole translation unit for a group of kernels."""
    structs, funcs = [], []
    for k in kernels:
        structs += k.structs
        funcs += k.funcs
    for spec in _order_funcs(funcs):
        structs += spec.ir.structs
    parts = [
        "// Generated by simkit: the kernels below mirror their Python source line by line.",
        f'#include "{header_name}"',
        "",
        "// Depth of the adjoint's per-thread replay stack of a dynamic loop (sk.config).",
        "#ifdef SK_CUDA",
        f"#define SK_LOOP_STACK {int(config.cuda_max_loop_iterations)}",
        "#else",
        f"#define SK_LOOP_STACK {int(config.max_loop_iterations)}",
        "#endif",
        "",
        "SK_GLOBAL_ATTR sk::error_t sk_error;",
        "#ifndef SK_CUDA",
        "SK_EXPORT sk::error_t* sk_get_error() { return &sk_error; }",
        "#endif",
        "",
    ]
    parts += [struct_source(t) + element_grads(t) + "\n" for t in _order_structs(structs)]
    parts += [function_source(s.ir, s.grad_spec) + "\n" for s in _order_funcs(funcs)]
    parts += [kernel_source(k) + "\n" for k in kernels]
    return "\n".join(parts)
