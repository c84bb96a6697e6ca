"""Integrators: advance a state by one time step. Both are differentiable through the Tape.

Example::

    integrator = sk.sim.SemiImplicitEuler()
    integrator.step(model, state_in, state_out, control, dt=1e-3)
"""

from __future__ import annotations

import math
import warnings
from typing import Callable

import numpy as np

from ..core.config import config
from ..core.launch import launch
from ..core.modules import compile_ahead
from ..core.step_cache import on_replay
from ..kernels.bodies import body_kernels
from ..kernels.broad_phase_options import check_pair_capacity, sweeps
from ..kernels.particles import particle_kernels
from ..kernels.structs import JOINT_BALL, JOINT_UNIVERSAL, NO_LIMIT
from .cloth_contact import cloth_contact_kernel_modules, eval_cloth_contact_forces, self_contact_active, \
    warn_cloth_overflow
from .forces import body_force_kernel_modules, eval_body_forces, eval_forces, force_kernel_modules
from .model import Control, Model, State
from .replay import Replayed, particles_eligible, replayed_step
from .validate import normal_in


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
    normal_in(dt, model.dtype, "step: dt")
    if control is None:
        control = model.__dict__.get("_zero_control")
        if control is None:
            control = model._zero_control = model.control()
    elif not isinstance(control, Control):
        raise TypeError(f"step: control must be a simkit.sim.Control or None, got {type(control).__name__}")
    elif control.model is not model:
        raise ValueError("step: control was made by another model (use model.control())")
    return control


def compile_step_ahead(model: Model, integrator: str, modules: Callable[[Model], list]) -> None:
    """Before the first step of ``integrator`` (a name) for ``model`` on the CPU, start
    compiling the kernel modules that ``modules(model)`` lists (kernels or namespaces of them,
    those the step launches) at once, one per core (:func:`~simkit.core.modules.compile_ahead`),
    so that from an empty cache they compile side by side, not one after another as the step
    reaches each. Asked again only when ``model.contacts_enabled`` or the debug mode changes
    (what the step launches depends on them).

    Example::

        compile_step_ahead(model, "SemiImplicitEuler", semi_implicit_kernel_modules)
    """
    if model.device != "cpu":
        return
    started = model.__dict__.setdefault("_compiled_ahead", set())
    key = (integrator, bool(model.contacts_enabled), config.mode)
    if key not in started:
        started.add(key)
        compile_ahead(*modules(model))


def semi_implicit_kernel_modules(model: Model) -> list:
    """The kernels, one per module (or a module's namespace of them), that a
    :class:`SemiImplicitEuler` step of ``model`` launches now.

    Example::

        sk.compile_ahead(*semi_implicit_kernel_modules(model))
    """
    return force_kernel_modules(model) + cloth_contact_kernel_modules(model) + body_force_kernel_modules(model)


class IgnoredJointFeatureWarning(UserWarning):
    """A model holds joint features that the integrator stepping it does not simulate (only
    :class:`~simkit.sim.Featherstone` does): joint friction, ball joint limits and drives,
    universal joint limits and drives."""


def featherstone_only_features(model: Model) -> list[str]:
    """The joint features of ``model`` that only :class:`~simkit.sim.Featherstone` simulates,
    as phrases naming how many joints have each (empty when there are none).

    Example::

        featherstone_only_features(model)   # ['joint friction on 8 joints']
    """
    if model.joint_count == 0:
        return []
    j = model.joints
    kind = j.kind.numpy()
    lower, upper = j.limit_lower.numpy(), j.limit_upper.numpy()
    limited = (lower > -NO_LIMIT) | (upper < NO_LIMIT)
    limited2 = (j.limit2_lower.numpy() > -NO_LIMIT) | (j.limit2_upper.numpy() < NO_LIMIT)
    driven = (j.target_ke.numpy() > 0.0) | (j.target_kd.numpy() > 0.0)
    found = {
        "joint friction": j.friction.numpy() > 0.0,
        "ball joint limits or drives": (kind == JOINT_BALL) & (limited | driven),
        "universal joint limits or drives": (kind == JOINT_UNIVERSAL) & (limited | limited2 | driven),
    }
    return [f"{what} on {int(n.sum())} joint(s)" for what, n in found.items() if n.any()]


