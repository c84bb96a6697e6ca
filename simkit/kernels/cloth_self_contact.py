"""Cloth self-contact: vertex-triangle and edge-edge proximity between cloth elements that
share no vertex, as penalty forces (semi-implicit Euler) or position constraints (XPBD).

Pairs: a vertex and a triangle of which it is not a corner; two edges with no common
vertex. Both come from the triangles of the model (every triangle's corners are the cloth's
vertices, its sides the edges), of the same cloth or of different ones, within one world.

Broad phase (integer bookkeeping, no gradient): two hash grids
(:mod:`simkit.kernels.hash_grid`), one over the triangles' centroids, one over the edges'
midpoints, rebuilt every step. A vertex searches the triangle grid around itself, an edge
the edge grid around its midpoint (half the cells around it, so that each pair is found
once); the cell size covers a triangle stretched to 1.25 times its longest rest side. A
found pair is kept when its distance is below ``2 h`` (``h`` the thickness) now or at the
start of the step, or when their boxes over the step come within ``2 h`` and the vertex
changed sides of the triangle's plane (the edges' winding turned) within the step, in up
to ``MAX_PAIRS`` slots per vertex or edge; more are counted in an overflow counter
(:func:`~simkit.sim.cloth_contact.cloth_contact_overflow`).

Narrow phase: the closest points (a point on the triangle with barycentric weights, or
the parameters ``s``, ``t`` along the two edges), their distance ``d`` and direction ``u``
(from the triangle or second edge towards the vertex or first edge). The side a pair was on
at the start of the step decides ``u``: a vertex now on the other side of the triangle's
plane whose projection lies inside the triangle now or at the start of the step, or two edges whose closest
points now lie inside both and whose offset has turned round, have crossed within the step;
their gap is then ``-d`` and ``u`` points back to the side they came from, so the response
pushes them back through instead of further on. Otherwise the gap is ``d``.

Penalty (``SemiImplicitEuler``), with ``phi = h - gap > 0``:
``F = ke phi + kd min(phi / h, 1) (-v_n)``, ``v_n`` the relative normal velocity, along
``u``, and regularised Coulomb friction ``min(kf |v_t|, mu F)`` against the tangential
relative velocity. The force is continuous where a pair enters the band (``phi = 0``, both
terms vanish); its derivative in the positions jumps there from 0 to ``ke``. It acts on the
vertex and (with the barycentric weights, opposite) on the triangle's corners, or on the
edges' ends with weights ``1 - s, s`` and ``1 - t, t``: the forces of a pair sum to zero.

Constraint (``XPBD``): ``C = gap - h >= 0``, rigid (compliance 0), frictionless, projected
after each iteration's other corrections (and the ground's) with the inverse masses, each
particle's counted as many times as it has violated pairs in that iteration (Jacobi with
averaging: the pairs on one vertex share one full correction).

Example::

    k = cloth_contact_kernels(sk.float32)
    sk.launch(k.vertex_triangle_forces, vertex_count, inputs=[...])
"""

# No ``from __future__ import annotations``: kernel annotations name closure types.
import functools
from types import SimpleNamespace

import simkit as sk
from .hash_grid import (grid_bucket, grid_cell, grid_group_key, grid_group_searches, grid_hash, grid_neighbor_cell,
                        grid_point_group, grid_searched_group, grid_struct)

# Candidate slots per vertex (vertex-triangle) and per edge (edge-edge pairs with a higher edge).
MAX_PAIRS = 32

# Two edges closer to parallel than this (the squared sine of their angle) take s = 0.
_PARALLEL = 1.0e-6


@sk.func
def segment_closest(p, a, b):
    """The parameter ``t`` in [0, 1] of the point of segment ``a b`` closest to ``p``."""
    e = b - a
    ee = sk.dot(e, e)
    t = sk.dot(p - a, e) * 0.0
    if ee > 0.0:
        t = sk.clamp(sk.dot(p - a, e) / ee, 0.0, 1.0)
    return t


