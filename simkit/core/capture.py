"""``sk.capture`` / ``sk.replay``: record a sequence of launches once, run it again and again.

Inside ``with sk.capture() as graph:`` launches are checked and packed as usual
but **not run**; they are recorded, in order, into ``graph``. ``sk.replay(graph)``
then runs the whole sequence with no Python per launch: on a GPU it is one CUDA
graph launch; on the CPU one native call that walks the recorded launches, each
split over the thread pool exactly as ``sk.launch`` would split it.

Not running during capture is what CUDA stream capture does, and the CPU does the
same so that a captured step behaves identically on both. Consequences, alike on
every device:

- a graph bakes in what each launch was given: array addresses (not their
  contents: a replay reads whatever the arrays hold then), scalars, grid sizes;
- array writes outside kernels (``assign``, ``fill_``, ``zero_``, ``sk.copy``), a
  ``Tape``, ``tape.backward`` and the jacobian helpers are refused inside a
  capture, and GPU memory cannot be allocated there: allocate before capturing;
- a replay counts a write on every array its launches write (overwrite detection
  sees it as it would see the launches), and a Tape recording while replaying is
  refused (the replayed launches could not be differentiated);
- in debug mode a failing bounds check in a replayed kernel raises as it would
  from ``sk.launch`` (on a GPU, after the replay finishes).

A graph belongs to the device of its first launch (or ``device=`` if given); a
launch on another device inside the same capture is an error. Captures do not nest.

Example::

    with sk.capture() as step:
        for _ in range(10):
            sk.launch(integrate, n, inputs=[x, v, dt])
    for frame in range(100):
        sk.replay(step)              # 10 launches, no Python per launch
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import compiler
from . import device as D
from . import launch as L

_ALIGN = 16  # the args structs hold int64 and double fields: keep each copy 16-byte aligned


class ReplayJob(ctypes.Structure):
    """Mirror of the runtime's ``replay_job_t``."""

    _fields_ = [("job", L.Job), ("error", ctypes.c_void_p)]


