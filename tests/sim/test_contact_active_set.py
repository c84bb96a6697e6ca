"""The exact solve of the pyramidal contact dual (kernels/contact_active_set.py) against the
brute-force oracle: of all 2^n sets of pushing rows, the one whose forces are >= 0 and whose
other rows' residuals are >= 0 (the optimality conditions of ``min 0.5 f^T H f + b^T f``
over ``f >= 0``, unique for a positive-definite ``H``); and in a simulation, the Gauss-Seidel
that follows it has nothing left to do."""

import itertools

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.contact_active_set import active_set_kernels

ROWS = 4


def brute_force(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = len(b)
    for size in range(n + 1):
        for S in itertools.combinations(range(n), size):
            f = np.zeros(n)
            if S:
                S = list(S)
                f[S] = np.linalg.solve(H[np.ix_(S, S)], -b[S])
            r = H @ f + b
            if f.min() >= -1e-12 and np.delete(r, S).min(initial=0.0) >= -1e-12:
                return f
    raise AssertionError("no set satisfies the optimality conditions")


# a pyramid's four edge rows n + mu t1, n - mu t1, n + mu t2, n - mu t2 from n, mu t1, mu t2
EDGES = np.array([[1.0, 1.0, 0.0], [1.0, -1.0, 0.0], [1.0, 0.0, 1.0], [1.0, 0.0, -1.0]])


def problem(seed: int, contacts: int, dofs: int, pyramid: bool = True):
    # more rows than dofs, as a box's pyramid: A = J M^-1 J^T is singular, R makes H definite.
    # Also Y = J L^-T for M = L L^T (A = Y Y^T), what the step passes the exact solve
    rng = np.random.default_rng(seed)
    n = contacts * ROWS
    J = rng.normal(size=(n, dofs))
    if pyramid:
        J = np.einsum("ek,ckd->ced", EDGES, rng.normal(size=(contacts, 3, dofs))).reshape(n, dofs)
    B = rng.normal(size=(dofs, dofs))
    M = B @ B.T + dofs * np.eye(dofs)
    X = np.linalg.solve(M, J.T).T
    R = 0.05 * np.abs(np.einsum("ij,ij->i", J, X))
    b = rng.normal(size=n)
    Y = np.linalg.solve(np.linalg.cholesky(M), J.T).T
    return J, X, R, b, Y


def run_kernel(Y, R, b, warm, condim=3, elliptic=0):
    n, nd = Y.shape
    contacts = n // ROWS
    k = active_set_kernels(sk.float64)
    f64 = lambda x: sk.array(np.ascontiguousarray(x, dtype=np.float64).reshape(-1), dtype=sk.float64)
    i32 = lambda x: sk.array(np.asarray(x, dtype=np.int32).reshape(-1), dtype=sk.int32)
    slot_force, solved = f64(warm), sk.zeros(1, dtype=sk.int32)
    sk.launch(k.active_set, 1,
              inputs=[i32([contacts]), i32(range(contacts)), i32([condim] * contacts), elliptic, nd, 1e-12,
                      f64(Y), f64(b), f64(R)],
              outputs=[slot_force, sk.zeros(n * n, dtype=sk.float64), sk.zeros(n * n, dtype=sk.float64),
                       sk.zeros(n, dtype=sk.float64), sk.zeros(n, dtype=sk.float64), sk.zeros(n, dtype=sk.int32),
                       sk.zeros(2 * n, dtype=sk.int32), solved, sk.zeros(3 * contacts * nd, dtype=sk.float64)])
    return slot_force.numpy()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("start", ["cold", "warm-from-the-wrong-rows"])
def test_the_forces_are_the_unique_optimum_the_brute_force_search_finds(seed, start):
    J, X, R, b, Y = problem(seed, contacts=3, dofs=5)
    H = J @ X.T + np.diag(R)
    expected = brute_force(H, b)
    warm = np.zeros(len(b)) if start == "cold" else (expected == 0.0).astype(float)
    np.testing.assert_allclose(run_kernel(Y, R, b, warm), expected, rtol=1e-9, atol=1e-12)


def test_the_unused_rows_of_a_condim_1_contact_carry_no_force():
    J, X, R, b, Y = problem(7, contacts=2, dofs=3, pyramid=False)
    used = np.arange(len(b)) % ROWS == 0
    H = (J @ X.T + np.diag(R))[np.ix_(used, used)]
    expected = np.zeros(len(b))
    expected[used] = brute_force(H, b[used])
    np.testing.assert_allclose(run_kernel(Y, R, b, np.ones(len(b)), condim=1), expected, rtol=1e-9, atol=1e-12)


def test_the_elliptic_cone_is_left_to_gauss_seidel():
    J, X, R, b, Y = problem(8, contacts=2, dofs=4)
    warm = np.full(len(b), 0.25)
    np.testing.assert_array_equal(run_kernel(Y, R, b, warm, elliptic=1), warm)


def boxes_on_ground(cone: str, dtype=sk.float64, depth: float = 1e-4):
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.set_contact_options(cone=cone)
    for i in range(2):
        b.add_articulation()
        body = b.add_body(((0.5 * i, 0.0, 0.1 - depth), (0.0, 0.0, 0.0, 1.0)))
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0)
        b.add_joint_free(-1, body)
    return b.finalize(dtype=dtype)


