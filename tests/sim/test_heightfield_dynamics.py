"""Bodies and particles on terrain (``add_shape_heightfield``) under vertical gravity, in every
integrator: on a field sampled from a 20 degree incline a sphere rolls at 5/7 g sin(theta) and
a box with mu = 0.8 holds, as on the plane itself; a ball swings in a bowl at the period of
rolling in a sphere of the bowl's curvature; a particle rests on a bump at its radius; and the gradient of where a
sphere rolls with respect to the terrain's heights matches central differences (float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference
from simkit.sim.builder_heightfield import heightfield_vertices

G = 9.81
THETA = math.radians(20.0)
NORMAL = np.array([math.sin(THETA), math.cos(THETA), 0.0])
DOWNHILL = np.array([math.cos(THETA), -math.sin(THETA), 0.0])
DT = 1e-3
HALF = (2.0, 1.0)
GRID = heightfield_vertices(np.zeros((21, 11)), HALF)
INCLINE = -math.tan(THETA) * GRID[:, 0].reshape(21, 11)     # y = -tan(theta) x: downhill is +x

INTEGRATORS = {"semi-implicit": sk.sim.SemiImplicitEuler, "featherstone": sk.sim.Featherstone,
               # impratio 10 as on the tilted plane (tests/sim/test_plane_dynamics.py)
               "featherstone-constraint": lambda: sk.sim.Featherstone(contact="constraint", impratio=10.0),
               "xpbd": sk.sim.XPBD}


def on_terrain(integrator, kind, mu, heights=INCLINE, start=None, requires_grad=False):
    """One body of ``kind`` (10 cm) on the terrain, by default resting 1 mm up on the incline."""
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_heightfield((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), heights, HALF, mu=mu)
    featherstone = integrator.startswith("featherstone")
    if featherstone:
        b.add_articulation()
    tilt = (0.0, 0.0, -math.sin(THETA / 2), math.cos(THETA / 2))
    body = b.add_body(sk.transform(tuple(NORMAL * 0.101) if start is None else start, tilt))
    if featherstone:
        b.add_joint_free(-1, body)
    if kind == "sphere":
        b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body, mu=mu)
    else:
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, mu=mu)
    return b.finalize(dtype=sk.float64, requires_grad=requires_grad)


def run(model, integrator, seconds, state=None):
    state = model.state() if state is None else state
    return sk.sim.simulate(model, INTEGRATORS[integrator](), state, int(round(seconds / DT)), DT,
                           keep_states=False)[-1]


def along(state) -> tuple[float, float, float]:
    """The body's distance downhill, its height above the incline, and its speed downhill."""
    p = state.body_q.numpy()[0, :3]
    return float(p @ DOWNHILL), float(p @ NORMAL), float(state.body_qd.numpy()[0, 3:] @ DOWNHILL)


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_a_sphere_rolls_down_terrain_sampled_from_an_incline_at_the_rolling_acceleration(integrator):
    model = on_terrain(integrator, "sphere", mu=1.0)
    start = run(model, integrator, 0.1)
    x0, h0, v0 = along(start)
    x1, h1, _ = along(run(model, integrator, 0.5, start))
    assert x1 - x0 == pytest.approx(v0 * 0.5 + 0.5 * 5.0 / 7.0 * G * math.sin(THETA) * 0.25, rel=5e-3)
    assert 0.097 < h1 <= 0.1 + 1e-5 and abs(h1 - h0) < 5e-4      # on the surface, never through it


@pytest.mark.parametrize("integrator", ["semi-implicit", "featherstone-constraint", "xpbd"])
def test_a_box_with_mu_0_8_holds_on_terrain_sampled_from_a_20_degree_incline(integrator):
    model = on_terrain(integrator, "box", mu=0.8)
    start = run(model, integrator, 0.2)
    x0, _, _ = along(start)
    x1, h1, v1 = along(run(model, integrator, 2.0, start))
    creep = 1e-3 if integrator == "featherstone-constraint" else 1e-4     # as on the tilted plane
    assert abs(x1 - x0) < creep and abs(v1) < creep
    assert 0.097 < h1 <= 0.1 + 1e-5


