"""ModelBuilder: collect particles, springs, cloth, soft bodies, rigid bodies, shapes and joints, then
``finalize`` them into a :class:`~simkit.sim.model.Model` on a device.

Units are SI (meters, kilograms, seconds). Rotations are quaternions stored
``(x, y, z, w)``.

Many worlds: :meth:`ModelBuilder.add_builder` copies another builder's scene into this
one as a new world (with a placement), any number of times; worlds share one model, so
one launch per kernel steps them all, and contact never crosses from one world to
another. What is added directly to this builder belongs to world -1, shared by every
world (a common static obstacle); the ground is shared too.

Example::

    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True)
    i = b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    j = b.add_particle((0.0, 1.5, 0.0), (0.0, 0.0, 0.0), mass=0.0)   # pinned
    b.add_spring(i, j, ke=100.0, kd=0.1)
    model = b.finalize(device="cpu")
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import numpy as np

from ..core import device as D
from ..core import types as T
from ..kernels.broad_phase_options import check_broad_phase_options
from . import geometry as G
from . import validate as V
from .builder_heightfield import HeightfieldBuilder
from .builder_hull import HullBuilder
from .builder_mesh import MeshBuilder
from .builder_rigid import RigidBuilder
from .importers import ImporterMixin
from .cloth_contact import ClothContactBuilder
from .cloth_shapes import ClothShapeBuilder
from .columns import Column
from .contact_material import PARTICLE_PENALTY, contact_material
from .model import Model

_AXES = {"x": 0, "y": 1, "z": 2}

# The per-element attributes of particles and their elements, and the shape of one row.
_COLUMNS = {"particle_q": (3,), "particle_qd": (3,), "particle_mass": (), "particle_radius": (),
            "spring_indices": (2,), "spring_rest": (), "spring_ke": (), "spring_kd": (),
            "tri_indices": (3,), "tri_pose": (2, 2), "tri_area": (), "tri_k_mu": (), "tri_k_lambda": (),
            "tri_k_damp": (),
            "edge_indices": (4,), "edge_rest": (), "edge_ke": (), "edge_kd": (),
            "tet_indices": (4,), "tet_pose": (3, 3), "tet_volume": (), "tet_k_mu": (), "tet_k_lambda": (),
            "tet_k_damp": ()}


class ModelBuilder(HeightfieldBuilder, HullBuilder, MeshBuilder, RigidBuilder, ImporterMixin, ClothContactBuilder,
                   ClothShapeBuilder):
    """Collects the parts of a scene; ``finalize`` turns them into a :class:`Model`.

    ``gravity`` is the signed acceleration along ``up_axis`` ("x", "y" or "z");
    ``ground=True`` adds the infinite plane through the origin normal to the up axis.
    Contact parameters apply to every particle-ground and particle-shape contact, and to
    particle-particle contact when ``particle_contact=True`` (found through a hash grid each
    step). The ``rigid_contact_*`` values are the default material of body shapes (ground and
    shape-shape contacts of bodies); each shape may override them. Both are given one of two
    ways (the semi-implicit integrator's penalty contact; XPBD uses only ``mu``):

    - per unit mass (the default): ``contact_time_constant`` ``tc`` (s, default 0.01) and
      ``contact_damping_ratio`` ``zeta`` (default 1, critical): a contact of effective mass
      ``m`` is a spring ``m / tc^2``, a damper ``2 zeta m / tc`` and a friction slope
      ``m / tc``, so every mass sinks ``g tc^2`` (1 mm) under its weight and settles alike,
      within about ``10 tc`` at ``zeta = 1`` (0.01 kg to 100 kg dropped from 1 m: at rest
      0.1 s after landing). The semi-implicit integrator wants ``dt <= tc / 10`` (a stack
      of three boxes, 0.01 to 100 kg, stands at ``dt = 1e-3`` s with the default ``tc``);
    - as gains: ``contact_ke`` (N/m), ``contact_kd`` (N s/m), ``contact_kf`` (N s/m), the
      same for every mass; giving any of them (and no time constant) selects this way, and
      the others default to 1e4, 10, 100 (rigid: 1e5, 1e2, 1e2), as they always did.

    Given both, the gains add: ``ke + m / tc^2`` and so on (gains not given are then 0);
    ``contact_time_constant=0`` turns the per-mass part off.

    Example::

        b = ModelBuilder(contact_time_constant=0.02, contact_damping_ratio=0.3)  # bouncier
        b = ModelBuilder(contact_ke=1e4, contact_kd=10.0)                          # fixed gains

    Grids, meshes and worlds are computed over whole arrays and kept as arrays: the per-element
    attributes (``particle_q``, ``particle_mass``, ``tri_indices``, ``tri_pose``, ...) are
    :class:`~simkit.sim.columns.Column` objects, with ``len``, ``c[i]``, ``c[i] = row`` and
    ``c.array()``; the per-element methods (``add_particle``, ``add_spring``, ...) append one
    row each.

    ``contacts_enabled`` (an attribute, default True) is the model's
    :attr:`~simkit.sim.model.Model.contacts_enabled` at ``finalize``: False builds a model
    whose integrators compute no contact until it is turned back on.

    ``broad_phase`` (an attribute: ``"auto"``, the default, ``"static"`` or ``"sweep"``) and
    ``broad_phase_capacity`` (None or an int) choose how the penalty body contact finds its
    shape pairs (docs/geometry.md, "Broad phase"): ``b.broad_phase = "sweep"``.

    Rigid bodies, shapes and joints: see :class:`~simkit.sim.builder_rigid.RigidBuilder`.
    """

    def __init__(self, gravity: float = -9.81, up_axis: str = "y", ground: bool = True, *,
                 contact_ke: float | None = None, contact_kd: float | None = None, contact_kf: float | None = None,
                 contact_mu: float = 0.5, particle_contact: bool = False, rigid_contact_ke: float | None = None,
                 rigid_contact_kd: float | None = None, rigid_contact_kf: float | None = None,
                 rigid_contact_mu: float = 0.5, contact_time_constant: float | None = None,
                 contact_damping_ratio: float | None = None, rigid_contact_time_constant: float | None = None,
                 rigid_contact_damping_ratio: float | None = None):
        if up_axis not in _AXES:
            raise ValueError(f"ModelBuilder: up_axis must be 'x', 'y' or 'z', got {up_axis!r}")
        self.gravity = V.number(gravity, "ModelBuilder: gravity")
        self.up_axis = up_axis
        self.ground = bool(ground)
        self.particle_contact = bool(particle_contact)
        # the model's contacts_enabled at finalize (an MJCF <flag contact="disable"/> clears it)
        self.contacts_enabled = True
        # the penalty body contact's broad phase: "auto", "static" or "sweep", and the rows of
        # the sweep's per-step pair list (None: a default per shape); docs/geometry.md
        self.broad_phase = "auto"
        self.broad_phase_capacity = None
        self.contact = dict(contact_material("ModelBuilder", "contact_", contact_ke, contact_kd, contact_kf,
                                             contact_time_constant, contact_damping_ratio, PARTICLE_PENALTY),
                            mu=V.nonneg(contact_mu, "ModelBuilder: contact_mu"))
        # one Column per per-element attribute: per-element calls append rows, grids and
        # meshes add numpy blocks (no Python object per element)
        for name, shape in _COLUMNS.items():
            setattr(self, name, Column(shape, np.int32 if name.endswith("_indices") else np.float64))
        # one {kind: (start, count)} per world, in the order add_builder made them
        self.world_ranges: list = []
        self._init_rigid(rigid_contact_ke, rigid_contact_kd, rigid_contact_kf, rigid_contact_mu,
                         rigid_contact_time_constant, rigid_contact_damping_ratio)

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
    def edge_count(self) -> int:
        return len(self.edge_rest)

    @property
    def world_count(self) -> int:
        """The number of worlds :meth:`add_builder` made so far."""
        return len(self.world_ranges)

    def _counts(self) -> dict:
        return {"particle": self.particle_count, "spring": self.spring_count, "triangle": self.tri_count,
                "edge": self.edge_count, "tet": self.tet_count, "body": self.body_count, "shape": self.shape_count,
                "joint": self.joint_count}

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
        pos, vel = V.vec3(pos, "add_particle: pos"), V.vec3(vel, "add_particle: vel")
        mass, radius = V.nonneg(mass, "add_particle: mass"), V.nonneg(radius, "add_particle: radius")
        self.particle_q.append(pos)
        self.particle_qd.append(vel)
        self.particle_mass.append(mass)
        self.particle_radius.append(radius)
        return self.particle_count - 1

    def add_spring(self, i: int, j: int, ke: float, kd: float, rest_length: float | None = None) -> int:
        """Add a damped spring between particles ``i`` and ``j``; ``rest_length=None`` uses their
        current distance. Returns the spring's index (its slot in ``control.spring_activation``).

        While its two particles coincide the spring has no direction, so it exerts no force and
        passes no gradient: a spring between coincident particles, or one of rest length 0
        that pulls its particles together, stays finite.

        Example::

            b.add_spring(0, 1, ke=1e3, kd=1.0)
        """
        i, j = self._check_indices("add_spring", i=i, j=j)
        ke, kd = V.nonneg(ke, "add_spring: ke"), V.nonneg(kd, "add_spring: kd")
        if rest_length is None:
            rest_length = float(np.linalg.norm(self.particle_q[i] - self.particle_q[j]))
        rest_length = V.nonneg(rest_length, "add_spring: rest_length")
        self.spring_indices.append((i, j))
        self.spring_rest.append(rest_length)
        self.spring_ke.append(ke)
        self.spring_kd.append(kd)
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
        k_mu, k_lambda = V.nonneg(k_mu, "add_triangle: k_mu"), V.nonneg(k_lambda, "add_triangle: k_lambda")
        k_damp = V.nonneg(k_damp, "add_triangle: k_damp")
        pose, area = G.triangle_rest_pose(self.particle_q[i], self.particle_q[j], self.particle_q[k])
        if area < 1e-12:
            raise ValueError(f"add_triangle: triangle ({i}, {j}, {k}) is degenerate (rest area {area:.3g})")
        self.tri_indices.append((i, j, k))
        self.tri_pose.append(pose)
        self.tri_area.append(area)
        self.tri_k_mu.append(k_mu)
        self.tri_k_lambda.append(k_lambda)
        self.tri_k_damp.append(k_damp)
        return self.tri_count - 1

    def add_edge(self, o0: int, o1: int, v0: int, v1: int, ke: float = 1.0, kd: float = 0.0,
                 rest_angle: float | None = None) -> int:
        """Add a bending hinge over the edge ``v0-v1`` shared by triangles ``(o0, v0, v1)`` and
        ``(o1, v1, v0)``; ``rest_angle=None`` takes the current dihedral angle.

        Example::

            b.add_edge(2, 3, 0, 1, ke=0.1)
        """
        o0, o1, v0, v1 = self._check_indices("add_edge", o0=o0, o1=o1, v0=v0, v1=v1)
        ke, kd = V.nonneg(ke, "add_edge: ke"), V.nonneg(kd, "add_edge: kd")
        if rest_angle is None:
            q = self.particle_q
            rest_angle = G.dihedral_angle(q[o0], q[o1], q[v0], q[v1])
        # the hinge angle lives in (-pi, pi]
        rest_angle = V.within(rest_angle, -np.pi, np.pi, "add_edge: rest_angle")
        self.edge_indices.append((o0, o1, v0, v1))
        self.edge_rest.append(rest_angle)
        self.edge_ke.append(ke)
        self.edge_kd.append(kd)
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
        dim_x, dim_y = V.count(dim_x, "add_cloth_grid: dim_x"), V.count(dim_y, "add_cloth_grid: dim_y")
        if (problem := V.grid_size_problem({"dim_x": dim_x, "dim_y": dim_y}, self.particle_count)) is not None:
            raise ValueError(f"add_cloth_grid: {problem}")
        cell_x, cell_y = V.positive(cell_x, "add_cloth_grid: cell_x"), V.positive(cell_y, "add_cloth_grid: cell_y")
        origin, q, v = V.vec3(pos, "add_cloth_grid: pos"), V.quat(rot, "add_cloth_grid: rot"), V.vec3(vel, "add_cloth_grid: vel")
        mass, k_mu, k_lambda, k_damp, edge_ke, edge_kd, radius = (
            V.nonneg(value, f"add_cloth_grid: {name}") for name, value in (
                ("mass", mass), ("k_mu", k_mu), ("k_lambda", k_lambda), ("k_damp", k_damp), ("edge_ke", edge_ke),
                ("edge_kd", edge_kd), ("radius", radius)))
        with self._all_or_nothing():
            return self._cloth_grid(origin, q, v, dim_x, dim_y, cell_x, cell_y, mass, fix_left, fix_right, fix_top,
                                    fix_bottom, k_mu, k_lambda, k_damp, edge_ke, edge_kd, radius)

    def _cloth_grid(self, origin, q, v, dim_x, dim_y, cell_x, cell_y, mass, fix_left, fix_right, fix_top,
                    fix_bottom, k_mu, k_lambda, k_damp, edge_ke, edge_kd, radius) -> int:
        y, x = np.meshgrid(np.arange(dim_y + 1), np.arange(dim_x + 1), indexing="ij")
        pinned = ((fix_left & (x == 0)) | (fix_right & (x == dim_x)) | (fix_bottom & (y == 0)) |
                  (fix_top & (y == dim_y))).reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):       # what overflows is refused below
            local = np.stack([x * cell_x, y * cell_y, np.zeros(x.shape)], axis=-1).reshape(-1, 3)
            p = origin + G.quat_rotate(q, local)
        mass = np.where(pinned, 0.0, mass)
        start = self.particle_count
        self._check_particles("add_cloth_grid", start, p, mass)
        tris = G.grid_triangles(dim_x, dim_y)
        edges = G.grid_bending_edges(dim_x, dim_y)
        with np.errstate(over="ignore", invalid="ignore"):
            pose, area = G.triangle_rest_poses(p, tris)
            rest = G.dihedral_angles(p, edges)
        V.triangle_shapes("add_cloth_grid", tris, pose, area, start)
        V.finite_rows("add_cloth_grid", "hinge", edges, rest, start)
        self._add_particles(p, v, mass, radius)
        tris += start
        edges += start
        self._extend(len(tris), tri_indices=tris, tri_pose=pose, tri_area=area, tri_k_mu=k_mu,
                     tri_k_lambda=k_lambda, tri_k_damp=k_damp)
        self._extend(len(edges), edge_indices=edges, edge_rest=rest, edge_ke=edge_ke, edge_kd=edge_kd)
        return start

    def _check_particles(self, where: str, start: int, q: np.ndarray, mass: np.ndarray | None = None) -> None:
        """Refuse more particles than a model can index, and the first (numbered from ``start``)
        whose computed position (or mass, when given) is not finite."""
        self._check_room(where, len(q))
        for name, values in (("position", q), ("mass", mass)):
            if values is None:
                continue
            bad = np.flatnonzero(~np.isfinite(values.reshape(len(q), -1)).all(axis=1))
            if len(bad):
                raise ValueError(f"{where}: particle {bad[0] + start} gets a non-finite {name} "
                                 f"({values[bad[0]].tolist()}); the sizes given place it out of range")

    def _add_particles(self, q: np.ndarray, qd: np.ndarray, mass: np.ndarray, radius: float) -> None:
        """Append particles (their values checked)."""
        self._extend(len(q), particle_q=q, particle_qd=qd, particle_mass=mass, particle_radius=radius)

    def _check_room(self, where: str, count: int) -> None:
        """Particle indices are int32 in a model: refuse to number more than 2^31 - 1 particles."""
        if self.particle_count + count > np.iinfo(np.int32).max:
            raise ValueError(f"{where}: {count} more particles would make {self.particle_count + count}, more than "
                             f"a model can index ({np.iinfo(np.int32).max})")

    def _extend(self, count: int, **blocks: Any) -> None:
        """Append ``count`` rows to each named column: an array of rows this builder computed
        (kept, not copied), or one value for all of them (kept as a broadcast)."""
        for name, block in blocks.items():
            column = getattr(self, name)
            block = np.asarray(block, dtype=column.dtype)
            if block.shape != (count,) + column.shape:
                block = np.broadcast_to(block, (count,) + column.shape)
            column.extend(block, copy=False)

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
        k_mu, k_lambda = V.nonneg(k_mu, "add_tetrahedron: k_mu"), V.nonneg(k_lambda, "add_tetrahedron: k_lambda")
        k_damp = V.nonneg(k_damp, "add_tetrahedron: k_damp")
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
        self.tet_k_mu.append(k_mu)
        self.tet_k_lambda.append(k_lambda)
        self.tet_k_damp.append(k_damp)
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
        dims = [V.count(d, f"add_soft_grid: dim_{a}") for d, a in zip((dim_x, dim_y, dim_z), "xyz")]
        problem = V.grid_size_problem({f"dim_{a}": d for d, a in zip(dims, "xyz")}, self.particle_count)
        if problem is not None:
            raise ValueError(f"add_soft_grid: {problem}")
        cells = [V.positive(c, f"add_soft_grid: cell_{a}") for c, a in zip((cell_x, cell_y, cell_z), "xyz")]
        origin, q, v = V.vec3(pos, "add_soft_grid: pos"), V.quat(rot, "add_soft_grid: rot"), V.vec3(vel, "add_soft_grid: vel")
        density = V.positive(density, "add_soft_grid: density")
        k_mu, k_lambda, k_damp, radius = self._check_tet_materials("add_soft_grid", k_mu, k_lambda, k_damp, radius)
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
        with np.errstate(over="ignore", invalid="ignore"):       # what overflows is refused in _tet_body
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
        try:
            verts = np.asarray(vertices, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("add_soft_mesh: vertices must be an N x 3 array of numbers") from None
        if verts.ndim != 2 or verts.shape[1] != 3 or len(verts) < 4:
            raise ValueError(f"add_soft_mesh: vertices must be an N x 3 array with N >= 4, got shape {verts.shape}")
        if not np.all(np.isfinite(verts)):
            bad = int(np.argwhere(~np.isfinite(verts))[0, 0])
            raise ValueError(f"add_soft_mesh: vertices[{bad}] = {verts[bad].tolist()} is not finite")
        tets = np.asarray(tet_indices)
        if tets.ndim != 2 or tets.shape[1] != 4 or tets.dtype.kind not in "iu":
            raise ValueError(f"add_soft_mesh: tet_indices must be an M x 4 integer array, got shape {tets.shape} "
                             f"of {tets.dtype}")
        if tets.size and (tets.min() < 0 or tets.max() >= len(verts)):
            raise ValueError(f"add_soft_mesh: tet_indices reference vertex {int(tets.max())}, but there are "
                             f"{len(verts)} vertices")
        origin, q, v = V.vec3(pos, "add_soft_mesh: pos"), V.quat(rot, "add_soft_mesh: rot"), V.vec3(vel, "add_soft_mesh: vel")
        scale = V.positive(scale, "add_soft_mesh: scale")
        with np.errstate(over="ignore", invalid="ignore"):       # what overflows is refused in _tet_body
            world = origin + G.quat_rotate(q, verts * scale)
        density = V.positive(density, "add_soft_mesh: density")
        k_mu, k_lambda, k_damp, radius = self._check_tet_materials("add_soft_mesh", k_mu, k_lambda, k_damp, radius)
        return self._add_tet_body(world, tets, v, density, k_mu, k_lambda, k_damp, radius,
                                  np.zeros(len(verts), dtype=bool), "add_soft_mesh")

    @staticmethod
    def _check_tet_materials(where: str, k_mu, k_lambda, k_damp, radius) -> tuple:
        return tuple(V.nonneg(value, f"{where}: {name}") for name, value in (
            ("k_mu", k_mu), ("k_lambda", k_lambda), ("k_damp", k_damp), ("radius", radius)))

    @contextlib.contextmanager
    def _all_or_nothing(self) -> Iterator[None]:
        """Undo every append made inside the block when it raises: a refused composite add
        (a grid or mesh with a bad element) leaves the builder as it was."""
        lengths = {k: len(v) for k, v in vars(self).items() if isinstance(v, (list, Column))}
        try:
            yield
        except BaseException:
            for k, n in lengths.items():
                column = getattr(self, k)
                if isinstance(column, Column):
                    column.truncate(n)
                else:
                    del column[n:]
            raise

    def _add_tet_body(self, world, tets, vel, density, k_mu, k_lambda, k_damp, radius, pinned, where) -> int:
        with self._all_or_nothing():
            return self._tet_body(world, tets, vel, density, k_mu, k_lambda, k_damp, radius, pinned, where)

    def _tet_body(self, world, tets, vel, density, k_mu, k_lambda, k_damp, radius, pinned, where) -> int:
        start = self.particle_count
        self._check_particles(where, start, world)
        with np.errstate(over="ignore", invalid="ignore"):       # what overflows is refused below
            pose, volume = G.tet_rest_poses(world, tets)
            # Each tetrahedron's mass is split equally between its four corners (summed in tet order).
            share = np.repeat(density * np.abs(volume) / 4.0, 4)
        mass = np.where(pinned, 0.0, np.bincount(tets.reshape(-1), weights=share, minlength=len(world)))
        V.tet_volumes(where, tets, volume, start)
        self._check_particles(where, start, world, mass)
        # an inverted rest orientation is fixed by swapping the last two corners
        flip = np.flatnonzero(volume < 0.0)
        if len(flip):
            tets = tets.copy()
            tets[flip, 2], tets[flip, 3] = tets[flip, 3], tets[flip, 2].copy()
            pose[flip], volume[flip] = G.tet_rest_poses(world, tets[flip])
        V.finite_rows(where, "tetrahedron", tets, pose, start)
        self._add_particles(world, vel, mass, radius)
        self._extend(len(tets), tet_indices=tets + start, tet_pose=pose, tet_volume=volume, tet_k_mu=k_mu,
                     tet_k_lambda=k_lambda, tet_k_damp=k_damp)
        return start

    # -- worlds ---------------------------------------------------------------------------
    def add_builder(self, other: "ModelBuilder", xform: Any = None, world: int | None = None) -> int:
        """Copy everything ``other`` holds (particles, springs, triangles, bending edges,
        tetrahedra, bodies, shapes, joints) into this builder as a new world, placed by
        ``xform`` (an ``sk.transform``, a pair ``(p, q)`` or 7 numbers; None: as it is), and
        return the world's index (0 for the first call, then 1, 2, ...).

        Worlds are independent copies in one model: contact (particle-particle, particle-shape,
        shape-shape) never crosses between two worlds, so worlds may overlap in space, and
        joints never cross by construction. Things added directly to this builder, and those
        of a builder added with ``world=-1``, belong to world -1, shared by all worlds: they
        touch every world (a common static obstacle; the ground is always shared). Each
        world's things are contiguous in the model's arrays, in the order of ``other``; see
        :meth:`Model.world_range` and :meth:`State.world_view`.

        ``other`` must use the same ``up_axis`` and ``gravity`` as this builder and have no
        worlds of its own; the model-wide settings (``ground`` and its material,
        ``particle_contact`` and the particle contact parameters, the contact options and
        ``contacts_enabled``) are this builder's. The rest shapes of triangles,
        tetrahedra and hinges do not change under a placement; positions, velocities, body
        poses, static shapes and joint frames attached to the world are transformed. ``other``
        is only read, so one builder can be added many times.

        Example::

            ball = sk.sim.ModelBuilder()
            ball.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
            scene = sk.sim.ModelBuilder()
            for k in range(64):
                scene.add_builder(ball, xform=sk.transform((k * 0.5, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
            model = scene.finalize()          # model.world_count == 64
        """
        if not isinstance(other, ModelBuilder):
            raise TypeError(f"add_builder: other must be a simkit.sim.ModelBuilder, got {type(other).__name__}")
        if other is self:
            raise ValueError("add_builder: cannot add a builder to itself")
        if world is not None and (not isinstance(world, (int, np.integer)) or isinstance(world, bool) or world != -1):
            raise ValueError(f"add_builder: world must be None (a new world) or -1 (shared by all worlds), "
                             f"got {world!r}")
        if other.world_count:
            raise ValueError(f"add_builder: other has {other.world_count} worlds of its own; add the builder each "
                             "of them came from instead (worlds do not nest)")
        if other.up_axis != self.up_axis or other.gravity != self.gravity:
            raise ValueError(f"add_builder: other has up_axis={other.up_axis!r}, gravity={other.gravity}, this "
                             f"builder up_axis={self.up_axis!r}, gravity={self.gravity}: a model has one gravity, "
                             "so they must be the same")
        X = None if xform is None else V.xform(xform, "add_builder: xform")
        with self._all_or_nothing():
            return self._add_world(other, X, world)

    def _add_world(self, other: "ModelBuilder", X: np.ndarray | None, world: int | None) -> int:
        start = self._counts()
        self._append_particles(other, X, start["particle"])
        self._append_rigid(other, X, start["body"])
        if world is not None:
            return -1
        counts = other._counts()
        self.world_ranges.append({kind: (start[kind], counts[kind]) for kind in start})
        return self.world_count - 1

    def _append_particles(self, other: "ModelBuilder", X: np.ndarray | None, offset: int) -> None:
        """The particles and elements of ``other``, placed by ``X``, their indices shifted by ``offset``."""
        self._check_room("add_builder", other.particle_count)
        q, qd = other.particle_q.values(), other.particle_qd.values()
        if X is not None and len(q):
            q, qd = X[:3] + G.quat_rotate(X[3:], q), G.quat_rotate(X[3:], qd)
        self.particle_q.extend(q, copy=X is None)
        self.particle_qd.extend(qd, copy=X is None)
        for name in _COLUMNS:
            block = getattr(other, name).values()
            if name.endswith("_indices"):
                getattr(self, name).extend(block + offset, copy=False)
            elif name not in ("particle_q", "particle_qd"):
                getattr(self, name).extend(block)

    # -- finalize -----------------------------------------------------------------------
    def finalize(self, device: str | None = None, requires_grad: bool = False, dtype: Any = T.float32) -> Model:
        """Build the :class:`Model` on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``; None: the
        default device, ``sk.get_device()``); with ``requires_grad=True`` every float parameter
        array carries a gradient. ``dtype=sk.float64`` runs in double precision.

        Example::

            model = b.finalize(device="cpu", requires_grad=True)
        """
        device = D.require(device, "finalize(device)")
        if dtype not in (T.float32, T.float64):
            raise TypeError(f"finalize: dtype must be sk.float32 or sk.float64, got {dtype!r}")
        if self.particle_count == 0 and self.body_count == 0:
            raise ValueError("finalize: the builder has no particles and no bodies")
        if not isinstance(self.contacts_enabled, (bool, np.bool_)):
            raise TypeError(f"finalize: the builder's contacts_enabled must be a bool, got "
                            f"{type(self.contacts_enabled).__name__} {self.contacts_enabled!r}")
        check_broad_phase_options(self.broad_phase, self.broad_phase_capacity, "finalize")
        up = np.zeros(3)
        up[_AXES[self.up_axis]] = 1.0
        data = {k: v for k, v in vars(self).items() if isinstance(v, list)}
        data.update({name: getattr(self, name).values() for name in _COLUMNS})
        # the add_* methods check every number; this catches rows written in directly
        V.finite_arrays({k: v for k, v in data.items() if k != "world_ranges" and not k.endswith("_indices")},
                        "finalize")
        data.update(self._rigid_data())
        V.arrays_fit({k: v for k, v in data.items() if k != "world_ranges" and not k.endswith("_indices")}
                     | {"gravity": self.gravity} | {f"contact_{k}": v for k, v in self.contact.items()},
                     dtype, "finalize")
        data.update(gravity=up * self.gravity, up_vector=up, up_axis=self.up_axis, ground=self.ground,
                    particle_contact=self.particle_contact, contact=dict(self.contact),
                    contacts_enabled=self.contacts_enabled, broad_phase=self.broad_phase,
                    broad_phase_capacity=self.broad_phase_capacity, cloth_contact=self.cloth_contact,
                    cloth_shape_contact=self.cloth_shape_contact)
        return Model(data, device=device, requires_grad=requires_grad, dtype=dtype)
