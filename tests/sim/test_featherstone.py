"""sk.sim.Featherstone, the integrator in generalized coordinates, checked against physics and
MuJoCo: accelerations equal the joint-space dynamics (themselves checked against MuJoCo in
test_articulation_mujoco.py); trajectories equal MuJoCo's Euler (the same scheme) on the test
trees and on gymnasium's robots, and converge to its RK4 at first order; a pendulum's period
and a double pendulum's energy, free fall, resting contact, drives, limits, effort limits,
armature and damping against their closed forms; gradients of rollouts (reverse and forward
mode, sk.optim.Rollout) against central differences."""

import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.sim import geometry as G
from sim_helpers import featherstone_rollout as rollout
from sim_helpers import assert_jvp_matches_differences, finite_difference
from test_articulation_mujoco import MODELS, quat_axis, random_coordinates

F64 = sk.float64


def coordinates_state(model, q, qd, requires_grad=False):
    """A state at coordinates ``q`` / ``qd`` with its bodies placed by forward kinematics."""
    state = model.state(requires_grad=requires_grad)
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    sk.sim.eval_fk(model, state.joint_q, state.joint_qd, state)
    return state


def hinge(gravity=-9.81, radius=0.1, arm=1.0, **joint):
    """A sphere of radius ``radius`` at ``arm`` below a hinge about z at the origin (y up)."""
    b = sk.sim.ModelBuilder(gravity=gravity, up_axis="y", ground=False)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, -arm, 0.0), radius, body=body)
    b.add_joint_revolute(-1, body, axis=(0.0, 0.0, 1.0), **joint)
    return b.finalize(dtype=F64, requires_grad=True)


def pivot_inertia(model):
    """The moment of inertia of body 0 about the z axis through the origin."""
    m, c, inertia = (model.bodies.mass.numpy()[0], model.bodies.com.numpy()[0], model.bodies.inertia.numpy()[0])
    return inertia[2, 2] + m * (c[0] ** 2 + c[1] ** 2)


# -- dynamics -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(MODELS))
def test_one_step_accelerations_equal_the_joint_space_dynamics(name):
    model, _xml = MODELS[name]()
    rng = np.random.default_rng(4)
    for _trial in range(3):
        q, qd = random_coordinates(model, rng)
        dt = 1e-3
        s1 = model.state()
        sk.sim.Featherstone().step(model, coordinates_state(model, q, qd), s1, None, dt)
        qdd = (s1.joint_qd.numpy() - qd) / dt
        expected = sk.sim.joint_accelerations(model, q, qd)
        assert np.max(np.abs(qdd - expected)) < 1e-8 * max(1.0, np.max(np.abs(expected)))


def mujoco_trajectory(xml, model, q, qd, steps, dt, integrator):
    mujoco = pytest.importorskip("mujoco")
    from test_articulation_mujoco import to_mujoco
    m = mujoco.MjModel.from_xml_string(xml.replace("<option ", f'<option timestep="{dt}" integrator="{integrator}" '))
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = to_mujoco(model, q, qd)[:2]
    for _ in range(steps):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)                 # mj_step leaves the kinematics of the step's start
    return d.xpos[1:].copy(), d.xmat[1:].reshape(-1, 3, 3).copy()


@pytest.mark.parametrize("name", list(MODELS))
def test_trajectory_matches_mujoco_euler(name):
    # 0.25 s from a random state at dt = 1e-4: MuJoCo's Euler is the same semi-implicit scheme,
    # so the trajectories agree to rounding (1e-15) but for the quaternions of ball and free
    # joints, which MuJoCo turns by the exponential map and simkit to first order (1e-9)
    model, xml = MODELS[name]()
    q, qd = random_coordinates(model, np.random.default_rng(5))
    qd *= 0.5
    dt, steps = 1e-4, 2500
    end = rollout(model, coordinates_state(model, q, qd), steps, dt)
    xpos, xmat = mujoco_trajectory(xml, model, q, qd, steps, dt, "Euler")
    body_q = end.body_q.numpy()
    np.testing.assert_allclose(body_q[:, :3], xpos, rtol=0, atol=1e-8)
    rotations = np.stack([G.quat_to_matrix(r) for r in body_q[:, 3:]])
    np.testing.assert_allclose(rotations, xmat, rtol=0, atol=1e-8)


