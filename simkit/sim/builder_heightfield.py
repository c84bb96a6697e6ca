"""Heightfield collision shapes (terrain) for :class:`~simkit.sim.ModelBuilder`
(``add_shape_heightfield``).

Example::

    x, z = np.meshgrid(np.linspace(-2, 2, 41), np.linspace(-2, 2, 41), indexing="ij")
    b = sk.sim.ModelBuilder()
    b.add_shape_heightfield((0, 0, 0), (0, 0, 0, 1), 0.1 * np.sin(x) * np.cos(z), (2.0, 2.0))
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..kernels.structs import SHAPE_HFIELD
from . import validate as V


def heightfield_arrays(heights: list) -> dict:
    """The ``hfield*`` fields of ``Shapes`` (numpy) for the shapes' height grids (None: not
    a heightfield).

    Example::

        heightfield_arrays([None, np.zeros((3, 4))])["hfield"]      # [[0, 0, 0], [0, 3, 4]]
    """
    rows = np.zeros((len(heights), 3), dtype=np.int32)
    data = [np.zeros(0)]
    first = 0
    for s, h in enumerate(heights):
        if h is None:
            continue
        rows[s] = (first, h.shape[0], h.shape[1])
        data.append(h.ravel())
        first += h.size
    return {"hfield": rows, "hfield_heights": np.concatenate(data)}


def heightfield_triangles(nx: int, nz: int) -> np.ndarray:
    """The triangles (``T x 3`` vertex indices, x-major vertices, counterclockwise seen from
    above) of an ``nx x nz`` grid, split as the contact kernels split it
    (:mod:`simkit.kernels.heightfield`).

    Example::

        heightfield_triangles(2, 2)      # [[0, 1, 2], [1, 3, 2]]
    """
    i, j = np.meshgrid(np.arange(nx - 1), np.arange(nz - 1), indexing="ij")
    v00 = (i * nz + j).ravel()
    v01, v10, v11 = v00 + 1, v00 + nz, v00 + nz + 1
    halves = np.stack([np.stack([v00, v01, v10], 1), np.stack([v01, v11, v10], 1)], 1)
    return halves.reshape(-1, 3).astype(np.int32)


def heightfield_vertices(heights: np.ndarray, half_extents: Sequence[float]) -> np.ndarray:
    """The grid's vertices (``nx * nz x 3``, x-major) in the shape's frame.

    Example::

        heightfield_vertices(np.zeros((2, 2)), (1.0, 1.0))[3]      # [1, 0, 1]
    """
    nx, nz = heights.shape
    x, z = np.meshgrid(np.linspace(-half_extents[0], half_extents[0], nx),
                       np.linspace(-half_extents[1], half_extents[1], nz), indexing="ij")
    return np.stack([x.ravel(), np.asarray(heights, dtype=np.float64).ravel(), z.ravel()], axis=1)


class HeightfieldBuilder:
    """``add_shape_heightfield``; mixed into :class:`~simkit.sim.ModelBuilder` before the rigid
    part, whose ``_append_rigid`` and ``_rigid_data`` it extends with the height grids."""

    @property
    def shape_heightfields(self) -> dict:
        """The height grid (``nx x nz`` float64) of each heightfield shape, by shape index."""
        return self.__dict__.setdefault("_shape_heightfields", {})

    def add_shape_heightfield(self, pos: Sequence[float], rot: Sequence[float], heights: Any,
                              half_extents: Sequence[float], *, ke: float | None = None, kd: float | None = None,
                              kf: float | None = None, mu: float | None = None, time_constant: float | None = None,
                              damping_ratio: float | None = None, **contact: Any) -> int:
        """Add a static terrain: ``heights`` (an ``nx x nz`` array, both >= 2) over a regular grid
        spanning ``[-hx, hx] x [-hz, hz]`` (``half_extents``) on the local x-z plane, facing local
        +y, placed at ``pos``, ``rot``. Height ``heights[i, j]`` is at ``x = -hx + 2 hx i / (nx -
        1)``, ``z = -hz + 2 hz j / (nz - 1)``; the surface between is two triangles per cell.
        Shapes and particles collide with its surface (not with sides or a bottom: it has none);
        a heightfield takes no ``body`` or ``density``. Contact material and MuJoCo's
        parameters as in :meth:`add_shape_sphere` (docs/geometry.md).

        Example::

            x, z = np.meshgrid(np.linspace(-2, 2, 41), np.linspace(-2, 2, 41), indexing="ij")
            b.add_shape_heightfield((0, 0, 0), (0, 0, 0, 1), 0.1 * np.sin(x) * np.cos(z), (2.0, 2.0), mu=0.8)
        """
        where = "add_shape_heightfield"
        if "body" in contact or "density" in contact:
            raise TypeError(f"{where}: a heightfield is always static; it takes no "
                            f"{'body' if 'body' in contact else 'density'} argument")
        try:
            h = np.array(heights, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: heights must be an nx x nz array of numbers, "
                             f"got {type(heights).__name__}") from None
        if h.ndim != 2 or min(h.shape) < 2:
            raise ValueError(f"{where}: heights must be an nx x nz array with nx, nz >= 2, got shape {h.shape}")
        if not np.all(np.isfinite(h)):
            raise ValueError(f"{where}: heights must be finite, got a non-finite value at "
                             f"{tuple(int(k) for k in np.argwhere(~np.isfinite(h))[0])}")
        try:
            e = np.asarray(half_extents, dtype=np.float64)
        except (TypeError, ValueError):
            e = np.zeros(0)
        if e.shape != (2,) or not np.all(np.isfinite(e)) or np.any(e <= 0.0):
            raise ValueError(f"{where}: half_extents must be two finite numbers > 0 (along local x and z), "
                             f"got {half_extents!r}")
        reach = float(np.linalg.norm(heightfield_vertices(h, e), axis=1).max())
        shape = self._add_shape(SHAPE_HFIELD, V.vec3(pos, f"{where}: pos"), V.quat(rot, f"{where}: rot"),
                                np.array([e[0], e[1], reach]), -1, 0.0, (ke, kd, kf, mu, time_constant, damping_ratio),
                                where, contact)
        self.shape_heightfields[shape] = h
        return shape

    def _append_rigid(self, other, X, offset) -> None:
        first = self.shape_count
        super()._append_rigid(other, X, offset)
        for s, h in getattr(other, "shape_heightfields", {}).items():
            self.shape_heightfields[first + s] = h

    def _rigid_data(self) -> dict:
        data = super()._rigid_data()
        data["heightfields"] = [self.shape_heightfields.get(s) for s in range(self.shape_count)]
        return data
