"""Rigid-body kernels of the XPBD integrator: prediction, joints, corrections and velocities
(after Mueller et al. 2020, "Detailed Rigid Body Simulation with Extended Position Based
Dynamics"; contacts are in :mod:`simkit.kernels.xpbd_body_contact`).

A body's pose is corrected by a displacement ``dx`` of its center of mass and a rotation
vector ``dtheta`` (world). An impulse ``P`` applied at world offset ``r`` from the center of
mass gives ``dx = P / m`` and ``dtheta = I_w^-1 (r x P)``, so the point moves by ``K P`` with
``K = I / m - [r]x I_w^-1 [r]x``. Positional joint constraints are solved with that 3x3
matrix (or its restriction to a plane) rather than one scalar direction at a time: the
correction is then smooth where the constraint is satisfied, so gradients are well defined
at rest. Angular constraints use ``K = I_w^-1`` the same way.

Every constraint kernel reads the poses of one iteration and atomically adds its
corrections into ``dx``/``dtheta``. Mass splitting bounds their sum: a constraint sees its
bodies' inverse masses times ``split``, the number of constraints touching each body this
step. The apply kernel adds the sums and writes the next pose buffer. A joint solves its
parts one after the other on local copies of its two bodies (orientation, position, drive,
limit) and writes its total correction.

Example::

    k = xpbd_body_kernels(sk.float64)
    sk.launch(k.predict_bodies, n, inputs=[q, qd, act, model.bodies, model.gravity, dt, q_pred, qd_pred])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .bodies import bottom, make_spatial, quat_normalize, top, world_inverse_inertia
from .structs import JOINT_BALL, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_UNIVERSAL, model_structs
from .xpbd import multiplier_step, skew

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it

# Fixed-point passes of the implicit rotation update in ``predict_bodies``: the world inertia
# changes by O(|w| dt) over a step, and each pass gains that factor in accuracy.
ROTATION_PASSES = 2


@sk.func
def perpendicular(n):
    """A unit vector perpendicular to the unit vector ``n``."""
    a = n * 0.0
    if sk.abs(n[0]) < 0.6:
        a[0] = 1.0
    else:
        a[1] = 1.0
    return sk.normalize(sk.cross(n, a))


@sk.func
def solve_in_plane(K, n, d):
    """The vector ``P`` in the plane normal to the unit vector ``n`` such that ``K P`` and ``d``
    have the same component in that plane (``K`` symmetric positive definite)."""
    e1 = perpendicular(n)
    e2 = sk.cross(n, e1)
    k1 = K @ e1
    k2 = K @ e2
    a = sk.dot(e1, k1)
    b = sk.dot(e1, k2)
    c = sk.dot(e2, k2)
    d1 = sk.dot(e1, d)
    d2 = sk.dot(e2, d)
    return (e1 * (c * d1 - b * d2) + e2 * (a * d2 - b * d1)) / (a * c - b * b)


@sk.func
def point_matrix(inv_m, inv_I, r):
    """How far a point at offset ``r`` from the center of mass moves per unit impulse applied
    there: ``I / m - [r]x I_w^-1 [r]x`` (``inv_I`` the world inverse inertia)."""
    R = skew(r)
    K = -(R @ inv_I @ R)
    K[0, 0] = K[0, 0] + inv_m
    K[1, 1] = K[1, 1] + inv_m
    K[2, 2] = K[2, 2] + inv_m
    return K


@sk.func
def rotate_by(q, dtheta):
    """``q`` turned by the small world rotation vector ``dtheta`` (first order, renormalized)."""
    spin = q * 0.0
    spin[0] = dtheta[0]
    spin[1] = dtheta[1]
    spin[2] = dtheta[2]
    return quat_normalize(q + spin * q * 0.5)


@sk.func
def rotation_step(q, w, dt):
    """``q`` turned by angular velocity ``w`` over ``dt``: ``dq q`` with the unit quaternion
    ``dq = (w dt / 2, sqrt(1 - |w dt / 2|^2))``, so that ``2 vec(dq) / dt`` gives ``w`` back."""
    h = w * (0.5 * dt)
    dq = q * 0.0
    dq[0] = h[0]
    dq[1] = h[1]
    dq[2] = h[2]
    dq[3] = sk.sqrt(sk.max(1.0 - sk.dot(h, h), 1.0e-6))
    return quat_normalize(dq * q)


@sk.func
def rotation_vector(dq: Any):
    """``2 vec(dq)``, sign-corrected to the short way round: the small rotation of ``dq``."""
    s = type(dq[0])(2.0)
    if dq[3] < 0.0:
        s = type(dq[0])(-2.0)
    return sk.vector(3, type(dq[0]))(dq[0], dq[1], dq[2]) * s


@sk.func
def split_of(joint_split: sk.array(dtype=sk.int32), contact_split: sk.array(dtype=sk.int32), bodies: Any, b: int):
    """How many constraints touch body ``b`` this step (at least 1; 1 for the world), as a
    float of the precision of ``bodies``."""
    count = 1
    if b >= 0:
        count = sk.max(joint_split[b] + contact_split[b], 1)
    return bodies.inv_mass.dtype(count)


@sk.func
def load_body(poses: AnyArray, bodies: Any, b: int):
    """Center of mass (world), rotation, inverse mass, world inverse inertia and center of
    mass (body frame) of body ``b`` at ``poses``; the world (``b = -1``) does not move."""
    x = bodies.com.dtype(0.0, 0.0, 0.0)
    q = sk.quat_of(bodies.inv_mass.dtype)(0.0, 0.0, 0.0, 1.0)
    inv_m = bodies.inv_mass.dtype(0.0)
    inv_I = sk.diag(x)
    com = x
    if b >= 0:
        X = poses[b]
        com = bodies.com[b]
        x = sk.transform_point(X, com)
        q = X.q
        inv_m = bodies.inv_mass[b]
        inv_I = world_inverse_inertia(X, bodies, b)
    return x, q, inv_m, inv_I, com


@sk.func
def joint_coordinate(kind: int, axis: Any, ap: Any, qjp: Any, ac: Any, qjc: Any):
    """Angle (revolute) or displacement (prismatic) of the child joint frame (origin ``ac``,
    rotation ``qjc``) relative to the parent's (``ap``, ``qjp``) about/along ``axis``."""
    value = type(axis[0])(0.0)
    if kind == JOINT_REVOLUTE:
        rel = sk.quat_inverse(qjp) * qjc
        if rel[3] < 0.0:
            rel = -rel
        value = 2.0 * sk.atan2(sk.dot(type(axis)(rel[0], rel[1], rel[2]), axis), rel[3])
    else:
        value = sk.dot(ac - ap, sk.quat_rotate(qjp, axis))
    return value


