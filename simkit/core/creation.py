"""Array construction: ``sk.array``, ``zeros``/``ones``/``full``/``empty``, their ``*_like``,
``clone`` and ``copy`` (the :class:`~simkit.core.array.Array` type itself lives in array.py,
which re-exports everything here).

Example::

    a = sk.array([1.0, 2.0, 3.0], requires_grad=True)
    v = sk.zeros((4, 4), dtype=sk.vec3)
    b = sk.clone(a)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import device as D
from . import struct_array as SA
from . import types as T
from .array_base import Array, ArrayType, GenericArrayType, _dtype, _elem_np, _empty, _from_storage


def _norm_shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if not 1 <= len(shape) <= 4:
        raise ValueError(f"arrays have 1 to 4 dimensions, got shape {shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"array shape must not be negative, got {shape}")
    return shape


def _check_device(device) -> str:
    if device is None and D.state.default == "cpu" or device == "cpu":
        return "cpu"
    return D.require(device, "device")


def _alloc(shape, dtype, device) -> np.ndarray:
    dtype = _dtype(dtype)
    return np.empty(_norm_shape(shape) + tuple(dtype._sk_shape), dtype=_elem_np(dtype))


def _infer_dtype(data) -> Any:
    if isinstance(data, Array):
        return data.dtype
    if isinstance(data, np.ndarray):
        if data.dtype.names is not None:
            raise TypeError("sk.array of a numpy structured array needs dtype= (the @sk.struct of its elements)")
        return T.scalar_from_numpy(data.dtype)
    if isinstance(data, T.Composite) or SA.is_struct(type(data)):
        return type(data)
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if first is not data and (isinstance(first, T.Composite) and isinstance(data[0], T.Composite)
                              or SA.is_struct(type(first))):
        return type(first)  # [sk.vec3(...), ...] is an array of vec3, [[P(), P()], ...] a 2-d one of P
    arr = np.asarray(data)
    if arr.dtype.kind == "f":
        return T.float32
    if arr.dtype.kind in "iu":
        return T.int32
    if arr.dtype.kind == "b":
        return T.bool_
    raise TypeError(f"cannot infer a dtype from data of numpy dtype {arr.dtype}; pass dtype=")


def array(data: Any = None, dtype: Any = None, shape: Any = None, device: str | None = None,
          requires_grad: bool = False, ndim: int | None = None):
    """Create an array from ``data`` (copied), or allocate zeros of ``shape``, on ``device``
    (default ``sk.get_device()``).

    With neither data nor shape, returns the annotation type for kernel parameters.
    ``dtype`` may be an ``@sk.struct`` of values: ``data`` is then structured numpy data
    (converted field by field, names checked), an instance, or (nested) lists of them.

    Example::

        a = sk.array([1.0, 2.0, 3.0], dtype=sk.float32, requires_grad=True)
        ps = sk.array([Particle(mass=1.0), Particle(mass=2.0)])   # dtype=Particle, inferred
        @sk.kernel
        def k(a: sk.array(dtype=float), pts: sk.array(dtype=sk.vec3, ndim=2), ps: sk.array(dtype=Particle)): ...
    """
    if data is None and shape is None:
        if dtype is None:
            raise TypeError("sk.array(dtype=...) needs a dtype when used as an annotation")
        if dtype is Any:
            return GenericArrayType(1 if ndim is None else ndim)
        return ArrayType(dtype, 1 if ndim is None else ndim)
    device = _check_device(device)
    if data is None:
        a = zeros(shape, dtype=dtype if dtype is not None else T.float32, device=device, requires_grad=requires_grad)
        _check_ndim(a, ndim)
        return a
    dtype = _dtype(dtype) if dtype is not None else _infer_dtype(data)
    if isinstance(data, Array):
        data = data.numpy()
    if SA.is_struct(dtype):
        return _struct_array(data, dtype, shape, device, requires_grad, ndim)
    try:
        src = np.asarray(data, dtype=_elem_np(dtype))
    except (TypeError, ValueError) as e:
        raise ValueError(f"cannot make an array of {T.type_name(dtype)} from this data: {e}") from None
    tail = tuple(dtype._sk_shape)
    if tail and src.shape[src.ndim - len(tail):] != tail:
        if src.ndim == 1 and src.size % int(np.prod(tail)) == 0:
            src = src.reshape((-1,) + tail)
        else:
            raise ValueError(f"data of shape {src.shape} does not hold elements of {T.type_name(dtype)} "
                             f"(the last dims must be {tail})")
    if src.ndim == len(tail):
        src = src.reshape((1,) + src.shape)
    if shape is not None:
        want = _norm_shape(shape)
        if src.size != int(np.prod(want + tail)):
            raise ValueError(f"data with {src.size // max(int(np.prod(tail)), 1)} element(s) of "
                             f"{T.type_name(dtype)} cannot take shape {want}")
        src = src.reshape(want + tail)
    storage = np.array(src, order="C", copy=True)
    if not 1 <= storage.ndim - len(tail) <= 4:
        raise ValueError(f"arrays have 1 to 4 dimensions, got data of shape {storage.shape}"
                         + (f" for elements of {T.type_name(dtype)}" if tail else ""))
    a = _from_storage(storage, dtype, device, requires_grad)
    _check_ndim(a, ndim)
    return a


def _struct_array(data, dtype, shape, device, requires_grad, ndim) -> Array:
    """sk.array(data, dtype=MyStruct): ``data`` a structured numpy array, an instance or (nested) lists of them."""
    src = SA.host_data(data, dtype, f"sk.array(dtype={dtype.__name__})")
    if src.ndim == 0:
        src = src.reshape(1)
    if shape is not None:
        want = _norm_shape(shape)
        if src.size != math.prod(want):
            raise ValueError(f"data with {src.size} element(s) of {dtype.__name__} cannot take shape {want}")
        src = src.reshape(want)
    if not 1 <= src.ndim <= 4:
        raise ValueError(f"arrays have 1 to 4 dimensions, got data of shape {src.shape}")
    a = _from_storage(np.ascontiguousarray(src), dtype, device, requires_grad)
    _check_ndim(a, ndim)
    return a


def _check_ndim(a: Array, ndim) -> None:
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"sk.array(..., ndim={ndim}): the data makes a {a.ndim}-d array of shape {a.shape}")


def empty(shape, dtype: Any = T.float32, device: str | None = None, requires_grad: bool = False) -> Array:
    """An uninitialised array of ``shape``; ``sk.empty(100, dtype=sk.vec3)``, ``sk.empty(8, dtype=Particle)``."""
    device = _check_device(device)
    return _empty(_norm_shape(shape), _dtype(dtype), device, requires_grad)


def zeros(shape, dtype: Any = T.float32, device: str | None = None, requires_grad: bool = False) -> Array:
    """An array of zeros (every field, for a struct dtype); ``sk.zeros((4, 4), dtype=sk.float64)``,
    ``sk.zeros(100, dtype=Particle, requires_grad=True)``."""
    a = empty(shape, dtype, device, requires_grad)
    a._write(0)
    return a


def full(shape, value, dtype: Any = None, device: str | None = None, requires_grad: bool = False) -> Array:
    """An array filled with ``value``; the dtype defaults to the value's (float -> float32)."""
    dtype = dtype if dtype is not None else (type(value) if isinstance(value, T.Composite) else _infer_dtype(value))
    a = empty(shape, dtype, device, requires_grad)
    a._write(a._fill_value(value))  # a new array: not a write a capture would have to refuse
    return a


