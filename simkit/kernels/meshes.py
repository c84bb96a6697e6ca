"""Triangle-mesh collision shapes (``SHAPE_MESH``): their storage in a model, the signed
distance of a point to a mesh, and the contact rows (which point meets which surface) that
:mod:`simkit.kernels.mesh_contact` and :mod:`simkit.kernels.xpbd_mesh_contact` launch over.

Storage (``Model.meshes``, a ``Meshes`` struct): the vertices of every distinct mesh, already
scaled, in the mesh shape's frame, one array for all; triangles as rows of three indices into
it; mesh ``m`` owns vertices ``vertex_start[m]`` to ``vertex_start[m + 1] - 1``, triangles
``tri_start[m]`` to ``tri_start[m + 1] - 1`` and the tree nodes ``node_start[m]`` to
``node_start[m + 1] - 1`` of its bounding volume hierarchy (:mod:`simkit.core.bvh`:
boxes ``node_lo``/``node_hi``, ``node_skip`` past a subtree, leaves' triangles
``node_first``, ``node_count``); ``radius[m]`` bounds its vertices' distance from the shape's
origin; ``shape_mesh[s]`` is the mesh of shape ``s`` (-1 for primitives). Copies of a builder
(``add_builder``) share their meshes.

Signed distance: the closest triangle is found by walking the tree, skipping the boxes
farther than the closest triangle found so far (about logarithmic in the triangle count for
a point near the surface; a point far from a mesh, inside its bounding sphere, opens more
boxes); the distance is to the closest point of that triangle, negative where the point
lies behind the triangle's face (triangles wind counterclockwise seen from outside). Where
several triangles are equally close (an edge or a vertex), the one whose plane is most
nearly perpendicular to the offset decides the sign, which is right at convex and concave
edges alike. The search carries no gradient (an index); the distance to the chosen triangle
does. An open mesh is a one-sided surface: points behind it (within its bounding sphere)
count as inside.

Example::

    G = mesh_geometry(sk.float64)
    dist, n = G.mesh_distance(meshes, m, p)       # p in the mesh shape's frame
"""

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import simkit as sk
from ..core import array as A
from ..core import types as T
from ..core.array import ArrayType
from ..core.struct import struct
from .contact_params import shapes_touching_ground
from ..core.bvh import build_bvh
from .closest_point import closest_point_on_triangle
from .revolved_shapes import CONE_POINTS, CYLINDER_POINTS
from .shapes import _pair_list, shape_bounding_radius, shape_surface_distance, shape_surface_point
from .convex import HULL_POINTS
from .structs import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CONVEX, SHAPE_CYLINDER, SHAPE_MESH, model_structs

# Two triangles whose squared distances to a point differ by less than this fraction are
# equally close (the same edge or vertex reached through either, up to rounding), by float type.
TIE_TOLERANCE = {"float32": 1.0e-5, "float64": 1.0e-10}

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints = sk.array(dtype=sk.int32)
ints2d = sk.array(dtype=sk.int32, ndim=2)


@functools.cache
def mesh_struct(real):
    """The ``Meshes`` struct type for float type ``real`` (see the module documentation)."""
    vec3 = T.vector(3, real)

    @struct
    class Meshes:
        """Triangle meshes of a model's mesh shapes, all in flat arrays."""
        shape_mesh: ArrayType(T.int32, 1)
        vertices: ArrayType(vec3, 1)
        triangles: ArrayType(T.int32, 2)
        vertex_start: ArrayType(T.int32, 1)
        tri_start: ArrayType(T.int32, 1)
        radius: ArrayType(real, 1)
        node_lo: ArrayType(vec3, 1)
        node_hi: ArrayType(vec3, 1)
        node_skip: ArrayType(T.int32, 1)
        node_first: ArrayType(T.int32, 1)
        node_count: ArrayType(T.int32, 1)
        node_start: ArrayType(T.int32, 1)
        edges: ArrayType(T.int32, 2)
        edge_start: ArrayType(T.int32, 1)

    # not a field: the generic distance functions read it from the struct's type at compile time
    Meshes.tie_tolerance = real.np_dtype.type(TIE_TOLERANCE[real.__name__])
    return Meshes


