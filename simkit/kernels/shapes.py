"""Geometry of collision shapes shared by the contact kernels: signed distances, the world
pose of a (possibly body-attached) shape, the contact points sampled on a shape, and the
candidate shape pairs of a model (:func:`collision_pairs`).

Shape conventions (``Shapes``): a sphere of radius ``params[0]``; a box of half extents
``params``; a capsule of radius ``params[0]`` around the segment from ``-params[1]`` to
``params[1]`` on its local y axis; a cylinder of radius ``params[0]`` whose flat faces are at
``y = -params[1]`` and ``y = params[1]``; a cone of base radius ``params[0]`` at ``y =
-params[1]`` and apex at ``y = params[1]``; an ellipsoid of semi-axes ``params``; a convex
hull of bounding radius ``params[0]`` whose vertices and triangles are the ``hull*`` fields
(:mod:`simkit.kernels.convex`; docs/geometry.md); a static plane facing its local +y, infinite
or, with half extents ``params[0]``, ``params[1]`` along its local x and z, a rectangle with
the half-space below it (:func:`plane_distance`); a static heightfield facing its local +y
over ``[-params[0], params[0]] x [-params[1], params[1]]`` whose heights are the ``hfield*``
fields (:mod:`simkit.kernels.heightfield`). :func:`shape_surface_distance`,
:func:`shape_surface_point` and :func:`shape_pair_toward` take the ``Shapes`` struct and a
shape index and serve every kind; :func:`shape_distance` and :func:`shape_point` take a kind
and ``params`` and serve the primitives (a hull there is its bounding sphere).

Example::

    X = shape_transform(shapes, body_q, s)
    dist, n = shape_surface_distance(shapes, s, sk.transform_point(sk.transform_inverse(X), x))
"""

import numpy as np

import simkit as sk
from ..core import array as A
from ..core import types as T
from .revolved_shapes import (CONE_PLANE_POINTS, CONE_POINTS, CYLINDER_PLANE_POINTS, CYLINDER_POINTS, cone_distance,
                              cone_point, cylinder_distance, cylinder_point)
from .convex import HULL_POINTS, hull_distance, hull_point
from .ellipsoid import ellipsoid_distance, ellipsoid_point
from .heightfield import hfield_distance
from .structs import (SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CONVEX, SHAPE_CYLINDER, SHAPE_ELLIPSOID,
                      SHAPE_HFIELD, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE)

# The bounding radius of a plane: it reaches every shape (finite or not, the region below it
# that pushes out is unbounded), and stays finite in float32 so that sums and comparisons of
# reaches never meet inf - inf.
PLANE_REACH = 1.0e18
# The shapes with no contact points of their own, only ever the surface side of a pair (the
# other shape's points against their signed distance); surface_only() in kernels.
SURFACE_ONLY = (SHAPE_PLANE, SHAPE_HFIELD)


@sk.func
def box_distance(p, h):
    """Signed distance of local point ``p`` to a box of half extents ``h``, and the outward normal."""
    closest = sk.min(sk.max(p, -h), h)
    d = p - closest
    dist = sk.length(d)
    n = d * 0.0
    if dist > 0.0:
        n = d / dist
    else:
        # inside: leave through the nearest face
        gap = h - sk.abs(p)
        axis = 0
        if gap[1] < gap[axis]:
            axis = 1
        if gap[2] < gap[axis]:
            axis = 2
        dist = -gap[axis]
        n[axis] = sk.sign(p[axis])
        if p[axis] == 0.0:
            n[axis] = 1.0
    return dist, n


@sk.func
def plane_distance(p, size):
    """Signed distance of local point ``p`` to a plane facing +y, and the outward normal: its
    height ``p[1]`` for an infinite plane (``size[0] == 0``); for a rectangle of half extents
    ``size[0]``, ``size[1]`` along x and z, the height above or below it within its footprint
    (one-sided: a point below is inside and leaves upwards, however deep), and outside the
    footprint the distance to the nearest point of the rectangle or of the half-infinite
    column below it."""
    dist = p[1]
    n = p * 0.0
    n[1] = dist * 0.0 + 1.0
    if size[0] > 0.0:
        closest = p * 0.0
        closest[0] = sk.clamp(p[0], -size[0], size[0])
        closest[1] = sk.min(p[1], p[1] * 0.0)
        closest[2] = sk.clamp(p[2], -size[1], size[1])
        d = p - closest
        length = sk.length(d)
        if length > 0.0:  # above it, or off its footprint (else inside, right below it)
            dist = length
            n = d / length
    return dist, n


