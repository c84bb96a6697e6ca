"""Model, State and Control: what a simulation is made of, where it is, and what drives it.

A :class:`Model` holds everything that does not change during a step: topology,
rest shapes and material parameters, grouped in ``@sk.struct`` instances of
gradient-tracked arrays (``model.particles``, ``model.springs``,
``model.triangles``, ``model.edges``, ``model.tets``, ``model.contact``,
``model.shapes``). A :class:`State` holds positions, velocities and the force
accumulator; a :class:`Control` holds actuation inputs.

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
from ..kernels.particles import particle_kernels
from ..kernels.structs import model_structs


class Model:
    """A finalized scene on one device; build it with :class:`simkit.sim.ModelBuilder`.

    Counts: ``particle_count``, ``spring_count``, ``tri_count``, ``edge_count``,
    ``tet_count``, ``shape_count``. ``dtype`` is the float type of every array
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

        self.shape_count = len(data["shape_kind"])
        self.shapes = S.Shapes(kind=A.array(np.asarray(data["shape_kind"], dtype=np.int32), dtype=T.int32, device=device),
                               xform=vectors(data["shape_xform"], S.transform, grad=False),
                               params=vectors(data["shape_params"], vec3, grad=False))

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
                f"edges={self.edge_count}, tets={self.tet_count}, shapes={self.shape_count}, "
                f"dtype={T.type_name(self.dtype)}, device={self.device!r})")


class State:
    """Particle positions ``particle_q``, velocities ``particle_qd`` and the force
    accumulator ``particle_f`` (arrays of ``vec3``) of one instant.

    Example::

        state = model.state()
        state.particle_q.numpy()[:, 1]     # heights
    """

    def __init__(self, model: Model, requires_grad: bool):
        self.model = model
        self.requires_grad = requires_grad
        self.particle_q = A.clone(model.particle_q, requires_grad=requires_grad)
        self.particle_qd = A.clone(model.particle_qd, requires_grad=requires_grad)
        self.particle_f = A.zeros_like(model.particle_q, requires_grad=requires_grad)

    def clear_forces(self) -> None:
        """Zero the force accumulator (the integrators do this at the start of each step).

        It is a kernel launch, so a step recorded by ``sk.capture`` or a Tape includes it.
        """
        launch(particle_kernels(self.model.dtype).clear_forces, self.model.particle_count, inputs=[self.particle_f])

    @property
    def particle_count(self) -> int:
        return self.model.particle_count


class Control:
    """Actuation inputs of one step: ``spring_activation`` (one per spring) scales each
    spring's rest length to ``rest_length * (1 + activation)``.

    Example::

        control.spring_activation.assign(np.sin(t) * 0.2 * np.ones(model.spring_count))
    """

    def __init__(self, model: Model):
        self.model = model
        self.spring_activation = A.zeros(model.spring_count, dtype=model.dtype, device=model.device)
