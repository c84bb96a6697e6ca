"""Argument checks shared by the builder's methods: each raises a TypeError/ValueError that
names the method, the argument and the value it got.

Example::

    pos = vec3(pos, "add_body: origin")
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np


def vec3(value: Any, where: str) -> np.ndarray:
    """A length-3 vector of finite numbers."""
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where} expects 3 finite numbers, got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{where} expects 3 finite numbers, got {value!r}")
    return v


def quat(value: Any, where: str) -> np.ndarray:
    """A nonzero quaternion (x, y, z, w), normalized."""
    try:
        q = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where} expects a quaternion (x, y, z, w), got {value!r}") from None
    if q.shape != (4,) or not np.all(np.isfinite(q)) or np.linalg.norm(q) < 1e-12:
        raise ValueError(f"{where} expects a quaternion (x, y, z, w), got {value!r}")
    return q / np.linalg.norm(q)


def number(value: Any, where: str) -> float:
    """A finite number, of either sign."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{where} expects a number, got {type(value).__name__}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{where} expects a number, got {type(value).__name__}") from None
    if not np.isfinite(v):
        raise ValueError(f"{where} must be a finite number, got {value!r}")
    return v


def nonneg(value: Any, where: str) -> float:
    """A finite number >= 0."""
    v = number(value, where)
    if v < 0.0:
        raise ValueError(f"{where} must be a finite number >= 0, got {value!r}")
    return v


def within(value: Any, low: float, high: float, where: str) -> float:
    """A finite number in ``[low, high]``."""
    v = number(value, where)
    if not low <= v <= high:
        raise ValueError(f"{where} must be in [{low:g}, {high:g}], got {value!r}")
    return v


def finite_arrays(arrays: dict, where: str) -> None:
    """Every float array of ``arrays`` (name -> list or array) holds only finite numbers; the
    error names the first bad array and entry (for lists filled in directly, bypassing the
    ``add_*`` checks)."""
    for name, value in arrays.items():
        try:
            a = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if a.size and not np.all(np.isfinite(a)):
            bad = np.argwhere(~np.isfinite(a.reshape(len(a), -1)))[0]
            raise ValueError(f"{where}: {name}[{bad[0]}] holds a non-finite number "
                             f"({a.reshape(len(a), -1)[tuple(bad)]}); every position, velocity and parameter "
                             "must be finite")


def arrays_fit(arrays: dict, float_type: Any, where: str) -> None:
    """Every float array of ``arrays`` (name -> list or array, finite) keeps its numbers once
    converted to ``float_type``: none overflows, and no entry whose numbers are all tiny
    becomes zero (a mass of 1e-300 kg is 0 in float32, a static particle). A tiny number
    beside larger ones in the same entry (a quaternion's 1e-50) may round to zero: that
    changes nothing. The error names the first bad array and entry.

    Example::

        arrays_fit({"particle_mass": [1e-300]}, sk.float32, "finalize")
        # ValueError: finalize: particle_mass[0] = 1e-300 is 0 in float32 ...
    """
    np_type = np.dtype(getattr(float_type, "np_dtype", float_type))
    if np_type == np.float64:
        return  # the builder holds float64 already: nothing to lose
    tiny, high = _normal_range(np_type)
    for name, value in arrays.items():
        try:
            a = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if a.size == 0 or a.dtype.kind != "f":
            continue
        magnitude = np.abs(a)
        # the usual case in one pass each: nothing above the range, nothing in (0, tiny)
        if magnitude.max() <= high and not np.any(magnitude < tiny, where=magnitude > 0.0):
            continue
        rows = magnitude.reshape(len(a), -1) if a.ndim else magnitude.reshape(1, 1)
        largest = rows.max(axis=1)
        bad = np.flatnonzero((largest > high) | ((largest > 0.0) & (largest < tiny)))
        if bad.size:
            row = rows[bad[0]]
            v = float(a.reshape(rows.shape)[bad[0]][int(np.argmax(row))])
            at = f"{name}[{bad[0]}]" if a.ndim else name
            raise ValueError(f"{where}: {at} = {v!r} {float_problem(v, np_type)}; the model computes in "
                             f"{np_type.name} (finalize(dtype=sk.float64) keeps it)")


