"""The backward pass of the constraint contact solve of :class:`simkit.sim.Featherstone`
(``contact="constraint"``) with the elliptic friction cone: implicit differentiation of the
solution's optimality conditions.

The forward pass (:mod:`simkit.kernels.contact_solve`, ``pgs``) minimizes ``0.5 f^T H f +
b^T f`` (``H = A + R``) with each friction contact's force ``f_c = (f_n, f_t)`` on its rows
``4 c .. 4 c + 2`` inside the cone ``|f_t| <= mu f_n``, and the other rows (``condim`` 1
contacts, joint limits: row ``4 c`` alone) ``>= 0``. At the solution each contact is

- separated (``f_c = 0``): it stays zero under small changes, so nothing flows through it;
- free (a row ``f > 0``, or a force strictly inside the cone): its rows' residuals are
  zero, as for the pushing rows of the pyramidal cone;
- sliding (``|f_t| = mu f_n > 0``): the force stays on the cone's surface, which is
  parametrized at the solution by the ray's direction ``d1 = (1, mu t)`` (``t = f_t /
  |f_t|``) and the direction around the cone ``d2 = (0, s)`` (``s`` the tangent plane's
  normal to ``t``). Its residual ``r_c = (H f + b)_c`` is ``lambda (mu, -t)``, the cone's
  normal times the multiplier ``lambda = -r_t . t >= 0``, and the surface bends by
  ``1 / |f_t|`` along ``d2``, which adds ``lambda / |f_t|`` to the reduced Hessian there.

With ``D`` the columns of all contacts' directions (per contact ``B_c``, 3 x 3, its unused
columns zero) and ``C`` the curvatures, the stationarity ``D^T (H f + b) = 0`` gives
``df = -D (D^T H D + C)^-1 D^T db`` and the same with ``dH f`` for ``db``. So the adjoint
(``mu`` here, as in ``pgs_grads``: not the friction coefficient) is ``mu = D nu``, ``(D^T H D
+ C) nu = D^T X g``, and every gradient the pyramidal path takes from it follows unchanged.
The friction coefficient ``mu_c`` enters the cone itself: a sliding contact's gets ``f_n t .
(X g - H mu)_t + lambda mu_n``.

The reduced system is solved by Cholesky for up to ``ACTIVE_SET_ROWS`` rows (the scratch
of :mod:`simkit.kernels.contact_active_set`), by Gauss-Seidel over the contacts' blocks
above.

Example::

    k = elliptic_kernels(sk.float64)
    sk.launch(k.elliptic_adjoint, 1, inputs=[count, contact_slot, slot_condim, slot_mu, nd, dense, iterations,
              tol, ON_SURFACE["float64"], J, X, b, R, f, g, qdd, a0], outputs=[K, L, y, on, rows, basis, cols, nu,
              rhs, mu, t, jt_mu, mu_grad])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .contact_active_set import set_solve

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints = sk.array(dtype=sk.int32)

ROWS_PER_CONTACT = 4
# per contact in the scratch `basis`: B (9, row-major), the curvatures (3), the friction
# direction's two tangent components (2) and the multiplier lambda (1)
BASIS = 15
# a cone contact whose |f_t| is within this fraction of mu f_n is on the surface (the
# forward's projection leaves it there to rounding, an unprojected force is inside except
# on a set of measure zero): per float type, some thousand roundings
ON_SURFACE = {"float64": 1.0e-10, "float32": 1.0e-4}


@sk.func
def block_product(i0: int, j0: int, nd: int, J: AnyArray, X: AnyArray, R: AnyArray):
    """Rows ``i0 .. i0 + 2`` of ``H = A + R`` on columns ``j0 .. j0 + 2``: ``J_i . X_j``, and
    ``R_i`` on the diagonal when the two blocks are the same."""
    z = sk.vector(3, J.dtype)(0.0, 0.0, 0.0)
    H = sk.outer(z, z)
    for k in range(3):
        for l in range(3):
            h = J.dtype(0.0)
            for d in range(nd):
                h = h + J[(i0 + k) * nd + d] * X[(j0 + l) * nd + d]
            H[k, l] = h
        if i0 == j0:
            H[k, k] = H[k, k] + R[i0 + k]
    return H


@sk.func
def contact_basis(cone: int, mu: Any, fc: Any, rc: Any, surface: Any):
    """The directions in which a contact's force ``fc`` (normal, two tangents; its
    residual ``rc``) moves at the solution: the columns of ``B`` (the first ``m``; the rest
    zero), the curvature on each, ``m``, and for the friction coefficient's gradient the
    friction direction ``th`` (tangent components) and the multiplier ``lam`` (both zero
    unless the contact slides); ``surface``: the fraction of ``mu f_n`` within which
    ``|f_t|`` is on the cone."""
    z = fc * 0.0
    B = sk.outer(z, z)
    curv = z
    th = z
    lam = fc[0] * 0.0
    m = int(0)
    if fc[0] > 0.0:
        ft = sk.sqrt(fc[1] * fc[1] + fc[2] * fc[2])
        rt = sk.sqrt(rc[1] * rc[1] + rc[2] * rc[2])
        if cone == 0:
            B[0, 0] = 1.0
            m = 1
        elif ft > 0.0 and ft >= mu * fc[0] * (1.0 - surface):
            th[1] = fc[1] / ft
            th[2] = fc[2] / ft
            lam = sk.max(-(rc[1] * th[1] + rc[2] * th[2]), 0.0)
            B[0, 0] = 1.0
            B[1, 0] = mu * th[1]
            B[2, 0] = mu * th[2]
            B[1, 1] = -th[2]
            B[2, 1] = th[1]
            curv[1] = lam / ft
            m = 2
        elif mu == 0.0:
            # a frictionless cone: the normal alone; were mu raised, friction would
            # oppose the tangential residual (the slip)
            B[0, 0] = 1.0
            m = 1
            if rt > 0.0:
                th[1] = -rc[1] / rt
                th[2] = -rc[2] / rt
                lam = rt
        else:
            for k in range(3):
                B[k, k] = 1.0
            m = 3
    return B, curv, m, th, lam


@sk.func
def load_basis(basis: AnyArray, c: int):
    """Contact ``c``'s ``B``, curvatures, friction direction and multiplier from the scratch."""
    z = sk.vector(3, basis.dtype)(0.0, 0.0, 0.0)
    B = sk.outer(z, z)
    curv = z
    th = z
    for a in range(3):
        for k in range(3):
            B[a, k] = basis[BASIS * c + 3 * a + k]
        curv[a] = basis[BASIS * c + 9 + a]
    th[1] = basis[BASIS * c + 12]
    th[2] = basis[BASIS * c + 13]
    return B, curv, th, basis[BASIS * c + 14]


