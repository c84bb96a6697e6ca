"""The ``sk.Array`` class: a typed n-d buffer (1-4 dims) on one device, with an optional grad.

Device-neutral: on the CPU its memory is a numpy buffer, on a GPU device memory handled
by :mod:`simkit.core.cuda.arrays` (which knows byte layouts, not this class). Creating
arrays (``sk.zeros``, ...) lives in :mod:`simkit.core.creation`, wrapping foreign buffers
in :mod:`simkit.core.interop`; :mod:`simkit.core.array` gathers all three.

Example::

    a = Array(np.zeros(3, np.float32), sk.float32, (3,))
    a.numpy()            # array([0., 0., 0.], dtype=float32)
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from . import device as D
from . import struct_array as SA
from . import types as T
from .cuda import arrays as cuda_arrays
from .layout import _c_strides, _elem_np, _extent, _layout, _zeros_laid_out_like  # noqa: F401 (importable from here)


class ArrayHeader(ctypes.Structure):
    """Mirror of ``sk::array_t``: the same 80 bytes for every dtype and ndim."""

    _fields_ = [("data", ctypes.c_void_p), ("grad", ctypes.c_void_p),
                ("shape", ctypes.c_int64 * 4), ("strides", ctypes.c_int64 * 4)]


class ArrayType:
    """The annotation ``sk.array(dtype=..., ndim=...)`` of a kernel parameter or struct field."""

    _sk_kind = "array"
    _sk_ctypes = ArrayHeader

    def __init__(self, dtype: Any, ndim: int = 1):
        dtype = _dtype(dtype, element=False)
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


class GenericArrayType:
    """The annotation ``sk.array(dtype=typing.Any, ndim=...)``: an array parameter of a generic
    kernel or function, instantiated with the dtype of the array each launch or call passes."""

    _sk_kind = "generic"

    def __init__(self, ndim: int = 1):
        if not isinstance(ndim, (int, np.integer)) or isinstance(ndim, bool) or ndim not in (1, 2, 3, 4):
            raise ValueError(f"arrays have 1 to 4 dimensions, got ndim={ndim!r}")
        self.ndim = int(ndim)

    def accepts(self, t) -> bool:
        """Whether a concrete type ``t`` instantiates this annotation (an array of this ndim)."""
        return isinstance(t, ArrayType) and t.ndim == self.ndim

    def __repr__(self):
        return f"array(dtype=Any, ndim={self.ndim})"


def _dtype(dtype: Any, element: bool = True) -> Any:
    """``dtype`` as a simkit value type: simkit types, ``float``/``int``/``bool``, a numpy scalar dtype,
    or an ``@sk.struct`` of values (an array of structs, see struct_array.py). With ``element=False``
    (an annotation) a struct holding arrays passes too: only making such an array is refused, so a
    module declaring one still imports and its other kernels run."""
    t = T.resolve(dtype)
    if T.is_value_type(t):
        return t
    if SA.is_struct(t):
        if element:
            SA.check_element_type(t)
        return t
    if isinstance(t, (np.dtype, str)) or (isinstance(t, type) and issubclass(t, np.generic)):
        try:
            return T.scalar_from_numpy(t)
        except TypeError:
            pass
    raise TypeError(f"array dtype must be a scalar, vector, matrix, quat, transform or @sk.struct type "
                    f"(e.g. sk.float32, sk.vec3), got {dtype!r}")


# Called as hook(array, source) after a write outside kernels (zero_, fill_, assign, clone):
# ``source`` is the sk array copied from, or None for host data. simkit.autograd.forward uses
# it to keep tangents in step (core does not import the layers above it).
write_hooks: list = []


def _written(a: "Array", source: "Array | None") -> None:
    for hook in write_hooks:
        hook(a, source)


# While a step is being recorded for replay (simkit.core.step_cache), its recorder sits here
# and hears what the step does to arrays outside kernels: ``read(a)`` for a host read of the
# contents, ``op(name, a, arg)`` for zero_/fill_/assign, ``allocated(a)`` for a new array.
recorders: list = []
# Bumped whenever any array's grad is allocated, replaced or dropped: a recording that checks its
# arrays' grads (simkit.autograd.tape_replay) looks at them one by one only when this moved.
grad_changes: list = [0]


def _refuse_in_capture(what: str) -> None:
    if D.state.capturing:
        raise RuntimeError(f"{what} is not allowed inside sk.capture(): a capture records kernel launches only "
                           "(they run at sk.replay, not now); do it before the capture, or write it as a kernel")


class Array:
    """An n-d array of ``dtype`` elements on a device; see :func:`array` to create one."""

    __array_priority__ = 100
    # an integrator's private scratch (mark_scratch): replays count none of its writes
    _scratch = False

    def __init__(self, storage: np.ndarray | None, dtype, shape: tuple, device: str = "cpu", owner: Any = None,
                 ptr: int = 0, strides: tuple | None = None):
        self.dtype = dtype
        self.shape = tuple(int(s) for s in shape)
        self.ndim = len(self.shape)
        self.device = device
        self._np = storage  # CPU: shape == self.shape + dtype._sk_shape; GPU: None
        self._owner = owner  # keeps a foreign producer (or the device allocation) alive
        self._grad: Array | None = None
        self._version = 0
        self._ctx = None
        if storage is not None:
            ptr = storage.ctypes.data
            strides = storage.strides[: self.ndim]
        else:
            from .cuda import driver

            self._ctx = driver.context(D.ordinal(device))
        self._ptr = int(ptr or 0)
        self._strides = tuple(int(s) for s in strides)
        self._hdr = ArrayHeader()
        self._hdr_addr = ctypes.addressof(self._hdr)
        self._hdr_view = memoryview(self._hdr).cast("B")  # live bytes: launches copy it with one memcpy
        self._hdr.data = self._ptr if self.size else None
        for k, s in enumerate(self.shape):
            self._hdr.shape[k] = s
            self._hdr.strides[k] = self._strides[k]
        if recorders:
            recorders[-1].allocated(self)

    # -- gradients --------------------------------------------------------------
    @property
    def grad(self) -> "Array | None":
        """The gradient buffer (same shape, dtype, device and memory layout), or None."""
        return self._grad

    @grad.setter
    def grad(self, g: "Array | None"):
        if g is not None:
            if not isinstance(g, Array):
                raise TypeError(f"grad must be an sk array or None, got {type(g).__name__}")
            if g.dtype is not self.dtype or g.shape != self.shape:
                raise ValueError(f"grad must be {T.type_name(self.dtype)}{self.shape}, "
                                 f"got {T.type_name(g.dtype)}{g.shape}")
            if g.device != self.device:
                raise ValueError(f"grad must be on the array's device {self.device}, got one on {g.device}")
            if _layout(g._strides, g.shape) != _layout(self._strides, self.shape):
                raise ValueError("grad must have the same memory layout (strides) as the data; "
                                 "use a.requires_grad = True to allocate a matching one")
            self._check_float_for_grad()
        self._grad = g
        self._hdr.grad = g._ptr if g is not None and g.size else None
        grad_changes[0] += 1

    def _check_float_for_grad(self):
        """Refuse a grad only for a struct without float fields. An integer (or bool) array may
        require grad, as in Warp: its grad is allocated and stays zero, since no adjoint writes
        into an integer's gradient and a launch reading it is not differentiated through it."""
        if SA.is_struct(self.dtype):
            if not SA.has_float_fields(self.dtype):
                raise TypeError(f"only arrays with float values can require grad; struct {self.dtype.__name__} "
                                "has no float field")
            return

    @property
    def requires_grad(self) -> bool:
        """Whether the array has a grad buffer; setting True allocates a zeroed one alike."""
        return self._grad is not None

    @requires_grad.setter
    def requires_grad(self, value: bool):
        if value and self._grad is None:
            self._check_float_for_grad()
            if self._np is not None:
                self.grad = Array(_zeros_laid_out_like(self._np), self.dtype, self.shape, self.device)
            else:
                self.grad = _cuda_zeros_alike(self)
        elif not value and self._grad is not None:
            self.grad = None

    # -- layout -----------------------------------------------------------------------
    @property
    def _np_dtype(self) -> np.dtype:
        return _elem_np(self.dtype)

    @property
    def _host_shape(self) -> tuple:
        return self.shape + tuple(self.dtype._sk_shape)

    @property
    def _host_strides(self) -> tuple:
        """Byte strides of the ``.numpy()`` view: the array's, then compact ones for the dtype's components."""
        tail = tuple(self.dtype._sk_shape)
        return self._strides + _c_strides(tail, self._np_dtype.itemsize)

    @property
    def _elem_bytes(self) -> int:
        return self._np_dtype.itemsize * math.prod(self.dtype._sk_shape)

    @property
    def _contiguous(self) -> bool:
        return _layout(self._strides, self.shape) == _layout(_c_strides(self.shape, self._elem_bytes), self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the elements occupy (``size`` times the element size)."""
        return self.size * self._elem_bytes

    def _copy_from(self, src: "Array") -> None:
        """Elements of ``src`` (same shape and dtype, any device) into this array."""
        if self._np is not None and src._np is not None:
            self._np[...] = src._np
        else:
            cuda_arrays.copy(self, src)

    # -- views and conversion -----------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The data as a numpy array (shape ``shape + dtype shape``): a zero-copy view on the CPU,
        a copy from a GPU (which waits for the launches queued before it). For an array of
        structs, a numpy structured array of ``shape`` (see simkit.core.struct_array).

        Example::

            sk.zeros(2, dtype=sk.vec3).numpy().shape    # (2, 3)
            sk.zeros(2, dtype=Particle).numpy()["mass"] # one field of every element
        """
        if recorders:
            recorders[-1].read(self)
        if self._np is not None:
            return self._np
        return cuda_arrays.to_host(self)

    def to(self, device: str) -> "Array":
        """This array on ``device``: itself if it is there already, else a copy (with a zeroed grad
        if this one has a grad).

        Example::

            g = sk.zeros(3).to("cuda")     # on the GPU
            h = g.to("cpu")                # and back: a new CPU array
        """
        dev = D.require(device, "to(device)")
        if dev == self.device:
            return self
        out = _empty(self.shape, self.dtype, dev, self.requires_grad)
        out._copy_from(self)
        return out

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)

    @property
    def ptr(self) -> int:
        """Address of the first element (a device address on a GPU)."""
        return self._ptr

    @property
    def __array_interface__(self):
        if recorders:
            recorders[-1].read(self)
        if self._np is None:
            raise AttributeError(f"an array on {self.device} has no __array_interface__ (its memory is on the GPU); "
                                 "use .numpy() for a host copy or __cuda_array_interface__")
        return self._np.__array_interface__

    @property
    def __cuda_array_interface__(self) -> dict:
        """Version 3 of the CUDA array interface (numba, cupy, torch read it); GPU arrays only."""
        if self._np is not None:
            raise AttributeError("a CPU array has no __cuda_array_interface__; use __array_interface__")
        return {"shape": self._host_shape, "typestr": self._np_dtype.str, "data": (self._ptr, False),
                "strides": None if self._contiguous else self._host_strides, "version": 3,
                "stream": int(self._ctx.stream)}

    def __array__(self, dtype=None, copy=None):
        data = self.numpy()
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"cannot view {data.dtype} data as {np.dtype(dtype)} without a copy")
            return data.astype(dtype)
        if self._np is None:
            if copy is False:
                raise ValueError(f"an array on {self.device} cannot be viewed by numpy without a copy")
            return data
        return data.copy() if copy else data

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None):
        if self._np is not None:
            given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
            return self._np.__dlpack__(**{k: v for k, v in given.items() if v is not None})
        from . import dlpack

        here = (dlpack.KDL_CUDA, D.ordinal(self.device))
        if dl_device is not None and tuple(dl_device) != here:
            # The consumer asks for the data elsewhere: only the CPU, and only as a copy.
            if tuple(dl_device)[0] != dlpack.KDL_CPU:
                raise BufferError(f"__dlpack__: an array on {self.device} cannot be exported to DLPack device "
                                  f"{tuple(dl_device)}; move it there first with .to()")
            if copy is False:
                raise BufferError(f"__dlpack__: an array on {self.device} reaches the CPU only as a copy, "
                                  "and copy=False was asked")
            return self.numpy().__dlpack__(**({"max_version": max_version} if max_version is not None else {}))
        if stream is not None and stream != -1 and stream != int(self._ctx.stream):
            # The consumer reads on another stream: let everything queued on ours finish first.
            from .cuda import memory

            memory.wait(self._ctx)
        return dlpack.export(self._ptr, self._host_shape, self._host_strides, self._np_dtype, here, owner=self)

    def __dlpack_device__(self):
        if self._np is not None:
            return self._np.__dlpack_device__()
        from . import dlpack

        return dlpack.KDL_CUDA, D.ordinal(self.device)

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        g = ", requires_grad=True" if self.requires_grad else ""
        return (f"sk.array({np.array2string(self.numpy(), threshold=20)}, dtype={T.type_name(self.dtype)}, "
                f"device='{self.device}'{g})")

    # -- in-place ops ---------------------------------------------------------------
    def zero_(self) -> "Array":
        """Set every element to zero; returns self.

        Example::

            a.zero_()
        """
        _refuse_in_capture("zero_()")
        if recorders:
            recorders[-1].op("zero_", self, None)
        self._write(0)
        self._version += 1
        if write_hooks:
            _written(self, None)
        return self

    def _write(self, data) -> None:
        """Host ``data`` (a scalar, or values of the ``.numpy()`` shape) into every element; counts no
        version (the tape's own grad bookkeeping uses it)."""
        if self._np is not None:
            self._np[...] = data
        else:
            cuda_arrays.write(self, data)

    def fill_(self, value) -> "Array":
        """Set every element to ``value`` (a scalar, a vector/matrix for composite dtypes, an
        instance for an array of structs).

        Example::

            sk.zeros(4, dtype=sk.vec3).fill_(sk.vec3(0.0, 1.0, 0.0))
            sk.zeros(4, dtype=Particle).fill_(Particle(mass=1.0))
        """
        _refuse_in_capture("fill_()")
        if recorders:
            recorders[-1].op("fill_", self, self._fill_value(value))
        self._write(self._fill_value(value))
        self._version += 1
        if write_hooks:
            _written(self, None)
        return self

    def _fill_value(self, value) -> np.ndarray:
        """``value`` as one element (a scalar or the dtype's component shape), checked."""
        if SA.is_struct(self.dtype):
            return SA.host_data(value, self.dtype, "fill_")
        try:
            v = np.asarray(value, dtype=self._np_dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"fill_: cannot use {value!r} as {T.type_name(self.dtype)}: {e}") from None
        tail = tuple(self.dtype._sk_shape)
        if v.ndim and v.shape != tail and v.size != int(np.prod(tail)):
            raise ValueError(f"fill_: value of shape {v.shape} does not fit {T.type_name(self.dtype)} elements "
                             f"(a scalar or {int(np.prod(tail)) if tail else 1} component(s))")
        return v.reshape(tail) if v.ndim else v

    def assign(self, src) -> "Array":
        """Copy ``src`` (an array on any device, numpy array or nested list of the same shape) into this array.
        An array of structs takes structured numpy data (fields matched by name) or instances.

        Example::

            a.assign(np.arange(3.0))
            particles.assign(other_particles.numpy())
        """
        _refuse_in_capture("assign()")
        if recorders:
            recorders[-1].op("assign", self, src)
        if isinstance(src, Array):
            if src._host_shape != self._host_shape:
                raise ValueError(f"assign: data of shape {src._host_shape} does not match this array's "
                                 f"{self.shape} elements of {T.type_name(self.dtype)} (numpy shape {self._host_shape})")
            self._copy_from(src)
        else:
            data = SA.host_data(src, self.dtype, "assign") if SA.is_struct(self.dtype) else \
                np.asarray(src, dtype=self._np_dtype)
            if data.shape != self._host_shape:
                raise ValueError(f"assign: data of shape {data.shape} does not match this array's "
                                 f"{self.shape} elements of {T.type_name(self.dtype)} (numpy shape {self._host_shape})")
            self._write(data)
        self._version += 1
        if write_hooks:
            _written(self, src if isinstance(src, Array) else None)
        return self

    def clone(self, requires_grad: bool | None = None) -> "Array":
        """A copy on the same device with its own memory (and its own zeroed grad if this one has one).
        Under a Tape (or a JVP) the copy carries its source's gradient (tangent), except with
        ``requires_grad=False``: a detached copy.

        Example::

            b = a.clone()
        """
        rg = self.requires_grad if requires_grad is None else requires_grad
        if self._np is not None:
            out = _from_storage(self._np.copy(), self.dtype, self.device, rg)
        else:
            out = _empty(self.shape, self.dtype, self.device, rg)
            out._copy_from(self)
        if write_hooks:  # requires_grad=False: a detached copy, no gradient or tangent through it
            _written(out, None if requires_grad is False else self)
        return out

    def type(self) -> ArrayType:
        """The kernel annotation type of this array (``sk.array(dtype=..., ndim=...)``)."""
        return ArrayType(self.dtype, self.ndim)