def test_trajectory_error_against_mujoco_shrinks_with_dt():
    # first-order convergence to the true motion (MuJoCo's RK4 at a small step): halving dt
    # halves the error
    model, xml = MODELS["double_pendulum"]()
    q, qd = random_coordinates(model, np.random.default_rng(6))
    xpos, _ = mujoco_trajectory(xml, model, q, qd, 4000, 5e-5, "RK4")
    errors = []
    for dt in (4e-4, 2e-4):
        end = rollout(model, coordinates_state(model, q, qd), int(round(0.2 / dt)), dt)
        errors.append(np.max(np.abs(end.body_q.numpy()[:, :3] - xpos)))
    assert 1.6 < errors[0] / errors[1] < 2.4


@pytest.mark.parametrize("name", ["inverted_pendulum", "reacher", "hopper", "half_cheetah", "ant"])
def test_gymnasium_robots_move_as_in_mujoco_without_contact(name):
    # the file as both compile it (armature, joint damping and the massless chains of
    # several joints in one body included), 0.1 s from qpos0 with random velocities; MuJoCo's
    # semi-implicit Euler (implicit damping, as simkit's), contacts and limits off, and
    # without what simkit does not simulate: joint stiffness and the damping of free joints
    mujoco = pytest.importorskip("mujoco")
    gymnasium = pytest.importorskip("gymnasium")
    import os
    from import_helpers import velocity_map
    from simkit.sim.importers import RobotFileWarning
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name + ".xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=False)
        a = b.add_mjcf(path)
    for shape in range(b.shape_count):
        b.set_shape_collision(shape, group=0, mask=0)
    record, model = b.imports[a], b.finalize(dtype=F64)
    model.joints.limit_ke.zero_()                  # the ant's ankles start outside their ranges
    model.joints.limit_kd.zero_()
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    m.jnt_stiffness[:] = 0.0
    for j in range(m.njnt):
        if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            n = 6 if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE else 3
            m.dof_damping[m.jnt_dofadr[j]:m.jnt_dofadr[j] + n] = 0.0
    dt, steps = 2e-4, 500
    m.opt.timestep = dt
    d = mujoco.MjData(m)
    d.qvel[:] = np.random.default_rng(9).normal(size=m.nv)
    start = coordinates_state(model, record.joint_q_from_mujoco(d.qpos),
                              np.linalg.solve(velocity_map(m, d.qpos), d.qvel))
    end = rollout(model, start, steps, dt)
    for _ in range(steps):
        mujoco.mj_step(m, d)
    # the same scheme: equal to rounding, but for the free joint's quaternion (see above)
    np.testing.assert_allclose(end.joint_q.numpy(), record.joint_q_from_mujoco(d.qpos), rtol=0, atol=1e-8)
    mujoco.mj_forward(m, d)
    np.testing.assert_allclose(end.body_q.numpy()[record.body_order, :3], d.xpos[1:], rtol=0, atol=1e-8)


def test_pendulum_period_matches_the_compound_pendulum_formula():
    model = hinge()
    theta0, dt = 0.05, 1e-3
    m, d = model.bodies.mass.numpy()[0], 1.0
    period = 2.0 * np.pi * np.sqrt(pivot_inertia(model) / (m * 9.81 * d))
    state = coordinates_state(model, [theta0], [0.0])
    angles = []
    a, b = state, model.state()
    for _ in range(int(1.6 * period / dt)):
        sk.sim.Featherstone().step(model, a, b, None, dt)
        a, b = b, a
        angles.append(a.joint_q.numpy()[0])
    angles = np.array(angles)
    # the first two downward zero crossings, interpolated, are one period apart
    up = np.flatnonzero((angles[:-1] > 0.0) & (angles[1:] <= 0.0))
    t = [(i + 1 + angles[i] / (angles[i] - angles[i + 1])) * dt for i in up[:2]]
    assert abs((t[1] - t[0]) - period) < 2e-3 * period