def positive(value: Any, where: str) -> float:
    """A finite number > 0."""
    v = nonneg(value, where)
    if v == 0.0:
        raise ValueError(f"{where} must be > 0, got {value!r}")
    return v


def float_problem(value: float, float_type: Any) -> str | None:
    """What goes wrong with the number ``value`` once converted to ``float_type`` (an
    ``sk.float32``/``sk.float64`` or a numpy float dtype), or None when it stays a finite
    normal number: 1e-300 is 0 in float32 and 1e-40 a subnormal, so a kernel stepping by it
    silently moves nothing.

    Example::

        float_problem(1e-300, sk.float32)   # 'is 0 in float32 (its smallest normal number is 1.17549e-38)'
    """
    np_type = np.dtype(getattr(float_type, "np_dtype", float_type))
    info = np.finfo(np_type)
    with np.errstate(over="ignore"):
        converted = np_type.type(value)
    if not np.isfinite(converted):
        return f"overflows to {float(converted)} in {np_type.name} (its largest number is {float(info.max):.6g})"
    if value != 0.0 and converted == 0.0:
        return f"is 0 in {np_type.name} (its smallest normal number is {float(info.tiny):.6g})"
    if converted != 0.0 and abs(converted) < info.tiny:
        return f"is a subnormal number in {np_type.name} (its smallest normal number is {float(info.tiny):.6g})"
    return None


@functools.lru_cache(maxsize=None)
def _normal_range(np_type: np.dtype) -> tuple[float, float]:
    info = np.finfo(np_type)
    return float(info.tiny), float(info.max)


def normal_in(value: float, float_type: Any, where: str) -> float:
    """``value`` (> 0) when it stays a finite normal number in ``float_type`` (see
    :func:`float_problem`); a ValueError naming ``where`` and the float type otherwise. Cheap
    enough for every step: a comparison with the type's range, cached.

    Example::

        normal_in(1e-300, sk.float32, "step: dt")   # ValueError: step: dt = 1e-300 is 0 in float32 ...
    """
    low, high = _normal_range(getattr(float_type, "np_dtype", None) or np.dtype(float_type))
    if low <= value <= high:
        return float(value)
    problem = float_problem(value, float_type)
    if problem is not None:
        raise ValueError(f"{where} = {value!r} {problem}; the model computes in "
                         f"{np.dtype(getattr(float_type, 'np_dtype', float_type)).name}")
    return float(value)


def count(value: Any, where: str) -> int:
    """An int >= 1."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{where} must be an int >= 1, got {value!r}")
    return int(value)


def xform(value: Any, where: str) -> np.ndarray:
    """A transform as 7 numbers ``(px, py, pz, qx, qy, qz, qw)``, the rotation normalized;
    accepts an ``sk.transform``, 7 numbers, or a pair ``(p, q)``."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(np.ndim(x) == 1 for x in value):
        return np.concatenate([vec3(value[0], where), quat(value[1], where)])
    try:
        t = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        t = None
    if t is None or t.shape != (7,):
        raise ValueError(f"{where} expects a transform (sk.transform(p, q) or 7 numbers), got {value!r}")
    return np.concatenate([vec3(t[:3], where), quat(t[3:], where)])


