"""Tetrahedral soft bodies: stable Neo-Hookean forces against their energy and against
linear elasticity, a soft cube resting on the ground, and gradients through a rollout."""

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference, position_loss
from simkit.kernels.tets import eval_tet_forces

REST_TET = np.array([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.05, 0.25, 0.0], [0.1, 0.05, 0.2]])
K_MU, K_LAMBDA, K_DAMP = 2.0e3, 5.0e3, 30.0


def one_tet(k_mu=K_MU, k_lambda=K_LAMBDA, k_damp=K_DAMP):
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    for p in REST_TET:
        b.add_particle(p, (0.0, 0.0, 0.0), mass=0.1)
    b.add_tetrahedron(0, 1, 2, 3, k_mu=k_mu, k_lambda=k_lambda, k_damp=k_damp)
    return b.finalize(dtype=sk.float64)


def tet_forces(model, q, qd=None) -> np.ndarray:
    """The tetrahedron forces on each particle at positions ``q`` and velocities ``qd``."""
    state = model.state()
    state.particle_q.assign(np.asarray(q, dtype=np.float64))
    if qd is not None:
        state.particle_qd.assign(np.asarray(qd, dtype=np.float64))
    state.clear_forces()
    eval_tet_forces(model, state)
    return state.particle_f.numpy().copy()


def deformation_gradient(x, X):
    return (x[1:] - x[0]).T @ np.linalg.inv((X[1:] - X[0]).T)


def tet_volume(X) -> float:
    return np.linalg.det((X[1:] - X[0]).T) / 6.0


def neo_hookean_energy(x, X=REST_TET, k_mu=K_MU, k_lambda=K_LAMBDA) -> float:
    """V * (mu/2 (I_C - 3) - mu (J - 1) + lam/2 (J - 1)^2), mu = k_mu, lam = k_lambda + k_mu."""
    F = deformation_gradient(x, X)
    J = np.linalg.det(F)
    mu, lam = k_mu, k_lambda + k_mu
    return tet_volume(X) * (0.5 * mu * (np.trace(F.T @ F) - 3.0) - mu * (J - 1.0) + 0.5 * lam * (J - 1.0) ** 2)


def dissipation(x, v, X=REST_TET, k_damp=K_DAMP) -> float:
    """Rayleigh dissipation V * k_damp/2 |sym(F^T dF/dt)|^2 of the Green strain rate."""
    F = deformation_gradient(x, X)
    dF = (v[1:] - v[0]).T @ np.linalg.inv((X[1:] - X[0]).T)
    rate = 0.5 * (F.T @ dF + dF.T @ F)
    return tet_volume(X) * 0.5 * k_damp * np.sum(rate * rate)


def rotation(axis, angle) -> np.ndarray:
    a = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def signed_volumes(q, tets) -> np.ndarray:
    return np.linalg.det(q[tets[:, 1:]] - q[tets[:, :1]]) / 6.0


# Forces scale like k * V / size ~ 2e3 * 2.5e-3 / 0.3; "zero" is relative to that.
FORCE_SCALE = 20.0


# -- a single element ----------------------------------------------------------------------------
def test_tet_at_rest_feels_no_force():
    f = tet_forces(one_tet(), REST_TET)
    np.testing.assert_allclose(f, 0.0, atol=1e-12 * FORCE_SCALE)


def test_translated_and_rotated_tet_feels_no_force():
    R = rotation((0.3, -1.0, 0.6), 2.1)
    f = tet_forces(one_tet(), REST_TET @ R.T + np.array([1.0, -2.0, 0.5]))
    np.testing.assert_allclose(f, 0.0, atol=1e-12 * FORCE_SCALE)


