"""Cloth triangles against shapes in the simulation layer: the builder switch, the rows of
shapes each triangle may touch, and the calls the integrators make (kernels and the contact
law in :mod:`simkit.kernels.cloth_shape_contact`; the user guide is docs/cloth.md).

It is on by default for every model with triangles and primitive shapes (spheres, capsules,
boxes, cylinders, cones, ellipsoids, convex hulls; planes and meshes have no features here):
``ModelBuilder.set_cloth_shape_contact(False)`` leaves only the cloth's vertices touching
shapes, as before. The broad phase is that of particles against shapes: each triangle reads
the row of shapes of its world (and of world -1), one thread per (triangle, slot) looping
over the shape's features, and skips a shape whose bounding sphere does not reach the triangle's.

Example::

    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((-0.2, 0.5, 0.2), (-0.7071068, 0.0, 0.0, 0.7071068), (0, 0, 0), 4, 4, 0.1, 0.1, mass=1e-3)
    b.add_shape_sphere((0.0, 0.6, 0.0), 0.01, body=b.add_body())
    model = b.finalize()
    cloth_shapes_active(model)      # True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from ..kernels.cloth_shape_contact import cloth_shape_kernels
from ..kernels.shapes import SURFACE_ONLY, world_groups
from ..kernels.structs import SHAPE_MESH


class ClothShapeBuilder:
    """The builder's switch of cloth triangles against shapes (a mixin of
    :class:`~simkit.sim.ModelBuilder`)."""

    cloth_shape_contact: bool = True

    def set_cloth_shape_contact(self, enabled: bool = True) -> None:
        """Whether the cloth's triangles (not only its vertices) collide with the shapes:
        on by default; ``False`` leaves the vertices alone touching shapes, so a shape smaller
        than a cell passes between them.

        Example::

            b.set_cloth_shape_contact(False)
        """
        if not isinstance(enabled, (bool, np.bool_)):
            raise TypeError(f"set_cloth_shape_contact: enabled must be a bool, got {type(enabled).__name__}")
        self.cloth_shape_contact = bool(enabled)


def triangle_neighbours(model: Any) -> A.Array:
    """For each triangle and each side ``(0: a b, 1: b c, 2: c a)``, the other triangle that
    has that side, or -1 on a border (and where more than two triangles share it), as an
    int32 ``(M, 3)`` array cached on the model.

    Example::

        triangle_neighbours(model).numpy()[0]     # [-1  1 -1]
    """
    found = model.__dict__.get("_triangle_neighbours")
    if found is None:
        tris = model.triangles.indices.numpy().reshape(-1, 3).astype(np.int64)
        m = len(tris)
        sides = np.stack([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]], axis=1).reshape(-1, 2)
        key = np.sort(sides, axis=1)
        key = key[:, 0] * (int(tris.max(initial=0)) + 1) + key[:, 1]
        order = np.argsort(key, kind="stable")
        out = np.full(3 * m, -1, dtype=np.int64)
        _, start, count = np.unique(key[order], return_index=True, return_counts=True)
        pair = start[count == 2]
        first, second = order[pair], order[pair + 1]
        out[first], out[second] = second // 3, first // 3
        found = A.array(out.reshape(-1, 3).astype(np.int32), dtype=T.int32, device=model.device)
        model._triangle_neighbours = found
    return found


def triangle_shape_rows(model: Any) -> tuple:
    """The shapes each triangle of ``model`` may touch (the shapes with features: not planes
    or meshes) as a ``ParticleShapes`` struct whose ``world`` is the triangles' world (that of
    their first corner), and the width of the widest row a triangle reads. Cached.

    Example::

        rows, width = triangle_shape_rows(model)
    """
    cached = model.__dict__.get("_triangle_shape_rows")
    if cached is None:
        kind = model.shapes.kind.numpy()
        keep = ~np.isin(kind, (SHAPE_MESH, *SURFACE_ONLY))     # no features to show a triangle
        kept = np.flatnonzero(keep)
        groups = world_groups(model.shape_world.numpy(), model.world_count) if model.world_count else []
        rows = [kept] + [g[keep[g]] for g in groups]
        start = np.zeros(len(rows) + 1, dtype=np.int32)
        np.cumsum([len(r) for r in rows], out=start[1:])
        tris = model.triangles.indices.numpy().reshape(-1, 3)
        world = model.particle_world.numpy()[tris[:, 0]].astype(np.int32)
        read = np.unique(world + 1)
        width = max((len(rows[r]) for r in read), default=0)
        device = model.device
        struct = model.types.ParticleShapes(world=A.array(world, dtype=T.int32, device=device),
                                            start=A.array(start, dtype=T.int32, device=device),
                                            shape=A.array(np.concatenate(rows).astype(np.int32), dtype=T.int32,
                                                          device=device))
        cached = model._triangle_shape_rows = (struct, int(width))
    return cached


def cloth_shapes_active(model: Any) -> bool:
    """Whether a step of ``model`` computes its triangles' contact with the shapes.

    Example::

        cloth_shapes_active(model)    # False without triangles, shapes or contact
    """
    return bool(model.cloth_shape_contact and model.contacts_enabled and model.tri_count and model.shape_count
                and triangle_shape_rows(model)[1])


def cloth_shape_kernel_modules(model: Any) -> list:
    """The kernel namespace a step launches for triangles against shapes (none when off).

    Example::

        sk.compile_ahead(*cloth_shape_kernel_modules(model))
    """
    return [cloth_shape_kernels(model.dtype)] if cloth_shapes_active(model) else []


def _dims(model: Any) -> tuple:
    return (model.tri_count, triangle_shape_rows(model)[1])


def eval_cloth_shape_forces(model: Any, state: Any) -> None:
    """Add the penalty forces of the triangles against the shapes at ``state`` into
    ``state.particle_f`` and their reactions into ``state.body_f``.

    Example::

        eval_cloth_shape_forces(model, state)
    """
    if not cloth_shapes_active(model):
        return
    launch(cloth_shape_kernels(model.dtype).triangle_shape_forces, _dims(model),
           inputs=[state.particle_q, state.particle_qd, model.triangles.indices, triangle_neighbours(model),
                   triangle_shape_rows(model)[0], model.particles, model.shapes, model.contact, state.body_q,
                   state.body_qd, model.bodies, state.particle_f, state.body_f])


def count_cloth_shape_body_contacts(model: Any, q, poses, counts) -> None:
    """Add to ``counts`` (int32 per body) the triangle-shape contacts at positions ``q`` and
    body poses ``poses``: XPBD's mass splitting of the bodies.

    Example::

        count_cloth_shape_body_contacts(model, q_pred, poses, contact_split)
    """
    if cloth_shapes_active(model):
        launch(cloth_shape_kernels(model.dtype).count_body_contacts, _dims(model),
               inputs=[q, model.triangles.indices, triangle_neighbours(model), triangle_shape_rows(model)[0],
                       model.particles, model.shapes, poses, counts])


def solve_cloth_shapes(model: Any, state_out: Any, it: int, q, poses, split, joint_split, contact_split, delta, dx,
                       dtheta) -> None:
    """XPBD iteration ``it``: project the triangle-shape constraints at positions ``q`` and body
    poses ``poses``, adding the corners' corrections into ``delta`` and the bodies' into ``dx``,
    ``dtheta``; ``split`` is the particles' element count (the count of violated constraints
    per vertex lives on ``state_out``, one buffer per iteration, for the Tape).

    Example::

        solve_cloth_shapes(model, state_out, it, q, poses, split, joint_split, contact_split, delta, dx, dtheta)
    """
    if not cloth_shapes_active(model):
        return
    k = cloth_shape_kernels(model.dtype)
    counts = state_out.__dict__.setdefault("_cloth_shape_active", [])
    while len(counts) <= it:
        counts.append(A.zeros(model.particle_count, dtype=T.int32, device=model.device))
    active = counts[it]
    tris, across, rows = model.triangles.indices, triangle_neighbours(model), triangle_shape_rows(model)[0]
    active.zero_()
    launch(k.count_corner_contacts, _dims(model), inputs=[q, tris, across, rows, model.particles, model.shapes,
                                                          poses, active])
    launch(k.solve_triangle_shapes, _dims(model),
           inputs=[q, tris, across, rows, model.particles, split, active, poses, model.shapes, model.bodies,
                   joint_split, contact_split, delta, dx, dtheta])
