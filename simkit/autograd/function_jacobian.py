"""Jacobians of a Python function of launches (one integrator step, a short rollout) as one matrix.

``sk.autograd.jacobian(fn, inputs, outputs, mode="auto")`` runs ``fn`` (which launches
kernels, directly or through ``integrator.step``) and returns the derivative of the
listed ``outputs`` with respect to the listed ``inputs`` at the arrays' current values.

Layout: one dense float64 numpy matrix. Its rows are the components of ``outputs[0]``,
then those of ``outputs[1]``, ...; its columns the components of ``inputs[0]``, then
``inputs[1]``, ... An array's components are counted in the order of its ``.numpy()`` view
(an array of N ``vec3`` has 3N, component ``3*i + c`` being ``a[i][c]``; an array of
structs: its float fields per element). :func:`jacobian_blocks` cuts the matrix into one
block per (input, output) pair, keyed as the kernel form's result is.

Modes:

- ``"reverse"``: ``fn`` runs once under a :class:`~simkit.autograd.Tape`; then the tape's
  reverse sweep once per output component (a one-hot seed), the grads zeroed in between.
  ``fn``'s Python runs once. On the CPU the first row's sweep is recorded as it runs (its
  adjoint launches, the Python adjoints of steps such as Featherstone's solve, the clearing
  and seeding of grads) and every later row replays that natively; on a GPU and in debug
  mode each row sweeps from Python, each run of adjoint launches replayed as one graph.
- ``"forward"``: one forward-mode run (:class:`~simkit.autograd.JVP`) per input component,
  seeded one-hot. The first runs ``fn`` and records its launches and its writes outside
  kernels; the others put every array the run wrote back to its value before the run and
  replay that record: ``fn``'s Python runs once here too. The replay is exact because
  every run starts from the same values, so ``fn`` would take the same branches, launch
  the same kernels with the same arguments and write the same host data; only the
  tangents differ.
- ``"auto"`` (default): forward when the inputs have fewer components than the outputs
  (fewer columns than rows), else reverse; forward falls back to reverse when a kernel has
  no tangent rule.

What happens to the caller's arrays: afterwards they hold what one call of ``fn`` leaves
(the forward mode's replays start from the values before the call); the ``.grad`` buffers
and ``requires_grad`` flags of every array ``fn`` touched are as they were before (the
reverse mode makes the inputs require grad while it runs); nothing is recorded on a Tape
that was active around the call. If ``fn`` raises, every array it wrote is put back as the
call found it.

Example::

    integrator = sk.sim.Featherstone()
    J = sk.autograd.jacobian(lambda: integrator.step(model, s0, s1, control, dt),
                             inputs=[s0.joint_q, s0.joint_qd, control.joint_act],
                             outputs=[s1.joint_q, s1.joint_qd], mode="reverse")
    blocks = sk.autograd.jacobian_blocks(J, [s0.joint_q, s0.joint_qd, control.joint_act],
                                         [s1.joint_q, s1.joint_qd])
    blocks[(2, 1)]          # d s1.joint_qd / d control.joint_act
"""

from __future__ import annotations

import contextlib
import inspect
import math
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..core import array as _array
from ..core import launch as _launch
from ..core import types as T
from ..core.array import Array, _refuse_in_capture
from ..core.config import config
from ..core.errors import CompileError
from .components import _component_shape, _components, _set_component
from .tape_replay import TapeRecorder

__all__ = ["function_jacobian", "jacobian_blocks"]


def _describe(a: Array) -> str:
    return f"an array of {T.type_name(a.dtype)} with shape {a.shape}"


def _count(a: Array) -> int:
    return math.prod(_component_shape(a))


def _offsets(arrays: Sequence[Array]) -> list[int]:
    """Where each array's components start in the stacked vector, and the total last."""
    out = [0]
    for a in arrays:
        out.append(out[-1] + _count(a))
    return out


def _check_arrays(arrays: Any, side: str) -> list[Array]:
    if isinstance(arrays, Array) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"jacobian: {side} must be a list of sk arrays, got {type(arrays).__name__}")
    arrays = list(arrays)
    seen: dict[int, int] = {}
    for k, a in enumerate(arrays):
        if not isinstance(a, Array):
            raise TypeError(f"jacobian: {side}[{k}] must be an sk array, got {type(a).__name__} (a function's "
                            "inputs and outputs are the arrays its launches read and write)")
        if not T.holds_floats(a.dtype):
            raise TypeError(f"jacobian: {side}[{k}] is {_describe(a)}; only float arrays have a Jacobian "
                            "(integer data carries no derivative)")
        if id(a) in seen:
            raise ValueError(f"jacobian: {side}[{k}] is the same array as {side}[{seen[id(a)]}]; list each once")
        seen[id(a)] = k
    return arrays


