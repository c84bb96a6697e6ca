"""Gradients through Featherstone(contact="constraint") with the elliptic friction cone
(implicit differentiation of the cone-constrained solve at its solution:
kernels/contact_elliptic.py) against central differences, in float64, for a box on a 20
degree incline whose four corners stick inside the cone, slide on its surface, leave the
ground, or do both at once; the inputs are the initial joint_qd, joint_dof_act and the box's
friction coefficient.

The states are those of test_featherstone_constraint_contact_grad.py but for sticking: with
mu = 0.8 two of the four corners' forces lie on the elliptic cone (the regularized solve
shares the load unevenly, as the pyramid at 0.8 leaves edges at zero), so that is the mixed
state here, and mu = 1.5 keeps every corner inside (at most 0.85 of the cone's radius).

Tolerance: Gauss-Seidel is run to convergence (tolerance 1e-14, at most 20000 sweeps; these
need up to 6800) and the adjoint is solved exactly, so what separates the gradient from
central differences with a step of 1e-5 is the differences' own error: measured 9.5e-10
(sticking), 3.8e-10 (sliding), 2.4e-10 (separating) and 1.2e-9 (mixed) of the largest
derivative (bound 5e-9; a step of 1e-6 leaves 2e-9 to 1.1e-8, rounding).
"""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64
SLOPE = np.radians(20.0)
STATES = {  # friction coefficient, initial joint_qd (linear, angular), steps
    "sticking": (1.5, [0.01, 0.0, 0.0, 0.0, 0.0, 0.0], 20),
    "sliding": (0.2, [0.5, 0.1, 0.0, 0.0, 0.0, 0.3], 20),
    "separating": (0.5, [0.1, 0.0, 0.3, 0.2, 0.0, 0.0], 20),
    "mixed": (0.8, [0.01, 0.0, 0.0, 0.0, 0.0, 0.0], 10),
}


def rollout(x: np.ndarray, steps: int, tape=None, dt: float = 1e-3, real=F64, tolerance: float = 1e-14):
    # a new model per run: each starts with the same (empty) warm start. The ground's mu is
    # 0, so the pair's (the larger) is the box's, x[12]
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.set_ground_material(mu=0.0)
    b.set_contact_options(cone="elliptic")
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.1 - 5e-5), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0, mu=x[12])
    b.add_joint_free(-1, body)
    model = b.finalize(dtype=real, requires_grad=True)
    model.gravity = type(model.gravity)(9.81 * np.sin(SLOPE), 0.0, -9.81 * np.cos(SLOPE))
    integrator = sk.sim.Featherstone(contact="constraint", impratio=10.0, tolerance=tolerance, iterations=20000)
    control = model.control()
    control.joint_dof_act.requires_grad = True
    control.joint_dof_act.assign(x[6:12])
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    states[0].joint_qd.assign(x[:6])
    with tape or sk.Tape():
        for k in range(steps):
            integrator.step(model, states[k], states[k + 1], control, dt)
    return states, control, model, integrator


def cone_ratios(states, mu: float) -> list:
    # per step, |f_t| / (mu f_n) of each contact that pushes (1: on the cone's surface)
    out = []
    for s in states[1:]:
        F = s.contact_force.numpy().reshape(-1, 4)
        on = F[:, 0] > 0.0
        out.append(np.hypot(F[on, 1], F[on, 2]) / (mu * F[on, 0]))
    return out


