// simkit native composite types: vectors, matrices (row-major), quaternions
// (x, y, z, w) and transforms (p, q). All are plain aggregates of one scalar type
// so their memory layout equals a flat C array, which is what Python packs.
#pragma once
#include "base.h"

namespace sk {

template <int N, typename T> struct vec_t {
    T c[N];
    SK_FUNC T& operator[](int i) { return c[i]; }
    SK_FUNC const T& operator[](int i) const { return c[i]; }
};

template <int R, int C, typename T> struct mat_t {
    T c[R][C];
    SK_FUNC T* operator[](int i) { return c[i]; }
    SK_FUNC const T* operator[](int i) const { return c[i]; }
};

template <typename T> struct quat_t {
    T c[4];  // x, y, z, w
    SK_FUNC T& operator[](int i) { return c[i]; }
    SK_FUNC const T& operator[](int i) const { return c[i]; }
};

template <typename T> struct transform_t {
    vec_t<3, T> p;
    quat_t<T> q;
};

// Flat component access shared by every composite, used for construction,
// component reads/writes and their adjoints.
template <typename V> struct traits;
template <typename T> struct traits<T*>;
#define SK_SCALAR_TRAITS(T)                                                   \
    template <> struct traits<T> {                                            \
        typedef T scalar; static constexpr int size = 1;                      \
        SK_FUNC static T& at(T& v, int) { return v; }                         \
        SK_FUNC static const T& at(const T& v, int) { return v; }             \
    };
SK_SCALAR_TRAITS(float) SK_SCALAR_TRAITS(double) SK_SCALAR_TRAITS(int32_t)
SK_SCALAR_TRAITS(int64_t) SK_SCALAR_TRAITS(uint32_t) SK_SCALAR_TRAITS(bool)
SK_SCALAR_TRAITS(int8_t) SK_SCALAR_TRAITS(uint8_t) SK_SCALAR_TRAITS(int16_t) SK_SCALAR_TRAITS(uint16_t)
SK_SCALAR_TRAITS(uint64_t) SK_SCALAR_TRAITS(half) SK_SCALAR_TRAITS(bfloat16)
#undef SK_SCALAR_TRAITS
template <int N, typename T> struct traits<vec_t<N, T>> {
    typedef T scalar; static constexpr int size = N;
    SK_FUNC static T& at(vec_t<N, T>& v, int i) { return v.c[i]; }
    SK_FUNC static const T& at(const vec_t<N, T>& v, int i) { return v.c[i]; }
};
template <int R, int C, typename T> struct traits<mat_t<R, C, T>> {
    typedef T scalar; static constexpr int size = R * C;
    SK_FUNC static T& at(mat_t<R, C, T>& v, int i) { return v.c[i / C][i % C]; }
    SK_FUNC static const T& at(const mat_t<R, C, T>& v, int i) { return v.c[i / C][i % C]; }
};
template <typename T> struct traits<quat_t<T>> {
    typedef T scalar; static constexpr int size = 4;
    SK_FUNC static T& at(quat_t<T>& v, int i) { return v.c[i]; }
    SK_FUNC static const T& at(const quat_t<T>& v, int i) { return v.c[i]; }
};
template <typename T> struct traits<transform_t<T>> {
    typedef T scalar; static constexpr int size = 7;
    SK_FUNC static T& at(transform_t<T>& v, int i) { return i < 3 ? v.p.c[i] : v.q.c[i - 3]; }
    SK_FUNC static const T& at(const transform_t<T>& v, int i) { return i < 3 ? v.p.c[i] : v.q.c[i - 3]; }
};

// Component i of a vector or quaternion, i known only at run time: one select per
// component rather than an indexed load, so the composite stays in registers (indexing
// it would put it on the stack, and reading back the scalars just stored there as one
// vector stalls the CPU's store forwarding). An index out of range reads component 0 and
// writes nothing: it never reaches memory outside the composite.
template <typename V> SK_FUNC typename traits<V>::scalar component(const V& v, int i) {
    typename traits<V>::scalar r = traits<V>::at(v, 0);
    SK_UNROLL for (int k = 1; k < traits<V>::size; ++k) if (k == i) r = traits<V>::at(v, k);
    return r;
}
template <typename V, typename S> SK_FUNC void set_component(V& v, int i, S x) {
    SK_UNROLL for (int k = 0; k < traits<V>::size; ++k) if (k == i) traits<V>::at(v, k) = typename traits<V>::scalar(x);
}
template <typename V, typename S> SK_FUNC void add_component(V& v, int i, S x) {
    SK_UNROLL for (int k = 0; k < traits<V>::size; ++k) if (k == i) traits<V>::at(v, k) += typename traits<V>::scalar(x);
}

// construct<V>(a, b, ...): fill V's components in order from scalars and composites.
template <typename V> SK_FUNC void fill_(V&, int) {}
template <typename V, typename A, typename... Rest>
SK_FUNC void fill_(V& v, int k, const A& a, const Rest&... rest) {
    SK_UNROLL for (int i = 0; i < traits<A>::size; ++i)
        traits<V>::at(v, k + i) = typename traits<V>::scalar(traits<A>::at(a, i));
    fill_(v, k + traits<A>::size, rest...);
}
template <typename V, typename... A> SK_FUNC V construct(const A&... a) {
    V v = {};
    fill_(v, 0, a...);
    return v;
}
template <typename V> SK_FUNC void adj_fill_(const V&, int) {}
template <typename V, typename A, typename... Rest>
SK_FUNC void adj_fill_(const V& adj_v, int k, A& adj_a, Rest&... rest) {
    SK_UNROLL for (int i = 0; i < traits<A>::size; ++i)
        traits<A>::at(adj_a, i) += typename traits<A>::scalar(traits<V>::at(adj_v, k + i));
    adj_fill_(adj_v, k + traits<A>::size, rest...);
}
// Adjoint of construct: hands each argument the adjoints of its components.
template <typename V, typename... A> SK_FUNC void adj_construct(const V& adj_v, A&... adj_a) {
    adj_fill_(adj_v, 0, adj_a...);
}
// splat<V>(s): every component equal to s.
template <typename V, typename S> SK_FUNC V splat(S s) {
    V v;
    SK_UNROLL for (int i = 0; i < traits<V>::size; ++i) traits<V>::at(v, i) = typename traits<V>::scalar(s);
    return v;
}
template <typename V, typename S> SK_FUNC void adj_splat(S, S& adj_s, const V& adj_v) {
    SK_UNROLL for (int i = 0; i < traits<V>::size; ++i) adj_s += S(traits<V>::at(adj_v, i));
}
// Component-wise conversion between composites of the same shape and another scalar.
template <typename To, typename From> SK_FUNC To convert(const From& x) {
    To r;
    SK_UNROLL for (int i = 0; i < traits<To>::size; ++i) traits<To>::at(r, i) = typename traits<To>::scalar(traits<From>::at(x, i));
    return r;
}
template <typename To, typename From> SK_FUNC void adj_convert(const From&, From& adj_x, const To& adj_r) {
    SK_UNROLL for (int i = 0; i < traits<To>::size; ++i) traits<From>::at(adj_x, i) += typename traits<From>::scalar(traits<To>::at(adj_r, i));
}

// Element-wise arithmetic on any composite (vectors, matrices, quats) through traits.
#define SK_EW_BINARY(op)                                                                   \
    template <int N, typename T> SK_FUNC vec_t<N, T> operator op(const vec_t<N, T>& a, const vec_t<N, T>& b) { \
        vec_t<N, T> r; SK_UNROLL for (int i = 0; i < N; ++i) r.c[i] = a.c[i] op b.c[i]; return r; }                      \
    template <int R, int C, typename T> SK_FUNC mat_t<R, C, T> operator op(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { \
        mat_t<R, C, T> r; SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j) r.c[i][j] = a.c[i][j] op b.c[i][j]; return r; } \
    template <typename T> SK_FUNC quat_t<T> operator op(const quat_t<T>& a, const quat_t<T>& b) {             \
        quat_t<T> r; SK_UNROLL for (int i = 0; i < 4; ++i) r.c[i] = a.c[i] op b.c[i]; return r; }                        \
    template <typename T> SK_FUNC transform_t<T> operator op(const transform_t<T>& a, const transform_t<T>& b) { \
        transform_t<T> r; r.p = a.p op b.p; r.q = a.q op b.q; return r; }
SK_EW_BINARY(+)
SK_EW_BINARY(-)
#undef SK_EW_BINARY

template <int N, typename T> SK_FUNC vec_t<N, T>& operator+=(vec_t<N, T>& a, const vec_t<N, T>& b) { SK_UNROLL for (int i = 0; i < N; ++i) a.c[i] += b.c[i]; return a; }
template <int N, typename T> SK_FUNC vec_t<N, T>& operator-=(vec_t<N, T>& a, const vec_t<N, T>& b) { SK_UNROLL for (int i = 0; i < N; ++i) a.c[i] -= b.c[i]; return a; }
template <int R, int C, typename T> SK_FUNC mat_t<R, C, T>& operator+=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j) a.c[i][j] += b.c[i][j]; return a; }
template <int R, int C, typename T> SK_FUNC mat_t<R, C, T>& operator-=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j) a.c[i][j] -= b.c[i][j]; return a; }
template <typename T> SK_FUNC quat_t<T>& operator+=(quat_t<T>& a, const quat_t<T>& b) { SK_UNROLL for (int i = 0; i < 4; ++i) a.c[i] += b.c[i]; return a; }
template <typename T> SK_FUNC quat_t<T>& operator-=(quat_t<T>& a, const quat_t<T>& b) { SK_UNROLL for (int i = 0; i < 4; ++i) a.c[i] -= b.c[i]; return a; }
template <typename T> SK_FUNC transform_t<T>& operator+=(transform_t<T>& a, const transform_t<T>& b) { a.p += b.p; a.q += b.q; return a; }
template <typename T> SK_FUNC transform_t<T>& operator-=(transform_t<T>& a, const transform_t<T>& b) { a.p -= b.p; a.q -= b.q; return a; }

