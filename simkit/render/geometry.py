"""Triangle meshes for drawing (pure numpy, no OpenGL): tessellated spheres, boxes, capsules,
cylinders, cones, ellipsoids and a checkered ground, per-vertex normals, and 4 x 4 transforms from ``(p, q)`` poses.

Every mesh is a :class:`TriMesh` in its own frame: float32 positions and unit normals
(N x 3) and uint32 triangles (K x 3) wound counter-clockwise seen from outside, so that the
right-handed normal of each triangle points out of the solid.

Example::

    ball = sphere_mesh(0.25)                              # a UV sphere of radius 0.25
    world = transform_matrix([0, 1, 0, 0, 0, 0, 1]) @ np.append(ball.positions[0], 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..kernels.structs import (SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_PLANE,
                               SHAPE_SPHERE)

# An infinite plane shape is drawn (viewer, USD) as a square of this half size about its origin.
INFINITE_PLANE_HALF_SIZE = 10.0
from ..sim.geometry import quat_to_matrix

AXES = {"x": 0, "y": 1, "z": 2}


@dataclass
class TriMesh:
    """A triangle mesh in its own frame: ``positions`` and ``normals`` (N x 3 float32),
    ``triangles`` (K x 3 uint32) and optional per-vertex ``colors`` (N x 3 float32 in [0, 1])."""

    positions: np.ndarray
    normals: np.ndarray
    triangles: np.ndarray
    colors: np.ndarray | None = None


def _mesh(positions: ArrayLike, normals: ArrayLike, triangles: ArrayLike, colors: ArrayLike | None = None) -> TriMesh:
    return TriMesh(np.ascontiguousarray(positions, dtype=np.float32).reshape(-1, 3),
                   np.ascontiguousarray(normals, dtype=np.float32).reshape(-1, 3),
                   np.ascontiguousarray(triangles, dtype=np.uint32).reshape(-1, 3),
                   None if colors is None else np.ascontiguousarray(colors, dtype=np.float32).reshape(-1, 3))


def vertex_normals(positions: ArrayLike, triangles: ArrayLike) -> np.ndarray:
    """Unit per-vertex normals of a triangle mesh: the area-weighted mean of the normals of the
    triangles around each vertex (a vertex in no triangle, or only in degenerate ones, gets
    +z). Returns an N x 3 float32 array.

    Example::

        n = vertex_normals([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])   # every row (0, 0, 1)
    """
    x = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    n = np.zeros_like(x)
    if len(t):
        face = np.cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]])
        for corner in range(3):
            np.add.at(n, t[:, corner], face)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, length, out=np.zeros_like(n), where=length > 1e-30)
    n[length[:, 0] <= 1e-30] = (0.0, 0.0, 1.0)
    return n.astype(np.float32)


def transform_matrix(xform: ArrayLike) -> np.ndarray:
    """The 4 x 4 matrix (column vectors: ``world = M @ [x, 1]``) of a pose ``(p, q)`` stored as
    7 numbers ``(px, py, pz, qx, qy, qz, qw)``, the layout of ``state.body_q`` rows.

    Example::

        transform_matrix([1, 2, 3, 0, 0, 0, 1])[:3, 3]      # array([1., 2., 3.])
    """
    x = np.asarray(xform, dtype=np.float64).reshape(7)
    q = x[3:7]
    norm = float(np.linalg.norm(q))
    m = np.eye(4)
    m[:3, :3] = quat_to_matrix(q / norm if norm > 0.0 else np.array([0.0, 0.0, 0.0, 1.0]))
    m[:3, 3] = x[:3]
    return m


def _lat_long(radius: float, rows: list[tuple[float, float]], segments: int) -> TriMesh:
    """A surface of revolution about local y from latitude ``rows`` of (polar angle from +y,
    offset along y), first and last at the poles: the sphere normal of each row's angle,
    ``segments + 1`` vertices per row (the seam is duplicated)."""
    phi = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    positions, normals = [], []
    for theta, offset in rows:
        n = np.stack([math.sin(theta) * np.cos(phi), np.full_like(phi, math.cos(theta)),
                      math.sin(theta) * np.sin(phi)], axis=1)
        normals.append(n)
        positions.append(radius * n + (0.0, offset, 0.0))
    width = segments + 1
    triangles = []
    for i in range(len(rows) - 1):
        a = i * width + np.arange(segments)
        b, c = a + 1, a + width
        d = c + 1
        # (a, b, c) spans d/dphi x d/dtheta, the outward direction; the pole rows collapse
        # one triangle of each quad, which is left out.
        if i > 0:
            triangles.append(np.stack([a, b, c], axis=1))
        if i < len(rows) - 2:
            triangles.append(np.stack([b, d, c], axis=1))
    return _mesh(np.concatenate(positions), np.concatenate(normals), np.concatenate(triangles))


def sphere_mesh(radius: float, rings: int = 16, segments: int = 32) -> TriMesh:
    """A UV sphere of ``radius`` centered at the origin, ``rings`` bands of latitude and
    ``segments`` of longitude; normals are exact (the unit radial direction).

    Example::

        ball = sphere_mesh(0.5, rings=8, segments=16)
    """
    if rings < 2 or segments < 3:
        raise ValueError(f"sphere_mesh: needs rings >= 2 and segments >= 3, got {rings} and {segments}")
    rows = [(math.pi * i / rings, 0.0) for i in range(rings + 1)]
    return _lat_long(float(radius), rows, segments)


def capsule_mesh(radius: float, half_height: float, rings: int = 16, segments: int = 32) -> TriMesh:
    """A capsule along local y: a cylinder of ``radius`` from ``-half_height`` to
    ``+half_height`` capped by two hemispheres (the simulation's capsule).

    Example::

        rod = capsule_mesh(0.05, 0.2)
    """
    if rings < 2 or segments < 3:
        raise ValueError(f"capsule_mesh: needs rings >= 2 and segments >= 3, got {rings} and {segments}")
    half = max(rings // 2, 1)
    h = float(half_height)
    top = [(0.5 * math.pi * i / half, h) for i in range(half + 1)]
    bottom = [(0.5 * math.pi * (1.0 + i / half), -h) for i in range(half + 1)]
    return _lat_long(float(radius), top + bottom, segments)


def cylinder_mesh(radius: float, half_height: float, segments: int = 32) -> TriMesh:
    """A solid cylinder along local y between ``-half_height`` and ``+half_height``: its side
    (smooth normals) and two flat caps (flat normals), ``segments`` around.

    Example::

        wheel = cylinder_mesh(0.3, 0.05)
    """
    if segments < 3:
        raise ValueError(f"cylinder_mesh: needs segments >= 3, got {segments}")
    r, h = float(radius), float(half_height)
    angle = 2.0 * math.pi * np.arange(segments) / segments
    ring = np.stack([np.cos(angle), np.zeros(segments), -np.sin(angle)], axis=1)   # counter-clockwise about +y
    positions, normals, triangles = [], [], []
    # the side: vertex 2i at the bottom, 2i + 1 at the top of segment i
    for i in range(segments):
        positions.extend([ring[i] * r - (0.0, h, 0.0), ring[i] * r + (0.0, h, 0.0)])
        normals.extend([ring[i], ring[i]])
    for i in range(segments):
        j = (i + 1) % segments
        triangles.extend([(2 * i, 2 * j, 2 * j + 1), (2 * i, 2 * j + 1, 2 * i + 1)])
    for sign in (1.0, -1.0):
        center = len(positions)
        positions.append((0.0, sign * h, 0.0))
        normals.append((0.0, sign, 0.0))
        for i in range(segments):
            positions.append(ring[i] * r + (0.0, sign * h, 0.0))
            normals.append((0.0, sign, 0.0))
        for i in range(segments):
            a, b = center + 1 + i, center + 1 + (i + 1) % segments
            triangles.append((center, a, b) if sign > 0 else (center, b, a))
    return _mesh(positions, normals, triangles)


def cone_mesh(radius: float, half_height: float, segments: int = 32) -> TriMesh:
    """A solid cone along local y: its base of ``radius`` at ``-half_height`` (a flat cap), its
    apex at ``+half_height``; the side has the slant's normals (one apex vertex per segment,
    with the normal of the middle of that segment).

    Example::

        spike = cone_mesh(0.05, 0.2)
    """
    if segments < 3:
        raise ValueError(f"cone_mesh: needs segments >= 3, got {segments}")
    r, h = float(radius), float(half_height)
    slope = np.array([2.0 * h, r]) / math.hypot(2.0 * h, r)        # the outward normal in (radial, y)
    angle = 2.0 * math.pi * np.arange(segments) / segments
    ring = np.stack([np.cos(angle), np.zeros(segments), -np.sin(angle)], axis=1)   # counter-clockwise about +y
    positions, normals, triangles = [], [], []
    for i in range(segments):
        mid = 2.0 * math.pi * (i + 0.5) / segments
        positions.extend([ring[i] * r - (0.0, h, 0.0), (0.0, h, 0.0)])
        normals.extend([ring[i] * slope[0] + (0.0, slope[1], 0.0),
                        (math.cos(mid) * slope[0], slope[1], -math.sin(mid) * slope[0])])
    for i in range(segments):
        j = (i + 1) % segments
        triangles.append((2 * i, 2 * j, 2 * i + 1))
    center = len(positions)
    positions.append((0.0, -h, 0.0))
    normals.append((0.0, -1.0, 0.0))
    for i in range(segments):
        positions.append(ring[i] * r - (0.0, h, 0.0))
        normals.append((0.0, -1.0, 0.0))
    for i in range(segments):
        triangles.append((center, center + 1 + (i + 1) % segments, center + 1 + i))
    return _mesh(positions, normals, triangles)


def ellipsoid_mesh(semi_axes: ArrayLike, rings: int = 16, segments: int = 32) -> TriMesh:
    """An ellipsoid of ``semi_axes`` along local x, y, z: the unit sphere's mesh scaled, its
    normals turned by the inverse scale (the normal of a scaled surface).

    Example::

        egg = ellipsoid_mesh((0.1, 0.15, 0.1))
    """
    e = np.asarray(semi_axes, dtype=np.float64).reshape(3)
    unit = sphere_mesh(1.0, rings, segments)
    normals = unit.normals.astype(np.float64) / e
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return _mesh(unit.positions.astype(np.float64) * e, normals, unit.triangles)


def box_mesh(half_extents: ArrayLike) -> TriMesh:
    """An axis-aligned box centered at the origin: 6 faces of 4 vertices each (flat normals),
    12 triangles.

    Example::

        crate = box_mesh((0.5, 0.25, 0.25))
    """
    h = np.asarray(half_extents, dtype=np.float64).reshape(3)
    positions, normals, triangles = [], [], []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        for sign in (1.0, -1.0):
            n = np.zeros(3)
            n[axis] = sign
            # corners counter-clockwise about n: (u, v) for +n, (v, u) for -n
            a, b = (u, v) if sign > 0 else (v, u)
            corners = []
            for s, t in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                c = np.zeros(3)
                c[axis], c[a], c[b] = sign, s, t
                corners.append(c * h)
            base = len(positions)
            positions.extend(corners)
            normals.extend([n] * 4)
            triangles.extend([(base, base + 1, base + 2), (base, base + 2, base + 3)])
    return _mesh(positions, normals, triangles)


def shape_mesh(kind: int, params: ArrayLike) -> TriMesh | None:
    """The mesh of a simulation shape in its own frame from its ``model.shapes`` kind and
    params (sphere: radius; box: half extents; capsule, cylinder and cone: radius, half
    height along y; ellipsoid: semi-axes; plane: half extents along x and z, a checkerboard
    ``2 * INFINITE_PLANE_HALF_SIZE`` wide when infinite); None for a kind that has no mesh.

    Example::

        shape_mesh(SHAPE_BOX, (0.1, 0.2, 0.3)).triangles.shape      # (12, 3)
    """
    p = np.asarray(params, dtype=np.float64).reshape(3)
    if kind == SHAPE_SPHERE:
        return sphere_mesh(p[0])
    if kind == SHAPE_BOX:
        return box_mesh(p)
    if kind == SHAPE_CAPSULE:
        return capsule_mesh(p[0], p[1])
    if kind == SHAPE_CYLINDER:
        return cylinder_mesh(p[0], p[1])
    if kind == SHAPE_CONE:
        return cone_mesh(p[0], p[1])
    if kind == SHAPE_ELLIPSOID:
        return ellipsoid_mesh(p)
    if kind == SHAPE_PLANE:
        return plane_mesh(p[0], p[1])
    return None


def plane_mesh(half_x: float, half_z: float) -> TriMesh:
    """A plane shape's mesh, facing +y: a rectangle of half extents ``half_x``, ``half_z``, or
    for an infinite plane (``half_x == 0``) a checkerboard ``2 * INFINITE_PLANE_HALF_SIZE`` wide.

    Example::

        plane_mesh(0.5, 0.3).positions.shape      # (4, 3)
    """
    if half_x <= 0.0:
        return ground_mesh("y", INFINITE_PLANE_HALF_SIZE)
    corners = [(-half_x, 0.0, -half_z), (-half_x, 0.0, half_z), (half_x, 0.0, half_z), (half_x, 0.0, -half_z)]
    return _mesh(corners, [(0.0, 1.0, 0.0)] * 4, [(0, 1, 2), (0, 2, 3)])


def ground_mesh(up_axis: str, half_size: float, tile: float | None = None,
                colors: tuple[ArrayLike, ArrayLike] = ((0.42, 0.44, 0.47), (0.52, 0.54, 0.57))) -> TriMesh:
    """A square checkerboard through the origin, normal to ``up_axis`` ("x", "y" or "z"),
    ``2 * half_size`` wide, of square tiles of side ``tile`` (by default a round number giving
    10 to 40 tiles across) alternating between the two ``colors``.

    Example::

        floor = ground_mesh("y", 5.0)          # 10 m x 10 m in the x-z plane
    """
    if up_axis not in AXES:
        raise ValueError(f"ground_mesh: up_axis must be 'x', 'y' or 'z', got {up_axis!r}")
    if not half_size > 0.0 or (tile is not None and not tile > 0.0):
        raise ValueError(f"ground_mesh: half_size and tile must be > 0, got {half_size!r} and {tile!r}")
    if tile is None:
        tile = 10.0 ** math.floor(math.log10(half_size / 5.0))
        tile *= 1.0 if half_size / tile <= 20.0 else (2.0 if half_size / tile <= 40.0 else 5.0)
    count = max(1, int(math.ceil(2.0 * half_size / tile)))
    up = AXES[up_axis]
    u, v = (up + 1) % 3, (up + 2) % 3
    edges = np.linspace(-0.5 * count * tile, 0.5 * count * tile, count + 1)
    i, j = np.meshgrid(np.arange(count), np.arange(count), indexing="ij")
    i, j = i.ravel(), j.ravel()
    corners = np.zeros((len(i), 4, 3))
    for k, (di, dj) in enumerate(((0, 0), (1, 0), (1, 1), (0, 1))):
        corners[:, k, u] = edges[i + di]
        corners[:, k, v] = edges[j + dj]
    normal = np.zeros(3)
    normal[up] = 1.0
    palette = np.asarray(colors, dtype=np.float64)
    color = np.repeat(palette[(i + j) % 2], 4, axis=0)
    base = 4 * np.arange(len(i))[:, None]
    triangles = np.concatenate([base + (0, 1, 2), base + (0, 2, 3)], axis=1).reshape(-1, 3)
    return _mesh(corners.reshape(-1, 3), np.tile(normal, (4 * len(i), 1)), triangles, color)
