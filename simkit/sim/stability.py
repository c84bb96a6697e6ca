"""Catching a simulation that diverged: positions or velocities that stopped being finite,
or that left any sensible range for the scene.

An explicit integrator run with a time step above its stability bound does not always end in
NaN: a stiff contact can kick a ball to 10^7 m/s in one step, after which it flies off
ballistically, finite and meaningless. So a :class:`StabilityCheck` refuses a state when

- any position or velocity (of particles or bodies) is NaN or infinite, or
- any particle or body moves faster than ``max_speed``, or
- any particle or body is farther than ``max_distance`` from the scene's initial center.

With ``"auto"`` bounds (the default) both come from the initial state and the length of the
run, with a wide margin (:data:`AUTO_MARGIN`): with ``L`` the scene's size (its initial
extent about the center of its bounding box, at least 1 m), ``v0`` the fastest initial speed,
``g`` the magnitude of gravity and ``T`` the simulated time, the speed scale is ``V = v0 +
g T + sqrt(2 g L) + 1 m/s`` (a throw, a fall for the whole run, a drop across the scene) and
the bounds are ``max_speed = AUTO_MARGIN * V`` and ``max_distance = AUTO_MARGIN * (L + V T)``.
A scene driven harder than that (an engine of its own, pre-stretched springs) needs explicit
bounds, or ``None`` for none.

The check copies positions and velocities to the host and reduces them with numpy, every
``every`` integrator steps: on the CPU this costs about one pass over the state arrays.

Example::

    check = sk.sim.StabilityCheck(every=10)
    states = sk.sim.simulate(model, integrator, model.state(), steps=1000, dt=1e-3, check=check)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .model import Model, State

# How many times the scene's own speed and size scales a state may reach before the check
# calls it diverged: wide, so that no physical motion of a passive or muscle-driven scene is
# refused (every bundled scene stays below 1/200 of the bounds it gives), while a blown-up
# explicit step (speeds of 10^4..10^8 m/s) is caught within a frame.
AUTO_MARGIN = 100.0


class SimulationError(RuntimeError):
    """A run that went wrong while simulating: positions or velocities became NaN or
    infinite, or left the bounds of a :class:`StabilityCheck` (the time step is too large for
    the stiffest spring, material or contact). No result is written.

    Example::

        try:
            sk.sim.simulate(model, integrator, state, 1000, 1e-2, check=10)
        except sk.sim.SimulationError as e:
            print(e)
    """


def _bound(value: Any, name: str) -> float | str | None:
    if value is None or value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"StabilityCheck: {name} must be a finite number > 0, 'auto' or None, got {value!r}")
    return float(value)


def _points(state: State) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(kind, array name, positions N x 3, linear velocities N x 3) of particles and bodies."""
    out = []
    if state.particle_q.size:
        q = np.asarray(state.particle_q.numpy(), dtype=np.float64).reshape(-1, 3)
        qd = np.asarray(state.particle_qd.numpy(), dtype=np.float64).reshape(-1, 3)
        out.append(("particle", "particle", q, qd))
    if state.body_q.size:
        q = np.asarray(state.body_q.numpy(), dtype=np.float64).reshape(-1, 7)
        qd = np.asarray(state.body_qd.numpy(), dtype=np.float64).reshape(-1, 6)
        out.append(("body", "body", q, qd))
    return out


