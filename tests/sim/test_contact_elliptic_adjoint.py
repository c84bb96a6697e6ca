"""The backward pass of the elliptic-cone contact solve (kernels/contact_elliptic.py) on
random problems that hold every kind of contact at once (inside the cone, sliding on it,
separated, a frictionless cone, a condim 1 row): against the reduced optimality system
written out in numpy, its Cholesky and Gauss-Seidel solves against each other, and against
central differences of the forward solve (``pgs``) itself, in ``b`` and in each ``mu``.

Tolerances: against numpy the adjoint agrees to 7e-15 (Cholesky) and 3e-14 (Gauss-Seidel)
of its largest entry (bound 1e-12). Against central differences: the forward is converged to
its rounding (residuals 1e-15 of about 1), so with a step of 1e-5 what is left is the
differences' own error, measured at 5.7e-10 of the largest derivative (bound 5e-9; steps of
1e-4 and 1e-6 leave 3e-8 and 1.2e-8, truncation and rounding)."""

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.contact_elliptic import ON_SURFACE, elliptic_kernels
from simkit.kernels.contact_solve import contact_solve_kernels

ROWS = 4
CONDIM = [3, 3, 3, 1, 3, 3]
MU = np.array([0.3, 0.8, 0.5, 0.4, 0.2, 0.0])


def f64(x):
    return sk.array(np.ascontiguousarray(x, dtype=np.float64).reshape(-1), dtype=sk.float64)


def i32(x):
    return sk.array(np.asarray(x, dtype=np.int32).reshape(-1), dtype=sk.int32)


def problem(seed: int, dofs: int = 5):
    # as the contact rows leave them: row 3 of every contact and rows 1-3 of a condim 1
    # contact carry nothing (J = 0, b = 0, R = 1)
    rng = np.random.default_rng(seed)
    n = len(CONDIM) * ROWS
    unused = np.zeros(n, dtype=bool)
    unused[3::ROWS] = True
    for c, condim in enumerate(CONDIM):
        if condim == 1:
            unused[ROWS * c + 1:ROWS * c + 4] = True
    J = rng.normal(size=(n, dofs))
    J[unused] = 0.0
    B = rng.normal(size=(dofs, dofs))
    X = np.linalg.solve(B @ B.T + dofs * np.eye(dofs), J.T).T
    R = 0.05 * np.abs(np.einsum("ij,ij->i", J, X)) + 1e-3
    R[unused] = 1.0
    b = rng.normal(size=n) - 0.5 * (np.arange(n) % ROWS == 0)
    b[unused] = 0.0
    return J, X, R, b, rng.normal(size=dofs), rng.normal(size=dofs)


