"""Private accumulators: which arrays a CPU launch split over threads can accumulate into
without atomics.

A scatter kernel (spring forces into their particles, any adjoint gathering into the
gradient of what it read) adds into elements other threads add into too. Split over
threads, each add would be an atomic (a compare-and-swap loop for floats, about twice
the cost of the whole plain add). Instead the runtime cuts the grid into one chunk per
pool thread, gives every chunk but the first a zeroed private copy of each such array and
sums the copies in, in chunk order, after the launch (runtime.cpp, ``run_privately``). That is exact only when the kernel never reads or overwrites those
arrays, which this module decides from the frontend's access sets (ir.FunctionIR):

- forward: the arrays it ``+=``/``atomic_add``s into at other threads' elements, when
  it neither reads nor otherwise writes them and uses no fetch-add or min/max;
- adjoint: the gradients of the arrays it reads at other threads' elements, when it
  writes none of them (the adjoint of a write reads that gradient back);
- tangent (forward mode): the forward's arrays, and beside each float one its tangent
  buffer (in the grad slot during a tangent launch), which the tangent adds into exactly
  where the forward adds into the array and never reads.

Example::

    descriptors(plan.fir, plan.Args, adjoint=False)  # a ctypes array, or None: atomics
"""

from __future__ import annotations

import ctypes

from . import types as T


class PrivateTarget(ctypes.Structure):
    """Mirror of the runtime's ``private_t``."""

    _fields_ = [("offset", ctypes.c_int64), ("grad", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("scalar", ctypes.c_int32), ("elem_bytes", ctypes.c_int32)]


# The runtime sums copies per scalar: 0 float32, 1 float64, 2 and 3 integers of 32 and 64
# bits (two's complement addition does not care about the sign).
_SCALAR_CODE = {T.float32: 0, T.float64: 1, T.int32: 2, T.uint32: 2, T.int64: 3, T.uint64: 3}


def accumulated(fir, adjoint: bool) -> set | None:
    """The (parameter, field path) arrays whose data (forward) or gradient (adjoint) the kernel
    adds into at other threads' elements; None when a split launch needs real atomics."""
    if fir.untracked:
        return None
    if adjoint:
        return None if fir.gathers & fir.writes else set(fir.gathers)
    if fir.shared_atomics or fir.adds & (fir.reads | fir.stores):
        return None
    return set(fir.adds)


def descriptors(fir, Args, adjoint: bool, tangent: bool = False):
    """The runtime's description of :func:`accumulated`'s arrays in the args struct ``Args``
    (a ``PrivateTarget`` array, maybe empty), or None when one cannot be copied privately.
    ``tangent``: of a tangent launch (the forward's arrays and their tangent buffers)."""
    found = accumulated(fir, adjoint and not tangent)
    if found is None:
        return None
    by_name = {v.name: v for v in fir.params}
    out = []
    for name, path in sorted(found):
        v = by_name[name]
        offset, t = getattr(Args, v.cname).offset, v.type
        for field in path:
            offset += getattr(t._sk_ctypes, field).offset
            t = t._sk_fields[field]
        scalar = getattr(t.dtype, "_sk_scalar", None)
        if adjoint and not T.holds_floats(t.dtype):
            continue  # only float arrays have gradients
        if scalar is None:
            return None  # an array of structs: its gradient adds field by field, atomically
        code = _SCALAR_CODE.get(scalar)
        if t.dtype._sk_kind not in ("scalar", "vec", "mat", "quat", "transform") or code is None:
            return None
        out.append(PrivateTarget(offset, int(adjoint), t.ndim, code, T.type_size(t.dtype)))
        if tangent and scalar.is_float:
            out.append(PrivateTarget(offset, 1, t.ndim, code, T.type_size(t.dtype)))
    return (PrivateTarget * len(out))(*out)
