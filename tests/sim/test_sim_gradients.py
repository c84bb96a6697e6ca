"""Gradients through rollouts of both integrators on a Tape against central finite differences (float64)."""

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference, position_loss, spring_triangle

STEPS = 30
W = np.array([[0.0, 0.0, 0.0], [0.3, -1.0, 0.7], [1.0, 0.5, -0.4]])

# (integrator, dt, ground): XPBD's position-level contact is not smooth enough for central
# differences, so its rollout stays in the air; its contact gradients are tested in test_xpbd.py.
INTEGRATORS = {"semi-implicit": (sk.sim.SemiImplicitEuler, 2e-3, True), "xpbd": (sk.sim.XPBD, 1e-2, False)}


@pytest.fixture(params=list(INTEGRATORS))
def setup(request):
    make, dt, ground = INTEGRATORS[request.param]
    return make(), dt, spring_triangle(ground)


def rollout_loss(integrator, dt, model, state=None, controls=None):
    states = sk.sim.simulate(model, integrator, state or model.state(), STEPS, dt, control=controls)
    return position_loss(states[-1].particle_q, W[-model.particle_count:])


def loss_value(*args, **kwargs) -> float:
    return float(rollout_loss(*args, **kwargs).numpy()[0])


def test_gradient_with_respect_to_initial_velocity_matches_finite_differences(setup):
    integrator, dt, model = setup
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = rollout_loss(integrator, dt, model, s0)
    tape.backward(loss=loss)
    grad = s0.particle_qd.grad.numpy()
    qd = s0.particle_qd.numpy()
    for p, c in [(1, 0), (1, 1), (2, 0), (2, 2)]:
        fd = central_difference(lambda: loss_value(integrator, dt, model, s0), qd, (p, c), 1e-6)
        assert grad[p, c] == pytest.approx(fd, rel=1e-5, abs=1e-9)


def test_gradient_with_respect_to_spring_stiffness_matches_finite_differences(setup):
    integrator, dt, model = setup
    with sk.Tape() as tape:
        loss = rollout_loss(integrator, dt, model)
    tape.backward(loss=loss)
    grad = model.springs.ke.grad.numpy()
    assert np.abs(grad).min() > 1e-6
    for s in range(model.spring_count):
        fd = central_difference(lambda: loss_value(integrator, dt, model), model.springs.ke.numpy(), s, 1e-4)
        assert grad[s] == pytest.approx(fd, rel=1e-5, abs=1e-10)


def test_gradient_with_respect_to_an_actuation_signal_matches_finite_differences(setup):
    integrator, dt, model = setup
    controls = []
    for k in range(STEPS):
        c = model.control()
        c.spring_activation.assign(0.1 * np.sin(0.3 * k + np.arange(model.spring_count)))
        c.spring_activation.requires_grad = True
        controls.append(c)
    with sk.Tape() as tape:
        loss = rollout_loss(integrator, dt, model, controls=controls)
    tape.backward(loss=loss)
    for k, s in [(0, 1), (10, 0), (STEPS - 2, 2)]:
        grad = controls[k].spring_activation.grad.numpy()[s]
        fd = central_difference(lambda: loss_value(integrator, dt, model, controls=controls),
                                controls[k].spring_activation.numpy(), s, 1e-6)
        assert grad == pytest.approx(fd, rel=1e-5, abs=1e-10)


def test_semi_implicit_gradient_with_respect_to_friction_coefficient_matches_finite_differences():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True, contact_ke=1e4, contact_kd=20.0, contact_kf=100.0,
                            contact_mu=0.4)
    b.add_particle((0.0, 0.05 - 0.1 * 9.81 / 1e4, 0.0), (2.0, 0.0, 1.0), mass=0.1)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    integrator, dt = sk.sim.SemiImplicitEuler(), 2e-3
    with sk.Tape() as tape:
        loss = rollout_loss(integrator, dt, model)
    tape.backward(loss=loss)
    fd = central_difference(lambda: loss_value(integrator, dt, model), model.contact.mu.numpy(), 0, 1e-6)
    assert abs(fd) > 1e-3   # still sliding: the distance depends on mu
    assert model.contact.mu.grad.numpy()[0] == pytest.approx(fd, rel=1e-5)
