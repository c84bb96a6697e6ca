"""sk.sim.Featherstone's joint friction, ball joint limits and universal joint drives and
limits, checked against physics: a slider on an incline sticks, stops and slides with the
closed-form deceleration and loses exactly the friction's work; a frictional pendulum follows
MuJoCo's (whose friction is a soft constraint: compared within a tolerance); a ball joint
stops at its range angle (also against MuJoCo, from an MJCF range); a universal joint reaches
a 2-d target and stops at per-axis limits; gradients against central differences."""

import math
import warnings

import numpy as np
import pytest

import simkit as sk
from sim_helpers import featherstone_rollout as rollout
from sim_helpers import assert_jvp_matches_differences, finite_difference

F64 = sk.float64
SLOPE = math.radians(30.0)
G = 9.81


def incline(friction, requires_grad=False):
    """A sphere on a slider tilted 30 degrees down along +x (gravity -y): q grows downhill."""
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body)
    b.add_joint_prismatic(-1, body, axis=(math.cos(SLOPE), -math.sin(SLOPE), 0.0), friction=friction)
    return b.finalize(dtype=F64, requires_grad=requires_grad)


def slider_state(model, q, qd):
    state = model.state()
    state.joint_q.assign([q])
    state.joint_qd.assign([qd])
    return state


def mass(model):
    return float(model.bodies.mass.numpy()[0])


# -- dry friction ---------------------------------------------------------------------------------
def test_friction_above_the_pull_holds_a_slider_at_rest():
    model = incline(0.0)
    pull = mass(model) * G * math.sin(SLOPE)
    model = incline(1.5 * pull)
    scale = 1e-3
    end = rollout(model, slider_state(model, 0.0, 0.0), 2000, 1e-3,
                  integrator=sk.sim.Featherstone(friction_scale=scale))
    # the regularized friction lets it creep at (pull / friction) * scale at most
    assert abs(end.joint_qd.numpy()[0]) <= scale / 1.5 * (1 + 1e-6)
    assert abs(end.joint_q.numpy()[0]) <= 2.0 * scale / 1.5


def test_friction_above_the_pull_stops_a_sliding_slider_at_the_closed_form_distance():
    pull = mass(incline(0.0)) * G * math.sin(SLOPE)
    model = incline(1.5 * pull)
    v0 = 1.0
    decel = 0.5 * pull / mass(model)
    # the friction is taken at the step's end velocity with the coefficient of its start:
    # first order in dt, as the integrator (1.2 % long at dt = 1e-3, 0.25 % at 2e-4); once
    # stopped it creeps at below the default friction_scale (1e-4 m/s)
    end = rollout(model, slider_state(model, 0.0, v0), 7500, 2e-4)
    assert end.joint_q.numpy()[0] == pytest.approx(v0 * v0 / (2.0 * decel), rel=4e-3)
    assert abs(end.joint_qd.numpy()[0]) < 1e-4


def test_friction_below_the_pull_slides_with_the_closed_form_acceleration_and_loses_its_work():
    m = mass(incline(0.0))
    pull = m * G * math.sin(SLOPE)
    friction = 0.5 * pull
    model = incline(friction)
    v0, dt, steps = 0.5, 1e-4, 10000
    end = rollout(model, slider_state(model, 0.0, v0), steps, dt)
    t = steps * dt
    a = (pull - friction) / m
    q, qd = end.joint_q.numpy()[0], end.joint_qd.numpy()[0]
    assert qd == pytest.approx(v0 + a * t, rel=5e-4)        # first order in dt (see above)
    assert q == pytest.approx(v0 * t + 0.5 * a * t * t, rel=1e-3)
    # energy: kinetic plus potential (height -q sin(slope)) falls by the friction's work F q
    energy_loss = (0.5 * m * v0 * v0) - (0.5 * m * qd * qd - pull * q)
    assert energy_loss == pytest.approx(friction * q, rel=1e-3)


