"""Penalty contact of rigid bodies: body shapes against the ground plane and against each
other (static shapes included), with Coulomb friction that sticks (docs/contact.md).

Contact points (see :mod:`simkit.kernels.shapes`): a sphere is its center, a box its 8
corners and 12 edge midpoints (slightly rounded), a capsule its segment ends plus,
against another shape, the point of its segment nearest to that shape's center, a
cylinder 6 points of its rims (the deepest of each and two more) and a point of its
axis; each point has a radius. A point touches a surface when it comes within its radius of it, at
depth ``d = distance - radius < 0``.

- Ground: one thread per (shape, point) of every body shape, for the points that matter
  against a plane (a box's corners, a capsule's ends); the normal is the ground's.
- Pairs: one thread per pair of :func:`~simkit.kernels.shapes.collision_pairs`. A pair
  whose two shapes' bounding spheres are apart (the broad phase) stops there; otherwise
  each point ``k`` of shape ``a`` (loops of constant trip count up to ``MAX_SHAPE_POINTS``,
  unrolled, skipping ``k`` past ``a``'s point count) is tested against the signed distance
  of shape ``b``, whose outward normal is the contact normal, and the pair adds its summed
  wrenches once per body. (One thread per (pair, point) ran the broad phase once per
  point; with 100 boxes, 9,900 candidate pairs, that made the pair kernel 4x slower
  forward and backward.)

The force on ``a``'s side is :func:`~simkit.kernels.contact.sticking_penalty_force` of the
depth, of the velocity of ``a``'s material point relative to ``b``'s at the contact point
(midway between the two surfaces) and of the point's stretch from its anchor, with the
average of the two shapes' ``ke, kd, kf, mu`` (against the ground, the shape's own). It is
applied there to ``a``'s body and exactly opposite to ``b``'s (static shapes and the ground
take nothing), so contact conserves momentum.

Sticking: every contact slot (ground: ``s * MAX_PLANE_POINTS + k``; pair ``i``: after the
ground's, ``i * MAX_SHAPE_POINTS + k``) keeps, in the State, whether it touches
(``contact_stuck``), its anchor on the surface (``contact_anchor``: world for the ground,
else in ``b``'s shape frame) and the touching material point (``contact_point``, in ``a``'s
shape frame). The tangential force is a spring-damper from that material point to the
anchor, ``-k e_t - f v_t``, clamped to ``mu f_n``; beyond it the anchor is dragged to where
the spring pulls ``mu f_n``. A step reads the slots of ``state_in`` and writes those of
``state_out`` (cleared first: a contact that opens forgets its anchor). No loop runs over a
dynamic count: every launch is the same size each step, and the whole step, anchors
included, is differentiable through the Tape (the switches pass the gradient of the active
branch).

Gains per unit mass (the builder's default; :func:`~simkit.kernels.contact.contact_gains`):
each contact point adds ``m / tc^2``, ``2 zeta m / tc`` and ``m / tc`` to ``ke``, ``kd``,
``kf`` (``ke`` is the stiffness of the tangential spring too, ``kf`` its damper), with ``m`` the effective mass of the point along the normal, ``1 / (w_a + w_b)``,
``w = 1/m_body + (r x n) . I_w^-1 (r x n)`` for each moving side (a cube's four bottom
corners get a quarter of its mass each, so flat on the ground it sinks ``g tc^2``, like a
particle). Boxes of 0.01 to 100 kg, alone or stacked three high, are then stable at
``dt = 1e-3`` s with the default ``tc = 0.01`` s and come to rest without bouncing.

Fixed gains: with ``n`` points in contact on a body of mass ``m`` (a box flat on the
ground: its 4 corners; on another box: 4 corners and 4 edge midpoints each way),
semi-implicit Euler needs ``dt * sqrt(n ke / m) < 1`` and ``n kd dt / m < 1``; the
tangential damper ``kf`` likewise, or resting friction chatters. ``ke/kd/kf`` = 1e5 / 1e2 /
1e2 keep boxes of 0.1 to 10 kg stable at ``dt = 1e-4`` s, and from 1 kg on up to
``dt = 1e-3`` s; a 10 kg box dropped flat rebounds with a restitution of about 0.74 (1 kg:
0.42, 0.1 kg: 0.10), and a box resting on a slope within its friction angle holds, offset by
``m g sin(slope) / (n ke)`` on its tangential springs.

Example (through :func:`simkit.sim.forces.eval_body_contact_forces`, which runs these)::

    state.clear_forces()
    eval_body_contact_forces(model, state, next_state)
    state.body_f.numpy()        # (torque about the COM, force) of each body
    next_state.contact_stuck.numpy()   # 1 for each contact point that touches
"""

