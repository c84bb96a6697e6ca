"""Helpers of the cloth self-contact tests: cloth scenes and a brute-force count of
intersecting triangle pairs (numpy and a KD-tree, independent of simkit's kernels)."""

import numpy as np
from scipy.spatial import cKDTree

import simkit as sk


def _segments_hit_triangles(p0, p1, a, b, c) -> np.ndarray:
    """Whether each segment ``p0 p1`` passes through triangle ``a b c`` (rows of N x 3 arrays),
    by the ray-triangle test of Moeller and Trumbore restricted to the segment."""
    d, e1, e2 = p1 - p0, b - a, c - a
    h = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, h)
    ok = np.abs(det) > 1e-18
    inv = np.divide(1.0, det, out=np.zeros_like(det), where=ok)
    s = p0 - a
    u = inv * np.einsum("ij,ij->i", s, h)
    qv = np.cross(s, e1)
    v = inv * np.einsum("ij,ij->i", d, qv)
    t = inv * np.einsum("ij,ij->i", e2, qv)
    return ok & (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0) & (t >= 0.0) & (t <= 1.0)


def intersecting_triangle_pairs(q: np.ndarray, tris: np.ndarray) -> int:
    """How many pairs of triangles that share no vertex intersect: a side of one passes
    through the other (the non-coplanar cases; coplanar contact has measure zero)."""
    q = np.asarray(q, dtype=np.float64)
    corners = q[tris]
    centers = corners.mean(axis=1)
    reach = 2.0 * np.linalg.norm(corners - centers[:, None], axis=2).max()
    pairs = cKDTree(centers).query_pairs(reach, output_type="ndarray")
    A, B = tris[pairs[:, 0]], tris[pairs[:, 1]]
    pairs = pairs[~(A[:, :, None] == B[:, None, :]).any(axis=(1, 2))]
    hit = np.zeros(len(pairs), dtype=bool)
    for one, other in ((0, 1), (1, 0)):
        P, T = q[tris[pairs[:, one]]], q[tris[pairs[:, other]]]
        for k in range(3):
            hit |= _segments_hit_triangles(P[:, k], P[:, (k + 1) % 3], T[:, 0], T[:, 1], T[:, 2])
    return int(hit.sum())


def falling_sheet(n: int, self_contact: bool = True, dtype=sk.float32, thickness: float = 2e-3, size: float = 0.5,
                  **cloth):
    """A square sheet of ``size`` (m) and ``n`` x ``n`` cells, 100 g, standing nearly upright (tilted
    10 degrees) with its lower border 1 cm above the ground: it buckles and piles onto itself."""
    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((0.0, 0.01, 0.0), (0.0872, 0.0, 0.0, 0.9962), (0.0, 0.0, 0.0), n, n, size / n, size / n,
                     mass=0.1 / (n + 1) ** 2, edge_ke=1e-4, radius=2e-3,
                     **cloth)
    if self_contact:
        b.set_cloth_self_contact(thickness=thickness)
    return b.finalize(dtype=dtype)


def run(model, integrator, steps: int, dt: float):
    """The state after ``steps`` steps of ``dt`` from the model's initial state (two states swapped)."""
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        integrator.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0
