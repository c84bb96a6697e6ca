"""The step Jacobian of sk.autograd.jacobian (issue 30, item 3) against MuJoCo's
mjd_transitionFD, contacts and limits off and MuJoCo on its Euler integrator, the scheme
Featherstone takes: A = d x' / d x and B = d x' / d ctrl for MuJoCo's tangent-space state
x = (dqpos, qvel). On gymnasium's hopper (hinges and slides only) x is simkit's
(joint_q, joint_qd) and B goes through the motors' gears; on the ant and on a file with a
ball joint the record's tangent maps take the Jacobian to MuJoCo's space."""

import os

import numpy as np
import pytest

import simkit as sk
from test_mujoco_state import SMALL, both, random_mujoco_state, unactuated, written

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


def mujoco_transition(m, d):
    A, B = np.zeros((2 * m.nv, 2 * m.nv)), np.zeros((2 * m.nv, m.nu))
    mujoco.mjd_transitionFD(m, d, 1e-6, True, A, B, None, None)
    return A, B


@pytest.mark.parametrize("which", ["ant", "ball"])
def test_step_jacobian_in_mujocos_tangent_space_matches_its_transition_derivatives(which, tmp_path):
    # free and ball joints: the record's tangent maps turn d(joint_q', joint_qd') / d(joint_q,
    # joint_qd) into MuJoCo's A; at dt = 1e-3 the two quaternion integrators (MuJoCo's
    # exponential map, simkit's first order) differ in the derivatives by about 1e-10
    if which == "ant":
        path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
    else:
        path = written(tmp_path, unactuated(SMALL))
    record, model, m = both(path)
    m.opt.timestep = dt = 1e-3
    d = random_mujoco_state(m, np.random.default_rng(1))
    d.ctrl[:] *= 0.9
    s0, s1 = record.state_from_mujoco(model, d.qpos, d.qvel), model.state()
    control = record.control_from_mujoco(model, d.ctrl)
    integrator = sk.sim.Featherstone()
    J = sk.autograd.jacobian(lambda: integrator.step(model, s0, s1, control, dt),
                             [s0.joint_q, s0.joint_qd, control.joint_act], [s1.joint_q, s1.joint_qd])
    n = model.joint_coord_count + model.joint_dof_count
    to_mujoco = record.tangent_to_mujoco(model, s1)
    A_ours = to_mujoco @ J[:, :n] @ record.tangent_from_mujoco(model, s0)
    A, B = mujoco_transition(m, d)
    np.testing.assert_allclose(A_ours, A, rtol=0, atol=1e-8 * np.abs(A).max())
    if m.nu:
        B_ours = to_mujoco @ J[:, n:] @ record.control_jacobians(model)["joint_act"]
        np.testing.assert_allclose(B_ours, B, rtol=0, atol=1e-8 * np.abs(B).max())


def test_the_tangent_maps_are_inverse_on_mujocos_tangent_space(tmp_path):
    record, model, m = both(written(tmp_path, SMALL))
    d = random_mujoco_state(m, np.random.default_rng(2))
    state = record.state_from_mujoco(model, d.qpos, d.qvel)
    P_in, P_out = record.tangent_from_mujoco(model, state), record.tangent_to_mujoco(model, state)
    assert P_in.shape == (7 + 6, 2 * m.nv) and P_out.shape == (2 * m.nv, 7 + 6)
    np.testing.assert_allclose(P_out @ P_in, np.eye(2 * m.nv), rtol=0, atol=1e-14)


def test_control_jacobians_are_the_derivatives_of_control_from_mujoco(tmp_path):
    record, model, m = both(written(tmp_path, SMALL))
    ctrl, eps = np.array([0.2, -0.3, 0.1]), 1e-6
    G = record.control_jacobians(model)
    for k in range(m.nu):
        up, down = ctrl.copy(), ctrl.copy()
        up[k] += eps
        down[k] -= eps
        for name, block in G.items():
            diff = (getattr(record.control_from_mujoco(model, up), name).numpy()
                    - getattr(record.control_from_mujoco(model, down), name).numpy()) / (2 * eps)
            np.testing.assert_allclose(block[:, k], diff, rtol=1e-9, atol=1e-9)
