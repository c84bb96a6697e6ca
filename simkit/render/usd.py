"""USD export: write a simulation as time-sampled points, meshes and transforms (usd-core).

Layout of the stage (every prim under the default prim ``/World``)::

    /World                      Xform; carries the up-axis rotation and ``scale``
        Particles               Points: particles that are not part of a cloth or soft mesh
        Springs                 BasisCurves (linear): one segment per spring
        Cloth                   Mesh: every cloth triangle
        SoftBodies              Mesh: the boundary triangles of every tetrahedral mesh
        Ground                  Plane through the origin, normal to the model's up axis
        Shapes/shape_<i>        Xform with the static shape's transform, holding ``geom``,
                                a Sphere, a Cube (scaled to the half extents), a Capsule,
                                a Cylinder, a Cone, a Sphere (scaled to the semi-axes
                                of an ellipsoid), or a Mesh (a mesh shape's triangles, a
                                convex hull's)
        Bodies/body_<b>         Xform with the body's time-sampled transform, holding the
            shape_<i>           shapes attached to it (their transform in the body frame)

Point positions are stored in the model's coordinates as float32, time-sampled at
``time * fps``; topology, widths and shape sizes are static. Every point-based prim also
holds the rest positions as its default value.

Example::

    with sk.render.UsdExporter("out.usdc", model, fps=60) as usd:
        for frame in range(120):
            sim.step(...)
            usd.write(state, frame / 60)
"""

from __future__ import annotations

import math
import os
import uuid
import warnings
from typing import Any

import numpy as np
from pxr import Gf, Usd, UsdGeom, Vt

from ..kernels.structs import (SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_PLANE,
                               SHAPE_SPHERE)
from .geometry import INFINITE_PLANE_HALF_SIZE
from ..sim.model import Model, State
from .mesh import TRIANGLE_SHAPES, compact_vertices, mesh_shape_arrays, tet_surface_triangles

EXTENSIONS = (".usda", ".usd", ".usdc")
_AXES = {"x": 0, "y": 1, "z": 2}
# A time code this close to an integer is snapped onto it, so that ``write(state, k / fps)``
# lands exactly on frame k despite rounding.
_SNAP = 1e-6


def _real(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where} expects a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{where} must be finite, got {value!r}")
    return v


def _vec3f_array(x: np.ndarray) -> Vt.Vec3fArray:
    return Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 3))


def _extent(lo: np.ndarray, hi: np.ndarray) -> Vt.Vec3fArray:
    return Vt.Vec3fArray([Gf.Vec3f(*map(float, lo)), Gf.Vec3f(*map(float, hi))])


def _quatf(q: np.ndarray) -> Gf.Quatf:
    """A ``Gf.Quatf`` from a quaternion stored ``(x, y, z, w)``."""
    return Gf.Quatf(float(q[3]), Gf.Vec3f(float(q[0]), float(q[1]), float(q[2])))


def up_axis_rotation(model_axis: str, stage_axis: str) -> np.ndarray:
    """The quaternion ``(x, y, z, w)`` of the quarter turn that carries ``model_axis`` onto
    ``stage_axis`` (about their cross product); the identity when they are the same.

    Example::

        up_axis_rotation("y", "z")   # 90 degrees about +x: y -> z, z -> -y
    """
    if model_axis == stage_axis:
        return np.array([0.0, 0.0, 0.0, 1.0])
    a, b = np.eye(3)[_AXES[model_axis]], np.eye(3)[_AXES[stage_axis]]
    return np.concatenate([np.cross(a, b) * math.sqrt(0.5), [math.sqrt(0.5)]])


class _PointSet:
    """A point-based prim whose points are particles ``ids`` (gathered from ``particle_q``);
    ``pad`` widens its extent (half the point or curve widths)."""

    def __init__(self, prim: UsdGeom.PointBased, ids: np.ndarray, pad: np.ndarray | float, rest_q: np.ndarray):
        self.prim = prim
        self.ids = ids
        self.pad = np.asarray(pad, dtype=np.float64).reshape(-1, 1) if np.ndim(pad) else float(pad)
        self.set(rest_q, Usd.TimeCode.Default())

    def set(self, particle_q: np.ndarray, code: Usd.TimeCode | float) -> None:
        x = particle_q[self.ids].reshape(-1, 3)
        self.prim.GetPointsAttr().Set(_vec3f_array(x), code)
        if len(x):
            self.prim.GetExtentAttr().Set(_extent((x - self.pad).min(axis=0), (x + self.pad).max(axis=0)), code)


