"""Zero-copy interop: numpy, DLPack, torch and the CUDA array interface.

Every wrapper shares memory with its source and keeps the source alive for as
long as the ``sk`` array lives. CPU memory goes through numpy; GPU memory through
DLPack capsules (:mod:`simkit.core.dlpack`) or ``__cuda_array_interface__``.

Example::

    pts = np.zeros((100, 3), np.float32)
    a = sk.from_numpy(pts, dtype=sk.vec3)     # shares memory with pts
    t = sk.to_torch(a)                        # and with this tensor
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import device as D
from . import struct_array as SA
from . import types as T
from .array_base import Array, ArrayType, _dtype, _from_storage


def _check_components(shape: tuple, strides: tuple, itemsize: int, dtype, what: str) -> int:
    """The number of array dims once ``dtype``'s trailing component dims are split off (checked compact)."""
    tail = tuple(dtype._sk_shape)
    if tail and tuple(shape[-len(tail):]) != tail:
        lead = tuple(shape[:-len(tail)] if len(shape) > len(tail) else shape[:1])
        raise ValueError(f"{what}: data of shape {tuple(shape)} does not hold elements of {T.type_name(dtype)}: "
                         f"its last dims must be {tail}, as in numpy shape {(*lead, *tail)}")
    nd = len(shape) - len(tail)
    step = itemsize
    for n, st in zip(reversed(tail), reversed(strides[nd:])):
        if n > 1 and st != step:
            raise ValueError(f"{what}: the components of each {T.type_name(dtype)} must be contiguous "
                             f"(strides {tuple(strides)}); make the source contiguous first")
        step *= n
    if not 1 <= nd <= 4:
        raise ValueError(f"arrays have 1 to 4 dimensions, got shape {tuple(shape)} for {T.type_name(dtype)}")
    return nd


def _scalar_dtype(np_dtype, dtype, what: str):
    scalar = T.scalar_from_numpy(np_dtype)
    dtype = scalar if dtype is None else _dtype(dtype)
    if dtype._sk_scalar is not scalar:
        raise TypeError(f"{what}: data is {np.dtype(np_dtype)}, but {T.type_name(dtype)} holds "
                        f"{dtype._sk_scalar.np_dtype}")
    return dtype


def from_numpy(arr: np.ndarray, dtype: Any = None, requires_grad: bool = False, *, device: Any = None) -> Array:
    """Wrap a numpy array without copying. ``dtype`` may be a composite whose shape matches the last dims.
    ``device`` (Warp's keyword): on the CPU (or None) the wrap; on a GPU a copy there.

    Example::

        pts = np.zeros((100, 3), np.float32)
        a = sk.from_numpy(pts, dtype=sk.vec3)   # shares memory with pts
        ps = sk.from_numpy(np.zeros(8, Particle._sk_np_dtype), dtype=Particle)   # structured data
    """
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(arr).__name__}")
    where = "cpu" if device is None else D.require(device, "from_numpy(device)")
    if arr.dtype.names is not None or SA.is_struct(T.resolve(dtype)):
        wrapped = _wrap_structs(arr, dtype, requires_grad)
    else:
        dtype = _scalar_dtype(arr.dtype, dtype, "from_numpy")
        _check_components(arr.shape, arr.strides, arr.itemsize, dtype, "from_numpy")
        wrapped = _from_storage(arr, dtype, "cpu", requires_grad, owner=arr)
    return wrapped if where == "cpu" else wrapped.to(where)


def _wrap_structs(arr: np.ndarray, dtype: Any, requires_grad: bool) -> Array:
    """from_numpy of a structured array: wrapped as an array of ``dtype`` (an @sk.struct) when its
    dtype is exactly the struct's layout (sk.array converts other structured data field by field)."""
    t = T.resolve(dtype)
    if not SA.is_struct(t):
        raise TypeError(f"from_numpy: a numpy structured array needs dtype= the @sk.struct of its elements "
                        f"(numpy dtype {arr.dtype})")
    _dtype(t)  # refuses a struct holding arrays
    if arr.dtype != t._sk_np_dtype:
        raise TypeError(f"from_numpy: numpy dtype {arr.dtype} is not the layout of {t.__name__} elements "
                        f"({t._sk_np_dtype}); sk.array(data, dtype={t.__name__}) converts it (a copy)")
    if not 1 <= arr.ndim <= 4:
        raise ValueError(f"arrays have 1 to 4 dimensions, got shape {arr.shape}")
    return _from_storage(arr, t, "cpu", requires_grad, owner=arr)


def _wrap_device(ptr: int, shape: tuple, strides: tuple, np_dtype, device: str, dtype: Any, requires_grad: bool,
                 owner: Any, what: str) -> Array:
    """An ``sk`` array over foreign GPU memory (``shape``/``strides`` in numpy terms, bytes)."""
    dtype = _scalar_dtype(np_dtype, dtype, what)
    nd = _check_components(shape, strides, np.dtype(np_dtype).itemsize, dtype, what)
    a = Array(None, dtype, tuple(shape[:nd]), D.require(device, what), owner=owner, ptr=ptr,
              strides=tuple(strides[:nd]))
    if requires_grad:
        a.requires_grad = True
    return a