def test_rigidly_moving_tet_feels_no_damping():
    # velocities of a rigid motion: v = v0 + omega x x; the Green strain rate is zero
    omega, v0 = np.array([1.5, -0.4, 2.0]), np.array([0.2, 0.7, -1.0])
    f = tet_forces(one_tet(k_damp=500.0), REST_TET, v0 + np.cross(omega, REST_TET))
    np.testing.assert_allclose(f, 0.0, atol=1e-12 * FORCE_SCALE)


def test_deformed_tet_forces_have_zero_sum_and_zero_torque(rng):
    x = REST_TET + 0.05 * rng.standard_normal(REST_TET.shape)
    v = rng.standard_normal(REST_TET.shape)
    f = tet_forces(one_tet(), x, v)
    assert np.abs(f).max() > 0.1 * FORCE_SCALE
    np.testing.assert_allclose(f.sum(axis=0), 0.0, atol=1e-12 * FORCE_SCALE)
    np.testing.assert_allclose(np.cross(x, f).sum(axis=0), 0.0, atol=1e-12 * FORCE_SCALE)


def test_elastic_force_is_minus_the_energy_gradient(rng):
    x = REST_TET + 0.05 * rng.standard_normal(REST_TET.shape)
    f = tet_forces(one_tet(), x)
    for p in range(4):
        for c in range(3):
            dE = central_difference(lambda: neo_hookean_energy(x), x, (p, c), 1e-6)
            assert f[p, c] == pytest.approx(-dE, rel=1e-6, abs=1e-8 * FORCE_SCALE)


def test_damping_force_is_minus_the_dissipation_gradient(rng):
    x = REST_TET + 0.05 * rng.standard_normal(REST_TET.shape)
    v = rng.standard_normal(REST_TET.shape)
    f = tet_forces(one_tet(), x, v) - tet_forces(one_tet(), x)
    for p in range(4):
        for c in range(3):
            dD = central_difference(lambda: dissipation(x, v), v, (p, c), 1e-6)
            assert f[p, c] == pytest.approx(-dD, rel=1e-6, abs=1e-8 * FORCE_SCALE)


@pytest.mark.parametrize("height", [-0.1, 0.0], ids=["inverted", "flat"])
def test_inverted_or_flat_tet_is_pushed_towards_positive_volume(height):
    x = REST_TET.copy()
    x[3, 2] = height
    f = tet_forces(one_tet(), x)
    assert np.all(np.isfinite(f))
    # rate of change of the signed volume when the particles move along the forces
    e1, e2, e3 = x[1] - x[0], x[2] - x[0], x[3] - x[0]
    grad = np.array([np.zeros(3), np.cross(e2, e3), np.cross(e3, e1), np.cross(e1, e2)]) / 6.0
    grad[0] = -grad[1:].sum(axis=0)
    assert np.sum(grad * f) > 0.0


def edge_lengths(x) -> np.ndarray:
    return np.array([np.linalg.norm(x[a] - x[b]) for a in range(4) for b in range(a + 1, 4)])


def test_inverted_tet_springs_back_to_its_rest_shape():
    # Released from rest, momentum and angular momentum stay zero, so damping of the strain rate
    # alone brings it to an energy minimum: the rest shape up to a rotation, never its mirror image.
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    for p in REST_TET:
        b.add_particle(p, (0.0, 0.0, 0.0), mass=0.1)
    b.add_tetrahedron(0, 1, 2, 3, k_mu=K_MU, k_lambda=K_LAMBDA, k_damp=200.0)
    model = b.finalize(dtype=sk.float64)
    state = model.state()
    inverted = REST_TET.copy()
    inverted[3, 2] = -0.1
    state.particle_q.assign(inverted)
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, 2000, 1e-4, keep_states=False)[-1]
    q = final.particle_q.numpy()
    assert tet_volume(q) == pytest.approx(tet_volume(REST_TET), rel=1e-2)
    np.testing.assert_allclose(edge_lengths(q), edge_lengths(REST_TET), rtol=1e-2)


