"""Contact rows for the constraint solve of :class:`simkit.sim.Featherstone`: the narrow
phase, written into fixed-size slot arrays (every launch the same size each step).

A slot is one contact point: ``(shape, point)`` against the ground (slot ``s *
MAX_PLANE_POINTS + k``), then ``(pair, point)`` of :func:`~simkit.kernels.shapes.collision_pairs`
(slot ``ground_slots + i * MAX_SHAPE_POINTS + k``). The points are those of the penalty
kernels (:func:`~simkit.kernels.shapes.shape_point`). Each slot gets the two bodies (``b``
is -1 against the ground or a static shape), the world contact point (midway between the
two surfaces), the normal (pointing from ``b``'s surface towards ``a``), the signed
distance (negative: penetration), and the pair's contact parameters mixed by MuJoCo's rules
(:mod:`simkit.kernels.contact_params`: sliding friction, condim, solref, solimp, margin).
Shapes whose collision masks (``contype`` / ``conaffinity``) exclude each other, or the
ground, give no rows. A slot is active when its distance is below the pair's margin.

Example::

    k = contact_row_kernels(sk.float64)
    sk.launch(k.ground_rows, model.shape_count, inputs=[...], outputs=[...])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .body_contact import apart
from .contact_params import ground_collides, masks_collide, pair_params
from .shapes import (MAX_PLANE_POINTS, MAX_SHAPE_POINTS, pair_point_count, plane_toward, shape_bounding_radius,
                     shape_pair_toward, shape_plane_point_count, shape_surface_distance, shape_surface_point,
                     shape_transform, surface_only)
from .structs import SHAPE_BOX, SHAPE_CAPSULE, model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints = sk.array(dtype=sk.int32)


@sk.func
def write_params(slot: int, shapes: Any, contact: Any, a: int, b: int, slot_mu: AnyArray, slot_condim: ints,
                 slot_solref: AnyArray, slot_solimp: AnyArray, slot_margin: AnyArray):
    """The mixed contact parameters of shape ``a`` against ``b`` (-1: the ground) into ``slot``."""
    friction, condim, solref, solimp, margin, gap = pair_params(shapes, contact, a, b)
    slot_mu[slot] = friction[0]
    slot_condim[slot] = condim
    slot_solref[slot] = solref
    slot_solimp[slot] = solimp
    slot_margin[slot] = margin


@sk.func
def true_corner(p_local: Any, radius: Any):
    """The true corner of a box's rounded corner point ``p_local`` (radius ``radius``), radius 0:
    against a plane the contact point, and so the lever arm of its force, is where MuJoCo puts
    it (the penalty kernels keep the rounding)."""
    corner = p_local * 1.0
    for axis in range(3):
        corner[axis] = p_local[axis] + sk.sign(p_local[axis]) * radius
    return corner, radius * 0.0


@sk.kernel
def ground_rows(body_q: AnyArray, shapes: Any, contact: Any, slot_body: ints, slot_point: AnyArray,
                slot_normal: AnyArray, slot_dist: AnyArray, slot_mu: AnyArray, slot_condim: ints,
                slot_solref: AnyArray, slot_solimp: AnyArray, slot_margin: AnyArray, slot_active: ints,
                slot_tangent: AnyArray):
    # one thread per shape, its points against the plane in turn (its pose once for all)
    s = sk.tid()
    for k in range(MAX_PLANE_POINTS):
        slot_active[s * MAX_PLANE_POINTS + k] = 0
    b = shapes.body[s]
    kind = shapes.kind[s]
    if b < 0 or ground_collides(shapes, contact, s) == 0:
        return
    margin = shapes.margin[s] + contact.ground_margin[0]
    size = shapes.params[s]
    n = contact.ground_normal
    if sk.dot(n, sk.transform_point(body_q[b], shapes.xform[s].p)) - shape_bounding_radius(kind, size) > margin:
        # the shape's bounding sphere is clear of the ground by more than the margin, so is
        # every point of it: no row (most shapes of a walking robot, at the cost of one point)
        return
    X = sk.transform_multiply(body_q[b], shapes.xform[s])
    toward = plane_toward(X, n)
    for k in range(shape_plane_point_count(kind)):
        slot = s * MAX_PLANE_POINTS + k
        p_local, radius = shape_surface_point(shapes, s, k, toward)
        if kind == SHAPE_BOX:
            p_local, radius = true_corner(p_local, radius)
        p = sk.transform_point(X, p_local)
        dist = sk.dot(n, p) - radius
        if dist < margin:
            slot_active[slot] = 1
            slot_body[2 * slot] = b
            slot_body[2 * slot + 1] = -1
            slot_point[slot] = p - n * (radius + 0.5 * dist)
            slot_normal[slot] = n
            slot_dist[slot] = dist
            write_params(slot, shapes, contact, s, -1, slot_mu, slot_condim, slot_solref, slot_solimp, slot_margin)
            t = n * 0.0
            if kind == SHAPE_CAPSULE:
                # MuJoCo frames a capsule's contact on a plane by the capsule's axis in the plane
                # (x when the capsule stands on its end): with the pyramidal cone, the friction
                # rows' directions
                axis = sk.quat_rotate(X.q, type(n)(0.0, 1.0, 0.0))
                t = axis - n * sk.dot(n, axis)
                if sk.dot(t, t) > 1.0e-30:
                    t = t / sk.sqrt(sk.dot(t, t))
                else:
                    t = type(n)(1.0, 0.0, 0.0)
            slot_tangent[slot] = t


@sk.kernel
def pair_rows(pairs: sk.array(dtype=sk.int32, ndim=2), body_q: AnyArray, shapes: Any, contact: Any, first: int,
              slot_body: ints, slot_point: AnyArray, slot_normal: AnyArray, slot_dist: AnyArray, slot_mu: AnyArray,
              slot_condim: ints, slot_solref: AnyArray, slot_solimp: AnyArray, slot_margin: AnyArray,
              slot_active: ints):
    i, k = sk.tid()
    slot = first + i * MAX_SHAPE_POINTS + k
    slot_active[slot] = 0
    a = pairs[i, 0]
    b = pairs[i, 1]
    kind_a = shapes.kind[a]
    if k >= pair_point_count(kind_a, shapes.kind[b]):
        return
    if masks_collide(shapes.contype[a], shapes.conaffinity[a], shapes.contype[b], shapes.conaffinity[b]) == 0:
        return
    margin = shapes.margin[a] + shapes.margin[b]
    reach = shape_bounding_radius(kind_a, shapes.params[a]) + shape_bounding_radius(shapes.kind[b],
                                                                                    shapes.params[b]) + margin
    if apart(body_q, shapes.body[a], shapes.xform[a].p, shapes.body[b], shapes.xform[b].p, reach) == 1:
        return
    Xa = shape_transform(shapes, body_q, a)
    Xb = shape_transform(shapes, body_q, b)
    Xb_inv = sk.transform_inverse(Xb)
    toward = shape_pair_toward(shapes, a, b, Xa, sk.transform_inverse(Xa), Xb, Xb_inv)
    p_local, radius = shape_surface_point(shapes, a, k, toward)
    if kind_a == SHAPE_BOX and surface_only(shapes.kind[b]) == 1:
        p_local, radius = true_corner(p_local, radius)
    p = sk.transform_point(Xa, p_local)
    d, n_local = shape_surface_distance(shapes, b, sk.transform_point(Xb_inv, p))
    dist = d - radius
    if dist < margin:
        n = sk.quat_rotate(Xb.q, n_local)
        slot_active[slot] = 1
        slot_body[2 * slot] = shapes.body[a]
        slot_body[2 * slot + 1] = shapes.body[b]
        slot_point[slot] = p - n * (radius + 0.5 * dist)
        slot_normal[slot] = n
        slot_dist[slot] = dist
        write_params(slot, shapes, contact, a, b, slot_mu, slot_condim, slot_solref, slot_solimp, slot_margin)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s, reals = sk.array(dtype=S.vec3), sk.array(dtype=real)
    return {"body_q": sk.array(dtype=S.transform), "shapes": S.Shapes, "contact": S.Contact,
            "slot_point": vec3s, "slot_normal": vec3s, "slot_tangent": vec3s, "slot_dist": reals, "slot_mu": reals, "slot_margin": reals,
            "slot_solref": sk.array(dtype=S.vec2), "slot_solimp": sk.array(dtype=S.vec5)}


@functools.cache  # asked for on every launch: a lookup
def contact_row_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together).

    Example::

        k = contact_row_kernels(sk.float32)
        k.ground_rows, k.pair_rows
    """
    return sk.instantiate(real, __name__)
