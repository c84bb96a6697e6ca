"""Arrays: typed n-d buffers (1-4 dims) that kernels read and write, with optional grads.

On the CPU an array's memory is a numpy buffer, so ``.numpy()`` is a zero-copy
view; foreign buffers (numpy, DLPack producers, torch) are wrapped without copying.

Example::

    x = sk.array(np.arange(4.0), dtype=sk.float32, requires_grad=True)
    v = sk.zeros(10, dtype=sk.vec3)
    v.numpy().shape      # (10, 3)
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import types as T


class ArrayHeader(ctypes.Structure):
    """Mirror of ``sk::array_t``: the same 80 bytes for every dtype and ndim."""

    _fields_ = [("data", ctypes.c_void_p), ("grad", ctypes.c_void_p),
                ("shape", ctypes.c_int64 * 4), ("strides", ctypes.c_int64 * 4)]


class ArrayType:
    """The annotation ``sk.array(dtype=..., ndim=...)`` of a kernel parameter or struct field."""

    _sk_kind = "array"
    _sk_ctypes = ArrayHeader

    def __init__(self, dtype: Any, ndim: int = 1):
        dtype = _dtype(dtype)
        if not isinstance(ndim, (int, np.integer)) or isinstance(ndim, bool) or ndim not in (1, 2, 3, 4):
            raise ValueError(f"arrays have 1 to 4 dimensions, got ndim={ndim!r}")
        ndim = int(ndim)
        self.dtype = dtype
        self.ndim = ndim
        self._sk_ctype = f"sk::array_t<{dtype._sk_ctype}, {ndim}>"

    def __eq__(self, other):
        return isinstance(other, ArrayType) and other.dtype is self.dtype and other.ndim == self.ndim

    def __hash__(self):
        return hash((self.dtype, self.ndim))

    def __repr__(self):
        return f"array(dtype={T.type_name(self.dtype)}, ndim={self.ndim})"


def _elem_np(dtype) -> np.dtype:
    return dtype._sk_scalar.np_dtype


def _dtype(dtype: Any) -> Any:
    """``dtype`` as a simkit value type: simkit types, ``float``/``int``/``bool``, or a numpy scalar dtype."""
    t = T.resolve(dtype)
    if T.is_value_type(t):
        return t
    if isinstance(t, (np.dtype, str)) or (isinstance(t, type) and issubclass(t, np.generic)):
        try:
            return T.scalar_from_numpy(t)
        except TypeError:
            pass
    raise TypeError(f"array dtype must be a scalar, vector, matrix, quat or transform type "
                    f"(e.g. sk.float32, sk.vec3), got {dtype!r}")


def _layout(a: np.ndarray) -> tuple:
    """The strides that matter for addressing: those of dims longer than one."""
    return tuple(st if n > 1 else 0 for n, st in zip(a.shape, a.strides))


def _zeros_laid_out_like(a: np.ndarray) -> np.ndarray:
    """Zeros with exactly the strides of ``a``: kernels index a grad with its data's byte strides."""
    if a.flags.c_contiguous:
        return np.zeros(a.shape, a.dtype)
    lo = sum((n - 1) * st for n, st in zip(a.shape, a.strides) if st < 0 and n > 0)
    hi = sum((n - 1) * st for n, st in zip(a.shape, a.strides) if st > 0 and n > 0) + a.itemsize
    buf = np.zeros(max(hi - lo, a.itemsize), np.uint8)
    return np.ndarray(a.shape, a.dtype, buffer=buf, offset=-lo, strides=a.strides)


