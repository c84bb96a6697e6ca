"""One run of a sweep or one start of a multi-start optimization: what a Ray task (or the
sequential fallback) executes, and the numbers it reports.

:func:`run_point` loads the scene with its overrides, then either runs it or runs its
``[optimize]`` table, and returns plain data (metrics, and the bytes of the USD file and
the checkpoint it was asked for), so that the process that schedules the runs is the only
one that writes the results, wherever the run took place.

Metrics of a run (:func:`final_metrics`, of the final state): ``kinetic_energy`` (J: the
particles' ``m v^2 / 2`` plus the rigid bodies' translational and rotational energy),
``com_x``, ``com_y``, ``com_z`` (m: the center of mass of everything that has mass) and
``max_speed`` (m/s: of the fastest particle or body center of mass). An optimization adds
``initial_loss`` (the loss of its first iteration), ``loss`` (the loss of the optimized
parameters) and ``iterations``.

Multi-start perturbations (:func:`perturb_parameters`): start 0 keeps the scene's initial
parameters; start ``k >= 1`` draws ``u`` uniformly from ``[-spread, spread]`` with
``numpy.random.default_rng([seed, k])``, a new draw per number:

- a material parameter (``k_mu``, ``ke``, ...; optimized on a log scale) is multiplied by
  ``exp(u)``;
- a velocity gets ``u * max(|v|, 1 m/s)`` added to each component (``|v|`` its speed);
- a muscle activation gets ``u`` added to each ``a_s`` and ``b_s``.

Example::

    out = run_point("scenes/ball_bounce.toml", {"contact.mu": 0.3}, frames=10, optimize=False)
    out["metrics"]["kinetic_energy"]
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

RUN_METRICS = ("frames", "steps", "kinetic_energy", "com_x", "com_y", "com_z", "max_speed")
OPTIMIZE_METRICS = ("initial_loss", "loss", "iterations")


def _rotation(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of quaternions ``[x, y, z, w]`` (rows)."""
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def final_metrics(scene: Any, state: Any) -> dict:
    """The metrics of ``state`` (see the module docstring) as floats.

    Example::

        final_metrics(scene, run_scene(scene).final_state)["com_y"]
    """
    model = scene.model
    energy, moment, total, speeds = 0.0, np.zeros(3), 0.0, [0.0]
    if model.particle_count:
        m = np.asarray(model.particles.mass.numpy(), dtype=np.float64)
        q = np.asarray(state.particle_q.numpy(), dtype=np.float64)
        v = np.asarray(state.particle_qd.numpy(), dtype=np.float64)
        v2 = np.einsum("ij,ij->i", v, v)
        energy += 0.5 * float(m @ v2)
        moment += m @ q
        total += float(m.sum())
        speeds.append(float(np.sqrt(v2.max())))
    if model.body_count:
        m = np.asarray(model.bodies.mass.numpy(), dtype=np.float64)
        inertia = np.asarray(model.bodies.inertia.numpy(), dtype=np.float64).reshape(-1, 3, 3)
        com = np.asarray(model.bodies.com.numpy(), dtype=np.float64).reshape(-1, 3)
        pose = np.asarray(state.body_q.numpy(), dtype=np.float64).reshape(-1, 7)
        qd = np.asarray(state.body_qd.numpy(), dtype=np.float64).reshape(-1, 6)
        rot = _rotation(pose[:, 3:])
        w, v = qd[:, :3], qd[:, 3:]
        w_body = np.einsum("nji,nj->ni", rot, w)          # R^T w: the spin in the body's frame
        v2 = np.einsum("ij,ij->i", v, v)
        energy += 0.5 * float(m @ v2) + 0.5 * float(np.einsum("ni,nij,nj->", w_body, inertia, w_body))
        moment += m @ (pose[:, :3] + np.einsum("nij,nj->ni", rot, com))
        total += float(m.sum())
        speeds.append(float(np.sqrt(v2.max())))
    if total > 0.0:
        center = moment / total
    else:
        center = np.asarray(state.particle_q.numpy(), dtype=np.float64).mean(axis=0) if model.particle_count \
            else np.asarray(state.body_q.numpy(), dtype=np.float64).reshape(-1, 7)[:, :3].mean(axis=0)
    return {"kinetic_energy": energy, "com_x": float(center[0]), "com_y": float(center[1]),
            "com_z": float(center[2]), "max_speed": max(speeds)}


