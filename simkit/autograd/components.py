"""The components of an array's values, as the Jacobians number them: those of ``.numpy()``
in C order, or for an array of structs the float fields of each element in declaration
order (:func:`simkit.core.struct_array.float_components`). Shared by the kernel and the
function Jacobians.

Example::

    _component_shape(sk.zeros(2, dtype=sk.vec3))      # (2, 3)
    _components(sk.array([1.0, 2.0]))                 # array([1., 2.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import struct_array as SA
from ..core.array import Array


def _component_shape(a: Array) -> tuple:
    if SA.is_struct(a.dtype):
        return a.shape + (SA.float_components(np.zeros(1, a._np_dtype), a.dtype).shape[-1],)
    return a._host_shape


def _components(a: Array) -> np.ndarray:
    h = a.numpy()
    return (SA.float_components(h, a.dtype) if SA.is_struct(a.dtype) else h).astype(np.float64).reshape(-1)


def _component_at(host: np.ndarray, dtype: Any, k: int):
    if SA.is_struct(dtype):
        return SA.float_components(host, dtype).reshape(-1)[k]
    return host[np.unravel_index(k, host.shape)]  # in the array's dtype: x0 + eps rounds as it did


def _set_component(host: np.ndarray, dtype: Any, k: int, value: float) -> float:
    """Component ``k`` of host data ``host`` (of an array of ``dtype``) set to ``value``; returns the
    value as stored (rounded to the dtype)."""
    if SA.is_struct(dtype):
        c = SA.float_components(host, dtype).reshape(-1)
        c[k] = value
        SA.set_float_components(host, dtype, c)
        return float(SA.float_components(host, dtype).reshape(-1)[k])
    idx = np.unravel_index(k, host.shape)
    host[idx] = value
    return float(host[idx])