PENDULUM = """<mujoco>
  <option gravity="0 0 -9.81" timestep="{dt}" integrator="Euler"/>
  <worldbody>
    <body name="arm">
      <joint name="hinge" type="hinge" axis="0 1 0" frictionloss="{friction}"/>
      <geom type="sphere" pos="0 0 -1" size="0.1" mass="1"/>
    </body>
  </worldbody>
</mujoco>"""


def test_frictional_pendulum_follows_mujoco(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    dt, steps, q0 = 1e-3, 4000, 1.2
    xml = PENDULUM.format(dt=dt, friction=3.0)
    path = tmp_path / "pendulum.xml"
    path.write_text(xml)
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="z", ground=False)
    b.add_mjcf(path)
    model = b.finalize(dtype=F64)
    assert model.joints.friction.numpy()[0] == 3.0
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[0] = q0
    state = slider_state(model, q0, 0.0)
    integrator = sk.sim.Featherstone()
    other = model.state()
    ours, theirs = [], []
    for _ in range(steps):
        integrator.step(model, state, other, None, dt)
        state, other = other, state
        mujoco.mj_step(m, d)
        ours.append(state.joint_q.numpy()[0])
        theirs.append(d.qpos[0])
    ours, theirs = np.array(ours), np.array(theirs)
    # both swing the same and come to rest where gravity's torque (9.81 sin q) is below the
    # friction; MuJoCo's friction is a soft constraint (it still creeps there, ~3e-3 rad/s),
    # simkit's a regularized one: close (measured 0.016 rad at most), not equal
    assert np.max(np.abs(ours - theirs)) < 0.03
    assert abs(9.81 * math.sin(ours[-1])) < 3.0
    assert abs(ours[-1] - ours[-1000]) < 1e-4                # at rest for the last second


def test_gradient_through_sliding_friction_matches_finite_differences():
    weights = np.array([1.0, 0.3])
    steps, dt = 20, 1e-3

    def run(x, tape=None):
        model = incline(x[0], requires_grad=True)
        state = model.state(requires_grad=True)
        state.joint_qd.assign([x[1]])
        end = rollout(model, state, steps, dt, tape=tape)
        return model, state, end

    x = np.array([0.8, 0.4])
    tape = sk.Tape()
    model, state, end = run(x, tape)
    tape.backward(grads={end.joint_q: np.array([weights[0]]), end.joint_qd: np.array([weights[1]])})
    grad = np.array([model.joints.friction.grad.numpy()[0], state.joint_qd.grad.numpy()[0]])

    def value(v):
        e = run(v)[2]
        return float(e.joint_q.numpy()[0] * weights[0] + e.joint_qd.numpy()[0] * weights[1])

    expected = finite_difference(value, x)
    assert abs(grad[0]) > 1e-3
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-9)


def test_friction_errors_are_clear():
    b = sk.sim.ModelBuilder()
    b.add_articulation()
    body = b.add_body()
    with pytest.raises(ValueError, match="friction"):
        b.add_joint_revolute(-1, body, friction=-1.0)
    with pytest.raises(ValueError, match="friction_scale must be a positive velocity"):
        sk.sim.Featherstone(friction_scale=0.0)
    with pytest.raises(TypeError, match="friction_scale must be a number"):
        sk.sim.Featherstone(friction_scale="1e-3")


# -- ball joint limits ------------------------------------------------------------------------------
def ball_arm(limit_angle=0.5, gravity=-G, **joint):
    """A sphere at x = 1 on a ball joint at the origin (gravity -y turns it about -z)."""
    b = sk.sim.ModelBuilder(gravity=gravity, up_axis="y", ground=False)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((1.0, 0.0, 0.0), 0.1, body=body)
    b.add_joint_ball(-1, body, limit_angle=limit_angle, **joint)
    return b.finalize(dtype=F64, requires_grad=True)


def rotation_angle_axis(q):
    """The angle and unit axis of the quaternion ``q`` (x, y, z, w)."""
    q = np.asarray(q) * (1.0 if q[3] >= 0.0 else -1.0)
    s = np.linalg.norm(q[:3])
    return 2.0 * math.atan2(s, q[3]), q[:3] / s


