"""Cloth self-contact in the simulation layer: the builder option, the model's part, and the
per-step broad phase and responses the integrators call (kernels and the contact law in
:mod:`simkit.kernels.cloth_self_contact`; the user guide is docs/cloth.md).

``ModelBuilder.set_cloth_self_contact(thickness=2e-3, ke=..., ...)`` turns it on: every
triangle of the model is cloth, its corners the vertices and its sides the edges that
collide with each other (same cloth or another, same world). ``model.cloth_contact`` is
then a :class:`ClothContact`; its ``params`` are gradient-tracked like the other material
parameters (``finalize(requires_grad=True)``).

Per step, :func:`find_cloth_pairs` rebuilds the two hash grids and the pair slots of the
state being stepped from; the slots, the grids and the start-of-step positions are kept on
that state (a rollout with one state per step keeps every step's pairs for ``backward``).

Example::

    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((0, 1, 0), (0, 0, 0, 1), (0, 0, 0), 16, 16, 0.02, 0.02, mass=1e-3)
    b.set_cloth_self_contact(thickness=2e-3, ke=100.0)
    model = b.finalize()
    model.cloth_contact.thickness        # 0.002
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from ..kernels.cloth_self_contact import MAX_PAIRS, cloth_contact_kernels, cloth_params_struct
from ..kernels.hash_grid import HashGrid, hash_grid_kernels
from . import validate as V

# Pairs are found while a triangle's sides stay below this multiple of the longest rest side.
STRETCH_ALLOWANCE = 1.25

DEFAULTS = {"thickness": 2.0e-3, "ke": 100.0, "kd": 0.05, "kf": 0.05, "mu": 0.5}


class ClothContactBuilder:
    """The builder's cloth self-contact option (a mixin of :class:`~simkit.sim.ModelBuilder`)."""

    cloth_contact: dict | None = None

    def set_cloth_self_contact(self, thickness: float = DEFAULTS["thickness"], ke: float = DEFAULTS["ke"],
                               kd: float = DEFAULTS["kd"], kf: float = DEFAULTS["kf"],
                               mu: float = DEFAULTS["mu"]) -> None:
        """Make the model's cloth collide with itself: vertex-triangle and edge-edge pairs that
        share no vertex keep ``thickness`` (m) apart. ``SemiImplicitEuler`` pushes them apart
        with a penalty of stiffness ``ke`` (N/m), damping ``kd`` (N s/m) and friction ``kf``
        (N s/m), ``mu``; ``XPBD`` with rigid, frictionless constraints (only ``thickness``).

        Example::

            b.set_cloth_self_contact(thickness=2e-3, ke=100.0, kd=0.05)
        """
        where = "set_cloth_self_contact"
        self.cloth_contact = {"thickness": V.positive(thickness, f"{where}: thickness"),
                              **{name: V.nonneg(value, f"{where}: {name}")
                                 for name, value in (("ke", ke), ("kd", kd), ("kf", kf), ("mu", mu))}}


def cloth_edges(tris: np.ndarray) -> np.ndarray:
    """The distinct sides ``(i, j)``, ``i < j``, of the triangles ``tris`` (M x 3), sorted (E x 2 int32).

    Example::

        cloth_edges(np.array([[0, 1, 2], [2, 1, 3]]))   # [[0 1] [0 2] [1 2] [1 3] [2 3]]
    """
    tris = np.asarray(tris, dtype=np.int64).reshape(-1, 3)
    sides = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    return np.unique(np.sort(sides, axis=1), axis=0).astype(np.int32).reshape(-1, 2)


class ClothContact:
    """The cloth self-contact of one model: the colliding vertices (``verts``) and edges
    (``edges``, E x 2), the worlds they belong to, the grids' cell size and the kernel
    parameters ``params`` (one-element arrays ``thickness``, ``ke``, ``kd``, ``kf``, ``mu``).
    ``thickness`` is the host copy the cell size was computed from.

    Example::

        model.cloth_contact.params.ke.grad      # d(loss)/d(ke) after tape.backward
    """

    def __init__(self, model: Any, config: dict, requires_grad: bool):
        real, device = model.dtype, model.device
        tris = model.triangles.indices.numpy()
        if not len(tris):
            raise ValueError("set_cloth_self_contact: the model has no triangles (cloth) to collide")
        q = model.particle_q.numpy().astype(np.float64)
        edges = cloth_edges(tris)
        lengths = np.linalg.norm(q[edges[:, 0]] - q[edges[:, 1]], axis=1)
        sides = np.linalg.norm(q[tris[:, [1, 2, 0]]] - q[tris], axis=2)
        altitude = float((2.0 * model.triangles.area.numpy() / sides.max(axis=1)).min())
        h = config["thickness"]
        if 2.0 * h >= altitude:
            raise ValueError(f"set_cloth_self_contact: thickness {h} is too large for the cloth: twice it must stay "
                             f"below the smallest triangle height ({altitude:.3g} m), or neighbours in a flat sheet "
                             "would push each other apart")
        self.thickness = h
        self.cell_size = STRETCH_ALLOWANCE * float(lengths.max()) + 2.0 * h
        verts = np.unique(tris).astype(np.int32)
        world = model.particle_world.numpy()

        def ints(x, shape=None):
            return A.array(np.asarray(x, dtype=np.int32).reshape(shape or (-1,)), dtype=T.int32, device=device)

        self.verts, self.edges = ints(verts), ints(edges, (-1, 2))
        self.tris = model.triangles.indices
        self.grouped = bool(model.world_count)
        self.vert_group = ints(world[verts] if self.grouped else np.full(len(verts), -1))
        self.tri_group = ints(world[tris[:, 0]])
        self.edge_group = ints(world[edges[:, 0]] if self.grouped else np.full(len(edges), -1))
        self.vert_count, self.edge_count, self.tri_count = len(verts), len(edges), len(tris)

        def reals(value):
            return A.array(np.array([value], dtype=real.np_dtype), dtype=real, device=device,
                           requires_grad=requires_grad)

        self.params = cloth_params_struct(real)(**{name: reals(config[name]) for name in DEFAULTS})

    def __repr__(self) -> str:
        return (f"ClothContact(thickness={self.thickness}, vertices={self.vert_count}, edges={self.edge_count}, "
                f"triangles={self.tri_count})")


