"""CUDA graphs for ``sk.capture`` / ``sk.replay``: stream capture, instantiation, launch.

A capture puts the device's simkit stream in capture mode (thread-local, so other
threads' CUDA work is unaffected); the launches queued meanwhile become graph
nodes, each with its own copy of the packed arguments, and run only when the
instantiated graph is launched. See :mod:`simkit.core.capture` for the rules a
capture follows on every device.

Example::

    cap = StreamCapture("cuda:0")
    ...                                  # launches on cuda:0 are recorded
    graph = cap.end(keep=True)
    graph.replay()
"""

from __future__ import annotations

from typing import Any

from .. import device as D
from ..config import config
from . import driver
from .driver import check


class StreamCapture:
    """An open capture of one GPU's stream."""

    def __init__(self, device: str):
        ctx = driver.context(D.ordinal(device))
        self.ctx = ctx
        self.modules: dict[int, Any] = {}
        drv = ctx.drv
        ctx.activate()
        check(drv.cuStreamBeginCapture(ctx.stream, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "cuStreamBeginCapture")
        ctx.capturing = True

    def note(self, module: Any) -> None:
        """Remember a module the graph launches: its error record is read after each replay."""
        self.modules[id(module)] = module

    def end(self, keep: bool) -> "CudaGraph | None":
        """Stop capturing; the instantiated graph when ``keep``, else None (the capture is dropped)."""
        ctx = self.ctx
        ctx.capturing = False
        ctx.activate()
        graph = check(ctx.drv.cuStreamEndCapture(ctx.stream), "cuStreamEndCapture")
        if not keep:
            if graph is not None and int(graph):
                ctx.drv.cuGraphDestroy(graph)
            return None
        if graph is None or not int(graph):
            raise RuntimeError("the CUDA capture was invalidated (a CUDA call not allowed during stream capture ran "
                               "on this stream); capture only sk.launch calls")
        try:
            exe = check(ctx.drv.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        except Exception:
            ctx.drv.cuGraphDestroy(graph)
            raise
        return CudaGraph(ctx, graph, exe, list(self.modules.values()))


class CudaGraph:
    """An instantiated CUDA graph and the modules whose error records it may set."""

    def __init__(self, ctx: driver.Context, graph: Any, exe: Any, modules: list):
        self.ctx = ctx
        self.graph = graph
        self.exe = exe
        self.modules = modules

    def replay(self) -> None:
        """Queue the whole graph on the device's stream (in debug mode: wait and read the errors)."""
        ctx = self.ctx
        ctx.activate()
        check(ctx.drv.cuGraphLaunch(self.exe, ctx.stream), "cuGraphLaunch")
        for m in self.modules:
            ctx.pending[id(m)] = m
        if config.mode == "debug":
            ctx.sync()

    def __del__(self):
        try:
            self.ctx.activate()
            self.ctx.drv.cuGraphExecDestroy(self.exe)
            self.ctx.drv.cuGraphDestroy(self.graph)
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may already be gone
            pass