def ball_state(model, angle, axis=(0.0, 0.0, -1.0), w=(0.0, 0.0, 0.0)):
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    state = model.state(requires_grad=True)
    state.joint_q.assign(np.concatenate([axis * math.sin(0.5 * angle), [math.cos(0.5 * angle)]]))
    state.joint_qd.assign(np.asarray(w, dtype=np.float64))
    return state


@pytest.mark.parametrize("start", [0.0, 0.9])
def test_ball_pendulum_stops_at_its_range_angle(start):
    # released inside (0) or beyond (0.9 rad) its 0.5 rad range, gravity pulls the arm down
    # against the limit; it settles at the range angle plus gravity's torque over limit_ke
    ke = 1e4
    model = ball_arm(limit_angle=0.5, limit_ke=ke, limit_kd=20.0, target_kd=20.0)
    end = rollout(model, ball_state(model, start), 5000, 1e-3)
    angle, axis = rotation_angle_axis(end.joint_q.numpy())
    m = mass(model)
    sag = m * G * math.cos(0.5) * 1.0 / ke
    assert abs(angle - (0.5 + sag)) < 0.05 * sag
    np.testing.assert_allclose(axis, [0.0, 0.0, -1.0], atol=1e-9)
    assert np.max(np.abs(end.joint_qd.numpy())) < 1e-4


def test_ball_limit_pushes_back_along_the_rotation_axis_only():
    # beyond the range about an oblique axis, no gravity: the first step's angular
    # acceleration points back along that axis (the limit acts about the rotation's axis)
    model = ball_arm(limit_angle=0.5, gravity=0.0)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    s1 = model.state()
    sk.sim.Featherstone().step(model, ball_state(model, 0.7, axis), s1, None, 1e-4)
    w = s1.joint_qd.numpy()
    # the accelerated direction is -I^-1 u: turned by the inertia, but it must reduce the angle
    assert w @ axis < 0.0
    inertia = sk.sim.mass_matrix(model, ball_state(model, 0.7, axis).joint_q.numpy())
    torque = inertia @ w
    np.testing.assert_allclose(torque / np.linalg.norm(torque), -axis, atol=1e-6)


def test_ball_limit_gradient_matches_finite_differences():
    steps, dt = 40, 1e-3
    weights = np.array([0.4, -1.0, 0.7, 0.2])

    def run(w, tape=None):
        model = ball_arm(limit_angle=0.5, limit_ke=2e3, limit_kd=5.0)
        state = ball_state(model, 0.45, axis=(0.2, 0.1, -1.0), w=w)
        return state, rollout(model, state, steps, dt, tape=tape)

    x = np.array([0.3, -0.2, -2.0])
    tape = sk.Tape()
    state, end = run(x, tape)
    assert rotation_angle_axis(end.joint_q.numpy())[0] > 0.5            # the limit acts at the end
    tape.backward(grads={end.joint_q: weights})
    grad = state.joint_qd.grad.numpy()
    expected = finite_difference(lambda v: float(run(v)[1].joint_q.numpy() @ weights), x)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-8)


BALL = """<mujoco>
  <compiler angle="degree"/>
  <option gravity="0 0 -9.81" timestep="{dt}" integrator="Euler"/>
  <worldbody>
    <body name="arm">
      <joint name="ball" type="ball" range="0 30" damping="0.5"/>
      <geom type="sphere" pos="1 0 0" size="0.1" mass="1"/>
    </body>
  </worldbody>
</mujoco>"""


