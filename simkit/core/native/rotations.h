// Rotation builtins Warp code reaches (quat_from_euler, quat_twist, quat_from_matrix, quat_slerp,
// quat_to_axis_angle, transform_decompose), the inverse error functions and the pseudo-Huber
// normalization, with their tangents. The table (core/rotation_builtins.py) calls these; each
// adjoint there is the transposed tangent, one basis direction per input component
// (adj_from_tan_), so forward and reverse mode share one derivative.
#pragma once
#include "simkit.h"
#include "linalg.h"

namespace sk {

// adj_x += J^T adj_ret, J the Jacobian of the tangent map dx -> tan(dx) (linear in dx).
template <typename X, typename R, typename Tan>
SK_FUNC void adj_from_tan_(X& adj_x, const R& adj_ret, const Tan& tan) {
    SK_UNROLL for (int i = 0; i < traits<X>::size; ++i) {
        X e = {};
        traits<X>::at(e, i) = typename traits<X>::scalar(1);
        traits<X>::at(adj_x, i) += inner_(tan(e), adj_ret);
    }
}

// The rotation by angle a about coordinate axis k (0, 1, 2), and its derivative in a times da.
template <typename F> SK_FUNC quat_t<F> axis_quat_(int k, F a) {
    quat_t<F> q = {};
    set_component(q, k, m::sin(a * F(0.5)));
    q[3] = m::cos(a * F(0.5));
    return q;
}
template <typename F> SK_FUNC quat_t<F> tan_axis_quat_(int k, F a, F da) {
    quat_t<F> q = {};
    set_component(q, k, F(0.5) * m::cos(a * F(0.5)) * da);
    q[3] = F(-0.5) * m::sin(a * F(0.5)) * da;
    return q;
}

// Warp's quat_from_euler: qk * qj * qi, qa the rotation of e[a] about axis a (extrinsic i, j, k).
template <typename F> SK_FUNC quat_t<F> quat_from_euler_(const vec_t<3, F>& e, int i, int j, int k) {
    return qmul(qmul(axis_quat_(k, component(e, k)), axis_quat_(j, component(e, j))), axis_quat_(i, component(e, i)));
}
template <typename F> SK_FUNC quat_t<F> tan_quat_from_euler_(const vec_t<3, F>& e, int i, int j, int k, const vec_t<3, F>& de) {
    F ei = component(e, i), ej = component(e, j), ek = component(e, k);
    quat_t<F> qi = axis_quat_(i, ei), qj = axis_quat_(j, ej), qk = axis_quat_(k, ek);
    return qmul(qmul(tan_axis_quat_(k, ek, component(de, k)), qj), qi) + qmul(qmul(qk, tan_axis_quat_(j, ej, component(de, j))), qi)
        + qmul(qmul(qk, qj), tan_axis_quat_(i, ei, component(de, i)));
}

// The twist of q about a unit axis: normalize((axis . q.xyz) axis, q.w), the sign of q.w kept.
template <typename F> SK_FUNC quat_t<F> quat_twist_(const vec_t<3, F>& a, const quat_t<F>& q) {
    F d = a[0] * q[0] + a[1] * q[1] + a[2] * q[2];
    quat_t<F> r = {{d * a[0], d * a[1], d * a[2], q[3]}};
    F l = m::sqrt(inner_(r, r));
    return l > F(0) ? r * (F(1) / l) : quat_t<F>{{F(0), F(0), F(0), F(1)}};
}
template <typename F>
SK_FUNC quat_t<F> tan_quat_twist_(const vec_t<3, F>& a, const quat_t<F>& q, const vec_t<3, F>& da, const quat_t<F>& dq) {
    F d = a[0] * q[0] + a[1] * q[1] + a[2] * q[2];
    F dd = da[0] * q[0] + da[1] * q[1] + da[2] * q[2] + a[0] * dq[0] + a[1] * dq[1] + a[2] * dq[2];
    quat_t<F> r = {{d * a[0], d * a[1], d * a[2], q[3]}};
    quat_t<F> dr = {{dd * a[0] + d * da[0], dd * a[1] + d * da[1], dd * a[2] + d * da[2], dq[3]}};
    F l = m::sqrt(inner_(r, r));
    if (!(l > F(0))) return quat_t<F>{};
    quat_t<F> n = r * (F(1) / l);
    return (dr - n * inner_(n, dr)) * (F(1) / l);
}

// Twist angles: 2 atan2(axis . q.xyz, q.w) (signed) and 2 atan2(|axis . q.xyz|, q.w) (unsigned).
template <typename F> SK_FUNC F quat_twist_angle_(const vec_t<3, F>& a, const quat_t<F>& q, bool is_signed) {
    F d = a[0] * q[0] + a[1] * q[1] + a[2] * q[2];
    return F(2) * m::atan2(is_signed ? d : abs_(d), q[3]);
}
template <typename F>
SK_FUNC F tan_quat_twist_angle_(const vec_t<3, F>& a, const quat_t<F>& q, const vec_t<3, F>& da, const quat_t<F>& dq, bool is_signed) {
    F d = a[0] * q[0] + a[1] * q[1] + a[2] * q[2];
    F dd = da[0] * q[0] + da[1] * q[1] + da[2] * q[2] + a[0] * dq[0] + a[1] * dq[1] + a[2] * dq[2];
    if (!is_signed && d < F(0)) { d = -d; dd = -dd; }
    F n = d * d + q[3] * q[3];
    return n > F(0) ? F(2) * (q[3] * dd - d * dq[3]) / n : F(0);
}

// quat_from_matrix (Shepperd): of the trace and the diagonal, the largest picks which component
// comes from a square root; all four are numer / (2 sqrt(numer[b])), numer affine in the matrix
// (numer[b] = 1 +- the diagonal terms, the others sums and differences of off-diagonal pairs).
template <typename F> SK_FUNC int qfm_branch_(const mat_t<3, 3, F>& m) {
    F t = m[0][0] + m[1][1] + m[2][2];
    int b = 3;
    F best = t;
    SK_UNROLL for (int i = 0; i < 3; ++i) if (m[i][i] > best) { best = m[i][i]; b = i; }
    return b;
}
template <typename F> SK_FUNC quat_t<F> qfm_numer_(const mat_t<3, 3, F>& m, int b, F one) {
    F w = m[2][1] - m[1][2], x = m[0][2] - m[2][0], y = m[1][0] - m[0][1];  // the antisymmetric pairs
    F xy = m[0][1] + m[1][0], xz = m[0][2] + m[2][0], yz = m[1][2] + m[2][1];  // the symmetric ones
    if (b == 3) return quat_t<F>{{w, x, y, one + m[0][0] + m[1][1] + m[2][2]}};
    if (b == 0) return quat_t<F>{{one + m[0][0] - m[1][1] - m[2][2], xy, xz, w}};
    if (b == 1) return quat_t<F>{{xy, one - m[0][0] + m[1][1] - m[2][2], yz, x}};
    return quat_t<F>{{xz, yz, one - m[0][0] - m[1][1] + m[2][2], y}};
}
// For a rotation |numer| = 2 sqrt(numer[b]), so numer / |numer| is Shepperd's quaternion; for a
// matrix that is not quite one (rounded entries, a scale left in) it is still a unit quaternion,
// as Warp's is.
template <typename F> SK_FUNC quat_t<F> quat_from_matrix_(const mat_t<3, 3, F>& m) {
    quat_t<F> n = qfm_numer_(m, qfm_branch_(m), F(1));
    return n * (F(1) / m::sqrt(inner_(n, n)));
}
template <typename F> SK_FUNC quat_t<F> tan_quat_from_matrix_(const mat_t<3, 3, F>& m, const mat_t<3, 3, F>& dm) {
    int b = qfm_branch_(m);
    quat_t<F> n = qfm_numer_(m, b, F(1)), dn = qfm_numer_(dm, b, F(0));
    F r = m::sqrt(inner_(n, n));
    quat_t<F> q = n * (F(1) / r);
    return (dn - q * inner_(q, dn)) * (F(1) / r);
}
template <typename F> SK_FUNC mat_t<3, 3, F> upper3_(const mat_t<4, 4, F>& m) {
    mat_t<3, 3, F> r;
    SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < 3; ++j) r[i][j] = m[i][j];
    return r;
}

