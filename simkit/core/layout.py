"""Byte layouts of arrays: element dtypes, C strides, the span a strided array covers.

Shared by the CPU side (:mod:`simkit.core.array_base`) and the GPU side
(:mod:`simkit.core.cuda.arrays`) of arrays, so neither needs the other for them.

Example::

    _c_strides((2, 3), 4)              # (12, 4)
    _extent((2, 3), (12, 4), 4)        # (0, 24)
"""

from __future__ import annotations

import numpy as np

from . import struct_array as SA


def _elem_np(dtype) -> np.dtype:
    if SA.is_struct(dtype):
        return dtype._sk_np_dtype  # a structured dtype with the C layout (struct_array.py)
    return dtype._sk_scalar.np_dtype


def _layout(strides: tuple, shape: tuple) -> tuple:
    """The strides that matter for addressing: those of dims longer than one."""
    return tuple(st if n > 1 else 0 for n, st in zip(shape, strides))


def _extent(shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int]:
    """Byte offsets ``(lo, hi)`` around the first element that every element lies within."""
    lo = sum((n - 1) * st for n, st in zip(shape, strides) if st < 0 and n > 0)
    hi = sum((n - 1) * st for n, st in zip(shape, strides) if st > 0 and n > 0) + itemsize
    return lo, hi


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _zeros_laid_out_like(a: np.ndarray) -> np.ndarray:
    """Zeros with exactly the strides of ``a``: kernels index a grad with its data's byte strides."""
    if a.flags.c_contiguous:
        return np.zeros(a.shape, a.dtype)
    lo, hi = _extent(a.shape, a.strides, a.itemsize)
    buf = np.zeros(max(hi - lo, a.itemsize), np.uint8)
    return np.ndarray(a.shape, a.dtype, buffer=buf, offset=-lo, strides=a.strides)