class Graph:
    """Launches recorded by :func:`capture`; run them with :func:`replay`.

    ``len(graph)`` is the number of launches, ``graph.device`` their device
    (None for an empty graph).

    Example::

        with sk.capture() as g:
            sk.launch(k, n, inputs=[x])
        len(g)            # 1
    """

    def __init__(self, device: str | None):
        self.device = device
        self._plans: list = []         # the Plan of each launch, for error reports
        self._args: list = []          # CPU: each launch's own copy of its args bytes
        self._adjoint: list = []
        self._writes: list = []        # per launch: arrays it writes (version counting)
        self._keep: list = []          # every launch's values: the arrays must outlive the graph
        self._bumps: list = []         # (array, writes per replay), summed over the launches
        self._ready = False
        self._failed: str | None = None
        self._jobs = None              # CPU: ReplayJob array handed to the runtime
        self._buffer = None            # CPU: the args copies, one aligned block
        self._cuda = None              # GPU: simkit.core.cuda.graph.CudaGraph
        self._jobs_addr = 0
        self._run = None

    def __len__(self) -> int:
        return len(self._plans)

    def __repr__(self) -> str:
        state = "failed" if self._failed else ("ready" if self._ready else "capturing")
        return f"<sk.Graph {len(self)} launch(es) on {self.device or 'no device'} ({state})>"

    # -- building ----------------------------------------------------------------
    def _add(self, plan, values, adjoint: bool, args: bytes | None) -> None:
        self._plans.append(plan)
        self._adjoint.append(adjoint)
        self._args.append(args)
        self._keep.append(list(values))
        self._writes.append([] if adjoint else [a for _k, _p, a in L.resolve_arrays(values, plan.writes)])

    def _finish_cpu(self) -> None:
        """Copy every launch's args into one aligned block and build the runtime's job list."""
        sizes = [(len(b) + _ALIGN - 1) // _ALIGN * _ALIGN for b in self._args]
        raw = np.zeros(sum(sizes) + _ALIGN, np.uint8)
        base = raw.ctypes.data
        start = (-base) % _ALIGN
        jobs = (ReplayJob * len(self._args))()
        for k, (plan, blob, adjoint) in enumerate(zip(self._plans, self._args, self._adjoint)):
            raw[start:start + len(blob)] = np.frombuffer(blob, np.uint8)
            plan.ensure_cpu()
            jobs[k].job = plan.cpu_job(adjoint, base + start)
            jobs[k].error = ctypes.addressof(plan.error)
            start += sizes[k]
        self._buffer, self._jobs = raw, jobs
        self._jobs_addr = ctypes.addressof(jobs)
        self._run = compiler.runtime().sk_replay
        self._args = []

    def _finish(self) -> None:
        counts: dict[int, list] = {}
        for arrays in self._writes:
            for a in arrays:
                if not a._scratch:   # nothing reads the counts of scratch (array.mark_scratch)
                    counts.setdefault(id(a), [a, 0])[1] += 1
        self._bumps = [tuple(v) for v in counts.values()]
        if self.device == "cpu":
            self._finish_cpu()
        self._ready = True

    def _bump(self, upto: int | None = None) -> None:
        if upto is None:
            for a, n in self._bumps:
                a._version += n
            return
        for arrays in self._writes[:upto]:
            for a in arrays:
                a._version += 1


class _Capture:
    """The launch hook while ``with sk.capture():`` is open (see :func:`capture`)."""

    def __init__(self, device: Any):
        self.requested = None if device is None else D.require(device, "capture(device)")
        self.graph = Graph(self.requested)
        self.cuda = None  # simkit.core.cuda.graph.StreamCapture once a GPU launch started it

    def __enter__(self) -> Graph:
        if any(isinstance(h, _Capture) for h in L.hooks):
            raise RuntimeError("sk.capture() cannot be nested: finish the open capture first")
        if L.hooks:
            raise RuntimeError("sk.capture() inside a recording sk.Tape is not supported: a graph replays "
                               "launches the tape could not differentiate; capture outside the tape")
        L.hooks.append(self)
        D.state.capturing = True
        return self.graph

    def __exit__(self, exc_type, exc, tb) -> None:
        L.hooks.remove(self)
        D.state.capturing = False
        g = self.graph
        try:
            if self.cuda is not None:
                g._cuda = self.cuda.end(keep=exc_type is None)
        finally:
            if exc_type is not None:
                g._failed = f"the capture was interrupted by {exc_type.__name__}: {exc}"
        if exc_type is None:
            g._finish()

    def intercept(self, kernel, plan, dim, values, device, adjoint: bool) -> bool:
        """Record the launch instead of running it (on a GPU: queue it on the capturing stream)."""
        dev = L.launch_device(plan, values, device)
        g = self.graph
        if g.device is None:
            g.device = dev
        elif dev != g.device:
            raise ValueError(f"{kernel.name}(): this capture records launches on {g.device}, but this launch runs "
                             f"on {dev}; a graph holds launches of one device")
        if dev == "cpu":
            plan.pack_on(values, "cpu")
            plan.set_bounds(dim)
            if plan.extents:
                plan.check_extents(dim)
            g._add(plan, values, adjoint, bytes(plan.view))
        else:
            from .cuda import graph as cuda_graph
            from .cuda import launch as cuda_launch

            if self.cuda is None:
                self.cuda = cuda_graph.StreamCapture(dev)
            cuda_launch.launch(plan, dim, values, dev, adjoint, capturing=True)
            self.cuda.note(plan.cuda[dev].module)
            g._add(plan, values, adjoint, None)
        return True


def capture(device: str | None = None) -> _Capture:
    """Record the launches of a ``with`` block into a graph (not running them) for :func:`replay`.

    ``device``: the device the launches must run on; by default the device of the
    first launch. See the module documentation for what a graph bakes in.

    Example::

        with sk.capture() as substeps:
            for _ in range(4):
                sk.launch(step, n, inputs=[state, 0.25 * dt])
        sk.replay(substeps)
    """
    return _Capture(device)


def replay(graph: Graph) -> None:
    """Run every launch recorded in ``graph``, in order, with no Python per launch.

    Example::

        for _ in range(1000):
            sk.replay(step)
    """
    if type(graph) is not Graph or not graph._ready or L.hooks or D.state.capturing:
        _refuse(graph)
    if graph._run is not None:
        failed = graph._run(graph._jobs_addr, len(graph._plans))
        if failed >= 0:
            graph._bump(failed)
            graph._plans[failed].check_error()
            return
    elif graph._cuda is not None:
        graph._cuda.replay()
    graph._bump()


def _refuse(graph: Any) -> None:
    """Raise why ``graph`` cannot be replayed now (kept off replay's fast path)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"sk.replay expects a graph from sk.capture(), got {type(graph).__name__}")
    if graph._failed:
        raise RuntimeError(f"cannot replay this graph: {graph._failed}")
    if not graph._ready:
        raise RuntimeError("cannot replay a graph whose capture is still open; replay it after the with block")
    if D.state.capturing:
        raise RuntimeError("sk.replay() inside sk.capture() is not supported; replay before or after the capture")
    raise RuntimeError("sk.replay() while an sk.Tape is recording is refused: the replayed launches would "
                       "not be on the tape, so its gradients would be wrong; record with sk.launch instead")


# -- Warp's spelling: capture_begin() ... capture_end() -> graph, capture_launch(graph) ----------
_open: list = []   # the capture capture_begin opened (at most one: captures do not nest)


def _no_stream(stream: Any, where: str) -> None:
    if stream is not None:
        raise ValueError(f"{where}: stream= is not supported (simkit captures on its own stream); drop it")


def capture_begin(device: str | None = None, stream: Any = None, force_module_load: bool | None = None) -> None:
    """Start recording launches into a graph, as ``with sk.capture(device):`` does (Warp's spelling);
    :func:`capture_end` closes it and returns the graph. ``force_module_load`` is accepted and
    ignored: kernels compile on their first captured launch anyway.

    Example::

        sk.capture_begin()
        sk.launch(step, n, inputs=[x, dt])
        graph = sk.capture_end()
        sk.capture_launch(graph)
    """
    _no_stream(stream, "capture_begin")
    if _open:
        raise RuntimeError("capture_begin(): a capture is already open; call capture_end() first "
                           "(captures do not nest)")
    c = _Capture(device)
    c.__enter__()
    _open.append(c)


def capture_end(device: str | None = None, stream: Any = None) -> Graph:
    """Close the capture :func:`capture_begin` opened and return its graph for :func:`capture_launch`.

    Example::

        graph = sk.capture_end()
    """
    _no_stream(stream, "capture_end")
    if not _open:
        raise RuntimeError("capture_end(): no capture is open; call capture_begin() first")
    c = _open.pop()
    c.__exit__(None, None, None)
    g = c.graph
    if device is not None and g.device is not None and D.require(device, "capture_end(device)") != g.device:
        raise ValueError(f"capture_end(device={device!r}): the capture recorded launches on {g.device}")
    return g


def capture_launch(graph: Graph, stream: Any = None) -> None:
    """Run a graph from :func:`capture_end` (or ``sk.capture``): the same as :func:`replay`.

    Example::

        for _ in range(100):
            sk.capture_launch(graph)
    """
    _no_stream(stream, "capture_launch")
    replay(graph)
