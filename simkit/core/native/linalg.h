// Small dense linear algebra used by the determinant / inverse builtins and their
// adjoints: cofactor expansion, fine for the 2x2..4x4 matrices kernels use.
#pragma once
#include "vec.h"

namespace sk {

template <int N, typename T> SK_FUNC mat_t<N - 1, N - 1, T> minor_(const mat_t<N, N, T>& a, int row, int col) {
    mat_t<N - 1, N - 1, T> r;
    SK_UNROLL for (int i = 0, ri = 0; i < N; ++i) {
        if (i == row) continue;
        SK_UNROLL for (int j = 0, rj = 0; j < N; ++j) {
            if (j == col) continue;
            r.c[ri][rj++] = a.c[i][j];
        }
        ++ri;
    }
    return r;
}

template <typename T> SK_FUNC T det_(const mat_t<1, 1, T>& a) { return a.c[0][0]; }
template <typename T> SK_FUNC T det_(const mat_t<2, 2, T>& a) { return a.c[0][0] * a.c[1][1] - a.c[0][1] * a.c[1][0]; }
template <int N, typename T> SK_FUNC T det_(const mat_t<N, N, T>& a) {
    T r = T(0);
    SK_UNROLL for (int j = 0; j < N; ++j) r += ((j & 1) ? -a.c[0][j] : a.c[0][j]) * det_(minor_(a, 0, j));
    return r;
}

// Cofactor matrix C with C[i][j] = (-1)^(i+j) det(minor(i, j)); d det(A)/dA = C.
template <typename T> SK_FUNC mat_t<1, 1, T> cofactor_(const mat_t<1, 1, T>&) { return mat_t<1, 1, T>{{{T(1)}}}; }
template <int N, typename T> SK_FUNC mat_t<N, N, T> cofactor_(const mat_t<N, N, T>& a) {
    mat_t<N, N, T> r;
    SK_UNROLL for (int i = 0; i < N; ++i)
        SK_UNROLL for (int j = 0; j < N; ++j) {
            T d = det_(minor_(a, i, j));
            r.c[i][j] = ((i + j) & 1) ? -d : d;
        }
    return r;
}

template <int N, typename T> SK_FUNC mat_t<N, N, T> inverse_(const mat_t<N, N, T>& a) {
    T d = det_(a);
    return transpose_(cofactor_(a)) * (T(1) / d);
}

// Unary minus of a transform (vec.h negates vectors, matrices and quaternions): the
// `neg` builtin takes any numeric value, transforms included.
template <typename T> SK_FUNC transform_t<T> operator-(const transform_t<T>& a) { return transform_t<T>{-a.p, -a.q}; }

// Sum of component-wise products of two equally shaped values (Frobenius inner product).
template <typename V> SK_FUNC typename traits<V>::scalar inner_(const V& a, const V& b) {
    typename traits<V>::scalar r = 0;
    SK_UNROLL for (int i = 0; i < traits<V>::size; ++i) r += traits<V>::at(a, i) * traits<V>::at(b, i);
    return r;
}

}  // namespace sk
