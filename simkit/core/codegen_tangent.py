"""Codegen, forward mode: the tangent C++ of kernels and ``@sk.func`` s.

A tangent body is the forward body with each op's tangent statement right after it
(``tan_<value>`` beside ``<value>``, same ``// file:line`` markers), so a value and its
directional derivative are computed together in one pass; dynamic loops carry tangents
like values, branches hold the tangents of the statements they hold.

Arrays carry no tangent variable: during a tangent launch each array argument's *grad*
slot holds its tangent buffer (simkit.autograd.forward writes it into the packed
arguments), so a load reads ``tan = *grad_ptr(a, i)`` (zero where there is no buffer), a
store writes it and an ``atomic_add`` adds into it. Scalar, vector and struct arguments of a kernel have zero
tangents. A call of an ``@sk.func`` becomes one call of its tangent function, which
returns the values and their tangents (a custom adjoint does not take part: tangents
come from the function's body).

These are generated only when a tangent is first launched, into a translation unit of
their own (``tangent_module_source``), which includes the tangent builtins header: a
module that never takes a tangent compiles exactly what it compiled before.
"""

from __future__ import annotations

import hashlib
import os
import re

from . import types as T
from . import builtins as B
from . import ir
from . import tangent_zero as TZ
from .codegen import (INLINE_STATEMENTS, FunctionWriter, _order_funcs, _order_structs, ctype, dense_check,
                      dense_template, differentiable, entry_points, has_dense_loop, param_decl, struct_source)
from .errors import CompileError


def _float_array(v) -> bool:
    t = getattr(v, "type", None)
    return getattr(t, "_sk_kind", "") == "array" and T.holds_floats(t.dtype)


