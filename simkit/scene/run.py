"""Running a scene from start to end and writing it to USD.

Example::

    scene = load_scene("scenes/flag.toml")
    result = run_scene(scene, usd_path="flag.usda")
    result.steps / result.seconds        # integrator steps per second
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..sim.model import State
from .build import Scene


class SimulationError(RuntimeError):
    """A run that went wrong while simulating, e.g. positions that became NaN or infinite
    (the time step is too large for the stiffest force); no output is written.

    Example::

        try:
            run_scene(scene)
        except SimulationError as e:
            print(e)
    """


@dataclass
class RunResult:
    """What :func:`run_scene` returns: the ``final_state``, how many ``frames`` and integrator
    ``steps`` ran, the wall-clock ``seconds`` they took and the ``usd_path`` written (None
    when no file was asked for).

    Example::

        result = run_scene(scene, usd_path=None)
        result.final_state.particle_q.numpy()
    """

    final_state: State
    frames: int
    steps: int
    seconds: float
    usd_path: Path | None


def _check_finite(state: State, frame: int, scene: Scene) -> None:
    for name in ("particle_q", "body_q"):
        a = getattr(state, name)
        if a.size and not np.all(np.isfinite(a.numpy())):
            raise SimulationError(
                f"{scene.path}: the simulation became unstable at frame {frame}: {name} holds NaN or infinite "
                f"values (dt = {scene.settings.dt:g} s is too large for the stiffest spring, material or contact "
                f"of the scene; lower sim.dt, or soften the stiffness or damping)")


def run_scene(scene: Scene, *, usd_path: str | os.PathLike | None = None, initial: State | None = None,
              on_frame: Callable[[int, State], None] | None = None) -> RunResult:
    """Simulate ``scene.settings.frames`` frames from ``initial`` (default: the scene's initial
    state) and write every frame, the initial one included, to ``usd_path`` (None: no file)
    at time codes 0, 1, 2, ... played at ``scene.output["fps"]``. The file is written
    atomically when the run ends well: an error or an interrupt leaves no file behind.
    ``on_frame(frame, state)`` is called after each frame (1 .. frames). Raises
    :class:`SimulationError` when positions stop being finite.

    Example::

        result = run_scene(scene, usd_path=scene.output["usd"],
                           on_frame=lambda frame, state: bar.update(scene.settings.substeps))
    """
    stepper = scene.stepper(initial)
    frames = scene.settings.frames
    t0 = time.perf_counter()
    state = stepper.reset()
    if usd_path is None:
        for frame in range(1, frames + 1):
            state = stepper.advance(state)
            _check_finite(state, frame, scene)
            if on_frame is not None:
                on_frame(frame, state)
        return RunResult(state, frames, frames * scene.settings.substeps, time.perf_counter() - t0, None)

    from ..render.usd import UsdExporter

    path = Path(usd_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fps = scene.output["fps"]
    with UsdExporter(path, scene.model, fps=fps) as usd:
        usd.write(state, 0.0)
        for frame in range(1, frames + 1):
            state = stepper.advance(state)
            _check_finite(state, frame, scene)
            usd.write(state, frame / fps)
            if on_frame is not None:
                on_frame(frame, state)
    return RunResult(state, frames, frames * scene.settings.substeps, time.perf_counter() - t0, path.resolve())
