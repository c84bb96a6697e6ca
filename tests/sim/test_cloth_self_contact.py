"""Cloth self-contact (issue 33): vertex-triangle and edge-edge pairs of non-adjacent cloth
elements kept ``thickness`` apart, by penalties (SemiImplicitEuler) or constraints (XPBD).

Oracles: the pairs found are those a brute-force numpy search finds; the penalty on a vertex
over a triangle is ``ke (h - d)`` along the normal; rollout gradients match central
differences; a falling sheet piles onto itself with no intersecting triangle pair (counted by
a numpy triangle-triangle test), where without self-contact it passes through itself; a
folded sheet comes to rest. ``SIMKIT_LONG_TESTS=1`` runs the heap at the issue's size
(64 x 64 cells) instead of 32 x 32.
"""

import os
import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.sim.cloth_contact import cloth_contact_overflow, cloth_edges, find_cloth_pairs

from cloth_helpers import falling_sheet, intersecting_triangle_pairs, run
from sim_helpers import position_loss

F64 = sk.float64
FLAT = (-0.7071068, 0.0, 0.0, 0.7071068)    # the cloth grid's local x-y plane turned onto x-z
LONG = os.environ.get("SIMKIT_LONG_TESTS") == "1"


def _folded_builder(gap=1.5e-3, ke=100.0, kd=0.05):
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_cloth_grid((0.0, 0.0, 0.0), FLAT, (0.0, 0.0, 0.0), 4, 4, 0.05, 0.05, mass=1e-3, edge_ke=0.0)
    b.set_cloth_self_contact(thickness=2e-3, ke=ke, kd=kd)
    q = b.particle_q.values().copy()
    right = q[:, 0] > 0.1 + 1e-9
    q[right, 0] = 0.213 - q[right, 0]
    q[right, 1] += gap
    q[right, 2] += 0.011
    for i in np.flatnonzero(right):
        b.particle_q[i] = q[i]
    return b


def folded_cloth(dtype=F64, gap=1.5e-3, requires_grad=False, ke=100.0, kd=0.05):
    """A 4 x 4-cell cloth, 5 cm cells, no gravity or ground, whose right half is laid back over
    its left half ``gap`` above it, shifted by (13, 11) mm so that no vertex sits over a vertex."""
    return _folded_builder(gap, ke, kd).finalize(dtype=dtype, requires_grad=requires_grad)


def _point_triangle_distance(p, a, b, c, samples=60) -> float:
    """The distance from p to triangle abc, by sampling it on a barycentric lattice (independent
    of the kernels' closed form; good to about its spacing)."""
    i, j = np.meshgrid(np.arange(samples + 1), np.arange(samples + 1), indexing="ij")
    keep = i + j <= samples
    u, v = i[keep] / samples, j[keep] / samples
    points = a + np.outer(u, b - a) + np.outer(v, c - a)
    return float(np.linalg.norm(points - p, axis=1).min())


def _segment_distance(p0, p1, q0, q1, samples=200) -> float:
    s = np.linspace(0.0, 1.0, samples + 1)
    P = p0 + np.outer(s, p1 - p0)
    Q = q0 + np.outer(s, q1 - q0)
    return float(np.linalg.norm(P[:, None] - Q[None], axis=2).min())


def test_pairs_found_are_the_non_adjacent_ones_within_twice_the_thickness():
    model = folded_cloth()
    state = model.state()
    q = state.particle_q.numpy()
    pairs = find_cloth_pairs(model, state, state.particle_q, state.particle_q)
    tris, reach, band = model.triangles.indices.numpy(), 4e-3, 3e-4
    verts = model.cloth_contact.verts.numpy()
    found_vt = {(int(verts[v]), int(t)) for v, row in enumerate(pairs.vt.numpy()) for t in row if t >= 0}
    for i in verts:
        for t, corners in enumerate(tris):
            if i in corners:
                assert (i, t) not in found_vt
                continue
            d = _point_triangle_distance(q[i], *q[corners])
            if abs(d - reach) > band:      # the sampled distance decides away from the threshold
                assert ((i, t) in found_vt) == (d < reach), (i, t, d)
    edges = cloth_edges(tris)
    found_ee = {tuple(sorted((e, int(f)))) for e, row in enumerate(pairs.ee.numpy()) for f in row if f >= 0}
    assert sum(1 for e, row in enumerate(pairs.ee.numpy()) for f in row if f >= 0) == len(found_ee)
    for e in range(len(edges)):
        for f in range(e + 1, len(edges)):
            if set(edges[e]) & set(edges[f]):
                assert (e, f) not in found_ee
                continue
            d = _segment_distance(*q[edges[e]], *q[edges[f]])
            if abs(d - reach) > band:
                assert ((e, f) in found_ee) == (d < reach), (e, f, d)
    assert found_vt and found_ee


