"""Tetrahedral soft bodies: stable Neo-Hookean elasticity with viscous damping.

Each tetrahedron ``(x0, x1, x2, x3)`` has the deformation gradient ``F = Ds @ pose``, where
``Ds`` has the columns ``x1 - x0, x2 - x0, x3 - x0`` and ``pose`` is the inverse of the same
matrix at rest. With ``J = det F`` and ``I_C = tr(F^T F)`` the stored energy density is the
stable Neo-Hookean of Smith, de Goes and Kim (2018) without its log barrier,

    psi = mu/2 (I_C - 3) + lam/2 (J - alpha)^2 - mu^2 / (2 lam),   alpha = 1 + mu / lam,

in the reparametrisation ``mu = k_mu``, ``lam = k_lambda + k_mu``, so that its linearisation
is linear elasticity with Lame parameters ``k_mu``, ``k_lambda`` (Young's modulus
``k_mu (3 k_lambda + 2 k_mu) / (k_lambda + k_mu)``). Expanded, and free of divisions,

    psi = mu/2 (I_C - 3) - mu (J - 1) + lam/2 (J - 1)^2,

which is zero at rest and under rotations, and a polynomial in ``F``: inverted (``J < 0``)
and flat (``J = 0``) elements get finite forces that push them back towards ``J = 1``.
The first Piola-Kirchhoff stress is ``P = mu F + (lam (J - 1) - mu) cof(F)``.

Damping is a Rayleigh dissipation ``k_damp/2 |dE/dt|^2`` of the Green strain rate
``dE/dt = sym(F^T dF/dt)``, which vanishes under rigid motion, so a spinning or
translating body is not slowed down; its stress is ``k_damp F dE/dt``. Element forces are
``-V P pose^T`` on ``x1, x2, x3`` (columns) and minus their sum on ``x0``.

Example::

    k = tet_kernels(sk.float32)
    sk.launch(k.eval_tets, model.tet_count, inputs=[q, qd, model.tets, f])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def eval_tets(q: AnyArray, qd: AnyArray, tets: Any, f: AnyArray):
    # Work with transposed matrices throughout: a matrix built from three vectors takes
    # them as rows, so rows of F^T are the columns of F and rows of the result are the
    # forces on x1, x2, x3.
    t = sk.tid()
    i = tets.indices[t, 0]
    j = tets.indices[t, 1]
    k = tets.indices[t, 2]
    l = tets.indices[t, 3]
    x0 = q[i]
    v0 = qd[i]
    pose = tets.pose[t]
    pose_t = sk.transpose(pose)
    M = type(pose)  # the instance's mat33
    FT = pose_t @ M(q[j] - x0, q[k] - x0, q[l] - x0)
    dFT = pose_t @ M(qd[j] - v0, qd[k] - v0, qd[l] - v0)
    c0 = FT[0]
    c1 = FT[1]
    c2 = FT[2]
    # cof(F) = dJ/dF, columns from cross products so that it exists for singular F
    cofT = M(sk.cross(c1, c2), sk.cross(c2, c0), sk.cross(c0, c1))
    J = sk.dot(c0, cofT[0])
    mu = tets.k_mu[t]
    lam = tets.k_lambda[t] + mu
    A = FT @ sk.transpose(dFT)
    strain_rate = 0.5 * (A + sk.transpose(A))
    PT = mu * FT + (lam * (J - 1.0) - mu) * cofT + tets.k_damp[t] * (strain_rate @ FT)
    HT = (-tets.volume[t]) * (pose @ PT)
    f1 = HT[0]
    f2 = HT[1]
    f3 = HT[2]
    f[i] -= f1 + f2 + f3
    f[j] += f1
    f[k] += f2
    f[l] += f3


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s = sk.array(dtype=S.vec3)
    return {"q": vec3s, "qd": vec3s, "f": vec3s, "tets": S.Tets}


@functools.cache  # asked for on every launch: a lookup
def tet_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)


def eval_tet_forces(model, state) -> None:
    """Add the elastic and damping forces of every tetrahedron of ``model`` at ``state``
    into ``state.particle_f``.

    Example::

        state.clear_forces()
        eval_tet_forces(model, state)
        state.particle_f.numpy()
    """
    sk.launch(tet_kernels(model.dtype).eval_tets, model.tet_count,
              inputs=[state.particle_q, state.particle_qd, model.tets, state.particle_f])