def jacobian_blocks(J: np.ndarray, inputs: Sequence[Array], outputs: Sequence[Array]) -> dict:
    """Cut a function Jacobian into ``{(input_index, output_index): block}``, each block a view
    of ``J`` of shape ``(components of outputs[o], components of inputs[i])``.

    Example::

        J = sk.autograd.jacobian(step, inputs=[q, qd], outputs=[q1, qd1])
        dqd1_dq = sk.autograd.jacobian_blocks(J, [q, qd], [q1, qd1])[(0, 1)]
    """
    inputs, outputs = _check_arrays(inputs, "inputs"), _check_arrays(outputs, "outputs")
    cols, rows = _offsets(inputs), _offsets(outputs)
    if not isinstance(J, np.ndarray) or J.shape != (rows[-1], cols[-1]):
        shape = J.shape if isinstance(J, np.ndarray) else type(J).__name__
        raise ValueError(f"jacobian_blocks: J must be a matrix of shape {(rows[-1], cols[-1])} (output components, "
                         f"input components), got {shape}")
    return {(i, o): J[rows[o]:rows[o + 1], cols[i]:cols[i + 1]]
            for i in range(len(inputs)) for o in range(len(outputs))}


class _Program:
    """What one call of the function did, recorded while it ran (a launch hook, innermost, and a
    write hook, first): its launches and its writes outside kernels in order, each touched
    array's value and grad as the call found them, and which arrays it read and wrote."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []
        self.first: dict[int, tuple] = {}    # id -> (array, value, grad object, grad value) at first touch
        self.read: set[int] = set()
        self.written: dict[int, Array] = {}

    def touch(self, a: Array) -> None:
        if id(a) not in self.first:
            g = a._grad
            self.first[id(a)] = (a, a.numpy().copy(), g, None if g is None else g.numpy().copy())

    def intercept(self, kernel, plan, dim, values: Sequence, device, adjoint: bool) -> bool:
        if adjoint:
            raise RuntimeError(f"jacobian: the function ran an adjoint launch of '{kernel.name}'; it must run "
                               "forward launches only (the Jacobian's own passes run the adjoints)")
        reads = _launch.resolve_arrays(values, plan.reads)
        writes = _launch.resolve_arrays(values, plan.writes)
        for _k, _p, a in reads + writes:
            self.touch(a)
        self.read.update(id(a) for _k, _p, a in reads)
        self.written.update((id(a), a) for _k, _p, a in writes)
        self.ops.append(("launch", kernel, dim, list(values), device))
        return False

    def on_write(self, a: Array, source: Array | None) -> None:
        if source is a:
            return
        self.touch(a)
        if source is not None:
            self.touch(source)
            self.read.add(id(source))
            self.ops.append(("copy", a, source))
        else:  # host data (zero_, fill_, assign from numpy): what it wrote, to write again
            self.ops.append(("set", a, a.numpy().copy()))
        self.written[id(a)] = a

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        _launch.hooks.append(self)
        _array.write_hooks.insert(0, self.on_write)  # before a Tape's: it sees a copy's grad as it was
        try:
            yield
        finally:
            _launch.hooks.remove(self)
            _array.write_hooks.remove(self.on_write)

    def rewind(self) -> None:
        """Every array the call wrote back to its value before the call."""
        for key in self.written:
            a, value, _g, _gv = self.first[key]
            a._write(value)

    def replay(self) -> None:
        for op in self.ops:
            if op[0] == "launch":
                _launch.launch(op[1], op[2], op[3], device=op[4])
            else:
                op[1].assign(op[2])

    def restore_grads(self) -> None:
        """The grads (and so ``requires_grad``) of every touched array as the call found them."""
        for a, _v, g, gv in self.first.values():
            if g is None:
                if a._grad is not None:
                    a.grad = None
            else:
                if a._grad is not g:
                    a.grad = g
                g._write(gv)

    def check(self, inputs: Sequence[Array], outputs: Sequence[Array]) -> None:
        for k, a in enumerate(inputs):
            if id(a) not in self.read:
                raise ValueError(f"jacobian: inputs[{k}] ({_describe(a)}) is read by no launch the function ran, so "
                                 "its columns would be zero; list only arrays the function's launches read (is "
                                 "it the array the step reads, not a copy of it?)")
        for k, a in enumerate(outputs):
            if id(a) not in self.written:
                raise ValueError(f"jacobian: outputs[{k}] ({_describe(a)}) is written by no launch the function "
                                 "ran; list only arrays the function's launches write")


def _caller(fn: Callable, inputs: list[Array]) -> Callable[[], Any]:
    """``fn(*inputs)`` when its signature takes one argument per input, else ``fn()``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or extension callable: no signature to read
        return fn
    for args in (inputs, []):
        try:
            sig.bind(*args)
        except TypeError:
            continue
        return lambda: fn(*args)
    raise TypeError(f"jacobian: fn{sig} must take no arguments or one per input ({len(inputs)})")


