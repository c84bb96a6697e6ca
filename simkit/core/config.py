"""Global settings of the JIT, read when a module is built or launched.

``SIMKIT_DEBUG=1`` in the environment starts the process in debug mode.

Example::

    sk.config.mode = "debug"        # bounds checks that raise IndexError
    sk.config.keep_source = True    # keep generated C++ next to the cache entry and log its path
"""

from __future__ import annotations

import os

from . import mutation


class Config:
    """``mode``: "release" or "debug" (array bounds checks, integer division by zero raises,
    GPU launches wait; see the README's debug mode section); ``keep_source``: log where the
    generated C++ of each module lives; ``max_unroll``: constant-trip loops up to this
    length are unrolled; ``max_loop_iterations``: iterations of one dynamic loop that the
    adjoint can replay (per thread, per loop); ``cuda_max_loop_iterations``: the same on
    GPUs, smaller because the replay stack is per-thread local memory and the driver
    reserves it for every resident thread; ``cache_dir``: overrides the cache path
    (``SIMKIT_CACHE_DIR`` does the same from the environment); ``replay_steps``: an
    integrator's ``step`` called again with the same model, states, control and ``dt`` runs
    its recorded launches (see the README's "Speed"; False: every step runs its Python).
    ``SIMKIT_DEBUG=1`` sets ``mode`` to "debug" at import. Setting any option makes recorded
    steps record again."""

    def __init__(self):
        self.mode = _mode_from_environment()
        self.keep_source = False
        self.max_unroll = 16
        self.max_loop_iterations = 1024
        self.cuda_max_loop_iterations = 64
        self.cache_dir: str | None = None
        self.verbose = False
        self.replay_steps = True

    def __setattr__(self, name, value):
        if name == "mode" and value not in ("release", "debug"):
            raise ValueError(f"sk.config.mode must be 'release' or 'debug', got {value!r}")
        if name == "replay_steps" and not isinstance(value, bool):
            raise TypeError(f"sk.config.replay_steps must be True or False, got {value!r}")
        if name not in ("mode", "keep_source", "max_unroll", "max_loop_iterations", "cuda_max_loop_iterations",
                        "cache_dir", "verbose", "replay_steps"):
            raise AttributeError(f"sk.config has no setting {name!r}")
        object.__setattr__(self, name, value)
        mutation.count[0] += 1  # e.g. the mode picks other compiled kernels than a recorded step holds


def _mode_from_environment() -> str:
    value = os.environ.get("SIMKIT_DEBUG", "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return "release"
    if value in ("1", "true", "yes", "on"):
        return "debug"
    raise ValueError(f"SIMKIT_DEBUG must be 1 (debug mode) or 0 (release mode), got {os.environ['SIMKIT_DEBUG']!r}")


config = Config()
