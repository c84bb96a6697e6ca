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
    vc = (v[..., 0], v[..., 1], v[..., 2])
    t = tuple(2.0 * c for c in _cross(u, vc))
    return np.stack([a + w * b + c for a, b, c in zip(vc, t, _cross(u, t))], axis=-1)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of the unit quaternion ``q = (x, y, z, w)``."""
    return np.stack([quat_rotate(q, e) for e in np.eye(3)], axis=1)


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The product ``a * b`` of quaternions stored ``(x, y, z, w)`` (rotate by b, then by a)."""
    u, w = np.asarray(a[:3], float), float(a[3])
    v, z = np.asarray(b[:3], float), float(b[3])
    return np.concatenate([w * v + z * u + np.cross(u, v), [w * z - u @ v]])


# Batches of vectors as three component arrays (x, y, z): numpy streams through those, where
# per-row operations on N x 3 arrays stride. Each formula does the float operations of
# np.cross and of the dot product of two 3-vectors, in their order, so a batch gives the same
# bits as one element at a time.
def _cross(a, b) -> tuple:
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


def _dot(a, b) -> np.ndarray:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _sub(a, b) -> tuple:
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


def _unit(a) -> tuple:
    n = np.sqrt(_dot(a, a))
    return a[0] / n, a[1] / n, a[2] / n


# Elements are processed this many at a time: the temporaries of a block stay in the cache
# and are reused by the allocator, instead of a fresh multi-megabyte array per operation.
_BLOCK = 1 << 15


