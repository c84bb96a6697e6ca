"""Penalty contact of particles against the ground plane and static shapes, with
regularised Coulomb friction.

The normal force is ``max(-ke * depth - kd * v_n, 0)`` (a spring on the penetration
depth, damped, never pulling); the friction force opposes the tangential velocity
with magnitude ``min(kf * |v_t|, mu * f_n)``: viscous below the slip threshold,
Coulomb above it. Everything is differentiable; the ``min``/``max`` switches pass
the gradient of the active branch.

Example::

    k = contact_kernels(sk.float32)
    sk.launch(k.ground_contact, n, inputs=[q, qd, model.particles, model.contact, f])
"""

import functools
from types import SimpleNamespace

import simkit as sk
from .structs import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_SPHERE, model_structs


@sk.func
def penalty_force(n, depth, v, ke, kd, kf, mu):
    """Contact force on a point at signed distance ``depth`` (< 0: penetrating) along
    the unit normal ``n``, moving with velocity ``v`` relative to the surface."""
    vn = sk.dot(n, v)
    fn = sk.max(-ke * depth - kd * vn, 0.0)
    vt = v - n * vn
    speed = sk.length(vt)
    ft = vt * 0.0
    if speed > 0.0:
        ft = vt * (-sk.min(kf * speed, mu * fn) / speed)
    return n * fn + ft


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


@functools.cache
def contact_kernels(real) -> SimpleNamespace:
    """The contact kernels for float type ``real``."""
    S = model_structs(real)
    vec3 = S.vec3
    vec3s = sk.array(dtype=vec3)

    @sk.kernel(module=f"simkit.kernels.contact.{real.__name__}")
    def ground_contact(q: vec3s, qd: vec3s, particles: S.Particles, contact: S.Contact, f: vec3s):
        i = sk.tid()
        n = contact.ground_normal
        depth = sk.dot(n, q[i]) - particles.radius[i]
        if depth < 0.0:
            fc = penalty_force(n, depth, qd[i], contact.ke[0], contact.kd[0], contact.kf[0], contact.mu[0])
            f[i] += fc

    @sk.kernel(module=f"simkit.kernels.contact.{real.__name__}")
    def shape_contact(q: vec3s, qd: vec3s, particles: S.Particles, shapes: S.Shapes, contact: S.Contact, f: vec3s):
        # One thread per (particle, shape) pair: no loop, so the adjoint needs no replay stack.
        i, s = sk.tid()
        X = shapes.xform[s]
        p = sk.transform_point(sk.transform_inverse(X), q[i])
        size = shapes.params[s]
        kind = shapes.kind[s]
        dist = real(0.0)
        n = vec3(0.0, 0.0, 0.0)
        if kind == SHAPE_SPHERE:
            dist = sk.length(p)
            n = p / dist
            dist = dist - size[0]
        elif kind == SHAPE_BOX:
            dist, n = box_distance(p, size)
        elif kind == SHAPE_CAPSULE:
            axis_point = vec3(0.0, sk.clamp(p[1], -size[1], size[1]), 0.0)
            d = p - axis_point
            dist = sk.length(d)
            n = d / dist
            dist = dist - size[0]
        depth = dist - particles.radius[i]
        if depth < 0.0:
            nw = sk.quat_rotate(X.q, n)
            fc = penalty_force(nw, depth, qd[i], contact.ke[0], contact.kd[0], contact.kf[0], contact.mu[0])
            f[i] += fc

    return SimpleNamespace(ground_contact=ground_contact, shape_contact=shape_contact)
