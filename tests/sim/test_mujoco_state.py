"""MuJoCo's qpos / qvel / ctrl and simkit's joint_q / joint_qd / control, both ways, on the import
record (issue 30, item 4), checked against MuJoCo itself: gymnasium's ant and a small file with
what the ant lacks (a ball joint, hinge and slide references, position and velocity
actuators) are set to a random state and control in MuJoCo, converted, stepped once in both
(contacts and limits off, MuJoCo's Euler: the same scheme) and compared; converting back is
the identity to rounding."""

import os
import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.sim.importers import RobotFileWarning

mujoco = pytest.importorskip("mujoco")

F64 = sk.float64

SMALL = """
<mujoco>
  <compiler angle="radian"/>
  <option gravity="0 0 -9.81" timestep="0.001"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="swing" type="hinge" axis="0 1 0" ref="0.3" damping="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 -0.4" size="0.05"/>
      <body name="b" pos="0.3 0 -0.4">
        <joint name="slider" type="slide" axis="1 0 1" ref="-0.1"/>
        <geom type="box" size="0.1 0.05 0.08"/>
        <body name="c" pos="0 0 -0.2">
          <joint name="wrist" type="ball"/>
          <geom type="capsule" fromto="0 0 0 0.1 0.2 -0.2" size="0.04"/>
          <body name="d" pos="0.1 0.2 -0.2">
            <joint name="finger" type="hinge" axis="1 0 0"/>
            <geom type="sphere" size="0.06" pos="0 0.1 0"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="hold" joint="swing" kp="5" gear="2"/>
    <velocity name="push" joint="slider" kv="3" gear="1.5"/>
    <motor name="twist" joint="finger" gear="4" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


def written(tmp_path, xml, name="robot.xml"):
    path = tmp_path / name
    path.write_text(xml)
    return str(path)


def both(path):
    """simkit's float64 model (colliders and limits off) and record, and MuJoCo's model of
    the same file set to the same physics: Euler, contacts and limits off, no joint stiffness
    or free-joint damping (which simkit does not simulate)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=False)
        a = b.add_mjcf(path)
    for shape in range(b.shape_count):
        b.set_shape_collision(shape, group=0, mask=0)
    record, model = b.imports[a], b.finalize(dtype=F64)
    model.joints.limit_ke.zero_()
    model.joints.limit_kd.zero_()
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    m.jnt_stiffness[:] = 0.0
    for j in range(m.njnt):
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            m.dof_damping[m.jnt_dofadr[j]:m.jnt_dofadr[j] + 6] = 0.0
    return record, model, m