// Slerp along the shorter arc from a (unit) to b / |b|; normalized lerp where the arc is tiny.
template <typename F> SK_FUNC F slerp_small_() { return F(1e-3); }
template <typename F>
SK_FUNC quat_t<F> tan_quat_slerp_(const quat_t<F>& a, const quat_t<F>& b, F t, const quat_t<F>& da, const quat_t<F>& db, F dt) {
    F lb = m::sqrt(inner_(b, b));
    quat_t<F> bn = b * (F(1) / lb), dbn = (db - bn * inner_(bn, db)) * (F(1) / lb);
    F c = inner_(a, bn);
    if (c < F(0)) { bn = -bn; dbn = -dbn; c = -c; }
    F dc = inner_(da, bn) + inner_(a, dbn);
    F th = m::acos(min_(c, F(1))), s = m::sin(th);
    if (s < slerp_small_<F>()) {
        quat_t<F> r = a * (F(1) - t) + bn * t, dr = da * (F(1) - t) + dbn * t + (bn - a) * dt;
        F l = m::sqrt(inner_(r, r));
        quat_t<F> n = r * (F(1) / l);
        return (dr - n * inner_(n, dr)) * (F(1) / l);
    }
    F dth = -dc / s;
    F A = m::sin((F(1) - t) * th), B = m::sin(t * th);
    F dA = m::cos((F(1) - t) * th) * ((F(1) - t) * dth - th * dt), dB = m::cos(t * th) * (t * dth + th * dt);
    F ds = m::cos(th) * dth;
    quat_t<F> f = (a * A + bn * B) * (F(1) / s);
    return (da * A + a * dA + dbn * B + bn * dB) * (F(1) / s) - f * (ds / s);
}
template <typename F> SK_FUNC quat_t<F> quat_slerp_(const quat_t<F>& a, const quat_t<F>& b, F t) {
    quat_t<F> bn = b * (F(1) / m::sqrt(inner_(b, b)));
    F c = inner_(a, bn);
    if (c < F(0)) { bn = -bn; c = -c; }
    F th = m::acos(min_(c, F(1))), s = m::sin(th);
    if (s < slerp_small_<F>()) {
        quat_t<F> r = a * (F(1) - t) + bn * t;
        return r * (F(1) / m::sqrt(inner_(r, r)));
    }
    return (a * m::sin((F(1) - t) * th) + bn * m::sin(t * th)) * (F(1) / s);
}

