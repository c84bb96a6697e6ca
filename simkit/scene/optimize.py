"""Running a scene's ``[optimize]`` table: parameters, loss, optimizer, resumable checkpoints.

Each iteration writes the parameters into the model, the initial state or the muscles'
controls under a Tape, runs the scene as a checkpointed :class:`~simkit.optim.Rollout`,
backpropagates the loss into the parameters and takes an optimizer step. Parameters:

- ``BODY.velocity``: the initial velocity shared by a body's particles (or a rigid body's
  linear velocity), 3 numbers;
- ``BODY.k_mu`` / ``k_lambda`` / ``k_damp`` (cloth, soft bodies), ``BODY.ke`` / ``kd``
  (springs): one material value for the whole body, optimized on a log scale
  (``value = initial * exp(theta)``, theta starting at 0);
- ``BODY.activation`` (springs with a muscle): the gait pair ``(a, b)`` of every spring.

Losses: ``position`` (squared distance of the body's final center to a target, over some
axes) and ``travel`` (minus how far the body's center moved along a direction).

A checkpoint (``.npz``: parameters, optimizer state, loss history, iteration, and a
fingerprint of the scene) is written atomically every ``checkpoint_every`` iterations, at
the end, and when the run is interrupted (Ctrl-C), holding the last completed iteration;
``Optimization(..., resume=True)`` continues from it and ends where an uninterrupted run
would have.

Example::

    scene = load_scene("scenes/ball_bounce.toml")
    opt = Optimization(scene, iterations=10)
    opt.run()
    final_loss, run = opt.replay(usd_path="ball.usda")
"""

from __future__ import annotations

import importlib
import json
import math
import os
import uuid
import zipfile
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

from ..autograd.tape import Tape
from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from ..optim.optimizers import SGD, Adam
from ..optim.rollout import Rollout
from ..sim.model import State
from ..sim.stability import StabilityCheck
from .build import Body, Scene
from .objectives import scene_kernels
from .outputs import save_figure
from .run import RunResult, SimulationError, run_scene
from .validate import SceneError

CHECKPOINT_FORMAT = "simkit-optimize-checkpoint"
CHECKPOINT_VERSION = 1


# ----------------------------------------------------------------------------------
# Parameters
# ----------------------------------------------------------------------------------

class Parameter:
    """One entry of ``optimize.parameters`` (``spec`` = ``"body.what"``): ``array`` is the sk
    array the optimizer updates; :meth:`apply` writes it where the simulation reads it (under
    a Tape while optimizing), :meth:`targets` lists the arrays it writes.

    Example::

        p = opt.parameters[0]
        p.spec, p.array.numpy(), p.describe()
    """

    def __init__(self, spec: str, body: Body, what: str, opt: "Optimization"):
        self.spec, self.body, self.what = spec, body, what
        self.scene = opt.scene
        self.kernels = scene_kernels(opt.scene.model.dtype)

    array: A.Array

    def apply(self, opt: "Optimization") -> None:
        """Write the parameter's value where the simulation of ``opt`` reads it.

        Example::

            with sk.Tape() as tape:
                p.apply(opt)
        """
        raise NotImplementedError

    def targets(self, opt: "Optimization") -> list[A.Array]:
        """The arrays :meth:`apply` writes, whose grads carry the gradient back to ``array``.

        Example::

            tape.backward(grads={a: a.grad for a in p.targets(opt)})
        """
        raise NotImplementedError

    def describe(self) -> str:
        """The parameter's current value in words.

        Example::

            p.describe()        # 'ball.velocity = (1.9676, 2.9798, 0.4919) m/s'
        """
        raise NotImplementedError


class VelocityParameter(Parameter):
    """``BODY.velocity``: one velocity for every particle of the body (pinned ones stay at
    rest), or a rigid body's linear velocity (its angular velocity stays as configured)."""

    def __init__(self, spec: str, body: Body, what: str, opt: "Optimization"):
        super().__init__(spec, body, what, opt)
        real = opt.scene.model.dtype
        self.array = A.array(np.array([body.config["velocity"]]), dtype=T.vector(3, real),
                             device=opt.scene.model.device, requires_grad=True)
        self.spin = T.vector(3, real)(*body.config.get("angular_velocity", (0.0, 0.0, 0.0)))

    def apply(self, opt: "Optimization") -> None:
        if self.body.body >= 0:
            launch(self.kernels.set_body_velocity, 1, inputs=[self.array, self.body.body, self.spin, opt.s0.body_qd])
        else:
            launch(self.kernels.set_velocity, len(self.body.particles),
                   inputs=[self.array, self.body.particles.start, self.scene.model.particles.inv_mass,
                           opt.s0.particle_qd])

    def targets(self, opt: "Optimization") -> list[A.Array]:
        return [opt.s0.body_qd if self.body.body >= 0 else opt.s0.particle_qd]

    def describe(self) -> str:
        v = self.array.numpy()[0]
        return f"{self.spec} = ({v[0]:.4f}, {v[1]:.4f}, {v[2]:.4f}) m/s"