def sweeps_after(cone: str) -> int:
    model = boxes_on_ground(cone)
    integrator = sk.sim.Featherstone(contact="constraint", tolerance=1e-10, iterations=1000)
    s0, s1 = model.state(), model.state()
    for _ in range(50):
        integrator.step(model, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
    return int(model._featherstone["contact_solves"][integrator.max_contacts].iterations.numpy()[0])


def test_resting_boxes_leave_gauss_seidel_no_sweep():
    # 8 corners, 32 pyramid rows on 12 dofs: Gauss-Seidel alone needs hundreds of sweeps; the
    # exact solve's forces meet the optimality conditions, so it runs none
    assert sweeps_after("pyramidal") == 0


def test_in_float32_gauss_seidel_stops_at_the_rounding_of_the_residuals():
    # boxes 2 cm deep, from rest with no warm start: residuals of ~100 whose float32 rounding
    # (~1e-5) is the tolerance itself; the exact solve's forces are taken as solved, not
    # swept until the cap
    model = boxes_on_ground("pyramidal", sk.float32, depth=2e-2)
    integrator = sk.sim.Featherstone(contact="constraint", tolerance=1e-5, iterations=1000)
    s0, s1 = model.state(), model.state()
    integrator.step(model, s0, s1, None, 1e-3)
    solve = model._featherstone["contact_solves"][integrator.max_contacts]
    assert int(solve.needed.numpy()[0]) == 8
    assert int(solve.iterations.numpy()[0]) <= 2


def test_with_the_elliptic_cone_gauss_seidel_solves_alone():
    assert sweeps_after("elliptic") > 1


def test_the_exact_adjoint_agrees_with_gauss_seidels_and_with_numpy():
    # the backward pass's system (A + R)_SS mu_S = (X g)_S on the pushing rows: by Cholesky
    # for up to ACTIVE_SET_ROWS rows, by Gauss-Seidel (pgs_adjoint) above
    from simkit.kernels.contact_solve import contact_solve_kernels

    J, X, R, b, Y = problem(3, contacts=3, dofs=5)
    H = J @ X.T + np.diag(R)
    f = brute_force(H, b)
    g = np.random.default_rng(9).normal(size=J.shape[1])
    S = f > 0
    expected = np.zeros(len(f))
    expected[S] = np.linalg.solve(H[np.ix_(S, S)], (X @ g)[S])
    n, nd = J.shape
    f64 = lambda x: sk.array(np.ascontiguousarray(x, dtype=np.float64).reshape(-1), dtype=sk.float64)
    count = sk.array(np.array([n // ROWS], dtype=np.int32), dtype=sk.int32)
    results = []
    for exact in (True, False):
        mu, t, jt_mu = (sk.zeros(m, dtype=sk.float64) for m in (n, nd, nd))
        if exact:
            sk.launch(active_set_kernels(sk.float64).active_set_adjoint, 1,
                      inputs=[count, nd, f64(J), f64(X), f64(R), f64(f), f64(g)],
                      outputs=[sk.zeros(n * n, dtype=sk.float64), sk.zeros(n * n, dtype=sk.float64),
                               sk.zeros(n, dtype=sk.float64), sk.zeros(n, dtype=sk.float64),
                               sk.zeros(n, dtype=sk.int32), sk.zeros(2 * n, dtype=sk.int32), mu, t, jt_mu])
        else:
            sk.launch(contact_solve_kernels(sk.float64).pgs_adjoint, 1,
                      inputs=[count, nd, 100000, 1e-15, f64(J), f64(X), f64(R), f64(f), f64(g)],
                      outputs=[mu, t, jt_mu])
        results.append(mu.numpy())
        np.testing.assert_allclose(jt_mu.numpy(), J.T @ mu.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0], expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(results[1], expected, rtol=1e-6, atol=1e-9)


def pgs_sweeps_after_the_exact_solve_in_float32(rounding: float, seed: int) -> int:
    # Gauss-Seidel told to check (exact = 0) the float32 exact solve's forces, on residuals of
    # ~100 (a body 2 cm deep) whose float32 rounding (~1e-5) is the tolerance itself
    from simkit.kernels.contact_solve import contact_solve_kernels

    J, X, R, b, Y = problem(seed, contacts=4, dofs=6)
    b = 100.0 * b
    f32 = lambda x: sk.array(np.ascontiguousarray(x, dtype=np.float32).reshape(-1), dtype=sk.float32)
    i32 = lambda x: sk.array(np.asarray(x, dtype=np.int32).reshape(-1), dtype=sk.int32)
    z = lambda m, dtype=sk.float32: sk.zeros(m, dtype=dtype)
    n, nd = J.shape
    force, solved, iters = z(n), z(1, sk.int32), z(1, sk.int32)
    rows = [i32([n // ROWS]), i32(range(n // ROWS)), i32([3] * (n // ROWS))]
    sk.launch(active_set_kernels(sk.float32).active_set, 1,
              inputs=rows + [0, nd, 1e-5, f32(Y), f32(b), f32(R)],
              outputs=[force, z(n * n), z(n * n), z(n), z(n), z(n, sk.int32), z(2 * n, sk.int32), solved,
                       z(3 * nd * n // ROWS)])
    assert int(solved.numpy()[0]) == 1
    sk.launch(contact_solve_kernels(sk.float32).pgs, 1,
              inputs=rows + [f32(np.ones(n)), 0, nd, 1000, 1e-5, rounding, f32(Y), f32(Y), f32(b), f32(R), i32([0])],
              outputs=[force, z(n), z(nd), iters])
    return int(iters.numpy()[0])


def test_gauss_seidel_counts_no_change_within_the_rounding_of_the_residuals():
    # on random float32 instances the rounding alone keeps Gauss-Seidel sweeping over the
    # exact solve's forces; counting a change within it as none never takes more sweeps, and
    # takes far fewer in all
    from simkit.sim.contact_constraint import ROUNDING

    floor = ROUNDING * float(np.finfo(np.float32).eps)
    sweeps = np.array([[pgs_sweeps_after_the_exact_solve_in_float32(r, seed) for r in (floor, 0.0)]
                       for seed in range(12)])
    assert np.all(sweeps[:, 0] <= sweeps[:, 1])
    assert sweeps[:, 0].sum() < 0.5 * sweeps[:, 1].sum()