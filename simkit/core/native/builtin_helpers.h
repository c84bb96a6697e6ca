// Helpers the builtin table's C++ bodies use (simkit/core/builtins.py and its table files):
// value comparison and printing for the expect_* checks, the halves of spatial vectors, the
// adjoint of a quaternion rotation, lerp and its derivatives. The generated builtins header
// includes this file ahead of the table's functions.
#pragma once
#include "simkit.h"
#include "linalg.h"

namespace sk {

template <typename V> SK_FUNC bool inner_eq_(const V& a, const V& b) {
    SK_UNROLL for (int i = 0; i < traits<V>::size; ++i) if (!(traits<V>::at(a, i) == traits<V>::at(b, i))) return false;
    return true;
}
// Printing for expect_*: a scalar as printf would, a vector, quat or transform as [x, y, z],
// a matrix as its rows [[a, b], [c, d]] (simkit's str() of the same value).
SK_FUNC void print_scalar_(float x) { printf("%g", double(x)); }
SK_FUNC void print_scalar_(double x) { printf("%g", x); }
SK_FUNC void print_scalar_(half x) { printf("%g", double(float(x))); }
SK_FUNC void print_scalar_(bfloat16 x) { printf("%g", double(float(x))); }
SK_FUNC void print_scalar_(int32_t x) { printf("%d", int(x)); }
SK_FUNC void print_scalar_(int64_t x) { printf("%lld", (long long)x); }
SK_FUNC void print_scalar_(uint32_t x) { printf("%u", (unsigned)x); }
SK_FUNC void print_scalar_(uint64_t x) { printf("%llu", (unsigned long long)x); }
SK_FUNC void print_scalar_(int8_t x) { printf("%d", int(x)); }
SK_FUNC void print_scalar_(uint8_t x) { printf("%u", unsigned(x)); }
SK_FUNC void print_scalar_(int16_t x) { printf("%d", int(x)); }
SK_FUNC void print_scalar_(uint16_t x) { printf("%u", unsigned(x)); }
SK_FUNC void print_scalar_(bool x) { printf("%s", x ? "True" : "False"); }
template <typename V> SK_FUNC void print_value_(const V& v) {
    if constexpr (traits<V>::size == 1) {
        print_scalar_(traits<V>::at(v, 0));
    } else {
        printf("[");
        for (int i = 0; i < traits<V>::size; ++i) { if (i) printf(", "); print_scalar_(traits<V>::at(v, i)); }
        printf("]");
    }
}
template <int R, int C, typename T> SK_FUNC void print_value_(const mat_t<R, C, T>& m) {
    printf("[");
    for (int i = 0; i < R; ++i) {
        printf(i ? ", [" : "[");
        for (int j = 0; j < C; ++j) { if (j) printf(", "); print_scalar_(m.c[i][j]); }
        printf("]");
    }
    printf("]");
}
template <typename V> SK_FUNC void expect_failed_(const char* what, const V& actual, const V& expected) {
    printf("Error, %s() failed:\n\t Expected: ", what); print_value_(expected);
    printf("\n\t Actual: "); print_value_(actual); printf("\n");
}
template <typename V> SK_FUNC typename traits<V>::scalar max_abs_diff_(const V& a, const V& b) {
    typedef typename traits<V>::scalar F;
    F d = F(0);
    for (int i = 0; i < traits<V>::size; ++i) {
        F e = traits<V>::at(a, i) - traits<V>::at(b, i);
        e = e < F(0) ? -e : e;
        d = (e > d || e != e) ? e : d;  // a NaN difference sticks
    }
    return d;
}
template <typename V, typename F> SK_FUNC void expect_near_failed_(const V& actual, const V& expected, F tolerance, F d) {
    printf("Error, expect_near() failed with tolerance "); print_scalar_(tolerance);
    printf("\n    Expected: "); print_value_(expected); printf("\n    Actual: "); print_value_(actual);
    printf("\n    Max absolute difference: "); print_scalar_(d); printf("\n");
}
// The halves of a spatial vector and the spatial vector of two halves.
template <typename F> SK_FUNC vec_t<3, F> top_(const vec_t<6, F>& a) { return vec_t<3, F>{{a[0], a[1], a[2]}}; }
template <typename F> SK_FUNC vec_t<3, F> bottom_(const vec_t<6, F>& a) { return vec_t<3, F>{{a[3], a[4], a[5]}}; }
template <typename F> SK_FUNC vec_t<6, F> join_(const vec_t<3, F>& w, const vec_t<3, F>& v) {
    return vec_t<6, F>{{w[0], w[1], w[2], v[0], v[1], v[2]}};
}
// Adjoint of qrotate(q, v) = v + 2 w (u x v) + 2 u x (u x v), u = q.xyz.
template <typename F> SK_FUNC void adj_qrotate_(const quat_t<F>& q, const vec_t<3, F>& v, quat_t<F>& adj_q, vec_t<3, F>& adj_v, const vec_t<3, F>& a) {
    vec_t<3, F> u = {{q[0], q[1], q[2]}};
    vec_t<3, F> t0 = cross_(u, v);
    adj_v += qrotate(qconj(q), a);
    adj_q[3] += F(2) * dot_(t0, a);
    vec_t<3, F> au = cross_(v, a) * (F(2) * q[3]) + cross_(t0, a) * F(2) + cross_(v, cross_(a, u)) * F(2);
    SK_UNROLL for (int i = 0; i < 3; ++i) adj_q[i] += au[i];
}
// lerp a * (1 - t) + b * t component by component, its adjoint and its tangent.
template <typename V, typename F> SK_FUNC V lerp_(const V& a, const V& b, const F& t) {
    V r = a;
    SK_UNROLL for (int i = 0; i < traits<V>::size; ++i) traits<V>::at(r, i) = traits<V>::at(a, i) * (F(1) - t) + traits<V>::at(b, i) * t;
    return r;
}
template <typename V, typename F> SK_FUNC void adj_lerp_(const V& a, const V& b, const F& t, V& adj_a, V& adj_b, F& adj_t, const V& adj_ret) {
    SK_UNROLL for (int i = 0; i < traits<V>::size; ++i) {
        F g = traits<V>::at(adj_ret, i);
        traits<V>::at(adj_a, i) += g * (F(1) - t);
        traits<V>::at(adj_b, i) += g * t;
        adj_t += g * (traits<V>::at(b, i) - traits<V>::at(a, i));
    }
}
template <typename V, typename F> SK_FUNC V tan_lerp_(const V& a, const V& b, const F& t, const V& ta, const V& tb, const F& tt) {
    V r = a;
    SK_UNROLL for (int i = 0; i < traits<V>::size; ++i)
        traits<V>::at(r, i) = traits<V>::at(ta, i) * (F(1) - t) + traits<V>::at(tb, i) * t + (traits<V>::at(b, i) - traits<V>::at(a, i)) * tt;
    return r;
}
// The matrix type of M's shape transposed (matrix_from_cols builds its transpose from rows).
template <typename M> struct transposed_;
template <int R, int C, typename T> struct transposed_<mat_t<R, C, T>> { typedef mat_t<C, R, T> type; };

}  // namespace sk