# No ``from __future__ import annotations``: kernel annotations name closure types.
import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from ..core.launch import launch
from .bodies import point_inverse_mass, point_velocity, wrench_at
from .contact import sticking_penalty_force
from .broad_phase_options import broad_phase_capacity, broad_phase_mode
from .contact_params import ground_collides
from .shapes import (MAX_PLANE_POINTS, MAX_SHAPE_POINTS, collision_pairs, pair_point_count, plane_toward,
                     shape_bounding_radius, shape_pair_toward, shape_plane_point_count, shape_surface_distance,
                     shape_surface_point, shape_transform)
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def open_contacts(flags: Any):
    # Every contact starts the step open; the contact kernels mark those that touch and
    # write their anchors. An open slot's anchors are never read, so they are left as they
    # are: clearing them cost 2.5x the bench step (9,900 pairs x 20 slots of 2 vec3).
    flags[sk.tid()] = 0


@sk.kernel
def ground_contact(body_q: AnyArray, body_qd: AnyArray, bodies: Any, shapes: Any, contact: Any,
                   stuck_in: sk.array(dtype=sk.int32), anchor_in: AnyArray, point_in: AnyArray, body_f: AnyArray,
                   stuck_out: sk.array(dtype=sk.int32), anchor_out: AnyArray, point_out: AnyArray):
    s, k = sk.tid()
    b = shapes.body[s]
    kind = shapes.kind[s]
    if b < 0 or k >= shape_plane_point_count(kind) or ground_collides(shapes, contact, s) == 0:
        return
    X = sk.transform_multiply(body_q[b], shapes.xform[s])
    n = contact.ground_normal
    p_local, radius = shape_surface_point(shapes, s, k, plane_toward(X, n))
    p = sk.transform_point(X, p_local)
    depth = sk.dot(n, p) - radius
    if depth < 0.0:
        slot = s * MAX_PLANE_POINTS + k
        Xb = body_q[b]
        com = bodies.com[b]
        c = p - n * (radius + 0.5 * depth)
        v = point_velocity(Xb, body_qd[b], com, c)
        e = c * 0.0
        if stuck_in[slot] != 0:  # the material point that stuck, from its anchor (a world point)
            e = sk.transform_point(X, point_in[slot]) - anchor_in[slot]
        fc, e = sticking_penalty_force(n, depth, v, e,
                                       point_inverse_mass(Xb, bodies, b, c, n), shapes.ke[s], shapes.kd[s],
                                       shapes.kf[s], shapes.time_constant[s], shapes.damping_ratio[s], shapes.mu[s])
        body_f[b] += wrench_at(Xb, com, c, fc)
        stuck_out[slot] = 1
        anchor_out[slot] = c - e
        point_out[slot] = sk.transform_point(sk.transform_inverse(X), c)


