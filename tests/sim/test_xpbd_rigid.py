"""Rigid bodies in the XPBD integrator against physics: free flight and torque-free tumbling,
resting and sliding contact, joints (pendulum period, hanging chain, weld, slider, limits,
drives, actuation), particles against bodies, gradients through rollouts against central
finite differences (float64), and the CUDA path of every new kernel."""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference
from simkit.sim.geometry import quat_multiply, quat_rotate, quat_to_matrix
from simkit.sim.xpbd import XPBD

G = 9.81
IDENTITY = (0.0, 0.0, 0.0, 1.0)
DENSITY = 1000.0
PIVOT = (0.0, 1.0, 0.0)
ROD_HALF = (0.02, 0.25, 0.02)      # a pendulum rod hanging from its top face


def z_rotation(angle):
    return (0.0, 0.0, math.sin(0.5 * angle), math.cos(0.5 * angle))


def final_state(model, steps, dt, iterations=4, control=None):
    """The state after ``steps`` XPBD steps from the model's initial state."""
    return sk.sim.simulate(model, XPBD(iterations), model.state(), steps, dt, control=control,
                           keep_states=False)[-1]


def poses(model, steps, dt, control=None):
    """``body_q`` after every step, shape ``(steps, bodies, 7)``."""
    integrator, a, b = XPBD(), model.state(), model.state()
    out = np.empty((steps, model.body_count, 7))
    for k in range(steps):
        integrator.step(model, a, b, control, dt)
        a, b = b, a
        out[k] = a.body_q.numpy()
    return out


def centers_of_mass(model, X):
    """World centers of mass of the bodies at poses ``X`` (bodies, 7)."""
    return np.array([x[:3] + quat_rotate(x[3:], c) for x, c in zip(X, model.bodies.com.numpy())])


def hinge_angle(X):
    """Angle about z of a body pose whose rotation is about z."""
    return 2.0 * math.atan2(X[5], X[6])


def rod_pendulum(angle=0.0, angular_velocity=0.0, gravity=-G, requires_grad=False, **joint):
    """A rod hanging from ``PIVOT`` on a revolute joint about z, turned by ``angle``."""
    b = sk.sim.ModelBuilder(gravity=gravity, ground=False)
    rod = b.add_body(sk.transform(PIVOT, z_rotation(angle)), angular_velocity=(0.0, 0.0, angular_velocity))
    b.add_shape_box((0.0, -ROD_HALF[1], 0.0), IDENTITY, ROD_HALF, body=rod, density=DENSITY)
    b.add_joint_revolute(-1, rod, axis=(0.0, 0.0, 1.0), **joint)
    return b.finalize(dtype=sk.float64, requires_grad=requires_grad)


def rod_pivot_inertia(model):
    """Mass, distance of the center of mass from the pivot, and inertia about the pivot (z)."""
    m = model.bodies.mass.numpy()[0]
    d = ROD_HALF[1]
    return m, d, model.bodies.inertia.numpy()[0][2, 2] + m * d * d


# -- free motion ----------------------------------------------------------------------------

def test_a_free_body_falls_along_the_analytic_parabola_to_first_order_in_dt():
    # the center of mass (off the body origin) follows the projectile however the body spins
    x0, v0, t = np.array([0.0, 1.0, 0.0]), np.array([1.0, 2.0, -0.5]), 0.5
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    body = b.add_body(sk.transform(tuple(x0), IDENTITY), velocity=tuple(v0), angular_velocity=(0.3, 4.0, -1.0))
    b.add_shape_box((0.1, 0.0, 0.0), IDENTITY, (0.1, 0.05, 0.2), body=body)
    model = b.finalize(dtype=sk.float64)
    com0 = model.bodies.com.numpy()[0]
    errors = []
    for dt in (2e-3, 1e-3):
        s = final_state(model, round(t / dt), dt)
        com = centers_of_mass(model, s.body_q.numpy())[0]
        np.testing.assert_allclose(s.body_qd.numpy()[0, 3:], v0 + np.array([0.0, -G, 0.0]) * t, atol=1e-9)
        errors.append(np.linalg.norm(com - (x0 + com0 + v0 * t + 0.5 * np.array([0.0, -G, 0.0]) * t * t)))
    # x += v_{n+1} dt lags the parabola by g t dt / 2, as for particles
    assert errors[1] == pytest.approx(0.5 * G * t * 1e-3, rel=1e-6)
    assert errors[0] / errors[1] == pytest.approx(2.0, rel=1e-6)