def ones(shape, dtype: Any = T.float32, device: str | None = None, requires_grad: bool = False) -> Array:
    """An array of ones (every component of composite dtypes)."""
    return full(shape, 1, dtype, device, requires_grad)


def empty_like(a: Array, requires_grad: bool | None = None) -> Array:
    """An uninitialised array with ``a``'s shape, dtype and device."""
    return empty(a.shape, a.dtype, a.device, a.requires_grad if requires_grad is None else requires_grad)


def zeros_like(a: Array, requires_grad: bool | None = None) -> Array:
    """Zeros with ``a``'s shape, dtype and device."""
    return zeros(a.shape, a.dtype, a.device, a.requires_grad if requires_grad is None else requires_grad)


def ones_like(a: Array, requires_grad: bool | None = None) -> Array:
    """Ones with ``a``'s shape, dtype and device."""
    return ones(a.shape, a.dtype, a.device, a.requires_grad if requires_grad is None else requires_grad)


def full_like(a: Array, value, requires_grad: bool | None = None) -> Array:
    """``value`` everywhere, with ``a``'s shape, dtype and device."""
    return full(a.shape, value, a.dtype, a.device, a.requires_grad if requires_grad is None else requires_grad)


def clone(a: Array, requires_grad: bool | None = None) -> Array:
    """A copy of ``a`` with its own memory."""
    return a.clone(requires_grad)


