"""Model, State and Control: what a simulation is made of, where it is, and what drives it.

A :class:`Model` holds everything that does not change during a step: topology,
rest shapes and material parameters, grouped in ``@sk.struct`` instances of
gradient-tracked arrays (``model.particles``, ``model.springs``,
``model.triangles``, ``model.edges``, ``model.tets``, ``model.contact``,
``model.bodies``, ``model.shapes``, ``model.joints``). A :class:`State` holds
positions, velocities and force accumulators of particles and bodies; a
:class:`Control` holds actuation inputs.

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
from ..core import types as T
from ..core.launch import launch
from ..kernels.bodies import body_kernels
from ..kernels.particles import particle_kernels
from ..kernels.structs import model_structs


class Model:
    """A finalized scene on one device; build it with :class:`simkit.sim.ModelBuilder`.

    Counts: ``particle_count``, ``spring_count``, ``tri_count``, ``edge_count``,
    ``tet_count``, ``body_count``, ``shape_count``, ``joint_count``. ``dtype`` is the float type of every array
    (``sk.float32`` unless finalized with ``dtype=sk.float64``).
    """

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

        c = data["contact"]
        self.contact = S.Contact(ke=reals([c["ke"]]), kd=reals([c["kd"]]), kf=reals([c["kf"]]), mu=reals([c["mu"]]),
                                 ground=int(self.ground), ground_normal=vec3(*data["up_vector"]))

        def ints(x):
            return A.array(np.asarray(x, dtype=np.int32), dtype=T.int32, device=device)

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
        self.shapes = S.Shapes(kind=ints(data["shape_kind"]), body=ints(data["shape_body"]),
                               xform=vectors(data["shape_xform"], S.transform, grad=False),
                               params=vectors(data["shape_params"], vec3, grad=False),
                               ke=reals(data["shape_ke"]), kd=reals(data["shape_kd"]), kf=reals(data["shape_kf"]),
                               mu=reals(data["shape_mu"]))

        self.joint_count = len(data["joint_kind"])
        self.joints = S.Joints(kind=ints(data["joint_kind"]), parent=ints(data["joint_parent"]),
                               child=ints(data["joint_child"]),
                               parent_xform=vectors(data["joint_parent_xform"], S.transform, grad=False),
                               child_xform=vectors(data["joint_child_xform"], S.transform, grad=False),
                               axis=vectors(data["joint_axis"], vec3, grad=False),
                               **{name: reals(data[f"joint_{name}"]) for name in (
                                   "limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_ke", "target_kd",
                                   "linear_ke", "linear_kd", "angular_ke", "angular_kd")})

    def state(self, requires_grad: bool | None = None) -> "State":
        """A new state at the model's initial positions and velocities.

        ``requires_grad`` defaults to the model's; set it to differentiate with respect to
        the initial state.

        Example::

            s0 = model.state(requires_grad=True)
        """
        return State(self, self.requires_grad if requires_grad is None else requires_grad)

    def control(self) -> "Control":
        """A new control with every actuation at zero.

        Example::

            control = model.control()
            control.spring_activation.assign(np.full(model.spring_count, 0.1))
        """
        return Control(self)

    def __repr__(self) -> str:
        return (f"Model(particles={self.particle_count}, springs={self.spring_count}, triangles={self.tri_count}, "
                f"edges={self.edge_count}, tets={self.tet_count}, bodies={self.body_count}, "
                f"shapes={self.shape_count}, joints={self.joint_count}, "
                f"dtype={T.type_name(self.dtype)}, device={self.device!r})")


class State:
    """Particle positions ``particle_q``, velocities ``particle_qd`` and the force
    accumulator ``particle_f`` (arrays of ``vec3``) of one instant, and the same for bodies:
    ``body_q`` (``transform``: the world pose of each body's origin), ``body_qd`` (a
    6-vector: angular velocity, then linear velocity of the center of mass, both in world
    coordinates) and ``body_f`` (torque about the center of mass, then force, world).

    Example::

        state = model.state()
        state.particle_q.numpy()[:, 1]     # heights
        state.body_q.numpy()[:, :3]        # body origins
    """

    # What a step integrates: read from state_in, written to state_out. Forces are
    # recomputed by every step, so these fields are all a checkpoint or a copy needs.
    INTEGRATED = ("particle_q", "particle_qd", "body_q", "body_qd")

    def __init__(self, model: Model, requires_grad: bool):
        self.model = model
        self.requires_grad = requires_grad
        self.particle_q = A.clone(model.particle_q, requires_grad=requires_grad)
        self.particle_qd = A.clone(model.particle_qd, requires_grad=requires_grad)
        self.particle_f = A.zeros_like(model.particle_q, requires_grad=requires_grad)
        self.body_q = A.clone(model.body_q, requires_grad=requires_grad)
        self.body_qd = A.clone(model.body_qd, requires_grad=requires_grad)
        self.body_f = A.zeros_like(model.body_qd, requires_grad=requires_grad)

    def clear_forces(self) -> None:
        """Zero the force accumulators (the integrators do this at the start of each step).

        It is a kernel launch, so a step recorded by ``sk.capture`` or a Tape includes it.
        """
        if self.model.particle_count:
            launch(particle_kernels(self.model.dtype).clear_forces, self.model.particle_count, inputs=[self.particle_f])
        if self.model.body_count:
            launch(body_kernels(self.model.dtype).clear_body_forces, self.model.body_count, inputs=[self.body_f])

    @property
    def particle_count(self) -> int:
        return self.model.particle_count

    @property
    def body_count(self) -> int:
        return self.model.body_count


class Control:
    """Actuation inputs of one step: ``spring_activation`` (one per spring) scales each
    spring's rest length to ``rest_length * (1 + activation)``; per joint, ``joint_target``
    is the position (angle or displacement) its drive pulls towards and ``joint_act`` a
    torque (revolute) or force (prismatic) along its axis.

    Example::

        control.spring_activation.assign(np.sin(t) * 0.2 * np.ones(model.spring_count))
        control.joint_target.assign(np.full(model.joint_count, 0.5))
    """

    def __init__(self, model: Model):
        self.model = model
        self.spring_activation = A.zeros(model.spring_count, dtype=model.dtype, device=model.device)
        self.joint_target = A.zeros(model.joint_count, dtype=model.dtype, device=model.device)
        self.joint_act = A.zeros(model.joint_count, dtype=model.dtype, device=model.device)
