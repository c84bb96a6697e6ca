"""The XPBD integrator: analytic motion, constraints, contact and friction, resting cloth and
soft bodies, and gradients through rollouts against central finite differences (float64)."""

import functools

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference, position_loss, spring_triangle
from simkit.kernels.xpbd import polar_rotation
from simkit.sim.xpbd import XPBD

G = 9.81


def run(model, steps, dt, integrator=None, state=None, control=None):
    """The state after ``steps`` steps, stepping back and forth between two states."""
    return sk.sim.simulate(model, integrator or XPBD(), state or model.state(), steps, dt, control=control,
                           keep_states=False)[-1]


def single_particle(pos, vel, ground=True, mu=0.5, radius=0.05, gravity=-G):
    b = sk.sim.ModelBuilder(gravity=gravity, ground=ground, contact_mu=mu)
    b.add_particle(pos, vel, mass=1.0, radius=radius)
    return b


# -- free motion and distance constraints ---------------------------------------------------

def test_free_flight_follows_the_analytic_projectile_to_first_order_in_dt():
    x0, v0, t = np.array([0.0, 1.0, 0.0]), np.array([1.0, 2.0, -0.5]), 1.0
    g = np.array([0.0, -G, 0.0])
    model = single_particle(x0, v0, ground=False).finalize(dtype=sk.float64)
    errors = []
    for dt in (2e-3, 1e-3):
        s = run(model, round(t / dt), dt)
        np.testing.assert_allclose(s.particle_qd.numpy()[0], v0 + g * t, atol=1e-9)
        errors.append(np.linalg.norm(s.particle_q.numpy()[0] - (x0 + v0 * t + 0.5 * g * t * t)))
    # x += v_{n+1} dt lags the parabola by g t dt / 2: halving dt halves the error
    assert errors[1] == pytest.approx(0.5 * G * t * 1e-3, rel=1e-6)
    assert errors[0] / errors[1] == pytest.approx(2.0, rel=1e-6)


