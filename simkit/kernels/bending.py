"""Cloth bending: a damped angular spring on the dihedral angle of each hinge.

A hinge ``(o0, o1, v0, v1)`` joins the triangles ``(o0, v0, v1)`` and ``(o1, v1, v0)``
across the edge ``e = x_v1 - x_v0``. With their area-weighted normals
``N0 = (x_v0 - x_o0) x (x_v1 - x_o0)`` and ``N1 = (x_v1 - x_o1) x (x_v0 - x_o1)`` the
dihedral angle is ``theta = atan2((N0 x N1) . e, |e| N0 . N1)``: 0 when flat, the
convention of ``geometry.dihedral_angle``. The hinge energy and dissipation are::

    E = ke / 2 (theta - rest_angle)^2        phi = kd / 2 (d theta / dt)^2

so ``ke`` is the hinge's torque per radian (N m) and the force on vertex ``p`` is
``-(ke (theta - rest_angle) + kd d theta/dt) * d theta / d x_p``. The angle gradient
is closed-form: ``-|e| N0 / |N0|^2`` on ``o0`` (the unit normal over the height of
``o0`` above the edge), likewise on ``o1``, and on ``v0``, ``v1`` minus those two
split by where ``o0`` and ``o1`` project onto the edge. The four gradients sum to
zero and carry no torque (the angle is invariant under rigid motion), so neither
does the force. A hinge with a collapsed triangle or edge has no defined angle and
exerts nothing. The angle lives in (-pi, pi]: rest angles near +-pi are not supported.

Example::

    eval_bending_forces(model, state)   # adds into state.particle_f
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from ..core.launch import launch
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.func
def hinge_angle_gradient(o0, o1, v0, v1):
    """Dihedral angle of the hinge and its gradient with respect to ``o0, o1, v0, v1``
    (all zero when a triangle or the edge is degenerate)."""
    e = v1 - v0
    n0 = sk.cross(v0 - o0, v1 - o0)
    n1 = sk.cross(v1 - o1, v0 - o1)
    ee = sk.dot(e, e)
    a0 = sk.dot(n0, n0)
    a1 = sk.dot(n1, n1)
    # zeros by construction, not e * 0.0: no multiply, and no adjoint to sweep
    theta = type(ee)(0.0)
    g0 = type(e)()
    g1 = type(e)()
    gv0 = type(e)()
    gv1 = type(e)()
    if ee > 0.0 and a0 > 0.0 and a1 > 0.0:
        el = sk.sqrt(ee)
        theta = sk.atan2(sk.dot(sk.cross(n0, n1), e), el * sk.dot(n0, n1))
        g0 = n0 * (-el / a0)
        g1 = n1 * (-el / a1)
        # fractional positions of the opposite vertices' projections along the edge
        s0 = sk.dot(o0 - v0, e) / ee
        s1 = sk.dot(o1 - v0, e) / ee
        gv0 = g0 * (s0 - 1.0) + g1 * (s1 - 1.0)
        gv1 = g0 * (-s0) - g1 * s1
    return theta, g0, g1, gv0, gv1


@sk.kernel
def eval_bending(q: AnyArray, qd: AnyArray, edges: Any, f: AnyArray):
    h = sk.tid()
    i0 = edges.indices[h, 0]
    i1 = edges.indices[h, 1]
    j0 = edges.indices[h, 2]
    j1 = edges.indices[h, 3]
    theta, g0, g1, gv0, gv1 = hinge_angle_gradient(q[i0], q[i1], q[j0], q[j1])
    rate = sk.dot(g0, qd[i0]) + sk.dot(g1, qd[i1]) + sk.dot(gv0, qd[j0]) + sk.dot(gv1, qd[j1])
    torque = edges.ke[h] * (theta - edges.rest_angle[h]) + edges.kd[h] * rate
    f[i0] += g0 * (-torque)
    f[i1] += g1 * (-torque)
    f[j0] += gv0 * (-torque)
    f[j1] += gv1 * (-torque)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s = sk.array(dtype=S.vec3)
    return {"q": vec3s, "qd": vec3s, "f": vec3s, "edges": S.Edges}


@functools.cache  # asked for on every launch: a lookup
def bending_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)


def eval_bending_forces(model, state) -> None:
    """Add the bending forces of every hinge of ``model`` at ``state`` into ``state.particle_f``.

    Example::

        state.clear_forces()
        eval_bending_forces(model, state)
        state.particle_f.numpy()      # restoring + damping forces of the hinges
    """
    if model.edge_count == 0:
        return
    launch(bending_kernels(model.dtype).eval_bending, model.edge_count,
           inputs=[state.particle_q, state.particle_qd, model.edges, state.particle_f])
