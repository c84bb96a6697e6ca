"""Contact kernels of the XPBD integrator for rigid bodies: body shapes against the ground,
against each other (the pairs of :func:`simkit.kernels.shapes.collision_pairs`) and against
particles.

A contact point is a point of one shape (``shape_point`` in :mod:`simkit.kernels.shapes`)
closer than its radius to the other surface. The shapes of a patch (a shape and the
ground, or two shapes, the points of each against the other) are handled by one thread:

- normal: rigid and one-sided (the multiplier ``lambda_n`` of a point only pushes). Every
  penetrating point proposes the impulse that would remove its own penetration; the
  proposals are summed and scaled by the one factor (at most 1) that best removes all the
  penetrations together (least squares). This is symmetric, so a box resting on a face
  stays level, where points corrected one after the other would tilt it;
- friction, in a second kernel at the poses after all the normal corrections of the
  iteration: the patch's center (its points weighted by their normal multipliers), normal
  and radius; one 3x3 solve cancels the tangential displacement of the two bodies at the
  center and their twist about the normal over the step (static Coulomb friction at the
  position level) as long as the tangential multiplier stays within ``mu sum(lambda_n)`` and
  the twist multiplier within that times the radius; beyond, the multiplier stays on the
  bound, turned against the slip (kinetic friction with the same ``mu``). A pair uses the
  mean ``mu`` of its two shapes, the ground the shape's. Friction point by point instead
  would need many sweeps to hold a body still (each point's correction disturbs the others
  through the body's rotation).

Particles touching the shapes of bodies are single-point contacts with ``Contact.mu``, both
ways. There is no restitution: contact is inelastic. The count kernels run once per step on
the predicted poses: each patch in contact and each particle touching a body shape is one
constraint on its bodies, their share in the mass splitting.

Example::

    k = xpbd_body_contact_kernels(sk.float64)
    sk.launch(k.count_contacts, len(patches), inputs=[poses, model.shapes, model.contact, patches, counts])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .shapes import (pair_point_count, plane_toward, shape_bounding_radius, shape_pair_toward,
                     shape_plane_point_count, shape_surface_distance, shape_surface_point, shape_transform)
from .structs import model_structs
from .xpbd_bodies import load_body, perpendicular, point_matrix, rotation_vector, solve_in_plane, split_of

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
AnyArray2d = sk.array(dtype=Any, ndim=2)

# Added in quadrature to the radius of a contact patch (m): keeps the radius of a one-point
# patch, zero, differentiable.
PATCH_EPSILON = 1.0e-6


@sk.func
def friction_multiplier(K, n, slip, lam_n, lam_t, mu):
    """The accumulated tangential multiplier of a point contact with normal ``n``, response
    matrix ``K`` and normal multiplier ``lam_n``, after cancelling the tangential ``slip`` of
    its points: static friction inside the cone ``|lam_t| <= mu lam_n``, kinetic on it."""
    want = lam_t - solve_in_plane(K, n, slip)
    return on_cone(want, K, slip, lam_t, mu * lam_n)


@sk.func
def on_cone(want, K, slip, lam_t, bound):
    """``want`` if it is within ``bound``; else the multiplier on the bound, turned towards the
    slip by the scalar correction along it (a correction in the plane would also push
    sideways, which is not friction)."""
    lt = want
    size = sk.length(want)
    if size > bound:
        along = sk.dot(slip, K @ slip)
        turn = lam_t
        if along > 0.0:
            turn = lam_t - slip * (sk.dot(slip, slip) / along)
        lt = want * (bound / size)
        if sk.length(turn) > 0.0:
            lt = sk.normalize(turn) * bound
    return lt


@sk.func
def origin(x: Any, q: Any, com: Any):
    """The pose of a body's origin from its center of mass ``x`` (world), rotation ``q`` and
    center of mass ``com`` (body frame)."""
    return sk.transform_of(type(x[0]))(x - sk.quat_rotate(q, com), q)


@sk.func
def previous_point(X: Any, poses_prev: AnyArray, b: int, p: Any):
    """Where the world point ``p``, fixed to body ``b`` at pose ``X``, was at ``poses_prev``."""
    y = p
    if b >= 0:
        y = sk.transform_point(poses_prev[b], sk.transform_point(sk.transform_inverse(X), p))
    return y


@sk.func
def spin(q: Any, poses_prev: AnyArray, b: int):
    """The rotation vector of body ``b`` (rotation ``q``) since ``poses_prev`` (zero for the world)."""
    w = sk.vector(3, type(q[0]))(0.0, 0.0, 0.0)
    if b >= 0:
        w = rotation_vector(q * sk.quat_inverse(poses_prev[b].q))
    return w


@sk.func
def probe(Xa: Any, Xb: Any, shapes: Any, sa: int, sb: int, up: Any, k: int):
    """Contact point ``k`` of shape ``sa`` (world pose ``Xa``) against the surface of shape
    ``sb`` (``Xb``), or against the ground (normal ``up``) where ``sb`` is -1: signed
    distance, the contact points on each (world) and the normal of the surface there
    (towards ``sa``)."""
    toward = plane_toward(Xa, up)
    if sb >= 0:
        toward = shape_pair_toward(shapes, sa, sb, Xa, sk.transform_inverse(Xa), Xb, sk.transform_inverse(Xb))
    local, radius = shape_surface_point(shapes, sa, k, toward)
    x = sk.transform_point(Xa, local)
    dist = sk.dot(up, x)
    n = up
    if sb >= 0:
        dist, n_local = shape_surface_distance(shapes, sb, sk.transform_point(sk.transform_inverse(Xb), x))
        n = sk.quat_rotate(Xb.q, n_local)
    return dist - radius, x - n * radius, x - n * dist, n


@sk.func
def patch_bodies(shapes: Any, patches: sk.array(dtype=sk.int32, ndim=2), i: int):
    """The two shapes of patch ``i`` (the second -1 for the ground), their bodies, and whether
    the points of the second shape are tested against the first too."""
    sa = patches[i, 0]
    sb = patches[i, 1]
    bb = -1
    if sb >= 0:
        bb = shapes.body[sb]
    return sa, sb, shapes.body[sa], bb, patches[i, 2]


@sk.func
def patch_probe(Xa: Any, Xb: Any, shapes: Any, sa: int, sb: int, up: Any, k: int, count_a: int):
    """Contact point ``k`` of a patch: the points of ``sa`` against ``sb`` come first
    (``count_a`` of them), then those of ``sb`` against ``sa``; the result is always seen
    from ``sa`` (contact point on ``sa``, on ``sb``, normal towards ``sa``)."""
    X1 = Xa
    X2 = Xb
    s1 = sa
    s2 = sb
    j = k
    if k >= count_a:
        X1 = Xb
        X2 = Xa
        s1 = sb
        s2 = sa
        j = k - count_a
    depth, pa, pb, n = probe(X1, X2, shapes, s1, s2, up, j)
    if k >= count_a:
        pa, pb = pb, pa
        n = -n
    return depth, pa, pb, n


@sk.func
def shape_pose(x: Any, q: Any, com: Any, shapes: Any, s: int):
    """World pose of shape ``s`` on a body at ``(x, q)`` (center of mass, rotation) whose
    center of mass is ``com``; the identity for the ground (``s = -1``)."""
    X = sk.transform_of(type(x[0]))(type(x)(0.0, 0.0, 0.0), sk.quat_of(type(x[0]))(0.0, 0.0, 0.0, 1.0))
    if s >= 0:
        X = sk.transform_multiply(sk.transform_of(type(x[0]))(x - sk.quat_rotate(q, com), q), shapes.xform[s])
    return X


@sk.func
def point_counts(Xa: Any, Xb: Any, shapes: Any, sa: int, sb: int, two_way: int):
    """How many contact points of shape ``sa`` to test against ``sb`` (the ground: -1), and of
    ``sb`` against ``sa``; none where their bounding spheres are apart."""
    count_a = 0
    count_b = 0
    if sb < 0:
        count_a = shape_plane_point_count(shapes.kind[sa])
    else:
        reach = (shape_bounding_radius(shapes.kind[sa], shapes.params[sa])
                 + shape_bounding_radius(shapes.kind[sb], shapes.params[sb]))
        if sk.length(Xa.p - Xb.p) < reach:
            count_a = pair_point_count(shapes.kind[sa], shapes.kind[sb])
            if two_way != 0:
                count_b = pair_point_count(shapes.kind[sb], shapes.kind[sa])
    return count_a, count_b


@sk.func
def patch_friction(K: Any, Ia: Any, Ib: Any, ra: Any, rb: Any, n: Any, D: Any, twist: Any, bound: Any, twist_bound: Any,
                   lam_t: Any, lam_tw: Any):
    """Friction of a contact patch: the tangential impulse at its center (offsets ``ra``,
    ``rb`` from the centers of mass) and the torque about its normal ``n`` that cancel the
    tangential displacement ``D`` and the ``twist`` of the two bodies over the step, solved
    together (``K`` the point response, ``Ia``, ``Ib`` the inverse inertias, mass split).
    Static inside ``|lam_t| <= bound`` and ``|lam_tw| <= twist_bound``, kinetic on them
    (the tangential part is solved again for the twist multiplier actually applied).
    Returns the new accumulated tangential and twist multipliers."""
    e1 = perpendicular(n)
    e2 = sk.cross(n, e1)
    c1 = sk.dot(n, Ia @ sk.cross(ra, e1) + Ib @ sk.cross(rb, e1))
    c2 = sk.dot(n, Ia @ sk.cross(ra, e2) + Ib @ sk.cross(rb, e2))
    k11 = sk.dot(e1, K @ e1)
    k12 = sk.dot(e1, K @ e2)
    k22 = sk.dot(e2, K @ e2)
    d1 = -sk.dot(e1, D)
    d2 = -sk.dot(e2, D)
    K3 = sk.matrix((3, 3), type(twist))(k11, k12, c1, k12, k22, c2, c1, c2, sk.dot(n, (Ia + Ib) @ n))
    y = sk.inverse(K3) @ type(n)(d1, d2, -twist)
    ltw = sk.clamp(lam_tw + y[2], -twist_bound, twist_bound)
    # the tangential impulse for that twist: [k11 k12; k12 k22] p = d - c (ltw - lam_tw)
    t = ltw - lam_tw
    b1 = d1 - c1 * t
    b2 = d2 - c2 * t
    det = k11 * k22 - k12 * k12
    p = e1 * ((k22 * b1 - k12 * b2) / det) + e2 * ((k11 * b2 - k12 * b1) / det)
    return on_cone(lam_t + p, K, D - n * sk.dot(n, D), lam_t, bound), ltw


@sk.kernel
def count_contacts(poses: AnyArray, shapes: Any, contact: Any, patches: sk.array(dtype=sk.int32, ndim=2),
                   counts: sk.array(dtype=sk.int32)):
    # a patch in contact is one constraint on each of its bodies
    i = sk.tid()
    sa, sb, ba, bb, two_way = patch_bodies(shapes, patches, i)
    up = contact.ground_normal
    Xa = shape_transform(shapes, poses, sa)
    Xb = poses.dtype(type(up)(0.0, 0.0, 0.0), sk.quat_of(type(up[0]))(0.0, 0.0, 0.0, 1.0))
    if sb >= 0:
        Xb = shape_transform(shapes, poses, sb)
    count_a, count_b = point_counts(Xa, Xb, shapes, sa, sb, two_way)
    touching = 0
    for k in range(count_a + count_b):
        depth, _pa, _pb, _n = patch_probe(Xa, Xb, shapes, sa, sb, up, k, count_a)
        if depth < 0.0:
            touching = 1
    if touching == 1:
        if ba >= 0:
            sk.atomic_add(counts, ba, 1)
        if bb >= 0:
            sk.atomic_add(counts, bb, 1)


@sk.kernel
def count_particle_contacts(q: AnyArray, particles: Any, poses: AnyArray, shapes: Any, rows: Any,
                            counts: sk.array(dtype=sk.int32)):
    # One thread per (particle, slot k of its row of body shapes).
    i, k = sk.tid()
    r = rows.world[i] + 1
    slot = rows.start[r] + k
    if slot < rows.start[r + 1]:
        s = rows.shape[slot]
        b = shapes.body[s]
        if particles.inv_mass[i] > 0.0:
            X = shape_transform(shapes, poses, s)
            dist, _n = shape_surface_distance(shapes, s, sk.transform_point(sk.transform_inverse(X), q[i]))
            if dist < particles.radius[i]:
                sk.atomic_add(counts, b, 1)


@sk.func
def patch_setup(poses: AnyArray, shapes: Any, patches: sk.array(dtype=sk.int32, ndim=2), bodies: Any,
                joint_split: sk.array(dtype=sk.int32), contact_split: sk.array(dtype=sk.int32), i: int):
    """Shapes, bodies (center of mass, rotation, inverse mass, world inverse inertia, center of
    mass in the body frame, split) and point counts of patch ``i`` at ``poses``."""
    sa, sb, ba, bb, two_way = patch_bodies(shapes, patches, i)
    xa, qa, ma, Ia, ca = load_body(poses, bodies, ba)
    xb, qb, mb, Ib, cb = load_body(poses, bodies, bb)
    wa = split_of(joint_split, contact_split, bodies, ba)
    wb = split_of(joint_split, contact_split, bodies, bb)
    count_a = 0
    count_b = 0
    if ma * wa + mb * wb > 0.0:
        count_a, count_b = point_counts(shape_pose(xa, qa, ca, shapes, sa), shape_pose(xb, qb, cb, shapes, sb),
                                        shapes, sa, sb, patches[i, 2])
    return sa, sb, ba, bb, xa, qa, ma, Ia, ca, wa, xb, qb, mb, Ib, cb, wb, count_a, count_b


@sk.kernel
def solve_contact_normals(poses: AnyArray, shapes: Any, contact: Any, patches: sk.array(dtype=sk.int32, ndim=2),
                          bodies: Any, joint_split: sk.array(dtype=sk.int32), contact_split: sk.array(dtype=sk.int32),
                          lam_n: AnyArray2d, dx: AnyArray, dtheta: AnyArray, lam_n_out: AnyArray2d):
    # One thread per patch (a shape against the ground, or two shapes against each other).
    # Every penetrating point proposes its own correction (mass split) from the same poses;
    # their sum, scaled by the factor that best removes all the penetrations (least squares,
    # at most 1), is the patch's correction: symmetric, unlike points one after the other,
    # which tilt a body resting on a face.
    i = sk.tid()
    sa, sb, ba, bb, xa, qa, ma, Ia, ca, wa, xb, qb, mb, Ib, cb, wb, count_a, count_b = patch_setup(
        poses, shapes, patches, bodies, joint_split, contact_split, i)
    up = contact.ground_normal
    Xa = shape_pose(xa, qa, ca, shapes, sa)
    Xb = shape_pose(xb, qb, cb, shapes, sb)
    count = count_a + count_b
    zero = xa * 0.0
    impulse = zero
    moment_a = zero
    moment_b = zero
    for k in range(count):
        depth, pa, pb, n = patch_probe(Xa, Xb, shapes, sa, sb, up, k, count_a)
        if depth < 0.0:
            K = point_matrix(ma, Ia, pa - xa) * wa + point_matrix(mb, Ib, pb - xb) * wb
            P = n * (-depth / sk.dot(n, K @ n))
            impulse = impulse + P
            moment_a = moment_a + sk.cross(pa - xa, P)
            moment_b = moment_b + sk.cross(pb - xb, P)
    # the split response of the bodies to the summed proposals, and the best scale of it
    move_a = impulse * (ma * wa)
    turn_a = (Ia * wa) @ moment_a
    move_b = impulse * (-mb * wb)
    turn_b = -((Ib * wb) @ moment_b)
    num = lam_n.dtype(0.0)
    den = lam_n.dtype(0.0)
    for k in range(count):
        depth, pa, pb, n = patch_probe(Xa, Xb, shapes, sa, sb, up, k, count_a)
        if depth < 0.0:
            g = sk.dot(n, (move_a + sk.cross(turn_a, pa - xa)) - (move_b + sk.cross(turn_b, pb - xb)))
            num = num - depth * g
            den = den + g * g
    scale = lam_n.dtype(0.0)
    if den > 0.0:
        scale = sk.clamp(num / den, 0.0, 1.0)
    for k in range(count):
        ln = lam_n[i, k]
        depth, pa, pb, n = patch_probe(Xa, Xb, shapes, sa, sb, up, k, count_a)
        if depth < 0.0:
            K = point_matrix(ma, Ia, pa - xa) * wa + point_matrix(mb, Ib, pb - xb) * wb
            ln = ln + scale * (-depth / sk.dot(n, K @ n))
        lam_n_out[i, k] = ln
    for k in range(count, lam_n.shape[1]):
        # points not tested now keep their multipliers (every entry is written each step)
        lam_n_out[i, k] = lam_n[i, k]
    if den > 0.0:
        if ba >= 0:
            dx[ba] += impulse * (ma * scale)
            dtheta[ba] += Ia @ moment_a * scale
        if bb >= 0:
            dx[bb] += impulse * (-mb * scale)
            dtheta[bb] += -(Ib @ moment_b) * scale


@sk.kernel
def solve_contact_friction(poses: AnyArray, poses_prev: AnyArray, shapes: Any, contact: Any,
                           patches: sk.array(dtype=sk.int32, ndim=2), bodies: Any,
                           joint_split: sk.array(dtype=sk.int32), contact_split: sk.array(dtype=sk.int32),
                           lam_n: AnyArray2d, lam_t: AnyArray, lam_tw: AnyArray, dx: AnyArray, dtheta: AnyArray,
                           lam_t_out: AnyArray, lam_tw_out: AnyArray):
    # The friction of each patch in contact this step, at the poses after every normal
    # correction of the iteration: its points weighted by their normal multipliers give its
    # center, normal and radius.
    i = sk.tid()
    sa, sb, ba, bb, xa, qa, ma, Ia, ca, wa, xb, qb, mb, Ib, cb, wb, count_a, count_b = patch_setup(
        poses, shapes, patches, bodies, joint_split, contact_split, i)
    up = contact.ground_normal
    Xa = shape_pose(xa, qa, ca, shapes, sa)
    Xb = shape_pose(xb, qb, cb, shapes, sb)
    zero = xa * 0.0
    total = lam_n.dtype(0.0)
    center_a = zero
    center_b = zero
    normal = zero
    spread = lam_n.dtype(0.0)
    for k in range(count_a + count_b):
        ln = lam_n[i, k]
        if ln > 0.0:
            _depth, pa, pb, n = patch_probe(Xa, Xb, shapes, sa, sb, up, k, count_a)
            total = total + ln
            center_a = center_a + pa * ln
            center_b = center_b + pb * ln
            normal = normal + n * ln
            spread = spread + sk.dot(pa, pa) * ln
    lt = lam_t[i]
    ltw = lam_tw[i]
    if total > 0.0:
        center_a = center_a / total
        center_b = center_b / total
        n = sk.normalize(normal)
        reach = sk.sqrt(sk.max(spread / total - sk.dot(center_a, center_a), 0.0) + PATCH_EPSILON * PATCH_EPSILON)
        ra = center_a - xa
        rb = center_b - xb
        D = ((center_a - previous_point(origin(xa, qa, ca), poses_prev, ba, center_a))
             - (center_b - previous_point(origin(xb, qb, cb), poses_prev, bb, center_b)))
        twist = sk.dot(n, spin(qa, poses_prev, ba) - spin(qb, poses_prev, bb))
        mu = shapes.mu[sa]
        if sb >= 0:
            mu = 0.5 * (mu + shapes.mu[sb])
        K = point_matrix(ma, Ia, ra) * wa + point_matrix(mb, Ib, rb) * wb
        ft, ftw = patch_friction(K, Ia * wa, Ib * wb, ra, rb, n, D, twist, mu * total, mu * total * reach, lt,
                                 ltw)
        P = ft - lt
        tw = n * (ftw - ltw)
        if ba >= 0:
            dx[ba] += P * ma
            dtheta[ba] += Ia @ (sk.cross(ra, P) + tw)
        if bb >= 0:
            dx[bb] += P * -mb
            dtheta[bb] += -(Ib @ (sk.cross(rb, P) + tw))
        lt = ft
        ltw = ftw
    lam_t_out[i] = lt
    lam_tw_out[i] = ltw


@sk.kernel
def solve_particle_contacts(q: AnyArray, q_prev: AnyArray, particles: Any, particle_split: AnyArray, poses: AnyArray,
                            poses_prev: AnyArray, shapes: Any, rows: Any, contact: Any, bodies: Any,
                            joint_split: sk.array(dtype=sk.int32), contact_split: sk.array(dtype=sk.int32),
                            lam_n: AnyArray2d, lam_t: AnyArray2d, delta: AnyArray, dx: AnyArray, dtheta: AnyArray,
                            lam_n_out: AnyArray2d, lam_t_out: AnyArray2d):
    # Particles against the shapes of bodies of their world (slot k of the particle's row
    # of body shapes), both ways: the particle's correction goes into its delta, the
    # reaction into the body's. The multipliers are indexed by (particle, slot).
    i, k = sk.tid()
    ln = lam_n[i, k]
    lt = lam_t[i, k]
    r = rows.world[i] + 1
    slot = rows.start[r] + k
    if slot < rows.start[r + 1]:
        s = rows.shape[slot]
        b = shapes.body[s]
        wp = particles.inv_mass[i]
        if wp > 0.0:
            x = q[i]
            X = shape_transform(shapes, poses, s)
            dist, n_local = shape_surface_distance(shapes, s, sk.transform_point(sk.transform_inverse(X), x))
            depth = dist - particles.radius[i]
            if depth < 0.0:
                n = sk.quat_rotate(X.q, n_local)
                pb = x - n * dist
                xb, _qb, mb, Ib, _cb = load_body(poses, bodies, b)
                rb = pb - xb
                K = (sk.identity(3, particle_split.dtype) * (wp * particle_split[i])
                     + point_matrix(mb, Ib, rb) * split_of(joint_split, contact_split, bodies, b))
                D = (x - q_prev[i]) - (pb - previous_point(poses[b], poses_prev, b, pb))
                dln = -depth / sk.dot(n, K @ n)
                ln = ln + dln
                ft = friction_multiplier(K, n, D - n * sk.dot(n, D), ln, lt, contact.mu[0])
                P = n * dln + ft - lt
                lt = ft
                delta[i] += P * wp
                dx[b] += P * -mb
                dtheta[b] += -(Ib @ sk.cross(rb, P))
    lam_n_out[i, k] = ln
    lam_t_out[i, k] = lt


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    transforms, vec3s, reals = sk.array(dtype=S.transform), sk.array(dtype=S.vec3), sk.array(dtype=real)
    return {"poses": transforms, "poses_prev": transforms, "shapes": S.Shapes, "contact": S.Contact, "bodies": S.Bodies,
            "particles": S.Particles, "rows": S.ParticleShapes, "q": vec3s, "q_prev": vec3s, "delta": vec3s,
            "dx": vec3s, "dtheta": vec3s, "particle_split": reals, "lam_tw": reals, "lam_tw_out": reals,
            "lam_n": sk.array(dtype=real, ndim=2), "lam_n_out": sk.array(dtype=real, ndim=2),
            # a patch has one tangential multiplier, a particle one per shape slot
            "lam_t": vec3s, "lam_t_out": vec3s, "solve_particle_contacts.lam_t": sk.array(dtype=S.vec3, ndim=2),
            "solve_particle_contacts.lam_t_out": sk.array(dtype=S.vec3, ndim=2)}


@functools.cache  # asked for on every launch: a lookup
def xpbd_body_contact_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)
