"""Kernels of the constraint-based contact solve of :class:`simkit.sim.Featherstone`
(``contact="constraint"``), MuJoCo's soft-constraint model in joint space.

The active slots of :mod:`simkit.kernels.contact_rows` are compacted into a list of at most
``max_contacts`` contacts, followed by the active joint limits of
:mod:`simkit.kernels.limit_rows` (each a ``condim`` 1 contact whose row is on the joint's
rates, its inverse weight the dof's). Contact ``c`` owns rows ``4 c .. 4 c + 3``: with ``condim`` 3 the
four edges of the pyramidal friction cone, ``J_n +- mu J_t1`` and ``J_n +- mu J_t2`` (forces
>= 0; ``condim`` 4 and 6 the same, without torsional or rolling friction), with ``condim`` 1
the normal alone (row ``4 c``; the other three carry no force); with the elliptic cone the
normal and the two tangents (row 3 unused), solved as one block inside ``|f_t| <= mu f_n``.
Per row: the Jacobian ``J`` (``rows x dofs``, dense) from the motion subspaces of the dofs
that move each body, ``Y = L^-1 J^T`` by the articulation's Cholesky factor ``M = L L^T``
(``half_rows``; under a Tape also ``X = L^-T Y = M^-1 J^T``, ``minv_rows``, which the
backward pass reads), the Delassus matrix ``A = J M^-1 J^T = Y^T Y`` (never formed:
Gauss-Seidel reads ``A f`` as ``Y^T (Y f)``), and MuJoCo's reference acceleration
``aref = -B (J v) - K d(r) r`` and regularizer ``R``. The dual
``min 0.5 f^T (A + R) f + f^T (J a0 - aref)``, ``f >= 0``, is solved by projected
Gauss-Seidel, warm-started from each slot's force of the previous step; then
``qdd = a0 + L^-T (Y f) = a0 + X f`` (``constrained_qdd``).

Example::

    k = contact_solve_kernels(sk.float64)
    k.rows, k.half_rows, k.pgs, k.constrained_qdd
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .bodies import bottom, top
from .featherstone import back_substitution, forward_substitution, substitution
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints = sk.array(dtype=sk.int32)

ROWS_PER_CONTACT = 4


@sk.kernel
def compact(slot_active: ints, contact_slots: int, slot_count: int, max_contacts: int, contacts: int,
            warm: AnyArray, contact_slot: ints, count: ints, needed: ints, slot_force: AnyArray):
    # one thread: the active slots in ascending order, at most max_contacts of the contact
    # slots (the first contact_slots; none while contacts is 0) and every active limit slot
    # after them. The warm start: an active slot's force of the step that wrote the input
    # state (warm) is where the solve starts; an inactive slot forgets its force (a contact
    # made again starts from zero). needed[0] keeps the most active contacts seen, so the
    # host can tell that the cap dropped some
    n = int(0)
    active = int(0)
    for s in range(slot_count):
        on = slot_active[s]
        if s < contact_slots and contacts == 0:
            on = 0
        if on == 1:
            if s < contact_slots:
                active = active + 1
                if active <= max_contacts:
                    contact_slot[n] = s
                    n = n + 1
            else:
                contact_slot[n] = s
                n = n + 1
        for e in range(ROWS_PER_CONTACT):
            value = slot_force.dtype(0.0)
            if on != 0:
                value = warm[ROWS_PER_CONTACT * s + e]
            slot_force[ROWS_PER_CONTACT * s + e] = value
    count[0] = n
    if active > needed[0]:
        needed[0] = active


@sk.func
def tangents(n: Any, given: Any):
    """Two unit tangents completing the normal ``n`` to a right-handed frame: the first is
    ``given`` when it is nonzero (a capsule's axis on a plane, as MuJoCo frames it), else
    MuJoCo's default, the world y axis, or z when ``n`` is near y, made orthogonal."""
    t1 = given
    if sk.dot(given, given) == 0.0:
        t = n * 0.0
        if sk.abs(n[1]) < 0.5:
            t[1] = 1.0
        else:
            t[2] = 1.0
        t1 = sk.normalize(t - n * sk.dot(n, t))
    return t1, sk.cross(n, t1)


@sk.func
def row_direction(n: Any, tangent: Any, mu: Any, e: int, condim: int, elliptic: int):
    """The direction of row ``e`` of a contact: the normal (``condim`` 1), else the pyramid
    edge ``n +- mu t`` (``condim`` 3; 4 and 6 too, without their torsional and rolling rows),
    or with the elliptic cone the normal, the two tangents and nothing (row 3)."""
    u = n
    if condim >= 3 and elliptic == 1:
        t1, t2 = tangents(n, tangent)
        if e == 1:
            u = t1
        elif e == 2:
            u = t2
        elif e == 3:
            u = n * 0.0
    elif condim >= 3:
        t1, t2 = tangents(n, tangent)
        t = t1
        if e >= 2:
            t = t2
        if e % 2 == 1:
            t = -t
        u = n + t * mu
    return u


@sk.func
def point_velocity(S_dof: AnyArray, dof_body: ints, nb: int, d: int, body: int, p: Any):
    """The velocity of the material point at ``p`` of ``body`` per unit rate of dof ``d``
    (zero when the dof does not move the body)."""
    value = p * 0.0
    if body >= 0:
        if dof_body[d * nb + body] == 1:
            s = S_dof[d]
            value = bottom(s) + sk.cross(top(s), p)
    return value


@sk.kernel
def body_jacobian(body_q: AnyArray, bodies: Any, S_dof: AnyArray, dof_body: ints, nb: int, nd: int, J: AnyArray):
    # rows 6 b .. 6 b + 2: the velocity of body b's center of mass along x, y, z; rows 6 b + 3
    # .. 6 b + 5: its angular velocity about x, y, z
    row, d = sk.tid()
    b = row // 6
    k = row - 6 * b
    x = sk.transform_point(body_q[b], bodies.com[b])
    u = x * 0.0
    value = u[0]
    if dof_body[d * nb + b] == 1:
        s = S_dof[d]
        if k < 3:
            u[k] = 1.0
            value = sk.dot(u, bottom(s) + sk.cross(top(s), x))
        else:
            u[k - 3] = 1.0
            value = sk.dot(u, top(s))
    J[row * nd + d] = value


@sk.kernel
def minv_rows(count: ints, per: int, arts: int, dof_start: ints, dof_count: ints, entry_start: ints, nd: int,
              L: AnyArray, J: AnyArray, Y: AnyArray, X: AnyArray):
    # X_row = M^-1 J_row^T, articulation by articulation (M is block diagonal), one thread per
    # row (a 1-D launch: the rows past the active ones leave at once, where a thread per row
    # and articulation cost 20 ns each); an articulation the row does not touch gets zeros
    # without a substitution (a contact touches at most two)
    row = sk.tid()
    if row >= count[0] * per:
        return
    for a in range(arts):
        d0 = row * nd + dof_start[a]
        touched = False
        for k in range(dof_count[a]):
            if J[d0 + k] != 0.0:
                touched = True
        if touched:
            substitution(L, J, Y, X, dof_count[a], entry_start[a], d0)
        else:
            for k in range(dof_count[a]):
                Y[d0 + k] = Y.dtype(0.0)
                X[d0 + k] = X.dtype(0.0)


@sk.func
def rows_at(A: AnyArray, r0: int, nd: int, d: int):
    """Entry ``d`` of the four rows of a contact from ``r0``, as one vector."""
    vec4 = sk.vector(4, A.dtype)
    return vec4(A[r0 + d], A[r0 + nd + d], A[r0 + 2 * nd + d], A[r0 + 3 * nd + d])


@sk.func
def basis_at(A: AnyArray, r0: int, nd: int, d: int, pyramid: bool):
    """Entry ``d`` of the three basis rows of a contact's four rows from ``r0``: of a
    pyramid's edges ``n +- mu t1``, ``n +- mu t2`` the rows ``n``, ``mu t1``, ``mu t2``;
    otherwise its first three rows (the fourth carries nothing)."""
    vec3 = sk.vector(3, A.dtype)
    u = rows_at(A, r0, nd, d)
    if pyramid:
        return vec3(0.5 * (u[0] + u[1]), 0.5 * (u[0] - u[1]), 0.5 * (u[2] - u[3]))
    return vec3(u[0], u[1], u[2])


@sk.kernel
def half_rows(count: ints, arts: int, dof_start: ints, dof_count: ints, entry_start: ints, nd: int,
              L: AnyArray, J: AnyArray, Y: AnyArray):
    # Y_row = L^-1 J_row^T, half of minv_rows' substitution: the solve needs no more, as the
    # Delassus matrix is Y Y^T and the constrained acceleration a0 + L^-T (Y^T f)
    # (constrained_qdd), one back substitution for all rows. One thread per contact, its
    # four rows side by side: four independent chains of multiply-adds, where a row alone
    # waits on each. An articulation the
    # contact does not touch gets zeros without a substitution (a contact touches at most two)
    c = sk.tid()
    if c >= count[0]:
        return
    r0 = c * ROWS_PER_CONTACT * nd
    for a in range(arts):
        n = dof_count[a]
        m0 = entry_start[a]
        d0 = dof_start[a]
        touched = False
        for k in range(n):
            for e in range(ROWS_PER_CONTACT):
                if J[r0 + e * nd + d0 + k] != 0.0:
                    touched = True
        for i in range(n):
            s = rows_at(J, r0, nd, d0 + i) * 0.0
            if touched:
                s = rows_at(J, r0, nd, d0 + i)
                for k in range(i):
                    s = s - rows_at(Y, r0, nd, d0 + k) * L[m0 + i * n + k]
                s = s * L[m0 + i * n + i]   # the factor's diagonal is kept inverted
            for e in range(ROWS_PER_CONTACT):
                Y[r0 + e * nd + d0 + i] = s[e]


@sk.kernel
def back_rows(count: ints, per: int, arts: int, dof_start: ints, dof_count: ints, entry_start: ints, nd: int,
              L: AnyArray, Y: AnyArray, X: AnyArray):
    # X_row = L^-T Y_row = M^-1 J_row^T (under a Tape: the backward pass reads it)
    row = sk.tid()
    if row >= count[0] * per:
        return
    for a in range(arts):
        back_substitution(L, Y, X, dof_count[a], entry_start[a], row * nd + dof_start[a])


@sk.kernel
def constrained_qdd(dof_start: ints, dof_count: ints, entry_start: ints, L: AnyArray, a0: AnyArray, w: AnyArray,
                    qdd: AnyArray):
    # one thread per articulation: qdd = a0 + L^-T w, with w = Y^T f from the solve (= a0 + X f)
    a = sk.tid()
    back_substitution(L, w, qdd, dof_count[a], entry_start[a], dof_start[a])
    for k in range(dof_count[a]):
        qdd[dof_start[a] + k] = qdd[dof_start[a] + k] + a0[dof_start[a] + k]


@sk.kernel
def body_invweight(nd: int, J: AnyArray, X: AnyArray, invweight: AnyArray):
    # MuJoCo's body_invweight0: the mean diagonal of the translational and of the rotational
    # blocks of J M^-1 J^T at the body's center of mass
    b = sk.tid()
    tran = J.dtype(0.0)
    rot = J.dtype(0.0)
    for k in range(6):
        row = 6 * b + k
        v = J.dtype(0.0)
        for d in range(nd):
            v = v + J[row * nd + d] * X[row * nd + d]
        if k < 3:
            tran = tran + v
        else:
            rot = rot + v
    invweight[2 * b] = tran / 3.0
    invweight[2 * b + 1] = rot / 3.0


@sk.func
def impedance(solimp: Any, r: Any):
    """MuJoCo's impedance ``d(r)`` in ``[dmin, dmax]`` of the violation ``r`` from ``solimp =
    (dmin, dmax, width, mid, power)``: ``dmin`` at ``r = 0``, ``dmax`` from ``|r| >= width``
    on, between them a sigmoid of two power-law halves meeting at ``mid``."""
    dmin = sk.clamp(solimp[0], 0.0001, 0.9999)
    dmax = sk.clamp(solimp[1], 0.0001, 0.9999)
    width = solimp[2]
    mid = solimp[3]
    power = solimp[4]
    x = sk.abs(r) / sk.max(width, 1.0e-15)
    d = dmax
    if x < 1.0:
        y = x
        if power > 1.0:
            if x <= mid:
                y = sk.pow(x, power) / sk.pow(mid, power - 1.0)
            else:
                y = 1.0 - sk.pow(1.0 - x, power) / sk.pow(1.0 - mid, power - 1.0)
        d = dmin + y * (dmax - dmin)
    return d


@sk.kernel
def rows(count: ints, contact_slot: ints, slot_body: ints, slot_point: AnyArray, slot_normal: AnyArray,
         slot_tangent: AnyArray, slot_dist: AnyArray, slot_mu: AnyArray, slot_condim: ints, slot_solref: AnyArray,
         slot_solimp: AnyArray, slot_margin: AnyArray, slot_dof: ints, invweight: AnyArray, dof_invweight: AnyArray,
         elliptic: int, impratio: Any, dt: Any, S_dof: AnyArray, dof_body: ints, nb: int, nd: int, qd: AnyArray,
         a0: AnyArray, J: AnyArray, b_out: AnyArray, R_out: AnyArray):
    # one thread per contact, its four rows at once. The Jacobian: the relative velocity of
    # the contact point per unit rate of each dof is shared by the rows, each its direction's
    # share of it. A row that carries no force (rows 1 to 3 of condim 1) is zero, so no solve
    # moves it. A limit slot (slot_dof[2 s] >= 0): its coefficients slot_normal[s] on
    # slot_dof[2 s + 1] dofs from slot_dof[2 s], in its first row. Then the reference terms:
    # the contact's impedance, stiffness and regularizer once, each row's reference
    # acceleration from its velocity J qd (summed with J, never read back)
    row4 = sk.vector(4, J.dtype)
    c = sk.tid()
    if c >= count[0]:
        return
    s = contact_slot[c]
    condim = slot_condim[s]
    n = slot_normal[s]
    mu = slot_mu[s]
    u0 = row_direction(n, slot_tangent[s], mu, 0, condim, elliptic)
    u1 = row_direction(n, slot_tangent[s], mu, 1, condim, elliptic)
    u2 = row_direction(n, slot_tangent[s], mu, 2, condim, elliptic)
    u3 = row_direction(n, slot_tangent[s], mu, 3, condim, elliptic)
    p = slot_point[s]
    d0 = slot_dof[2 * s]
    r0 = c * ROWS_PER_CONTACT * nd
    zero = J.dtype(0.0)
    vel = row4(0.0, 0.0, 0.0, 0.0)
    acc = vel
    for d in range(nd):
        j = vel * 0.0
        if d0 >= 0:
            k = d - d0
            if k >= 0 and k < slot_dof[2 * s + 1]:
                j[0] = n[k]
        else:
            v = point_velocity(S_dof, dof_body, nb, d, slot_body[2 * s], p) - \
                point_velocity(S_dof, dof_body, nb, d, slot_body[2 * s + 1], p)
            j[0] = sk.dot(u0, v)
            if condim >= 3:
                j = row4(j[0], sk.dot(u1, v), sk.dot(u2, v), sk.dot(u3, v))
        for e in range(ROWS_PER_CONTACT):
            J[r0 + e * nd + d] = j[e]
        vel = vel + j * qd[d]
        acc = acc + j * a0[d]
    solref = slot_solref[s]
    solimp = slot_solimp[s]
    tran = zero
    for side in range(2):
        body = slot_body[2 * s + side]
        if body >= 0:
            tran = tran + invweight[2 * body]
    if d0 >= 0:
        # a joint limit: MuJoCo's dof_invweight0 of the joint's (first) dof
        tran = dof_invweight[d0]
    r = slot_dist[s] - slot_margin[s]
    imp = impedance(solimp, r)
    dmax = sk.clamp(solimp[1], 0.0001, 0.9999)
    K = zero
    B = zero
    if solref[0] > 0.0:
        # timeconst and damping ratio; a time constant below two steps is raised to two steps
        tc = sk.max(solref[0], 2.0 * dt)
        K = 1.0 / (dmax * dmax * tc * tc * solref[1] * solref[1])
        B = 2.0 / (dmax * tc)
    else:
        # the direct form: -stiffness, -damping
        K = -solref[0] / (dmax * dmax)
        B = -solref[1] / dmax
    R = (1.0 - imp) / imp * tran
    for e in range(ROWS_PER_CONTACT):
        i = c * ROWS_PER_CONTACT + e
        if (condim == 1 and e > 0) or (elliptic == 1 and e == 3):
            b_out[i] = zero
            R_out[i] = zero + 1.0
        else:
            Ke = K
            Re = R
            if condim >= 3 and elliptic == 1:
                if e > 0:
                    # the friction rows of the elliptic cone: no position, their regularizer the
                    # normal's over impratio
                    Ke = zero
                    Re = R / impratio
            elif condim >= 3:
                Re = 2.0 * mu * mu * R * (1.0 + mu * mu) / impratio
            aref = -B * vel[e] - Ke * imp * r
            b_out[i] = acc[e] - aref
            R_out[i] = sk.max(Re, 1.0e-15)


@sk.func
def cone_projection(y: Any, mu: Any):
    """The nearest point to ``y = (normal, t1, t2)`` in the cone ``|t| <= mu normal``."""
    t = sk.sqrt(y[1] * y[1] + y[2] * y[2])
    out = y
    if t > mu * y[0]:
        if mu * t <= -y[0]:
            out = y * 0.0
        else:
            a = (mu * t + y[0]) / (1.0 + mu * mu)
            out[0] = a
            out[1] = mu * a * y[1] / t
            out[2] = mu * a * y[2] / t
    return out


@sk.func
def elliptic_block(i0: int, mu: Any, nd: int, J: AnyArray, X: AnyArray, b: AnyArray, R: AnyArray, f: AnyArray,
                   qdd: AnyArray):
    """One Gauss-Seidel step on the three rows of an elliptic contact from row ``i0``: the
    exact minimizer of the dual over the block inside the cone (unconstrained when it is
    inside, else projected gradient steps in the block's metric, from the better of the
    projected minimizer and the current force), then ``qdd`` updated.
    Returns the largest change of a row's residual."""
    vec3 = sk.vector(3, J.dtype)
    r = vec3(0.0, 0.0, 0.0)
    H = sk.outer(r, r)
    f0 = vec3(f[i0], f[i0 + 1], f[i0 + 2])
    for k in range(3):
        i = i0 + k
        v = b[i] + R[i] * f[i]
        for d in range(nd):
            v = v + J[i * nd + d] * qdd[d]
        r[k] = v
        for l in range(3):
            h = J.dtype(0.0)
            for d in range(nd):
                h = h + J[i * nd + d] * X[(i0 + l) * nd + d]
            H[k, l] = h
        H[k, k] = H[k, k] + R[i]
    y = f0 - sk.inverse(H) @ r
    if sk.sqrt(y[1] * y[1] + y[2] * y[2]) > mu * y[0]:
        L = J.dtype(0.0)
        for k in range(3):
            L = L + sk.abs(H[k, 0]) + sk.abs(H[k, 1]) + sk.abs(H[k, 2])
        y = cone_projection(y, mu)
        # from the better of that and the block's current force: at the block's optimum
        # the steps then leave it there (from the projection alone, on a badly conditioned
        # block, they may not get back to it, and sweeps repeat without settling)
        dy = y - f0
        if sk.dot(dy, H @ dy * 0.5 + r) > 0.0:
            y = cone_projection(f0, mu)
        for _ in range(200):
            y = cone_projection(y - (H @ (y - f0) + r) / L, mu)
    delta = y - f0
    change = sk.abs(delta[0]) * H[0, 0]
    change = sk.max(change, sk.abs(delta[1]) * H[1, 1])
    change = sk.max(change, sk.abs(delta[2]) * H[2, 2])
    for k in range(3):
        f[i0 + k] = y[k]
        for d in range(nd):
            qdd[d] = qdd[d] + X[(i0 + k) * nd + d] * delta[k]
    return change


@sk.kernel
def pgs(count: ints, contact_slot: ints, slot_condim: ints, slot_mu: AnyArray, elliptic: int, nd: int,
        iterations: int, tol: Any, rounding: Any, J: AnyArray, X: AnyArray, b: AnyArray, R: AnyArray,
        exact: ints, slot_force: AnyArray, f: AnyArray, w: AnyArray, iters_out: ints):
    # One thread: projected Gauss-Seidel on the dual. The rows' residuals are read through
    # w = X^T f: (A f)_i = J_i . w, so a sweep costs O(rows x dofs) and A is never formed
    # (only its diagonal, J_i . X_i); the step passes Y = L^-1 J^T as both J and X (A = Y Y^T)
    # and turns w into the acceleration after (constrained_qdd). Sweeps stop when no force
    # changes its row's residual by more than tol plus the rounding of the residual's terms
    # (rounding x (|b_i| + |R_i f_i|): in float32 a residual of ~100 is not known to 1e-5).
    # Each row starts from its slot's force of the previous step (the warm start), and
    # leaves its force there for the next. Forces the exact solve left there as solved
    # (exact[0] == 1, kernels/contact_active_set.py) are only read: no sweep (0 reported).
    n = count[0] * ROWS_PER_CONTACT
    for i in range(n):
        c = i // ROWS_PER_CONTACT
        e = i - c * ROWS_PER_CONTACT
        f[i] = f.dtype(0.0)
        if slot_condim[contact_slot[c]] >= 3 or e == 0:
            f[i] = slot_force[ROWS_PER_CONTACT * contact_slot[c] + e]
    for d in range(nd):
        v = w.dtype(0.0)
        for i in range(n):
            v = v + X[i * nd + d] * f[i]
        w[d] = v
    it = int(0)
    change = tol + 1.0
    if exact[0] == 1:
        change = tol * 0.0
    while it < iterations and change > tol:
        change = tol * 0.0
        for c in range(count[0]):
            s = contact_slot[c]
            if elliptic == 1 and slot_condim[s] >= 3:
                change = sk.max(change, elliptic_block(c * ROWS_PER_CONTACT, slot_mu[s], nd, J, X, b, R, f, w))
        for i in range(n):
            c = i // ROWS_PER_CONTACT
            if elliptic == 1 and slot_condim[contact_slot[c]] >= 3:
                continue
            r = b[i] + R[i] * f[i]
            diag = R[i]
            for d in range(nd):
                r = r + J[i * nd + d] * w[d]
                diag = diag + J[i * nd + d] * X[i * nd + d]
            fi = sk.max(f[i] - r / diag, 0.0)
            delta = fi - f[i]
            if delta != 0.0:
                for d in range(nd):
                    w[d] = w[d] + X[i * nd + d] * delta
                f[i] = fi
            change = sk.max(change, sk.abs(delta) * diag - rounding * (sk.abs(b[i]) + sk.abs(R[i] * fi)))
        it = it + 1
    for i in range(n):
        c = i // ROWS_PER_CONTACT
        slot_force[ROWS_PER_CONTACT * contact_slot[c] + i - c * ROWS_PER_CONTACT] = f[i]
    iters_out[0] = it


@sk.kernel
def pgs_adjoint(count: ints, nd: int, iterations: int, tol: Any, J: AnyArray, X: AnyArray, R: AnyArray,
                f: AnyArray, g: AnyArray, mu: AnyArray, t: AnyArray, jt_mu: AnyArray):
    # One thread: the adjoint of the solve at its solution. On the active rows (f > 0) the
    # forces solve (A + R) f = -b, so the gradient needs mu = (A + R)^-1 X^T g on them (zero
    # on the others): Gauss-Seidel again, reading A mu as J (X mu), t = X mu. Also J^T mu.
    n = count[0] * ROWS_PER_CONTACT
    for i in range(n):
        mu[i] = mu.dtype(0.0)
    for d in range(nd):
        t[d] = t.dtype(0.0)
    it = int(0)
    change = tol + 1.0
    while it < iterations and change > tol:
        change = tol * 0.0
        for i in range(n):
            if f[i] > 0.0:
                r = R[i] * mu[i]
                diag = R[i]
                for d in range(nd):
                    r = r + J[i * nd + d] * t[d] - X[i * nd + d] * g[d]
                    diag = diag + J[i * nd + d] * X[i * nd + d]
                delta = -r / diag
                for d in range(nd):
                    t[d] = t[d] + X[i * nd + d] * delta
                mu[i] = mu[i] + delta
                change = sk.max(change, sk.abs(delta) * diag)
        it = it + 1
    for d in range(nd):
        v = J.dtype(0.0)
        for i in range(n):
            v = v + J[i * nd + d] * mu[i]
        jt_mu[d] = v


@sk.kernel
def pgs_grads(count: ints, nd: int, f: AnyArray, mu: AnyArray, g: AnyArray, jt_mu: AnyArray, qdd: AnyArray,
              a0: AnyArray, X_grad: AnyArray, J_grad: AnyArray, b_grad: AnyArray, R_grad: AnyArray):
    # qdd = a0 + X f with f_S = -(J_S X_S^T + R_S)^-1 b_S: X_i gets f_i (g - J^T mu), J_i gets
    # -mu_i (X f), b_i gets -mu_i, R_i gets -mu_i f_i
    i, d = sk.tid()
    if i >= count[0] * ROWS_PER_CONTACT:
        return
    X_grad[i * nd + d] = X_grad[i * nd + d] + f[i] * (g[d] - jt_mu[d])
    J_grad[i * nd + d] = J_grad[i * nd + d] - mu[i] * (qdd[d] - a0[d])
    if d == 0:
        b_grad[i] = b_grad[i] - mu[i]
        R_grad[i] = R_grad[i] - mu[i] * f[i]


@sk.kernel
def minv_grads(count: ints, nd: int, Z: AnyArray, J_grad: AnyArray):
    # X_i = M^-1 J_i: J_i gets Z_i = M^-1 X_grad_i
    i, d = sk.tid()
    if i >= count[0] * ROWS_PER_CONTACT:
        return
    J_grad[i * nd + d] = J_grad[i * nd + d] + Z[i * nd + d]


@sk.kernel
def minv_mass_grad(count: ints, nd: int, entry_row: ints, entry_col: ints, Z: AnyArray, X: AnyArray,
                   M_grad: AnyArray):
    # ... and M gets -sum_i Z_i X_i^T (entry by entry of the articulations' blocks)
    e = sk.tid()
    r = entry_row[e]
    c = entry_col[e]
    v = M_grad.dtype(0.0)
    for i in range(count[0] * ROWS_PER_CONTACT):
        v = v + Z[i * nd + r] * X[i * nd + c]
    M_grad[e] = M_grad[e] - v


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    reals = sk.array(dtype=real)
    types = {"body_q": sk.array(dtype=S.transform), "bodies": S.Bodies, "slot_point": sk.array(dtype=S.vec3),
             "slot_normal": sk.array(dtype=S.vec3), "slot_tangent": sk.array(dtype=S.vec3), "S_dof": sk.array(dtype=S.spatial),
             "slot_solref": sk.array(dtype=S.vec2), "slot_solimp": sk.array(dtype=S.vec5), "slot_margin": reals,
             "impratio": real, "dt": real, "tol": real, "rounding": real}
    types.update(dict.fromkeys(["slot_mu", "slot_dist", "slot_force", "warm", "invweight", "dof_invweight", "J", "X", "Y", "L", "A", "b",
                                "R", "f", "qd", "a0", "qdd", "b_out", "R_out", "g", "mu", "t", "jt_mu", "Z", "X_grad", "J_grad",
                                "b_grad", "R_grad", "M_grad", "w"], reals))
    return types


@functools.cache  # asked for on every launch: a lookup
def contact_solve_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together).

    Example::

        k = contact_solve_kernels(sk.float64)
        k.pgs            # one thread
    """
    return sk.instantiate(real, __name__)
