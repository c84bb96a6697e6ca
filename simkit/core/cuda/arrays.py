"""The GPU side of ``sk`` arrays: allocation, reading and writing elements, copies between devices.

An array on a GPU has no numpy storage; its elements live at a device address
with byte strides like any other array. Contiguous arrays move in one copy;
strided ones (wrapped foreign memory) move the span that holds their elements,
so every layout a kernel can address can also be read and written from Python.

Example::

    buf, strides = alloc((4,), sk.float32, "cuda:0")
    a = Array(None, sk.float32, (4,), "cuda:0", owner=buf, ptr=buf.ptr, strides=strides)
    write(a, np.arange(4.0))
    to_host(a)          # array([0., 1., 2., 3.], dtype=float32)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import device as D
from ..layout import _c_strides, _elem_np, _extent
from . import driver, memory

if TYPE_CHECKING:
    from ..array_base import Array


def alloc(shape: tuple, dtype: Any, device: str) -> tuple[memory.DeviceBuffer, tuple]:
    """Uninitialised memory for a C-contiguous array of ``shape`` on GPU ``device``: the
    buffer and the byte strides (the caller wraps them in an ``Array``).

    Example::

        buf, strides = alloc((10,), sk.vec3, "cuda:0")
        Array(None, sk.vec3, (10,), "cuda:0", owner=buf, ptr=buf.ptr, strides=strides)
    """
    itemsize = _elem_np(dtype).itemsize * int(np.prod(dtype._sk_shape, dtype=np.int64))
    ctx = driver.context(D.ordinal(device))
    buf = memory.alloc(int(np.prod(shape, dtype=np.int64)) * itemsize, ctx)
    return buf, _c_strides(shape, itemsize)


def zeros_span(a: Array) -> tuple[memory.DeviceBuffer, int]:
    """Zeroed memory on ``a``'s GPU for an array with exactly ``a``'s strides (a grad is
    addressed with its data's strides): the buffer and the address of its first element.

    Example::

        buf, ptr = zeros_span(a)
        Array(None, a.dtype, a.shape, a.device, owner=buf, ptr=ptr, strides=a._strides)
    """
    lo, hi = _extent(a.shape, a._strides, a._elem_bytes) if a.size else (0, 0)
    buf = memory.alloc(hi - lo, a._ctx)
    memory.memset(a._ctx, buf.ptr, 0, hi - lo)
    return buf, buf.ptr - lo if buf.ptr else 0


def _span_view(a: Array, raw: np.ndarray, lo: int) -> np.ndarray:
    """The elements of ``a`` inside a host copy ``raw`` of its byte span starting at offset ``lo``."""
    return np.ndarray(a._host_shape, a._np_dtype, buffer=raw, offset=-lo, strides=a._host_strides)


def to_host(a: Array) -> np.ndarray:
    """A new host numpy array with ``a``'s elements (waits for the GPU; reports kernel errors).

    Example::

        host = to_host(a)
    """
    out = np.empty(a._host_shape, a._np_dtype)
    if not a.size:
        memory.to_host(a._ctx, 0, 0, 0)
        return out
    if a._contiguous:
        memory.to_host(a._ctx, out.ctypes.data, a._ptr, a.nbytes)
        return out
    lo, hi = _extent(a.shape, a._strides, a._elem_bytes)
    raw = np.empty(hi - lo, np.uint8)
    memory.to_host(a._ctx, raw.ctypes.data, a._ptr + lo, hi - lo)
    out[...] = _span_view(a, raw, lo)
    return out


def write(a: Array, data: Any) -> None:
    """Host ``data`` (a scalar, one element, or the ``.numpy()`` shape; broadcast) into ``a``'s elements.

    Example::

        write(a, 0)                      # a memset
        write(a, np.arange(a.size))
    """
    if not a.size:
        return
    if np.ndim(data) == 0 and np.asarray(data).dtype.names is None and data == 0 and a._contiguous:
        memory.memset(a._ctx, a._ptr, 0, a.nbytes)
        return
    if a._contiguous:
        src = np.ascontiguousarray(np.broadcast_to(np.asarray(data, a._np_dtype), a._host_shape))
        memory.to_device(a._ctx, a._ptr, src.ctypes.data, a.nbytes)
        return
    # Strided (foreign) memory: read the span, write the elements into it, put it back.
    lo, hi = _extent(a.shape, a._strides, a._elem_bytes)
    raw = np.empty(hi - lo, np.uint8)
    memory.to_host(a._ctx, raw.ctypes.data, a._ptr + lo, hi - lo)
    _span_view(a, raw, lo)[...] = data
    memory.to_device(a._ctx, a._ptr + lo, raw.ctypes.data, hi - lo)


def copy(dst: Array, src: Array) -> None:
    """``src``'s elements into ``dst`` (same shape and dtype), at least one of them on a GPU.

    Example::

        copy(gpu_array, cpu_array)
    """
    if dst._np is not None:
        dst._np[...] = to_host(src)
    elif src._np is not None:
        write(dst, src._np)
    elif src.device == dst.device and dst._contiguous and src._contiguous:
        memory.device_to_device(dst._ctx, dst._ptr, src._ptr, dst.nbytes)
    else:
        write(dst, to_host(src))
