"""XPBD: extended position-based dynamics (Macklin, Mueller, Chentanez 2016), differentiable.

One step predicts ``x* = x + dt v + dt^2 g``, runs ``iterations`` Jacobi iterations
of compliant constraint projection, and sets ``v = (x - x_n) / dt``. Constraints:

- springs: distance ``|x_i - x_j| - rest_length (1 + activation)``, compliance ``1 / ke``,
  damping ``kd`` (N s/m, as for the force-based springs);
- triangles: corotated membrane (energy ``A (mu |F - R|^2 + lambda / 2 (J - 1)^2)``, ``F`` the
  3x2 deformation gradient, ``R`` its polar rotation, ``J`` the area ratio): a shape constraint
  ``F - R`` with compliance ``1 / (2 k_mu A)`` and an area constraint ``J - 1`` with compliance
  ``1 / (k_lambda A)``; at small strain this is linear elasticity with Lame parameters
  ``(k_mu, k_lambda)``, and it resists compression for any ratio of the two;
- bending hinges: dihedral angle ``theta - rest_angle``, compliance ``1 / ke`` (energy
  ``ke / 2 (theta - rest)^2``), damping ``kd``;
- tetrahedra: the same corotated pair with ``det F`` and the rest volume ``V``;
- contact with the ground and the static shapes: a particle of radius ``r`` is pushed out to
  signed distance ``r``, and its tangential motion over the step is cancelled up to
  ``mu`` times that push (Coulomb friction at the position level, Macklin et al. 2014).
  Contact is inelastic; the penalty parameters ``ke``, ``kd``, ``kf`` are not used.

``k_damp`` of triangles and tetrahedra is a stiffness-proportional (Rayleigh) damping time in
seconds: each constraint is damped by ``k_damp`` times its stiffness.

Design choices: Lagrange multipliers start at zero each step (XPBD's own choice) and are
carried across the iterations of the step. Iterations are Jacobi with mass splitting: a
particle touched by ``n`` constraints counts ``n`` times its inverse mass in each of them,
so their summed corrections cannot overshoot (the iteration converges for any stiffness;
finer meshes need more iterations to get as stiff). The shape constraint of an element has
a matrix multiplier, which keeps it smooth at rest, so gradients are well defined there.
Every iteration reads one positions buffer and writes another, so the whole step is
differentiable on a Tape; those buffers live on ``state_out`` (allocated on first use), so
stepping between the same states allocates nothing, and a rollout with one State per step
keeps every iteration alive for backward.

Example::

    integrator = XPBD(iterations=4)
    integrator.step(model, state_in, state_out, control, dt=1.0 / 600.0)
"""

from __future__ import annotations

import numpy as np

from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from ..kernels.xpbd import xpbd_kernels
from .integrators import check_step
from .model import Control, Model, State


def _mass_split(model: Model) -> A.Array:
    """Number of constraints touching each particle (at least 1), cached on the model: the
    topology of a finalized model never changes."""
    split = model.__dict__.get("_xpbd_mass_split")
    if split is None:
        n = model.particle_count
        count = np.zeros(n)
        for indices, rows in ((model.springs.indices, model.spring_count), (model.triangles.indices, model.tri_count),
                              (model.edges.indices, model.edge_count), (model.tets.indices, model.tet_count)):
            if rows:
                count += np.bincount(indices.numpy().ravel(), minlength=n)
        split = A.array(np.maximum(count, 1.0).astype(model.dtype.np_dtype), dtype=model.dtype, device=model.device)
        model._xpbd_mass_split = split
    return split