@sk.func
def triangle_closest(p, a, b, c):
    """Barycentric weights ``(wa, wb, wc)`` of the point of triangle ``a b c`` closest to ``p``,
    and whether it lies inside the triangle (1) or on its boundary (0)."""
    n = sk.cross(b - a, c - a)
    nn = sk.dot(n, n)
    r = p - a
    # barycentric coordinates of the projection of p onto the plane
    wb = sk.dot(sk.cross(r, c - a), n) / nn
    wc = sk.dot(sk.cross(b - a, r), n) / nn
    wa = 1.0 - wb - wc
    inside = 1
    if sk.min(wa, sk.min(wb, wc)) < 0.0:
        inside = 0
        # the nearest of the three sides
        t0 = segment_closest(p, a, b)
        t1 = segment_closest(p, b, c)
        t2 = segment_closest(p, c, a)
        d0 = sk.length_sq(p - (a + (b - a) * t0))
        d1 = sk.length_sq(p - (b + (c - b) * t1))
        d2 = sk.length_sq(p - (c + (a - c) * t2))
        wa = 1.0 - t0
        wb = t0
        wc = t0 * 0.0
        if d1 < sk.min(d0, d2):
            wa = t1 * 0.0
            wb = 1.0 - t1
            wc = t1
        elif d2 < d0:
            wa = t2
            wb = t2 * 0.0
            wc = 1.0 - t2
    return wa, wb, wc, inside


@sk.func
def vertex_triangle_distance(p, a, b, c):
    """The distance from ``p`` to triangle ``a b c``."""
    wa, wb, wc, inside = triangle_closest(p, a, b, c)
    return sk.length(p - (a * wa + b * wb + c * wc))


@sk.func
def vertex_triangle_gap(p, a, b, c, p0, a0, b0, c0):
    """The gap of vertex ``p`` over triangle ``a b c`` (their positions at the start of the step
    ``p0 .. c0``): ``(u, gap, wa, wb, wc)``, ``u`` the unit direction from the closest point to
    the side the vertex came from, ``gap`` the distance (negated when it crossed the triangle's
    face within the step), ``w`` the closest point's weights. ``gap`` is 0 and ``u`` zero where
    the vertex touches the triangle exactly (no direction)."""
    wa, wb, wc, inside = triangle_closest(p, a, b, c)
    d = p - (a * wa + b * wb + c * wc)
    dist = sk.length(d)
    u = d * 0.0
    gap = dist
    if dist > 0.0:
        u = d / dist
        side = sk.dot(d, sk.cross(b - a, c - a))
        side0 = sk.dot(p0 - a0, sk.cross(b0 - a0, c0 - a0))
        if side * side0 < 0.0:
            # on the other side of the plane now: crossed if its projection lay inside the
            # triangle at either end of the step (not one that went round a border)
            wa0, wb0, wc0, inside0 = triangle_closest(p0, a0, b0, c0)
            if inside + inside0 > 0:
                u = -u
                gap = -dist
    return u, gap, wa, wb, wc


@sk.func
def edge_closest(p0, p1, q0, q1):
    """Parameters ``(s, t)`` of the closest points ``p0 + s (p1 - p0)``, ``q0 + t (q1 - q0)`` of two
    segments (Ericson, Real-Time Collision Detection, 5.1.9); near-parallel ones take ``s = 0``."""
    d1 = p1 - p0
    d2 = q1 - q0
    r = p0 - q0
    a = sk.dot(d1, d1)
    e = sk.dot(d2, d2)
    f = sk.dot(d2, r)
    c = sk.dot(d1, r)
    b = sk.dot(d1, d2)
    denom = a * e - b * b
    s = a * 0.0
    if denom > _PARALLEL * a * e:
        s = sk.clamp((b * f - c * e) / denom, 0.0, 1.0)
    t = (b * s + f) / e
    if t < 0.0:
        t = t * 0.0
        s = sk.clamp(-c / a, 0.0, 1.0)
    elif t > 1.0:
        t = t * 0.0 + 1.0
        s = sk.clamp((b - c) / a, 0.0, 1.0)
    return s, t


