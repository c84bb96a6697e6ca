"""Codegen, second order: the Hessian-vector product entries of kernels (forward-over-reverse).

A kernel's *hvp* entry is its adjoint body (forward replay and reverse sweep, exactly as
codegen.FunctionWriter writes it) with every float type spelled as a dual number
(``double`` -> ``sk::dual<double>``, ``sk::vec_t<3, float>`` -> ``sk::vec_t<3,
sk::dual<float>>``, float arrays -> ``sk::darray_t``, structs -> their dual twins), so the
C++ compiler carries a tangent through every statement of the adjoint: the builtins'
adjoint rules, custom adjoints and dynamic loops included, with no second-order rule per
builtin. Run after a forward pass whose tangents are known (a JVP along ``v``), the
adjoint sweep then yields the gradient and, in the tangents of the adjoints, the
Hessian-vector product ``H v``. The dual arithmetic lives in hvp_header.

The entry takes two argument structs: the launch's own (arrays: values and adjoints) and
a copy whose array words hold the tangents and the tangents of the adjoints
(simkit.autograd.hvp patches them in). CPU only: there is no CUDA entry.
"""

from __future__ import annotations

import os
import re

from . import builtins as B
from . import ir
from .codegen import (FunctionWriter, _order_funcs, _order_structs, _stopping_loop, ctype, dense_check, differentiable,
                      function_source, scatters, struct_source)
from .config import config
from .errors import CompileError
from .hvp_header import DUAL_ARRAYS, DUAL_SCALARS

_FLOATS = re.compile(r"\b(double|float)\b")


class Dualizer:
    """Rewrites generated C++ so that floats (and structs holding them) become duals."""

    def __init__(self, structs):
        self.structs = [t._sk_ctype for t in structs]
        names = "|".join(re.escape(n) for n in self.structs)
        self.struct_re = re.compile(rf"\b({names})\b") if names else None

    def __call__(self, text: str) -> str:
        text = text.replace("sk::array_t<", "sk::hvp_array<")
        text = _FLOATS.sub(r"sk::dual<\1>", text)
        # an element's adjoint is a (adjoint, tangent) pair of pointers there, not a pointer
        text = text.replace("if (auto* g = sk::grad_ptr", "if (auto g = sk::grad_ptr")
        if self.struct_re is not None:
            text = self.struct_re.sub(r"\1_hvp", text)
        return text


class DualWriter(FunctionWriter):
    """FunctionWriter whose float constants are duals (with a zero tangent)."""

    def arg_text(self, a, adj: bool) -> str:
        text = super().arg_text(a, adj)
        if isinstance(a, ir.Const) and not adj:
            t = a.type.default() if isinstance(a.type, B.Weak) else a.type
            if getattr(t, "_sk_kind", "") == "scalar" and t.is_float:
                return f"sk::to_dual({text})"
        return text


def _arg_expr(t, p: str, q: str) -> str:
    """The dual value of a kernel argument (or struct field) from its two packed copies."""
    if getattr(t, "_sk_kind", "") == "struct":
        return f"{t._sk_ctype}_hvp_arg({p}, {q})"
    return f"sk::hvp_arg({p}, {q})"


def dual_struct_source(t, dual: Dualizer) -> str:
    """The dual twin ``<struct>_hvp`` of a struct and how to build it from the two packed copies."""
    base = dual(struct_source(t))
    fields = ", ".join(_arg_expr(ft, f"p.{n}", f"q.{n}") for n, ft in t._sk_fields.items())
    return (f"{base}\nstatic inline {t._sk_ctype}_hvp {t._sk_ctype}_hvp_arg(const {t._sk_ctype}& p, "
            f"const {t._sk_ctype}& q) {{ return {t._sk_ctype}_hvp{{{fields}}}; }}")