def warn_ignored_joint_features(model: Model, integrator: str) -> None:
    """Warn once per model and integrator class when ``model`` has joint features the
    integrator ignores (see :func:`featherstone_only_features`)."""
    warned = model.__dict__.setdefault("_ignored_features_warned", set())
    if integrator in warned:
        return
    warned.add(integrator)
    found = featherstone_only_features(model)
    if found:
        warnings.warn(f"{integrator}: this model has {', '.join(found)}, which only sk.sim.Featherstone simulates; "
                      f"{integrator} steps it without them", IgnoredJointFeatureWarning, stacklevel=3)


class SemiImplicitEuler(Replayed):
    """Symplectic (semi-implicit) Euler: forces at ``state_in``, then ``v += a dt`` and
    ``x += v dt``. Every force is explicit, so ``dt`` must resolve the stiffest one: for
    contact given per unit mass (the builder's default) ``dt <= contact_time_constant / 10``
    for any mass; for fixed gains roughly ``dt < 0.2 * sqrt(m / contact_ke)``, and the
    damping-like terms need ``contact_kd * dt / m < 1`` and ``contact_kf * dt / m < 1`` for
    the lightest particle in contact (above that, resting friction chatters instead of
    sticking).

    Rigid bodies integrate their angular momentum (conserved exactly without torque) and
    renormalize their rotation every step. Body contacts are penalties like the particles', but
    their friction sticks: each touching point holds on to an anchor kept in the State
    (``state_out`` receives it; see docs/contact.md).
    Joints are stiff damped penalties here: for every jointed body ``dt`` must satisfy
    ``linear_ke dt^2 + 2 linear_kd dt < m_a`` (its effective mass at the anchor) and
    ``angular_ke dt^2 + 2 angular_kd dt < I`` (its smallest moment of inertia); with the
    default gains dt = 1e-4 s suits links from about 12 g and I >= 2e-5 kg m^2, dt = 5e-4 s
    links from about 0.14 kg and I >= 3e-4 kg m^2; give thin rods armature. The dampers of
    drives, limits and joint damping (``target_kd``, ``limit_kd``) are implicit, stable for
    any gain: their springs need ``ke dt^2 < 2 I_a``, ``I_a`` the joint's effective inertia
    about its axis (see :mod:`simkit.kernels.joints`). gymnasium's ant (legs of 40 to 70 g)
    drops and stands at dt = 1e-4 or 2e-4 s. Joint ``armature`` is not simulated here (it is in
    :class:`~simkit.sim.Featherstone`).

    Example::

        sk.sim.SemiImplicitEuler().step(model, s0, s1, control, 1e-3)
    """

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        """Advance ``state_in`` by ``dt`` into ``state_out``; ``state_in.particle_f`` and
        ``state_in.body_f`` receive the forces of ``state_in``. Called again with the same
        arguments, it replays its recorded launches (:mod:`simkit.sim.replay`)."""
        replayed_step(self, self._step, model, state_in, state_out, control, dt, particles_eligible)
        if sweeps(model):
            on_replay(check_pair_capacity, model, state_out)
        if self_contact_active(model):
            on_replay(warn_cloth_overflow, model, state_in)

    def _replay_eligible(self, model) -> bool:
        return particles_eligible(self, model)

    def _step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        control = check_step(model, state_in, state_out, control, dt)
        warn_ignored_joint_features(model, "SemiImplicitEuler")
        compile_step_ahead(model, "SemiImplicitEuler", semi_implicit_kernel_modules)
        state_in.clear_forces()
        eval_forces(model, state_in, control)
        eval_cloth_contact_forces(model, state_in, dt)
        eval_body_forces(model, state_in, control, dt, state_out)
        if model.particle_count:
            launch(particle_kernels(model.dtype).integrate_particles, model.particle_count,
                   inputs=[state_in.particle_q, state_in.particle_qd, state_in.particle_f, model.particles,
                           model.gravity, dt, state_out.particle_q, state_out.particle_qd])
        if model.body_count:
            launch(body_kernels(model.dtype).integrate_bodies, model.body_count,
                   inputs=[state_in.body_q, state_in.body_qd, state_in.body_f, model.bodies, model.gravity, dt,
                           state_out.body_q, state_out.body_qd])