class MaterialParameter(Parameter):
    """``BODY.k_mu`` and the like: one value for the whole body, ``initial * exp(theta)``."""

    FIELDS = {"springs": "springs", "cloth": "triangles", "soft_grid": "tets", "soft_mesh": "tets"}

    def __init__(self, spec: str, body: Body, what: str, opt: "Optimization"):
        super().__init__(spec, body, what, opt)
        model = opt.scene.model
        group = self.FIELDS[body.kind]
        self.target: A.Array = getattr(getattr(model, group), what)
        self.range: range = getattr(body, group)
        self.base = float(body.config[what])
        self.array = A.array(np.zeros(1), dtype=model.dtype, device=model.device, requires_grad=True)

    @property
    def value(self) -> float:
        """The material value the parameter stands for now.

        Example::

            p.value             # base * exp(theta)
        """
        return self.base * math.exp(float(self.array.numpy()[0]))

    def apply(self, opt: "Optimization") -> None:
        launch(self.kernels.set_scaled, len(self.range),
               inputs=[self.array, self.base, self.range.start, self.target])

    def targets(self, opt: "Optimization") -> list[A.Array]:
        return [self.target]

    def describe(self) -> str:
        return f"{self.spec} = {self.value:.6g} (x{self.value / self.base:.4g} of the initial {self.base:g})"


class ActivationParameter(Parameter):
    """``BODY.activation``: the gait pairs ``(a, b)`` of every spring of a muscle."""

    def __init__(self, spec: str, body: Body, what: str, opt: "Optimization"):
        super().__init__(spec, body, what, opt)
        self.array = body.muscle.params
        self.array.requires_grad = True

    def apply(self, opt: "Optimization") -> None:
        opt.actuate_controls()

    def targets(self, opt: "Optimization") -> list[A.Array]:
        return [c.spring_activation for c in opt.controls]

    def describe(self) -> str:
        ab = np.asarray(self.array.numpy(), dtype=np.float64)
        gain = np.hypot(ab[:, 0], ab[:, 1])
        return (f"{self.spec}: {len(ab)} springs, gain {gain.min():.3g}..{gain.max():.3g} "
                f"(mean {gain.mean():.3g})")


# ----------------------------------------------------------------------------------
# Loss
# ----------------------------------------------------------------------------------

class SceneLoss:
    """The loss of ``optimize.loss`` as Rollout wants it: ``loss(state, out)`` adds to the
    one-element array ``out``. ``value(state)`` evaluates it without a Tape.

    Example::

        loss = SceneLoss(scene, scene.optimize["loss"])
        loss.value(final_state)
    """

    def __init__(self, scene: Scene, spec: dict):
        self.scene, self.spec = scene, spec
        self.body = scene.bodies[spec["body"]]
        model = scene.model
        self.real = model.dtype
        self.vec3 = T.vector(3, self.real)
        self.kernels = scene_kernels(self.real)
        if spec["kind"] == "position":
            self.target = self.vec3(*spec["target"])
            self.mask = self.vec3(*(1.0 if a in spec["axes"] else 0.0 for a in "xyz"))
        else:
            self.start = self.vec3(*self.body.center_start(model))
            self.direction = self.vec3(*spec["direction"])

    def __call__(self, state: State, out: A.Array) -> None:
        k, body = self.kernels, self.body.body
        first, n = self.body.particles.start, len(self.body.particles)
        if self.spec["kind"] == "travel":
            if body >= 0:
                launch(k.body_travel, 1, inputs=[state.body_q, body, self.start, self.direction, out])
            else:
                launch(k.particle_travel, n, inputs=[state.particle_q, first, 1.0 / n, self.start, self.direction, out])
        elif body >= 0:
            launch(k.body_distance, 1, inputs=[state.body_q, body, self.target, self.mask, out])
        elif n == 1:
            launch(k.point_distance, 1, inputs=[state.particle_q, first, self.target, self.mask, out])
        else:  # the squared distance of a mean needs the mean first
            center = A.zeros(1, dtype=self.vec3, device=self.scene.model.device)
            launch(k.particle_center, n, inputs=[state.particle_q, first, 1.0 / n, center])
            launch(k.squared_distance, 1, inputs=[center, self.target, self.mask, out])

    def value(self, state: State) -> float:
        """The loss of ``state`` (no Tape).

        Example::

            loss.value(result.final_state)
        """
        out = A.zeros(1, dtype=self.real, device=self.scene.model.device)
        self(state, out)
        return float(out.numpy()[0])

    def describe(self) -> str:
        """The loss in words.

        Example::

            loss.describe()     # "squared distance (xyz) of ball's final center to (1.8, 0.8, 0.45), m^2"
        """
        s = self.spec
        if s["kind"] == "position":
            t = ", ".join(f"{v:g}" for v in s["target"])
            return f"squared distance ({s['axes']}) of {s['body']}'s final center to ({t}), m^2"
        d = ", ".join(f"{v:.3g}" for v in s["direction"])
        return f"minus the distance {s['body']}'s center travels along ({d}), m"


