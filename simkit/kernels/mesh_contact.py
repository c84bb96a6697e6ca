"""Penalty contact of triangle-mesh shapes (semi-implicit Euler): particles against meshes,
and the rows of :func:`~simkit.kernels.meshes.mesh_contact_rows` (mesh vertices against the
ground, primitives and other meshes; primitives' contact points against meshes).

The force law is that of the other contacts (:func:`~simkit.kernels.contact.scaled_penalty_force`):
a particle against a mesh uses ``model.contact``; a body row averages the ``ke, kd, kf, mu,
time_constant, damping_ratio`` of its two shapes (against the ground, the shape's own), with
the effective mass of the contact point along the normal, and applies the force at the point
midway between the surfaces, opposite on the other body (momentum is conserved). A vertex
has radius 0; a primitive's points keep theirs (see :mod:`simkit.kernels.shapes`).

Per-mass gains (``time_constant > 0``, the default) give every contact point the gains of
its effective mass. A mesh's vertices are as many points as its tessellation makes: a finely
meshed face resting flat would add up to a contact many times stiffer and more damped than
the explicit step can take. So the mesh rows count the points touching each body first (a
launch of its own, carrying no gradient), and where more than ``SHARED_POINTS`` (4) touch
the busier body of a row, each point's effective mass is divided by ``count / 4``: a body
resting on any number of mesh points is as stiff as on four corners (a cube's corners each
carry about a quarter of its mass: it sinks ``g tc^2``, like the primitive box). Fixed
gains are not shared: as for the primitives, ``dt`` must resolve the sum of the touching
points' gains.

Cost: one thread per (particle, mesh shape) and one per row; each test of a point against a
mesh walks its bounding volume hierarchy (:mod:`simkit.kernels.meshes`), after a
bounding-sphere test. A row of a mesh vertex against the ground or a primitive needs no
search.

Example::

    state.clear_forces()
    eval_particle_mesh_forces(model, state)   # into state.particle_f (reactions into state.body_f)
    eval_body_mesh_forces(model, state)       # into state.body_f
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from .bodies import point_inverse_mass, point_velocity, wrench_at
from .contact import scaled_penalty_force
from .meshes import edge_point, mesh_contact_rows, mesh_distance, mesh_struct, reach, source_point, surface_distance
from .shapes import particle_shape_rows, shape_transform
from .structs import SHAPE_CONE, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_MESH, model_structs

# Per-mass gains: the points of a body touching through meshes share them once more than this
# many touch it (a mesh box flat on the ground touches with 4 corners, like the primitive box).
SHARED_POINTS = 4

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints = sk.array(dtype=sk.int32)
ints2d = sk.array(dtype=sk.int32, ndim=2)


@sk.kernel
def particle_mesh_contact(q: AnyArray, qd: AnyArray, particles: Any, shapes: Any, meshes: Any, rows: Any, contact: Any,
                          body_q: AnyArray, body_qd: AnyArray, bodies: Any, f: AnyArray, body_f: AnyArray):
    # One thread per (particle, slot k of its row of mesh shapes); a mesh on a body moves
    # with it and receives the reaction.
    i, k = sk.tid()
    r = rows.world[i] + 1
    slot = rows.start[r] + k
    if slot >= rows.start[r + 1]:
        return
    s = rows.shape[slot]
    X = shape_transform(shapes, body_q, s)
    x = q[i]
    p = sk.transform_point(sk.transform_inverse(X), x)
    radius = particles.radius[i]
    if sk.length(p) > reach(shapes, meshes, s) + radius:
        return
    dist, n = mesh_distance(meshes, meshes.shape_mesh[s], p)
    depth = dist - radius
    if depth < 0.0:
        nw = sk.quat_rotate(X.q, n)
        b = shapes.body[s]
        c = x - nw * radius
        v_rel = qd[i]
        inv_mass = particles.inv_mass[i]
        if b >= 0:
            v_rel = v_rel - point_velocity(body_q[b], body_qd[b], bodies.com[b], c)
            inv_mass = inv_mass + point_inverse_mass(body_q[b], bodies, b, c, nw)
        fc = scaled_penalty_force(nw, depth, v_rel, inv_mass, contact.ke[0], contact.kd[0], contact.kf[0],
                                  contact.time_constant[0], contact.damping_ratio[0], contact.mu[0])
        f[i] += fc
        if b >= 0:
            body_f[b] += wrench_at(body_q[b], bodies.com[b], c, -fc)


@sk.func
def row_probe(rows: ints2d, i: int, body_q: AnyArray, shapes: Any, meshes: Any, up: Any):
    """Row ``i``: its shapes, the depth of its point below the other surface (positive:
    apart, or rejected by the bounding spheres), the contact point midway and the normal
    (towards ``a``)."""
    a = rows[i, 0]
    k = rows[i, 1]
    b = rows[i, 2]
    Xa = shape_transform(shapes, body_q, a)
    Xb = Xa
    if b >= 0:
        Xb = shape_transform(shapes, body_q, b)
    toward = sk.transform_point(sk.transform_inverse(Xa), Xb.p)
    kind_a = shapes.kind[a]
    if b >= 0 and (kind_a == SHAPE_CYLINDER or kind_a == SHAPE_CONE or kind_a == SHAPE_ELLIPSOID):
        # the direction into the mesh from the shape's center (as shapes.pair_toward)
        d0, n0 = surface_distance(shapes, meshes, b, sk.transform_point(sk.transform_inverse(Xb), Xa.p))
        toward = sk.quat_rotate_inv(Xa.q, sk.quat_rotate(Xb.q, n0)) * (-sk.abs(d0))
    vertices = 0
    if kind_a == SHAPE_MESH:
        m = meshes.shape_mesh[a]
        vertices = meshes.vertex_start[m + 1] - meshes.vertex_start[m]
    p_local = toward * 0.0
    radius = toward[0] * 0.0
    on = 1
    if kind_a == SHAPE_MESH and k >= vertices:     # an edge's: the middle of its chord through b, if any
        p_local, on = edge_point(shapes, meshes, a, k - vertices, b, Xa, Xb)
    else:
        p_local, radius = source_point(shapes, meshes, a, k, toward)
    p = sk.transform_point(Xa, p_local)
    depth = type(up[0])(1.0)        # apart
    n = up
    if on == 1:
        if b < 0:
            depth = sk.dot(up, p) - radius
        elif sk.length(p - Xb.p) <= reach(shapes, meshes, b) + radius:
            dist, n_local = surface_distance(shapes, meshes, b, sk.transform_point(sk.transform_inverse(Xb), p))
            depth = dist - radius
            n = sk.quat_rotate(Xb.q, n_local)
    return a, b, depth, p - n * (radius + 0.5 * depth), n


@sk.kernel
def count_mesh_rows(rows: ints2d, body_q: AnyArray, shapes: Any, meshes: Any, contact: Any, counts: ints):
    # how many mesh rows touch each body now: the share of the per-mass gains (no gradient)
    i = sk.tid()
    a, b, depth, _c, _n = row_probe(rows, i, body_q, shapes, meshes, contact.ground_normal)
    if depth < 0.0:
        if shapes.body[a] >= 0:
            sk.atomic_add(counts, shapes.body[a], 1)
        if b >= 0:
            if shapes.body[b] >= 0:
                sk.atomic_add(counts, shapes.body[b], 1)


@sk.func
def shared_inverse_mass(counts: ints, body_a: int, body_b: int, inv_mass: Any):
    """``inv_mass`` times how many times ``SHARED_POINTS`` mesh points touch the busier of the
    two bodies (at least 1): the per-mass gains of each point are divided by that."""
    most = 0
    if body_a >= 0:
        most = counts[body_a]
    if body_b >= 0:
        most = sk.max(most, counts[body_b])
    F = type(inv_mass)
    return inv_mass * sk.max(F(most) / F(SHARED_POINTS), F(1.0))


@sk.kernel
def mesh_row_contact(rows: ints2d, body_q: AnyArray, body_qd: AnyArray, bodies: Any, shapes: Any, meshes: Any,
                     contact: Any, counts: ints, body_f: AnyArray):
    # One thread per row: point k of shape a against the surface of shape b (or the ground).
    i = sk.tid()
    a, b, depth, c, n = row_probe(rows, i, body_q, shapes, meshes, contact.ground_normal)
    if depth < 0.0:
        body_a = shapes.body[a]
        body_b = -1
        ke = shapes.ke[a]
        kd = shapes.kd[a]
        kf = shapes.kf[a]
        tc = shapes.time_constant[a]
        zeta = shapes.damping_ratio[a]
        mu = shapes.mu[a]
        if b >= 0:
            body_b = shapes.body[b]
            ke = 0.5 * (ke + shapes.ke[b])
            kd = 0.5 * (kd + shapes.kd[b])
            kf = 0.5 * (kf + shapes.kf[b])
            tc = 0.5 * (tc + shapes.time_constant[b])
            zeta = 0.5 * (zeta + shapes.damping_ratio[b])
            mu = 0.5 * (mu + shapes.mu[b])
        v = c * 0.0
        inv_mass = bodies.inv_mass.dtype(0.0)
        if body_a >= 0:
            v = point_velocity(body_q[body_a], body_qd[body_a], bodies.com[body_a], c)
            inv_mass = point_inverse_mass(body_q[body_a], bodies, body_a, c, n)
        if body_b >= 0:
            v = v - point_velocity(body_q[body_b], body_qd[body_b], bodies.com[body_b], c)
            inv_mass = inv_mass + point_inverse_mass(body_q[body_b], bodies, body_b, c, n)
        # the per-mass gains of many touching points are shared (see the module documentation)
        inv_mass = shared_inverse_mass(counts, body_a, body_b, inv_mass)
        fc = scaled_penalty_force(n, depth, v, inv_mass, ke, kd, kf, tc, zeta, mu)
        if body_a >= 0:
            body_f[body_a] += wrench_at(body_q[body_a], bodies.com[body_a], c, fc)
        if body_b >= 0:
            body_f[body_b] += wrench_at(body_q[body_b], bodies.com[body_b], c, -fc)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s, spatials = sk.array(dtype=S.vec3), sk.array(dtype=S.spatial)
    return {"q": vec3s, "qd": vec3s, "f": vec3s, "particles": S.Particles, "shapes": S.Shapes,
            "meshes": mesh_struct(real), "rows": S.ParticleShapes, "contact": S.Contact,
            "body_q": sk.array(dtype=S.transform), "body_qd": spatials, "bodies": S.Bodies, "body_f": spatials}


@functools.cache  # asked for on every launch: a lookup
def mesh_contact_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together).

    Example::

        k = mesh_contact_kernels(sk.float64)
        k.particle_mesh_contact     # (particle, mesh slot) threads
        k.mesh_row_contact          # one thread per row of mesh_contact_rows
    """
    return sk.instantiate(real, __name__)