@contextlib.contextmanager
def _without_outer_hooks() -> Iterator[None]:
    """Tapes, JVPs and captures active around the call do not see the Jacobian's own passes."""
    saved_hooks, saved_writes = list(_launch.hooks), list(_array.write_hooks)
    _launch.hooks.clear()
    _array.write_hooks.clear()
    try:
        yield
    finally:
        _launch.hooks[:] = saved_hooks
        _array.write_hooks[:] = saved_writes


def _reverse_sweep(tape: Any) -> list:
    """``tape.backward``'s reverse sweep, to run once per row: each run of consecutive adjoint
    launches captured as one native graph (``sk.capture``: no Python per launch when replayed),
    and in between, as Python, what a graph cannot hold: the adjoints of copies and of steps
    recorded with ``record_func``, and the check of a kernel without an adjoint. The launches
    that touch no array with a grad are left out, as ``backward`` leaves them."""
    from ..core.capture import capture
    from .tape import Tape, _Copy, _Func

    items: list = []
    pending: list = []

    def flush() -> None:
        if pending:
            with capture() as graph:
                for e in pending:
                    _launch.launch(e.kernel, e.dim, e.values, adjoint=True)
            items.append(graph)
            pending.clear()

    for e in reversed(tape.entries):
        if isinstance(e, _Func) or (isinstance(e, _Copy) and e.dst.grad is not None):
            flush()
            items.append(e.backward)
        elif isinstance(e, _Copy) or not any(a.grad is not None for a in e.arrays):
            continue
        elif not e.kernel.enable_backward:
            flush()
            items.append(lambda e=e: Tape._skip_without_adjoint(e))
        else:
            pending.append(e)
    flush()
    return items


class _RowSweeps:
    """One reverse sweep per call, from the seeds' current values: the inputs' grads zeroed
    (they accumulate), then ``tape.sweep``. The first call is recorded as it runs
    (:class:`~simkit.core.step_cache.Recorder`: the adjoint launches, those of Python steps
    recorded with ``record_func`` and what they allocate, the clears and the seeds) and later
    calls replay that natively. Where it cannot be recorded (a GPU, a Python adjoint that
    reads the host, debug mode) every call sweeps as Python, each run of adjoint launches
    replayed as one captured graph."""

    def __init__(self, tape: Any, seeds: dict, leaves: list) -> None:
        self.tape, self.seeds, self.leaves = tape, seeds, leaves
        self.program: Any = None
        self.fallback: Callable[[], None] | None = None

    def __call__(self) -> None:
        if self.program is not None:
            self.program.run()
        elif self.fallback is not None:
            self.fallback()
        elif config.mode == "debug" or _launch.hooks or _array.recorders:
            self.fallback = _captured_sweeps(self.tape, self.seeds)
            self.fallback()
        else:
            self._record()

    def _record(self) -> None:
        rec = TapeRecorder()
        _launch.hooks.append(rec)
        _array.recorders.append(rec)
        try:
            rec.op("clear", self.leaves, None)
            for g in self.leaves:
                g._write(0)
            self.tape.sweep(self.seeds)
        finally:
            _launch.hooks.remove(rec)
            _array.recorders.remove(rec)
        if rec.reason is None:
            self.program = rec.program()
        else:
            self.fallback = _captured_sweeps(self.tape, self.seeds)


def _captured_sweeps(tape: Any, seeds: dict) -> Callable[[], None]:
    """Reverse sweeps as Python: the grads cleared and seeded one by one, each run of adjoint
    launches replayed as one captured graph."""
    from ..core.capture import Graph, replay

    sweep = _reverse_sweep(tape)
    grads = [a.grad for a in tape.touched.values() if a.grad is not None]

    def row() -> None:
        for g in grads:  # leaves accumulate and intermediates must start from zero
            g._write(0)
        for a, seed in seeds.values():
            a.grad._write(seed)
        for item in sweep:
            replay(item) if isinstance(item, Graph) else item()
    return row


