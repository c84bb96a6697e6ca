"""A bounding volume hierarchy of a triangle mesh for the closest-triangle search of
:mod:`simkit.kernels.meshes` and of ``sk.Mesh`` (:mod:`simkit.core.mesh`), in numpy, once per mesh.

The tree is binary, of axis-aligned boxes, split at the median centroid along the longest
axis of the centroids' bounds, with at most ``LEAF_SIZE`` triangles per leaf. Its nodes are
stored in depth-first order (a node, then its first child's subtree, then its second's) with
each node's ``skip``, the index just past its subtree: a search walks the array, going to
``i + 1`` into a node it must open and to ``skip[i]`` past one it may prune, with no stack.
The triangles are reordered so that each leaf's are contiguous.

Example::

    order, lo, hi, skip, first, count = build_bvh(vertices, triangles)
    triangles = triangles[order]          # leaf i holds triangles first[i] .. first[i] + count[i] - 1
"""

from __future__ import annotations

import numpy as np

LEAF_SIZE = 4
# boxes grow by this fraction of the mesh's extent, so that rounding (in float32) never
# prunes a box that holds the closest point
PAD = 1.0e-5


def build_bvh(vertices: np.ndarray, triangles: np.ndarray) -> tuple:
    """``(order, lo, hi, skip, first, count)``: the triangle order of the leaves, and per node
    (depth-first) its box corners, the index past its subtree, and for leaves the first
    triangle (in the new order) and how many (0 for inner nodes).

    Example::

        order, lo, hi, skip, first, count = build_bvh(v, f)
        len(lo) == 2 * -(-len(f) // LEAF_SIZE) - 1     # at most that many nodes
    """
    corners = vertices[triangles]                         # (T, 3, 3)
    tri_lo, tri_hi = corners.min(axis=1), corners.max(axis=1)
    centroid = corners.mean(axis=1)
    pad = PAD * max(float(np.ptp(vertices, axis=0).max()), 1e-12)
    lo, hi, skip, first, count, order = [], [], [], [], [], []

    def build(ids: np.ndarray) -> None:
        node = len(lo)
        lo.append(tri_lo[ids].min(axis=0) - pad)
        hi.append(tri_hi[ids].max(axis=0) + pad)
        skip.append(0)
        if len(ids) <= LEAF_SIZE:
            first.append(len(order))
            count.append(len(ids))
            order.extend(ids.tolist())
        else:
            first.append(0)
            count.append(0)
            c = centroid[ids]
            axis = int(np.argmax(np.ptp(c, axis=0)))
            sorted_ids = ids[np.argsort(c[:, axis], kind="stable")]
            half = len(ids) // 2
            build(sorted_ids[:half])
            build(sorted_ids[half:])
        skip[node] = len(lo)

    build(np.arange(len(triangles)))
    return (np.asarray(order, dtype=np.int64), np.asarray(lo).reshape(-1, 3), np.asarray(hi).reshape(-1, 3),
            np.asarray(skip, dtype=np.int64), np.asarray(first, dtype=np.int64), np.asarray(count, dtype=np.int64))


def refit_bvh(vertices: np.ndarray, leaf_triangles: np.ndarray, skip: np.ndarray, first: np.ndarray,
              count: np.ndarray) -> tuple:
    """``(lo, hi)``: the boxes of a tree from :func:`build_bvh` around moved ``vertices``, its
    topology kept (``leaf_triangles`` are the triangles in leaf order, ``triangles[order]``).

    Example::

        lo, hi = refit_bvh(moved, triangles[order], skip, first, count)
    """
    corners = vertices[leaf_triangles]                    # (T, 3, 3)
    tri_lo, tri_hi = corners.min(axis=1), corners.max(axis=1)
    pad = PAD * max(float(np.ptp(vertices, axis=0).max()), 1e-12)
    n = len(skip)
    lo, hi = np.empty((n, 3)), np.empty((n, 3))
    for i in range(n - 1, -1, -1):  # children before parents: a node's children follow it
        if count[i]:
            lo[i] = tri_lo[first[i]:first[i] + count[i]].min(axis=0) - pad
            hi[i] = tri_hi[first[i]:first[i] + count[i]].max(axis=0) + pad
        else:
            right = skip[i + 1]
            lo[i] = np.minimum(lo[i + 1], lo[right])
            hi[i] = np.maximum(hi[i + 1], hi[right])
    return lo, hi
