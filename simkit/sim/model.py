"""Model, State and Control: what a simulation is made of, where it is, and what drives it.

A :class:`Model` holds everything that does not change during a step: topology,
rest shapes and material parameters, grouped in ``@sk.struct`` instances of
gradient-tracked arrays (``model.particles``, ``model.springs``,
``model.triangles``, ``model.edges``, ``model.tets``, ``model.contact``,
``model.bodies``, ``model.shapes``, ``model.joints``). A :class:`State` holds
positions, velocities and force accumulators of particles and bodies; a
:class:`Control` holds actuation inputs.

A model may hold many worlds (:meth:`~simkit.sim.ModelBuilder.add_builder`): copies of a
scene that share the model's arrays and launches but never touch each other.
``model.world_count`` counts them; ``model.particle_world``, ``model.body_world`` and
``model.shape_world`` give each particle, body and shape its world (-1: shared by all
worlds). The things of one world are contiguous in every array (:meth:`Model.world_range`),
and where every world holds as many of them, :meth:`State.world_view` (and
:meth:`Model.world_view`, :meth:`Control.world_view`) shows an array as
``(world_count, per_world, ...)``.

Example::

    model = builder.finalize(device="cpu", requires_grad=True)
    state = model.state()
    control = model.control()
    model.springs.ke.grad        # d(loss)/d(stiffness) after tape.backward
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import array as A
from ..core import mutation
from ..core import types as T
from ..core.launch import launch
from ..kernels.bodies import body_kernels
from ..kernels.body_contact import contact_slot_count
from ..kernels.broad_phase import pair_buffers
from ..kernels.particles import particle_kernels
from ..kernels.meshes import build_meshes
from ..kernels.structs import model_structs
from .cloth_contact import ClothContact
from .articulation import body_joints, coordinate_starts, initial_coordinates
from .contact_params import mask_int32, split_rows
from .builder_heightfield import heightfield_arrays
from .hull import hull_arrays

# The kinds of things a model holds, and the attribute that counts each.
WORLD_KINDS = {"particle": "particle_count", "spring": "spring_count", "triangle": "tri_count",
               "edge": "edge_count", "tet": "tet_count", "body": "body_count", "shape": "shape_count",
               "joint": "joint_count"}


def _watched_setattr(obj, name: str, value: Any) -> None:
    """Set an attribute; a public one (an array, a struct, gravity, a flag) may be baked into
    a recorded step (simkit.core.step_cache), which must then not replay. Private ones are
    the integrators' caches, set while stepping. Only an object a recording reached counts
    (:func:`simkit.core.step_cache.hold` marks it): a State made after every recording, such
    as a rollout's result, leaves the recordings alone."""
    object.__setattr__(obj, name, value)
    if name[0] != "_" and "_held" in obj.__dict__:
        mutation.count[0] += 1


