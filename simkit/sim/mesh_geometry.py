"""Triangle meshes at build time (numpy): checking the arrays a user passes, whether a mesh is
closed, and the volume, center and inertia of the solid a closed mesh bounds (divergence
theorem: a sum over the tetrahedra each triangle makes with the origin).

Example::

    v, f = check_mesh(vertices, indices, "add_shape_mesh")
    volume, center, inertia = solid_properties(v, f)     # inertia per unit density, about center
"""

from __future__ import annotations

from typing import Any

import numpy as np


def check_mesh(vertices: Any, indices: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``vertices`` as a float64 ``(N, 3)`` array and ``indices`` as an int32 ``(T, 3)`` array,
    or a ValueError naming what is wrong: shapes, non-finite vertices, indices out of range,
    degenerate (zero-area) triangles.

    Example::

        v, f = check_mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]], "add_shape_mesh")
    """
    try:
        v = np.asarray(vertices, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: vertices must be an N x 3 array of numbers, got {type(vertices).__name__}") \
            from None
    if v.ndim != 2 or v.shape[1] != 3 or len(v) < 3:
        raise ValueError(f"{where}: vertices must be an N x 3 array with N >= 3, got shape {v.shape}")
    bad = np.flatnonzero(~np.isfinite(v).all(axis=1))
    if len(bad):
        raise ValueError(f"{where}: vertices must be finite; vertex {int(bad[0])} is {v[bad[0]].tolist()}")
    f = np.asarray(indices)
    if f.ndim == 1 and f.size % 3 == 0 and f.dtype.kind in "iu":
        f = f.reshape(-1, 3)     # a flat list of triangle corners, as many loaders give
    if f.ndim != 2 or f.shape[1] != 3 or len(f) < 1 or f.dtype.kind not in "iu":
        raise ValueError(f"{where}: indices must be a T x 3 integer array (or a flat one of 3 T) with T >= 1, got "
                         f"shape {f.shape} of dtype {f.dtype}")
    out = np.flatnonzero(((f < 0) | (f >= len(v))).any(axis=1))
    if len(out):
        raise ValueError(f"{where}: indices must be in [0, {len(v)}) (the vertex count); triangle {int(out[0])} "
                         f"is {f[out[0]].tolist()}")
    f = f.astype(np.int32)
    area = np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
    scale = max(float(np.ptp(v, axis=0).max()), 1e-300)
    flat = np.flatnonzero(area <= 1e-12 * scale * scale)
    if len(flat):
        raise ValueError(f"{where}: triangle {int(flat[0])} ({f[flat[0]].tolist()}) has no area (repeated or "
                         "collinear corners); remove degenerate triangles")
    return v, f


def is_closed(indices: np.ndarray) -> bool:
    """Whether the triangles close a surface consistently: every directed edge ``(i, j)`` of
    a triangle appears exactly once, and its reverse ``(j, i)`` exactly once.

    Example::

        is_closed(np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]]))    # a tetrahedron: True
    """
    f = np.asarray(indices, dtype=np.int64)
    edges = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    n = int(f.max()) + 1
    key = edges[:, 0] * n + edges[:, 1]
    reverse = edges[:, 1] * n + edges[:, 0]
    return len(np.unique(key)) == len(key) and bool(np.isin(reverse, key).all())


def solid_properties(vertices: np.ndarray, indices: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Volume, centroid and inertia tensor per unit density (about the centroid, in the mesh's
    axes) of the solid bounded by a closed mesh whose triangles wind counterclockwise seen
    from outside (a negative volume means they wind the other way).

    Each triangle ``(a, b, c)`` and the origin make a tetrahedron of signed volume
    ``a . (b x c) / 6``; its second moment ``sum x x^T dV`` is ``vol / 20 (a a^T + b b^T +
    c c^T + s s^T)`` with ``s = a + b + c``; the sums over the triangles are the solid's.

    Example::

        volume, center, inertia = solid_properties(v, f)
        mass, inertia = density * volume, density * inertia
    """
    a, b, c = (vertices[indices[:, k]] for k in range(3))
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    volume = float(vol.sum())
    if volume == 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    s = a + b + c
    center = (vol[:, None] * s).sum(axis=0) / (4.0 * volume)
    second = np.einsum("i,ij,ik->jk", vol / 20.0, a, a) + np.einsum("i,ij,ik->jk", vol / 20.0, b, b) \
        + np.einsum("i,ij,ik->jk", vol / 20.0, c, c) + np.einsum("i,ij,ik->jk", vol / 20.0, s, s)
    # about the centroid, then I = tr(C) E - C
    second -= volume * np.outer(center, center)
    inertia = np.trace(second) * np.eye(3) - second
    return volume, center, inertia