@pytest.mark.parametrize("name", list(STATES))
def test_rollout_gradient_through_elliptic_contact_matches_finite_differences(name):
    mu, qd, steps = STATES[name]
    x = np.concatenate([qd, [0.3, -0.2, 0.5, 0.01, 0.02, -0.01], [mu]])   # joint_qd, joint_dof_act, mu
    w = np.random.default_rng(1).normal(size=7)
    tape = sk.Tape()
    states, control, model, integrator = rollout(x, steps, tape)
    ratios = cone_ratios(states, mu)
    z = states[-1].joint_q.numpy()[2]
    if name == "sticking":        # all four corners push, strictly inside the cone, every step
        assert all(len(r) == 4 and r.max() < 0.9 for r in ratios)
    elif name == "sliding":       # every pushing corner on the surface; the box keeps its speed down the slope
        assert sum(len(r) > 0 for r in ratios) >= steps // 2
        assert all(np.all(np.abs(r - 1.0) < 1e-9) for r in ratios)
        assert states[-1].joint_qd.numpy()[0] > 0.4
    elif name == "mixed":         # some corners on the surface, some inside, every step
        assert all(r.max() > 1.0 - 1e-9 and r.min() < 0.9 for r in ratios)
    else:                         # touching at the start (4 active contacts) but never pushing
        assert model._featherstone["contact_solves"][integrator.max_contacts].needed.numpy()[0] == 4
        assert all(len(r) == 0 for r in ratios)
        assert z > 0.1 + 1e-3
    if name != "separating":
        assert z < 0.1 + 1e-4     # still on the ground
    tape.backward(grads={states[-1].joint_q: w})
    grad = np.concatenate([states[0].joint_qd.grad.numpy(), control.joint_dof_act.grad.numpy(),
                           model.shapes.mu.grad.numpy()])
    if name in ("sticking", "separating"):
        assert grad[12] == 0.0    # no corner's force depends on mu

    def loss(v):
        return float(rollout(v, steps)[0][-1].joint_q.numpy() @ w)

    eps = 1e-5
    expected = np.array([(loss(x + eps * e) - loss(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])
    np.testing.assert_allclose(grad, expected, rtol=0.0, atol=5e-9 * np.abs(expected).max())


def test_float32_gradient_of_a_sliding_box_is_float64s():
    # in float32 the projection leaves a sliding force on the cone to float32's rounding,
    # which the backward must still take as sliding (taken as sticking, the gradient was 6%
    # off); measured 1.6e-7 of the largest entry from float64's (bound 1e-5)
    mu = 0.2
    x = np.concatenate([[0.3, 0.0, 0.0, 0.0, 0.0, 0.0], np.zeros(6), [mu]])   # down the slope, no push
    grads = []
    for real, tolerance in ((sk.float32, 1e-6), (F64, 1e-14)):
        tape = sk.Tape()
        states, control, model, _ = rollout(x.astype(real.np_dtype), 4, tape, real=real, tolerance=tolerance)
        assert all(np.all(np.abs(r - 1.0) < 1e-6) and len(r) == 4 for r in cone_ratios(states, mu))
        tape.backward(grads={states[-1].joint_qd: np.eye(6, dtype=real.np_dtype)[0]})
        grads.append(np.concatenate([states[0].joint_qd.grad.numpy(), model.shapes.mu.grad.numpy()]))
    np.testing.assert_allclose(grads[0], grads[1], rtol=0.0, atol=1e-5 * np.abs(grads[1]).max())


def test_above_128_rows_the_gauss_seidel_adjoint_matches_finite_differences():
    # nine boxes, 36 contacts of 4 rows: past the Cholesky's 128 rows, the backward solves
    # its system by block Gauss-Seidel. The derivative along the boxes' common initial
    # speed down the slope: measured 4.2e-9 from central differences (bound 5e-8)
    def run(v0, tape=None, steps=5):
        b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
        b.set_ground_material(mu=0.0)
        b.set_contact_options(cone="elliptic")
        for i in range(9):
            b.add_articulation()
            body = b.add_body(((0.5 * (i % 3), 0.5 * (i // 3), 0.1 - 5e-5), (0.0, 0.0, 0.0, 1.0)))
            b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0,
                            mu=0.2 + 0.2 * (i % 4))
            b.add_joint_free(-1, body)
        model = b.finalize(dtype=F64, requires_grad=True)
        model.gravity = type(model.gravity)(9.81 * np.sin(SLOPE), 0.0, -9.81 * np.cos(SLOPE))
        integrator = sk.sim.Featherstone(contact="constraint", impratio=10.0, tolerance=1e-14, iterations=20000)
        states = [model.state(requires_grad=True) for _ in range(steps + 1)]
        qd = np.zeros(54)
        qd[::6] = v0
        states[0].joint_qd.assign(qd)
        with tape or sk.Tape():
            for k in range(steps):
                integrator.step(model, states[k], states[k + 1], None, 1e-3)
        return states, model, integrator

    w = np.random.default_rng(0).normal(size=63)
    tape = sk.Tape()
    states, model, integrator = run(0.3, tape)
    assert model._featherstone["contact_solves"][integrator.max_contacts].needed.numpy()[0] == 36
    tape.backward(grads={states[-1].joint_q: w})
    grad = states[0].joint_qd.grad.numpy()[::6].sum()

    def loss(v):
        return float(run(v)[0][-1].joint_q.numpy() @ w)

    eps = 1e-5
    assert grad == pytest.approx((loss(0.3 + eps) - loss(0.3 - eps)) / (2 * eps), rel=5e-8)