# ----------------------------------------------------------------------------------
# The optimization
# ----------------------------------------------------------------------------------

_PARAMETERS = {"velocity": VelocityParameter, "activation": ActivationParameter}


class Optimization:
    """The ``[optimize]`` table of ``scene`` ready to run: ``iterations`` (default: the
    table's) in total, those of a resumed checkpoint included (fewer than the checkpoint
    holds is a SceneError), checkpoints at ``checkpoint`` (default: the table's ``checkpoint``,
    relative to the working directory); ``resume=True`` first loads the checkpoint (a
    SceneError when there is none, or when it was written for another version of the scene).

    ``parameters`` (:class:`Parameter`), ``loss`` (:class:`SceneLoss`), ``optimizer``,
    ``losses`` (one per completed iteration, before its update), ``iteration`` (completed
    iterations) and ``saved_iteration`` (the iteration the checkpoint file holds, None before
    the first save) are public.

    Example::

        opt = Optimization(scene, checkpoint="ball.npz")
        opt.run(on_iteration=lambda it, loss: print(it, loss))
    """

    def __init__(self, scene: Scene, *, iterations: int | None = None, checkpoint: str | os.PathLike | None = None,
                 resume: bool = False):
        if scene.optimize is None:
            raise SceneError(scene.path, "optimize", "missing; the scene has no [optimize] table, so there is "
                                                     "nothing to optimize (see docs/scenes.md)")
        self.scene = scene
        self.settings = scene.optimize
        if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, int)
                                       or iterations < 1):
            raise SceneError(scene.path, "--iterations", f"expected an integer >= 1, got {iterations!r}")
        self.iterations = self.settings["iterations"] if iterations is None else iterations
        self.checkpoint_path = Path(self.settings["checkpoint"] if checkpoint is None else checkpoint)
        self.s0 = scene.initial_state()
        self.controls = scene.frame_controls()
        self.parameters: list[Parameter] = []
        for spec in self.settings["parameters"]:
            name, what = spec.split(".")
            cls = _PARAMETERS.get(what, MaterialParameter)
            self.parameters.append(cls(spec, scene.bodies[name], what, self))
        self.loss = SceneLoss(scene, self.settings["loss"])
        st = scene.settings
        self.rollout = Rollout(scene.model, scene.integrator, steps=st.frames, substeps=st.substeps,
                               dt=st.frame_dt, loss=self.loss, control=self.controls, checkpoint_every="auto",
                               check=StabilityCheck(every=st.substeps))
        arrays = [p.array for p in self.parameters]
        lr = self.settings["learning_rate"]
        self.optimizer = Adam(arrays, lr=lr) if self.settings["optimizer"] == "adam" else SGD(arrays, lr=lr)
        self.losses: list[float] = []
        self.iteration = 0
        self.saved_iteration: int | None = None
        if resume:
            self.load_checkpoint()
            if self.iteration > self.iterations:
                if iterations is not None:
                    raise SceneError(scene.path, "--iterations",
                                     f"{iterations} iterations in all, but the checkpoint {self.checkpoint_path} "
                                     f"already holds {self.iteration}; --iterations counts every iteration, those "
                                     f"of the checkpoint included: give --iterations {self.iteration + iterations} "
                                     f"for {iterations} more")
                # resumed without --iterations from a run given more than the table's: it is done
                self.iterations = self.iteration
        self._snapshot = self._capture()

    # -- one iteration -----------------------------------------------------------------
    def actuate_controls(self) -> None:
        """Write every frame's muscle activations into the rollout's controls.

        Example::

            with sk.Tape() as tape:
                opt.actuate_controls()
        """
        if isinstance(self.controls, list):
            for frame, control in enumerate(self.controls):
                self.scene.actuate(control, frame)

    def _apply(self) -> None:
        done_controls = False
        for p in self.parameters:
            if isinstance(p, ActivationParameter):
                if done_controls:
                    continue
                done_controls = True
            p.apply(self)

    def step(self) -> float:
        """Run one iteration: loss and gradient at the current parameters, then an optimizer
        step. Returns the loss (before the step).

        Example::

            loss = opt.step()
        """
        self.optimizer.zero_grad()
        with Tape() as tape:
            self._apply()
        try:
            loss = self.rollout.run(self.s0).loss
        except SimulationError as e:
            raise SimulationError(f"{self.scene.path}: iteration {self.iteration + 1}: {e} (or, when the earlier "
                                  "iterations ran well, lower optimize.learning_rate)") from None
        if not math.isfinite(loss):
            raise SimulationError(f"{self.scene.path}: the loss is {loss} at iteration {self.iteration + 1}: the "
                                  "simulation blew up at these parameters (lower optimize.learning_rate or sim.dt)")
        grads = {}
        for p in self.parameters:
            for a in p.targets(self):
                if a.grad is not None:
                    grads[a] = a.grad
        tape.backward(grads=grads)
        self.optimizer.step()
        tape.zero()
        self.losses.append(loss)
        self.iteration += 1
        return loss

    def run(self, on_iteration: Callable[[int, float], None] | None = None) -> None:
        """Iterate until ``iterations`` are done, calling ``on_iteration(iteration, loss)``
        after each and saving a checkpoint every ``checkpoint_every`` iterations and at the
        end. On KeyboardInterrupt the last completed iteration is saved, then the interrupt
        propagates.

        Example::

            try:
                opt.run()
            except KeyboardInterrupt:
                print(f"stopped after {opt.iteration} iterations; --resume continues")
        """
        every = self.settings["checkpoint_every"]
        self._snapshot = self._capture()
        try:
            while self.iteration < self.iterations:
                loss = self.step()
                self._snapshot = self._capture()
                if self.iteration % every == 0 or self.iteration == self.iterations:
                    self.save_checkpoint()
                if on_iteration is not None:
                    on_iteration(self.iteration, loss)
        except KeyboardInterrupt:
            self.save_checkpoint()
            raise

    def replay(self, usd_path: str | os.PathLike | None = None,
               on_frame: Callable[[int, State], None] | None = None) -> tuple[float, RunResult]:
        """Run the scene with the current parameters (no Tape), writing it to ``usd_path``
        (None: no file); returns the loss of the run and the :class:`RunResult`.

        Example::

            final_loss, result = opt.replay("ball.usda")
        """
        self._apply()
        result = run_scene(self.scene, usd_path=usd_path, initial=self.s0, on_frame=on_frame)
        return self.loss.value(result.final_state), result

    # -- checkpoints -------------------------------------------------------------------
    def _capture(self) -> dict:
        """A host copy of everything a checkpoint holds, as of the last completed iteration."""
        return {"iteration": self.iteration, "losses": list(self.losses),
                "params": [np.array(p.array.numpy(), copy=True) for p in self.parameters],
                "optimizer": self.optimizer.state_dict()}

    def save_checkpoint(self) -> Path:
        """Write the state of the last completed iteration to the checkpoint file, atomically
        (a temporary file beside it, renamed onto it). Returns its path.

        Example::

            opt.save_checkpoint()
        """
        snap = self._snapshot
        state = snap["optimizer"]
        meta = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "scene": str(self.scene.path),
                "fingerprint": self.scene.config.fingerprint, "parameters": list(self.settings["parameters"]),
                "iteration": snap["iteration"],
                "optimizer": {k: (list(v) if isinstance(v, tuple) else v) for k, v in state.items() if k != "buffers"},
                "buffers": {name: len(arrays) for name, arrays in state["buffers"].items()}}
        arrays = {"meta": np.array(json.dumps(meta)), "losses": np.array(snap["losses"], dtype=np.float64)}
        for i, x in enumerate(snap["params"]):
            arrays[f"param_{i}"] = x
        for name, bufs in state["buffers"].items():
            for i, x in enumerate(bufs):
                arrays[f"buffer_{name}_{i}"] = x
        path = self.checkpoint_path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
        self.saved_iteration = snap["iteration"]
        return path

    def load_checkpoint(self) -> None:
        """Restore parameters, optimizer state, losses and the iteration count from the
        checkpoint; a SceneError (naming the checkpoint) when it is missing, unreadable or
        was written for another version of the scene.

        Example::

            opt.load_checkpoint()
        """
        path = self.checkpoint_path

        def refuse(message: str) -> SceneError:
            return SceneError(path, "", message)

        if not path.is_file():
            raise refuse("no checkpoint to resume from (run without --resume to start from the beginning)")
        damaged = ("is damaged (truncated or overwritten) or was not written by simkit optimize; delete it, or run "
                   "without --resume to start over")
        if not zipfile.is_zipfile(path):
            raise refuse(f"not a simkit checkpoint: it {damaged}")
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
                    raise refuse(f"not a simkit optimization checkpoint: it {damaged}")
                if meta.get("version") != CHECKPOINT_VERSION:
                    raise refuse(f"a simkit checkpoint of version {meta.get('version')!r}, but this simkit reads "
                                 f"version {CHECKPOINT_VERSION}; run without --resume to start over")
                losses = [float(x) for x in data["losses"]]
                params = [data[f"param_{i}"] for i in range(len(meta["parameters"]))]
                buffers = {name: [data[f"buffer_{name}_{i}"] for i in range(n)]
                           for name, n in meta["buffers"].items()}
                fingerprint, iteration = meta["fingerprint"], int(meta["iteration"])
                optimizer_state = dict(meta["optimizer"])
        except SceneError:
            raise
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, EOFError, zipfile.BadZipFile,
                zlib.error) as e:
            raise refuse(f"not a readable simkit checkpoint: it {damaged} ({type(e).__name__}: {e})") from None
        if fingerprint != self.scene.config.fingerprint or meta["parameters"] != self.settings["parameters"]:
            raise refuse(f"was written for another version of {self.scene.path} (its physics, bodies, frames, "
                         "parameters, loss or optimizer differ); delete it, or run without --resume to start over")
        for p, x in zip(self.parameters, params):
            if x.shape != p.array.numpy().shape:
                raise refuse(f"holds {p.spec} with shape {x.shape}, but the scene needs {p.array.numpy().shape}")
        state = dict(optimizer_state, buffers=buffers)
        try:
            self.optimizer.load_state_dict(state)
        except (TypeError, ValueError, KeyError) as e:
            raise refuse(f"holds an optimizer state that does not fit: {e}") from None
        self.optimizer.lr = self.settings["learning_rate"]
        for p, x in zip(self.parameters, params):
            p.array.assign(x)
        self.losses = losses
        self.iteration = iteration
        self.saved_iteration = self.iteration
        self._snapshot = self._capture()


