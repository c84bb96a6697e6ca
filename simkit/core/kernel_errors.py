"""What a kernel's error record means: the ``sk::error_t`` mirror that a CPU or GPU launch
reads back, and the Python exception each of its codes raises.

Shared by the CPU launch (:mod:`simkit.core.launch`), the CUDA modules
(:mod:`simkit.core.cuda.module`) and the Hessian-vector launches, below all of them.

Example::

    record = ErrorRecord()
    record.code = 1                                   # an index out of bounds
    raise_kernel_error(kernel, fir, record, "cpu")    # IndexError naming the kernel's file and line
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading

from .config import config
from .errors import KernelRuntimeError


class ErrorRecord(ctypes.Structure):
    """Mirror of ``sk::error_t``."""

    _fields_ = [("code", ctypes.c_int32), ("line", ctypes.c_int32), ("dim", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("index", ctypes.c_int64 * 4), ("shape", ctypes.c_int64 * 4)]


def raise_kernel_error(kernel, fir, e: ErrorRecord, device: str) -> None:
    """Raise what a kernel's error record says (IndexError for a bounds check, KernelRuntimeError else)."""
    code, line = e.code, e.line
    index = tuple(e.index[: e.ndim])
    shape = tuple(e.shape[: e.ndim])
    where = f"kernel '{kernel.name}' ({fir.file}:{line})"
    if code == 1:
        raise IndexError(f"{where}: index {index} out of bounds for array of shape {shape} (dimension {e.dim})")
    if code == 2:
        limit, name = ((config.max_loop_iterations, "max_loop_iterations") if device == "cpu"
                       else (config.cuda_max_loop_iterations, "cuda_max_loop_iterations"))
        raise KernelRuntimeError(f"{where}: the loop at line {line} ran more than sk.config.{name}={limit} "
                                 f"iterations on {device}, which the adjoint cannot replay; raise the limit before "
                                 "the kernel is compiled")
    if code == 4:
        interrupted(f"kernel '{kernel.name}' ({fir.file})")
    if code == 3:
        raise ZeroDivisionError(f"{where}: integer division or modulo by zero (release mode gives 0 there)")
    if code == 6:
        raise IndexError(f"{where}: a vector or quaternion component index out of range (release mode reads "
                         "component 0 there and writes nothing)")
    raise KernelRuntimeError(f"{where}: runtime error code {code}")


def interrupted(where: str) -> None:
    """Ctrl-C stopped a CPU launch (the runtime kept the signal from Python while the launch ran):
    run the program's own SIGINT handler, if it set one, then raise KeyboardInterrupt, since the
    launch's outputs are incomplete whatever that handler decided."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not signal.default_int_handler \
            and threading.current_thread() is threading.main_thread():
        handler(signal.SIGINT, sys._getframe(1))
    raise KeyboardInterrupt(f"{where}: interrupted (SIGINT); the arrays it writes hold partial results")