class Model:
    """A finalized scene on one device; build it with :class:`simkit.sim.ModelBuilder`.

    Counts: ``particle_count``, ``spring_count``, ``tri_count``, ``edge_count``,
    ``tet_count``, ``body_count``, ``shape_count``, ``joint_count``. ``dtype`` is the float type of every array
    (``sk.float32`` unless finalized with ``dtype=sk.float64``).

    Articulations (:mod:`simkit.sim.articulation`): ``articulation_count``; per joint the
    int32 arrays ``joint_q_start``, ``joint_qd_start`` (``joint_count + 1`` offsets into the
    generalized coordinates ``joint_q`` and velocities ``joint_qd``, whose sizes are
    ``joint_coord_count`` and ``joint_dof_count``) and ``joint_articulation`` (-1: none);
    ``articulation_start`` (the first joint of each articulation) and ``body_joint`` (per
    body, the articulated joint whose child it is, -1: none). ``joint_q`` / ``joint_qd`` start
    at the coordinates of the bodies as built (what :func:`~simkit.sim.eval_ik` gives).

    Contact options (MuJoCo's, for the constraint-based contact solve;
    :meth:`~simkit.sim.ModelBuilder.set_contact_options`): ``contact_cone`` (``"pyramidal"``
    or ``"elliptic"``) and ``impratio`` (float). MuJoCo's contact parameters of each shape are
    fields of ``model.shapes`` and the ground's fields of ``model.contact`` (see
    :mod:`simkit.sim.contact_params`).

    ``contacts_enabled`` (bool, settable at any time) turns every contact of every integrator
    off while it is False.

    Worlds: ``world_count`` (0 for a model built without
    :meth:`~simkit.sim.ModelBuilder.add_builder`), and the int32 arrays ``particle_world``,
    ``body_world``, ``shape_world`` (-1: shared by every world).
    """

    __setattr__ = _watched_setattr

    def __init__(self, data: dict, device: str, requires_grad: bool, dtype: Any):
        self.device = device
        self.dtype = dtype
        self.requires_grad = requires_grad
        S = self.types = model_structs(dtype)
        vec3 = S.vec3

        def reals(x):
            return A.array(np.asarray(x, dtype=dtype.np_dtype), dtype=dtype, device=device, requires_grad=requires_grad)

        def indices(x, width):
            x = np.asarray(x, dtype=np.int32).reshape(-1, width)
            return A.array(x, dtype=T.int32, device=device)

        def vectors(x, t, grad=requires_grad):
            x = np.asarray(x, dtype=dtype.np_dtype).reshape((-1,) + t._sk_shape)
            return A.array(x, dtype=t, device=device, requires_grad=grad)

        self.gravity = vec3(*data["gravity"])
        self.up_axis = data["up_axis"]
        self.ground = data["ground"]
        self.particle_contact = data["particle_contact"]
        self.contacts_enabled = data.get("contacts_enabled", True)
        # the penalty body contact's broad phase (simkit.kernels.broad_phase_options), fixed at finalize
        self.broad_phase = data.get("broad_phase", "auto")
        self.broad_phase_capacity = data.get("broad_phase_capacity")

        self.particle_count = len(data["particle_mass"])
        self.particle_q = vectors(data["particle_q"], vec3)
        self.particle_qd = vectors(data["particle_qd"], vec3)
        mass = np.asarray(data["particle_mass"], dtype=np.float64)
        inv_mass = np.divide(1.0, mass, out=np.zeros_like(mass), where=mass > 0.0)
        self.particles = S.Particles(mass=reals(mass), inv_mass=reals(inv_mass), radius=reals(data["particle_radius"]))

        self.spring_count = len(data["spring_rest"])
        self.springs = S.Springs(indices=indices(data["spring_indices"], 2), rest_length=reals(data["spring_rest"]),
                                 ke=reals(data["spring_ke"]), kd=reals(data["spring_kd"]))

        self.tri_count = len(data["tri_area"])
        self.triangles = S.Triangles(indices=indices(data["tri_indices"], 3), pose=vectors(data["tri_pose"], S.mat22),
                                     area=reals(data["tri_area"]), k_mu=reals(data["tri_k_mu"]),
                                     k_lambda=reals(data["tri_k_lambda"]), k_damp=reals(data["tri_k_damp"]))

        self.edge_count = len(data["edge_rest"])
        self.edges = S.Edges(indices=indices(data["edge_indices"], 4), rest_angle=reals(data["edge_rest"]),
                             ke=reals(data["edge_ke"]), kd=reals(data["edge_kd"]))

        self.tet_count = len(data["tet_volume"])
        self.tets = S.Tets(indices=indices(data["tet_indices"], 4), pose=vectors(data["tet_pose"], S.mat33),
                           volume=reals(data["tet_volume"]), k_mu=reals(data["tet_k_mu"]),
                           k_lambda=reals(data["tet_k_lambda"]), k_damp=reals(data["tet_k_damp"]))

        def ints(x):
            return A.array(np.asarray(x, dtype=np.int32), dtype=T.int32, device=device)

        c, g = data["contact"], data["ground_material"]
        self.contact = S.Contact(ke=reals([c["ke"]]), kd=reals([c["kd"]]), kf=reals([c["kf"]]), mu=reals([c["mu"]]),
                                 time_constant=reals([c["time_constant"]]), damping_ratio=reals([c["damping_ratio"]]),
                                 ground=int(self.ground), ground_normal=vec3(*data["up_vector"]),
                                 ground_mu=reals([g["mu"]]), ground_torsional_mu=reals([g["torsional_mu"]]),
                                 ground_rolling_mu=reals([g["rolling_mu"]]), ground_condim=ints([g["condim"]]),
                                 ground_solref=vectors([g["solref"]], S.vec2),
                                 ground_solimp=vectors([g["solimp"]], S.vec5),
                                 ground_margin=reals([g["margin"]]), ground_gap=reals([g["gap"]]),
                                 ground_contype=ints(mask_int32([g["contype"]])),
                                 ground_conaffinity=ints(mask_int32([g["conaffinity"]])))
        # MuJoCo's model-wide contact options (ModelBuilder.set_contact_options)
        self.contact_cone = data["contact_cone"]
        self.impratio = float(data["impratio"])

        self.body_count = len(data["body_mass"])
        self.body_q = vectors(data["body_q"], S.transform)
        self.body_qd = vectors(data["body_qd"], S.spatial)
        mass = np.asarray(data["body_mass"], dtype=np.float64)
        inertia = np.asarray(data["body_inertia"], dtype=np.float64).reshape(-1, 3, 3)
        massive = mass > 0.0
        inv_inertia = np.zeros_like(inertia)
        inv_inertia[massive] = np.linalg.inv(inertia[massive])
        self.bodies = S.Bodies(mass=reals(mass), inv_mass=reals(np.divide(1.0, mass, out=np.zeros_like(mass),
                                                                          where=massive)),
                               inertia=vectors(inertia, S.mat33), inv_inertia=vectors(inv_inertia, S.mat33),
                               com=vectors(data["body_com"], vec3))

        self.shape_count = len(data["shape_kind"])
        mujoco = split_rows(data["shape_contact"])
        hulls = hull_arrays(data.get("hulls", [None] * self.shape_count))
        hfields = heightfield_arrays(data.get("heightfields", [None] * self.shape_count))
        self.shapes = S.Shapes(kind=ints(data["shape_kind"]), body=ints(data["shape_body"]),
                               xform=vectors(data["shape_xform"], S.transform, grad=False),
                               params=vectors(data["shape_params"], vec3, grad=False),
                               ke=reals(data["shape_ke"]), kd=reals(data["shape_kd"]), kf=reals(data["shape_kf"]),
                               mu=reals(data["shape_mu"]), time_constant=reals(data["shape_time_constant"]),
                               damping_ratio=reals(data["shape_damping_ratio"]),
                               torsional_mu=reals(mujoco["torsional_mu"]), rolling_mu=reals(mujoco["rolling_mu"]),
                               condim=ints(mujoco["condim"]), solref=vectors(mujoco["solref"], S.vec2),
                               solimp=vectors(mujoco["solimp"], S.vec5), margin=reals(mujoco["margin"]),
                               gap=reals(mujoco["gap"]), contype=ints(mask_int32(data["shape_collision_group"])),
                               conaffinity=ints(mask_int32(data["shape_collision_mask"])),
                               hull=indices(hulls["hull"], 4), hull_vertices=vectors(hulls["hull_vertices"], vec3, grad=False),
                               hull_triangles=indices(hulls["hull_triangles"], 3),
                               hull_normals=vectors(hulls["hull_normals"], vec3, grad=False),
                               hull_offsets=reals(hulls["hull_offsets"]),
                               hull_center=vectors(hulls["hull_center"], vec3, grad=False),
                               hfield=indices(hfields["hfield"], 3), hfield_heights=reals(hfields["hfield_heights"]))

        self.joint_count = len(data["joint_kind"])
        self.joints = S.Joints(kind=ints(data["joint_kind"]), parent=ints(data["joint_parent"]),
                               child=ints(data["joint_child"]),
                               parent_xform=vectors(data["joint_parent_xform"], S.transform, grad=False),
                               child_xform=vectors(data["joint_child_xform"], S.transform, grad=False),
                               axis=vectors(data["joint_axis"], vec3, grad=False),
                               axis2=vectors(data["joint_axis2"], vec3, grad=False),
                               **{name: reals(data[f"joint_{name}"]) for name in (
                                   "limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_ke", "target_kd",
                                   "linear_ke", "linear_kd", "angular_ke", "angular_kd", "armature", "effort_limit",
                                   "friction", "limit2_lower", "limit2_upper", "limit_margin")},
                               limit_solref=vectors(data["joint_limit_solref"], S.vec2),
                               limit_solimp=vectors(data["joint_limit_solimp"], S.vec5))

        # articulations: generalized coordinates of every joint, and which joints form trees
        q_start, qd_start = coordinate_starts(data["joint_kind"])
        self.joint_q_start, self.joint_qd_start = ints(q_start), ints(qd_start)
        self.joint_coord_count, self.joint_dof_count = int(q_start[-1]), int(qd_start[-1])
        self.joint_articulation = ints(np.asarray(data["joint_articulation"], dtype=np.int32).reshape(-1))
        self.articulation_start = ints(np.asarray(data["articulation_start"], dtype=np.int32).reshape(-1))
        self.articulation_count = len(data["articulation_start"])
        self.body_joint = ints(body_joints(data["joint_child"], self.joint_articulation.numpy(), self.body_count))
        joint_q, joint_qd = initial_coordinates(data)
        self.joint_q, self.joint_qd = reals(joint_q), reals(joint_qd)

        worlds = data.get("world_ranges", [])
        self.world_count = len(worlds)
        self._world_ranges = {kind: np.array([w[kind] for w in worlds], dtype=np.int64).reshape(-1, 2)
                              for kind in WORLD_KINDS}
        self.particle_world = ints(self._world_ids("particle"))
        self.body_world = ints(self._world_ids("body"))
        self.shape_world = ints(self._world_ids("shape"))
        # bit masks of 32 bits, kept as int64 on the host side only (collision_pairs reads them)
        self.shape_collision_group = np.asarray(data["shape_collision_group"], dtype=np.int64).reshape(-1)
        self.shape_collision_mask = np.asarray(data["shape_collision_mask"], dtype=np.int64).reshape(-1)
        # the triangles of the mesh shapes (see simkit.kernels.meshes)
        shape_mesh, meshes = data.get("meshes", (np.full(self.shape_count, -1), []))
        self.meshes = build_meshes(dtype, device, shape_mesh, meshes)
        # cloth self-contact (ModelBuilder.set_cloth_self_contact), None when off
        config = data.get("cloth_contact")
        self.cloth_contact = ClothContact(self, config, requires_grad) if config else None
        # cloth triangles against shapes (ModelBuilder.set_cloth_shape_contact), on by default
        self.cloth_shape_contact = bool(data.get("cloth_shape_contact", True))

    @property
    def contacts_enabled(self) -> bool:
        """The one switch for contact: while False, ``SemiImplicitEuler``, ``XPBD`` and
        ``Featherstone`` compute no contact of any kind (ground, shape pairs, particles against
        shapes and meshes, particles against particles, meshes); every other force and
        constraint is unchanged. Settable at any time (the next step reads it); its value at
        ``finalize`` is the builder's ``contacts_enabled`` (True unless set, or cleared by an
        MJCF ``<flag contact="disable"/>``).

        Example::

            model.contacts_enabled = False     # everything falls through the ground
        """
        return self._contacts_enabled

    @contacts_enabled.setter
    def contacts_enabled(self, value: bool) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"Model.contacts_enabled must be a bool, got {type(value).__name__} {value!r}")
        self._contacts_enabled = bool(value)

    def _world_ids(self, kind: str) -> np.ndarray:
        ids = np.full(getattr(self, WORLD_KINDS[kind]), -1, dtype=np.int32)
        for w, (start, count) in enumerate(self._world_ranges[kind]):
            ids[start:start + count] = w
        return ids

    def _check_kind(self, kind: str, where: str) -> None:
        if kind not in WORLD_KINDS:
            raise ValueError(f"{where}: kind must be one of {', '.join(map(repr, WORLD_KINDS))}, got {kind!r}")

    def articulation_joints(self, articulation: int) -> tuple[int, int]:
        """``(start, stop)``: the joints of ``articulation`` are ``start`` to ``stop - 1``.

        Example::

            start, stop = model.articulation_joints(0)
        """
        if not isinstance(articulation, (int, np.integer)) or isinstance(articulation, bool) or \
                not 0 <= articulation < self.articulation_count:
            raise ValueError(f"articulation_joints: articulation must be an int in [0, {self.articulation_count}), "
                             f"got {articulation!r}")
        start = int(self.articulation_start.numpy()[articulation])
        members = np.flatnonzero(self.joint_articulation.numpy() == articulation)
        return start, (int(members[-1]) + 1 if members.size else start)

    def articulation_coords(self, articulation: int) -> tuple[int, int]:
        """``(start, stop)``: the generalized coordinates of ``articulation`` are
        ``joint_q[start:stop]``.

        Example::

            q0 = model.joint_q.numpy()[slice(*model.articulation_coords(0))]
        """
        first, last = self.articulation_joints(articulation)
        starts = self.joint_q_start.numpy()
        return int(starts[first]), int(starts[last])

    def articulation_dofs(self, articulation: int) -> tuple[int, int]:
        """``(start, stop)``: the generalized velocities of ``articulation`` are
        ``joint_qd[start:stop]`` (and its block of :func:`~simkit.sim.mass_matrix`).

        Example::

            start, stop = model.articulation_dofs(1)
        """
        first, last = self.articulation_joints(articulation)
        starts = self.joint_qd_start.numpy()
        return int(starts[first]), int(starts[last])

    def world_range(self, kind: str, world: int) -> tuple[int, int]:
        """``(start, stop)``: the things of ``kind`` ("particle", "spring", "triangle", "edge",
        "tet", "body", "shape", "joint") of world ``world`` are ``start`` to ``stop - 1``.

        Example::

            start, stop = model.world_range("particle", 3)
            state.particle_q.numpy()[start:stop]         # the particles of world 3
        """
        self._check_kind(kind, "world_range")
        if not isinstance(world, (int, np.integer)) or isinstance(world, bool) or not 0 <= world < self.world_count:
            raise ValueError(f"world_range: world must be an int in [0, {self.world_count}), got {world!r}")
        start, count = (int(x) for x in self._world_ranges[kind][world])
        return start, start + count

    def world_view(self, kind: str, values: Any) -> np.ndarray:
        """``values`` (an sk array or numpy array with one row per thing of ``kind``, such as
        ``model.particles.mass``) as a numpy array of shape ``(world_count, per_world, ...)``:
        row ``w`` holds the things of world ``w`` (those of world -1 are left out).

        Every world must hold the same number of things of ``kind``, back to back (what
        adding the same builder each time gives); otherwise this raises a ValueError, and
        :meth:`world_range` still gives each world's slice. The result is a view of
        ``values.numpy()``: on the CPU writing into it writes the array (the tape does not see
        such writes, as with ``numpy()``); on a GPU it is a host copy.

        Example::

            model.world_view("particle", model.particles.mass)     # (world_count, per_world)
        """
        self._check_kind(kind, "world_view")
        if self.world_count == 0:
            raise ValueError("world_view: the model has no worlds (make them with ModelBuilder.add_builder)")
        data = values.numpy() if isinstance(values, A.Array) else np.asarray(values)
        total = getattr(self, WORLD_KINDS[kind])
        if data.ndim == 0 or data.shape[0] != total:
            raise ValueError(f"world_view: values must have one row per {kind} ({total}), got shape {data.shape}")
        starts, counts = self._world_ranges[kind][:, 0], self._world_ranges[kind][:, 1]
        odd = np.flatnonzero(counts != counts[0])
        if odd.size:
            w = int(odd[0])
            raise ValueError(f"world_view: the worlds hold different numbers of {kind}s (world 0: {counts[0]}, "
                             f"world {w}: {counts[w]}); use model.world_range({kind!r}, w) for one world")
        per_world = int(counts[0])
        if np.any(starts != starts[0] + per_world * np.arange(self.world_count)):
            raise ValueError(f"world_view: the {kind}s of the worlds are not back to back ({kind}s of world -1 were "
                             f"added between add_builder calls); use model.world_range({kind!r}, w) for one world")
        first = int(starts[0])
        return data[first:first + per_world * self.world_count].reshape((self.world_count, per_world)
                                                                        + data.shape[1:])

    def state(self, requires_grad: bool | None = None) -> "State":
        """A new state at the model's initial positions and velocities.

        ``requires_grad`` defaults to the model's; set it to differentiate with respect to
        the initial state.

        Example::

            s0 = model.state(requires_grad=True)
        """
        return State(self, self.requires_grad if requires_grad is None else requires_grad)

    def control(self, requires_grad: bool = False) -> "Control":
        """A new control with every actuation at zero; with ``requires_grad=True`` its arrays
        require grad, so that a Tape over a rollout gives the gradient of a loss with respect
        to the actuation (``control.joint_act.grad``, ...).

        Example::

            control = model.control()
            control.spring_activation.assign(np.full(model.spring_count, 0.1))
            policy = model.control(requires_grad=True)   # d loss / d policy.joint_act after backward
        """
        if not isinstance(requires_grad, (bool, np.bool_)):
            raise TypeError(f"model.control: requires_grad must be True or False, got {type(requires_grad).__name__}")
        return Control(self, bool(requires_grad))

    def __repr__(self) -> str:
        return (f"Model(particles={self.particle_count}, springs={self.spring_count}, triangles={self.tri_count}, "
                f"edges={self.edge_count}, tets={self.tet_count}, bodies={self.body_count}, "
                f"shapes={self.shape_count}, joints={self.joint_count}, "
                + (f"articulations={self.articulation_count}, " if self.articulation_count else "")
                + (f"worlds={self.world_count}, " if self.world_count else "")
                + f"dtype={T.type_name(self.dtype)}, device={self.device!r})")


