"""Contact of triangle-mesh shapes in the XPBD integrator: particles against meshes (static or
on bodies), and the rows of :func:`~simkit.kernels.meshes.mesh_contact_rows` (mesh vertices
against the ground, primitives and other meshes; primitives' points against meshes).

Each touching point is one rigid, one-sided point constraint, solved like a particle
against a body shape (:mod:`simkit.kernels.xpbd_body_contact`): the normal multiplier removes
the penetration with the mass split of the bodies (each touching point counts as one
constraint on its bodies in the split), and position-level Coulomb friction with the mean
``mu`` of the two shapes (``Contact.mu`` for particles) cancels the tangential motion over
the step inside the cone. Points are corrected independently (Jacobi), so a body resting on
many vertices needs a few iterations to come to rest without creeping (more than a primitive
patch, whose friction is solved once per patch).

Example::

    k = xpbd_mesh_contact_kernels(sk.float64)
    sk.launch(k.count_particle_mesh_contacts, (model.particle_count, width),
              inputs=[q, model.particles, poses, model.shapes, model.meshes, rows, counts])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .meshes import mesh_distance, mesh_struct, reach
from .mesh_contact import row_probe
from .shapes import shape_transform
from .structs import model_structs
from .xpbd_bodies import load_body, point_matrix, split_of
from .xpbd_body_contact import friction_multiplier

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
AnyArray2d = sk.array(dtype=Any, ndim=2)
ints = sk.array(dtype=sk.int32)
ints2d = sk.array(dtype=sk.int32, ndim=2)


@sk.func
def moved_since(poses: AnyArray, poses_prev: AnyArray, b: int, p: Any):
    """How far the world point ``p``, fixed to body ``b`` (-1: the world), moved since ``poses_prev``."""
    d = p * 0.0
    if b >= 0:
        d = p - sk.transform_point(poses_prev[b], sk.transform_point(sk.transform_inverse(poses[b]), p))
    return d


@sk.func
def particle_probe(q: AnyArray, particles: Any, poses: AnyArray, shapes: Any, meshes: Any, rows: Any, i: int, k: int):
    """Particle ``i`` against slot ``k`` of its row of mesh shapes: the shape (-1: no slot),
    the depth (positive: apart or rejected by the bounding sphere) and the outward normal."""
    s = -1
    depth = particles.radius.dtype(1.0)
    n = q.dtype(0.0, 0.0, 0.0)
    r = rows.world[i] + 1
    slot = rows.start[r] + k
    if slot < rows.start[r + 1]:
        s = rows.shape[slot]
        X = shape_transform(shapes, poses, s)
        p = sk.transform_point(sk.transform_inverse(X), q[i])
        if sk.length(p) <= reach(shapes, meshes, s) + particles.radius[i]:
            dist, n_local = mesh_distance(meshes, meshes.shape_mesh[s], p)
            depth = dist - particles.radius[i]
            n = sk.quat_rotate(X.q, n_local)
    return s, depth, n


@sk.kernel
def count_particle_mesh_contacts(q: AnyArray, particles: Any, poses: AnyArray, shapes: Any, meshes: Any, rows: Any,
                                 counts: ints):
    i, k = sk.tid()
    if particles.inv_mass[i] > 0.0:
        s, depth, _n = particle_probe(q, particles, poses, shapes, meshes, rows, i, k)
        if depth < 0.0:
            if shapes.body[s] >= 0:
                sk.atomic_add(counts, shapes.body[s], 1)


@sk.kernel
def solve_mesh_rows(poses: AnyArray, poses_prev: AnyArray, shapes: Any, meshes: Any, contact: Any, rows: ints2d,
                    bodies: Any, joint_split: ints, contact_split: ints, lam_n: AnyArray, lam_t: AnyArray,
                    dx: AnyArray, dtheta: AnyArray, lam_n_out: AnyArray, lam_t_out: AnyArray):
    # One thread per row: the normal and friction correction of its point, into the summed
    # corrections of its bodies.
    i = sk.tid()
    ln = lam_n[i]
    lt = lam_t[i]
    a, b, depth, c, n = row_probe(rows, i, poses, shapes, meshes, contact.ground_normal)
    if depth < 0.0:
        ba = shapes.body[a]
        bb = -1
        mu = shapes.mu[a]
        if b >= 0:
            bb = shapes.body[b]
            mu = 0.5 * (mu + shapes.mu[b])
        xa, _qa, ma, Ia, _ca = load_body(poses, bodies, ba)
        xb, _qb, mb, Ib, _cb = load_body(poses, bodies, bb)
        ra = c - xa
        rb = c - xb
        K = (point_matrix(ma, Ia, ra) * split_of(joint_split, contact_split, bodies, ba)
             + point_matrix(mb, Ib, rb) * split_of(joint_split, contact_split, bodies, bb))
        kn = sk.dot(n, K @ n)
        if kn > 0.0:
            D = moved_since(poses, poses_prev, ba, c) - moved_since(poses, poses_prev, bb, c)
            dln = -depth / kn
            ln = ln + dln
            ft = friction_multiplier(K, n, D - n * sk.dot(n, D), ln, lt, mu)
            P = n * dln + ft - lt
            lt = ft
            if ba >= 0:
                dx[ba] += P * ma
                dtheta[ba] += Ia @ sk.cross(ra, P)
            if bb >= 0:
                dx[bb] += P * -mb
                dtheta[bb] += -(Ib @ sk.cross(rb, P))
    lam_n_out[i] = ln
    lam_t_out[i] = lt


@sk.kernel
def solve_particle_meshes(q: AnyArray, q_prev: AnyArray, particles: Any, particle_split: AnyArray, poses: AnyArray,
                          poses_prev: AnyArray, shapes: Any, meshes: Any, rows: Any, contact: Any, bodies: Any,
                          joint_split: ints, contact_split: ints, lam_n: AnyArray2d, lam_t: AnyArray2d,
                          delta: AnyArray, dx: AnyArray, dtheta: AnyArray, lam_n_out: AnyArray2d,
                          lam_t_out: AnyArray2d):
    # Particles against the mesh shapes of their world (static or on bodies), both ways.
    i, k = sk.tid()
    ln = lam_n[i, k]
    lt = lam_t[i, k]
    wp = particles.inv_mass[i]
    if wp > 0.0:
        s, depth, n = particle_probe(q, particles, poses, shapes, meshes, rows, i, k)
        if depth < 0.0:
            b = shapes.body[s]
            x = q[i]
            pb = x - n * (particles.radius[i] + depth)
            xb, _qb, mb, Ib, _cb = load_body(poses, bodies, b)
            rb = pb - xb
            K = (sk.identity(3, particle_split.dtype) * (wp * particle_split[i])
                 + point_matrix(mb, Ib, rb) * split_of(joint_split, contact_split, bodies, b))
            D = (x - q_prev[i]) - moved_since(poses, poses_prev, b, pb)
            dln = -depth / sk.dot(n, K @ n)
            ln = ln + dln
            ft = friction_multiplier(K, n, D - n * sk.dot(n, D), ln, lt, contact.mu[0])
            P = n * dln + ft - lt
            lt = ft
            delta[i] += P * wp
            if b >= 0:
                dx[b] += P * -mb
                dtheta[b] += -(Ib @ sk.cross(rb, P))
    lam_n_out[i, k] = ln
    lam_t_out[i, k] = lt


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    transforms, vec3s, reals = sk.array(dtype=S.transform), sk.array(dtype=S.vec3), sk.array(dtype=real)
    return {"poses": transforms, "poses_prev": transforms, "shapes": S.Shapes, "meshes": mesh_struct(real),
            "contact": S.Contact, "bodies": S.Bodies, "particles": S.Particles, "rows": S.ParticleShapes,
            "q": vec3s, "q_prev": vec3s, "delta": vec3s, "dx": vec3s, "dtheta": vec3s, "particle_split": reals,
            # a row has one multiplier of each kind, a particle one per mesh slot
            "lam_n": reals, "lam_n_out": reals, "lam_t": vec3s, "lam_t_out": vec3s,
            "solve_particle_meshes.lam_n": sk.array(dtype=real, ndim=2),
            "solve_particle_meshes.lam_n_out": sk.array(dtype=real, ndim=2),
            "solve_particle_meshes.lam_t": sk.array(dtype=S.vec3, ndim=2),
            "solve_particle_meshes.lam_t_out": sk.array(dtype=S.vec3, ndim=2)}


@functools.cache  # asked for on every launch: a lookup
def xpbd_mesh_contact_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together).

    Example::

        k = xpbd_mesh_contact_kernels(sk.float32)
        k.solve_mesh_rows          # one thread per row
        k.solve_particle_meshes    # (particle, mesh slot) threads
    """
    return sk.instantiate(real, __name__)