def test_double_pendulum_energy_is_conserved_with_small_dt():
    model, _xml = MODELS["double_pendulum"]()
    q, qd = np.array([1.0, -0.5]), np.array([0.5, 1.0])
    g = 9.81

    def energy(state):
        qq, v = state.joint_q.numpy(), state.joint_qd.numpy()
        com = np.array([G.quat_rotate(x[3:], c) + x[:3] for x, c in zip(state.body_q.numpy(),
                                                                          model.bodies.com.numpy())])
        return 0.5 * v @ sk.sim.mass_matrix(model, qq) @ v + g * model.bodies.mass.numpy() @ com[:, 2]

    state = coordinates_state(model, q, qd)
    e0 = energy(state)
    swing = g * model.bodies.mass.numpy().sum() * 1.0       # the energy scale: masses lifted by a link length
    end = rollout(model, state, 5000, 1e-4)
    assert abs(energy(end) - e0) < 1e-3 * swing


def free_box(height=2.0, quat=(0.0, 0.0, 0.0, 1.0), ground=False, real=F64, **kwargs):
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=ground, **kwargs)
    b.add_articulation()
    body = b.add_body(((0.3, -0.2, height), quat))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.3, 0.2, 0.1), body=body)
    b.add_joint_free(-1, body)
    return b.finalize(dtype=real, requires_grad=True)


def test_free_body_falls_along_the_discrete_parabola_and_keeps_its_angular_momentum():
    model = free_box(quat=tuple(quat_axis((1.0, 2.0, 0.5), 0.7)))
    q = model.joint_q.numpy().copy()
    qd = np.array([0.5, -0.3, 2.0, 1.5, -2.0, 0.7])
    dt, n = 1e-4, 3000
    state = coordinates_state(model, q, qd)

    def momentum(s):
        R = G.quat_to_matrix(s.body_q.numpy()[0, 3:])
        return R @ model.bodies.inertia.numpy()[0] @ R.T @ s.body_qd.numpy()[0, :3]

    L0 = momentum(state)
    end = rollout(model, state, n, dt)
    t = n * dt
    # semi-implicit Euler: x_n = x_0 + v_0 t + g dt^2 n (n + 1) / 2
    expected = q[:3] + qd[:3] * t + np.array([0.0, 0.0, -9.81]) * dt * dt * n * (n + 1) / 2.0
    np.testing.assert_allclose(end.joint_q.numpy()[:3], expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(momentum(end), L0, rtol=0, atol=2e-2 * np.linalg.norm(L0))
    assert abs(np.linalg.norm(end.joint_q.numpy()[3:]) - 1.0) < 1e-12


# -- contact ------------------------------------------------------------------------------------
@pytest.mark.parametrize("real", [sk.float32, F64])
def test_box_comes_to_rest_on_the_ground(real):
    model = free_box(height=0.3, ground=True, real=real)
    end = rollout(model, model.state(), 1500, 1e-3)
    # it sinks by about g tc^2 (tc = 0.01 s) and stops
    assert abs(end.body_q.numpy()[0, 2] - 0.1) < 3e-3
    assert np.max(np.abs(end.joint_qd.numpy())) < 1e-2
    np.testing.assert_allclose(end.body_q.numpy()[0, :2], [0.3, -0.2], atol=1e-3)


def inside_limits(model):
    """A state at the model's coordinates with every hinge and slide moved inside its limits
    (gymnasium's ant has its ankles at 0, outside their 30 to 70 degrees)."""
    q = model.joint_q.numpy().copy()
    lower, upper = model.joints.limit_lower.numpy(), model.joints.limit_upper.numpy()
    qs, kinds = model.joint_q_start.numpy(), model.joints.kind.numpy()
    for j in np.flatnonzero(kinds <= 1):                # revolute and prismatic
        if not lower[j] <= q[qs[j]] <= upper[j]:
            q[qs[j]] = 0.5 * (lower[j] + upper[j])
    return coordinates_state(model, q, model.joint_qd.numpy())


def test_ant_stands_on_the_ground():
    gymnasium = pytest.importorskip("gymnasium")
    import os
    from simkit.sim.importers import RobotFileWarning
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=True)
        b.add_mjcf(path)
    model = b.finalize(dtype=F64)
    # unactuated, its legs give way under the torso until the ankles' limits hold them
    end = rollout(model, inside_limits(model), 3000, 1e-3)
    assert 0.3 < end.body_q.numpy()[0, 2] < 0.75             # fell from 0.75 and stands on its legs
    assert np.max(np.abs(end.body_qd.numpy())) < 1e-2


