"""The convex hull shape (``SHAPE_CONVEX``) for :mod:`simkit.kernels.shapes`: its exact signed
distance and its contact points, read from the ``hull*`` fields of ``Shapes``
(docs/geometry.md).

Signed distance of a point ``p``: the triangle whose plane ``p`` is farthest in front of
decides. Behind every plane (inside), the distance is that plane's (negative) and the normal
its normal: inside a convex solid the nearest boundary point is on the nearest face plane.
In front of one (outside), it is the distance to the closest point of the nearest triangle
among those whose planes ``p`` is in front of (the nearest point of a convex solid lies on a
face that faces ``p``), and the normal points from there to ``p``. Both searches carry no
gradient (an index); the distance to the chosen plane or triangle does.

Contact points: ``HULL_POINTS`` support vertices (the vertex farthest along a direction):
along ``toward`` (into the other shape: the deepest vertex in a plane of normal ``-toward``)
and along ``HULL_POINTS - 1`` directions leaning ``HULL_TILT`` from it around a cone, which
pick the corners of a face that rests flat (up to 7 of them). A vertex picked twice is
reported once: the leaning directions keep the first of theirs, and the first point (along
``toward``, which ties among the corners of a face resting flat and so changes with rounding)
gives way to any leaning one. A repeated point is replaced by the vertex farthest against
``toward`` (the hull's far side, which touches only where the whole hull is inside the other
shape), so that no vertex pushes twice and every point is a real vertex. Each point is then
rounded as a box's corners are: moved back from the other shape (against ``toward``) by the
hull's rounding ``params[1]`` and thickened by as much, which leaves its depth in a plane normal
to ``toward`` exact, and moved as far towards the centroid across ``toward``, so that the corner
of a hull stacked flush on an equal one is not on the other's side face (where its distance,
0, would push nowhere).

Example::

    dist, n = hull_distance(shapes, s, p_local)
    p, radius = hull_point(shapes, s, k, toward)
"""

import math
from typing import Any

import simkit as sk
from .closest_point import closest_point_on_triangle

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints2d = sk.array(dtype=sk.int32, ndim=2)

HULL_POINTS = 8
# tan of the angle the leaning directions make with ``toward`` (about 27 degrees), and the
# angle of the first of them around it, off the axes of the tangent basis so that a box's
# face corners are not ties
HULL_TILT = 0.5
HULL_PHASE = 0.3
HULL_STEP = 2.0 * math.pi / (HULL_POINTS - 1)


@sk.func
def hull_support(vertices: AnyArray, first: int, count: int, u: Any) -> int:
    """The index of the vertex farthest along ``u`` among ``count`` from ``first`` (the first
    of equally far ones)."""
    best = first
    best_h = sk.dot(vertices[first], u)
    for i in range(first + 1, first + count):
        h = sk.dot(vertices[i], u)
        if h > best_h:
            best = i
            best_h = h
    return best


@sk.func_grad(hull_support)
def hull_support_grad(vertices: AnyArray, first: int, count: int, u: Any, adj_ret: int):
    # an index has no derivative: the point it picks carries the gradient
    return 0, 0, u * 0.0


@sk.func
def hull_front_face(normals: AnyArray, offsets: AnyArray, first: int, count: int, p: Any) -> int:
    """The index of the triangle whose plane ``p`` is farthest in front of."""
    best = first
    best_h = sk.dot(normals[first], p) - offsets[first]
    for t in range(first + 1, first + count):
        h = sk.dot(normals[t], p) - offsets[t]
        if h > best_h:
            best = t
            best_h = h
    return best


@sk.func_grad(hull_front_face)
def hull_front_face_grad(normals: AnyArray, offsets: AnyArray, first: int, count: int, p: Any, adj_ret: int):
    return 0, 0, p * 0.0