def _from_storage(storage: np.ndarray, dtype, device: str, requires_grad: bool, owner=None) -> Array:
    """An array over host ``storage``; on a GPU ``device``, a device copy of it."""
    nd = storage.ndim - len(dtype._sk_shape)
    if device != "cpu":
        a = _cuda_empty(storage.shape[:nd], dtype, device)
        cuda_arrays.write(a, storage)
    else:
        a = Array(storage, dtype, storage.shape[:nd], device, owner)
    if requires_grad:
        a.requires_grad = True
    return a


def _empty(shape: tuple, dtype: Any, device: str, requires_grad: bool) -> Array:
    """A new uninitialised array of a normalised ``shape`` and resolved ``dtype`` on ``device``."""
    if device != "cpu":
        a = _cuda_empty(shape, dtype, device)
        if requires_grad:
            a.requires_grad = True
        return a
    return _from_storage(np.empty(shape + tuple(dtype._sk_shape), dtype=_elem_np(dtype)), dtype, device,
                         requires_grad)


def _cuda_empty(shape: tuple, dtype: Any, device: str) -> Array:
    """A new uninitialised C-contiguous array on GPU ``device``."""
    buf, strides = cuda_arrays.alloc(shape, dtype, device)
    return Array(None, dtype, shape, device, owner=buf, ptr=buf.ptr, strides=strides)


def _cuda_zeros_alike(a: Array) -> Array:
    """Zeros on ``a``'s GPU with exactly ``a``'s strides."""
    buf, ptr = cuda_arrays.zeros_span(a)
    return Array(None, a.dtype, a.shape, a.device, owner=buf, ptr=ptr, strides=a._strides)


def mark_scratch(a: Array) -> Array:
    """Mark ``a`` as an integrator's private scratch: written by its steps outside any Tape
    and read by nothing a Tape records, by no cache keyed on its contents and by no user,
    so a replayed step (:mod:`simkit.core.step_cache`) counts none of its writes (counting
    each written array of a step in Python cost more than the contact solve's launches).
    Returns ``a``.

    Example::

        buf = mark_scratch(sk.zeros(n))
    """
    a._scratch = True
    return a