def matplotlib_missing() -> str | None:
    """None when matplotlib can be imported, else what to do about it.

    Example::

        if (why := matplotlib_missing()) is not None:
            print(why)
    """
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        return ("--plot needs matplotlib, which is not installed; install it with "
                "pip install 'simkit[plot]' (or pip install matplotlib)")
    return None


def plot_losses(losses: list[float], path: str | os.PathLike, title: str = "") -> Path:
    """Save the loss curve as an image (format from the extension: .png, .pdf, .svg),
    atomically; a log scale when every loss is > 0. Needs matplotlib. ``losses[k]`` is the
    loss after ``k`` iterations (``k = 0``: the starting parameters), drawn at x = k: N
    iterations and the loss of their result are N + 1 points from 0 to N, as ``simkit
    optimize --plot`` draws them (``opt.losses`` plus the final replay's loss).

    Example::

        plot_losses(opt.losses + [final_loss], "loss.png", title="ball_bounce")
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    fig = Figure(figsize=(6.0, 4.0))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(np.arange(len(losses)), losses, marker="o", markersize=3)
    if losses and min(losses) > 0.0:
        ax.set_yscale("log")
    ax.set_xlabel("iterations done (0: the starting parameters)")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path)
    return path


__all__ = ["Optimization", "Parameter", "VelocityParameter", "MaterialParameter", "ActivationParameter",
           "SceneLoss", "matplotlib_missing", "plot_losses"]
