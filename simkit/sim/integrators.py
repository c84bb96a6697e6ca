"""Integrators: advance a state by one time step. Both are differentiable through the Tape.

Example::

    integrator = sk.sim.SemiImplicitEuler()
    integrator.step(model, state_in, state_out, control, dt=1e-3)
"""

from __future__ import annotations

import math

from ..core.launch import launch
from ..kernels.particles import particle_kernels
from .forces import eval_forces
from .model import Control, Model, State


def check_step(model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> Control:
    """Validate the arguments of ``step`` and return the control to use (the model's
    zero control when ``control`` is None)."""
    if not isinstance(model, Model):
        raise TypeError(f"step: model must be a simkit.sim.Model, got {type(model).__name__}")
    for name, s in (("state_in", state_in), ("state_out", state_out)):
        if not isinstance(s, State):
            raise TypeError(f"step: {name} must be a simkit.sim.State, got {type(s).__name__}")
        if s.model is not model:
            raise ValueError(f"step: {name} was made by another model (use model.state())")
    if state_in is state_out:
        raise ValueError("step: state_in and state_out must be different states (the step reads one and writes "
                         "the other)")
    if not isinstance(dt, (int, float)) or isinstance(dt, bool) or not math.isfinite(dt) or dt <= 0.0:
        raise ValueError(f"step: dt must be a finite number > 0, got {dt!r}")
    if control is None:
        control = model.__dict__.get("_zero_control")
        if control is None:
            control = model._zero_control = model.control()
    elif not isinstance(control, Control):
        raise TypeError(f"step: control must be a simkit.sim.Control or None, got {type(control).__name__}")
    elif control.model is not model:
        raise ValueError("step: control was made by another model (use model.control())")
    return control


class SemiImplicitEuler:
    """Symplectic (semi-implicit) Euler: forces at ``state_in``, then ``v += a dt`` and
    ``x += v dt``. Every force is explicit, so ``dt`` must resolve the stiffest one: for
    contact roughly ``dt < 0.2 * sqrt(m / contact_ke)``, and the damping-like terms need
    ``contact_kd * dt / m < 1`` and ``contact_kf * dt / m < 1`` for the lightest particle
    in contact (above that, resting friction chatters instead of sticking).

    Example::

        sk.sim.SemiImplicitEuler().step(model, s0, s1, control, 1e-3)
    """

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        """Advance ``state_in`` by ``dt`` into ``state_out``; ``state_in.particle_f`` receives
        the forces of ``state_in``."""
        control = check_step(model, state_in, state_out, control, dt)
        state_in.clear_forces()
        eval_forces(model, state_in, control)
        launch(particle_kernels(model.dtype).integrate_particles, model.particle_count,
               inputs=[state_in.particle_q, state_in.particle_qd, state_in.particle_f, model.particles,
                       model.gravity, dt, state_out.particle_q, state_out.particle_qd])
