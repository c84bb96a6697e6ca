"""Velocity targets of joint drives (``control.joint_target_vel``, Featherstone's per-DoF
``control.joint_dof_target_vel``) in every integrator, against physics: a drive with only
``target_kd`` spins a body up to the target rate along backward Euler's closed form and the
exponential ``w0 (1 - exp(-kd t / I))``, holds ``w0 - load / kd`` under a constant load, and
its gradient matches central differences."""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference

IDENTITY = (0.0, 0.0, 0.0, 1.0)
CENTER = (0.0, 1.0, 0.0)
DENSITY = 1000.0
HALF = 0.05
MASS = DENSITY * (2.0 * HALF) ** 3
INERTIA = MASS * (2.0 * HALF) ** 2 / 6.0       # the cube's, about any axis through its center
INTEGRATORS = {"semi-implicit": (sk.sim.SemiImplicitEuler, 5e-4), "featherstone": (sk.sim.Featherstone, 1e-3),
               "xpbd": (sk.sim.XPBD, 1e-3)}


def cube_on_joint(kind, kd, **joint):
    """A 10 cm cube jointed to the world at its center (the joint's penalties stay unloaded),
    no gravity, in one articulation so that every integrator steps it; its drive has only a
    damper ``kd``. Returns the model and the cube's inertia about the axis (its mass for a
    slider); the cube's inertia is the same about every axis through its center."""
    b = sk.sim.ModelBuilder(gravity=0.0, up_axis="y", ground=False)
    b.add_articulation()
    cube = b.add_body(sk.transform(CENTER, IDENTITY))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (HALF, HALF, HALF), body=cube, density=DENSITY)
    frame = sk.transform(CENTER, IDENTITY)
    if kind == "revolute":
        b.add_joint_revolute(-1, cube, parent_xform=frame, axis=(0.0, 0.0, 1.0), target_kd=kd, **joint)
    elif kind == "prismatic":
        b.add_joint_prismatic(-1, cube, parent_xform=frame, axis=(1.0, 0.0, 0.0), target_kd=kd, **joint)
    elif kind == "universal":
        b.add_joint_universal(-1, cube, parent_xform=frame, target_kd=kd, **joint)
    else:
        b.add_joint_ball(-1, cube, parent_xform=frame, target_kd=kd, **joint)
    return b.finalize(dtype=sk.float64), MASS if kind == "prismatic" else INERTIA


def step(model, integrator, control, dt, steps, state=None):
    a, b = state or model.state(), model.state()
    for _ in range(steps):
        integrator.step(model, a, b, control, dt)
        a, b = b, a
    return a


def axis_rate(kind, state):
    """The cube's rate along its joint's axis (z for the hinge, x for the slider)."""
    return state.body_qd.numpy()[0, 2 if kind == "revolute" else 3]


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_a_damper_only_drive_spins_up_to_the_target_rate_along_the_exponential(kind, integrator):
    # kd = 2 I: time constant 0.5 s. Every integrator's damper is backward Euler on the
    # joint's rate, rate_n = w0 (1 - (1 + kd dt / I)^-n), whose exponent is within
    # (kd dt / I) / 2 relative of the continuous one.
    make, dt = INTEGRATORS[integrator]
    inertia = cube_on_joint(kind, 1.0)[1]
    kd, w0, t = 2.0 * inertia, 3.0, 0.5
    model, _ = cube_on_joint(kind, kd)
    control = model.control()
    control.joint_target_vel.assign(np.array([w0]))
    steps = round(t / dt)
    rate = axis_rate(kind, step(model, make(), control, dt, steps))
    assert rate == pytest.approx(w0 * (1.0 - (1.0 + kd * dt / inertia) ** -steps), rel=1e-6)
    assert rate == pytest.approx(w0 * (1.0 - math.exp(-kd * t / inertia)), rel=2.0 * kd * dt / inertia)


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_a_damper_only_drive_under_a_constant_load_holds_the_target_rate_less_load_over_kd(kind, integrator):
    make, dt = INTEGRATORS[integrator]
    inertia = cube_on_joint(kind, 1.0)[1]
    kd, w0, load = 20.0 * inertia, 2.0, 15.0 * inertia           # time constant 0.05 s
    model, _ = cube_on_joint(kind, kd)
    control = model.control()
    control.joint_target_vel.assign(np.array([w0]))
    control.joint_act.assign(np.array([-load]))
    rate = axis_rate(kind, step(model, make(), control, dt, round(1.0 / dt)))
    # Featherstone and XPBD solve the damper with the load in the step: steady at exactly
    # w0 - load / kd. SemiImplicitEuler's implicit damper sees only its own force (the load
    # stays explicit), which costs the factor 1 + kd dt / I on the load's share.
    stretch = 1.0 + kd * dt / inertia if integrator == "semi-implicit" else 1.0
    assert rate == pytest.approx(w0 - stretch * load / kd, rel=1e-6)
    assert rate == pytest.approx(w0 - load / kd, rel=kd * dt / inertia)


