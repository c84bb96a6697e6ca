"""Taped runs that replay: a forward recorded on a Tape and its backward, run again over the
same objects, replay natively (no Python per launch, no allocation, no recording).

:class:`TapedRun` keeps one recording. Its ``run(objects, guard, forward)`` calls
``forward(user)`` under a Tape and backpropagates from the loss it returns; ``user(fn,
*args)`` is how ``forward`` calls code that is not the library's (a loss function). Like a
step (:mod:`simkit.core.step_cache`), a run is recorded on its second call with the same
objects, and every later call replays:

- the forward's launches and host writes (``zero_``, ``fill_``, ``assign`` between
  arrays), as the Tape saw them;
- the backward's clearing of intermediate grads (one native call), its seed and its
  adjoint launches, in the order ``Tape.backward`` runs them, so gradients are bit-identical;
- the host-side checks the steps asked for (:func:`simkit.core.step_cache.on_replay`).

What makes a call run (and record) again instead of replaying, so it never replays stale:

- other objects or another ``guard`` (the caller's host-side values: ``dt``, step counts);
- any change the mutation count sees (struct fields, values in place, Model / State /
  Control / integrator attributes, ``sk.config``);
- a grad allocated, dropped or replaced on any array the run touched (``requires_grad``);
- a user function that would launch anything else now: before each replay every ``user``
  call runs its Python with its launches checked against the recorded ones (same kernel,
  same packed arguments: the same arrays and scalars) and not run; any difference, or a
  host read, write or allocation in it, makes the call run normally.

Not replayable (the run keeps going through the Tape, and :attr:`TapedRun.reason` says why):
a run that reads array contents on the host between its launches, assigns host data, runs
on a GPU, records copies with a gradient (``clone``/``copy`` of an array that requires
grad) or Python adjoints that read the host; and every run in debug mode.

Example::

    taped = TapedRun()
    def forward(user):
        integrator.step(model, s0, s1, None, dt)
        user(final_loss, s1, loss)
        return loss, s1
    for _ in range(100):
        out, replayed = taped.run((model, integrator, s0, s1, loss), dt, forward)
"""

from __future__ import annotations

from typing import Any, Callable

from ..core import array as A
from ..core import device as D
from ..core import launch as L
from ..core import mutation
from ..core.array_base import grad_changes
from ..core.config import config
from ..core.step_cache import Program, Recorder, hold
from .tape import Tape, _Copy


class TapeRecorder(Recorder):
    """The recorder of a taped run: takes the adjoint launches of its backward, lets it
    allocate (what a step allocates under a Tape, and the grads the Tape gives, live as long
    as the recording), and notes the launches of each ``user`` call to check them before a
    replay."""

    adjoints = True

    def __init__(self):
        super().__init__()
        self.user: list | None = None       # the launches of the user call running now
        self.users: list = []               # per user call: (fn, args, [(plan, args bytes)])

    def intercept(self, kernel, plan, dim, values, device, adjoint: bool) -> bool:
        super().intercept(kernel, plan, dim, values, device, adjoint)
        if self.user is not None and self.reason is None:
            self.user.append((plan, bytes(plan.view)))
        return False

    def allocated(self, a: A.Array) -> None:
        pass

    def op(self, name: str, a: A.Array, arg: Any) -> None:
        if self.user is not None:
            self.fail(f"a user function writes an array on the host ({name})")
        super().op(name, a, arg)


class _Mismatch(Exception):
    pass


class _Checker:
    """While a user call runs before a replay: its launches are compared with the recorded
    ones and not run; a host read, write or allocation stops it (nothing is written)."""

    def __init__(self, expected: list):
        self.expected = expected
        self.k = 0

    def intercept(self, kernel, plan, dim, values, device, adjoint: bool) -> bool:
        if adjoint or self.k >= len(self.expected) or self.expected[self.k][0] is not plan:
            raise _Mismatch
        try:
            plan.pack(values)
        except D.DeviceMismatch:
            raise _Mismatch from None
        plan.set_bounds(dim)
        if bytes(plan.view) != self.expected[self.k][1]:
            raise _Mismatch
        self.k += 1
        return True

    def read(self, a: A.Array) -> None:
        raise _Mismatch

    def allocated(self, a: A.Array) -> None:
        raise _Mismatch

    def op(self, name: str, a: A.Array, arg: Any) -> None:
        raise _Mismatch


class _Recording:
    __slots__ = ("objects", "guard", "epoch", "program", "users", "arrays", "grads", "grad_epoch", "out", "mode")


def _grads(arrays: list) -> list:
    return [id(a._grad) for a in arrays]