def eval_particle_mesh_forces(model, state) -> None:
    """Add the penalty forces of particles against mesh shapes at ``state`` into
    ``state.particle_f`` (the reactions of meshes on bodies into ``state.body_f``); nothing
    while ``model.contacts_enabled`` is False.

    Example::

        eval_particle_mesh_forces(model, state)
    """
    if not model.particle_count or not len(model.meshes.radius) or not model.contacts_enabled:
        return
    rows, width = particle_shape_rows(model, "mesh")
    if width:
        launch(mesh_contact_kernels(model.dtype).particle_mesh_contact, (model.particle_count, width),
               inputs=[state.particle_q, state.particle_qd, model.particles, model.shapes, model.meshes, rows,
                       model.contact, state.body_q, state.body_qd, model.bodies, state.particle_f, state.body_f])


def eval_body_mesh_forces(model, state) -> None:
    """Add the penalty wrenches of the rows of :func:`~simkit.kernels.meshes.mesh_contact_rows`
    (every body contact involving a mesh shape) at ``state`` into ``state.body_f``; nothing
    while ``model.contacts_enabled`` is False.

    Example::

        eval_body_mesh_forces(model, state)
    """
    if not model.body_count or not len(model.meshes.radius) or not model.contacts_enabled:
        return
    rows = mesh_contact_rows(model)
    if rows.shape[0]:
        k = mesh_contact_kernels(model.dtype)
        # the touching counts belong to the state (a Tape's adjoint re-reads them), rebuilt per evaluation
        counts = state.__dict__.get("_mesh_row_counts")
        if counts is None:
            counts = state._mesh_row_counts = A.zeros(model.body_count, dtype=T.int32, device=model.device)
        else:
            counts.zero_()
        launch(k.count_mesh_rows, rows.shape[0],
               inputs=[rows, state.body_q, model.shapes, model.meshes, model.contact, counts])
        launch(k.mesh_row_contact, rows.shape[0],
               inputs=[rows, state.body_q, state.body_qd, model.bodies, model.shapes, model.meshes, model.contact,
                       counts, state.body_f])
