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
    sk.launch(k.count_mesh_contacts, len(rows), inputs=[poses, model.shapes, model.meshes, model.contact, rows,
                                                         counts])
"""

# No ``from __future__ import annotations``: kernel annotations name closure types.
import functools
from types import SimpleNamespace

import simkit as sk
from .meshes import mesh_geometry
from .mesh_contact import mesh_contact_kernels
from .shapes import shape_transform
from .structs import model_structs
from .xpbd_bodies import point_matrix, xpbd_body_kernels
from .xpbd_body_contact import friction_multiplier


@functools.cache
def xpbd_mesh_contact_kernels(real) -> SimpleNamespace:
    """The XPBD mesh contact kernels for float type ``real``.

    Example::

        k = xpbd_mesh_contact_kernels(sk.float32)
        k.solve_mesh_rows          # one thread per row
        k.solve_particle_meshes    # (particle, mesh slot) threads
    """
    S = model_structs(real)
    BK = xpbd_body_kernels(real)
    M = mesh_geometry(real)
    probe = mesh_contact_kernels(real).row_probe
    vec3 = S.vec3
    vec3s = sk.array(dtype=vec3)
    transforms = sk.array(dtype=S.transform)
    reals = sk.array(dtype=real)
    ints = sk.array(dtype=sk.int32)
    ints2d = sk.array(dtype=sk.int32, ndim=2)
    reals2d = sk.array(dtype=real, ndim=2)
    vec3s2d = sk.array(dtype=vec3, ndim=2)
    module = f"simkit.kernels.xpbd_mesh_contact.{real.__name__}"

    @sk.func
    def moved_since(poses: transforms, poses_prev: transforms, b: int, p: vec3) -> vec3:
        """How far the world point ``p``, fixed to body ``b`` (-1: the world), moved since ``poses_prev``."""
        d = p * 0.0
        if b >= 0:
            d = p - sk.transform_point(poses_prev[b], sk.transform_point(sk.transform_inverse(poses[b]), p))
        return d

    @sk.func
    def particle_probe(q: vec3s, particles: S.Particles, poses: transforms, shapes: S.Shapes, meshes: M.Meshes,
                       rows: S.ParticleShapes, i: int, k: int):
        """Particle ``i`` against slot ``k`` of its row of mesh shapes: the shape (-1: no slot),
        the depth (positive: apart or rejected by the bounding sphere) and the outward normal."""
        s = -1
        depth = real(1.0)
        n = vec3(0.0, 0.0, 0.0)
        r = rows.world[i] + 1
        slot = rows.start[r] + k
        if slot < rows.start[r + 1]:
            s = rows.shape[slot]
            X = shape_transform(shapes, poses, s)
            p = sk.transform_point(sk.transform_inverse(X), q[i])
            if sk.length(p) <= M.reach(shapes, meshes, s) + particles.radius[i]:
                dist, n_local = M.mesh_distance(meshes, meshes.shape_mesh[s], p)
                depth = dist - particles.radius[i]
                n = sk.quat_rotate(X.q, n_local)
        return s, depth, n

    @sk.kernel(module=module)
    def count_mesh_contacts(poses: transforms, shapes: S.Shapes, meshes: M.Meshes, contact: S.Contact,
                            rows: ints2d, counts: ints):
        # a touching point is one constraint on each of its bodies
        i = sk.tid()
        a, b, depth, _c, _n = probe(rows, i, poses, shapes, meshes, contact.ground_normal)
        if depth < 0.0:
            if shapes.body[a] >= 0:
                sk.atomic_add(counts, shapes.body[a], 1)
            if b >= 0:
                if shapes.body[b] >= 0:
                    sk.atomic_add(counts, shapes.body[b], 1)

    @sk.kernel(module=module)
    def count_particle_mesh_contacts(q: vec3s, particles: S.Particles, poses: transforms, shapes: S.Shapes,
                                     meshes: M.Meshes, rows: S.ParticleShapes, counts: ints):
        i, k = sk.tid()
        if particles.inv_mass[i] > 0.0:
            s, depth, _n = particle_probe(q, particles, poses, shapes, meshes, rows, i, k)
            if depth < 0.0:
                if shapes.body[s] >= 0:
                    sk.atomic_add(counts, shapes.body[s], 1)

    @sk.kernel(module=module)
    def solve_mesh_rows(poses: transforms, poses_prev: transforms, shapes: S.Shapes, meshes: M.Meshes,
                        contact: S.Contact, rows: ints2d, bodies: S.Bodies, joint_split: ints, contact_split: ints,
                        lam_n: reals, lam_t: vec3s, dx: vec3s, dtheta: vec3s, lam_n_out: reals, lam_t_out: vec3s):
        # One thread per row: the normal and friction correction of its point, into the summed
        # corrections of its bodies.
        i = sk.tid()
        ln = lam_n[i]
        lt = lam_t[i]
        a, b, depth, c, n = probe(rows, i, poses, shapes, meshes, contact.ground_normal)
        if depth < 0.0:
            ba = shapes.body[a]
            bb = -1
            mu = shapes.mu[a]
            if b >= 0:
                bb = shapes.body[b]
                mu = 0.5 * (mu + shapes.mu[b])
            xa, _qa, ma, Ia, _ca = BK.load_body(poses, bodies, ba)
            xb, _qb, mb, Ib, _cb = BK.load_body(poses, bodies, bb)
            ra = c - xa
            rb = c - xb
            K = (point_matrix(ma, Ia, ra) * BK.split_of(joint_split, contact_split, bodies, ba)
                 + point_matrix(mb, Ib, rb) * BK.split_of(joint_split, contact_split, bodies, bb))
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

    @sk.kernel(module=module)
    def solve_particle_meshes(q: vec3s, q_prev: vec3s, particles: S.Particles, particle_split: reals,
                              poses: transforms, poses_prev: transforms, shapes: S.Shapes, meshes: M.Meshes,
                              rows: S.ParticleShapes, contact: S.Contact, bodies: S.Bodies, joint_split: ints,
                              contact_split: ints, lam_n: reals2d, lam_t: vec3s2d, delta: vec3s, dx: vec3s,
                              dtheta: vec3s, lam_n_out: reals2d, lam_t_out: vec3s2d):
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
                xb, _qb, mb, Ib, _cb = BK.load_body(poses, bodies, b)
                rb = pb - xb
                K = (sk.identity(3, real) * (wp * particle_split[i])
                     + point_matrix(mb, Ib, rb) * BK.split_of(joint_split, contact_split, bodies, b))
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

    return SimpleNamespace(count_mesh_contacts=count_mesh_contacts,
                           count_particle_mesh_contacts=count_particle_mesh_contacts,
                           solve_mesh_rows=solve_mesh_rows, solve_particle_meshes=solve_particle_meshes)