@sk.func
def shape_distance(kind, p, size):
    """Signed distance of point ``p`` (in the shape's frame) to a shape of ``kind`` and
    ``size`` (its ``params``), and the outward normal in the shape's frame."""
    # A sphere and a capsule share one formula: the distance to the center (sphere) or to
    # the nearest point of the segment (capsule), less the radius. A box does not compute
    # it at all: its sqrt and division, done and then overwritten, were a third of the
    # rigid pair contact's time.
    if kind == SHAPE_BOX:
        dist, n = box_distance(p, size)
    elif kind == SHAPE_CYLINDER:
        dist, n = cylinder_distance(p, size[0], size[1])
    elif kind == SHAPE_CONE:
        dist, n = cone_distance(p, size[0], size[1])
    elif kind == SHAPE_ELLIPSOID:
        dist, n = ellipsoid_distance(p, size)
    elif kind == SHAPE_PLANE:
        dist, n = plane_distance(p, size)
    else:
        d = p
        if kind == SHAPE_CAPSULE:
            axis_point = p * 0.0
            axis_point[1] = sk.clamp(p[1], -size[1], size[1])
            d = p - axis_point
        dist = sk.length(d) - size[0]
        n = sk.normalize(d)
    return dist, n


@sk.func
def shape_transform(shapes, body_q, s):
    """World pose of shape ``s``: its ``xform`` composed with its body's pose (static shapes
    store a world pose)."""
    X = shapes.xform[s]
    b = shapes.body[s]
    if b >= 0:
        X = sk.transform_multiply(body_q[b], X)
    return X


# Contact points sampled on a shape, each thickened by a radius: a sphere is its center
# (its radius); a capsule its two segment ends and the point of its segment nearest to
# the other shape's center (its radius); a box its 8 corners, then the midpoints of its
# 12 edges. Box points are rounded: each sits BOX_CORNER_ROUNDING * (smallest half extent)
# inside the box along the axes it is extreme in, thickened by that much, so a face
# resting on another face still touches through the point's radius (a sharp corner lying
# exactly on an edge of the other box would have no inward normal). The edge midpoints
# catch two boxes whose edges cross (bars laid crosswise), where no corner of either is
# inside the other. A pair of shapes touches where a point of one comes within its radius
# of the other's surface. Against a plane the first ``shape_plane_point_count`` points
# suffice (a box's corners, a capsule's ends): the lowest point of a box or a segment is
# one of them.
#
# A cylinder has 6 rim points and an axis point, a cone 3 rim points and its apex (see
# :mod:`simkit.kernels.revolved_shapes`): its rim points are the deepest of each rim in the
# direction of ``toward`` (:func:`plane_toward`, :func:`pair_toward`), so its depth in a
# plane is exact. An ellipsoid has one point, its support point along ``toward``
# (:mod:`simkit.kernels.ellipsoid`): the deepest in a plane too.
MAX_SHAPE_POINTS = 20
MAX_PLANE_POINTS = 8
BOX_CORNER_ROUNDING = 0.1


@sk.func
def surface_only(kind):
    """1 for a kind of ``SURFACE_ONLY`` (a plane, a heightfield: no contact points of its own),
    else 0."""
    result = 0
    if kind == SHAPE_PLANE or kind == SHAPE_HFIELD:
        result = 1
    return result


@sk.func
def shape_point_count(kind):
    """How many contact points a shape of ``kind`` has (a mesh none here: its contacts are
    those of :mod:`simkit.kernels.mesh_contact`)."""
    count = 1
    if kind == SHAPE_BOX:
        count = 20
    elif kind == SHAPE_CAPSULE:
        count = 3
    elif kind == SHAPE_CYLINDER:
        count = CYLINDER_POINTS
    elif kind == SHAPE_CONE:
        count = CONE_POINTS
    elif kind == SHAPE_CONVEX:
        count = HULL_POINTS
    elif kind == SHAPE_MESH or surface_only(kind) == 1:
        count = 0
    return count


