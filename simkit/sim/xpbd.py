"""XPBD: extended position-based dynamics (Macklin, Mueller, Chentanez 2016), differentiable.

One step predicts ``v* = v + dt g`` and ``x* = x + dt v*``, runs ``iterations`` Jacobi
iterations of compliant constraint projection that move ``x`` by corrections ``c`` (summed
over the iterations), and sets ``v = v* + c / dt``: in exact arithmetic that is
``(x - x_n) / dt``, but it never subtracts two nearby positions, so small steps keep gravity
in float32 (``(x - x_n) / dt`` loses ``dt g`` entirely at ``dt = 1e-4`` s, 10 m from the
origin). Constraints:

- springs: distance ``|x_i - x_j| - rest_length (1 + activation)``, compliance ``1 / ke``,
  damping ``kd`` (N s/m, as for the force-based springs);
- triangles: corotated membrane (energy ``A (mu |F - R|^2 + lambda / 2 (J - 1)^2)``, ``F`` the
  3x2 deformation gradient, ``R`` its polar rotation, ``J`` the area ratio): a shape constraint
  ``F - R`` with compliance ``1 / (2 k_mu A)`` and an area constraint ``J - 1`` with compliance
  ``1 / (k_lambda A)``; at small strain this is linear elasticity with Lame parameters
  ``(k_mu, k_lambda)``, and it resists compression for any ratio of the two;
- bending hinges: dihedral angle ``theta - rest_angle``, compliance ``1 / ke`` (energy
  ``ke / 2 (theta - rest)^2``), damping ``kd``;
- tetrahedra: the same corotated pair with ``det F`` and the rest volume ``V``;
- contact with the ground and the static shapes: a particle of radius ``r`` is pushed out to
  signed distance ``r``, and its tangential motion over the step is cancelled up to
  ``mu`` times that push (Coulomb friction at the position level, Macklin et al. 2014).
  Contact is inelastic; the penalty parameters ``ke``, ``kd``, ``kf`` are not used. A particle
  meets the static shapes of its own world and of world -1 (see ``ModelBuilder.add_builder``).

``k_damp`` of triangles and tetrahedra is a stiffness-proportional (Rayleigh) damping time in
seconds: each constraint is damped by ``k_damp`` times its stiffness.

Rigid bodies (after Mueller et al. 2020, "Detailed Rigid Body Simulation with Extended
Position Based Dynamics"; kernels in :mod:`simkit.kernels.xpbd_bodies` and
:mod:`simkit.kernels.xpbd_body_contact`) are corrected at the position level too:

- prediction: the center of mass moves with ``v + dt (g + F / m)``; the rotation is implicit
  in the angular momentum (``L = I_w w + dt tau``, turned by the ``w`` that has momentum ``L``
  at the new orientation), so a torque-free body conserves ``L``; ``control.joint_act`` is the
  torque (revolute) or force (prismatic) ``F``, ``tau`` of a joint, with its reaction;
- joints are rigid constraints (compliance 0): the joint frames' origins coincide (a
  prismatic joint's only off its axis), a revolute joint keeps the axes aligned, a universal
  joint its two axes perpendicular, fixed and prismatic joints lock the relative rotation, a
  free joint does nothing; limits are rigid one-sided constraints on the
  joint coordinate (a joint that starts outside its range is projected onto the nearest
  bound, and that projection, like every correction, becomes velocity: violation / dt, which
  swings the joint into its range and grows as dt shrinks; start inside the limits, see
  docs/articulations.md); a drive is a compliant constraint towards ``control.joint_target``
  (compliance ``1 / target_ke``) with damping ``target_kd`` on its rate relative to
  ``control.joint_target_vel`` (XPBD's damping term ``target_kd dt (dq - dt v)``, ``dq`` the
  coordinate's change over the step, ``v`` the target rate: with ``target_ke = 0`` each step
  takes the rate ``qd`` to ``(qd + dt kd v / I) / (1 + dt kd / I)``, ``I`` the joint's
  mass-split effective inertia, backward Euler of ``I qd' = kd (v - qd)``). ``linear_ke/kd``, ``angular_ke/kd``
  and ``limit_ke/kd`` (the penalty gains of the semi-implicit integrator) are not used;
- contacts of body shapes with the ground and with each other (the pairs of
  :func:`~simkit.kernels.shapes.collision_pairs`) are rigid and one-sided, with Coulomb friction
  at the position level (static within ``mu`` times the normal multiplier, kinetic on it;
  the shape's ``mu``, a pair's mean) and torsional friction over the contact patch; each
  iteration corrects all normals, then the friction of every patch at the new poses. Contact
  is inelastic: there is no restitution, and the shapes' ``ke``, ``kd``, ``kf`` are not used;
- a particle touching a body's shape is pushed out and the body receives the reaction (two
  way), with friction ``Contact.mu``;
- cloth triangles against the features of the shapes (static or on bodies; edges of boxes, a
  sphere's center, a capsule's axis: :mod:`simkit.kernels.cloth_shape_contact`) are rigid,
  one-sided and frictionless, both ways;
- velocities: ``v = v* + c_x / dt`` of the center of mass and ``w = w* + c_theta / dt``,
  with ``c_x``, ``c_theta`` the summed displacements and rotation vectors of the corrections
  (to first order in them the difference of the poses, without subtracting two nearby poses).
  ``state.body_f`` is neither read nor written.

Precision: the velocities of free flight in float32 agree with float64 to 1e-4 relative for
``dt`` from 1e-4 to 1e-2 s at any distance from the origin. Positions are float32 numbers,
though: 1 km from the origin they are 6e-5 m apart, and a step moves a point by a whole
number of those (at ``dt = 1e-4`` s and 1.5 m/s, 0.12 mm instead of 0.15 mm), so the position
is good to about 1e-3 of its distance from the origin, not to 1e-3 of the distance travelled.
Use float64, or keep the scene near the origin, when that matters. Particle friction against
the ground and static shapes measures the slip as ``dt v* + c``; the damping of springs and
elements, body friction and joint drives measure motion over the step as a difference of
positions.

Bodies use the same Jacobi iterations with mass splitting: a body touched this step by
``n`` constraints (joints, contact patches, particles) counts ``n`` times its inverse mass in
each of them. One constraint on a body converges in one iteration (a dropped box comes to
rest exactly flat, a box on a slope sticks); a body held by several (a stack, a particle
resting off-center on a box) settles to a slow creep of about 1e-4 m/s at ``dt = 2e-3`` s and
4 iterations (the Jacobi corrections of its constraints do not fully agree within a step).

Design choices: Lagrange multipliers start at zero each step (XPBD's own choice) and are
carried across the iterations of the step. Iterations are Jacobi with mass splitting: a
particle touched by ``n`` constraints counts ``n`` times its inverse mass in each of them,
so their summed corrections cannot overshoot (the iteration converges for any stiffness;
finer meshes need more iterations to get as stiff). The shape constraint of an element has
a matrix multiplier, which keeps it smooth at rest, so gradients are well defined there.
Every iteration reads one positions buffer and writes another, so the whole step is
differentiable on a Tape; those buffers live on ``state_out`` (allocated on first use), so
stepping between the same states allocates nothing, and a rollout with one State per step
keeps every iteration alive for backward.

Example::

    integrator = XPBD(iterations=4)
    integrator.step(model, state_in, state_out, control, dt=1.0 / 600.0)
"""

