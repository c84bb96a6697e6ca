"""sk.sim.Featherstone's ball joint position drive (``target_ke`` towards the rotation vector
in ``control.joint_dof_target``), checked against physics: it reaches a target rotation about
a tilted axis, rests where its torque balances gravity's (closed form), rests where it
balances the range limit, stays stable when stiff at a large step (it is implicit), clamps
its torque to ``effort_limit``; gradients against central differences."""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import featherstone_rollout as rollout
from sim_helpers import assert_jvp_matches_differences, finite_difference

F64 = sk.float64
G = 9.81
TILTED = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])


def ball_arm(gravity=0.0, **joint):
    """A sphere (radius 0.1) at x = 1 on a ball joint at the origin; gravity along -y."""
    b = sk.sim.ModelBuilder(gravity=gravity, up_axis="y", ground=False)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((1.0, 0.0, 0.0), 0.1, body=body)
    b.add_joint_ball(-1, body, **joint)
    return b.finalize(dtype=F64, requires_grad=True)


def quaternion(rotation_vector):
    """The quaternion (x, y, z, w) of a rotation vector (axis times angle)."""
    v = np.asarray(rotation_vector, dtype=np.float64)
    angle = np.linalg.norm(v)
    if angle == 0.0:
        return np.array([0.0, 0.0, 0.0, 1.0])
    return np.concatenate([v / angle * math.sin(0.5 * angle), [math.cos(0.5 * angle)]])


def rotation_angle_axis(q):
    """The angle and unit axis of the quaternion ``q`` (x, y, z, w)."""
    q = np.asarray(q) * (1.0 if q[3] >= 0.0 else -1.0)
    s = np.linalg.norm(q[:3])
    return 2.0 * math.atan2(s, q[3]), q[:3] / s


def targeted(model, rotation_vector):
    control = model.control()
    control.joint_dof_target.assign(np.asarray(rotation_vector, dtype=np.float64))
    return control


def state_at(model, rotation_vector, w=(0.0, 0.0, 0.0)):
    state = model.state(requires_grad=True)
    state.joint_q.assign(quaternion(rotation_vector))
    state.joint_qd.assign(np.asarray(w, dtype=np.float64))
    return state


def arm_mass(model):
    return float(model.bodies.mass.numpy()[0])


def test_ball_drive_reaches_a_target_rotation_about_a_tilted_axis():
    # from 0.9 rad about another axis, the way to 0.4 rad about the tilted one
    model = ball_arm(target_ke=50.0, target_kd=30.0)
    start = state_at(model, 0.9 * np.array([0.0, 1.0, 0.0]), w=(1.0, 0.0, -2.0))
    end = rollout(model, start, 8000, 1e-3, targeted(model, 0.4 * TILTED))
    angle, axis = rotation_angle_axis(end.joint_q.numpy())
    assert angle == pytest.approx(0.4, abs=1e-7)
    np.testing.assert_allclose(axis, TILTED, atol=1e-7)
    assert np.max(np.abs(end.joint_qd.numpy())) < 1e-6


def test_ball_drive_takes_the_short_way_round():
    # a target 3 rad about z, started at -3 rad about z: 0.28 rad apart through pi, so the
    # drive's first push turns the arm further negative (the short way), not back through 0
    model = ball_arm(target_ke=50.0, target_kd=30.0)
    s1 = model.state()
    sk.sim.Featherstone().step(model, state_at(model, (0.0, 0.0, -3.0)), s1, targeted(model, (0.0, 0.0, 3.0)), 1e-3)
    w = s1.joint_qd.numpy()
    assert w[2] < 0.0
    np.testing.assert_allclose(w[:2], 0.0, atol=1e-12)