def test_mjcf_ball_range_is_enforced_like_mujoco(tmp_path):
    dt, steps = 1e-3, 3000
    path = tmp_path / "ball.xml"
    path.write_text(BALL.format(dt=dt))
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="z", ground=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # the range is simulated: nothing to warn about
        b.add_mjcf(path)
    model = b.finalize(dtype=F64)
    assert model.joints.limit_upper.numpy()[0] == pytest.approx(math.radians(30.0))
    assert model.joints.target_kd.numpy()[0] == 0.5                  # the ball's damping is simulated
    end = rollout(model, model.state(), steps, dt)
    angle, axis = rotation_angle_axis(end.joint_q.numpy())
    assert angle == pytest.approx(math.radians(30.0), abs=2e-3)
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_string(BALL.format(dt=dt))
    d = mujoco.MjData(m)
    for _ in range(steps):
        mujoco.mj_step(m, d)
    theirs, their_axis = rotation_angle_axis(np.roll(d.qpos, -1))
    # MuJoCo's limit is a soft inelastic constraint: it stops the arm at once and lets it sink
    # 0.014 rad past the range; simkit's penalty bounces (limit_kd) and rests 0.0008 rad past
    # it. Compared at rest (measured: 0.013 rad apart)
    assert abs(angle - theirs) < 0.02
    np.testing.assert_allclose(axis, their_axis, atol=1e-6)


def test_ball_limit_angle_outside_zero_to_pi_is_refused():
    b = sk.sim.ModelBuilder()
    b.add_articulation()
    body = b.add_body()
    with pytest.raises(ValueError, match=r"limit_angle must be in \[0, pi\]"):
        b.add_joint_ball(-1, body, limit_angle=4.0)


# -- universal joint drives and limits ----------------------------------------------------------------
def universal_arm(gravity=0.0, **joint):
    """A sphere at y = -1 on a universal joint about x, then z, at the origin."""
    b = sk.sim.ModelBuilder(gravity=gravity, up_axis="y", ground=False)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, -1.0, 0.0), 0.1, body=body)
    b.add_joint_universal(-1, body, axis=(1.0, 0.0, 0.0), axis2=(0.0, 0.0, 1.0), **joint)
    return b.finalize(dtype=F64, requires_grad=True)


def test_universal_drive_reaches_a_2d_target():
    model = universal_arm(target_ke=50.0, target_kd=30.0)
    control = model.control()
    control.joint_dof_target.assign([0.3, -0.4])
    end = rollout(model, model.state(), 5000, 1e-3, control)
    np.testing.assert_allclose(end.joint_q.numpy(), [0.3, -0.4], atol=1e-5)


def test_universal_limits_bound_each_angle():
    # targets beyond both ranges: each angle rests where drive and limit balance
    ke, lke = 50.0, 1e4
    model = universal_arm(target_ke=ke, target_kd=30.0, limit_upper=0.2, limit2_lower=-0.25, limit_ke=lke,
                          limit_kd=10.0)
    control = model.control()
    control.joint_dof_target.assign([0.3, -0.4])
    end = rollout(model, model.state(), 5000, 1e-3, control)
    expected = [(ke * 0.3 + lke * 0.2) / (ke + lke), (ke * -0.4 + lke * -0.25) / (ke + lke)]
    np.testing.assert_allclose(end.joint_q.numpy(), expected, atol=1e-7)


def test_universal_drive_gradient_matches_finite_differences():
    steps, dt = 30, 2e-3
    weights = np.array([1.0, -0.6])

    def run(x, tape=None):
        model = universal_arm(gravity=-G, target_ke=80.0, target_kd=2.0, limit2_lower=-0.1, limit_ke=1e3,
                              limit_kd=5.0, friction=0.5)
        control = model.control()
        control.joint_dof_target.requires_grad = True
        control.joint_dof_act.requires_grad = True
        control.joint_dof_target.assign(x[:2])
        control.joint_dof_act.assign([x[2], 0.0])
        state = model.state(requires_grad=True)
        state.joint_qd.assign([0.5, -3.0])
        return control, rollout(model, state, steps, dt, control, tape=tape)

    x = np.array([0.4, -0.5, 1.5])
    tape = sk.Tape()
    control, end = run(x, tape)
    assert end.joint_q.numpy()[1] < -0.1                         # the second angle passed its limit
    tape.backward(grads={end.joint_q: weights})
    grad = np.concatenate([control.joint_dof_target.grad.numpy(), control.joint_dof_act.grad.numpy()[:1]])
    expected = finite_difference(lambda v: float(run(v)[1].joint_q.numpy() @ weights), x)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-8)