@sk.func
def edge_edge_distance(p0, p1, q0, q1):
    """The distance between segments ``p0 p1`` and ``q0 q1``."""
    s, t = edge_closest(p0, p1, q0, q1)
    return sk.length((p0 + (p1 - p0) * s) - (q0 + (q1 - q0) * t))


@sk.func
def edge_edge_gap(p0, p1, q0, q1, r0, r1, w0, w1):
    """The gap of edge ``p0 p1`` over edge ``q0 q1`` (at the start of the step ``r0 r1`` and
    ``w0 w1``): ``(u, gap, s, t)``, ``u`` the unit direction from the second edge's closest point
    to the first's (turned back when they crossed within the step, with ``gap`` then negated),
    ``s``, ``t`` the closest points' parameters."""
    s, t = edge_closest(p0, p1, q0, q1)
    d = (p0 + (p1 - p0) * s) - (q0 + (q1 - q0) * t)
    dist = sk.length(d)
    u = d * 0.0
    gap = dist
    if dist > 0.0:
        u = d / dist
        if sk.min(sk.min(s, 1.0 - s), sk.min(t, 1.0 - t)) > 0.0:
            s0, t0 = edge_closest(r0, r1, w0, w1)
            d0 = (r0 + (r1 - r0) * s0) - (w0 + (w1 - w0) * t0)
            if sk.dot(d, d0) < 0.0:
                u = -u
                gap = -dist
    return u, gap, s, t


@sk.func
def plane_side(p, a, b, c):
    """Six times the signed volume of the tetrahedron ``a b c p``: its sign says on which side of the
    plane through ``a b c`` the point ``p`` lies (for edges ``a b`` and ``c p``: how they wind)."""
    return sk.dot(p - a, sk.cross(b - a, c - a))


@sk.func
def box_of(a, b):
    """The corners ``(lo, hi)`` of the box around points ``a`` and ``b``."""
    lo = a
    hi = a
    for c in range(3):
        lo[c] = sk.min(a[c], b[c])
        hi[c] = sk.max(a[c], b[c])
    return lo, hi


@sk.func
def box_grow(lo, hi, p):
    """The box ``(lo, hi)`` grown to hold point ``p``."""
    l = lo
    u = hi
    for c in range(3):
        l[c] = sk.min(lo[c], p[c])
        u[c] = sk.max(hi[c], p[c])
    return l, u


@sk.func
def box_gap(lo, hi, lo2, hi2):
    """How far apart two boxes are along the axis that separates them most (<= 0: they overlap)."""
    d = lo2 - hi
    e = lo - hi2
    return sk.max(sk.max(sk.max(d[0], e[0]), sk.max(d[1], e[1])), sk.max(d[2], e[2]))


@sk.func
def penalty_magnitude(phi, vn, h, ke, kd):
    """The normal force of a pair ``phi`` inside the band of thickness ``h``, approaching at ``-vn``:
    ``ke phi - kd min(phi / h, 1) vn``, never pulling."""
    return sk.max(ke * phi - kd * sk.min(phi / h, 1.0) * vn, 0.0)


@sk.func
def pair_force(u, phi, v, h, ke, kd, kf, mu):
    """The penalty force on the first side of a pair (relative velocity ``v``) along ``u``, with
    regularised Coulomb friction."""
    vn = sk.dot(u, v)
    fn = penalty_magnitude(phi, vn, h, ke, kd)
    vt = v - u * vn
    speed = sk.length(vt)
    ft = vt * 0.0
    if speed > 0.0:
        ft = vt * (-sk.min(kf * speed, mu * fn) / speed)
    return u * fn + ft


@functools.cache
def cloth_params_struct(real):
    """The kernel-side parameters of cloth self-contact for float type ``real``: one-element
    arrays (gradient-tracked with the model's parameters)."""
    reals = sk.array(dtype=real)

    @sk.struct
    class ClothContactParams:
        """Thickness ``h`` (m), normal stiffness ``ke`` (N/m), damping ``kd`` (N s/m), friction
        slope ``kf`` (N s/m) and coefficient ``mu``, each a one-element array."""
        thickness: reals
        ke: reals
        kd: reals
        kf: reals
        mu: reals

    return ClothContactParams