template <int N, typename T> SK_FUNC vec_t<N, T> operator-(const vec_t<N, T>& a) { vec_t<N, T> r; SK_UNROLL for (int i = 0; i < N; ++i) r.c[i] = -a.c[i]; return r; }
template <int R, int C, typename T> SK_FUNC mat_t<R, C, T> operator-(const mat_t<R, C, T>& a) { mat_t<R, C, T> r; SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j) r.c[i][j] = -a.c[i][j]; return r; }
template <typename T> SK_FUNC quat_t<T> operator-(const quat_t<T>& a) { quat_t<T> r; SK_UNROLL for (int i = 0; i < 4; ++i) r.c[i] = -a.c[i]; return r; }

// Scalar scaling of any composite.
template <int N, typename T> SK_FUNC vec_t<N, T> operator*(const vec_t<N, T>& a, T s) { vec_t<N, T> r; SK_UNROLL for (int i = 0; i < N; ++i) r.c[i] = a.c[i] * s; return r; }
template <int N, typename T> SK_FUNC vec_t<N, T> operator*(T s, const vec_t<N, T>& a) { return a * s; }
template <int R, int C, typename T> SK_FUNC mat_t<R, C, T> operator*(const mat_t<R, C, T>& a, T s) { mat_t<R, C, T> r; SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j) r.c[i][j] = a.c[i][j] * s; return r; }
template <int R, int C, typename T> SK_FUNC mat_t<R, C, T> operator*(T s, const mat_t<R, C, T>& a) { return a * s; }
template <typename T> SK_FUNC quat_t<T> operator*(const quat_t<T>& a, T s) { quat_t<T> r; SK_UNROLL for (int i = 0; i < 4; ++i) r.c[i] = a.c[i] * s; return r; }
template <typename T> SK_FUNC quat_t<T> operator*(T s, const quat_t<T>& a) { return a * s; }

