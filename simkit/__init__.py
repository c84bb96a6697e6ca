"""simkit: differentiable physics simulation with typed Python kernels.

Example::

    import simkit as sk

    @sk.kernel
    def saxpy(x: sk.array(dtype=float), y: sk.array(dtype=float), a: float):
        i = sk.tid()
        y[i] = a * x[i] + y[i]

    x = sk.array([1.0, 2.0, 3.0])
    y = sk.zeros(3)
    sk.launch(saxpy, 3, inputs=[x, y, 2.0])
"""

import sys as _sys

from .core.array import (Array, ArrayType, array, array1d, array2d, array3d, array4d, clone, copy, empty, empty_like,
                         from_dlpack, from_numpy, from_torch, full, full_like, ones, ones_like, to_torch, zeros,
                         zeros_like)
from .core.config import config
from .core.errors import CompileError, CompilerNotFoundError, KernelRuntimeError, NativeCompileError
from .core.kernel import Kernel, func, func_grad, kernel, overload
from .core.modules import compile_ahead, instantiate, load_module, overload_types
from .core.lang import BUILTIN_STUBS as _STUBS
from .core.lang import adjoint, constant, grad, static
from .core import host_builtins as _host_builtins  # noqa: F401  (sk.cos(0.5) and the like in Python)
from .core.launch import launch
from .core.capture import capture, capture_begin, capture_end, capture_launch, replay
from .core.device import (Device, ScopedDevice, get_cuda_device_count, get_device, is_cuda_available, set_device,
                          synchronize, synchronize_device)
from .core.struct import struct
from .core.mesh import Mesh, MeshQueryPoint, MeshQueryRay
from .core.threads import get_threads, set_threads
from .autograd.tape import Tape
from .core.types import (float32, float64, int32, int64, uint32, bool_, int8, uint8, int16, uint16, uint64, float16,
                         matrix, vector, quat_of, transform_of, WARP_NAMED_TYPES, Int, Float, Scalar,
                         vec2, vec3, vec4, vec2d, vec3d, vec4d, vec2i, vec3i, vec4i, mat22, mat33, mat44,
                         mat22d, mat33d, mat44d, quat, quatd, transform, transformd, spatial_vector, spatial_vectord,
                         spatial_matrix, spatial_matrixd, dtype_from_numpy, dtype_to_numpy)
globals().update(WARP_NAMED_TYPES)  # vec3b (int8), vec3ub, vec3s, vec3us, vec3l, vec3ui, vec3ul, vec3h, quath, ...
from . import types  # noqa: E402  (sk.types.vector, sk.types.type_size, ...: Warp's wp.types)

from . import autograd  # noqa: E402  (sk.autograd.jacobian, ...)
from .core import ptx as cuda  # noqa: E402  (sk.cuda.ptx, ...)
_sys.modules[__name__ + ".cuda"] = cuda  # import simkit.cuda, from simkit.cuda import ptx: as before

globals().update({k: v for k, v in _STUBS.items() if k not in globals()})
from .core.lang import CONSTANTS as _CONSTANTS  # noqa: E402
globals().update(_CONSTANTS)  # sk.pi, sk.e, sk.inf, sk.nan, sk.tau, sk.PI, ... (Warp's constants)
globals()["bool"] = bool_  # sk.bool, Warp's name of the kernel scalar (Python's bool is unchanged elsewhere)
from .core.types import bfloat16  # noqa: E402  (None without the ml_dtypes package)
if bfloat16 is None:
    del bfloat16  # sk.bfloat16 then raises AttributeError, which __getattr__ below explains
__version__ = "0.1.0"
from . import sim  # noqa: E402  (sk.sim.ModelBuilder, ...; imports the kernel language above it)
from . import render  # noqa: E402  (sk.render.UsdExporter, ...)
from . import optim  # noqa: E402  (sk.optim.Adam, sk.optim.Rollout, ...)

_SCENE_API = {"sweep": "simkit.scene.sweeps", "multi_start": "simkit.scene.multistart"}


def __getattr__(name: str):
    """``sk.sweep`` and ``sk.multi_start`` (the scene layer's sweeps on Ray), imported on first use."""
    if name in _SCENE_API:
        import importlib

        return getattr(importlib.import_module(_SCENE_API[name]), name)
    if name == "bfloat16":
        raise AttributeError("sk.bfloat16 needs the ml_dtypes package (numpy has no bfloat16 dtype): "
                             "pip install ml_dtypes")
    raise AttributeError(f"module 'simkit' has no attribute {name!r}")
