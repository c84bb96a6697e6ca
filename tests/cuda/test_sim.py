"""The simulation layer on the GPU: every kind of scene steps and differentiates as on the CPU.

Each scene is finalized twice, on the CPU and on the GPU, in float64; a short rollout runs on a
Tape on each, and the final positions and the gradient of a position loss with respect to
the initial velocities must agree. On a real GPU this checks the CUDA build's arithmetic; on
the fake driver, that every array of the model, the state, the integrators' scratch buffers
and the hash grid lands on the device and that nothing in the layer reads device memory as
if it were the host's.
"""

import math

import numpy as np
import pytest

import simkit as sk

STEPS, DT = 40, 1e-3
IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)


def particles_and_springs() -> sk.sim.ModelBuilder:
    """Springs, ground contact and particle-particle contact through the hash grid."""
    b = sk.sim.ModelBuilder(particle_contact=True, contact_ke=1e4, contact_kd=10.0, contact_kf=100.0)
    b.add_particle((0.0, 0.1, 0.0), (0.5, -1.0, 0.0), mass=1.0, radius=0.1)
    b.add_particle((0.15, 0.12, 0.05), (-0.5, 0.0, 0.0), mass=1.0, radius=0.1)
    b.add_particle((0.0, 0.6, 0.0), (0.0, 0.0, 0.3), mass=0.5, radius=0.05)
    b.add_spring(0, 2, ke=200.0, kd=0.5)
    b.add_spring(1, 2, ke=150.0, kd=0.3)
    return b


def cloth() -> sk.sim.ModelBuilder:
    """Membrane and bending forces, one side pinned."""
    b = sk.sim.ModelBuilder(contact_ke=1e3, contact_kd=0.5, contact_kf=5.0)
    b.add_cloth_grid((0.0, 0.3, 0.0), (-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)), (0.0, 0.0, 0.2), 4, 4, 0.1, 0.1,
                     mass=0.02, fix_left=True, k_mu=500.0, k_lambda=500.0, k_damp=0.05, edge_ke=1e-2, radius=0.02)
    return b


def soft_block() -> sk.sim.ModelBuilder:
    """Tetrahedral elasticity, dropped onto the ground."""
    b = sk.sim.ModelBuilder(contact_ke=1e4, contact_kd=10.0, contact_kf=10.0)
    b.add_soft_grid((0.0, 0.02, 0.0), IDENTITY_Q, (0.3, -0.5, 0.0), 2, 2, 2, 0.05, 0.05, 0.05, density=1000.0,
                    k_mu=1e3, k_lambda=1e3, k_damp=0.01)
    return b


def bodies() -> sk.sim.ModelBuilder:
    """A box thrown onto the ground and a revolute pendulum."""
    b = sk.sim.ModelBuilder()
    box = b.add_body(sk.transform((0.0, 0.12, 0.0), IDENTITY_Q), velocity=(1.0, -0.5, 0.2),
                     angular_velocity=(0.5, 1.0, -1.5))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.08, 0.1), body=box, density=500.0)
    arm = b.add_body(sk.transform((2.0, 1.0, 0.0), IDENTITY_Q), velocity=(0.0, 0.0, 0.0))
    b.add_shape_capsule((0.0, 0.0, 0.0), IDENTITY_Q, 0.05, 0.2, body=arm, density=500.0)
    b.add_joint_revolute(-1, arm, sk.transform((2.0, 1.3, 0.0), IDENTITY_Q), sk.transform((0.0, 0.3, 0.0), IDENTITY_Q))
    return b


# (scene, integrator): XPBD has no particle-particle contact, so the grid scene runs semi-implicit only.
CASES = [("particles-springs-grid", particles_and_springs, sk.sim.SemiImplicitEuler)] + [
    (f"{name}-{kind}", scene, integrator) for name, scene in (("cloth", cloth), ("soft", soft_block), ("bodies", bodies))
    for kind, integrator in (("semi-implicit", sk.sim.SemiImplicitEuler), ("xpbd", lambda: sk.sim.XPBD(4)))]
W = sk.vec3d(0.5, 1.5, 2.5)


@sk.kernel
def weighted_points(q: sk.array(dtype=sk.vec3d), w: sk.vec3d, loss: sk.array(dtype=sk.float64)):
    sk.atomic_add(loss, 0, sk.dot(q[sk.tid()], w))


@sk.kernel
def weighted_origins(q: sk.array(dtype=sk.transformd), w: sk.vec3d, loss: sk.array(dtype=sk.float64)):
    sk.atomic_add(loss, 0, sk.dot(q[sk.tid()].p, w))


def rollout(builder: sk.sim.ModelBuilder, integrator, device: str) -> tuple[np.ndarray, np.ndarray]:
    """(final positions, d loss / d initial velocities) of a taped rollout on ``device``."""
    model = builder.finalize(device=device, requires_grad=True, dtype=sk.float64)
    s0 = model.state(requires_grad=True)
    bodies = model.body_count > 0
    with sk.Tape() as tape:
        final = sk.sim.simulate(model, integrator, s0, STEPS, DT)[-1]
        q = final.body_q if bodies else final.particle_q
        loss = sk.zeros(1, dtype=sk.float64, device=device)
        sk.launch(weighted_origins if bodies else weighted_points, q.shape[0], inputs=[q, W, loss])
    tape.backward(loss=loss)
    qd = s0.body_qd if bodies else s0.particle_qd
    return q.numpy(), qd.grad.numpy()


@pytest.mark.parametrize("scene, integrator", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_scene_steps_and_differentiates_on_the_gpu_as_on_the_cpu(gpu, scene, integrator):
    q_cpu, g_cpu = rollout(scene(), integrator(), "cpu")
    q_gpu, g_gpu = rollout(scene(), integrator(), gpu)
    assert np.abs(g_cpu).max() > 1e-3  # the loss does depend on the initial velocities
    np.testing.assert_allclose(q_gpu, q_cpu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(g_gpu, g_cpu, rtol=1e-7, atol=1e-7 * np.abs(g_cpu).max())


def test_finalize_on_cuda_canonicalises_the_device(gpu):
    model = particles_and_springs().finalize(device="cuda")
    assert model.device == gpu and model.particles.mass.device == gpu
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 3, DT)[-1]
    assert final.particle_q.device == gpu


def test_finalize_uses_the_default_device(gpu):
    sk.set_device(gpu)
    try:
        assert particles_and_springs().finalize().device == gpu
    finally:
        sk.set_device("cpu")
