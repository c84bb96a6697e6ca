"""Arrays: typed n-d buffers (1-4 dims) that kernels read and write, with optional grads.

An array lives on one device. On the CPU its memory is a numpy buffer, so
``.numpy()`` is a zero-copy view; on a GPU (``device="cuda:N"``) it is device
memory from the CUDA driver and ``.numpy()`` returns a copy. Either way the
kernel sees the same 80-byte header (data pointer, grad pointer, shape, byte
strides), so kernels never care where they run. Foreign buffers (numpy, DLPack
producers, torch, ``__cuda_array_interface__``) are wrapped without copying, see
:mod:`simkit.core.interop`.

Example::

    x = sk.array(np.arange(4.0), dtype=sk.float32, requires_grad=True)
    v = sk.zeros(10, dtype=sk.vec3)
    v.numpy().shape      # (10, 3)
    g = x.to("cuda")     # a copy on the GPU (where there is one)
    p = sk.zeros(10, dtype=Particle)   # an @sk.struct: .numpy() is a structured array
"""

from .array_base import (Array, ArrayHeader, ArrayType, GenericArrayType, _c_strides, _cuda_zeros_alike,  # noqa: F401
                         _dtype, _elem_np, _extent, _layout, _refuse_in_capture, _written, _zeros_laid_out_like,
                         mark_scratch, recorders, write_hooks)

# Construction lives in its own module (creation.py); these names stay importable from here.
from .creation import (_alloc, _check_device, _check_ndim, _from_storage, _infer_dtype, _norm_shape,  # noqa: F401
                       array, array1d, array2d, array3d, array4d, clone, copy, empty, empty_like, full, full_like,
                       ones, ones_like, zeros, zeros_like)

# Interop lives in its own module; these names stay importable from here.
from .interop import as_array, from_dlpack, from_numpy, from_torch, to_torch  # noqa: F401