def test_two_floating_boxes_stack_on_the_ground():
    # body-body contact between two articulations: the upper box rests on the lower one
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    for height in (0.11, 0.33):
        b.add_articulation()
        body = b.add_body(((0.0, 0.0, height), (0.0, 0.0, 0.0, 1.0)))
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.2, 0.2, 0.1), body=body)
        b.add_joint_free(-1, body)
    model = b.finalize(dtype=F64)
    end = rollout(model, model.state(), 1500, 1e-3)
    z = end.body_q.numpy()[:, 2]
    assert abs(z[0] - 0.1) < 5e-3 and abs(z[1] - 0.3) < 1e-2
    assert np.max(np.abs(end.joint_qd.numpy())) < 1e-2


def test_a_hanging_chain_hits_a_static_box():
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_shape_box((0.0, -1.5, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 0.2, 1.0))        # static, top at y = -1.3
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, -1.0, 0.0), 0.1, body=body)
    b.add_joint_prismatic(-1, body, axis=(0.0, 1.0, 0.0))
    model = b.finalize(dtype=F64)
    end = rollout(model, model.state(), 1500, 1e-3)
    # the sphere (bottom at y = -1.1 - q) rests on the box top
    assert abs(end.joint_q.numpy()[0] + 0.2) < 3e-3
    assert abs(end.joint_qd.numpy()[0]) < 1e-2


# -- drives, limits, armature, damping -------------------------------------------------------------
def test_pd_drive_reaches_its_target():
    model = hinge(gravity=0.0, target_ke=200.0, target_kd=60.0)             # about critically damped
    control = model.control()
    control.joint_target.assign([0.8])
    end = rollout(model, model.state(), 3000, 1e-3, control)
    assert abs(end.joint_q.numpy()[0] - 0.8) < 1e-4
    assert abs(end.joint_qd.numpy()[0]) < 1e-3


def test_stiff_drive_is_stable_at_a_large_step():
    # a drive whose explicit step would need dt < 2 sqrt(I / ke) ~ 3e-3 s runs at 2e-2 s
    model = hinge(gravity=0.0, target_ke=1e5, target_kd=1e2)
    control = model.control()
    control.joint_target.assign([0.5])
    end = rollout(model, model.state(), 200, 2e-2, control)
    assert abs(end.joint_q.numpy()[0] - 0.5) < 1e-6


def test_limit_holds_the_pendulum_against_gravity():
    # released at -0.3 rad, gravity swings it up towards 0; the upper limit at -0.1 holds it
    model = hinge(limit_upper=-0.1, limit_ke=1e4, limit_kd=10.0, target_kd=20.0)
    end = rollout(model, coordinates_state(model, [-0.3], [0.0]), 4000, 1e-3)
    m = model.bodies.mass.numpy()[0]
    sag = m * 9.81 * np.sin(0.1) * 1.0 / 1e4                   # gravity's torque over the limit's stiffness
    assert abs(end.joint_q.numpy()[0] - (-0.1 + sag)) < 0.1 * sag