def test_universal_second_limit_lower_above_upper_is_refused():
    b = sk.sim.ModelBuilder()
    b.add_articulation()
    body = b.add_body()
    with pytest.raises(ValueError, match="limit2_lower must be <= limit2_upper"):
        b.add_joint_universal(-1, body, limit2_lower=0.5, limit2_upper=0.1)


# -- per-DoF actuation ---------------------------------------------------------------------------
def test_joint_dof_act_pushes_a_free_body_and_adds_to_joint_act():
    b = sk.sim.ModelBuilder(gravity=0.0, up_axis="y", ground=False)
    b.add_articulation()
    base = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=base)
    b.add_joint_free(-1, base)
    b.add_articulation()
    wheel = b.add_body(((3.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=wheel)
    b.add_joint_revolute(-1, wheel, axis=(0.0, 0.0, 1.0))
    model = b.finalize(dtype=F64)
    control = model.control()
    control.joint_dof_act.assign([2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25])
    control.joint_act.assign([0.0, 0.5])
    dt = 1e-3
    s1 = model.state()
    sk.sim.Featherstone().step(model, model.state(), s1, control, dt)
    m, inertia = model.bodies.mass.numpy(), model.bodies.inertia.numpy()
    qd = s1.joint_qd.numpy()
    assert qd[0] == pytest.approx(2.0 / m[0] * dt, rel=1e-12)
    assert qd[6] == pytest.approx(0.75 / inertia[1][2, 2] * dt, rel=1e-12)


def test_forward_mode_jvp_through_limits_and_friction_matches_finite_differences():
    # a ball joint past its range carrying a universal joint past its second limit, both
    # sliding against friction
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    b.add_articulation()
    arm = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((1.0, 0.0, 0.0), 0.1, body=arm)
    b.add_joint_ball(-1, arm, limit_angle=0.3, limit_ke=2e3, limit_kd=5.0, friction=0.4)
    tip = b.add_body(((1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, -0.5, 0.0), 0.05, body=tip)
    b.add_joint_universal(arm, tip, axis=(1.0, 0.0, 0.0), axis2=(0.0, 0.0, 1.0), target_ke=20.0, target_kd=1.0,
                          limit2_lower=-0.1, limit_ke=1e3, limit_kd=2.0, friction=0.1)
    model = b.finalize(dtype=F64)
    q = np.concatenate([np.array([0.1, 0.2, -1.0]) / np.linalg.norm([0.1, 0.2, -1.0]) * math.sin(0.2),
                        [math.cos(0.2), 0.2, -0.15]])
    qd = np.array([0.3, -0.5, -1.0, 0.8, -1.2])
    v = np.random.default_rng(2).normal(size=qd.shape)

    def final_coordinates(velocities):
        states = [model.state() for _ in range(6)]
        sk.copy(states[0].joint_q, sk.array(q, dtype=F64))
        sk.copy(states[0].joint_qd, velocities)
        for k in range(5):
            sk.sim.Featherstone().step(model, states[k], states[k + 1], None, 5e-3)
        return states[-1].joint_q

    assert_jvp_matches_differences(final_coordinates, qd, v)


def test_add_builder_keeps_friction_and_second_limits():
    inner = sk.sim.ModelBuilder(ground=False)
    inner.add_articulation()
    body = inner.add_body()
    inner.add_joint_universal(-1, body, limit2_lower=-0.3, limit2_upper=0.4, friction=0.7)
    b = sk.sim.ModelBuilder(ground=False)
    b.add_builder(inner)
    b.add_builder(inner, xform=((1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    joints = b.finalize().joints
    np.testing.assert_allclose(joints.friction.numpy(), [0.7, 0.7])
    np.testing.assert_allclose(joints.limit2_lower.numpy(), [-0.3, -0.3])
    np.testing.assert_allclose(joints.limit2_upper.numpy(), [0.4, 0.4])