def copy(dst: Array, src: Array) -> None:
    """Copy the elements of ``src`` into ``dst`` (same shape and dtype; the devices may differ).

    Example::

        sk.copy(gpu_state, cpu_state)
    """
    if not isinstance(dst, Array) or not isinstance(src, Array):
        raise TypeError(f"sk.copy(dst, src) takes two sk arrays, got {type(dst).__name__} and {type(src).__name__}")
    if dst.dtype is not src.dtype or dst.shape != src.shape:
        raise ValueError(f"sk.copy: dst is {T.type_name(dst.dtype)}{dst.shape}, src is {T.type_name(src.dtype)}{src.shape}")
    dst.assign(src)


class ArrayConstructor:
    """``sk.array`` (and ``sk.array1d`` .. ``sk.array4d``): called, what :func:`array` does;
    subscripted, the kernel annotation as Warp 1.19 spells it, ``sk.array[float]``,
    ``sk.array[sk.vec3, 2]`` (a dtype and optionally ``ndim``), ``sk.array2d[float]``.
    ``sk.array2d(data, dtype=...)`` makes an array as Warp's does (its data must have 2
    dimensions); ``sk.array2d(dtype=...)`` alone is the annotation.

    Example::

        @sk.kernel
        def k(x: sk.array[float], m: sk.array2d[sk.vec3]): ...
        a = sk.array2d(np.zeros((2, 3)), dtype=float)     # shape (2, 3)
    """

    def __init__(self, make, ndim: int | None = None, name: str = "array"):
        self._make, self._ndim, self.__name__ = make, ndim, name
        self.__doc__ = make.__doc__
        self.__wrapped__ = make

    def __call__(self, *args, **kwargs):
        if self._ndim is None:
            return self._make(*args, **kwargs)
        if not args and not set(kwargs) - {"dtype"}:
            return self._make(dtype=kwargs.get("dtype"), ndim=self._ndim)
        made = self._make(*args, **kwargs)
        if made.ndim != self._ndim:
            raise ValueError(f"sk.{self.__name__}(...) makes an array of {self._ndim} dimensions; this data "
                             f"gives one of shape {made.shape}")
        return made

    def __getitem__(self, key):
        dtype, ndim = (key, self._ndim or 1) if not isinstance(key, tuple) else (key + (None,))[:2]
        if isinstance(key, tuple):
            if len(key) != 2 or not isinstance(ndim, int) or isinstance(ndim, bool) or self._ndim is not None:
                raise TypeError(f"sk.{self.__name__}[...] takes a dtype, or for sk.array a dtype and ndim "
                                f"(sk.array[float, 2]), got {key!r}")
        return self._make(dtype=dtype, ndim=ndim)

    def __repr__(self) -> str:
        return f"<sk.{self.__name__}>"


array = ArrayConstructor(array)
array1d, array2d, array3d, array4d = (ArrayConstructor(array._make, n, f"array{n}d") for n in range(1, 5))