def perturb_parameters(opt: Any, start: int, spread: float, seed: int) -> None:
    """Move the parameters of the :class:`~simkit.scene.Optimization` ``opt`` to the initial
    point of multi-start ``start`` (the rule is in the module docstring; start 0 is left as
    it is).

    Example::

        perturb_parameters(opt, start=3, spread=0.5, seed=0)
    """
    if start == 0:
        return
    from .optimize import ActivationParameter, MaterialParameter, VelocityParameter

    rng = np.random.default_rng([seed, start])
    for p in opt.parameters:
        x = np.array(p.array.numpy(), dtype=np.float64, copy=True)
        u = rng.uniform(-spread, spread, size=x.shape)
        if isinstance(p, MaterialParameter):
            x = x + u
        elif isinstance(p, VelocityParameter):
            x = x + u * max(float(np.linalg.norm(x)), 1.0)
        elif isinstance(p, ActivationParameter):
            x = x + u
        else:
            raise TypeError(f"multi-start does not know how to perturb {p.spec} ({type(p).__name__})")
        p.array.assign(x.astype(p.array.numpy().dtype))


def run_point(scene_path: str | os.PathLike, overrides: Mapping[str, Any] | None = None, *,
              frames: int | None = None, device: str | None = None, optimize: bool = False,
              iterations: int | None = None, usd: bool = False, start: int = 0, spread: float = 0.5,
              seed: int = 0, threads: int | None = None) -> dict:
    """Run the scene at ``scene_path`` with ``overrides``: simulate it (``optimize=False``)
    or run its ``[optimize]`` table for ``iterations`` (default: the table's) from the
    initial parameters of multi-start ``start``, then replay the optimized parameters.
    ``threads`` sets simkit's CPU threads for the run (the count before is restored after):
    the same count gives the same numbers, to the last bit, wherever the run takes place.
    Returns ``{"metrics": {...}, "losses": [...], "seconds": s, "usd": bytes or None,
    "checkpoint": bytes or None}``; the USD file (when ``usd``) and the
    checkpoint (optimizations) are written to a temporary folder and returned as bytes.

    Example::

        out = run_point("scenes/ball_bounce.toml", {"sim.dt": 1e-3}, optimize=True, iterations=5)
        out["metrics"]["loss"]
    """
    from ..core.threads import get_threads, set_threads

    if threads is None:
        return _run(scene_path, overrides, frames, device, optimize, iterations, usd, start, spread, seed)
    before = get_threads()
    set_threads(threads)
    try:
        return _run(scene_path, overrides, frames, device, optimize, iterations, usd, start, spread, seed)
    finally:
        set_threads(before)


def _run(scene_path, overrides, frames, device, optimize, iterations, usd, start, spread, seed) -> dict:
    from .build import load_scene
    from .optimize import Optimization
    from .run import run_scene

    t0 = time.perf_counter()
    scene = load_scene(scene_path, device=device, frames=frames, overrides=dict(overrides or {}))
    with tempfile.TemporaryDirectory(prefix="simkit-run-") as tmp:
        usd_path = Path(tmp) / "run.usd" if usd else None
        losses: list[float] = []
        checkpoint = None
        if optimize:
            opt = Optimization(scene, iterations=iterations, checkpoint=Path(tmp) / "checkpoint.npz")
            perturb_parameters(opt, start, spread, seed)
            opt.run()
            loss, result = opt.replay(usd_path=usd_path)
            losses = list(opt.losses)
            checkpoint = opt.checkpoint_path.read_bytes()
            extra = {"initial_loss": losses[0] if losses else loss, "loss": loss, "iterations": opt.iteration}
        else:
            result = run_scene(scene, usd_path=usd_path)
            extra = {}
        metrics = {"frames": result.frames, "steps": result.steps,
                   **final_metrics(scene, result.final_state), **extra}
        data = usd_path.read_bytes() if usd_path is not None else None
    for k, v in metrics.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise FloatingPointError(f"{k} is {v}")
    return {"metrics": metrics, "losses": losses, "seconds": time.perf_counter() - t0, "usd": data,
            "checkpoint": checkpoint}


__all__ = ["RUN_METRICS", "OPTIMIZE_METRICS", "final_metrics", "perturb_parameters", "run_point"]