def test_effort_limit_caps_the_drive_torque():
    model = hinge(gravity=0.0, target_ke=1e4, effort_limit=2.0)
    control = model.control()
    control.joint_target.assign([1.0])
    dt = 1e-3
    s1 = model.state()
    sk.sim.Featherstone().step(model, model.state(), s1, control, dt)
    assert s1.joint_qd.numpy()[0] == pytest.approx(2.0 / pivot_inertia(model) * dt, rel=1e-10)


def test_urdf_limit_effort_becomes_the_effort_limit(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text("""<robot name="arm"><link name="base"/>
      <link name="arm"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
      </inertial></link>
      <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="12.5" velocity="3"/></joint></robot>""")
    b = sk.sim.ModelBuilder(gravity=0.0, up_axis="z", ground=False)
    a = b.add_urdf(str(path))
    model = b.finalize(dtype=F64)
    j = b.imports[a].joints["shoulder"]
    assert model.joints.effort_limit.numpy()[j] == 12.5
    control = model.control()
    control.joint_act.assign(np.where(np.arange(model.joint_count) == j, 100.0, 0.0))
    s1 = model.state()
    sk.sim.Featherstone().step(model, model.state(), s1, control, 1e-3)
    assert s1.joint_qd.numpy()[model.joint_qd_start.numpy()[j]] == pytest.approx(12.5 / 0.1 * 1e-3, rel=1e-10)


def test_effort_limit_caps_joint_act_from_below():
    model = hinge(gravity=0.0, effort_limit=2.0)
    control = model.control()
    control.joint_act.assign([-7.0])
    s1 = model.state()
    sk.sim.Featherstone().step(model, model.state(), s1, control, 1e-3)
    assert s1.joint_qd.numpy()[0] == pytest.approx(-2.0 / pivot_inertia(model) * 1e-3, rel=1e-10)


def test_armature_adds_to_the_joints_inertia():
    model = hinge(gravity=0.0, armature=0.3)
    control = model.control()
    control.joint_act.assign([1.5])
    s1 = model.state()
    sk.sim.Featherstone().step(model, model.state(), s1, control, 1e-3)
    inertia = pivot_inertia(model) + 0.3
    assert s1.joint_qd.numpy()[0] == pytest.approx(1.5 / inertia * 1e-3, rel=1e-10)
    assert sk.sim.mass_matrix(model, model.joint_q)[0, 0] == pytest.approx(inertia, rel=1e-12)


def test_joint_damping_decays_the_velocity_implicitly():
    # target_kd alone is a damper; implicit: qd_{n+1} = qd_n / (1 + dt kd / I)
    model = hinge(gravity=0.0, target_kd=3.0)
    dt, n = 1e-2, 50
    end = rollout(model, coordinates_state(model, [0.0], [2.0]), n, dt)
    expected = 2.0 / (1.0 + dt * 3.0 / pivot_inertia(model)) ** n
    assert end.joint_qd.numpy()[0] == pytest.approx(expected, rel=1e-10)


# -- what else a model holds ---------------------------------------------------------------------
def test_bodies_outside_articulations_and_particles_fall_as_in_semi_implicit_euler():
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.2, 0.0, 0.0), mass=1.0)
    loose = b.add_body(((2.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=loose)
    b.add_articulation()
    link = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, -1.0, 0.0), 0.1, body=link)
    b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0))
    model = b.finalize(dtype=F64)
    ours = rollout(model, model.state(), 100, 1e-3)
    theirs = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 100, 1e-3, keep_states=False)[-1]
    np.testing.assert_allclose(ours.particle_q.numpy(), theirs.particle_q.numpy(), atol=1e-14)
    np.testing.assert_allclose(ours.body_q.numpy()[loose], theirs.body_q.numpy()[loose], atol=1e-14)


def test_simulate_runs_featherstone_and_keeps_joint_coordinates():
    model = hinge()
    states = sk.sim.simulate(model, sk.sim.Featherstone(), coordinates_state(model, [0.3], [0.0]), 10, 1e-3)
    assert states[-1].joint_q.numpy()[0] < 0.3