def build_meshes(real, device, shape_mesh, meshes) -> object:
    """A ``Meshes`` struct on ``device`` from ``shape_mesh`` (per shape: an index into
    ``meshes`` or -1) and ``meshes``, a list of ``(vertices (N, 3), triangles (T, 3))``.

    Example::

        m = build_meshes(sk.float32, "cpu", [-1, 0], [(v, f)])
    """
    np_real = real.np_dtype
    verts = [np.asarray(v, dtype=np.float64).reshape(-1, 3) for v, _ in meshes]
    tris, trees = [], []
    for v, (_, f) in zip(verts, meshes):
        f = np.asarray(f, dtype=np.int64).reshape(-1, 3)
        order, lo, hi, skip, first, count = build_bvh(v, f)
        tris.append(f[order])
        trees.append((lo, hi, skip, first, count))
    vstart, tstart, nstart = (np.zeros(len(meshes) + 1, dtype=np.int64) for _ in range(3))
    np.cumsum([len(v) for v in verts], out=vstart[1:])
    np.cumsum([len(f) for f in tris], out=tstart[1:])
    np.cumsum([len(t[0]) for t in trees], out=nstart[1:])

    def joined(parts, width=None):
        parts = list(parts)
        if parts:
            return np.concatenate(parts)
        return np.zeros((0, width) if width else 0)

    all_v = joined(verts, 3)
    all_f = joined((f + s for f, s in zip(tris, vstart)), 3)
    edges = [mesh_edges(v, f) for v, f in zip(verts, tris)]
    estart = np.zeros(len(meshes) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in edges], out=estart[1:])
    all_e = joined((e + s for e, s in zip(edges, vstart)), 2)
    radius = np.array([np.linalg.norm(v, axis=1).max() for v in verts], dtype=np.float64)
    vec3 = T.vector(3, real)

    def ints(x):
        return A.array(np.ascontiguousarray(x, dtype=np.int32), dtype=T.int32, device=device)

    def vectors(x):
        return A.array(np.asarray(x, dtype=np_real).reshape(-1, 3), dtype=vec3, device=device)

    return mesh_struct(real)(
        shape_mesh=ints(np.asarray(shape_mesh, dtype=np.int32).reshape(-1)),
        vertices=vectors(all_v), triangles=ints(all_f.reshape(-1, 3)), vertex_start=ints(vstart),
        tri_start=ints(tstart), radius=A.array(radius.astype(np_real), dtype=real, device=device),
        node_lo=vectors(joined((t[0] for t in trees), 3)), node_hi=vectors(joined((t[1] for t in trees), 3)),
        node_skip=ints(joined(t[2] + s for t, s in zip(trees, nstart))),
        node_first=ints(joined(t[3] + s for t, s in zip(trees, tstart))),
        node_count=ints(joined(t[4] for t in trees)), node_start=ints(nstart), edges=ints(all_e.reshape(-1, 2)),
        edge_start=ints(estart))


# Two faces meeting at a smaller angle than this (radians) are one flat face: the edge between
# them (a quad's diagonal, a subdivided face's inner edges) is no feature of the surface.
FLAT_EDGE_ANGLE = 1.0e-3


