"""Forward mode: Jacobian-vector products of launches and rollouts through tangent kernels.

Inside ``with sk.autograd.JVP(...)`` (or :func:`jvp`), every ``sk.launch`` runs the
kernel's *tangent* entry (generated on first use, simkit/core/codegen_tangent.py): one
pass computes what the forward computes, in place as the forward would, and the
directional derivative of everything it writes. Each float array has a tangent buffer
(same shape, dtype and layout), kept by the JVP object (``jvp.tangent(a)``), never in
``a.grad``: the caller's gradients are untouched.

Which arrays have a tangent: those given one, and every float array a launch writes
(allocated zero at its first write). Everything else has a zero tangent, including
scalar, vector and struct *values* passed to a launch: differentiate with respect to a
parameter by holding it in an array (a one-element array for a scalar). Writes outside
kernels keep tangents in step: ``zero_``, ``fill_`` and ``assign`` of host data give a
zero tangent (the new values do not depend on the inputs), ``assign`` of an sk array and
``clone`` copy the source's tangent. A value that goes through host code (``a.numpy()``
turned into a launch's float argument) loses its tangent: keep differentiable data on
device, in arrays.

Tangent launches run where the forward launch would (CPU or GPU); not inside ``sk.capture``.
A ``sk.Tape`` recording inside or around the block records each launch as a forward launch
(a tangent launch leaves the same values), so reverse mode works on the same run.

Example::

    k = sk.array([100.0], dtype=sk.float64)
    outs, tans = sk.autograd.jvp(lambda k: rollout(k), [k], [np.ones(1)])
    # tans: d(rollout)/dk, same structure as outs
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ..core import types as T
from ..core import launch as _launch
from ..core import array as _array
from ..core.array import Array, _cuda_zeros_alike, _refuse_in_capture, _zeros_laid_out_like


# Tangent buffers of host arrays up to a quarter of this are carved from chunks of it, each at a
# multiple of _ALIGN bytes (a cache line: the vector loads of the kernels, no false sharing).
_ALIGN = 64
_CHUNK_BYTES = (1 << 18) + _ALIGN
# Chunks of JVPs that ended, oldest first, at most _MAX_RETIRED (16 MiB): a chunk is carved
# again only once nothing views it (a tangent a caller kept from JVP.tangent keeps its chunk).
_retired: list = []
_MAX_RETIRED = 64


def _retire(chunks: list) -> None:
    """A JVP ended: its chunks may serve the next one."""
    _retired.extend(chunks)
    del _retired[:max(0, len(_retired) - _MAX_RETIRED)]


def _spare_chunk() -> np.ndarray | None:
    """A retired chunk that no array views any more, or None."""
    for _ in range(len(_retired)):
        try:
            chunk = _retired.pop(0)  # atomic: two threads never take the same chunk
        except IndexError:
            return None
        if sys.getrefcount(chunk) == 2:  # this name and the call's argument: no buffer of it is alive
            return chunk
        _retired.append(chunk)
    return None


def _is_float(a: Array) -> bool:
    return T.holds_floats(a.dtype)


class JVP:
    """Runs the launches inside ``with`` as tangent launches (forward-mode differentiation).

    ``tangents``: ``{array: tangent}`` to start from (an sk array or anything numpy can
    turn into the array's ``.numpy()`` shape). After the block, :meth:`tangent` gives the
    tangent of any array (zero for one no launch wrote and none was given).

    Example::

        x = sk.array([0.5, 1.0], dtype=sk.float64)
        y = sk.zeros(2, dtype=sk.float64)
        with sk.autograd.JVP({x: [1.0, 0.0]}) as fwd:
            sk.launch(square, 2, inputs=[x], outputs=[y])
        fwd.tangent(y).numpy()       # [2 * 0.5, 0]: dy/dx[0]
    """

    def __init__(self, tangents: dict | None = None):
        # id(array) -> [array, tangent buffer, its address]: on the CPU the buffer is a bare numpy
        # array (an sk Array is made only when asked for: a rollout allocates one per array it
        # writes, and Array's construction cost the cloth's jvp a fifth of its time)
        self._tan: dict[int, list] = {}
        self._active = False
        # CPU tangent buffers of small C-contiguous arrays are carved from chunks, reused from
        # JVPs that ended: a rollout allocates one per array it writes, and a fresh numpy zeros
        # cost 7.5 us a buffer (the address lookup, ndarray.ctypes, and page faults on memory
        # the allocator had given back), a carve from a spare chunk 1.6 us
        self._chunk: np.ndarray | None = None
        self._chunk_base = self._chunk_used = 0
        self._chunks: list[np.ndarray] = []  # every chunk carved from: retired when this JVP goes
        for a, t in (tangents or {}).items():
            self.set_tangent(a, t)

    # -- tangents ---------------------------------------------------------------------
    def set_tangent(self, a: Array, t: Any) -> None:
        """Give float array ``a`` the tangent ``t`` (copied)."""
        if not isinstance(a, Array):
            raise TypeError(f"JVP tangents are keyed by sk arrays, got {type(a).__name__}")
        if not _is_float(a):
            raise TypeError(f"only float arrays have a tangent; this one holds {a.dtype.__name__}")
        data = t.numpy() if isinstance(t, Array) else np.asarray(t, dtype=a._np_dtype)
        if data.shape != a._host_shape and data.size == int(np.prod(a._host_shape)):
            data = data.reshape(a._host_shape)
        if data.shape != a._host_shape:
            raise ValueError(f"tangent of shape {data.shape} does not match an array of shape {a._host_shape} "
                             "(its .numpy() shape)")
        _write(self._buffer(a)[1], data)

    def tangent(self, a: Array) -> Array:
        """The tangent of ``a`` (a zero array if it has none)."""
        if not isinstance(a, Array):
            raise TypeError(f"JVP.tangent takes an sk array, got {type(a).__name__}")
        entry = self._tan.get(id(a))
        if entry is None:
            return _array.zeros(a.shape, a.dtype, a.device)
        t = entry[1]
        return t if isinstance(t, Array) else Array(t, a.dtype, a.shape, a.device)

    def _buffer(self, a: Array) -> list:
        """``a``'s entry ``[a, tangent buffer, address]``, the buffer allocated zero (laid out like
        ``a``) on first use."""
        entry = self._tan.get(id(a))
        if entry is None:
            if a._np is not None:
                t, ptr = self._host_zeros(a._np)
            else:
                t = _cuda_zeros_alike(a)
                ptr = t._ptr if t.size else 0
            entry = self._tan[id(a)] = [a, t, ptr]
        return entry

    def _host_zeros(self, like: np.ndarray) -> tuple[np.ndarray, int]:
        """A zero buffer laid out like host array ``like`` and its address (0 when empty)."""
        n = like.nbytes
        if not like.flags.c_contiguous or not n or n > _CHUNK_BYTES // 4:
            t = _zeros_laid_out_like(like)
            return t, (t.ctypes.data if t.size else 0)
        at = self._chunk_used
        if self._chunk is None or at + n > _CHUNK_BYTES:
            # dirty memory is fine: each buffer zeroes its own bytes below
            chunk = _spare_chunk()
            self._chunk = chunk if chunk is not None else np.empty(_CHUNK_BYTES, np.uint8)
            if not self._chunks:
                weakref.finalize(self, _retire, self._chunks)
            self._chunks.append(self._chunk)
            self._chunk_base = self._chunk.ctypes.data
            at = -self._chunk_base % _ALIGN
        self._chunk_used = at + (n + _ALIGN - 1) // _ALIGN * _ALIGN
        t = np.ndarray(like.shape, like.dtype, self._chunk, at)
        t.fill(0)
        return t, self._chunk_base + at

    # -- the launch hook ----------------------------------------------------------------
    def __enter__(self) -> "JVP":
        _refuse_in_capture("a JVP (forward mode)")
        _launch.hooks.insert(0, self)  # outermost: a Tape inside or around it still records each launch
        _array.write_hooks.append(self._written)
        self._active = True
        return self

    def __exit__(self, *exc) -> None:
        _launch.hooks.remove(self)
        _array.write_hooks.remove(self._written)
        self._active = False

    def _written(self, a: Array, source: Array | None) -> None:
        """A write outside kernels: host data has a zero tangent, a copied array passes its own."""
        tan = self._tan
        if source is not None and id(source) in tan:
            if not _is_float(a):
                return
            dst, src = self._buffer(a)[1], tan[id(source)][1]
            if isinstance(dst, Array):
                dst._copy_from(src)
            else:
                dst[...] = src
        elif id(a) in tan:
            _write(tan[id(a)][1], 0)

    def intercept(self, kernel, plan, dim, values: Sequence, device, adjoint: bool) -> bool:
        """Called by ``sk.launch``: run the tangent entry instead of the forward one."""
        if adjoint:
            raise RuntimeError(f"an adjoint launch of '{kernel.name}' inside a JVP: forward mode runs tangent "
                               "launches only (run reverse mode outside the JVP block)")
        tp = plan.__dict__.get("_jvp_plan") or _TangentPlan.of(plan)
        dev = _launch.launch_device(plan, values, device)  # packs the arguments for a CPU launch
        if dev != "cpu":
            found = self._tangent_words(tp, values)

            def patch():
                """Each array's grad word: its tangent buffer (none: null, a zero tangent)."""
                i64 = plan.i64
                for word, ptr in found:
                    i64[word] = ptr
                for word in tp.others:
                    i64[word] = 0
            from ..core.cuda import launch as cuda_launch

            cuda_launch.launch_tangent(plan, dim, values, dev, patch)
            _launch.bump_versions(plan, values)
            return True
        # the CPU path, the one a rollout takes per launch: buffers for the arrays it writes (first:
        # an array may fill a read slot too), then the grad words written in place
        tan, buffer = self._tan, self._buffer
        for k, path in tp.written_nested:  # rare: before any slot is looked up
            a = _field(values[k], path)
            if type(a) is Array and id(a) not in tan:
                buffer(a)
        i64, get = plan.i64, tan.get
        for k, word, written in tp.direct:  # the written ones first
            a = values[k]
            if type(a) is Array:
                entry = get(id(a))
                if entry is None and written:
                    entry = buffer(a)
                i64[word] = entry[2] if entry is not None else 0
            else:
                i64[word] = 0
        constant = True  # no array in a struct argument has a tangent
        for k, path, word in tp.nested:
            a = values[k]
            try:  # _field inlined: the packing checked the structs' types
                for f in path:
                    a = a._values[f]
            except AttributeError:
                a = None
            entry = get(id(a)) if type(a) is Array else None
            if entry is not None:
                i64[word] = entry[2]
                constant = False
            else:
                i64[word] = 0
        for word in tp.others:
            i64[word] = 0
        if tp.job is None:
            tp.load_cpu()
        job = tp.job_c if constant and tp.job_c is not None else tp.job
        if plan.set_bounds(dim):
            plan.run(job)
            if plan.tangent_error.code:
                plan.check_tangent_error()
        _launch.bump_versions(plan, values)
        return True

    def _tangent_words(self, tp: "_TangentPlan", values: Sequence) -> list:
        """``(grad word, tangent buffer address or 0)`` of each float array slot, the buffers of
        written arrays allocated first (an array may fill a read slot too)."""
        slots = [(k, path, word, (k, path) in tp.writes) for k, path, word in tp.nested]
        slots += [(k, (), word, written) for k, word, written in tp.direct]
        arrays = []
        for k, path, word, written in slots:
            a = values[k]
            for f in path:
                a = getattr(a, f, None)
            a = a if type(a) is Array else None
            if a is not None and written and id(a) not in self._tan:
                self._buffer(a)
            arrays.append((word, a))
        return [(word, self._tan[id(a)][2] if a is not None and id(a) in self._tan else 0) for word, a in arrays]