@pytest.mark.parametrize("lift", [0.0, 0.3])
def test_ball_drive_rests_where_its_torque_balances_gravity(lift):
    # a target lifting the arm by `lift` about +z; gravity pulls the mass (at l = 1) down with
    # m g l cos(phi) at the angle phi above the horizontal: at rest ke (lift - phi) = m g l cos(phi)
    ke = 200.0
    model = ball_arm(gravity=-G, target_ke=ke, target_kd=40.0)
    end = rollout(model, model.state(), 6000, 1e-3, targeted(model, (0.0, 0.0, lift)))
    m = arm_mass(model)
    phi = lift
    for _ in range(50):                              # Newton on ke (lift - phi) - m g cos(phi) = 0
        phi -= (ke * (lift - phi) - m * G * math.cos(phi)) / (-ke + m * G * math.sin(phi))
    angle, axis = rotation_angle_axis(end.joint_q.numpy())
    assert phi < lift - 0.1                           # gravity's torque moves it 0.2 rad
    np.testing.assert_allclose(angle * axis, [0.0, 0.0, phi], atol=1e-7)


def test_ball_drive_past_the_range_rests_where_drive_and_limit_balance():
    # a target of 2 rad (beyond pi / 2) against a 0.5 rad range: on the target's axis,
    # ke (2 - angle) = limit_ke (angle - 0.5)
    ke, lke = 50.0, 1e4
    model = ball_arm(limit_angle=0.5, limit_ke=lke, limit_kd=50.0, target_ke=ke, target_kd=20.0)
    end = rollout(model, model.state(), 9000, 1e-3, targeted(model, 2.0 * TILTED))
    angle, axis = rotation_angle_axis(end.joint_q.numpy())
    assert angle == pytest.approx((ke * 2.0 + lke * 0.5) / (ke + lke), abs=1e-8)
    np.testing.assert_allclose(axis, TILTED, atol=1e-7)


def test_stiff_ball_drive_is_stable_at_a_large_step():
    # 1e5 N m/rad on about 4.2 kg m^2: explicitly stable only below dt = 2 sqrt(I / ke) = 0.013 s
    model = ball_arm(target_ke=1e5, target_kd=100.0)
    end = rollout(model, model.state(), 100, 2e-2, targeted(model, 0.4 * TILTED))
    angle, axis = rotation_angle_axis(end.joint_q.numpy())
    assert angle == pytest.approx(0.4, abs=1e-9)
    np.testing.assert_allclose(axis, TILTED, atol=1e-9)
    assert np.max(np.abs(end.joint_qd.numpy())) < 1e-6


def test_ball_drive_torque_is_clamped_to_the_effort_limit():
    # from rest without gravity, the first step's torque M qd / dt: the clamped drive,
    # along the target's axis
    model = ball_arm(target_ke=1e4, target_kd=5.0, effort_limit=2.0)
    dt = 1e-3
    start = state_at(model, (0.0, 0.0, 0.0))
    s1 = model.state()
    sk.sim.Featherstone().step(model, start, s1, targeted(model, 1.0 * TILTED), dt)
    torque = sk.sim.mass_matrix(model, start.joint_q.numpy()) @ s1.joint_qd.numpy() / dt
    np.testing.assert_allclose(torque, 2.0 * TILTED, rtol=1e-10)


def test_zero_stiffness_ignores_the_target():
    model = ball_arm(gravity=-G, target_kd=3.0)
    start = state_at(model, 0.3 * TILTED, w=(0.2, -0.4, 1.0))
    free = rollout(model, start, 50, 1e-3)
    driven = rollout(model, state_at(model, 0.3 * TILTED, w=(0.2, -0.4, 1.0)), 50, 1e-3,
                     targeted(model, 1.2 * TILTED))
    np.testing.assert_array_equal(driven.joint_q.numpy(), free.joint_q.numpy())
    np.testing.assert_array_equal(driven.joint_qd.numpy(), free.joint_qd.numpy())


