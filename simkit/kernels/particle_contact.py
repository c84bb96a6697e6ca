"""Particle-particle penalty contact, with candidate pairs found through a hash grid.

Two particles touch when their centres are closer than the sum of their radii. Each
particle then feels the force of :func:`simkit.kernels.contact.penalty_force` (the law
of ground and shape contact, with ``model.contact`` ke, kd, kf, mu): the normal points
from the other particle to this one, the depth is ``distance - (r_i + r_j)`` and the
velocity is the relative velocity ``v_i - v_j``. Swapping the pair negates the normal
and the velocity, and with them the force, bit for bit: one thread per particle adds
only the force on its own particle, every pair is counted once from each side, and
the two forces of a pair cancel exactly, so contact conserves momentum.

Particles of different worlds never touch: the grid is built with the worlds as its
groups (see :mod:`simkit.kernels.hash_grid`), so a particle searches only the cells of its
own world and of world -1, whose particles meet every world (and search every world's
cells: a cost proportional to the number of worlds, for each such particle).

Candidates come from the 27 grid cells around a particle; each bucket's loop runs as
many times as the bucket holds points, which a Tape's adjoint replay bounds by
``sk.config.max_loop_iterations`` (``cuda_max_loop_iterations`` on GPUs): ample for
particles of similar radii, whose cells hold a handful each.

The neighbour grid belongs to the state it was built from: it is created on a
state's first evaluation, cached on that state, and rebuilt (without allocating) on
each evaluation. The force kernel's adjoint re-reads the grid's buckets, so a rollout
recorded on a Tape (one state per step) keeps every step's grid intact until
``backward``; a grid shared by all steps would be overwritten by the next step and the
Tape would (rightly) refuse to differentiate. The grid itself is integer bookkeeping
and carries no gradient: the gradient flows through the contact forces of the pairs
it found, which is exact wherever the set of touching pairs does not change.

Example::

    b = sk.sim.ModelBuilder(particle_contact=True)
    ...
    eval_particle_contact_forces(model, state)   # adds into state.particle_f
"""

# No ``from __future__ import annotations``: kernel annotations name closure types.
import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .contact import scaled_penalty_force
from .hash_grid import (HashGrid, grid_bucket, grid_cell, grid_group_key, grid_group_searches, grid_hash,
                        grid_neighbor_cell, grid_point_group, grid_searched_group, grid_struct)
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def particle_contact(q: AnyArray, qd: AnyArray, particles: Any, contact: Any, grid: Any, f: AnyArray):
    i = sk.tid()
    xi = q[i]
    vi = qd[i]
    ri = particles.radius[i]
    # read once per thread: the adjoint then adds into the parameters' grads once, not per pair
    ke = contact.ke[0]
    kd = contact.kd[0]
    kf = contact.kf[0]
    mu = contact.mu[0]
    tc = contact.time_constant[0]
    zeta = contact.damping_ratio[0]
    wi = particles.inv_mass[i]
    g = grid_point_group(grid, i)
    c = grid_cell(grid, xi)
    fi = xi * 0.0
    for t in range(grid_group_searches(grid, g)):
        searched = grid_searched_group(g, t)
        key = grid_group_key(searched)
        for n in range(27):
            h = grid_hash(grid_neighbor_cell(c, n)) + key
            b = grid_bucket(grid, h)
            for k in range(grid.cell_start[b], grid.cell_start[b + 1]):
                j = grid.sorted_index[k]
                # only the slots of this cell (a bucket shared with another of the 27 is not
                # counted twice) and of the searched world
                if grid.cell_hash[k] == h and j != i and grid_point_group(grid, j) == searched:
                    d = xi - q[j]
                    dist = sk.length(d)
                    depth = dist - (ri + particles.radius[j])
                    # coincident centres have no contact normal; both sides skip the pair alike
                    if depth < 0.0 and dist > 0.0:
                        fi = fi + scaled_penalty_force(d / dist, depth, vi - qd[j],
                                                       wi + particles.inv_mass[j], ke, kd, kf, tc, zeta, mu)
    f[i] += fi


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    vec3s = sk.array(dtype=S.vec3)
    return {"q": vec3s, "qd": vec3s, "f": vec3s, "particles": S.Particles, "contact": S.Contact,
            "grid": grid_struct(real)}


@functools.cache  # asked for on every launch: a lookup
def particle_contact_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)


def _cell_size(model) -> float:
    """Twice the largest particle radius, recomputed only when the radius array was written
    since (every write through a launch, ``assign`` or ``fill_`` bumps its version)."""
    radius = model.particles.radius
    cached = model.__dict__.get("_particle_contact_cell")
    if cached is None or cached[0] is not radius or cached[1] != radius._version:
        cached = model._particle_contact_cell = (radius, radius._version, 2.0 * float(radius.numpy().max()))
    return cached[2]


def eval_particle_contact_forces(model, state) -> None:
    """Add the particle-particle contact forces of ``state`` into ``state.particle_f``
    (nothing while ``model.contacts_enabled`` is False).

    The grid's cell size is twice the largest particle radius, which makes the 27-cell
    search find every touching pair.

    Example::

        state.clear_forces()
        eval_particle_contact_forces(model, state)
    """
    n = model.particle_count
    if not model.contacts_enabled:
        return
    cell_size = _cell_size(model)
    if n < 2 or cell_size <= 0.0:
        return  # nothing to touch, or only points of zero radius
    grid = state.__dict__.get("_particle_grid")
    if grid is None:
        grid = state._particle_grid = HashGrid(dtype=model.dtype, device=model.device)
    grid.build(state.particle_q, cell_size, groups=model.particle_world if model.world_count else None)
    sk.launch(particle_contact_kernels(model.dtype).particle_contact, n,
              inputs=[state.particle_q, state.particle_qd, model.particles, model.contact, grid.view,
                      state.particle_f])