def kernel_hvp_source(f: ir.FunctionIR, dual: Dualizer) -> str:
    """The hvp body of a kernel and its CPU entry ``{kernel}_cpu_hvp``."""
    if not f.enable_backward:
        raise CompileError(f"kernel '{f.name}' was declared with enable_backward=False: it has no adjoint, so no "
                           "Hessian-vector product either", f.file, f.line, "", "")
    w = DualWriter(f)
    args_struct = f"struct {f.cname}_args {{\n" + "\n".join(
        ["    sk::launch_t launch;"] + [f"    {ctype(v.type)} {v.cname};" for v in f.params]) + "\n};"
    # The dual arguments are built once per entry call, not per element: each dual array is
    # two array headers, which a per-element copy moved through the stack every time.
    dargs = "\n".join([f"struct {f.cname}_dargs {{", "    sk::launch_t launch;",
                       *[f"    {dual(ctype(v.type))} {v.cname};" for v in f.params], "};",
                       f"static {f.cname}_dargs {f.cname}_dual_args(const {f.cname}_args& p, "
                       f"const {f.cname}_args& t) {{",
                       f"    {f.cname}_dargs d;", "    d.launch = p.launch;",
                       *[f"    d.{v.cname} = {_arg_expr(v.type, 'p.' + v.cname, 't.' + v.cname)};" for v in f.params],
                       "    return d;", "}"])
    pro = [f"    const auto& {v.cname} = args.{v.cname};" for v in f.params]
    pro += [f"    {dual(ctype(v.type))} {w.adj_name(v)} = {{}};" for v in f.params if differentiable(v.type)]
    sig = f"static SK_FUNC void {f.cname}_hvp(const {f.cname}_dargs& args, int64_t _idx)"
    body = w.assemble("template <bool Dense>\n" + sig, True, [], [])
    head, rest = body.split("\n", 2)[:2], body.split("\n", 2)[2]
    # the prologue is not rewritten: it names the dual arguments
    body = "\n".join([*head, *pro, dual(rest)])
    name = f"{f.cname}_cpu_hvp"
    # The dense loop where the forward has one and every array and tangent buffer is dense
    # (the buffers are laid out like their arrays): no stride arithmetic per access.
    dense = f.tid_dims <= 1
    loop = [f"    if (a.p.launch.ndim == 1 && end <= INT32_MAX && {f.cname}_dense(a.p) && {f.cname}_dense(a.t)) {{",
            *_stopping_loop("int32_t", f"{f.cname}_hvp<true>(d, i);", "        "),
            "        return;",
            "    }"] if dense else []
    entry = "\n".join([
        f"struct {f.cname}_hargs {{ {f.cname}_args p; {f.cname}_args t; }};",
        *([dense_check(f)] if dense else []),
        f"SK_EXPORT void {name}(const {f.cname}_hargs* args, int64_t start, int64_t end, bool exclusive) {{",
        "    sk::plain_adds.store(exclusive, std::memory_order_relaxed);",
        f"    const {f.cname}_hargs& a = *args;",
        f"    const {f.cname}_dargs d = {f.cname}_dual_args(a.p, a.t);",
        *loop,
        *_stopping_loop("int64_t", f"{f.cname}_hvp<false>(d, i);"),
        "}",
        f"SK_EXPORT const int {name}_scatters = {int(scatters(body))};"])
    top = f"// Hessian-vector product (dual adjoint) of kernel {f.name}  ({os.path.basename(f.file)}:{f.line})"
    return "\n".join([top, args_struct, "", dargs, "", body, "", entry])


def hvp_module_source(kernels: list[ir.FunctionIR]) -> str:
    """The translation unit of the hvp entries of ``kernels`` (CPU)."""
    structs, funcs = [], []
    for k in kernels:
        structs += k.structs
        funcs += k.funcs
    specs = _order_funcs(funcs)
    for spec in specs:
        structs += spec.ir.structs
    structs = _order_structs(structs)
    dual = Dualizer(structs)
    parts = [
        "// Generated by simkit: Hessian-vector product entries (each kernel's adjoint over dual numbers).",
        DUAL_SCALARS,
        f'#include "{B.HEADER}"',
        DUAL_ARRAYS,
        f"#define SK_LOOP_STACK {int(config.max_loop_iterations)}",
        "SK_GLOBAL_ATTR sk::error_t sk_error;",
        "SK_EXPORT sk::error_t* sk_get_error() { return &sk_error; }",
        "",
    ]
    parts += [struct_source(t) + "\n" for t in structs]
    parts += [dual_struct_source(t, dual) + "\n" for t in structs]
    parts += [dual(function_source(s.ir, s.grad_spec, DualWriter)) + "\n" for s in specs]
    parts += [kernel_hvp_source(k, dual) + "\n" for k in kernels]
    return "\n".join(parts)
