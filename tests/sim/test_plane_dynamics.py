"""Bodies and particles on a real incline: a static plane tilted by 20 degrees under vertical
gravity (not the ground with gravity tilted), in every integrator. A cylinder rolls at
2/3 g sin(theta) and a sphere at 5/7 g sin(theta), a box with mu = 0.8 holds and one with
mu = 0.2 slides at g (sin - mu cos), as Coulomb and rolling without slipping say; a finite
plane holds what is above it and lets what is beside it fall; the sweep broad phase meets a
plane as the static list does; and a rollout's gradient through plane contact matches
central differences (float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference

G = 9.81
THETA = math.radians(20.0)
TILT = (0.0, 0.0, -math.sin(THETA / 2), math.cos(THETA / 2))      # downhill is +x
NORMAL = np.array([math.sin(THETA), math.cos(THETA), 0.0])
DOWNHILL = np.array([math.cos(THETA), -math.sin(THETA), 0.0])
ON_ITS_SIDE = (math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4))     # a cylinder's axis along z
DT = 1e-3

INTEGRATORS = {"semi-implicit": sk.sim.SemiImplicitEuler, "featherstone": sk.sim.Featherstone,
               # impratio 10: MuJoCo's soft friction rows at its default 1 let a sticking box creep
               # (docs/contact.md); the rolling shapes do not need it
               "featherstone-constraint": lambda: sk.sim.Featherstone(contact="constraint", impratio=10.0),
               "xpbd": sk.sim.XPBD}


def quat_multiply(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def on_the_incline(integrator, kind, mu, half_extents=None, offset=0.0, broad_phase=None):
    """One body of ``kind`` resting (1 mm up) on a plane through the origin tilted by THETA, at
    ``offset`` m downhill of the origin."""
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_plane((0.0, 0.0, 0.0), TILT, half_extents, mu=mu)
    featherstone = integrator.startswith("featherstone")
    if featherstone:
        b.add_articulation()
    body = b.add_body(sk.transform(tuple(NORMAL * 0.101 + DOWNHILL * offset), TILT))
    if featherstone:
        b.add_joint_free(-1, body)
    if kind == "cylinder":
        b.add_shape_cylinder((0.0, 0.0, 0.0), ON_ITS_SIDE, 0.1, 0.05, body=body, mu=mu)
    elif kind == "sphere":
        b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body, mu=mu)
    else:
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, mu=mu)
    if broad_phase:
        b.broad_phase = broad_phase
    return b.finalize(dtype=sk.float64)


def run(model, integrator, seconds, state=None):
    state = model.state() if state is None else state
    return sk.sim.simulate(model, INTEGRATORS[integrator](), state, int(round(seconds / DT)), DT,
                           keep_states=False)[-1]


def along(state) -> tuple[float, float, float]:
    """The body's distance downhill, its height above the plane, and its speed downhill."""
    p = state.body_q.numpy()[0, :3]
    return float(p @ DOWNHILL), float(p @ NORMAL), float(state.body_qd.numpy()[0, 3:] @ DOWNHILL)


@pytest.mark.parametrize("kind, ratio", [("cylinder", 2.0 / 3.0), ("sphere", 5.0 / 7.0)])
@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_a_round_body_rolls_down_a_tilted_plane_at_the_rolling_acceleration(integrator, kind, ratio):
    model = on_the_incline(integrator, kind, mu=1.0)
    start = run(model, integrator, 0.1)                 # onto its contact
    x0, h0, v0 = along(start)
    x1, h1, _ = along(run(model, integrator, 0.5, start))
    # measured: within 0.2 % in every integrator
    assert x1 - x0 == pytest.approx(v0 * 0.5 + 0.5 * ratio * G * math.sin(THETA) * 0.25, rel=5e-3)
    assert 0.097 < h1 <= 0.1 + 1e-5 and abs(h1 - h0) < 5e-4     # on the plane, never through it


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_a_box_with_mu_0_8_holds_on_a_20_degree_tilted_plane(integrator):
    model = on_the_incline(integrator, "box", mu=0.8)
    start = run(model, integrator, 0.2)
    x0, _, _ = along(start)
    x1, h1, v1 = along(run(model, integrator, 2.0, start))
    # the constraint contact's soft friction rows creep as MuJoCo's do (0.33 mm in 2 s measured;
    # issue 29's bound: 1 mm in 3 s); the penalty anchors and XPBD hold to 1e-5 m
    creep = 1e-3 if integrator == "featherstone-constraint" else 1e-4
    assert abs(x1 - x0) < creep and abs(v1) < creep
    assert 0.097 < h1 <= 0.1 + 1e-5


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_a_box_with_mu_0_2_slides_down_a_tilted_plane_as_coulomb_says(integrator):
    model = on_the_incline(integrator, "box", mu=0.2)
    start = run(model, integrator, 0.1)
    x0, _, v0 = along(start)
    x1, _, _ = along(run(model, integrator, 1.0, start))
    assert x1 - x0 == pytest.approx(v0 + 0.5 * G * (math.sin(THETA) - 0.2 * math.cos(THETA)), rel=1e-2)


