"""The step Jacobian of sk.autograd.jacobian (issue 30, item 3) against MuJoCo's
mjd_transitionFD on gymnasium's hopper (hinges and slides only, so MuJoCo's tangent-space
state is simkit's joint_q / joint_qd), contacts and limits off and MuJoCo on its Euler
integrator, the scheme Featherstone takes: A = d(qpos', qvel') / d(qpos, qvel) and
B = d(qpos', qvel') / d ctrl (through the motors' gears)."""

import os

import numpy as np
import pytest

import simkit as sk
from test_mujoco_state import both, random_mujoco_state

mujoco = pytest.importorskip("mujoco")
gymnasium = pytest.importorskip("gymnasium")


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_hopper_step_jacobian_matches_mujocos_transition_derivatives(mode):
    record, model, m = both(os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets",
                                         "hopper.xml"))
    assert all(kind in ("hinge", "slide") for _n, kind, _j in record.joint_order)
    dt, nx = m.opt.timestep, 2 * m.nv
    for seed in range(2):
        d = random_mujoco_state(m, np.random.default_rng(seed))
        d.ctrl[:] *= 0.9                      # inside ctrlrange: MuJoCo's differences do not clamp
        s0, s1 = record.state_from_mujoco(model, d.qpos, d.qvel), model.state()
        control = record.control_from_mujoco(model, d.ctrl)
        integrator = sk.sim.Featherstone()
        J = sk.autograd.jacobian(lambda: integrator.step(model, s0, s1, control, dt),
                                 [s0.joint_q, s0.joint_qd, control.joint_act], [s1.joint_q, s1.joint_qd], mode=mode)
        A, B = np.zeros((nx, nx)), np.zeros((nx, m.nu))
        mujoco.mjd_transitionFD(m, d, 1e-6, True, A, B, None, None)
        motors = [record.joints[m.joint(m.actuator_trnid[k, 0]).name] for k in range(m.nu)]
        B_ours = J[:, nx:][:, motors] * m.actuator_gear[:, 0]     # d joint_act / d ctrl = gear
        # MuJoCo's central differences (eps 1e-6) are good to about 1e-9 of the largest entry
        np.testing.assert_allclose(J[:, :nx], A, rtol=0, atol=1e-8 * np.abs(A).max())
        np.testing.assert_allclose(B_ours, B, rtol=0, atol=1e-8 * np.abs(B).max())
