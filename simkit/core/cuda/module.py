"""Kernel modules on a GPU: NVRTC builds cached on disk, loading, entry points, the error record.

The translation unit is the one g++ builds for the CPU (all kernels of a Python
module together). NVRTC turns it into a cubin for the GPU's exact architecture,
or, for a GPU newer than this NVRTC knows, into PTX for the newest architecture it
does know (the driver compiles that PTX when it loads it). Builds are cached next
to the CPU modules (``<cache>/cuda``), keyed like them, plus the NVRTC version and
the target, so a warm cache loads without running NVRTC; like them, each image is
checked against the size and hash recorded when it was written, and rebuilt with a
warning when damaged.

Example::

    module, fir = load(kernel, driver.context(0))
    forward = module.function(f"{kernel.cname}_cuda_forward")
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from pathlib import Path
from typing import Any

from .. import codegen, compiler, nvrtc
from ..config import config
from ..kernel_errors import ErrorRecord, raise_kernel_error
from .driver import Context, CudaError, check

# Counts real NVRTC runs; tests read it to prove a warm cache compiles nothing.
stats = {"compiles": 0, "cache_hits": 0}


def target_for(arch: str) -> tuple[str, str]:
    """``(kind, arch)`` to build for a GPU of ``arch``: a cubin for it, or PTX for the newest
    architecture this NVRTC supports when the GPU is newer than NVRTC.

    Example::

        target_for("sm_90")     # ("cubin", "sm_90")
    """
    cc = int(arch[3:])
    supported = nvrtc.supported_archs()
    if cc in supported:
        return "cubin", arch
    older = [a for a in supported if a <= cc]
    if not older:
        raise RuntimeError(f"this NVRTC (version {'.'.join(map(str, nvrtc.version()))}) cannot build for {arch}; "
                           f"it supports {', '.join(f'sm_{a}' for a in supported)}. Install an NVRTC that matches "
                           "the GPU, e.g. pip install nvidia-cuda-nvrtc-cu12")
    return "ptx", f"sm_{max(older)}"


def module_key(source: str, kind: str, arch: str, options: tuple[str, ...]) -> str:
    """The cache key of one GPU build: what the CPU key hashes, with NVRTC and the target instead of g++.

    Example::

        module_key(source, "cubin", "sm_90", ())    # 24 hex digits
    """
    h = hashlib.sha256()
    for part in (source, compiler.headers_hash(), "nvrtc-%d.%d" % nvrtc.version(), kind, arch,
                 " ".join(nvrtc.NVRTC_OPTIONS + options)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def image_name(module_name: str, tangent: bool = False) -> str:
    """The name a Python module's GPU build carries (NVRTC's program, the cached file): its
    dotted name as an identifier, the last 40 characters (32 and ``_tangent`` for its tangent module).

    Example::

        image_name("simkit.kernels.springs.float32")    # 'simkit_kernels_springs_float32'
    """
    name = "".join(c if c.isalnum() else "_" for c in module_name)
    return name[-32:] + "_tangent" if tangent else name[-40:]


def build(source: str, name: str, arch: str) -> tuple[bytes, str]:
    """The image (cubin bytes, or NUL-terminated PTX) of ``source`` for a GPU of ``arch``, from the cache
    when it is there; returns ``(image, kind)``.

    Example::

        image, kind = build(source, "my_module", "sm_90")
    """
    kind, target = target_for(arch)
    options = ("-lineinfo",) if config.mode == "debug" else ()
    key = module_key(source, kind, target, options)
    out_dir = compiler.cache_dir() / "cuda"
    out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = out_dir / f"{name}-{target}-{key}.{kind}"
    if path.exists():
        try:
            image = path.read_bytes()
        except OSError as e:
            image, problem = None, f"it cannot be read: {e}"
        else:
            problem = compiler.entry_problem(path, image)
        if problem is None:
            stats["cache_hits"] += 1
            return image, kind
        compiler.warn_rebuild(path, problem)
    stats["compiles"] += 1
    if kind == "cubin":
        image = nvrtc.compile_cubin(source, target, name, options)
    else:
        image = nvrtc.compile_ptx(source, target, name, options).encode() + b"\0"
    compiler.record_entry(path, image)  # first: whoever finds the image finds its record
    _atomic_write(path, image)
    if config.keep_source:
        _atomic_write(path.with_suffix(".cu"), source.encode())
    return image, kind


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class CudaModule:
    """One loaded module on one GPU: its entry points and its ``sk_error`` record."""

    def __init__(self, ctx: Context, image: bytes, kind: str, kernels: list, irs: list, name: str):
        self.ctx = ctx
        self.name = name
        self.kernels = list(zip(kernels, irs))
        ctx.activate()
        result = ctx.drv.cuModuleLoadData(image)
        if result[0] != ctx.drv.CUresult.CUDA_SUCCESS:
            try:
                check(result, "cuModuleLoadData")
            except CudaError as e:
                raise CudaError(f"loading the {kind} of module '{name}' on {ctx.name} ({ctx.arch}, driver "
                                f"{ctx.driver_version // 1000}.{ctx.driver_version % 1000 // 10}) failed: {e}. "
                                f"An NVIDIA driver older than NVRTC {'.'.join(map(str, nvrtc.version()))} cannot "
                                "load what it builds: update the driver or install a matching nvidia-cuda-nvrtc",
                                e.code) from None
        self.handle = result[1]
        ptr, size = check(ctx.drv.cuModuleGetGlobal(self.handle, b"sk_error"), "cuModuleGetGlobal(sk_error)")
        self.error_ptr = int(ptr)
        self.record = ErrorRecord()
        if int(size) != ctypes.sizeof(self.record):
            raise RuntimeError(f"sk_error in module '{name}' is {size} bytes, the host expects "
                               f"{ctypes.sizeof(self.record)}; the native headers and kernel_errors.py disagree")
        self.last = self.kernels[0] if self.kernels else None  # the kernel launched last, for error reports

    def function(self, entry: str) -> Any:
        """The ``CUfunction`` of entry point ``entry``."""
        self.ctx.activate()
        return check(self.ctx.drv.cuModuleGetFunction(self.handle, entry.encode()), f"cuModuleGetFunction({entry})")

    def check_error(self) -> None:
        """Copy the error record back (the stream must be idle), clear it, and raise what it says."""
        ctx = self.ctx
        ctx.activate()
        rec = self.record
        check(ctx.drv.cuMemcpyDtoH(ctypes.addressof(rec), self.error_ptr, ctypes.sizeof(rec)), "cuMemcpyDtoH(sk_error)")
        if rec.code == 0:
            return
        check(ctx.drv.cuMemsetD8(self.error_ptr, 0, ctypes.sizeof(rec)), "cuMemsetD8(sk_error)")
        kernel, fir = self.kernel_at(rec.line)
        raise_kernel_error(kernel, fir, rec, ctx.name)

    def kernel_at(self, line: int) -> tuple:
        """The kernel whose source holds ``line``; else the one launched last (a helper function's line)."""
        for kernel, fir in self.kernels:
            lines = fir.source_lines
            if lines and min(lines) <= line <= max(lines):
                return kernel, fir
        return self.last

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is not None:
            try:
                self.ctx.activate()
                self.ctx.drv.cuModuleUnload(handle)
            except Exception:  # noqa: BLE001 - at interpreter exit the driver may already be gone
                pass


def load_tangent(kernel: Any, ctx: Context) -> tuple[CudaModule, Any]:
    """``(CudaModule, IR)`` of ``kernel``'s tangent entries on ``ctx``'s GPU: the tangent module of
    its Python module (codegen_tangent), built on the first tangent launch there.

    Example::

        module, fir = load_tangent(saxpy, driver.context(0))
    """
    from .. import codegen_tangent
    from ..errors import CompileError

    key = (config.mode, ctx.index)
    entry = kernel._cuda_tangent_loaded.get(key)
    if entry is not None:
        return entry
    batch, irs = kernel.module.batch(kernel, lambda k: key in k._cuda_tangent_loaded)
    ok = []
    for k, fir in zip(batch, irs):
        try:
            codegen_tangent.kernel_tangent_source(fir)
        except CompileError:
            if k is kernel:
                raise
            continue  # a neighbour without a tangent rule refuses when it is used itself
        ok.append((k, fir))
    source = codegen_tangent.tangent_module_source([fir for _k, fir in ok])
    image, kind = build(source, image_name(kernel.module.name, tangent=True), ctx.arch)
    module = CudaModule(ctx, image, kind, [k for k, _f in ok], [f for _k, f in ok], kernel.module.name)
    for k, fir in ok:
        k._cuda_tangent_loaded[key] = (module, fir)
    return kernel._cuda_tangent_loaded[key]


def load(kernel: Any, ctx: Context) -> tuple[CudaModule, Any]:
    """``(CudaModule, IR)`` of ``kernel`` on ``ctx``'s GPU, building its whole Python module once.

    Example::

        module, fir = load(saxpy, driver.context(0))
    """
    key = (config.mode, ctx.index)
    entry = kernel._cuda_loaded.get(key)
    if entry is not None:
        return entry
    batch, irs = kernel.module.batch(kernel, lambda k: key in k._cuda_loaded)
    source = codegen.module_source(irs, compiler.HEADER_NAME)
    image, kind = build(source, image_name(kernel.module.name), ctx.arch)
    module = CudaModule(ctx, image, kind, batch, irs, kernel.module.name)
    for k, fir in zip(batch, irs):
        k._cuda_loaded[key] = (module, fir)
    return kernel._cuda_loaded[key]