@sk.func
def hull_nearest_triangle(vertices: AnyArray, triangles: ints2d, normals: AnyArray, offsets: AnyArray, first: int,
                          count: int, p: Any, start: int) -> int:
    """The index of the triangle nearest to ``p`` among those whose planes ``p`` is in front
    of (``start``, one of them, to begin with)."""
    best = start
    best_d2 = p[0] * 0.0 - 1.0
    for t in range(first, first + count):
        if sk.dot(normals[t], p) - offsets[t] > 0.0:
            d = p - closest_point_on_triangle(p, vertices[triangles[t, 0]], vertices[triangles[t, 1]],
                                              vertices[triangles[t, 2]])
            d2 = sk.dot(d, d)
            if best_d2 < 0.0 or d2 < best_d2:
                best = t
                best_d2 = d2
    return best


@sk.func_grad(hull_nearest_triangle)
def hull_nearest_triangle_grad(vertices: AnyArray, triangles: ints2d, normals: AnyArray, offsets: AnyArray,
                               first: int, count: int, p: Any, start: int, adj_ret: int):
    return 0, 0, p * 0.0, 0


@sk.func
def hull_distance(shapes: Any, s: int, p: Any):
    """Signed distance of ``p`` (in shape ``s``'s frame) to convex hull ``s`` and the outward
    normal there (shape frame)."""
    f = hull_front_face(shapes.hull_normals, shapes.hull_offsets, shapes.hull[s, 2], shapes.hull[s, 3], p)
    n = shapes.hull_normals[f]
    dist = sk.dot(n, p) - shapes.hull_offsets[f]
    if dist > 0.0:
        t = hull_nearest_triangle(shapes.hull_vertices, shapes.hull_triangles, shapes.hull_normals,
                                  shapes.hull_offsets, shapes.hull[s, 2], shapes.hull[s, 3], p, f)
        d = p - closest_point_on_triangle(p, shapes.hull_vertices[shapes.hull_triangles[t, 0]],
                                          shapes.hull_vertices[shapes.hull_triangles[t, 1]],
                                          shapes.hull_vertices[shapes.hull_triangles[t, 2]])
        r = sk.length(d)
        if r > 0.0:
            dist = r
            n = d / r
    return dist, n


@sk.func
def hull_direction(u: Any, e1: Any, e2: Any, k: int):
    """Direction ``k`` of the support points: ``u``, then ``u`` leaning ``HULL_TILT`` towards
    ``HULL_POINTS - 1`` directions around it."""
    d = u
    if k > 0:
        angle = HULL_PHASE + HULL_STEP * type(u[0])(k - 1)
        d = u + (e1 * sk.cos(angle) + e2 * sk.sin(angle)) * HULL_TILT
    return d


@sk.func
def hull_point(shapes: Any, s: int, k: int, toward: Any):
    """Contact point ``k`` of convex hull ``s`` in its frame, and its radius (its rounding,
    ``params[1]``): the support vertex along direction ``k`` of :func:`hull_direction` about
    ``toward`` (on the x axis where it is zero), or for a vertex another point already is, the
    far side's vertex, rounded."""
    u = toward
    if sk.dot(u, u) == 0.0:
        u = toward * 0.0
        u[0] = 1.0
    u = sk.normalize(u)
    axis = u * 0.0
    if sk.abs(u[0]) < 0.6:
        axis[0] = 1.0
    else:
        axis[1] = 1.0
    e1 = sk.normalize(sk.cross(u, axis))
    e2 = sk.cross(u, e1)
    first = shapes.hull[s, 0]
    count = shapes.hull[s, 1]
    i = hull_support(shapes.hull_vertices, first, count, hull_direction(u, e1, e2, k))
    repeated = 0
    for j in range(1, HULL_POINTS):
        if j != k and (k == 0 or j < k):
            if hull_support(shapes.hull_vertices, first, count, hull_direction(u, e1, e2, j)) == i:
                repeated = 1
    if repeated == 1:
        i = hull_support(shapes.hull_vertices, first, count, -u)
    # rounded as a box's corners: moved back from the other shape by the rounding and thickened
    # by as much (its depth in a plane normal to u unchanged), and moved as far towards the
    # centroid across u, off the sides of a hull whose face lies flush with this one's side
    rho = shapes.params[s][1]
    v = shapes.hull_vertices[i]
    across = shapes.hull_center[s] - v
    across = across - u * sk.dot(across, u)
    p = v - u * rho
    if sk.dot(across, across) > 0.0:
        p = p + sk.normalize(across) * rho
    return p, rho
