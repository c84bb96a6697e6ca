"""Builtins of the table (:mod:`simkit.core.builtins`) that Warp code reaches and simkit had
lacked: the error function, angle conversions, vector norms, the inverse of ``quat_rpy``,
floating-point classification, the identity quaternion and transform and the transform
accessors under Warp's names, a scalar divided by a vector, matrix or quaternion, ``skew``,
``transform_point`` / ``transform_vector`` of a 4x4 matrix and ``velocity_at_point``.

Example::

    e = sk.erf(x) + sk.norm_huber(v, 0.5)         # in a kernel
    rpy = sk.quat_to_rpy(sk.quat_rpy(0.1, 0.2, 0.3))   # (0.1, 0.2, 0.3)
"""

from .builtins import _

_TWO_OVER_SQRT_PI = "F(1.1283791670955126)"

# ---------------------------------------------------------------------------
# Scalar functions
# ---------------------------------------------------------------------------
_("erf", "x: F", "F", "return m::erf(x);", f"adj_x += {_TWO_OVER_SQRT_PI} * m::exp(-x * x) * adj_ret;",
  tan=f"return {_TWO_OVER_SQRT_PI} * m::exp(-x * x) * tan_x;", doc="The error function of x.")
_("erfc", "x: F", "F", "return m::erfc(x);", f"adj_x -= {_TWO_OVER_SQRT_PI} * m::exp(-x * x) * adj_ret;",
  tan=f"return -{_TWO_OVER_SQRT_PI} * m::exp(-x * x) * tan_x;", doc="The complementary error function 1 - erf(x).")
_("cbrt", "x: F", "F", "return m::cbrt(x);", "F c = m::cbrt(x); adj_x += adj_ret / (F(3) * c * c);",
  tan="F c = m::cbrt(x); return tan_x / (F(3) * c * c);", doc="The cube root of x (negative for a negative x).")
_("degrees", "x: F", "F", "return x * F(57.29577951308232);", "adj_x += F(57.29577951308232) * adj_ret;",
  tan="return F(57.29577951308232) * tan_x;", doc="x radians in degrees.")
_("radians", "x: F", "F", "return x * F(0.017453292519943295);", "adj_x += F(0.017453292519943295) * adj_ret;",
  tan="return F(0.017453292519943295) * tan_x;", doc="x degrees in radians.")
_("rint", "x: F", "F", "return m::rint(x);", None, doc="x rounded to the nearest integer, halfway cases to even.")
_("frac", "x: F", "F", "return x - m::trunc(x);", "adj_x += adj_ret;", tan="return tan_x;",
  doc="The fractional part x - trunc(x) (its sign is x's).")
_("step", "x: F", "F", "return x < F(0) ? F(1) : F(0);", None, doc="1 where x < 0, else 0 (Warp's step).")
_("nonzero", "x: F", "F", "return x != F(0) ? F(1) : F(0);", None, doc="1 where x is not zero, else 0.")
# Written without the C library's isnan/isinf, which fast-math builds may fold to false.
_("isnan", "x: F", "bool", "return !(x == x);", None, doc="Whether x is NaN.")
_("isinf", "x: F", "bool", "return x == x && !(x - x == x - x);", None, doc="Whether x is +inf or -inf.")
_("isfinite", "x: F", "bool", "return x - x == x - x;", None, doc="Whether x is neither infinite nor NaN.")

# ---------------------------------------------------------------------------
# Vector norms (Warp's norm_l1, norm_l2, norm_huber, norm_pseudo_huber)
# ---------------------------------------------------------------------------
_("norm_l1", "v: vec(N,F)", "F", "F r = F(0); SK_UNROLL for (int i = 0; i < N; ++i) r += abs_(v[i]); return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) adj_v[i] += sign_(v[i]) * adj_ret;",
  tan="F r = F(0); SK_UNROLL for (int i = 0; i < N; ++i) r += sign_(v[i]) * tan_v[i]; return r;",
  doc="The sum of the absolute values of v's components (the gradient at a zero component is 0).")
_("norm_l2", "v: vec(N,F)", "F", "return m::sqrt(dot_(v, v));",
  "F l = m::sqrt(dot_(v, v)); if (l > F(0)) adj_v += v * (adj_ret / l);",
  tan="F l = m::sqrt(dot_(v, v)); return l > F(0) ? dot_(v, tan_v) / l : F(0);",
  doc="The Euclidean length of v, as length(v).")
