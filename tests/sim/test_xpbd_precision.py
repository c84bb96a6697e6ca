"""XPBD in float32 against float64 and analytic flight: the step's velocity is the predicted
velocity plus the summed corrections over dt, so gravity and spin survive small steps far
from the origin (a difference of two nearby float32 positions would cancel them)."""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference
from simkit.sim.xpbd import XPBD

G = 9.81
IDENTITY = (0.0, 0.0, 0.0, 1.0)
DTS = (1e-4, 1e-3, 1e-2)
OFFSETS = (0.0, 1000.0)
V0 = np.array([1.5, 2.0, -0.5])
SPATIAL64 = sk.vector(6, sk.float64)


def run(model, seconds, dt):
    steps = int(round(seconds / dt))
    return sk.sim.simulate(model, XPBD(), model.state(), steps, dt, keep_states=False)[-1]


def thrown_particle(dtype, offset):
    b = sk.sim.ModelBuilder(gravity=-G, ground=False)
    b.add_particle((offset, offset + 10.0, offset), tuple(V0), mass=1.0)
    return b.finalize(dtype=dtype)


def thrown_box(dtype, offset, angular_velocity=(0.0, 0.0, 0.0), gravity=-G):
    b = sk.sim.ModelBuilder(gravity=gravity, ground=False)
    box = b.add_body(sk.transform((offset, offset + 10.0, offset), IDENTITY), velocity=tuple(V0),
                     angular_velocity=angular_velocity)
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.2, 0.3), body=box, density=500.0)
    return b.finalize(dtype=dtype)


def assert_close(actual, expected, rel=1e-3):
    assert np.linalg.norm(np.asarray(actual) - expected) <= rel * np.linalg.norm(expected), (actual, expected)


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("dt", DTS)
def test_a_thrown_particle_in_float32_keeps_gravity_like_float64_and_the_analytic_flight(dt, offset):
    # after 1 s: v = v0 + g t exactly; x = x0 + v0 t + g dt^2 n (n + 1) / 2 (the symplectic step)
    v_exact = V0 + np.array([0.0, -G, 0.0])
    n = int(round(1.0 / dt))
    x_exact = np.array([offset, offset + 10.0, offset]) + V0 + np.array([0.0, -G, 0.0]) * dt * dt * n * (n + 1) / 2
    s64 = run(thrown_particle(sk.float64, offset), 1.0, dt)
    s32 = run(thrown_particle(sk.float32, offset), 1.0, dt)
    np.testing.assert_allclose(s64.particle_qd.numpy()[0], v_exact, rtol=1e-12)
    assert_close(s32.particle_qd.numpy()[0], s64.particle_qd.numpy()[0])
    assert_close(s64.particle_q.numpy()[0], x_exact, rel=1e-12)
    assert_close(s32.particle_q.numpy()[0], x_exact)
    if offset == 0.0:
        # near the origin float32 resolves the displacement too (at 1 km its spacing, 6e-5 m,
        # is a third of a 1e-4 s step: the position itself is only good to 1e-3 of 1 km)
        start = np.array([0.0, 10.0, 0.0])
        assert_close(s32.particle_q.numpy()[0] - start, x_exact - start)


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("dt", DTS)
def test_a_thrown_body_in_float32_keeps_gravity_like_float64_and_the_analytic_flight(dt, offset):
    s64 = run(thrown_box(sk.float64, offset), 1.0, dt)
    s32 = run(thrown_box(sk.float32, offset), 1.0, dt)
    v_exact = V0 + np.array([0.0, -G, 0.0])
    np.testing.assert_allclose(s64.body_qd.numpy()[0, 3:], v_exact, rtol=1e-12)
    assert_close(s32.body_qd.numpy()[0, 3:], v_exact)
    assert np.abs(s32.body_qd.numpy()[0, :3]).max() < 1e-6    # still not turning


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("dt", DTS)
def test_a_spinning_body_in_float32_keeps_its_angular_velocity(dt, offset):
    # torque-free about a principal axis (and in free fall): w is constant
    w0 = np.array([0.0, 3.0, 0.0])
    s64 = run(thrown_box(sk.float64, offset, angular_velocity=tuple(w0)), 1.0, dt)
    s32 = run(thrown_box(sk.float32, offset, angular_velocity=tuple(w0)), 1.0, dt)
    np.testing.assert_allclose(s64.body_qd.numpy()[0, :3], w0, atol=1e-9)
    assert_close(s32.body_qd.numpy()[0, :3], w0)
    # and it turned by w t, as in float64
    angle32 = 2.0 * math.atan2(s32.body_q.numpy()[0, 4], s32.body_q.numpy()[0, 6])
    angle64 = 2.0 * math.atan2(s64.body_q.numpy()[0, 4], s64.body_q.numpy()[0, 6])
    assert angle32 == pytest.approx(angle64, abs=1e-3 * 3.0)


