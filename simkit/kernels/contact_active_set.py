"""An exact solve of the pyramidal contact dual for :class:`simkit.sim.Featherstone`
(``contact="constraint"``), run before the projected Gauss-Seidel of
:mod:`simkit.kernels.contact_solve`.

The dual ``min 0.5 f^T H f + b^T f`` over ``f >= 0`` (``H = A + R``, positive definite by
the regularizer ``R``; ``A = Y Y^T`` from the rows ``Y = L^-1 J^T``, built from each
contact's three basis rows, of which a pyramid's four edges are combinations) is solved by
principal pivoting on its optimality conditions: guess the rows that push (``f > 0``: the
previous step's), solve ``H_SS f_S = -b_S`` by Cholesky, and move into the set every row
whose residual ``(H f + b)_i`` is below ``-tol`` and out of it every row whose force came
out negative; all at once while that shrinks the number of wrong rows, then one row at a
time, the lowest first (Murty's rule, which ends on a positive-definite ``H``). A
warm-started contact ends in one or two solves, where Gauss-Seidel on these nearly
degenerate rows (a box's 16 pyramid rows on its 6 dofs) takes hundreds of sweeps. The
solution goes to the slots' forces, where Gauss-Seidel starts, flagged as solved:
Gauss-Seidel then only reads it (its optimality conditions, forces >= 0 and every other
row's residual >= -tol, are the ones Gauss-Seidel's sweep would check). When this solve
does not apply (the elliptic cone, more than ``ACTIVE_SET_ROWS`` rows) or does not end
within its pivots, it leaves the forces as they were and Gauss-Seidel solves from the warm
start as before. The backward pass solves its system on the same rows by the same
factorization (``active_set_adjoint``).

Example::

    k = active_set_kernels(sk.float64)
    sk.launch(k.active_set, 1, inputs=[count, contact_slot, slot_condim, elliptic, nd, tol, Y, b, R],
              outputs=[slot_force, H, L, f, y, on, rows, solved, B])   # rows: 2 ACTIVE_SET_ROWS ints
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .contact_solve import ROWS_PER_CONTACT, basis_at

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints = sk.array(dtype=sk.int32)

# the most rows solved exactly: the scratch holds two matrices of this size squared
ACTIVE_SET_ROWS = 128


@sk.func
def delassus_entry(H: AnyArray, n: int, i: int, j: int, nd: int, J: AnyArray, X: AnyArray):
    """``H[i, j] = H[j, i] = J_i . X_j``, an entry of the Delassus matrix ``J M^-1 J^T``."""
    h = H.dtype(0.0)
    for d in range(nd):
        h = h + J[i * nd + d] * X[j * nd + d]
    H[i * n + j] = h
    H[j * n + i] = h


@sk.func
def edge_columns(g: Any, pyramid: bool):
    """A row ``g`` of products with a contact's three basis rows (kernels/contact_solve.py,
    basis_at: ``n``, ``mu t1``, ``mu t2``) as products with its four rows: a pyramid's edges
    ``n +- mu t1``, ``n +- mu t2``; otherwise the basis rows themselves and a zero."""
    vec4 = sk.vector(4, type(g[0]))
    if pyramid:
        return vec4(g[0] + g[1], g[0] - g[1], g[0] + g[2], g[0] - g[2])
    return vec4(g[0], g[1], g[2], g[0] * 0.0)


@sk.func
def delassus_block(B: AnyArray, c: int, c2: int, pyramid: bool, pyramid2: bool, nd: int):
    """The 4 x 4 block of the Delassus matrix between the rows of contacts ``c`` and ``c2``,
    from their basis rows (3 each, ``B``): the 3 x 3 block of their sums (nine independent
    chains of multiply-adds), then mapped to the rows, columns then rows (a pyramid's 16
    edge products are sums and differences of those nine)."""
    vec3 = sk.vector(3, B.dtype)
    G = sk.outer(vec3(0.0, 0.0, 0.0), vec3(0.0, 0.0, 0.0))
    r0 = c * 3 * nd
    r2 = c2 * 3 * nd
    for d in range(nd):
        u = vec3(B[r0 + d], B[r0 + nd + d], B[r0 + 2 * nd + d])
        v = vec3(B[r2 + d], B[r2 + nd + d], B[r2 + 2 * nd + d])
        G = G + sk.outer(u, v)
    n = edge_columns(vec3(G[0, 0], G[0, 1], G[0, 2]), pyramid2)
    t1 = edge_columns(vec3(G[1, 0], G[1, 1], G[1, 2]), pyramid2)
    t2 = edge_columns(vec3(G[2, 0], G[2, 1], G[2, 2]), pyramid2)
    if pyramid:
        return sk.matrix_from_rows(n + t1, n - t1, n + t2, n - t2)
    return sk.matrix_from_rows(n, t1, t2, n * 0.0)


@sk.func
def set_solve(n: int, H: AnyArray, b: AnyArray, on: ints, rows: ints, L: AnyArray, y: AnyArray, f: AnyArray):
    """``f`` with ``H_SS f_S = -b_S`` on the rows ``S`` whose ``on`` is 1 and zero elsewhere,
    by the Cholesky factor of ``H_SS`` (in ``L``); returns False if ``H_SS`` is not positive
    definite (rounding on a degenerate set). The factorization and both substitutions go
    column by column (each column's updates are independent of each other, where a row's
    dot product is one chain of dependent multiply-adds to wait on); the factor's diagonal
    is kept as its reciprocals, which the substitutions multiply by (a division would stall
    each step of their chains)."""
    m = int(0)
    for i in range(n):
        f[i] = f.dtype(0.0)
        if on[i] == 1:
            rows[m] = i
            m = m + 1
    for a in range(m):
        y[a] = -b[rows[a]]
        for c in range(a + 1):
            L[a * m + c] = H[rows[a] * n + rows[c]]
    ok = True
    for j in range(m):
        d = L[j * m + j]
        if d <= 0.0:
            ok = False
            d = L.dtype(1.0)
        inv = 1.0 / sk.sqrt(d)
        L[j * m + j] = inv
        for i in range(j + 1, m):
            L[i * m + j] = L[i * m + j] * inv
        for i in range(j + 1, m):
            lij = L[i * m + j]
            for k in range(j + 1, i + 1):
                L[i * m + k] = L[i * m + k] - lij * L[k * m + j]
    # L z = -b_S, then L^T f_S = z (both in y)
    for j in range(m):
        z = y[j] * L[j * m + j]
        y[j] = z
        for i in range(j + 1, m):
            y[i] = y[i] - L[i * m + j] * z
    for back in range(m):
        j = m - 1 - back
        x = y[j] * L[j * m + j]
        y[j] = x
        f[rows[j]] = x
        for i in range(j):
            y[i] = y[i] - L[j * m + i] * x
    return ok


@sk.kernel(enable_backward=False)   # run outside Tapes: the solve's gradient is active_set_adjoint's
def active_set(count: ints, contact_slot: ints, slot_condim: ints, elliptic: int, nd: int, tol: Any,
               Y: AnyArray, b: AnyArray, R: AnyArray, slot_force: AnyArray, H: AnyArray, L: AnyArray,
               f: AnyArray, y: AnyArray, on: ints, rows: ints, solved: ints, B: AnyArray):
    # One thread. on[i]: -1 a row that carries no force (the three unused rows of a condim 1
    # contact or a limit), 1 in the set, 0 out of it. solved[0]: 1 when the forces it leaves
    # meet the optimality conditions (Gauss-Seidel then has nothing to check)
    n = count[0] * ROWS_PER_CONTACT
    solved[0] = 0
    if elliptic == 1 or n == 0 or n > ACTIVE_SET_ROWS:
        return
    for i in range(n):
        c = i // ROWS_PER_CONTACT
        e = i - c * ROWS_PER_CONTACT
        on[i] = -1
        if slot_condim[contact_slot[c]] >= 3 or e == 0:
            on[i] = 0
            if slot_force[ROWS_PER_CONTACT * contact_slot[c] + e] > 0.0:
                on[i] = 1
    # H = Y Y^T + R on the rows that carry force (symmetric: the lower half, mirrored), a
    # block of two contacts' rows at a time, from their basis rows (B, 3 a contact)
    for c in range(count[0]):
        pyramid = slot_condim[contact_slot[c]] >= 3
        for d in range(nd):
            u = basis_at(Y, c * ROWS_PER_CONTACT * nd, nd, d, pyramid)
            for k in range(3):
                B[(c * 3 + k) * nd + d] = u[k]
    for c in range(count[0]):
        for c2 in range(c + 1):
            block = delassus_block(B, c, c2, slot_condim[contact_slot[c]] >= 3,
                                   slot_condim[contact_slot[c2]] >= 3, nd)
            for e in range(ROWS_PER_CONTACT):
                i = c * ROWS_PER_CONTACT + e
                for e2 in range(ROWS_PER_CONTACT):
                    j = c2 * ROWS_PER_CONTACT + e2
                    if j <= i and on[i] >= 0 and on[j] >= 0:
                        H[i * n + j] = block[e, e2]
                        H[j * n + i] = block[e, e2]
    for i in range(n):
        if on[i] >= 0:
            H[i * n + i] = H[i * n + i] + R[i]
    done = False
    pivots = int(3 * n + 10)
    block = True
    fewest = int(n + 1)
    stale = int(0)
    while not done and pivots > 0:
        if not set_solve(n, H, b, on, rows, L, y, f):
            pivots = 0
            break
        wrong = int(0)
        first = int(-1)
        for i in range(n):
            bad = False
            if on[i] == 1 and f[i] < 0.0:
                bad = True
            if on[i] == 0:
                r = b[i]
                for j in range(n):
                    if on[j] == 1:
                        r = r + H[i * n + j] * f[j]
                if r < -tol:
                    bad = True
            if bad:
                wrong = wrong + 1
                if first < 0:
                    first = i
                if block:
                    rows[n + wrong - 1] = i
        if wrong == 0:
            done = True
        else:
            if wrong < fewest:
                fewest = wrong
                stale = 0
            else:
                stale = stale + 1
                if stale >= 3:
                    block = False
            if block:
                for k in range(wrong):
                    i = rows[n + k]
                    on[i] = 1 - on[i]
            else:
                on[first] = 1 - on[first]
            pivots = pivots - 1
    if done:
        solved[0] = 1
        for i in range(n):
            c = i // ROWS_PER_CONTACT
            slot_force[ROWS_PER_CONTACT * contact_slot[c] + i - c * ROWS_PER_CONTACT] = f[i]


@sk.kernel(enable_backward=False)   # itself a backward pass
def active_set_adjoint(count: ints, nd: int, J: AnyArray, X: AnyArray, R: AnyArray, f: AnyArray, g: AnyArray,
                       H: AnyArray, L: AnyArray, rhs: AnyArray, y: AnyArray, on: ints, rows: ints, mu: AnyArray,
                       t: AnyArray, jt_mu: AnyArray):
    # One thread: the adjoint of the solve at its solution, exactly (pgs_adjoint's system,
    # by Cholesky): on the rows that push (f > 0), (A + R) mu = X g; zero on the others;
    # t = X^T mu and J^T mu for the gradients
    n = count[0] * ROWS_PER_CONTACT
    for i in range(n):
        on[i] = 0
        rhs[i] = rhs.dtype(0.0)
        if f[i] > 0.0:
            on[i] = 1
            v = rhs.dtype(0.0)
            for d in range(nd):
                v = v + X[i * nd + d] * g[d]
            rhs[i] = -v
            for j in range(i + 1):
                if on[j] == 1:
                    delassus_entry(H, n, i, j, nd, J, X)
            H[i * n + i] = H[i * n + i] + R[i]
    set_solve(n, H, rhs, on, rows, L, y, mu)
    for d in range(nd):
        u = t.dtype(0.0)
        v = t.dtype(0.0)
        for i in range(n):
            u = u + X[i * nd + d] * mu[i]
            v = v + J[i * nd + d] * mu[i]
        t[d] = u
        jt_mu[d] = v


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    reals = sk.array(dtype=real)
    types = {"tol": real}
    types.update(dict.fromkeys(["J", "X", "Y", "B", "b", "R", "slot_force", "H", "L", "f", "y", "g", "rhs", "mu", "t",
                                "jt_mu"], reals))
    return types


@functools.cache  # asked for on every launch: a lookup
def active_set_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real``.

    Example::

        active_set_kernels(sk.float64).active_set     # one thread
    """
    return sk.instantiate(real, __name__)