def test_pairs_never_cross_worlds():
    # two copies of the folded cloth in two worlds, in the same place: each finds its own pairs
    one = folded_cloth()
    single = find_cloth_pairs(one, one.state(), one.particle_q, one.particle_q)
    world = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    world.add_builder(_folded_builder())
    world.add_builder(_folded_builder())
    world.set_cloth_self_contact(thickness=2e-3)
    model = world.finalize(dtype=F64)
    pairs = find_cloth_pairs(model, model.state(), model.particle_q, model.particle_q)
    n, tris = one.particle_count, model.triangles.indices.numpy()
    verts = model.cloth_contact.verts.numpy()
    vt = [(verts[v] // n, tris[t, 0] // n) for v, row in enumerate(pairs.vt.numpy()) for t in row if t >= 0]
    assert vt and all(a == b for a, b in vt)
    assert len(vt) == 2 * int((single.vt.numpy() >= 0).sum())
    edges = model.cloth_contact.edges.numpy()
    ee = [(edges[e, 0] // n, edges[f, 0] // n) for e, row in enumerate(pairs.ee.numpy()) for f in row if f >= 0]
    assert ee and all(a == b for a, b in ee)
    assert len(ee) == 2 * int((single.ee.numpy() >= 0).sum())


def test_penalty_on_a_vertex_over_a_triangle_is_ke_times_the_depth():
    # a small sheet (1 cm cells) 1 mm over one triangle of a large one (10 cm), far from its
    # diagonal: only vertex-triangle pairs act, each a force ke (h - d) straight up
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_cloth_grid((0.0, 0.0, 0.0), FLAT, (0.0, 0.0, 0.0), 1, 1, 0.1, 0.1, mass=1e-3)
    b.add_cloth_grid((0.06, 1e-3, -0.01), FLAT, (0.0, 0.0, 0.0), 1, 1, 0.01, 0.01, mass=1e-3)
    ke, h = 250.0, 2e-3
    b.set_cloth_self_contact(thickness=h, ke=ke, kd=0.0)
    model = b.finalize(dtype=F64)
    s0, s1 = model.state(), model.state()
    sk.sim.SemiImplicitEuler().step(model, s0, s1, None, 1e-4)
    f = s0.particle_f.numpy()
    # the triangle under the small sheet is the lower cell's (a, b, c): its corners 0, 1, 3
    expected = np.zeros((8, 3))
    expected[4:, 1] = ke * (h - 1e-3)
    assert np.abs(f[4:] - expected[4:]).max() < 1e-9
    assert np.abs(f[2]).max() < 1e-12                      # not a corner of that triangle
    assert np.abs(f.sum(axis=0)).max() < 1e-9              # each pair's forces cancel
    assert f[[0, 1, 3], 1].sum() == pytest.approx(-4 * ke * (h - 1e-3), rel=1e-9)


def _rollout_loss(model, q0, w, steps=8, dt=1e-4, integrator=None):
    integrator = integrator or sk.sim.SemiImplicitEuler()
    states = [model.state() for _ in range(steps + 1)]
    states[0].particle_q.assign(q0)
    for k in range(steps):
        integrator.step(model, states[k], states[k + 1], None, dt)
    return states, position_loss(states[-1].particle_q, w)


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler(), sk.sim.XPBD(iterations=2)],
                         ids=["semi_implicit", "xpbd"])
def test_self_contact_rollout_gradient_matches_central_differences(integrator):
    # the weights are random: forces of a pair cancel, so a plain sum of positions would not
    # see the contact at all
    model = folded_cloth(requires_grad=True)
    rng = np.random.default_rng(3)
    w = rng.normal(size=(model.particle_count, 3))
    q0 = model.particle_q.numpy().copy()
    dt = 1e-4 if isinstance(integrator, sk.sim.SemiImplicitEuler) else 2e-3
    tape = sk.Tape()
    with tape:
        states, loss = _rollout_loss(model, q0, w, dt=dt, integrator=integrator)
    tape.backward(loss=loss)
    grad_q = states[0].particle_q.grad.numpy().copy()
    assert (states[1]._cloth_pairs.vt.numpy() >= 0).any() or (states[0]._cloth_pairs.vt.numpy() >= 0).any()
    eps = 1e-6
    right = np.flatnonzero(q0[:, 1] > 1e-4)         # the upper layer, which the contact pushes
    for i in right[:4]:
        for c in range(3):
            up, down = q0.copy(), q0.copy()
            up[i, c] += eps
            down[i, c] -= eps
            fd = (_rollout_loss(model, up, w, dt=dt, integrator=integrator)[1].numpy()[0]
                  - _rollout_loss(model, down, w, dt=dt, integrator=integrator)[1].numpy()[0]) / (2 * eps)
            assert grad_q[i, c] == pytest.approx(fd, rel=1e-5, abs=1e-7), (i, c)
    if isinstance(integrator, sk.sim.SemiImplicitEuler):
        ke = model.cloth_contact.params.ke
        grad_ke = ke.grad.numpy()[0]
        assert grad_ke != 0.0
        values = ke.numpy()

        def loss_at(value):
            values[0] = value
            ke.assign(values)
            return _rollout_loss(model, q0, w, dt=dt)[1].numpy()[0]

        fd = (loss_at(100.0 + 1e-3) - loss_at(100.0 - 1e-3)) / 2e-3
        loss_at(100.0)
        assert grad_ke == pytest.approx(fd, rel=1e-5)


def test_without_self_contact_the_falling_sheet_passes_through_itself():
    model = falling_sheet(16, self_contact=False)
    state = run(model, sk.sim.XPBD(iterations=4), 600, 1e-3)
    assert intersecting_triangle_pairs(state.particle_q.numpy(), model.triangles.indices.numpy()) > 0


@pytest.mark.parametrize("n", [64] if LONG else [32])
def test_xpbd_heap_has_no_intersecting_triangles(n):
    # dt 1e-3 s, 0.7 s: the sheet falls, buckles and piles onto itself at up to 2.6 m/s
    model = falling_sheet(n)
    state = run(model, sk.sim.XPBD(iterations=4 if n <= 32 else 10), 700, 1e-3)
    q = state.particle_q.numpy()
    assert q[:, 1].max() < 0.12                          # it is a heap, not a standing sheet
    assert intersecting_triangle_pairs(q, model.triangles.indices.numpy()) == 0
    # the 64 x 64 heap's densest steps drop a few of its pairs (56 over the 700 steps, with no
    # intersection); the 32 x 32 one none
    assert cloth_contact_overflow(state) == 0 or n > 32


def test_semi_implicit_heap_has_no_intersecting_triangles():
    # dt 1e-4 s, 0.4 s, a 0.3 m sheet of 12 x 12 cells: the penalty is explicit, stiff for
    # the light vertices
    model = falling_sheet(12, size=0.3)
    state = run(model, sk.sim.SemiImplicitEuler(), 4000, 1e-4)
    q = state.particle_q.numpy()
    assert q[:, 1].max() < 0.12
    assert intersecting_triangle_pairs(q, model.triangles.indices.numpy()) == 0


def test_cloth_folded_on_itself_comes_to_rest():
    # 12 x 12 cells of 2 cm, the right half laid over the left 2 mm above it, on the ground
    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((0.0, 2e-3, 0.0), FLAT, (0.0, 0.0, 0.0), 12, 12, 0.02, 0.02, mass=1e-3, edge_ke=0.0,
                     radius=2e-3)
    b.set_cloth_self_contact(thickness=2e-3)
    q = b.particle_q.values().copy()
    right = q[:, 0] > 0.12 + 1e-9
    q[right, 0] = 0.24 - q[right, 0]
    q[right, 1] += 2e-3
    for i in np.flatnonzero(right):
        b.particle_q[i] = q[i]
    model = b.finalize()
    state = run(model, sk.sim.XPBD(iterations=4), 2000, 1e-3)
    mass = model.particles.mass.numpy()
    energy = 0.5 * float((mass[:, None] * state.particle_qd.numpy().astype(np.float64) ** 2).sum())
    assert energy < 1e-6
    top = state.particle_q.numpy()[right, 1]
    assert top.min() > 2e-3 + 1.9e-3                    # still on the lower layer, thickness apart


def test_thickness_beyond_the_mesh_is_refused():
    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((0.0, 1.0, 0.0), FLAT, (0.0, 0.0, 0.0), 2, 2, 0.01, 0.01, mass=1e-3)
    b.set_cloth_self_contact(thickness=6e-3)
    with pytest.raises(ValueError, match="thickness 0.006 is too large"):
        b.finalize()


def test_bad_self_contact_parameters_are_refused():
    b = sk.sim.ModelBuilder()
    with pytest.raises(ValueError, match="set_cloth_self_contact: thickness"):
        b.set_cloth_self_contact(thickness=0.0)
    with pytest.raises(ValueError, match="set_cloth_self_contact: ke"):
        b.set_cloth_self_contact(ke=-1.0)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.set_cloth_self_contact()
    with pytest.raises(ValueError, match="no triangles"):
        b.finalize()


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD])
def test_pairs_dropped_for_lack_of_slots_warn_once(integrator):
    model = folded_cloth(dtype=sk.float32)
    s0, s1 = model.state(), model.state()
    step = integrator()
    step.step(model, s0, s1, None, 1e-4)
    holder = s0 if integrator is sk.sim.SemiImplicitEuler else s1
    holder._cloth_pairs.overflow.assign(np.array([3], np.int32))   # as a dense heap leaves it
    with pytest.warns(RuntimeWarning, match="3 pair\\(s\\) did not fit the 32 slots"):
        step.step(model, s0, s1, None, 1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step.step(model, s0, s1, None, 1e-4)     # once per model
