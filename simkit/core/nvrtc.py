"""CUDA through NVRTC: compile generated kernel modules to PTX (no GPU needed).

The same translation unit that g++ builds for the CPU is handed to NVRTC, which
defines ``__CUDACC_RTC__`` and therefore ``SK_CUDA`` (see ``native/base.h``). NVRTC
ships no standard headers, so every header a module includes is passed in memory:
the generated builtin header (``simkit_builtins.h``) and the files of
``simkit/core/native/``. These functions always run NVRTC; the cached build of a
module for a real GPU is :mod:`simkit.core.cuda.module`.

NVRTC comes from the ``nvidia-cuda-nvrtc`` wheel (or a CUDA toolkit) and is
reached through ``cuda-python``'s ``cuda.bindings.nvrtc``; ``cuda.pathfinder``
locates the shared library when the bindings need help.

Example::

    import simkit as sk
    from simkit.core import nvrtc

    @sk.kernel
    def scale(a: sk.array(dtype=float), s: float):
        i = sk.tid()
        a[i] = a[i] * s

    ptx = nvrtc.kernel_ptx(scale)                  # PTX text for sm_90
    assert f".visible .entry {scale.cname}_cuda_forward" in ptx
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from . import compiler
from .errors import NativeCompileError

NATIVE_DIR = compiler.NATIVE_DIR

# Options shared by every compile; the architecture is added per call. Warnings are
# off as for g++ (generated code declares every variable up front), so a failure's
# log holds only the errors. float32 subnormals flush to zero, as the CPU runtime makes
# them (runtime.cpp, flush_subnormals): one source gives the same numbers on both.
NVRTC_OPTIONS = ("--std=c++17", "-default-device", "-w", "--ftz=true")

_ARCH = re.compile(r"^(sm|compute)_(\d+)([af]?)$")


class NvrtcUnavailableError(RuntimeError):
    """cuda-python or the NVRTC shared library is missing; the message says how to install it."""


class NvrtcCompileError(NativeCompileError):
    """NVRTC rejected a source; ``log`` holds NVRTC's own diagnostics."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