def test_a_kinematic_particle_moves_with_its_velocity_and_ignores_gravity_and_springs():
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.5, 0.0, 0.0), mass=0.0)
    b.add_particle((0.0, -1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_spring(0, 1, ke=1e4, kd=0.0)
    s = run(b.finalize(dtype=sk.float64), 200, 5e-3)
    np.testing.assert_allclose(s.particle_q.numpy()[0], [0.5, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(s.particle_qd.numpy()[0], [0.5, 0.0, 0.0], atol=1e-12)


@functools.cache
def pendulum_swing(length=1.0, angle=np.radians(5.0), dt=1e-3, steps=4500):
    """x coordinate and length of a rigid-rod pendulum (ke = 1e8) at every step."""
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((length * np.sin(angle), -length * np.cos(angle), 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_spring(0, 1, ke=1e8, kd=0.0)
    model = b.finalize(dtype=sk.float64)
    integrator, a, c = XPBD(), model.state(), model.state()
    q = np.empty((steps, 3))
    for k in range(steps):
        integrator.step(model, a, c, None, dt)
        a, c = c, a
        q[k] = a.particle_q.numpy()[1]
    return q[:, 0], np.linalg.norm(q, axis=1)


def test_a_stiff_distance_constraint_keeps_the_pendulum_length():
    _x, length = pendulum_swing()
    assert np.abs(length - 1.0).max() < 1e-5


def test_a_small_angle_pendulum_swings_with_period_two_pi_sqrt_l_over_g():
    x, _length = pendulum_swing()
    up = [i + x[i] / (x[i] - x[i + 1]) for i in range(len(x) - 1) if x[i] < 0.0 <= x[i + 1]]
    assert len(up) >= 2
    period = (up[-1] - up[0]) / (len(up) - 1) * 1e-3
    # the finite 5 degree amplitude lengthens the period by theta^2 / 16 = 0.05 %
    assert period == pytest.approx(2.0 * np.pi * np.sqrt(1.0 / G), rel=0.005)


def test_a_mass_hanging_on_a_compliant_spring_stretches_it_by_m_g_over_ke():
    # compliance 1 / ke: the static stretch is the same as for a force-based spring
    m, ke = 0.5, 200.0
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.0, -1.0, 0.0), (0.0, 0.0, 0.0), mass=m)
    b.add_spring(0, 1, ke=ke, kd=5.0)
    s = run(b.finalize(dtype=sk.float64), 3000, 2e-3)
    assert -s.particle_q.numpy()[1, 1] - 1.0 == pytest.approx(m * G / ke, rel=1e-3)


def test_spring_damping_decays_an_oscillation_at_rate_kd_over_two_m():
    # XPBD's own (implicit) damping adds about omega^2 dt / 2 = 0.01 / s here
    m, ke, kd, dt = 0.5, 50.0, 1.0, 2e-4
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((1.1, 0.0, 0.0), (0.0, 0.0, 0.0), mass=m)
    b.add_spring(0, 1, ke=ke, kd=kd, rest_length=1.0)
    model = b.finalize(dtype=sk.float64)
    integrator, a, c = XPBD(), model.state(), model.state()
    x = np.empty(10_000)
    for k in range(len(x)):
        integrator.step(model, a, c, None, dt)
        a, c = c, a
        x[k] = a.particle_q.numpy()[1, 0] - 1.0
    peaks = [k for k in range(1, len(x) - 1) if x[k - 1] < x[k] >= x[k + 1] and x[k] > 0.0]
    assert len(peaks) >= 3
    rate = -np.polyfit(np.array(peaks) * dt, np.log(x[peaks]), 1)[0]
    assert rate == pytest.approx(kd / (2.0 * m), rel=0.03)


def test_spring_activation_moves_the_rest_length_to_rest_length_times_one_plus_activation():
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_spring(0, 1, ke=1e3, kd=20.0)
    model = b.finalize(dtype=sk.float64)
    control = model.control()
    control.spring_activation.assign(np.array([0.2]))
    s = run(model, 1000, 2e-3, control=control)
    assert s.particle_q.numpy()[1, 0] == pytest.approx(1.2, abs=1e-6)


# -- contact and friction -------------------------------------------------------------------

def test_a_particle_dropped_on_the_ground_rests_at_its_radius():
    model = single_particle((0.3, 0.5, -0.2), (0.0, 0.0, 0.0), radius=0.05).finalize(dtype=sk.float64)
    s = run(model, 500, 2e-3)
    np.testing.assert_allclose(s.particle_q.numpy()[0], [0.3, 0.05, -0.2], atol=1e-9)
    np.testing.assert_allclose(s.particle_qd.numpy()[0], 0.0, atol=1e-9)


@pytest.mark.parametrize("shape, top", [
    ("sphere", 0.5),     # center (0, 0.2, 0), radius 0.3
    ("box", 0.4),        # center (0, 0.2, 0), half extents (0.5, 0.2, 0.5)
    ("capsule", 0.3),    # horizontal segment through (0, 0.2, 0), radius 0.1
])
def test_a_particle_dropped_on_a_static_shape_rests_on_its_surface(shape, top):
    b = single_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), ground=False, radius=0.05)
    if shape == "sphere":
        b.add_shape_sphere((0.0, 0.2, 0.0), radius=0.3)
    elif shape == "box":
        b.add_shape_box((0.0, 0.2, 0.0), (0.0, 0.0, 0.0, 1.0), (0.5, 0.2, 0.5))
    else:
        b.add_shape_capsule((0.0, 0.2, 0.0), (0.0, 0.0, np.sqrt(0.5), np.sqrt(0.5)), radius=0.1, half_height=0.5)
    s = run(b.finalize(dtype=sk.float64), 500, 2e-3)
    np.testing.assert_allclose(s.particle_q.numpy()[0], [0.0, top + 0.05, 0.0], atol=1e-9)
    np.testing.assert_allclose(s.particle_qd.numpy()[0], 0.0, atol=1e-9)


def test_a_sliding_particle_stops_after_v_squared_over_two_mu_g():
    v, mu = 2.0, 0.4
    model = single_particle((0.0, 0.05, 0.0), (v, 0.0, 0.0), mu=mu, radius=0.05).finalize(dtype=sk.float64)
    s = run(model, 800, 1e-3)
    np.testing.assert_allclose(s.particle_qd.numpy()[0], 0.0, atol=1e-12)
    assert s.particle_q.numpy()[0, 0] == pytest.approx(v * v / (2.0 * mu * G), rel=0.05)


# -- cloth and soft bodies ------------------------------------------------------------------

def edge_lengths(q, tris):
    return np.linalg.norm(q[tris] - q[np.roll(tris, 1, axis=1)], axis=2)


def test_a_pinned_cloth_drapes_onto_the_ground_and_comes_to_rest():
    # a 1 m sheet held at one edge 0.3 m up swings down, lands and lies still, friction
    # and inelastic contact taking its energy
    n, dt = 16, 4e-3
    b = sk.sim.ModelBuilder(gravity=-G, ground=True, contact_mu=0.5)
    b.add_cloth_grid((0.0, 0.3, 0.0), (np.sqrt(0.5), 0.0, 0.0, np.sqrt(0.5)), (0.0, 0.0, 0.0), n, n, 1.0 / n,
                     1.0 / n, mass=1.0 / n ** 2, fix_left=True, k_mu=1e3, k_lambda=1e3, edge_ke=0.01)
    model = b.finalize()
    mass = model.particles.mass.numpy()
    tris = model.triangles.indices.numpy()
    rest = edge_lengths(model.particle_q.numpy(), tris)
    integrator, a, c = XPBD(), model.state(), model.state()
    peak = 0.0
    for _ in range(750):
        integrator.step(model, a, c, None, dt)
        a, c = c, a
        v = a.particle_qd.numpy()
        peak = max(peak, 0.5 * float(mass @ (v * v).sum(axis=1)))
    q, v = a.particle_q.numpy(), a.particle_qd.numpy()
    assert np.isfinite(q).all()
    assert 0.5 * float(mass @ (v * v).sum(axis=1)) < 1e-4 * peak
    assert q[:, 1].min() >= 0.01 - 1e-6                        # nothing sank into the ground
    far_edge = q[n::n + 1]
    np.testing.assert_allclose(far_edge[:, 1], 0.01, atol=1e-3)  # the free edge lies on the ground
    assert far_edge[:, 0].max() < 1.0                           # short of full length: the rest hangs
    assert (edge_lengths(q, tris) / rest).max() < 1.1           # and nothing is torn apart


def tet_volume(q, tets):
    e = q[tets[:, 1:]] - q[tets[:, :1]]
    return np.linalg.det(e).sum() / 6.0


def test_a_soft_cube_falls_and_rests_on_the_ground_with_its_volume_within_five_percent():
    b = sk.sim.ModelBuilder(gravity=-G, ground=True, contact_mu=0.5)
    b.add_soft_grid((0.0, 0.1, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 3, 3, 3, 0.1, 0.1, 0.1,
                    density=1000.0, k_mu=1e4, k_lambda=1e5, k_damp=0.005, radius=0.01)
    model = b.finalize()
    tets = model.tets.indices.numpy()
    rest = tet_volume(model.particle_q.numpy(), tets)
    s = run(model, 750, 2e-3)
    q = s.particle_q.numpy()
    assert np.abs(s.particle_qd.numpy()).max() < 0.05
    assert q[:, 1].min() == pytest.approx(0.01, abs=1e-4)
    assert q[:, 1].max() > 0.27                                # it sags a little, it does not collapse
    assert tet_volume(q, tets) == pytest.approx(rest, rel=0.05)


# -- gradients --------------------------------------------------------------------------------

STEPS, DT = 30, 1e-2
W = np.array([[0.0, 0.0, 0.0], [0.3, -1.0, 0.7], [1.0, 0.5, -0.4]])


def rollout_loss(model, state=None, controls=None, weights=W, steps=STEPS):
    states = sk.sim.simulate(model, XPBD(), state or model.state(), steps, DT, control=controls)
    return position_loss(states[-1].particle_q, weights)


def loss_value(*args, **kwargs) -> float:
    return float(rollout_loss(*args, **kwargs).numpy()[0])


def cloth_and_block():
    """A pinned soft block and a pinned 2x2 cloth with bending: every elastic constraint kind."""
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    b.add_soft_grid((0.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 1, 1, 1, 0.2, 0.2, 0.2, density=100.0,
                    k_mu=2e3, k_lambda=5e3, k_damp=0.01, fix_top=True)
    b.add_cloth_grid((0.5, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 2, 2, 0.2, 0.2, mass=0.05,
                     fix_top=True, k_mu=50.0, k_lambda=80.0, k_damp=0.01, edge_ke=0.05, edge_kd=0.01)
    return b.finalize(dtype=sk.float64, requires_grad=True)


def test_gradients_through_membranes_hinges_and_tetrahedra_match_finite_differences():
    # starting at rest, where a scalar |F - R| constraint would not be differentiable
    model = cloth_and_block()
    weights = np.random.default_rng(0).normal(size=(model.particle_count, 3))
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = rollout_loss(model, s0, weights=weights, steps=20)
    tape.backward(loss=loss)
    for name, values in [("tets.k_mu", model.tets.k_mu), ("tets.k_lambda", model.tets.k_lambda),
                         ("triangles.k_mu", model.triangles.k_mu), ("triangles.k_lambda", model.triangles.k_lambda),
                         ("edges.ke", model.edges.ke), ("particle_qd", s0.particle_qd)]:
        grad, data = values.grad.numpy(), values.numpy()
        for index in [(1, 0), (2, 1), (12, 2)] if name == "particle_qd" else [0, 1]:
            fd = central_difference(lambda: loss_value(model, s0, weights=weights, steps=20), data, index,
                                    1e-6 if name == "particle_qd" else 1e-3 * data[index])
            assert grad[index] == pytest.approx(fd, rel=1e-5, abs=1e-12), name


def test_gradient_with_respect_to_the_friction_coefficient_matches_finite_differences():
    b = single_particle((0.0, 0.05, 0.0), (2.0, 0.0, 1.0), mu=0.4, radius=0.05)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    weights = np.array([[1.0, 0.0, 0.5]])
    with sk.Tape() as tape:
        loss = rollout_loss(model, weights=weights)
    tape.backward(loss=loss)
    fd = central_difference(lambda: loss_value(model, weights=weights), model.contact.mu.numpy(), 0, 1e-6)
    assert abs(fd) > 1e-3   # still sliding: the distance depends on mu
    assert model.contact.mu.grad.numpy()[0] == pytest.approx(fd, rel=1e-5)


@sk.kernel
def polar_loss(F: sk.array(dtype=sk.mat33d), W: sk.array(dtype=sk.mat33d), loss: sk.array(dtype=sk.float64)):
    R = polar_rotation(F[0])
    sk.atomic_add(loss, 0, sk.trace(sk.transpose(W[0]) @ R))


def test_the_gradient_of_the_polar_rotation_matches_finite_differences():
    # rotated by a large angle and stretched unevenly, where R depends on F strongly
    rng = np.random.default_rng(3)
    axis = rng.normal(size=3)
    angle = 2.0
    K = np.cross(np.eye(3), axis / np.linalg.norm(axis))
    rot = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
    F_np = rot @ np.diag([1.7, 0.6, 1.1]) + 0.1 * rng.normal(size=(3, 3))
    F = sk.from_numpy(F_np[None], dtype=sk.mat33d, requires_grad=True)
    W = sk.from_numpy(rng.normal(size=(1, 3, 3)), dtype=sk.mat33d)

    def value():
        loss = sk.zeros(1, dtype=sk.float64)
        sk.launch(polar_loss, 1, inputs=[F, W, loss])
        return float(loss.numpy()[0])

    loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(polar_loss, 1, inputs=[F, W, loss])
    tape.backward(loss=loss)
    data = F.numpy()
    for index in [(0, r, c) for r in range(3) for c in range(3)]:
        fd = central_difference(value, data, index, 1e-6)
        assert F.grad.numpy()[index] == pytest.approx(fd, rel=1e-6, abs=1e-9)


# -- buffers and the tape ---------------------------------------------------------------------

def test_a_tape_accepts_backward_through_a_rollout_with_one_state_per_step():
    model = cloth_and_block()
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        states = sk.sim.simulate(model, XPBD(iterations=3), s0, 5, DT)
        loss = position_loss(states[-1].particle_q, np.ones((model.particle_count, 3)))
    tape.backward(loss=loss)
    grad = s0.particle_q.grad.numpy()
    assert np.isfinite(grad).all()
    assert np.abs(grad).max() > 0.0


def test_a_tape_refuses_backward_through_steps_that_reuse_the_same_two_states():
    model = spring_triangle(ground=False)
    a, b = model.state(requires_grad=True), model.state(requires_grad=True)
    integrator = XPBD()
    with sk.Tape() as tape:
        integrator.step(model, a, b, None, DT)
        integrator.step(model, b, a, None, DT)
        integrator.step(model, a, b, None, DT)
        loss = position_loss(b.particle_q, W)
    with pytest.raises(RuntimeError, match="overwrote"):
        tape.backward(loss=loss)


def test_stepping_back_and_forth_between_two_states_matches_one_state_per_step():
    # the per-state buffers are reused: their accumulators must start from zero each step
    model = cloth_and_block()
    kept = sk.sim.simulate(model, XPBD(), model.state(), 10, DT)[-1]
    reused = run(model, 10, DT)
    np.testing.assert_allclose(reused.particle_q.numpy(), kept.particle_q.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(reused.particle_qd.numpy(), kept.particle_qd.numpy(), rtol=0, atol=1e-10)


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("iterations", [0, -2, 2.5, True, "4"])
def test_iterations_must_be_a_positive_int(iterations):
    with pytest.raises(ValueError, match="iterations must be an int >= 1"):
        XPBD(iterations=iterations)


@pytest.mark.parametrize("dt", [0.0, -1e-3, float("nan")])
def test_a_non_positive_time_step_is_refused(dt):
    model = single_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0)).finalize()
    with pytest.raises(ValueError, match="dt must be a finite number > 0"):
        XPBD().step(model, model.state(), model.state(), None, dt)


def test_particle_particle_contact_is_refused_instead_of_ignored():
    b = sk.sim.ModelBuilder(gravity=-G, ground=True, particle_contact=True)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize()
    with pytest.raises(NotImplementedError, match="particle-particle contact"):
        XPBD().step(model, model.state(), model.state(), None, 1e-3)