@sk.func
def coordinate_response(kind: int, n: Any, rp: Any, rc: Any, mp: Any, mc: Any, Ip: Any, Ic: Any):
    """Corrections of parent and child (dx_p, dtheta_p, dx_c, dtheta_c) per unit multiplier of
    the joint coordinate along/about the world axis ``n``, and the coordinate's change per
    unit multiplier on each side (parent, child). ``rp``, ``rc``: the child anchor's offset
    from each center of mass."""
    zero = n * 0.0
    dxp = zero
    dxc = zero
    dtp = -(Ip @ n)
    dtc = Ic @ n
    gp = -sk.dot(n, dtp)
    gc = sk.dot(n, dtc)
    if kind == JOINT_PRISMATIC:
        dxp = n * -mp
        dxc = n * mc
        dtp = -(Ip @ sk.cross(rp, n))
        dtc = Ic @ sk.cross(rc, n)
        gp = -sk.dot(n, dxp + sk.cross(dtp, rp))
        gc = sk.dot(n, dxc + sk.cross(dtc, rc))
    return dxp, dtp, dxc, dtc, gp, gc


@sk.kernel
def apply_joint_actuation(body_q: AnyArray, joints: Any, joint_act: AnyArray, act: AnyArray):
    # joint_act: a torque about (revolute) or a force along (prismatic) the joint axis on the
    # child, and its reaction on the parent.
    j = sk.tid()
    kind = joints.kind[j]
    p = joints.parent[j]
    c = joints.child[j]
    qjp = joints.parent_xform[j].q
    if p >= 0:
        qjp = body_q[p].q * qjp
    n = sk.quat_rotate(qjp, joints.axis[j]) * joint_act[j]
    zero = n * 0.0
    w = make_spatial(zero, zero)
    if kind == JOINT_REVOLUTE:
        w = make_spatial(n, zero)
    elif kind == JOINT_PRISMATIC:
        w = make_spatial(zero, n)
    act[c] += w
    if p >= 0:
        act[p] += -w