// Axis and angle of q (any length): angle 2 atan2(|q.xyz|, |q.w|) in [0, pi], axis sign(w) q.xyz / |q.xyz|
// (the x axis for the identity, where Warp leaves it unspecified).
template <typename F> SK_FUNC vec_t<3, F> quat_axis_(const quat_t<F>& q) {
    vec_t<3, F> v = {{q[0], q[1], q[2]}};
    F s = m::sqrt(dot_(v, v));
    if (!(s > F(0))) return vec_t<3, F>{{F(1), F(0), F(0)}};
    return v * ((q[3] < F(0) ? F(-1) : F(1)) / s);
}
template <typename F> SK_FUNC vec_t<3, F> tan_quat_axis_(const quat_t<F>& q, const quat_t<F>& dq) {
    vec_t<3, F> v = {{q[0], q[1], q[2]}}, dv = {{dq[0], dq[1], dq[2]}};
    F s = m::sqrt(dot_(v, v));
    if (!(s > F(0))) return vec_t<3, F>{};
    vec_t<3, F> n = v * (F(1) / s);
    return (dv - n * dot_(n, dv)) * ((q[3] < F(0) ? F(-1) : F(1)) / s);
}
template <typename F> SK_FUNC F quat_angle_(const quat_t<F>& q) {
    return F(2) * m::atan2(m::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]), abs_(q[3]));
}
template <typename F> SK_FUNC F tan_quat_angle_(const quat_t<F>& q, const quat_t<F>& dq) {
    F s = m::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]), w = abs_(q[3]);
    if (!(s > F(0))) return F(0);
    F ds = (q[0] * dq[0] + q[1] * dq[1] + q[2] * dq[2]) / s, dw = q[3] < F(0) ? -dq[3] : dq[3];
    return F(2) * (w * ds - s * dw) / (s * s + w * w);
}

// transform_decompose: position the last column, scale the lengths of the first three columns,
// rotation the quaternion of those columns divided by their lengths.
template <typename F> SK_FUNC vec_t<3, F> decompose_scale_(const mat_t<4, 4, F>& m) {
    vec_t<3, F> s;
    SK_UNROLL for (int j = 0; j < 3; ++j) s[j] = m::sqrt(m[0][j] * m[0][j] + m[1][j] * m[1][j] + m[2][j] * m[2][j]);
    return s;
}
template <typename F> SK_FUNC vec_t<3, F> tan_decompose_scale_(const mat_t<4, 4, F>& m, const mat_t<4, 4, F>& dm) {
    vec_t<3, F> s = decompose_scale_(m), r;
    SK_UNROLL for (int j = 0; j < 3; ++j) r[j] = (m[0][j] * dm[0][j] + m[1][j] * dm[1][j] + m[2][j] * dm[2][j]) / s[j];
    return r;
}
template <typename F> SK_FUNC mat_t<3, 3, F> decompose_rotation_matrix_(const mat_t<4, 4, F>& m) {
    vec_t<3, F> s = decompose_scale_(m);
    mat_t<3, 3, F> r;
    SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < 3; ++j) r[i][j] = m[i][j] / s[j];
    return r;
}
template <typename F> SK_FUNC quat_t<F> tan_decompose_rotation_(const mat_t<4, 4, F>& m, const mat_t<4, 4, F>& dm) {
    vec_t<3, F> s = decompose_scale_(m), ds = tan_decompose_scale_(m, dm);
    mat_t<3, 3, F> r = decompose_rotation_matrix_(m), dr;
    SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < 3; ++j) dr[i][j] = (dm[i][j] - r[i][j] * ds[j]) / s[j];
    return tan_quat_from_matrix_(r, dr);
}

