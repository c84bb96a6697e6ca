"""The constraint-based contact solve of :class:`~simkit.sim.Featherstone` (``contact=
"constraint"``): MuJoCo's soft contact constraints in joint space.

Per step, after the unconstrained acceleration ``a0 = M^-1 (tau - C)``: the contact rows of
:mod:`simkit.kernels.contact_rows` (every shape point against the ground and every
candidate shape pair), compacted to at most ``max_contacts`` active contacts, and the
joint-limit rows of :mod:`simkit.kernels.limit_rows` (every active one); their
Jacobians ``J``; ``Y = L^-1 J^T`` with the articulations' Cholesky factors ``M = L L^T``
(under a Tape also ``X = M^-1 J^T``, for the backward pass); the Delassus matrix
``A = Y^T Y`` (as ``Y^T (Y f)``) over all rows at once (contacts between bodies of different
articulations are coupled in the same solve); MuJoCo's reference accelerations and
regularizers; the dual solved exactly (pyramidal cone) and by projected Gauss-Seidel,
warm-started per slot from ``state_in.contact_force``; and ``qdd = a0 + L^-T (Y f)``.
See docs/contact.md.

Example::

    integrator = sk.sim.Featherstone(contact="constraint")
    integrator.step(model, s0, s1, control, dt=1e-3)
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..autograd.tape import active_tapes, paused_tapes
from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from ..kernels.contact_active_set import ACTIVE_SET_ROWS, active_set_kernels
from ..kernels.contact_elliptic import BASIS, ON_SURFACE, elliptic_kernels
from ..kernels.contact_rows import contact_row_kernels
from ..kernels.contact_solve import ROWS_PER_CONTACT, contact_solve_kernels
from ..kernels.featherstone import featherstone_kernels
from ..kernels.limit_rows import LIMIT2_LOWER, LIMIT2_UPPER, LIMIT_CONE, LIMIT_LOWER, LIMIT_UPPER, limit_row_kernels
from ..kernels.shapes import MAX_PLANE_POINTS, MAX_SHAPE_POINTS, collision_pairs
from ..kernels.structs import JOINT_BALL, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_UNIVERSAL, NO_LIMIT
from .model import Model, State


# how often (in steps) a step on a GPU reads back whether max_contacts was exceeded: each
# read waits for the device, so not every step (on the CPU the read is free, and every step,
# after the step: see ContactSolve.after_step)
CHECK_EVERY = 100

# the relative rounding of a row's residual, in units of the float type's epsilon: Gauss-Seidel
# counts no change below it as one (kernels/contact_solve.py, pgs)
ROUNDING = 8.0


def _dof_body(model: Model) -> np.ndarray:
    """``table[d * nb + b]`` is 1 when dof ``d`` moves body ``b`` (its joint is one of the
    body's articulated ancestors)."""
    parent = model.joints.parent.numpy()
    art = model.joint_articulation.numpy()
    body_joint = model.body_joint.numpy()
    ds = model.joint_qd_start.numpy()
    nb, nd = model.body_count, model.joint_dof_count
    table = np.zeros((nd, nb), dtype=np.int32)
    for b in range(nb):
        j = int(body_joint[b])
        while j >= 0:
            if art[j] >= 0:
                table[ds[j]:ds[j + 1], b] = 1
            j = int(body_joint[parent[j]]) if parent[j] >= 0 else -1
    return table.reshape(-1)


def _limit_slots(model: Model) -> np.ndarray:
    """One row per limit slot: ``(joint, which bound, its coordinate, its first dof, its dof
    count)`` for every finite bound of the articulated revolute, prismatic and universal
    joints and every ball joint whose ``limit_upper`` is below pi."""
    J = model.joints
    kind, art = J.kind.numpy(), model.joint_articulation.numpy()
    bounds = [J.limit_lower.numpy(), J.limit_upper.numpy(), J.limit2_lower.numpy(), J.limit2_upper.numpy()]
    qs, ds = model.joint_q_start.numpy(), model.joint_qd_start.numpy()
    rows = []
    for j in np.flatnonzero(art >= 0):
        sides = []
        if kind[j] in (JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_UNIVERSAL):
            sides = [(LIMIT_LOWER, 0), (LIMIT_UPPER, 0)]
        if kind[j] == JOINT_UNIVERSAL:
            sides += [(LIMIT2_LOWER, 1), (LIMIT2_UPPER, 1)]
        for which, k in sides:
            if abs(bounds[which][j]) < NO_LIMIT:
                rows.append((j, which, qs[j] + k, ds[j] + k, 1))
        if kind[j] == JOINT_BALL and bounds[LIMIT_UPPER][j] < 3.14159:
            rows.append((j, LIMIT_CONE, qs[j], ds[j], 3))
    return np.asarray(rows, dtype=np.int32).reshape(-1, 5)


class ContactSolve:
    """The buffers of the contact solve for one model (its sizes are the model's: slots for
    every ground point and pair point, then one per joint limit; ``max_contacts`` contacts
    and every limit, of 4 rows each) and the bodies' and dofs' inverse weights (MuJoCo's
    ``body_invweight0``, ``dof_invweight0``) taken at the first step's configuration.

    Example::

        solve = ContactSolve(model, max_contacts=64)
        qdd = solve.qdd(model, state_in, state_out, topo, S_dof, L, M, a0, dt, params)
    """

    def __init__(self, model: Model, max_contacts: int):
        pairs = collision_pairs(model)
        self.pairs = pairs
        self.ground_slots = model.shape_count * MAX_PLANE_POINTS if model.ground else 0
        self.contact_slots = self.ground_slots + pairs.shape[0] * MAX_SHAPE_POINTS
        limits = _limit_slots(model)
        self.limit_count = limits.shape[0]
        self.slots = self.contact_slots + self.limit_count
        self.max_contacts = max(1, min(int(max_contacts), self.contact_slots))
        self.max_rows = (self.max_contacts + self.limit_count) * ROWS_PER_CONTACT
        dev, real = model.device, model.dtype

        def zeros(n, dtype=real):
            return A.zeros(max(n, 1), dtype=dtype, device=dev)

        self.iterations = zeros(1, T.int32)
        # the most contacts active at once since the last check (written on the device,
        # read on the host: every step on the CPU, every CHECK_EVERY steps elsewhere)
        self.needed = zeros(1, T.int32)
        self._needed_host = self.needed.numpy() if str(dev).startswith("cpu") else None  # a view on the CPU
        self.steps = 0
        self.reused = None
        self.dof_body = A.array(_dof_body(model), dtype=T.int32, device=dev)
        self.invweight = self.dof_invweight = None

        def int_array(x):
            return A.array(np.ascontiguousarray(x, dtype=np.int32).reshape(-1), dtype=T.int32, device=dev)

        # the exact solve's scratch (kernels/contact_active_set.py): two matrices of its rows squared
        n = min(self.max_rows, ACTIVE_SET_ROWS)
        self.exact = SimpleNamespace(H=zeros(n * n), L=zeros(n * n), f=zeros(n), y=zeros(n), on=zeros(n, T.int32),
                                     rows=zeros(2 * n, T.int32), solved=zeros(1, T.int32))
        for a in [*vars(self.exact).values(), self.iterations, self.needed]:
            A.mark_scratch(a)
        self.elliptic = None     # the elliptic cone's backward scratch, made when first needed
        self.limit_joint, self.limit_which, self.limit_coord = (int_array(limits[:, k]) for k in range(3))
        # per slot: its first dof and dof count (-1, 0: a contact)
        slot_dof = np.full((self.slots, 2), (-1, 0), dtype=np.int32)
        slot_dof[self.contact_slots:] = limits[:, 3:5]
        self.slot_dof = int_array(slot_dof)

    def _elliptic_scratch(self, model: Model) -> SimpleNamespace:
        """The elliptic cone's backward scratch (kernels/contact_elliptic.py), made the first
        time: per contact its directions at the solution and its reduced adjoint, and a sink
        for the friction gradient when the slots' ``mu`` carries none."""
        if self.elliptic is None:
            n, dev, real = self.max_contacts + self.limit_count, model.device, model.dtype
            self.elliptic = SimpleNamespace(basis=A.zeros(BASIS * n, dtype=real, device=dev),
                                            cols=A.zeros(2 * n, dtype=T.int32, device=dev),
                                            nu=A.zeros(3 * n, dtype=real, device=dev),
                                            rhs=A.zeros(3 * n, dtype=real, device=dev),
                                            mu_grad=A.zeros(max(self.slots, 1), dtype=real, device=dev))
        return self.elliptic

    def _invweight(self, model: Model, state: State, topo: dict, S_dof: A.Array, L: A.Array) -> None:
        nb, nd, real = model.body_count, model.joint_dof_count, model.dtype
        k = contact_solve_kernels(real)
        J = A.zeros(6 * nb * nd, dtype=real, device=model.device)
        X, Y = A.zeros_like(J), A.zeros_like(J)
        launch(k.body_jacobian, (6 * nb, nd), inputs=[state.body_q, model.bodies, S_dof, self.dof_body, nb, nd],
               outputs=[J])
        count = A.array(np.array([nb], dtype=np.int32), dtype=T.int32, device=model.device)
        launch(k.minv_rows, 6 * nb,
               inputs=[count, 6, model.articulation_count, topo["dof_start"], topo["dof_count"], topo["entry_start"], nd, L, J], outputs=[Y, X])
        self.invweight = A.zeros(2 * nb, dtype=real, device=model.device)
        launch(k.body_invweight, nb, inputs=[nd, J, X], outputs=[self.invweight])
        # the diagonal of M^-1 (rows of the identity through the factor), a ball joint's three
        # entries their mean: MuJoCo's dof_invweight0
        I = A.array(np.eye(nd).reshape(-1), dtype=real, device=model.device)
        X, Y = A.zeros_like(I), A.zeros_like(I)
        count = A.array(np.array([nd], dtype=np.int32), dtype=T.int32, device=model.device)
        launch(k.minv_rows, nd,
               inputs=[count, 1, model.articulation_count, topo["dof_start"], topo["dof_count"], topo["entry_start"], nd, L, I], outputs=[Y, X])
        diag = X.numpy().reshape(nd, nd).diagonal().copy()
        kind, ds = model.joints.kind.numpy(), model.joint_qd_start.numpy()
        for j in np.flatnonzero(kind == JOINT_BALL):
            diag[ds[j]:ds[j] + 3] = diag[ds[j]:ds[j] + 3].mean()
        self.dof_invweight = A.array(diag, dtype=real, device=model.device)

    def after_step(self, device: str) -> None:
        """The host's look after each step, replayed or not (the step itself reads nothing on
        the host, so it can replay): :meth:`check_capacity` every step on the CPU, every
        ``CHECK_EVERY`` steps elsewhere.

        Example::

            solve.after_step(model.device)
        """
        self.steps += 1
        if self._needed_host is not None:
            if self._needed_host[0] > self.max_contacts:
                self.check_capacity()
        elif self.steps % CHECK_EVERY == 0:
            self.check_capacity()

    def check_capacity(self) -> None:
        """Raise if a step since the last check had more active contacts than
        ``max_contacts`` (the solve dropped the rest: bodies would sink into each other).

        Example::

            solve.check_capacity()
        """
        needed = int(self.needed.numpy()[0])
        if needed > self.max_contacts:
            self.needed.zero_()
            raise RuntimeError(f"Featherstone(max_contacts={self.max_contacts}): {needed} contacts were active at "
                               f"once, so {needed - self.max_contacts} were dropped from the contact solve (their "
                               f"bodies would sink through the ground or each other); make the integrator with "
                               f"Featherstone(contact='constraint', max_contacts={needed}) or more")

    def _step_arrays(self, model: Model, recording: bool) -> SimpleNamespace:
        """The arrays one step writes: the model's, reused, or under a Tape new ones (the tape
        keeps them for the backward pass)."""
        if not recording and self.reused is not None:
            return self.reused
        dev, real, S, nd, mr = model.device, model.dtype, model.types, model.joint_dof_count, self.max_rows

        def zeros(n, dtype=real):
            return A.zeros(max(n, 1), dtype=dtype, device=dev)

        w = SimpleNamespace(slot_body=zeros(2 * self.slots, T.int32), slot_point=zeros(self.slots, S.vec3),
                            slot_normal=zeros(self.slots, S.vec3), slot_tangent=zeros(self.slots, S.vec3),
                            slot_dist=zeros(self.slots),
                            slot_mu=zeros(self.slots), slot_condim=zeros(self.slots, T.int32),
                            slot_solref=zeros(self.slots, S.vec2), slot_solimp=zeros(self.slots, S.vec5),
                            slot_margin=zeros(self.slots), slot_active=zeros(self.slots, T.int32),
                            contact_slot=zeros(self.max_contacts + self.limit_count, T.int32),
                            count=zeros(1, T.int32),
                            J=zeros(mr * nd), Y=zeros(mr * nd), X=zeros(mr * nd),
                            B=zeros(mr // ROWS_PER_CONTACT * 3 * nd), b=zeros(mr), R=zeros(mr),
                            f=zeros(mr), yf=zeros(nd), out=zeros(nd))
        if not recording:
            self.reused = w
            for a in vars(w).values():
                A.mark_scratch(a)
        return w

    def warm_start(self, state: State) -> A.Array:
        """``state.contact_force``: the force of every row of every slot at the step that
        wrote ``state`` (the next step's first guess), created as zeros the first time."""
        n = max(self.slots * ROWS_PER_CONTACT, 1)
        f = state.contact_force
        if f is None or f.size != n:
            f = state.contact_force = A.zeros(n, dtype=state.model.dtype, device=state.model.device)
        return f

    def qdd(self, model: Model, state: State, state_out: State, topo: dict, S_dof: A.Array, L: A.Array,
            M: A.Array, a0: A.Array, dt: float, params: dict, contacts: bool = True) -> A.Array:
        """The constrained acceleration ``a0 + M^-1 J^T f`` at ``state`` (bodies placed), of the
        contacts (unless ``contacts`` is False) and the joint limits; under
        a Tape, recorded with its gradient (implicit differentiation at the solution). The
        solve starts from ``state.contact_force`` and leaves its forces in
        ``state_out.contact_force`` (outside any Tape: the warm start changes where the
        iterations start, not the solution they converge to)."""
        real, nb, nd = model.dtype, model.body_count, model.joint_dof_count
        kr, k = contact_row_kernels(real), contact_solve_kernels(real)
        tapes = active_tapes()
        w = self._step_arrays(model, bool(tapes))
        if self.invweight is None:
            with paused_tapes():
                self._invweight(model, state, topo, S_dof, L)
        mr = self.max_rows
        slots = [w.slot_body, w.slot_point, w.slot_normal, w.slot_dist, w.slot_mu, w.slot_condim, w.slot_solref,
                 w.slot_solimp, w.slot_margin, w.slot_active]
        # recorded: the rows' geometry, their Jacobians and reference terms (generated adjoints)
        if self.ground_slots and contacts:
            launch(kr.ground_rows, model.shape_count,
                   inputs=[state.body_q, model.shapes, model.contact], outputs=slots + [w.slot_tangent])
        if self.pairs.shape[0] and contacts:
            launch(kr.pair_rows, (self.pairs.shape[0], MAX_SHAPE_POINTS),
                   inputs=[self.pairs, state.body_q, model.shapes, model.contact, self.ground_slots], outputs=slots)
        if self.limit_count:
            launch(limit_row_kernels(real).limit_rows, self.limit_count,
                   inputs=[self.limit_joint, self.limit_which, self.limit_coord, self.contact_slots, model.joints,
                           state.joint_q],
                   outputs=[w.slot_body, w.slot_normal, w.slot_dist, w.slot_condim, w.slot_solref, w.slot_solimp,
                            w.slot_margin, w.slot_active])
        with paused_tapes():
            warm = self.warm_start(state_out)
            # in the same launch, the warm start: state_in's forces of the active slots
            launch(k.compact, 1, inputs=[w.slot_active, self.contact_slots, self.slots, self.max_contacts,
                                         int(contacts), self.warm_start(state)],
                   outputs=[w.contact_slot, w.count, self.needed, warm])
        launch(k.rows, self.max_contacts + self.limit_count,
               inputs=[w.count, w.contact_slot, w.slot_body, w.slot_point, w.slot_normal, w.slot_tangent, w.slot_dist,
                       w.slot_mu, w.slot_condim, w.slot_solref, w.slot_solimp, w.slot_margin, self.slot_dof,
                       self.invweight, self.dof_invweight, params["elliptic"], float(params["impratio"]), float(dt),
                       S_dof, self.dof_body, nb, nd, state.joint_qd, a0],
               outputs=[w.J, w.b, w.R])
        minv_inputs = [w.count, ROWS_PER_CONTACT, model.articulation_count, topo["dof_start"], topo["dof_count"],
                       topo["entry_start"], nd, L]
        with paused_tapes():
            # the solve needs Y = L^-1 J^T alone; the backward pass reads X = L^-T Y = M^-1 J^T too
            launch(k.half_rows, self.max_contacts + self.limit_count,
                   inputs=[w.count, model.articulation_count, topo["dof_start"], topo["dof_count"],
                           topo["entry_start"], nd, L, w.J], outputs=[w.Y])
            if tapes:
                launch(k.back_rows, mr, inputs=minv_inputs + [w.Y], outputs=[w.X])
        if tapes and (w.J.requires_grad or M.requires_grad):
            w.X.requires_grad = True

            def minv_backward() -> None:
                with paused_tapes():
                    Z, Y = A.zeros_like(w.X), A.zeros_like(w.X)
                    launch(k.minv_rows, mr, inputs=minv_inputs + [w.X.grad],
                           outputs=[Y, Z])
                    if w.J.requires_grad:
                        launch(k.minv_grads, (mr, nd), inputs=[w.count, nd, Z], outputs=[w.J.grad])
                    if M.requires_grad:
                        launch(k.minv_mass_grad, topo["entry_count"],
                               inputs=[w.count, nd, topo["entry_row"], topo["entry_col"], Z, w.X],
                               outputs=[M.grad])
                w.X.grad.zero_()

            for tape in tapes:
                tape.record_func(minv_backward, arrays=[w.J, M, w.X])
        iterations, tol = params["iterations"], float(params["tolerance"])
        with paused_tapes():
            # the exact solve of the pyramidal dual puts its forces where Gauss-Seidel starts
            # (which then only reads them); where it does not apply, it leaves them
            e = self.exact
            # both on Y, where the Delassus matrix is Y Y^T (the exact solve builds it from the
            # contacts' basis rows, in B); then qdd = a0 + L^-T (Y^T f)
            launch(active_set_kernels(real).active_set, 1,
                   inputs=[w.count, w.contact_slot, w.slot_condim, params["elliptic"], nd, tol, w.Y, w.b, w.R],
                   outputs=[warm, e.H, e.L, e.f, e.y, e.on, e.rows, e.solved, w.B])
            launch(k.pgs, 1, inputs=[w.count, w.contact_slot, w.slot_condim, w.slot_mu, params["elliptic"], nd,
                                     iterations, tol, ROUNDING * float(np.finfo(real.__name__).eps), w.Y, w.Y, w.b,
                                     w.R, e.solved],
                   outputs=[warm, w.f, w.yf, self.iterations])
            launch(k.constrained_qdd, model.articulation_count,
                   inputs=[topo["dof_start"], topo["dof_count"], topo["entry_start"], L, a0, w.yf], outputs=[w.out])
        elliptic = params["elliptic"] == 1
        # with the elliptic cone mu bounds the forces itself (with the pyramid it reaches
        # them through the edges' J and R)
        inputs = [w.J, w.X, w.b, w.R, a0] + ([w.slot_mu] if elliptic else [])
        if tapes and any(x.requires_grad for x in inputs):
            w.out.requires_grad = True

            def pgs_backward() -> None:
                with paused_tapes():
                    mu, t, jt_mu = A.zeros_like(w.f), A.zeros_like(w.out), A.zeros_like(w.out)
                    dense = int(w.count.numpy()[0]) * ROWS_PER_CONTACT <= ACTIVE_SET_ROWS
                    e = self.exact
                    if elliptic:
                        c = self._elliptic_scratch(model)
                        mu_grad = w.slot_mu.grad if w.slot_mu.requires_grad else c.mu_grad
                        launch(elliptic_kernels(real).elliptic_adjoint, 1,
                               inputs=[w.count, w.contact_slot, w.slot_condim, w.slot_mu, nd, int(dense), iterations,
                                       tol, ON_SURFACE[real.__name__], w.J, w.X, w.b, w.R, w.f, w.out.grad, w.out, a0],
                               outputs=[e.H, e.L, e.y, e.on, e.rows, c.basis, c.cols, c.nu, c.rhs, mu, t, jt_mu,
                                        mu_grad])
                    elif dense:
                        launch(active_set_kernels(real).active_set_adjoint, 1,
                               inputs=[w.count, nd, w.J, w.X, w.R, w.f, w.out.grad],
                               outputs=[e.H, e.L, e.f, e.y, e.on, e.rows, mu, t, jt_mu])
                    else:
                        launch(k.pgs_adjoint, 1, inputs=[w.count, nd, iterations, tol, w.J, w.X, w.R, w.f, w.out.grad],
                               outputs=[mu, t, jt_mu])
                    grads = [x.grad if x.requires_grad else A.zeros_like(x) for x in (w.X, w.J, w.b, w.R)]
                    launch(k.pgs_grads, (mr, nd), inputs=[w.count, nd, w.f, mu, w.out.grad, jt_mu, w.out, a0],
                           outputs=grads)
                    if a0.requires_grad:
                        launch(featherstone_kernels(real).add_to, nd, inputs=[w.out.grad, a0.grad])
                w.out.grad.zero_()

            for tape in tapes:
                tape.record_func(pgs_backward, arrays=inputs + [w.out])
        return w.out