class _TangentPlan:
    """A kernel's tangent launch worked out once per Plan (a redefined kernel gets a new Plan, so
    this goes with it; arrays are looked up per launch, never kept): its array slots split into
    float arrays, whose tangent travels in the grad word, and the rest, whose grad word a tangent
    launch nulls; the CPU job once loaded.

    ``direct``: ``(parameter index, grad word, written)`` of float array parameters, those the
    kernel writes first (their tangent buffers are allocated at the first write, before a read
    slot of the same array looks one up); ``nested``: ``(parameter index, field path, grad
    word)`` of float arrays in struct fields, ``written_nested`` those written; ``others``: the
    grad words of the other arrays."""

    __slots__ = ("plan", "direct", "nested", "written_nested", "writes", "others", "job", "job_c")

    def __init__(self, plan):
        writes = set(plan.writes)
        direct, nested, others = [], [], []
        for k, path, word in plan.array_slots():
            t = plan.fir.params[k].type
            for f in path:
                t = t._sk_fields[f]
            if T.holds_floats(t.dtype):  # an array of structs with float fields too
                if path:
                    nested.append((k, path, word))
                else:
                    direct.append((k, word))
            else:
                others.append(word)
        self.plan = plan
        self.direct = tuple(sorted(((k, w, (k, ()) in writes) for k, w in direct), key=lambda d: not d[2]))
        self.nested, self.others = tuple(nested), tuple(others)
        self.writes = frozenset(writes)
        self.written_nested = tuple((k, path) for k, path, _w in nested if (k, path) in writes)
        self.job = self.job_c = None  # the addresses of the CPU tangent jobs, once loaded (load_cpu)

    @classmethod
    def of(cls, plan) -> "_TangentPlan":
        tp = plan._jvp_plan = cls(plan)
        return tp

    def load_cpu(self) -> None:
        """Load the CPU forward and tangent modules (once) and keep the tangent jobs' addresses:
        the general one and the one for launches whose struct arguments' arrays have no
        tangent (None where the kernel has none: no struct argument holds a float array)."""
        self.plan.ensure_cpu()
        self.job = self.plan.tangent_job()[1]
        constant = self.plan.tangent_job(constant_fields=True)
        self.job_c = constant[1] if constant is not None else None