def test_xpbd_drive_keeps_its_target_rate_while_the_hinge_turns_through_pi():
    # 20 rad/s for 1 s: the hinge angle wraps at +-pi three times; the damping measures the
    # step's motion modulo a whole turn, so the rate stays at the target (measured against the
    # whole wrapped angle, kd dt / I = 5e-3 would kick it by 2 pi / dt * 5e-3 = 31 rad/s). What
    # remains, 2e-5 relative, is XPBD's first-order rotation at 0.02 rad per step.
    dt = 1e-3
    kd, w0 = 5.0 * INERTIA, 20.0
    model, _ = cube_on_joint("revolute", kd)
    control = model.control()
    control.joint_target_vel.assign(np.array([w0]))
    state = model.state()
    state.body_qd.assign(np.array([[0.0, 0.0, w0, 0.0, 0.0, 0.0]]))
    rates = []
    a, b = state, model.state()
    for _ in range(1000):
        sk.sim.XPBD().step(model, a, b, control, dt)
        a, b = b, a
        rates.append(axis_rate("revolute", a))
    np.testing.assert_allclose(rates, w0, rtol=1e-4)


@pytest.mark.parametrize("kind", ["universal", "ball"])
def test_featherstone_per_dof_target_rates_spin_a_multi_dof_joint_up_along_the_exponential(kind):
    # the cube's inertia is isotropic: its joint-space mass matrix is I times the identity on
    # both joints (no velocity-product terms), so every rate follows the scalar closed form
    dt, t = 1e-3, 0.5
    kd = 2.0 * INERTIA
    model, _ = cube_on_joint(kind, kd)
    targets = np.array([1.5, -2.0]) if kind == "universal" else np.array([1.0, -2.0, 0.5])
    control = model.control()
    control.joint_dof_target_vel.assign(targets)
    steps = round(t / dt)
    state = step(model, sk.sim.Featherstone(), control, dt, steps)
    rates = state.joint_qd.numpy()
    np.testing.assert_allclose(rates, targets * (1.0 - (1.0 + kd * dt / INERTIA) ** -steps), rtol=1e-6)
    np.testing.assert_allclose(rates, targets * (1.0 - math.exp(-kd * t / INERTIA)), rtol=2.0 * kd * dt / INERTIA)


def test_featherstone_per_dof_target_rate_of_a_hinge_adds_to_its_joint_target_rate():
    dt = 1e-3
    model, _ = cube_on_joint("revolute", 20.0 * INERTIA)
    control = model.control()
    control.joint_target_vel.assign(np.array([1.0]))
    control.joint_dof_target_vel.assign(np.array([2.0]))
    state = step(model, sk.sim.Featherstone(), control, dt, 1000)
    assert state.joint_qd.numpy()[0] == pytest.approx(3.0, rel=1e-6)


def test_featherstone_target_rate_is_clamped_with_the_drive_by_the_effort_limit():
    # kd (w0 - 0) = 10 I N m at rest, clamped to I N m: the cube accelerates at 1 rad/s^2
    dt = 1e-3
    model, _ = cube_on_joint("revolute", 10.0 * INERTIA, effort_limit=INERTIA)
    control = model.control()
    control.joint_target_vel.assign(np.array([1.0]))
    state = step(model, sk.sim.Featherstone(), control, dt, 100)
    assert state.joint_qd.numpy()[0] == pytest.approx(0.1, rel=1e-9)


