"""Warp's linear-algebra builtins in the table (:mod:`simkit.core.builtins`): the decompositions
``svd3``, ``svd2``, ``qr3`` and ``eig3`` (``native/decomp.h``), the double contraction ``ddot``,
``argmin`` / ``argmax`` of a vector, and products of integer matrices.

A decomposition has several results. Its table entry returns them packed side by side in one
matrix (``svd3``: ``[U | sigma | V]``, 3 x 7), and the frontend hands the parts to the kernel
in either of Warp's spellings (:mod:`simkit.core.packed_results`, by :data:`PACKED_RESULTS`):
``U, sigma, V = sk.svd3(A)`` or ``sk.svd3(A, U, sigma, V)`` into declared locals. Warp's
``cast`` is no kernel builtin (``warp.cast`` does not exist in Warp 1.19), so there is none here.

Example::

    U, sigma, V = sk.svd3(F)                  # in a kernel: F == U * sk.diag(sigma) * sk.transpose(V)
    Q, R = sk.qr3(F)
    i = sk.argmax(sigma)                       # a uint32
"""

from .builtins import _ as _table_entry, EXAMPLES, PACKED_RESULTS

# This module's entries, which tests/core/test_linalg_builtins.py checks one by one.
ENTRIES: list = []


def _(*args, **kwargs):
    ENTRIES.append(_table_entry(*args, **kwargs))

_SVD = "Warp's {n}x{n} singular value decomposition: U, sigma, V with A = U diag(sigma) V^T"
_("svd3", "A: mat(3,3,F)", "mat(3,7,F)", "return svd_packed_(A);", "adj_svd_packed_(A, adj_A, adj_ret);",
  tan="return tan_svd_packed_(A, tan_A);",
  doc=_SVD.format(n=3) + " (det U = det V = +1, |sigma| decreasing, sigma[2] with the sign of det A).")
_("svd2", "A: mat(2,2,F)", "mat(2,5,F)", "return svd_packed_(A);", "adj_svd_packed_(A, adj_A, adj_ret);",
  tan="return tan_svd_packed_(A, tan_A);",
  doc=_SVD.format(n=2) + " (sigma >= 0 decreasing, det V = +1).")
_("qr3", "A: mat(3,3,F)", "mat(3,6,F)", "return qr3_packed_(A);", "adj_qr3_packed_(A, adj_A, adj_ret);",
  tan="return tan_qr3_packed_(A, tan_A);",
  doc="Warp's QR decomposition of a 3x3 matrix: Q, R with A = Q R, det Q = +1, R upper triangular "
      "(R[0][0], R[1][1] >= 0; R[2][2] has the sign of det A).")
_("eig3", "A: mat(3,3,F)", "mat(3,4,F)", "return eig3_packed_(A);", "adj_eig3_packed_(A, adj_A, adj_ret);",
  tan="return tan_eig3_packed_(A, tan_A);",
  doc="Warp's eigendecomposition of a symmetric 3x3 matrix: Q, d with A = Q diag(d) Q^T "
      "(d increasing, det Q = +1; of (A + A^T) / 2 when A is not symmetric).")

# (part name, first column in the packed matrix, columns: 1 is a vector)
PACKED_RESULTS.update({
    "svd3": (("U", 0, 3), ("sigma", 3, 1), ("V", 4, 3)),
    "svd2": (("U", 0, 2), ("sigma", 2, 1), ("V", 3, 2)),
    "qr3": (("Q", 0, 3), ("R", 3, 3)),
    "eig3": (("Q", 0, 3), ("d", 3, 1)),
})

_("ddot", "a: mat(R,C,F), b: mat(R,C,F)", "F", "return inner_(a, b);", "adj_a += b * adj_ret; adj_b += a * adj_ret;",
  tan="return inner_(tan_a, b) + inner_(a, tan_b);",
  doc="The double contraction sum_ij a[i][j] b[i][j] of two matrices of one shape.")
_("argmin", "a: vec(N,S)", "uint32", "return arg_extreme_(a, false);", None,
  doc="The index of the smallest component (the first of equals; NaN components skipped, all NaN: 0).")
_("argmax", "a: vec(N,S)", "uint32", "return arg_extreme_(a, true);", None,
  doc="The index of the largest component (the first of equals; NaN components skipped, all NaN: 0).")

# Integer matrices: products as the float ones (wrapping as the integer type does), no gradient.
for _op in ("mul", "matmul"):
    _(_op, "a: mat(R,C,I), v: vec(C,I)", "vec(R,I)", "return matvec(a, v);", None)
    _(_op, "a: mat(R,K,I), b: mat(K,C,I)", "mat(R,C,I)", "return matmat(a, b);", None)
_("mul", "s: I, a: mat(R,C,I)", "mat(R,C,I)", "return s * a;", None)
_("mul", "a: mat(R,C,I), s: I", "mat(R,C,I)", "return a * s;", None)

EXAMPLES.update({
    "svd3": """
U, sigma, V = sk.svd3(F)                       # F == U * sk.diag(sigma) * sk.transpose(V)
R = U * sk.transpose(V)                        # the rotation of F's polar decomposition
""",
    "svd2": """
U, sigma, V = sk.svd2(A)                       # or sk.svd2(A, U, sigma, V) into declared locals
""",
    "qr3": """
Q, R = sk.qr3(A)                               # A == Q * R
""",
    "eig3": """
Q, d = sk.eig3(S)                              # S symmetric: S == Q * sk.diag(d) * sk.transpose(Q)
""",
})