def test_a_ball_rolls_to_and_fro_in_a_bowl_at_the_period_of_rolling_in_a_sphere():
    # y = (x^2 + z^2) / 2 has a curvature radius R = 1 m at its bottom: a ball of radius r
    # rolling without slipping there swings with T = 2 pi sqrt(7 (R - r) / (5 g)) (2.252 s)
    grid = heightfield_vertices(np.zeros((41, 41)), (1.0, 1.0))
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_heightfield((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0),
                            0.5 * (grid[:, 0] ** 2 + grid[:, 2] ** 2).reshape(41, 41), (1.0, 1.0), mu=1.0)
    x0 = 0.15
    body = b.add_body(sk.transform((x0, 0.5 * x0 * x0 + 0.1 * math.hypot(1.0, x0) + 5e-4, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body, mu=1.0)
    model = b.finalize(dtype=sk.float64)
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 4000, DT)
    x = np.array([s.body_q.numpy()[0, 0] for s in states[::10]])
    t = np.arange(len(x)) * 10 * DT
    crossings = [t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i]) for i in range(len(x) - 1) if x[i] * x[i + 1] < 0]
    assert len(crossings) >= 3
    period = 2.0 * np.mean(np.diff(crossings))
    assert period == pytest.approx(2.0 * math.pi * math.sqrt(7.0 * 0.9 / (5.0 * G)), rel=1e-2)
    assert np.abs(x).max() <= x0 + 1e-3          # it never swings higher than it was let go


def test_a_particle_rests_on_a_bump_at_its_radius():
    bump = 0.2 * np.exp(-(GRID[:, 0] ** 2 + GRID[:, 2] ** 2) / 0.5).reshape(21, 11)
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_heightfield((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), bump, HALF, mu=1.0)
    b.add_particle((0.0, 0.26, 0.0), (0.0, 0.0, 0.0), mass=0.01, radius=0.05)    # on the top vertex
    model = b.finalize(dtype=sk.float64)
    for integrator in (sk.sim.SemiImplicitEuler(), sk.sim.XPBD()):
        end = sk.sim.simulate(model, integrator, model.state(), 500, DT, keep_states=False)[-1]
        assert end.particle_q.numpy()[0] == pytest.approx([0.0, 0.25, 0.0], abs=2e-3)


@sk.kernel
def weighted_end(body_q: sk.array(dtype=sk.transformd), w: sk.vec3d, loss: sk.array(dtype=sk.float64)):
    loss[0] = sk.dot(sk.transform_get_translation(body_q[0]), w)


def test_the_gradient_of_where_a_sphere_rolls_with_respect_to_the_heights_matches_differences():
    rng = np.random.default_rng(0)
    terrain = INCLINE + rng.uniform(-0.005, 0.005, INCLINE.shape)
    model = on_terrain("semi-implicit", "sphere", mu=1.0, heights=terrain, start=tuple(NORMAL * 0.099),
                       requires_grad=True)
    w = sk.vec3d(0.3, -0.7, 0.5)

    def end_state(taped=False):
        s = model.state(requires_grad=taped)
        s.body_qd.assign(np.array([[0.0, 0.0, 0.5, 0.4, 0.0, -0.3]]))
        return sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s, 200, DT)[-1]

    with sk.Tape() as tape:
        end = end_state(taped=True)
        loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
        sk.launch(weighted_end, 1, inputs=[end.body_q, w, loss])
    tape.backward(loss=loss)
    heights = model.shapes.hfield_heights
    grad = heights.grad.numpy().copy()
    values = heights.numpy().copy()
    touched = np.flatnonzero(grad)[:6]
    assert len(touched) >= 3          # the corners of the faces it rolled over

    def loss_now():
        heights.assign(values)
        return float(end_state().body_q.numpy()[0, :3] @ np.array([0.3, -0.7, 0.5]))

    for k in touched:
        fd = central_difference(loss_now, values, k, 1e-6)
        assert grad[k] == pytest.approx(fd, rel=1e-4, abs=1e-8), k


def test_a_box_rests_on_bumpy_terrain_in_float32():
    rng = np.random.default_rng(1)
    terrain = INCLINE * 0.0 + rng.uniform(-0.01, 0.01, INCLINE.shape)
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_heightfield((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), terrain, HALF, mu=1.0)
    body = b.add_body(sk.transform((0.05, 0.13, -0.03), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, mu=1.0)
    model = b.finalize(dtype=sk.float32)
    settled = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1000, DT, keep_states=False)[-1]
    later = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), settled, 1000, DT, keep_states=False)[-1]
    p0, p1 = settled.body_q.numpy()[0, :3], later.body_q.numpy()[0, :3]
    assert np.all(np.isfinite(later.body_q.numpy()))
    # on the bumps (within 1 cm of the flat height), and still there a second later
    assert 0.085 < p1[1] < 0.115
    assert np.abs(p1 - p0).max() < 1e-3 and np.abs(later.body_qd.numpy()[0]).max() < 1e-2
