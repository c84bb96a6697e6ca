"""The integrator in generalized coordinates: :class:`Featherstone`.

Each step of an articulated model:

0. ``state_in``'s bodies placed by forward kinematics of its coordinates (unless the step
   that wrote ``state_in`` placed them and nothing changed since);
1. contact wrenches at ``state_in``'s body poses (the maximal-coordinate penalty kernels:
   ground, static shapes, other bodies, particles), gathered in ``state_in.body_f``;
2. the bias forces ``C(q, qd) - J^T f_ext`` by the recursive Newton-Euler algorithm (per
   body, then summed over each joint's subtree), with the contact wrenches as external
   forces;
3. the joint-space mass matrix by the composite-rigid-body algorithm, one entry per thread,
   plus joint armature and the implicit parts of drives, limits, damping and dry friction on
   the diagonal (a ball joint's limit: a 3 x 3 block; its drive: the diagonal, taking the
   rotation error at the step's end to first order, ``e - dt w'``);
4. ``M qdd = tau - C`` by a dense Cholesky factorization, one thread per articulation;
5. semi-implicit Euler in generalized coordinates (``qd += qdd dt``, then ``q += qd dt``;
   quaternions of ball and free joints turned by the new angular velocity and renormalized);
6. forward kinematics into ``state_out.body_q`` / ``body_qd``, so rendering, contacts of the
   next step and USD export see the bodies.

Composite rigid bodies and Cholesky rather than the articulated-body algorithm: the mass
matrix is built by independent threads (one per entry) and the solve is a short dense loop,
which keeps every launch small and free of atomics, and gives the implicit drive terms their
place (the diagonal). The factorization's ``n^3 / 6`` is small for robots of tens of degrees
of freedom; ABA would avoid it for long chains.

Example::

    integrator = sk.sim.Featherstone()
    s0, s1 = model.state(), model.state()
    integrator.step(model, s0, s1, model.control(), dt=1e-3)
    s1.joint_q.numpy()                # the new coordinates; s1.body_q their bodies
"""

from __future__ import annotations

import weakref

import numpy as np

from ..autograd.forward import JVP
from ..autograd.tape import Tape, active_tapes, paused_tapes
from ..core import array as A
from ..core import types as T
from ..core.launch import hooks as _launch_hooks
from ..core.launch import launch
from ..core.step_cache import on_replay
from ..kernels.articulation import articulation_kernels
from ..kernels.broad_phase_options import check_pair_capacity, sweeps
from ..kernels.bodies import body_kernels
from ..kernels.contact_active_set import active_set_kernels
from ..kernels.contact_rows import contact_row_kernels
from ..kernels.contact_solve import contact_solve_kernels
from ..kernels.featherstone import featherstone_kernels
from ..kernels.limit_rows import limit_row_kernels
from ..kernels.particles import particle_kernels
from ..kernels.structs import JOINT_BALL
from .articulation import eval_fk
from .contact_constraint import ContactSolve
from .forces import body_contact_kernel_modules, eval_body_contact_forces, eval_forces, force_kernel_modules
from .integrators import check_step, compile_step_ahead
from .model import Control, Model, State
from .replay import Replayed, featherstone_after, featherstone_eligible, featherstone_guard, replayed_step


def _csr(lists: list) -> tuple[np.ndarray, np.ndarray]:
    starts = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int32)
    items = np.asarray([i for x in lists for i in x], dtype=np.int32)
    return starts, items


