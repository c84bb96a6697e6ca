"""Kernels of the generalized-coordinate integrator (:class:`simkit.sim.Featherstone`):
recursive Newton-Euler bias forces, the composite-rigid-body mass matrix, a dense Cholesky
solve per articulation, and the integration of the coordinates.

Everything is in world coordinates, with spatial vectors at the world origin: a motion is
``(w, v)`` (angular velocity, velocity of the material point at the origin), a force
``(n, f)`` (torque about the origin, force). The spatial inertia of a body, or of a subtree
of bodies, is kept as its mass ``m``, first moment ``h = m c`` and rotational inertia about
the origin ``J``: it maps ``(w, v)`` to ``(J w + h x v, m v - h x w)``, and inertias of
bodies add.

Per joint ``j`` the motion subspace ``S`` (one spatial column per degree of freedom, in
``S[d]``) gives the child's velocity ``v_c = v_p + S qd`` and ``c_j``, the velocity-product
acceleration ``dS/dt qd``: ``v_p x (S qd)`` for the columns fixed in the parent (revolute,
prismatic, ball, universal's first axis), plus ``(S_0 qd_0) x (S qd)`` where the first part
of the joint carries the rest (free: the translation carries the rotation's center;
universal: the first axis turns the second).

The kernels up to the mass matrix only write arrays no earlier launch of the step wrote, so
their generated adjoints are exact. The factorization and the substitutions read back what
their own thread wrote, which a Tape refuses to replay: :mod:`simkit.sim.featherstone` runs
them outside the tape and records their adjoint by hand (``solve_grad``: the gradient of
``x = M^-1 b`` is ``b_grad = M^-1 x_grad``, ``M_grad = -b_grad x^T``, one more substitution).

Example::

    k = featherstone_kernels(sk.float64)   # the kernels' float64 overloads, compiled together
    k.joint_subspace, k.body_terms, k.joint_forces, k.mass_entries, k.solve, k.substitute, k.integrate
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .bodies import bottom, make_spatial, quat_normalize, top
from .structs import JOINT_BALL, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_UNIVERSAL, model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints = sk.array(dtype=sk.int32)


@sk.func
def motion_cross(a: Any, b: Any):
    """The spatial cross product of two motions, ``a x b``."""
    wa = top(a)
    wb = top(b)
    return make_spatial(sk.cross(wa, wb), sk.cross(wa, bottom(b)) + sk.cross(bottom(a), wb))


@sk.func
def force_cross(a: Any, f: Any):
    """The spatial cross product of a motion and a force, ``a x* f``."""
    w = top(a)
    return make_spatial(sk.cross(w, top(f)) + sk.cross(bottom(a), bottom(f)), sk.cross(w, bottom(f)))


@sk.func
def inertia_times(m: Any, h: Any, J: Any, a: Any):
    """The spatial inertia ``(m, h, J)`` applied to the motion ``a``."""
    w = top(a)
    v = bottom(a)
    return make_spatial(J * w + sk.cross(h, v), v * m - sk.cross(h, w))


@sk.func
def rotation_column(u: Any, x: Any):
    """A unit rotation about the axis ``u`` through the point ``x``."""
    return make_spatial(u, sk.cross(x, u))


@sk.func
def origin_velocity(X: Any, qd: Any, com: Any):
    """A body's twist ``(w, v_com)`` as a spatial motion at the world origin."""
    w = top(qd)
    return make_spatial(w, bottom(qd) - sk.cross(w, sk.transform_point(X, com)))


