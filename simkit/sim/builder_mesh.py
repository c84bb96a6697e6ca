"""Triangle-mesh collision shapes for :class:`~simkit.sim.ModelBuilder` (``add_shape_mesh``).

Example::

    b = sk.sim.ModelBuilder()
    floor = b.add_shape_mesh(-1, vertices, triangles)                    # static
    rock = b.add_body(sk.transform((0, 1, 0), (0, 0, 0, 1)))
    b.add_shape_mesh(rock, rock_vertices, rock_triangles, density=2500.0)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..kernels.structs import SHAPE_MESH
from . import geometry as G
from . import validate as V
from .mesh_geometry import check_mesh, is_closed, solid_properties


class MeshGeometry:
    """One mesh as added: vertices (scaled, float64 ``(N, 3)``), triangles (int32 ``(T, 3)``),
    whether it is closed, and the volume, centroid and unit-density inertia of its solid."""

    def __init__(self, vertices: np.ndarray, triangles: np.ndarray):
        self.vertices, self.triangles = vertices, triangles
        self.closed = is_closed(triangles)
        self.volume, self.center, self.inertia = 0.0, np.zeros(3), np.zeros((3, 3))
        if self.closed:
            self.volume, self.center, self.inertia = solid_properties(vertices, triangles)
            if self.volume < 0.0:
                # wound clockwise seen from outside: flip, so that normals point outwards
                self.triangles = np.ascontiguousarray(triangles[:, [0, 2, 1]])
                self.volume, self.center, self.inertia = solid_properties(vertices, self.triangles)


class MeshBuilder:
    """``add_shape_mesh``; mixed into :class:`~simkit.sim.ModelBuilder` before the rigid part,
    whose ``_append_rigid`` and ``_rigid_data`` it extends with the meshes."""

    @property
    def shape_meshes(self) -> dict:
        """The :class:`MeshGeometry` of each mesh shape, by shape index."""
        return self.__dict__.setdefault("_shape_meshes", {})

    def add_shape_mesh(self, body: int, vertices: Any, indices: Any, xform: Any = None,
                       scale: float | Sequence[float] = 1.0, density: float = 1000.0, *, ke: float | None = None,
                       kd: float | None = None, kf: float | None = None, mu: float | None = None,
                       time_constant: float | None = None, damping_ratio: float | None = None,
                       **contact: Any) -> int:
        """Add a triangle-mesh collider to ``body`` (-1: static, in the world) and return its
        shape index. ``vertices`` is an ``N x 3`` array, ``indices`` a ``T x 3`` integer array
        of triangles (or a flat one of ``3 T``) wound counterclockwise seen from outside (a
        closed mesh wound the other way is flipped); ``scale`` (one factor or three) scales the
        vertices in the mesh's frame, ``xform`` places that frame in the body's (or the
        world's; default identity).

        A closed mesh (every edge shared by exactly two triangles, in opposite directions)
        gives the body the mass ``density * volume`` and the inertia of that solid
        (divergence theorem); an open one (a terrain, a floor) must have ``density=0`` on a
        body (give the body its mass with ``add_body_inertia``). Material, MuJoCo's contact
        parameters (``condim``, ``solref``, ...; see ``add_shape_sphere``), collision filter
        (``set_shape_collision``) and worlds as for the other shapes. Contacts: particles,
        primitives, other meshes and the ground, in ``SemiImplicitEuler`` and ``XPBD`` (see
        docs/meshes.md for what is tested against what and what it costs).

        Example::

            v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
            f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
            tet = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
            b.add_shape_mesh(tet, v, f, scale=0.2, density=500.0)
        """
        where = "add_shape_mesh"
        body = V.index(body, self.body_count, "body", "bodies", where, allow_world=True)
        X = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]) if xform is None else V.xform(xform, f"{where}: xform")
        s = np.full(3, scale, dtype=np.float64) if np.ndim(scale) == 0 else V.vec3(scale, f"{where}: scale")
        if not (np.all(np.isfinite(s)) and np.all(s > 0.0)):
            raise ValueError(f"{where}: scale must be > 0 (one number or three), got {scale!r}")
        density = V.nonneg(density, f"{where}: density")
        v, f = check_mesh(vertices, indices, where)
        mesh = MeshGeometry(v * s, f)
        if body >= 0 and density > 0.0 and not (mesh.closed and mesh.volume > 0.0):
            raise ValueError(f"{where}: a mesh with density > 0 must be closed (every edge shared by two triangles in "
                             f"opposite directions) to have a volume; this one ({len(v)} vertices, {len(f)} "
                             "triangles) is open: pass density=0 and give the body a mass with add_body_inertia")
        shape = self._add_shape(SHAPE_MESH, X[:3], X[3:], s, body, 0.0, (ke, kd, kf, mu, time_constant,
                                                                          damping_ratio), where, contact)
        self.shape_meshes[shape] = mesh
        if body >= 0 and density > 0.0:
            R = G.quat_to_matrix(X[3:])
            self.body_inertials.setdefault(body, []).append(
                (density * mesh.volume, X[:3] + R @ mesh.center, R @ (density * mesh.inertia) @ R.T))
        return shape

    def _append_rigid(self, other, X, offset) -> None:
        first = self.shape_count
        super()._append_rigid(other, X, offset)
        for s, mesh in getattr(other, "shape_meshes", {}).items():
            self.shape_meshes[first + s] = mesh

    def _rigid_data(self) -> dict:
        data = super()._rigid_data()
        order: dict = {}
        shape_mesh = np.full(self.shape_count, -1, dtype=np.int32)
        for s, mesh in sorted(self.shape_meshes.items()):
            shape_mesh[s] = order.setdefault(id(mesh), (len(order), mesh))[0]
        data["meshes"] = (shape_mesh, [(m.vertices, m.triangles) for _, m in sorted(order.values(),
                                                                                   key=lambda e: e[0])])
        return data