@lru_cache(maxsize=None)
def _bindings() -> Any:
    """The ``cuda.bindings.nvrtc`` module, with its shared library known to load."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NvrtcUnavailableError(
            "compiling kernels for CUDA needs cuda-python and NVRTC: "
            "pip install 'cuda-python>=12' nvidia-cuda-nvrtc") from e
    try:
        err, _major, _minor = nvrtc.nvrtcVersion()
    except Exception as first:  # noqa: BLE001 - the bindings could not open libnvrtc by themselves
        try:
            from cuda import pathfinder

            pathfinder.load_nvidia_dynamic_lib("nvrtc")
            err, _major, _minor = nvrtc.nvrtcVersion()
        except Exception as e:  # noqa: BLE001 - report one clear error whatever failed
            raise NvrtcUnavailableError(
                f"cuda-python is installed but the NVRTC library could not be loaded ({first}; {e}). "
                "Install it with: pip install nvidia-cuda-nvrtc") from e
    _check(nvrtc, err, "nvrtcVersion")
    return nvrtc


def _check(nvrtc: Any, err: Any, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _e, text = nvrtc.nvrtcGetErrorString(err)
        raise NvrtcCompileError(f"{what} failed: {text.decode(errors='replace') if isinstance(text, bytes) else text}")


def version() -> tuple[int, int]:
    """The NVRTC version as ``(major, minor)``."""
    nvrtc = _bindings()
    err, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, err, "nvrtcVersion")
    return int(major), int(minor)


def is_available() -> bool:
    """True when cuda-python and the NVRTC library can be loaded."""
    try:
        _bindings()
    except NvrtcUnavailableError:
        return False
    return True


def headers() -> dict[str, str]:
    """Include name -> text of every header a generated module may include."""
    out = {p.name: p.read_text() for p in sorted(NATIVE_DIR.glob("*.h"))}
    out[compiler.HEADER_NAME] = compiler.header_text()
    out[compiler.B.TANGENT_HEADER] = compiler.tangent_header_text()
    return out


def _virtual_arch(arch: str) -> str:
    """``sm_90`` / ``compute_90`` (optionally with an ``a``/``f`` suffix) -> ``compute_90``."""
    m = _ARCH.match(arch.strip())
    if not m:
        raise ValueError(f"unknown GPU architecture {arch!r}; expected e.g. 'sm_90' or 'compute_90'")
    return f"compute_{m.group(2)}{m.group(3)}"


def _program_log(nvrtc: Any, prog: Any) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buf = b" " * size
    (err,) = nvrtc.nvrtcGetProgramLog(prog, buf)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return ""
    return buf.rstrip(b"\0").decode(errors="replace")


def _real_arch(arch: str) -> str:
    """``sm_90`` / ``compute_90`` (optionally with an ``a``/``f`` suffix) -> ``sm_90``."""
    return "sm_" + _virtual_arch(arch)[len("compute_"):]


def supported_archs() -> list[int]:
    """The compute capabilities (e.g. 90 for sm_90) this NVRTC can build binaries for."""
    nvrtc = _bindings()
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    _check(nvrtc, err, "nvrtcGetSupportedArchs")
    return [int(a) for a in archs]


def compile_ptx(source: str, arch: str = "sm_90", name: str = "module", options: tuple[str, ...] = ()) -> str:
    """Compile a generated module ``source`` to PTX text for ``arch`` with NVRTC.

    ``arch`` is ``sm_XX`` or ``compute_XX``; PTX is always generated for the
    virtual architecture ``compute_XX``. ``options`` are appended to the defaults
    (``--std=c++17 -default-device -w``). Raises :class:`NvrtcCompileError`
    (a ``simkit.NativeCompileError``) carrying NVRTC's log when the source is
    rejected, and :class:`NvrtcUnavailableError` when NVRTC cannot be loaded.

    Example::

        ptx = compile_ptx(kernel.source(), arch="sm_80", name=kernel.cname)
    """
    return _compile(source, _virtual_arch(arch), arch, name, options, cubin=False).rstrip(b"\0").decode()


def compile_cubin(source: str, arch: str, name: str = "module", options: tuple[str, ...] = ()) -> bytes:
    """Compile ``source`` to a cubin (device machine code) for the real architecture ``arch`` (``sm_XX``).

    Example::

        image = compile_cubin(module_source, "sm_90")     # loadable with cuModuleLoadData
    """
    return _compile(source, _real_arch(arch), arch, name, options, cubin=True)


def _compile(source: str, target: str, arch: str, name: str, options: tuple[str, ...], cubin: bool) -> bytes:
    """Run NVRTC on ``source`` for ``--gpu-architecture=target``; the PTX or cubin bytes."""
    nvrtc = _bindings()
    opts = [*NVRTC_OPTIONS, f"--gpu-architecture={target}", *options]
    hdrs = headers()
    err, prog = nvrtc.nvrtcCreateProgram(
        source.encode(), f"{name}.cu".encode(), len(hdrs),
        [t.encode() for t in hdrs.values()], [n.encode() for n in hdrs])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        log = _program_log(nvrtc, prog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _e, what = nvrtc.nvrtcGetErrorString(err)
            what = what.decode(errors="replace") if isinstance(what, bytes) else str(what)
            raise NvrtcCompileError(
                f"NVRTC rejected module '{name}' for {arch} ({what}; options: {' '.join(opts)}); "
                f"if this is generated code it is a simkit bug, please report it with the kernel:\n{log[-8000:]}",
                log)
        get_size, get = ((nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if cubin
                         else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX))
        err, size = get_size(prog)
        _check(nvrtc, err, get_size.__name__)
        buf = b" " * size
        (err,) = get(prog, buf)
        _check(nvrtc, err, get.__name__)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf


def kernel_ptx(kernel: Any, arch: str = "sm_90") -> str:
    """PTX of one ``@sk.kernel`` (its forward and adjoint entry points), compiled from ``kernel.source()``.

    The entry points are ``<cname>_cuda_forward`` and ``<cname>_cuda_backward``
    (``extern "C"``, so unmangled in the PTX).
    """
    return compile_ptx(kernel.source(), arch=arch, name=kernel.cname)


def entry_names(kernel: Any) -> tuple[str, str]:
    """The PTX entry names ``(forward, backward)`` of a kernel."""
    return f"{kernel.cname}_cuda_forward", f"{kernel.cname}_cuda_backward"


__all__ = ["NvrtcCompileError", "NvrtcUnavailableError", "compile_cubin", "compile_ptx", "entry_names", "headers",
           "is_available", "kernel_ptx", "supported_archs", "version"]