// Matrix products. Sums start from their first product, not from zero: IEEE rules forbid
// the compiler to drop `0 + x` (x may be -0), so a zero start costs an add per sum.
template <int R, int C, typename T> SK_FUNC vec_t<R, T> matvec(const mat_t<R, C, T>& a, const vec_t<C, T>& v) {
    vec_t<R, T> r;
    SK_UNROLL for (int i = 0; i < R; ++i) {
        r.c[i] = a.c[i][0] * v.c[0];
        SK_UNROLL for (int j = 1; j < C; ++j) r.c[i] += a.c[i][j] * v.c[j];
    }
    return r;
}
template <int R, int K, int C, typename T> SK_FUNC mat_t<R, C, T> matmat(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
    mat_t<R, C, T> r;
    SK_UNROLL for (int i = 0; i < R; ++i) {
        SK_UNROLL for (int j = 0; j < C; ++j) r.c[i][j] = a.c[i][0] * b.c[0][j];
        SK_UNROLL for (int k = 1; k < K; ++k) SK_UNROLL for (int j = 0; j < C; ++j) r.c[i][j] += a.c[i][k] * b.c[k][j];
    }
    return r;
}
template <int R, int C, typename T> SK_FUNC mat_t<C, R, T> transpose_(const mat_t<R, C, T>& a) {
    mat_t<C, R, T> r;
    SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j) r.c[j][i] = a.c[i][j];
    return r;
}
template <int R, int C, typename T> SK_FUNC mat_t<R, C, T> outer_(const vec_t<R, T>& a, const vec_t<C, T>& b) {
    mat_t<R, C, T> r;
    SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j) r.c[i][j] = a.c[i] * b.c[j];
    return r;
}
template <int N, typename T> SK_FUNC T dot_(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    T r = a.c[0] * b.c[0];  // from the first product, as matvec
    SK_UNROLL for (int i = 1; i < N; ++i) r += a.c[i] * b.c[i];
    return r;
}
template <typename T> SK_FUNC vec_t<3, T> cross_(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return vec_t<3, T>{{a.c[1] * b.c[2] - a.c[2] * b.c[1], a.c[2] * b.c[0] - a.c[0] * b.c[2], a.c[0] * b.c[1] - a.c[1] * b.c[0]}};
}