def from_cuda_array_interface(obj: Any, dtype: Any = None, requires_grad: bool = False) -> Array:
    """Wrap any object with ``__cuda_array_interface__`` (cupy, numba, torch) without copying.

    Example::

        a = from_cuda_array_interface(cupy.zeros(10, cupy.float32))
    """
    cai = obj.__cuda_array_interface__
    np_dtype = np.dtype(cai["typestr"])
    shape = tuple(int(s) for s in cai["shape"])
    strides = cai.get("strides")
    if strides is None:
        strides, step = [], np_dtype.itemsize
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        strides = tuple(reversed(strides))
    ptr = int(cai["data"][0] or 0)
    from .cuda import driver

    index = _cuda_ordinal_of(ptr) if driver.device_count() > 1 else 0
    return _wrap_device(ptr, shape, tuple(int(s) for s in strides), np_dtype, f"cuda:{index}", dtype,
                        requires_grad, obj, "__cuda_array_interface__")


def _cuda_ordinal_of(ptr: int) -> int:
    """The GPU that owns device address ``ptr`` (asked of the driver)."""
    from .cuda import driver

    drv = driver.bindings()
    if not ptr:
        return 0
    value = driver.check(drv.cuPointerGetAttribute(drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr),
                         "cuPointerGetAttribute")
    return int(value)


def from_dlpack(obj: Any, dtype: Any = None, requires_grad: bool = False) -> Array:
    """Wrap any DLPack producer (numpy, torch, jax, cupy, ...) without copying, on the CPU or a GPU.

    Example::

        a = sk.from_dlpack(torch.zeros(4, device="cuda"))    # a.device == "cuda:0"
    """
    from . import dlpack

    kind, index = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (dlpack.KDL_CPU, 0)
    if int(kind) in (dlpack.KDL_CUDA, dlpack.KDL_CUDA_MANAGED):
        from .cuda import driver

        ctx = driver.context(int(index))
        t = dlpack.import_capsule(obj.__dlpack__(stream=int(ctx.stream)), producer=obj)
        return _wrap_device(t.ptr, t.shape, t.strides, t.np_dtype, f"cuda:{int(index)}", dtype, requires_grad,
                            t.owner, "from_dlpack")
    a = from_numpy(np.from_dlpack(obj), dtype, requires_grad)
    a._owner = obj
    return a


def from_torch(t: Any, dtype: Any = None, requires_grad: bool = False) -> Array:
    """Wrap a torch tensor (CPU or CUDA) without copying (shares memory).

    Example::

        x = torch.zeros(10, 3)
        a = sk.from_torch(x, dtype=sk.vec3)   # writes by kernels show up in x
    """
    import torch  # noqa: F401 - import error says torch is missing

    if not isinstance(t, torch.Tensor):
        raise TypeError(f"from_torch expects a torch.Tensor, got {type(t).__name__}")
    if t.device.type == "cuda":
        a = from_cuda_array_interface(t.detach(), dtype, requires_grad)
        a._owner = t
        return a
    if t.device.type != "cpu":
        raise ValueError(f"from_torch: tensor is on {t.device}; simkit runs kernels on 'cpu' and 'cuda'")
    a = from_numpy(t.detach().numpy(), dtype, requires_grad)
    a._owner = t
    return a


def to_torch(a: Array):
    """A torch tensor sharing this array's memory, on the same device (composite dtypes add trailing dims).

    Example::

        t = sk.to_torch(sk.zeros(4, dtype=sk.vec3))    # t.shape == (4, 3)
    """
    import torch

    if not isinstance(a, Array):
        raise TypeError(f"to_torch expects an sk array, got {type(a).__name__}")
    if a.device != "cpu":
        return torch.from_dlpack(a)
    return torch.from_numpy(a.numpy())


def as_array(value: Any, want: ArrayType, name: str) -> Array:
    """``value`` as an sk array of type ``want`` for a launch: foreign buffers are wrapped zero-copy.

    Example::

        a = as_array(np.zeros(3, np.float32), sk.array(dtype=float), "x")
    """
    if isinstance(value, Array):
        return value
    if isinstance(value, np.ndarray):
        try:
            return from_numpy(value, want.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"argument '{name}': cannot use numpy array {value.dtype}{value.shape} "
                            f"as {want!r}: {e}") from None
    if type(value).__module__.startswith("torch"):
        kind = getattr(getattr(value, "device", None), "type", "cpu")
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"argument '{name}': torch tensor is on {value.device}; simkit runs kernels on "
                             "'cpu' and 'cuda'")
        return from_torch(value, want.dtype)
    if hasattr(value, "__cuda_array_interface__"):
        return from_cuda_array_interface(value, want.dtype)
    raise TypeError(f"argument '{name}' expects {want!r}, got {type(value).__name__}")