@sk.kernel
def predict_bodies(body_q: AnyArray, body_qd: AnyArray, act: AnyArray, bodies: Any, gravity: Any, dt: Any,
                   q_out: AnyArray, qd_out: AnyArray):
    # The center of mass moves with v + dt (g + F / m). The rotation is implicit in the
    # angular momentum: L = I_w w + dt tau, and the step turns by the w that has momentum L
    # through the inertia at the new orientation (a fixed point), so a free body conserves L.
    # A body without mass is kinematic: it keeps its velocity. The predicted velocities are
    # kept: the step's velocities are them plus the corrections over dt.
    i = sk.tid()
    X = body_q[i]
    qd = body_qd[i]
    com = bodies.com[i]
    w = top(qd)
    v = bottom(qd)
    x = sk.transform_point(X, com)
    if bodies.inv_mass[i] > 0.0:
        f = act[i]
        v = v + (gravity + bottom(f) * bodies.inv_mass[i]) * dt
        R = sk.quat_to_matrix(X.q)
        L = R @ (bodies.inertia[i] @ (sk.transpose(R) @ w)) + top(f) * dt
        for _pass in range(ROTATION_PASSES):
            Rn = sk.quat_to_matrix(rotation_step(X.q, w, dt))
            w = Rn @ (bodies.inv_inertia[i] @ (sk.transpose(Rn) @ L))
    q = rotation_step(X.q, w, dt)
    q_out[i] = q_out.dtype(x + v * dt - sk.quat_rotate(q, com), q)
    qd_out[i] = make_spatial(w, v)


@sk.kernel
def solve_joints(poses: AnyArray, poses_prev: AnyArray, joints: Any, target: AnyArray, target_vel: AnyArray,
                 bodies: Any,
                 joint_split: sk.array(dtype=sk.int32), contact_split: sk.array(dtype=sk.int32), lam: AnyArray, dt: Any,
                 dx: AnyArray, dtheta: AnyArray, lam_out: AnyArray):
    # Rigid (compliance 0) orientation and anchor constraints, then for revolute and prismatic
    # joints a compliant drive (compliance 1 / target_ke, damping target_kd towards the target
    # rate target_vel) and rigid limits.
    j = sk.tid()
    kind = joints.kind[j]
    p = joints.parent[j]
    c = joints.child[j]
    xp, qp, mp, Ip, comp = load_body(poses, bodies, p)
    xc, qc, mc, Ic, comc = load_body(poses, bodies, c)
    sp = split_of(joint_split, contact_split, bodies, p)
    sc = split_of(joint_split, contact_split, bodies, c)
    Xjp = joints.parent_xform[j]
    Xjc = joints.child_xform[j]
    op = Xjp.p - comp
    oc = Xjc.p - comc
    axis = joints.axis[j]
    zero = xp * 0.0
    dxp = zero
    dxc = zero
    dtp = zero
    dtc = zero
    dl = type(dt)(0.0)
    # a free joint constrains nothing
    if kind != JOINT_FREE and mp * sp + mc * sc > 0.0:
        # orientation: fixed and prismatic joints lock it, a revolute joint aligns the axes,
        # a universal joint keeps its two axes perpendicular
        Kr = Ic * sc + Ip * sp
        qjp = qp * Xjp.q
        qjc = qc * Xjc.q
        L = zero
        if kind == JOINT_REVOLUTE:
            ap = sk.quat_rotate(qjp, axis)
            L = solve_in_plane(Kr, ap, sk.cross(sk.quat_rotate(qjc, axis), ap))
        elif kind == JOINT_UNIVERSAL:
            # turn the child about n = a1 x a2 until the parent's axis and the child's axis2
            # are perpendicular again: by pi/2 - angle(a1, a2) = atan2(a1 . a2, |a1 x a2|)
            a1 = sk.quat_rotate(qjp, axis)
            a2 = sk.quat_rotate(qjc, joints.axis2[j])
            n = sk.cross(a1, a2)
            s = sk.length(n)
            if s > 1.0e-12:
                n = n / s
                L = n * (sk.atan2(sk.dot(a1, a2), s) / sk.dot(n, Kr @ n))
        elif kind != JOINT_BALL:
            L = sk.inverse(Kr) @ rotation_vector(qjp * sk.quat_inverse(qjc))
        dtc = Ic @ L
        dtp = -(Ip @ L)
        qc = rotate_by(qc, dtc)
        qp = rotate_by(qp, dtp)
        # position: the anchors coincide (prismatic: off the axis only)
        rp = sk.quat_rotate(qp, op)
        rc = sk.quat_rotate(qc, oc)
        K = point_matrix(mc, Ic, rc) * sc + point_matrix(mp, Ip, rp) * sp
        err = (xp + rp) - (xc + rc)
        P = zero
        if kind == JOINT_PRISMATIC:
            P = solve_in_plane(K, sk.quat_rotate(qp * Xjp.q, axis), err)
        else:
            P = sk.inverse(K) @ err
        tc = Ic @ sk.cross(rc, P)
        tp = -(Ip @ sk.cross(rp, P))
        xc = xc + P * mc
        xp = xp - P * mp
        qc = rotate_by(qc, tc)
        qp = rotate_by(qp, tp)
        dxc = dxc + P * mc
        dxp = dxp - P * mp
        dtc = dtc + tc
        dtp = dtp + tp
        if kind <= JOINT_PRISMATIC:
            # the joint coordinate (revolute 0, prismatic 1): a drive towards the target, then
            # the limits; with target_ke = target_kd = 0 the drive's multiplier stays zero. A
            # revolute angle is in (-pi, pi]: targets and limits must stay inside it.
            qjp = qp * Xjp.q
            qjc = qc * Xjc.q
            ap = xp + sk.quat_rotate(qp, op)
            ac = xc + sk.quat_rotate(qc, oc)
            n = sk.quat_rotate(qjp, axis)
            ux_p, ut_p, ux_c, ut_c, gp, gc = coordinate_response(kind, n, ac - xp, ac - xc, mp, mc, Ip, Ic)
            value = joint_coordinate(kind, axis, ap, qjp, ac, qjc)
            yp, rq_p, _mp0, _Ip0, _c0 = load_body(poses_prev, bodies, p)
            yc, rq_c, _mc0, _Ic0, _c1 = load_body(poses_prev, bodies, c)
            prev = joint_coordinate(kind, axis, yp + sk.quat_rotate(rq_p, op), rq_p * Xjp.q,
                                    yc + sk.quat_rotate(rq_c, oc), rq_c * Xjc.q)
            g = gp * sp + gc * sc
            # the damping acts on the coordinate's motion over the step relative to the target
            # rate's, so with target_ke = 0 it pulls the rate towards target_vel; a hinge that
            # turns through +-pi this step moved by its change less a whole turn
            turn = dt * 0.0
            if kind == JOINT_REVOLUTE:
                if value - prev > 3.141592653589793:
                    turn = turn + 6.283185307179586
                elif value - prev < -3.141592653589793:
                    turn = turn - 6.283185307179586
            dl = multiplier_step(lam[j], value - target[j], value - prev - turn - dt * target_vel[j], g,
                                 joints.target_ke[j], joints.target_kd[j], dt)
            value = value + dl * (gp + gc)
            beyond = value - sk.clamp(value, joints.limit_lower[j], joints.limit_upper[j])
            dlim = -beyond / g
            total = dl + dlim
            dxp = dxp + ux_p * total
            dtp = dtp + ut_p * total
            dxc = dxc + ux_c * total
            dtc = dtc + ut_c * total
    lam_out[j] = lam[j] + dl
    dx[c] += dxc
    dtheta[c] += dtc
    if p >= 0:
        dx[p] += dxp
        dtheta[p] += dtp


