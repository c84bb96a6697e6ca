"""Convex hulls in motion (add_shape_convex): a hull resting on its base stays at rest in every
integrator, a hull cube on a 20 degree incline with mu = 0.8 sticks (tan 20 < 0.8), on the
tilted ground and on a static slope shape, particles rest on a hull's top face, and the
gradient of a hull's landing point with respect to its initial pose matches central
differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference
from simkit.kernels.structs import model_structs

S = model_structs(sk.float64)
IDENTITY = (0.0, 0.0, 0.0, 1.0)
HALF = 0.1
CUBE = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * HALF
# a house: a square base 0.2 m wide and a ridge 0.15 m above it
HOUSE = np.vstack([CUBE[CUBE[:, 1] < 0.0], [[-0.1, 0.15, 0.0], [0.1, 0.15, 0.0]]])
THETA = math.radians(20.0)
G = 9.81

INTEGRATORS = {"semi-implicit": sk.sim.SemiImplicitEuler, "featherstone": sk.sim.Featherstone,
               "featherstone-constraint": lambda: sk.sim.Featherstone(contact="constraint"), "xpbd": sk.sim.XPBD}


def hull_body(points, origin, integrator, b=None, **shape):
    """A builder (``b``, or a new one with the ground) with one body carrying the hull of
    ``points``, on a free joint for Featherstone."""
    b = b or sk.sim.ModelBuilder()
    featherstone = integrator.startswith("featherstone")
    if featherstone:
        b.add_articulation()
    body = b.add_body(sk.transform(origin, IDENTITY))
    if featherstone:
        b.add_joint_free(-1, body)
    b.add_shape_convex((0.0, 0.0, 0.0), IDENTITY, points, body=body, **shape)
    return b


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_a_hull_resting_on_its_base_stays_at_rest(integrator):
    model = hull_body(HOUSE, (0.0, HALF, 0.0), integrator, mu=1.0).finalize(dtype=sk.float64)
    start = model.state()
    end = sk.sim.simulate(model, INTEGRATORS[integrator](), start, 1500, 1e-3, keep_states=False)[-1]
    q0, q1 = start.body_q.numpy()[0], end.body_q.numpy()[0]
    assert 0.0 <= q0[1] - q1[1] < 2e-3            # penalty: about g tc^2 = 1 mm in; then it holds
    assert np.abs(q1[[0, 2]] - q0[[0, 2]]).max() < 1e-6
    assert np.abs(q1[3:] - q0[3:]).max() < 1e-6
    assert np.abs(end.body_qd.numpy()[0]).max() < 1e-3


# how far the cube may move downhill in 1 s while it sticks (sliding would be 0.5 g sin 20 t^2 =
# 1.7 m without friction): the tangential springs' offset in the penalty contact; MuJoCo's soft
# constraints creep at a steady 1.7 mm/s under this load, a box exactly as much
STICKING = {"semi-implicit": 1e-3, "featherstone-constraint": 2.5e-3, "xpbd": 1e-3}


@pytest.mark.parametrize("integrator", ["semi-implicit", "xpbd"])
def test_two_equal_hull_cubes_stacked_flush_stand(integrator):
    # the top cube's corners lie on the bottom one's side planes: its rounded points are off them
    b = hull_body(CUBE, (0.0, HALF, 0.0), integrator, mu=0.5)
    model = hull_body(CUBE, (0.0, 3.0 * HALF, 0.0), integrator, b=b, mu=0.5).finalize(dtype=sk.float64)
    end = sk.sim.simulate(model, INTEGRATORS[integrator](), model.state(), 1000, 1e-3, keep_states=False)[-1]
    assert end.body_q.numpy()[1, 1] == pytest.approx(3.0 * HALF, abs=4e-3)
    assert np.abs(end.body_qd.numpy()).max() < 1e-2


@pytest.mark.parametrize("integrator", list(STICKING))
def test_a_hull_cube_on_a_20_degree_incline_with_mu_0_8_sticks(integrator):
    # the incline is the ground under gravity tilted by 20 degrees about z: downhill is +x
    model = hull_body(CUBE, (0.0, HALF, 0.0), integrator, mu=0.8).finalize(dtype=sk.float64)
    model.gravity = model.types.vec3(G * math.sin(THETA), -G * math.cos(THETA), 0.0)
    start = model.state()
    end = sk.sim.simulate(model, INTEGRATORS[integrator](), start, 1000, 1e-3, keep_states=False)[-1]
    assert abs(end.body_q.numpy()[0, 0] - start.body_q.numpy()[0, 0]) < STICKING[integrator]
    assert np.abs(end.body_qd.numpy()[0]).max() < 1e-2


def test_a_hull_cube_on_a_static_20_degree_slope_with_mu_0_8_sticks():
    # the slope: a static box turned by 20 degrees about z, the cube on its top face
    b = sk.sim.ModelBuilder(ground=False)
    q = (0.0, 0.0, math.sin(THETA / 2), math.cos(THETA / 2))
    b.add_shape_box((0.0, -0.1, 0.0), q, (2.0, 0.1, 1.0), mu=0.8)
    up = np.array([-math.sin(THETA), math.cos(THETA), 0.0])
    origin = np.array([0.0, -0.1, 0.0]) + up * (0.1 + HALF)
    body = b.add_body(sk.transform(origin, q))
    b.add_shape_convex((0.0, 0.0, 0.0), IDENTITY, CUBE, body=body, mu=0.8)
    model = b.finalize(dtype=sk.float64)
    end = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1000, 1e-3, keep_states=False)[-1]
    moved = end.body_q.numpy()[0, :3] - origin
    assert abs(moved @ np.array([math.cos(THETA), math.sin(THETA), 0.0])) < 1e-3     # along the slope
    assert -2e-3 < moved @ up < 0.0                                                 # into it: its spring
    assert np.abs(end.body_qd.numpy()[0]).max() < 1e-2


@pytest.mark.parametrize("integrator", ["semi-implicit", "xpbd"])
def test_particles_dropped_on_a_static_hull_rest_on_its_top_face(integrator):
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_convex((0.0, 0.0, 0.0), IDENTITY, CUBE * (3.0, 1.0, 3.0))
    for x, z in ((0.05, 0.09), (-0.2, 0.25)):
        b.add_particle((x, HALF + 0.1, z), (0.0, 0.0, 0.0), mass=0.1, radius=0.02)
    model = b.finalize(dtype=sk.float64)
    end = sk.sim.simulate(model, INTEGRATORS[integrator](), model.state(), 1000, 1e-3, keep_states=False)[-1]
    np.testing.assert_allclose(end.particle_q.numpy()[:, 1], HALF + 0.02, atol=2e-3)
    np.testing.assert_allclose(end.particle_q.numpy()[:, [0, 2]], [[0.05, 0.09], [-0.2, 0.25]], atol=1e-6)
    assert np.abs(end.particle_qd.numpy()).max() < 0.05


@sk.kernel
def weighted_origin(body_q: sk.array(dtype=S.transform), w: S.vec3, loss: sk.array(dtype=sk.float64)):
    sk.atomic_add(loss, 0, sk.dot(body_q[sk.tid()].p, w))


def test_the_gradient_of_a_hulls_landing_point_wrt_its_initial_pose_matches_finite_differences():
    b = sk.sim.ModelBuilder(rigid_contact_ke=1.0e5, rigid_contact_kd=1.0e2, rigid_contact_kf=1.0e2)
    cloud = np.random.default_rng(7).normal(size=(12, 3)) * 0.08
    angle = 0.5
    body = b.add_body(sk.transform((0.0, 0.2, 0.0), (math.sin(angle / 2) / math.sqrt(2), 0.0,
                                                     math.sin(angle / 2) / math.sqrt(2), math.cos(angle / 2))),
                      velocity=(1.0, -0.5, 0.3), angular_velocity=(1.0, 2.0, -3.0))
    b.add_shape_convex((0.0, 0.0, 0.0), IDENTITY, cloud, body=body, density=400.0, mu=0.3)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    w = S.vec3(0.7, 1.0, -0.4)

    def loss_of(state):
        final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, 400, 5e-4)[-1]
        loss = sk.zeros(1, dtype=sk.float64)
        sk.launch(weighted_origin, 1, inputs=[final.body_q, w, loss])
        return loss

    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = loss_of(s0)
    tape.backward(loss=loss)
    grad = s0.body_q.grad.numpy()[0]
    fresh = model.state(requires_grad=False)
    lowest = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), fresh, 400, 5e-4, keep_states=False)[-1]
    assert lowest.body_q.numpy()[0, 1] < 0.2          # it landed
    q = fresh.body_q.numpy()
    for component in (0, 1, 2):
        fd = central_difference(lambda: float(loss_of(fresh).numpy()[0]), q, (0, component), 1e-7)
        assert abs(fd) > 1e-3
        assert grad[component] == pytest.approx(fd, rel=1e-4)
