"""simkit.sim: models, states and integrators built on the kernel core.

- :class:`ModelBuilder` collects particles, springs, cloth, soft bodies and static shapes;
- :class:`Model` holds them on a device, parameters in structs of gradient-tracked arrays;
- :class:`State` (positions, velocities, forces) and :class:`Control` (actuation);
- :class:`SemiImplicitEuler` and :class:`XPBD` advance a state by one step in maximal
  coordinates, :class:`Featherstone` an articulated one in generalized coordinates;
- :func:`simulate` runs many steps; ``check=N`` (a :class:`StabilityCheck`) stops a run that
  diverged with a :class:`SimulationError`;
- articulations (:meth:`ModelBuilder.add_articulation`) give joints generalized coordinates:
  :func:`eval_fk`, :func:`eval_ik`, :func:`mass_matrix`, :func:`bias_forces` and
  :func:`joint_accelerations`;
- :meth:`ModelBuilder.add_builder` puts many copies of a scene (worlds) in one model, stepped
  by the same launches, each seeing only itself and the shared world -1.

Example::

    import simkit as sk

    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True)
    b.add_particle((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), mass=1.0)
    model = b.finalize()
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps=100, dt=1e-3)
"""

from .articulation import bias_forces, eval_fk, eval_ik, joint_accelerations, mass_matrix
from .builder import ModelBuilder
from .featherstone import Featherstone
from .integrators import IgnoredJointFeatureWarning, SemiImplicitEuler
from .model import Control, Model, State
from .simulate import simulate
from .stability import SimulationError, StabilityCheck
from .xpbd import XPBD

__all__ = ["ModelBuilder", "Model", "State", "Control", "SemiImplicitEuler", "XPBD", "Featherstone", "simulate",
           "StabilityCheck", "SimulationError", "IgnoredJointFeatureWarning", "eval_fk", "eval_ik", "mass_matrix", "bias_forces",
           "joint_accelerations"]