def ant():
    gymnasium = pytest.importorskip("gymnasium")
    return both(os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml"))


def random_mujoco_state(m, rng):
    """MuJoCo data at a random pose (free and ball joints anywhere, hinges and slides +-0.5 about
    qpos0), random velocities and random controls inside their ranges."""
    d = mujoco.MjData(m)
    for j in range(m.njnt):
        adr, kind = m.jnt_qposadr[j], m.jnt_type[j]
        if kind == mujoco.mjtJoint.mjJNT_FREE:
            d.qpos[adr:adr + 3] = rng.normal(size=3)
            d.qpos[adr + 3:adr + 7] = rng.normal(size=4)
            d.qpos[adr + 3:adr + 7] /= np.linalg.norm(d.qpos[adr + 3:adr + 7])
        elif kind == mujoco.mjtJoint.mjJNT_BALL:
            d.qpos[adr:adr + 4] = rng.normal(size=4)
            d.qpos[adr:adr + 4] /= np.linalg.norm(d.qpos[adr:adr + 4])
        else:
            d.qpos[adr] = m.qpos0[adr] + rng.uniform(-0.5, 0.5)
    d.qvel[:] = rng.normal(size=m.nv)
    d.ctrl[:] = rng.uniform(-1.0, 1.0, m.nu)
    return d


def unactuated(xml):
    return xml[:xml.index("<actuator>")] + xml[xml.index("</actuator>") + len("</actuator>"):]


@pytest.mark.parametrize("which", ["ant", "small"])
def test_one_step_from_a_converted_mujoco_state_and_control_lands_where_mujoco_does(which, tmp_path):
    # the small file without its actuators: MuJoCo's Euler takes actuator gains explicitly and
    # simkit its drives implicitly (test_converted_controls_give_mujocos_actuator_forces checks
    # their mapping instead); the ant's motors are plain forces in both
    record, model, m = ant() if which == "ant" else both(written(tmp_path, unactuated(SMALL)))
    m.opt.timestep = dt = 1e-3
    for seed in range(3):
        d = random_mujoco_state(m, np.random.default_rng(seed))
        s0, s1 = record.state_from_mujoco(model, d.qpos, d.qvel), model.state()
        control = record.control_from_mujoco(model, d.ctrl)
        sk.sim.Featherstone().step(model, s0, s1, control, dt)
        mujoco.mj_step(m, d)
        qpos, qvel = record.state_to_mujoco(model, s1)
        # the same semi-implicit Euler; MuJoCo turns quaternions by the exponential map, simkit
        # to first order (5e-11 here), everything else agrees to rounding
        np.testing.assert_allclose(qvel, d.qvel, rtol=0, atol=1e-12 * max(1.0, np.abs(d.qvel).max()))
        np.testing.assert_allclose(qpos, d.qpos, rtol=0, atol=1e-9)


@pytest.mark.parametrize("which", ["ant", "small"])
def test_converting_mujoco_state_and_control_to_simkit_and_back_is_the_identity(which, tmp_path):
    record, model, m = ant() if which == "ant" else both(written(tmp_path, SMALL))
    d = random_mujoco_state(m, np.random.default_rng(4))
    state = record.state_from_mujoco(model, d.qpos, d.qvel)
    qpos, qvel = record.state_to_mujoco(model, state)
    np.testing.assert_allclose(qpos, d.qpos, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(qvel, d.qvel, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(record.control_to_mujoco(model, record.control_from_mujoco(model, d.ctrl)), d.ctrl,
                               rtol=1e-15, atol=1e-16)
    start, stop = model.articulation_coords(record.articulation)
    q = state.joint_q.numpy()[start:stop]
    np.testing.assert_array_equal(record.joint_q_from_mujoco(record.joint_q_to_mujoco(q)), q)


def test_quaternions_refs_and_velocity_frames_are_converted_as_documented(tmp_path):
    record, model, m = both(written(tmp_path, SMALL))
    d = random_mujoco_state(m, np.random.default_rng(5))
    q = record.joint_q_from_mujoco(d.qpos)
    np.testing.assert_array_equal(q[2:6], np.roll(d.qpos[2:6], -1))                # ball: w last in simkit
    np.testing.assert_allclose(q[[0, 1]], d.qpos[[0, 1]] - [0.3, -0.1], rtol=0, atol=1e-15)   # minus ref
    qd = record.joint_qd_from_mujoco(d.qvel, d.qpos)
    R = sk.sim.geometry.quat_to_matrix(q[2:6])
    np.testing.assert_allclose(qd[2:5], R @ d.qvel[2:5], rtol=0, atol=1e-15)          # child frame -> parent
    np.testing.assert_array_equal(qd[[0, 1, 5]], d.qvel[[0, 1, 5]])


def test_actuators_map_to_joint_act_targets_and_target_rates_through_gear_gain_and_ref(tmp_path):
    record, model, _m = both(written(tmp_path, SMALL))
    control = record.control_from_mujoco(model, [0.8, -0.5, 0.25])
    j = record.joints
    ke, kd = model.joints.target_ke.numpy(), model.joints.target_kd.numpy()
    assert ke[j["swing"]] == 5.0 * 2.0 ** 2 and kd[j["slider"]] == 3.0 * 1.5 ** 2
    # position: kp gear ctrl - kp gear^2 (q + ref) = ke (target - q)
    assert control.joint_target.numpy()[j["swing"]] == pytest.approx(0.8 / 2.0 - 0.3, abs=1e-15)
    # velocity: kv gear ctrl - kv gear^2 qd = kd (target_vel - qd)
    assert control.joint_target_vel.numpy()[j["slider"]] == pytest.approx(-0.5 / 1.5, abs=1e-15)
    assert control.joint_act.numpy()[j["finger"]] == 4.0 * 0.25


def test_converted_controls_give_mujocos_actuator_forces(tmp_path):
    # simkit's drive ke (target - q) + kd (target_vel - qd) + act on each hinge and slide is
    # MuJoCo's actuator force plus its joint damping (kd holds both) at the same state
    record, model, m = both(written(tmp_path, SMALL))
    for seed in range(3):
        d = random_mujoco_state(m, np.random.default_rng(seed))
        d.ctrl[2] = 0.7
        mujoco.mj_forward(m, d)
        state, control = record.state_from_mujoco(model, d.qpos, d.qvel), record.control_from_mujoco(model, d.ctrl)
        ke, kd = model.joints.target_ke.numpy(), model.joints.target_kd.numpy()
        q, qd = state.joint_q.numpy(), state.joint_qd.numpy()
        for name, dof in (("swing", 0), ("slider", 1), ("finger", 5)):
            j = record.joints[name]
            ours = (ke[j] * (control.joint_target.numpy()[j] - q[model.joint_q_start.numpy()[j]])
                    + kd[j] * (control.joint_target_vel.numpy()[j] - qd[model.joint_qd_start.numpy()[j]])
                    + control.joint_act.numpy()[j])
            theirs = d.qfrc_actuator[dof] + d.qfrc_passive[dof]
            assert ours == pytest.approx(theirs, rel=1e-13, abs=1e-13), name


def test_ctrl_outside_ctrlrange_is_clamped_where_mujoco_clamps_it(tmp_path):
    record, model, m = both(written(tmp_path, SMALL))
    assert [e["ctrllimited"] for e in record.actuators] == list(m.actuator_ctrllimited.astype(bool))
    control = record.control_from_mujoco(model, [0.0, 0.0, 3.0])
    assert control.joint_act.numpy()[record.joints["finger"]] == 4.0


def test_ant_actuators_are_gear_150_motors_clamped_to_one():
    record, model, m = ant()
    assert [e["ctrllimited"] for e in record.actuators] == list(m.actuator_ctrllimited.astype(bool))
    control = record.control_from_mujoco(model, np.full(m.nu, 2.0))
    hips = [record.joints[m.joint(m.actuator_trnid[k, 0]).name] for k in range(m.nu)]
    np.testing.assert_array_equal(control.joint_act.numpy()[hips], m.actuator_gear[:, 0])


def test_conversion_errors_name_the_sizes_and_the_actuator(tmp_path):
    record, model, m = both(written(tmp_path, SMALL))
    with pytest.raises(ValueError, match=r"state_from_mujoco: qpos must have shape \(7,\), got \(6,\)"):
        record.state_from_mujoco(model, np.zeros(6), np.zeros(m.nv))
    with pytest.raises(ValueError, match=r"control_from_mujoco: ctrl \(one per actuator of the file\) must have "
                                         r"shape \(3,\)"):
        record.control_from_mujoco(model, [1.0])
    with pytest.raises(ValueError, match=r"joint_qd_to_mujoco: joint_qd .* must have shape \(6,\)"):
        record.joint_qd_to_mujoco(np.zeros(5), np.zeros(7))


def test_ctrl_of_an_actuator_simkit_does_not_simulate_must_be_zero(tmp_path):
    xml = SMALL.replace('<motor name="twist" joint="finger"', '<motor name="twist" joint="wrist"')
    record, model, _m = both(written(tmp_path, xml))
    record.control_from_mujoco(model, [0.1, 0.2, 0.0])
    with pytest.raises(ValueError, match=r"actuator 2 \('twist', a motor on 'wrist'\) is recorded, not simulated"):
        record.control_from_mujoco(model, [0.1, 0.2, 0.5])


def test_two_motors_on_one_joint_have_no_unique_ctrl(tmp_path):
    xml = SMALL.replace('</actuator>', '<motor name="twist2" joint="finger" gear="2"/></actuator>')
    record, model, _m = both(written(tmp_path, xml))
    control = record.control_from_mujoco(model, [0.0, 0.0, 0.5, 0.25])
    assert control.joint_act.numpy()[record.joints["finger"]] == 4.0 * 0.5 + 2.0 * 0.25
    with pytest.raises(ValueError, match="actuators 2 and 3 are both motor actuators on joint 'finger'"):
        record.control_to_mujoco(model, control)
