"""GPU launches: the CPU's packed args struct becomes the CUDA entry point's single parameter.

The generated entry ``<kernel>_cuda_forward(args)`` takes the same struct the CPU
entry reads (launch bounds first, then every argument), and walks the grid with a
grid-stride loop, so a launch is: pack (shared with the CPU), one
``cuLaunchKernel`` with a parameter-pointer array prepared once per kernel and
device, and a note that the module's error record must be read at the next
synchronisation. In debug mode the launch waits and reads it at once, so a bounds
error names the launch that caused it.

Launches are queued on the device's stream: they return before the GPU is done.

Example::

    launch(plan, n, [x, y, 2.0], "cuda:0", adjoint=False)
"""

from __future__ import annotations

import ctypes
from typing import Any

from .. import device as D
from .. import nvrtc
from ..config import config
from . import driver
from . import module as M

BLOCK = 256                  # threads per block; the grid-stride loop covers any grid size
MAX_BLOCKS = 2 ** 31 - 1     # gridDim.x limit
MAX_PARAM_BYTES = 32764      # the driver's kernel parameter limit (4 KiB before CUDA 12.1)


class CudaKernel:
    """One kernel ready to launch on one GPU: its module, both entry points, the parameter array."""

    def __init__(self, plan: Any, ctx: driver.Context):
        size = ctypes.sizeof(plan.Args)
        limit = MAX_PARAM_BYTES if ctx.driver_version >= 12010 else 4096
        if size > limit:
            raise ValueError(f"{plan.kernel.name}(): its arguments take {size} bytes, more than the {limit} a CUDA "
                             "launch can pass; group arrays into fewer parameters or pass fewer of them")
        self.ctx = ctx
        self.module, self.fir = M.load(plan.kernel, ctx)
        fwd, bwd = nvrtc.entry_names(plan.kernel)
        self.functions = (self.module.function(fwd), self.module.function(bwd))
        # cuLaunchKernel takes an array of pointers, one per kernel parameter; there is one
        # parameter, the plan's args struct, whose bytes the driver copies at launch time.
        self.params = (ctypes.c_void_p * 1)(plan.base)
        self.params_addr = ctypes.addressof(self.params)
        self.entry = (plan.kernel, self.fir)


def kernel_for(plan: Any, device: str) -> CudaKernel:
    """The plan's :class:`CudaKernel` on ``device``, compiled or loaded on first use.

    Example::

        kernel_for(plan_for(saxpy), "cuda:0").functions    # (forward, adjoint) CUfunctions
    """
    ck = plan.cuda.get(device)
    if ck is None:
        ck = plan.cuda[device] = CudaKernel(plan, driver.context(D.ordinal(device)))
    return ck


def launch(plan: Any, dim: Any, values: Any, device: str, adjoint: bool, capturing: bool = False) -> None:
    """Queue one launch of ``plan`` on ``device`` (a canonical ``"cuda:N"``).

    ``capturing``: the stream is being captured into a graph; the launch is recorded,
    not run, so debug mode cannot wait for it here (the replay does).

    Example::

        launch(plan_for(saxpy), n, [x, y, 2.0], "cuda:0", adjoint=False)
    """
    ck = kernel_for(plan, device)
    plan.pack_on(values, device)
    n = plan.set_bounds(dim)
    if not n:
        return
    if plan.extents:
        plan.check_extents(dim)
    ctx = ck.ctx
    drv = ctx.drv
    ctx.activate()
    blocks = min((n + BLOCK - 1) // BLOCK, MAX_BLOCKS)
    (err,) = drv.cuLaunchKernel(ck.functions[adjoint], blocks, 1, 1, BLOCK, 1, 1, 0, ctx.stream, ck.params_addr, 0)
    if err != drv.CUresult.CUDA_SUCCESS:
        driver.check((err,), f"cuLaunchKernel({plan.kernel.name}{', adjoint' if adjoint else ''}) on {device}")
    module = ck.module
    module.last = ck.entry
    ctx.pending[id(module)] = module
    if config.mode == "debug" and not capturing:
        ctx.sync()


def launch_tangent(plan: Any, dim: Any, values: Any, device: str, patch: Any) -> None:
    """Queue one launch of the kernel's tangent entry (forward mode) on ``device``; ``patch()``
    writes the tangent buffers into the packed arguments' grad words (simkit.autograd.forward).

    Example::

        launch_tangent(plan_for(saxpy), n, values, "cuda:0", patch)
    """
    ck = kernel_for(plan, device)  # checks the parameter size; the forward module is not needed
    ctx = ck.ctx
    functions = getattr(plan, "cuda_tangent", None)
    if functions is None:
        functions = plan.cuda_tangent = {}
    found = functions.get(device)
    if found is None:
        module, _fir = M.load_tangent(plan.kernel, ctx)
        found = functions[device] = (module, module.function(f"{plan.fir.cname}_cuda_tangent"))
    module, function = found
    plan.pack_on(values, device)
    patch()
    n = plan.set_bounds(dim)
    if not n:
        return
    if plan.extents:
        plan.check_extents(dim)
    drv = ctx.drv
    ctx.activate()
    blocks = min((n + BLOCK - 1) // BLOCK, MAX_BLOCKS)
    (err,) = drv.cuLaunchKernel(function, blocks, 1, 1, BLOCK, 1, 1, 0, ctx.stream, ck.params_addr, 0)
    if err != drv.CUresult.CUDA_SUCCESS:
        driver.check((err,), f"cuLaunchKernel({plan.kernel.name}, tangent) on {device}")
    module.last = (plan.kernel, plan.fir)
    ctx.pending[id(module)] = module
    if config.mode == "debug":
        ctx.sync()