def forward(J, X, R, b, a0, mu):
    n, nd = J.shape
    f, w = sk.zeros(n, dtype=sk.float64), sk.zeros(nd, dtype=sk.float64)
    sk.launch(contact_solve_kernels(sk.float64).pgs, 1,
              inputs=[i32([n // ROWS]), i32(range(n // ROWS)), i32(CONDIM), f64(mu), 1, nd, 100000, 1e-15, 0.0,
                      f64(J), f64(X), f64(b), f64(R), i32([0])],
              outputs=[sk.zeros(n, dtype=sk.float64), f, w, sk.zeros(1, dtype=sk.int32)])
    return f.numpy(), a0 + w.numpy()


def adjoint(J, X, R, b, a0, mu, f, qdd, g, dense: int):
    n, nd = J.shape
    nc = n // ROWS
    z = lambda m, dtype=sk.float64: sk.zeros(m, dtype=dtype)
    out = [z(n), z(nd), z(nd), z(nc)]
    sk.launch(elliptic_kernels(sk.float64).elliptic_adjoint, 1,
              inputs=[i32([nc]), i32(range(nc)), i32(CONDIM), f64(mu), nd, dense, 100000, 1e-15,
                      ON_SURFACE["float64"], f64(J), f64(X), f64(b), f64(R), f64(f), f64(g), f64(qdd), f64(a0)],
              outputs=[z(n * n), z(n * n), z(n), z(n, sk.int32), z(2 * n, sk.int32), z(15 * nc),
                       z(2 * nc, sk.int32), z(3 * nc), z(3 * nc)] + out)
    return [a.numpy() for a in out]


def kinds(f):
    out = []
    for c, condim in enumerate(CONDIM):
        fn, ft = f[ROWS * c], np.hypot(f[ROWS * c + 1], f[ROWS * c + 2])
        if fn <= 0.0:
            out.append("separated")
        elif condim == 1 or MU[c] == 0.0:
            out.append("normal")
        elif ft < MU[c] * fn * (1.0 - 1e-9):
            out.append("inside")
        else:
            out.append("sliding")
    return out


def reduced_adjoint(J, X, R, b, f, g):
    # the optimality conditions' derivative, column by column: a free row or a force inside
    # the cone moves freely; a sliding force moves along the cone's ray (1, mu t) and around
    # it (0, s), where the surface's curvature 1/|f_t| times the multiplier adds to D^T H D
    H = J @ X.T + np.diag(R)
    r = H @ f + b
    cols, curvature = [], []
    for c, kind in enumerate(kinds(f)):
        i = ROWS * c
        if kind == "separated":
            continue
        dirs = {"normal": [(1, 0, 0)], "inside": list(np.eye(3))}.get(kind)
        bend = [0.0] * 3
        if kind == "sliding":
            t = f[i + 1:i + 3] / np.hypot(f[i + 1], f[i + 2])
            dirs = [(1.0, MU[c] * t[0], MU[c] * t[1]), (0.0, -t[1], t[0])]
            bend[1] = -(r[i + 1:i + 3] @ t) / np.hypot(f[i + 1], f[i + 2])
        for k, d in enumerate(dirs):
            col = np.zeros(len(f))
            col[i:i + 3] = d
            cols.append(col)
            curvature.append(bend[k])
    D = np.array(cols).T
    return D @ np.linalg.solve(D.T @ H @ D + np.diag(curvature), D.T @ (X @ g))


@pytest.mark.parametrize("seed", range(4))
def test_the_adjoint_solves_the_reduced_optimality_system_by_cholesky_and_by_gauss_seidel(seed):
    J, X, R, b, a0, g = problem(seed)
    f, qdd = forward(J, X, R, b, a0, MU)
    assert "sliding" in kinds(f)
    expected = reduced_adjoint(J, X, R, b, f, g)
    scale = np.abs(expected).max()
    for dense in (1, 0):
        mu, t, jt_mu, mu_grad = adjoint(J, X, R, b, a0, MU, f, qdd, g, dense)
        np.testing.assert_allclose(mu, expected, rtol=0.0, atol=1e-12 * scale)
        np.testing.assert_allclose(t, X.T @ mu, rtol=0.0, atol=1e-14 * scale)
        np.testing.assert_allclose(jt_mu, J.T @ mu, rtol=0.0, atol=1e-13 * scale)


@pytest.mark.parametrize("seed", [12, 21])
def test_the_adjoint_is_the_derivative_of_the_forward_solve_in_b_and_in_mu(seed):
    # loss g . qdd: its gradient in b is -mu, in each contact's friction coefficient mu_grad
    J, X, R, b, a0, g = problem(seed)
    f, qdd = forward(J, X, R, b, a0, MU)
    assert set(kinds(f)) == {"inside", "sliding", "separated", "normal"}
    assert kinds(f)[-1] == "normal"     # the frictionless cone pushes: its mu gradient is the slip's
    mu, t, jt_mu, mu_grad = adjoint(J, X, R, b, a0, MU, f, qdd, g, 1)

    def loss(b_, mu_):
        return g @ forward(J, X, R, b_, a0, mu_)[1]

    eps = 1e-5
    d_b = np.array([(loss(b + eps * e, MU) - loss(b - eps * e, MU)) / (2 * eps) for e in np.eye(len(b))])
    d_mu = []
    for c, e in enumerate(np.eye(len(MU))):
        if MU[c] > 0.0:
            d_mu.append((loss(b, MU + eps * e) - loss(b, MU - eps * e)) / (2 * eps))
        else:   # mu >= 0: the one-sided difference of second order
            d_mu.append((-3.0 * loss(b, MU) + 4.0 * loss(b, MU + eps * e) - loss(b, MU + 2 * eps * e)) / (2 * eps))
    grad, expected = np.concatenate([-mu, mu_grad]), np.concatenate([d_b, d_mu])
    np.testing.assert_allclose(grad, expected, rtol=0.0, atol=5e-9 * np.abs(expected).max())
    # no friction gradient where the force does not depend on mu
    for c, kind in enumerate(kinds(f)):
        if kind in ("separated", "inside") or CONDIM[c] == 1:
            assert mu_grad[c] == 0.0