def _define_shape(stage: Usd.Stage, path: str, kind: int, xform: np.ndarray, params: np.ndarray,
                  mesh: tuple | None = None) -> None:
    """An Xform at ``path`` with the transform ``xform`` (p, q) and the shape under it as
    ``path/geom``; capsules, cylinders and cones lie along their local y axis like the simulation's; a mesh shape
    is a UsdGeom.Mesh of ``mesh`` (vertices, triangles)."""
    frame = UsdGeom.Xform.Define(stage, path)
    frame.AddTranslateOp(UsdGeom.XformOp.PrecisionFloat).Set(Gf.Vec3f(*map(float, xform[:3])))
    frame.AddOrientOp().Set(_quatf(xform[3:7]))
    geom = f"{path}/geom"
    if kind == SHAPE_SPHERE:
        r = float(params[0])
        sphere = UsdGeom.Sphere.Define(stage, geom)
        sphere.GetRadiusAttr().Set(r)
        sphere.GetExtentAttr().Set(_extent([-r] * 3, [r] * 3))
    elif kind == SHAPE_BOX:
        cube = UsdGeom.Cube.Define(stage, geom)
        cube.GetSizeAttr().Set(2.0)
        cube.GetExtentAttr().Set(_extent([-1.0] * 3, [1.0] * 3))
        cube.AddScaleOp().Set(Gf.Vec3f(*map(float, params)))
    elif kind == SHAPE_CAPSULE:
        r, h = float(params[0]), float(params[1])
        capsule = UsdGeom.Capsule.Define(stage, geom)
        capsule.GetRadiusAttr().Set(r)
        capsule.GetHeightAttr().Set(2.0 * h)
        capsule.GetAxisAttr().Set(UsdGeom.Tokens.y)
        capsule.GetExtentAttr().Set(_extent([-r, -h - r, -r], [r, h + r, r]))
    elif kind == SHAPE_CYLINDER:
        r, h = float(params[0]), float(params[1])
        cylinder = UsdGeom.Cylinder.Define(stage, geom)
        cylinder.GetRadiusAttr().Set(r)
        cylinder.GetHeightAttr().Set(2.0 * h)
        cylinder.GetAxisAttr().Set(UsdGeom.Tokens.y)
        cylinder.GetExtentAttr().Set(_extent([-r, -h, -r], [r, h, r]))
    elif kind == SHAPE_ELLIPSOID:
        # a unit sphere scaled to the semi-axes, as a box is a scaled cube
        sphere = UsdGeom.Sphere.Define(stage, geom)
        sphere.GetRadiusAttr().Set(1.0)
        sphere.GetExtentAttr().Set(_extent([-1.0] * 3, [1.0] * 3))
        sphere.AddScaleOp().Set(Gf.Vec3f(*map(float, params)))
    elif kind == SHAPE_CONE:
        # USD's cone, like simkit's, has its base at -height/2 and its apex at +height/2
        r, h = float(params[0]), float(params[1])
        cone = UsdGeom.Cone.Define(stage, geom)
        cone.GetRadiusAttr().Set(r)
        cone.GetHeightAttr().Set(2.0 * h)
        cone.GetAxisAttr().Set(UsdGeom.Tokens.y)
        cone.GetExtentAttr().Set(_extent([-r, -h, -r], [r, h, r]))
    elif kind == SHAPE_PLANE:
        # USD's plane facing y spans x by its width and z by its length; an infinite one is
        # drawn 2 * INFINITE_PLANE_HALF_SIZE wide
        hx, hz = (float(params[0]), float(params[1])) if params[0] > 0.0 else (INFINITE_PLANE_HALF_SIZE,) * 2
        plane = UsdGeom.Plane.Define(stage, geom)
        plane.GetAxisAttr().Set(UsdGeom.Tokens.y)
        plane.GetWidthAttr().Set(2.0 * hx)
        plane.GetLengthAttr().Set(2.0 * hz)
        plane.GetExtentAttr().Set(_extent([-hx, 0.0, -hz], [hx, 0.0, hz]))
    elif kind in TRIANGLE_SHAPES and mesh is not None:
        vertices, triangles = mesh
        prim = UsdGeom.Mesh.Define(stage, geom)
        prim.GetPointsAttr().Set(_vec3f_array(vertices))
        prim.GetFaceVertexCountsAttr().Set(Vt.IntArray([3] * len(triangles)))
        prim.GetFaceVertexIndicesAttr().Set(Vt.IntArray([int(i) for i in triangles.reshape(-1)]))
        prim.GetExtentAttr().Set(_extent(vertices.min(axis=0), vertices.max(axis=0)))
    else:
        warnings.warn(f"UsdExporter: shape kind {kind} at {path} has no USD counterpart; only its transform "
                      f"is written", stacklevel=4)