def _reverse(program: _Program, call: Callable, inputs: list[Array], outputs: list[Array], J: np.ndarray) -> None:
    from .tape import Tape

    for a in inputs:
        program.touch(a)
        a.requires_grad = True
    tape = Tape()
    with tape, program.recording():
        call()
    program.check(inputs, outputs)
    tape.check_overwrites()  # once: nothing runs between the rows but the adjoints
    # every output that a launch carried an input's gradient to is seeded in each row, all but
    # one component with zero; the others' rows stay zero
    seeded = [o for o in outputs if o.requires_grad]
    seeds = {id(o): (o, np.zeros(o._host_shape, o._np_dtype)) for o in seeded}
    if not seeded:
        return
    row = _RowSweeps(tape, seeds, [a.grad for a in inputs])
    cols, rows = _offsets(inputs), _offsets(outputs)
    for o, out in enumerate(outputs):
        if id(out) not in seeds:
            continue
        seed = seeds[id(out)][1]
        for r in range(_count(out)):
            _set_component(seed, out.dtype, r, 1)
            row()
            _set_component(seed, out.dtype, r, 0)
            for i, a in enumerate(inputs):
                J[rows[o] + r, cols[i]:cols[i + 1]] = _components(a.grad)


def _forward(program: _Program, call: Callable, inputs: list[Array], outputs: list[Array], J: np.ndarray) -> None:
    from .forward import JVP

    for a in inputs:
        program.touch(a)
    rows = _offsets(outputs)
    column = 0
    for a in inputs:
        seed = np.zeros(a._host_shape, a._np_dtype)
        for c in range(_count(a)):
            _set_component(seed, a.dtype, c, 1)
            fwd = JVP({a: seed})
            if column == 0:
                with fwd, program.recording():
                    call()
                program.check(inputs, outputs)
            else:
                program.rewind()
                with fwd:
                    program.replay()
            _set_component(seed, a.dtype, c, 0)
            for o, out in enumerate(outputs):
                J[rows[o]:rows[o + 1], column] = _components(fwd.tangent(out))
            column += 1
    if column == 0:  # no input component: one plain call, for its outputs and the checks
        with program.recording():
            call()
        program.check(inputs, outputs)


def function_jacobian(fn: Callable, inputs: Sequence[Array], outputs: Sequence[Array],
                      mode: str = "auto") -> np.ndarray:
    """The Jacobian of the arrays ``outputs`` with respect to the arrays ``inputs`` of the
    launches ``fn`` runs: ``sk.autograd.jacobian``'s function form (see the module docstring
    for the layout, the modes and what happens to the caller's arrays).

    ``fn`` is called as ``fn(*inputs)`` when its signature takes one argument per input,
    else as ``fn()``. Every input must be read and every output written by a launch (or a
    copy) ``fn`` runs, else ``ValueError`` names it; inputs and outputs are float sk arrays
    (``TypeError`` otherwise).

    Example::

        J = sk.autograd.jacobian(lambda: sk.sim.SemiImplicitEuler().step(model, s0, s1, None, dt),
                                 inputs=[s0.particle_q, s0.particle_qd],
                                 outputs=[s1.particle_q, s1.particle_qd])
        J.shape      # (6 * particles, 6 * particles)
    """
    if mode not in ("auto", "forward", "reverse"):
        raise ValueError(f"jacobian: mode must be 'auto', 'forward' or 'reverse', got {mode!r}")
    if not callable(fn):
        raise TypeError(f"jacobian expects an @sk.kernel or a function of launches, got {type(fn).__name__}")
    _refuse_in_capture("jacobian()")
    inputs, outputs = _check_arrays(inputs, "inputs"), _check_arrays(outputs, "outputs")
    call = _caller(fn, inputs)
    n_cols, n_rows = _offsets(inputs)[-1], _offsets(outputs)[-1]
    auto = mode == "auto"
    if auto:
        mode = "forward" if n_cols < n_rows else "reverse"
    J = np.zeros((n_rows, n_cols))
    with _without_outer_hooks():
        program = _Program()
        try:
            if mode == "reverse":
                _reverse(program, call, inputs, outputs, J)
                return J
            try:
                _forward(program, call, inputs, outputs, J)
                return J
            except CompileError:
                if not auto:
                    raise
            # a kernel without a tangent rule: the adjoints give the same matrix
            program.rewind()
            program.restore_grads()
            program = _Program()
            J[...] = 0.0
            _reverse(program, call, inputs, outputs, J)
            return J
        except BaseException:
            program.rewind()  # nothing half-written: the arrays as the call found them
            raise
        finally:
            program.restore_grads()
