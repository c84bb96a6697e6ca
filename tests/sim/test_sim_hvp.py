"""Hessian-vector products through rollouts of both integrators: hvp against central differences
of reverse-mode gradients (float64)."""

import numpy as np
import pytest

import simkit as sk
from sim_helpers import spring_triangle

STEPS = 20
INTEGRATORS = {"semi-implicit": (sk.sim.SemiImplicitEuler, 2e-3, True), "xpbd": (sk.sim.XPBD, 1e-2, False)}
TARGET = np.array([[0.0, 1.0, 0.0], [0.5, 0.6, 0.2], [0.2, 0.3, 0.1]])
pytestmark = pytest.mark.cpu_only("Hessian-vector products run on the CPU only")


@sk.kernel
def squared_distance(q: sk.array(dtype=sk.vec3d), target: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    d = q[i] - target[i]
    sk.atomic_add(loss, 0, sk.dot(d, d))


def rollout_loss(integrator, dt, model, state):
    q = sk.sim.simulate(model, integrator, state, STEPS, dt)[-1].particle_q
    loss = sk.zeros(1, dtype=sk.float64)
    sk.launch(squared_distance, q.shape[0], inputs=[q, sk.array(TARGET, dtype=sk.vec3d), loss])
    return loss


def gradients_at(integrator, dt, model, ke, qd):
    """d loss / d (spring stiffnesses, initial velocities) by reverse mode at the given values."""
    model.springs.ke.assign(ke)
    model.springs.ke.grad.zero_()  # a leaf: its gradient accumulates over backward passes
    s0 = model.state(requires_grad=True)
    s0.particle_qd.assign(qd)
    with sk.Tape() as tape:
        loss = rollout_loss(integrator, dt, model, s0)
    tape.backward(loss=loss)
    return model.springs.ke.grad.numpy().copy(), s0.particle_qd.grad.numpy().copy()


@pytest.mark.parametrize("name", list(INTEGRATORS))
def test_hvp_of_a_rollout_matches_differences_of_gradients(name):
    make, dt, ground = INTEGRATORS[name]
    integrator, model = make(), spring_triangle(ground)
    ke0 = model.springs.ke.numpy().copy()
    s0 = model.state()
    qd0 = s0.particle_qd.numpy().copy()
    rng = np.random.default_rng(5)
    v_ke, v_qd = rng.standard_normal(ke0.shape) * 10.0, rng.standard_normal(qd0.shape)

    loss, (g_ke, g_qd), (h_ke, h_qd) = sk.autograd.hvp(
        lambda ke, qd: rollout_loss(integrator, dt, model, s0), [model.springs.ke, s0.particle_qd], [v_ke, v_qd])

    want_g = gradients_at(integrator, dt, model, ke0, qd0)
    eps = 1e-6
    up = gradients_at(integrator, dt, model, ke0 + eps * v_ke, qd0 + eps * v_qd)
    down = gradients_at(integrator, dt, model, ke0 - eps * v_ke, qd0 - eps * v_qd)
    np.testing.assert_allclose(g_ke.numpy(), want_g[0], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(g_qd.numpy(), want_g[1], rtol=1e-10, atol=1e-14)
    for got, u, d in ((h_ke, up[0], down[0]), (h_qd, up[1], down[1])):
        fd = (u - d) / (2 * eps)
        np.testing.assert_allclose(got.numpy(), fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