class _Bodies:
    """One Xform per rigid body with a time-sampled translate and orient, the shapes attached to
    the body under it (their ``xform`` is in the body frame). ``model.body_q`` is the default
    value (what a reader sees with no frame written)."""

    def __init__(self, stage: Usd.Stage, root: str, model: Model, kind: np.ndarray, xform: np.ndarray,
                 params: np.ndarray, body: np.ndarray):
        self.count = int(model.body_count)
        self.ops = []
        UsdGeom.Scope.Define(stage, f"{root}/Bodies")
        for b in range(self.count):
            path = f"{root}/Bodies/body_{b}"
            frame = UsdGeom.Xform.Define(stage, path)
            self.ops.append((frame.AddTranslateOp(UsdGeom.XformOp.PrecisionFloat), frame.AddOrientOp()))
            for i in np.flatnonzero(body == b):
                _define_shape(stage, f"{path}/shape_{i}", int(kind[i]), xform[i], params[i],
                              mesh_shape_arrays(model, i) if kind[i] in TRIANGLE_SHAPES else None)
        self.set(np.asarray(model.body_q.numpy(), dtype=np.float64).reshape(-1, 7), Usd.TimeCode.Default())

    def set(self, body_q: np.ndarray, code: Usd.TimeCode | float) -> None:
        for (translate, orient), x in zip(self.ops, body_q):
            translate.Set(Gf.Vec3f(*map(float, x[:3])), code)
            orient.Set(_quatf(x[3:7]), code)