from __future__ import annotations

import numpy as np

from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from ..core.step_cache import on_replay
from ..kernels.shapes import MAX_SHAPE_POINTS
from ..kernels.xpbd import xpbd_kernels
from ..kernels.xpbd_bodies import xpbd_body_kernels
from ..kernels.xpbd_body_contact import xpbd_body_contact_kernels
from ..kernels.contact_params import shapes_touching_ground
from ..kernels.structs import JOINT_FREE
from ..kernels.shapes import collision_pairs, particle_shape_rows
from .cloth_shapes import cloth_shape_kernel_modules, count_cloth_shape_body_contacts, solve_cloth_shapes
from .cloth_contact import (cloth_contact_kernel_modules, find_cloth_pairs, project_cloth_contacts,
                            self_contact_active, warn_cloth_overflow)
from .integrators import check_step, compile_step_ahead, warn_ignored_joint_features
from .model import Control, Model, State
from .replay import Replayed, replayed_step
from .xpbd_meshes import count_mesh_contacts, mesh_kernel_modules, mesh_scratch, solve_mesh_contacts


def _mass_split(model: Model) -> A.Array:
    """Number of constraints touching each particle (at least 1), cached on the model: the
    topology of a finalized model never changes."""
    split = model.__dict__.get("_xpbd_mass_split")
    if split is None:
        n = model.particle_count
        count = np.zeros(n)
        for indices, rows in ((model.springs.indices, model.spring_count), (model.triangles.indices, model.tri_count),
                              (model.edges.indices, model.edge_count), (model.tets.indices, model.tet_count)):
            if rows:
                count += np.bincount(indices.numpy().ravel(), minlength=n)
        split = A.array(np.maximum(count, 1.0).astype(model.dtype.np_dtype), dtype=model.dtype, device=model.device)
        model._xpbd_mass_split = split
    return split


