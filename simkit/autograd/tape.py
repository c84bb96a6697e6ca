"""The Tape: records kernel launches and replays their adjoints in reverse.

Rules it enforces (docs/design.md, "Autodiff contract"):

- grad propagation: a recorded launch that reads an array requiring grad gives
  every float array it writes a grad (allocated at record time);
- seeding an array that no recorded launch touched is an error naming it;
- overwrite detection: each array's version counter is remembered for every
  recorded read; if a later launch overwrote it, ``backward`` refuses and names
  the kernel, the argument and the launch that overwrote it;
- ``zero()`` clears the grads of every array the tape touched, seeds and struct
  fields included;
- intermediates start from zero: ``backward`` first clears the grad of every array a
  recorded launch wrote (seeds excepted), so nothing carries over from an earlier
  backward; leaves (arrays only read) accumulate until zeroed, as in PyTorch;
- copies are recorded too: ``sk.clone``, ``sk.copy`` and ``assign`` from an array that
  requires grad pass the copy's gradient back to the source (and give the copy a grad),
  and a host write (``zero_``, ``fill_``, ``assign`` from numpy) over an array a recorded
  launch wrote stops the gradient there, as the values before it no longer matter; either
  way the array keeps the gradient of what the write left in it;
  ``clone(requires_grad=False)`` is a detached copy;
- launches that touch no array with a grad (integer bookkeeping such as a hash-grid
  build) are not replayed;
- in debug mode (``sk.config.mode = "debug"``) each recorded read is also checksummed,
  which catches writes the version counters cannot see (through a ``.numpy()`` view).

Example::

    x = sk.array([1.0, 2.0], requires_grad=True)
    loss = sk.zeros(1)
    with sk.Tape() as tape:
        sk.launch(sum_of_squares, 2, inputs=[x], outputs=[loss])
    tape.backward(loss=loss)
    x.grad.numpy()            # [2., 4.]
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any, Callable, Sequence

import numpy as np

from ..core import array as _array
from ..core import launch as _launch
from ..core import struct_array as SA
from ..core import types as T
from ..core.array import Array, _refuse_in_capture
from ..core.config import config


def _describe(a: Array) -> str:
    return f"array of {T.type_name(a.dtype)} with shape {a.shape} (id {id(a):#x})"


def _label(kernel, k: int, path: tuple) -> str:
    return ".".join((kernel.arg_names[k], *path))


def _nonzero(a: Array) -> bool:
    """Whether any value of ``a`` is nonzero (of an array of structs: any float field)."""
    h = a.numpy()
    return bool(np.any(SA.float_components(h, a.dtype) if SA.is_struct(a.dtype) else h))


def _checksum(a: Array) -> int:
    return zlib.crc32(np.ascontiguousarray(a.numpy()).view(np.uint8))


@dataclass
class _Launch:
    kernel: Any
    dim: Any
    values: list
    reads: list            # (argument index, field path, array, version its adjoint needs, what it is)
    index: int
    arrays: list           # every array it reads or writes: replayed only if one has a grad
    checksums: dict        # debug mode: id(array) -> crc32 of its data at record time


@dataclass
class _Func:
    backward: Callable
    arrays: list
    index: int


@dataclass
class _Copy:
    """A write outside kernels: ``dst`` became a copy of ``src`` (None: of host data, a constant)."""
    dst: Array
    src: Array | None
    index: int

    def backward(self) -> np.ndarray:
        """The copy's adjoint: its grad goes to the source, and none to what wrote ``dst``
        before (those values are dead). Returns that grad, which ``Tape.backward`` gives back
        to ``dst`` at the end: the gradient of what the copy left there, as a launch's output
        keeps its own. A hook of the reverse sweep with ``copied_adjoint`` (hvp's second
        order) moves its own too."""
        g = np.array(self.dst.grad.numpy(), copy=True)
        if self.src is not None and self.src.grad is not None:
            accumulate(self.src.grad, self.dst.grad)
        self.dst.grad._write(0)
        for h in _launch.hooks:
            moved = getattr(h, "copied_adjoint", None)
            if moved is not None:
                moved(self.dst, self.src)
        return g


def accumulate(into: Array, g: Array | np.ndarray) -> None:
    """``into += g`` on the host, for two grads of one shape (of an array of structs: its float fields)."""
    g = g.numpy() if isinstance(g, Array) else g
    if SA.is_struct(into.dtype):
        h = into.numpy().copy()
        SA.set_float_components(h, into.dtype, SA.float_components(h, into.dtype) + SA.float_components(g, into.dtype))
    else:
        h = into.numpy() + g.astype(into._np_dtype)
    into._write(h)


@dataclass(eq=False, repr=False)   # a Tape is itself: two that recorded the same launches are still two
class Tape:
    """Records launches inside ``with tape:``; ``backward`` replays their adjoints in reverse."""

    entries: list = field(default_factory=list)
    _touched: dict = field(default_factory=dict)  # id -> array, every array seen (``touched``)
    _structs: dict = field(default_factory=dict)  # id -> struct passed to a launch, its arrays not yet in _touched
    writers: dict = field(default_factory=dict)   # id -> [(entry index, version it produced)]
    # id -> (grad object, its version, checksum) as the last backward left each written array's grad:
    # a no-argument backward tells the user's seeds from what that backward left behind
    left: dict = field(default_factory=dict)
    seeded: set = field(default_factory=set)      # ids of the last backward's seeds

    def __repr__(self) -> str:
        return f"Tape({len(self.entries)} recorded)"

    @property
    def touched(self) -> dict:
        """``{id(array): array}`` of every array a recorded launch or copy read or wrote, and
        every array of the structs passed to them (added when first asked for: a launch of a
        model's structs would otherwise walk all their arrays at every record)."""
        if self._structs:
            for v in self._structs.values():
                for _path, a in v._sk_arrays():
                    self._touched[id(a)] = a
            self._structs.clear()
        return self._touched

    def __enter__(self) -> "Tape":
        _refuse_in_capture("recording a Tape")
        _launch.hooks.append(self)
        _array.write_hooks.append(self._written)
        return self

    def __exit__(self, *exc) -> None:
        _launch.hooks.remove(self)
        _array.write_hooks.remove(self._written)

    def _written(self, a: Array, source: Array | None) -> None:
        """A write outside kernels while recording (not while paused): a copy of an array that
        requires grad is recorded with its adjoint, and a host write over an array a recorded
        launch or copy wrote cuts the gradient of what was there before."""
        if self not in _launch.hooks or not T.holds_floats(a.dtype) or source is a:
            return
        copied = source is not None and source.requires_grad
        if not copied and id(a) not in self.writers:
            return  # host data into an array this tape never wrote: a leaf, its gradient stays
        if copied and not a.requires_grad:
            a.requires_grad = True
        index = len(self.entries)
        self.entries.append(_Copy(a, source if copied else None, index))
        self._touched[id(a)] = a
        if copied:
            self._touched[id(source)] = source
        self.writers.setdefault(id(a), []).append((index, a._version))

    # -- recording ---------------------------------------------------------------
    def intercept(self, kernel, plan, dim, values: Sequence, device, adjoint: bool) -> bool:
        """Called by ``sk.launch`` for each launch inside ``with tape:``; records forward launches
        and lets the launch run (returns False)."""
        if not adjoint:
            self.record(kernel, plan, dim, values)
        return False

    def record(self, kernel, plan, dim, values: Sequence) -> None:
        """Record one forward launch: its reads (with their versions), writes and grad propagation."""
        reads = _launch.resolve_arrays(values, plan.reads)
        writes = _launch.resolve_arrays(values, plan.writes)
        if any(a.requires_grad and T.holds_floats(a.dtype) for _k, _p, a in reads):
            for _k, _p, a in writes:
                if not a.requires_grad and T.holds_floats(a.dtype):
                    a.requires_grad = True
        index = len(self.entries)
        # each read: (argument, field path, array, the version its adjoint needs, what it is);
        # the adjoint of atomic_min/max compares against the value this launch leaves (one version on)
        needed = [(k, p, a, a._version, "read") for k, p, a in reads]
        if plan.extrema:
            needed += [(k, p, a, a._version + 1, "atomic_min/max target")
                       for k, p, a in _launch.resolve_arrays(values, plan.extrema)]
        checksums = {id(a): _checksum(a) for _k, _p, a in reads} if config.mode == "debug" else {}
        arrays = {id(a): a for _k, _p, a in reads}
        for _k, _p, a in writes:
            arrays[id(a)] = a
            self.writers.setdefault(id(a), []).append((index, a._version + 1))
        self.entries.append(_Launch(kernel, dim, list(values), needed, index, list(arrays.values()), checksums))
        self._touched.update(arrays)
        for v in values:
            if type(v) is not Array and hasattr(v, "_sk_arrays"):
                self._structs[id(v)] = v

    def record_func(self, backward: Callable[[], None], arrays: Sequence[Array]) -> None:
        """Record a step written in Python: ``backward()`` runs at its place in the reverse sweep.

        Example::

            tape.record_func(lambda: y_to_x_grad(x, y), arrays=[x, y])
        """
        arrays = list(arrays)
        for a in arrays:
            if not isinstance(a, Array):
                raise TypeError(f"record_func: arrays must be sk arrays, got {type(a).__name__}")
            self._touched[id(a)] = a
        self.entries.append(_Func(backward, arrays, len(self.entries)))

    # -- backward ----------------------------------------------------------------
    def backward(self, loss: Array | None = None, grads: dict | None = None) -> None:
        """Seed ``loss`` (a one-element array) with 1, or each array in ``grads`` with its seed,
        and accumulate gradients into ``.grad`` of every array that requires grad.

        With no arguments (Warp's idiom) the seeds are the grads already filled: every array a
        recorded launch wrote whose ``.grad`` is nonzero, either set since the last backward or
        a seed of it (what that backward left in intermediates is cleared, not replayed).

        Example::

            loss.grad.fill_(1.0)
            tape.backward()
        """
        _refuse_in_capture("tape.backward()")
        seeds = self.seeds(loss, grads)
        self.sweep(seeds)
        self.left = {key: self._grad_state(self.touched[key]) for key in self.writers
                     if self.touched[key].grad is not None}
        self.seeded = set(seeds)

    def seeds(self, loss: Array | None = None, grads: dict | None = None) -> dict:
        """The seeds of a :meth:`backward` with these arguments, checked: ``{id(array): (array,
        host data)}``.

        Example::

            tape.sweep(tape.seeds(loss=loss))   # backward's own work, without its bookkeeping
        """
        seeds = {}
        if loss is None and not grads:
            seeds = self._filled_seeds()
        if loss is not None:
            if not isinstance(loss, Array) or loss.size != 1:
                raise ValueError(f"backward(loss=...) takes a one-element sk array, got "
                                 f"{_describe(loss) if isinstance(loss, Array) else type(loss).__name__}")
            seeds[id(loss)] = (loss, np.ones(loss._host_shape, loss._np_dtype))
        for a, seed in (grads or {}).items():
            if not isinstance(a, Array):
                raise TypeError(f"backward(grads=...) keys must be sk arrays, got {type(a).__name__}")
            # a copy: the seed may be the grad of an array this backward clears first
            if SA.is_struct(a.dtype):  # structured data, its fields checked by name (struct_array.host_data)
                data = SA.host_data(seed, a.dtype, f"the seed of {_describe(a)}")
            elif self._live_seed(a, seed):
                data = seed   # read when the sweep writes it, so a replayed sweep reads it then
            else:
                data = np.array(seed.numpy() if isinstance(seed, Array) else seed, dtype=a._np_dtype, copy=True)
            if (data._host_shape if isinstance(data, Array) else data.shape) != a._host_shape:
                raise ValueError(f"seed of shape {data.shape} does not match {_describe(a)}: its seed has the "
                                 f"shape of its .numpy(), {a._host_shape}")
            seeds[id(a)] = (a, data)
        for a, _data in seeds.values():
            if id(a) not in self.touched:
                raise ValueError(f"cannot seed {_describe(a)}: no launch recorded on this tape read or wrote it")
            if not a.requires_grad:
                raise ValueError(f"cannot seed {_describe(a)}: it does not depend on any array that requires "
                                 "grad, so every gradient would be zero (set requires_grad=True on an input)")
        return seeds

    def _live_seed(self, a: Array, seed: Any) -> bool:
        """Whether the sk array ``seed`` of ``a`` can be read when the sweep writes it rather than
        copied now: host memory of ``a``'s element type and shape, and no grad of this tape, which
        the sweep could clear or accumulate into before reading it."""
        return isinstance(seed, Array) and seed._np is not None and seed.dtype == a.dtype \
            and seed._host_shape == a._host_shape and all(seed is not t._grad for t in self.touched.values())

    def sweep(self, seeds: dict) -> None:
        """The reverse sweep of :meth:`backward` for checked ``seeds`` (:meth:`seeds`): refuse
        overwritten reads, clear the grads of what recorded launches wrote, write the seeds,
        run the adjoints in reverse. Its host writes of grads are told to an array recorder
        (:mod:`simkit.core.step_cache`), so a taped run can replay them
        (:mod:`simkit.autograd.tape_replay`).

        Example::

            tape.sweep(tape.seeds(loss=loss))
        """
        self.check_overwrites()
        clear = [self.touched[key].grad for key in self.writers
                 if self.touched[key].grad is not None and key not in seeds]
        if _array.recorders:
            _array.recorders[-1].op("clear", clear, None)
        for g in clear:
            g._write(0)
        for a, data in seeds.values():
            if _array.recorders:
                _array.recorders[-1].op("seed", a.grad, data)
            a.grad._write(data._np if isinstance(data, Array) else data)
        copied = []
        for e in reversed(self.entries):
            if isinstance(e, _Func):
                e.backward()
            elif isinstance(e, _Copy):
                if e.dst.grad is not None:
                    copied.append((e.dst, e.backward()))
            elif any(a.grad is not None for a in e.arrays):
                if not e.kernel.enable_backward:
                    self._skip_without_adjoint(e)
                    continue
                _launch.launch(e.kernel, e.dim, e.values, adjoint=True)
        for dst, g in copied:
            accumulate(dst.grad, g)

    @staticmethod
    def _grad_state(a: Array) -> tuple:
        return (a.grad, a.grad._version, _checksum(a.grad))

    def _filled_seeds(self) -> dict:
        """Warp's ``tape.backward()``: the seeds are the grads the user filled, i.e. every array a
        recorded launch wrote whose grad is nonzero and was either changed since the last backward or
        one of its seeds (what a backward leaves in intermediates is cleared, not replayed). None found is an error: a
        backward with no seed would silently give all-zero gradients."""
        seeds = {}
        for key in self.writers:
            a = self.touched[key]
            if a.grad is None or not _nonzero(a.grad):
                continue
            before = self.left.get(key)
            if key not in self.seeded and before is not None and before[0] is a.grad \
                    and before[1:] == self._grad_state(a)[1:]:
                continue
            seeds[key] = (a, np.array(a.grad.numpy(), copy=True))
        if not seeds:
            raise ValueError(
                "tape.backward() with no arguments found no seed: no array a recorded launch wrote has a "
                "nonzero .grad set since the last backward, so every gradient would be zero. Fill the "
                "output's grad first (loss.grad.fill_(1.0)) or pass loss=<one-element array> or "
                "grads={array: seed, ...}")
        return seeds

    @staticmethod
    def _skip_without_adjoint(e: "_Launch") -> None:
        """A kernel declared ``enable_backward=False`` has no adjoint: skipping it is exact only
        while no gradient reached what it wrote; otherwise refuse rather than return zeros."""
        for k, path, a in _launch.resolve_arrays(e.values, _launch.plan_for(e.kernel).writes):
            if a.grad is not None and _nonzero(a.grad):
                raise RuntimeError(
                    f"kernel '{e.kernel.name}' (launch #{e.index}) was declared with enable_backward=False, but "
                    f"its output '{_label(e.kernel, k, path)}' has a nonzero gradient, which would stop there; "
                    "enable its backward or launch it outside the tape")

    def check_overwrites(self) -> None:
        """Refuse (before any adjoint runs) if a recorded read was overwritten since."""
        sums: dict = {}
        for e in self.entries:
            if isinstance(e, (_Func, _Copy)):
                continue
            for k, path, a, version, what in e.reads:
                if a._version == version:
                    if id(a) in e.checksums:
                        now = sums.get(id(a))
                        if now is None:
                            now = sums[id(a)] = _checksum(a)
                        if now != e.checksums[id(a)]:
                            raise RuntimeError(
                                f"kernel '{e.kernel.name}' (launch #{e.index}) read argument "
                                f"'{_label(e.kernel, k, path)}', whose data changed afterwards without a launch, "
                                "assign, fill_ or zero_ (written through a .numpy() view?); its adjoint would be "
                                "evaluated at the wrong values. Change recorded arrays only through simkit "
                                "(a.assign(...)) or record again.")
                    continue
                later = [i for i, v in self.writers.get(id(a), ()) if v > version]
                if later:
                    w = self.entries[later[0]]
                    by = "the same launch" if later[0] == e.index else \
                        f"a copy into it (clone/copy/assign, entry #{later[0]})" if isinstance(w, _Copy) else \
                        f"launch #{later[0]} of kernel '{w.kernel.name}'"
                else:
                    by = "a write outside this tape (assign, fill_, zero_ or an unrecorded launch)"
                label = _label(e.kernel, k, path)
                did = f"read argument '{label}'" if what == "read" else f"left argument '{label}' ({what})"
                raise RuntimeError(
                    f"kernel '{e.kernel.name}' (launch #{e.index}) {did}, which {by} overwrote "
                    "afterwards; its adjoint would be evaluated at the wrong values. Give each step its own "
                    "output buffer (e.g. one state per step) or record the overwritten values separately.")

    @property
    def gradients(self) -> "Gradients":
        """The gradients of the arrays this tape touched, by array: ``tape.gradients[x]`` is
        ``x.grad`` (Warp's spelling).

        Example::

            tape.backward(loss=loss)
            tape.gradients[x].numpy()
        """
        return Gradients(self)

    # -- housekeeping --------------------------------------------------------------
    def zero(self) -> None:
        """Zero the grad of every array this tape touched (seeds and struct fields included)."""
        for a in self.touched.values():
            if a.grad is not None:
                a.grad._write(0)

    def reset(self) -> None:
        """Zero all grads and forget every recorded launch."""
        self.zero()
        self.entries.clear()
        self._touched.clear()
        self._structs.clear()
        self.writers.clear()
        self.left.clear()
        self.seeded.clear()


class Gradients(Mapping):
    """Read-only view ``{array: array.grad}`` over the arrays a tape touched that have a grad."""

    def __init__(self, tape: Tape):
        self._tape = tape

    def _arrays(self) -> list:
        return [a for a in self._tape.touched.values() if a.grad is not None]

    def __getitem__(self, a: Array) -> Array:
        if not isinstance(a, Array):
            raise TypeError(f"tape.gradients[...] takes an sk array, got {type(a).__name__}")
        if id(a) not in self._tape.touched:
            raise KeyError(f"no launch recorded on this tape read or wrote {_describe(a)}")
        if a.grad is None:
            raise KeyError(f"{_describe(a)} has no gradient: it does not require grad")
        return a.grad

    def __iter__(self):
        return iter(self._arrays())

    def __len__(self) -> int:
        return len(self._arrays())


def active_tapes() -> list[Tape]:
    """The Tapes recording launches now (an empty list outside every ``with tape:``).

    Example::

        recording = bool(sk.autograd.active_tapes())
    """
    return [h for h in _launch.hooks if isinstance(h, Tape)]


class paused_tapes:
    """Inside ``with paused_tapes() as tapes:`` launches are not recorded by the active Tapes
    (``tapes``, returned for :meth:`Tape.record_func`); forward mode and captures still see
    them. For a step whose kernels read back their own writes, which a Tape refuses: run it
    paused and record a hand-written adjoint instead.

    Example::

        with sk.autograd.paused_tapes() as tapes:
            sk.launch(factorize, n, inputs=[M], outputs=[L])
        for tape in tapes:
            tape.record_func(factorize_adjoint, arrays=[M, L])
    """

    def __enter__(self) -> list[Tape]:
        self._saved = list(_launch.hooks)
        _launch.hooks[:] = [h for h in self._saved if not isinstance(h, Tape)]
        return [h for h in self._saved if isinstance(h, Tape)]

    def __exit__(self, *exc) -> None:
        _launch.hooks[:] = self._saved
