"""The mesh-shape contacts of :class:`~simkit.sim.XPBD` (kernels in
:mod:`simkit.kernels.xpbd_mesh_contact`): their multipliers, the per-body contact counts of
a step and the solve of each iteration.

Example::

    m = mesh_scratch(model, state_out, iterations)
    count_mesh_contacts(model, s, m)                   # after the bodies' prediction
    solve_mesh_contacts(model, state_in, s, m, it)     # in iteration it, before the corrections apply
"""

from __future__ import annotations

from ..core import array as A
from ..core.launch import launch
from ..kernels.mesh_contact import mesh_contact_kernels
from ..kernels.meshes import mesh_contact_rows
from ..kernels.shapes import particle_shape_rows
from ..kernels.xpbd_mesh_contact import xpbd_mesh_contact_kernels
from .model import Model, State


def _sizes(model: Model) -> tuple[int, int]:
    """(rows of ``mesh_contact_rows``, widest row of the particles' mesh slots) of ``model``."""
    return (len(mesh_contact_rows(model)) if model.body_count else 0,
            particle_shape_rows(model, "mesh")[1] if model.particle_count else 0)


def _has_meshes(model: Model) -> bool:
    return bool(model.shape_count and len(model.meshes.radius))


class MeshScratch:
    """The normal and tangential multipliers of the mesh contacts before and after each
    iteration: one per row of ``mesh_contact_rows`` and one per (particle, mesh slot)."""

    def __init__(self, model: Model, iterations: int):
        real, vec3, device = model.dtype, model.types.vec3, model.device
        self.iterations = iterations
        self.rows, self.width = _sizes(model)
        pairs = (model.particle_count, self.width) if self.width else (0, 0)

        def multipliers(shape, dtype):
            return [A.zeros(shape, dtype=dtype, device=device) for _ in range(iterations + 1)]

        self.lam_row_n = multipliers(self.rows, real)
        self.lam_row_t = multipliers(self.rows, vec3)
        self.lam_particle_n = multipliers(pairs, real)
        self.lam_particle_t = multipliers(pairs, vec3)


def mesh_scratch(model: Model, state: State, iterations: int) -> MeshScratch | None:
    """The mesh multipliers of ``state`` (an XPBD output state), or None for a model without
    mesh shapes."""
    if not _has_meshes(model):
        return None
    m = state.__dict__.get("_xpbd_mesh_scratch")
    if m is None or m.iterations != iterations:
        m = state._xpbd_mesh_scratch = MeshScratch(model, iterations)
    return m


def mesh_kernel_modules(model: Model) -> list:
    """The kernel namespaces, one per module, that :func:`count_mesh_contacts` and
    :func:`solve_mesh_contacts` launch in an XPBD step of ``model`` now.

    Example::

        sk.compile_ahead(*mesh_kernel_modules(model))
    """
    if not model.contacts_enabled or not _has_meshes(model):
        return []
    rows, width = _sizes(model)
    real = model.dtype
    out = [mesh_contact_kernels(real)] if rows else []
    return out + ([xpbd_mesh_contact_kernels(real)] if rows or width else [])


def count_mesh_contacts(model: Model, s, m: MeshScratch | None) -> None:
    """Add the touching mesh contacts of the predicted step (``s.body_poses[0]``,
    ``s.positions[0]``) to the per-body contact counts ``s.contact_split``."""
    if m is None or not model.body_count:
        return
    k = xpbd_mesh_contact_kernels(model.dtype)
    poses = s.body_poses[0]
    if m.rows:
        # the penalty integrator's count of touching rows per body: one constraint each here
        launch(mesh_contact_kernels(model.dtype).count_mesh_rows, m.rows,
               inputs=[mesh_contact_rows(model), poses, model.shapes, model.meshes, model.contact, s.contact_split])
    if m.width:
        launch(k.count_particle_mesh_contacts, (model.particle_count, m.width),
               inputs=[s.positions[0], model.particles, poses, model.shapes, model.meshes,
                       particle_shape_rows(model, "mesh")[0], s.contact_split])


def solve_mesh_contacts(model: Model, state_in: State, s, m: MeshScratch | None, it: int, particle_split,
                        joint_split) -> None:
    """The mesh contacts of iteration ``it``: corrections into the particles' ``s.deltas[it]``
    and the bodies' ``s.body_dx[it]``, ``s.body_dtheta[it]``."""
    if m is None:
        return
    k = xpbd_mesh_contact_kernels(model.dtype)
    poses, prev = s.body_poses[it], state_in.body_q
    dx, dtheta = s.body_dx[it], s.body_dtheta[it]
    if m.rows:
        launch(k.solve_mesh_rows, m.rows,
               inputs=[poses, prev, model.shapes, model.meshes, model.contact, mesh_contact_rows(model),
                       model.bodies, joint_split, s.contact_split, m.lam_row_n[it], m.lam_row_t[it], dx, dtheta,
                       m.lam_row_n[it + 1], m.lam_row_t[it + 1]])
    if m.width:
        launch(k.solve_particle_meshes, (model.particle_count, m.width),
               inputs=[s.positions[it], state_in.particle_q, model.particles, particle_split, poses, prev,
                       model.shapes, model.meshes, particle_shape_rows(model, "mesh")[0], model.contact,
                       model.bodies, joint_split, s.contact_split, m.lam_particle_n[it], m.lam_particle_t[it],
                       s.deltas[it], dx, dtheta, m.lam_particle_n[it + 1], m.lam_particle_t[it + 1]])