# -- gradients of the final velocities (float64), through every correction of the step ------

@sk.kernel
def spatial_loss64(qd: sk.array(dtype=SPATIAL64), w: sk.array(dtype=SPATIAL64),
                   loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(qd[i], w[i]))


@sk.kernel
def vector_loss64(qd: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(qd[i], w[i]))


def velocity_loss(model, qd0, steps, dt, tape=None):
    """``w . v`` of the final particle and body velocities from initial velocities ``qd0``
    (particles, then bodies); with a tape, also its gradient with respect to them."""
    s0 = model.state(requires_grad=tape is not None)
    s0.particle_qd.assign(qd0[0])
    s0.body_qd.assign(qd0[1])
    loss = sk.zeros(1, dtype=sk.float64, requires_grad=tape is not None)
    rng = np.random.default_rng(5)
    wp = sk.array(rng.normal(size=(model.particle_count, 3)), dtype=sk.vec3d)
    wb = sk.array(rng.normal(size=(model.body_count, 6)), dtype=SPATIAL64)

    def record():
        last = sk.sim.simulate(model, XPBD(), s0, steps, dt, keep_states=tape is not None)[-1]
        sk.launch(vector_loss64, model.particle_count, inputs=[last.particle_qd, wp, loss])
        sk.launch(spatial_loss64, model.body_count, inputs=[last.body_qd, wb, loss])

    if tape is None:
        record()
        return loss.numpy()[0]
    with tape:
        record()
    tape.backward(loss=loss)
    return s0.particle_qd.grad.numpy().copy(), s0.body_qd.grad.numpy().copy()


def test_the_gradient_of_final_velocities_through_contact_springs_and_joints_matches_finite_differences():
    # a particle sliding on the ground (contact and friction corrections), tied by a spring to one
    # above it; a rod pendulum on a hinge (joint corrections of position and rotation)
    b = sk.sim.ModelBuilder(gravity=-G, ground=True, contact_mu=0.3)
    b.add_particle((0.0, 0.05, 0.0), (1.0, 0.0, 0.5), mass=1.0, radius=0.05)
    b.add_particle((0.0, 0.4, 0.1), (0.0, 0.0, 0.0), mass=0.5, radius=0.05)
    b.add_spring(0, 1, ke=200.0, kd=0.5)
    rod = b.add_body(sk.transform((2.0, 2.0, 0.0), (0.0, 0.0, math.sin(0.2), math.cos(0.2))))
    b.add_shape_box((0.0, -0.25, 0.0), IDENTITY, (0.02, 0.25, 0.02), body=rod, density=1000.0)
    b.add_joint_revolute(-1, rod, axis=(0.0, 0.0, 1.0), parent_xform=sk.transform((2.0, 2.0, 0.0), IDENTITY))
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    qd0 = [np.array([[1.0, 0.0, 0.5], [0.2, -0.3, 0.0]]), np.array([[0.0, 0.0, 1.5, 0.0, 0.0, 0.0]])]
    grad_p, grad_b = velocity_loss(model, qd0, 40, 5e-3, tape=sk.Tape())
    for index in [(0, 0), (0, 2), (1, 1)]:
        fd = central_difference(lambda: velocity_loss(model, qd0, 40, 5e-3), qd0[0], index, 1e-6)
        assert grad_p[index] == pytest.approx(fd, rel=1e-5, abs=1e-9), index
    fd = central_difference(lambda: velocity_loss(model, qd0, 40, 5e-3), qd0[1], (0, 2), 1e-6)
    assert abs(fd) > 1e-3
    assert grad_b[0, 2] == pytest.approx(fd, rel=1e-5)
