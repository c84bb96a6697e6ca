"""The CUDA driver API through cuda-python, opened on first use.

``cuda.bindings.driver`` is imported and ``cuInit`` called only when something
asks for a GPU. Without libcuda (no NVIDIA driver), or without a GPU, the failure
is remembered: :func:`device_count` answers 0 and :func:`context` raises a
``RuntimeError`` that says why.

Each GPU gets one :class:`Context`: the device's primary context (the one torch
and other CUDA libraries share), one simkit stream on which every launch and copy
is queued in order, and the facts compiling for it needs (architecture, SM count).
The stream is a blocking stream, so it orders itself with the legacy default
stream that other libraries use by default.

Example::

    from simkit.core.cuda import driver
    if driver.device_count():
        ctx = driver.context(0)
        ctx.arch                 # e.g. "sm_90"
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_drv: Any = None
_failure: str | None = None
_count = 0
_contexts: dict[int, "Context"] = {}


def _import_bindings() -> Any:
    """The ``cuda.bindings.driver`` module (a separate function so tests can substitute a fake)."""
    from cuda.bindings import driver

    return driver


def _open() -> None:
    global _drv, _failure, _count
    try:
        drv = _import_bindings()
    except ImportError as e:
        _failure = f"cuda-python is not installed ({e}); pip install cuda-python"
        return
    try:
        (err,) = drv.cuInit(0)
    except Exception as e:  # noqa: BLE001 - no libcuda: the bindings raise their own loader error
        _failure = f"the CUDA driver library (libcuda) could not be loaded: {type(e).__name__}: {e}"
        return
    if err != drv.CUresult.CUDA_SUCCESS:
        _failure = f"cuInit failed with {_error_name(drv, err)}"
        return
    err, count = drv.cuDeviceGetCount()
    if err != drv.CUresult.CUDA_SUCCESS or count == 0:
        _failure = "the CUDA driver found no GPU"
        return
    _drv, _count = drv, int(count)


def _ensure() -> None:
    if _drv is None and _failure is None:
        with _lock:
            if _drv is None and _failure is None:
                _open()


def device_count() -> int:
    """The number of GPUs; 0 without a driver or a GPU (never raises).

    Example::

        if device_count() == 0: print(unavailable_reason())
    """
    _ensure()
    return _count


def unavailable_reason() -> str:
    """Why there is no GPU (empty when there is one).

    Example::

        unavailable_reason()    # e.g. "the CUDA driver library (libcuda) could not be loaded: ..."
    """
    _ensure()
    return _failure or ""


def bindings() -> Any:
    """The initialised ``cuda.bindings.driver`` module; RuntimeError when there is no GPU.

    Example::

        drv = bindings(); drv.cuDriverGetVersion()
    """
    _ensure()
    if _drv is None:
        raise RuntimeError(f"no CUDA driver/GPU was found: {_failure}")
    return _drv


def _error_name(drv: Any, err: Any) -> str:
    try:
        e, name = drv.cuGetErrorName(err)
        e2, text = drv.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else str(name)
        text = text.decode() if isinstance(text, bytes) else str(text)
        return f"{name} ({text})"
    except Exception:  # noqa: BLE001 - the error code alone still says what happened
        return str(err)


class CudaError(RuntimeError):
    """A CUDA driver call failed; ``code`` is the ``CUresult``."""

    def __init__(self, message: str, code: Any = None):
        super().__init__(message)
        self.code = code


def check(result: tuple, what: str) -> Any:
    """Unpack a cuda-python result tuple ``(CUresult, values...)``; raise CudaError on failure.

    Returns None, the single value, or a tuple of values.

    Example::

        ptr = int(check(drv.cuMemAlloc(1024), "cuMemAlloc"))
    """
    drv = _drv
    err = result[0]
    if err != drv.CUresult.CUDA_SUCCESS:
        raise CudaError(f"CUDA call {what} failed: {_error_name(drv, err)}", err)
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


class Context:
    """One GPU: its primary context, simkit's stream on it and its compile target."""

    def __init__(self, index: int):
        drv = bindings()
        self.drv = drv
        self.index = index
        self.name = f"cuda:{index}"
        self.device = check(drv.cuDeviceGet(index), "cuDeviceGet")
        self.handle = check(drv.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        self.activate()
        self.stream = check(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_DEFAULT.value), "cuStreamCreate")
        attr = drv.CUdevice_attribute
        major = check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device),
                      "cuDeviceGetAttribute")
        minor = check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device),
                      "cuDeviceGetAttribute")
        self.compute_capability = (int(major), int(minor))
        self.arch = f"sm_{int(major)}{int(minor)}"
        self.sm_count = int(check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                           self.device), "cuDeviceGetAttribute"))
        raw = check(drv.cuDeviceGetName(256, self.device), "cuDeviceGetName")
        self.gpu_name = (raw.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw))
        self.driver_version = int(check(drv.cuDriverGetVersion(), "cuDriverGetVersion"))
        self.capturing = False
        # Modules launched since their error record was last read (release mode reads it
        # at synchronize() and when data is copied back, debug mode after every launch).
        self.pending: dict[int, Any] = {}

    def activate(self) -> None:
        """Make this GPU's context current on the calling thread (other libraries may have switched it)."""
        (err,) = self.drv.cuCtxSetCurrent(self.handle)
        if err != self.drv.CUresult.CUDA_SUCCESS:
            check((err,), "cuCtxSetCurrent")

    def sync(self) -> None:
        """Wait for this GPU's stream, then report the first kernel error recorded meanwhile."""
        self.activate()
        check(self.drv.cuStreamSynchronize(self.stream), "cuStreamSynchronize")
        self.check_errors()

    def check_errors(self) -> None:
        """Read the error record of every module launched since the last check (stream already idle)."""
        while self.pending:
            _key, module = self.pending.popitem()
            module.check_error()

    def __repr__(self) -> str:
        return f"<cuda context {self.name}: {self.gpu_name}, {self.arch}>"


def context(index: int) -> Context:
    """The :class:`Context` of GPU ``index``, created on first use.

    Example::

        context(0).arch     # "sm_90" on an H100
    """
    ctx = _contexts.get(index)
    if ctx is None:
        with _lock:
            ctx = _contexts.get(index)
            if ctx is None:
                if index >= device_count():
                    bindings()  # raises the no-driver error when there is none
                    raise ValueError(f"device 'cuda:{index}' does not exist: this machine has "
                                     f"{device_count()} CUDA device(s)")
                ctx = _contexts[index] = Context(index)
    return ctx


def synchronize(index: int | None) -> None:
    """Wait for GPU ``index``, or for every GPU simkit has used; a no-op before any GPU was used.

    Example::

        synchronize(None)    # what sk.synchronize() does
    """
    if index is not None:
        context(index).sync()
        return
    for ctx in list(_contexts.values()):
        ctx.sync()


def _reset_for_tests() -> None:
    """Forget the driver and every context (tests swap in a fake driver)."""
    global _drv, _failure, _count
    with _lock:
        _drv, _failure, _count = None, None, 0
        _contexts.clear()