class State:
    """Particle positions ``particle_q``, velocities ``particle_qd`` and the force
    accumulator ``particle_f`` (arrays of ``vec3``) of one instant, and the same for bodies:
    ``body_q`` (``transform``: the world pose of each body's origin), ``body_qd`` (a
    6-vector: angular velocity, then linear velocity of the center of mass, both in world
    coordinates) and ``body_f`` (torque about the center of mass, then force, world). With
    joints, ``joint_q`` / ``joint_qd``: the generalized coordinates and velocities (as
    ``model.joint_q``), which :class:`~simkit.sim.Featherstone` integrates (the other
    integrators leave them as they are; :func:`~simkit.sim.eval_ik` reads them off the bodies).
    ``contact_force``: ``Featherstone(contact="constraint")``'s contact forces of the step
    that wrote the state, the next step's warm start (``None`` until a step writes it: a
    fresh state starts its solve from zero, so the same rollout from the same state repeats
    bit for bit).

    Example::

        state = model.state()
        state.particle_q.numpy()[:, 1]     # heights
        state.body_q.numpy()[:, :3]        # body origins
    """

    # What a step integrates: read from state_in, written to state_out. Forces are
    # recomputed by every step, so these fields are all a checkpoint or a copy needs.
    INTEGRATED = ("particle_q", "particle_qd", "body_q", "body_qd", "joint_q", "joint_qd", "contact_stuck",
                  "contact_anchor", "contact_point", "contact_pairs", "contact_pair_count")
    _FIELDS = ("particle_q", "particle_qd", "particle_f", "body_q", "body_qd", "body_f")

    __setattr__ = _watched_setattr

    def __init__(self, model: Model, requires_grad: bool):
        self.model = model
        self.requires_grad = requires_grad
        self.particle_q = A.clone(model.particle_q, requires_grad=requires_grad)
        self.particle_qd = A.clone(model.particle_qd, requires_grad=requires_grad)
        self.particle_f = A.zeros_like(model.particle_q, requires_grad=requires_grad)
        self.body_q = A.clone(model.body_q, requires_grad=requires_grad)
        self.body_qd = A.clone(model.body_qd, requires_grad=requires_grad)
        self.body_f = A.zeros_like(model.body_qd, requires_grad=requires_grad)
        # generalized coordinates: what sk.sim.Featherstone integrates (body_q/body_qd follow by eval_fk)
        self.joint_q = A.clone(model.joint_q, requires_grad=requires_grad)
        self.joint_qd = A.clone(model.joint_qd, requires_grad=requires_grad)
        # the stick state of the body contacts (kernels/body_contact.py): per contact slot, 1 while it
        # touches, its anchor on the surface (world for the ground, else in the surface shape's frame)
        # and the touching material point (in its own shape's frame)
        slots = contact_slot_count(model)
        self.contact_stuck = A.zeros(slots, dtype=T.int32, device=model.device)
        self.contact_anchor = A.zeros(slots, dtype=model.types.vec3, device=model.device, requires_grad=requires_grad)
        self.contact_point = A.zeros(slots, dtype=model.types.vec3, device=model.device, requires_grad=requires_grad)
        # with the per-step broad phase, the pairs the step that wrote this state tested (the
        # slots of the anchors above) and their number (simkit.kernels.broad_phase)
        self.contact_pairs, self.contact_pair_count = pair_buffers(model)
        # Featherstone(contact="constraint")'s warm start: the contact forces of the step that
        # wrote this state, per slot (None in a fresh state: the first solve starts from zero)
        self.contact_force = None

    def copy_from(self, other: "State") -> None:
        """Make this state the instant ``other`` is: its ``INTEGRATED`` fields copied, and the
        constraint contact's warm start with them, so that a step from either gives the same bits.

        Example::

            state.copy_from(initial)      # back to the start, as a rerun from `initial` would be
        """
        for name in self.INTEGRATED:
            A.copy(getattr(self, name), getattr(other, name))
        warm = other.contact_force
        if warm is None or self.contact_force is None or self.contact_force.shape != warm.shape:
            self.contact_force = None if warm is None else A.clone(warm)
        else:
            A.copy(self.contact_force, warm)

    def clear_forces(self) -> None:
        """Zero the force accumulators (the integrators do this at the start of each step).

        It is a kernel launch, so a step recorded by ``sk.capture`` or a Tape includes it.
        """
        if self.model.particle_count:
            launch(particle_kernels(self.model.dtype).clear_forces, self.model.particle_count, inputs=[self.particle_f])
        if self.model.body_count:
            launch(body_kernels(self.model.dtype).clear_body_forces, self.model.body_count, inputs=[self.body_f])

    def world_view(self, name: str, grad: bool = False) -> np.ndarray:
        """The state array ``name`` (``particle_q``, ``particle_qd``, ``particle_f``, ``body_q``,
        ``body_qd`` or ``body_f``), or its gradient with ``grad=True``, per world: a numpy
        array of shape ``(world_count, per_world, ...)``, a view on the CPU (see
        :meth:`Model.world_view` for when it exists and what writing into it does).

        Example::

            state.world_view("particle_q")[:, 0, 1]                # height of particle 0 of every world
            s0.world_view("particle_qd", grad=True)[3]             # d loss / d initial velocities of world 3
        """
        if name not in self._FIELDS:
            raise ValueError(f"world_view: name must be one of {', '.join(map(repr, self._FIELDS))}, got {name!r}")
        values = getattr(self, name)
        if grad:
            if values.grad is None:
                raise ValueError(f"world_view: state.{name} has no gradient (make the state with requires_grad=True)")
            values = values.grad
        return self.model.world_view(name.split("_")[0], values)

    @property
    def particle_count(self) -> int:
        return self.model.particle_count

    @property
    def body_count(self) -> int:
        return self.model.body_count


