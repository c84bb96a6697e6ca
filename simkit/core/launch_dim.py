"""A launch's ``dim``, checked: an int or a tuple of 1 to 4 ints, each size one the runtime can
index, and a thread count that fits its int64 counter.

The runtime counts threads in int64 (``sk::launch_t``) and hands each thread its index
components as int32 (``sk::tid``, native/array.h), so a size past either would wrap around
silently: 2**64 + 7 would run 7 threads, 2**63 none. Refused here instead, naming the size.

Example::

    launch_shape("k", (64, 64), tid_dims=2)   # (64, 64)
    launch_shape("k", 3.0)                    # TypeError: k(): dim must be an int or ...
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

INT64_MAX = 2 ** 63 - 1
TID_MAX = 2 ** 31 - 1  # an sk.tid() component is an int32

_EXPECTED = "an int or a tuple of 1 to 4 ints"


def launch_shape(kname: str, dim: Any, tid_dims: int = 0) -> tuple:
    """``dim`` as a tuple of Python ints, or a TypeError (not an int or tuple of ints) or ValueError
    (negative, too many axes, a size past what the kernel can index) naming ``dim`` and the size.
    ``tid_dims``: how many index components the kernel's ``sk.tid()`` unpacks (0: it calls none)."""
    if isinstance(dim, (int, np.integer)):
        shape = (dim,)
    elif isinstance(dim, (tuple, list)):
        shape = tuple(dim)
    else:
        raise TypeError(f"{kname}(): dim must be {_EXPECTED}, got {type(dim).__name__} {dim!r}")
    if not 1 <= len(shape) <= 4:
        raise ValueError(f"{kname}(): dim must be {_EXPECTED}, got {dim!r} ({len(shape)} entries)")
    for s in shape:
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"{kname}(): dim must be {_EXPECTED}, got {dim!r} whose entry {s!r} is a "
                            f"{type(s).__name__}")
    shape = tuple(int(s) for s in shape)
    for s in shape:
        if s < 0:
            raise ValueError(f"{kname}(): dim={dim!r} has the negative size {s}; a launch size is at least 0")
    limit, why = (TID_MAX, "sk.tid() gives each thread 32-bit index components") if tid_dims \
        else (INT64_MAX, "the runtime counts threads in 64 bits")
    for s in shape:
        if s > limit:
            raise ValueError(f"{kname}(): launch size {s} in dim={dim!r} is too large: at most {limit} "
                             f"(2**{limit.bit_length()} - 1), since {why}")
    total = math.prod(shape)
    if total > INT64_MAX:
        raise ValueError(f"{kname}(): dim={dim!r} launches {total} threads, more than {INT64_MAX} (2**63 - 1) "
                         "that the runtime can count")
    return shape