class TangentWriter(FunctionWriter):
    """Writes the tangent body of one FunctionIR (values and tangents side by side).

    ``constant_fields``: the body for launches whose struct arguments' arrays carry no tangent
    (simkit.core.tangent_zero): tangents known zero there are neither computed nor used."""

    def __init__(self, f: ir.FunctionIR, constant_fields: bool = False):
        super().__init__(f)
        self.tan_dummies: dict[str, str] = {}
        self.inactive = TZ.struct_field_arrays(f) if constant_fields else set()
        self.zero = TZ.static_zero(f, self.inactive) if self.inactive else set()
        self.dropped = 0  # tangent statements left out or shortened by the known zeros

    def tan_name(self, v: ir.Var) -> str:
        return f"tan_{v.cname}"

    def tan_text(self, a) -> str:
        """The tangent of an op argument: a variable's, else zero (constants, integers, bools)."""
        if isinstance(a, ir.Const):
            t = a.type.default() if isinstance(a.type, B.Weak) else a.type
            return f"{ctype(t)}{{}}"
        if differentiable(a.type):
            return self.tan_name(a)
        key = ctype(a.type)
        if key not in self.tan_dummies:
            self.tan_dummies[key] = f"tan_unused_{len(self.tan_dummies)}"
        return self.tan_dummies[key]

    def ret_stmt(self, adjoint: bool) -> str:
        return "return"  # tangent functions return through reference parameters

    def linear(self, op: ir.Op) -> str:
        """The forward statement of a linear op over tangents (integers stay primal: indices)."""
        def sub(m):
            if m.group(0) == "$RETURN":
                return "return"
            kind, k = m.group(2), int(m.group(3))
            v = op.outs[k] if kind == "o" else op.args[k]
            t = v.type.default() if isinstance(v.type, B.Weak) else v.type
            return self.tan_text(v) if differentiable(t) else self.arg_text(v, False)
        return re.sub(r"\$(adj_|tan_)?([oa])(\d+)|\$RETURN", sub, op.fwd)

    def refuse(self, op: ir.Op):
        what = op.what or "this operation"
        raise CompileError(f"{what} has no tangent (forward-mode) rule, so this {('kernel' if self.f.is_kernel else 'function')} "
                           "cannot be differentiated in forward mode; use reverse mode (sk.Tape) for it, or add the "
                           "rule (builtins: a tan= body next to the adjoint in simkit/core/builtins.py)",
                           self.f.file, op.line, self.f.source_lines.get(op.line, ""), f"in '{self.f.name}'")

    def emit_op(self, s: ir.Op, text: str, ret: str):
        outs = [o for o in s.outs if differentiable(o.type)]
        flows = any(differentiable(v.type) for v in (s.outs or s.args) if isinstance(v, ir.Var)) or (
            not s.replay and any(_float_array(v) for v in s.args))  # a store or atomic into a float array
        tan = s.tan
        if (tan is None and s.adj is not None and flows) or s.what.startswith("sk.grad of"):
            self.refuse(s)  # sk.grad runs an adjoint function, which tangent modules do not hold
        if tan is not None and s.tan_fused:
            self.put(self.render(tan, s, ret))
            return
        self.put(self.render(text, s, ret))
        if self.zero and tan not in (None, ir.ZERO) and outs:
            if all(o.id in self.zero for o in outs):
                self.dropped += 1  # never assigned a tangent anywhere: it keeps its zero
                return
            zero_args = {k for k, a in enumerate(s.args) if isinstance(a, ir.Const) or (
                isinstance(a, ir.Var) and a.id in self.zero)}
            short = TZ.simplified_rule(s, zero_args, lambda a: self.arg_text(a, False), self.tan_text) \
                if tan != ir.LINEAR else None
            if short is not None:
                self.dropped += 1
                self.put(self.render(short, s, ret))
                return
        if tan is None or tan == ir.ZERO or (tan == ir.LINEAR and not outs):
            # no derivative: the tangent stays zero (reset in a loop, where an earlier iteration set it)
            for o in outs:
                if o.loop_depth > 0 or tan == ir.ZERO:
                    self.put(f"{self.tan_name(o)} = {{}};")
            return
        if tan == ir.LINEAR:
            self.put(self.linear(s))
        elif flows:
            self.put(self.render(tan, s, ret))

    def carry(self, c: ir.Var, final: ir.Var):
        if differentiable(c.type):
            self.put(f"{c.cname} = {final.cname}; {self.tan_name(c)} = {self.tan_name(final)};")
        else:
            super().carry(c, final)

    def declarations(self, adjoint: bool) -> list[str]:
        out = []
        for v in self.f.vars:
            if v.id in self.params:
                continue
            out.append(f"{ctype(v.type)} {v.cname} = {{}};")
            if differentiable(v.type):
                out.append(f"{ctype(v.type)} {self.tan_name(v)} = {{}};")
        return out

    def tangent(self, signature: str, prologue: list[str], epilogue: list[str]) -> str:
        self.lines, self.last_line, self.tan_dummies = [], None, {}
        self.forward(self.f.body, False, False)
        body = self.lines
        decls = ["    " + d for d in self.declarations(False)]
        dummies = [f"    {t} {n} = {{}};" for t, n in self.tan_dummies.items()]
        return "\n".join([signature + " {", *prologue, *decls, *dummies, *body, *epilogue, "}"])


