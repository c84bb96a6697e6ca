"""The spatial-algebra builtins of the table (:mod:`simkit.core.builtins`): Featherstone's
6-vectors (angular top, linear bottom) and 6x6 matrices, and twists and wrenches moved by a
transform.

Example::

    f = sk.spatial_cross_dual(v, sk.spatial_dot(a, b) * v)     # in a kernel
"""

from .builtins import _

# ---------------------------------------------------------------------------
# Spatial vectors (angular top, linear bottom: Featherstone's [w; v]) and 6x6 matrices
# ---------------------------------------------------------------------------
_("spatial_top", "a: vec(6,F)", "vec(3,F)", "return top_(a);", "adj_a += join_(adj_ret, vec_t<3, F>{});",
  tan="return top_(tan_a);",
  doc="The angular (first) half of a spatial vector.")
_("spatial_bottom", "a: vec(6,F)", "vec(3,F)", "return bottom_(a);", "adj_a += join_(vec_t<3, F>{}, adj_ret);",
  tan="return bottom_(tan_a);",
  doc="The linear (second) half of a spatial vector.")
_("spatial_dot", "a: vec(6,F), b: vec(6,F)", "F", "return dot_(a, b);", "adj_a += b * adj_ret; adj_b += a * adj_ret;",
  tan="return dot_(tan_a, b) + dot_(a, tan_b);")
_("spatial_cross", "a: vec(6,F), b: vec(6,F)", "vec(6,F)",
  "return join_(cross_(top_(a), top_(b)), cross_(bottom_(a), top_(b)) + cross_(top_(a), bottom_(b)));",
  "vec_t<3, F> gw = top_(adj_ret), gv = bottom_(adj_ret);"
  " adj_a += join_(cross_(top_(b), gw) + cross_(bottom_(b), gv), cross_(top_(b), gv));"
  " adj_b += join_(cross_(gw, top_(a)) + cross_(gv, bottom_(a)), cross_(gv, top_(a)));",
  tan="return spatial_cross(tan_a, b) + spatial_cross(a, tan_b);",
  doc="Motion cross product a x b: (wa x wb, va x wb + wa x vb).")
_("spatial_cross_dual", "a: vec(6,F), b: vec(6,F)", "vec(6,F)",
  "return join_(cross_(top_(a), top_(b)) + cross_(bottom_(a), bottom_(b)), cross_(top_(a), bottom_(b)));",
  "vec_t<3, F> gw = top_(adj_ret), gv = bottom_(adj_ret);"
  " adj_a += join_(cross_(top_(b), gw) + cross_(bottom_(b), gv), cross_(bottom_(b), gw));"
  " adj_b += join_(cross_(gw, top_(a)), cross_(gw, bottom_(a)) + cross_(gv, top_(a)));",
  tan="return spatial_cross_dual(tan_a, b) + spatial_cross_dual(a, tan_b);",
  doc="Force cross product a x* b: (wa x wb + va x vb, wa x vb).")
_("spatial_transpose", "a: mat(6,6,F)", "mat(6,6,F)", "return transpose_(a);", "adj_a += transpose_(adj_ret);",
  tan="return transpose_(tan_a);")
_("spatial_adjoint", "r: mat(3,3,F), s: mat(3,3,F)", "mat(6,6,F)",
  "mat_t<6, 6, F> m = {}; SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < 3; ++j)"
  " { m[i][j] = r[i][j]; m[i + 3][j + 3] = r[i][j]; m[i + 3][j] = s[i][j]; } return m;",
  "SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < 3; ++j)"
  " { adj_r[i][j] += adj_ret[i][j] + adj_ret[i + 3][j + 3]; adj_s[i][j] += adj_ret[i + 3][j]; }",
  tan="return spatial_adjoint(tan_r, tan_s);",
  doc="The 6x6 matrix [[r, 0], [s, r]].")
_("transform_twist", "t: transform(F), x: vec(6,F)", "vec(6,F)",
  "vec_t<3, F> w = qrotate(t.q, top_(x)); return join_(w, qrotate(t.q, bottom_(x)) + cross_(t.p, w));",
  "vec_t<3, F> w = qrotate(t.q, top_(x)); vec_t<3, F> gw = top_(adj_ret), gv = bottom_(adj_ret);"
  " adj_t.p += cross_(w, gv); gw += cross_(gv, t.p); vec_t<3, F> adj_w = {}, adj_v = {};"
  " adj_qrotate_(t.q, top_(x), adj_t.q, adj_w, gw); adj_qrotate_(t.q, bottom_(x), adj_t.q, adj_v, gv);"
  " adj_x += join_(adj_w, adj_v);",
  tan="vec_t<3, F> w = qrotate(t.q, top_(x)); vec_t<3, F> tw = tan_qrotate_(t.q, top_(x), tan_t.q, top_(tan_x)); return join_(tw, tan_qrotate_(t.q, bottom_(x), tan_t.q, bottom_(tan_x)) + cross_(tan_t.p, w) + cross_(t.p, tw));",
  doc="A twist (w, v) moved by t: (R w, R v + p x R w).")
_("transform_wrench", "t: transform(F), x: vec(6,F)", "vec(6,F)",
  "vec_t<3, F> f = qrotate(t.q, bottom_(x)); return join_(qrotate(t.q, top_(x)) + cross_(t.p, f), f);",
  "vec_t<3, F> f = qrotate(t.q, bottom_(x)); vec_t<3, F> gw = top_(adj_ret), gf = bottom_(adj_ret);"
  " adj_t.p += cross_(f, gw); gf += cross_(gw, t.p); vec_t<3, F> adj_w = {}, adj_f = {};"
  " adj_qrotate_(t.q, top_(x), adj_t.q, adj_w, gw); adj_qrotate_(t.q, bottom_(x), adj_t.q, adj_f, gf);"
  " adj_x += join_(adj_w, adj_f);",
  tan="vec_t<3, F> f = qrotate(t.q, bottom_(x)); vec_t<3, F> tf = tan_qrotate_(t.q, bottom_(x), tan_t.q, bottom_(tan_x)); return join_(tan_qrotate_(t.q, top_(x), tan_t.q, top_(tan_x)) + cross_(tan_t.p, f) + cross_(t.p, tf), tf);",
  doc="A wrench (torque, force) moved by t: (R tau + p x R f, R f).")