@sk.func
def rows_dot(i0: int, nd: int, A: AnyArray, v: AnyArray):
    """``(A_i . v)`` for the three rows ``i0 .. i0 + 2`` of ``A`` (rows of ``nd``)."""
    out = sk.vector(3, A.dtype)(0.0, 0.0, 0.0)
    for k in range(3):
        s = A.dtype(0.0)
        for d in range(nd):
            s = s + A[(i0 + k) * nd + d] * v[d]
        out[k] = s
    return out


@sk.kernel(enable_backward=False)   # itself a backward pass: nothing differentiates it
def elliptic_adjoint(count: ints, contact_slot: ints, slot_condim: ints, slot_mu: AnyArray, nd: int, dense: int,
                     iterations: int, tol: Any, surface: Any, J: AnyArray, X: AnyArray, b: AnyArray, R: AnyArray,
                     f: AnyArray, g: AnyArray, qdd: AnyArray, a0: AnyArray, K: AnyArray, L: AnyArray, y: AnyArray,
                     on: ints, rows: ints, basis: AnyArray, cols: ints, nu: AnyArray, rhs: AnyArray, mu: AnyArray,
                     t: AnyArray, jt_mu: AnyArray, mu_grad: AnyArray):
    # One thread. mu (per row) = D nu with (D^T H D + C) nu = D^T X g, by Cholesky of the
    # reduced matrix (dense == 1: K, L, y, on, rows hold at least (3 count)^2, 3 count,
    # 3 count, 3 count, 6 count) or by block Gauss-Seidel; then t = X^T mu, J^T mu, and
    # each sliding contact's friction gradient added into mu_grad at its slot.
    vec3 = sk.vector(3, J.dtype)
    nc = count[0]
    for d in range(nd):
        t[d] = qdd[d] - a0[d]   # X f: the residuals' share of the forces
    m = int(0)
    for c in range(nc):
        i0 = c * ROWS_PER_CONTACT
        s = contact_slot[c]
        fc = vec3(f[i0], f[i0 + 1], f[i0 + 2])
        rc = rows_dot(i0, nd, J, t)
        for k in range(3):
            rc[k] = rc[k] + b[i0 + k] + R[i0 + k] * fc[k]
        cone = int(0)
        if slot_condim[s] >= 3:
            cone = 1
        B, curv, mc, th, lam = contact_basis(cone, slot_mu[s], fc, rc, surface)
        for a in range(3):
            for k in range(3):
                basis[BASIS * c + 3 * a + k] = B[a, k]
            basis[BASIS * c + 9 + a] = curv[a]
        basis[BASIS * c + 12] = th[1]
        basis[BASIS * c + 13] = th[2]
        basis[BASIS * c + 14] = lam
        cols[2 * c] = m
        cols[2 * c + 1] = mc
        m = m + mc
        for k in range(ROWS_PER_CONTACT):
            mu[i0 + k] = mu.dtype(0.0)
    for j in range(m):
        nu[j] = nu.dtype(0.0)
    for d in range(nd):
        t[d] = t.dtype(0.0)
    if dense == 1:
        # K = D^T H D + C over the m columns (contact pairs' 3 x 3 products, the used
        # columns scattered; the lower half mirrored), rhs = -D^T X g (set_solve's sign)
        for c in range(nc):
            mc = cols[2 * c + 1]
            if mc > 0:
                Bc, curv, th, lam = load_basis(basis, c)
                uc = sk.transpose(Bc) @ rows_dot(c * ROWS_PER_CONTACT, nd, X, g)
                for c2 in range(c + 1):
                    mc2 = cols[2 * c2 + 1]
                    if mc2 > 0:
                        B2, curv2, th2, lam2 = load_basis(basis, c2)
                        Kb = sk.transpose(Bc) @ block_product(c * ROWS_PER_CONTACT, c2 * ROWS_PER_CONTACT, nd, J, X,
                                                              R) @ B2
                        for k in range(mc):
                            for k2 in range(mc2):
                                p = cols[2 * c] + k
                                q = cols[2 * c2] + k2
                                K[p * m + q] = Kb[k, k2]
                                K[q * m + p] = Kb[k, k2]
                for k in range(mc):
                    p = cols[2 * c] + k
                    K[p * m + p] = K[p * m + p] + curv[k]
                    rhs[p] = -uc[k]
                    on[p] = 1
        set_solve(m, K, rhs, on, rows, L, y, nu)
    else:
        # block Gauss-Seidel: each contact's (up to) 3 x 3 system solved exactly in turn,
        # its unused columns given a unit diagonal so the block stays invertible; the
        # residual's rows read through t = X^T mu
        it = int(0)
        change = tol + 1.0
        while it < iterations and change > tol:
            change = tol * 0.0
            for c in range(nc):
                mc = cols[2 * c + 1]
                if mc > 0:
                    i0 = c * ROWS_PER_CONTACT
                    Bc, curv, th, lam = load_basis(basis, c)
                    Kb = sk.transpose(Bc) @ block_product(i0, i0, nd, J, X, R) @ Bc
                    nuc = vec3(0.0, 0.0, 0.0)
                    for k in range(3):
                        Kb[k, k] = Kb[k, k] + curv[k]
                        if k >= mc:
                            Kb[k, k] = Kb[k, k] + 1.0
                        else:
                            nuc[k] = nu[cols[2 * c] + k]
                    rr = rows_dot(i0, nd, J, t) - rows_dot(i0, nd, X, g)
                    for k in range(3):
                        rr[k] = rr[k] + R[i0 + k] * mu[i0 + k]
                    res = sk.transpose(Bc) @ rr + sk.cw_mul(curv, nuc)
                    delta = -(sk.inverse(Kb) @ res)
                    for k in range(3):
                        if k < mc:
                            nu[cols[2 * c] + k] = nuc[k] + delta[k]
                            change = sk.max(change, sk.abs(delta[k]) * Kb[k, k])
                        else:
                            delta[k] = 0.0
                    step = Bc @ delta
                    for k in range(3):
                        mu[i0 + k] = mu[i0 + k] + step[k]
                        for d in range(nd):
                            t[d] = t[d] + X[(i0 + k) * nd + d] * step[k]
            it = it + 1
    # mu = D nu, then t = X^T mu and J^T mu over all rows
    for c in range(nc):
        Bc, curv, th, lam = load_basis(basis, c)
        nuc = vec3(0.0, 0.0, 0.0)
        for k in range(cols[2 * c + 1]):
            nuc[k] = nu[cols[2 * c] + k]
        mc_rows = Bc @ nuc
        for k in range(3):
            mu[c * ROWS_PER_CONTACT + k] = mc_rows[k]
    for d in range(nd):
        u = t.dtype(0.0)
        v = t.dtype(0.0)
        for i in range(nc * ROWS_PER_CONTACT):
            u = u + X[i * nd + d] * mu[i]
            v = v + J[i * nd + d] * mu[i]
        t[d] = u
        jt_mu[d] = v
    # the friction coefficient of each sliding contact: f = f_n (1, mu th) on the surface,
    # so df/dmu = (0, f_n th), and the cone's normal turns with mu (the lambda mu_n term)
    for c in range(nc):
        Bc, curv, th, lam = load_basis(basis, c)
        if lam > 0.0 or th[1] != 0.0 or th[2] != 0.0:
            i0 = c * ROWS_PER_CONTACT
            v = rows_dot(i0, nd, X, g) - rows_dot(i0, nd, J, t)
            grad = lam * mu[i0]
            for k in range(1, 3):
                grad = grad + f[i0] * th[k] * (v[k] - R[i0 + k] * mu[i0 + k])
            s = contact_slot[c]
            mu_grad[s] = mu_grad[s] + grad


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    reals = sk.array(dtype=real)
    types = {"tol": real, "surface": real}
    types.update(dict.fromkeys(["slot_mu", "J", "X", "b", "R", "f", "g", "qdd", "a0", "K", "L", "y", "basis", "nu",
                                "rhs", "mu", "t", "jt_mu", "mu_grad", "A", "v"], reals))
    return types


@functools.cache  # asked for on every launch: a lookup
def elliptic_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real``.

    Example::

        elliptic_kernels(sk.float64).elliptic_adjoint     # one thread
    """
    return sk.instantiate(real, __name__)
