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

from ..core import compiler
from ..sim.model import State
from ..sim.stability import BoundCheck, SimulationError, StabilityCheck
from .build import Scene


@dataclass
class RunResult:
    """What :func:`run_scene` returns: the ``final_state``, how many ``frames`` and integrator
    ``steps`` ran, the wall-clock ``seconds`` they took without compiling kernels, the
    ``compile_seconds`` spent compiling them (0 with a warm cache) and the ``usd_path``
    written (None when no file was asked for).

    Example::

        result = run_scene(scene, usd_path=None)
        result.final_state.particle_q.numpy()
    """

    final_state: State
    frames: int
    steps: int
    seconds: float
    usd_path: Path | None
    compile_seconds: float = 0.0


def scene_check(scene: Scene, initial: State) -> BoundCheck:
    """The divergence check of a scene run from ``initial``: every frame, NaN and infinity
    and the automatic speed and distance bounds of :class:`~simkit.sim.StabilityCheck`.

    Example::

        check = scene_check(scene, scene.initial_state())
    """
    st = scene.settings
    return StabilityCheck(every=st.substeps).bind(scene.model, initial, duration=st.frames * st.frame_dt)


def _check_frame(check: BoundCheck, state: State, frame: int, scene: Scene) -> None:
    st = scene.settings
    check(state, frame * st.substeps, frame * st.frame_dt, st.dt, where=f"{scene.path}: frame {frame}",
          advice="lower sim.dt (or raise sim.substeps), or soften the stiffness or damping")


def run_scene(scene: Scene, *, usd_path: str | os.PathLike | None = None, initial: State | None = None,
              on_frame: Callable[[int, State], None] | None = None) -> RunResult:
    """Simulate ``scene.settings.frames`` frames from ``initial`` (default: the scene's initial
    state) and write every frame, the initial one included, to ``usd_path`` (None: no file)
    at time codes 0, 1, 2, ... played at ``scene.output["fps"]``. The file is written
    atomically when the run ends well: an error or an interrupt leaves no file behind.
    ``on_frame(frame, state)`` is called after each frame (1 .. frames). Raises
    :class:`SimulationError`, writing nothing, when the run diverges: positions or
    velocities stop being finite, or leave the scene's bounds (see
    :class:`~simkit.sim.StabilityCheck`: far faster or farther than the scene's initial state,
    gravity and length make sense of, as after a time step far over the stability bound).

    Example::

        result = run_scene(scene, usd_path=scene.output["usd"],
                           on_frame=lambda frame, state: bar.update(scene.settings.substeps))
    """
    stepper = scene.stepper(initial)
    frames = scene.settings.frames
    t0 = time.perf_counter()
    compiled = compiler.stats["compile_seconds"]

    def result(path: Path | None) -> RunResult:
        compiling = compiler.stats["compile_seconds"] - compiled
        return RunResult(state, frames, frames * scene.settings.substeps, time.perf_counter() - t0 - compiling, path,
                         compiling)

    state = stepper.reset()
    check = scene_check(scene, state)
    if usd_path is None:
        for frame in range(1, frames + 1):
            state = stepper.advance(state)
            _check_frame(check, state, frame, scene)
            if on_frame is not None:
                on_frame(frame, state)
        return result(None)

    from ..render.usd import UsdExporter

    path = Path(usd_path)
    fps = scene.output["fps"]
    with UsdExporter(path, scene.model, fps=fps) as usd:
        usd.write(state, 0.0)
        for frame in range(1, frames + 1):
            state = stepper.advance(state)
            _check_frame(check, state, frame, scene)
            usd.write(state, frame / fps)
            if on_frame is not None:
                on_frame(frame, state)
    return result(path.resolve())