def index(value: Any, count: int, name: str, things: str, where: str, allow_world: bool = False) -> int:
    """An index ``name`` into the builder's ``count`` ``things`` (``-1``, the world, also
    allowed when ``allow_world``)."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{where}: {name} must be an int, got {type(value).__name__}")
    low = -1 if allow_world else 0
    if not low <= value < count:
        world = " (or -1 for the world)" if allow_world else ""
        raise ValueError(f"{where}: {name}={value} is out of range: the builder has {count} {things}{world}")
    return int(value)


# -- the elements a grid or mesh computes (numbered from ``start``, the first new particle) --

def finite_rows(where: str, what: str, elements: np.ndarray, values: np.ndarray, start: int) -> None:
    """Every row of ``values`` (computed rest shapes, one per element) is finite; the error
    names the first element that is not by its corners."""
    bad = np.flatnonzero(~np.isfinite(values.reshape(len(values), -1)).all(axis=1))
    if len(bad):
        corners = tuple(int(i) + start for i in elements[bad[0]])
        raise ValueError(f"{where}: {what} {corners} gets a non-finite rest shape ({values[bad[0]].tolist()}); "
                         "its corners are too far apart for float64")


def triangle_shapes(where: str, tris: np.ndarray, pose: np.ndarray, area: np.ndarray, start: int) -> None:
    """No triangle is degenerate (rest area below 1e-12) and every rest shape is finite."""
    bad = np.flatnonzero(~(area >= 1e-12))
    if len(bad):
        i, j, k = (int(t) + start for t in tris[bad[0]])
        raise ValueError(f"{where}: triangle ({i}, {j}, {k}) is degenerate (rest area {area[bad[0]]:.3g})")
    finite_rows(where, "triangle", tris, pose, start)
    finite_rows(where, "triangle", tris, area, start)


def tet_volumes(where: str, tets: np.ndarray, volume: np.ndarray, start: int) -> None:
    """No tetrahedron repeats a corner or has no volume (below 1e-15); the error names the
    first, as ``add_tetrahedron`` would have."""
    s = np.sort(tets, axis=1)
    repeated = (s[:, 1:] == s[:, :-1]).any(axis=1)
    bad = np.flatnonzero(repeated | ~(np.abs(volume) >= 1e-15))
    if len(bad):
        t = tuple(int(i) + start for i in tets[bad[0]])
        if repeated[bad[0]]:
            raise ValueError(f"{where}: add_tetrahedron: particle indices must differ, got {t}")
        raise ValueError(f"{where}: add_tetrahedron: tetrahedron {t} is degenerate (rest volume {volume[bad[0]]:.3g})")


# -- the size of a grid, checked before any of it is allocated --

# Lower bounds of what the builder keeps per particle (position, velocity, mass, radius,
# flags), per cloth cell (2 triangles with rest poses and areas, about 3 hinges) and per
# soft-grid cell (5 tetrahedra with rest poses and volumes): a 1000 x 1000 cloth peaks at
# 270 MB where these say 198 MB, a 60^3 soft grid at 123 MB where they say 97 MB.
_BYTES_PER_PARTICLE, _BYTES_PER_CLOTH_CELL, _BYTES_PER_SOFT_CELL = 48, 160, 400
MAX_PARTICLES = int(np.iinfo(np.int32).max)


def physical_memory() -> int | None:
    """The machine's physical memory in bytes, or None where the system does not say.

    Example::

        physical_memory()   # 67108864000
    """
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**40:.1f} TiB" if n >= 2**40 else f"{n / 2**30:.1f} GiB"


def grid_size_problem(dims: dict, existing_particles: int = 0) -> str | None:
    """Why a cloth grid (``dims``: ``{"dim_x": nx, "dim_y": ny}``) or a soft grid (with
    ``"dim_z"`` too) of that many cells cannot be built, checked before anything is
    allocated: more particles than a model can index, or more memory than the machine has.
    None when it can be tried.

    Example::

        grid_size_problem({"dim_x": 100000, "dim_y": 100000})
        # 'dim_x = 100000 by dim_y = 100000 cells make 10000200001 particles, more than ...'
    """
    particles, cells = 1, 1
    for d in dims.values():
        particles *= d + 1
        cells *= d
    named = " by ".join(f"{k} = {v}" for k, v in dims.items())
    total = existing_particles + particles
    if total > MAX_PARTICLES:
        return (f"{named} cells make {particles} particles, more than a model can index ({MAX_PARTICLES} in all"
                f"{f', {existing_particles} already added' if existing_particles else ''}); use fewer cells")
    need = particles * _BYTES_PER_PARTICLE + cells * (_BYTES_PER_SOFT_CELL if len(dims) == 3 else _BYTES_PER_CLOTH_CELL)
    have = physical_memory()
    if have is not None and need > have:
        return (f"{named} cells make {particles} particles and would need at least {_gib(need)} of memory to build, "
                f"more than this machine's {_gib(have)}; use fewer cells")
    return None