def _patches(model: Model) -> A.Array:
    """The contact patches of the bodies (int32, ``(P, 3)``), cached on the model: each body
    shape against the ground (``(s, -1, 0)``) when there is one, then each candidate pair of
    shapes once, ``(a, b, 1)`` where the points of both are tested against the other and
    ``(a, b, 0)`` where only those of ``a`` are (a sphere)."""
    patches = model.__dict__.get("_xpbd_patches")
    if patches is None:
        rows = []
        if model.ground and model.shape_count:
            rows += [(s, -1, 0) for s in np.flatnonzero((model.shapes.body.numpy() >= 0)
                                                        & shapes_touching_ground(model))]
        pairs = {(int(a), int(b)) for a, b in collision_pairs(model).numpy().reshape(-1, 2)}
        for a, b in sorted(pairs):
            if (b, a) not in pairs:
                rows.append((a, b, 0))
            elif a < b:
                rows.append((a, b, 1))
        patches = A.array(np.asarray(rows, dtype=np.int32).reshape(-1, 3), dtype=T.int32, device=model.device)
        model._xpbd_patches = patches
    return patches


def _particles_meet_bodies(model: Model) -> bool:
    """Whether some particle may touch a shape on a body (of its world) this step."""
    return bool(model.contacts_enabled and model.particle_count and model.shape_count
                and particle_shape_rows(model, "body")[1])


def _active_patches(model: Model) -> A.Array:
    """The contact patches of this step: :func:`_patches`, none while ``model.contacts_enabled``
    is False."""
    if model.contacts_enabled:
        return _patches(model)
    none = model.__dict__.get("_xpbd_no_patches")
    if none is None:
        none = model._xpbd_no_patches = A.array(np.zeros((0, 3), dtype=np.int32), dtype=T.int32, device=model.device)
    return none


def _particle_contact_inputs(model: Model) -> tuple:
    """The ``Contact`` struct and the rows of static shapes the particles' contact reads: the
    model's, or, while ``model.contacts_enabled`` is False, a copy without the ground and rows
    without shapes (cached)."""
    if not model.particle_count or model.contacts_enabled:
        return model.contact, (particle_shape_rows(model, "static")[0] if model.particle_count else None)
    off = model.__dict__.get("_xpbd_contacts_off")
    if off is None or off[0] is not model.contact:
        fields = {name: getattr(model.contact, name) for name in type(model.contact)._sk_fields}
        rows = model.types.ParticleShapes(
            world=model.particle_world,
            start=A.array(np.zeros(model.world_count + 2, dtype=np.int32), dtype=T.int32, device=model.device),
            shape=A.array(np.zeros(1, dtype=np.int32), dtype=T.int32, device=model.device))
        off = model._xpbd_contacts_off = (model.contact, type(model.contact)(**dict(fields, ground=0)), rows)
    return off[1], off[2]