def _field(v: Any, path: tuple) -> Any:
    """The struct field at ``path`` of launch argument ``v`` (None where a field is unset). The
    packing checked every struct's type, so their field dicts are read directly (a struct's
    ``__getattr__`` is Python code: a cloth step reads eleven fields)."""
    try:
        for f in path:
            v = v._values[f]
    except AttributeError:  # an unset array field on the way
        return None
    return v


def _write(t, data) -> None:
    """Host data into a tangent buffer (a numpy array on the CPU, an sk Array on a GPU)."""
    if isinstance(t, Array):
        t._write(data)
    else:
        t[...] = data


def _flatten(out: Any) -> tuple[list, Callable[[list], Any]]:
    """The arrays of ``fn``'s result (an array, or a tuple/list of them) and how to rebuild it."""
    if isinstance(out, Array):
        return [out], lambda xs: xs[0]
    if isinstance(out, (tuple, list)) and all(isinstance(o, Array) for o in out):
        return list(out), lambda xs: type(out)(xs)
    raise TypeError(f"jvp: fn must return an sk array or a tuple/list of them, got {type(out).__name__}")


def jvp(fn: Callable[..., Any], inputs: Sequence[Array], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """Run ``fn(*inputs)`` in forward mode; return ``(outputs, output_tangents)``.

    ``fn`` launches kernels (directly or through integrator steps) and returns an sk array
    or a tuple/list of them; ``tangents[k]`` is the direction for ``inputs[k]`` (a float
    array; an sk array or array-like of its ``.numpy()`` shape). The result's tangents are
    sk arrays in the structure of ``fn``'s result: ``J @ v`` for the Jacobian ``J`` of
    ``fn`` at ``inputs`` and ``v`` the tangents, from one run of ``fn`` (no finite
    differences). Inputs must be arrays: hold a scalar parameter in a one-element array.

    Example::

        @sk.kernel
        def square(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64)):
            i = sk.tid()
            y[i] = x[i] * x[i]

        x = sk.array([1.0, 2.0], dtype=sk.float64)
        y = sk.zeros(2, dtype=sk.float64)

        def f(x):
            sk.launch(square, 2, inputs=[x], outputs=[y])
            return y

        y, dy = sk.autograd.jvp(f, [x], [np.ones(2)])   # dy = 2 x = [2, 4]
    """
    inputs, tangents = list(inputs), list(tangents)
    if len(inputs) != len(tangents):
        raise ValueError(f"jvp: {len(inputs)} input(s) but {len(tangents)} tangent(s); give one tangent per input")
    fwd = JVP()
    for k, (a, t) in enumerate(zip(inputs, tangents)):
        if not isinstance(a, Array):
            raise TypeError(f"jvp: inputs[{k}] must be an sk array (hold a scalar in a one-element array), "
                            f"got {type(a).__name__}")
        try:
            fwd.set_tangent(a, t)
        except (TypeError, ValueError) as e:
            raise type(e)(f"jvp: tangents[{k}]: {e}") from None
    with fwd:
        out = fn(*inputs)
    arrays, rebuild = _flatten(out)
    return out, rebuild([fwd.tangent(a).clone() for a in arrays])