def test_torque_free_tumbling_conserves_angular_momentum_and_keeps_the_quaternion_unit():
    # spun near its intermediate axis, the box turns over (its y axis ends pointing down), while
    # its angular momentum stays put: the rotation is implicit in the momentum
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    box = b.add_body(sk.transform((0.0, 1.0, 0.0), IDENTITY), angular_velocity=(0.3, 6.0, 0.2))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.2, 0.3), body=box, density=500.0)
    model = b.finalize(dtype=sk.float64)
    inertia = model.bodies.inertia.numpy()[0]

    def momentum(state):
        R = quat_to_matrix(state.body_q.numpy()[0, 3:])
        return R @ inertia @ R.T @ state.body_qd.numpy()[0, :3]

    s = final_state(model, 2000, 1e-3)
    L0 = momentum(model.state())
    assert np.linalg.norm(momentum(s) - L0) < 1e-4 * np.linalg.norm(L0)      # measured 1.4e-5
    assert abs(np.linalg.norm(s.body_q.numpy()[0, 3:]) - 1.0) < 1e-12
    assert quat_rotate(s.body_q.numpy()[0, 3:], np.array([0.0, 1.0, 0.0]))[1] < -0.9


# -- contact and friction -------------------------------------------------------------------

def test_a_box_dropped_on_a_corner_comes_to_rest_flat_on_the_ground():
    tilt = quat_multiply(np.array(z_rotation(0.5)), np.array([np.sin(0.2), 0.0, 0.0, np.cos(0.2)]))
    b = sk.sim.ModelBuilder(gravity=-G, ground=True)
    box = b.add_body(sk.transform((0.0, 0.5, 0.0), tuple(tilt)), angular_velocity=(0.5, 0.0, 0.3))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.1, 0.1), body=box, density=500.0)
    s = final_state(b.finalize(dtype=sk.float64), 750, 2e-3)
    X = s.body_q.numpy()[0]
    assert X[1] == pytest.approx(0.1, abs=1e-5)
    # one face down: some body axis is vertical
    assert max(abs(quat_rotate(X[3:], e)[1]) for e in np.eye(3)) > 1.0 - 1e-8
    np.testing.assert_allclose(s.body_qd.numpy()[0], 0.0, atol=1e-9)


def slope(theta, mu):
    """A cube resting on a static slab tilted by ``theta`` about z, both with friction ``mu``;
    returns the model, the cube's start and the downhill direction."""
    q = np.array(z_rotation(theta))
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    b.add_shape_box((0.0, 0.0, 0.0), q, (2.0, 0.1, 1.0), mu=mu)
    start = quat_rotate(q, np.array([0.0, 0.2, 0.0]))
    cube = b.add_body(sk.transform(tuple(start), tuple(q)))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.1, 0.1), body=cube, density=500.0, mu=mu)
    return b.finalize(dtype=sk.float64), start, quat_rotate(q, np.array([-1.0, 0.0, 0.0]))


def test_a_box_on_a_slope_sticks_when_mu_exceeds_tan_theta():
    model, start, downhill = slope(0.4, 0.5)             # tan(0.4) = 0.42
    X = poses(model, 500, 2e-3)[:, 0, :3]
    assert np.abs((X - start) @ downhill).max() < 1e-4   # settling into contact: 1.8e-5 m
    assert abs((X[-1] - X[-100]) @ downhill) < 1e-9      # then not moving at all


def test_a_box_on_a_slope_slides_with_acceleration_g_sin_theta_minus_mu_g_cos_theta():
    theta, mu, dt = 0.4, 0.3, 2e-3
    model, start, downhill = slope(theta, mu)
    s = (poses(model, 400, dt)[:, 0, :3] - start) @ downhill
    acceleration = np.diff(s, 2)[-200:].mean() / (dt * dt)
    assert acceleration == pytest.approx(G * (math.sin(theta) - mu * math.cos(theta)), rel=1e-5)


def test_a_box_resting_off_center_on_a_static_box_stays_put():
    # the points of both boxes meet in one patch, whose friction holds the box still
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    b.add_shape_box((0.0, 0.1, 0.0), IDENTITY, (0.1, 0.1, 0.1))
    box = b.add_body(sk.transform((0.025, 0.28, 0.0), IDENTITY))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.08, 0.08, 0.08), body=box, density=500.0)
    s = final_state(b.finalize(dtype=sk.float64), 600, 2e-3)
    np.testing.assert_allclose(s.body_q.numpy()[0, :3], (0.025, 0.28, 0.0), atol=1e-5)
    np.testing.assert_allclose(s.body_qd.numpy()[0], 0.0, atol=1e-9)



