"""Gradients through the joint-limit rows of Featherstone(contact="constraint") (implicit
differentiation of the solve at its solution, as for contacts) against central
differences, in float64: a pendulum pressed against its upper limit by gravity and its
motor, and a two-link arm whose elbow presses on its lower limit (the rows couple the links).
"""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


def arm(links: int):
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=False)
    b.add_articulation()
    parent = -1
    for k in range(links):
        body = b.add_body(((0.5 * k, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)))
        b.add_shape_capsule((0.25, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.04, 0.2, body=body, density=500.0)
        # gravity turns the arm to +q: the shoulder rests on its upper limit, the elbow is
        # pressed on its lower one by its motor
        lo, hi = (-1.0, 0.2) if k == 0 else (0.3, 1.0)
        b.add_joint_revolute(parent, body, axis=(0.0, 1.0, 0.0), limit_lower=lo, limit_upper=hi,
                             limit_solref=(0.02, 0.8), limit_margin=0.01)
        parent = body
    return b.finalize(dtype=F64, requires_grad=True)


def rollout(links: int, x: np.ndarray, tape=None, steps: int = 25, dt: float = 2e-3):
    model = arm(links)                       # a new model per run: the same (empty) warm start
    integrator = sk.sim.Featherstone(contact="constraint", tolerance=1e-15, iterations=500)
    # the rows' inverse weights (MuJoCo's dof_invweight0, constants of the model) are taken
    # at the first step's configuration: here the model's own, not the perturbed start
    integrator.step(model, model.state(), model.state(), None, dt)
    control = model.control()
    control.joint_act.requires_grad = True
    control.joint_act.assign(x[2 * links:])
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    states[0].joint_q.assign(x[:links])
    states[0].joint_qd.assign(x[links:2 * links])
    with tape or sk.Tape():
        for k in range(steps):
            integrator.step(model, states[k], states[k + 1], control, dt)
    return states, control


@pytest.mark.parametrize("links", [1, 2])
def test_rollout_gradient_through_joint_limits_matches_finite_differences(links):
    # joint_q (each within the margin of its limit), joint_qd, joint_act
    x = np.concatenate([[0.195, 0.305][:links], [0.3, -0.2][:links], [2.0, -6.0][:links]])
    w = np.random.default_rng(3).normal(size=2 * links)
    tape = sk.Tape()
    states, control = rollout(links, x, tape)
    end = states[-1]
    q = end.joint_q.numpy()
    assert abs(q[0] - 0.2) < 0.02                      # still pressed on the limits
    if links == 2:
        assert abs(q[1] - 0.3) < 0.02
    tape.backward(grads={end.joint_q: w[:links], end.joint_qd: w[links:]})
    grad = np.concatenate([states[0].joint_q.grad.numpy(), states[0].joint_qd.grad.numpy(),
                           control.joint_act.grad.numpy()])

    def loss(v):
        s = rollout(links, v)[0][-1]
        return float(s.joint_q.numpy() @ w[:links] + s.joint_qd.numpy() @ w[links:])

    eps = 1e-6
    expected = np.array([(loss(x + eps * e) - loss(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])
    np.testing.assert_allclose(grad, expected, rtol=0.0, atol=1e-6 * np.abs(expected).max())
