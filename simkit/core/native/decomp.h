// Decompositions of small matrices for the builtins svd3, svd2, qr3 and eig3
// (simkit/core/linalg_builtins.py), with their adjoints and tangents.
//
// Each builtin returns its factors packed side by side in one matrix, which the frontend
// splits into Warp's results (simkit/core/packed_results.py):
//   svd3: [U | sigma | V] 3x7   svd2: [U | sigma | V] 2x5   qr3: [Q | R] 3x6   eig3: [Q | d] 3x4
//
// float16 and bfloat16 matrices are decomposed in float32 (a Jacobi sweep in half precision
// would not converge to anything useful), float32 in float32, float64 in float64.
//
// Conventions (Warp's, see docs/porting-from-warp.md):
//   svd3: A = U diag(sigma) V^T, det U = det V = +1, |sigma| decreasing, sigma[0], sigma[1] >= 0,
//         sigma[2] carrying the sign of det A.
//   svd2: A = U diag(sigma) V^T, sigma >= 0 decreasing, det V = +1 (U takes det A's sign).
//   qr3:  A = Q R, det Q = +1, R upper triangular with R[0][0], R[1][1] >= 0 (R[2][2] signed).
//   eig3: sym(A) = Q diag(d) Q^T for sym(A) = (A + A^T) / 2, d increasing, det Q = +1.
//
// Derivatives (docs/porting-from-warp.md, "Decompositions", says what they promise): with
// dP = U^T dA V, dsigma = diag(dP), U^T dU = Omega_U, V^T dV = Omega_V (antisymmetric),
//   Omega_U[i][j] = (s_j dP_ij + s_i dP_ji) / (s_j^2 - s_i^2),
//   Omega_V[i][j] = (s_i dP_ij + s_j dP_ji) / (s_j^2 - s_i^2);
// eig: dP = Q^T dA Q, dd = diag(dP), Omega[i][j] = dP_ij / (d_j - d_i);
// qr: C = Q^T dA R^-1, Omega = L - L^T (L the strict lower part of C), dQ = Q Omega, dR = (C - Omega) R.
// A pair of (squared) singular values or eigenvalues that agree to within the working type's
// epsilon (relative to the largest) is treated as repeated: its 1 / (difference) term is
// dropped, so the gradient of a loss of sigma (or d) alone stays exact and finite there, and
// the singular vectors' part for that pair is zero (their derivative does not exist).
#pragma once
#include "linalg.h"

