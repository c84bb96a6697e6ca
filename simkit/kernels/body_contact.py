"""Penalty contact of rigid bodies: body shapes against the ground plane and against each
other (static shapes included), with regularised Coulomb friction.

Contact points (see :mod:`simkit.kernels.shapes`): a sphere is its center, a box its 8
corners and 12 edge midpoints (slightly rounded), a capsule its segment ends plus,
against another shape, the point of its segment nearest to that shape's center; each
point has a radius. A point touches a surface when it comes within its radius of it, at
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

The force on ``a``'s side is :func:`~simkit.kernels.contact.penalty_force` of the depth and
of the velocity of ``a``'s material point relative to ``b``'s at the contact point (midway
between the two surfaces), with the average of the two shapes' ``ke, kd, kf, mu`` (against
the ground, the shape's own). It is applied there to ``a``'s body and exactly opposite to
``b``'s (static shapes and the ground take nothing), so contact conserves momentum. No
loop runs over a dynamic count: every launch is the same size each step, and the whole
step is differentiable through the Tape (the switches pass the gradient of the active
branch).

Gains per unit mass (the builder's default; :func:`~simkit.kernels.contact.scaled_penalty_force`):
each contact point adds ``m / tc^2``, ``2 zeta m / tc`` and ``m / tc`` to ``ke``, ``kd``,
``kf``, with ``m`` the effective mass of the point along the normal, ``1 / (w_a + w_b)``,
``w = 1/m_body + (r x n) . I_w^-1 (r x n)`` for each moving side (a cube's four bottom
corners get a quarter of its mass each, so flat on the ground it sinks ``g tc^2``, like a
particle). Boxes of 0.01 to 100 kg, alone or stacked three high, are then stable at
``dt = 1e-3`` s with the default ``tc = 0.01`` s and come to rest without bouncing.

Fixed gains: with ``n`` points in contact on a body of mass ``m`` (a box flat on the
ground: its 4 corners; on another box: 4 corners and 4 edge midpoints each way),
semi-implicit Euler needs ``dt * sqrt(n ke / m) < 1`` and ``n kd dt / m < 1``; the friction
slope ``kf`` likewise, or resting friction chatters. ``ke/kd/kf`` = 1e5 / 1e2 / 1e2 keep
boxes of 0.1 to 10 kg stable at ``dt = 1e-4`` s, and from 1 kg on up to ``dt = 1e-3`` s; a
10 kg box dropped flat rebounds with a restitution of about 0.74 (1 kg: 0.42, 0.1 kg:
0.10), and a resting friction contact creeps at ``m g sin(slope) / (n kf)``.

Example::

    state.clear_forces()
    eval_body_contact_forces(model, state)
    state.body_f.numpy()        # (torque about the COM, force) of each body
"""

# No ``from __future__ import annotations``: kernel annotations name closure types.
import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from ..core.launch import launch
from .bodies import point_inverse_mass, point_velocity, wrench_at
from .contact import scaled_penalty_force
from .contact_params import ground_collides
from .shapes import (MAX_PLANE_POINTS, MAX_SHAPE_POINTS, collision_pairs, shape_bounding_radius, shape_distance,
                     shape_plane_point_count, shape_point, shape_point_count, shape_transform)
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def ground_contact(body_q: AnyArray, body_qd: AnyArray, bodies: Any, shapes: Any, contact: Any, body_f: AnyArray):
    s, k = sk.tid()
    b = shapes.body[s]
    kind = shapes.kind[s]
    if b < 0 or k >= shape_plane_point_count(kind) or ground_collides(shapes, contact, s) == 0:
        return
    X = sk.transform_multiply(body_q[b], shapes.xform[s])
    size = shapes.params[s]
    p_local, radius = shape_point(kind, size, k, size * 0.0)
    p = sk.transform_point(X, p_local)
    n = contact.ground_normal
    depth = sk.dot(n, p) - radius
    if depth < 0.0:
        Xb = body_q[b]
        com = bodies.com[b]
        c = p - n * (radius + 0.5 * depth)
        v = point_velocity(Xb, body_qd[b], com, c)
        fc = scaled_penalty_force(n, depth, v, point_inverse_mass(Xb, bodies, b, c, n), shapes.ke[s],
                                  shapes.kd[s], shapes.kf[s], shapes.time_constant[s], shapes.damping_ratio[s],
                                  shapes.mu[s])
        body_f[b] += wrench_at(Xb, com, c, fc)