@sk.kernel
def joint_subspace(body_q: AnyArray, body_qd: AnyArray, bodies: Any, joints: Any,
                   joint_articulation: ints, q_start: ints, qd_start: ints, joint_q: AnyArray, joint_qd: AnyArray,
                   S_out: AnyArray, c_out: AnyArray):
    j = sk.tid()
    if joint_articulation[j] < 0:
        return
    kind = joints.kind[j]
    p = joints.parent[j]
    c = joints.child[j]
    Xp = joints.parent_xform[j]
    v_p = body_qd.dtype(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if p >= 0:
        Xp = sk.transform_multiply(body_q[p], Xp)
        v_p = origin_velocity(body_q[p], body_qd[p], bodies.com[p])
    x = sk.transform_multiply(body_q[c], joints.child_xform[j]).p
    ds = qd_start[j]
    qs = q_start[j]
    R = sk.quat_to_matrix(Xp.q)
    axis = R * joints.axis[j]
    zero = axis * 0.0
    first = v_p * 0.0
    vJ = first
    if kind == JOINT_REVOLUTE:
        s = rotation_column(axis, x)
        S_out[ds] = s
        vJ = s * joint_qd[ds]
    elif kind == JOINT_PRISMATIC:
        s = make_spatial(zero, axis)
        S_out[ds] = s
        vJ = s * joint_qd[ds]
    elif kind == JOINT_BALL:
        for k in range(3):
            s = rotation_column(type(axis)(R[0, k], R[1, k], R[2, k]), x)
            S_out[ds + k] = s
            vJ = vJ + s * joint_qd[ds + k]
    elif kind == JOINT_FREE:
        for k in range(3):
            u = type(axis)(R[0, k], R[1, k], R[2, k])
            lin = make_spatial(zero, u)
            ang = rotation_column(u, x)
            S_out[ds + k] = lin
            S_out[ds + 3 + k] = ang
            first = first + lin * joint_qd[ds + k]
            vJ = vJ + lin * joint_qd[ds + k] + ang * joint_qd[ds + 3 + k]
    elif kind == JOINT_UNIVERSAL:
        s0 = rotation_column(axis, x)
        turned = sk.quat_rotate(sk.quat_from_axis_angle(joints.axis[j], joint_q[qs]), joints.axis2[j])
        s1 = rotation_column(sk.quat_rotate(Xp.q, turned), x)
        S_out[ds] = s0
        S_out[ds + 1] = s1
        first = s0 * joint_qd[ds]
        vJ = first + s1 * joint_qd[ds + 1]
    c_out[j] = motion_cross(v_p + first, vJ)


@sk.kernel
def body_terms(body_q: AnyArray, body_qd: AnyArray, body_f: AnyArray, bodies: Any, body_joint: ints,
               ancestor_start: ints, ancestor_joint: ints, c_joint: AnyArray, gravity: Any, f_out: AnyArray,
               m_out: AnyArray, h_out: AnyArray, J_out: AnyArray):
    b = sk.tid()
    if body_joint[b] < 0:
        return
    X = body_q[b]
    R = sk.quat_to_matrix(X.q)
    x = sk.transform_point(X, bodies.com[b])
    m = bodies.mass[b]
    h = x * m
    J = R * bodies.inertia[b] * sk.transpose(R) + (sk.diag(type(x)(1.0, 1.0, 1.0)) * sk.dot(x, x) - sk.outer(x, x)) * m
    # the acceleration at zero qdd: gravity as an upward acceleration of the world, plus
    # the velocity products of every joint above the body
    a = make_spatial(x * 0.0, -gravity)
    for k in range(ancestor_start[b], ancestor_start[b + 1]):
        a = a + c_joint[ancestor_joint[k]]
    v = origin_velocity(X, body_qd[b], bodies.com[b])
    ext = body_f[b]
    fe = make_spatial(top(ext) + sk.cross(x, bottom(ext)), bottom(ext))
    f_out[b] = inertia_times(m, h, J, a) + force_cross(v, inertia_times(m, h, J, v)) - fe
    m_out[b] = m
    h_out[b] = h
    J_out[b] = J


@sk.func
def coordinate_force(joints: Any, j: int, q: Any, qd: Any, lower: Any, upper: Any, target: Any, target_vel: Any,
                     act: Any, dt: Any, limit_penalty: int):
    """The generalized force of drive (towards position ``target`` and rate ``target_vel``),
    act and limit ``[lower, upper]`` on one coordinate (revolute, prismatic, a universal
    angle; the limit only with ``limit_penalty`` 1, 0: the contact solve's limit rows hold
    it), and what its implicit part adds to the coordinate's diagonal of the mass matrix."""
    ke = joints.target_ke[j]
    kd = joints.target_kd[j]
    # the drive is linearly implicit: its force at q + dt qd', qd' = qd + dt qdd, moves
    # dt kd + dt^2 ke onto the diagonal, so stiff gains stay stable; the target rate is a
    # constant of the step, so it only enters here
    tau = ke * (target - q - dt * qd) + kd * (target_vel - qd) + act
    diag = dt * kd + dt * dt * ke
    limit = joints.effort_limit[j]
    if tau > limit:
        tau = limit
        diag = type(q)(0.0)
    if tau < -limit:
        tau = -limit
        diag = type(q)(0.0)
    lke = joints.limit_ke[j]
    lkd = joints.limit_kd[j]
    if limit_penalty == 0:
        lke = lke * 0.0
        lkd = lkd * 0.0
    if q < lower:
        tau = tau + lke * (lower - q - dt * qd) - lkd * qd
        diag = diag + dt * lkd + dt * dt * lke
    if q > upper:
        tau = tau + lke * (upper - q - dt * qd) - lkd * qd
        diag = diag + dt * lkd + dt * dt * lke
    return tau, diag


@sk.func
def friction_force(friction: Any, qd: Any, scale: Any):
    """Dry friction on one rate: ``-c qd`` with ``c = friction / max(|qd|, scale)``, taken
    at the step's end velocity (``c dt`` goes onto the diagonal). Sliding (``|qd| >
    scale``), its magnitude is ``friction`` (to first order in ``dt``) and it cannot reverse
    the motion on its own; slower, it is a stiff damper, so a joint held by less than
    ``friction`` creeps at below ``scale``."""
    c = friction / sk.max(sk.abs(qd), scale)
    return -c * qd, c


@sk.func
def cone_limit(joints: Any, j: int, r: Any, w: Any, dt: Any, limit_penalty: int):
    """A ball joint's limit on its rotation angle: the torque along the rotation's unit axis
    ``u`` (in the parent's joint frame) once the angle of the quaternion ``r`` passes
    ``limit_upper``, ``u``, and the gain ``k`` of its implicit part ``k u u^T`` (all zero
    unless ``limit_penalty`` is 1)."""
    upper = joints.limit_upper[j]
    zero = w * 0.0
    tau = zero
    u = zero
    k = w[0] * 0.0
    if upper < 3.14159 and limit_penalty == 1:
        if r[3] < 0.0:
            r = -r
        v = type(w)(r[0], r[1], r[2])
        h = sk.sin(0.5 * upper)
        # |v| = sin(angle / 2): compare squares, so nothing divides by |v| at the identity
        if sk.dot(v, v) > h * h:
            s = sk.sqrt(sk.dot(v, v))
            u = v / s
            angle = 2.0 * sk.atan2(s, r[3])
            rate = sk.dot(u, w)
            lke = joints.limit_ke[j]
            lkd = joints.limit_kd[j]
            tau = u * (lke * (upper - angle - dt * rate) - lkd * rate)
            k = dt * lkd + dt * dt * lke
    return tau, u, k


@sk.func
def rotation_vector(q: Any):
    """The rotation vector (unit axis times angle, the angle in ``[0, pi]``: the shortest way)
    of the quaternion ``q`` of any length and either sign."""
    if q[3] < 0.0:
        q = -q
    v = sk.vector(3, type(q[3]))(q[0], q[1], q[2])
    vv = sk.dot(v, v)
    ww = q[3] * q[3]
    scale = q[3] * 0.0
    # angle / |v| = 2 atan2(|v|, w) / |v|; near the identity (|v| / w < 1e-4) its series,
    # whose error is below 1e-16 there: nothing divides by |v|, no sqrt'(0) in the adjoint
    if vv > 1.0e-8 * ww:
        s = sk.sqrt(vv)
        scale = 2.0 * sk.atan2(s, q[3]) / s
    else:
        scale = (2.0 / q[3]) * (1.0 - vv / (3.0 * ww))
    return v * scale


@sk.func
def quat_from_rotation_vector(a: Any, like: Any):
    """The unit quaternion (of ``like``'s type) turning by ``|a|`` about ``a``."""
    aa = sk.dot(a, a)
    # sin(angle / 2) / angle and cos(angle / 2); below 1e-4 rad their series (error < 1e-18)
    half = aa * 0.0
    c = aa * 0.0
    if aa > 1.0e-8:
        angle = sk.sqrt(aa)
        half = sk.sin(0.5 * angle) / angle
        c = sk.cos(0.5 * angle)
    else:
        half = 0.5 - aa / 48.0
        c = 1.0 - aa / 8.0
    return type(like)(a[0] * half, a[1] * half, a[2] * half, c)


@sk.func
def ball_drive(joints: Any, j: int, r: Any, target: Any, target_w: Any, w: Any, act: Any, dt: Any):
    """A ball joint's drive: the spring ``target_ke e``, ``e`` the rotation vector of
    ``exp(target) r^-1`` (the rotation from ``r`` to the target, in the parent's joint
    frame), taken at the step's end to first order (``e - dt w'``: ``dt kd + dt^2 ke``, the
    third output, goes onto each of the joint's diagonal entries); and the factor (1, or
    below when clamped) that brings the norm of spring, damping ``target_kd (target_w - w)``
    and ``joint_dof_act`` together down to ``effort_limit`` (clamped, the implicit part is
    dropped)."""
    ke = joints.target_ke[j]
    kd = joints.target_kd[j]
    e = rotation_vector(quat_from_rotation_vector(target, r) * type(r)(-r[0], -r[1], -r[2], r[3]))
    spring = (e - w * dt) * ke
    tau = act + spring + kd * (target_w - w)
    diag = dt * kd + dt * dt * ke
    fraction = kd * 0.0 + 1.0
    limit = joints.effort_limit[j]
    # compare squares: no sqrt'(0) in the adjoint of an unclamped (or zero) torque
    if sk.dot(tau, tau) > limit * limit:
        fraction = limit / sk.sqrt(sk.dot(tau, tau))
        diag = dt * 0.0
    return spring, fraction, diag


@sk.kernel
def joint_forces(subtree_start: ints, subtree_body: ints, f_body: AnyArray, m_body: AnyArray, h_body: AnyArray,
                 J_body: AnyArray, S_dof: AnyArray, joints: Any, joint_articulation: ints, q_start: ints,
                 qd_start: ints, joint_q: AnyArray, joint_qd: AnyArray, joint_target: AnyArray,
                 joint_target_vel: AnyArray, joint_act: AnyArray, joint_dof_target: AnyArray,
                 joint_dof_target_vel: AnyArray, joint_dof_act: AnyArray, dt: Any, friction_scale: Any,
                 limit_penalty: int, m_out: AnyArray, h_out: AnyArray, J_out: AnyArray, rhs_out: AnyArray,
                 diag_out: AnyArray, block_out: AnyArray, implicit_out: AnyArray):
    j = sk.tid()
    if joint_articulation[j] < 0:
        return
    # the composite inertia and the summed Newton-Euler forces of the joint's subtree
    F = f_body.dtype(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    m = m_body.dtype(0.0)
    h = top(F)
    J = sk.outer(h, h)
    for k in range(subtree_start[j], subtree_start[j + 1]):
        b = subtree_body[k]
        F = F + f_body[b]
        m = m + m_body[b]
        h = h + h_body[b]
        J = J + J_body[b]
    m_out[j] = m
    h_out[j] = h
    J_out[j] = J
    kind = joints.kind[j]
    qs = q_start[j]
    ds = qd_start[j]
    cone = h * 0.0
    axis = cone
    gain = m * 0.0
    spring = cone
    fraction = gain + 1.0
    drive_diag = gain
    if kind == JOINT_BALL:
        r = sk.quat_of(joint_q.dtype)(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2], joint_q[qs + 3])
        w = type(h)(joint_qd[ds], joint_qd[ds + 1], joint_qd[ds + 2])
        cone, axis, gain = cone_limit(joints, j, r, w, dt, limit_penalty)
        target = type(h)(joint_dof_target[ds], joint_dof_target[ds + 1], joint_dof_target[ds + 2])
        target_w = type(h)(joint_dof_target_vel[ds], joint_dof_target_vel[ds + 1], joint_dof_target_vel[ds + 2])
        act = type(h)(joint_dof_act[ds], joint_dof_act[ds + 1], joint_dof_act[ds + 2])
        spring, fraction, drive_diag = ball_drive(joints, j, r, target, target_w, w, act, dt)
    for d in range(ds, qd_start[j + 1]):
        k = d - ds
        qd = joint_qd[d]
        tau = joint_dof_act[d]
        diag = joint_q.dtype(0.0)
        if kind == JOINT_REVOLUTE or kind == JOINT_PRISMATIC:
            tau, diag = coordinate_force(joints, j, joint_q[qs], qd, joints.limit_lower[j], joints.limit_upper[j],
                                         joint_target[j] + joint_dof_target[d],
                                         joint_target_vel[j] + joint_dof_target_vel[d], joint_act[j] + tau, dt,
                                         limit_penalty)
        elif kind == JOINT_UNIVERSAL:
            lower = joints.limit_lower[j]
            upper = joints.limit_upper[j]
            if k == 1:
                lower = joints.limit2_lower[j]
                upper = joints.limit2_upper[j]
            tau, diag = coordinate_force(joints, j, joint_q[qs + k], qd, lower, upper, joint_dof_target[d],
                                         joint_dof_target_vel[d], tau, dt, limit_penalty)
        elif kind == JOINT_BALL:
            kd = joints.target_kd[j]
            if fraction < 1.0:
                tau = (tau + spring[k] + kd * (joint_dof_target_vel[d] - qd)) * fraction + cone[k]
            else:
                tau = tau + cone[k] + spring[k] + kd * (joint_dof_target_vel[d] - qd)
            diag = drive_diag
        block_out[d] = axis * (axis[k] * gain)
        rub, c = friction_force(joints.friction[j], qd, friction_scale)
        s = S_dof[d]
        rhs_out[d] = tau + rub - (sk.dot(top(s), top(F)) + sk.dot(bottom(s), bottom(F)))
        diag_out[d] = diag + dt * c + joints.armature[j]
        implicit_out[d] = diag + dt * c


@sk.kernel
def mass_entries(entry_row: ints, entry_col: ints, entry_joint: ints, entry_local: ints, S_dof: AnyArray,
                 m_joint: AnyArray, h_joint: AnyArray, J_joint: AnyArray, diag: AnyArray, block: AnyArray,
                 implicit: AnyArray, M_out: AnyArray, M0_out: AnyArray):
    # the joint-space mass matrix with the implicit parts of drives, damping and friction
    # (diag, block), and M0 without those on its diagonal (the constraint solve sees that
    # one, as MuJoCo's Euler does)
    e = sk.tid()
    r = entry_row[e]
    k = entry_joint[e]
    value = M_out.dtype(0.0)
    if k >= 0:
        # M_rc = S_r . (I_k S_c), I_k the composite inertia below the deeper of the two joints
        f = inertia_times(m_joint[k], h_joint[k], J_joint[k], S_dof[entry_col[e]])
        s = S_dof[r]
        value = sk.dot(top(s), top(f)) + sk.dot(bottom(s), bottom(f))
    plain = value
    if r == entry_col[e]:
        value = value + diag[r]
        plain = value - implicit[r]
    if entry_local[e] >= 0:
        # the implicit part of a ball joint's limit couples its three rates
        value = value + block[r][entry_local[e]]
        plain = plain + block[r][entry_local[e]]
    M_out[e] = value
    M0_out[e] = plain


@sk.kernel
def implicit_times(implicit: AnyArray, qdd: AnyArray, out: AnyArray):
    d = sk.tid()
    out[d] = implicit[d] * qdd[d]


@sk.kernel
def difference(a: AnyArray, b: AnyArray, out: AnyArray):
    d = sk.tid()
    out[d] = a[d] - b[d]


@sk.func
def cholesky(M: AnyArray, L: AnyArray, n: int, m0: int):
    """``M = L L^T`` for the ``n x n`` block at ``m0``, column by column: each column's
    updates of the columns right of it are independent of each other (a row's dot product
    would be one chain of dependent multiply-adds to wait on). The diagonal is kept as its
    reciprocals, ``1 / L_jj``: the substitutions multiply by them, where a division would
    stall each step of their chains for its latency."""
    for i in range(n):
        for j in range(i + 1):
            L[m0 + i * n + j] = M[m0 + i * n + j]
    for j in range(n):
        inv = 1.0 / sk.sqrt(L[m0 + j * n + j])
        L[m0 + j * n + j] = inv
        for i in range(j + 1, n):
            L[m0 + i * n + j] = L[m0 + i * n + j] * inv
        for i in range(j + 1, n):
            lij = L[m0 + i * n + j]
            for k in range(j + 1, i + 1):
                L[m0 + i * n + k] = L[m0 + i * n + k] - lij * L[m0 + k * n + j]


@sk.func
def forward_substitution(L: AnyArray, b: AnyArray, y: AnyArray, n: int, m0: int, d0: int):
    """``L y = b`` for the block at ``m0`` (its diagonal inverted, see ``cholesky``) and the
    entries at ``d0``, column by column."""
    for i in range(n):
        y[d0 + i] = b[d0 + i]
    for j in range(n):
        z = y[d0 + j] * L[m0 + j * n + j]
        y[d0 + j] = z
        for i in range(j + 1, n):
            y[d0 + i] = y[d0 + i] - L[m0 + i * n + j] * z


@sk.func
def back_substitution(L: AnyArray, y: AnyArray, x: AnyArray, n: int, m0: int, d0: int):
    """``L^T x = y`` for the block at ``m0`` (its diagonal inverted, see ``cholesky``) and the
    entries at ``d0``, column by column."""
    for i in range(n):
        x[d0 + i] = y[d0 + i]
    for t in range(n):
        j = n - 1 - t
        z = x[d0 + j] * L[m0 + j * n + j]
        x[d0 + j] = z
        for i in range(j):
            x[d0 + i] = x[d0 + i] - L[m0 + j * n + i] * z


@sk.func
def substitution(L: AnyArray, b: AnyArray, y: AnyArray, x: AnyArray, n: int, m0: int, d0: int):
    """``L y = b``, then ``L^T x = y``, for the block at ``m0`` and the entries at ``d0``."""
    forward_substitution(L, b, y, n, m0, d0)
    back_substitution(L, y, x, n, m0, d0)


@sk.kernel
def solve(dof_start: ints, dof_count: ints, entry_start: ints, M: AnyArray, b: AnyArray, L: AnyArray, y: AnyArray,
          x: AnyArray):
    a = sk.tid()
    cholesky(M, L, dof_count[a], entry_start[a])
    substitution(L, b, y, x, dof_count[a], entry_start[a], dof_start[a])


@sk.kernel(enable_backward=False)   # outside Tapes: under one the three steps are recorded apart
def implicit_solve(dof_start: ints, dof_count: ints, entry_start: ints, M: AnyArray, implicit: AnyArray,
                   qdd0: AnyArray, z: AnyArray, L: AnyArray, y: AnyArray, x: AnyArray, qdd: AnyArray):
    # qdd = qdd0 - M^-1 (D qdd0) per articulation: implicit_times, solve and difference in one
    # launch, the same operations in the same order (the same bits)
    a = sk.tid()
    n = dof_count[a]
    d0 = dof_start[a]
    for k in range(n):
        z[d0 + k] = implicit[d0 + k] * qdd0[d0 + k]
    cholesky(M, L, n, entry_start[a])
    substitution(L, z, y, x, n, entry_start[a], d0)
    for k in range(n):
        qdd[d0 + k] = qdd0[d0 + k] - x[d0 + k]


@sk.kernel
def substitute(dof_start: ints, dof_count: ints, entry_start: ints, L: AnyArray, b: AnyArray, y: AnyArray, x: AnyArray):
    a = sk.tid()
    substitution(L, b, y, x, dof_count[a], entry_start[a], dof_start[a])


@sk.kernel
def solve_grad(entry_row: ints, entry_col: ints, b_grad: AnyArray, x: AnyArray, M_grad: AnyArray):
    # x = M^-1 b: with b_grad = M^-1 x_grad, M_grad = -b_grad x^T
    e = sk.tid()
    M_grad[e] = M_grad[e] - b_grad[entry_row[e]] * x[entry_col[e]]


@sk.kernel
def add_to(src: AnyArray, dst: AnyArray):
    i = sk.tid()
    dst[i] = dst[i] + src[i]


@sk.func
def turn(r: Any, w: Any, dt: Any):
    """The unit quaternion ``r`` advanced by the angular velocity ``w`` (in the frame ``r``
    is expressed in) for ``dt``: ``r + dt (w, 0) r / 2``, renormalized."""
    return quat_normalize(r + type(r)(w[0], w[1], w[2], 0.0) * r * (0.5 * dt))


@sk.func
def new_velocity(joint_qd: AnyArray, qdd: AnyArray, d: int, dt: Any):
    """The three velocities from ``d`` on after the step: ``qd + dt qdd``."""
    vec3 = sk.vector(3, joint_qd.dtype)
    return vec3(joint_qd[d], joint_qd[d + 1], joint_qd[d + 2]) + vec3(qdd[d], qdd[d + 1], qdd[d + 2]) * dt


@sk.kernel
def integrate(joints: Any, joint_articulation: ints, q_start: ints, qd_start: ints, joint_q: AnyArray,
              joint_qd: AnyArray, qdd: AnyArray, dt: Any, q_out: AnyArray, qd_out: AnyArray):
    j = sk.tid()
    qs = q_start[j]
    ds = qd_start[j]
    nq = q_start[j + 1] - qs
    nd = qd_start[j + 1] - ds
    kind = joints.kind[j]
    if joint_articulation[j] < 0:
        for k in range(nq):
            q_out[qs + k] = joint_q[qs + k]
        for k in range(nd):
            qd_out[ds + k] = joint_qd[ds + k]
        return
    for k in range(nd):
        qd_out[ds + k] = joint_qd[ds + k] + dt * qdd[ds + k]
    if kind == JOINT_BALL:
        r = turn(sk.quat_of(joint_q.dtype)(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2], joint_q[qs + 3]),
                 new_velocity(joint_qd, qdd, ds, dt), dt)
        for k in range(4):
            q_out[qs + k] = r[k]
    elif kind == JOINT_FREE:
        r = turn(sk.quat_of(joint_q.dtype)(joint_q[qs + 3], joint_q[qs + 4], joint_q[qs + 5], joint_q[qs + 6]),
                 new_velocity(joint_qd, qdd, ds + 3, dt), dt)
        v = new_velocity(joint_qd, qdd, ds, dt)
        for k in range(3):
            q_out[qs + k] = joint_q[qs + k] + dt * v[k]
        for k in range(4):
            q_out[qs + 3 + k] = r[k]
    else:
        for k in range(nq):
            q_out[qs + k] = joint_q[qs + k] + dt * (joint_qd[ds + k] + dt * qdd[ds + k])


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    transforms, spatials = sk.array(dtype=S.transform), sk.array(dtype=S.spatial)
    vec3s, mat33s, reals = sk.array(dtype=S.vec3), sk.array(dtype=S.mat33), sk.array(dtype=real)
    types = {"body_q": transforms, "bodies": S.Bodies, "joints": S.Joints, "gravity": S.vec3, "dt": real,
             "friction_scale": real, "block_out": vec3s, "block": vec3s}
    spatial_names = ["body_qd", "body_f", "S_out", "c_out", "c_joint", "f_out", "f_body", "S_dof"]
    types.update(dict.fromkeys(spatial_names, spatials))
    types.update(dict.fromkeys(["h_out", "h_body", "h_joint"], vec3s))
    types.update(dict.fromkeys(["J_out", "J_body", "J_joint"], mat33s))
    types.update(dict.fromkeys(["joint_q", "joint_qd", "joint_target", "joint_target_vel", "joint_act",
                                "joint_dof_target", "joint_dof_target_vel",
                                "joint_dof_act", "m_out", "m_body", "m_joint", "rhs_out", "diag_out", "diag", "M_out",
                                "M0_out", "M", "b", "L", "y", "x", "b_grad", "M_grad", "src", "dst", "qdd", "q_out",
                                "qd_out", "implicit_out", "implicit", "a", "out", "qdd0", "z"],
                               reals))
    return types


@functools.cache  # asked for on every launch: a lookup
def featherstone_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together).

    Example::

        k = featherstone_kernels(sk.float32)
        k.solve          # one thread per articulation
    """
    return sk.instantiate(real, __name__)