def _joint_split(model: Model) -> A.Array:
    """Number of joints attached to each body (int32), cached on the model; free joints,
    which constrain nothing, do not count."""
    split = model.__dict__.get("_xpbd_joint_split")
    if split is None:
        count = np.zeros(model.body_count, dtype=np.int32)
        if model.joint_count:
            held = model.joints.kind.numpy() != JOINT_FREE
            for bodies in (model.joints.parent.numpy()[held], model.joints.child.numpy()[held]):
                count += np.bincount(bodies[bodies >= 0], minlength=model.body_count).astype(np.int32)
        split = A.array(count, dtype=T.int32, device=model.device)
        model._xpbd_joint_split = split
    return split


def xpbd_kernel_modules(model: Model) -> list:
    """The kernels, one per module (or a module's namespace of them), that an :class:`XPBD`
    step of ``model`` launches now.

    Example::

        sk.compile_ahead(*xpbd_kernel_modules(model))
    """
    real, n, nb = model.dtype, model.particle_count, model.body_count
    out = ([xpbd_kernels(real)] if n else []) + ([xpbd_body_kernels(real)] if nb else [])
    if nb and (len(_active_patches(model)) or _particles_meet_bodies(model)):
        out.append(xpbd_body_contact_kernels(real))
    return out + cloth_contact_kernel_modules(model) + cloth_shape_kernel_modules(model) + mesh_kernel_modules(model)


class _Scratch:
    """The per-iteration buffers of one output state: positions (body poses) after each
    iteration but the last (which is ``state_out.particle_q``, ``state_out.body_q``), position
    corrections, and the Lagrange multipliers of each constraint family before and after each
    iteration; for bodies also the poses between the normal and friction corrections of an
    iteration, the joint actuation wrenches and the per-body contact count of the step."""

    def __init__(self, model: Model, iterations: int):
        real, device, n = model.dtype, model.device, model.particle_count
        mat32, mat33 = T.matrix((3, 2), real), model.types.mat33

        def vectors():
            return A.zeros(n, dtype=model.types.vec3, device=device)

        def multipliers(count, dtype):
            return [A.zeros(count, dtype=dtype, device=device) for _ in range(iterations + 1)]

        self.iterations = iterations
        self.positions = [vectors() for _ in range(iterations)]
        self.deltas = [vectors() for _ in range(iterations)]
        # predicted velocities and the corrections summed since the prediction (corrections[0]
        # stays zero): the step's velocity is their sum over dt
        self.velocities = vectors()
        self.corrections = [vectors() for _ in range(iterations + 1)]
        self.lam_springs = multipliers(model.spring_count, real)
        self.lam_tri_shape = multipliers(model.tri_count, mat32)
        self.lam_tri_area = multipliers(model.tri_count, real)
        self.lam_edges = multipliers(model.edge_count, real)
        self.lam_tet_shape = multipliers(model.tet_count, mat33)
        self.lam_tet_volume = multipliers(model.tet_count, real)
        nb, vec3 = model.body_count, model.types.vec3
        patches = len(_patches(model)) if nb else 0
        self.body_poses = [A.zeros(nb, dtype=model.types.transform, device=device) for _ in range(iterations)]
        self.body_dx = [A.zeros(nb, dtype=vec3, device=device) for _ in range(iterations)]
        self.body_dtheta = [A.zeros(nb, dtype=vec3, device=device) for _ in range(iterations)]
        spatial = model.types.spatial
        self.body_velocities = A.zeros(nb, dtype=spatial, device=device)
        self.body_corrections = [A.zeros(nb, dtype=spatial, device=device) for _ in range(iterations + 1)]
        # friction works on the poses after the normal corrections of the iteration
        friction = iterations if patches else 0
        self.body_mid = [A.zeros(nb, dtype=model.types.transform, device=device) for _ in range(friction)]
        self.friction_dx = [A.zeros(nb, dtype=vec3, device=device) for _ in range(friction)]
        self.friction_dtheta = [A.zeros(nb, dtype=vec3, device=device) for _ in range(friction)]
        self.body_corrections_mid = [A.zeros(nb, dtype=spatial, device=device) for _ in range(friction)]
        self.body_act = A.zeros(nb, dtype=model.types.spatial, device=device)
        self.contact_split = A.zeros(nb, dtype=T.int32, device=device)
        self.lam_drive = multipliers(model.joint_count, real)
        self.lam_contact_n = multipliers((patches, 2 * MAX_SHAPE_POINTS), real)
        self.lam_contact_t = multipliers(patches, vec3)
        self.lam_contact_twist = multipliers(patches, real)
        coupled = (n, particle_shape_rows(model, "body")[1]) if _particles_meet_bodies(model) else (0, 0)
        self.lam_particle_n = multipliers(coupled, real)
        self.lam_particle_t = multipliers(coupled, vec3)
        self.used = False

    def reset(self) -> None:
        """Zero the accumulators before a step that reuses these buffers (the multipliers of
        iteration 0 are never written, every other buffer is overwritten whole)."""
        if self.used:
            for d in (self.deltas + self.body_dx + self.body_dtheta + self.friction_dx + self.friction_dtheta
                      + [self.body_act, self.contact_split]):
                d.zero_()
        self.used = True