@sk.kernel
def apply_body_corrections(poses: AnyArray, dx: AnyArray, dtheta: AnyArray, corr: AnyArray, bodies: Any,
                           q_out: AnyArray, corr_out: AnyArray):
    # The summed corrections of one iteration: the center of mass moves by dx, the rotation
    # turns by dtheta about it. corr sums (dtheta, dx) since the prediction.
    i = sk.tid()
    X = poses[i]
    com = bodies.com[i]
    x = sk.transform_point(X, com) + dx[i]
    q = rotate_by(X.q, dtheta[i])
    q_out[i] = q_out.dtype(x - sk.quat_rotate(q, com), q)
    corr_out[i] = corr[i] + make_spatial(dtheta[i], dx[i])


@sk.kernel
def update_body_velocities(qd_pred: AnyArray, corr: AnyArray, dt: Any, qd_out: AnyArray):
    # (w, v) = (w*, v*) + (summed rotation corrections, summed displacements of the center of
    # mass) / dt: to first order in the corrections what the difference of the poses gives,
    # without subtracting two nearby poses (which cancels dt g and dt w in float32)
    i = sk.tid()
    qd_out[i] = qd_pred[i] + corr[i] / dt


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    transforms, spatials = sk.array(dtype=S.transform), sk.array(dtype=S.spatial)
    vec3s, reals = sk.array(dtype=S.vec3), sk.array(dtype=real)
    return {"body_q": transforms, "body_qd": spatials, "q_out": transforms, "qd_out": spatials, "poses": transforms,
            "poses_prev": transforms, "act": spatials, "corr": spatials, "corr_out": spatials, "qd_pred": spatials,
            "dx": vec3s, "dtheta": vec3s, "joints": S.Joints, "bodies": S.Bodies, "joint_act": reals, "target": reals,
            "target_vel": reals,
            "lam": reals, "lam_out": reals, "gravity": S.vec3, "dt": real}


@functools.cache  # asked for on every launch: a lookup
def xpbd_body_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together),
    and the functions the contact kernels share (generic: they take the caller's types)."""
    return SimpleNamespace(**vars(sk.instantiate(real, __name__)), rotation_vector=rotation_vector, split_of=split_of,
                           load_body=load_body, joint_coordinate=joint_coordinate)