def test_a_stack_of_five_boxes_stays_stacked_for_ten_seconds():
    # the oracle: 10 s at dt = 2e-3 (5000 steps), every box within 1 mm of where it started
    half, n = 0.1, 5
    b = sk.sim.ModelBuilder(gravity=-G, ground=True)
    for i in range(n):
        box = b.add_body(sk.transform((0.0, half + 2.0 * half * i, 0.0), IDENTITY))
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (half, half, half), body=box, density=125.0, mu=0.8)
    model = b.finalize(dtype=sk.float64)
    start = model.state().body_q.numpy()
    X = final_state(model, 5000, 2e-3).body_q.numpy()
    assert np.abs(X[:, :3] - start[:, :3]).max() < 1e-3
    assert np.abs(X[:, 3:] - start[:, 3:]).max() < 1e-3      # and none of them turned

# -- joints ---------------------------------------------------------------------------------

def test_a_revolute_pendulum_swings_with_period_two_pi_sqrt_i_over_m_g_d():
    model = rod_pendulum(np.radians(5.0))
    m, d, inertia = rod_pivot_inertia(model)
    X = poses(model, 3000, 1e-3)[:, 0]
    angle = np.array([hinge_angle(x) for x in X])
    up = [k + angle[k] / (angle[k] - angle[k + 1]) for k in range(len(angle) - 1) if angle[k] < 0.0 <= angle[k + 1]]
    period = (up[-1] - up[0]) / (len(up) - 1) * 1e-3
    # the 5 degree amplitude lengthens the period by theta^2 / 16 = 0.05 %; measured 0.045 %
    assert period == pytest.approx(2.0 * np.pi * np.sqrt(inertia / (m * G * d)), rel=2e-3)
    assert np.abs(X[:, :3] - PIVOT).max() < 1e-9                # the pivot does not move


def test_a_chain_of_five_links_hangs_straight_with_joint_error_below_a_millimetre():
    length, b = 0.2, sk.sim.ModelBuilder(gravity=-G, ground=False)
    for i in range(5):
        link = b.add_body(sk.transform((0.0, 2.0 - i * length, 0.0), IDENTITY))
        b.add_shape_box((0.0, -0.5 * length, 0.0), IDENTITY, (0.02, 0.5 * length, 0.02), body=link, density=DENSITY)
        if i == 0:
            b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0))
        else:
            b.add_joint_revolute(i - 1, link, parent_xform=sk.transform((0.0, -length, 0.0), IDENTITY),
                                 axis=(0.0, 0.0, 1.0))
    X = final_state(b.finalize(dtype=sk.float64), 2000, 1e-3).body_q.numpy()
    ends = X[:, :3] + np.array([quat_rotate(x[3:], np.array([0.0, -length, 0.0])) for x in X])
    errors = np.linalg.norm(X[1:, :3] - ends[:-1], axis=1)
    assert errors.max() < 1e-3                                      # measured 3.7e-5
    assert np.linalg.norm(X[0, :3] - (0.0, 2.0, 0.0)) < 1e-3
    np.testing.assert_allclose(X[:, [0, 2]], 0.0, atol=1e-12)       # straight down
    np.testing.assert_allclose(X[:, 3:6], 0.0, atol=1e-12)


def test_a_fixed_joint_welds_two_bodies_into_one():
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    base = b.add_body(sk.transform((0.0, 1.0, 0.0), IDENTITY), velocity=(1.0, 0.0, 0.0),
                      angular_velocity=(0.0, 0.5, 2.0))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.1, 0.1), body=base, density=DENSITY)
    tip = b.add_body(sk.transform((0.3, 1.1, 0.0), z_rotation(0.3)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.05, body=tip, density=3000.0)
    b.add_joint_fixed(base, tip)
    model = b.finalize(dtype=sk.float64)

    def relative(X):
        inverse = np.concatenate([-X[0, 3:6], X[0, 6:]])
        return np.concatenate([quat_rotate(inverse, X[1, :3] - X[0, :3]), quat_multiply(inverse, X[1, 3:])])

    rel0 = relative(model.state().body_q.numpy())
    for X in poses(model, 500, 2e-3)[::50]:
        np.testing.assert_allclose(relative(X), rel0, atol=1e-7)


def test_a_prismatic_joint_slides_along_its_axis_and_stops_at_its_upper_limit():
    dt, axis = 1e-3, np.array([math.cos(math.radians(30.0)), -math.sin(math.radians(30.0)), 0.0])
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    cart = b.add_body(sk.transform(PIVOT, IDENTITY))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.05, 0.05, 0.05), body=cart, density=DENSITY)
    b.add_joint_prismatic(-1, cart, axis=tuple(axis), limit_lower=-0.1, limit_upper=0.3)
    X = poses(b.finalize(dtype=sk.float64), 1000, dt)[:, 0]
    x = X[:, :3] - PIVOT
    along = x @ axis
    t = 0.2
    # g sin(30 deg) along the axis (first order in dt, as in free flight)
    assert along[round(t / dt) - 1] == pytest.approx(0.25 * G * t * t + 0.25 * G * t * dt, rel=1e-6)
    assert np.abs(x - np.outer(along, axis)).max() < 1e-12        # never off the axis
    np.testing.assert_allclose(X[:, 3:], np.tile(IDENTITY, (len(X), 1)), atol=1e-12)   # never turning
    assert along.max() < 0.3 + 1e-9
    assert along[-1] == pytest.approx(0.3, abs=1e-9)