def _scratch(model: Model, state: State, iterations: int) -> _Scratch:
    s = state.__dict__.get("_xpbd_scratch")
    if s is None or s.iterations != iterations:
        s = state._xpbd_scratch = _Scratch(model, iterations)
    s.reset()
    return s


class XPBD(Replayed):
    """Extended position-based dynamics with ``iterations`` Jacobi constraint iterations per step.

    Unconditionally stable for any stiffness: a stiff spring (large ``ke``) becomes a nearly
    rigid distance constraint instead of requiring a tiny ``dt``. More iterations or smaller
    steps make stiff materials converge closer to their stiffness; too few make them softer.
    Rigid bodies get rigid joints and contacts, inelastic, with position-level friction (see
    the module documentation).

    Example::

        integrator = XPBD(iterations=4)
        states = sk.sim.simulate(model, integrator, model.state(), steps=600, dt=1.0 / 600.0)
    """

    def __init__(self, iterations: int = 4):
        if not isinstance(iterations, (int, np.integer)) or isinstance(iterations, bool) or iterations < 1:
            raise ValueError(f"XPBD: iterations must be an int >= 1, got {iterations!r}")
        self.iterations = int(iterations)

    def __repr__(self) -> str:
        return f"XPBD(iterations={self.iterations})"

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        """Advance ``state_in`` by ``dt`` into ``state_out`` (``state_in`` is only read).
        Called again with the same arguments, it replays its recorded launches
        (:mod:`simkit.sim.replay`).

        Example::

            XPBD().step(model, s0, s1, None, 1.0 / 600.0)
        """
        replayed_step(self, self._step, model, state_in, state_out, control, dt)
        if self_contact_active(model):
            on_replay(warn_cloth_overflow, model, state_out)

    def _step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        control = check_step(model, state_in, state_out, control, dt)
        warn_ignored_joint_features(model, "XPBD")
        if model.particle_contact:
            raise NotImplementedError("XPBD does not handle particle-particle contact (particle_contact=True); "
                                      "use SemiImplicitEuler for such models")
        compile_step_ahead(model, "XPBD", xpbd_kernel_modules)
        k = xpbd_kernels(model.dtype)
        s = _scratch(model, state_out, self.iterations)
        n, nb = model.particle_count, model.body_count
        q_prev = state_in.particle_q
        particles = model.particles
        contact, statics = _particle_contact_inputs(model)
        if n:
            split = _mass_split(model)
            launch(k.predict, n, inputs=[q_prev, state_in.particle_qd, particles, model.gravity, dt, s.positions[0],
                                         s.velocities])
        if nb:
            _predict_bodies(model, state_in, control, s, dt)
            count_cloth_shape_body_contacts(model, s.positions[0], s.body_poses[0], s.contact_split)
        # cloth self-contact pairs at the predicted positions, kept on state_out with the scratch
        cloth = find_cloth_pairs(model, state_out, s.positions[0], q_prev) if n and self_contact_active(model) \
            else None
        meshes = mesh_scratch(model, state_out, self.iterations) if model.contacts_enabled else None
        count_mesh_contacts(model, s, meshes)
        for it in range(self.iterations):
            q = s.positions[it]
            q_out = s.positions[it + 1] if it + 1 < self.iterations else state_out.particle_q
            delta = s.deltas[it]
            if model.spring_count:
                launch(k.solve_springs, model.spring_count,
                       inputs=[q, q_prev, model.springs, control.spring_activation, particles, split,
                               s.lam_springs[it], dt, delta, s.lam_springs[it + 1]])
            if model.tri_count:
                launch(k.solve_triangles, model.tri_count,
                       inputs=[q, q_prev, model.triangles, particles, split, s.lam_tri_shape[it],
                               s.lam_tri_area[it], dt, delta, s.lam_tri_shape[it + 1], s.lam_tri_area[it + 1]])
            if model.edge_count:
                launch(k.solve_bending, model.edge_count,
                       inputs=[q, q_prev, model.edges, particles, split, s.lam_edges[it], dt, delta,
                               s.lam_edges[it + 1]])
            if model.tet_count:
                launch(k.solve_tets, model.tet_count,
                       inputs=[q, q_prev, model.tets, particles, split, s.lam_tet_shape[it],
                               s.lam_tet_volume[it], dt, delta, s.lam_tet_shape[it + 1], s.lam_tet_volume[it + 1]])
            if nb:
                _solve_bodies(model, state_in, control, s, it, dt)
            solve_mesh_contacts(model, state_in, s, meshes, it, _mass_split(model) if n else None,
                                _joint_split(model))
            if n:
                solve_cloth_shapes(model, state_out, it, q, s.body_poses[it], _mass_split(model), _joint_split(model),
                                   s.contact_split, delta, s.body_dx[it], s.body_dtheta[it])
            if n:
                # with cloth self-contact the pairs are projected last, from buffers of their own
                mid_q, mid_corr = cloth.iteration(model, it)[:2] if cloth is not None \
                    else (q_out, s.corrections[it + 1])
                launch(k.apply_corrections, n,
                       inputs=[q, delta, s.corrections[it], s.velocities, dt, particles, contact, model.shapes,
                               statics, mid_q, mid_corr])
                if cloth is not None:
                    project_cloth_contacts(model, cloth, it, mid_q, mid_corr, q_prev, q_out, s.corrections[it + 1])
            if nb:
                _apply_bodies(model, state_in, s, it, s.body_poses[it + 1] if it + 1 < self.iterations
                              else state_out.body_q)
        if n:
            launch(k.update_velocities, n, inputs=[s.velocities, s.corrections[-1], dt, state_out.particle_qd])
        if nb:
            launch(xpbd_body_kernels(model.dtype).update_body_velocities, nb,
                   inputs=[s.body_velocities, s.body_corrections[-1], dt, state_out.body_qd])