class UsdExporter:
    """Writes a simulation of ``model`` to the USD file ``path`` (``.usda`` text, ``.usd`` or
    ``.usdc`` binary), one time sample per :meth:`write`, at time code ``time * fps``.

    The stage lives in memory until :meth:`close`, which saves it to a temporary file next to
    ``path`` and renames it onto ``path``: a run that crashes, or never closes, leaves
    ``path`` as it was. Used as a context manager, the file is written when the block ends
    normally and discarded when it raises. The folder of ``path`` must exist (no folder is
    created, as with the command line's ``--usd``: a mistyped folder is a FileNotFoundError).

    Particles referenced by a cloth triangle or a tetrahedron are drawn only as that mesh's
    vertices; every other particle is a point of ``/World/Particles`` (width 2 * radius).
    Soft bodies are drawn as the outward-wound boundary of their tetrahedra.

    USD stages are Y- or Z-up. ``up_axis`` ("y" or "z") is the stage's; it defaults to the
    model's, or to "y" for an x-up model. When the two differ, ``/World`` carries the quarter
    turn that carries the model's up axis onto the stage's, and points stay in model
    coordinates. ``scale`` (> 0) is a uniform scale on ``/World``; ``metersPerUnit`` is 1.

    Example::

        exporter = sk.render.UsdExporter("drop.usda", model, fps=30)
        state, nxt = model.state(), model.state()
        for frame in range(30):
            exporter.write(state, frame / 30)
            for _ in range(10):
                integrator.step(model, state, nxt, None, 1.0 / 300)
                state, nxt = nxt, state
        exporter.close()
    """

    def __init__(self, path: str | os.PathLike, model: Model, fps: float = 60, *, up_axis: str | None = None,
                 scale: float = 1.0):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"UsdExporter: path must be a str or os.PathLike, got {type(path).__name__}")
        path = os.path.abspath(os.fspath(path))
        ext = os.path.splitext(path)[1].lower()
        if ext not in EXTENSIONS:
            raise ValueError(f"UsdExporter: path {path!r} has the unsupported extension {ext or '(none)'!r}; "
                             f"use one of {', '.join(EXTENSIONS)}")
        if os.path.isdir(path):
            raise ValueError(f"UsdExporter: path {path!r} is a directory")
        if not os.path.isdir(os.path.dirname(path)):
            raise FileNotFoundError(f"UsdExporter: the folder {os.path.dirname(path)} of {path!r} does not exist "
                                    "(no folder is created for an output, as the simkit command line does not; "
                                    "create it first)")
        if not isinstance(model, Model):
            raise TypeError(f"UsdExporter: model must be a simkit.sim.Model, got {type(model).__name__}")
        fps = _real(fps, "UsdExporter: fps")
        if fps <= 0.0:
            raise ValueError(f"UsdExporter: fps must be > 0, got {fps!r}")
        scale = _real(scale, "UsdExporter: scale")
        if scale <= 0.0:
            raise ValueError(f"UsdExporter: scale must be > 0, got {scale!r}")
        if up_axis is None:
            up_axis = model.up_axis if model.up_axis in ("y", "z") else "y"
        if not isinstance(up_axis, str) or up_axis.lower() not in ("y", "z"):
            raise ValueError(f"UsdExporter: up_axis must be 'y', 'z' or None (USD stages are Y- or Z-up; an x-up "
                             f"model is exported with /World rotated), got {up_axis!r}")

        self._path, self._ext, self._model, self._fps = path, ext, model, fps
        self._up_axis = up_axis.lower()
        self._frames = 0
        self._last_code: float | None = None
        self._closed = False
        self._stage = stage = Usd.Stage.CreateInMemory()
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y if self._up_axis == "y" else UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        stage.SetTimeCodesPerSecond(fps)
        stage.SetFramesPerSecond(fps)

        root = UsdGeom.Xform.Define(stage, "/World")
        stage.SetDefaultPrim(root.GetPrim())
        turn = up_axis_rotation(model.up_axis, self._up_axis)
        if turn[3] != 1.0:
            root.AddOrientOp().Set(_quatf(turn))
        if scale != 1.0:
            root.AddScaleOp().Set(Gf.Vec3f(scale, scale, scale))
        self._point_sets = self._define_particles(stage, model)
        self._define_ground(stage, model)
        self._bodies = self._define_shapes(stage, model)

    # -- building the stage ----------------------------------------------------------
    @staticmethod
    def _define_particles(stage: Usd.Stage, model: Model) -> list[_PointSet]:
        rest_q = np.asarray(model.particle_q.numpy(), dtype=np.float64).reshape(-1, 3)
        radius = np.asarray(model.particles.radius.numpy(), dtype=np.float64)
        tris = np.asarray(model.triangles.indices.numpy(), dtype=np.int64).reshape(-1, 3)
        tets = np.asarray(model.tets.indices.numpy(), dtype=np.int64).reshape(-1, 4)
        sets = []
        in_mesh = np.zeros(model.particle_count, dtype=bool)
        in_mesh[tris.ravel()] = True
        in_mesh[tets.ravel()] = True
        free = np.flatnonzero(~in_mesh)
        if len(free):
            points = UsdGeom.Points.Define(stage, "/World/Particles")
            points.GetWidthsAttr().Set(Vt.FloatArray.FromNumpy(np.ascontiguousarray(2.0 * radius[free], np.float32)))
            points.SetWidthsInterpolation(UsdGeom.Tokens.vertex)
            sets.append(_PointSet(points, free, radius[free], rest_q))
        if model.spring_count:
            springs = np.asarray(model.springs.indices.numpy(), dtype=np.int64).reshape(-1)
            width = 0.5 * float(np.mean(radius))
            curves = UsdGeom.BasisCurves.Define(stage, "/World/Springs")
            curves.GetTypeAttr().Set(UsdGeom.Tokens.linear)
            curves.GetCurveVertexCountsAttr().Set(Vt.IntArray([2] * model.spring_count))
            curves.GetWidthsAttr().Set(Vt.FloatArray([width]))
            curves.SetWidthsInterpolation(UsdGeom.Tokens.constant)
            sets.append(_PointSet(curves, springs, 0.5 * width, rest_q))
        for name, faces, double_sided in (("Cloth", tris, True),
                                          ("SoftBodies", tet_surface_triangles(tets, rest_q), False)):
            if len(faces) == 0:
                continue
            ids, local = compact_vertices(faces)
            mesh = UsdGeom.Mesh.Define(stage, f"/World/{name}")
            mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray([3] * len(local)))
            mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray.FromNumpy(np.ascontiguousarray(local.ravel(), np.int32)))
            mesh.GetSubdivisionSchemeAttr().Set(UsdGeom.Tokens.none)
            mesh.GetDoubleSidedAttr().Set(double_sided)
            sets.append(_PointSet(mesh, ids, 0.0, rest_q))
        return sets

    @staticmethod
    def _define_ground(stage: Usd.Stage, model: Model) -> None:
        """A square Plane through the origin, normal to the model's up axis, twice as wide as
        the farthest particle, shape or body origin is from the origin (at least 2 m)."""
        if not model.ground or not hasattr(UsdGeom, "Plane"):
            return
        reach = np.abs(np.asarray(model.particle_q.numpy(), dtype=np.float64)).max(initial=0.0)
        for poses in (model.shapes.xform, model.body_q):
            reach = max(reach, np.abs(np.asarray(poses.numpy())[..., :3]).max(initial=0.0))
        size = 2.0 * max(1.0, 2.0 * float(reach))
        plane = UsdGeom.Plane.Define(stage, "/World/Ground")
        plane.GetAxisAttr().Set(model.up_axis.upper())
        plane.GetWidthAttr().Set(size)
        plane.GetLengthAttr().Set(size)
        plane.GetDoubleSidedAttr().Set(True)
        hi = np.full(3, 0.5 * size)
        hi[_AXES[model.up_axis]] = 0.0
        plane.GetExtentAttr().Set(_extent(-hi, hi))

    @staticmethod
    def _define_shapes(stage: Usd.Stage, model: Model) -> _Bodies | None:
        if model.shape_count == 0 and model.body_count == 0:
            return None
        kind = np.asarray(model.shapes.kind.numpy()).reshape(-1)
        xform = np.asarray(model.shapes.xform.numpy(), dtype=np.float64).reshape(-1, 7)
        params = np.asarray(model.shapes.params.numpy(), dtype=np.float64).reshape(-1, 3)
        body = np.asarray(model.shapes.body.numpy()).reshape(-1)
        static = np.flatnonzero(body < 0)
        if len(static):
            UsdGeom.Scope.Define(stage, "/World/Shapes")
        for i in static:
            _define_shape(stage, f"/World/Shapes/shape_{i}", int(kind[i]), xform[i], params[i],
                          mesh_shape_arrays(model, i) if kind[i] in TRIANGLE_SHAPES else None)
        return _Bodies(stage, "/World", model, kind, xform, params, body) if model.body_count else None

    # -- public API --------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The absolute path the file is written to at :meth:`close`."""
        return self._path

    @property
    def fps(self) -> float:
        """Time codes (and frames) per second."""
        return self._fps

    @property
    def frame_count(self) -> int:
        """How many states :meth:`write` has recorded."""
        return self._frames

    @property
    def closed(self) -> bool:
        """True once the file is written (or discarded by a context manager that raised)."""
        return self._closed

    @property
    def stage(self) -> Usd.Stage:
        """The in-memory ``Usd.Stage``, for adding prims of your own before :meth:`close`.

        Example::

            UsdGeom.Xform.Define(exporter.stage, "/World/Camera")
        """
        self._check_open("stage")
        return self._stage

    def _check_open(self, where: str) -> None:
        if self._closed:
            raise ValueError(f"UsdExporter.{where}: the exporter of {self._path!r} is closed")

    def _time_code(self, time: Any) -> float:
        seconds = _real(time, "UsdExporter.write: time")
        code = seconds * self._fps
        if abs(code - round(code)) <= _SNAP:
            code = float(round(code))
        if self._last_code is not None and code <= self._last_code:
            raise ValueError(f"UsdExporter.write: time {seconds:g} s (time code {code:g}) is not after the previous "
                             f"frame (time code {self._last_code:g}); times must increase")
        return code

    def _check_finite(self, particle_q: np.ndarray, body_q: np.ndarray | None, code: float) -> None:
        """Refuse a state holding a NaN or infinite position or body pose: a viewer shows such a
        frame as nothing (or breaks on it), so the file would silently lose the motion."""
        where = f"frame {self._frames} (time {code / self._fps:g} s, time code {code:g})"
        rows = np.asarray(particle_q, dtype=np.float64).reshape(-1, 3)
        bad = np.flatnonzero(~np.isfinite(rows).all(axis=1))
        if len(bad):
            i = int(bad[0])
            prim = next((str(ps.prim.GetPath()) for ps in self._point_sets if np.any(ps.ids == i)), "no prim")
            raise ValueError(f"UsdExporter.write: {where}: particle {i} (of {prim}) has a non-finite position "
                             f"{rows[i].tolist()} ({len(bad)} particle(s) in all); the frame is not written (the "
                             "simulation diverged: lower dt or soften the stiffness)")
        if body_q is not None:
            bad = np.flatnonzero(~np.isfinite(body_q).all(axis=1))
            if len(bad):
                b = int(bad[0])
                raise ValueError(f"UsdExporter.write: {where}: body {b} (/World/Bodies/body_{b}) has a non-finite "
                                 f"pose {body_q[b].tolist()} ({len(bad)} body(ies) in all); the frame is not written "
                                 "(the simulation diverged: lower dt or soften the stiffness)")

    def write(self, state: State, time: float) -> None:
        """Record ``state`` at ``time`` seconds (time code ``time * fps``); times must increase.
        A state holding a NaN or infinite position or body pose is refused (a ValueError naming
        the frame, time and prim); the frames written before it stay and :meth:`close` saves them.

        Example::

            exporter.write(state, step * dt)
        """
        self._check_open("write")
        if not isinstance(state, State):
            raise TypeError(f"UsdExporter.write: state must be a simkit.sim.State, got {type(state).__name__}")
        if state.model is not self._model:
            raise ValueError("UsdExporter.write: state was made by another model than the exporter's "
                             "(use model.state() of the exported model)")
        code = self._time_code(time)
        bodies = self._bodies
        particle_q = np.asarray(state.particle_q.numpy())
        body_q = np.asarray(state.body_q.numpy(), dtype=np.float64).reshape(-1, 7) if bodies is not None else None
        self._check_finite(particle_q, body_q, code)
        for point_set in self._point_sets:
            point_set.set(particle_q, code)
        if bodies is not None:
            bodies.set(body_q, code)
        if self._last_code is None:
            self._stage.SetStartTimeCode(code)
        self._stage.SetEndTimeCode(code)
        self._last_code = code
        self._frames += 1

    def close(self) -> None:
        """Save the stage to a temporary file beside ``path`` and rename it onto ``path``.
        Closing twice does nothing. If saving fails, ``path`` is left as it was, the temporary
        file is removed and the exporter stays open, so ``close`` can be retried.

        Example::

            exporter.close()
        """
        if self._closed:
            return
        folder, name = os.path.split(self._path)
        tmp = os.path.join(folder, f".{name}.{uuid.uuid4().hex[:12]}.tmp{self._ext}")
        try:
            if not self._stage.GetRootLayer().Export(tmp):
                raise OSError(f"UsdExporter.close: could not write {tmp!r}")
            os.replace(tmp, self._path)
        except Exception as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            if isinstance(e, OSError):
                raise
            raise OSError(f"UsdExporter.close: could not write {self._path!r}: {e}") from e
        self._discard()

    def _discard(self) -> None:
        self._closed = True
        self._stage = None
        self._point_sets = []
        self._bodies = None

    def __enter__(self) -> "UsdExporter":
        self._check_open("__enter__")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self._discard()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"UsdExporter({self._path!r}, fps={self._fps:g}, frames={self._frames}, {state})"
