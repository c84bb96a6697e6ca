"""ModelBuilder: collect particles, springs, cloth, soft bodies and static shapes, then
``finalize`` them into a :class:`~simkit.sim.model.Model` on a device.

Units are SI (meters, kilograms, seconds). Rotations are quaternions stored
``(x, y, z, w)``.

Example::

    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True)
    i = b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    j = b.add_particle((0.0, 1.5, 0.0), (0.0, 0.0, 0.0), mass=0.0)   # pinned
    b.add_spring(i, j, ke=100.0, kd=0.1)
    model = b.finalize(device="cpu")
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import types as T
from ..kernels.structs import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_SPHERE
from . import geometry as G
from .model import Model

_AXES = {"x": 0, "y": 1, "z": 2}


def _vec3(value: Any, where: str) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{where} expects 3 finite numbers, got {value!r}")
    return v


def _quat(value: Any, where: str) -> np.ndarray:
    q = np.asarray(value, dtype=np.float64)
    if q.shape != (4,) or not np.all(np.isfinite(q)) or np.linalg.norm(q) < 1e-12:
        raise ValueError(f"{where} expects a quaternion (x, y, z, w), got {value!r}")
    return q / np.linalg.norm(q)


def _nonneg(value: Any, where: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{where} expects a number, got {type(value).__name__}") from None
    if not np.isfinite(v) or v < 0.0:
        raise ValueError(f"{where} must be a finite number >= 0, got {value!r}")
    return v


def _positive(value: Any, where: str) -> float:
    v = _nonneg(value, where)
    if v == 0.0:
        raise ValueError(f"{where} must be > 0, got {value!r}")
    return v


def _count(value: Any, where: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{where} must be an int >= 1, got {value!r}")
    return int(value)


class ModelBuilder:
    """Collects the parts of a scene; ``finalize`` turns them into a :class:`Model`.

    ``gravity`` is the signed acceleration along ``up_axis`` ("x", "y" or "z");
    ``ground=True`` adds the infinite plane through the origin normal to the up axis.
    Contact parameters (``contact_ke``, ``contact_kd``, ``contact_kf``, ``contact_mu``)
    apply to every particle-ground and particle-shape contact, and to particle-particle
    contact when ``particle_contact=True`` (found through a hash grid each step).
    """

    def __init__(self, gravity: float = -9.81, up_axis: str = "y", ground: bool = True, *,
                 contact_ke: float = 1.0e4, contact_kd: float = 10.0, contact_kf: float = 100.0,
                 contact_mu: float = 0.5, particle_contact: bool = False):
        if up_axis not in _AXES:
            raise ValueError(f"ModelBuilder: up_axis must be 'x', 'y' or 'z', got {up_axis!r}")
        try:
            self.gravity = float(gravity)
        except (TypeError, ValueError):
            raise TypeError(f"ModelBuilder: gravity expects a number, got {type(gravity).__name__}") from None
        self.up_axis = up_axis
        self.ground = bool(ground)
        self.particle_contact = bool(particle_contact)
        self.contact = {"ke": _nonneg(contact_ke, "ModelBuilder: contact_ke"),
                        "kd": _nonneg(contact_kd, "ModelBuilder: contact_kd"),
                        "kf": _nonneg(contact_kf, "ModelBuilder: contact_kf"),
                        "mu": _nonneg(contact_mu, "ModelBuilder: contact_mu")}
        self.particle_q: list = []
        self.particle_qd: list = []
        self.particle_mass: list = []
        self.particle_radius: list = []
        self.spring_indices: list = []
        self.spring_rest: list = []
        self.spring_ke: list = []
        self.spring_kd: list = []
        self.tri_indices: list = []
        self.tri_pose: list = []
        self.tri_area: list = []
        self.tri_k_mu: list = []
        self.tri_k_lambda: list = []
        self.tri_k_damp: list = []
        self.edge_indices: list = []
        self.edge_rest: list = []
        self.edge_ke: list = []
        self.edge_kd: list = []
        self.tet_indices: list = []
        self.tet_pose: list = []
        self.tet_volume: list = []
        self.tet_k_mu: list = []
        self.tet_k_lambda: list = []
        self.tet_k_damp: list = []
        self.shape_kind: list = []
        self.shape_xform: list = []
        self.shape_params: list = []

    # -- counts ---------------------------------------------------------------------
    @property
    def particle_count(self) -> int:
        return len(self.particle_mass)

    @property
    def spring_count(self) -> int:
        return len(self.spring_rest)

    @property
    def tri_count(self) -> int:
        return len(self.tri_area)

    @property
    def tet_count(self) -> int:
        return len(self.tet_volume)

    @property
    def shape_count(self) -> int:
        return len(self.shape_kind)

    def _check_indices(self, where: str, **idx: Any) -> list[int]:
        out = []
        n = self.particle_count
        for name, i in idx.items():
            if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
                raise TypeError(f"{where}: particle index '{name}' must be an int, got {type(i).__name__}")
            if not 0 <= i < n:
                raise ValueError(f"{where}: particle index {name}={i} is out of range (the builder has {n} particles)")
            out.append(int(i))
        if len(set(out)) != len(out):
            raise ValueError(f"{where}: particle indices must differ, got {tuple(out)}")
        return out

    # -- particles and springs --------------------------------------------------------
    def add_particle(self, pos: Sequence[float], vel: Sequence[float], mass: float, radius: float = 0.05) -> int:
        """Add a particle and return its index; ``mass=0`` makes it kinematic (pinned).

        Example::

            i = b.add_particle((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), mass=0.1, radius=0.02)
        """
        self.particle_q.append(_vec3(pos, "add_particle: pos"))
        self.particle_qd.append(_vec3(vel, "add_particle: vel"))
        self.particle_mass.append(_nonneg(mass, "add_particle: mass"))
        self.particle_radius.append(_nonneg(radius, "add_particle: radius"))
        return self.particle_count - 1

    def add_spring(self, i: int, j: int, ke: float, kd: float, rest_length: float | None = None) -> int:
        """Add a damped spring between particles ``i`` and ``j``; ``rest_length=None`` uses their
        current distance. Returns the spring's index (its slot in ``control.spring_activation``).

        Example::

            b.add_spring(0, 1, ke=1e3, kd=1.0)
        """
        i, j = self._check_indices("add_spring", i=i, j=j)
        if rest_length is None:
            rest_length = float(np.linalg.norm(self.particle_q[i] - self.particle_q[j]))
        self.spring_indices.append((i, j))
        self.spring_rest.append(_nonneg(rest_length, "add_spring: rest_length"))
        self.spring_ke.append(_nonneg(ke, "add_spring: ke"))
        self.spring_kd.append(_nonneg(kd, "add_spring: kd"))
        return self.spring_count - 1

    # -- cloth ------------------------------------------------------------------------
    def add_triangle(self, i: int, j: int, k: int, k_mu: float = 1.0e3, k_lambda: float = 1.0e3,
                     k_damp: float = 0.0) -> int:
        """Add a membrane triangle over particles ``i, j, k`` in their current (rest) positions,
        with Lame parameters ``k_mu``, ``k_lambda`` (N/m) and damping ``k_damp``.

        Example::

            b.add_triangle(0, 1, 2, k_mu=1e3, k_lambda=1e3, k_damp=1.0)
        """
        i, j, k = self._check_indices("add_triangle", i=i, j=j, k=k)
        pose, area = G.triangle_rest_pose(self.particle_q[i], self.particle_q[j], self.particle_q[k])
        if area < 1e-12:
            raise ValueError(f"add_triangle: triangle ({i}, {j}, {k}) is degenerate (rest area {area:.3g})")
        self.tri_indices.append((i, j, k))
        self.tri_pose.append(pose)
        self.tri_area.append(area)
        self.tri_k_mu.append(_nonneg(k_mu, "add_triangle: k_mu"))
        self.tri_k_lambda.append(_nonneg(k_lambda, "add_triangle: k_lambda"))
        self.tri_k_damp.append(_nonneg(k_damp, "add_triangle: k_damp"))
        return self.tri_count - 1

    def add_edge(self, o0: int, o1: int, v0: int, v1: int, ke: float = 1.0, kd: float = 0.0,
                 rest_angle: float | None = None) -> int:
        """Add a bending hinge over the edge ``v0-v1`` shared by triangles ``(o0, v0, v1)`` and
        ``(o1, v1, v0)``; ``rest_angle=None`` takes the current dihedral angle.

        Example::

            b.add_edge(2, 3, 0, 1, ke=0.1)
        """
        o0, o1, v0, v1 = self._check_indices("add_edge", o0=o0, o1=o1, v0=v0, v1=v1)
        if rest_angle is None:
            q = self.particle_q
            rest_angle = G.dihedral_angle(q[o0], q[o1], q[v0], q[v1])
        self.edge_indices.append((o0, o1, v0, v1))
        self.edge_rest.append(float(rest_angle))
        self.edge_ke.append(_nonneg(ke, "add_edge: ke"))
        self.edge_kd.append(_nonneg(kd, "add_edge: kd"))
        return len(self.edge_rest) - 1

    def add_cloth_grid(self, pos: Sequence[float], rot: Sequence[float], vel: Sequence[float], dim_x: int, dim_y: int,
                       cell_x: float, cell_y: float, mass: float, fix_left: bool = False, fix_right: bool = False,
                       fix_top: bool = False, fix_bottom: bool = False, *, k_mu: float = 1.0e3,
                       k_lambda: float = 1.0e3, k_damp: float = 0.0, edge_ke: float = 0.1, edge_kd: float = 0.0,
                       radius: float = 0.01) -> int:
        """Add a ``dim_x`` x ``dim_y``-cell cloth sheet in its local x-y plane, placed at ``pos``
        with rotation ``rot``; ``mass`` is the mass of each of its particles. Pinned borders have
        mass 0. Returns the index of the sheet's first particle (row-major, x fastest).

        Example::

            start = b.add_cloth_grid((0, 2, 0), (0, 0, 0, 1), (0, 0, 0), 32, 32, 0.05, 0.05,
                                     mass=0.01, fix_left=True)
        """
        dim_x, dim_y = _count(dim_x, "add_cloth_grid: dim_x"), _count(dim_y, "add_cloth_grid: dim_y")
        _positive(cell_x, "add_cloth_grid: cell_x"), _positive(cell_y, "add_cloth_grid: cell_y")
        origin, q, v = _vec3(pos, "add_cloth_grid: pos"), _quat(rot, "add_cloth_grid: rot"), _vec3(vel, "add_cloth_grid: vel")
        start = self.particle_count
        for y in range(dim_y + 1):
            for x in range(dim_x + 1):
                pinned = (fix_left and x == 0) or (fix_right and x == dim_x) or \
                         (fix_bottom and y == 0) or (fix_top and y == dim_y)
                p = origin + G.quat_rotate(q, np.array([x * cell_x, y * cell_y, 0.0]))
                self.add_particle(p, v, 0.0 if pinned else mass, radius)
        tris = G.grid_triangles(dim_x, dim_y, start)
        for i, j, k in tris:
            self.add_triangle(i, j, k, k_mu, k_lambda, k_damp)
        for o0, o1, v0, v1 in G.bending_edges(tris):
            self.add_edge(o0, o1, v0, v1, edge_ke, edge_kd)
        return start

    # -- soft bodies ------------------------------------------------------------------
    def add_tetrahedron(self, i: int, j: int, k: int, l: int, k_mu: float = 1.0e3, k_lambda: float = 1.0e3,
                        k_damp: float = 0.0) -> int:
        """Add a Neo-Hookean tetrahedron over particles ``i, j, k, l`` in their current (rest)
        positions, with Lame parameters ``k_mu``, ``k_lambda`` (Pa) and damping ``k_damp``.
        An inverted rest orientation is fixed by swapping ``k`` and ``l``.

        Example::

            b.add_tetrahedron(0, 1, 2, 3, k_mu=1e4, k_lambda=1e4)
        """
        i, j, k, l = self._check_indices("add_tetrahedron", i=i, j=j, k=k, l=l)
        q = self.particle_q
        pose, volume = G.tet_rest_pose(q[i], q[j], q[k], q[l])
        if abs(volume) < 1e-15:
            raise ValueError(f"add_tetrahedron: tetrahedron ({i}, {j}, {k}, {l}) is degenerate (rest volume {volume:.3g})")
        if volume < 0.0:
            k, l = l, k
            pose, volume = G.tet_rest_pose(q[i], q[j], q[k], q[l])
        self.tet_indices.append((i, j, k, l))
        self.tet_pose.append(pose)
        self.tet_volume.append(volume)
        self.tet_k_mu.append(_nonneg(k_mu, "add_tetrahedron: k_mu"))
        self.tet_k_lambda.append(_nonneg(k_lambda, "add_tetrahedron: k_lambda"))
        self.tet_k_damp.append(_nonneg(k_damp, "add_tetrahedron: k_damp"))
        return self.tet_count - 1

    def add_soft_grid(self, pos: Sequence[float], rot: Sequence[float], vel: Sequence[float], dim_x: int, dim_y: int,
                      dim_z: int, cell_x: float, cell_y: float, cell_z: float, density: float, k_mu: float,
                      k_lambda: float, k_damp: float, fix_left: bool = False, fix_right: bool = False,
                      fix_top: bool = False, fix_bottom: bool = False, *, radius: float = 0.01) -> int:
        """Add a block of ``dim_x * dim_y * dim_z`` hexahedral cells, each split into 5 tetrahedra;
        particle masses come from ``density`` (kg/m^3). ``fix_left/right`` pin the x-min/x-max
        faces, ``fix_bottom/top`` the y-min/y-max faces. Returns the first particle's index.

        Example::

            b.add_soft_grid((0, 1, 0), (0, 0, 0, 1), (0, 0, 0), 4, 4, 4, 0.1, 0.1, 0.1,
                            density=1000.0, k_mu=1e4, k_lambda=1e4, k_damp=0.0)
        """
        dims = [_count(d, f"add_soft_grid: dim_{a}") for d, a in zip((dim_x, dim_y, dim_z), "xyz")]
        cells = [_positive(c, f"add_soft_grid: cell_{a}") for c, a in zip((cell_x, cell_y, cell_z), "xyz")]
        origin, q, v = _vec3(pos, "add_soft_grid: pos"), _quat(rot, "add_soft_grid: rot"), _vec3(vel, "add_soft_grid: vel")
        _positive(density, "add_soft_grid: density")
        local = G.grid_points(*dims, *cells)
        pinned = np.zeros(len(local), dtype=bool)
        if fix_left:
            pinned |= local[:, 0] <= 0.0
        if fix_right:
            pinned |= local[:, 0] >= dims[0] * cells[0] - 1e-12
        if fix_bottom:
            pinned |= local[:, 1] <= 0.0
        if fix_top:
            pinned |= local[:, 1] >= dims[1] * cells[1] - 1e-12
        world = origin + G.quat_rotate(q, local)
        return self._add_tet_body(world, G.grid_tets(*dims), v, density, k_mu, k_lambda, k_damp, radius, pinned,
                                  "add_soft_grid")

    def add_soft_mesh(self, pos: Sequence[float], rot: Sequence[float], scale: float, vel: Sequence[float],
                      vertices: Any, tet_indices: Any, density: float, k_mu: float, k_lambda: float, k_damp: float,
                      *, radius: float = 0.01) -> int:
        """Add a tetrahedral mesh (``vertices`` N x 3, ``tet_indices`` M x 4, local coordinates
        scaled by ``scale``); masses from ``density``. Returns the first particle's index.

        Example::

            b.add_soft_mesh((0, 1, 0), (0, 0, 0, 1), 1.0, (0, 0, 0), verts, tets,
                            density=500.0, k_mu=1e4, k_lambda=1e4, k_damp=0.0)
        """
        verts = np.asarray(vertices, dtype=np.float64)
        if verts.ndim != 2 or verts.shape[1] != 3 or len(verts) < 4:
            raise ValueError(f"add_soft_mesh: vertices must be an N x 3 array with N >= 4, got shape {verts.shape}")
        tets = np.asarray(tet_indices)
        if tets.ndim != 2 or tets.shape[1] != 4 or tets.dtype.kind not in "iu":
            raise ValueError(f"add_soft_mesh: tet_indices must be an M x 4 integer array, got shape {tets.shape} "
                             f"of {tets.dtype}")
        if tets.size and (tets.min() < 0 or tets.max() >= len(verts)):
            raise ValueError(f"add_soft_mesh: tet_indices reference vertex {int(tets.max())}, but there are "
                             f"{len(verts)} vertices")
        origin, q, v = _vec3(pos, "add_soft_mesh: pos"), _quat(rot, "add_soft_mesh: rot"), _vec3(vel, "add_soft_mesh: vel")
        world = origin + G.quat_rotate(q, verts * _positive(scale, "add_soft_mesh: scale"))
        _positive(density, "add_soft_mesh: density")
        return self._add_tet_body(world, tets, v, density, k_mu, k_lambda, k_damp, radius,
                                  np.zeros(len(verts), dtype=bool), "add_soft_mesh")

    def _add_tet_body(self, world, tets, vel, density, k_mu, k_lambda, k_damp, radius, pinned, where) -> int:
        # Each tetrahedron's mass is split equally between its four corners.
        mass = np.zeros(len(world))
        for t in tets:
            _pose, vol = G.tet_rest_pose(*world[t])
            mass[t] += density * abs(vol) / 4.0
        start = self.particle_count
        for p, m, pin in zip(world, mass, pinned):
            self.add_particle(p, vel, 0.0 if pin else m, radius)
        for t in tets:
            i, j, k, l = (int(x) + start for x in t)
            try:
                self.add_tetrahedron(i, j, k, l, k_mu, k_lambda, k_damp)
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
        return start

    # -- static shapes ----------------------------------------------------------------
    def _add_shape(self, kind: int, pos, rot, params) -> int:
        self.shape_kind.append(kind)
        self.shape_xform.append(np.concatenate([pos, rot]))
        self.shape_params.append(params)
        return self.shape_count - 1

    def add_shape_sphere(self, pos: Sequence[float], radius: float) -> int:
        """Add a static sphere collider.

        Example::

            b.add_shape_sphere((0.0, 0.5, 0.0), radius=0.4)
        """
        return self._add_shape(SHAPE_SPHERE, _vec3(pos, "add_shape_sphere: pos"), np.array([0.0, 0.0, 0.0, 1.0]),
                               np.array([_positive(radius, "add_shape_sphere: radius"), 0.0, 0.0]))

    def add_shape_box(self, pos: Sequence[float], rot: Sequence[float], half_extents: Sequence[float]) -> int:
        """Add a static box collider with the given half extents along its local axes.

        Example::

            b.add_shape_box((0, 0.2, 0), (0, 0, 0, 1), (0.5, 0.2, 0.5))
        """
        h = _vec3(half_extents, "add_shape_box: half_extents")
        if np.any(h <= 0.0):
            raise ValueError(f"add_shape_box: half_extents must be > 0, got {half_extents!r}")
        return self._add_shape(SHAPE_BOX, _vec3(pos, "add_shape_box: pos"), _quat(rot, "add_shape_box: rot"), h)

    def add_shape_capsule(self, pos: Sequence[float], rot: Sequence[float], radius: float, half_height: float) -> int:
        """Add a static capsule collider: a segment of length ``2 * half_height`` along its local
        y axis, thickened by ``radius``.

        Example::

            b.add_shape_capsule((0, 0.3, 0), (0, 0, 0.7071068, 0.7071068), radius=0.1, half_height=0.5)
        """
        return self._add_shape(SHAPE_CAPSULE, _vec3(pos, "add_shape_capsule: pos"), _quat(rot, "add_shape_capsule: rot"),
                               np.array([_positive(radius, "add_shape_capsule: radius"),
                                         _nonneg(half_height, "add_shape_capsule: half_height"), 0.0]))

    # -- finalize -----------------------------------------------------------------------
    def finalize(self, device: str = "cpu", requires_grad: bool = False, dtype: Any = T.float32) -> Model:
        """Build the :class:`Model` on ``device``; with ``requires_grad=True`` every float
        parameter array carries a gradient. ``dtype=sk.float64`` runs in double precision.

        Example::

            model = b.finalize(device="cpu", requires_grad=True)
        """
        if dtype not in (T.float32, T.float64):
            raise TypeError(f"finalize: dtype must be sk.float32 or sk.float64, got {dtype!r}")
        if self.particle_count == 0:
            raise ValueError("finalize: the builder has no particles")
        up = np.zeros(3)
        up[_AXES[self.up_axis]] = 1.0
        data = {k: v for k, v in vars(self).items() if isinstance(v, list)}
        data.update(gravity=up * self.gravity, up_vector=up, up_axis=self.up_axis, ground=self.ground,
                    particle_contact=self.particle_contact, contact=dict(self.contact))
        return Model(data, device=device, requires_grad=requires_grad, dtype=dtype)
