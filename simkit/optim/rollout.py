"""Rollouts: run a simulation and a loss, and backpropagate through every step.

A :class:`Rollout` advances an initial state by ``steps`` frames (each ``substeps``
integrator steps of ``dt / substeps``, as :func:`simkit.sim.simulate`), evaluates a loss
and accumulates its gradient into the ``.grad`` of every array that requires grad: model
parameters, the initial state, controls.

Two modes, the same gradient:

- full tape (``checkpoint_every=None``): one Tape over the whole rollout, one State per
  integrator step kept alive until backward. Memory grows like T.
- checkpointed (``checkpoint_every=k``, or ``"auto"`` for k = ceil(sqrt(T))): the forward
  pass runs without a tape between two reused states and keeps a copy of positions and
  velocities every k frames. The backward pass goes through the segments from last to
  first; each is run again from its checkpoint under a fresh Tape (into a pool of k states
  reused by every segment), seeded with the gradient that flowed back into the start of
  the following segment, and backpropagated to its own start. Parameter gradients add up
  across segments. Memory grows like T / k + k, so like sqrt(T) with the default, at the
  price of running the forward twice.

The loss is user code that launches kernels adding into ``loss``, a one-element array of
the model's float type: ``loss(state, loss)`` on the final state, ``frame_loss(frame,
state, loss)`` on the state at the end of every frame (``frame`` = 1 .. steps), or both.

Example::

    @sk.kernel
    def height(q: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
        sk.atomic_add(loss, 0, q[sk.tid()][1])

    def final_height(state, loss):
        sk.launch(height, state.particle_count, inputs=[state.particle_q, loss])

    s0 = model.state(requires_grad=True)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=1000, dt=1e-3, loss=final_height,
                               checkpoint_every="auto")
    result = rollout.run(s0, wrt=[s0.particle_qd])
    result.loss, result.grads[0], result.peak_bytes
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.tape import Tape
from ..autograd.tape_replay import TapedRun
from ..core import device as D
from ..core import launch as _launch
from ..core import types as T
from ..core.array import Array, clone, copy, zeros
from ..sim.model import Control, Model, State
from ..sim.replay import reserve_steps
from ..sim.stability import BoundCheck, StabilityCheck
from ..sim.validate import normal_in

LossFn = Callable[[State, Array], None]
FrameLossFn = Callable[[int, State, Array], None]


@dataclass
class RolloutResult:
    """What :meth:`Rollout.run` returns.

    - ``loss``: the loss value;
    - ``final_state``: a new State (no grads) holding the final positions and velocities
      (of particles and bodies);
    - ``grads``: numpy copies of the ``.grad`` of each array of ``wrt``, in order;
    - ``peak_bytes``: see :attr:`Rollout.peak_bytes`.

    Example::

        result = rollout.run(s0, wrt=[model.springs.ke])
        result.grads[0]
    """

    loss: float
    final_state: State
    grads: list
    peak_bytes: int


# ----------------------------------------------------------------------------------
# The arrays a State holds (its own, and scratch that integrators and force evaluations
# attach to it, such as XPBD's per-iteration buffers or a particle hash grid)
# ----------------------------------------------------------------------------------

_SKIP = (Model, Control, type, str, bytes, int, float, bool, np.ndarray, np.generic)


def _collect(obj: Any, seen: set, out: list, depth: int) -> None:
    if isinstance(obj, _SKIP) or obj is None:
        return
    if isinstance(obj, Array):
        if id(obj) not in seen:
            seen.add(id(obj))
            out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _collect(x, seen, out, depth)
    elif isinstance(obj, dict):
        for x in obj.values():
            _collect(x, seen, out, depth)
    elif hasattr(obj, "_sk_arrays"):
        for _path, a in obj._sk_arrays():
            _collect(a, seen, out, depth)
    elif depth > 0 and hasattr(obj, "__dict__"):
        for x in vars(obj).values():
            _collect(x, seen, out, depth - 1)


def _integrated(state: State) -> list[tuple[str, Array]]:
    """The non-empty integrated fields of ``state``: what a checkpoint keeps."""
    fields = ((name, getattr(state, name, None)) for name in State.INTEGRATED)
    return [(name, a) for name, a in fields if a is not None and a.size]


def held_arrays(*objs: Any) -> list[Array]:
    """Every distinct sk array held by ``objs`` (states, arrays, lists of them), looking into the
    attributes of the objects they hold (scratch buffers) but not into models or controls.

    Example::

        sum(a.nbytes for a in held_arrays(state))
    """
    seen: set = set()
    out: list[Array] = []
    for obj in objs:
        _collect(obj, seen, out, depth=3)
    return out


def held_bytes(*objs: Any) -> int:
    """Bytes of the data and grads of :func:`held_arrays` of ``objs``.

    Example::

        held_bytes(state)     # positions, velocities, forces, their grads, XPBD scratch
    """
    return sum(a.nbytes + (a.grad.nbytes if a.grad is not None else 0) for a in held_arrays(*objs))


# ----------------------------------------------------------------------------------
# Rollout
# ----------------------------------------------------------------------------------

_NOTHING_REQUIRES_GRAD = ("Rollout.run: nothing the rollout reads requires grad (model parameters, the initial "
                          "state, controls), so every gradient would be zero; set requires_grad=True on what to "
                          "differentiate with respect to")


def _count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"Rollout: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


class Rollout:
    """A differentiable rollout of ``model`` under ``integrator`` with a loss; see the module
    docstring for the two modes.

    Parameters: ``steps`` frames of length ``dt``, each split into ``substeps`` integrator
    steps; ``control`` is None, one Control for every frame, or a sequence of one per frame;
    ``loss(state, loss)`` on the final state and/or ``frame_loss(frame, state, loss)`` after
    every frame (at least one); ``checkpoint_every`` is None (full tape), an int k (keep
    every k-th frame) or ``"auto"`` (k = ceil(sqrt(steps))); ``check`` (off by default) is a
    :class:`~simkit.sim.StabilityCheck` or an int N for ``StabilityCheck(every=N)``: the forward
    pass then raises a :class:`~simkit.sim.SimulationError` (before any backward) as soon as
    positions or velocities stop being finite or leave the scene's bounds.

    Gradients accumulate into ``.grad`` like ``tape.backward`` does: zero them between runs
    (``optimizer.zero_grad()``).

    A full-tape run (``checkpoint_every=None``) over the same initial State object as the run
    before records its launches and its backward, and every later one replays them natively,
    with bit-identical losses and gradients (:mod:`simkit.autograd.tape_replay`): the
    optimization loop's case. Write new initial values into that state (``assign``) rather
    than making a new one; the rollout keeps its states between runs for this. What makes a
    run go through the Tape again instead: any change a recorded step would see
    (:mod:`simkit.sim.replay`), a grad allocated or replaced on an array the run touched, a
    loss function that would launch anything else now (other arrays or scalars), the
    stability ``check``. It never replays on a GPU, in debug mode, with
    ``Featherstone(contact="constraint")`` (its backward branches on the contact count on the
    host), or when a loss reads arrays on the host; ``replay_reason`` says why, ``replays``
    counts the runs that replayed. A checkpointed run replays the same way, piece by piece:
    its forward pass steps through replayed steps (the integrator keeps two per frame), and
    each backward segment (recomputing its frames and backpropagating from the gradient the
    next segment left at its end) is recorded on the second run and replayed from the third,
    under the same rules; the stability ``check`` runs in the forward pass and stops nothing.

    ``peak_bytes`` (after a run): the most bytes of array data and grads the rollout held
    alive at once. Counted: every State it allocated (positions, velocities and forces of
    particles and bodies, plus the scratch that steps attach to a state, such as XPBD's
    per-iteration buffers or a particle-contact hash grid), the grads of all of these, the
    checkpoints, the gradient seeds and the loss arrays. Not counted: the model, the initial
    state and the controls (the caller's, the same in both modes), and Python objects (array
    headers and the tape's launch records, a few hundred bytes per launch, which also grow
    like T on a full tape and like sqrt(T) checkpointed). A checkpointed rollout keeps its
    pool of ``checkpoint_every * substeps + 1`` states between runs, so the next run
    allocates nothing for them.

    Example::

        rollout = sk.optim.Rollout(model, sk.sim.XPBD(), steps=200, dt=1e-2, loss=final_height,
                                   checkpoint_every=20)
        result = rollout.run(model.state(requires_grad=True))
        result.peak_bytes
    """

    def __init__(self, model: Model, integrator: Any, *, steps: int, dt: float, loss: LossFn | None = None,
                 frame_loss: FrameLossFn | None = None, substeps: int = 1,
                 control: Control | Sequence[Control] | None = None, checkpoint_every: int | str | None = None,
                 check: StabilityCheck | int | None = None):
        if not isinstance(model, Model):
            raise TypeError(f"Rollout: model must be a simkit.sim.Model, got {type(model).__name__}")
        if not callable(getattr(integrator, "step", None)):
            raise TypeError(f"Rollout: integrator must have a step(model, state_in, state_out, control, dt) method "
                            f"(e.g. sk.sim.SemiImplicitEuler()), got {type(integrator).__name__}")
        self.model = model
        self.integrator = integrator
        self.steps = _count(steps, "steps", 1)
        self.substeps = _count(substeps, "substeps", 1)
        if isinstance(dt, bool) or not isinstance(dt, (int, float, np.integer, np.floating)) \
                or not math.isfinite(dt) or dt <= 0.0:
            raise ValueError(f"Rollout: dt must be a finite number > 0, got {dt!r}")
        self.dt = normal_in(float(dt), model.dtype, "Rollout: dt")
        if loss is None and frame_loss is None:
            raise ValueError("Rollout: give loss=fn(state, loss) on the final state, frame_loss=fn(frame, state, "
                             "loss) on every frame, or both")
        for name, fn in (("loss", loss), ("frame_loss", frame_loss)):
            if fn is not None and not callable(fn):
                raise TypeError(f"Rollout: {name} must be callable, got {type(fn).__name__}")
        self.loss = loss
        self.frame_loss = frame_loss
        self.controls = self._check_control(control)
        if checkpoint_every is None:
            self.checkpoint_every: int | None = None
        elif checkpoint_every == "auto":
            self.checkpoint_every = math.isqrt(self.steps - 1) + 1
        else:
            if isinstance(checkpoint_every, str):
                raise ValueError(f"Rollout: checkpoint_every must be None, 'auto' or an int >= 1, "
                                 f"got {checkpoint_every!r}")
            self.checkpoint_every = min(_count(checkpoint_every, "checkpoint_every", 1), self.steps)
        self.check = StabilityCheck.coerce(check, "Rollout")
        self.peak_bytes = 0
        self._pool: list[State] = []
        self._states: list[State] = []
        self._full_loss: Array | None = None
        self._taped = TapedRun()
        self._bound: BoundCheck | None = None
        # checkpointed runs: the recordings of the backward segments (segments over the same
        # objects share one), kept between runs with the segment loss and seeds they bake in,
        # and whether each segment saw a grad not its own
        self._segments: dict[tuple, TapedRun] = {}
        self._foreign: list[bool] = []
        self._segment_loss: Array | None = None
        self._seeds: dict | None = None
        self._segment_replays = 0

    def _check_control(self, control: Any) -> list:
        if control is None or isinstance(control, Control):
            if control is not None and control.model is not self.model:
                raise ValueError("Rollout: control was made by another model (use model.control())")
            return [control] * self.steps
        if isinstance(control, (str, bytes)) or not isinstance(control, Sequence):
            raise TypeError(f"Rollout: control must be None, a Control or a sequence of one Control per frame, "
                            f"got {type(control).__name__}")
        if len(control) != self.steps:
            raise ValueError(f"Rollout: control has {len(control)} entries, expected one per frame ({self.steps})")
        for i, c in enumerate(control):
            if not isinstance(c, Control) or c.model is not self.model:
                raise ValueError(f"Rollout: control[{i}] must be a Control of this model (model.control()), "
                                 f"got {type(c).__name__}")
        return list(control)

    @property
    def replays(self) -> int:
        """How many runs replayed their recordings instead of running the Tape (a checkpointed
        run counts when every segment's backward replayed; see the class documentation).

        Example::

            rollout.replays        # 8 after 10 runs over the same initial state
        """
        return self._taped.replays if self.checkpoint_every is None else self._segment_replays

    @property
    def replay_reason(self) -> str | None:
        """Why the last recorded run (or backward segment) cannot replay (None when it can, or
        before any recording).

        Example::

            rollout.replay_reason  # "it reads an array's contents on the host (float64(25, 3))"
        """
        if self.checkpoint_every is None:
            return self._taped.reason
        return next((r.reason for r in self._segments.values() if r.reason is not None), None)

    @property
    def segments(self) -> int:
        """How many segments the backward pass recomputes (1 for a full tape)."""
        return 1 if self.checkpoint_every is None else -(-self.steps // self.checkpoint_every)

    # -- running ---------------------------------------------------------------------
    def run(self, state: State, wrt: Sequence[Array] = ()) -> RolloutResult:
        """Run forward from ``state`` (left unchanged, except its force accumulator), evaluate
        the loss and backpropagate; ``.grad`` of every array that requires grad receives
        d(loss)/d(array). ``wrt`` names arrays whose grads to return as numpy copies.

        Example::

            result = rollout.run(s0, wrt=[s0.particle_qd, model.triangles.k_mu])
            dv, dmu = result.grads
        """
        if not isinstance(state, State) or state.model is not self.model:
            raise ValueError("Rollout.run: state must be a State of the rollout's model (use model.state())")
        wrt = list(wrt)
        for i, a in enumerate(wrt):
            if not isinstance(a, Array):
                raise TypeError(f"Rollout.run: wrt[{i}] must be an sk array, got {type(a).__name__}")
            if not a.requires_grad:
                raise ValueError(f"Rollout.run: wrt[{i}] (array of {T.type_name(a.dtype)} with shape {a.shape}) does "
                                 "not require grad; set requires_grad=True on it before running")
        if _launch.hooks:
            raise RuntimeError("Rollout.run records its own tapes; call it outside `with sk.Tape()`")
        if D.state.capturing:
            raise RuntimeError("Rollout.run is not allowed inside sk.capture()")
        self._bound = None if self.check is None else \
            self.check.bind(self.model, state, duration=self.steps * self.dt)
        if self.checkpoint_every is None:
            value, final = self._run_full(state)
        else:
            value, final = self._run_checkpointed(state)
        return RolloutResult(value, final, [a.grad.numpy().copy() for a in wrt], self.peak_bytes)

    def _checked(self, state: State, n: int) -> None:
        """Integrator step ``n`` (1-based) of the forward pass produced ``state``."""
        bound = self._bound
        if bound is not None and bound.due(n, self.steps * self.substeps):
            h = self.dt / self.substeps
            bound(state, n, n * h, h, where="Rollout.run")

    def _new_loss(self) -> Array:
        return zeros(1, dtype=self.model.dtype, device=self.model.device)

    def _detached(self, state: State) -> State:
        out = self.model.state(requires_grad=False)
        for name, a in _integrated(state):
            copy(getattr(out, name), a)
        return out

    def _run_full(self, state: State) -> tuple[float, State]:
        model, h, n = self.model, self.dt / self.substeps, self.substeps
        states = [state, *self._full_pool()]
        loss = self._full_loss
        if loss is None:
            loss = self._full_loss = self._new_loss()

        def forward(user):
            # a run through the Tape starts from states and a loss without grads, as new ones
            # would be, so that only what depends on a grad gets one
            for a in held_arrays(states[1:], loss):
                a.requires_grad = False
            loss.zero_()
            for frame in range(self.steps):
                for sub in range(n):
                    k = frame * n + sub
                    self.integrator.step(model, states[k], states[k + 1], self.controls[frame], h)
                    self._checked(states[k + 1], k + 1)
                if self.frame_loss is not None:
                    user(self.frame_loss, frame + 1, states[(frame + 1) * n], loss)
            if self.loss is not None:
                user(self.loss, states[-1], loss)
            if not loss.requires_grad:
                raise ValueError(_NOTHING_REQUIRES_GRAD)
            return loss, None

        replayable = getattr(self.integrator, "replays_taped", None)
        if replayable is not None and replayable(model):
            objects = (model, self.integrator, state, loss, *self.controls, *states[1:])
            guard = (self.steps, self.substeps, self.dt, self.loss, self.frame_loss, self._bound is None)
            _, replayed = self._taped.run(objects, guard, forward)
        else:
            tape = Tape()
            with tape:
                forward(lambda fn, *args: fn(*args))
            tape.backward(loss=loss)
            replayed = False
        if not replayed:   # a replay holds what its recording held
            self.peak_bytes = held_bytes(states[1:], loss)
        return float(loss.numpy()[0]), self._detached(states[-1])

    def _full_pool(self) -> list[State]:
        """One state per integrator step of a full-tape run, kept between runs: a run over
        the same states (and initial state) replays (:mod:`simkit.autograd.tape_replay`)."""
        size = self.steps * self.substeps
        if len(self._states) != size:
            self._states = [self.model.state(requires_grad=False) for _ in range(size)]
            self._taped.clear()
        return self._states

    def _ensure_pool(self) -> list[State]:
        """One state per integrator step of a segment plus its start, reused by every segment
        and every run. The start state requires grad: its grad is what flows into the segment
        before it."""
        size = self.checkpoint_every * self.substeps + 1
        if len(self._pool) != size:
            self._pool = [self.model.state(requires_grad=i == 0) for i in range(size)]
        return self._pool

    def _run_checkpointed(self, state: State) -> tuple[float, State]:
        model, h, k = self.model, self.dt / self.substeps, self.checkpoint_every
        pool = self._ensure_pool()
        loss = self._new_loss()
        segment_loss = self._segment_loss = self._segment_loss or self._new_loss()
        seeds = self._seeds = self._seeds or {name: zeros(a.shape, dtype=a.dtype, device=a.device)
                                              for name, a in _integrated(state)}
        replayable = getattr(self.integrator, "replays_taped", None)
        replayable = replayable is not None and replayable(model)
        if replayable:   # two states per frame whose control is its own, so the steps replay run after run
            reserve_steps(self.integrator, 2 * len({id(c) for c in self.controls}) + 2)

        # forward: two alternating states, a copy of the integrated fields every k frames
        checkpoints: list[dict[str, Array] | None] = [None]
        cur, ping = state, (pool[0], pool[1])
        flip = 0
        for frame in range(self.steps):
            if frame and frame % k == 0:
                checkpoints.append({name: clone(a, requires_grad=False) for name, a in _integrated(cur)})
            for sub in range(self.substeps):
                nxt = ping[flip]
                flip ^= 1
                self.integrator.step(model, cur, nxt, self.controls[frame], h)
                cur = nxt
                self._checked(cur, frame * self.substeps + sub + 1)
            if self.frame_loss is not None:
                self.frame_loss(frame + 1, cur, loss)
        if self.loss is not None:
            self.loss(cur, loss)
        value = float(loss.numpy()[0])
        final = self._detached(cur)
        own = [pool, checkpoints, loss, segment_loss, seeds]
        self.peak_bytes = held_bytes(*own)
        own_ids = {id(a) for a in held_arrays(*own)}

        # backward: segments from last to first, each recomputed under its own tape (or its replay)
        last = len(checkpoints) - 1
        if len(self._foreign) != last + 1:
            self._segments.clear()
            self._foreign = [False] * (last + 1)
        replays = 0
        for seg in range(last, -1, -1):
            start = state if seg == 0 else pool[0]
            if seg:   # the pool's start is a leaf of each segment: its grad would accumulate
                for a in held_arrays(start):
                    if a.grad is not None:
                        a.grad.zero_()
                for name, a in _integrated(start):
                    a.assign(checkpoints[seg][name])
            frames = range(seg * k, min(seg * k + k, self.steps))
            forward, tape_seeds = self._segment(seg, last, start, pool, frames, segment_loss, own_ids)
            if replayable:
                objects = (model, self.integrator, start, segment_loss, *seeds.values(), *pool[1:],
                           *(self.controls[f] for f in frames))
                # what the segment's Python depends on besides its objects: a frame loss is told the frame
                guard = (seg == 0, seg == last, frames if self.frame_loss is not None else len(frames),
                         self.steps, self.substeps, self.dt, self.loss, self.frame_loss)
                _, replayed = self._segment_run(objects, guard).run(objects, guard, forward)
                replays += replayed
            else:
                tape = Tape()
                with tape:
                    forward(lambda fn, *args: fn(*args))
                tape.backward(grads=tape_seeds(tape))
                replayed = False
            if not replayed:   # a replay allocates nothing
                self.peak_bytes = max(self.peak_bytes, held_bytes(*own))
            if seg:
                for name, a in _integrated(start):
                    if a.grad is not None:  # the contacts' stuck flags are integers: no gradient
                        copy(seeds[name], a.grad)
        self._segment_replays += replays == last + 1
        return value, final

    def _segment_run(self, objects: tuple, guard: tuple) -> TapedRun:
        """The recording of the backward segments over ``objects`` and ``guard``: one for all the
        middle segments of a rollout with one control and no frame loss, one per segment otherwise;
        as many kept as there are segments (a new initial state each run leaves old ones behind)."""
        key = (tuple(map(id, objects)), guard)
        run = self._segments.pop(key, None) or TapedRun()
        self._segments[key] = run   # most recently used last
        while len(self._segments) > len(self._foreign):
            del self._segments[next(iter(self._segments))]
        return run

    def _segment(self, seg: int, last: int, start: State, pool: list[State], frames: range, segment_loss: Array,
                 own_ids: set) -> tuple[Callable, Callable]:
        """``(forward(user), seeds(tape))`` of one backward segment: the steps of ``frames`` from
        ``start`` through the pool with their losses, and the seeds of its backward: 1 on its loss,
        and on every integrated field of its end that depends on a grad, the gradient that reached
        the start of the next segment (``self._seeds``)."""
        model, h = self.model, self.dt / self.substeps

        def forward(user):
            segment_loss.zero_()
            cur, j = start, 0
            for frame in frames:
                for _ in range(self.substeps):
                    j += 1
                    self.integrator.step(model, cur, pool[j], self.controls[frame], h)
                    cur = pool[j]
                if self.frame_loss is not None:
                    user(self.frame_loss, frame + 1, cur, segment_loss)
            if seg == last and self.loss is not None:
                user(self.loss, cur, segment_loss)
            return seeds_of, None

        def seeds_of(tape: Tape) -> dict:
            grads: dict = {}
            if seg == last or self.frame_loss is not None:
                grads[segment_loss] = np.ones(1)
            if seg != last:
                end = pool[j_end]
                for name, a in _integrated(end):
                    if a.requires_grad and id(a) in tape.touched:
                        grads[a] = self._seeds[name]
            # segments that replay keep what they saw when they were recorded
            self._foreign[seg] = any(a.requires_grad and id(a) not in own_ids for a in tape.touched.values())
            if seg == 0 and not any(self._foreign):
                raise ValueError(_NOTHING_REQUIRES_GRAD)
            return grads

        j_end = len(frames) * self.substeps
        return forward, seeds_of