def test_a_revolute_limit_stops_the_swing_at_its_lower_bound():
    # released horizontal, the rod swings down and rests on its limit at -0.5 rad
    model = rod_pendulum(np.pi / 2, limit_lower=-0.5, limit_upper=0.5)
    X = poses(model, 2000, 1e-3)[:, 0]
    angle = np.array([hinge_angle(x) for x in X]) - np.pi / 2     # the joint starts at 0
    assert angle.min() > -0.5 - 1e-6
    assert angle[-1] == pytest.approx(-0.5, abs=1e-6)
    assert np.linalg.norm(X[:, :3] - PIVOT, axis=1).max() < 1e-3  # impact on the limit: 0.5 mm


def outside_its_range(start, lower, upper):
    """The rod without gravity, at rest, its hinge at ``start`` with limits ``[lower, upper]``."""
    return rod_pendulum(start, gravity=0.0, parent_xform=sk.transform(PIVOT, IDENTITY), limit_lower=lower,
                        limit_upper=upper)


@pytest.mark.parametrize("start, lower, upper, nearest", [(0.0, 0.3, 0.6, 0.3), (0.9, 0.3, 0.6, 0.6),
                                                          (0.0, -0.6, -0.3, -0.3), (-0.9, -0.6, -0.3, -0.6)])
def test_a_hinge_started_outside_its_range_is_projected_onto_its_nearest_bound(start, lower, upper, nearest):
    # one rigid constraint on one body converges in one iteration: the first step ends on the
    # bound (the 0.3 rad turn is applied to first order, renormalized: 2e-4 rad short)
    X = final_state(outside_its_range(start, lower, upper), 1, 1e-3).body_q.numpy()[0]
    assert hinge_angle(X) == pytest.approx(nearest, abs=3e-4)


@pytest.mark.parametrize("dt", [1e-3, 1e-4])
def test_a_hinge_projected_onto_its_bound_leaves_it_at_the_violation_over_dt(dt):
    # XPBD's velocity is the step's displacement over dt, the projection's included: a start
    # 0.3 rad outside the range leaves the bound at 0.3 / dt into the range, at any dt
    state = final_state(outside_its_range(0.0, 0.3, 0.6), 1, dt)
    assert state.body_qd.numpy()[0, 2] * dt == pytest.approx(0.3, rel=1e-2)


def test_a_drive_turns_the_joint_to_its_target_angle():
    model = rod_pendulum(gravity=0.0, target_ke=5.0, target_kd=0.5)
    control = model.control()
    control.joint_target.assign(np.array([0.8]))
    X = final_state(model, 3000, 1e-3, control=control).body_q.numpy()[0]
    assert hinge_angle(X) == pytest.approx(0.8, abs=1e-4)


def test_a_drive_holds_against_gravity_where_its_torque_balances_the_weight():
    # compliance 1 / target_ke: target_ke (target - theta) = m g d sin(theta) at rest
    ke, target = 50.0, 0.8
    model = rod_pendulum(target_ke=ke, target_kd=5.0)
    control = model.control()
    control.joint_target.assign(np.array([target]))
    m, d, _inertia = rod_pivot_inertia(model)
    theta = target
    for _ in range(50):
        theta -= (ke * (target - theta) - m * G * d * math.sin(theta)) / (-ke - m * G * d * math.cos(theta))
    X = final_state(model, 3000, 1e-3, control=control).body_q.numpy()[0]
    assert hinge_angle(X) == pytest.approx(theta, abs=1e-6)


def test_joint_act_spins_a_wheel_with_angular_acceleration_torque_over_inertia():
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    wheel = b.add_body(sk.transform(PIVOT, IDENTITY))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.2, 0.05, 0.2), body=wheel, density=DENSITY)
    b.add_joint_revolute(-1, wheel, axis=(0.0, 0.0, 1.0))
    model = b.finalize(dtype=sk.float64)
    control = model.control()
    control.joint_act.assign(np.array([0.3]))
    s = final_state(model, 500, 1e-3, control=control)
    assert s.body_qd.numpy()[0, 2] == pytest.approx(0.3 * 0.5 / model.bodies.inertia.numpy()[0][2, 2], rel=1e-9)