def _topology(model: Model) -> dict:
    """The index arrays the kernels walk, built once per model on the host: per body its
    articulated ancestor joints, per joint the bodies of its subtree, and per articulation
    the entries of its dense mass matrix (row, column, and the deeper of the two joints when
    one is an ancestor of the other, else -1: the entry is zero)."""
    parent = model.joints.parent.numpy()
    child = model.joints.child.numpy()
    art = model.joint_articulation.numpy()
    body_joint = model.body_joint.numpy()
    ds = model.joint_qd_start.numpy()
    ancestors = []
    for b in range(model.body_count):
        chain, j = [], int(body_joint[b])
        while j >= 0:
            chain.append(j)
            j = int(body_joint[parent[j]]) if parent[j] >= 0 else -1
        ancestors.append(chain)
    subtrees = [[] for _ in range(model.joint_count)]
    for b, chain in enumerate(ancestors):
        for j in chain:
            subtrees[j].append(b)
    mass, armature = model.bodies.mass.numpy(), model.joints.armature.numpy()
    for j in np.flatnonzero(art >= 0):
        if ds[j + 1] > ds[j] and not mass[subtrees[j]].sum() > 0.0 and not armature[j] > 0.0:
            raise ValueError(f"Featherstone.step: joint {j} moves only bodies without mass ({subtrees[j]}), so "
                             "the mass matrix is singular; give one of them a shape with density or an inertia "
                             "(add_body_inertia), or the joint an armature")
    dof_joint = np.full(model.joint_dof_count, -1, dtype=np.int32)
    for j in np.flatnonzero(art >= 0):
        dof_joint[ds[j]:ds[j + 1]] = j
    kind = model.joints.kind.numpy()
    dof_start, dof_count, entry_start, rows, cols, deeper, local = [], [], [], [], [], [], []
    for a in range(model.articulation_count):
        d0, d1 = model.articulation_dofs(a)
        dof_start.append(d0)
        dof_count.append(d1 - d0)
        entry_start.append(len(rows))
        for r in range(d0, d1):
            for c in range(d0, d1):
                jr, jc = int(dof_joint[r]), int(dof_joint[c])
                # the entry couples the two joints when one is an ancestor of (or is) the other
                above_r, above_c = ancestors[child[jr]], ancestors[child[jc]]
                k = jr if jc in above_r else (jc if jr in above_c else -1)
                rows.append(r)
                cols.append(c)
                deeper.append(k)
                # a ball joint's three rates are coupled by the implicit part of its limit
                local.append(c - ds[jr] if jr == jc and kind[jr] == JOINT_BALL else -1)
    anc_start, anc_joint = _csr(ancestors)
    sub_start, sub_body = _csr(subtrees)

    def ints(x):
        return A.array(np.asarray(x, dtype=np.int32), dtype=T.int32, device=model.device)

    return dict(ancestor_start=ints(anc_start), ancestor_joint=ints(anc_joint), subtree_start=ints(sub_start),
                subtree_body=ints(sub_body), dof_start=ints(dof_start),
                dof_count=ints(dof_count), entry_start=ints(entry_start), entry_row=ints(rows),
                entry_col=ints(cols), entry_joint=ints(deeper), entry_local=ints(local), entry_count=len(rows),
                free_bodies=bool(np.any((body_joint < 0) & (model.bodies.mass.numpy() > 0.0))))


def _buffers(model: Model, topo: dict):
    """``buffer(name, n, dtype)``: a scratch array of the step. Under a Tape every step gets
    new ones (the tape keeps them for the backward pass); otherwise the model's are reused,
    since allocating a dozen arrays costs as much as the step's launches."""
    recording = bool(active_tapes())
    cache = topo.setdefault("scratch", {})

    def buffer(name: str, n: int, dtype) -> A.Array:
        a = None if recording else cache.get(name)
        if a is None:
            a = A.zeros(n, dtype=dtype, device=model.device)
            if not recording:
                cache[name] = A.mark_scratch(a)
        return a
    return buffer


