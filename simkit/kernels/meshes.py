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
        node_count=ints(joined(t[4] for t in trees)), node_start=ints(nstart))


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
      ``b``, and every contact point of a primitive ``a`` (a sphere's center, a box's 20, a
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

        def points(s):
            return int(vstart[shape_mesh[s] + 1] - vstart[shape_mesh[s]]) if mesh[s] else int(
                {SHAPE_BOX: 20, SHAPE_CAPSULE: 3, SHAPE_CYLINDER: CYLINDER_POINTS,
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
                    n = points(a)
                    found.append(np.stack([np.full(n, a), np.arange(n), np.full(n, b)], axis=1))
        table = np.concatenate(found) if found else np.zeros((0, 3), dtype=np.int64)
        rows = model._mesh_contact_rows = A.array(table.astype(np.int32).reshape(-1, 3), dtype=T.int32,
                                                  device=model.device)
    return rows
