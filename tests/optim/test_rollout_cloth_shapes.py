"""A checkpointed Rollout through cloth-shape contact (a cloth draped on a moving kinematic
sphere, tests/sim/test_cloth_shape_contact.py) gives the full tape's gradient. Float64."""

import os
import sys

import numpy as np
import pytest

import simkit as sk

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sim"))
from test_cloth_shape_contact import draped_on_a_moving_sphere  # noqa: E402


@sk.kernel
def weighted_positions(q: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(q[i], w[i]))


def _run(model, integrator, dt, steps, checkpoint_every):
    w = sk.array(np.random.default_rng(5).normal(size=(model.particle_count, 3)), dtype=sk.vec3d)

    def loss(state, out):
        sk.launch(weighted_positions, model.particle_count, inputs=[state.particle_q, w, out])

    s0 = model.state(requires_grad=True)
    qd = s0.body_qd.numpy()
    qd[0, 3:] = (0.2, 0.3, -0.1)
    s0.body_qd.assign(qd)
    s0.body_qd.grad.zero_()
    rollout = sk.optim.Rollout(model, integrator, steps=steps, dt=dt, loss=loss, checkpoint_every=checkpoint_every)
    return rollout.run(s0, wrt=[s0.body_qd])


@pytest.mark.parametrize("integrator, dt, steps", [(sk.sim.SemiImplicitEuler(), 1e-4, 24),
                                                   (sk.sim.XPBD(iterations=4), 1e-3, 6)], ids=["semi_implicit", "xpbd"])
def test_checkpointed_gradient_through_cloth_shape_contact_equals_the_full_tape(integrator, dt, steps):
    model = draped_on_a_moving_sphere()
    full = _run(model, integrator, dt, steps, None)
    ckpt = _run(model, integrator, dt, steps, 4 if steps > 6 else 2)
    assert np.abs(full.grads[0]).max() > 1e-6
    assert ckpt.loss == pytest.approx(full.loss, rel=1e-12)
    assert np.abs(ckpt.grads[0] - full.grads[0]).max() <= 1e-9 * np.abs(full.grads[0]).max()