# -- gradients (float64, central differences) ---------------------------------------------------

def swinging_chain(multi_dof=False):
    """Two links under gravity with damped drives: a hinge and a slider (or, with
    ``multi_dof``, a universal joint and a ball joint), in one articulation."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_articulation()
    parent = -1
    for k in range(2):
        body = b.add_body(sk.transform((0.0, 1.0 - 0.3 * k, 0.0), IDENTITY))
        b.add_shape_box((0.1, -0.1, 0.0), IDENTITY, (0.04, 0.1, 0.03), body=body, density=DENSITY)
        frame = sk.transform((0.0, 1.0, 0.0) if parent < 0 else (0.0, -0.3, 0.0), IDENTITY)
        gains = {"target_ke": 0.5, "target_kd": 2.0}
        if multi_dof:
            add = b.add_joint_universal if k == 0 else b.add_joint_ball
            add(parent, body, parent_xform=frame, **gains)
        elif k == 0:
            b.add_joint_revolute(parent, body, parent_xform=frame, axis=(0.0, 0.0, 1.0), **gains)
        else:
            b.add_joint_prismatic(parent, body, parent_xform=frame, axis=(1.0, 0.0, 0.0), **gains)
        parent = body
    return b.finalize(dtype=sk.float64, requires_grad=True)


WEIGHTS = np.array([[0.7, -1.0, 0.4, 0.3, 0.2, -0.5, 0.1], [0.2, 0.9, -0.6, -0.4, 0.3, 0.6, -0.2]])


def final_pose_loss(model, integrator, control, dt, steps, tape=None):
    """``sum(WEIGHTS * body_q)`` after ``steps`` steps (recorded on ``tape`` when given), and
    the final body poses' array."""
    states = [model.state(requires_grad=tape is not None) for _ in range(steps + 1)]
    if tape is not None:
        with tape:
            for k in range(steps):
                integrator.step(model, states[k], states[k + 1], control, dt)
    else:
        for k in range(steps):
            integrator.step(model, states[k], states[k + 1], control, dt)
    return float(np.sum(WEIGHTS * states[-1].body_q.numpy())), states[-1].body_q


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_gradient_wrt_joint_target_vel_matches_finite_differences(integrator):
    make, dt = INTEGRATORS[integrator]
    # the semi-implicit penalty joints need their small step (5e-4 s) on these light links
    dt, steps = (dt, 40) if integrator == "semi-implicit" else (4.0 * dt, 20)
    model = swinging_chain()
    control = model.control()
    control.joint_target_vel.assign(np.array([0.8, -0.3]))
    control.joint_target_vel.requires_grad = True
    tape = sk.Tape()
    _, out = final_pose_loss(model, make(), control, dt, steps, tape)
    tape.backward(grads={out: WEIGHTS})
    grad = control.joint_target_vel.grad.numpy().copy()
    values = control.joint_target_vel.numpy()
    for j in range(2):
        fd = central_difference(lambda: final_pose_loss(model, make(), control, dt, steps)[0], values, j, 1e-5)
        assert abs(fd) > 1e-5
        assert grad[j] == pytest.approx(fd, rel=1e-5)


def test_featherstone_gradient_wrt_joint_dof_target_vel_matches_finite_differences():
    dt, steps = 2e-3, 20
    model = swinging_chain(multi_dof=True)
    control = model.control()
    control.joint_dof_target_vel.assign(np.array([0.8, -0.3, 0.5, 0.2, -0.4]))
    control.joint_dof_target_vel.requires_grad = True
    tape = sk.Tape()
    _, out = final_pose_loss(model, sk.sim.Featherstone(), control, dt, steps, tape)
    tape.backward(grads={out: WEIGHTS})
    grad = control.joint_dof_target_vel.grad.numpy().copy()
    values = control.joint_dof_target_vel.numpy()
    for d in range(5):
        fd = central_difference(lambda: final_pose_loss(model, sk.sim.Featherstone(), control, dt, steps)[0],
                                values, d, 1e-5)
        assert abs(fd) > 1e-5
        assert grad[d] == pytest.approx(fd, rel=1e-5)