# -- particles against bodies ---------------------------------------------------------------

def test_a_particle_striking_a_free_box_shares_its_momentum():
    # inelastic and two-way: both leave with the common velocity m v / (m + M)
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_particle((-0.5, 0.0, 0.0), (2.0, 0.0, 0.0), mass=0.3, radius=0.05)
    box = b.add_body(sk.transform((0.0, 0.0, 0.0), IDENTITY))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.1, 0.1), body=box, density=500.0)
    model = b.finalize(dtype=sk.float64)
    s = final_state(model, 400, 2e-3)
    common = 0.3 * 2.0 / (0.3 + model.bodies.mass.numpy()[0])
    np.testing.assert_allclose(s.particle_qd.numpy()[0], (common, 0.0, 0.0), atol=1e-12)
    np.testing.assert_allclose(s.body_qd.numpy()[0], (0.0, 0.0, 0.0, common, 0.0, 0.0), atol=1e-12)


# -- gradients (float64, central differences) -----------------------------------------------

@sk.kernel
def com_loss64(q: sk.array(dtype=sk.transformd), com: sk.array(dtype=sk.vec3d), w: sk.vec3d,
               loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(sk.transform_point(q[i], com[i]), w))


@sk.kernel
def hinge_angle64(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    X = q[sk.tid()]
    loss[0] = 2.0 * sk.atan2(X.q[2], X.q[3])


def rollout_gradient(model, qd, steps, dt, loss_of):
    """The loss of the final state and its gradient with respect to the initial ``body_qd``."""
    s0 = model.state(requires_grad=True)
    s0.body_qd.assign(qd)
    loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
    with sk.Tape() as tape:
        states = sk.sim.simulate(model, XPBD(), s0, steps, dt)
        loss_of(states[-1], loss)
    tape.backward(loss=loss)
    return loss.numpy()[0], s0.body_qd.grad.numpy().copy()


def rollout_loss(model, qd, steps, dt, loss_of):
    s0 = model.state()
    s0.body_qd.assign(qd)
    loss = sk.zeros(1, dtype=sk.float64)
    loss_of(sk.sim.simulate(model, XPBD(), s0, steps, dt, keep_states=False)[-1], loss)
    return loss.numpy()[0]


def test_gradient_of_a_thrown_box_landing_on_the_ground_matches_finite_differences():
    # thrown tumbling, it lands on a corner (step ~60) and settles on a face: the final center of
    # mass depends on the initial linear and angular velocity through flight, impact and friction
    b = sk.sim.ModelBuilder(gravity=-G, ground=True)
    box = b.add_body(sk.transform((0.0, 0.3, 0.0), (0.1, 0.2, 0.0, math.sqrt(0.95))))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.05, 0.08), body=box, density=500.0, mu=0.6)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    qd = np.array([[0.5, -1.0, 2.0, 1.0, 1.0, 0.3]])
    w = sk.vec3d(0.3, 1.0, -0.5)

    def loss_of(state, loss):
        sk.launch(com_loss64, 1, inputs=[state.body_q, model.bodies.com, w, loss])

    _loss, grad = rollout_gradient(model, qd, 150, 4e-3, loss_of)
    fd = [central_difference(lambda: rollout_loss(model, qd, 150, 4e-3, loss_of), qd, (0, j), 1e-6)
          for j in range(6)]
    np.testing.assert_allclose(grad[0], fd, rtol=1e-3, atol=1e-5)


def test_gradient_of_a_pendulum_angle_with_respect_to_its_initial_angular_velocity_matches_finite_differences():
    model = rod_pendulum(0.3, requires_grad=True)
    qd = np.array([[0.0, 0.0, 1.5, 0.0, 0.0, 0.0]])
    # the initial linear velocity of the center of mass that goes with turning about the pivot
    qd[0, 3:] = np.cross(qd[0, :3], quat_rotate(np.array(z_rotation(0.3)), np.array([0.0, -ROD_HALF[1], 0.0])))

    def loss_of(state, loss):
        sk.launch(hinge_angle64, 1, inputs=[state.body_q, loss])

    _loss, grad = rollout_gradient(model, qd, 150, 2e-3, loss_of)
    fd = central_difference(lambda: rollout_loss(model, qd, 150, 2e-3, loss_of), qd, (0, 2), 1e-5)
    assert grad[0, 2] == pytest.approx(fd, rel=1e-6)