def _solve(model: Model, topo: dict, k, M: A.Array, rhs: A.Array, buffer) -> tuple[A.Array, A.Array]:
    """``qdd = M^-1 rhs`` per articulation (M laid out by ``topo``'s entries) and the Cholesky
    factor: Cholesky, then two substitutions. Their kernels read back what they wrote, so they run outside any Tape,
    and each Tape records their adjoint instead (one more substitution with the same factor)."""
    n_art, nd, ne = model.articulation_count, model.joint_dof_count, topo["entry_count"]

    def zeros(n):
        return A.zeros(n, dtype=model.dtype, device=model.device)

    L, y, qdd = buffer("L", ne, model.dtype), buffer("y", nd, model.dtype), buffer("qdd", nd, model.dtype)
    with paused_tapes() as tapes:
        launch(k.solve, n_art, inputs=[topo["dof_start"], topo["dof_count"], topo["entry_start"], M, rhs],
               outputs=[L, y, qdd])
    if not tapes or not (M.requires_grad or rhs.requires_grad):
        return qdd, L
    qdd.requires_grad = True

    def backward() -> None:
        with paused_tapes():
            z, b_grad = zeros(nd), zeros(nd)
            launch(k.substitute, n_art, inputs=[topo["dof_start"], topo["dof_count"], topo["entry_start"], L,
                                                qdd.grad], outputs=[z, b_grad])
            if rhs.requires_grad:
                launch(k.add_to, nd, inputs=[b_grad, rhs.grad])
            if M.requires_grad:
                launch(k.solve_grad, ne, inputs=[topo["entry_row"], topo["entry_col"], b_grad, qdd, M.grad])
        qdd.grad.zero_()              # consumed, as the adjoint of a stored output is

    for tape in tapes:
        tape.record_func(backward, arrays=[M, rhs, qdd])
    return qdd, L


def _differentiating() -> list:
    """The Tapes recording and the forward-mode JVPs running now: each must see the bodies
    placed from the coordinates itself, or their gradient (tangent) misses that path."""
    return [h for h in _launch_hooks if isinstance(h, (Tape, JVP))]


def _fk_mark(state: State) -> tuple:
    """What says that ``state``'s bodies are the forward kinematics of its coordinates: the
    versions of the four arrays, and (weakly) the Tapes and JVPs that saw the kinematics."""
    return ((state.joint_q._version, state.joint_qd._version, state.body_q._version, state.body_qd._version),
            tuple(weakref.ref(h) for h in _differentiating()))


def _fk_current(state: State) -> bool:
    """Whether ``state``'s bodies were placed from its coordinates by a step, nothing changed
    them since, and every Tape recording and JVP running now saw that placement (a state placed
    outside the tape, as a checkpointed rollout's recomputation finds it, or outside a JVP, as a
    forward-mode Jacobian's state is, is placed again). Weak references, not ids: a JVP made
    after one that placed the bodies may reuse its address."""
    mark = state.__dict__.get("_featherstone_fk")
    if mark is None:
        return False
    versions, _ = _fk_mark(state)
    saw = [r() for r in mark[1]]
    return mark[0] == versions and all(any(h is s for s in saw) for h in _differentiating())


def _placed(model: Model, state: State) -> A.Array:
    """The coordinates (``joint_q`` then ``joint_qd``) that ``state``'s bodies were last
    placed from by a step; NaN before the first."""
    n = model.joint_coord_count + model.joint_dof_count
    placed = state.__dict__.get("_featherstone_placed")
    if placed is None or placed.size != n:
        # through __dict__: a private cache of the state's, no mutation to count
        placed = state.__dict__["_featherstone_placed"] = A.mark_scratch(
            A.full(n, float("nan"), dtype=model.dtype, device=model.device))
    return placed


def _remember_placement(model: Model, state: State) -> None:
    """After ``state``'s bodies were placed from its coordinates: remember those."""
    with paused_tapes():
        launch(articulation_kernels(model.dtype).remember_coordinates, model.joint_coord_count + model.joint_dof_count,
               inputs=[model.joint_coord_count, state.joint_q, state.joint_qd], outputs=[_placed(model, state)])


def _place_moved_bodies(model: Model, state: State) -> None:
    """Place the bodies of ``state`` whose coordinates differ from those they were placed
    from, though no version says so (a write through a ``.numpy()`` view). Outside a Tape
    natively, per body; under one (CPU) by a look on the host, then ``eval_fk`` on the tape,
    so the gradient reaches the coordinates through the bodies."""
    placed = _placed(model, state)
    if active_tapes():
        # the host look reads the views themselves, unseen by a taped run's recorder: a replay
        # (simkit.autograd.tape_replay) runs no Python between its steps, so no view is written there
        if placed._np is not None and not (np.array_equal(placed._np[:model.joint_coord_count], state.joint_q._np)
                                           and np.array_equal(placed._np[model.joint_coord_count:],
                                                              state.joint_qd._np)):
            eval_fk(model, state.joint_q, state.joint_qd, state)
            state._featherstone_fk = _fk_mark(state)
            _remember_placement(model, state)
        return
    launch(articulation_kernels(model.dtype).eval_fk_if_moved, model.body_count,
           inputs=[placed, model.joint_coord_count, model.body_joint, model.joints, model.joint_q_start,
                   model.joint_qd_start, state.joint_q, state.joint_qd, model.bodies],
           outputs=[state.body_q, state.body_qd])
    _remember_placement(model, state)