def test_a_finite_plane_holds_a_box_above_it_and_lets_one_beside_it_fall():
    on = on_the_incline("semi-implicit", "box", mu=0.8, half_extents=(0.5, 0.5))
    beside = on_the_incline("semi-implicit", "box", mu=0.8, half_extents=(0.5, 0.5), offset=0.8)
    _, h_on, _ = along(run(on, "semi-implicit", 0.5))
    _, h_beside, _ = along(run(beside, "semi-implicit", 0.5))
    assert 0.097 < h_on <= 0.1 + 1e-5
    steps = int(round(0.5 / DT))      # semi-implicit Euler's free fall: g dt^2 n (n + 1) / 2 after n steps
    assert h_beside == pytest.approx(0.101 - 0.5 * G * math.cos(THETA) * DT ** 2 * steps * (steps + 1), abs=1e-6)


def test_a_particle_rests_on_a_tilted_plane_at_its_radius():
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_plane((0.0, 0.0, 0.0), TILT, mu=1.0)
    b.add_particle(tuple(NORMAL * 0.06), (0.0, 0.0, 0.0), mass=0.01, radius=0.05)
    model = b.finalize(dtype=sk.float64)
    for integrator in (sk.sim.SemiImplicitEuler(), sk.sim.XPBD()):
        end = sk.sim.simulate(model, integrator, model.state(), 1000, DT, keep_states=False)[-1]
        x = end.particle_q.numpy()[0]
        assert x @ NORMAL == pytest.approx(0.05, abs=2e-3)


def test_the_sweep_broad_phase_meets_a_plane_as_the_static_list_does():
    static = run(on_the_incline("semi-implicit", "cylinder", mu=1.0, broad_phase="static"), "semi-implicit", 0.3)
    swept = run(on_the_incline("semi-implicit", "cylinder", mu=1.0, broad_phase="sweep"), "semi-implicit", 0.3)
    np.testing.assert_array_equal(swept.body_q.numpy(), static.body_q.numpy())


def test_the_gradient_of_where_a_sphere_rolls_on_a_plane_with_respect_to_its_push_matches_differences():
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_plane((0.0, 0.0, 0.0), TILT, mu=1.0)
    body = b.add_body(sk.transform(tuple(NORMAL * 0.099), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body, mu=1.0)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    w = np.array([0.3, -0.7, 0.5])

    def end_position(qd, taped=False):
        s = model.state(requires_grad=taped)
        s.body_qd.assign(qd)
        return s, sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s, 200, DT)[-1]

    qd = np.array([[0.0, 0.0, 0.5, 0.4, 0.0, -0.3]])
    with sk.Tape() as tape:
        s0, end = end_position(qd, taped=True)
        loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
        sk.launch(weighted_end, 1, inputs=[end.body_q, sk.vec3d(*w), loss])
    tape.backward(loss=loss)
    grad = s0.body_qd.grad.numpy().reshape(6)
    for c in range(6):
        fd = central_difference(lambda: float(end_position(qd)[1].body_q.numpy()[0, :3] @ w), qd, (0, c), 1e-6)
        assert grad[c] == pytest.approx(fd, rel=1e-5, abs=1e-8), c


@sk.kernel
def weighted_end(body_q: sk.array(dtype=sk.transformd), w: sk.vec3d, loss: sk.array(dtype=sk.float64)):
    loss[0] = sk.dot(sk.transform_get_translation(body_q[0]), w)
