"""Global settings of the JIT, read when a module is built or launched.

Example::

    sk.config.mode = "debug"        # bounds checks that raise IndexError
    sk.config.keep_source = True    # keep generated C++ next to the cache entry and log its path
"""

from __future__ import annotations


class Config:
    """``mode``: "release" or "debug" (array bounds checks); ``keep_source``: log where the
    generated C++ of each module lives; ``max_unroll``: constant-trip loops up to this
    length are unrolled; ``max_loop_iterations``: iterations of one dynamic loop that the
    adjoint can replay (per thread, per loop); ``cuda_max_loop_iterations``: the same on
    GPUs, smaller because the replay stack is per-thread local memory and the driver
    reserves it for every resident thread; ``cache_dir``: overrides the cache path
    (``SIMKIT_CACHE_DIR`` does the same from the environment)."""

    def __init__(self):
        self.mode = "release"
        self.keep_source = False
        self.max_unroll = 16
        self.max_loop_iterations = 1024
        self.cuda_max_loop_iterations = 64
        self.cache_dir: str | None = None
        self.verbose = False

    def __setattr__(self, name, value):
        if name == "mode" and value not in ("release", "debug"):
            raise ValueError(f"sk.config.mode must be 'release' or 'debug', got {value!r}")
        if name not in ("mode", "keep_source", "max_unroll", "max_loop_iterations", "cuda_max_loop_iterations",
                        "cache_dir", "verbose"):
            raise AttributeError(f"sk.config has no setting {name!r}")
        object.__setattr__(self, name, value)


config = Config()