def _predict_bodies(model: Model, state_in: State, control: Control, s: _Scratch, dt: float) -> None:
    """Joint actuation, predicted body poses and the per-body contact count of the step."""
    kb, kc = xpbd_body_kernels(model.dtype), xpbd_body_contact_kernels(model.dtype)
    if model.joint_count:
        launch(kb.apply_joint_actuation, model.joint_count,
               inputs=[state_in.body_q, model.joints, control.joint_act, s.body_act])
    poses = s.body_poses[0]
    launch(kb.predict_bodies, model.body_count,
           inputs=[state_in.body_q, state_in.body_qd, s.body_act, model.bodies, model.gravity, dt, poses,
                   s.body_velocities])
    patches = _active_patches(model)
    if len(patches):
        launch(kc.count_contacts, len(patches), inputs=[poses, model.shapes, model.contact, patches, s.contact_split])
    if _particles_meet_bodies(model):
        rows, width = particle_shape_rows(model, "body")
        launch(kc.count_particle_contacts, (model.particle_count, width),
               inputs=[s.positions[0], model.particles, poses, model.shapes, rows, s.contact_split])


def _solve_bodies(model: Model, state_in: State, control: Control, s: _Scratch, it: int, dt: float) -> None:
    """The body constraints of iteration ``it``: joints, contacts with the ground, between
    shapes and with particles (which also correct the particles)."""
    kb, kc = xpbd_body_kernels(model.dtype), xpbd_body_contact_kernels(model.dtype)
    poses, prev = s.body_poses[it], state_in.body_q
    dx, dtheta = s.body_dx[it], s.body_dtheta[it]
    joint_split = _joint_split(model)
    if model.joint_count:
        launch(kb.solve_joints, model.joint_count,
               inputs=[poses, prev, model.joints, control.joint_target, control.joint_target_vel, model.bodies,
                       joint_split, s.contact_split,
                       s.lam_drive[it], dt, dx, dtheta, s.lam_drive[it + 1]])
    patches = _active_patches(model)
    if len(patches):
        launch(kc.solve_contact_normals, len(patches),
               inputs=[poses, model.shapes, model.contact, patches, model.bodies, joint_split, s.contact_split,
                       s.lam_contact_n[it], dx, dtheta, s.lam_contact_n[it + 1]])
    if _particles_meet_bodies(model):
        rows, width = particle_shape_rows(model, "body")
        launch(kc.solve_particle_contacts, (model.particle_count, width),
               inputs=[s.positions[it], state_in.particle_q, model.particles, _mass_split(model), poses, prev,
                       model.shapes, rows, model.contact, model.bodies, joint_split, s.contact_split,
                       s.lam_particle_n[it], s.lam_particle_t[it], s.deltas[it], dx, dtheta,
                       s.lam_particle_n[it + 1], s.lam_particle_t[it + 1]])


