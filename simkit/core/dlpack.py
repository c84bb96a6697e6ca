"""DLPack capsules built and read with ctypes, for memory numpy cannot describe (GPU arrays).

CPU arrays use numpy's own DLPack support; this module is what lets a GPU array
travel to torch, jax or cupy (``__dlpack__``) and a GPU tensor from them become
an ``sk`` array (``sk.from_dlpack``), both without copying. It speaks the
unversioned protocol (capsule name ``"dltensor"``), which every consumer accepts.

Lifetime: an exported capsule holds a reference to the array's memory owner until
the consumer calls the tensor's deleter (or the capsule dies unconsumed); an
imported one calls the producer's deleter when the last ``sk`` array using it goes.

Example::

    cap = export(ptr, (2, 3), (12, 4), np.dtype(np.float32), (KDL_CPU, 0), owner=arr)
    view = import_capsule(cap)       # view.ptr == ptr, view.shape == (2, 3)
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13

_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # kDLInt, kDLUInt, kDLFloat, kDLBool
_KINDS = {v: k for k, v in _CODES.items()}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Capsule names must outlive every capsule: module-level bytes live as long as the process.
_NAME = b"dltensor"
_USED = b"used_dltensor"

# Exported tensors still held by a consumer: address -> (struct, shape, strides, owner).
_exports: dict[int, tuple] = {}


def _release(address: int) -> None:
    _exports.pop(address, None)


_deleter = _Deleter(_release)


def _destroy_capsule(capsule: int) -> None:
    # Renamed to "used_dltensor" means a consumer took ownership and calls the deleter itself.
    if _api.PyCapsule_IsValid(capsule, _NAME):
        _release(_api.PyCapsule_GetPointer(ctypes.cast(capsule, ctypes.py_object), _NAME))


_destructor = _CapsuleDestructor(_destroy_capsule)


def dtype_of(np_dtype: np.dtype) -> tuple[int, int, int]:
    """DLPack (code, bits, lanes) of a numpy scalar dtype.

    Example::

        dtype_of(np.float32)    # (2, 32, 1)
    """
    np_dtype = np.dtype(np_dtype)
    return _CODES[np_dtype.kind], np_dtype.itemsize * 8, 1


def numpy_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    """The numpy dtype of a DLPack (code, bits, lanes); TypeError for what simkit cannot hold.

    Example::

        numpy_dtype(2, 64, 1)   # dtype('float64')
    """
    kind = _KINDS.get(code)
    if kind is None or lanes != 1 or bits % 8:
        raise TypeError(f"DLPack data type (code={code}, bits={bits}, lanes={lanes}) is not supported")
    return np.dtype(f"{kind}{bits // 8}") if kind != "b" else np.dtype(np.bool_)


def export(ptr: int, shape: tuple, strides: tuple, np_dtype: np.dtype, device: tuple[int, int], owner: Any) -> Any:
    """A ``"dltensor"`` capsule describing ``shape`` elements of ``np_dtype`` at ``ptr``.

    ``strides`` are in bytes (as numpy and simkit keep them) and must be multiples of
    the item size; ``owner`` is kept alive until the consumer releases the tensor.

    Example::

        cap = export(a.ptr, (4,), (4,), np.dtype(np.float32), (KDL_CUDA, 0), owner=a)
    """
    itemsize = np.dtype(np_dtype).itemsize
    if any(s % itemsize for s in strides):
        raise ValueError(f"DLPack needs strides in whole elements, got byte strides {strides} for "
                         f"{itemsize}-byte items")
    n = len(shape)
    c_shape = (ctypes.c_int64 * max(n, 1))(*shape)
    c_strides = (ctypes.c_int64 * max(n, 1))(*(s // itemsize for s in strides))
    m = DLManagedTensor()
    t = m.dl_tensor
    t.data = ptr or None
    t.device = DLDevice(*device)
    t.ndim = n
    t.dtype = DLDataType(*dtype_of(np_dtype))
    t.shape = ctypes.cast(c_shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(c_strides, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = ctypes.cast(_deleter, ctypes.c_void_p)
    address = ctypes.addressof(m)
    _exports[address] = (m, c_shape, c_strides, owner)
    return _api.PyCapsule_New(address, _NAME, ctypes.cast(_destructor, ctypes.c_void_p))


class _Imported:
    """Owns a consumed DLPack tensor: calls the producer's deleter when dropped."""

    def __init__(self, address: int, deleter: int | None, producer: Any):
        self.address = address
        self.deleter = deleter
        self.producer = producer  # the producing object stays alive too, as numpy does

    def __del__(self):
        if self.deleter:
            _Deleter(self.deleter)(self.address)
            self.deleter = None


@dataclass
class Imported:
    """What a consumed capsule describes; ``owner`` keeps the memory alive."""

    ptr: int
    shape: tuple
    strides: tuple          # bytes
    np_dtype: np.dtype
    device_type: int
    device_id: int
    owner: Any


def import_capsule(capsule: Any, producer: Any = None) -> Imported:
    """Take ownership of an unversioned ``"dltensor"`` capsule (it is renamed ``"used_dltensor"``).

    Example::

        t = import_capsule(tensor.__dlpack__(), producer=tensor); t.ptr, t.shape
    """
    try:
        address = _api.PyCapsule_GetPointer(capsule, _NAME)
    except ValueError:
        raise TypeError("expected an unconsumed DLPack capsule named 'dltensor' (a capsule can be used once)") \
            from None
    m = DLManagedTensor.from_address(address)
    t = m.dl_tensor
    np_dtype = numpy_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    shape = tuple(int(t.shape[k]) for k in range(t.ndim))
    if t.strides:
        strides = tuple(int(t.strides[k]) * np_dtype.itemsize for k in range(t.ndim))
    else:  # NULL strides: compact row-major
        strides, step = [], np_dtype.itemsize
        for n in reversed(shape):
            strides.append(step)
            step *= n
        strides = tuple(reversed(strides))
    _api.PyCapsule_SetName(capsule, _USED)
    owner = _Imported(address, m.deleter, producer)
    ptr = (t.data or 0) + int(t.byte_offset)
    return Imported(ptr, shape, strides, np_dtype, int(t.device.device_type), int(t.device.device_id), owner)