def _blocks(points, indices, width: int):
    """``(rows, corners)`` per block of elements: ``rows`` the block's slice, ``corners`` its
    ``width`` corner vectors (component triples)."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    idx = np.asarray(indices).reshape(-1, width)
    comps = [np.ascontiguousarray(p[:, c]) for c in range(3)]
    for start in range(0, len(idx), _BLOCK):
        rows = slice(start, start + _BLOCK)
        block = idx[rows]
        yield rows, [tuple(c[block[:, k]] for c in comps) for k in range(width)]


def _count(indices, width: int) -> int:
    return np.asarray(indices).reshape(-1, width).shape[0]


def triangle_rest_poses(points, tris) -> tuple[np.ndarray, np.ndarray]:
    """For the triangles ``tris`` (M x 3 indices into ``points``, N x 3): the inverses of their
    2 x 2 rest edge matrices in each triangle's own frame (x along p1 - p0, y in the plane),
    M x 2 x 2, and their rest areas. A triangle of area below 1e-12 gets a zero pose.

    Example::

        pose, area = triangle_rest_poses(points, grid_triangles(4, 4))
    """
    m = _count(tris, 3)
    pose, area = np.zeros((m, 2, 2)), np.empty(m)
    for rows, (p0, p1, p2) in _blocks(points, tris, 3):
        e1, e2 = _sub(p1, p0), _sub(p2, p0)
        n = _cross(e1, e2)
        a = area[rows] = 0.5 * np.sqrt(_dot(n, n))
        ok = a >= 1e-12
        if not ok.all():
            e1, e2, n = (tuple(c[ok] for c in v) for v in (e1, e2, n))
        x = _unit(e1)
        y = _cross(_unit(n), x)
        D = np.empty((len(x[0]), 2, 2))
        D[:, 0, 0], D[:, 0, 1], D[:, 1, 0], D[:, 1, 1] = _dot(e1, x), _dot(e2, x), _dot(e1, y), _dot(e2, y)
        if ok.all():
            pose[rows] = np.linalg.inv(D)
        else:
            pose[rows][ok] = np.linalg.inv(D)
    return pose, area


def triangle_rest_pose(p0, p1, p2) -> tuple[np.ndarray, float]:
    """The inverse of the 2 x 2 rest edge matrix in the triangle's own frame (x along
    p1 - p0, y in the plane), and the rest area (one triangle of :func:`triangle_rest_poses`)."""
    pose, area = triangle_rest_poses(np.stack([np.asarray(p, dtype=np.float64) for p in (p0, p1, p2)]), [0, 1, 2])
    return pose[0], float(area[0])


def tet_rest_poses(points, tets) -> tuple[np.ndarray, np.ndarray]:
    """For the tetrahedra ``tets`` (M x 4 indices into ``points``): the inverses of their
    3 x 3 rest edge matrices (columns p1-p0, p2-p0, p3-p0), M x 3 x 3, and their signed
    volumes. One of volume below 1e-15 gets a zero pose.

    Example::

        pose, volume = tet_rest_poses(points, grid_tets(2, 2, 2))
    """
    m = _count(tets, 4)
    pose, volume = np.zeros((m, 3, 3)), np.empty(m)
    for rows, (p0, *rest) in _blocks(points, tets, 4):
        D = np.empty((len(p0[0]), 3, 3))
        for col, p in enumerate(rest):
            for row, c in enumerate(_sub(p, p0)):
                D[:, row, col] = c
        v = volume[rows] = np.linalg.det(D) / 6.0
        ok = np.abs(v) >= 1e-15
        if ok.all():
            pose[rows] = np.linalg.inv(D)
        else:
            pose[rows][ok] = np.linalg.inv(D[ok])
    return pose, volume


def tet_rest_pose(p0, p1, p2, p3) -> tuple[np.ndarray, float]:
    """The inverse of the 3 x 3 rest edge matrix (columns p1-p0, p2-p0, p3-p0) and the signed
    volume (one tetrahedron of :func:`tet_rest_poses`)."""
    pose, volume = tet_rest_poses(np.stack([np.asarray(p, dtype=np.float64) for p in (p0, p1, p2, p3)]),
                                  [0, 1, 2, 3])
    return pose[0], float(volume[0])


def dihedral_angles(points, edges) -> np.ndarray:
    """For the hinges ``edges`` (M x 4 indices ``(o0, o1, v0, v1)`` into ``points``): the signed
    angle between triangles ``(o0, v0, v1)`` and ``(o1, v1, v0)`` about the edge ``v0 -> v1``;
    0 when they are flat, the same convention as the bending kernel.

    Example::

        rest = dihedral_angles(points, bending_edges(grid_triangles(4, 4)))
    """
    angle = np.empty(_count(edges, 4))
    for rows, (o0, o1, v0, v1) in _blocks(points, edges, 4):
        n0 = _unit(_cross(_sub(v0, o0), _sub(v1, o0)))
        n1 = _unit(_cross(_sub(v1, o1), _sub(v0, o1)))
        e = _unit(_sub(v1, v0))
        angle[rows] = np.arctan2(_dot(_cross(n0, n1), e), _dot(n0, n1))
    return angle


def dihedral_angle(o0, o1, v0, v1) -> float:
    """Signed angle between triangles ``(o0, v0, v1)`` and ``(o1, v1, v0)`` about the edge
    ``v0 -> v1`` (one hinge of :func:`dihedral_angles`)."""
    points = np.stack([np.asarray(p, dtype=np.float64) for p in (o0, o1, v0, v1)])
    return float(dihedral_angles(points, [0, 1, 2, 3])[0])


def grid_triangles(dim_x: int, dim_y: int, start: int = 0) -> np.ndarray:
    """Two counter-clockwise triangles per cell of a (dim_x+1) x (dim_y+1) vertex grid
    (x fastest), cell by cell in the same order, the diagonal alternating so the sheet has
    no preferred shear direction: (dim_x * dim_y * 2) x 3 int32 vertex indices (the model's
    index type)."""
    tris = np.empty((dim_y, dim_x, 2, 3), dtype=np.int32)
    rows = max(1, _BLOCK // dim_x)
    for y0 in range(0, dim_y, rows):
        y, x = np.arange(y0, min(y0 + rows, dim_y))[:, None], np.arange(dim_x)[None, :]
        a = start + y * (dim_x + 1) + x                   # each cell's corners: a, b, c, d counter-clockwise
        b, c, d = a + 1, a + dim_x + 2, a + dim_x + 1
        even = (x + y) % 2 == 0
        t = tris[y0:y0 + rows]
        # even cells: (a, b, c), (a, c, d); odd cells: (a, b, d), (b, c, d)
        t[:, :, 0, 0], t[:, :, 0, 1], t[:, :, 0, 2] = a, b, np.where(even, c, d)
        t[:, :, 1, 0], t[:, :, 1, 1], t[:, :, 1, 2] = np.where(even, a, b), c, d
    return tris.reshape(-1, 3)


def bending_edges(tris) -> np.ndarray:
    """``(o0, o1, v0, v1)`` (E x 4) for every edge shared by two triangles (M x 3), oriented
    so that the triangles are ``(o0, v0, v1)`` and ``(o1, v1, v0)`` as they wind.

    Walking the triangles in order, an edge becomes a hinge when its second triangle is met
    (a third and fourth triangle on the same edge make a second hinge, and so on); hinges come
    in that order."""
    tris = np.asarray(tris, dtype=np.int64).reshape(-1, 3)
    # half-edge h = 3 t + k runs v0 = t[k] -> v1 = t[k+1] with o = t[k+2] opposite
    v0, v1, o = tris.reshape(-1), tris[:, [1, 2, 0]].reshape(-1), tris[:, [2, 0, 1]].reshape(-1)
    lo, hi = np.minimum(v0, v1), np.maximum(v0, v1)
    key = lo * (int(hi.max(initial=0)) + 1) + hi
    order = np.argsort(key, kind="stable")               # each edge's half-edges, in walking order
    key = key[order]
    new_edge = np.ones(len(key), dtype=bool)
    new_edge[1:] = key[1:] != key[:-1]
    group_start = np.maximum.accumulate(np.where(new_edge, np.arange(len(key)), 0))
    pairs_second = (np.arange(len(key)) - group_start) % 2 == 1
    # the hinge of a pair is met at its second half-edge: mark those in walking order
    partner = np.full(len(v0), -1, dtype=np.int64)
    second = order[pairs_second]
    partner[second] = order[np.flatnonzero(pairs_second) - 1]
    second = np.flatnonzero(partner >= 0)
    first = partner[second]
    return np.stack([o[first], o[second], v0[first], v1[first]], axis=1)


def grid_bending_edges(dim_x: int, dim_y: int, start: int = 0) -> np.ndarray:
    """``bending_edges(grid_triangles(dim_x, dim_y, start))``, without sorting: the hinges of
    a cloth grid in the same order and orientation, from its structure (int32).

    Walking the cells in order, a cell's triangles complete the hinge of its diagonal, of
    its bottom edge (the top of the cell below, y > 0) and of its left edge (the right of
    the cell to its left, x > 0): bottom, diagonal, left in an even cell (x + y even), bottom,
    left, diagonal in an odd one, as its triangles' half-edges meet them."""
    # one diagonal per cell, a bottom edge per cell above the first row, a left edge per cell
    # right of the first column
    hinges = np.empty((dim_x * dim_y + dim_x * (dim_y - 1) + (dim_x - 1) * dim_y, 4), dtype=np.int32)
    rows, done = max(1, _BLOCK // dim_x), 0
    for y0 in range(0, dim_y, rows):
        y, x = np.arange(y0, min(y0 + rows, dim_y))[:, None], np.arange(dim_x)[None, :]
        a = start + y * (dim_x + 1) + x
        b, c, d = a + 1, a + dim_x + 2, a + dim_x + 1
        even = (x + y) % 2 == 0
        # (o0, o1, v0, v1): the opposite corner in the earlier triangle, in the later one, then
        # the edge as the earlier triangle winds it
        bottom = (np.where(even, a - dim_x, a - dim_x - 1), np.where(even, c, d), b, a)
        diagonal = (np.where(even, b, a), np.where(even, d, c), np.where(even, c, b), np.where(even, a, d))
        left = (np.where(even, d - 1, a - 1), np.where(even, c, b), a, d)
        block = np.empty(a.shape + (3, 4), dtype=np.int32)
        valid = np.empty(a.shape + (3,), dtype=bool)
        has_left = np.broadcast_to(x > 0, a.shape)
        for k in range(4):
            block[:, :, 0, k] = bottom[k]
            # the diagonal and the left edge trade places in odd cells
            block[:, :, 1, k] = np.where(even, diagonal[k], left[k])
            block[:, :, 2, k] = np.where(even, left[k], diagonal[k])
        valid[:, :, 0], valid[:, :, 1], valid[:, :, 2] = y > 0, even | has_left, ~even | has_left
        found = block[valid]
        hinges[done:done + len(found)] = found
        done += len(found)
    return hinges


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


# The five tetrahedra of a cell by its corners c = x + 2 y + 4 z, for cells whose x + y + z is
# even and odd (mirrored, so that neighbouring cells split their shared faces alike).
_CELL_TETS = (np.array([_positive(t) for t in ((0, 1, 2, 4), (3, 2, 1, 7), (5, 4, 7, 1), (6, 7, 4, 2), (1, 2, 4, 7))]),
              np.array([_positive(t) for t in ((1, 3, 0, 5), (2, 0, 3, 6), (4, 5, 6, 0), (7, 6, 5, 3), (0, 3, 5, 6))]))


def grid_tets(nx: int, ny: int, nz: int) -> np.ndarray:
    """Five positively oriented tetrahedra per hexahedral cell, cell by cell (x fastest, then
    y, then z), as int32 vertex indices; neighbouring cells mirror the split so that shared
    faces match."""
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    base = ((z * (ny + 1) + y) * (nx + 1) + x).reshape(-1, 1, 1)
    c = np.arange(8)
    corner = (c & 1) + ((c >> 1) & 1) * (nx + 1) + ((c >> 2) & 1) * (nx + 1) * (ny + 1)
    odd = ((x + y + z) % 2).reshape(-1)
    tets = base + np.where(odd[:, None, None] == 1, corner[_CELL_TETS[1]], corner[_CELL_TETS[0]])
    return tets.reshape(-1, 4).astype(np.int32)
