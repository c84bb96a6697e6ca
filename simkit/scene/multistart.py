"""Multi-start optimization: a scene's ``[optimize]`` table run from several initial points at
once, each a Ray task, the best result kept.

Start 0 begins at the scene's own initial parameters; start ``k >= 1`` at a perturbation of
them drawn from a generator seeded with ``(seed, k)``, so every start is reproducible:
material parameters (``k_mu``, ``ke``, ...) are multiplied by ``exp(u)``, velocities get
``u * max(|v|, 1 m/s)`` added to each component, muscle activations ``u`` added to each
``a_s`` and ``b_s``, with ``u`` drawn uniformly from ``[-spread, spread]`` for every number
(:func:`~simkit.scene.task.perturb_parameters`). Every start runs all its iterations; the
best is the one with the lowest loss of its optimized parameters (the lowest start number
among equals), and its checkpoint is written where ``simkit optimize`` writes one, ready for
``Optimization(scene, resume=True)`` to replay or continue.

Example::

    from simkit.scene import Optimization, load_scene, multi_start

    result = multi_start("scenes/ball_bounce.toml", starts=4, iterations=10, checkpoint="ball.npz")
    print(result.best, result.best_start.loss)
    opt = Optimization(load_scene("scenes/ball_bounce.toml"), checkpoint="ball.npz", resume=True)
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .outputs import write_atomic
from .pool import Outcome, make_runner
from .schema import read_config
from .task import run_point
from .validate import SceneError


@dataclass
class StartResult:
    """One start: ``status`` (``"ok"`` or ``"failed"``), ``attempts``, its ``initial_loss``
    (first iteration) and ``loss`` (the optimized parameters'), the loss of every iteration
    (``losses``), the run's wall ``seconds`` and the ``error`` of a failed start.

    Example::

        for s in result.starts:
            print(s.start, s.status, s.loss)
    """

    start: int
    status: str
    attempts: int
    initial_loss: float | None = None
    loss: float | None = None
    losses: list = field(default_factory=list)
    seconds: float | None = None
    error: str = ""


@dataclass
class MultiStartResult:
    """What :func:`multi_start` returns: every start's :class:`StartResult` (in start order),
    the number of the ``best`` and the ``checkpoint`` file its parameters were written to.

    Example::

        result.best_start.losses[-1]
    """

    starts: list[StartResult]
    best: int
    checkpoint: Path

    @property
    def best_start(self) -> StartResult:
        """The :class:`StartResult` of the best start.

        Example::

            result.best_start.loss
        """
        return self.starts[self.best]


def multi_start(scene: str | os.PathLike, starts: int, *, frames: int | None = None, device: str | None = None,
                iterations: int | None = None, spread: float = 0.5, seed: int = 0,
                checkpoint: str | os.PathLike | None = None, address: str | None = None,
                num_cpus: int | None = None, threads: int = 1, use_ray: bool = True,
                progress: bool = False) -> MultiStartResult:
    """Run the ``[optimize]`` table of the scene file ``scene`` from ``starts`` initial points
    (the perturbation rule is in the module docstring: ``spread``, ``seed``), each for
    ``iterations`` (default: the table's), as Ray tasks (``address``, ``num_cpus``,
    ``threads`` and ``use_ray`` as for :func:`~simkit.scene.sweeps.sweep`), and write the
    checkpoint of the best start to ``checkpoint`` (default: ``optimize.checkpoint``),
    atomically. A failed start is run once more, then left out. A SceneError for a bad
    scene or option before anything runs; a RuntimeError naming each start's error when
    every start failed.

    Example::

        result = multi_start("scenes/spring_walker.toml", starts=8, iterations=5, frames=40)
        print([round(s.loss, 4) for s in result.starts], "best:", result.best)
    """
    path = Path(scene)
    config = read_config(path, device=device, frames=frames)
    if config.optimize is None:
        raise SceneError(path, "optimize", "missing; the scene has no [optimize] table, so there is nothing to "
                                           "optimize (see docs/scenes.md)")
    if isinstance(starts, bool) or not isinstance(starts, int) or starts < 1:
        raise SceneError(path, "--starts", f"expected an integer >= 1, got {starts!r}")
    if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1):
        raise SceneError(path, "--iterations", f"expected an integer >= 1, got {iterations!r}")
    if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not 0.0 <= spread < 50.0:
        raise SceneError(path, "--spread", f"expected a number in [0, 50), got {spread!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SceneError(path, "--seed", f"expected an integer >= 0, got {seed!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"multi_start(threads=...): expected an integer >= 1, got {threads!r}")
    target = Path(config.optimize["checkpoint"] if checkpoint is None else checkpoint)
    results: dict[int, StartResult] = {}
    checkpoints: dict[int, bytes] = {}
    from tqdm import tqdm

    bar = tqdm(total=starts, unit="start", desc=path.stem, disable=not progress, file=sys.stderr, dynamic_ncols=True)

    def record(outcome: Outcome) -> None:
        k = outcome.key
        if outcome.ok:
            v = outcome.value
            results[k] = StartResult(k, "ok", outcome.attempts, v["metrics"]["initial_loss"], v["metrics"]["loss"],
                                     list(v["losses"]), v["seconds"])
            checkpoints[k] = v["checkpoint"]
        else:
            results[k] = StartResult(k, "failed", outcome.attempts, error=outcome.error or "")
        bar.update()

    jobs = [(k, {"scene_path": str(path.resolve()), "overrides": {}, "frames": frames, "device": device,
                 "optimize": True, "iterations": iterations, "start": k, "spread": float(spread), "seed": seed,
                 "threads": threads}) for k in range(starts)]
    try:
        with make_runner(use_ray, address, num_cpus, cpus_per_job=threads) as runner:
            runner.run(run_point, jobs, record)
    finally:
        bar.close()
    ordered = [results[k] for k in range(starts)]
    ok = [s for s in ordered if s.status == "ok"]
    if not ok:
        raise RuntimeError(f"{path}: every one of the {starts} starts failed: "
                           + "; ".join(f"start {s.start}: {s.error}" for s in ordered))
    best = min(ok, key=lambda s: (s.loss, s.start)).start
    write_atomic(target, checkpoints[best])
    return MultiStartResult(ordered, best, target)


__all__ = ["multi_start", "MultiStartResult", "StartResult"]
