"""What the viewer draws, as plain arrays (pure numpy, no OpenGL): a list of
:class:`Drawable` per frame, built from a simulation (:class:`ModelDrawables`) or from a
recorded USD file (:class:`UsdDrawables`).

A drawable is triangles (shaded, per-vertex normals), points (drawn as shaded spheres of
per-point radius) or line segments, in its own frame, with a 4 x 4 matrix to the world.
Its ``key`` is stable from frame to frame; an array that did not change is the same object
and an array that changed is a new one, so the renderer uploads only what moved.

Example::

    source = ModelDrawables(model)
    for d in source.frame(state):
        print(d.key, d.primitive, len(d.positions))
    lo, hi = scene_bounds(source.frame(state))
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kernels.structs import SHAPE_PLANE
from ..sim.model import Model, State
from .geometry import (TriMesh, box_mesh, capsule_mesh, cone_mesh, cylinder_mesh, ground_mesh, shape_mesh,
                       sphere_mesh, transform_matrix, vertex_normals)
from .mesh import TRIANGLE_SHAPES, compact_vertices, mesh_shape_arrays, tet_surface_triangles

BACKGROUND = (0.11, 0.12, 0.15)            # the clear color of every frame
# The key light, fixed to the camera (view coordinates: up, to the left, towards the viewer).
LIGHT_VIEW = np.array([-0.35, 0.75, 0.55]) / np.linalg.norm([-0.35, 0.75, 0.55])
PARTICLE_COLOR = (0.95, 0.72, 0.22)
SPRING_COLOR = (0.80, 0.80, 0.82)
CLOTH_COLOR = (0.33, 0.55, 0.88)
SOFT_COLOR = (0.88, 0.42, 0.33)
SHAPE_COLOR = (0.62, 0.64, 0.68)
BODY_COLORS = ((0.90, 0.55, 0.20), (0.35, 0.75, 0.45), (0.60, 0.45, 0.85), (0.85, 0.35, 0.55),
               (0.30, 0.70, 0.80), (0.80, 0.75, 0.30))
PRIMITIVES = ("triangles", "points", "lines")


@dataclass
class Drawable:
    """One thing to draw: ``primitive`` is "triangles" (``indices`` K x 3 and ``normals``
    N x 3 needed), "points" (``radii`` N needed) or "lines" (consecutive pairs of
    ``positions``). ``positions`` (N x 3) and ``colors`` (N x 3, 0..1) are float32 in the
    drawable's frame; ``matrix`` (4 x 4, column vectors) carries that frame to the world.
    ``bounded`` is False for what automatic framing ignores (the ground).

    Example::

        Drawable("marker", "points", np.zeros((1, 3), np.float32), np.ones((1, 3), np.float32),
                 radii=np.full(1, 0.1, np.float32))
    """

    key: str
    primitive: str
    positions: np.ndarray
    colors: np.ndarray
    matrix: np.ndarray = field(default_factory=lambda: np.eye(4))
    normals: np.ndarray | None = None
    indices: np.ndarray | None = None
    radii: np.ndarray | None = None
    bounded: bool = True

    def __post_init__(self) -> None:
        if self.primitive not in PRIMITIVES:
            raise ValueError(f"Drawable {self.key!r}: primitive must be one of {PRIMITIVES}, got {self.primitive!r}")
        if self.primitive == "triangles" and (self.indices is None or self.normals is None):
            raise ValueError(f"Drawable {self.key!r}: triangles need indices and normals")
        if self.primitive == "points" and self.radii is None:
            raise ValueError(f"Drawable {self.key!r}: points need radii")

    def world_positions(self) -> np.ndarray:
        """``positions`` carried to the world by ``matrix`` (N x 3 float64)."""
        p = np.asarray(self.positions, dtype=np.float64).reshape(-1, 3)
        return p @ self.matrix[:3, :3].T + self.matrix[:3, 3]


def _colors(color: Any, count: int) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(color, dtype=np.float32), (count, 3)))


def mesh_drawable(key: str, mesh: TriMesh, color: Any, matrix: np.ndarray | None = None,
                  bounded: bool = True) -> Drawable:
    """A triangles drawable of ``mesh``, colored by the mesh's own colors or else ``color``.

    Example::

        ball = mesh_drawable("ball", sphere_mesh(0.5), (1, 0, 0), transform_matrix(pose))
    """
    colors = mesh.colors if mesh.colors is not None else _colors(color, len(mesh.positions))
    return Drawable(key, "triangles", mesh.positions, colors, np.eye(4) if matrix is None else matrix,
                    normals=mesh.normals, indices=mesh.triangles, bounded=bounded)


def scene_bounds(drawables: list[Drawable]) -> tuple[np.ndarray, np.ndarray]:
    """The world-space box ``(lo, hi)`` around every bounded drawable (points padded by their
    radii); ``lo > hi`` (infinities) when there is nothing to bound.

    Example::

        cam = Camera.framing(*scene_bounds(drawables), up_axis=model.up_axis)
    """
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for d in drawables:
        if not d.bounded or len(d.positions) == 0:
            continue
        p = d.world_positions()
        pad = 0.0 if d.radii is None else np.asarray(d.radii, dtype=np.float64).reshape(-1, 1)
        lo = np.minimum(lo, (p - pad).min(axis=0))
        hi = np.maximum(hi, (p + pad).max(axis=0))
    return lo, hi


class ModelDrawables:
    """Drawables of a :class:`~simkit.sim.Model` in a :class:`~simkit.sim.State`: particles
    outside any mesh as spheres of their radius, springs as lines, cloth triangles and the
    outward boundary of soft bodies as shaded meshes, static shapes, the shapes of each rigid
    body at ``state.body_q``, and a checkered ground when the model has one. Topology and
    shape meshes are built once; :meth:`frame` gathers positions from a state.

    Example::

        source = ModelDrawables(model)
        drawables = source.frame(model.state())
    """

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise TypeError(f"ModelDrawables: model must be a simkit.sim.Model, got {type(model).__name__}")
        self.model = model
        self.up_axis = model.up_axis
        rest_q = np.asarray(model.particle_q.numpy(), dtype=np.float64).reshape(-1, 3)
        radius = np.asarray(model.particles.radius.numpy(), dtype=np.float32).reshape(-1)
        tris = np.asarray(model.triangles.indices.numpy(), dtype=np.int64).reshape(-1, 3)
        tets = np.asarray(model.tets.indices.numpy(), dtype=np.int64).reshape(-1, 4)
        in_mesh = np.zeros(model.particle_count, dtype=bool)
        in_mesh[tris.ravel()] = True
        in_mesh[tets.ravel()] = True
        self._free = np.flatnonzero(~in_mesh)
        self._free_radii = np.ascontiguousarray(radius[self._free])
        self._free_colors = _colors(PARTICLE_COLOR, len(self._free))
        self._springs = np.asarray(model.springs.indices.numpy(), dtype=np.int64).reshape(-1)
        self._spring_colors = _colors(SPRING_COLOR, len(self._springs))
        self._meshes = []
        for key, faces, color in (("cloth", tris, CLOTH_COLOR),
                                  ("soft", tet_surface_triangles(tets, rest_q), SOFT_COLOR)):
            if len(faces):
                ids, local = compact_vertices(faces)
                self._meshes.append((key, ids, np.ascontiguousarray(local, dtype=np.uint32), _colors(color, len(ids))))

        kind = np.asarray(model.shapes.kind.numpy()).reshape(-1)
        xform = np.asarray(model.shapes.xform.numpy(), dtype=np.float64).reshape(-1, 7)
        params = np.asarray(model.shapes.params.numpy(), dtype=np.float64).reshape(-1, 3)
        body = np.asarray(model.shapes.body.numpy()).reshape(-1)
        self._static: list[Drawable] = []
        self._attached: list[tuple[int, np.ndarray, Drawable]] = []
        for i in range(model.shape_count):
            mesh = shape_mesh(int(kind[i]), params[i])
            if kind[i] in TRIANGLE_SHAPES:
                vertices, triangles = mesh_shape_arrays(model, i)
                mesh = TriMesh(np.ascontiguousarray(vertices, dtype=np.float32),
                               vertex_normals(vertices, triangles),
                               np.ascontiguousarray(triangles, dtype=np.uint32))
            if mesh is None:
                continue
            local = transform_matrix(xform[i])
            if body[i] < 0:
                # an infinite plane is left out of the camera's fit, as the ground is
                infinite = kind[i] == SHAPE_PLANE and params[i][0] <= 0.0
                self._static.append(mesh_drawable(f"shape_{i}", mesh, SHAPE_COLOR, local, bounded=not infinite))
            else:
                b = int(body[i])
                self._attached.append((b, local, mesh_drawable(f"body_{b}/shape_{i}", mesh,
                                                               BODY_COLORS[b % len(BODY_COLORS)])))
        if model.ground:
            reach = float(np.abs(rest_q).max(initial=0.0))
            for poses in (xform, np.asarray(model.body_q.numpy()).reshape(-1, 7)):
                reach = max(reach, float(np.abs(poses[:, :3]).max(initial=0.0)))
            ground = ground_mesh(self.up_axis, max(1.0, 2.0 * reach))     # the extent UsdExporter gives it
            self._static.insert(0, mesh_drawable("ground", ground, SHAPE_COLOR, bounded=False))

    def frame(self, state: State) -> list[Drawable]:
        """The drawables of ``state`` (a state of this model).

        Example::

            drawables = source.frame(state)
        """
        if not isinstance(state, State):
            raise TypeError(f"ModelDrawables.frame: state must be a simkit.sim.State, got {type(state).__name__}")
        if state.model is not self.model:
            raise ValueError("ModelDrawables.frame: state belongs to another model (use model.state() of this model)")
        q = np.asarray(state.particle_q.numpy(), dtype=np.float32).reshape(-1, 3)
        out = list(self._static)
        if len(self._free):
            out.append(Drawable("particles", "points", np.ascontiguousarray(q[self._free]), self._free_colors,
                                radii=self._free_radii))
        if len(self._springs):
            out.append(Drawable("springs", "lines", np.ascontiguousarray(q[self._springs]), self._spring_colors))
        for key, ids, local, colors in self._meshes:
            x = np.ascontiguousarray(q[ids])
            out.append(Drawable(key, "triangles", x, colors, normals=vertex_normals(x, local), indices=local))
        if self._attached:
            body_q = np.asarray(state.body_q.numpy(), dtype=np.float64).reshape(-1, 7)
            for b, local, d in self._attached:
                d.matrix = transform_matrix(body_q[b]) @ local
                out.append(d)
        return out


def _solid_types() -> tuple:
    """The USD schemas drawn as tessellated solids (Plane only where usd-core has it)."""
    from pxr import UsdGeom

    return tuple(t for t in (UsdGeom.Sphere, UsdGeom.Cube, UsdGeom.Capsule, UsdGeom.Cylinder, UsdGeom.Cone,
                             getattr(UsdGeom, "Plane", None)) if t is not None)


def _rotation_y_to(axis: str) -> np.ndarray:
    """The rotation carrying local +y onto ``axis`` (a quarter turn, or the identity)."""
    if axis == "X":
        return np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    if axis == "Z":
        return np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    return np.eye(3)


def _fan_triangles(counts: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Polygons given as USD face vertex counts and indices, split into triangle fans."""
    out, start = [], 0
    for n in counts:
        face = indices[start:start + n]
        out.extend((face[0], face[k], face[k + 1]) for k in range(1, n - 1))
        start += n
    return np.asarray(out, dtype=np.uint32).reshape(-1, 3)


