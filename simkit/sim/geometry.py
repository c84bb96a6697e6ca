"""Rest-shape geometry and mesh generation for the builder (numpy, build time only).

Example::

    pose, area = triangle_rest_pose(p0, p1, p2)
    tris = grid_triangles(4, 4)
"""

from __future__ import annotations

import numpy as np


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate ``v`` (3 or N x 3) by the unit quaternion ``q = (x, y, z, w)``."""
    u, w = np.asarray(q[:3], dtype=np.float64), float(q[3])
    v = np.asarray(v, dtype=np.float64)
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of the unit quaternion ``q = (x, y, z, w)``."""
    return np.stack([quat_rotate(q, e) for e in np.eye(3)], axis=1)


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The product ``a * b`` of quaternions stored ``(x, y, z, w)`` (rotate by b, then by a)."""
    u, w = np.asarray(a[:3], float), float(a[3])
    v, z = np.asarray(b[:3], float), float(b[3])
    return np.concatenate([w * v + z * u + np.cross(u, v), [w * z - u @ v]])


def triangle_rest_pose(p0, p1, p2) -> tuple[np.ndarray, float]:
    """The inverse of the 2 x 2 rest edge matrix in the triangle's own frame (x along
    p1 - p0, y in the plane), and the rest area."""
    e1, e2 = np.asarray(p1, float) - p0, np.asarray(p2, float) - p0
    n = np.cross(e1, e2)
    area = 0.5 * float(np.linalg.norm(n))
    if area < 1e-12:
        return np.zeros((2, 2)), area
    x = e1 / np.linalg.norm(e1)
    y = np.cross(n / np.linalg.norm(n), x)
    D = np.array([[e1 @ x, e2 @ x], [e1 @ y, e2 @ y]])
    return np.linalg.inv(D), area


def tet_rest_pose(p0, p1, p2, p3) -> tuple[np.ndarray, float]:
    """The inverse of the 3 x 3 rest edge matrix (columns p1-p0, p2-p0, p3-p0) and the signed volume."""
    D = np.stack([np.asarray(p, float) - p0 for p in (p1, p2, p3)], axis=1)
    volume = float(np.linalg.det(D)) / 6.0
    if abs(volume) < 1e-15:
        return np.zeros((3, 3)), volume
    return np.linalg.inv(D), volume


def dihedral_angle(o0, o1, v0, v1) -> float:
    """Signed angle between triangles ``(o0, v0, v1)`` and ``(o1, v1, v0)`` about the edge
    ``v0 -> v1``; 0 when they are flat, the same convention as the bending kernel."""
    o0, o1, v0, v1 = (np.asarray(p, float) for p in (o0, o1, v0, v1))
    n0 = np.cross(v0 - o0, v1 - o0)
    n1 = np.cross(v1 - o1, v0 - o1)
    e = v1 - v0
    n0, n1, e = n0 / np.linalg.norm(n0), n1 / np.linalg.norm(n1), e / np.linalg.norm(e)
    return float(np.arctan2(np.cross(n0, n1) @ e, n0 @ n1))


def grid_triangles(dim_x: int, dim_y: int, start: int = 0) -> list[tuple[int, int, int]]:
    """Two counter-clockwise triangles per cell of a (dim_x+1) x (dim_y+1) vertex grid
    (x fastest), the diagonal alternating so the sheet has no preferred shear direction."""
    def vid(x, y):
        return start + y * (dim_x + 1) + x
    tris = []
    for y in range(dim_y):
        for x in range(dim_x):
            a, b, c, d = vid(x, y), vid(x + 1, y), vid(x + 1, y + 1), vid(x, y + 1)
            if (x + y) % 2 == 0:
                tris += [(a, b, c), (a, c, d)]
            else:
                tris += [(a, b, d), (b, c, d)]
    return tris


def bending_edges(tris) -> list[tuple[int, int, int, int]]:
    """``(o0, o1, v0, v1)`` for every edge shared by two triangles, oriented so that the
    triangles are ``(o0, v0, v1)`` and ``(o1, v1, v0)`` as they wind."""
    first: dict = {}
    edges = []
    for t in tris:
        for k in range(3):
            v0, v1, o = t[k], t[(k + 1) % 3], t[(k + 2) % 3]
            key = (min(v0, v1), max(v0, v1))
            if key in first:
                o_other, w0, w1 = first.pop(key)
                edges.append((o_other, o, w0, w1))
            else:
                first[key] = (o, v0, v1)
    return edges


def grid_points(nx: int, ny: int, nz: int, cx: float, cy: float, cz: float) -> np.ndarray:
    """Vertices of an nx x ny x nz cell grid, x fastest, then y, then z."""
    z, y, x = np.meshgrid(np.arange(nz + 1) * cz, np.arange(ny + 1) * cy, np.arange(nx + 1) * cx, indexing="ij")
    return np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)


def _positive(t: tuple) -> tuple:
    """Corner indices of a cell tetrahedron ordered so that its volume is positive."""
    corner = np.array([[c & 1, (c >> 1) & 1, (c >> 2) & 1] for c in t], dtype=float)
    if np.linalg.det((corner[1:] - corner[0]).T) < 0.0:
        return (t[0], t[1], t[3], t[2])
    return t


def grid_tets(nx: int, ny: int, nz: int) -> np.ndarray:
    """Five positively oriented tetrahedra per hexahedral cell; neighbouring cells mirror the
    split so that shared faces match."""
    def vid(x, y, z):
        return (z * (ny + 1) + y) * (nx + 1) + x
    tets = []
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                v = [vid(x + (c & 1), y + ((c >> 1) & 1), z + ((c >> 2) & 1)) for c in range(8)]
                if (x + y + z) % 2 == 0:
                    cell = [(0, 1, 2, 4), (3, 2, 1, 7), (5, 4, 7, 1), (6, 7, 4, 2), (1, 2, 4, 7)]
                else:
                    cell = [(1, 3, 0, 5), (2, 0, 3, 6), (4, 5, 6, 0), (7, 6, 5, 3), (0, 3, 5, 6)]
                tets += [[v[a] for a in _positive(t)] for t in cell]
    return np.array(tets, dtype=np.int64).reshape(-1, 4)
