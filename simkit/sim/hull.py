"""Convex hulls of point sets (numpy, build time only): the geometry of ``add_shape_convex``.

:func:`convex_hull` is an incremental hull: a first tetrahedron of four extreme points, then
each remaining point, farthest first, replaces the triangles it sees with a fan from the
horizon of those triangles to itself. A point within ``tolerance`` of the current hull (in
front of no triangle by more than that) is inside and dropped, so points on a face or an edge
(a box's face centres) leave no slivers. Triangles wind counterclockwise seen from outside.

Example::

    vertices, triangles = convex_hull(np.random.default_rng(0).normal(size=(30, 3)))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .mesh_geometry import solid_properties

# A point counts as outside a triangle when it is in front of its plane by more than this
# fraction of the point set's extent (rounding of the planes of a 1 m hull is far below it).
HULL_TOLERANCE = 1.0e-9
# a hull's contact points sit this fraction of its centroid's distance to its nearest face inside
# it (as a box's corners, by a tenth of its smallest half extent; simkit.kernels.convex)
HULL_ROUNDING = 0.1


def _plane(p: np.ndarray, tri) -> tuple[np.ndarray, float]:
    a, b, c = p[tri[0]], p[tri[1]], p[tri[2]]
    n = np.cross(b - a, c - a)
    n = n / np.linalg.norm(n)
    return n, float(n @ a)


def _first_tetrahedron(p: np.ndarray, tol: float, where: str) -> list:
    i0 = int(np.argmin(p[:, 0]))
    i1 = int(np.argmax(np.linalg.norm(p - p[i0], axis=1)))
    line = p[i1] - p[i0]
    if np.linalg.norm(line) <= tol:
        raise ValueError(f"{where}: the points are all at one place; a convex hull needs 4 points not in a plane")
    off = np.cross(p - p[i0], line / np.linalg.norm(line))
    i2 = int(np.argmax(np.linalg.norm(off, axis=1)))
    if np.linalg.norm(off[i2]) <= tol:
        raise ValueError(f"{where}: the points are on a line; a convex hull needs 4 points not in a plane")
    n = np.cross(line, p[i2] - p[i0])
    n = n / np.linalg.norm(n)
    h = (p - p[i0]) @ n
    i3 = int(np.argmax(np.abs(h)))
    if abs(h[i3]) <= tol:
        raise ValueError(f"{where}: the points are in a plane; a convex hull needs 4 points not in a plane")
    if h[i3] > 0.0:  # i3 in front of (i0, i1, i2): that triangle must face the other way
        i1, i2 = i2, i1
    return [(i0, i1, i2), (i0, i3, i1), (i1, i3, i2), (i2, i3, i0)]


def convex_hull(points: Any, where: str = "convex_hull") -> tuple[np.ndarray, np.ndarray]:
    """The convex hull of ``points`` (``N x 3``, N >= 4, not all in a plane): its vertices
    (float64 ``V x 3``, a subset of the points) and triangles (int32 ``T x 3`` into those
    vertices, counterclockwise seen from outside). A bad point set is a ``ValueError`` that
    starts with ``where``.

    Example::

        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
        v, t = convex_hull(corners)        # 8 vertices, 12 triangles
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or len(p) < 4:
        raise ValueError(f"{where}: points must be an N x 3 array with N >= 4, got shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{where}: points must be finite")
    tol = HULL_TOLERANCE * max(float(np.ptp(p, axis=0).max()), 1e-300)
    faces = _first_tetrahedron(p, tol, where)
    planes = [_plane(p, f) for f in faces]
    used = {i for f in faces for i in f}
    order = np.argsort(-np.linalg.norm(p - p[list(used)].mean(axis=0), axis=1), kind="stable")
    for i in order:
        if i in used:
            continue
        normals = np.array([n for n, _ in planes])
        offsets = np.array([d for _, d in planes])
        seen = normals @ p[i] - offsets > tol
        if not seen.any():
            continue
        visible = [f for f, s in zip(faces, seen) if s]
        edges = {(f[k], f[(k + 1) % 3]) for f in visible for k in range(3)}
        horizon = [e for e in edges if (e[1], e[0]) not in edges]
        kept = [(f, pl) for f, pl, s in zip(faces, planes, seen) if not s]
        faces = [f for f, _ in kept] + [(e[0], e[1], int(i)) for e in horizon]
        planes = [pl for _, pl in kept] + [_plane(p, f) for f in faces[len(kept):]]
        used.add(int(i))
    tri = np.array(faces, dtype=np.int64)
    keep = np.unique(tri)
    remap = np.full(len(p), -1, dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    return p[keep].copy(), remap[tri].astype(np.int32)


class HullGeometry:
    """One convex hull as a shape stores it: ``vertices`` (``V x 3``, in the shape's frame),
    ``triangles`` (``T x 3``, outward), each triangle's plane (``normals``, ``offsets``:
    ``n . x = d`` on it, ``n`` outward), ``radius`` (the farthest vertex from the shape's
    origin), ``rounding`` (a tenth of the centroid's distance to the nearest face: how far its
    contact points sit inside it) and the volume, centroid and unit-density inertia (about the
    centroid) of the solid.

    Example::

        hull = HullGeometry(points, "add_shape_convex")
        hull.volume, hull.center
    """

    def __init__(self, points: Any, where: str):
        self.vertices, self.triangles = convex_hull(points, where)
        a, b, c = (self.vertices[self.triangles[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        self.normals = n / np.linalg.norm(n, axis=1, keepdims=True)
        self.offsets = np.einsum("ij,ij->i", self.normals, a)
        self.radius = float(np.linalg.norm(self.vertices, axis=1).max())
        self.volume, self.center, self.inertia = solid_properties(self.vertices, self.triangles)
        self.rounding = HULL_ROUNDING * float((self.offsets - self.normals @ self.center).min())


def hull_arrays(hulls: list) -> dict:
    """The ``hull*`` fields of ``Shapes`` (numpy) for the shapes' hulls (None: not a hull).

    Example::

        hull_arrays([None, HullGeometry(points, "hull")])["hull"]      # [[0, 0, 0, 0], [0, V, 0, T]]
    """
    rows = np.zeros((len(hulls), 4), dtype=np.int32)
    centers = np.zeros((len(hulls), 3))
    vertices, triangles, normals, offsets = [np.zeros((0, 3))], [np.zeros((0, 3), dtype=np.int32)], \
        [np.zeros((0, 3))], [np.zeros(0)]
    nv = nt = 0
    for s, h in enumerate(hulls):
        if h is None:
            continue
        rows[s] = (nv, len(h.vertices), nt, len(h.triangles))
        centers[s] = h.center
        vertices.append(h.vertices)
        triangles.append(h.triangles + nv)
        normals.append(h.normals)
        offsets.append(h.offsets)
        nv += len(h.vertices)
        nt += len(h.triangles)
    return {"hull": rows, "hull_vertices": np.concatenate(vertices), "hull_triangles": np.concatenate(triangles),
            "hull_normals": np.concatenate(normals), "hull_offsets": np.concatenate(offsets), "hull_center": centers}
