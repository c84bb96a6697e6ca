"""Steps that replay: a function of launches, called again with the same arguments, runs the
launches it recorded the last time instead of its Python.

:class:`StepCache` keeps, per set of argument objects (compared by identity), what one call
did: the launches (recorded as a :class:`~simkit.core.capture.Graph` while they ran, so the
step's own host code saw real results) and its writes to arrays outside kernels (``zero_``,
``fill_``, ``assign`` from another array), in order. A later call with the same objects, the
same ``guard`` value and the same :mod:`~simkit.core.mutation` count replays them natively:
no Python per launch, no allocation. The integrators of :mod:`simkit.sim` step through one.

What a recording bakes in, and what makes a call run (and record) again instead:

- the argument objects and ``guard`` (the caller's host-side values: ``dt``, flags);
- every scalar, struct field and array header the launches were given: changing any of them
  goes through a setter that bumps :data:`simkit.core.mutation.count` (struct fields, values
  changed in place, ``sk.config``; Model, State, Control and integrator attributes). Struct
  fields and values in place count only where a recording may hold them (:func:`hold`: the
  launches' values, and what the argument objects reach);
- a call is never recorded while a Tape, a forward-mode JVP or ``sk.capture`` is active: it
  runs as before.

A call that reads array contents on the host (``numpy()``), allocates an array, writes an
array from host data, launches on a GPU or runs an adjoint is not replayable: it keeps
running its Python, and :meth:`StepCache.entries` says why. So is one whose run changes
what the count watches. It is recorded on its second call with the same objects (the first
may create the buffers that later calls reuse).

Example::

    cache = StepCache()
    for _ in range(100):
        cache.run((x, v), dt, lambda: step(x, v, dt))   # from the 3rd call: one native replay
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable

from . import array as A
from . import compiler
from . import device as D
from . import launch as L
from . import mutation
from . import types as T
from .capture import Graph
from .config import config


# what hold() passes over at once: values with nothing in them a setter could change in place
_UNHELD = frozenset({A.Array, int, float, bool, str, type(None)})


@functools.cache
def _value_fields(struct_type: type) -> tuple[str, ...]:
    """The fields of a struct type that hold values hold() marks (vectors, matrices, structs);
    an array field is a header, replaced only through the struct's setter."""
    return tuple(name for name, t in struct_type._sk_fields.items() if getattr(t, "_sk_kind", None) != "array"
                 and not isinstance(t, T.ScalarType))


def hold(v: Any, depth: int = 2) -> None:
    """Mark every struct and vector/matrix value reachable from ``v`` (through struct fields,
    and ``depth`` levels of attributes, lists and dicts) as held by a recording: changing one
    of them then counts as a change (:mod:`simkit.core.mutation`), while values no recording
    reaches change freely (a user's own vec3 edited in a loop leaves recorded steps alone).

    Example::

        hold(model)     # model.gravity[2] = -1.62 now makes its recorded steps record again
    """
    t = type(v)
    if t in _UNHELD:
        return
    if isinstance(v, T.Composite):
        object.__setattr__(v, "_held", True)
    elif getattr(t, "_sk_kind", None) == "struct":
        object.__setattr__(v, "_held", True)
        values = v._values
        for name in _value_fields(t):
            hold(values.get(name), 0)
    elif depth and isinstance(v, (list, tuple)):
        for x in v:
            hold(x, depth - 1)
    elif depth and isinstance(v, dict):
        for x in v.values():
            hold(x, depth - 1)
    elif depth and type(v) is not A.Array and hasattr(v, "__dict__") and not isinstance(v, type):
        v.__dict__["_held"] = True   # a Model, State or Control: its setters count from now on
        for x in list(vars(v).values()):
            hold(x, depth - 1)


