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

    k = featherstone_kernels(sk.float64)
    k.joint_subspace, k.body_terms, k.joint_forces, k.mass_entries, k.solve, k.substitute, k.integrate
"""

import functools
from types import SimpleNamespace

import simkit as sk
from .bodies import body_kernels, quat_normalize
from .structs import JOINT_BALL, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_UNIVERSAL, model_structs


@functools.cache
def featherstone_kernels(real) -> SimpleNamespace:
    """The generalized-coordinate dynamics kernels for float type ``real``.

    Example::

        k = featherstone_kernels(sk.float32)
        k.solve          # one thread per articulation
    """
    S = model_structs(real)
    vec3, spatial, mat33, quat = S.vec3, S.spatial, S.mat33, sk.quat_of(real)
    transforms = sk.array(dtype=S.transform)
    spatials = sk.array(dtype=spatial)
    vec3s = sk.array(dtype=vec3)
    mat33s = sk.array(dtype=mat33)
    reals = sk.array(dtype=real)
    ints = sk.array(dtype=sk.int32)
    B = body_kernels(real)
    module = f"simkit.kernels.featherstone.{real.__name__}"

    @sk.func
    def motion_cross(a: spatial, b: spatial) -> spatial:
        """The spatial cross product of two motions, ``a x b``."""
        wa = B.top(a)
        wb = B.top(b)
        return B.make_spatial(sk.cross(wa, wb), sk.cross(wa, B.bottom(b)) + sk.cross(B.bottom(a), wb))

    @sk.func
    def force_cross(a: spatial, f: spatial) -> spatial:
        """The spatial cross product of a motion and a force, ``a x* f``."""
        w = B.top(a)
        return B.make_spatial(sk.cross(w, B.top(f)) + sk.cross(B.bottom(a), B.bottom(f)), sk.cross(w, B.bottom(f)))

    @sk.func
    def inertia_times(m: real, h: vec3, J: mat33, a: spatial) -> spatial:
        """The spatial inertia ``(m, h, J)`` applied to the motion ``a``."""
        w = B.top(a)
        v = B.bottom(a)
        return B.make_spatial(J * w + sk.cross(h, v), v * m - sk.cross(h, w))

    @sk.func
    def rotation_column(u: vec3, x: vec3) -> spatial:
        """A unit rotation about the axis ``u`` through the point ``x``."""
        return B.make_spatial(u, sk.cross(x, u))

    @sk.func
    def origin_velocity(X: S.transform, qd: spatial, com: vec3) -> spatial:
        """A body's twist ``(w, v_com)`` as a spatial motion at the world origin."""
        w = B.top(qd)
        return B.make_spatial(w, B.bottom(qd) - sk.cross(w, sk.transform_point(X, com)))

    @sk.kernel(module=module)
    def joint_subspace(body_q: transforms, body_qd: spatials, bodies: S.Bodies, joints: S.Joints,
                       joint_articulation: ints, q_start: ints, qd_start: ints, joint_q: reals, joint_qd: reals,
                       S_out: spatials, c_out: spatials):
        j = sk.tid()
        if joint_articulation[j] < 0:
            return
        kind = joints.kind[j]
        p = joints.parent[j]
        c = joints.child[j]
        Xp = joints.parent_xform[j]
        v_p = spatial(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
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
            s = B.make_spatial(zero, axis)
            S_out[ds] = s
            vJ = s * joint_qd[ds]
        elif kind == JOINT_BALL:
            for k in range(3):
                s = rotation_column(vec3(R[0, k], R[1, k], R[2, k]), x)
                S_out[ds + k] = s
                vJ = vJ + s * joint_qd[ds + k]
        elif kind == JOINT_FREE:
            for k in range(3):
                u = vec3(R[0, k], R[1, k], R[2, k])
                lin = B.make_spatial(zero, u)
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

    @sk.kernel(module=module)
    def body_terms(body_q: transforms, body_qd: spatials, body_f: spatials, bodies: S.Bodies, body_joint: ints,
                   ancestor_start: ints, ancestor_joint: ints, c_joint: spatials, gravity: vec3, f_out: spatials,
                   m_out: reals, h_out: vec3s, J_out: mat33s):
        b = sk.tid()
        if body_joint[b] < 0:
            return
        X = body_q[b]
        R = sk.quat_to_matrix(X.q)
        x = sk.transform_point(X, bodies.com[b])
        m = bodies.mass[b]
        h = x * m
        J = R * bodies.inertia[b] * sk.transpose(R) + (sk.diag(vec3(1.0, 1.0, 1.0)) * sk.dot(x, x) - sk.outer(x, x)) * m
        # the acceleration at zero qdd: gravity as an upward acceleration of the world, plus
        # the velocity products of every joint above the body
        a = B.make_spatial(x * 0.0, -gravity)
        for k in range(ancestor_start[b], ancestor_start[b + 1]):
            a = a + c_joint[ancestor_joint[k]]
        v = origin_velocity(X, body_qd[b], bodies.com[b])
        ext = body_f[b]
        fe = B.make_spatial(B.top(ext) + sk.cross(x, B.bottom(ext)), B.bottom(ext))
        f_out[b] = inertia_times(m, h, J, a) + force_cross(v, inertia_times(m, h, J, v)) - fe
        m_out[b] = m
        h_out[b] = h
        J_out[b] = J

    @sk.func
    def applied_force(joints: S.Joints, j: int, q: real, qd: real, target: real, act: real, dt: real):
        """The generalized force of drive, ``joint_act`` and limit on a 1-dof joint, and what its
        implicit part adds to the joint's diagonal of the mass matrix."""
        ke = joints.target_ke[j]
        kd = joints.target_kd[j]
        # the drive is linearly implicit: its force at q + dt qd', qd' = qd + dt qdd, moves
        # dt kd + dt^2 ke onto the diagonal, so stiff gains stay stable
        tau = ke * (target - q - dt * qd) - kd * qd + act
        diag = dt * kd + dt * dt * ke
        limit = joints.effort_limit[j]
        if tau > limit:
            tau = limit
            diag = real(0.0)
        if tau < -limit:
            tau = -limit
            diag = real(0.0)
        lke = joints.limit_ke[j]
        lkd = joints.limit_kd[j]
        if q < joints.limit_lower[j]:
            tau = tau + lke * (joints.limit_lower[j] - q - dt * qd) - lkd * qd
            diag = diag + dt * lkd + dt * dt * lke
        if q > joints.limit_upper[j]:
            tau = tau + lke * (joints.limit_upper[j] - q - dt * qd) - lkd * qd
            diag = diag + dt * lkd + dt * dt * lke
        return tau, diag

    @sk.kernel(module=module)
    def joint_forces(subtree_start: ints, subtree_body: ints, f_body: spatials, m_body: reals, h_body: vec3s,
                     J_body: mat33s, S_dof: spatials, joints: S.Joints, joint_articulation: ints, q_start: ints,
                     qd_start: ints, joint_q: reals, joint_qd: reals, joint_target: reals, joint_act: reals, dt: real,
                     m_out: reals, h_out: vec3s, J_out: mat33s, rhs_out: reals, diag_out: reals):
        j = sk.tid()
        if joint_articulation[j] < 0:
            return
        # the composite inertia and the summed Newton-Euler forces of the joint's subtree
        F = spatial(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        m = real(0.0)
        h = B.top(F)
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
        tau = real(0.0)
        diag = real(0.0)
        kind = joints.kind[j]
        if kind == JOINT_REVOLUTE or kind == JOINT_PRISMATIC:
            tau, diag = applied_force(joints, j, joint_q[q_start[j]], joint_qd[qd_start[j]], joint_target[j],
                                      joint_act[j], dt)
        for d in range(qd_start[j], qd_start[j + 1]):
            s = S_dof[d]
            rhs_out[d] = tau - (sk.dot(B.top(s), B.top(F)) + sk.dot(B.bottom(s), B.bottom(F)))
            diag_out[d] = diag + joints.armature[j]

    @sk.kernel(module=module)
    def mass_entries(entry_row: ints, entry_col: ints, entry_joint: ints, S_dof: spatials, m_joint: reals,
                     h_joint: vec3s, J_joint: mat33s, diag: reals, M_out: reals):
        e = sk.tid()
        r = entry_row[e]
        k = entry_joint[e]
        value = real(0.0)
        if k >= 0:
            # M_rc = S_r . (I_k S_c), I_k the composite inertia below the deeper of the two joints
            f = inertia_times(m_joint[k], h_joint[k], J_joint[k], S_dof[entry_col[e]])
            s = S_dof[r]
            value = sk.dot(B.top(s), B.top(f)) + sk.dot(B.bottom(s), B.bottom(f))
        if r == entry_col[e]:
            value = value + diag[r]
        M_out[e] = value

    @sk.func
    def cholesky(M: reals, L: reals, n: int, m0: int):
        """``M = L L^T`` for the ``n x n`` block at ``m0``, row by row."""
        for i in range(n):
            for j in range(i + 1):
                s = M[m0 + i * n + j]
                for k in range(j):
                    s = s - L[m0 + i * n + k] * L[m0 + j * n + k]
                if i == j:
                    L[m0 + i * n + i] = sk.sqrt(s)
                else:
                    L[m0 + i * n + j] = s / L[m0 + j * n + j]

    @sk.func
    def substitution(L: reals, b: reals, y: reals, x: reals, n: int, m0: int, d0: int):
        """``L y = b``, then ``L^T x = y``, for the block at ``m0`` and the entries at ``d0``."""
        for i in range(n):
            s = b[d0 + i]
            for k in range(i):
                s = s - L[m0 + i * n + k] * y[d0 + k]
            y[d0 + i] = s / L[m0 + i * n + i]
        for t in range(n):
            i = n - 1 - t
            s = y[d0 + i]
            for k in range(i + 1, n):
                s = s - L[m0 + k * n + i] * x[d0 + k]
            x[d0 + i] = s / L[m0 + i * n + i]

    @sk.kernel(module=module)
    def solve(dof_start: ints, dof_count: ints, entry_start: ints, M: reals, b: reals, L: reals, y: reals,
              x: reals):
        a = sk.tid()
        cholesky(M, L, dof_count[a], entry_start[a])
        substitution(L, b, y, x, dof_count[a], entry_start[a], dof_start[a])

    @sk.kernel(module=module)
    def substitute(dof_start: ints, dof_count: ints, entry_start: ints, L: reals, b: reals, y: reals, x: reals):
        a = sk.tid()
        substitution(L, b, y, x, dof_count[a], entry_start[a], dof_start[a])

    @sk.kernel(module=module)
    def solve_grad(entry_row: ints, entry_col: ints, b_grad: reals, x: reals, M_grad: reals):
        # x = M^-1 b: with b_grad = M^-1 x_grad, M_grad = -b_grad x^T
        e = sk.tid()
        M_grad[e] = M_grad[e] - b_grad[entry_row[e]] * x[entry_col[e]]

    @sk.kernel(module=module)
    def add_to(src: reals, dst: reals):
        i = sk.tid()
        dst[i] = dst[i] + src[i]

    @sk.func
    def turn(r: quat, w: vec3, dt: real) -> quat:
        """The unit quaternion ``r`` advanced by the angular velocity ``w`` (in the frame ``r``
        is expressed in) for ``dt``: ``r + dt (w, 0) r / 2``, renormalized."""
        return quat_normalize(r + quat(w[0], w[1], w[2], 0.0) * r * (0.5 * dt))

    @sk.func
    def new_velocity(joint_qd: reals, qdd: reals, d: int, dt: real) -> vec3:
        """The three velocities from ``d`` on after the step: ``qd + dt qdd``."""
        return vec3(joint_qd[d], joint_qd[d + 1], joint_qd[d + 2]) + vec3(qdd[d], qdd[d + 1], qdd[d + 2]) * dt

    @sk.kernel(module=module)
    def integrate(joints: S.Joints, joint_articulation: ints, q_start: ints, qd_start: ints, joint_q: reals,
                  joint_qd: reals, qdd: reals, dt: real, q_out: reals, qd_out: reals):
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
            r = turn(quat(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2], joint_q[qs + 3]),
                     new_velocity(joint_qd, qdd, ds, dt), dt)
            for k in range(4):
                q_out[qs + k] = r[k]
        elif kind == JOINT_FREE:
            r = turn(quat(joint_q[qs + 3], joint_q[qs + 4], joint_q[qs + 5], joint_q[qs + 6]),
                     new_velocity(joint_qd, qdd, ds + 3, dt), dt)
            v = new_velocity(joint_qd, qdd, ds, dt)
            for k in range(3):
                q_out[qs + k] = joint_q[qs + k] + dt * v[k]
            for k in range(4):
                q_out[qs + 3 + k] = r[k]
        else:
            for k in range(nq):
                q_out[qs + k] = joint_q[qs + k] + dt * (joint_qd[ds + k] + dt * qdd[ds + k])

    return SimpleNamespace(motion_cross=motion_cross, joint_subspace=joint_subspace, body_terms=body_terms,
                           joint_forces=joint_forces, mass_entries=mass_entries, solve=solve,
                           substitute=substitute, solve_grad=solve_grad, add_to=add_to,
                           integrate=integrate)