# -- linear elasticity limit -----------------------------------------------------------------------
def uniaxial_bar(k_mu, k_lambda, strain):
    """A 4 x 1 x 1 bar of 0.1 m cells (float64) deformed into the homogeneous uniaxial-stress state
    of linear elasticity: stretched by ``strain`` along x, contracted by Poisson's ratio across.
    Returns the tet forces and the rest positions."""
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_soft_grid((0.0, 0.0, 0.0), (0, 0, 0, 1), (0, 0, 0), 4, 1, 1, 0.1, 0.1, 0.1, density=1000.0,
                    k_mu=k_mu, k_lambda=k_lambda, k_damp=0.0)
    model = b.finalize(dtype=sk.float64)
    X = model.particle_q.numpy().copy()
    poisson = k_lambda / (2.0 * (k_lambda + k_mu))
    stretch = np.array([1.0 + strain, 1.0 - poisson * strain, 1.0 - poisson * strain])
    return tet_forces(model, X * stretch), X


@pytest.mark.parametrize("k_mu, k_lambda", [(1.0e5, 1.0e5), (1.0e5, 4.0e5), (2.0e5, 0.0)])
def test_stretched_bar_pulls_back_with_youngs_modulus(k_mu, k_lambda):
    strain = 1e-4
    f, X = uniaxial_bar(k_mu, k_lambda, strain)
    youngs = k_mu * (3.0 * k_lambda + 2.0 * k_mu) / (k_lambda + k_mu)
    end_face = np.isclose(X[:, 0], 0.4)
    area = 0.1 * 0.1
    assert -f[end_face, 0].sum() == pytest.approx(youngs * strain * area, rel=1e-2)


@pytest.mark.parametrize("k_mu, k_lambda", [(1.0e5, 1.0e5), (1.0e5, 4.0e5)])
def test_stretched_bar_contracts_sideways_with_poissons_ratio(k_mu, k_lambda):
    # In the uniaxial-stress state the sides carry no traction: with the Poisson contraction
    # of linear elasticity no particle feels a sideways force.
    strain = 1e-4
    f, X = uniaxial_bar(k_mu, k_lambda, strain)
    axial = np.abs(f[np.isclose(X[:, 0], 0.4), 0].sum())
    assert np.abs(f[:, 1:]).max() < 1e-3 * axial


# -- a soft cube on the ground -------------------------------------------------------------------------
CUBE_CELLS, CUBE_CELL, CUBE_DROP = 4, 0.1, 0.05


@pytest.fixture(scope="module")
def dropped_cube():
    """A 0.4 m soft cube (E = 133 kPa, water density) dropped from 5 cm and simulated for 3 s
    (float32). Returns the model, the final state and, for every step, the lowest particle height
    above its contact margin and the total signed volume of the tetrahedra."""
    # The corner particles weigh 42 g: friction (kf) and contact damping (kd) are explicit
    # viscous forces, stable only while k * dt / m < 2, hence kf and kd well below the defaults.
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True, contact_ke=1.0e4, contact_kd=50.0, contact_kf=40.0,
                            contact_mu=0.5)
    n = CUBE_CELLS
    b.add_soft_grid((0.0, CUBE_DROP, 0.0), (0, 0, 0, 1), (0, 0, 0), n, n, n, CUBE_CELL, CUBE_CELL, CUBE_CELL,
                    density=1000.0, k_mu=5.0e4, k_lambda=1.0e5, k_damp=400.0)
    model = b.finalize()
    tets, radius = model.tets.indices.numpy(), model.particles.radius.numpy()
    integrator, state, spare = sk.sim.SemiImplicitEuler(), model.state(), model.state()
    clearance, volume = [], []
    for _ in range(3000):
        integrator.step(model, state, spare, None, 1e-3)
        state, spare = spare, state
        q = state.particle_q.numpy()
        clearance.append(np.min(q[:, 1] + radius))
        volume.append(signed_volumes(q.astype(np.float64), tets).sum())
    return model, state, np.array(clearance), np.array(volume)


