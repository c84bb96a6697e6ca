"""gymnasium's ant, unactuated, standing on its feet under Featherstone(contact="constraint")
next to MuJoCo's mj_step (Euler, same dt) from the same pose.

The pose: the torso at 0.65 m and every ankle at 1 rad, inside its 30 to 70 degree range.
(From the file's own pose, ankles at 0, outside their range, the two differ before any
contact: MuJoCo's joint limits are soft constraints that fling the ankles to about 1 rad in
the air, simkit's penalty limits stop them at 30 degrees, where the ant then rests at
0.36 m. That is the joint-limit model, not the contact.)
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
    model = b.finalize(dtype=sk.float64)
    if not model.shapes.margin.numpy().any():
        # the file's <default><geom margin="0.01"/>, floor included, until the importer reads it
        model.shapes.margin.assign(np.full(model.shape_count, 0.01))
        model.contact.ground_margin.assign([0.01])
    return model


@pytest.mark.parametrize("dt, duration", [(1e-3, 1.0), (5e-3, 3.0)])
def test_unactuated_ant_rests_at_mujocos_torso_height(dt, duration):
    m = mujoco.MjModel.from_xml_path(PATH)
    m.opt.timestep = dt
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
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
