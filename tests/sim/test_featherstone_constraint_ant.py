"""gymnasium's ant, unactuated, standing on its feet under Featherstone(contact="constraint")
next to MuJoCo's mj_step (Euler, same dt): from a pose inside the joint ranges (the torso
at 0.65 m, every ankle at 1 rad, inside its 30 to 70 degree range), and dropped from the
file's own pose (ankles at 0, outside their ranges: the soft limit constraints fling them
to about 1 rad in the air, as MuJoCo's do).

Both solve the constraints against the mass matrix without the joint damping and apply
the damping implicitly after (MuJoCo's Euler): from the file's pose the torso heights
agree to 4e-12 m at both time steps (the bound is the issue's 2 cm).
"""

import os
import warnings

import numpy as np
import pytest

import simkit as sk

mujoco = pytest.importorskip("mujoco")
gymnasium = pytest.importorskip("gymnasium")
PATH = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
ANKLES = [0.0, 1.0, 0.0, -1.0, 0.0, -1.0, 0.0, 1.0]


def simkit_ant():
    from simkit.sim.importers import RobotFileWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=True)
        b.add_mjcf(PATH)
    return b.finalize(dtype=sk.float64)


def mujoco_ant(dt):
    m = mujoco.MjModel.from_xml_path(PATH)
    m.opt.timestep = dt
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    return m, mujoco.MjData(m)


@pytest.mark.parametrize("dt, duration", [(1e-3, 1.0), (5e-3, 3.0)])
def test_unactuated_ant_rests_at_mujocos_torso_height(dt, duration):
    m, d = mujoco_ant(dt)
    q = m.qpos0.copy()
    q[2] = 0.65
    q[7:] = ANKLES
    d.qpos[:] = q
    model = simkit_ant()
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(np.concatenate([q[:3], q[4:7], q[3:4], q[7:]]))     # quaternion (x, y, z, w)
    integrator = sk.sim.Featherstone(contact="constraint")
    for _ in range(int(round(duration / dt))):
        integrator.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        mujoco.mj_step(m, d)
    ours = s0.joint_q.numpy()
    assert abs(ours[2] - d.qpos[2]) < 0.02            # the bound; measured: below 1 mm
    np.testing.assert_allclose(ours[7:], d.qpos[7:], atol=0.02)


@pytest.mark.parametrize("dt, duration", [(1e-3, 1.5), (5e-3, 3.0)])
def test_unactuated_ant_dropped_from_the_files_pose_rests_at_mujocos_torso_height(dt, duration):
    m, d = mujoco_ant(dt)
    model = simkit_ant()
    s0, s1 = model.state(), model.state()             # the file's pose: MuJoCo's qpos0
    integrator = sk.sim.Featherstone(contact="constraint")
    for _ in range(int(round(duration / dt))):
        integrator.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        mujoco.mj_step(m, d)
    ours = s0.joint_q.numpy()
    assert 0.53 < d.qpos[2] < 0.6                     # MuJoCo's ant stands
    assert abs(ours[2] - d.qpos[2]) < 0.02            # the bound; measured: 4e-12 m
    np.testing.assert_allclose(ours[7:], d.qpos[7:], atol=0.03)
    np.testing.assert_allclose(s0.joint_qd.numpy()[6:], 0.0, atol=0.05)     # at rest