// v / (delta sqrt(1 + |v|^2 / delta^2)) = v / sqrt(delta^2 + |v|^2): Warp's smooth_normalize.
template <int N, typename F> SK_FUNC vec_t<N, F> smooth_normalize_(const vec_t<N, F>& v, F delta) {
    return v * (F(1) / m::sqrt(delta * delta + dot_(v, v)));
}
template <int N, typename F>
SK_FUNC vec_t<N, F> tan_smooth_normalize_(const vec_t<N, F>& v, F delta, const vec_t<N, F>& dv, F ddelta) {
    F h = m::sqrt(delta * delta + dot_(v, v)), dh = (delta * ddelta + dot_(v, dv)) / h;
    return dv * (F(1) / h) - v * (dh / (h * h));
}

// The inverse error functions, computed in double whatever F is: Giles' single-precision
// polynomial (in w = -log((1 - x)(1 + x)), "Approximating the erfinv function", GPU Computing Gems)
// as the first guess, then Newton steps on erf near 0 and on log(erfc) in the tails, where erf
// has no digits left; for |x| >= 0.5, 1 - |x| is exact, so the tail keeps full relative accuracy.
SK_FUNC double erfinv_guess_(double w, double x) {
    double p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    } else {
        w = m::sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    }
    return p * x;
}
// +inf and NaN without <cmath> (NVRTC has none): an overflowing product and its difference.
SK_FUNC double inf_d_() { double h = 1e300; return h * h; }
SK_FUNC double nan_d_() { return inf_d_() - inf_d_(); }
// erfcinv(z) for 0 < z <= 1 (a result >= 0): the log-erfc Newton iteration.
SK_FUNC double erfcinv_upper_(double z) {
    if (z <= 0.0) return z == 0.0 ? inf_d_() : nan_d_();
    double lz = m::log(z), w = -m::log(z * (2.0 - z));
    // Giles' polynomial covers 1 - z down to float32's last step below 1; deeper in the tail,
    // erfc(y) ~ exp(-y^2) / (y sqrt(pi)) solved once for y is the start.
    double y = w < 16.0 ? erfinv_guess_(w, 1.0 - z) : m::sqrt(-lz - m::log(m::sqrt(-3.141592653589793 * lz)));
    SK_UNROLL for (int it = 0; it < 6; ++it) {
        double c = m::erfc(y);
        if (!(c > 0.0)) break;
        y += (m::log(c) - lz) * c / (1.1283791670955126 * m::exp(-y * y));
    }
    return y;
}
SK_FUNC double erfinv_d_(double x) {
    if (!(x > -1.0 && x < 1.0)) return x == 1.0 ? inf_d_() : (x == -1.0 ? -inf_d_() : nan_d_());
    double ax = x < 0.0 ? -x : x;
    if (ax >= 0.5) return x < 0.0 ? -erfcinv_upper_(1.0 - ax) : erfcinv_upper_(1.0 - ax);
    double y = erfinv_guess_(-m::log((1.0 - x) * (1.0 + x)), x);
    SK_UNROLL for (int it = 0; it < 3; ++it) y -= (m::erf(y) - x) / (1.1283791670955126 * m::exp(-y * y));
    return y;
}
SK_FUNC double erfcinv_d_(double z) {
    if (z > 1.0) return z >= 2.0 ? (z == 2.0 ? -inf_d_() : nan_d_()) : -erfcinv_upper_(2.0 - z);
    if (z > 0.5) return erfinv_d_(1.0 - z);
    return erfcinv_upper_(z);
}
SK_FUNC double as_double_(double x) { return x; }
SK_FUNC double as_double_(float x) { return x; }
template <typename H> SK_FUNC double as_double_(const H& x) { return double(float(x)); }  // half, bfloat16
template <typename F> SK_FUNC F erfinv_(F x) { return F(erfinv_d_(as_double_(x))); }
template <typename F> SK_FUNC F erfcinv_(F x) { return F(erfcinv_d_(as_double_(x))); }
// d erfinv(x) / dx = sqrt(pi) / 2 exp(erfinv(x)^2); erfcinv's is its negative.
template <typename F> SK_FUNC F erfinv_slope_(F y) { return F(0.88622692545275801) * m::exp(y * y); }

}  // namespace sk