// Quaternion helpers (x, y, z, w).
template <typename T> SK_FUNC quat_t<T> qmul(const quat_t<T>& a, const quat_t<T>& b) {
    return quat_t<T>{{a.c[3] * b.c[0] + a.c[0] * b.c[3] + a.c[1] * b.c[2] - a.c[2] * b.c[1],
                      a.c[3] * b.c[1] - a.c[0] * b.c[2] + a.c[1] * b.c[3] + a.c[2] * b.c[0],
                      a.c[3] * b.c[2] + a.c[0] * b.c[1] - a.c[1] * b.c[0] + a.c[2] * b.c[3],
                      a.c[3] * b.c[3] - a.c[0] * b.c[0] - a.c[1] * b.c[1] - a.c[2] * b.c[2]}};
}
template <typename T> SK_FUNC quat_t<T> qconj(const quat_t<T>& q) { return quat_t<T>{{-q.c[0], -q.c[1], -q.c[2], q.c[3]}}; }
template <typename T> SK_FUNC vec_t<3, T> qrotate(const quat_t<T>& q, const vec_t<3, T>& v) {
    // v' = v + 2 w (u x v) + 2 u x (u x v), u the vector part: no normalisation assumed beyond unit q.
    vec_t<3, T> u = {{q.c[0], q.c[1], q.c[2]}};
    vec_t<3, T> t = cross_(u, v) * T(2);
    return v + t * q.c[3] + cross_(u, t);
}

}  // namespace sk