_HUBER = ("F a = dot_(v, v); if (a <= delta * delta) return F(0.5) * a; return delta * (m::sqrt(a) - F(0.5) * delta);")
_HUBER_ADJ = ("F a = dot_(v, v); if (a <= delta * delta) { adj_v += v * adj_ret; return; }"
              " F l = m::sqrt(a); adj_v += v * (delta * adj_ret / l); adj_delta += (l - delta) * adj_ret;")
_HUBER_TAN = ("F a = dot_(v, v); if (a <= delta * delta) return dot_(v, tan_v); F l = m::sqrt(a);"
              " return delta * dot_(v, tan_v) / l + (l - delta) * tan_delta;")
_("norm_huber", "v: vec(N,F), delta: F", "F", _HUBER, _HUBER_ADJ, tan=_HUBER_TAN,
  doc="Huber's norm: |v|^2 / 2 within delta, delta (|v| - delta / 2) beyond.")
_("norm_huber", "v: vec(N,F)", "F", "F delta = F(1); " + _HUBER,
  "F delta = F(1), adj_delta = F(0); " + _HUBER_ADJ, tan="F delta = F(1), tan_delta = F(0); " + _HUBER_TAN,
  doc="Huber's norm with delta = 1.")
_PSEUDO = "return delta * m::sqrt(F(1) + dot_(v, v) / (delta * delta));"
_PSEUDO_ADJ = ("F a = dot_(v, v), r = m::sqrt(F(1) + a / (delta * delta));"
               " adj_v += v * (adj_ret / (delta * r)); adj_delta += (r - a / (delta * delta * r)) * adj_ret;")
_PSEUDO_TAN = ("F a = dot_(v, v), r = m::sqrt(F(1) + a / (delta * delta));"
               " return dot_(v, tan_v) / (delta * r) + (r - a / (delta * delta * r)) * tan_delta;")
_("norm_pseudo_huber", "v: vec(N,F), delta: F", "F", _PSEUDO, _PSEUDO_ADJ, tan=_PSEUDO_TAN,
  doc="The smooth Huber norm delta sqrt(1 + |v|^2 / delta^2), as Warp defines it (delta at v = 0).")
_("norm_pseudo_huber", "v: vec(N,F)", "F", "F delta = F(1); " + _PSEUDO,
  "F delta = F(1), adj_delta = F(0); " + _PSEUDO_ADJ, tan="F delta = F(1), tan_delta = F(0); " + _PSEUDO_TAN,
  doc="The smooth Huber norm with delta = 1.")

# ---------------------------------------------------------------------------
# Rotations: quat_to_rpy (the inverse of quat_rpy), identities, transform parts
# ---------------------------------------------------------------------------
# roll = atan2(2(wx + yz), 1 - 2(x^2 + y^2)), pitch = asin(2(wy - zx)), yaw = atan2(2(wz + xy), 1 - 2(y^2 + z^2)),
# for a unit q. The gradients of each numerator and denominator in (x, y, z, w) are spelled out.
_RPY_PARTS = ("F x = q[0], y = q[1], z = q[2], w = q[3];"
              " F rn = F(2) * (w * x + y * z), rd = F(1) - F(2) * (x * x + y * y);"
              " F s = F(2) * (w * y - z * x), yn = F(2) * (w * z + x * y), yd = F(1) - F(2) * (y * y + z * z);"
              " F sc = min_(max_(s, F(-1)), F(1));")
_RPY_GRADS = (" quat_t<F> g_rn = {{F(2) * w, F(2) * z, F(2) * y, F(2) * x}};"
              " quat_t<F> g_rd = {{F(-4) * x, F(-4) * y, F(0), F(0)}};"
              " quat_t<F> g_s = {{F(-2) * z, F(2) * w, F(-2) * x, F(2) * y}};"
              " quat_t<F> g_yn = {{F(2) * y, F(2) * x, F(2) * w, F(2) * z}};"
              " quat_t<F> g_yd = {{F(0), F(-4) * y, F(-4) * z, F(0)}};"
              " quat_t<F> d_roll = (g_rn * rd - g_rd * rn) * (F(1) / (rn * rn + rd * rd));"
              " quat_t<F> d_pitch = (s > F(-1) && s < F(1)) ? g_s * (F(1) / m::sqrt(F(1) - s * s)) : quat_t<F>{};"
              " quat_t<F> d_yaw = (g_yn * yd - g_yd * yn) * (F(1) / (yn * yn + yd * yd));")
