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

from typing import Any, Callable, Sequence

import numpy as np

from ..core import launch as _launch
from ..core import array as _array
from ..core.array import Array, _refuse_in_capture, _zeros_laid_out_like


def _is_float(a: Array) -> bool:
    return a.dtype._sk_scalar.is_float


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
                t = _zeros_laid_out_like(a._np)
                ptr = t.ctypes.data if t.size else 0
            else:
                from ..core.cuda import arrays

                t = arrays.zeros_alike(a)
                ptr = t._ptr if t.size else 0
            entry = self._tan[id(a)] = [a, t, ptr]
        return entry

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
        if not _is_float(a):
            return
        if source is not None and id(source) in self._tan:
            dst, src = self._buffer(a)[1], self._tan[id(source)][1]
            if isinstance(dst, Array):
                dst._copy_from(src)
            else:
                dst[...] = src
        elif id(a) in self._tan:
            _write(self._tan[id(a)][1], 0)

    def intercept(self, kernel, plan, dim, values: Sequence, device, adjoint: bool) -> bool:
        """Called by ``sk.launch``: run the tangent entry instead of the forward one."""
        if adjoint:
            raise RuntimeError(f"an adjoint launch of '{kernel.name}' inside a JVP: forward mode runs tangent "
                               "launches only (run reverse mode outside the JVP block)")
        dev = _launch.launch_device(plan, values, device)  # packs the arguments for a CPU launch
        floats, others = _slots(plan)
        tan = self._tan
        found = []  # (id of the array, or 0 for none, its grad word)
        for k, path, word, written in floats:
            a = values[k]
            for f in path:
                a = getattr(a, f, None)
            if type(a) is Array:
                key = id(a)
                if written and key not in tan:
                    self._buffer(a)
                found.append((key, word))
            else:
                found.append((0, word))

        def patch():
            """Each array's grad word: its tangent buffer (none: null, a zero tangent)."""
            i64, get = plan.i64, tan.get
            for key, word in found:
                entry = get(key)
                i64[word] = entry[2] if entry is not None else 0
            for word in others:
                i64[word] = 0
        if dev == "cpu":
            patch()
            plan.run_tangent(dim)
        else:
            from ..core.cuda import launch as cuda_launch

            cuda_launch.launch_tangent(plan, dim, values, dev, patch)
        _launch.bump_versions(plan, values)
        return True


def _slots(plan) -> tuple[list, list]:
    """A kernel's array slots (plan.array_slots) split once per plan: ``(k, path, grad word, written)``
    of each float array, whose tangent travels in the grad word, and the grad words of the others."""
    found = getattr(plan, "_jvp_slots", None)
    if found is None:
        writes = set(plan.writes)
        floats, others = [], []
        for k, path, word in plan.array_slots():
            t = plan.fir.params[k].type
            for f in path:
                t = t._sk_fields[f]
            if getattr(getattr(t.dtype, "_sk_scalar", None), "is_float", False):
                floats.append((k, path, word, (k, path) in writes))
            else:
                others.append(word)
        found = plan._jvp_slots = (floats, others)
    return found


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