def mesh_edges(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """The edges (``E x 2`` vertex indices, lower first, ascending) a mesh touches other shapes
    with: the distinct triangle sides that are convex creases (the faces on either side turn
    away from each other by more than ``FLAT_EDGE_ANGLE``), open borders (one face) and edges of
    more than two faces. An edge inside a flat face would touch where the face already does, and
    a concave one lies inside the solid's hull, where the faces around it do the touching.

    Example::

        square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
        mesh_edges(square, np.array([[0, 1, 2], [0, 2, 3]]))      # [[0, 1], [0, 3], [1, 2], [2, 3]]: no diagonal
    """
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    sides = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    opposite = np.concatenate([t[:, 2], t[:, 0], t[:, 1]])
    face = np.tile(np.arange(len(t)), 3)
    n = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    edges, which, count = np.unique(np.sort(sides, axis=1), axis=0, return_inverse=True, return_counts=True)
    which = which.reshape(-1)
    keep = count != 2
    pair = np.flatnonzero(count == 2)
    if len(pair):
        order = np.argsort(which, kind="stable")
        first = np.searchsorted(which[order], pair)
        i, j = order[first], order[first + 1]          # the two sides of each shared edge
        turned = np.einsum("ij,ij->i", n[face[i]], n[face[j]]) < np.cos(FLAT_EDGE_ANGLE)
        # convex: the second face's far corner is behind the first face's plane
        behind = np.einsum("ij,ij->i", n[face[i]], v[opposite[j]] - v[sides[i, 0]]) < 0.0
        keep[pair] = turned & behind
    return edges[keep].reshape(-1, 2)


@sk.func
def box_distance2(node_lo: AnyArray, node_hi: AnyArray, i: int, p: Any):
    """Squared distance from ``p`` to the box of tree node ``i`` (0 inside)."""
    outside = sk.max(sk.max(node_lo[i] - p, p - node_hi[i]), p * 0.0)
    return sk.dot(outside, outside)


@sk.func
def scan_leaf(vertices: AnyArray, triangles: ints2d, first: int, count: int, p: Any, best: int, best_d2: Any,
              best_align: Any, tie: Any):
    """The best of ``best`` (squared distance ``best_d2``, -1: none yet) and the ``count``
    triangles from ``first``: the closest, and among equally close ones (squared distances within
    the fraction ``tie``) the one whose plane is most nearly perpendicular to the offset."""
    for t in range(first, first + count):
        a = vertices[triangles[t, 0]]
        b = vertices[triangles[t, 1]]
        c = vertices[triangles[t, 2]]
        d = p - closest_point_on_triangle(p, a, b, c)
        d2 = sk.dot(d, d)
        n = sk.cross(b - a, c - a)
        align = type(best_d2)(1.0)
        if d2 > 0.0:
            align = sk.abs(sk.dot(d, n)) / sk.sqrt(d2 * sk.dot(n, n))
        tol = tie * best_d2
        if best_d2 < 0.0 or d2 < best_d2 - tol or (d2 <= best_d2 + tol and align > best_align):
            best = t
            best_d2 = d2
            best_align = align
    return best, best_d2, best_align


@sk.func
def closest_triangle(vertices: AnyArray, triangles: ints2d, node_lo: AnyArray, node_hi: AnyArray, node_skip: ints,
                     node_first: ints, node_count: ints, start: int, end: int, p: Any, tie: Any) -> int:
    """The triangle closest to ``p`` among the leaves of the tree nodes ``start`` to ``end - 1``.
    A first descent into the nearer child down to a leaf gives a close candidate; the walk
    over the tree then skips every box farther than the best so far, with its subtree."""
    j = start
    while node_count[j] == 0:
        left = j + 1
        right = node_skip[left]
        j = left
        if box_distance2(node_lo, node_hi, right, p) < box_distance2(node_lo, node_hi, left, p):
            j = right
    best, best_d2, best_align = scan_leaf(vertices, triangles, node_first[j], node_count[j], p, node_first[j],
                                          type(tie)(-1.0), type(tie)(-1.0), tie)
    i = start
    while i < end:
        if i != j and box_distance2(node_lo, node_hi, i, p) > best_d2 * (1.0 + tie):
            i = node_skip[i]
            continue
        if i != j:
            best, best_d2, best_align = scan_leaf(vertices, triangles, node_first[i], node_count[i], p, best,
                                                  best_d2, best_align, tie)
        i = i + 1
    return best


@sk.func_grad(closest_triangle)
def closest_triangle_grad(vertices: AnyArray, triangles: ints2d, node_lo: AnyArray, node_hi: AnyArray,
                          node_skip: ints, node_first: ints, node_count: ints, start: int, end: int, p: Any, tie: Any,
                          adj_ret: int):
    # an index has no derivative; the distance to the chosen triangle carries the gradient
    return 0, 0, p * 0.0, tie * 0.0


@sk.func
def triangle_distance(vertices: AnyArray, triangles: ints2d, t: int, p: Any):
    """Signed distance of ``p`` to triangle ``t`` (negative behind its face) and the outward
    normal there."""
    a = vertices[triangles[t, 0]]
    b = vertices[triangles[t, 1]]
    c = vertices[triangles[t, 2]]
    d = p - closest_point_on_triangle(p, a, b, c)
    face = sk.normalize(sk.cross(b - a, c - a))
    side = sk.dot(d, face)
    dist = side
    n = face
    d2 = sk.dot(d, d)
    if d2 > 1.0e-24:
        length = sk.sqrt(d2)
        n = d / length
        dist = length
        if side < 0.0:
            n = -n
            dist = -length
    return dist, n


@sk.func
def mesh_distance(meshes: Any, m: int, p: Any):
    """Signed distance of ``p`` (in the mesh shape's frame) to mesh ``m`` and the outward normal."""
    t = closest_triangle(meshes.vertices, meshes.triangles, meshes.node_lo, meshes.node_hi, meshes.node_skip,
                         meshes.node_first, meshes.node_count, meshes.node_start[m], meshes.node_start[m + 1], p,
                         type(meshes).tie_tolerance)
    dist, n = triangle_distance(meshes.vertices, meshes.triangles, t, p)
    return dist, n


@sk.func
def surface_distance(shapes: Any, meshes: Any, s: int, p: Any):
    """Signed distance of ``p`` (in shape ``s``'s frame) to shape ``s`` of any kind, and the
    outward normal (shape frame)."""
    kind = shapes.kind[s]
    dist = type(p[0])(0.0)
    n = p * 0.0
    if kind == SHAPE_MESH:
        dist, n = mesh_distance(meshes, meshes.shape_mesh[s], p)
    else:
        dist, n = shape_surface_distance(shapes, s, p)
    return dist, n


@sk.func
def reach(shapes: Any, meshes: Any, s: int):
    """Radius of a sphere about shape ``s``'s origin containing it."""
    kind = shapes.kind[s]
    r = shapes.params[s][0]
    if kind == SHAPE_MESH:
        r = meshes.radius[meshes.shape_mesh[s]]
    else:
        r = shape_bounding_radius(kind, shapes.params[s])
    return r


@sk.func
def source_point(shapes: Any, meshes: Any, s: int, k: int, toward: Any):
    """Contact point ``k`` of shape ``s`` in its frame and its radius: a mesh's vertex ``k``
    (radius 0), or the primitive's or the hull's ``shape_surface_point``."""
    p = toward * 0.0
    radius = type(toward[0])(0.0)
    if shapes.kind[s] == SHAPE_MESH:
        p = meshes.vertices[meshes.vertex_start[meshes.shape_mesh[s]] + k]
    else:
        p, radius = shape_surface_point(shapes, s, k, toward)
    return p, radius


# Rounds of each search along an edge (a ternary search keeps two thirds of its interval a
# round, a bisection half: 0.67^24 and 0.5^24 are within 1e-4 and 1e-7 of the edge's length).
EDGE_ROUNDS = 24


@sk.func
def edge_deepest(shapes: Any, meshes: Any, b: int, q0: Any, q1: Any):
    """The parameter ``t`` of the point of segment ``q0``-``q1`` (in shape ``b``'s frame) deepest
    in shape ``b`` and its signed distance there: a ternary search on the distance along the
    segment, unimodal where the segment crosses one convex piece of the surface (an edge
    across a bar or a tube)."""
    lo = q0[0] * 0.0
    hi = lo + 1.0
    for _round in range(EDGE_ROUNDS):
        m1 = lo + (hi - lo) / 3.0
        m2 = hi - (hi - lo) / 3.0
        d1, n1 = surface_distance(shapes, meshes, b, q0 + (q1 - q0) * m1)
        d2, n2 = surface_distance(shapes, meshes, b, q0 + (q1 - q0) * m2)
        if d1 < d2:
            hi = m2
        else:
            lo = m1
    t = 0.5 * (lo + hi)
    d, n = surface_distance(shapes, meshes, b, q0 + (q1 - q0) * t)
    return t, d


@sk.func
def edge_crossing(shapes: Any, meshes: Any, b: int, q0: Any, q1: Any, outside: Any, inside: Any):
    """The parameter between ``outside`` and ``inside`` (parameters of segment ``q0``-``q1``, the
    first outside shape ``b``, the second inside) where the segment crosses ``b``'s surface: a
    bisection, then one Newton step on the distance. The bisection's result is a constant to
    the adjoint; the Newton step is what carries the crossing's derivative, the implicit one
    (``dt = -dd / (n . (q1 - q0))``, at the root of ``d``)."""
    out = outside
    into = inside
    for _round in range(EDGE_ROUNDS):
        m = 0.5 * (out + into)
        d, n = surface_distance(shapes, meshes, b, q0 + (q1 - q0) * m)
        if d < 0.0:
            into = m
        else:
            out = m
    t = 0.5 * (out + into)
    d, n = surface_distance(shapes, meshes, b, q0 + (q1 - q0) * t)
    slope = sk.dot(n, q1 - q0)
    if sk.abs(slope) > 1.0e-3 * sk.length(q1 - q0):      # not grazing the surface
        t = t - d / slope
    return t


@sk.func
def edge_point(shapes: Any, meshes: Any, a: int, e: int, b: int, Xa: Any, Xb: Any):
    """Contact point ``e`` of mesh ``a``'s edges against shape ``b``, in ``a``'s frame, and
    whether it is one. An edge with both ends outside ``b`` that passes through it (an edge
    across a bar, a tube, an edge of ``b``) touches at the middle of the chord it cuts through
    ``b``: between where it enters and where it leaves, about its point deepest in ``b``. The
    middle, not the deepest point, which along a flat face is any point of the chord, so the
    contact does not wander along it. An edge with an end inside ``b`` is left to that
    vertex's row; one whose middle is farther from ``b``'s surface than half its length is
    outside ``b`` whole (the distance changes no faster than the position) and costs one
    query. The chord's ends move with both poses, and so the contact point does: its gradient
    is that of the crossings (:func:`edge_crossing`)."""
    edge = meshes.edge_start[meshes.shape_mesh[a]] + e
    v0 = meshes.vertices[meshes.edges[edge, 0]]
    v1 = meshes.vertices[meshes.edges[edge, 1]]
    to_b = sk.transform_multiply(sk.transform_inverse(Xb), Xa)
    q0 = sk.transform_point(to_b, v0)
    q1 = sk.transform_point(to_b, v1)
    found = 0
    p = v0
    dm, nm = surface_distance(shapes, meshes, b, 0.5 * (q0 + q1))
    if dm < 0.5 * sk.length(q1 - q0):
        d0, n0 = surface_distance(shapes, meshes, b, q0)
        d1, n1 = surface_distance(shapes, meshes, b, q1)
        if d0 > 0.0 and d1 > 0.0:
            t, d = edge_deepest(shapes, meshes, b, q0, q1)
            if d < 0.0:
                enter = edge_crossing(shapes, meshes, b, q0, q1, t * 0.0, t)
                leave = edge_crossing(shapes, meshes, b, q0, q1, t * 0.0 + 1.0, t)
                found = 1
                p = v0 + (v1 - v0) * (0.5 * (enter + leave))
    return p, found


@functools.cache
def mesh_geometry(real) -> SimpleNamespace:
    """The mesh distance functions (generic: they take the caller's types) and the ``Meshes``
    struct of float type ``real``.

    Example::

        G = mesh_geometry(sk.float32)
        dist, n = G.surface_distance(shapes, meshes, s, p_local)
    """
    return SimpleNamespace(closest_triangle=closest_triangle, triangle_distance=triangle_distance,
                           mesh_distance=mesh_distance, surface_distance=surface_distance, reach=reach,
                           source_point=source_point, Meshes=mesh_struct(real))


def mesh_contact_rows(model) -> A.Array:
    """The body contacts that involve a mesh shape, as an int32 array ``(R, 3)`` of rows
    ``(a, k, b)``: point ``k`` of shape ``a`` against the surface of shape ``b`` (-1: the
    ground). Cached on the model.

    - each vertex of a mesh on a body against the ground (when the model has one);
    - for each candidate pair of shapes (the rules of
      :func:`~simkit.kernels.shapes.collision_pairs`: worlds, joints, collision masks, at
      least one on a body) of which one is a mesh: every vertex of a mesh ``a`` against
      ``b``, then every edge of it (point ``k = V + e`` for edge ``e`` of a mesh of ``V``
      vertices: its point deepest in ``b``, :func:`edge_point`), and every contact point of a primitive ``a`` (a sphere's center, a box's 20, a
      capsule's 3) against the mesh ``b``. A mesh and a non-sphere are tested both ways, a
      sphere only against the mesh (its center is exact), two meshes both ways.

    Example::

        rows = mesh_contact_rows(model)       # sk int32 array (R, 3)
    """
    rows = model.__dict__.get("_mesh_contact_rows")
    if rows is None:
        kind = model.shapes.kind.numpy()
        body = model.shapes.body.numpy()
        shape_mesh = model.meshes.shape_mesh.numpy()
        vstart = model.meshes.vertex_start.numpy()
        mesh = kind == SHAPE_MESH

        estart = model.meshes.edge_start.numpy()

        def points(s, edges=False):
            if mesh[s]:
                m = shape_mesh[s]
                return int(vstart[m + 1] - vstart[m]) + (int(estart[m + 1] - estart[m]) if edges else 0)
            return int({SHAPE_BOX: 20, SHAPE_CAPSULE: 3, SHAPE_CYLINDER: CYLINDER_POINTS,
                        SHAPE_CONE: CONE_POINTS, SHAPE_CONVEX: HULL_POINTS}.get(int(kind[s]), 1))

        found = []
        if model.ground:
            for s in np.flatnonzero(mesh & (body >= 0) & shapes_touching_ground(model)):
                n = points(s)
                found.append(np.stack([np.full(n, s), np.arange(n), np.full(n, -1)], axis=1))
        if mesh.any():
            joined = set()
            if model.joint_count:
                for p, c in zip(model.joints.parent.numpy(), model.joints.child.numpy()):
                    if p >= 0:
                        joined.add((int(p), int(c)))
            pairs = _pair_list(kind, body, joined, model.shape_world.numpy(), model.world_count,
                               model.shape_collision_group, model.shape_collision_mask)
            for a, b in pairs:
                if mesh[a] or mesh[b]:
                    n = points(a, edges=True)
                    found.append(np.stack([np.full(n, a), np.arange(n), np.full(n, b)], axis=1))
        table = np.concatenate(found) if found else np.zeros((0, 3), dtype=np.int64)
        rows = model._mesh_contact_rows = A.array(table.astype(np.int32).reshape(-1, 3), dtype=T.int32,
                                                  device=model.device)
    return rows
