"""Joints of the semi-implicit integrator: stiff, damped penalty springs between the joint
frames of a parent body (or the world) and a child body, plus limits and drives.

One thread per joint. The joint frame on the parent is ``X_wp * parent_xform`` (the
world pose ``parent_xform`` when ``parent = -1``), on the child ``X_wc * child_xform``;
``a = R_parent_frame * axis`` is the joint axis in the world, ``x_p``/``x_c`` the frame
origins and ``q_rel = conj(q_parent_frame) * q_child_frame`` the relative rotation
(sign chosen so that its ``w >= 0``).

- Position: ``f = -linear_ke * e - linear_kd * v_rel`` on the child, where ``e = x_c - x_p``
  and ``v_rel`` is the velocity of the child's anchor relative to the parent's material
  point at the same place; a prismatic joint drops the components along ``a``.
- Rotation: ``tau = -angular_ke * theta - angular_kd * w_rel`` on the child. A fixed or
  prismatic joint uses the whole relative rotation, ``theta = 2 * R_p * vec(q_rel)``
  (= ``2 sin(angle / 2) * axis_of_rotation``, the gradient of ``4 ke (1 - cos(angle / 2))``);
  a revolute joint only its misalignment, ``theta = a x a_c`` (``a_c`` the axis carried by
  the child), and damps ``w_rel`` perpendicular to ``a``; a universal joint keeps the parent's
  ``a`` perpendicular to the child's ``a2`` (``axis2`` carried by the child): ``theta = -(a . a2) n``,
  ``n = a x a2`` (the gradient of ``(a . a2)^2 / 2``), and damps ``w_rel`` along ``n``; a ball
  joint has none.
- Coordinate: revolute ``q = 2 atan2(dot(vec(q_rel), axis), w(q_rel))``, the twist of the
  relative rotation about the axis (in ``[-pi, pi]``), ``qd = dot(a, w_rel)``; prismatic
  ``q = dot(a, x_c - x_p)``, ``qd = dot(a, v_rel)``. Along the axis acts
  ``u = target_ke (joint_target - q) + joint_act + (target_kd v - kd qd) / (1 + kd dt w)``
  (``v = joint_target_vel``) plus, outside ``[limit_lower, limit_upper]``, the one-sided
  spring ``limit_ke (bound - q)``, where ``kd = target_kd`` (plus ``limit_kd`` outside the
  limits): a torque ``u a`` (revolute) or a force ``u a`` (prismatic). Ball and fixed joints
  have no coordinate and ignore ``joint_target``/``joint_target_vel``/``joint_act``. A free
  joint applies nothing.
- The damper of the coordinate is implicit (backward Euler): ``target_kd (v - qd_new) -
  limit_kd qd_new`` (the drive's damper pulls the rate towards ``v``, the limit's towards
  zero), with ``qd_new = qd + dt w (target_kd v - kd qd_new)`` the rate it leaves after the
  step; solved, that is ``(target_kd v - kd qd) / (1 + kd dt w)`` (with ``v = 0``, ``-kd qd /
  (1 + kd dt w)``; without limits, ``target_kd (v - qd) / (1 + kd dt w)``), ``w`` the joint's
  mobility: ``a . (I_c^-1 + I_p^-1) a`` (world inverse inertias) for a hinge,
  ``1 / m_c + 1 / m_p`` plus the turning terms at the anchor for a slider. ``w`` is that of
  the two bodies alone, an upper bound on their mobility when other joints also hold them,
  so the damper slows the rate by at most the factor ``1 / (1 + kd dt w)`` and never
  reverses it, however light the bodies; without a damper ``u`` is the explicit force. The
  springs stay explicit, so a load held at rest is held by the same force as in the
  continuous model. (Explicit, ``kd dt w > 2`` reversed and amplified the rate every step:
  gymnasium's ant, whose file sets joint damping 1 N m s/rad and whose ankles start outside
  their limits (``limit_kd = 10``) on legs of about 5e-4 kg m^2 about their hinges, blew up
  within 25 steps of 1e-4 s; MuJoCo and :class:`~simkit.sim.Featherstone` add the file's
  ``armature`` of 1 kg m^2 there, which these maximal coordinates cannot.)

The child receives ``f`` at ``x_c`` and the couple ``tau``; the parent receives exactly the
opposite, at the same point, so joints conserve the total linear and angular momentum, the
springs derive from a potential and the dampers only dissipate. Everything is smooth
except the angle wrap at ``+-pi`` and the limits: their damping switches on at the bound, so
the force jumps there (as in contact) and a gradient is that of the active side; a rollout
in which a perturbation moves the step where a limit engages is not differentiable there.

Time step: the penalties are explicit, so ``dt`` must resolve them. Semi-implicit Euler
stays stable when, for every jointed body, ``linear_ke dt^2 + 2 linear_kd dt < m_a`` and
``angular_ke dt^2 + 2 angular_kd dt < I``: ``I`` is the body's smallest principal moment of
inertia (armature included) and ``m_a = 1 / (1 / m + r^2 / I)`` its effective mass at the
joint anchor, ``r`` from its center of mass (``m / 4`` for a slender link jointed at its
end; a slider's ``r`` grows with its extension). The margin covers chains, whose stiffest
mode is up to four times stiffer than one joint; scans of 3-d excited five-link chains
found the conditions sufficient (and about two times conservative). With the default gains
(linear 1e5 / 10, angular 1e3 / 0.05) that is ``m_a > 3e-3 kg`` and ``I > 2e-5 kg m^2`` at
``dt = 1e-4`` s, ``m_a > 0.035 kg`` and ``I > 3e-4 kg m^2`` at ``dt = 5e-4`` s: thin rods
(small ``I`` about their long axis) need armature or softer angular gains. Limits and drives
act on one coordinate, with implicit dampers: ``ke dt^2 < 2 I_a`` for any ``kd``, ``I_a =
1 / w`` (the joint's effective inertia about its axis, its effective mass for a slider;
``ke`` the sum of ``target_ke`` and ``limit_ke``). A limit started far outside its range
snaps back within a few steps, stretching the joint's penalties meanwhile. gymnasium's ant
(legs of 40 to 70 g, smallest moment 1.2e-4 kg m^2), dropped from its file pose with its
ankles 30 degrees outside their limits, comes to rest at ``dt = 1e-4`` and ``2e-4`` s (the
snap opens its hinges by 2 and 5 cm for a few milliseconds; then they stay within 0.2 mm);
at 3e-4 s its legs' angular penalties sit at the bound above (``1e3 dt^2 + 2 * 0.05 dt =
1.2e-4``) and jitter, at 4e-4 s they diverge.

Example::

    k = joint_kernels(sk.float32)
    sk.launch(k.eval_joints, model.joint_count, inputs=[state.body_q, state.body_qd, model.bodies,
              model.joints, control.joint_target, control.joint_target_vel, control.joint_act, dt,
              state.body_f])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from ..core.launch import launch
from .bodies import make_spatial, point_inverse_mass, point_velocity, top, world_inverse_inertia, wrench_at
from .structs import JOINT_FIXED, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_UNIVERSAL, model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def eval_joints(body_q: AnyArray, body_qd: AnyArray, bodies: Any, joints: Any, target: AnyArray,
                target_vel: AnyArray, act: AnyArray, dt: Any, body_f: AnyArray):
    j = sk.tid()
    kind = joints.kind[j]
    if kind == JOINT_FREE:
        return
    p = joints.parent[j]
    c = joints.child[j]
    X_wc = body_q[c]
    qd_c = body_qd[c]
    com_c = bodies.com[c]
    X_c = sk.transform_multiply(X_wc, joints.child_xform[j])
    # The world is a parent at rest whose frame is the identity.
    X_p = joints.parent_xform[j]
    X_wp = X_p
    qd_p = qd_c * 0.0
    com_p = com_c * 0.0
    if p >= 0:
        X_wp = body_q[p]
        qd_p = body_qd[p]
        com_p = bodies.com[p]
        X_p = sk.transform_multiply(X_wp, X_p)
    x_c = X_c.p
    local_axis = joints.axis[j]
    a = sk.quat_rotate(X_p.q, local_axis)

    # relative motion of the child at its anchor
    e = x_c - X_p.p
    v_rel = point_velocity(X_wc, qd_c, com_c, x_c) - point_velocity(X_wp, qd_p, com_p, x_c)
    w_rel = top(qd_c) - top(qd_p)
    q_rel = sk.quat_inverse(X_p.q) * X_c.q
    if q_rel[3] < 0.0:
        q_rel = -q_rel
    rel = type(e)(q_rel[0], q_rel[1], q_rel[2])

    zero = w_rel * 0.0
    theta = zero
    w_err = zero
    coord = target.dtype(0.0)
    rate = target.dtype(0.0)
    if kind == JOINT_REVOLUTE:
        theta = sk.cross(a, sk.quat_rotate(X_c.q, local_axis))
        w_err = w_rel - a * sk.dot(a, w_rel)
        coord = 2.0 * sk.atan2(sk.dot(local_axis, rel), q_rel[3])
        rate = sk.dot(a, w_rel)
    elif kind == JOINT_PRISMATIC:
        theta = sk.quat_rotate(X_p.q, rel) * 2.0
        w_err = w_rel
        coord = sk.dot(a, e)
        rate = sk.dot(a, v_rel)
        e = e - a * coord
        v_rel = v_rel - a * rate
    elif kind == JOINT_FIXED:
        theta = sk.quat_rotate(X_p.q, rel) * 2.0
        w_err = w_rel
    elif kind == JOINT_UNIVERSAL:
        a2 = sk.quat_rotate(X_c.q, joints.axis2[j])
        n = sk.cross(a, a2)
        theta = n * -sk.dot(a, a2)
        w_err = n * sk.dot(n, w_rel)

    f = -(e * joints.linear_ke[j] + v_rel * joints.linear_kd[j])
    tau = -(theta * joints.angular_ke[j] + w_err * joints.angular_kd[j])
    if kind == JOINT_REVOLUTE or kind == JOINT_PRISMATIC:
        u = joints.target_ke[j] * (target[j] - coord) + act[j]
        kd = joints.target_kd[j]
        lower = joints.limit_lower[j]
        upper = joints.limit_upper[j]
        if coord < lower:
            u = u + joints.limit_ke[j] * (lower - coord)
            kd = kd + joints.limit_kd[j]
        elif coord > upper:
            u = u + joints.limit_ke[j] * (upper - coord)
            kd = kd + joints.limit_kd[j]
        # How fast the coordinate's rate changes per unit of u: the inverse of the joint's
        # effective inertia (mass for a slider), both bodies included.
        mobility = kd * 0.0
        if kind == JOINT_REVOLUTE:
            mobility = sk.dot(a, world_inverse_inertia(X_wc, bodies, c) @ a)
            if p >= 0:
                mobility = mobility + sk.dot(a, world_inverse_inertia(X_wp, bodies, p) @ a)
        else:
            mobility = point_inverse_mass(X_wc, bodies, c, x_c, a) + point_inverse_mass(X_wp, bodies, p, x_c, a)
        # The damper acts on the rate at the end of the step: implicit, so it never overshoots
        # the target rate (the limit's part never reverses the rate).
        u = u + (joints.target_kd[j] * target_vel[j] - kd * rate) / (1.0 + kd * dt * mobility)
        if kind == JOINT_REVOLUTE:
            tau = tau + a * u
        else:
            f = f + a * u

    couple = make_spatial(tau, zero)
    sk.atomic_add(body_f, c, wrench_at(X_wc, com_c, x_c, f) + couple)
    if p >= 0:
        sk.atomic_sub(body_f, p, wrench_at(X_wp, com_p, x_c, f) + couple)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    spatials, reals = sk.array(dtype=S.spatial), sk.array(dtype=real)
    return {"body_q": sk.array(dtype=S.transform), "body_qd": spatials, "body_f": spatials, "bodies": S.Bodies,
            "joints": S.Joints, "target": reals, "target_vel": reals, "act": reals,
            "dt": real}


@functools.cache  # asked for on every launch: a lookup
def joint_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)


def eval_joint_forces(model, state, control, dt: float) -> None:
    """Add the penalty wrenches of every joint of ``model`` at ``state`` (limits, drives and
    ``control.joint_act`` included) into ``state.body_f``, for a step of ``dt`` (the dampers
    of drives and limits are implicit in it).

    Example::

        state.clear_forces()
        eval_joint_forces(model, state, control, 1e-4)
    """
    if not model.joint_count:
        return
    launch(joint_kernels(model.dtype).eval_joints, model.joint_count,
           inputs=[state.body_q, state.body_qd, model.bodies, model.joints, control.joint_target,
                   control.joint_target_vel, control.joint_act, dt, state.body_f])