def _free() -> bool:
    """Whether nothing else is recording or capturing launches now."""
    return not (L.hooks or D.state.capturing or A.recorders)


def _seeds(tape: Tape, seeds: Any) -> dict:
    """The checked seeds of a run's backward: a one-element loss array is seeded with 1; a
    function of the Tape gives ``backward``'s ``grads`` (sk arrays on the CPU are read when the
    sweep writes them, so a replay seeds from their values then)."""
    return tape.seeds(loss=seeds) if isinstance(seeds, A.Array) else tape.seeds(grads=seeds(tape))


class TapedRun:
    """One recorded taped run; see the module documentation.

    ``replays``: how many calls the recording served; ``reason``: why the last recorded call
    could not be replayed (None when it can, or before any recording).

    Example::

        taped = TapedRun()
        out, replayed = taped.run((model, s0, s1, loss), dt, forward)
        taped.reason
    """

    def __init__(self):
        self._rec: _Recording | None = None
        self._seen: tuple | None = None
        self.replays = 0
        self.reason: str | None = None

    def clear(self) -> None:
        """Forget the recording (and what it keeps alive).

        Example::

            taped.clear()
        """
        self._rec = None
        self._seen = None

    def run(self, objects: tuple, guard: Any, forward: Callable) -> tuple[Any, bool]:
        """``forward(user)`` under a Tape, then backward from what it returns first: a
        one-element loss array (seeded with 1), or a function ``seeds(tape)`` giving the
        ``grads`` of :meth:`~simkit.autograd.Tape.backward` (its sk array seeds are among
        ``objects``); or the replay of what the last such call did. Returns what ``forward``
        returned second, and whether it was a replay.

        Example::

            out, replayed = taped.run((model, s0, s1, loss), dt, forward)
        """
        r = self._rec
        if r is not None and self._replayable(r, objects, guard):
            r.program.run()
            self.replays += 1
            return r.out, True
        key = (tuple(map(id, objects)), guard)
        if _free() and config.replay_steps and config.mode != "debug" and self._seen == (key, mutation.count[0]):
            return self._record(objects, guard, forward), False
        tape = Tape()
        with tape:
            seeds, out = forward(lambda fn, *args: fn(*args))
        tape.sweep(_seeds(tape, seeds))
        self._seen = (key, mutation.count[0])
        return out, False

    def _replayable(self, r: _Recording, objects: tuple, guard: Any) -> bool:
        if r.epoch != mutation.count[0] or r.guard != guard or len(objects) != len(r.objects) \
                or any(a is not b for a, b in zip(objects, r.objects)) or r.mode != config.mode or not _free():
            return False
        if r.grad_epoch != grad_changes[0]:   # some grad changed somewhere: are the run's own as recorded?
            if _grads(r.arrays) != r.grads:
                return False
            r.grad_epoch = grad_changes[0]
        for fn, args, launches in r.users:
            checker = _Checker(launches)
            L.hooks.append(checker)
            A.recorders.append(checker)
            try:
                fn(*args)
            except _Mismatch:
                return False
            finally:
                L.hooks.remove(checker)
                A.recorders.remove(checker)
            if checker.k != len(launches):
                return False
        return True

    def _record(self, objects: tuple, guard: Any, forward: Callable) -> Any:
        rec = TapeRecorder()
        for obj in objects:
            hold(obj)

        def user(fn, *args):
            rec.user = []
            try:
                fn(*args)
            finally:
                rec.users.append((fn, args, rec.user))
                rec.user = None

        before = mutation.count[0]
        tape = Tape()
        L.hooks.append(rec)   # outside the tape: the tape records a launch (and gives grads) first
        A.recorders.append(rec)
        try:
            with tape:
                seeds, out = forward(user)
            if any(isinstance(e, _Copy) for e in tape.entries):
                rec.fail("it copies an array that requires grad (clone/copy/assign), whose adjoint runs on the host")
            tape.sweep(_seeds(tape, seeds))
        finally:
            L.hooks.remove(rec)
            A.recorders.remove(rec)
        if mutation.count[0] != before:
            rec.fail("it changes attributes or values that launches bake in while it runs")
        self._seen = None
        self.reason = rec.reason
        if rec.reason is not None:
            self._rec = None
            return out
        r = _Recording()
        r.objects, r.guard, r.epoch, r.mode = objects, guard, mutation.count[0], config.mode
        r.program = rec.program()
        r.users = rec.users
        r.arrays = list(tape.touched.values())
        r.grads = _grads(r.arrays)
        r.grad_epoch = grad_changes[0]
        r.out = out
        self._rec = r
        return out