class _Pairs:
    """What one state keeps of a step's broad phase: the grids, element centers and boxes, the
    pair slots, the overflow counter; for semi-implicit Euler the start-of-step positions, for
    XPBD per iteration the positions and corrections before the pairs' projection, the pairs'
    corrections and the violated pairs on each particle."""

    def __init__(self, model: Any):
        cc, device, vec3 = model.cloth_contact, model.device, model.types.vec3
        self.tri_grid = HashGrid(dtype=model.dtype, device=device)
        self.edge_grid = HashGrid(dtype=model.dtype, device=device)
        self.tri_center = A.zeros(cc.tri_count, dtype=vec3, device=device)
        self.edge_center = A.zeros(cc.edge_count, dtype=vec3, device=device)
        self.tri_lo, self.tri_hi = (A.zeros(cc.tri_count, dtype=vec3, device=device) for _ in range(2))
        self.edge_lo, self.edge_hi = (A.zeros(cc.edge_count, dtype=vec3, device=device) for _ in range(2))
        self.vt = A.zeros((cc.vert_count, MAX_PAIRS), dtype=T.int32, device=device)
        self.ee = A.zeros((cc.edge_count, MAX_PAIRS), dtype=T.int32, device=device)
        self.overflow = A.zeros(1, dtype=T.int32, device=device)
        self.q_prev = None
        self.iterations: list = []

    def iteration(self, model: Any, it: int) -> tuple:
        """The buffers of XPBD iteration ``it``: positions and corrections before the pairs'
        projection, its corrections, its count of violated pairs per particle."""
        while len(self.iterations) <= it:
            n, vec3, device = model.particle_count, model.types.vec3, model.device
            self.iterations.append(tuple(A.zeros(n, dtype=vec3, device=device) for _ in range(3))
                                   + (A.zeros(n, dtype=T.int32, device=device),))
        return self.iterations[it]


def _pairs(model: Any, state: Any) -> _Pairs:
    pairs = state.__dict__.get("_cloth_pairs")
    if pairs is None:
        pairs = state._cloth_pairs = _Pairs(model)
    return pairs


def find_cloth_pairs(model: Any, state: Any, q, q_prev) -> _Pairs:
    """Rebuild the grids at positions ``q`` and fill the pair slots of ``state`` with the pairs
    closer than twice the thickness at ``q`` or at ``q_prev`` (the start of the step).

    Example::

        pairs = find_cloth_pairs(model, state_in, state_in.particle_q, state_in.particle_q)
    """
    cc = model.cloth_contact
    k = cloth_contact_kernels(model.dtype)
    p = _pairs(model, state)
    launch(k.element_centers, max(cc.tri_count, cc.edge_count),
           inputs=[q, q_prev, cc.tris, cc.tri_count, cc.edges, cc.edge_count, p.tri_center, p.tri_lo, p.tri_hi,
                   p.edge_center, p.edge_lo, p.edge_hi])
    p.tri_grid.build(p.tri_center, cc.cell_size, groups=cc.tri_group if cc.grouped else None)
    p.edge_grid.build(p.edge_center, cc.cell_size, groups=cc.edge_group if cc.grouped else None)
    launch(k.find_vertex_triangles, cc.vert_count,
           inputs=[cc.verts, cc.vert_group, q, q_prev, cc.tris, p.tri_center, p.tri_lo, p.tri_hi, p.tri_grid.view,
                   cc.params, 27, p.vt, p.overflow])
    launch(k.find_edge_edges, cc.edge_count,
           inputs=[cc.edge_group, q, q_prev, cc.edges, p.edge_center, p.edge_lo, p.edge_hi, p.edge_grid.view,
                   cc.params, 13, p.ee, p.overflow])
    return p


def self_contact_active(model: Any) -> bool:
    """Whether a step of ``model`` computes cloth self-contact."""
    return model.cloth_contact is not None and model.contacts_enabled