@functools.cache
def cloth_contact_kernels(real) -> SimpleNamespace:
    """The broad-phase, penalty and XPBD kernels of cloth self-contact for float type ``real``."""
    Grid = grid_struct(real)
    Params = cloth_params_struct(real)
    vec3s = sk.array(dtype=sk.vector(3, real))
    reals = sk.array(dtype=real)
    ints = sk.array(dtype=sk.int32)
    ints2 = sk.array(dtype=sk.int32, ndim=2)
    module = f"simkit.kernels.cloth_self_contact.{real.__name__}"

    @sk.kernel(module=module)
    def element_centers(q: vec3s, q_prev: vec3s, tris: ints2, tri_count: sk.int32, edges: ints2,
                        edge_count: sk.int32, tri_center: vec3s, tri_lo: vec3s, tri_hi: vec3s, edge_center: vec3s,
                        edge_lo: vec3s, edge_hi: vec3s):
        # One launch for both: thread e is triangle e (when there is one) and edge e (likewise).
        # An element's box bounds it now and at the start of the step; boxes farther apart than
        # the reach prune a pair before its exact distances (most pairs the grid offers).
        e = sk.tid()
        if e < tri_count:
            a = q[tris[e, 0]]
            b = q[tris[e, 1]]
            c = q[tris[e, 2]]
            tri_center[e] = (a + b + c) / 3.0
            lo, hi = box_of(a, q_prev[tris[e, 0]])
            lo, hi = box_grow(lo, hi, b)
            lo, hi = box_grow(lo, hi, c)
            lo, hi = box_grow(lo, hi, q_prev[tris[e, 1]])
            lo, hi = box_grow(lo, hi, q_prev[tris[e, 2]])
            tri_lo[e] = lo
            tri_hi[e] = hi
        if e < edge_count:
            a = q[edges[e, 0]]
            b = q[edges[e, 1]]
            edge_center[e] = (a + b) * 0.5
            lo, hi = box_of(a, b)
            lo, hi = box_grow(lo, hi, q_prev[edges[e, 0]])
            lo, hi = box_grow(lo, hi, q_prev[edges[e, 1]])
            edge_lo[e] = lo
            edge_hi[e] = hi

    @sk.kernel(module=module)
    def start_of_step(q: vec3s, qd: vec3s, dt: real, q_prev: vec3s):
        # semi-implicit Euler moved every particle by dt v: this undoes it
        i = sk.tid()
        q_prev[i] = q[i] - qd[i] * dt

    @sk.kernel(module=module)
    def clear_counts(count: ints):
        count[sk.tid()] = 0

    # The searches visit the 27 cells around a point; ``cells`` (27, given at launch) keeps
    # that loop from being unrolled into 27 copies of its body. An edge visits only its own
    # cell and the 13 cells ``c + d`` with ``d`` after 0 in the cells' order (``first`` = 13): of
    # two edges in neighbouring cells, exactly one lies after the other, so each pair is
    # found once, from one side, at half the cost of visiting all 27.
    @sk.kernel(module=module)
    def find_vertex_triangles(verts: ints, vert_group: ints, q: vec3s, q_prev: vec3s, tris: ints2,
                              tri_center: vec3s, tri_lo: vec3s, tri_hi: vec3s, grid: Grid, params: Params,
                              cells: sk.int32,
                              pairs: ints2, overflow: ints):
        v = sk.tid()
        i = verts[v]
        x = q[i]
        x0 = q_prev[i]
        reach = params.thickness[0] * 2.0
        lo, hi = box_of(x, x0)
        g = vert_group[v]
        c = grid_cell(grid, x)
        slot = 0
        for r in range(grid_group_searches(grid, g)):
            searched = grid_searched_group(g, r)
            key = grid_group_key(searched)
            for n in range(cells):
                h = grid_hash(grid_neighbor_cell(c, n)) + key
                b = grid_bucket(grid, h)
                for k in range(grid.cell_start[b], grid.cell_start[b + 1]):
                    t = grid.sorted_index[k]
                    if grid.cell_hash[k] == h:
                        if grid_point_group(grid, t) == searched:
                            ia = tris[t, 0]
                            ib = tris[t, 1]
                            ic = tris[t, 2]
                            if ia != i:
                                if ib != i:
                                    if ic != i:
                                        if box_gap(lo, hi, tri_lo[t], tri_hi[t]) < reach:
                                            d = vertex_triangle_distance(x, q[ia], q[ib], q[ic])
                                            if d >= reach:
                                                d = vertex_triangle_distance(x0, q_prev[ia], q_prev[ib], q_prev[ic])
                                            if d >= reach:
                                                # fast enough to pass the band within the step: kept if
                                                # it changed sides of the triangle's plane
                                                if plane_side(x, q[ia], q[ib], q[ic]) * plane_side(
                                                        x0, q_prev[ia], q_prev[ib], q_prev[ic]) < 0.0:
                                                    d = reach * 0.0
                                            if d < reach:
                                                if slot < MAX_PAIRS:
                                                    pairs[v, slot] = t
                                                else:
                                                    sk.atomic_add(overflow, 0, 1)
                                                slot += 1
        for k in range(slot, MAX_PAIRS):
            pairs[v, k] = -1

    @sk.kernel(module=module)
    def find_edge_edges(edge_group: ints, q: vec3s, q_prev: vec3s, edges: ints2, edge_center: vec3s,
                        edge_lo: vec3s, edge_hi: vec3s, grid: Grid, params: Params, first: sk.int32, pairs: ints2,
                        overflow: ints):
        e = sk.tid()
        i0 = edges[e, 0]
        i1 = edges[e, 1]
        x = edge_center[e]
        lo = edge_lo[e]
        hi = edge_hi[e]
        reach = params.thickness[0] * 2.0
        g = edge_group[e]
        c = grid_cell(grid, x)
        slot = 0
        for r in range(grid_group_searches(grid, g)):
            searched = grid_searched_group(g, r)
            key = grid_group_key(searched)
            for n in range(first, 27):
                h = grid_hash(grid_neighbor_cell(c, n)) + key
                b = grid_bucket(grid, h)
                for k in range(grid.cell_start[b], grid.cell_start[b + 1]):
                    f = grid.sorted_index[k]
                    # the cell itself gives the pairs with a higher edge, the others all
                    if grid.cell_hash[k] == h:
                        if sk.max(f - e, n - 13) > 0:
                            if grid_point_group(grid, f) == searched:
                                j0 = edges[f, 0]
                                j1 = edges[f, 1]
                                # no shared vertex
                                shared = 0
                                if j0 == i0:
                                    shared = 1
                                if j0 == i1:
                                    shared = 1
                                if j1 == i0:
                                    shared = 1
                                if j1 == i1:
                                    shared = 1
                                if shared == 0:
                                    if box_gap(lo, hi, edge_lo[f], edge_hi[f]) < reach:
                                        d = edge_edge_distance(q[i0], q[i1], q[j0], q[j1])
                                        if d >= reach:
                                            d = edge_edge_distance(q_prev[i0], q_prev[i1], q_prev[j0], q_prev[j1])
                                        if d >= reach:
                                            if plane_side(q[j0], q[i0], q[i1], q[j1]) * plane_side(
                                                    q_prev[j0], q_prev[i0], q_prev[i1], q_prev[j1]) < 0.0:
                                                d = reach * 0.0
                                        if d < reach:
                                            if slot < MAX_PAIRS:
                                                pairs[e, slot] = f
                                            else:
                                                sk.atomic_add(overflow, 0, 1)
                                            slot += 1
        for k in range(slot, MAX_PAIRS):
            pairs[e, k] = -1

    # The responses run one thread per vertex (edge) over its slots, which the broad phase
    # filled from the first: a thread per slot cost more in launching its empty slots than the
    # pairs themselves. ``width`` is MAX_PAIRS, given at launch: a loop of constant bounds is
    # unrolled, and 16 copies of the body made an empty thread cost as much as a full one.
    @sk.kernel(module=module)
    def vertex_triangle_forces(verts: ints, pairs: ints2, q: vec3s, qd: vec3s, q_prev: vec3s, tris: ints2,
                               params: Params, width: sk.int32, f: vec3s):
        v = sk.tid()
        i = verts[v]
        h = params.thickness[0]
        for k in range(width):
            t = pairs[v, k]
            if t < 0:
                break
            ia = tris[t, 0]
            ib = tris[t, 1]
            ic = tris[t, 2]
            u, gap, wa, wb, wc = vertex_triangle_gap(q[i], q[ia], q[ib], q[ic], q_prev[i], q_prev[ia], q_prev[ib],
                                                     q_prev[ic])
            phi = h - gap
            if phi > 0.0:
                vel = qd[i] - (qd[ia] * wa + qd[ib] * wb + qd[ic] * wc)
                F = pair_force(u, phi, vel, h, params.ke[0], params.kd[0], params.kf[0], params.mu[0])
                f[i] += F
                f[ia] -= F * wa
                f[ib] -= F * wb
                f[ic] -= F * wc

    @sk.kernel(module=module)
    def edge_edge_forces(pairs: ints2, q: vec3s, qd: vec3s, q_prev: vec3s, edges: ints2, params: Params,
                         width: sk.int32, f: vec3s):
        e = sk.tid()
        i0 = edges[e, 0]
        i1 = edges[e, 1]
        h = params.thickness[0]
        for k in range(width):
            o = pairs[e, k]
            if o < 0:
                break
            j0 = edges[o, 0]
            j1 = edges[o, 1]
            u, gap, s, t = edge_edge_gap(q[i0], q[i1], q[j0], q[j1], q_prev[i0], q_prev[i1], q_prev[j0],
                                         q_prev[j1])
            phi = h - gap
            if phi > 0.0:
                vel = (qd[i0] * (1.0 - s) + qd[i1] * s) - (qd[j0] * (1.0 - t) + qd[j1] * t)
                F = pair_force(u, phi, vel, h, params.ke[0], params.kd[0], params.kf[0], params.mu[0])
                f[i0] += F * (1.0 - s)
                f[i1] += F * s
                f[j0] -= F * (1.0 - t)
                f[j1] -= F * t

    # XPBD: each iteration counts the violated pairs on every particle, then projects each
    # pair with its particles' inverse masses times those counts (Jacobi with averaging: the
    # pairs pushing one vertex share one full correction instead of each making it).
    @sk.kernel(module=module)
    def count_vertex_triangles(verts: ints, pairs: ints2, q: vec3s, q_prev: vec3s, tris: ints2, params: Params,
                               width: sk.int32, active: ints):
        v = sk.tid()
        i = verts[v]
        h = params.thickness[0]
        for k in range(width):
            t = pairs[v, k]
            if t < 0:
                break
            ia = tris[t, 0]
            ib = tris[t, 1]
            ic = tris[t, 2]
            u, gap, wa, wb, wc = vertex_triangle_gap(q[i], q[ia], q[ib], q[ic], q_prev[i], q_prev[ia], q_prev[ib],
                                                     q_prev[ic])
            if gap < h:
                sk.atomic_add(active, i, 1)
                sk.atomic_add(active, ia, 1)
                sk.atomic_add(active, ib, 1)
                sk.atomic_add(active, ic, 1)

    @sk.kernel(module=module)
    def count_edge_edges(pairs: ints2, q: vec3s, q_prev: vec3s, edges: ints2, params: Params, width: sk.int32,
                         active: ints):
        e = sk.tid()
        i0 = edges[e, 0]
        i1 = edges[e, 1]
        h = params.thickness[0]
        for k in range(width):
            o = pairs[e, k]
            if o < 0:
                break
            j0 = edges[o, 0]
            j1 = edges[o, 1]
            u, gap, s, t = edge_edge_gap(q[i0], q[i1], q[j0], q[j1], q_prev[i0], q_prev[i1], q_prev[j0],
                                         q_prev[j1])
            if gap < h:
                sk.atomic_add(active, i0, 1)
                sk.atomic_add(active, i1, 1)
                sk.atomic_add(active, j0, 1)
                sk.atomic_add(active, j1, 1)

    @sk.kernel(module=module)
    def solve_vertex_triangles(verts: ints, pairs: ints2, q: vec3s, q_prev: vec3s, tris: ints2, inv_mass: reals,
                               active: ints, params: Params, width: sk.int32, delta: vec3s):
        # C = gap - h >= 0, rigid (compliance 0)
        v = sk.tid()
        i = verts[v]
        h = params.thickness[0]
        for k in range(width):
            t = pairs[v, k]
            if t < 0:
                break
            ia = tris[t, 0]
            ib = tris[t, 1]
            ic = tris[t, 2]
            u, gap, wa, wb, wc = vertex_triangle_gap(q[i], q[ia], q[ib], q[ic], q_prev[i], q_prev[ia], q_prev[ib],
                                                     q_prev[ic])
            C = gap - h
            if C < 0.0:
                w = inv_mass[i]
                w_a = inv_mass[ia] * wa
                w_b = inv_mass[ib] * wb
                w_c = inv_mass[ic] * wc
                g = (w * real(active[i]) + w_a * wa * real(active[ia]) + w_b * wb * real(active[ib])
                     + w_c * wc * real(active[ic]))
                if g > 0.0:
                    dl = -C / g
                    delta[i] += u * (w * dl)
                    delta[ia] -= u * (w_a * dl)
                    delta[ib] -= u * (w_b * dl)
                    delta[ic] -= u * (w_c * dl)

    @sk.kernel(module=module)
    def solve_edge_edges(pairs: ints2, q: vec3s, q_prev: vec3s, edges: ints2, inv_mass: reals, active: ints,
                         params: Params, width: sk.int32, delta: vec3s):
        e = sk.tid()
        i0 = edges[e, 0]
        i1 = edges[e, 1]
        h = params.thickness[0]
        for k in range(width):
            o = pairs[e, k]
            if o < 0:
                break
            j0 = edges[o, 0]
            j1 = edges[o, 1]
            u, gap, s, t = edge_edge_gap(q[i0], q[i1], q[j0], q[j1], q_prev[i0], q_prev[i1], q_prev[j0],
                                         q_prev[j1])
            C = gap - h
            if C < 0.0:
                w0 = inv_mass[i0] * (1.0 - s)
                w1 = inv_mass[i1] * s
                w2 = inv_mass[j0] * (1.0 - t)
                w3 = inv_mass[j1] * t
                g = (w0 * (1.0 - s) * real(active[i0]) + w1 * s * real(active[i1])
                     + w2 * (1.0 - t) * real(active[j0]) + w3 * t * real(active[j1]))
                if g > 0.0:
                    dl = -C / g
                    delta[i0] += u * (w0 * dl)
                    delta[i1] += u * (w1 * dl)
                    delta[j0] -= u * (w2 * dl)
                    delta[j1] -= u * (w3 * dl)

    @sk.kernel(module=module)
    def apply_pair_corrections(q: vec3s, corr: vec3s, delta: vec3s, q_out: vec3s, corr_out: vec3s):
        i = sk.tid()
        q_out[i] = q[i] + delta[i]
        corr_out[i] = corr[i] + delta[i]

    return SimpleNamespace(element_centers=element_centers, start_of_step=start_of_step, clear_counts=clear_counts,
                           find_vertex_triangles=find_vertex_triangles, find_edge_edges=find_edge_edges,
                           vertex_triangle_forces=vertex_triangle_forces, edge_edge_forces=edge_edge_forces,
                           count_vertex_triangles=count_vertex_triangles, count_edge_edges=count_edge_edges,
                           solve_vertex_triangles=solve_vertex_triangles, solve_edge_edges=solve_edge_edges,
                           apply_pair_corrections=apply_pair_corrections)