class StabilityCheck:
    """Refuses a diverged state with a :class:`SimulationError`; see the module docstring for
    the criterion. ``every``: check after every ``every``-th integrator step (and after the
    last); ``max_speed`` (m/s) and ``max_distance`` (m from the scene's initial center):
    numbers, ``"auto"`` (from the initial state and the run's length) or None (no bound; only
    NaN and infinity are refused).

    ``sk.sim.simulate(..., check=N)`` and ``sk.optim.Rollout(..., check=N)`` are short for
    ``check=StabilityCheck(every=N)``.

    Example::

        check = sk.sim.StabilityCheck(every=20, max_speed=50.0, max_distance=None)
        rollout = sk.optim.Rollout(model, sk.sim.XPBD(), steps=500, dt=1e-2, loss=loss, check=check)
    """

    def __init__(self, every: int = 1, *, max_speed: float | str | None = "auto",
                 max_distance: float | str | None = "auto"):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise ValueError(f"StabilityCheck: every must be an int >= 1, got {every!r}")
        self.every = int(every)
        self.max_speed = _bound(max_speed, "max_speed")
        self.max_distance = _bound(max_distance, "max_distance")

    def __repr__(self) -> str:
        return f"StabilityCheck(every={self.every}, max_speed={self.max_speed!r}, max_distance={self.max_distance!r})"

    @staticmethod
    def coerce(check: "StabilityCheck | int | None", where: str) -> "StabilityCheck | None":
        """``check`` as a StabilityCheck: None stays None, an int N is ``StabilityCheck(every=N)``.

        Example::

            StabilityCheck.coerce(10, "simulate")
        """
        if check is None or isinstance(check, StabilityCheck):
            return check
        if isinstance(check, bool) or not isinstance(check, (int, np.integer)) or check < 1:
            raise ValueError(f"{where}: check must be None, an int >= 1 (check every N steps) or a "
                             f"sk.sim.StabilityCheck, got {check!r}")
        return StabilityCheck(every=int(check))

    def bind(self, model: Model, state: State, duration: float) -> "BoundCheck":
        """The check with its ``"auto"`` bounds worked out from ``state`` (the initial state) and
        ``duration`` (the simulated seconds of the run).

        Example::

            bound = check.bind(model, s0, duration=steps * dt)
            bound(state, step=100, time=0.1, dt=1e-3)
        """
        center, size, speed = np.zeros(3), 1.0, 0.0
        points = _points(state)
        if points:
            q = np.concatenate([p[2][:, :3] for p in points])
            v = np.concatenate([p[3][:, -3:] for p in points])
            finite = np.all(np.isfinite(q), axis=1)
            if finite.any():
                lo, hi = q[finite].min(axis=0), q[finite].max(axis=0)
                center = 0.5 * (lo + hi)
                size = max(1.0, float(np.max(np.linalg.norm(q[finite] - center, axis=1))))
            moving = np.all(np.isfinite(v), axis=1)
            if moving.any():
                speed = float(np.max(np.linalg.norm(v[moving], axis=1)))
        g = float(np.linalg.norm(np.asarray(model.gravity, dtype=np.float64)))
        scale = speed + g * duration + math.sqrt(2.0 * g * size) + 1.0
        max_speed = AUTO_MARGIN * scale if self.max_speed == "auto" else self.max_speed
        max_distance = AUTO_MARGIN * (size + scale * duration) if self.max_distance == "auto" else self.max_distance
        return BoundCheck(self.every, max_speed, max_distance, center)


class BoundCheck:
    """A :class:`StabilityCheck` with numbers for its bounds, made by :meth:`StabilityCheck.bind`;
    calling it checks one state.

    Example::

        bound = sk.sim.StabilityCheck().bind(model, s0, duration=1.0)
        bound(state, step=10, time=0.01, dt=1e-3, where="my run")
    """

    def __init__(self, every: int, max_speed: float | None, max_distance: float | None, center: np.ndarray):
        self.every, self.max_speed, self.max_distance, self.center = every, max_speed, max_distance, center

    def due(self, step: int, last: int) -> bool:
        """Whether integrator step ``step`` (1-based) of a run of ``last`` steps is checked.

        Example::

            if bound.due(k, steps): bound(state, k, k * dt, dt)
        """
        return step % self.every == 0 or step == last

    def __call__(self, state: State, step: int, time: float, dt: float, where: str = "simulate",
                 advice: str = "lower dt") -> None:
        """Raise a :class:`SimulationError` naming ``where``, the step, the time and what went
        wrong when ``state`` diverged; ``advice`` ends the message."""
        problem = self.problem(state)
        if problem is not None:
            raise SimulationError(
                f"{where}: the simulation diverged at step {step} (t = {time:.6g} s): {problem}. The time step "
                f"dt = {dt:g} s is likely too large for the stiffest spring, material or contact; {advice}")

    def problem(self, state: State) -> str | None:
        """What is wrong with ``state`` in words, or None.

        Example::

            bound.problem(state)       # 'particle_qd[0] = [nan, nan, nan] is not finite'
        """
        for kind, name, q, qd in _points(state):
            for label, a in ((f"{name}_q", q), (f"{name}_qd", qd)):
                bad = ~np.all(np.isfinite(a), axis=1)
                if bad.any():
                    i = int(np.argmax(bad))
                    return f"{label}[{i}] = {np.array2string(a[i], precision=4)} is not finite"
            if self.max_speed is not None:
                speed = np.linalg.norm(qd[:, -3:], axis=1)
                i = int(np.argmax(speed))
                if speed[i] > self.max_speed:
                    return (f"{kind} {i} moves at {speed[i]:.4g} m/s, over the bound of {self.max_speed:.4g} m/s "
                            "for this scene")
            if self.max_distance is not None:
                dist = np.linalg.norm(q[:, :3] - self.center, axis=1)
                i = int(np.argmax(dist))
                if dist[i] > self.max_distance:
                    return (f"{kind} {i} is {dist[i]:.4g} m from the scene's initial center, over the bound of "
                            f"{self.max_distance:.4g} m for this scene")
        return None