def function_tangent_source(f: ir.FunctionIR) -> str:
    """``tan_<f>(params..., tangents of the non-array params..., ret0, tan_ret0, ...)``."""
    w = TangentWriter(f)
    params = [param_decl(v) for v in f.params]
    tans = [f"const {ctype(v.type)}& {w.tan_name(v)}" for v in f.params if getattr(v.type, "_sk_kind", "") != "array"]
    outs = [f"{ctype(t)}& ret{k}, {ctype(t)}& tan_ret{k}" for k, t in enumerate(f.ret_types)]
    tmpl = dense_template(v.type for v in f.params)
    # Inlined wherever the function's forward is: kept out of line, the cloth's hinge angle
    # passed its ten vec3 results and tangents through the stack and cost the bending kernel
    # its dense loop (codegen.has_dense_loop): it took 1.3x the time it takes inlined. (On
    # the GPU a large one stays out of line: see SK_DERIVED_FUNC in native/base.h.)
    attr = "SK_FUNC" if ir.work_estimate(f) <= INLINE_STATEMENTS else "SK_DERIVED_FUNC"
    sig = f"{tmpl}static {attr} void tan_{f.cname}({', '.join(params + tans + outs)})"
    epi = []
    for k, r in enumerate(f.returns):
        epi.append(f"    ret{k} = {r.cname};")
        epi.append(f"    tan_ret{k} = {w.tan_name(r) if differentiable(r.type) else '{}'};")
    head = f"// tangent of function {f.name}  ({os.path.basename(f.file)}:{f.line})"
    return "\n".join([head, w.tangent(sig, [], epi)])


def kernel_tangent_source(f: ir.FunctionIR) -> str:
    """Argument struct, tangent body and the CPU/CUDA tangent entries (``{kernel}_cpu_tangent``)."""
    w = TangentWriter(f)
    fields = ["    sk::launch_t launch;"] + [f"    {ctype(v.type)} {v.cname};" for v in f.params]
    args_struct = f"struct {f.cname}_args {{\n" + "\n".join(fields) + "\n};"
    pro = [f"    const {ctype(v.type)}& {v.cname} = args.{v.cname};" for v in f.params]
    pro += [f"    const {ctype(v.type)} {w.tan_name(v)} = {{}};  // kernel arguments other than arrays: constants"
            for v in f.params if differentiable(v.type)]
    sig = f"template <bool Dense>\nstatic SK_FUNC void {f.cname}_tangent(const {f.cname}_args& args, int64_t _idx)"
    body = w.tangent(sig, pro, [])
    head = f"// tangent of kernel {f.name}  ({os.path.basename(f.file)}:{f.line})"
    dense = [dense_check(f), ""] if has_dense_loop(f, False) else []
    # The body for launches whose struct arguments' arrays have no tangent (a model's
    # parameters while differentiating with respect to the state): {kernel}_cpu_tangent_c.
    constant = []
    wc = TangentWriter(f, constant_fields=True)
    if wc.inactive:
        body_c = wc.tangent(sig.replace(f"{f.cname}_tangent(", f"{f.cname}_tangent_c("), pro, [])
        if wc.dropped:
            constant = ["", body_c, "", entry_points(f, "tangent_c", body_c)]
    return "\n".join([head, args_struct, "", body, "", *dense, entry_points(f, "tangent", body), *constant])


def tangent_module_source(kernels: list[ir.FunctionIR]) -> str:
    """The translation unit of the tangent entries of ``kernels`` (CPU, or CUDA through NVRTC)."""
    from .compiler import tangent_header_text

    structs, funcs = [], []
    for k in kernels:
        structs += k.structs
        funcs += k.funcs
    # custom adjoints (@sk.func_grad) are called by adjoints only
    specs = [s for s in _order_funcs(funcs) if s.fn.grad_of is None]
    for spec in specs:
        structs += spec.ir.structs
    rules = hashlib.sha256(tangent_header_text().encode()).hexdigest()[:16]
    parts = [
        "// Generated by simkit: tangent (forward-mode) kernels; each tangent statement follows the",
        "// forward statement it differentiates.",
        f"// tangent rules {rules}",
        f'#include "{B.TANGENT_HEADER}"',
        "",
        "SK_GLOBAL_ATTR sk::error_t sk_error;",
        "#ifndef SK_CUDA",
        "SK_EXPORT sk::error_t* sk_get_error() { return &sk_error; }",
        "#endif",
        "",
    ]
    parts += [struct_source(t) + "\n" for t in _order_structs(structs)]
    parts += [function_tangent_source(s.ir) + "\n" for s in specs]
    parts += [kernel_tangent_source(k) + "\n" for k in kernels]
    return "\n".join(parts)
