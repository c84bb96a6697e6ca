"""Articulation kernels: forward kinematics (joint coordinates to body poses and velocities)
and its inverse, in the conventions of :mod:`simkit.sim.articulation`.

A joint ``j`` puts its child's joint frame ``X_c = X_wc * child_xform`` at ``X_p * J(q)``,
``X_p = X_wp * parent_xform`` the parent's joint frame (``parent_xform`` itself, in the world,
for ``parent = -1``), where ``J(q) = (t, r)`` is the joint's motion:

- revolute: ``r`` turns by ``q`` about ``axis``; prismatic: ``t = q axis``;
- ball: ``r = (q0, q1, q2, q3)`` (x, y, z, w, normalized); free: ``t = (q0, q1, q2)``,
  ``r = (q3 .. q6)``; fixed: the identity;
- universal: ``r = R(axis, q0) R(axis2, q1)``, ``axis`` and ``axis2`` perpendicular.

Generalized velocities are the motion of the child's joint frame relative to the parent's,
in the parent's joint frame: ``v`` the velocity of its origin (``dt/dt``), ``w`` its angular
velocity (``dr/dt = (w, 0) r / 2``). Revolute ``w = qd axis``, prismatic ``v = qd axis``, ball
``w = qd``, free ``(v, w) = (qd0..2, qd3..5)``, universal ``w = qd0 axis + qd1 R(axis, q0) axis2``.

``eval_fk`` has one thread per body: a body that is the child of an articulated joint walks
its joints up to the world, composing the relative motions, and writes only its own pose and
twist. It reads no pose another thread writes, so the launch is differentiable as it stands;
the walk is a dynamic loop, so its adjoint replays at most ``sk.config.max_loop_iterations``
joints (``cuda_max_loop_iterations`` on a GPU) per body: the depth of the deepest body.

Example::

    k = articulation_kernels(sk.float64)
    sk.launch(k.eval_fk, model.body_count, inputs=[model.body_joint, model.joints, model.joint_q_start,
              model.joint_qd_start, joint_q, joint_qd, model.bodies], outputs=[state.body_q, state.body_qd])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .bodies import bottom, make_spatial, quat_normalize, top
from .structs import JOINT_BALL, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_UNIVERSAL, model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.func
def joint_motion(joints: Any, j: int, q_start: sk.array(dtype=sk.int32), qd_start: sk.array(dtype=sk.int32),
                 joint_q: AnyArray, joint_qd: AnyArray):
    """The translation ``t`` and rotation ``r`` of joint ``j``'s child frame in its parent
    frame, and the velocity ``v`` of its origin and its angular velocity ``w`` (parent frame)."""
    kind = joints.kind[j]
    qs = q_start[j]
    ds = qd_start[j]
    axis = joints.axis[j]
    t = axis * 0.0
    r = sk.quat_of(joint_q.dtype)(0.0, 0.0, 0.0, 1.0)
    v = t
    w = t
    if kind == JOINT_REVOLUTE:
        r = sk.quat_from_axis_angle(axis, joint_q[qs])
        w = axis * joint_qd[ds]
    elif kind == JOINT_PRISMATIC:
        t = axis * joint_q[qs]
        v = axis * joint_qd[ds]
    elif kind == JOINT_BALL:
        r = quat_normalize(sk.quat_of(joint_q.dtype)(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2], joint_q[qs + 3]))
        w = type(axis)(joint_qd[ds], joint_qd[ds + 1], joint_qd[ds + 2])
    elif kind == JOINT_FREE:
        t = type(axis)(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2])
        r = quat_normalize(sk.quat_of(joint_q.dtype)(joint_q[qs + 3], joint_q[qs + 4], joint_q[qs + 5],
                                                     joint_q[qs + 6]))
        v = type(axis)(joint_qd[ds], joint_qd[ds + 1], joint_qd[ds + 2])
        w = type(axis)(joint_qd[ds + 3], joint_qd[ds + 4], joint_qd[ds + 5])
    elif kind == JOINT_UNIVERSAL:
        first = sk.quat_from_axis_angle(axis, joint_q[qs])
        r = first * sk.quat_from_axis_angle(joints.axis2[j], joint_q[qs + 1])
        w = axis * joint_qd[ds] + sk.quat_rotate(first, joints.axis2[j]) * joint_qd[ds + 1]
    return t, r, v, w


@sk.func
def body_kinematics(b: int, body_joint: sk.array(dtype=sk.int32), joints: Any, q_start: sk.array(dtype=sk.int32),
                    qd_start: sk.array(dtype=sk.int32), joint_q: AnyArray, joint_qd: AnyArray, bodies: Any,
                    body_q: AnyArray, body_qd: AnyArray):
    """Place articulated body ``b`` (its joint ``body_joint[b] >= 0``) from the coordinates:
    ``body_q[b]``, ``body_qd[b]``."""
    j = body_joint[b]
    # The body's frame X, its center of mass x, angular velocity w and the velocity v of its
    # center of mass, all relative to (and in the coordinates of) the frame reached so far:
    # the body itself, then each ancestor up to the world.
    X = body_q.dtype(bodies.com.dtype(0.0, 0.0, 0.0), sk.quat_of(joint_q.dtype)(0.0, 0.0, 0.0, 1.0))
    x = bodies.com[b]
    w = x * 0.0
    v = w
    while j >= 0:
        t, r, vj, wj = joint_motion(joints, j, q_start, qd_start, joint_q, joint_qd)
        Xp = joints.parent_xform[j]
        L = sk.transform_multiply(Xp, sk.transform_multiply(body_q.dtype(t, r),
                                                            sk.transform_inverse(joints.child_xform[j])))
        origin = sk.transform_point(Xp, t)
        om = sk.quat_rotate(Xp.q, wj)
        x = sk.transform_point(L, x)
        w = sk.quat_rotate(L.q, w) + om
        v = sk.quat_rotate(L.q, v) + sk.quat_rotate(Xp.q, vj) + sk.cross(om, x - origin)
        X = sk.transform_multiply(L, X)
        p = joints.parent[j]
        j = -1
        if p >= 0:
            j = body_joint[p]
    body_q[b] = X
    body_qd[b] = make_spatial(w, v)


@sk.kernel
def eval_fk(body_joint: sk.array(dtype=sk.int32), joints: Any, q_start: sk.array(dtype=sk.int32),
            qd_start: sk.array(dtype=sk.int32), joint_q: AnyArray, joint_qd: AnyArray, bodies: Any, body_q: AnyArray,
            body_qd: AnyArray):
    b = sk.tid()
    if body_joint[b] >= 0:
        body_kinematics(b, body_joint, joints, q_start, qd_start, joint_q, joint_qd, bodies, body_q, body_qd)


@sk.kernel(enable_backward=False)   # outside Tapes only: a Tape records eval_fk
def eval_fk_if_moved(placed: AnyArray, nq: int, body_joint: sk.array(dtype=sk.int32), joints: Any,
                     q_start: sk.array(dtype=sk.int32), qd_start: sk.array(dtype=sk.int32), joint_q: AnyArray,
                     joint_qd: AnyArray, bodies: Any, body_q: AnyArray, body_qd: AnyArray):
    # eval_fk for the bodies whose joints' coordinates differ from those they were placed
    # from (placed: joint_q then joint_qd, as the last placement left them): a write that
    # no version counts (through a .numpy() view) still moves the bodies
    b = sk.tid()
    j = body_joint[b]
    if j < 0:
        return
    moved = False
    while j >= 0:
        for k in range(q_start[j], q_start[j + 1]):
            if joint_q[k] != placed[k]:
                moved = True
        for k in range(qd_start[j], qd_start[j + 1]):
            if joint_qd[k] != placed[nq + k]:
                moved = True
        p = joints.parent[j]
        j = -1
        if p >= 0:
            j = body_joint[p]
    if moved:
        body_kinematics(b, body_joint, joints, q_start, qd_start, joint_q, joint_qd, bodies, body_q, body_qd)


@sk.kernel(enable_backward=False)
def remember_coordinates(nq: int, joint_q: AnyArray, joint_qd: AnyArray, placed: AnyArray):
    # placed = (joint_q, joint_qd): the coordinates the bodies were just placed from
    i = sk.tid()
    if i < nq:
        placed[i] = joint_q[i]
    else:
        placed[i] = joint_qd[i - nq]


@sk.kernel
def eval_ik(body_q: AnyArray, body_qd: AnyArray, bodies: Any, joints: Any, q_start: sk.array(dtype=sk.int32),
            qd_start: sk.array(dtype=sk.int32), joint_q: AnyArray, joint_qd: AnyArray):
    j = sk.tid()
    kind = joints.kind[j]
    p = joints.parent[j]
    c = joints.child[j]
    X_wc = body_q[c]
    qd_c = body_qd[c]
    X_p = joints.parent_xform[j]
    w_p = top(qd_c) * 0.0
    v_p = w_p
    com_p = w_p
    if p >= 0:
        X_wp = body_q[p]
        X_p = sk.transform_multiply(X_wp, X_p)
        w_p = top(body_qd[p])
        v_p = bottom(body_qd[p])
        com_p = sk.transform_point(X_wp, bodies.com[p])
    X_c = sk.transform_multiply(X_wc, joints.child_xform[j])
    rel = sk.transform_multiply(sk.transform_inverse(X_p), X_c)
    t = rel.p
    r = rel.q
    if r[3] < 0.0:
        r = -r
    # velocities of the child's joint origin on the child and on the parent
    x = X_c.p
    v_c = bottom(qd_c) + sk.cross(top(qd_c), x - sk.transform_point(X_wc, bodies.com[c]))
    v_rel = sk.quat_rotate_inv(X_p.q, v_c - (v_p + sk.cross(w_p, x - com_p)))
    w_rel = sk.quat_rotate_inv(X_p.q, top(qd_c) - w_p)
    axis = joints.axis[j]
    qs = q_start[j]
    ds = qd_start[j]
    if kind == JOINT_REVOLUTE:
        joint_q[qs] = 2.0 * sk.atan2(sk.dot(type(t)(r[0], r[1], r[2]), axis), r[3])
        joint_qd[ds] = sk.dot(axis, w_rel)
    elif kind == JOINT_PRISMATIC:
        joint_q[qs] = sk.dot(axis, t)
        joint_qd[ds] = sk.dot(axis, v_rel)
    elif kind == JOINT_BALL:
        for k in range(4):
            joint_q[qs + k] = r[k]
        for k in range(3):
            joint_qd[ds + k] = w_rel[k]
    elif kind == JOINT_FREE:
        for k in range(3):
            joint_q[qs + k] = t[k]
            joint_qd[ds + k] = v_rel[k]
            joint_qd[ds + 3 + k] = w_rel[k]
        for k in range(4):
            joint_q[qs + 3 + k] = r[k]
    elif kind == JOINT_UNIVERSAL:
        # r = R(a1, q0) R(a2, q1), a3 = a1 x a2: r a2 = cos(q0) a2 + sin(q0) a3 and
        # r^T a1 = cos(q1) a1 + sin(q1) a3
        a2 = joints.axis2[j]
        a3 = sk.cross(axis, a2)
        b2 = sk.quat_rotate(r, a2)
        b1 = sk.quat_rotate_inv(r, axis)
        q0 = sk.atan2(sk.dot(b2, a3), sk.dot(b2, a2))
        joint_q[qs] = q0
        joint_q[qs + 1] = sk.atan2(sk.dot(b1, a3), sk.dot(b1, axis))
        joint_qd[ds] = sk.dot(axis, w_rel)
        joint_qd[ds + 1] = sk.dot(sk.quat_rotate(sk.quat_from_axis_angle(axis, q0), a2), w_rel)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    reals = sk.array(dtype=real)
    return {"joints": S.Joints, "joint_q": reals, "joint_qd": reals, "bodies": S.Bodies, "placed": reals,
            "body_q": sk.array(dtype=S.transform), "body_qd": sk.array(dtype=S.spatial)}


@functools.cache  # asked for on every launch: a lookup
def articulation_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together),
    and its function ``joint_motion`` (generic: it takes the caller's types)."""
    return SimpleNamespace(**vars(sk.instantiate(real, __name__)), joint_motion=joint_motion)
