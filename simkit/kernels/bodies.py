"""Rigid-body kernels: clearing the wrench accumulator, semi-implicit integration, and the
small functions other body kernels share (spatial vector parts, point velocities, wrenches).

Conventions (docs/design.md, "Simulation conventions"): ``body_q`` is the world transform of a body's origin; ``body_qd``
is ``(angular velocity, linear velocity of the center of mass)`` and ``body_f`` is
``(torque about the center of mass, force)``, all in world coordinates.

Integration is semi-implicit in the angular momentum: ``L = I_w w`` advances by
``tau dt`` (exact conservation without torque), the rotation turns by the angular
velocity of the new momentum, and the stored angular velocity is that momentum seen
through the inertia at the new orientation. The quaternion is renormalized every step.

Example::

    k = body_kernels(sk.float32)
    sk.launch(k.integrate_bodies, n, inputs=[q, qd, f, model.bodies, model.gravity, dt, q_out, qd_out])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.func
def quat_normalize(q):
    """``q`` scaled to unit length."""
    return q / sk.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])


@sk.func
def top(s: Any):
    """The angular part of a spatial vector."""
    return sk.vector(3, type(s[0]))(s[0], s[1], s[2])


@sk.func
def bottom(s: Any):
    """The linear part of a spatial vector."""
    return sk.vector(3, type(s[0]))(s[3], s[4], s[5])


@sk.func
def make_spatial(a: Any, b: Any):
    """The spatial vector ``(a, b)``."""
    return sk.vector(6, type(a[0]))(a[0], a[1], a[2], b[0], b[1], b[2])


@sk.func
def point_velocity(X: Any, qd: Any, com: Any, p: Any):
    """World velocity of the world point ``p`` moving with a body at pose ``X`` and velocity
    ``qd`` whose center of mass is ``com`` (body frame)."""
    return bottom(qd) + sk.cross(top(qd), p - sk.transform_point(X, com))


@sk.func
def wrench_at(X: Any, com: Any, p: Any, force: Any):
    """The wrench (torque about the center of mass, force) of ``force`` applied at world point ``p``."""
    return make_spatial(sk.cross(p - sk.transform_point(X, com), force), force)


@sk.func
def world_inverse_inertia(X: Any, bodies: Any, b: int):
    """The inverse inertia of body ``b`` in world coordinates at pose ``X``."""
    R = sk.quat_to_matrix(X.q)
    return R * bodies.inv_inertia[b] * sk.transpose(R)


@sk.func
def point_inverse_mass(X: Any, bodies: Any, b: int, p: Any, n: Any):
    """How fast world point ``p`` of body ``b`` accelerates along the unit ``n`` per unit
    force along ``n`` there: ``1 / m + (r x n) . I_w^-1 (r x n)``, ``r`` its offset from
    the center of mass (0 for the world, ``b = -1``, and for a kinematic body)."""
    w = bodies.inv_mass.dtype(0.0)
    if b >= 0:
        rn = sk.cross(p - sk.transform_point(X, bodies.com[b]), n)
        w = bodies.inv_mass[b] + sk.dot(rn, world_inverse_inertia(X, bodies, b) @ rn)
    return w


@sk.kernel
def clear_body_forces(f: AnyArray):
    f[sk.tid()] = f.dtype(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@sk.kernel
def integrate_bodies(body_q: AnyArray, body_qd: AnyArray, body_f: AnyArray, bodies: Any, gravity: Any, dt: Any,
                     q_out: AnyArray, qd_out: AnyArray):
    i = sk.tid()
    X = body_q[i]
    qd = body_qd[i]
    w = top(qd)
    v = bottom(qd)
    com = bodies.com[i]
    x_com = sk.transform_point(X, com)
    r = X.q
    R = sk.quat_to_matrix(r)
    w_step = w
    w_new = w
    v_new = v
    L = type(w)()
    # A body without mass is kinematic: it keeps its velocity.
    if bodies.inv_mass[i] > 0.0:
        f = body_f[i]
        v_new = v + (bottom(f) * bodies.inv_mass[i] + gravity) * dt
        L = R * (bodies.inertia[i] * (sk.transpose(R) * w)) + top(f) * dt
        w_step = R * (bodies.inv_inertia[i] * (sk.transpose(R) * L))
    spin = type(r)(w_step[0], w_step[1], w_step[2], 0.0) * r
    r_new = quat_normalize(r + spin * (0.5 * dt))
    if bodies.inv_mass[i] > 0.0:
        R_new = sk.quat_to_matrix(r_new)
        w_new = R_new * (bodies.inv_inertia[i] * (sk.transpose(R_new) * L))
    x_new = x_com + v_new * dt
    q_out[i] = q_out.dtype(x_new - sk.quat_rotate(r_new, com), r_new)
    qd_out[i] = make_spatial(w_new, v_new)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    transforms, spatials = sk.array(dtype=S.transform), sk.array(dtype=S.spatial)
    return {"f": spatials, "body_q": transforms, "body_qd": spatials, "body_f": spatials, "bodies": S.Bodies,
            "gravity": S.vec3, "dt": real, "q_out": transforms, "qd_out": spatials}


@functools.cache  # asked for on every launch: a lookup
def body_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together),
    and its functions (generic: they take the caller's types)."""
    return SimpleNamespace(**vars(sk.instantiate(real, __name__)), top=top, bottom=bottom, make_spatial=make_spatial,
                           point_velocity=point_velocity, point_inverse_mass=point_inverse_mass, wrench_at=wrench_at,
                           world_inverse_inertia=world_inverse_inertia)