def _apply_bodies(model: Model, state_in: State, s: _Scratch, it: int, poses_out) -> None:
    """Apply the corrections of iteration ``it`` to the bodies, writing ``poses_out``: the
    summed joint, normal and particle corrections, then (where there are contact patches)
    the friction of the patches at those poses."""
    kb, kc = xpbd_body_kernels(model.dtype), xpbd_body_contact_kernels(model.dtype)
    patches = _active_patches(model)
    mid = s.body_mid[it] if len(patches) else poses_out
    corr_mid = s.body_corrections_mid[it] if len(patches) else s.body_corrections[it + 1]
    launch(kb.apply_body_corrections, model.body_count,
           inputs=[s.body_poses[it], s.body_dx[it], s.body_dtheta[it], s.body_corrections[it], model.bodies, mid,
                   corr_mid])
    if len(patches):
        launch(kc.solve_contact_friction, len(patches),
               inputs=[mid, state_in.body_q, model.shapes, model.contact, patches, model.bodies, _joint_split(model),
                       s.contact_split, s.lam_contact_n[it + 1], s.lam_contact_t[it], s.lam_contact_twist[it],
                       s.friction_dx[it], s.friction_dtheta[it], s.lam_contact_t[it + 1], s.lam_contact_twist[it + 1]])
        launch(kb.apply_body_corrections, model.body_count,
               inputs=[mid, s.friction_dx[it], s.friction_dtheta[it], corr_mid, model.bodies, poses_out,
                       s.body_corrections[it + 1]])
