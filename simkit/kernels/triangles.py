"""Cloth membranes: St. Venant-Kirchhoff triangles with damping of the strain rate.

Each triangle ``(i, j, k)`` maps its rest shape, in the triangle's own 2-d frame, to
the world through the 3 x 2 deformation gradient ``F = [x_j - x_i, x_k - x_i] @ pose``
(``pose`` is the inverse rest edge matrix, see ``geometry.triangle_rest_pose``). With
the Green strain ``E = (F^T F - I) / 2`` and the strain rate ``dE/dt = sym(F^T dF/dt)``
the energy and dissipation per rest area are::

    psi = k_mu |E|^2 + k_lambda / 2 tr(E)^2          (St. Venant-Kirchhoff)
    phi = k_damp / 2 |dE/dt|^2                       (Rayleigh dissipation)

and the nodal forces are ``-area * (P @ pose^T)`` on ``j`` and ``k`` (the columns),
their negated sum on ``i``, with ``P = F S`` and the second Piola-Kirchhoff stress
``S = 2 k_mu E + k_lambda tr(E) I + k_damp dE/dt``.

Why St. Venant-Kirchhoff rather than Neo-Hookean: a membrane has no volume to invert,
and cloth folds collapse triangles to slivers or segments; the StVK energy is a
polynomial in the positions, so it stays finite and smooth there, while the
Neo-Hookean ``log J`` term diverges as the area goes to zero. Its softening under
strong compression is what lets cloth buckle into folds instead of resisting them.
``E`` is unchanged by a rigid motion and ``dE/dt`` is zero for any rigid velocity, so
a rigidly moved rest shape feels no force and a rigidly moving sheet is not damped;
the forces of a triangle sum to zero (they are the gradient of a translation-invariant
energy) and carry no torque (it is also rotation-invariant). Units: ``k_mu`` and
``k_lambda`` are 2-d Lame parameters in N/m, ``k_damp`` is in N s/m.

Example::

    eval_triangle_forces(model, state)   # adds into state.particle_f
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from ..core.launch import launch
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def eval_triangles(q: AnyArray, qd: AnyArray, tris: Any, f: AnyArray):
    t = sk.tid()
    i = tris.indices[t, 0]
    j = tris.indices[t, 1]
    k = tris.indices[t, 2]
    X = tris.pose[t]
    x1 = q[j] - q[i]
    x2 = q[k] - q[i]
    v1 = qd[j] - qd[i]
    v2 = qd[k] - qd[i]
    # Columns of F = [x1 x2] @ pose and of its time derivative, kept as vectors:
    # the 2 x 2 strain tensors below then need only dot products.
    c0 = x1 * X[0, 0] + x2 * X[1, 0]
    c1 = x1 * X[0, 1] + x2 * X[1, 1]
    d0 = v1 * X[0, 0] + v2 * X[1, 0]
    d1 = v1 * X[0, 1] + v2 * X[1, 1]
    e00 = 0.5 * (sk.dot(c0, c0) - 1.0)
    e11 = 0.5 * (sk.dot(c1, c1) - 1.0)
    e01 = 0.5 * sk.dot(c0, c1)
    r00 = sk.dot(c0, d0)
    r11 = sk.dot(c1, d1)
    r01 = 0.5 * (sk.dot(c0, d1) + sk.dot(c1, d0))
    mu = tris.k_mu[t]
    lam = tris.k_lambda[t] * (e00 + e11)
    damp = tris.k_damp[t]
    s00 = 2.0 * mu * e00 + lam + damp * r00
    s11 = 2.0 * mu * e11 + lam + damp * r11
    s01 = 2.0 * mu * e01 + damp * r01
    # Columns of the first Piola-Kirchhoff stress P = F S (S symmetric).
    p0 = c0 * s00 + c1 * s01
    p1 = c0 * s01 + c1 * s11
    a = tris.area[t]
    fj = (p0 * X[0, 0] + p1 * X[0, 1]) * (-a)
    fk = (p0 * X[1, 0] + p1 * X[1, 1]) * (-a)
    f[i] += -(fj + fk)
    f[j] += fj
    f[k] += fk


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s = sk.array(dtype=S.vec3)
    return {"q": vec3s, "qd": vec3s, "f": vec3s, "tris": S.Triangles}


@functools.cache  # asked for on every launch: a lookup
def triangle_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)


def eval_triangle_forces(model, state) -> None:
    """Add the membrane forces of every triangle of ``model`` at ``state`` into ``state.particle_f``.

    Example::

        state.clear_forces()
        eval_triangle_forces(model, state)
        state.particle_f.numpy()      # elastic + damping forces of the membranes
    """
    if model.tri_count == 0:
        return
    launch(triangle_kernels(model.dtype).eval_triangles, model.tri_count,
           inputs=[state.particle_q, state.particle_qd, model.triangles, state.particle_f])
