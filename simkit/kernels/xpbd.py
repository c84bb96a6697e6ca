"""Constraint kernels of the XPBD integrator (Macklin, Mueller, Chentanez 2016, "XPBD:
Position-Based Simulation of Compliant Constrained Dynamics").

Each constraint kernel reads the positions of one iteration and the Lagrange
multipliers of its constraints, and writes the updated multipliers into a second
buffer and its position corrections (atomic adds) into a delta buffer. The apply
kernel adds the deltas to the positions and projects contacts, writing a new
positions buffer. No kernel reads an array it writes, so the Tape can replay
every iteration.

The multiplier update is the XPBD one multiplied through by the stiffness, so a zero
stiffness needs no special case and a very large one stays well conditioned:

    dlambda = -(k dt^2 C + lambda + b dt dC) / ((k dt^2 + b dt) sum_j s_j w_j |grad_j C|^2 + 1)

with ``k`` the inverse compliance, ``b`` the damping coefficient (the ``gamma`` term of
the XPBD paper, ``gamma = b / (k dt)``), ``dC = grad C . (x - x_n)`` the change of the
constraint over the step and ``s_j`` the number of constraints that touch particle ``j``,
an element counting once (mass splitting: the Jacobi corrections of a particle's constraints then add up to at
most one full correction, which keeps the iteration from overshooting).

Elements (triangles, tetrahedra) carry two constraints. The shape constraint is the
matrix ``F - R`` (``R`` the rotation of the polar decomposition ``F = R S``) with a matrix
multiplier: its energy ``mu |F - R|^2`` is the corotated one, it is smooth where the element
is at rest (a scalar ``|F - R|`` would have a cone there, and a gradient that depends on
the direction of the perturbation), and with ``R`` held fixed its system is solved exactly
by one small matrix inverse. Then the volume (area) constraint ``J - 1`` is solved at the
positions the shape correction produced (Gauss-Seidel inside the element).

Example::

    k = xpbd_kernels(sk.float64)
    sk.launch(k.predict, n, inputs=[q, qd, model.particles, model.gravity, dt, q_pred, qd_pred])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .shapes import shape_surface_distance
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.func
def contact_push(step, n, depth, mu):
    """The correction that pushes a point out along the unit normal ``n`` by the penetration
    ``-depth``, then removes its tangential motion over the step (``step``, its displacement
    since the start of the step) up to ``mu`` times that push: position-level Coulomb friction,
    sticking when the slip is smaller than the friction cone allows. Zero when ``depth >= 0``.
    Taking the displacement rather than the two positions keeps the slip exact in float32 far
    from the origin."""
    push = n * 0.0
    if depth < 0.0:
        push = n * -depth
        moved = step + push
        slip = moved - n * sk.dot(n, moved)
        length = sk.length(slip)
        if length > 0.0:
            push = push - slip * sk.min(mu * -depth / length, 1.0)
    return push


@sk.func
def multiplier_step(lam, c, dc, g, k, b, dt):
    """XPBD update of the multiplier of a scalar constraint with value ``c``, change ``dc``
    over the step, mass-split gradient norm ``g``, stiffness ``k`` and damping ``b``."""
    kt = k * dt * dt
    bt = b * dt
    return -(kt * c + lam + bt * dc) / ((kt + bt) * g + 1.0)


@sk.func
def sym(A):
    """The symmetric part of a square matrix."""
    return (A + sk.transpose(A)) * 0.5


@sk.func
def skew(r):
    """The matrix of ``x -> r x x``."""
    m = sk.outer(r, r) * 0.0
    m[0, 1] = -r[2]
    m[0, 2] = r[1]
    m[1, 0] = r[2]
    m[1, 2] = -r[0]
    m[2, 0] = -r[1]
    m[2, 1] = r[0]
    return m


@sk.func
def polar_newton(F):
    """The orthogonal factor ``R`` of the polar decomposition ``F = R S`` by Newton's iteration
    ``R <- (g R + R^-T / g) / 2`` with Higham's Frobenius-norm scaling ``g``; six steps reach
    double precision for stretches up to a factor of a thousand."""
    R = F
    for _step in range(6):
        Ri = sk.transpose(sk.inverse(R))
        g = sk.sqrt(sk.sqrt(sk.trace(sk.transpose(Ri) @ Ri) / sk.trace(sk.transpose(R) @ R)))
        R = (R * g + Ri / g) * 0.5
    return R


@sk.func
def polar_rotation(F):
    """:func:`polar_newton`, differentiated exactly (:func:`polar_rotation_grad`)."""
    return polar_newton(F)


@sk.func_grad(polar_rotation)
def polar_rotation_grad(F, adj_ret):
    # The exact derivative of the polar factor instead of the adjoint of the six Newton steps
    # (which made the XPBD soft body's backward 3.7 times its forward). With F = R S and
    # R^T dR the skew matrix [w]x, R^T dF - dF^T R = [(tr(S) I - S) w]x for symmetric S. So
    # a gradient G of R gives F the gradient R [u]x, u = (tr(S) I - S)^-1 vee(R^T G - G^T R).
    R = polar_newton(F)
    K = -sym(sk.transpose(R) @ F)
    tr = -sk.trace(K)
    K[0, 0] = K[0, 0] + tr
    K[1, 1] = K[1, 1] + tr
    K[2, 2] = K[2, 2] + tr
    B = sk.transpose(R) @ adj_ret
    b = F[0] * 0.0
    b[0] = B[2, 1] - B[1, 2]
    b[1] = B[0, 2] - B[2, 0]
    b[2] = B[1, 0] - B[0, 1]
    return R @ skew(sk.inverse(K) @ b)


@sk.kernel
def predict(q: AnyArray, qd: AnyArray, particles: Any, gravity: Any, dt: Any, q_out: AnyArray, qd_out: AnyArray):
    # v* = v + dt g, x* = x + dt v*; kinematic particles (inverse mass 0) keep their velocity.
    # v* is kept: the step's velocity is v* plus the corrections over dt, never a difference
    # of two nearby positions (which loses dt g to cancellation in float32).
    i = sk.tid()
    v = qd[i]
    if particles.inv_mass[i] > 0.0:
        v = v + gravity * dt
    q_out[i] = q[i] + v * dt
    qd_out[i] = v


@sk.kernel
def solve_springs(q: AnyArray, q_prev: AnyArray, springs: Any, activation: AnyArray, particles: Any, split: AnyArray,
                  lam: AnyArray, dt: Any, delta: AnyArray, lam_out: AnyArray):
    # Distance constraint C = |x_i - x_j| - rest (1 + a), compliance 1 / ke, damping kd.
    s = sk.tid()
    i = springs.indices[s, 0]
    j = springs.indices[s, 1]
    wi = particles.inv_mass[i]
    wj = particles.inv_mass[j]
    d = q[i] - q[j]
    length = sk.length(d)
    n = d * 0.0
    dl = type(dt)(0.0)
    if length > 0.0:
        n = d / length
        c = length - springs.rest_length[s] * (1.0 + activation[s])
        dc = sk.dot(n, (q[i] - q_prev[i]) - (q[j] - q_prev[j]))
        dl = multiplier_step(lam[s], c, dc, wi * split[i] + wj * split[j], springs.ke[s], springs.kd[s], dt)
    lam_out[s] = lam[s] + dl
    delta[i] += n * (wi * dl)
    delta[j] += n * (-wj * dl)


@sk.kernel
def solve_triangles(q: AnyArray, q_prev: AnyArray, tris: Any, particles: Any, split: AnyArray, lam_shape: AnyArray,
                    lam_area: AnyArray, dt: Any, delta: AnyArray, lam_shape_out: AnyArray, lam_area_out: AnyArray):
    # Corotated membrane: shape constraint F - R (3x2) with compliance 1 / (2 mu A), then the
    # area constraint J - 1 (J = |f1 x f2|) with compliance 1 / (lambda A): linear elasticity
    # with Lame parameters (mu, lambda) at small strain, rotation invariant at any strain.
    t = sk.tid()
    i = tris.indices[t, 0]
    j = tris.indices[t, 1]
    k = tris.indices[t, 2]
    P = tris.pose[t]
    F = sk.transpose(sk.matrix((2, 3), type(dt))(q[j] - q[i], q[k] - q[i])) @ P
    F_prev = sk.transpose(sk.matrix((2, 3), type(dt))(q_prev[j] - q_prev[i], q_prev[k] - q_prev[i])) @ P
    # F = sum_v x_v p_v^T over the vertices, p_v the rows of P and p_0 = -(p_1 + p_2)
    p1 = sk.vector(2, type(dt))(P[0, 0], P[0, 1])
    p2 = sk.vector(2, type(dt))(P[1, 0], P[1, 1])
    p0 = -(p1 + p2)
    wi = particles.inv_mass[i]
    wj = particles.inv_mass[j]
    wk = particles.inv_mass[k]
    Q = sk.outer(p0, p0) * wi + sk.outer(p1, p1) * wj + sk.outer(p2, p2) * wk
    Q_split = (sk.outer(p0, p0) * (wi * split[i]) + sk.outer(p1, p1) * (wj * split[j])
               + sk.outer(p2, p2) * (wk * split[k]))
    area = tris.area[t]
    k_shape = 2.0 * tris.k_mu[t] * area
    k_area = tris.k_lambda[t] * area
    damp = tris.k_damp[t]
    f1 = sk.vector(3, type(dt))(F[0, 0], F[1, 0], F[2, 0])
    f2 = sk.vector(3, type(dt))(F[0, 1], F[1, 1], F[2, 1])
    J = sk.length(sk.cross(f1, f2))
    dL = F * 0.0
    if J > 0.0:
        # R = F (F^T F)^(-1/2), with sqrt(M) = (M + sqrt(det M) I) / sqrt(tr M + 2 sqrt(det M)) for 2x2 M
        m00 = sk.dot(f1, f1)
        m01 = sk.dot(f1, f2)
        m11 = sk.dot(f2, f2)
        scale = 1.0 / (J * sk.sqrt(m00 + m11 + 2.0 * J))
        R = sk.transpose(sk.matrix((2, 3), type(dt))((f1 * (m11 + J) - f2 * m01) * scale,
                                                     (f2 * (m00 + J) - f1 * m01) * scale))
        # damping acts on the strain rate only, not on rotation
        rate = R @ sym(sk.transpose(R) @ (F - F_prev))
        kt = k_shape * dt * dt
        bt = damp * k_shape * dt
        dL = -((F - R) * kt + lam_shape[t] + rate * bt) @ sk.inverse(Q_split * (kt + bt) + sk.identity(2, type(dt)))
    lam_shape_out[t] = lam_shape[t] + dL
    F1 = F + dL @ Q
    g1 = sk.vector(3, type(dt))(F1[0, 0], F1[1, 0], F1[2, 0])
    g2 = sk.vector(3, type(dt))(F1[0, 1], F1[1, 1], F1[2, 1])
    normal = sk.cross(g1, g2)
    J1 = sk.length(normal)
    dJ = F1 * 0.0
    dl = type(dt)(0.0)
    if J1 > 0.0:
        n = normal / J1
        dJ = sk.transpose(sk.matrix((2, 3), type(dt))(sk.cross(g2, n), sk.cross(n, g1)))
        hi = dJ @ p0
        hj = dJ @ p1
        hk = dJ @ p2
        g = wi * split[i] * sk.dot(hi, hi) + wj * split[j] * sk.dot(hj, hj) + wk * split[k] * sk.dot(hk, hk)
        dc = sk.trace(sk.transpose(dJ) @ (F1 - F_prev))
        dl = multiplier_step(lam_area[t], J1 - 1.0, dc, g, k_area, damp * k_area, dt)
    lam_area_out[t] = lam_area[t] + dl
    M = dL + dJ * dl
    delta[i] += (M @ p0) * wi
    delta[j] += (M @ p1) * wj
    delta[k] += (M @ p2) * wk


@sk.kernel
def solve_bending(q: AnyArray, q_prev: AnyArray, edges: Any, particles: Any, split: AnyArray, lam: AnyArray, dt: Any,
                  delta: AnyArray, lam_out: AnyArray):
    # Hinge constraint C = theta - rest_angle (the dihedral convention of sim.geometry),
    # compliance 1 / ke, damping kd. Gradient of theta: Bridson et al. 2003.
    h = sk.tid()
    o0 = edges.indices[h, 0]
    o1 = edges.indices[h, 1]
    v0 = edges.indices[h, 2]
    v1 = edges.indices[h, 3]
    x_o0 = q[o0]
    x_o1 = q[o1]
    x_v0 = q[v0]
    x_v1 = q[v1]
    n0 = sk.cross(x_v0 - x_o0, x_v1 - x_o0)
    n1 = sk.cross(x_v1 - x_o1, x_v0 - x_o1)
    e = x_v1 - x_v0
    le = sk.length(e)
    nn0 = sk.dot(n0, n0)
    nn1 = sk.dot(n1, n1)
    w_o0 = particles.inv_mass[o0]
    w_o1 = particles.inv_mass[o1]
    w_v0 = particles.inv_mass[v0]
    w_v1 = particles.inv_mass[v1]
    g_o0 = e * 0.0
    g_o1 = e * 0.0
    g_v0 = e * 0.0
    g_v1 = e * 0.0
    dl = type(dt)(0.0)
    # one comparison instead of `and`: the short-circuit temporary of `and` is named after an
    # object id, which makes the generated source (and its cache key) differ in every process
    if sk.min(le, sk.min(nn0, nn1)) > 0.0:
        eh = e / le
        a0 = n0 / nn0
        a1 = n1 / nn1
        theta = sk.atan2(sk.dot(sk.cross(n0, n1), eh), sk.dot(n0, n1))
        g_o0 = a0 * -le
        g_o1 = a1 * -le
        g_v0 = a0 * sk.dot(x_v1 - x_o0, eh) + a1 * sk.dot(x_v1 - x_o1, eh)
        g_v1 = a0 * sk.dot(x_o0 - x_v0, eh) + a1 * sk.dot(x_o1 - x_v0, eh)
        g = (w_o0 * split[o0] * sk.dot(g_o0, g_o0) + w_o1 * split[o1] * sk.dot(g_o1, g_o1)
             + w_v0 * split[v0] * sk.dot(g_v0, g_v0) + w_v1 * split[v1] * sk.dot(g_v1, g_v1))
        dc = (sk.dot(g_o0, x_o0 - q_prev[o0]) + sk.dot(g_o1, x_o1 - q_prev[o1])
              + sk.dot(g_v0, x_v0 - q_prev[v0]) + sk.dot(g_v1, x_v1 - q_prev[v1]))
        dl = multiplier_step(lam[h], theta - edges.rest_angle[h], dc, g, edges.ke[h], edges.kd[h], dt)
    lam_out[h] = lam[h] + dl
    delta[o0] += g_o0 * (w_o0 * dl)
    delta[o1] += g_o1 * (w_o1 * dl)
    delta[v0] += g_v0 * (w_v0 * dl)
    delta[v1] += g_v1 * (w_v1 * dl)


@sk.kernel
def solve_tets(q: AnyArray, q_prev: AnyArray, tets: Any, particles: Any, split: AnyArray, lam_shape: AnyArray,
               lam_volume: AnyArray, dt: Any, delta: AnyArray, lam_shape_out: AnyArray, lam_volume_out: AnyArray):
    # Corotated solid: shape constraint F - R with compliance 1 / (2 mu V), then the volume
    # constraint det F - 1 with compliance 1 / (lambda V).
    t = sk.tid()
    i0 = tets.indices[t, 0]
    i1 = tets.indices[t, 1]
    i2 = tets.indices[t, 2]
    i3 = tets.indices[t, 3]
    P = tets.pose[t]
    x0 = q[i0]
    y0 = q_prev[i0]
    F = sk.transpose(sk.matrix((3, 3), type(dt))(q[i1] - x0, q[i2] - x0, q[i3] - x0)) @ P
    F_prev = sk.transpose(sk.matrix((3, 3), type(dt))(q_prev[i1] - y0, q_prev[i2] - y0, q_prev[i3] - y0)) @ P
    # F = sum_v x_v p_v^T over the vertices, p_v the rows of P and p_0 = -(p_1 + p_2 + p_3)
    p1 = sk.vector(3, type(dt))(P[0, 0], P[0, 1], P[0, 2])
    p2 = sk.vector(3, type(dt))(P[1, 0], P[1, 1], P[1, 2])
    p3 = sk.vector(3, type(dt))(P[2, 0], P[2, 1], P[2, 2])
    p0 = -(p1 + p2 + p3)
    w0 = particles.inv_mass[i0]
    w1 = particles.inv_mass[i1]
    w2 = particles.inv_mass[i2]
    w3 = particles.inv_mass[i3]
    s0 = w0 * split[i0]
    s1 = w1 * split[i1]
    s2 = w2 * split[i2]
    s3 = w3 * split[i3]
    Q = sk.outer(p0, p0) * w0 + sk.outer(p1, p1) * w1 + sk.outer(p2, p2) * w2 + sk.outer(p3, p3) * w3
    Q_split = sk.outer(p0, p0) * s0 + sk.outer(p1, p1) * s1 + sk.outer(p2, p2) * s2 + sk.outer(p3, p3) * s3
    volume = tets.volume[t]
    k_shape = 2.0 * tets.k_mu[t] * volume
    k_volume = tets.k_lambda[t] * volume
    damp = tets.k_damp[t]
    dL = F * 0.0
    if sk.determinant(F) != 0.0:
        # a flat element has no polar decomposition: only its volume constraint acts
        R = polar_rotation(F)
        rate = R @ sym(sk.transpose(R) @ (F - F_prev))
        kt = k_shape * dt * dt
        bt = damp * k_shape * dt
        dL = -((F - R) * kt + lam_shape[t] + rate * bt) @ sk.inverse(Q_split * (kt + bt) + sk.identity(3, type(dt)))
    lam_shape_out[t] = lam_shape[t] + dL
    F1 = F + dL @ Q
    f1 = sk.vector(3, type(dt))(F1[0, 0], F1[1, 0], F1[2, 0])
    f2 = sk.vector(3, type(dt))(F1[0, 1], F1[1, 1], F1[2, 1])
    f3 = sk.vector(3, type(dt))(F1[0, 2], F1[1, 2], F1[2, 2])
    # d det F / d F: the cofactor matrix, columns f2 x f3, f3 x f1, f1 x f2
    c1 = sk.cross(f2, f3)
    dJ = sk.transpose(sk.matrix((3, 3), type(dt))(c1, sk.cross(f3, f1), sk.cross(f1, f2)))
    h0 = dJ @ p0
    h1 = dJ @ p1
    h2 = dJ @ p2
    h3 = dJ @ p3
    g = s0 * sk.dot(h0, h0) + s1 * sk.dot(h1, h1) + s2 * sk.dot(h2, h2) + s3 * sk.dot(h3, h3)
    dc = sk.trace(sk.transpose(dJ) @ (F1 - F_prev))
    dl = multiplier_step(lam_volume[t], sk.dot(f1, c1) - 1.0, dc, g, k_volume, damp * k_volume, dt)
    lam_volume_out[t] = lam_volume[t] + dl
    M = dL + dJ * dl
    delta[i0] += (M @ p0) * w0
    delta[i1] += (M @ p1) * w1
    delta[i2] += (M @ p2) * w2
    delta[i3] += (M @ p3) * w3


@sk.kernel
def apply_corrections(q: AnyArray, delta: AnyArray, corr: AnyArray, qd_pred: AnyArray, dt: Any, particles: Any,
                      contact: Any, shapes: Any, statics: Any, q_out: AnyArray, corr_out: AnyArray):
    # Jacobi update, then contact: each particle is pushed out of the ground and the
    # static shapes of its world (its row of ``statics``) one after the other, with friction
    # against its motion over the step. Shapes on bodies are constraints of their own
    # (xpbd_body_contact), acting both ways. ``corr`` sums every correction since the
    # prediction, so the motion over the step is dt v* + corr.
    i = sk.tid()
    x = q[i] + delta[i]
    c = corr[i] + delta[i]
    if particles.inv_mass[i] > 0.0:
        r = particles.radius[i]
        mu = contact.mu[0]
        if contact.ground != 0:
            n = contact.ground_normal
            push = contact_push(qd_pred[i] * dt + c, n, sk.dot(n, x) - r, mu)
            x = x + push
            c = c + push
        row = statics.world[i] + 1
        for slot in range(statics.start[row], statics.start[row + 1]):
            s = statics.shape[slot]
            X = shapes.xform[s]
            dist, n_local = shape_surface_distance(shapes, s, sk.transform_point(sk.transform_inverse(X), x))
            push = contact_push(qd_pred[i] * dt + c, sk.quat_rotate(X.q, n_local), dist - r, mu)
            x = x + push
            c = c + push
    q_out[i] = x
    corr_out[i] = c


@sk.kernel
def update_velocities(qd_pred: AnyArray, corr: AnyArray, dt: Any, qd_out: AnyArray):
    # v = v* + (x - x*) / dt, with x - x* the summed corrections: exactly (x - x_n) / dt, but
    # without subtracting two positions
    i = sk.tid()
    qd_out[i] = qd_pred[i] + corr[i] / dt


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s, reals = sk.array(dtype=S.vec3), sk.array(dtype=real)
    mat32s, mat33s = sk.array(dtype=sk.matrix((3, 2), real)), sk.array(dtype=S.mat33)
    return {"q": vec3s, "qd": vec3s, "q_out": vec3s, "qd_out": vec3s, "q_prev": vec3s, "delta": vec3s, "corr": vec3s,
            "corr_out": vec3s, "qd_pred": vec3s, "particles": S.Particles, "gravity": S.vec3, "dt": real,
            "springs": S.Springs, "tris": S.Triangles, "edges": S.Edges, "tets": S.Tets, "contact": S.Contact,
            "shapes": S.Shapes, "statics": S.ParticleShapes, "activation": reals, "split": reals, "lam": reals,
            "lam_out": reals, "lam_area": reals, "lam_area_out": reals, "lam_volume": reals, "lam_volume_out": reals,
            # the shape multipliers of a triangle are 3x2, of a tetrahedron 3x3
            "lam_shape": mat32s, "lam_shape_out": mat32s, "solve_tets.lam_shape": mat33s,
            "solve_tets.lam_shape_out": mat33s}


@functools.cache  # asked for on every launch: a lookup
def xpbd_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)