class Recorder:
    """The launch hook and array recorder while one call of a step runs and is recorded.
    ``adjoints``: whether adjoint launches may be recorded (a taped run's recorder,
    :mod:`simkit.autograd.tape_replay`; a step's refuses them)."""

    adjoints = False

    def __init__(self):
        self.items: list = []          # Graph, or (op name, array, argument) of a host write
        self.current: Graph | None = None
        self.reason: str | None = None

    def fail(self, why: str) -> None:
        if self.reason is None:
            self.reason = why

    def intercept(self, kernel, plan, dim, values, device, adjoint: bool) -> bool:
        """Note the launch's packed arguments; it then runs as usual (returns False)."""
        if self.reason is not None:
            return False
        if adjoint and not self.adjoints:
            self.fail(f"it runs the adjoint of {kernel.name}")
            return False
        if device is not None and device != "cpu":
            self.fail(f"{kernel.name} runs on {device} (steps replay on the CPU)")
            return False
        for v in values:
            hold(v, 0)
        try:
            plan.pack(values)
        except D.DeviceMismatch as e:
            self.fail(f"{kernel.name} runs on {e.device} (steps replay on the CPU)")
            return False
        plan.set_bounds(dim)
        if self.current is None:
            self.current = Graph("cpu")
            self.items.append(self.current)
        self.current._add(plan, values, adjoint, bytes(plan.view))
        return False

    def read(self, a: A.Array) -> None:
        self.fail(f"it reads an array's contents on the host ({T.type_name(a.dtype)}{a.shape})")

    def allocated(self, a: A.Array) -> None:
        self.fail(f"it allocates an array ({T.type_name(a.dtype)}{a.shape})")

    def op(self, name: str, a: A.Array, arg: Any) -> None:
        if name == "assign" and type(arg) is not A.Array:
            self.fail("it assigns host data to an array")
            return
        self.current = None
        self.items.append((name, a, arg))

    def program(self) -> "Program":
        for item in self.items:
            if type(item) is Graph:
                item._finish()
        return Program(self.items)


class Program:
    """What one recorded call did, in order: graphs of launches and host writes to arrays.
    ``run()`` replays it; ``launches`` names every launch and host write, in order.

    Example::

        program.launches     # ['clear_body_forces', 'joint_subspace', ...]
    """

    def __init__(self, items: list):
        self.items = items
        self._calls = [_callable(item) for item in items]
        # one graph and nothing else, the usual step: its replay is the whole run
        self.run = self._calls[0] if len(items) == 1 and type(items[0]) is Graph else self._run_all

    @property
    def launches(self) -> list[str]:
        """The kernel of each recorded launch and the name of each host write, in order."""
        out = []
        for item in self.items:
            if type(item) is Graph:
                out += [("adj_" if adjoint else "") + p.kernel.name for p, adjoint in zip(item._plans, item._adjoint)]
            else:
                out.append(f"{item[0]}()")
        return out

    def _run_all(self) -> None:
        for call in self._calls:
            call()


def _callable(item) -> Callable[[], None]:
    """One recorded item as one callable, bound once: a graph's replay, an array's
    ``zero_`` / ``fill_`` / ``assign``, a taped run's clearing and seeding of grads (writes
    that count no version) or a host-side check (:func:`on_replay`)."""
    if type(item) is Graph:
        return _replayer(item)
    name, a, arg = item
    if name == "zero_":
        return _zeroer(a)
    if name == "clear":
        return _clearer(a)
    if name == "seed":   # host data, or an sk array read at each replay
        return functools.partial(a._write, arg._np if isinstance(arg, A.Array) else arg)
    if name == "call":
        return arg
    return functools.partial(getattr(a, name), arg)


def on_replay(fn: Callable, *args: Any) -> None:
    """Run ``fn(*args)``, a step's host-side look at its results (a capacity check), now and
    again at its place in every replay of a recording that holds this call (a taped
    rollout's, :mod:`simkit.autograd.tape_replay`).

    Example::

        on_replay(solve.after_step, model.device)
    """
    if not A.recorders:
        fn(*args)
        return
    rec = A.recorders.pop()   # its host reads are the check's own, run again at each replay
    try:
        fn(*args)
    finally:
        A.recorders.append(rec)
    rec.op("call", None, functools.partial(fn, *args))


def _clearer(grads: list) -> Callable[[], None]:
    """Zero every array of ``grads`` in one native call (the contiguous CPU ones; the rest one
    by one), counting no version, as ``Tape.backward`` clears intermediate grads."""
    flat = [g for g in grads if g._np is not None and g._np.flags.c_contiguous and g._np.nbytes]
    rest = [g for g in grads if g._np is None or not g._np.flags.c_contiguous]
    ptrs = (ctypes.c_void_p * len(flat))(*[g._np.ctypes.data for g in flat])
    sizes = (ctypes.c_int64 * len(flat))(*[g._np.nbytes for g in flat])
    clear, n = compiler.runtime().sk_clear_many, len(flat)

    def run() -> None:
        clear(ptrs, sizes, n)
        for g in rest:
            g._write(0)
    run.keep = grads  # the pointers are theirs: keep them alive as long as the call
    return run


def _zeroer(a: A.Array) -> Callable[[], None]:
    """``a.zero_()`` as a replay runs it (no Tape, JVP or capture is active then): one memset
    of a contiguous CPU array's bytes and one more write counted."""
    data = a._np
    if data is None or not data.flags.c_contiguous:
        return a.zero_
    memset, ptr, size = ctypes.memset, data.ctypes.data, data.nbytes

    def zero() -> None:
        memset(ptr, 0, size)
        a._version += 1
    return zero


