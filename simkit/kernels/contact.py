"""Penalty contact of particles against the ground plane and the shapes (static, or on a
body, which then receives the reaction), with regularised Coulomb friction.

The normal force is ``max(-ke * depth - kd * v_n, 0)`` (a spring on the penetration
depth, damped, never pulling); the friction force opposes the tangential velocity
with magnitude ``min(kf * |v_t|, mu * f_n)``: viscous below the slip threshold,
Coulomb above it. Everything is differentiable; the ``min``/``max`` switches pass
the gradient of the active branch. Where ``Contact.time_constant`` ``tc`` is > 0 the gains
are per unit mass (:func:`scaled_penalty_force`): ``ke + m / tc^2``, ``kd + 2 zeta m / tc``,
``kf + m / tc`` with ``m`` the particle's mass (against a body's shape, the reduced mass of
the particle and the body's point; between two particles, theirs).

Particles keep this regularised friction (a particle resting on a slope creeps at
``m g sin / kf``); body contacts stick (:func:`sticking_penalty_force`, used by
:mod:`simkit.kernels.body_contact`, which keeps an anchor per contact in the State).

A particle meets only the shapes of its own world and of world -1 (the rows of
:func:`~simkit.kernels.shapes.particle_shape_rows`); the ground belongs to every world.

Example::

    k = contact_kernels(sk.float32)
    sk.launch(k.ground_contact, n, inputs=[q, qd, model.particles, model.contact, f])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .bodies import point_inverse_mass, point_velocity, wrench_at
from .shapes import shape_surface_distance, shape_transform
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.func
def penalty_force(n, depth, v, ke, kd, kf, mu):
    """Contact force on a point at signed distance ``depth`` (< 0: penetrating) along
    the unit normal ``n``, moving with velocity ``v`` relative to the surface."""
    vn = sk.dot(n, v)
    fn = sk.max(-ke * depth - kd * vn, 0.0)
    vt = v - n * vn
    speed = sk.length(vt)
    ft = type(vt)()
    if speed > 0.0:
        ft = vt * (-sk.min(kf * speed, mu * fn) / speed)
    return n * fn + ft


@sk.func
def contact_gains(inv_mass, ke, kd, kf, time_constant, damping_ratio):
    """The gains ``ke + m / tc^2``, ``kd + 2 zeta m / tc`` and ``kf + m / tc`` of a contact of
    effective mass ``m = 1 / inv_mass`` (the given gains alone where ``tc`` or ``inv_mass`` is 0)."""
    k = ke
    c = kd
    f = kf
    if time_constant > 0.0 and inv_mass > 0.0:
        rate = 1.0 / time_constant
        m = 1.0 / inv_mass
        k = k + m * rate * rate
        c = c + 2.0 * damping_ratio * m * rate
        f = f + m * rate
    return k, c, f


@sk.func
def scaled_penalty_force(n, depth, v, inv_mass, ke, kd, kf, time_constant, damping_ratio, mu):
    """:func:`penalty_force` with the gains ``ke + m / tc^2``, ``kd + 2 zeta m / tc`` and
    ``kf + m / tc`` where the time constant ``tc > 0`` (``zeta`` the damping ratio), ``m``
    the effective mass of the contact (``1 / inv_mass``; 0 when ``inv_mass`` is 0): then a
    contact is the same spring-damper per unit mass for every mass."""
    k, c, f = contact_gains(inv_mass, ke, kd, kf, time_constant, damping_ratio)
    return penalty_force(n, depth, v, k, c, f, mu)


@sk.func
def sticking_penalty_force(n, depth, v, offset, inv_mass, ke, kd, kf, time_constant, damping_ratio, mu):
    """Penalty contact with Coulomb friction that sticks: the normal force of
    :func:`scaled_penalty_force`; tangentially a spring of the normal's stiffness ``k`` on
    ``offset`` (how far the contact point has moved from where it stuck, 0 when it just
    touched) damped by the friction slope ``f``: ``-k e_t - f v_t``, clamped to ``mu f_n``.
    Returns the force and the offset to keep: ``e_t`` while the spring holds within the
    cone, shortened to ``mu f_n / k`` when it does not (the anchor dragged along: slip)."""
    k, c, f = contact_gains(inv_mass, ke, kd, kf, time_constant, damping_ratio)
    vn = sk.dot(n, v)
    fn = sk.max(-k * depth - c * vn, 0.0)
    vt = v - n * vn
    et = offset - n * sk.dot(n, offset)
    limit = mu * fn
    ft = -k * et - f * vt
    pull = sk.length(ft)
    if pull > limit:
        ft = ft * (limit / pull)
    stretch = k * sk.length(et)
    if stretch > limit:
        et = et * (limit / stretch)
    return n * fn + ft, et


@sk.kernel
def ground_contact(q: AnyArray, qd: AnyArray, particles: Any, contact: Any, f: AnyArray):
    i = sk.tid()
    n = contact.ground_normal
    # The test reads q and radius afresh inside the branch: the reverse sweep then skips the
    # adjoint of the test (a comparison has none), so a particle off the ground costs no
    # gradient traffic.
    if sk.dot(n, q[i]) < particles.radius[i]:
        depth = sk.dot(n, q[i]) - particles.radius[i]
        fc = scaled_penalty_force(n, depth, qd[i], particles.inv_mass[i], contact.ke[0], contact.kd[0],
                                  contact.kf[0], contact.time_constant[0], contact.damping_ratio[0],
                                  contact.mu[0])
        f[i] += fc


@sk.kernel
def shape_contact(q: AnyArray, qd: AnyArray, particles: Any, shapes: Any, rows: Any, contact: Any, body_q: AnyArray,
                  body_qd: AnyArray, bodies: Any, f: AnyArray, body_f: AnyArray):
    # One thread per (particle, slot k of its row of shapes): no loop, so the adjoint needs
    # no replay stack. A shape on a body moves with it and receives the reaction.
    i, k = sk.tid()
    r = rows.world[i] + 1
    slot = rows.start[r] + k
    if slot >= rows.start[r + 1]:
        return
    s = rows.shape[slot]
    X = shape_transform(shapes, body_q, s)
    dist, n = shape_surface_distance(shapes, s, sk.transform_point(sk.transform_inverse(X), q[i]))
    depth = dist - particles.radius[i]
    if depth < 0.0:
        nw = sk.quat_rotate(X.q, n)
        b = shapes.body[s]
        v_rel = qd[i]
        inv_mass = particles.inv_mass[i]
        if b >= 0:
            v_rel = v_rel - point_velocity(body_q[b], body_qd[b], bodies.com[b], q[i])
            inv_mass = inv_mass + point_inverse_mass(body_q[b], bodies, b, q[i] - nw * particles.radius[i], nw)
        fc = scaled_penalty_force(nw, depth, v_rel, inv_mass, contact.ke[0], contact.kd[0], contact.kf[0],
                                  contact.time_constant[0], contact.damping_ratio[0], contact.mu[0])
        f[i] += fc
        if b >= 0:
            body_f[b] += wrench_at(body_q[b], bodies.com[b], q[i] - nw * particles.radius[i], -fc)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s, spatials = sk.array(dtype=S.vec3), sk.array(dtype=S.spatial)
    return {"q": vec3s, "qd": vec3s, "f": vec3s, "particles": S.Particles, "contact": S.Contact, "shapes": S.Shapes,
            "rows": S.ParticleShapes, "body_q": sk.array(dtype=S.transform), "body_qd": spatials, "bodies": S.Bodies,
            "body_f": spatials}


@functools.cache  # asked for on every launch: a lookup
def contact_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)