def test_worlds_step_independently_and_alike():
    # three copies of a driven cart-pole in one model, placed apart, each with its own target
    scene = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=False)
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=False)
    b.add_articulation()
    cart = b.add_body(((0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.2, 0.1, 0.05), body=cart)
    b.add_joint_prismatic(-1, cart, axis=(1.0, 0.0, 0.0), target_ke=30.0, target_kd=5.0)
    pole = b.add_body(((0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_capsule((0.0, 0.0, 0.4), (-0.7071067811865476, 0.0, 0.0, 0.7071067811865476), 0.03, 0.4, body=pole)
    b.add_joint_revolute(cart, pole, axis=(0.0, 1.0, 0.0))
    for w in range(3):
        scene.add_builder(b, xform=((float(w), 5.0 * w, 0.0), (0.0, 0.0, 0.0, 1.0)))
    model = scene.finalize(dtype=F64)
    alone = b.finalize(dtype=F64)
    control = model.control()
    targets = [0.0, 0.5, -0.3]
    control.joint_target.assign(np.repeat(targets, 2) * np.tile([1.0, 0.0], 3))
    start = model.state()
    start.joint_qd.assign(np.tile([0.0, 0.4], 3))
    sk.sim.eval_fk(model, start.joint_q, start.joint_qd, start)
    end = rollout(model, start, 300, 1e-3, control)
    for w, target in enumerate(targets):
        c = alone.control()
        c.joint_target.assign([target, 0.0])
        single = rollout(alone, coordinates_state(alone, alone.joint_q.numpy(), [0.0, 0.4]), 300, 1e-3, c)
        np.testing.assert_allclose(end.joint_q.numpy()[2 * w:2 * w + 2], single.joint_q.numpy(), rtol=0, atol=1e-12)


# -- gradients ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["floating_base", "universal_chain"])
def test_rollout_gradient_wrt_initial_velocities_matches_finite_differences(name):
    model, _xml = MODELS[name]()
    rng = np.random.default_rng(8)
    q, qd = random_coordinates(model, rng)
    w = rng.normal(size=(model.body_count, 7))

    def run(velocities):
        states = [coordinates_state(model, q, velocities, requires_grad=True)] + \
                 [model.state(requires_grad=True) for _ in range(4)]
        for k in range(4):
            sk.sim.Featherstone().step(model, states[k], states[k + 1], None, 1e-2)
        return float(np.sum(states[-1].body_q.numpy() * w)), states

    s0 = model.state(requires_grad=True)
    s0.joint_q.assign(q)
    s0.joint_qd.assign(qd)
    states = [s0] + [model.state(requires_grad=True) for _ in range(4)]
    with sk.Tape() as tape:
        sk.sim.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        for k in range(4):
            sk.sim.Featherstone().step(model, states[k], states[k + 1], None, 1e-2)
    tape.backward(grads={states[-1].body_q: w})
    expected = finite_difference(lambda v: run(v)[0], qd, eps=1e-5)
    np.testing.assert_allclose(s0.joint_qd.grad.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_rollout_gradient_wrt_drive_target_and_act_matches_finite_differences():
    # a box on a damped vertical slider pushed onto the ground, and an arm hinged to it driven
    # past its limit: drive, limit and contact are all in the rollout
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True)
    b.add_articulation()
    base = b.add_body(((0.0, 0.13, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=base)
    b.add_joint_prismatic(-1, base, axis=(0.0, 1.0, 0.0), target_kd=1.0, armature=0.05)
    arm = b.add_body(((0.0, 0.13, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_capsule((0.3, 0.0, 0.0), (0.0, 0.0, 0.7071067811865476, 0.7071067811865476), 0.05, 0.3, body=arm)
    b.add_joint_revolute(base, arm, axis=(0.0, 0.0, 1.0), target_ke=200.0, target_kd=1.0, limit_upper=0.4,
                         limit_ke=1e3, limit_kd=5.0)
    model = b.finalize(dtype=F64, requires_grad=True)
    steps, dt = 30, 5e-3
    weights = np.array([1.0, 0.7])

    def run(values, tape=None):
        control = model.control()
        control.joint_target.requires_grad = True
        control.joint_act.requires_grad = True
        control.joint_target.assign([0.0, values[0]])
        control.joint_act.assign([values[1], 0.0])
        states = [model.state(requires_grad=True) for _ in range(steps + 1)]
        with tape or sk.Tape():
            for k in range(steps):
                sk.sim.Featherstone().step(model, states[k], states[k + 1], control, dt)
        return states, control

    x = np.array([0.6, -3.0])
    tape = sk.Tape()
    states, control = run(x, tape)
    assert max(np.abs(s.body_f.numpy()).max() for s in states[:-1]) > 100.0     # the box hit the ground
    assert max(s.joint_q.numpy()[1] for s in states) > 0.45                      # the arm passed its limit
    tape.backward(grads={states[-1].joint_q: weights})
    grad = [control.joint_target.grad.numpy()[1], control.joint_act.grad.numpy()[0]]
    expected = finite_difference(lambda v: float(run(v)[0][-1].joint_q.numpy() @ weights), x, eps=1e-5)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-8)


@sk.kernel
def angle_loss(q: sk.array(dtype=sk.float64), loss: sk.array(dtype=sk.float64)):
    sk.atomic_add(loss, 0, q[0] * q[0] + 0.5 * q[1])


def test_gradient_of_a_loss_wrt_a_control_made_with_requires_grad_matches_finite_differences():
    # what a MuJoCo user writes for d loss / d ctrl: model.control(requires_grad=True), a Tape
    # over the steps, backward; the control's arrays carry the gradient
    model, _xml = MODELS["double_pendulum"]()
    control = model.control(requires_grad=True)
    assert all(getattr(control, name).requires_grad for name in ("joint_act", "joint_target", "joint_dof_act"))
    assert not model.control().joint_act.requires_grad
    act = np.array([0.4, -0.7])
    control.joint_act.assign(act)
    s0 = model.state()
    s0.joint_q.assign([0.3, -0.2])
    tape, loss = sk.Tape(), sk.zeros(1, dtype=F64)
    end = rollout(model, s0, 3, 1e-2, control=control, tape=tape)
    with tape:
        sk.launch(angle_loss, 1, inputs=[end.joint_q, loss])
    tape.backward(loss=loss)

    def value(a):
        c = model.control()
        c.joint_act.assign(a)
        start = model.state()
        start.joint_q.assign([0.3, -0.2])
        q = rollout(model, start, 3, 1e-2, control=c).joint_q.numpy()
        return q[0] ** 2 + 0.5 * q[1]

    expected = finite_difference(value, act, eps=1e-6)
    assert np.abs(expected).min() > 1e-5
    np.testing.assert_allclose(control.joint_act.grad.numpy(), expected, rtol=1e-6, atol=1e-10)


def test_control_requires_grad_must_be_a_bool():
    with pytest.raises(TypeError, match="requires_grad must be True or False, got str"):
        hinge().control(requires_grad="yes")


@pytest.mark.parametrize("checkpoint_every", [None, 7])
def test_optim_rollout_gradient_wrt_assigned_velocities_matches_finite_differences(checkpoint_every):
    # the velocities are only assigned: the step places the bodies on the tape itself, so the
    # gradient also flows through the first step's velocity-dependent forces
    model, _xml = MODELS["double_pendulum"]()

    def loss(state, out):
        sk.launch(angle_loss, 1, inputs=[state.joint_q, out])

    s0 = model.state(requires_grad=True)
    s0.joint_qd.assign([0.5, -0.3])
    optimized = sk.optim.Rollout(model, sk.sim.Featherstone(), steps=50, dt=1e-3, loss=loss,
                                 checkpoint_every=checkpoint_every)
    grad = optimized.run(s0, wrt=[s0.joint_qd]).grads[0]

    def value(velocities):
        start = model.state()
        start.joint_qd.assign(velocities)
        q = rollout(model, start, 50, 1e-3).joint_q.numpy()
        return q[0] ** 2 + 0.5 * q[1]

    expected = finite_difference(value, np.array([0.5, -0.3]), eps=1e-5)
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-10)


def test_forward_mode_jvp_matches_finite_differences():
    model, _xml = MODELS["floating_base"]()
    q, qd = random_coordinates(model, np.random.default_rng(3))
    v = np.random.default_rng(1).normal(size=qd.shape)

    def final_coordinates(velocities):
        states = [model.state() for _ in range(4)]
        sk.copy(states[0].joint_q, sk.array(q, dtype=F64))
        sk.copy(states[0].joint_qd, velocities)
        sk.sim.eval_fk(model, states[0].joint_q, states[0].joint_qd, states[0])
        for k in range(3):
            sk.sim.Featherstone().step(model, states[k], states[k + 1], None, 1e-2)
        return states[-1].joint_q

    assert_jvp_matches_differences(final_coordinates, qd, v)


def test_forward_mode_through_a_state_whose_bodies_were_placed_outside_the_jvp_reaches_the_coordinates():
    # a step from s0 places s0's bodies and marks them current; a JVP started afterwards must
    # place them again, or the bodies' tangents are zero and d(step)/d joint_q misses them
    model = hinge(target_kd=0.3)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign([0.4])
    s0.joint_qd.assign([0.7])
    sk.sim.Featherstone().step(model, s0, s1, None, 1e-2)
    with sk.autograd.JVP({s0.joint_q: [1.0]}) as fwd:
        sk.sim.Featherstone().step(model, s0, s1, None, 1e-2)
    tangent = fwd.tangent(s1.joint_qd).numpy()[0]

    def velocity(q):
        start, end = model.state(), model.state()
        start.joint_q.assign([q])
        start.joint_qd.assign([0.7])
        sk.sim.Featherstone().step(model, start, end, None, 1e-2)
        return end.joint_qd.numpy()[0]

    expected = (velocity(0.4 + 1e-6) - velocity(0.4 - 1e-6)) / 2e-6
    assert abs(expected) > 0.05
    np.testing.assert_allclose(tangent, expected, rtol=1e-7)


# -- errors ----------------------------------------------------------------------------------------
def test_model_without_articulations_is_a_clear_error():
    b = sk.sim.ModelBuilder()
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize()
    with pytest.raises(ValueError, match="no articulation.*add_articulation"):
        sk.sim.Featherstone().step(model, model.state(), model.state(), None, 1e-3)


def test_a_joint_moving_only_massless_bodies_is_a_clear_error():
    b = sk.sim.ModelBuilder()
    b.add_articulation()
    body = b.add_body()
    b.add_joint_revolute(-1, body)
    model = b.finalize()
    with pytest.raises(ValueError, match="joint 0 moves only bodies without mass.*armature"):
        sk.sim.Featherstone().step(model, model.state(), model.state(), None, 1e-3)


def test_bad_step_arguments_are_clear_errors():
    model = hinge()
    with pytest.raises(ValueError, match="dt must be"):
        sk.sim.Featherstone().step(model, model.state(), model.state(), None, 0.0)
    s = model.state()
    with pytest.raises(ValueError, match="different states"):
        sk.sim.Featherstone().step(model, s, s, None, 1e-3)
    with pytest.raises(TypeError, match="control must be"):
        sk.sim.Featherstone().step(model, model.state(), model.state(), "zero", 1e-3)


def test_negative_armature_and_effort_limit_are_refused():
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    with pytest.raises(ValueError, match="armature"):
        b.add_joint_revolute(-1, body, armature=-1.0)
    with pytest.raises(ValueError, match="effort_limit"):
        b.add_joint_prismatic(-1, body, effort_limit=-2.0)