@sk.func
def point_wrenches(k: int, shapes: Any, a: int, Xa: Any, toward: Any, b: int, Xb: Any,
                   Xb_inv: Any, Xa_inv: Any, body_a: int, body_b: int, body_q: AnyArray, body_qd: AnyArray,
                   bodies: Any, ke: Any, kd: Any, kf: Any, tc: Any, zeta: Any, mu: Any, slot: int, slot_in: int,
                   stuck_in: sk.array(dtype=sk.int32), anchor_in: AnyArray, point_in: AnyArray,
                   stuck_out: sk.array(dtype=sk.int32), anchor_out: AnyArray, point_out: AnyArray):
    """The wrenches on the bodies of shapes ``a`` and ``b`` from contact point ``k`` of ``a``
    against the surface of ``b`` (zero when it does not touch); a touching point keeps its
    anchor (in ``b``'s frame ``Xb``) in ``slot`` of ``anchor_out``, and reads the one it had
    from ``slot_in`` of ``anchor_in`` (-1: it had none)."""
    p_local, radius = shape_surface_point(shapes, a, k, toward)
    p = sk.transform_point(Xa, p_local)
    dist, n_local = shape_surface_distance(shapes, b, sk.transform_point(Xb_inv, p))
    depth = dist - radius
    wa = sk.vector(6, type(ke))(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    wb = wa
    if depth < 0.0:
        n = sk.quat_rotate(Xb.q, n_local)
        c = p - n * (radius + 0.5 * depth)
        v = c * 0.0
        inv_mass = type(ke)(0.0)
        if body_a >= 0:
            v = point_velocity(body_q[body_a], body_qd[body_a], bodies.com[body_a], c)
            inv_mass = point_inverse_mass(body_q[body_a], bodies, body_a, c, n)
        if body_b >= 0:
            v = v - point_velocity(body_q[body_b], body_qd[body_b], bodies.com[body_b], c)
            inv_mass = inv_mass + point_inverse_mass(body_q[body_b], bodies, body_b, c, n)
        e = c * 0.0
        if slot_in >= 0:
            if stuck_in[slot_in] != 0:  # the material point of a that stuck, from its anchor on b
                e = sk.transform_point(Xa, point_in[slot_in]) - sk.transform_point(Xb, anchor_in[slot_in])
        fc, e = sticking_penalty_force(n, depth, v, e, inv_mass, ke, kd, kf, tc, zeta, mu)
        stuck_out[slot] = 1
        anchor_out[slot] = sk.transform_point(Xb_inv, c - e)
        point_out[slot] = sk.transform_point(Xa_inv, c)
        if body_a >= 0:
            wa = wrench_at(body_q[body_a], bodies.com[body_a], c, fc)
        if body_b >= 0:
            wb = wrench_at(body_q[body_b], bodies.com[body_b], c, -fc)
    return wa, wb


@sk.func
def pair_wrenches(a: int, b: int, body_q: AnyArray, body_qd: AnyArray, bodies: Any, shapes: Any, first: int,
                  first_in: int, stuck_in: sk.array(dtype=sk.int32), anchor_in: AnyArray, point_in: AnyArray,
                  stuck_out: sk.array(dtype=sk.int32), anchor_out: AnyArray, point_out: AnyArray):
    """The summed wrenches on the bodies of shapes ``a`` and ``b`` from every point of ``a``
    against the surface of ``b`` (point ``k``'s anchor in slot ``first + k``, read from slot
    ``first_in + k``: the pair's slots in the list of the step that wrote ``anchor_in``, or -1
    when it was not in that list). Two loops of
    constant trip count (each within the unroll limit): the first 8 points, then the rest
    (a box's edge midpoints)."""
    Xa = shape_transform(shapes, body_q, a)
    Xb = shape_transform(shapes, body_q, b)
    Xb_inv = sk.transform_inverse(Xb)
    Xa_inv = sk.transform_inverse(Xa)
    toward = shape_pair_toward(shapes, a, b, Xa, Xa_inv, Xb, Xb_inv)
    body_a = shapes.body[a]
    body_b = shapes.body[b]
    ke = 0.5 * (shapes.ke[a] + shapes.ke[b])
    kd = 0.5 * (shapes.kd[a] + shapes.kd[b])
    kf = 0.5 * (shapes.kf[a] + shapes.kf[b])
    tc = 0.5 * (shapes.time_constant[a] + shapes.time_constant[b])
    zeta = 0.5 * (shapes.damping_ratio[a] + shapes.damping_ratio[b])
    mu = 0.5 * (shapes.mu[a] + shapes.mu[b])
    count = pair_point_count(shapes.kind[a], shapes.kind[b])
    read = first_in
    if first_in < 0:
        read = -MAX_SHAPE_POINTS  # read + k stays negative for every point
    fa = sk.vector(6, type(ke))(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    fb = fa
    for k in range(8):
        if k < count:
            wa, wb = point_wrenches(k, shapes, a, Xa, toward, b, Xb, Xb_inv, Xa_inv,
                                    body_a, body_b, body_q, body_qd, bodies, ke, kd, kf, tc, zeta, mu, first + k,
                                    read + k, stuck_in, anchor_in, point_in, stuck_out, anchor_out, point_out)
            fa = fa + wa
            fb = fb + wb
    for k in range(8, MAX_SHAPE_POINTS):
        if k < count:
            wa, wb = point_wrenches(k, shapes, a, Xa, toward, b, Xb, Xb_inv, Xa_inv,
                                    body_a, body_b, body_q, body_qd, bodies, ke, kd, kf, tc, zeta, mu, first + k,
                                    read + k, stuck_in, anchor_in, point_in, stuck_out, anchor_out, point_out)
            fa = fa + wa
            fb = fb + wb
    return fa, fb


@sk.func
def apart(body_q: AnyArray, body_a: int, pa: Any, body_b: int, pb: Any, reach: Any) -> int:
    """1 when the shape origins ``pa`` (in the frame of ``body_a``, the world when -1) and
    ``pb`` are farther apart than ``reach``: the broad phase."""
    if body_a >= 0:
        pa = sk.transform_point(body_q[body_a], pa)
    if body_b >= 0:
        pb = sk.transform_point(body_q[body_b], pb)
    result = 0
    if sk.length(pa - pb) > reach:
        result = 1
    return result


@sk.func_grad(apart)
def apart_grad(body_q: AnyArray, body_a: int, pa: Any, body_b: int, pb: Any, reach: Any, adj_ret: int):
    # A yes/no answer has no derivative: nothing flows back, and a rejected pair adds
    # nothing (not even zeros, atomically) to the gradient of body_q.
    return 0, pa * 0.0, 0, pb * 0.0, reach * 0.0


@sk.func
def add_pair_contact(a: int, b: int, first: int, first_in: int, body_q: AnyArray, body_qd: AnyArray, bodies: Any,
                     shapes: Any, stuck_in: sk.array(dtype=sk.int32), anchor_in: AnyArray, point_in: AnyArray,
                     body_f: AnyArray, stuck_out: sk.array(dtype=sk.int32), anchor_out: AnyArray,
                     point_out: AnyArray):
    """The contact of shapes ``a`` and ``b`` added into ``body_f``: first the broad phase of
    the pair (their bounding spheres), then every point of ``a`` in ``pair_wrenches`` (a
    separate function, so that a rejected pair does not set up its many locals), the anchors
    in the slots from ``first``, read from those from ``first_in`` (-1: none)."""
    reach = shape_bounding_radius(shapes.kind[a], shapes.params[a]) + shape_bounding_radius(shapes.kind[b],
                                                                                            shapes.params[b])
    if apart(body_q, shapes.body[a], shapes.xform[a].p, shapes.body[b], shapes.xform[b].p, reach) == 1:
        return
    fa, fb = pair_wrenches(a, b, body_q, body_qd, bodies, shapes, first, first_in, stuck_in, anchor_in, point_in,
                           stuck_out, anchor_out, point_out)
    body_a = shapes.body[a]
    body_b = shapes.body[b]
    if body_a >= 0:
        body_f[body_a] += fa
    if body_b >= 0:
        body_f[body_b] += fb


@sk.kernel
def pair_contact(pairs: sk.array(dtype=sk.int32, ndim=2), body_q: AnyArray, body_qd: AnyArray, bodies: Any, shapes: Any,
                 offset: int, stuck_in: sk.array(dtype=sk.int32), anchor_in: AnyArray, point_in: AnyArray,
                 body_f: AnyArray, stuck_out: sk.array(dtype=sk.int32), anchor_out: AnyArray, point_out: AnyArray):
    # one thread per pair of the static list, its anchors in the pair's own slots
    i = sk.tid()
    first = offset + i * MAX_SHAPE_POINTS
    add_pair_contact(pairs[i, 0], pairs[i, 1], first, first, body_q, body_qd, bodies, shapes, stuck_in, anchor_in,
                     point_in, body_f, stuck_out, anchor_out, point_out)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    spatials = sk.array(dtype=S.spatial)
    return {"body_q": sk.array(dtype=S.transform), "body_qd": spatials, "body_f": spatials, "bodies": S.Bodies,
            "shapes": S.Shapes, "contact": S.Contact, "flags": sk.array(dtype=sk.int32),
            "anchor_in": sk.array(dtype=S.vec3), "anchor_out": sk.array(dtype=S.vec3),
            "point_in": sk.array(dtype=S.vec3), "point_out": sk.array(dtype=S.vec3)}


@functools.cache  # asked for on every launch: a lookup
def body_contact_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)


def contact_slot_count(model) -> int:
    """How many contacts of ``model``'s penalty body contact can stick at once: one slot per
    (shape, plane point) against the ground, then one per (pair, point of its shape ``a``)
    of :func:`~simkit.kernels.shapes.collision_pairs`, or with the per-step broad phase one
    per (row of its pair list, point); the length of ``State.contact_anchor``.

    Example::

        contact_slot_count(model)   # 8 for a lone box above the ground
    """
    if not model.shape_count or not model.body_count:
        return 0
    pairs = broad_phase_capacity(model) if broad_phase_mode(model) == "sweep" else collision_pairs(model).shape[0]
    return model.shape_count * MAX_PLANE_POINTS + pairs * MAX_SHAPE_POINTS


def open_body_contacts(model, state_in, state_out) -> tuple | None:
    """The first part of the body contact (:func:`simkit.sim.forces.eval_body_contact_forces`):
    check the states' contact slots, open ``state_out``'s, and add the ground's wrenches at
    ``state_in`` into ``state_in.body_f``. Returns the stick fields ``(held, out)`` of the two
    states for the pairs' contact, or None when the model has no body contact.

    Example::

        held, out = open_body_contacts(model, state_in, state_out)
    """
    if not model.shape_count or not model.body_count or not model.contacts_enabled:
        return None
    slots = contact_slot_count(model)
    for name, s in (("state_in", state_in), ("state_out", state_out)):
        if s.contact_anchor.shape[0] != slots:
            raise ValueError(f"eval_body_contact_forces: {name}.contact_anchor holds {s.contact_anchor.shape[0]} "
                             f"contacts, the model has {slots} (make states with model.state())")
    k = body_contact_kernels(model.dtype)
    launch(k.open_contacts, slots, inputs=[state_out.contact_stuck])
    held = [state_in.contact_stuck, state_in.contact_anchor, state_in.contact_point]
    out = [state_out.contact_stuck, state_out.contact_anchor, state_out.contact_point]
    if model.ground:
        launch(k.ground_contact, (model.shape_count, MAX_PLANE_POINTS),
               inputs=[state_in.body_q, state_in.body_qd, model.bodies, model.shapes, model.contact, *held,
                       state_in.body_f, *out])
    return held, out


def eval_static_pair_contact(model, state_in, held: list, out: list) -> None:
    """The shape pairs' wrenches at ``state_in`` over the static list (:func:`collision_pairs`),
    into ``state_in.body_f``; ``held`` and ``out`` from :func:`open_body_contacts`.

    Example::

        eval_static_pair_contact(model, state_in, held, out)
    """
    pairs = collision_pairs(model)
    if pairs.shape[0]:
        launch(body_contact_kernels(model.dtype).pair_contact, pairs.shape[0],
               inputs=[pairs, state_in.body_q, state_in.body_qd, model.bodies, model.shapes,
                       model.shape_count * MAX_PLANE_POINTS, *held, state_in.body_f, *out])
