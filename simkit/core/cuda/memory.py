"""GPU memory: allocations that free themselves, and copies between host and device.

Every copy is queued on the device's simkit stream, so it is ordered with the
launches before it; copies into host memory wait for the stream before returning.
A host-to-device copy from ordinary (pageable) memory returns once the driver has
taken the bytes, so the source may be dropped right after.

Example::

    buf = memory.alloc(1024, ctx)                    # 1 KiB on the GPU, freed with buf
    memory.to_device(ctx, buf.ptr, host.ctypes.data, 1024)
"""

from __future__ import annotations

from .driver import Context, check


class DeviceBuffer:
    """``nbytes`` of device memory from ``cuMemAlloc``; freed when the last reference goes."""

    __slots__ = ("ptr", "nbytes", "ctx", "__weakref__")

    def __init__(self, nbytes: int, ctx: Context):
        self.ctx = ctx
        self.nbytes = int(nbytes)
        self.ptr = 0
        if self.nbytes:
            ctx.activate()
            if ctx.capturing:
                raise RuntimeError("cannot allocate GPU memory inside sk.capture(): allocate every array "
                                   "before the capture starts")
            self.ptr = int(check(ctx.drv.cuMemAlloc(self.nbytes), f"cuMemAlloc({self.nbytes} bytes)"))

    def __del__(self):
        if self.ptr:
            try:
                self.ctx.activate()
                self.ctx.drv.cuMemFree(self.ptr)
            except Exception:  # noqa: BLE001 - at interpreter exit the driver may already be gone
                pass
            self.ptr = 0


def alloc(nbytes: int, ctx: Context) -> DeviceBuffer:
    """A new uninitialised allocation of ``nbytes`` on ``ctx``'s GPU.

    Example::

        buf = alloc(4096, ctx); buf.ptr      # a device address
    """
    return DeviceBuffer(nbytes, ctx)


def _no_capture(ctx: Context, what: str) -> None:
    if ctx.capturing:
        raise RuntimeError(f"{what} is not allowed inside sk.capture(): a capture records kernel launches "
                           "only; copy data before the capture or after sk.replay()")


def to_device(ctx: Context, dst: int, src_host: int, nbytes: int) -> None:
    """Copy ``nbytes`` from host address ``src_host`` to device address ``dst``.

    Example::

        to_device(ctx, buf.ptr, host.ctypes.data, host.nbytes)
    """
    if nbytes:
        _no_capture(ctx, "copying to the GPU")
        ctx.activate()
        check(ctx.drv.cuMemcpyHtoDAsync(dst, src_host, nbytes, ctx.stream), "cuMemcpyHtoDAsync")


def to_host(ctx: Context, dst_host: int, src: int, nbytes: int) -> None:
    """Copy ``nbytes`` from device address ``src`` to host address ``dst_host`` and wait for it.

    The wait makes this a synchronisation point: kernel errors recorded by earlier
    launches are reported here.

    Example::

        to_host(ctx, out.ctypes.data, buf.ptr, out.nbytes)
    """
    _no_capture(ctx, "copying from the GPU")
    ctx.activate()
    if nbytes:
        check(ctx.drv.cuMemcpyDtoHAsync(dst_host, src, nbytes, ctx.stream), "cuMemcpyDtoHAsync")
    check(ctx.drv.cuStreamSynchronize(ctx.stream), "cuStreamSynchronize")
    ctx.check_errors()


def device_to_device(ctx: Context, dst: int, src: int, nbytes: int) -> None:
    """Copy ``nbytes`` between two addresses on the same GPU (queued, not waited for).

    Example::

        device_to_device(ctx, dst.ptr, src.ptr, src.nbytes)
    """
    if nbytes:
        _no_capture(ctx, "copying on the GPU")
        ctx.activate()
        check(ctx.drv.cuMemcpyDtoDAsync(dst, src, nbytes, ctx.stream), "cuMemcpyDtoDAsync")


def memset(ctx: Context, dst: int, value: int, nbytes: int) -> None:
    """Set ``nbytes`` at device address ``dst`` to the byte ``value`` (queued).

    Example::

        memset(ctx, buf.ptr, 0, buf.nbytes)
    """
    if nbytes:
        _no_capture(ctx, "writing GPU memory")
        ctx.activate()
        check(ctx.drv.cuMemsetD8Async(dst, value, nbytes, ctx.stream), "cuMemsetD8Async")


def wait(ctx: Context) -> None:
    """Block until everything queued on ``ctx``'s stream is done.

    Example::

        wait(ctx)
    """
    ctx.activate()
    check(ctx.drv.cuStreamSynchronize(ctx.stream), "cuStreamSynchronize")

