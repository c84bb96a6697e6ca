"""A stand-in for ``cuda.bindings.driver`` that runs simkit's CUDA path on the CPU.

On a machine without a GPU this lets the tests drive every line of simkit's GPU
code (allocation, copies, module loading, launches, error records, graph capture)
against a driver that keeps the CUDA API's contracts and checks them:

- "device memory" is host memory the fake hands out and tracks; every copy checks
  that its device side lies inside an allocation (or a module global) and its host
  side does not, so a host/device pointer mix-up fails loudly;
- ``cuModuleLoadData`` receives the real NVRTC output (cubin or PTX); the fake reads
  its entry names and runs each launch with the same kernel's CPU entry point on the
  same packed arguments, after checking that every array in them is device memory;
- a stream being captured records launches instead of running them, refuses
  synchronisation, allocation and copies, and ``cuGraphLaunch`` runs the recording.

Result tuples, enums and handle types are the real ones from cuda.bindings, so the
calls simkit makes are checked for shape as well. What the fake cannot check is the
GPU itself: the PTX/cubin is never executed. Tests that need that run on a real GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import re
import sys
import threading

import numpy as np
from cuda.bindings import driver as _real

from simkit.core import launch as _launch
from simkit.core.array import ArrayHeader
from simkit.core.config import config
from simkit.core.kernel import Module

CUresult = _real.CUresult
CUstream_flags = _real.CUstream_flags
CUdevice_attribute = _real.CUdevice_attribute
CUstreamCaptureMode = _real.CUstreamCaptureMode
CUpointer_attribute = _real.CUpointer_attribute

OK = CUresult.CUDA_SUCCESS
_CAPTURE_ERR = CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED

_allocs: dict[int, np.ndarray] = {}        # address -> backing buffer
_globals: dict[int, int] = {}              # address -> size of a module global (sk_error)
_capturing: list = []                      # streams in capture mode
calls: dict[str, int] = {}                 # how often each entry point ran (tests read it)
launches: list = []                        # (entry name, grid, block) of every executed launch


def _count(name: str) -> None:
    calls[name] = calls.get(name, 0) + 1


def _int(p) -> int:
    return int(p) if p is not None else 0


def _device_range(ptr, n: int) -> bool:
    ptr = _int(ptr)
    for base, buf in _allocs.items():
        if base <= ptr and ptr + n <= base + buf.nbytes:
            return True
    for base, size in _globals.items():
        if base <= ptr and ptr + n <= base + size:
            return True
    return False


def _check_device(ptr, n: int, what: str) -> None:
    if n and not _device_range(ptr, n):
        raise AssertionError(f"fake CUDA: {what} got {_int(ptr):#x} (+{n} bytes), which is not device memory")


def _check_host(ptr, n: int, what: str) -> None:
    if n and _device_range(ptr, n):
        raise AssertionError(f"fake CUDA: {what} got device address {_int(ptr):#x} where host memory belongs")


class FakeStream:
    def __init__(self):
        self.recording = None

    def __int__(self):
        return id(self)


class FakeGraph:
    def __init__(self, nodes):
        self.nodes = nodes

    def __int__(self):
        return id(self)


def _refuse_if_capturing():
    return bool(_capturing)


# -- init and devices ---------------------------------------------------------------------

def cuInit(flags):
    _count("cuInit")
    return (OK,)


def cuDeviceGetCount():
    return (OK, 1)


def cuDeviceGet(ordinal):
    return (OK, _real.CUdevice(ordinal))


def cuDevicePrimaryCtxRetain(dev):
    return (OK, _real.CUcontext(0x1000))


def cuCtxSetCurrent(ctx):
    return (OK,)


# The fake GPU is newer than any NVRTC knows (sm_99), so simkit builds PTX for it, not a cubin: the image
# is never executed here, and ptxas on the large contact modules costs ~5x NVRTC's PTX (81 s against 17 s for
# xpbd_body_contact in float64). A test that wants the cubin path sets this to (9, 0).
compute_capability = (9, 9)


def cuDeviceGetAttribute(attr, dev):
    values = {CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: compute_capability[0],
              CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: compute_capability[1],
              CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132}
    return (OK, values[attr])


def cuDeviceGetName(length, dev):
    return (OK, b"Fake GPU (simkit tests)".ljust(length, b"\0"))


def cuDriverGetVersion():
    return (OK, 13000)


def cuGetErrorName(err):
    return (OK, err.name.encode())


def cuGetErrorString(err):
    return (OK, b"fake driver error")


def cuPointerGetAttribute(attr, ptr):
    return (OK, 0)


# -- streams --------------------------------------------------------------------------------

def cuStreamCreate(flags):
    return (OK, FakeStream())


def cuStreamSynchronize(stream):
    _count("cuStreamSynchronize")
    return (_CAPTURE_ERR,) if stream in _capturing else (OK,)


# -- memory ---------------------------------------------------------------------------------

def cuMemAlloc(n):
    _count("cuMemAlloc")
    if _refuse_if_capturing():
        return (_CAPTURE_ERR, None)
    if n == 0:
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
    buf = np.full(n, 0xAB, np.uint8)  # not zero: "the memory is not cleared"
    _allocs[buf.ctypes.data] = buf
    return (OK, _real.CUdeviceptr(buf.ctypes.data))


def cuMemFree(ptr):
    _count("cuMemFree")
    if _allocs.pop(_int(ptr), None) is None:
        raise AssertionError(f"fake CUDA: cuMemFree of {_int(ptr):#x}, which was not allocated (or freed twice)")
    return (OK,)


def live_allocations() -> int:
    return len(_allocs)


def _queued_copy(name: str, dst, dst_on, src, src_on, n, stream):
    """A stream-ordered copy: refused while its stream is captured, both sides checked."""
    _count(name)
    if stream in _capturing:
        return (_CAPTURE_ERR,)
    dst_on(dst, n, f"{name} dst")
    src_on(src, n, f"{name} src")
    ctypes.memmove(_int(dst), _int(src), n)
    return (OK,)


def cuMemcpyHtoDAsync(dst, src, n, stream):
    return _queued_copy("cuMemcpyHtoDAsync", dst, _check_device, src, _check_host, n, stream)


def cuMemcpyDtoHAsync(dst, src, n, stream):
    return _queued_copy("cuMemcpyDtoHAsync", dst, _check_host, src, _check_device, n, stream)


def cuMemcpyDtoH(dst, src, n):
    _check_host(dst, n, "cuMemcpyDtoH dst")
    _check_device(src, n, "cuMemcpyDtoH src")
    ctypes.memmove(_int(dst), _int(src), n)
    return (OK,)


def cuMemcpyDtoDAsync(dst, src, n, stream):
    return _queued_copy("cuMemcpyDtoDAsync", dst, _check_device, src, _check_device, n, stream)


def cuMemsetD8Async(dst, value, n, stream):
    _count("cuMemsetD8Async")
    if stream in _capturing:
        return (_CAPTURE_ERR,)
    _check_device(dst, n, "cuMemsetD8Async dst")
    ctypes.memset(_int(dst), value, n)
    return (OK,)


def cuMemsetD8(dst, value, n):
    _check_device(dst, n, "cuMemsetD8 dst")
    ctypes.memset(_int(dst), value, n)
    return (OK,)


# -- modules and launches -----------------------------------------------------------------------

_ENTRY = re.compile(rb"(\w+?)_cuda_(forward|backward|tangent)")
# The CPU entry: fn(args, start, end, exclusive); one call runs the whole grid alone, so exclusive.
_Entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_bool)


class FakeModule:
    def __init__(self, image: bytes):
        names = {m.group(1).decode() for m in _ENTRY.finditer(image)}
        if image[:4] != b"\x7fELF" and b".visible .entry" not in image:
            raise AssertionError("fake CUDA: cuModuleLoadData got neither a cubin nor PTX")
        self.kernels = {}
        for mod in Module._registry.values():
            for k in mod.kernels:
                if k.cname in names:
                    self.kernels[k.cname] = k
        missing = names - set(self.kernels)
        if missing:
            raise AssertionError(f"fake CUDA: no simkit kernel for entries {sorted(missing)}")
        some = next(iter(self.kernels.values()))
        # a tangent module (forward mode) runs the CPU build of the kernels' tangent entries
        self.tangent = b"_cuda_tangent" in image
        lib, _fir, _path = some.tangent_loaded() if self.tangent else some.loaded()
        get_error = lib.sk_get_error
        get_error.restype = ctypes.c_void_p
        self.error = get_error()
        _globals[self.error] = ctypes.sizeof(_launch.ErrorRecord)

    def function(self, name: str):
        m = re.fullmatch(r"(\w+?)_cuda_(forward|backward|tangent)", name)
        if not m or m.group(1) not in self.kernels:
            return None
        kernel = self.kernels[m.group(1)]
        lib, _fir, _path = kernel.tangent_loaded() if m.group(2) == "tangent" else kernel.loaded()
        fn = getattr(lib, f"{m.group(1)}_cpu_{m.group(2)}")
        return FakeFunction(name, kernel, ctypes.cast(fn, ctypes.c_void_p).value)


class FakeFunction:
    def __init__(self, name, kernel, address):
        self.name, self.kernel, self.address = name, kernel, address
        self.entry = _Entry(address)

    def args_type(self):
        return self.kernel._plan[config.mode].Args


def cuModuleLoadData(image):
    _count("cuModuleLoadData")
    return (OK, FakeModule(bytes(image)))


def cuModuleGetGlobal(module, name):
    if name != b"sk_error":
        return (CUresult.CUDA_ERROR_NOT_FOUND, None, 0)
    return (OK, _real.CUdeviceptr(module.error), ctypes.sizeof(_launch.ErrorRecord))


def cuModuleGetFunction(module, name):
    f = module.function(name.decode())
    return (OK, f) if f is not None else (CUresult.CUDA_ERROR_NOT_FOUND, None)


def cuModuleUnload(module):
    _globals.pop(module.error, None)
    return (OK,)


def _check_arrays(struct_type, address: int, where: str) -> None:
    """Every array header in a packed args struct must point at device memory (or be empty)."""
    for name, ftype in struct_type._fields_:
        off = getattr(struct_type, name).offset
        if ftype is ArrayHeader:
            hdr = ArrayHeader.from_address(address + off)
            n = int(np.prod([hdr.shape[k] for k in range(4) if hdr.shape[k]] or [0]))
            if hdr.data and n:
                _check_device(hdr.data, 1, f"{where}: array '{name}' data")
            if hdr.grad and n:
                _check_device(hdr.grad, 1, f"{where}: array '{name}' grad")
        elif isinstance(ftype, type) and issubclass(ftype, ctypes.Structure):
            _check_arrays(ftype, address + off, where)


_stream_order = threading.Lock()  # a stream runs its kernels one after another, whoever launched them


def _run(fn: FakeFunction, args: int) -> None:
    n = ctypes.c_int64.from_address(args + 40).value  # sk::launch_t::size
    with _stream_order:
        fn.entry(args, 0, n, True)


def cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
    _count("cuLaunchKernel")
    if not isinstance(f, FakeFunction) or not isinstance(params, int) or extra not in (0, None):
        raise AssertionError("fake CUDA: cuLaunchKernel wants a CUfunction, a void** address and no extra")
    args = ctypes.c_void_p.from_address(params).value
    Args = f.args_type()
    n = ctypes.c_int64.from_address(args + 40).value
    if gx < 1 or gx * bx < min(n, 256 * (2 ** 31 - 1)) or (gy, gz, by, bz) != (1, 1, 1, 1):
        raise AssertionError(f"fake CUDA: grid {gx}x{bx} does not cover {n} elements")
    _check_arrays(Args, args, f.name)
    if stream in _capturing:
        # The driver copies the parameters at launch time: a captured node keeps its own.
        stream.recording.append((f, ctypes.create_string_buffer(ctypes.string_at(args, ctypes.sizeof(Args)))))
        return (OK,)
    launches.append((f.name, gx, bx))
    _run(f, args)
    return (OK,)


# -- graphs -----------------------------------------------------------------------------------

def cuStreamBeginCapture(stream, mode):
    if stream in _capturing:
        return (CUresult.CUDA_ERROR_ILLEGAL_STATE,)
    stream.recording = []
    _capturing.append(stream)
    return (OK,)


def cuStreamEndCapture(stream):
    if stream not in _capturing:
        return (CUresult.CUDA_ERROR_ILLEGAL_STATE, None)
    _capturing.remove(stream)
    graph, stream.recording = FakeGraph(stream.recording), None
    return (OK, graph)


def cuGraphInstantiate(graph, flags):
    return (OK, FakeGraph(list(graph.nodes)))


def cuGraphLaunch(exe, stream):
    _count("cuGraphLaunch")
    for f, blob in exe.nodes:
        launches.append((f.name, 0, 0))
        _run(f, ctypes.addressof(blob))
    return (OK,)


def cuGraphExecDestroy(exe):
    return (OK,)


def cuGraphDestroy(graph):
    return (OK,)


# -- installing the fake --------------------------------------------------------------------------

def _forget_gpu_state() -> None:
    """Drop every context, loaded GPU module and prepared launch (they belong to the driver in use)."""
    from simkit.core import device as D
    from simkit.core.cuda import driver

    for mod in Module._registry.values():
        for k in mod.kernels:
            k._cuda_loaded.clear()
            k._cuda_tangent_loaded.clear()
            for plan in k._plan.values():
                plan.cuda.clear()
                getattr(plan, "cuda_tangent", {}).clear()
    driver._reset_for_tests()
    D._checked.clear()
    D.state.default = "cpu"


@contextlib.contextmanager
def installed(monkeypatch):
    """simkit's CUDA driver is this fake for the block: ``cuda:0`` exists and runs kernels on the CPU.

    Example::

        with fake_driver.installed(monkeypatch):
            x = sk.zeros(4, device="cuda:0")
    """
    from simkit.core.cuda import driver

    _forget_gpu_state()
    monkeypatch.setattr(driver, "_import_bindings", lambda: sys.modules[__name__])
    try:
        yield
    finally:
        gc.collect()  # free the fake allocations while the fake is still the driver
        _forget_gpu_state()
        gc.collect()


_resident: tuple | None = None  # simkit's driver state when the fake was last resident


@contextlib.contextmanager
def resident(monkeypatch):
    """Like :func:`installed`, but the fake GPU keeps its context and loaded modules from one block
    to the next, as a real GPU does within a process: a suite that runs every test on it builds and
    loads each kernel module once instead of once per test. simkit's own driver state comes back
    after each block, so tests between them see the machine as it is.

    Example::

        with fake_driver.resident(monkeypatch):
            sk.set_device("cuda:0")
    """
    from simkit.core import device as D
    from simkit.core.cuda import driver

    global _resident
    own = (driver._drv, driver._failure, driver._count, dict(driver._contexts))
    if _resident is None:
        driver._reset_for_tests()
    else:
        _set_driver_state(driver, _resident)
    D._checked.clear()
    monkeypatch.setattr(driver, "_import_bindings", lambda: sys.modules[__name__])
    try:
        yield
    finally:
        gc.collect()
        _resident = (driver._drv, driver._failure, driver._count, dict(driver._contexts))
        _set_driver_state(driver, own)
        D._checked.clear()
        D.state.default = "cpu"


def _set_driver_state(driver, state: tuple) -> None:
    driver._drv, driver._failure, driver._count, contexts = state
    driver._contexts.clear()
    driver._contexts.update(contexts)
