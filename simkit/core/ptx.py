"""``sk.cuda`` (``simkit.cuda``): look at what simkit generates for NVIDIA GPUs, with or without one.

``ptx(kernel)`` compiles a kernel's generated source (forward and adjoint) with
NVRTC and returns the PTX text; it needs cuda-python and NVRTC but no GPU and no
driver. Running on a GPU is simply ``device="cuda"`` on arrays and launches; the
device functions (``sk.is_cuda_available()``, ``sk.synchronize()``, ...) live at
the top level.

Example::

    import simkit as sk

    @sk.kernel
    def scale(a: sk.array(dtype=float), s: float):
        i = sk.tid()
        a[i] = a[i] * s

    text = sk.cuda.ptx(scale, arch="sm_80")
    fwd, bwd = sk.cuda.entry_points(scale)
    assert f".entry {fwd}(" in text and f".entry {bwd}(" in text
"""

from __future__ import annotations

from typing import Any

from . import nvrtc as _nvrtc

__all__ = ["ptx", "entry_points", "nvrtc_version"]


def ptx(kernel: Any, arch: str = "sm_90") -> str:
    """The PTX of ``kernel``'s forward and adjoint entry points, compiled by NVRTC for ``arch``.

    ``arch`` is ``"sm_XX"`` or ``"compute_XX"`` (PTX always targets the virtual
    ``compute_XX``). Needs no GPU. Raises ``ValueError`` for a malformed arch, a
    ``simkit.NativeCompileError`` carrying NVRTC's log if NVRTC rejects the source,
    and ``RuntimeError`` if cuda-python or NVRTC is not installed.

    Example::

        text = sk.cuda.ptx(my_kernel)               # sm_90
        print(text[:200])
    """
    if not getattr(kernel, "_sk_kernel", False):
        raise TypeError(f"sk.cuda.ptx expects an @sk.kernel, got {type(kernel).__name__}")
    return _nvrtc.kernel_ptx(kernel, arch=arch)


def entry_points(kernel: Any) -> tuple[str, str]:
    """The names of ``kernel``'s ``(forward, adjoint)`` entry points in its PTX (unmangled).

    Example::

        fwd, bwd = sk.cuda.entry_points(my_kernel)   # ("my_kernel_<hash>_0_cuda_forward", ...)
    """
    if not getattr(kernel, "_sk_kernel", False):
        raise TypeError(f"sk.cuda.entry_points expects an @sk.kernel, got {type(kernel).__name__}")
    return _nvrtc.entry_names(kernel)


def nvrtc_version() -> tuple[int, int]:
    """The version ``(major, minor)`` of the NVRTC simkit compiles with.

    Example::

        sk.cuda.nvrtc_version()     # e.g. (13, 0)
    """
    return _nvrtc.version()