namespace sk {

template <typename T> struct decomp_work_ { typedef T type; };
template <> struct decomp_work_<half> { typedef float type; };
template <> struct decomp_work_<bfloat16> { typedef float type; };

template <typename T> SK_FUNC T decomp_eps_();
template <> SK_FUNC float decomp_eps_<float>() { return 1.1920929e-07f; }
template <> SK_FUNC double decomp_eps_<double>() { return 2.220446049250313e-16; }

template <typename To, int R, int C, typename From> SK_FUNC mat_t<R, C, To> mat_as_(const mat_t<R, C, From>& a) {
    mat_t<R, C, To> r;
    SK_UNROLL for (int i = 0; i < R; ++i) SK_UNROLL for (int j = 0; j < C; ++j) r.c[i][j] = To(a.c[i][j]);
    return r;
}
template <int N, typename T> SK_FUNC mat_t<N, N, T> eye_() {
    mat_t<N, N, T> r = {};
    SK_UNROLL for (int i = 0; i < N; ++i) r.c[i][i] = T(1);
    return r;
}
template <int R, int C, typename T> SK_FUNC vec_t<R, T> column_(const mat_t<R, C, T>& a, int j) {
    vec_t<R, T> v;
    SK_UNROLL for (int i = 0; i < R; ++i) v.c[i] = a.c[i][j];
    return v;
}
template <int R, int C, typename T> SK_FUNC void set_column_(mat_t<R, C, T>& a, int j, const vec_t<R, T>& v) {
    SK_UNROLL for (int i = 0; i < R; ++i) a.c[i][j] = v.c[i];
}
template <int R, int C, typename T> SK_FUNC void swap_columns_(mat_t<R, C, T>& a, int p, int q) {
    SK_UNROLL for (int i = 0; i < R; ++i) { T t = a.c[i][p]; a.c[i][p] = a.c[i][q]; a.c[i][q] = t; }
}
template <int R, int C, typename T> SK_FUNC void negate_column_(mat_t<R, C, T>& a, int j) {
    SK_UNROLL for (int i = 0; i < R; ++i) a.c[i][j] = -a.c[i][j];
}
// The rotation (c, s) of Golub and Van Loan's symmetric Schur step: it zeroes the off-diagonal
// entry `off` of the 2x2 symmetric matrix [[app, off], [off, aqq]] as J^T [..] J, J = [[c, s], [-s, c]].
template <typename T> SK_FUNC void jacobi_rotation_(T app, T aqq, T off, T& c, T& s) {
    T tau = (aqq - app) / (T(2) * off);
    // t = tan(theta), the smaller root of t^2 + 2 tau t - 1 = 0; a huge tau gives t = 0 (off is negligible)
    T t = (tau >= T(0) ? T(1) : T(-1)) / (abs_(tau) + m::sqrt(T(1) + tau * tau));
    c = T(1) / m::sqrt(T(1) + t * t);
    s = t * c;
}
// Right-multiply columns p and q of a by the rotation J of jacobi_rotation_.
template <int R, int C, typename T> SK_FUNC void rotate_columns_(mat_t<R, C, T>& a, int p, int q, T c, T s) {
    SK_UNROLL for (int k = 0; k < R; ++k) {
        T ap = a.c[k][p], aq = a.c[k][q];
        a.c[k][p] = c * ap - s * aq;
        a.c[k][q] = s * ap + c * aq;
    }
}

// ---------------------------------------------------------------------------
// Symmetric eigendecomposition: cyclic Jacobi, d increasing, det Q = +1
// ---------------------------------------------------------------------------
template <int N, typename T> SK_FUNC void sym_eig_(mat_t<N, N, T> a, mat_t<N, N, T>& q, vec_t<N, T>& d) {
    q = eye_<N, T>();
    const T eps = decomp_eps_<T>();
    for (int sweep = 0; sweep < 32; ++sweep) {  // converges quadratically: 3x3 takes 4 to 6 sweeps
        T off = T(0), all = T(0);
        SK_UNROLL for (int i = 0; i < N; ++i) SK_UNROLL for (int j = 0; j < N; ++j) {
            all += a.c[i][j] * a.c[i][j];
            if (i != j) off += a.c[i][j] * a.c[i][j];
        }
        if (off <= T(16) * eps * eps * all) break;  // rounding leaves off-diagonals of some eps |A|; a zero matrix stops too
        SK_UNROLL for (int p = 0; p < N - 1; ++p) SK_UNROLL for (int r = p + 1; r < N; ++r) {
            if (a.c[p][r] == T(0)) continue;
            T c, s;
            jacobi_rotation_(a.c[p][p], a.c[r][r], a.c[p][r], c, s);
            mat_t<N, N, T> at = transpose_(a);
            rotate_columns_(at, p, r, c, s);  // rows of a: J^T a
            a = transpose_(at);
            rotate_columns_(a, p, r, c, s);   // then a J
            a.c[p][r] = a.c[r][p] = T(0);
            rotate_columns_(q, p, r, c, s);
        }
    }
    SK_UNROLL for (int i = 0; i < N; ++i) d.c[i] = a.c[i][i];
    SK_UNROLL for (int i = 0; i < N - 1; ++i) SK_UNROLL for (int j = 0; j < N - 1 - i; ++j) {
        if (d.c[j + 1] < d.c[j]) {
            T t = d.c[j]; d.c[j] = d.c[j + 1]; d.c[j + 1] = t;
            swap_columns_(q, j, j + 1);
        }
    }
    if (det_(q) < T(0)) negate_column_(q, N - 1);
}

// ---------------------------------------------------------------------------
// SVD: one-sided (Hestenes) Jacobi on the columns of A, then Warp's signs
// ---------------------------------------------------------------------------
// On return b = A v has mutually orthogonal columns, sorted by decreasing length; v is orthogonal.
template <int N, typename T> SK_FUNC void orthogonalize_columns_(mat_t<N, N, T>& b, mat_t<N, N, T>& v) {
    v = eye_<N, T>();
    const T eps = decomp_eps_<T>();
    for (int sweep = 0; sweep < 32; ++sweep) {
        bool rotated = false;
        SK_UNROLL for (int p = 0; p < N - 1; ++p) SK_UNROLL for (int r = p + 1; r < N; ++r) {
            vec_t<N, T> bp = column_(b, p), br = column_(b, r);
            T alpha = dot_(bp, bp), beta = dot_(br, br), gamma = dot_(bp, br);
            if (!(abs_(gamma) > eps * m::sqrt(alpha) * m::sqrt(beta))) continue;  // orthogonal to working precision
            rotated = true;
            T c, s;
            jacobi_rotation_(alpha, beta, gamma, c, s);
            rotate_columns_(b, p, r, c, s);
            rotate_columns_(v, p, r, c, s);
        }
        if (!rotated) break;
    }
    vec_t<N, T> len;
    SK_UNROLL for (int j = 0; j < N; ++j) { vec_t<N, T> bj = column_(b, j); len.c[j] = dot_(bj, bj); }
    SK_UNROLL for (int i = 0; i < N - 1; ++i) SK_UNROLL for (int j = 0; j < N - 1 - i; ++j) {
        if (len.c[j + 1] > len.c[j]) {
            T t = len.c[j]; len.c[j] = len.c[j + 1]; len.c[j + 1] = t;
            swap_columns_(b, j, j + 1);
            swap_columns_(v, j, j + 1);
        }
    }
}
// A unit vector orthogonal to the unit vector u (the axis u is least aligned with, crossed with u).
template <typename T> SK_FUNC vec_t<3, T> any_orthogonal_(const vec_t<3, T>& u) {
    vec_t<3, T> e = {};
    int k = abs_(u.c[0]) <= abs_(u.c[1]) ? (abs_(u.c[0]) <= abs_(u.c[2]) ? 0 : 2) : (abs_(u.c[1]) <= abs_(u.c[2]) ? 1 : 2);
    e.c[k] = T(1);
    vec_t<3, T> w = cross_(u, e);
    return w * (T(1) / m::sqrt(dot_(w, w)));
}
template <int N, typename T> SK_FUNC vec_t<N, T> unit_or_zero_(const vec_t<N, T>& b, T& len) {
    len = m::sqrt(dot_(b, b));
    return len > T(0) ? b * (T(1) / len) : vec_t<N, T>{};
}

template <typename T> SK_FUNC void svd3_work_(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& u, vec_t<3, T>& sigma, mat_t<3, 3, T>& v) {
    mat_t<3, 3, T> b = a;
    orthogonalize_columns_(b, v);
    if (det_(v) < T(0)) negate_column_(v, 2), negate_column_(b, 2);  // det V = +1; the sign moves to sigma[2]
    T s0, s1;
    vec_t<3, T> u0 = unit_or_zero_(column_(b, 0), s0);
    if (!(s0 > T(0))) u0 = vec_t<3, T>{{T(1), T(0), T(0)}};  // A = 0
    vec_t<3, T> b1 = column_(b, 1);
    b1 = b1 - u0 * dot_(u0, b1);  // again orthogonal to u0, to the last bit
    vec_t<3, T> u1 = unit_or_zero_(b1, s1);
    if (!(s1 > T(0))) u1 = any_orthogonal_(u0);  // rank 1 or 0
    vec_t<3, T> u2 = cross_(u0, u1);  // det U = +1
    set_column_(u, 0, u0); set_column_(u, 1, u1); set_column_(u, 2, u2);
    sigma = vec_t<3, T>{{s0, s1, dot_(u2, column_(b, 2))}};
}
template <typename T> SK_FUNC void svd2_work_(const mat_t<2, 2, T>& a, mat_t<2, 2, T>& u, vec_t<2, T>& sigma, mat_t<2, 2, T>& v) {
    mat_t<2, 2, T> b = a;
    orthogonalize_columns_(b, v);
    if (det_(v) < T(0)) negate_column_(v, 1), negate_column_(b, 1);  // det V = +1; U takes det A's sign
    T s0, s1;
    vec_t<2, T> u0 = unit_or_zero_(column_(b, 0), s0);
    if (!(s0 > T(0))) u0 = vec_t<2, T>{{T(1), T(0)}};
    vec_t<2, T> b1 = column_(b, 1);
    b1 = b1 - u0 * dot_(u0, b1);
    vec_t<2, T> u1 = unit_or_zero_(b1, s1);
    if (!(s1 > T(0))) u1 = vec_t<2, T>{{-u0.c[1], u0.c[0]}};
    set_column_(u, 0, u0); set_column_(u, 1, u1);
    sigma = vec_t<2, T>{{s0, s1}};
}

// ---------------------------------------------------------------------------
// QR of a 3x3 matrix: Gram-Schmidt with one reorthogonalization, q2 = q0 x q1
// ---------------------------------------------------------------------------
template <typename T> SK_FUNC void qr3_work_(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& q, mat_t<3, 3, T>& r) {
    vec_t<3, T> a0 = column_(a, 0), a1 = column_(a, 1), a2 = column_(a, 2);
    T r00, r11;
    vec_t<3, T> q0 = unit_or_zero_(a0, r00);
    if (!(r00 > T(0))) q0 = vec_t<3, T>{{T(1), T(0), T(0)}};
    T r01 = dot_(q0, a1);
    vec_t<3, T> w = a1 - q0 * r01;
    T again = dot_(q0, w);
    w = w - q0 * again;
    r01 += again;
    vec_t<3, T> q1 = unit_or_zero_(w, r11);
    if (!(r11 > T(0))) q1 = any_orthogonal_(q0);
    vec_t<3, T> q2 = cross_(q0, q1);
    set_column_(q, 0, q0); set_column_(q, 1, q1); set_column_(q, 2, q2);
    r = mat_t<3, 3, T>{{{r00, r01, dot_(q0, a2)}, {T(0), r11, dot_(q1, a2)}, {T(0), T(0), dot_(q2, a2)}}};
}

// ---------------------------------------------------------------------------
// Packing the factors side by side, in the builtin's own scalar type
// ---------------------------------------------------------------------------
template <int N, int C, typename F, typename T>
SK_FUNC void pack_block_(mat_t<N, C, F>& out, int col, const mat_t<N, N, T>& m) {
    SK_UNROLL for (int i = 0; i < N; ++i) SK_UNROLL for (int j = 0; j < N; ++j) out.c[i][col + j] = F(m.c[i][j]);
}
template <int N, int C, typename F, typename T>
SK_FUNC void pack_column_(mat_t<N, C, F>& out, int col, const vec_t<N, T>& v) {
    SK_UNROLL for (int i = 0; i < N; ++i) out.c[i][col] = F(v.c[i]);
}
template <int N, int C, typename T, typename F> SK_FUNC mat_t<N, N, T> block_of_(const mat_t<N, C, F>& p, int col) {
    mat_t<N, N, T> m;
    SK_UNROLL for (int i = 0; i < N; ++i) SK_UNROLL for (int j = 0; j < N; ++j) m.c[i][j] = T(p.c[i][col + j]);
    return m;
}
template <int N, int C, typename T, typename F> SK_FUNC vec_t<N, T> column_of_(const mat_t<N, C, F>& p, int col) {
    vec_t<N, T> v;
    SK_UNROLL for (int i = 0; i < N; ++i) v.c[i] = T(p.c[i][col]);
    return v;
}
// The off-diagonal weight 1 / (b - a), zero where a and b agree to within the working epsilon of `scale`.
template <typename T> SK_FUNC T gap_inverse_(T a, T b, T scale) {
    T g = b - a;
    return abs_(g) > T(8) * decomp_eps_<T>() * scale ? T(1) / g : T(0);
}
template <int N, typename T> SK_FUNC T max_abs_(const vec_t<N, T>& v) {
    T r = T(0);
    SK_UNROLL for (int i = 0; i < N; ++i) r = max_(r, abs_(v.c[i]));
    return r;
}

// ---------------------------------------------------------------------------
// SVD: packed forward, adjoint and tangent, for N = 2 and 3
// ---------------------------------------------------------------------------
template <typename T> SK_FUNC void svd_work_(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& u, vec_t<3, T>& s, mat_t<3, 3, T>& v) { svd3_work_(a, u, s, v); }
template <typename T> SK_FUNC void svd_work_(const mat_t<2, 2, T>& a, mat_t<2, 2, T>& u, vec_t<2, T>& s, mat_t<2, 2, T>& v) { svd2_work_(a, u, s, v); }

template <int N, typename F> SK_FUNC mat_t<N, 2 * N + 1, F> svd_packed_(const mat_t<N, N, F>& a) {
    typedef typename decomp_work_<F>::type T;
    mat_t<N, N, T> u, v;
    vec_t<N, T> s;
    svd_work_(mat_as_<T>(a), u, s, v);
    mat_t<N, 2 * N + 1, F> out;
    pack_block_(out, 0, u); pack_column_(out, N, s); pack_block_(out, N + 1, v);
    return out;
}
// The weights F_ij = 1 / (s_j^2 - s_i^2) of the singular vectors' derivatives.
template <int N, typename T> SK_FUNC mat_t<N, N, T> svd_gaps_(const vec_t<N, T>& s) {
    T scale = max_abs_(s);
    mat_t<N, N, T> f = {};
    SK_UNROLL for (int i = 0; i < N; ++i) SK_UNROLL for (int j = 0; j < N; ++j)
        if (i != j) f.c[i][j] = gap_inverse_(s.c[i] * s.c[i], s.c[j] * s.c[j], scale * scale);
    return f;
}
template <int N, typename F> SK_FUNC void adj_svd_packed_(const mat_t<N, N, F>& a, mat_t<N, N, F>& adj_a, const mat_t<N, 2 * N + 1, F>& adj_ret) {
    typedef typename decomp_work_<F>::type T;
    mat_t<N, N, T> u, v;
    vec_t<N, T> s;
    svd_work_(mat_as_<T>(a), u, s, v);
    mat_t<N, N, T> gu = matmat(transpose_(u), block_of_<N, 2 * N + 1, T>(adj_ret, 0));
    mat_t<N, N, T> gv = matmat(transpose_(v), block_of_<N, 2 * N + 1, T>(adj_ret, N + 1));
    vec_t<N, T> gs = column_of_<N, 2 * N + 1, T>(adj_ret, N);
    mat_t<N, N, T> f = svd_gaps_(s), p;
    SK_UNROLL for (int i = 0; i < N; ++i) SK_UNROLL for (int j = 0; j < N; ++j)
        p.c[i][j] = i == j ? gs.c[i] : f.c[i][j] * (s.c[j] * (gu.c[i][j] - gu.c[j][i]) + s.c[i] * (gv.c[i][j] - gv.c[j][i]));
    adj_a += mat_as_<F>(matmat(matmat(u, p), transpose_(v)));
}
template <int N, typename F> SK_FUNC mat_t<N, 2 * N + 1, F> tan_svd_packed_(const mat_t<N, N, F>& a, const mat_t<N, N, F>& tan_a) {
    typedef typename decomp_work_<F>::type T;
    mat_t<N, N, T> u, v;
    vec_t<N, T> s;
    svd_work_(mat_as_<T>(a), u, s, v);
    mat_t<N, N, T> dp = matmat(matmat(transpose_(u), mat_as_<T>(tan_a)), v), f = svd_gaps_(s), wu = {}, wv = {};
    vec_t<N, T> ds;
    SK_UNROLL for (int i = 0; i < N; ++i) SK_UNROLL for (int j = 0; j < N; ++j) {
        if (i == j) { ds.c[i] = dp.c[i][i]; continue; }
        wu.c[i][j] = f.c[i][j] * (s.c[j] * dp.c[i][j] + s.c[i] * dp.c[j][i]);
        wv.c[i][j] = f.c[i][j] * (s.c[i] * dp.c[i][j] + s.c[j] * dp.c[j][i]);
    }
    mat_t<N, 2 * N + 1, F> out;
    pack_block_(out, 0, matmat(u, wu)); pack_column_(out, N, ds); pack_block_(out, N + 1, matmat(v, wv));
    return out;
}

// ---------------------------------------------------------------------------
// eig3: packed forward, adjoint and tangent (of the symmetric part of A)
// ---------------------------------------------------------------------------
template <typename T, typename F> SK_FUNC mat_t<3, 3, T> sym_part_(const mat_t<3, 3, F>& a) {
    mat_t<3, 3, T> w = mat_as_<T>(a);
    return (w + transpose_(w)) * T(0.5);
}
template <typename F> SK_FUNC mat_t<3, 4, F> eig3_packed_(const mat_t<3, 3, F>& a) {
    typedef typename decomp_work_<F>::type T;
    mat_t<3, 3, T> q;
    vec_t<3, T> d;
    sym_eig_(sym_part_<T>(a), q, d);
    mat_t<3, 4, F> out;
    pack_block_(out, 0, q); pack_column_(out, 3, d);
    return out;
}
template <typename T> SK_FUNC mat_t<3, 3, T> eig_gaps_(const vec_t<3, T>& d) {
    T scale = max_abs_(d);
    mat_t<3, 3, T> e = {};
    SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < 3; ++j)
        if (i != j) e.c[i][j] = gap_inverse_(d.c[i], d.c[j], scale);
    return e;
}
template <typename F> SK_FUNC void adj_eig3_packed_(const mat_t<3, 3, F>& a, mat_t<3, 3, F>& adj_a, const mat_t<3, 4, F>& adj_ret) {
    typedef typename decomp_work_<F>::type T;
    mat_t<3, 3, T> q;
    vec_t<3, T> d;
    sym_eig_(sym_part_<T>(a), q, d);
    mat_t<3, 3, T> g = matmat(transpose_(q), block_of_<3, 4, T>(adj_ret, 0)), e = eig_gaps_(d), p;
    vec_t<3, T> gd = column_of_<3, 4, T>(adj_ret, 3);
    SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < 3; ++j)
        p.c[i][j] = i == j ? gd.c[i] : e.c[i][j] * g.c[i][j];
    mat_t<3, 3, T> full = matmat(matmat(q, p), transpose_(q));
    adj_a += mat_as_<F>((full + transpose_(full)) * T(0.5));
}
template <typename F> SK_FUNC mat_t<3, 4, F> tan_eig3_packed_(const mat_t<3, 3, F>& a, const mat_t<3, 3, F>& tan_a) {
    typedef typename decomp_work_<F>::type T;
    mat_t<3, 3, T> q;
    vec_t<3, T> d;
    sym_eig_(sym_part_<T>(a), q, d);
    mat_t<3, 3, T> dp = matmat(matmat(transpose_(q), sym_part_<T>(tan_a)), q), e = eig_gaps_(d), w = {};
    vec_t<3, T> dd;
    SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < 3; ++j) {
        if (i == j) dd.c[i] = dp.c[i][i];
        else w.c[i][j] = e.c[i][j] * dp.c[i][j];
    }
    mat_t<3, 4, F> out;
    pack_block_(out, 0, matmat(q, w)); pack_column_(out, 3, dd);
    return out;
}