class UsdDrawables:
    """Drawables of a USD file as :class:`~simkit.render.UsdExporter` writes it (and of
    other simple stages): Points as spheres of half their widths, BasisCurves as line
    segments, Meshes (polygons split into fans) shaded with per-vertex normals, and Sphere,
    Cube, Capsule, Cylinder, Cone and Plane prims (planes as square checkerboards); each under the
    time-sampled transforms of its Xform ancestors. Colors come from ``primvars:displayColor``
    when authored, else from the same palette as a live simulation. Other prim types and
    invisible prims are skipped.

    ``times`` are the time codes of the frames (every time sample of a point or transform
    attribute; the default time alone when nothing is sampled), ``fps`` the rate at which
    they play, ``up_axis`` the stage's up axis in lower case.

    Example::

        source = UsdDrawables("run.usda")
        drawables = source.frame(len(source) - 1)          # the last frame
    """

    def __init__(self, path: str | os.PathLike):
        from pxr import Usd, UsdGeom

        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"UsdDrawables: no such file {path!r}")
        stage = Usd.Stage.Open(path)
        if stage is None:
            raise ValueError(f"UsdDrawables: {path!r} is not a USD file pxr can open")
        self.path = path
        self.stage = stage
        self.up_axis = "z" if UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z else "y"
        self._items: list[tuple[Any, str, Any]] = []
        samples: set[float] = set()
        for prim in stage.Traverse():
            if prim.IsA(UsdGeom.Xformable):
                for op in UsdGeom.Xformable(prim).GetOrderedXformOps():
                    samples.update(op.GetAttr().GetTimeSamples())
            if prim.IsA(UsdGeom.PointBased):
                samples.update(UsdGeom.PointBased(prim).GetPointsAttr().GetTimeSamples())
            item = self._item(prim)
            if item is not None:
                self._items.append(item)
        self.times = [Usd.TimeCode(t) for t in sorted(samples)] or [Usd.TimeCode.Default()]
        spacing = float(np.median(np.diff(sorted(samples)))) if len(samples) > 1 else 1.0
        self.fps = float(stage.GetTimeCodesPerSecond()) / spacing

    def __len__(self) -> int:
        return len(self.times)

    @staticmethod
    def _default_color(prim: Any, fallback: tuple) -> tuple:
        for ancestor in prim.GetPath().GetPrefixes():
            name = ancestor.name
            if name.startswith("body_") and name[5:].isdigit():
                return BODY_COLORS[int(name[5:]) % len(BODY_COLORS)]
        name = prim.GetName().lower()
        if "cloth" in name:
            return CLOTH_COLOR
        if "soft" in name:
            return SOFT_COLOR
        return fallback

    def _item(self, prim: Any) -> tuple[Any, str, Any] | None:
        """What to keep of ``prim``: (prim, kind, static data), None for what is not drawn."""
        from pxr import UsdGeom

        if prim.IsA(UsdGeom.Points):
            kind, fallback = "points", PARTICLE_COLOR
        elif prim.IsA(UsdGeom.BasisCurves):
            kind, fallback = "curves", SPRING_COLOR
        elif prim.IsA(UsdGeom.Mesh):
            kind, fallback = "mesh", SHAPE_COLOR
        elif any(prim.IsA(t) for t in _solid_types()):
            kind, fallback = "solid", SHAPE_COLOR
        else:
            return None
        color = self._default_color(prim, fallback)
        display = UsdGeom.Gprim(prim).GetDisplayColorAttr().Get()
        if display is not None and len(display):
            color = tuple(float(c) for c in display[0])
        if kind == "mesh":
            mesh = UsdGeom.Mesh(prim)
            counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get() or [], dtype=np.int64)
            indices = np.asarray(mesh.GetFaceVertexIndicesAttr().Get() or [], dtype=np.int64)
            return prim, kind, (_fan_triangles(counts, indices), color)
        if kind == "curves":
            counts = np.asarray(UsdGeom.BasisCurves(prim).GetCurveVertexCountsAttr().Get() or [], dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            pairs = [s + np.stack([np.arange(n - 1), np.arange(1, n)], axis=1) for s, n in zip(starts, counts) if n > 1]
            return prim, kind, (np.concatenate(pairs).reshape(-1) if pairs else np.zeros(0, np.int64), color)
        if kind == "points":
            return prim, kind, color
        return prim, kind, self._solid(prim, color)

    def _solid(self, prim: Any, color: tuple) -> Drawable:
        from pxr import UsdGeom

        key = str(prim.GetPath())
        if prim.IsA(UsdGeom.Sphere):
            return mesh_drawable(key, sphere_mesh(float(UsdGeom.Sphere(prim).GetRadiusAttr().Get())), color)
        if prim.IsA(UsdGeom.Cube):
            return mesh_drawable(key, box_mesh([0.5 * float(UsdGeom.Cube(prim).GetSizeAttr().Get())] * 3), color)
        round_kinds = ((UsdGeom.Capsule, capsule_mesh), (UsdGeom.Cylinder, cylinder_mesh), (UsdGeom.Cone, cone_mesh))
        found = [(schema, make) for schema, make in round_kinds if prim.IsA(schema)]
        if found:
            schema, make = found[0]
            round_ = schema(prim)
            mesh = make(float(round_.GetRadiusAttr().Get()), 0.5 * float(round_.GetHeightAttr().Get()))
            turn = _rotation_y_to(str(round_.GetAxisAttr().Get()))
            mesh = TriMesh(np.ascontiguousarray(mesh.positions @ turn.T.astype(np.float32)),
                           np.ascontiguousarray(mesh.normals @ turn.T.astype(np.float32)), mesh.triangles)
            return mesh_drawable(key, mesh, color)
        plane = UsdGeom.Plane(prim)
        half = 0.5 * max(float(plane.GetWidthAttr().Get()), float(plane.GetLengthAttr().Get()), 1e-3)
        return mesh_drawable(key, ground_mesh(str(plane.GetAxisAttr().Get()).lower(), half), color, bounded=False)

    def frame(self, index: int) -> list[Drawable]:
        """The drawables at time code ``times[index]``.

        Example::

            first = source.frame(0)
        """
        from pxr import UsdGeom

        if not 0 <= index < len(self.times):
            raise IndexError(f"UsdDrawables.frame: frame {index} is out of range 0..{len(self.times) - 1}")
        time = self.times[index]
        cache = UsdGeom.XformCache(time)
        out = []
        for prim, kind, data in self._items:
            if UsdGeom.Imageable(prim).ComputeVisibility(time) == UsdGeom.Tokens.invisible:
                continue
            matrix = np.array(cache.GetLocalToWorldTransform(prim), dtype=np.float64).T
            key = str(prim.GetPath())
            if kind == "solid":
                data.matrix = matrix
                out.append(data)
                continue
            points = np.asarray(UsdGeom.PointBased(prim).GetPointsAttr().Get(time) or [], dtype=np.float32)
            points = np.ascontiguousarray(points.reshape(-1, 3))
            if kind == "points":
                out.append(Drawable(key, "points", points, _colors(data, len(points)), matrix,
                                    radii=self._radii(prim, time, len(points))))
            elif kind == "curves":
                pairs, color = data
                if len(pairs) and pairs.max() < len(points):
                    out.append(Drawable(key, "lines", np.ascontiguousarray(points[pairs]), _colors(color, len(pairs)),
                                        matrix))
            elif len(points):
                triangles, color = data
                triangles = triangles[(triangles < len(points)).all(axis=1)]
                out.append(Drawable(key, "triangles", points, _colors(color, len(points)), matrix,
                                    normals=vertex_normals(points, triangles), indices=triangles))
        return out

    @staticmethod
    def _radii(prim: Any, time: Any, count: int) -> np.ndarray:
        from pxr import UsdGeom

        widths = np.asarray(UsdGeom.Points(prim).GetWidthsAttr().Get(time) or [], dtype=np.float32).reshape(-1)
        if len(widths) == count:
            return np.ascontiguousarray(0.5 * widths)
        return np.full(count, 0.5 * float(widths[0]) if len(widths) else 0.02, dtype=np.float32)

