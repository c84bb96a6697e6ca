"""Convex-hull collision shapes for :class:`~simkit.sim.ModelBuilder` (``add_shape_convex``).

Example::

    b = sk.sim.ModelBuilder(ground=True)
    rock = b.add_body(sk.transform((0, 1, 0), (0, 0, 0, 1)))
    b.add_shape_convex((0, 0, 0), (0, 0, 0, 1), np.random.default_rng(0).normal(size=(20, 3)) * 0.1, body=rock)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..kernels.structs import SHAPE_CONVEX
from . import geometry as G
from . import validate as V
from .hull import HullGeometry


class HullBuilder:
    """``add_shape_convex``; mixed into :class:`~simkit.sim.ModelBuilder` before the rigid part,
    whose ``_append_rigid`` and ``_rigid_data`` it extends with the hulls."""

    @property
    def shape_hulls(self) -> dict:
        """The :class:`~simkit.sim.hull.HullGeometry` of each convex shape, by shape index."""
        return self.__dict__.setdefault("_shape_hulls", {})

    def add_shape_convex(self, pos: Sequence[float], rot: Sequence[float], points: Any, body: int = -1,
                         density: float = 1000.0, *, scale: float | Sequence[float] = 1.0, ke: float | None = None,
                         kd: float | None = None, kf: float | None = None, mu: float | None = None,
                         time_constant: float | None = None, damping_ratio: float | None = None,
                         **contact: Any) -> int:
        """Add the solid convex hull of ``points`` (an ``N x 3`` array in the shape's frame, N >=
        4 not all in a plane: a point cloud or a mesh's vertices), scaled by ``scale`` (one
        factor or three), placed at ``pos``, ``rot`` in ``body``'s frame (static unless ``body``
        is given; material and MuJoCo's contact parameters as in :meth:`add_shape_sphere`). The
        hull is computed here (:func:`~simkit.sim.hull.convex_hull`); the body gets the mass
        ``density * volume``, the centroid and the inertia of that solid. Contacts: the ground,
        particles and every primitive shape and hull, in every integrator (docs/geometry.md).

        Example::

            corners = [(x, y, z) for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)]
            cube = b.add_body(sk.transform((0.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0)))
            b.add_shape_convex((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), corners, body=cube)
        """
        where = "add_shape_convex"
        s = np.full(3, scale, dtype=np.float64) if np.ndim(scale) == 0 else V.vec3(scale, f"{where}: scale")
        if not (np.all(np.isfinite(s)) and np.all(s > 0.0)):
            raise ValueError(f"{where}: scale must be > 0 (one number or three), got {scale!r}")
        try:
            p = np.asarray(points, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: points must be an N x 3 array of numbers, got {type(points).__name__}") from None
        hull = HullGeometry(p * s if p.ndim == 2 and p.shape[-1] == 3 else p, f"{where}: points")
        pos = V.vec3(pos, f"{where}: pos")
        rot = V.quat(rot, f"{where}: rot")
        density = V.nonneg(density, f"{where}: density")
        shape = self._add_shape(SHAPE_CONVEX, pos, rot, np.array([hull.radius, hull.rounding, 0.0]), body, 0.0,
                                (ke, kd, kf, mu, time_constant, damping_ratio), where, contact)
        self.shape_hulls[shape] = hull
        b = self.shape_body[shape]
        if b >= 0 and density > 0.0:
            R = G.quat_to_matrix(rot)
            self.body_inertials.setdefault(b, []).append(
                (density * hull.volume, pos + R @ hull.center, R @ (density * hull.inertia) @ R.T))
        return shape

    def _append_rigid(self, other, X, offset) -> None:
        first = self.shape_count
        super()._append_rigid(other, X, offset)
        for s, hull in getattr(other, "shape_hulls", {}).items():
            self.shape_hulls[first + s] = hull

    def _rigid_data(self) -> dict:
        data = super()._rigid_data()
        data["hulls"] = [self.shape_hulls.get(s) for s in range(self.shape_count)]
        return data