// ---------------------------------------------------------------------------
// qr3: packed forward, adjoint and tangent (A of full rank)
// ---------------------------------------------------------------------------
template <typename F> SK_FUNC mat_t<3, 6, F> qr3_packed_(const mat_t<3, 3, F>& a) {
    typedef typename decomp_work_<F>::type T;
    mat_t<3, 3, T> q, r;
    qr3_work_(mat_as_<T>(a), q, r);
    mat_t<3, 6, F> out;
    pack_block_(out, 0, q); pack_block_(out, 3, r);
    return out;
}
template <typename F> SK_FUNC void adj_qr3_packed_(const mat_t<3, 3, F>& a, mat_t<3, 3, F>& adj_a, const mat_t<3, 6, F>& adj_ret) {
    typedef typename decomp_work_<F>::type T;
    mat_t<3, 3, T> q, r;
    qr3_work_(mat_as_<T>(a), q, r);
    mat_t<3, 3, T> rbar = block_of_<3, 6, T>(adj_ret, 3);
    mat_t<3, 3, T> rrt = matmat(rbar, transpose_(r));
    mat_t<3, 3, T> h = matmat(transpose_(q), block_of_<3, 6, T>(adj_ret, 0)) - rrt;
    mat_t<3, 3, T> cbar = rrt;
    SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < i; ++j) cbar.c[i][j] += h.c[i][j] - h.c[j][i];
    adj_a += mat_as_<F>(matmat(matmat(q, cbar), transpose_(inverse_(r))));
}
template <typename F> SK_FUNC mat_t<3, 6, F> tan_qr3_packed_(const mat_t<3, 3, F>& a, const mat_t<3, 3, F>& tan_a) {
    typedef typename decomp_work_<F>::type T;
    mat_t<3, 3, T> q, r;
    qr3_work_(mat_as_<T>(a), q, r);
    mat_t<3, 3, T> c = matmat(matmat(transpose_(q), mat_as_<T>(tan_a)), inverse_(r)), w = {};
    SK_UNROLL for (int i = 0; i < 3; ++i) SK_UNROLL for (int j = 0; j < i; ++j) { w.c[i][j] = c.c[i][j]; w.c[j][i] = -c.c[i][j]; }
    mat_t<3, 6, F> out;
    pack_block_(out, 0, matmat(q, w)); pack_block_(out, 3, matmat(c - w, r));
    return out;
}

// ---------------------------------------------------------------------------
// argmin / argmax of a vector: the first index of the extreme, NaN components skipped (all NaN: 0)
// ---------------------------------------------------------------------------
template <int N, typename S> SK_FUNC uint32_t arg_extreme_(const vec_t<N, S>& v, bool largest) {
    int k = -1;
    S best = v.c[0];
    SK_UNROLL for (int i = 0; i < N; ++i) {
        if (!(v.c[i] == v.c[i])) continue;  // NaN
        if (k < 0 || (largest ? v.c[i] > best : v.c[i] < best)) { k = i; best = v.c[i]; }
    }
    return uint32_t(k < 0 ? 0 : k);
}

}  // namespace sk