class Array:
    """An n-d array of ``dtype`` elements on a device; see :func:`array` to create one."""

    __array_priority__ = 100

    def __init__(self, storage: np.ndarray, dtype, shape: tuple, device: str = "cpu", owner: Any = None):
        self.dtype = dtype
        self.shape = tuple(int(s) for s in shape)
        self.ndim = len(self.shape)
        self.device = device
        self._np = storage  # shape == self.shape + dtype._sk_shape
        self._owner = owner  # keeps a foreign producer alive
        self._grad: Array | None = None
        self._version = 0
        self._hdr = ArrayHeader()
        self._hdr_addr = ctypes.addressof(self._hdr)
        self._hdr_view = memoryview(self._hdr).cast("B")  # live bytes: launches copy it with one memcpy
        self._hdr.data = storage.ctypes.data if storage.size else None
        for k, s in enumerate(self.shape):
            self._hdr.shape[k] = s
            self._hdr.strides[k] = storage.strides[k]

    # -- gradients --------------------------------------------------------------
    @property
    def grad(self) -> "Array | None":
        """The gradient buffer (same shape, dtype and memory layout), or None."""
        return self._grad

    @grad.setter
    def grad(self, g: "Array | None"):
        if g is not None:
            if not isinstance(g, Array):
                raise TypeError(f"grad must be an sk array or None, got {type(g).__name__}")
            if g.dtype is not self.dtype or g.shape != self.shape:
                raise ValueError(f"grad must be {T.type_name(self.dtype)}{self.shape}, "
                                 f"got {T.type_name(g.dtype)}{g.shape}")
            if _layout(g._np) != _layout(self._np):
                raise ValueError("grad must have the same memory layout (strides) as the data; "
                                 "use a.requires_grad = True to allocate a matching one")
            self._check_float_for_grad()
        self._grad = g
        self._hdr.grad = g._np.ctypes.data if g is not None and g.size else None

    def _check_float_for_grad(self):
        if not self.dtype._sk_scalar.is_float:
            raise TypeError(f"only float arrays can require grad, this one holds {T.type_name(self.dtype)}")

    @property
    def requires_grad(self) -> bool:
        return self._grad is not None

    @requires_grad.setter
    def requires_grad(self, value: bool):
        if value and self._grad is None:
            self._check_float_for_grad()
            self.grad = Array(_zeros_laid_out_like(self._np), self.dtype, self.shape, self.device)
        elif not value and self._grad is not None:
            self.grad = None

    # -- views and conversion -----------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The data as a numpy array; zero-copy on the CPU (shape ``shape + dtype shape``)."""
        return self._np

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def ptr(self) -> int:
        """Address of the first element."""
        return self._np.ctypes.data

    @property
    def __array_interface__(self):
        return self._np.__array_interface__

    def __array__(self, dtype=None, copy=None):
        if dtype is not None and np.dtype(dtype) != self._np.dtype:
            if copy is False:
                raise ValueError(f"cannot view {self._np.dtype} data as {np.dtype(dtype)} without a copy")
            return self._np.astype(dtype)
        return self._np.copy() if copy else self._np

    def __dlpack__(self, *args, **kwargs):
        return self._np.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._np.__dlpack_device__()

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        g = ", requires_grad=True" if self.requires_grad else ""
        return f"sk.array({np.array2string(self._np, threshold=20)}, dtype={T.type_name(self.dtype)}, device='{self.device}'{g})"

    # -- in-place ops ---------------------------------------------------------------
    def zero_(self) -> "Array":
        """Set every element to zero; returns self."""
        self._np[...] = 0
        self._version += 1
        return self

    def fill_(self, value) -> "Array":
        """Set every element to ``value`` (a scalar, or a vector/matrix for composite dtypes)."""
        try:
            v = np.asarray(value, dtype=self._np.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"fill_: cannot use {value!r} as {T.type_name(self.dtype)}: {e}") from None
        tail = tuple(self.dtype._sk_shape)
        if v.ndim and v.shape != tail and v.size != int(np.prod(tail)):
            raise ValueError(f"fill_: value of shape {v.shape} does not fit {T.type_name(self.dtype)} elements "
                             f"(a scalar or {int(np.prod(tail)) if tail else 1} component(s))")
        self._np[...] = v.reshape(tail) if v.ndim else v
        self._version += 1
        return self

    def assign(self, src) -> "Array":
        """Copy ``src`` (an array, numpy array or nested list of the same shape) into this array."""
        data = src.numpy() if isinstance(src, Array) else np.asarray(src, dtype=self._np.dtype)
        if data.shape != self._np.shape:
            raise ValueError(f"assign: data of shape {data.shape} does not match this array's "
                             f"{self.shape} elements of {T.type_name(self.dtype)} (numpy shape {self._np.shape})")
        self._np[...] = data
        self._version += 1
        return self

    def clone(self, requires_grad: bool | None = None) -> "Array":
        """A copy with its own memory (and its own zeroed grad if this one has one)."""
        rg = self.requires_grad if requires_grad is None else requires_grad
        return _from_storage(self._np.copy(), self.dtype, self.device, rg)

    def type(self) -> ArrayType:
        return ArrayType(self.dtype, self.ndim)