@sk.func
def point_wrenches(k: int, kind_a: int, size_a: Any, Xa: Any, toward: Any, kind_b: int, size_b: Any, Xb: Any,
                   Xb_inv: Any, body_a: int, body_b: int, body_q: AnyArray, body_qd: AnyArray, bodies: Any, ke: Any,
                   kd: Any, kf: Any, tc: Any, zeta: Any, mu: Any):
    """The wrenches on the bodies of shapes ``a`` and ``b`` from contact point ``k`` of ``a``
    against the surface of ``b`` (zero when it does not touch)."""
    p_local, radius = shape_point(kind_a, size_a, k, toward)
    p = sk.transform_point(Xa, p_local)
    dist, n_local = shape_distance(kind_b, sk.transform_point(Xb_inv, p), size_b)
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
        fc = scaled_penalty_force(n, depth, v, inv_mass, ke, kd, kf, tc, zeta, mu)
        if body_a >= 0:
            wa = wrench_at(body_q[body_a], bodies.com[body_a], c, fc)
        if body_b >= 0:
            wb = wrench_at(body_q[body_b], bodies.com[body_b], c, -fc)
    return wa, wb


@sk.func
def pair_wrenches(a: int, b: int, body_q: AnyArray, body_qd: AnyArray, bodies: Any, shapes: Any):
    """The summed wrenches on the bodies of shapes ``a`` and ``b`` from every point of ``a``
    against the surface of ``b``. Two loops of constant trip count (each within the unroll
    limit): the first 8 points, then the rest (a box's edge midpoints)."""
    kind_a = shapes.kind[a]
    kind_b = shapes.kind[b]
    size_a = shapes.params[a]
    size_b = shapes.params[b]
    Xa = shape_transform(shapes, body_q, a)
    Xb = shape_transform(shapes, body_q, b)
    Xb_inv = sk.transform_inverse(Xb)
    toward = sk.transform_point(sk.transform_inverse(Xa), Xb.p)
    body_a = shapes.body[a]
    body_b = shapes.body[b]
    ke = 0.5 * (shapes.ke[a] + shapes.ke[b])
    kd = 0.5 * (shapes.kd[a] + shapes.kd[b])
    kf = 0.5 * (shapes.kf[a] + shapes.kf[b])
    tc = 0.5 * (shapes.time_constant[a] + shapes.time_constant[b])
    zeta = 0.5 * (shapes.damping_ratio[a] + shapes.damping_ratio[b])
    mu = 0.5 * (shapes.mu[a] + shapes.mu[b])
    count = shape_point_count(kind_a)
    fa = sk.vector(6, type(ke))(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    fb = fa
    for k in range(8):
        if k < count:
            wa, wb = point_wrenches(k, kind_a, size_a, Xa, toward, kind_b, size_b, Xb, Xb_inv, body_a, body_b,
                                    body_q, body_qd, bodies, ke, kd, kf, tc, zeta, mu)
            fa = fa + wa
            fb = fb + wb
    for k in range(8, MAX_SHAPE_POINTS):
        if k < count:
            wa, wb = point_wrenches(k, kind_a, size_a, Xa, toward, kind_b, size_b, Xb, Xb_inv, body_a, body_b,
                                    body_q, body_qd, bodies, ke, kd, kf, tc, zeta, mu)
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


@sk.kernel
def pair_contact(pairs: sk.array(dtype=sk.int32, ndim=2), body_q: AnyArray, body_qd: AnyArray, bodies: Any, shapes: Any,
                 body_f: AnyArray):
    # One thread per pair: the broad phase, then every point of a in pair_wrenches (a
    # separate function, so that a rejected pair does not set up its many locals).
    i = sk.tid()
    a = pairs[i, 0]
    b = pairs[i, 1]
    reach = shape_bounding_radius(shapes.kind[a], shapes.params[a]) + shape_bounding_radius(shapes.kind[b],
                                                                                            shapes.params[b])
    if apart(body_q, shapes.body[a], shapes.xform[a].p, shapes.body[b], shapes.xform[b].p, reach) == 1:
        return
    fa, fb = pair_wrenches(a, b, body_q, body_qd, bodies, shapes)
    body_a = shapes.body[a]
    body_b = shapes.body[b]
    if body_a >= 0:
        body_f[body_a] += fa
    if body_b >= 0:
        body_f[body_b] += fb


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    spatials = sk.array(dtype=S.spatial)
    return {"body_q": sk.array(dtype=S.transform), "body_qd": spatials, "body_f": spatials, "bodies": S.Bodies,
            "shapes": S.Shapes, "contact": S.Contact}


@functools.cache  # asked for on every launch: a lookup
def body_contact_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)


def eval_body_contact_forces(model, state) -> None:
    """Add the contact wrenches of every body shape (against the ground when the model has
    one, and against the other shapes) at ``state`` into ``state.body_f``; nothing while
    ``model.contacts_enabled`` is False.

    Example::

        state.clear_forces()
        eval_body_contact_forces(model, state)
    """
    if not model.shape_count or not model.body_count or not model.contacts_enabled:
        return
    k = body_contact_kernels(model.dtype)
    if model.ground:
        launch(k.ground_contact, (model.shape_count, MAX_PLANE_POINTS),
               inputs=[state.body_q, state.body_qd, model.bodies, model.shapes, model.contact, state.body_f])
    pairs = collision_pairs(model)
    if pairs.shape[0]:
        launch(k.pair_contact, pairs.shape[0],
               inputs=[pairs, state.body_q, state.body_qd, model.bodies, model.shapes, state.body_f])
