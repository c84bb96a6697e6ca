"""``sk.Mesh``: a triangle mesh that kernels query by its id, with Warp's constructor and builtins.

A mesh holds the user's ``points`` (vec3), ``indices`` (int32, 3 per triangle) and optional
``velocities`` arrays, and a bounding volume hierarchy of its triangles built on the host
(:mod:`simkit.core.bvh`) and stored in arrays on the mesh's device. ``mesh.id`` is a uint64,
the address of a small descriptor (``sk::mesh_t`` of ``native/mesh.h``) on that device that
points at those arrays; a kernel takes it as a ``sk.uint64`` parameter and passes it to the
mesh builtins (``sk.mesh_query_point``, ``sk.mesh_query_ray``, ``sk.mesh_eval_position``, ...;
see ``docs/porting-from-warp.md``). After moving the points in place, ``mesh.refit()``
recomputes the boxes (the tree's topology is kept).

Barycentrics are Warp's: a query's ``(face, u, v)`` is the point ``u * p0 + v * p1 + (1 - u - v) * p2``
of the face's corners. Queries carry no gradient (their ``u``, ``v``, ``t`` and ``sign`` are
constants to the adjoint); ``mesh_eval_position`` and ``mesh_eval_velocity`` are differentiable
in ``u`` and ``v`` (not in the mesh's points).

Example::

    mesh = sk.Mesh(points=sk.array(verts, dtype=sk.vec3), indices=sk.array(tris.ravel(), dtype=sk.int32))

    @sk.kernel
    def distance(mesh: sk.uint64, p: sk.array(dtype=sk.vec3), out: sk.array(dtype=float)):
        i = sk.tid()
        q = sk.mesh_query_point(mesh, p[i], 1.0e6)
        if q.result:
            out[i] = q.sign * sk.length(p[i] - sk.mesh_eval_position(mesh, q.face, q.u, q.v))

    sk.launch(distance, n, inputs=[mesh.id, p, out])
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import array as A
from . import builtins as B
from . import types as T
from .bvh import build_bvh, refit_bvh
from .struct import struct


def _native(cls, ctype: str):
    """A struct type whose C++ definition is in a native header (``sk::<ctype>``), not generated."""
    cls._sk_ctype = f"sk::{ctype}"
    cls._sk_native = True
    B.NAMED_TYPES[cls.__name__] = cls
    return cls


@struct
class MeshQueryPoint:
    """The result of ``sk.mesh_query_point`` and its variants (Warp's ``MeshQueryPoint``).

    ``result``: a face lies strictly within ``max_dist``; ``sign``: < 0 inside the mesh, > 0
    outside (1 from ``mesh_query_point_no_sign``); ``face``: the closest face; ``u``, ``v``: the
    closest point's barycentrics (``mesh_eval_position(id, face, u, v)`` is the point).

    Example::

        q = sk.mesh_query_point(mesh, p, 1.0e6)
        if q.result:
            x = sk.mesh_eval_position(mesh, q.face, q.u, q.v)
    """
    result: T.bool_
    sign: T.float32
    face: T.int32
    u: T.float32
    v: T.float32


@struct
class MeshQueryRay:
    """The result of ``sk.mesh_query_ray`` (Warp's ``MeshQueryRay``).

    ``result``: a hit with ``0 <= t < max_t``; ``sign``: > 0 where the ray meets the front of the
    face (against its normal), < 0 the back (its size, as Warp's, is twice the area of the face
    projected along ``dir``, ``-dot(dir, cross(p1 - p0, p2 - p0)) / max|dir_i|``); ``face``;
    ``t``: the hit is ``start + t * dir``;
    ``u``, ``v``: its barycentrics; ``normal``: the face's unit normal.

    Example::

        r = sk.mesh_query_ray(mesh, start, dir, 1.0e6)
        if r.result:
            hit = start + r.t * dir
    """
    result: T.bool_
    sign: T.float32
    face: T.int32
    t: T.float32
    u: T.float32
    v: T.float32
    normal: T.vec3


_native(MeshQueryPoint, "mesh_query_point_t")
_native(MeshQueryRay, "mesh_query_ray_t")


class _Descriptor(ctypes.Structure):
    """The host image of ``sk::mesh_t`` (native/mesh.h): keep the two in the same order."""
    _fields_ = [(n, ctypes.c_void_p) for n in ("points", "velocities", "indices", "node_lo", "node_hi", "node_skip",
                                                "node_first", "node_count", "leaf_faces")] + [
        ("num_points", ctypes.c_int32), ("num_faces", ctypes.c_int32), ("num_nodes", ctypes.c_int32),
        ("avg_edge", ctypes.c_float)]


def _vec3_array(a, what: str, device=None) -> A.Array:
    if not isinstance(a, A.Array):
        raise TypeError(f"Mesh: {what} must be an sk.array of sk.vec3, got {type(a).__name__}")
    if a.dtype is not T.vec3 or a.ndim != 1:
        raise TypeError(f"Mesh: {what} must be a 1-D array of sk.vec3 (float32), got {a.ndim}-D array of "
                        f"{T.type_name(a.dtype)}")
    if device is not None and a.device != device:
        raise ValueError(f"Mesh: {what} is on {a.device}, the points on {device}")
    return a


class Mesh:
    """A triangle mesh for the kernel builtins ``sk.mesh_query_point`` & co. (Warp's ``wp.Mesh``).

    ``points``: a 1-D sk.array of ``sk.vec3``; ``indices``: a 1-D int32 array of 3 point indices
    per triangle (counterclockwise seen from outside, for the inside/outside signs);
    ``velocities``: optional, like ``points``, read by ``sk.mesh_eval_velocity``;
    ``support_winding_number``: accepted for Warp's signature (simkit's winding number is
    exact and needs no extra data). The mesh keeps references to the arrays, not copies.

    Example::

        mesh = sk.Mesh(points=sk.array(v, dtype=sk.vec3), indices=sk.array(f.ravel(), dtype=sk.int32))
        sk.launch(k, n, inputs=[mesh.id, ...])
        mesh.points.assign(moved); mesh.refit()
    """

    def __init__(self, points, indices, velocities=None, support_winding_number: bool = False, **kwargs):
        unknown = set(kwargs) - {"bvh_constructor", "bvh_leaf_size"}
        if unknown:
            raise TypeError(f"Mesh() got unexpected keyword argument(s) {', '.join(sorted(unknown))}"
                            + (" (grouped meshes are not supported)" if "groups" in unknown else ""))
        self._points = _vec3_array(points, "points")
        self.device = points.device
        if not isinstance(indices, A.Array):
            raise TypeError(f"Mesh: indices must be an sk.array of sk.int32, got {type(indices).__name__}")
        if indices.dtype is not T.int32 or indices.ndim != 1:
            raise TypeError(f"Mesh: indices must be a 1-D array of sk.int32 (3 per triangle), got {indices.ndim}-D "
                            f"array of {T.type_name(indices.dtype)}")
        if indices.device != self.device:
            raise ValueError(f"Mesh: indices are on {indices.device}, the points on {self.device}")
        if indices.size % 3 or indices.size == 0:
            raise ValueError(f"Mesh: indices has {indices.size} entries, not a positive multiple of 3 "
                             "(3 point indices per triangle)")
        tris = indices.numpy().reshape(-1, 3).astype(np.int64)
        n = len(points)
        bad = np.flatnonzero((tris < 0).any(axis=1) | (tris >= n).any(axis=1))
        if len(bad):
            raise ValueError(f"Mesh: triangle {bad[0]} has point indices {tris[bad[0]].tolist()} outside "
                             f"[0, {n}) ({len(bad)} such triangle(s); the mesh has {n} points)")
        self._indices = indices
        self._velocities = None if velocities is None else _vec3_array(velocities, "velocities", self.device)
        if self._velocities is not None and len(self._velocities) != n:
            raise ValueError(f"Mesh: velocities has {len(self._velocities)} entries, points {n}")
        self.support_winding_number = bool(support_winding_number)
        self._tris = tris
        verts = points.numpy().astype(np.float64)
        order, lo, hi, skip, first, count = build_bvh(verts, tris)
        self._tree = (order, skip, first, count)

        def ints(x):
            return A.array(np.ascontiguousarray(x, dtype=np.int32), dtype=T.int32, device=self.device)

        self._leaf_faces, self._skip, self._first, self._count = ints(order), ints(skip), ints(first), ints(count)
        self._lo = A.array(lo.astype(np.float32), dtype=T.vec3, device=self.device)
        self._hi = A.array(hi.astype(np.float32), dtype=T.vec3, device=self.device)
        self._avg_edge = self._mean_edge(verts)
        self._desc = None
        self._pack()

    def _mean_edge(self, verts) -> float:
        c = verts[self._tris]
        return float(np.linalg.norm(c - np.roll(c, 1, axis=1), axis=2).mean())

    def _pack(self):
        """Write the descriptor the id points to (on the mesh's device)."""
        d = _Descriptor()
        for name, a in (("points", self._points), ("velocities", self._velocities), ("indices", self._indices),
                        ("node_lo", self._lo), ("node_hi", self._hi), ("node_skip", self._skip),
                        ("node_first", self._first), ("node_count", self._count), ("leaf_faces", self._leaf_faces)):
            setattr(d, name, a.ptr if a is not None else None)
        d.num_points, d.num_faces, d.num_nodes = len(self._points), len(self._tris), len(self._skip)
        d.avg_edge = self._avg_edge
        words = np.frombuffer(bytes(d), dtype=np.uint64).copy()  # 8-byte aligned storage
        if self._desc is None:
            self._desc = A.array(words, dtype=T.uint64, device=self.device)
        else:
            self._desc.assign(words)

    @property
    def id(self) -> int:
        """The uint64 handle a kernel takes (``mesh: sk.uint64``) and passes to the mesh builtins.

        Example::

            sk.launch(k, n, inputs=[mesh.id, points])
        """
        return self._desc.ptr

    @property
    def points(self) -> A.Array:
        """The vertex positions (the array given, not a copy); call ``refit()`` after moving them.
        Assigning a new array of the same length also refits.

        Example::

            mesh.points.assign(new_points); mesh.refit()
        """
        return self._points

    @points.setter
    def points(self, value):
        value = _vec3_array(value, "points", self.device)
        if len(value) != len(self._points):
            raise ValueError(f"Mesh: new points have {len(value)} entries, the mesh {len(self._points)}")
        self._points = value
        self.refit()

    @property
    def indices(self) -> A.Array:
        """The triangles' point indices, 3 per triangle (the array given).

        Example::

            tris = mesh.indices.numpy().reshape(-1, 3)
        """
        return self._indices

    @property
    def velocities(self) -> A.Array | None:
        """The vertex velocities given, or None; read by ``sk.mesh_eval_velocity``.

        Example::

            mesh.velocities.assign(v)
        """
        return self._velocities

    @velocities.setter
    def velocities(self, value):
        if value is not None:
            value = _vec3_array(value, "velocities", self.device)
            if len(value) != len(self._points):
                raise ValueError(f"Mesh: velocities has {len(value)} entries, points {len(self._points)}")
        self._velocities = value
        self._pack()

    def refit(self) -> None:
        """Recompute the tree's boxes around the current points (after they moved).

        Example::

            mesh.points.assign(moved)
            mesh.refit()
        """
        order, skip, first, count = self._tree
        verts = self._points.numpy().astype(np.float64)
        lo, hi = refit_bvh(verts, self._tris[order], skip, first, count)
        self._lo.assign(lo.astype(np.float32))
        self._hi.assign(hi.astype(np.float32))
        self._avg_edge = self._mean_edge(verts)
        self._pack()

    def __repr__(self):
        return f"Mesh({len(self._points)} points, {len(self._tris)} triangles, device={self.device!r})"