def _replayer(g: Graph) -> Callable[[], None]:
    """``sk.replay(g)`` without its checks (the caller made them), with everything it looks up
    bound once: the native run, then the version counts of what it wrote."""
    run, addr, n, bumps = g._run, g._jobs_addr, len(g._plans), g._bumps
    if not n:
        return lambda: None

    def replay() -> None:
        failed = run(addr, n)
        if failed >= 0:
            g._bump(failed)
            g._plans[failed].check_error()
            return
        for a, k in bumps:
            a._version += k
    return replay


class Entry:
    """One set of argument objects of a :class:`StepCache`: ``objects``, ``guard``, the
    ``program`` recorded for them (None until recorded, or when not replayable), ``reason``
    (why it is not replayable, else None) and ``replays`` (how many calls it served).

    Example::

        entry = cache.entries()[0]
        entry.program.launches if entry.program else entry.reason
    """

    __slots__ = ("objects", "guard", "epoch", "program", "reason", "replays")

    def __init__(self, objects: tuple, guard: Any, epoch: int):
        self.objects = objects
        self.guard = guard
        self.epoch = epoch
        self.program: Program | None = None
        self.reason: str | None = None
        self.replays = 0

    def __repr__(self) -> str:
        if self.program is not None:
            what = f"replays {len(self.program.launches)} launch(es), {self.replays} time(s)"
        elif self.reason is not None:
            what = f"not replayable: {self.reason}"
        else:
            what = "seen once (records on the next call)"
        return f"<step cache entry: {what}>"


class StepCache:
    """Recorded calls of one step function, for up to ``size`` sets of argument objects (a
    ping-pong loop uses two); see the module documentation.

    Example::

        cache = StepCache(size=4)
        cache.run((model, s0, s1, control), dt, lambda: body(model, s0, s1, control, dt))
    """

    def __init__(self, size: int = 4):
        self.size = size
        self._entries: dict = {}

    def entries(self) -> list[Entry]:
        """The entries, oldest first.

        Example::

            [e.reason for e in cache.entries()]
        """
        return list(self._entries.values())

    def clear(self) -> None:
        """Forget every recording.

        Example::

            cache.clear()
        """
        self._entries.clear()

    def replay(self, objects: tuple, guard: Any) -> bool:
        """Replay the call recorded for ``objects`` and ``guard`` if there is one and nothing it
        baked in has changed; True when it did (else nothing ran: call :meth:`run`).

        Example::

            if not cache.replay((x, v), dt):
                cache.run((x, v), dt, lambda: step(x, v, dt))
        """
        e = self._entries.get(tuple(map(id, objects)))  # entries hold their objects: the ids stay theirs
        # (sk.config.replay_steps and an open capture need no test here: setting the one bumps the
        # count, the other is a launch hook, as is a recorder)
        if e is None or e.program is None or e.epoch != mutation.count[0] or e.guard != guard or L.hooks:
            return False
        e.program.run()
        e.replays += 1
        return True

    def run(self, objects: tuple, guard: Any, fn: Callable[[], None]) -> bool:
        """Call ``fn()`` (a step over ``objects`` whose other host-side inputs are ``guard``),
        or replay what it did the last time when nothing it baked in has changed; True when
        it replayed.

        Example::

            cache.run((x, v), dt, lambda: step(x, v, dt))
        """
        if self.replay(objects, guard):
            return True
        if L.hooks or D.state.capturing or A.recorders or not config.replay_steps:
            fn()
            return False
        key = tuple(map(id, objects))
        e = self._entries.get(key)
        if e is not None and e.epoch == mutation.count[0] and e.guard == guard:
            if e.program is None and e.reason is None:
                self._record(e, fn)
            else:
                fn()
                e.epoch = mutation.count[0]
            return False
        fn()
        if e is not None:
            del self._entries[key]
        elif len(self._entries) >= self.size:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = Entry(objects, guard, mutation.count[0])
        return False

    def _record(self, e: Entry, fn: Callable[[], None]) -> None:
        rec = Recorder()
        for obj in e.objects:
            hold(obj)
        before = mutation.count[0]
        L.hooks.append(rec)
        A.recorders.append(rec)
        try:
            fn()
        finally:
            L.hooks.remove(rec)
            A.recorders.remove(rec)
        if mutation.count[0] != before:
            rec.fail("it changes attributes or values that launches bake in while it runs")
        e.epoch = mutation.count[0]
        if rec.reason is not None:
            e.reason = rec.reason
        else:
            e.program = rec.program()
