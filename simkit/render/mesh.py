"""Mesh helpers for rendering (numpy): the boundary of a tetrahedral mesh, and the triangles
of a model's mesh shape.

Example::

    tris = tet_surface_triangles([[0, 1, 2, 3]])    # the 4 outward faces of one tetrahedron
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..kernels.structs import SHAPE_CONVEX, SHAPE_HFIELD, SHAPE_MESH
from ..sim.builder_heightfield import heightfield_triangles, heightfield_vertices

# the shapes drawn from triangles the model holds (meshes, hulls, heightfields)
TRIANGLE_SHAPES = (SHAPE_MESH, SHAPE_CONVEX, SHAPE_HFIELD)

# The four faces of a positively oriented tetrahedron (i, j, k, l), each wound
# counter-clockwise seen from outside, so that its right-handed normal points outward.
_TET_FACES = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])


def tet_surface_triangles(tets: ArrayLike, points: ArrayLike | None = None) -> np.ndarray:
    """The boundary triangles of a tetrahedral mesh: the faces that belong to exactly one
    tetrahedron, wound so that their right-handed normals point out of the mesh.

    ``tets`` is an M x 4 integer array of vertex indices. Tetrahedra are taken to be
    positively oriented (``det[p1 - p0, p2 - p0, p3 - p0] > 0``, what ``ModelBuilder``
    stores); pass the vertex ``points`` (N x 3) to orient each one by its signed volume
    instead. Returns a K x 3 int64 array, the faces of the first tetrahedron first.

    Example::

        tet_surface_triangles([[0, 1, 2, 3]])
        # array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    """
    t = np.asarray(tets)
    if t.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if t.ndim != 2 or t.shape[1] != 4 or t.dtype.kind not in "iu":
        raise ValueError(f"tet_surface_triangles: tets must be an M x 4 integer array, got shape {t.shape} "
                         f"of {t.dtype}")
    t = t.astype(np.int64)
    if t.min() < 0:
        raise ValueError(f"tet_surface_triangles: tets reference the negative vertex index {int(t.min())}")
    if points is not None:
        p = np.asarray(points, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != 3 or len(p) <= t.max():
            raise ValueError(f"tet_surface_triangles: points must be an N x 3 array covering vertex {int(t.max())}, "
                             f"got shape {p.shape}")
        x = p[t]
        volume = np.einsum("ij,ij->i", np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]), x[:, 3] - x[:, 0])
        t = np.where((volume < 0.0)[:, None], t[:, [0, 1, 3, 2]], t)
    faces = t[:, _TET_FACES].reshape(-1, 3)
    _, inverse, counts = np.unique(np.sort(faces, axis=1), axis=0, return_inverse=True, return_counts=True)
    return faces[counts[inverse.reshape(-1)] == 1]


def compact_vertices(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted vertex ids that ``triangles`` (K x 3) use, and the triangles re-indexed
    into that list, so a mesh stores only its own vertices.

    Example::

        ids, local = compact_vertices(np.array([[4, 9, 7]]))   # ids = [4, 7, 9], local = [[0, 2, 1]]
    """
    ids, inverse = np.unique(triangles, return_inverse=True)
    return ids, inverse.reshape(triangles.shape)


def mesh_shape_arrays(model, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The vertices (float64 ``(N, 3)``, scaled, in the shape's frame) and triangles (int64
    ``(T, 3)``, indexing those vertices, outward) of mesh, convex hull or heightfield shape
    ``s`` of ``model`` (a heightfield: its surface, facing up).

    Example::

        vertices, triangles = mesh_shape_arrays(model, 0)
    """
    kind = int(model.shapes.kind.numpy()[s])
    if kind == SHAPE_HFIELD:
        first, nx, nz = (int(x) for x in model.shapes.hfield.numpy()[s])
        heights = np.asarray(model.shapes.hfield_heights.numpy(), dtype=np.float64)[first:first + nx * nz]
        half = np.asarray(model.shapes.params.numpy(), dtype=np.float64)[s, :2]
        return heightfield_vertices(heights.reshape(nx, nz), half), heightfield_triangles(nx, nz).astype(np.int64)
    if kind == SHAPE_CONVEX:
        v0, nv, t0, nt = (int(x) for x in model.shapes.hull.numpy()[s])
        vertices = np.asarray(model.shapes.hull_vertices.numpy(), dtype=np.float64).reshape(-1, 3)[v0:v0 + nv]
        triangles = np.asarray(model.shapes.hull_triangles.numpy(), dtype=np.int64).reshape(-1, 3)[t0:t0 + nt] - v0
        return vertices, triangles
    m = model.meshes
    k = int(m.shape_mesh.numpy()[s])
    v0, v1 = (int(x) for x in m.vertex_start.numpy()[k:k + 2])
    t0, t1 = (int(x) for x in m.tri_start.numpy()[k:k + 2])
    vertices = np.asarray(m.vertices.numpy(), dtype=np.float64).reshape(-1, 3)[v0:v1]
    triangles = np.asarray(m.triangles.numpy(), dtype=np.int64).reshape(-1, 3)[t0:t1] - v0
    return vertices, triangles
