"""Cloth triangles against the shapes of bodies (and static shapes): the contact that keeps a
small or thin shape from slicing through a cloth between its vertices.

The vertices of a cloth already touch every shape as particles (:mod:`simkit.kernels.contact`).
Here each triangle meets the *features* of each shape of its world, each a segment (a point
where both ends coincide) thickened by a radius:

- a sphere: its center, its radius;
- a capsule: its axis segment, its radius;
- a box: its 12 edges, each set in along the two other axes by the box's corner rounding
  (``BOX_CORNER_ROUNDING`` times its smallest half extent, see :mod:`simkit.kernels.shapes`)
  and thickened by that much (the corners are the edges' ends);
- a cylinder, cone, ellipsoid or convex hull: the contact points it shows a plane (those of
  :func:`~simkit.kernels.shapes.shape_surface_point` towards the triangle's plane), each with
  its radius.

A plane and a mesh have no features (the vertices suffice against a plane; meshes have
their own contact). For each (triangle, shape, feature) the closest points of the feature
and the triangle (:func:`segment_triangle_closest`) give a distance ``d`` and the direction
``u`` from the triangle to the feature; the pair touches when ``d`` is below the feature's
radius plus the cloth's thickness there (the corners' particle radii, weighted like the
closest point), with depth ``d - r_feature - r_cloth``. A segment through the triangle has
``d = 0``: ``u`` is then the triangle's normal on the side of the shape's center.

The closest point of the triangle decides who counts the contact, so that a point of the
cloth is counted once: inside the triangle, the triangle (weight 1); on a side shared with a
neighbour, each of the two with weight 1/2, unless the feature's point lies over the
neighbour's inside (that neighbour counts it whole); on a border side, the triangle (1); at
a corner, nobody (the vertex's own particle contact does).

``SemiImplicitEuler`` (:func:`triangle_shape_forces`): the penalty of particle-shape contact
(:func:`~simkit.kernels.contact.scaled_penalty_force` with ``model.contact``), the normal
``-u``, the relative velocity of the triangle's point and the shape's, the effective inverse
mass ``sum w_k^2 / m_k`` of the triangle's point plus the body's at the contact. The force
goes to the corners with the closest point's weights and, opposite, onto the body at the
contact point: the forces of a contact sum to zero.

``XPBD`` (:func:`solve_triangle_shapes`): a rigid, frictionless, one-sided constraint
``depth >= 0`` projected with the corners' inverse masses (weighted by the closest point's
weights, each split by its element count plus its violated triangle-shape constraints of the
iteration) and the body's at the contact point.

Example::

    k = cloth_shape_kernels(sk.float32)
    sk.launch(k.triangle_shape_forces, (tri_count, width), inputs=[...])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .bodies import point_inverse_mass, point_velocity, wrench_at
from .cloth_self_contact import edge_closest, segment_closest, triangle_closest
from .contact import scaled_penalty_force
from .shapes import (BOX_CORNER_ROUNDING, plane_toward, shape_bounding_radius,
                     shape_plane_point_count, shape_surface_distance, shape_surface_point, shape_transform)
from .structs import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_SPHERE, model_structs
from .xpbd_bodies import load_body, point_matrix, split_of

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
Ints = sk.array(dtype=sk.int32)
Ints2 = sk.array(dtype=sk.int32, ndim=2)


@sk.func
def feature_count(kind):
    """How many features a shape of ``kind`` shows a triangle (none for a plane, a heightfield
    or a mesh, which have no points of their own)."""
    count = shape_plane_point_count(kind)
    if kind == SHAPE_SPHERE or kind == SHAPE_CAPSULE:
        count = 1
    elif kind == SHAPE_BOX:
        count = 12
    return count


@sk.func
def shape_feature(shapes: Any, s: int, k: int, toward: Any):
    """Feature ``k`` of shape ``s`` in its frame: the ends of its segment and its radius;
    ``toward`` (the shape's frame) picks the contact points of the shapes that have them."""
    kind = shapes.kind[s]
    size = shapes.params[s]
    p0 = size * 0.0
    p1 = size * 0.0
    radius = size[0]
    if kind == SHAPE_CAPSULE:
        p0[1] = -size[1]
        p1[1] = size[1]
    elif kind == SHAPE_BOX:
        radius = sk.min(sk.min(size[0], size[1]), size[2]) * BOX_CORNER_ROUNDING
        # edge k runs along axis k // 4; the other two axes take the signs of k % 4's digits
        axis = k // 4
        first = (axis + 1) % 3
        second = (axis + 2) % 3
        p0[first] = size[first] - radius
        p0[second] = size[second] - radius
        if k % 2 == 1:
            p0[first] = -p0[first]
        if (k // 2) % 2 == 1:
            p0[second] = -p0[second]
        p1[first] = p0[first]
        p1[second] = p0[second]
        p0[axis] = radius - size[axis]
        p1[axis] = size[axis] - radius
    elif kind != SHAPE_SPHERE:
        p0, radius = shape_surface_point(shapes, s, k, toward)
        p1 = p0
    return p0, p1, radius


@sk.func
def segment_triangle_closest(p0: Any, p1: Any, a: Any, b: Any, c: Any):
    """The closest points of segment ``p0 p1`` and triangle ``a b c``: the segment's parameter
    ``s`` in [0, 1] and the triangle's barycentric weights ``(wa, wb, wc)`` (for a segment
    through the triangle, the point where it passes)."""
    wa, wb, wc, inside = triangle_closest(p0, a, b, c)
    s = wa * 0.0
    best = sk.length_sq(p0 - (a * wa + b * wb + c * wc))
    e = p1 - p0
    if sk.length_sq(e) > 0.0:
        va, vb, vc, inside1 = triangle_closest(p1, a, b, c)
        d = sk.length_sq(p1 - (a * va + b * vb + c * vc))
        if d < best:
            best = d
            s = s * 0.0 + 1.0
            wa = va
            wb = vb
            wc = vc
        s0, t0 = edge_closest(p0, p1, a, b)
        d = sk.length_sq(p0 + e * s0 - (a + (b - a) * t0))
        if d < best:
            best = d
            s = s0
            wa = 1.0 - t0
            wb = t0
            wc = t0 * 0.0
        s1, t1 = edge_closest(p0, p1, b, c)
        d = sk.length_sq(p0 + e * s1 - (b + (c - b) * t1))
        if d < best:
            best = d
            s = s1
            wa = t1 * 0.0
            wb = 1.0 - t1
            wc = t1
        s2, t2 = edge_closest(p0, p1, c, a)
        d = sk.length_sq(p0 + e * s2 - (c + (a - c) * t2))
        if d < best:
            best = d
            s = s2
            wa = t2
            wb = t2 * 0.0
            wc = 1.0 - t2
        n = sk.cross(b - a, c - a)
        h0 = sk.dot(p0 - a, n)
        h1 = sk.dot(p1 - a, n)
        if h0 * h1 < 0.0:
            sx = h0 / (h0 - h1)
            xa, xb, xc, through = triangle_closest(p0 + e * sx, a, b, c)
            if through == 1:
                s = sx
                wa = xa
                wb = xb
                wc = xc
    return s, wa, wb, wc


@sk.func
def counted_weight(q: AnyArray, tris: Ints2, across: Ints2, t: int, wa: Any, wb: Any, wc: Any, p: Any):
    """The share of a contact whose closest point on triangle ``t`` has the weights ``wa, wb,
    wc`` (``p`` the feature's point): 1 inside, 1/2 on a side shared with a neighbour (0 where
    ``p`` lies over that neighbour's inside, which counts it), 1 on a border, 0 at a corner."""
    zeros = 0
    side = -1
    if wc == 0.0:
        zeros = zeros + 1
        side = 0
    if wa == 0.0:
        zeros = zeros + 1
        side = 1
    if wb == 0.0:
        zeros = zeros + 1
        side = 2
    weight = wa * 0.0 + 1.0
    if zeros > 1:
        weight = wa * 0.0
    elif zeros == 1:
        other = across[t, side]
        if other >= 0:
            weight = wa * 0.0 + 0.5
            oa, ob, oc, over = triangle_closest(p, q[tris[other, 0]], q[tris[other, 1]], q[tris[other, 2]])
            if over == 1 and sk.min(oa, sk.min(ob, oc)) > 0.0:
                weight = wa * 0.0
    return weight


@sk.func
def triangle_reach(q: AnyArray, tris: Ints2, t: int, particles: Any, shapes: Any, s: int, X: Any):
    """Whether triangle ``t`` may touch shape ``s`` (world pose ``X``): ``(near, center, reach,
    normal)``, ``near`` 1 where its center comes within its reach (its corners' farthest plus
    their largest radius) of the shape's surface (the features lie within the shape, and the
    distance changes no faster than the point), its unit normal on the side of the shape's center."""
    a = q[tris[t, 0]]
    b = q[tris[t, 1]]
    c = q[tris[t, 2]]
    center = (a + b + c) * (1.0 / 3.0)
    reach = sk.max(sk.max(sk.length(a - center), sk.length(b - center)), sk.length(c - center))
    reach = reach + sk.max(sk.max(particles.radius[tris[t, 0]], particles.radius[tris[t, 1]]),
                           particles.radius[tris[t, 2]])
    normal = sk.normalize(sk.cross(b - a, c - a))
    if sk.dot(X.p - center, normal) < 0.0:
        normal = -normal
    near = 0
    if sk.length(center - X.p) < reach + shape_bounding_radius(shapes.kind[s], shapes.params[s]):
        gap, _n = shape_surface_distance(shapes, s, sk.transform_point(sk.transform_inverse(X), center))
        if gap < reach:
            near = 1
    return near, center, reach, normal


@sk.func
def feature_contact(q: AnyArray, tris: Ints2, across: Ints2, t: int, particles: Any, shapes: Any, s: int, X: Any,
                    k: int, center: Any, reach: Any, normal: Any):
    """Feature ``k`` of shape ``s`` (world pose ``X``) against triangle ``t`` at positions ``q``
    (``center``, ``reach``, ``normal`` from :func:`triangle_reach`): ``(weight, wa, wb, wc, u,
    depth, point)``, ``weight`` the contact's counted share (0 where it does not touch or is
    not this triangle's to count), ``u`` the unit direction from the triangle to the feature,
    ``depth`` < 0 when touching, ``point`` the cloth's surface point of the contact (the
    closest point moved out by the cloth's thickness)."""
    a = q[tris[t, 0]]
    b = q[tris[t, 1]]
    c = q[tris[t, 2]]
    weight = reach * 0.0
    wa = weight
    wb = weight
    wc = weight
    u = a * 0.0
    depth = weight
    point = a
    p0, p1, rf = shape_feature(shapes, s, k, plane_toward(X, normal))
    w0 = sk.transform_point(X, p0)
    w1 = sk.transform_point(X, p1)
    # the feature within reach of the triangle's center: most of a long box's edges are not
    near = w0 + (w1 - w0) * segment_closest(center, w0, w1)
    if sk.length(center - near) < reach + rf:
        sp, wa, wb, wc = segment_triangle_closest(w0, w1, a, b, c)
        ps = w0 + (w1 - w0) * sp
        pt = a * wa + b * wb + c * wc
        thick = (particles.radius[tris[t, 0]] * wa + particles.radius[tris[t, 1]] * wb
                 + particles.radius[tris[t, 2]] * wc)
        d = ps - pt
        dist = sk.length(d)
        depth = dist - rf - thick
        if depth < 0.0:
            u = normal
            if dist > 0.0:
                u = d / dist
            weight = counted_weight(q, tris, across, t, wa, wb, wc, ps)
            point = pt + u * thick
    return weight, wa, wb, wc, u, depth, point


@sk.kernel
def triangle_shape_forces(q: AnyArray, qd: AnyArray, tris: Ints2, across: Ints2, rows: Any, particles: Any,
                          shapes: Any, contact: Any, body_q: AnyArray, body_qd: AnyArray, bodies: Any, f: AnyArray,
                          body_f: AnyArray):
    # One thread per (triangle, slot j of its row of shapes), a loop over the shape's features.
    t, j = sk.tid()
    # slot j of the triangle's row of shapes, read in the kernel: a func taking the rows struct
    # failed to compile for the second float type used in one process
    r = rows.world[t] + 1
    if rows.start[r] + j >= rows.start[r + 1]:
        return
    s = rows.shape[rows.start[r] + j]
    X = shape_transform(shapes, body_q, s)
    near, center, reach, normal = triangle_reach(q, tris, t, particles, shapes, s, X)
    if near == 0:
        return
    i0 = tris[t, 0]
    i1 = tris[t, 1]
    i2 = tris[t, 2]
    b = shapes.body[s]
    for k in range(feature_count(shapes.kind[s])):
        weight, wa, wb, wc, u, depth, point = feature_contact(q, tris, across, t, particles, shapes, s, X, k, center,
                                                              reach, normal)
        if weight > 0.0:
            n = -u
            v = qd[i0] * wa + qd[i1] * wb + qd[i2] * wc
            inv_mass = (wa * wa * particles.inv_mass[i0] + wb * wb * particles.inv_mass[i1]
                        + wc * wc * particles.inv_mass[i2])
            if b >= 0:
                v = v - point_velocity(body_q[b], body_qd[b], bodies.com[b], point)
                inv_mass = inv_mass + point_inverse_mass(body_q[b], bodies, b, point, n)
            fc = scaled_penalty_force(n, depth, v, inv_mass, contact.ke[0], contact.kd[0], contact.kf[0],
                                      contact.time_constant[0], contact.damping_ratio[0], contact.mu[0]) * weight
            f[i0] += fc * wa
            f[i1] += fc * wb
            f[i2] += fc * wc
            if b >= 0:
                body_f[b] += wrench_at(body_q[b], bodies.com[b], point, -fc)


@sk.kernel
def count_body_contacts(q: AnyArray, tris: Ints2, across: Ints2, rows: Any, particles: Any, shapes: Any,
                        poses: AnyArray, counts: Ints):
    # XPBD's mass splitting: each touching (triangle, feature) is one constraint on its body.
    t, j = sk.tid()
    # slot j of the triangle's row of shapes, read in the kernel: a func taking the rows struct
    # failed to compile for the second float type used in one process
    r = rows.world[t] + 1
    if rows.start[r] + j >= rows.start[r + 1]:
        return
    s = rows.shape[rows.start[r] + j]
    b = shapes.body[s]
    if b < 0:
        return
    X = shape_transform(shapes, poses, s)
    near, center, reach, normal = triangle_reach(q, tris, t, particles, shapes, s, X)
    if near == 0:
        return
    for k in range(feature_count(shapes.kind[s])):
        weight, wa, wb, wc, u, depth, point = feature_contact(q, tris, across, t, particles, shapes, s, X, k, center,
                                                              reach, normal)
        if weight > 0.0:
            sk.atomic_add(counts, b, 1)


@sk.kernel
def count_corner_contacts(q: AnyArray, tris: Ints2, across: Ints2, rows: Any, particles: Any, shapes: Any,
                          poses: AnyArray, active: Ints):
    # the violated triangle-shape constraints of an XPBD iteration on each cloth vertex
    t, j = sk.tid()
    # slot j of the triangle's row of shapes, read in the kernel: a func taking the rows struct
    # failed to compile for the second float type used in one process
    r = rows.world[t] + 1
    if rows.start[r] + j >= rows.start[r + 1]:
        return
    s = rows.shape[rows.start[r] + j]
    X = shape_transform(shapes, poses, s)
    near, center, reach, normal = triangle_reach(q, tris, t, particles, shapes, s, X)
    if near == 0:
        return
    for k in range(feature_count(shapes.kind[s])):
        weight, wa, wb, wc, u, depth, point = feature_contact(q, tris, across, t, particles, shapes, s, X, k, center,
                                                              reach, normal)
        if weight > 0.0:
            if wa > 0.0:
                sk.atomic_add(active, tris[t, 0], 1)
            if wb > 0.0:
                sk.atomic_add(active, tris[t, 1], 1)
            if wc > 0.0:
                sk.atomic_add(active, tris[t, 2], 1)


@sk.func
def corner_mobility(particles: Any, particle_split: AnyArray, active: Ints, i: int, w: Any):
    """How far corner ``i`` moves per unit impulse on the triangle's point (its weight ``w``):
    ``w / m_i``, split by its element count and its violated triangle-shape constraints."""
    return w * particles.inv_mass[i] * (particle_split[i] + particle_split.dtype(active[i]))


@sk.kernel
def solve_triangle_shapes(q: AnyArray, tris: Ints2, across: Ints2, rows: Any, particles: Any, particle_split: AnyArray,
                          active: Ints, poses: AnyArray, shapes: Any, bodies: Any, joint_split: Ints,
                          contact_split: Ints, delta: AnyArray, dx: AnyArray, dtheta: AnyArray):
    # Rigid one-sided constraint depth >= 0 of each touching (triangle, feature), both ways:
    # the triangle's corners move into delta, the body into dx, dtheta. All from the same
    # positions (Jacobi).
    t, j = sk.tid()
    # slot j of the triangle's row of shapes, read in the kernel: a func taking the rows struct
    # failed to compile for the second float type used in one process
    r = rows.world[t] + 1
    if rows.start[r] + j >= rows.start[r + 1]:
        return
    s = rows.shape[rows.start[r] + j]
    X = shape_transform(shapes, poses, s)
    near, center, reach, normal = triangle_reach(q, tris, t, particles, shapes, s, X)
    if near == 0:
        return
    i0 = tris[t, 0]
    i1 = tris[t, 1]
    i2 = tris[t, 2]
    b = shapes.body[s]
    xb, _qb, mb, Ib, _cb = load_body(poses, bodies, b)
    split_b = split_of(joint_split, contact_split, bodies, b)
    for k in range(feature_count(shapes.kind[s])):
        weight, wa, wb, wc, u, depth, point = feature_contact(q, tris, across, t, particles, shapes, s, X, k, center,
                                                              reach, normal)
        if weight > 0.0:
            n = -u
            m0 = corner_mobility(particles, particle_split, active, i0, wa)
            m1 = corner_mobility(particles, particle_split, active, i1, wb)
            m2 = corner_mobility(particles, particle_split, active, i2, wc)
            rb = point - xb
            W = wa * m0 + wb * m1 + wc * m2 + sk.dot(n, point_matrix(mb, Ib, rb) @ n) * split_b
            if W > 0.0:
                P = n * (-depth / W * weight)
                delta[i0] += P * (wa * particles.inv_mass[i0])
                delta[i1] += P * (wb * particles.inv_mass[i1])
                delta[i2] += P * (wc * particles.inv_mass[i2])
                if b >= 0:
                    dx[b] += P * -mb
                    dtheta[b] += -(Ib @ sk.cross(rb, P))


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s, spatials = sk.array(dtype=S.vec3), sk.array(dtype=S.spatial)
    return {"q": vec3s, "qd": vec3s, "f": vec3s, "delta": vec3s, "dx": vec3s, "dtheta": vec3s,
            "particles": S.Particles, "contact": S.Contact, "shapes": S.Shapes, "rows": S.ParticleShapes,
            "body_q": sk.array(dtype=S.transform), "poses": sk.array(dtype=S.transform), "body_qd": spatials,
            "bodies": S.Bodies, "body_f": spatials, "particle_split": sk.array(dtype=real)}


@functools.cache  # asked for on every launch: a lookup
def cloth_shape_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)