# (target rotation vector, start rotation vector): a generic case, and target and start both
# at the identity, where the rotation vectors take their series branches
@pytest.mark.parametrize("target, start", [((0.3, -0.2, 0.5), (0.1, 0.4, -0.2)), ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))])
def test_ball_drive_gradient_matches_finite_differences(target, start):
    steps, dt = 30, 2e-3
    weights = np.array([0.4, -1.0, 0.7, 0.2])

    def run(x, tape=None):
        model = ball_arm(gravity=-G, target_ke=x[3], target_kd=2.0)
        control = model.control()
        control.joint_dof_target.requires_grad = True
        control.joint_dof_target.assign(x[:3])
        state = state_at(model, start, w=(0.3, -0.2, 0.5))
        return model, control, rollout(model, state, steps, dt, control, tape=tape)

    x = np.array([*target, 60.0])
    tape = sk.Tape()
    model, control, end = run(x, tape)
    tape.backward(grads={end.joint_q: weights})
    grad = np.concatenate([control.joint_dof_target.grad.numpy(), model.joints.target_ke.grad.numpy()])
    expected = finite_difference(lambda v: float(run(v)[2].joint_q.numpy() @ weights), x)
    assert np.all(np.abs(expected) > 1e-6)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-9)


def test_ball_drive_gradient_through_the_effort_limit_matches_finite_differences():
    steps, dt = 20, 2e-3
    weights = np.array([0.4, -1.0, 0.7, 0.2])

    def run(x, tape=None):
        model = ball_arm(target_ke=x[3], target_kd=2.0, effort_limit=3.0)
        control = model.control()
        control.joint_dof_target.requires_grad = True
        control.joint_dof_target.assign(x[:3])
        return model, control, rollout(model, state_at(model, (0.1, 0.0, 0.0)), steps, dt, control, tape=tape)

    x = np.array([0.6, -0.4, 0.9, 80.0])
    tape = sk.Tape()
    model, control, end = run(x, tape)
    tape.backward(grads={end.joint_q: weights})
    grad = np.concatenate([control.joint_dof_target.grad.numpy(), model.joints.target_ke.grad.numpy()])
    expected = finite_difference(lambda v: float(run(v)[2].joint_q.numpy() @ weights), x)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-9)


def test_ball_drive_errors_are_clear():
    b = sk.sim.ModelBuilder(ground=False)
    b.add_articulation()
    body = b.add_body()
    with pytest.raises(ValueError, match="add_joint_ball: target_ke"):
        b.add_joint_ball(-1, body, target_ke=-1.0)
    with pytest.raises(ValueError, match="add_joint_ball: effort_limit"):
        b.add_joint_ball(-1, body, effort_limit=-2.0)
    j = b.add_joint_ball(-1, body)
    with pytest.raises(ValueError, match="set_joint_drive: target_ke"):
        b.set_joint_drive(j, target_ke=-5.0)
    b.set_joint_drive(j, target_ke=5.0)
    assert b.finalize().joints.target_ke.numpy()[j] == 5.0
    free = b.add_joint_free(-1, b.add_body())
    with pytest.raises(ValueError, match="not revolute, prismatic, universal or ball"):
        b.set_joint_drive(free, target_ke=1.0)


def test_forward_mode_jvp_through_the_ball_drive_matches_finite_differences():
    model = ball_arm(gravity=-G, target_ke=80.0, target_kd=2.0, limit_angle=0.6, limit_ke=2e3, limit_kd=5.0)
    q = quaternion((0.1, 0.4, -0.2))
    x = np.array([0.5, -0.4, 0.6])
    v = np.random.default_rng(3).normal(size=x.shape)

    def final_coordinates(target):
        control = model.control()
        sk.copy(control.joint_dof_target, target)
        states = [model.state() for _ in range(6)]
        states[0].joint_q.assign(q)
        for k in range(5):
            sk.sim.Featherstone().step(model, states[k], states[k + 1], control, 5e-3)
        return states[-1].joint_q

    expected = assert_jvp_matches_differences(final_coordinates, x, v)
    assert np.max(np.abs(expected)) > 1e-4