def _check_contact_args(contact, impratio, max_contacts, iterations, tolerance) -> str:
    """``contact`` after checking every argument of the contact solve (clear errors naming
    the parameter)."""
    if contact not in ("penalty", "constraint"):
        raise ValueError(f"Featherstone: contact must be 'penalty' or 'constraint', got {contact!r}")
    if impratio is not None and (isinstance(impratio, bool) or not isinstance(impratio, (int, float))
                                 or not impratio > 0.0):
        raise ValueError(f"Featherstone: impratio must be None (the model's) or a positive number, got {impratio!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance > 0.0:
        raise ValueError(f"Featherstone: tolerance must be a positive number, got {tolerance!r}")
    for name, value in (("max_contacts", max_contacts), ("iterations", iterations)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Featherstone: {name} must be a positive integer, got {value!r}")
    return contact


class Featherstone(Replayed):
    """Semi-implicit Euler in generalized coordinates for models with articulations
    (:meth:`~simkit.sim.ModelBuilder.add_articulation`): ``state.joint_q`` / ``joint_qd`` are
    integrated exactly along the joints (no joint drifts apart, whatever the masses), and
    ``state_out.body_q`` / ``body_qd`` follow by forward kinematics.

    Forces: gravity; contacts of the body shapes (ground, static shapes, other bodies,
    particles) as penalty wrenches at ``state_in``'s body poses, taken to joint space by the
    Jacobian transpose; on revolute and prismatic joints ``control.joint_act``, a drive
    ``target_ke (control.joint_target - q) + target_kd (control.joint_target_vel - qd)``
    (``target_kd`` alone with a zero target rate: joint damping; with a target rate: a
    velocity servo), both clamped to ``effort_limit``, a limit penalty ``limit_ke``/``limit_kd``
    outside ``[limit_lower, limit_upper]`` and the joint's ``armature``; the same on each
    angle of a universal joint (targets ``control.joint_dof_target`` and
    ``control.joint_dof_target_vel``, second angle bounded by
    ``[limit2_lower, limit2_upper]``); on a ball joint a penalty once its rotation angle
    passes ``limit_upper`` (about the rotation's axis), a drive ``target_ke e + target_kd (w_t - w)``
    towards the rotation ``exp(control.joint_dof_target[d:d + 3])`` (a rotation vector; ``e``
    the rotation vector from the joint's rotation to the target, the short way, in the
    parent's joint frame like ``w`` and the target angular velocity ``w_t =
    control.joint_dof_target_vel[d:d + 3]``), its norm clamped to ``effort_limit``;
    ``control.joint_dof_act`` on every degree of freedom; and every joint's dry ``friction``.
    Drives, damping, limits and friction are linearly implicit (their gains enter the mass
    matrix), so stiff gains are stable at any ``dt``; contacts are explicit, with the
    stability bound of :class:`~simkit.sim.SemiImplicitEuler`.

    Dry friction is regularized: on each rate ``qd`` of a joint with ``friction`` F acts
    ``-F qd' / max(|qd|, friction_scale)`` (``qd'`` the rate at the step's end). While the
    joint slides faster than ``friction_scale`` (rad/s or m/s, default ``1e-4``) its
    magnitude is F (to first order in ``dt``) and it never reverses the motion by itself;
    slower, it is a stiff damper, so a joint held by less than F does not stick exactly but
    creeps at ``friction_scale`` times (held force / F) at most. Smaller scales creep less;
    the damper is implicit, so any scale is stable.

    Joints outside articulations are ignored (their coordinates are copied); bodies outside
    articulations, and particles, move as in :class:`~simkit.sim.SemiImplicitEuler`.

    ``contact="constraint"`` replaces the penalty contacts of the body shapes by MuJoCo's
    soft contact constraints, solved for the contact forces in joint space each step
    (:mod:`simkit.sim.contact_constraint`, docs/contact.md) with each shape's MuJoCo
    parameters (``solref``, ``solimp``, ``condim`` 1 or 3, ``margin``, friction, collision
    masks; mixed per pair as MuJoCo does) and the model's ``impratio`` (``impratio`` here
    overrides it) on the model's ``contact_cone`` (pyramidal or elliptic);
    at most ``max_contacts`` contacts, projected
    Gauss-Seidel to ``tolerance`` or ``iterations`` sweeps, warm-started from
    ``state_in.contact_force`` (written to ``state_out.contact_force``). Its gradient is implicit
    differentiation at the solution. Models with bodies outside articulations need
    ``contact="penalty"``. In that mode the joint limits are MuJoCo's soft limit constraints
    in the same solve (each joint's ``limit_solref``, ``limit_solimp``, ``limit_margin``;
    ``limit_ke`` / ``limit_kd`` are unused), and the constraints are solved against the mass
    matrix without the implicit terms of drives, damping and friction, which are applied
    after, as MuJoCo's Euler integrator does (docs/contact.md).

    The coordinates are the state: a step first places ``state_in``'s bodies by forward
    kinematics of ``state_in.joint_q`` / ``joint_qd`` (writing ``state_in.body_q`` /
    ``body_qd``), unless a Featherstone step placed them from these very coordinates and the
    active Tape recorded it (coordinates written through a ``.numpy()`` view, which no
    version counts, are seen too: each body whose joints' coordinates changed is placed
    again). Every
    launch is recorded on a Tape: gradients flow from ``state_out`` to ``state_in.joint_q`` /
    ``joint_qd``, the control and the model's parameters.

    Example::

        integrator = sk.sim.Featherstone()
        for k in range(100):
            integrator.step(model, states[k], states[k + 1], control, dt=1e-3)
    """

    def __init__(self, friction_scale: float = 1.0e-4, contact: str = "penalty", impratio: float | None = None,
                 max_contacts: int = 128, iterations: int = 100, tolerance: float = 1.0e-8):
        if isinstance(friction_scale, bool) or not isinstance(friction_scale, (int, float)):
            raise TypeError(f"Featherstone: friction_scale must be a number, got {type(friction_scale).__name__}")
        if not friction_scale > 0.0 or not np.isfinite(friction_scale):
            raise ValueError(f"Featherstone: friction_scale must be a positive velocity, got {friction_scale}")
        self.friction_scale = float(friction_scale)
        self.contact = _check_contact_args(contact, impratio, max_contacts, iterations, tolerance)
        self.max_contacts = int(max_contacts)
        self.impratio = None if impratio is None else float(impratio)
        self._contact_params = dict(iterations=int(iterations), tolerance=float(tolerance))

    def _constrained(self, model: Model, topo: dict, k, solve: ContactSolve, state_in: State, state_out: State,
                     S_dof: A.Array, M: A.Array, M0: A.Array, rhs: A.Array, implicit: A.Array, dt: float,
                     buffer) -> A.Array:
        """The acceleration with the contact and limit constraints, as MuJoCo's Euler takes it:
        the constraint forces ``f`` solved against the mass matrix ``M0`` without the implicit
        terms ``D`` (drives, damping, friction) and the unconstrained ``M0^-1 rhs``, then the
        implicit terms applied to everything, ``qdd = (M0 + D)^-1 (rhs + J^T f)``, which is
        ``qdd0 - (M0 + D)^-1 (D qdd0)`` for ``qdd0 = M0^-1 (rhs + J^T f)``."""
        real, nd = model.dtype, model.joint_dof_count
        a0, L0 = _solve(model, topo, k, M0, rhs, lambda name, n, dtype: buffer("plain_" + name, n, dtype))
        params = dict(self._contact_params, elliptic=int(model.contact_cone == "elliptic"),
                      impratio=model.impratio if self.impratio is None else self.impratio)
        qdd0 = solve.qdd(model, state_in, state_out, topo, S_dof, L0, M0, a0, dt, params,
                         contacts=model.contacts_enabled)
        z, qdd = buffer("implicit_qdd", nd, real), buffer("constrained_qdd", nd, real)
        if not active_tapes():
            # one launch for the three below (the same bits)
            launch(k.implicit_solve, model.articulation_count,
                   inputs=[topo["dof_start"], topo["dof_count"], topo["entry_start"], M, implicit, qdd0],
                   outputs=[z, buffer("implicit_L", topo["entry_count"], real), buffer("implicit_y", nd, real),
                            buffer("implicit_x", nd, real), qdd])
            return qdd
        launch(k.implicit_times, nd, inputs=[implicit, qdd0], outputs=[z])
        y = _solve(model, topo, k, M, z, lambda name, n, dtype: buffer("implicit_" + name, n, dtype))[0]
        launch(k.difference, nd, inputs=[qdd0, y], outputs=[qdd])
        return qdd

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        """Advance ``state_in`` by ``dt`` into ``state_out`` (its joint coordinates and their
        bodies); ``state_in.body_f`` receives the external wrenches of ``state_in`` (with
        ``contact="constraint"`` the contact forces are not among them: they act in joint
        space). Called again with the same arguments, it replays its recorded launches
        (:mod:`simkit.sim.replay`)."""
        replayed_step(self, self._step, model, state_in, state_out, control, dt, featherstone_eligible,
                      featherstone_guard, featherstone_after)
        if self.contact == "penalty" and sweeps(model):
            on_replay(check_pair_capacity, model, state_out)
        if self.contact == "constraint":
            solve = model._featherstone["contact_solves"].get(self.max_contacts)
            if solve is not None:
                on_replay(solve.after_step, model.device)

    def _replay_eligible(self, model) -> bool:
        return featherstone_eligible(self, model)

    def _kernel_modules(self, model: Model) -> list:
        """The kernels, one per module (or a module's namespace of them), that a step of
        ``model`` launches (the constraint contact's modules whether or not it touches)."""
        real = model.dtype
        contact = body_contact_kernel_modules(model) if self.contact == "penalty" else \
            [contact_row_kernels(real), contact_solve_kernels(real), active_set_kernels(real), limit_row_kernels(real)]
        return [featherstone_kernels(real), articulation_kernels(real), *force_kernel_modules(model), *contact]

    def _step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        control = check_step(model, state_in, state_out, control, dt)
        if not model.articulation_count:
            raise ValueError("Featherstone.step: the model has no articulation (start one with "
                             "ModelBuilder.add_articulation() before adding its joints); use SemiImplicitEuler or "
                             "XPBD for bodies in maximal coordinates")
        topo = model.__dict__.get("_featherstone")
        if topo is None:
            topo = model._featherstone = _topology(model)
        if self.contact == "constraint":
            if topo["free_bodies"]:
                raise ValueError("Featherstone(contact='constraint'): the model has bodies outside articulations; "
                                 "their contacts are penalty forces only, so use contact='penalty' (or put each "
                                 "body in an articulation with a free joint)")
        real = model.dtype
        k = featherstone_kernels(real)
        compile_step_ahead(model, f"Featherstone({self.contact})", self._kernel_modules)
        if not _fk_current(state_in):
            # bodies not (or no longer) placed by a step from these coordinates: place them, on
            # the tape, so that gradients reach the coordinates through the bodies too
            eval_fk(model, state_in.joint_q, state_in.joint_qd, state_in)
            state_in._featherstone_fk = _fk_mark(state_in)
            _remember_placement(model, state_in)
        else:
            _place_moved_bodies(model, state_in)
            # it counts a write of the bodies (placed again or not): they are current all the same
            state_in._featherstone_fk = _fk_mark(state_in)
        state_in.clear_forces()
        eval_forces(model, state_in, control)
        if self.contact == "penalty":
            eval_body_contact_forces(model, state_in, state_out)
        if model.particle_count:
            launch(particle_kernels(real).integrate_particles, model.particle_count,
                   inputs=[state_in.particle_q, state_in.particle_qd, state_in.particle_f, model.particles,
                           model.gravity, dt, state_out.particle_q, state_out.particle_qd])
        if topo["free_bodies"]:
            launch(body_kernels(real).integrate_bodies, model.body_count,
                   inputs=[state_in.body_q, state_in.body_qd, state_in.body_f, model.bodies, model.gravity, dt,
                           state_out.body_q, state_out.body_qd])
        S = model.types
        nj, nb, nd = model.joint_count, model.body_count, model.joint_dof_count

        zeros = _buffers(model, topo)
        S_dof, c_joint = zeros("S", nd, S.spatial), zeros("c", nj, S.spatial)
        joint_q, joint_qd = state_in.joint_q, state_in.joint_qd
        launch(k.joint_subspace, nj,
               inputs=[state_in.body_q, state_in.body_qd, model.bodies, model.joints, model.joint_articulation,
                       model.joint_q_start, model.joint_qd_start, joint_q, joint_qd],
               outputs=[S_dof, c_joint])
        f_b, m_b, h_b, J_b = (zeros("f_b", nb, S.spatial), zeros("m_b", nb, real), zeros("h_b", nb, S.vec3),
                              zeros("J_b", nb, S.mat33))
        launch(k.body_terms, nb,
               inputs=[state_in.body_q, state_in.body_qd, state_in.body_f, model.bodies, model.body_joint,
                       topo["ancestor_start"], topo["ancestor_joint"], c_joint, model.gravity],
               outputs=[f_b, m_b, h_b, J_b])
        m_j, h_j, J_j = zeros("m_j", nj, real), zeros("h_j", nj, S.vec3), zeros("J_j", nj, S.mat33)
        rhs, diag, block = zeros("rhs", nd, real), zeros("diag", nd, real), zeros("block", nd, S.vec3)
        implicit = zeros("implicit", nd, real)
        launch(k.joint_forces, nj,
               inputs=[topo["subtree_start"], topo["subtree_body"], f_b, m_b, h_b, J_b, S_dof, model.joints,
                       model.joint_articulation, model.joint_q_start, model.joint_qd_start, joint_q, joint_qd,
                       control.joint_target, control.joint_target_vel, control.joint_act, control.joint_dof_target,
                       control.joint_dof_target_vel, control.joint_dof_act,
                       dt, self.friction_scale, int(self.contact == "penalty")],
               outputs=[m_j, h_j, J_j, rhs, diag, block, implicit])
        ne = topo["entry_count"]
        M = zeros("M", ne, real)
        solve = None
        if self.contact == "constraint":
            solves = topo.setdefault("contact_solves", {})      # per cap: integrators may differ
            solve = solves.get(self.max_contacts)
            if solve is None:
                solve = solves[self.max_contacts] = ContactSolve(model, self.max_contacts)
        M0 = zeros("M0", ne, real)   # M without the implicit terms, which the constraint solve sees
        launch(k.mass_entries, ne,
               inputs=[topo["entry_row"], topo["entry_col"], topo["entry_joint"], topo["entry_local"], S_dof, m_j,
                       h_j, J_j, diag, block, implicit],
               outputs=[M, M0])
        if solve is not None and (model.contacts_enabled or solve.limit_count):
            qdd = self._constrained(model, topo, k, solve, state_in, state_out, S_dof, M, M0, rhs, implicit, dt,
                                    zeros)
        else:
            qdd = _solve(model, topo, k, M, rhs, zeros)[0]
        launch(k.integrate, nj,
               inputs=[model.joints, model.joint_articulation, model.joint_q_start, model.joint_qd_start, joint_q,
                       joint_qd, qdd, dt], outputs=[state_out.joint_q, state_out.joint_qd])
        eval_fk(model, state_out.joint_q, state_out.joint_qd, state_out)
        state_out._featherstone_fk = _fk_mark(state_out)
        _remember_placement(model, state_out)