@sk.func
def shape_plane_point_count(kind):
    """How many of a shape's first contact points suffice against a plane (box: its 8
    corners, capsule: its 2 ends, cylinder: its 6 rim points, cone: its 3 rim points and apex,
    convex hull: its support vertices, sphere: its center)."""
    count = 1
    if kind == SHAPE_BOX:
        count = 8
    elif kind == SHAPE_CAPSULE:
        count = 2
    elif kind == SHAPE_CYLINDER:
        count = CYLINDER_PLANE_POINTS
    elif kind == SHAPE_CONE:
        count = CONE_PLANE_POINTS
    elif kind == SHAPE_CONVEX:
        count = HULL_POINTS
    elif kind == SHAPE_MESH or surface_only(kind) == 1:
        count = 0
    return count


@sk.func
def pair_point_count(kind_a, kind_b):
    """How many contact points of a shape of ``kind_a`` are tested against one of ``kind_b``:
    against a plane or a heightfield those that suffice against the ground
    (:func:`shape_plane_point_count`), else all of them."""
    count = shape_point_count(kind_a)
    if surface_only(kind_b) == 1:
        count = shape_plane_point_count(kind_a)
    return count


@sk.func
def shape_point(kind, size, k, toward):
    """Contact point ``k`` of a shape in its own frame and its radius; ``toward`` (in the same
    frame) is the center of the other shape, which picks a capsule's third point, or for a
    cylinder or a cone :func:`plane_toward` / :func:`pair_toward`, which pick its rim points
    (and a cylinder's axis point)."""
    p = size * 0.0
    radius = size[0]
    if kind == SHAPE_BOX:
        radius = sk.min(sk.min(size[0], size[1]), size[2]) * BOX_CORNER_ROUNDING
        p[0] = radius - size[0]
        p[1] = radius - size[1]
        p[2] = radius - size[2]
        if k < 8:
            # corner k has the sign pattern of k's binary digits (x lowest)
            if k % 2 == 1:
                p[0] = -p[0]
            if (k // 2) % 2 == 1:
                p[1] = -p[1]
            if k // 4 == 1:
                p[2] = -p[2]
        else:
            # midpoint of an edge along axis (k - 8) // 4; the other two axes take the sign
            # pattern of (k - 8) % 4's binary digits, in x, y, z order after the edge's axis
            e = k - 8
            axis = e // 4
            first = (axis + 1) % 3
            second = (axis + 2) % 3
            if e % 2 == 1:
                p[first] = -p[first]
            if (e // 2) % 2 == 1:
                p[second] = -p[second]
            p[axis] = radius * 0.0
    elif kind == SHAPE_CAPSULE:
        if k == 0:
            p[1] = -size[1]
        elif k == 1:
            p[1] = size[1]
        else:
            p[1] = sk.clamp(toward[1], -size[1], size[1])
    elif kind == SHAPE_CYLINDER:
        p, radius = cylinder_point(size, k, toward)
    elif kind == SHAPE_CONE:
        p, radius = cone_point(size, k, toward)
    elif kind == SHAPE_ELLIPSOID:
        p, radius = ellipsoid_point(size, toward)
    return p, radius


@sk.func
def shape_surface_distance(shapes, s, p):
    """Signed distance of point ``p`` (in shape ``s``'s frame) to shape ``s`` of ``shapes``, a
    primitive, a convex hull or a heightfield, and the outward normal in the shape's frame."""
    kind = shapes.kind[s]
    dist = p[0] * 0.0
    n = p * 0.0
    if kind == SHAPE_CONVEX:
        dist, n = hull_distance(shapes, s, p)
    elif kind == SHAPE_HFIELD:
        dist, n = hfield_distance(shapes, s, p)
    else:
        dist, n = shape_distance(kind, p, shapes.params[s])
    return dist, n


@sk.func
def shape_surface_point(shapes, s, k, toward):
    """Contact point ``k`` of shape ``s`` of ``shapes`` (a primitive or a convex hull) in its
    frame and its radius; ``toward`` as for :func:`shape_point`."""
    kind = shapes.kind[s]
    p = toward * 0.0
    radius = toward[0] * 0.0
    if kind == SHAPE_CONVEX:
        p, radius = hull_point(shapes, s, k, toward)
    else:
        p, radius = shape_point(kind, shapes.params[s], k, toward)
    return p, radius


@sk.func
def plane_toward(X, n):
    """``toward`` of :func:`shape_point` for a shape of world pose ``X`` against a plane of
    normal ``n``: the direction into the plane, in the shape's frame (a unit vector)."""
    return sk.quat_rotate_inv(X.q, -n)


@sk.func
def pair_toward(kind_a, size_a, Xa, Xa_inv, kind_b, size_b, Xb, Xb_inv):
    """``toward`` of :func:`shape_point` for shape ``a`` (world pose ``Xa``) against shape ``b``,
    in ``a``'s frame: ``b``'s center, or for a cylinder :func:`cylinder_toward`, for a cone or
    an ellipsoid the direction into ``b`` from its center (minus ``b``'s outward normal there)."""
    toward = sk.transform_point(Xa_inv, Xb.p)
    if kind_a == SHAPE_CYLINDER:
        toward = cylinder_toward(size_a, Xa, kind_b, size_b, Xb, Xb_inv)
    elif kind_a == SHAPE_CONE or kind_a == SHAPE_ELLIPSOID:
        d, n = shape_distance(kind_b, sk.transform_point(Xb_inv, Xa.p), size_b)
        toward = -sk.quat_rotate_inv(Xa.q, sk.quat_rotate(Xb.q, n))
    return toward


@sk.func
def shape_pair_toward(shapes, a, b, Xa, Xa_inv, Xb, Xb_inv):
    """``toward`` of :func:`shape_surface_point` for shape ``a`` against shape ``b`` of ``shapes``:
    :func:`pair_toward`, but for a convex hull ``a``, and a cone, an ellipsoid or a cylinder
    (across its axis) against a hull ``b``, the direction into ``b`` from ``a``'s center by
    ``b``'s exact distance (minus its outward normal there); against a heightfield that of a
    plane (:func:`plane_toward`) along the terrain's normal nearest ``a``'s center."""
    kind_a = shapes.kind[a]
    kind_b = shapes.kind[b]
    toward = pair_toward(kind_a, shapes.params[a], Xa, Xa_inv, kind_b, shapes.params[b], Xb, Xb_inv)
    if kind_b == SHAPE_HFIELD:
        d, n = shape_surface_distance(shapes, b, sk.transform_point(Xb_inv, Xa.p))
        toward = plane_toward(Xa, sk.quat_rotate(Xb.q, n))
    elif kind_a == SHAPE_CONVEX or (kind_b == SHAPE_CONVEX and (kind_a == SHAPE_CONE or kind_a == SHAPE_ELLIPSOID
                                                              or kind_a == SHAPE_CYLINDER)):
        d, n = shape_surface_distance(shapes, b, sk.transform_point(Xb_inv, Xa.p))
        u = -sk.quat_rotate_inv(Xa.q, sk.quat_rotate(Xb.q, n))
        if kind_a == SHAPE_CYLINDER:
            u[1] = toward[1]
        toward = u
    return toward


# Rounds of cylinder_toward after the first: each shrinks the distance of its axis point to the
# nearest one by about the ratio of the other surface's curvature radius to its distance from the
# axis (1/2 for two crossed cylinders of one radius: 2^-10 of the offset, a depth error of its
# square over twice the distance, about 1e-8 m for 10 cm cylinders).
TOWARD_ROUNDS = 10


@sk.func
def cylinder_toward(size_a, Xa, kind_b, size_b, Xb, Xb_inv):
    """The ``toward`` of cylinder ``a`` (radius and half height ``size_a``) against shape ``b``,
    in ``a``'s frame. Across the axis (its x and z): the direction into ``b`` from ``a``'s
    center (minus ``b``'s outward normal there), where the rims' deepest points lie, also
    where ``b``'s center is far off to the side (a cylinder lying on a long box). Along the
    axis (its y): the point of the axis segment nearest ``b``, where the axis point sits (two
    crossed cylinders), found by alternating between the point of ``b``'s surface nearest to
    an axis point and the axis point nearest to that (both sets are convex, so it converges)."""
    P = size_a * 0.0
    d, n = shape_distance(kind_b, sk.transform_point(Xb_inv, Xa.p), size_b)
    u = -sk.quat_rotate_inv(Xa.q, sk.quat_rotate(Xb.q, n))
    y = sk.clamp(u[1] * sk.abs(d), -size_a[1], size_a[1])
    for _round in range(TOWARD_ROUNDS):
        P[1] = y
        d, n = shape_distance(kind_b, sk.transform_point(Xb_inv, sk.transform_point(Xa, P)), size_b)
        t = P - sk.quat_rotate_inv(Xa.q, sk.quat_rotate(Xb.q, n)) * sk.abs(d)
        y = sk.clamp(t[1], -size_a[1], size_a[1])
    u[1] = y
    return u


@sk.func
def shape_bounding_radius(kind, size):
    """Radius of a sphere about the shape's origin that contains it."""
    r = size[0]
    if kind == SHAPE_BOX:
        r = sk.length(size)
    elif kind == SHAPE_ELLIPSOID:
        r = sk.max(sk.max(size[0], size[1]), size[2])
    elif kind == SHAPE_CAPSULE:
        r = size[0] + size[1]
    elif kind == SHAPE_CYLINDER or kind == SHAPE_CONE:
        r = sk.sqrt(size[0] * size[0] + size[1] * size[1])
    elif kind == SHAPE_PLANE:
        r = r * 0.0 + PLANE_REACH
    elif kind == SHAPE_HFIELD:
        r = size[2]
    return r


# -- candidate pairs (numpy, once per model) -----------------------------------------------
def _pairs_within(shapes: np.ndarray, kind: np.ndarray, body: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs ``(a, b)`` among the shape indices ``shapes``, before joints."""
    a, b = (shapes[x.ravel()] for x in np.meshgrid(np.arange(len(shapes)), np.arange(len(shapes)), indexing="ij"))
    keep = (body[a] != body[b]) & ((body[a] >= 0) | (body[b] >= 0))
    keep &= ~((kind[b] == SHAPE_SPHERE) & (kind[a] != SHAPE_SPHERE))
    keep &= ~np.isin(kind[a], SURFACE_ONLY)
    keep &= ~((kind[a] == SHAPE_SPHERE) & (kind[b] == SHAPE_SPHERE) & (a > b))
    return a[keep], b[keep]


def world_groups(world: np.ndarray, world_count: int) -> list[np.ndarray]:
    """For each world ``w``, the ascending indices of the things of world ``w`` and of world -1
    (shared by all worlds); a model without worlds has one group, every index.

    Example::

        world_groups(np.array([-1, 0, 0, 1]), 2)     # [array([0, 1, 2]), array([0, 3])]
    """
    if world_count == 0:
        return [np.arange(len(world))]
    order = np.argsort(world, kind="stable")
    bounds = np.searchsorted(world[order], np.arange(-1, world_count + 1))
    shared = order[bounds[0]:bounds[1]]
    return [np.sort(np.concatenate([shared, order[bounds[w + 1]:bounds[w + 2]]])) for w in range(world_count)]


def _pair_list(kind: np.ndarray, body: np.ndarray, joined: set, world: np.ndarray | None = None,
               world_count: int = 0, collision_group: np.ndarray | None = None,
               collision_mask: np.ndarray | None = None) -> np.ndarray:
    world = np.full(len(kind), -1) if world is None else world
    found = []
    for group in world_groups(world, world_count):
        a, b = _pairs_within(group, kind, body)
        if world_count:
            # two shapes of world -1 are a pair of every group: keep them in the first group only
            shared = (world[a] < 0) & (world[b] < 0)
            a, b = (a, b) if not found else (a[~shared], b[~shared])
        found.append((a, b))
    a = np.concatenate([f[0] for f in found]).astype(np.int64)
    b = np.concatenate([f[1] for f in found]).astype(np.int64)
    if joined and len(a):
        bodies = int(body.max()) + 2
        ba, bb = body[a], body[b]
        key = np.minimum(ba, bb) * bodies + np.maximum(ba, bb)
        jkey = np.array([min(p, c) * bodies + max(p, c) for p, c in joined], dtype=np.int64)
        keep = ~np.isin(key, jkey)
        a, b = a[keep], b[keep]
    if collision_group is not None:
        g, m = collision_group, collision_mask
        keep = ((g[a] & m[b]) | (g[b] & m[a])) != 0
        a, b = a[keep], b[keep]
    order = np.lexsort((b, a))
    return np.stack([a[order], b[order]], axis=1).astype(np.int32).reshape(-1, 2)


def collision_pairs(model) -> A.Array:
    """The candidate shape pairs of ``model`` as an int32 array of shape ``(P, 2)``, cached on
    the model (its shapes and joints never change).

    A pair ``(a, b)`` means "the contact points of shape ``a`` against the surface of shape
    ``b``". Shapes on the same body, two static shapes, shapes of two bodies joined by
    a joint, shapes of two different worlds (``model.shape_world``; world -1 meets
    every world) and shapes whose collision masks exclude each other
    (``ModelBuilder.set_shape_collision``) never collide (a body jointed to the world still
    collides with static shapes). A sphere is only ever the ``a`` side (its center against the other surface
    is exact); other pairs are tested both ways, so a box corner and a capsule end both
    find the other shape. The contact kernels skip a pair whose bounding spheres are apart
    (or, for big models, find the pairs each step instead: :mod:`simkit.kernels.broad_phase`),
    so the list is all pairs that could ever touch, fixed for the
    model's lifetime, which keeps launches the same size every step (what a Tape and
    ``sk.capture`` need). Pairs are listed in ascending ``(a, b)`` order; the list is built
    world by world, so its size grows with the number of worlds, not with its square.

    Example::

        pairs = collision_pairs(model)     # sk int32 array of shape (P, 2)
        pairs.numpy()[0]                   # (a, b)
    """
    pairs = model.__dict__.get("_collision_pairs")
    if pairs is None:
        kind = model.shapes.kind.numpy()
        body = model.shapes.body.numpy()
        joined = set()
        if model.joint_count:
            for p, c in zip(model.joints.parent.numpy(), model.joints.child.numpy()):
                if p >= 0:
                    joined.add((int(p), int(c)))
        found = _pair_list(kind, body, joined, model.shape_world.numpy(), model.world_count,
                           model.shape_collision_group, model.shape_collision_mask)
        # pairs with a mesh are rows of simkit.kernels.meshes.mesh_contact_rows instead
        found = found[(kind[found[:, 0]] != SHAPE_MESH) & (kind[found[:, 1]] != SHAPE_MESH)]
        pairs = A.array(found, dtype=T.int32, device=model.device)
        model._collision_pairs = pairs
    return pairs


_ROW_FILTERS = ("all", "static", "body", "mesh")


def particle_shape_rows(model, which: str = "all"):
    """The shapes each particle of ``model`` may touch, as a ``ParticleShapes`` struct (see
    :mod:`simkit.kernels.structs`), and the width of its widest row that a particle reads:
    the second launch dimension of a kernel with one thread per (particle, row slot).
    ``which`` keeps ``"all"`` primitive shapes, the ``"static"`` ones, or those on a
    ``"body"``; ``"mesh"`` keeps the mesh shapes (static or not), which only
    :mod:`simkit.kernels.mesh_contact` reads. Cached on the model.

    A particle of world ``w`` meets the shapes of world ``w`` and of world -1; a particle
    of world -1 meets every shape. Without worlds every particle reads the one row of all
    the (kept) shapes in ascending order, so slot ``k`` of the row is shape ``k`` (for
    ``"all"``). With worlds, the widest row a particle reads is the widest world's (plus
    the shared shapes), so a launch grows with the number of worlds, not with its square
    (unless a particle of world -1 reads row 0, every shape).

    Example::

        rows, width = particle_shape_rows(model, "static")
        sk.launch(kernel, (model.particle_count, width), inputs=[..., rows, ...])
    """
    if which not in _ROW_FILTERS:
        raise ValueError(f"particle_shape_rows: which must be one of {_ROW_FILTERS}, got {which!r}")
    cache = model.__dict__.setdefault("_particle_shape_rows", {})
    if which not in cache:
        body = model.shapes.body.numpy()
        mesh = model.shapes.kind.numpy() == SHAPE_MESH
        keep = {"all": ~mesh, "static": (body < 0) & ~mesh, "body": (body >= 0) & ~mesh, "mesh": mesh}[which]
        world = model.shape_world.numpy()
        kept = np.flatnonzero(keep)
        rows = [kept] + ([g[keep[g]] for g in world_groups(world, model.world_count)] if model.world_count else [])
        start = np.zeros(len(rows) + 1, dtype=np.int32)
        np.cumsum([len(r) for r in rows], out=start[1:])
        read = np.unique(model.particle_world.numpy() + 1) if model.particle_count else np.zeros(0, dtype=int)
        width = max((len(rows[r]) for r in read), default=0)
        S = model.types
        struct = S.ParticleShapes(world=model.particle_world,
                                  start=A.array(start, dtype=T.int32, device=model.device),
                                  shape=A.array(np.concatenate(rows).astype(np.int32), dtype=T.int32,
                                                device=model.device))
        cache[which] = (struct, int(width))
    return cache[which]