def test_dropped_soft_cube_comes_to_rest(dropped_cube):
    _, state, _, _ = dropped_cube
    # impact speed is sqrt(2 g h) ~ 1 m/s
    assert np.linalg.norm(state.particle_qd.numpy(), axis=1).max() < 5e-3


def test_dropped_soft_cube_never_sinks_into_the_ground_deeper_than_the_contact_margin(dropped_cube):
    _, _, clearance, _ = dropped_cube
    assert clearance.min() > 0.0


def test_dropped_soft_cube_keeps_its_volume_within_5_percent(dropped_cube):
    model, state, _, volume = dropped_cube
    rest = model.tets.volume.numpy().sum()
    assert np.abs(volume / rest - 1.0).max() < 0.05
    assert np.all(signed_volumes(state.particle_q.numpy().astype(np.float64), model.tets.indices.numpy()) > 0.0)


def test_dropped_soft_cube_sags_like_an_elastic_column_under_its_own_weight(dropped_cube):
    # A column of height H under its own weight shortens by rho g H^2 / (2 M), with M = E when its
    # sides are free to spread and M = lam + 2 mu when they cannot. The cube's base is held only by
    # friction, so its sag lies between the two, give or take 10% for the coarse mesh, the finite
    # strain and the uneven contact penetration.
    model, state, _, _ = dropped_cube
    X, q = model.particle_q.numpy(), state.particle_q.numpy()
    H = CUBE_CELLS * CUBE_CELL
    top, bottom = np.isclose(X[:, 1], CUBE_DROP + H), np.isclose(X[:, 1], CUBE_DROP)
    sag = H - (q[top, 1].mean() - q[bottom, 1].mean())
    mu, lam, rho, g = 5.0e4, 1.0e5, 1000.0, 9.81
    unconfined = rho * g * H ** 2 / (2.0 * mu * (3.0 * lam + 2.0 * mu) / (lam + mu))
    confined = rho * g * H ** 2 / (2.0 * (lam + 2.0 * mu))
    assert 0.9 * confined < sag < 1.1 * unconfined


# -- gradients ---------------------------------------------------------------------------------------------
def hanging_block():
    """A 2 x 1 x 1 soft block (float64) clamped at its left face, sagging and swinging under
    gravity with an initial sideways velocity; no ground."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_soft_grid((0.0, 0.5, 0.0), (0, 0, 0, 1), (0.0, 0.0, 0.3), 2, 1, 1, 0.1, 0.1, 0.1, density=500.0,
                    k_mu=2.0e3, k_lambda=3.0e3, k_damp=5.0, fix_left=True)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    model.tets.k_mu.assign(model.tets.k_mu.numpy() * np.linspace(0.8, 1.2, model.tet_count))
    return model


BLOCK_STEPS, BLOCK_DT = 40, 2e-3


def block_loss(model):
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), BLOCK_STEPS, BLOCK_DT)
    w = np.tile([0.3, 1.0, -0.5], (model.particle_count, 1)) * np.linspace(-1.0, 1.0, model.particle_count)[:, None]
    return position_loss(states[-1].particle_q, w)


@pytest.mark.parametrize("field", ["k_mu", "k_lambda", "k_damp"])
def test_rollout_gradient_with_respect_to_a_material_parameter_matches_finite_differences(field):
    model = hanging_block()
    with sk.Tape() as tape:
        loss = block_loss(model)
    tape.backward(loss=loss)
    grad = getattr(model.tets, field).grad.numpy().copy()
    assert np.abs(grad).max() > 1e-9
    values = getattr(model.tets, field).numpy()
    eps = 1e-5 * values.mean()
    for t in range(model.tet_count):
        fd = central_difference(lambda: float(block_loss(model).numpy()[0]), values, t, eps)
        assert grad[t] == pytest.approx(fd, rel=1e-5, abs=1e-5 * np.abs(grad).max())