# -- the control arrays --------------------------------------------------------------------

def test_control_has_zero_target_rates_per_joint_and_per_dof_in_the_model_dtype():
    model = swinging_chain(multi_dof=True)
    control = model.control()
    assert control.joint_target_vel.shape == (model.joint_count,)
    assert control.joint_dof_target_vel.shape == (model.joint_dof_count,)
    for a in (control.joint_target_vel, control.joint_dof_target_vel):
        assert a.dtype == control.joint_target.dtype and a.device == control.joint_target.device
        assert not np.any(a.numpy())


def test_control_world_view_shows_joint_target_vel_per_world():
    world = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    body = world.add_body()
    world.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (HALF, HALF, HALF), body=body, density=DENSITY)
    world.add_joint_revolute(-1, body, target_kd=1.0)
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    for _ in range(3):
        b.add_builder(world)
    model = b.finalize(dtype=sk.float64)
    control = model.control()
    control.world_view("joint_target_vel")[:, 0] = (1.0, 2.0, 3.0)
    np.testing.assert_array_equal(control.joint_target_vel.numpy(), (1.0, 2.0, 3.0))


def test_control_world_view_names_joint_target_vel_among_the_valid_names():
    model, _ = cube_on_joint("revolute", 1.0)
    with pytest.raises(ValueError, match="joint_target_vel"):
        model.control().world_view("joint_velocity")


def test_assigning_a_wrong_length_to_joint_target_vel_is_refused():
    model, _ = cube_on_joint("revolute", 1.0)
    with pytest.raises((ValueError, TypeError)):
        model.control().joint_target_vel.assign(np.zeros(3))


# -- MuJoCo's velocity actuator --------------------------------------------------------------

VELOCITY_ACTUATED = """<mujoco>
  <option gravity="0 0 0" timestep="0.001" integrator="implicitfast"/>
  <worldbody>
    <body name="wheel" pos="0 0 1">
      <joint name="spin" type="hinge" axis="0 0 1" damping="0.003"/>
      <geom type="box" size="0.05 0.05 0.05" density="1000"/>
    </body>
  </worldbody>
  <actuator>
    <velocity joint="spin" kv="0.005" gear="2"/>
  </actuator>
</mujoco>
"""


def test_an_mjcf_velocity_actuator_with_its_ctrl_in_joint_target_vel_spins_up_as_in_mujoco(tmp_path):
    # MuJoCo's joint force: gear kv (ctrl - gear qd) - damping qd, with implicitfast's
    # backward Euler on both velocity gains; simkit's drive: target_kd (joint_target_vel - qd)
    # with target_kd = damping + kv gear^2, so joint_target_vel = gear kv ctrl / target_kd
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "wheel.xml"
    path.write_text(VELOCITY_ACTUATED)
    ctrl, gear, kv, damping, steps = 3.0, 2.0, 0.005, 0.003, 300
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    d.ctrl[0] = ctrl
    for _ in range(steps):
        mujoco.mj_step(m, d)
    b = sk.sim.ModelBuilder(gravity=0.0, up_axis="z", ground=False)
    b.add_mjcf(str(path))
    model = b.finalize(dtype=sk.float64)
    target_kd = model.joints.target_kd.numpy()[0]
    assert target_kd == pytest.approx(damping + kv * gear ** 2, rel=1e-12)
    control = model.control()
    control.joint_target_vel.assign(np.array([gear * kv * ctrl / target_kd]))
    state = step(model, sk.sim.Featherstone(), control, 1e-3, steps)
    assert 0.3 < d.qvel[0] < 0.99 * gear * kv * ctrl / target_kd          # still spinning up
    assert state.joint_qd.numpy()[0] == pytest.approx(d.qvel[0], rel=1e-9)
