"""Gradients through Featherstone(contact="constraint") (implicit differentiation of the
contact solve at its solution) against central differences, in float64, for a box on a
20 degree incline that sticks, slides, or leaves the ground.

Tolerance: the solve and its adjoint are exact (the active-set solve of the pyramidal dual
and its factorization: kernels/contact_active_set.py); what separates them from central
differences with a step of 1e-6 is the differences' own error, 1e-8 of the largest
derivative (Gauss-Seidel alone, stopped at 1000 sweeps on these 16 nearly dependent rows,
left 3e-5).
"""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64
SLOPE = np.radians(20.0)
STATES = {  # friction coefficient, initial joint_qd (linear, angular)
    "sticking": (0.8, [0.01, 0.0, 0.0, 0.0, 0.0, 0.0]),
    "sliding": (0.2, [0.5, 0.1, 0.0, 0.0, 0.0, 0.3]),
    "separating": (0.5, [0.1, 0.0, 0.3, 0.2, 0.0, 0.0]),
}


def rollout(mu: float, x: np.ndarray, tape=None, steps: int = 20, dt: float = 1e-3):
    # a new model per run: each starts with the same (empty) warm start
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.set_ground_material(mu=mu)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.1 - 5e-5), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0, mu=mu)
    b.add_joint_free(-1, body)
    model = b.finalize(dtype=F64, requires_grad=True)
    model.gravity = type(model.gravity)(9.81 * np.sin(SLOPE), 0.0, -9.81 * np.cos(SLOPE))
    integrator = sk.sim.Featherstone(contact="constraint", impratio=10.0, tolerance=1e-14, iterations=1000)
    control = model.control()
    control.joint_dof_act.requires_grad = True
    control.joint_dof_act.assign(x[6:])
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    states[0].joint_qd.assign(x[:6])
    with tape or sk.Tape():
        for k in range(steps):
            integrator.step(model, states[k], states[k + 1], control, dt)
    return states, control


@pytest.mark.parametrize("name", list(STATES))
def test_rollout_gradient_through_contact_matches_finite_differences(name):
    mu, qd = STATES[name]
    x = np.concatenate([qd, [0.3, -0.2, 0.5, 0.01, 0.02, -0.01]])   # initial joint_qd, then joint_dof_act
    w = np.random.default_rng(1).normal(size=7)
    tape = sk.Tape()
    states, control = rollout(mu, x, tape)
    z = states[-1].joint_q.numpy()[2]
    if name == "separating":
        assert z > 0.1 + 1e-3                   # in the air at the end
    else:
        assert z < 0.1 + 1e-4                   # still on the ground
    tape.backward(grads={states[-1].joint_q: w})
    grad = np.concatenate([states[0].joint_qd.grad.numpy(), control.joint_dof_act.grad.numpy()])

    def loss(v):
        return float(rollout(mu, v)[0][-1].joint_q.numpy() @ w)

    eps = 1e-6
    expected = np.array([(loss(x + eps * e) - loss(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])
    np.testing.assert_allclose(grad, expected, rtol=0.0, atol=1e-6 * np.abs(expected).max())