_("quat_to_rpy", "q: quat(F)", "vec(3,F)",
  _RPY_PARTS + " return vec_t<3, F>{{m::atan2(rn, rd), m::asin(sc), m::atan2(yn, yd)}};",
  _RPY_PARTS + _RPY_GRADS + " adj_q += d_roll * adj_ret[0] + d_pitch * adj_ret[1] + d_yaw * adj_ret[2];",
  tan=_RPY_PARTS + _RPY_GRADS
  + " return vec_t<3, F>{{inner_(d_roll, tan_q), inner_(d_pitch, tan_q), inner_(d_yaw, tan_q)}};",
  doc="(roll, pitch, yaw) of a unit quaternion, the inverse of quat_rpy (pitch in [-pi/2, pi/2]).")
_("quat_identity", "", "quat(float32)", "return quat_t<float>{{0.0f, 0.0f, 0.0f, 1.0f}};", None,
  doc="The identity rotation (0, 0, 0, 1), float32 (for float64 write sk.quatd(0.0, 0.0, 0.0, 1.0)).")
_("transform_identity", "", "transform(float32)",
  "return transform_t<float>{vec_t<3, float>{}, quat_t<float>{{0.0f, 0.0f, 0.0f, 1.0f}}};", None,
  doc="The identity transform: no translation, the identity rotation (float32).")
_("transform_get_translation", "t: transform(F)", "vec(3,F)", "return t.p;", "adj_t.p += adj_ret;",
  tan="return tan_t.p;", doc="The translation t.p.")
_("transform_get_rotation", "t: transform(F)", "quat(F)", "return t.q;", "adj_t.q += adj_ret;",
  tan="return tan_t.q;", doc="The rotation t.q.")

# ---------------------------------------------------------------------------
# A scalar over a composite (Warp's s / v): component by component
# ---------------------------------------------------------------------------
_("div", "s: F, v: vec(N,F)", "vec(N,F)",
  "vec_t<N, F> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = s / v[i]; return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) { adj_s += adj_ret[i] / v[i]; adj_v[i] -= adj_ret[i] * s / (v[i] * v[i]); }",
  tan="vec_t<N, F> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = tan_s / v[i] - s * tan_v[i] / (v[i] * v[i]);"
  " return r;", doc="s / v: each component of v divides s.")
_("div", "s: F, a: mat(R,C,F)", "mat(R,C,F)",
  "mat_t<R, C, F> r; SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j)"
  " r[i][j] = s / a[i][j]; return r;",
  "SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j)"
  " { adj_s += adj_ret[i][j] / a[i][j]; adj_a[i][j] -= adj_ret[i][j] * s / (a[i][j] * a[i][j]); }",
  tan="mat_t<R, C, F> r; SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j)"
  " r[i][j] = tan_s / a[i][j] - s * tan_a[i][j] / (a[i][j] * a[i][j]); return r;",
  doc="s / a: each entry of a divides s.")
_("div", "s: F, q: quat(F)", "quat(F)",
  "quat_t<F> r; SK_UNROLL for (int i = 0; i < 4; ++i) r[i] = s / q[i]; return r;",
  "SK_UNROLL for (int i = 0; i < 4; ++i) { adj_s += adj_ret[i] / q[i]; adj_q[i] -= adj_ret[i] * s / (q[i] * q[i]); }",
  tan="quat_t<F> r; SK_UNROLL for (int i = 0; i < 4; ++i) r[i] = tan_s / q[i] - s * tan_q[i] / (q[i] * q[i]);"
  " return r;", doc="s / q: each component of q divides s (not the inverse rotation).")
_("normalize", "q: quat(F)", "quat(F)", "F l = m::sqrt(inner_(q, q)); return l > F(0) ? q * (F(1) / l) : q;",
  "F l = m::sqrt(inner_(q, q)); if (l > F(0)) { quat_t<F> n = q * (F(1) / l);"
  " adj_q += (adj_ret - n * inner_(n, adj_ret)) * (F(1) / l); } else { adj_q += adj_ret; }",
  tan="F l = m::sqrt(inner_(q, q)); if (!(l > F(0))) return tan_q; quat_t<F> n = q * (F(1) / l);"
  " return (tan_q - n * inner_(n, tan_q)) * (F(1) / l);",
  doc="q / |q| (a zero quaternion is returned as it is, as normalize does a zero vector).")