def cloth_contact_kernel_modules(model: Any) -> list:
    """The kernel namespaces, one per module, that a step's cloth self-contact launches for
    ``model`` now (none without it).

    Example::

        sk.compile_ahead(*cloth_contact_kernel_modules(model))
    """
    if not model.particle_count or not self_contact_active(model):
        return []
    return [cloth_contact_kernels(model.dtype), hash_grid_kernels(model.dtype)]


def eval_cloth_contact_forces(model: Any, state: Any, dt: float) -> None:
    """Add the self-contact penalty forces of ``state``'s cloth into ``state.particle_f``; the
    start of the step is ``q - dt qd`` (where semi-implicit Euler came from).

    Example::

        eval_cloth_contact_forces(model, state, 1e-4)
    """
    if not self_contact_active(model):
        return
    cc = model.cloth_contact
    k = cloth_contact_kernels(model.dtype)
    p = _pairs(model, state)
    if p.q_prev is None:
        p.q_prev = A.zeros(model.particle_count, dtype=model.types.vec3, device=model.device)
    q, qd = state.particle_q, state.particle_qd
    launch(k.start_of_step, model.particle_count, inputs=[q, qd, dt, p.q_prev])
    find_cloth_pairs(model, state, q, p.q_prev)
    launch(k.vertex_triangle_forces, cc.vert_count,
           inputs=[cc.verts, p.vt, q, qd, p.q_prev, cc.tris, cc.params, MAX_PAIRS, state.particle_f])
    launch(k.edge_edge_forces, cc.edge_count,
           inputs=[p.ee, q, qd, p.q_prev, cc.edges, cc.params, MAX_PAIRS, state.particle_f])


def project_cloth_contacts(model: Any, pairs: _Pairs, it: int, q, corr, q_prev, q_out, corr_out) -> None:
    """XPBD iteration ``it``'s projection of the self-contact pairs (``pairs`` from
    :func:`find_cloth_pairs` at the predicted positions): from positions ``q`` and summed
    corrections ``corr`` (after the iteration's other constraints) to ``q_out``, ``corr_out``;
    ``q_prev`` are the positions at the start of the step.

    Example::

        project_cloth_contacts(model, pairs, it, q_mid, corr_mid, state_in.particle_q, q_out, corr_out)
    """
    cc = model.cloth_contact
    k = cloth_contact_kernels(model.dtype)
    _, _, delta, active = pairs.iteration(model, it)
    delta.zero_()
    launch(k.clear_counts, model.particle_count, inputs=[active])
    launch(k.count_vertex_triangles, cc.vert_count,
           inputs=[cc.verts, pairs.vt, q, q_prev, cc.tris, cc.params, MAX_PAIRS, active])
    launch(k.count_edge_edges, cc.edge_count, inputs=[pairs.ee, q, q_prev, cc.edges, cc.params, MAX_PAIRS, active])
    inv_mass = model.particles.inv_mass
    launch(k.solve_vertex_triangles, cc.vert_count,
           inputs=[cc.verts, pairs.vt, q, q_prev, cc.tris, inv_mass, active, cc.params, MAX_PAIRS, delta])
    launch(k.solve_edge_edges, cc.edge_count,
           inputs=[pairs.ee, q, q_prev, cc.edges, inv_mass, active, cc.params, MAX_PAIRS, delta])
    launch(k.apply_pair_corrections, model.particle_count, inputs=[q, corr, delta, q_out, corr_out])


def cloth_contact_overflow(state: Any) -> int:
    """How many self-contact pairs did not fit their slots (``MAX_PAIRS`` per vertex and per
    edge), summed over the steps taken from ``state`` since it was made; 0 means none was
    dropped. Reads the counter from the device.

    Example::

        assert cloth_contact_overflow(state) == 0
    """
    pairs = state.__dict__.get("_cloth_pairs")
    return 0 if pairs is None else int(pairs.overflow.numpy()[0])


def warn_cloth_overflow(model: Any, state: Any) -> None:
    """After a step whose self-contact pairs live on ``state``: warn (once per model) if pairs
    did not fit their slots and were dropped, which lets the cloth pass through itself there.
    On the CPU after every step (a look at the counter), on a GPU every 100 steps.

    Example::

        warn_cloth_overflow(model, state_in)
    """
    pairs = state.__dict__.get("_cloth_pairs")
    if pairs is None or model.__dict__.get("_cloth_overflow_warned"):
        return
    counter = pairs.overflow
    if counter._np is None:
        steps = model.__dict__["_cloth_overflow_checks"] = model.__dict__.get("_cloth_overflow_checks", 0) + 1
        if steps % 100:
            return
        dropped = int(counter.numpy()[0])
    else:
        dropped = int(counter._np[0])
    if dropped:
        model.__dict__["_cloth_overflow_warned"] = True
        warnings.warn(f"cloth self-contact: {dropped} pair(s) did not fit the {MAX_PAIRS} slots of their vertex or "
                      "edge and were dropped, so the cloth may pass through itself there (a dense heap; use a "
                      "smaller thickness or more XPBD iterations to spread it)", RuntimeWarning, stacklevel=3)