# ---------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------

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
    device = "cpu" if device is None else str(device)
    if device != "cpu":
        raise ValueError(f"device {device!r} is not available: this build runs kernels on 'cpu' "
                         "(CUDA arrays arrive with the CUDA backend)")
    return device


def _from_storage(storage: np.ndarray, dtype, device: str, requires_grad: bool, owner=None) -> Array:
    nd = storage.ndim - len(dtype._sk_shape)
    a = Array(storage, dtype, storage.shape[:nd], device, owner)
    if requires_grad:
        a.requires_grad = True
    return a


def _alloc(shape, dtype, device) -> np.ndarray:
    dtype = _dtype(dtype)
    return np.empty(_norm_shape(shape) + tuple(dtype._sk_shape), dtype=_elem_np(dtype))


def _infer_dtype(data) -> Any:
    if isinstance(data, Array):
        return data.dtype
    if isinstance(data, np.ndarray):
        return T.scalar_from_numpy(data.dtype)
    if isinstance(data, T.Composite):
        return type(data)
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], T.Composite):
        return type(data[0])  # [sk.vec3(...), ...] is an array of vec3
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
    """Create an array from ``data`` (copied), or allocate zeros of ``shape``.

    With neither data nor shape, returns the annotation type for kernel parameters.

    Example::

        a = sk.array([1.0, 2.0, 3.0], dtype=sk.float32, requires_grad=True)
        @sk.kernel
        def k(a: sk.array(dtype=float), pts: sk.array(dtype=sk.vec3, ndim=2)): ...
    """
    if data is None and shape is None:
        if dtype is None:
            raise TypeError("sk.array(dtype=...) needs a dtype when used as an annotation")
        return ArrayType(dtype, 1 if ndim is None else ndim)
    device = _check_device(device)
    if data is None:
        a = zeros(shape, dtype=dtype if dtype is not None else T.float32, device=device, requires_grad=requires_grad)
        _check_ndim(a, ndim)
        return a
    dtype = _dtype(dtype) if dtype is not None else _infer_dtype(data)
    if isinstance(data, Array):
        data = data.numpy()
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


def _check_ndim(a: Array, ndim) -> None:
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"sk.array(..., ndim={ndim}): the data makes a {a.ndim}-d array of shape {a.shape}")


def empty(shape, dtype: Any = T.float32, device: str | None = None, requires_grad: bool = False) -> Array:
    """An uninitialised array of ``shape``; ``sk.empty(100, dtype=sk.vec3)``."""
    device = _check_device(device)
    return _from_storage(_alloc(shape, dtype, device), _dtype(dtype), device, requires_grad)


def zeros(shape, dtype: Any = T.float32, device: str | None = None, requires_grad: bool = False) -> Array:
    """An array of zeros; ``sk.zeros((4, 4), dtype=sk.float64)``."""
    a = empty(shape, dtype, device, requires_grad)
    a._np[...] = 0
    return a


def full(shape, value, dtype: Any = None, device: str | None = None, requires_grad: bool = False) -> Array:
    """An array filled with ``value``; the dtype defaults to the value's (float -> float32)."""
    dtype = dtype if dtype is not None else (type(value) if isinstance(value, T.Composite) else _infer_dtype(value))
    return empty(shape, dtype, device, requires_grad).fill_(value)


def ones(shape, dtype: Any = T.float32, device: str | None = None, requires_grad: bool = False) -> Array:
    """An array of ones (every component of composite dtypes)."""
    return full(shape, 1, dtype, device, requires_grad)


def empty_like(a: Array, requires_grad: bool | None = None) -> Array:
    return empty(a.shape, a.dtype, a.device, a.requires_grad if requires_grad is None else requires_grad)


def zeros_like(a: Array, requires_grad: bool | None = None) -> Array:
    return zeros(a.shape, a.dtype, a.device, a.requires_grad if requires_grad is None else requires_grad)


def ones_like(a: Array, requires_grad: bool | None = None) -> Array:
    return ones(a.shape, a.dtype, a.device, a.requires_grad if requires_grad is None else requires_grad)


def full_like(a: Array, value, requires_grad: bool | None = None) -> Array:
    return full(a.shape, value, a.dtype, a.device, a.requires_grad if requires_grad is None else requires_grad)


def clone(a: Array, requires_grad: bool | None = None) -> Array:
    """A copy of ``a`` with its own memory."""
    return a.clone(requires_grad)