_("dot", "a: quat(F), b: quat(F)", "F", "return inner_(a, b);", "adj_a += b * adj_ret; adj_b += a * adj_ret;",
  tan="return inner_(tan_a, b) + inner_(a, tan_b);", doc="The 4-d dot product of two quaternions' components.")

# ---------------------------------------------------------------------------
# Cross products as matrices, 4x4 homogeneous transforms, a rigid body's point velocity
# ---------------------------------------------------------------------------
_("skew", "v: vec(3,F)", "mat(3,3,F)",
  "return mat_t<3, 3, F>{{{F(0), -v[2], v[1]}, {v[2], F(0), -v[0]}, {-v[1], v[0], F(0)}}};",
  "adj_v[0] += adj_ret[2][1] - adj_ret[1][2]; adj_v[1] += adj_ret[0][2] - adj_ret[2][0];"
  " adj_v[2] += adj_ret[1][0] - adj_ret[0][1];",
  tan="return mat_t<3, 3, F>{{{F(0), -tan_v[2], tan_v[1]}, {tan_v[2], F(0), -tan_v[0]}, {-tan_v[1], tan_v[0], F(0)}}};",
  doc="The matrix of v x: skew(v) * u == cross(v, u).")
_HOMOGENEOUS = ("vec_t<3, F> r; SK_UNROLL for (int i = 0; i < 3; ++i) {"
                " r[i] = W; SK_UNROLL for (int j = 0; j < 3; ++j) r[i] += m[i][j] * X[j]; } return r;")
_HOMOGENEOUS_ADJ = ("SK_UNROLL for (int i = 0; i < 3; ++i) { ADJ_W SK_UNROLL for (int j = 0; j < 3; ++j)"
                    " { adj_m[i][j] += adj_ret[i] * X[j]; adj_X[j] += m[i][j] * adj_ret[i]; } }")
_HOMOGENEOUS_TAN = ("vec_t<3, F> r; SK_UNROLL for (int i = 0; i < 3; ++i) {"
                    " r[i] = TAN_W; SK_UNROLL for (int j = 0; j < 3; ++j) r[i] += tan_m[i][j] * X[j] + m[i][j] * tan_X[j]; }"
                    " return r;")


def _homogeneous(text: str, x: str, point: bool) -> str:
    return (text.replace("adj_X", f"adj_{x}").replace("tan_X", f"tan_{x}").replace("X[", f"{x}[")
            .replace("TAN_W", "tan_m[i][3]" if point else "F(0)").replace("W;", "m[i][3];" if point else "F(0);")
            .replace("ADJ_W", "adj_m[i][3] += adj_ret[i];" if point else ""))


_("transform_point", "m: mat(4,4,F), point: vec(3,F)", "vec(3,F)", _homogeneous(_HOMOGENEOUS, "point", True),
  _homogeneous(_HOMOGENEOUS_ADJ, "point", True), tan=_homogeneous(_HOMOGENEOUS_TAN, "point", True),
  doc="The point (x, y, z, 1) times the 4x4 matrix m as a column vector, its first three components (m * p, "
      "no division by w, as Warp's).")
_("transform_vector", "m: mat(4,4,F), vec: vec(3,F)", "vec(3,F)", _homogeneous(_HOMOGENEOUS, "vec", False),
  _homogeneous(_HOMOGENEOUS_ADJ, "vec", False), tan=_homogeneous(_HOMOGENEOUS_TAN, "vec", False),
  doc="The direction (x, y, z, 0) times the 4x4 matrix m: its upper-left 3x3 block times v.")
_("velocity_at_point", "qd: vec(6,F), r: vec(3,F)", "vec(3,F)", "return cross_(top_(qd), r) + bottom_(qd);",
  "adj_qd += join_(cross_(r, adj_ret), adj_ret); adj_r += cross_(adj_ret, top_(qd));",
  tan="return cross_(top_(tan_qd), r) + cross_(top_(qd), tan_r) + bottom_(tan_qd);",
  doc="The velocity w x r + v of the point at r (from the twist's reference point) of a body moving with the "
      "spatial velocity qd = (w, v).")
