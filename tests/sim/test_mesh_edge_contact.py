"""Edge contact of triangle meshes: each edge of a mesh meets the other shape at its point
deepest inside it, so meshes whose edges cross with no vertex of either inside the other
still touch. Two bars laid crosswise rest on each other at the sum of their half
thicknesses (a vertex-only contact lets them pass through), two coarse linked tori stay
linked (checked by the linking of their center circles, a topological invariant), and the
gradient of a rollout through an edge contact matches central differences (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference
from simkit.kernels.meshes import mesh_contact_rows, mesh_edges

DT = 1e-3
ACROSS = (0.0, np.sin(np.pi / 4), 0.0, np.cos(np.pi / 4))     # a bar along x turned onto z


def box_mesh(hx, hy, hz):
    v = np.array([[x, y, z] for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)], dtype=np.float64)
    f = [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6], [0, 2, 6],
         [0, 6, 4], [1, 5, 7], [1, 7, 3]]
    return v, np.array(f)


def torus_mesh(R, r, n_ring, n_tube):
    u, w = np.meshgrid(np.arange(n_ring) * 2 * np.pi / n_ring, np.arange(n_tube) * 2 * np.pi / n_tube, indexing="ij")
    v = np.stack([(R + r * np.cos(w)) * np.cos(u), (R + r * np.cos(w)) * np.sin(u), r * np.sin(w)], -1)
    f = []
    for i in range(n_ring):
        for j in range(n_tube):
            a, b = i * n_tube + j, ((i + 1) % n_ring) * n_tube + j
            c, d = ((i + 1) % n_ring) * n_tube + (j + 1) % n_tube, i * n_tube + (j + 1) % n_tube
            f += [[a, b, c], [a, c, d]]
    return v.reshape(-1, 3), np.array(f)


def crossed_bars(requires_grad=False):
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_mesh(-1, *box_mesh(0.5, 0.02, 0.02))                 # static, along x
    top = b.add_body(sk.transform((0.0, 0.05, 0.0), ACROSS))
    b.add_shape_mesh(top, *box_mesh(0.5, 0.02, 0.02), density=500.0)  # along z, 1 cm above it
    return b.finalize(dtype=sk.float64, requires_grad=requires_grad)


def test_the_edges_of_a_mesh_are_its_convex_creases_not_its_flat_or_concave_ones():
    square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
    # an open square: its 4 borders, not its diagonal
    assert mesh_edges(square, np.array([[0, 1, 2], [0, 2, 3]])).tolist() == [[0, 1], [0, 3], [1, 2], [2, 3]]
    v, f = box_mesh(0.5, 0.02, 0.02)
    assert len(mesh_edges(v, f)) == 12          # a box's 12 edges, none of its 6 face diagonals
    # a square-section torus of 8 x 4 (planar) quads: the 32 edges along the ring (the tube's
    # corners, convex), half of the 32 around the tube (those on the ring's outer side; on its
    # inner side the ring bends them concave), no diagonal
    v, f = torus_mesh(0.3, 0.08, 8, 4)
    e = mesh_edges(v, f)
    section = np.arange(len(v)) // 4
    around = section[e[:, 0]] == section[e[:, 1]]
    assert len(e) == 48 and around.sum() == 16


def test_a_mesh_pair_has_a_row_for_every_vertex_and_every_edge_of_each_side():
    rows = mesh_contact_rows(crossed_bars()).numpy()
    # each bar against the other: its 8 vertices, then its 12 edges
    assert rows[:, [0, 2]].tolist() == [[0, 1]] * 20 + [[1, 0]] * 20
    assert rows[:, 1].tolist() == list(range(20)) * 2


@pytest.mark.parametrize("integrator, sink", [(sk.sim.SemiImplicitEuler, 1e-3), (sk.sim.XPBD, 1e-5)])
def test_two_bars_laid_crosswise_rest_on_each_other_though_no_vertex_is_inside_either(integrator, sink):
    model = crossed_bars()
    end = sk.sim.simulate(model, integrator(), model.state(), 600, DT, keep_states=False)[-1]
    y = end.body_q.numpy()[0, 1]
    # the bars' 2 cm half thicknesses; the penalty contact sinks by g tc^2 into it
    assert 0.04 - sink <= y <= 0.04 + 1e-5
    assert np.abs(end.body_qd.numpy()[0]).max() < 1e-2


def linked(static_R: float, X: np.ndarray, R: float) -> bool:
    """Whether the circle of radius ``static_R`` about the origin in the x-y plane passes
    through the disk of radius ``R`` of a torus at pose ``X`` (its ring in its local x-y
    plane) an odd number of times: the two center circles are linked."""
    q, c = X[3:], X[:3]
    n = sk.sim.geometry.quat_rotate(q, np.array([0.0, 0.0, 1.0]))
    u = np.linspace(0.0, 2 * np.pi, 3601) + 1e-4      # off the axes, where a crossing may sit exactly
    P = static_R * np.stack([np.cos(u), np.sin(u), np.zeros_like(u)], axis=1)
    side = (P - c) @ n
    crossings = 0
    for i in np.flatnonzero(side[:-1] * side[1:] < 0.0):
        x = P[i] + (P[i + 1] - P[i]) * side[i] / (side[i] - side[i + 1])
        crossings += int(np.linalg.norm(x - c) < R)
    return crossings % 2 == 1


def test_two_coarse_linked_tori_stay_linked_for_five_seconds():
    # square-section tori, 8 x 4 faces: the hanging one meets the static one's tube edge on
    # edge, with no vertex near (with vertices alone it falls out of the ring)
    R, r = 0.3, 0.08
    v, f = torus_mesh(R, r, 8, 4)
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_mesh(-1, v, f)                                           # upright, in the x-y plane
    ring = b.add_body(sk.transform((R, 0.0, 0.0), (np.sin(np.pi / 4), 0.0, 0.0, np.cos(np.pi / 4))))
    b.add_shape_mesh(ring, v, f, density=500.0)                          # flat, through its hole
    model = b.finalize(dtype=sk.float64)
    state = model.state()
    assert linked(R, state.body_q.numpy()[0], R)
    integrator = sk.sim.SemiImplicitEuler()
    for _ in range(50):
        state = sk.sim.simulate(model, integrator, state, 100, DT, keep_states=False)[-1]
        X = state.body_q.numpy()[0]
        assert linked(R, X, R) and np.all(np.isfinite(X))
    # it slid down the upright ring and hangs from its bottom, its tube on the other's (as
    # round tori would, to the rings' octagonal facets and its swing)
    assert X[1] == pytest.approx(-R - (R - 2 * r), abs=0.03)


@sk.kernel
def weighted_end(body_q: sk.array(dtype=sk.transformd), w: sk.vec3d, loss: sk.array(dtype=sk.float64)):
    loss[0] = sk.dot(sk.transform_get_translation(body_q[0]), w)


def test_the_gradient_of_a_rollout_through_an_edge_contact_matches_central_differences():
    model = crossed_bars(requires_grad=True)
    w = np.array([0.4, -0.6, 0.7])

    def end_of(qd, taped=False):
        s = model.state(requires_grad=taped)
        s.body_q.assign(np.array([[0.0, 0.0398, 0.0, *ACROSS]]))        # 0.2 mm into the contact
        s.body_qd.assign(qd)
        return s, sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s, 60, DT)[-1]

    qd = np.array([[0.3, 0.0, -0.2, 0.05, -0.1, 0.02]])
    with sk.Tape() as tape:
        s0, end = end_of(qd, taped=True)
        loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
        sk.launch(weighted_end, 1, inputs=[end.body_q, sk.vec3d(*w), loss])
    tape.backward(loss=loss)
    grad = s0.body_qd.grad.numpy().reshape(6)
    for c in range(6):
        fd = central_difference(lambda: float(end_of(qd)[1].body_q.numpy()[0, :3] @ w), qd, (0, c), 1e-6)
        assert grad[c] == pytest.approx(fd, rel=1e-4, abs=1e-8), c
