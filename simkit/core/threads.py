"""The CPU thread pool seen from Python: how many threads a launch may split over, and
how launches ran.

By default the pool has one thread per core (the calling thread included). A launch is
cut into chunks that the workers and the calling thread claim as they come, so a worker
without a core never holds one up; on a busy machine the pool runs launches on the
calling thread alone for a while (native/pool.h). Running several simulations in
separate processes, give each fewer threads. ``SIMKIT_NUM_THREADS`` sets the count
before the first launch.

Example::

    sk.set_threads(1)       # every launch runs on the calling thread
    sk.get_threads()        # 1
"""

from __future__ import annotations

import ctypes

from . import compiler

PATHS = ("inline", "split", "private", "atomic")


def get_threads() -> int:
    """Threads a CPU launch may split over, the calling thread included.

    Example::

        print(sk.get_threads())   # the machine's cores unless set otherwise
    """
    return int(compiler.runtime().sk_get_threads())


def set_threads(n: int, *, adaptive: bool = True) -> None:
    """Let CPU launches split over ``n`` threads (the calling thread and ``n - 1`` workers).

    ``adaptive=False`` keeps the pool splitting launches even when the machine is busy
    (by default it then runs them on the calling thread alone for a while): for measuring
    the split itself, or tests of how launches split.

    Example::

        sk.set_threads(4)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"sk.set_threads(n): n must be an int >= 1, got {n!r}")
    if not isinstance(adaptive, bool):
        raise TypeError(f"sk.set_threads(adaptive=...): expected True or False, got {adaptive!r}")
    runtime = compiler.runtime()
    runtime.sk_set_threads(n)
    runtime.sk_set_adaptive(int(adaptive))


def launch_counts() -> dict:
    """How many CPU launches ran each way so far: ``inline`` on the calling thread, ``split``
    over the pool with nothing shared to accumulate into (or inline while the pool runs
    alone on a busy machine: then ``inline``), ``private`` (chunks with their own copies of
    shared accumulators: core/private.py) and ``atomic`` (split, atomic adds).

    Example::

        before = launch_counts()
        sk.launch(scatter_kernel, 100_000, inputs=[...])
        launch_counts()["private"] - before["private"]   # 1 on a machine with 2+ cores
    """
    out = (ctypes.c_int64 * len(PATHS))()
    compiler.runtime().sk_launch_counts(out)
    return dict(zip(PATHS, out))
