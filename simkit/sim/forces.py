"""Force evaluation shared by the integrators: every force of a model accumulated into
``state.particle_f`` and every wrench into ``state.body_f``.

Example::

    state.clear_forces()
    eval_forces(model, state, control)
    eval_body_forces(model, state, control, 1e-3, state_out)
"""

from __future__ import annotations

from ..core.launch import launch
from ..kernels.bending import bending_kernels, eval_bending_forces
from ..kernels.bodies import body_kernels
from ..kernels.body_contact import body_contact_kernels, eval_static_pair_contact, open_body_contacts
from ..kernels.broad_phase import broad_phase_kernels, eval_listed_pair_contact, scan_counts
from ..kernels.broad_phase_options import sweeps
from ..kernels.contact import contact_kernels
from ..kernels.hash_grid import hash_grid_kernels
from ..kernels.joints import eval_joint_forces, joint_kernels
from ..kernels.mesh_contact import eval_body_mesh_forces, eval_particle_mesh_forces, mesh_contact_kernels
from ..kernels.meshes import mesh_contact_rows
from ..kernels.particle_contact import eval_particle_contact_forces, particle_contact_kernels
from ..kernels.particles import particle_kernels
from ..kernels.shapes import particle_shape_rows
from ..kernels.springs import spring_kernels
from ..kernels.tets import eval_tet_forces, tet_kernels
from ..kernels.triangles import eval_triangle_forces, triangle_kernels
from .cloth_shapes import cloth_shape_kernel_modules, eval_cloth_shape_forces


def eval_body_contact_forces(model, state_in, state_out) -> None:
    """Add the contact wrenches of every body shape (against the ground when the model has
    one, and against the other shapes: the pairs of the static list, or those the broad phase
    finds each step) at ``state_in`` into ``state_in.body_f``, reading the contacts' anchors
    from ``state_in`` and writing them, for the end of the step, into ``state_out``
    (``contact_stuck``, ``contact_anchor``).

    Example::

        state_in.clear_forces()
        eval_body_contact_forces(model, state_in, state_out)
    """
    opened = open_body_contacts(model, state_in, state_out)
    if opened is None:
        return
    if sweeps(model):
        eval_listed_pair_contact(model, state_in, state_out, *opened)
    else:
        eval_static_pair_contact(model, state_in, *opened)


def eval_forces(model, state, control) -> None:
    """Add springs, membranes, bending, tetrahedra and contact forces of ``state`` into
    ``state.particle_f`` (gravity is applied by the integrators as an acceleration)."""
    q, qd, f = state.particle_q, state.particle_qd, state.particle_f
    real = model.dtype
    if model.spring_count:
        launch(spring_kernels(real).eval_springs, model.spring_count,
               inputs=[q, qd, model.springs, control.spring_activation, f])
    if model.tri_count:
        eval_triangle_forces(model, state)
    if model.edge_count:
        eval_bending_forces(model, state)
    if model.tet_count:
        eval_tet_forces(model, state)
    eval_contact_forces(model, state)


def eval_body_forces(model, state, control, dt: float, state_out) -> None:
    """Add the contact and joint wrenches of ``state``'s bodies into ``state.body_f`` for a
    step of ``dt`` into ``state_out``, which receives the contacts' anchors (gravity is applied
    by the integrator; joint dampers are implicit in ``dt``)."""
    if model.body_count:
        eval_body_contact_forces(model, state, state_out)
        eval_body_mesh_forces(model, state)
    if model.joint_count:
        eval_joint_forces(model, state, control, dt)


def eval_contact_forces(model, state) -> None:
    """Penalty contact of every particle against the ground, the shapes of its world and
    (when the model enables it) the other particles of its world, and of the cloth's triangles
    against the shapes of their world; world -1 meets every world.
    Nothing while ``model.contacts_enabled`` is False."""
    if not model.particle_count or not model.contacts_enabled:
        return
    k = contact_kernels(model.dtype)
    q, qd, f = state.particle_q, state.particle_qd, state.particle_f
    if model.ground:
        launch(k.ground_contact, model.particle_count, inputs=[q, qd, model.particles, model.contact, f])
    if model.shape_count:
        rows, width = particle_shape_rows(model, "all")
        if width:
            launch(k.shape_contact, (model.particle_count, width),
                   inputs=[q, qd, model.particles, model.shapes, rows, model.contact, state.body_q, state.body_qd,
                           model.bodies, f, state.body_f])
        eval_cloth_shape_forces(model, state)
        eval_particle_mesh_forces(model, state)
    if model.particle_contact:
        eval_particle_contact_forces(model, state)


def force_kernel_modules(model) -> list:
    """The kernels, one per module (or a module's namespace of them), that clearing the
    forces, :func:`eval_forces` and integrating the particles and bodies launch for ``model``
    now: what a step starts compiling at once before its first launch
    (:func:`~simkit.sim.integrators.compile_step_ahead`).

    Example::

        sk.compile_ahead(*force_kernel_modules(model))   # springs, triangles, ... compile at once
    """
    real, n = model.dtype, model.particle_count
    counted = ((n, particle_kernels), (model.body_count, body_kernels), (model.spring_count, spring_kernels),
               (model.tri_count, triangle_kernels), (model.edge_count, bending_kernels),
               (model.tet_count, tet_kernels))
    out = [kernels(real) for count, kernels in counted if count]
    if n and model.contacts_enabled:
        if model.ground or (model.shape_count and particle_shape_rows(model, "all")[1]):
            out.append(contact_kernels(real))
        if model.shape_count and len(model.meshes.radius) and particle_shape_rows(model, "mesh")[1]:
            out.append(mesh_contact_kernels(real))
        if model.particle_contact and n > 1:
            out += [particle_contact_kernels(real), hash_grid_kernels(real)]
        out += cloth_shape_kernel_modules(model)
    return out


def body_contact_kernel_modules(model) -> list:
    """The kernels, one per module (or a module's namespace of them), that
    :func:`eval_body_contact_forces` launches for ``model`` now (see :func:`force_kernel_modules`).

    Example::

        sk.compile_ahead(*body_contact_kernel_modules(model))
    """
    if not model.shape_count or not model.body_count or not model.contacts_enabled:
        return []
    real = model.dtype
    return [body_contact_kernels(real)] + ([broad_phase_kernels(real), scan_counts] if sweeps(model) else [])


def body_force_kernel_modules(model) -> list:
    """The kernels, one per module (or a module's namespace of them), that
    :func:`eval_body_forces` launches for ``model`` now (see :func:`force_kernel_modules`).

    Example::

        sk.compile_ahead(*body_force_kernel_modules(model))
    """
    if not model.body_count:
        return []
    real = model.dtype
    out = body_contact_kernel_modules(model) + ([joint_kernels(real)] if model.joint_count else [])
    if model.contacts_enabled and len(model.meshes.radius) and len(mesh_contact_rows(model)):
        out.append(mesh_contact_kernels(real))
    return out
