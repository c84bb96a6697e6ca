"""Codegen, structs: the C++ definition of each @sk.struct a module uses, in dependency order,
and the gradient helpers of structs that are array elements.

Example::

    struct_source(Particle)      # struct Particle_1a2b3c4d { sk::vec_t<3, float> x; ... };
    element_grads(Particle)      # sk::accum_grad / sk::take_grad_shared for a Particle*
"""

from __future__ import annotations

from .ir import differentiable
from .struct import EMPTY_PAD


def struct_source(t) -> str:
    if getattr(t, "_sk_native", False):  # MeshQueryPoint & co.: defined in a native header
        return f"// struct {t.__name__}: {t._sk_ctype} (native header)"
    fields = "\n".join(f"    {ft._sk_ctype} {n};" for n, ft in t._sk_fields.items()) or f"    unsigned char {EMPTY_PAD};"
    adds = " ".join(f"a.{n} += b.{n};" for n, ft in t._sk_fields.items() if differentiable(ft))
    return (f"// struct {t.__name__}\nstruct {t._sk_ctype} {{\n{fields}\n}};\n"
            f"SK_FUNC {t._sk_ctype}& operator+=({t._sk_ctype}& a, const {t._sk_ctype}& b) {{ {adds} return a; }}")


def element_grads(t) -> str:
    """For an array of structs ``t``: the gradient of an element read by several threads
    (accum_grad) and taken back by a store several threads may make (take_grad_shared), field
    by field over the float fields (an int field carries no gradient)."""
    if t._sk_np_dtype is None or not differentiable(t):
        return ""
    s, float_fields = t._sk_ctype, [n for n, ft in t._sk_fields.items() if differentiable(ft)]
    accum = " ".join(f"accum_grad(&g->{n}, v.{n});" for n in float_fields)
    take = " ".join(f"take_grad_shared(&g->{n}, adj.{n});" for n in float_fields)
    return (f"\nnamespace sk {{\n"
            f"SK_FUNC void accum_grad({s}* g, const {s}& v) {{ if (g) {{ {accum} }} }}\n"
            f"SK_FUNC void take_grad_shared({s}* g, {s}& adj) {{ if (g) {{ {take} }} }}\n"
            f"}}  // namespace sk")


def order_structs(structs) -> list:
    """``structs`` with every struct after the structs it holds (as fields or as array elements)."""
    seen, out = set(), []

    def visit(t):
        if t in seen:
            return
        seen.add(t)
        for ft in t._sk_fields.values():
            if getattr(ft, "_sk_kind", "") == "array":
                ft = ft.dtype  # an array of structs: its element type is declared first too
            if getattr(ft, "_sk_kind", "") == "struct":
                visit(ft)
        out.append(t)
    for t in structs:
        visit(t)
    return out