class _Scratch:
    """The per-iteration buffers of one output state: positions after each iteration but
    the last (which is ``state_out.particle_q``), position corrections, and the Lagrange
    multipliers of each constraint family before and after each iteration."""

    def __init__(self, model: Model, iterations: int):
        real, device, n = model.dtype, model.device, model.particle_count
        mat32, mat33 = T.matrix((3, 2), real), model.types.mat33

        def vectors():
            return A.zeros(n, dtype=model.types.vec3, device=device)

        def multipliers(count, dtype):
            return [A.zeros(count, dtype=dtype, device=device) for _ in range(iterations + 1)]

        self.iterations = iterations
        self.positions = [vectors() for _ in range(iterations)]
        self.deltas = [vectors() for _ in range(iterations)]
        self.lam_springs = multipliers(model.spring_count, real)
        self.lam_tri_shape = multipliers(model.tri_count, mat32)
        self.lam_tri_area = multipliers(model.tri_count, real)
        self.lam_edges = multipliers(model.edge_count, real)
        self.lam_tet_shape = multipliers(model.tet_count, mat33)
        self.lam_tet_volume = multipliers(model.tet_count, real)
        self.used = False

    def reset(self) -> None:
        """Zero the accumulators before a step that reuses these buffers (the multipliers of
        iteration 0 are never written, every other buffer is overwritten whole)."""
        if self.used:
            for d in self.deltas:
                d.zero_()
        self.used = True


def _scratch(model: Model, state: State, iterations: int) -> _Scratch:
    s = state.__dict__.get("_xpbd_scratch")
    if s is None or s.iterations != iterations:
        s = state._xpbd_scratch = _Scratch(model, iterations)
    s.reset()
    return s


class XPBD:
    """Extended position-based dynamics with ``iterations`` Jacobi constraint iterations per step.

    Unconditionally stable for any stiffness: a stiff spring (large ``ke``) becomes a nearly
    rigid distance constraint instead of requiring a tiny ``dt``. More iterations or smaller
    steps make stiff materials converge closer to their stiffness; too few make them softer.

    Example::

        integrator = XPBD(iterations=4)
        states = sk.sim.simulate(model, integrator, model.state(), steps=600, dt=1.0 / 600.0)
    """

    def __init__(self, iterations: int = 4):
        if not isinstance(iterations, (int, np.integer)) or isinstance(iterations, bool) or iterations < 1:
            raise ValueError(f"XPBD: iterations must be an int >= 1, got {iterations!r}")
        self.iterations = int(iterations)

    def __repr__(self) -> str:
        return f"XPBD(iterations={self.iterations})"

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        """Advance ``state_in`` by ``dt`` into ``state_out`` (``state_in`` is only read).

        Example::

            XPBD().step(model, s0, s1, None, 1.0 / 600.0)
        """
        control = check_step(model, state_in, state_out, control, dt)
        if model.particle_contact:
            raise NotImplementedError("XPBD does not handle particle-particle contact (particle_contact=True); "
                                      "use SemiImplicitEuler for such models")
        k = xpbd_kernels(model.dtype)
        s = _scratch(model, state_out, self.iterations)
        split = _mass_split(model)
        n = model.particle_count
        q_prev = state_in.particle_q
        particles = model.particles
        launch(k.predict, n, inputs=[q_prev, state_in.particle_qd, particles, model.gravity, dt, s.positions[0]])
        for it in range(self.iterations):
            q = s.positions[it]
            q_out = s.positions[it + 1] if it + 1 < self.iterations else state_out.particle_q
            delta = s.deltas[it]
            if model.spring_count:
                launch(k.solve_springs, model.spring_count,
                       inputs=[q, q_prev, model.springs, control.spring_activation, particles, split,
                               s.lam_springs[it], dt, delta, s.lam_springs[it + 1]])
            if model.tri_count:
                launch(k.solve_triangles, model.tri_count,
                       inputs=[q, q_prev, model.triangles, particles, split, s.lam_tri_shape[it],
                               s.lam_tri_area[it], dt, delta, s.lam_tri_shape[it + 1], s.lam_tri_area[it + 1]])
            if model.edge_count:
                launch(k.solve_bending, model.edge_count,
                       inputs=[q, q_prev, model.edges, particles, split, s.lam_edges[it], dt, delta,
                               s.lam_edges[it + 1]])
            if model.tet_count:
                launch(k.solve_tets, model.tet_count,
                       inputs=[q, q_prev, model.tets, particles, split, s.lam_tet_shape[it],
                               s.lam_tet_volume[it], dt, delta, s.lam_tet_shape[it + 1], s.lam_tet_volume[it + 1]])
            launch(k.apply_corrections, n,
                   inputs=[q, delta, q_prev, particles, model.contact, model.shapes, model.shape_count, q_out])
        launch(k.update_velocities, n, inputs=[state_out.particle_q, q_prev, dt, state_out.particle_qd])