class Control:
    """Actuation inputs of one step: ``spring_activation`` (one per spring) scales each
    spring's rest length to ``rest_length * (1 + activation)``; per joint, ``joint_target``
    is the position (angle or displacement) its drive pulls towards, ``joint_target_vel``
    the rate (rad/s or m/s) its damper pulls towards (zero: the damper brakes; a drive
    with ``target_ke = 0`` and ``target_kd > 0`` is a velocity servo), and ``joint_act`` a
    torque (revolute) or force (prismatic) along its axis: the drive is ``target_ke
    (joint_target - q) + target_kd (joint_target_vel - qd) + joint_act``.

    Per degree of freedom (``model.joint_dof_count`` entries, joint ``j``'s from
    ``model.joint_qd_start[j]``), for :class:`~simkit.sim.Featherstone`: ``joint_dof_target``
    holds the targets of a universal joint's two angles and a ball joint's target rotation
    (three entries: a rotation vector, axis times angle, in the parent's joint frame; not
    Euler angles), ``joint_dof_target_vel`` the target rates of those degrees of freedom
    (universal: its two angle rates; ball: an angular velocity in the parent's joint frame,
    like ``joint_qd``), and ``joint_dof_act`` a generalized
    force on every joint (universal: torques about its two axes; ball: a torque in the
    parent's joint frame; free: a force and a torque on the body, in the parent's joint
    frame). On revolute and prismatic joints they add to ``joint_target`` /
    ``joint_target_vel`` / ``joint_act``; the maximal-coordinate integrators ignore them.

    ``model.control(requires_grad=True)`` makes every array require grad, for the gradient
    of a loss with respect to the actuation (``control.joint_act.grad`` after a backward).

    Example::

        control.spring_activation.assign(np.sin(t) * 0.2 * np.ones(model.spring_count))
        control.joint_target.assign(np.full(model.joint_count, 0.5))
        t, d = np.zeros(model.joint_dof_count), model.joint_qd_start.numpy()[universal]
        t[d:d + 2] = (0.3, -0.2)
        control.joint_dof_target.assign(t)                # a universal joint's two target angles
        control.joint_target_vel.assign(np.full(model.joint_count, 2.0))   # spin at 2 rad/s
    """

    __setattr__ = _watched_setattr

    def __init__(self, model: Model, requires_grad: bool = False):
        self.model = model
        self.requires_grad = requires_grad

        def zeros(n: int) -> A.Array:
            return A.zeros(n, dtype=model.dtype, device=model.device, requires_grad=requires_grad)

        self.spring_activation = zeros(model.spring_count)
        self.joint_target = zeros(model.joint_count)
        self.joint_target_vel = zeros(model.joint_count)
        self.joint_act = zeros(model.joint_count)
        self.joint_dof_target = zeros(model.joint_dof_count)
        self.joint_dof_target_vel = zeros(model.joint_dof_count)
        self.joint_dof_act = zeros(model.joint_dof_count)

    def world_view(self, name: str) -> np.ndarray:
        """The control array ``name`` (``spring_activation``, ``joint_target``, ``joint_target_vel``
        or ``joint_act``) per world, shape ``(world_count, per_world)``: a view on the CPU, so
        writing into it sets the actuation of each world (see :meth:`Model.world_view`).

        Example::

            control.world_view("joint_target")[:, 0] = np.linspace(-1.0, 1.0, model.world_count)
        """
        kinds = {"spring_activation": "spring", "joint_target": "joint", "joint_target_vel": "joint",
                 "joint_act": "joint"}
        if name not in kinds:
            raise ValueError(f"world_view: name must be one of {', '.join(map(repr, kinds))}, got {name!r}")
        return self.model.world_view(kinds[name], getattr(self, name))