def copy(dst: Array, src: Array) -> None:
    """Copy the elements of ``src`` into ``dst`` (same shape and dtype)."""
    if not isinstance(dst, Array) or not isinstance(src, Array):
        raise TypeError(f"sk.copy(dst, src) takes two sk arrays, got {type(dst).__name__} and {type(src).__name__}")
    if dst.dtype is not src.dtype or dst.shape != src.shape:
        raise ValueError(f"sk.copy: dst is {T.type_name(dst.dtype)}{dst.shape}, src is {T.type_name(src.dtype)}{src.shape}")
    dst.assign(src)


# ---------------------------------------------------------------------------
# Interop: numpy, DLPack, torch
# ---------------------------------------------------------------------------

def from_numpy(arr: np.ndarray, dtype: Any = None, requires_grad: bool = False) -> Array:
    """Wrap a numpy array without copying. ``dtype`` may be a composite whose shape matches the last dims.

    Example::

        pts = np.zeros((100, 3), np.float32)
        a = sk.from_numpy(pts, dtype=sk.vec3)   # shares memory with pts
    """
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(arr).__name__}")
    scalar = T.scalar_from_numpy(arr.dtype)
    dtype = scalar if dtype is None else _dtype(dtype)
    if dtype._sk_scalar is not scalar:
        raise TypeError(f"from_numpy: numpy data is {arr.dtype}, but {T.type_name(dtype)} holds {dtype._sk_scalar.np_dtype}")
    tail = tuple(dtype._sk_shape)
    if tail and arr.shape[-len(tail):] != tail:
        raise ValueError(f"from_numpy: last dims {arr.shape[-len(tail):]} do not match {T.type_name(dtype)} {tail}")
    nd = arr.ndim - len(tail)
    step = arr.itemsize
    for n, st in zip(reversed(tail), reversed(arr.strides[nd:])):
        if n > 1 and st != step:
            raise ValueError(f"from_numpy: the components of each {T.type_name(dtype)} must be contiguous "
                             f"(numpy strides {arr.strides}); pass np.ascontiguousarray(x)")
        step *= n
    if not 1 <= nd <= 4:
        raise ValueError(f"arrays have 1 to 4 dimensions, got numpy shape {arr.shape} for {T.type_name(dtype)}")
    return _from_storage(arr, dtype, "cpu", requires_grad, owner=arr)


def from_dlpack(obj: Any, dtype: Any = None, requires_grad: bool = False) -> Array:
    """Wrap any CPU DLPack producer (numpy, torch, jax, ...) without copying."""
    a = from_numpy(np.from_dlpack(obj), dtype, requires_grad)
    a._owner = obj
    return a


def from_torch(t: Any, dtype: Any = None, requires_grad: bool = False) -> Array:
    """Wrap a CPU torch tensor without copying (shares memory).

    Example::

        x = torch.zeros(10, 3)
        a = sk.from_torch(x, dtype=sk.vec3)   # writes by kernels show up in x
    """
    import torch  # noqa: F401 - import error says torch is missing

    if not isinstance(t, torch.Tensor):
        raise TypeError(f"from_torch expects a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"from_torch: tensor is on {t.device}; this build runs kernels on 'cpu'")
    return _from_storage_foreign(t.detach().numpy(), dtype, requires_grad, owner=t)


def _from_storage_foreign(np_arr, dtype, requires_grad, owner):
    a = from_numpy(np_arr, dtype, requires_grad)
    a._owner = owner
    return a


def to_torch(a: Array):
    """A torch tensor sharing this array's memory (composite dtypes add trailing dims)."""
    import torch

    if not isinstance(a, Array):
        raise TypeError(f"to_torch expects an sk array, got {type(a).__name__}")
    return torch.from_numpy(a.numpy())


def as_array(value: Any, want: ArrayType, name: str) -> Array:
    """``value`` as an sk array of type ``want`` for a launch: foreign buffers are wrapped zero-copy."""
    if isinstance(value, Array):
        return value
    if isinstance(value, np.ndarray):
        try:
            return from_numpy(value, want.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"argument '{name}': cannot use numpy array {value.dtype}{value.shape} "
                            f"as {want!r}: {e}") from None
    if type(value).__module__.startswith("torch"):
        if getattr(value, "device", None) is not None and value.device.type != "cpu":
            raise ValueError(f"argument '{name}': torch tensor is on {value.device}, the launch device is cpu")
        return from_torch(value, want.dtype)
    raise TypeError(f"argument '{name}' expects {want!r}, got {type(value).__name__}")

