"""The rigid part of :class:`~simkit.sim.ModelBuilder`: bodies and collision shapes; its joint
methods are in simkit/sim/builder_joints.py.

A body is a free 6-DOF rigid body whose mass, center of mass and inertia come from
the shapes attached to it (``density`` in kg/m^3). A shape with ``body=-1`` is static.
Joints connect a parent body (``-1``: the world) to a child body.

Example::

    b = sk.sim.ModelBuilder()
    link = b.add_body(origin=sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, -0.25, 0.0), (0.0, 0.0, 0.0, 1.0), (0.05, 0.25, 0.05), body=link)
    b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0))
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..kernels.structs import (SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_PLANE,
                               SHAPE_SPHERE)
from . import geometry as G
from . import validate as V
from .builder_joints import IDENTITY_XFORM, JointBuilder, transform_multiply
from .contact_material import RIGID_PENALTY, contact_material
from .contact_params import CONE_KINDS, CONTACT_ROW_WIDTH, contact_params, contact_row
from .mass import body_mass_properties, combine_mass_properties

# the contact material of a shape, in the order of ``shape_material``'s rows
SHAPE_MATERIAL = ("ke", "kd", "kf", "mu", "time_constant", "damping_ratio")


class RigidBuilder(JointBuilder):
    """Bodies, shapes and joints; mixed into :class:`~simkit.sim.ModelBuilder`."""

    def _init_rigid(self, ke, kd, kf, mu, time_constant, damping_ratio) -> None:
        self.rigid_contact = dict(contact_material("ModelBuilder", "rigid_contact_", ke, kd, kf, time_constant,
                                                   damping_ratio, RIGID_PENALTY),
                                  mu=V.nonneg(mu, "ModelBuilder: rigid_contact_mu"))
        self.body_q: list = []
        self.body_qd: list = []
        self.body_armature: list = []
        self.body_inertials: dict = {}           # body -> [(mass, com, inertia)], see add_body_inertia
        self.shape_kind: list = []
        self.shape_body: list = []
        self.shape_xform: list = []
        self.shape_params: list = []
        self.shape_density: list = []
        self.shape_material: list = []
        self.shape_collision: list = []          # [group, mask] bitmasks, see set_shape_collision
        self.shape_contact: list = []            # MuJoCo's contact parameters, rows of contact_params.contact_row
        # the ground's MuJoCo contact parameters; its mu is the shapes' default, so that a default
        # shape and the ground mix (max) to the mu the penalty ground contact uses
        self.ground_material = dict(contact_params("ModelBuilder", {}), mu=self.rigid_contact["mu"])
        self.contact_cone = "pyramidal"
        self.impratio = 1.0
        self.joint_kind: list = []
        self.joint_parent: list = []
        self.joint_child: list = []
        self.joint_parent_xform: list = []
        self.joint_child_xform: list = []
        self.joint_axis: list = []
        self.joint_axis2: list = []
        self.joint_limits: list = []
        self.joint_gains: list = []
        self.joint_dynamics: list = []           # [armature, effort_limit, friction] (generalized coordinates)
        self.joint_limits2: list = []            # [lower, upper] of a universal joint's second angle
        # MuJoCo's soft limit [solref (2), solimp (5), margin] (Featherstone(contact="constraint"))
        self.joint_limit_soft: list = []
        self.joint_articulation: list = []       # -1: not in an articulation
        self.articulation_start: list = []       # the first joint of each articulation
        self._articulation_open = False

    @property
    def body_count(self) -> int:
        return len(self.body_q)

    @property
    def shape_count(self) -> int:
        return len(self.shape_kind)

    @property
    def joint_count(self) -> int:
        return len(self.joint_kind)

    @property
    def articulation_count(self) -> int:
        return len(self.articulation_start)

    # -- bodies -------------------------------------------------------------------------
    def add_body(self, origin: Any = None, armature: float = 0.0, *, velocity: Sequence[float] = (0.0, 0.0, 0.0),
                 angular_velocity: Sequence[float] = (0.0, 0.0, 0.0)) -> int:
        """Add a free rigid body with its origin at the world transform ``origin`` (default:
        identity) and return its index. Its mass, center of mass and inertia are computed at
        ``finalize`` from the shapes attached to it; ``armature`` (kg m^2) is added to each
        diagonal entry of the inertia. ``velocity`` is the initial velocity of the center of
        mass and ``angular_velocity`` the initial angular velocity, both in world coordinates.
        A body without massive shapes is kinematic: it keeps its initial velocity.

        Example::

            box = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)), velocity=(1.0, 0.0, 0.0))
            b.add_shape_box((0, 0, 0), (0, 0, 0, 1), (0.1, 0.1, 0.1), body=box, density=500.0)
        """
        X = IDENTITY_XFORM.copy() if origin is None else V.xform(origin, "add_body: origin")
        w = V.vec3(angular_velocity, "add_body: angular_velocity")
        v = V.vec3(velocity, "add_body: velocity")
        armature = V.nonneg(armature, "add_body: armature")
        self.body_q.append(X)
        self.body_qd.append(np.concatenate([w, v]))
        self.body_armature.append(armature)
        return self.body_count - 1

    def add_body_inertia(self, body: int, mass: float, com: Sequence[float] = (0.0, 0.0, 0.0),
                         inertia: Any = None) -> None:
        """Add an explicit mass to ``body``: ``mass`` (kg) centered at ``com`` (body frame) with the
        3x3 ``inertia`` tensor about ``com`` in body axes (default: a point mass). It adds to
        the mass of the body's shapes (a body whose mass comes only from here takes shapes of
        ``density=0`` as colliders); the importers use it for the inertials of robot files.

        Example::

            link = b.add_body()
            b.add_body_inertia(link, 2.0, com=(0.0, -0.25, 0.0), inertia=np.diag([0.01, 0.002, 0.01]))
        """
        body = V.index(body, self.body_count, "body", "bodies", "add_body_inertia")
        mass = V.nonneg(mass, "add_body_inertia: mass")
        com = V.vec3(com, "add_body_inertia: com")
        I = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=np.float64)
        if I.shape != (3, 3) or not np.all(np.isfinite(I)) or not np.allclose(I, I.T, rtol=0.0, atol=1e-12 * (
                1.0 + np.abs(I).max())) or np.linalg.eigvalsh(0.5 * (I + I.T)).min() < -1e-12 * (1.0 + np.abs(I).max()):
            raise ValueError(f"add_body_inertia: inertia must be a finite symmetric positive semidefinite 3x3 matrix, "
                             f"got {inertia!r}")
        self.body_inertials.setdefault(body, []).append((mass, com, 0.5 * (I + I.T)))

    # -- shapes -------------------------------------------------------------------------
    def _add_shape(self, kind: int, pos, rot, params, body, density, material, where: str,
                   contact: dict | None = None) -> int:
        body = V.index(body, self.body_count, "body", "bodies", where, allow_world=True)
        density = V.nonneg(density, f"{where}: density")
        mujoco = contact_params(where, contact or {})
        ke, kd, kf, mu, time_constant, damping_ratio = material
        # gains left out come from the builder's when it has gains, as before per-mass materials
        penalty = RIGID_PENALTY if self.rigid_contact["time_constant"] > 0.0 else self.rigid_contact
        m = contact_material(where, "", ke, kd, kf, time_constant, damping_ratio, penalty, self.rigid_contact)
        m["mu"] = self.rigid_contact["mu"] if mu is None else V.nonneg(mu, f"{where}: mu")
        mat = [m[name] for name in SHAPE_MATERIAL]
        self.shape_kind.append(kind)
        self.shape_body.append(body)
        self.shape_xform.append(np.concatenate([pos, rot]))
        self.shape_params.append(params)
        self.shape_density.append(density)
        self.shape_material.append(mat)
        self.shape_collision.append([mujoco["contype"], mujoco["conaffinity"]])
        self.shape_contact.append(contact_row(mujoco))
        return self.shape_count - 1

    def set_shape_contact(self, shape: int, *, mu: float | None = None, **contact: Any) -> None:
        """Change MuJoCo's contact parameters of ``shape`` (keyword arguments as for
        :meth:`add_shape_sphere`: ``mu``, ``torsional_mu``, ``rolling_mu``, ``condim``,
        ``solref``, ``solimp``, ``margin``, ``gap``, ``contype``, ``conaffinity``); those not
        given keep their values. Nothing changes when one is refused.

        Example::

            b.set_shape_contact(foot, mu=1.0, condim=4, solref=(0.01, 1.0))
        """
        where = "set_shape_contact"
        shape = V.index(shape, self.shape_count, "shape", "shapes", where)
        row = self.shape_contact[shape]
        current = {"torsional_mu": row[0], "rolling_mu": row[1], "condim": int(row[2]), "solref": tuple(row[3:5]),
                   "solimp": tuple(row[5:10]), "margin": row[10], "gap": row[11],
                   "contype": int(self.shape_collision[shape][0]), "conaffinity": int(self.shape_collision[shape][1])}
        params = contact_params(where, contact, current)
        friction = None if mu is None else V.nonneg(mu, f"{where}: mu")
        if friction is not None:
            self.shape_material[shape][SHAPE_MATERIAL.index("mu")] = friction
        self.shape_contact[shape] = contact_row(params)
        self.shape_collision[shape] = [params["contype"], params["conaffinity"]]

    def set_ground_material(self, *, mu: float | None = None, torsional_mu: float | None = None,
                            rolling_mu: float | None = None, condim: int | None = None, solref: Any = None,
                            solimp: Any = None, margin: float | None = None, gap: float | None = None,
                            contype: int | None = None, conaffinity: int | None = None) -> None:
        """Set MuJoCo's contact parameters of the ground plane (``ModelBuilder(ground=True)``);
        those not given keep their values (at first MuJoCo's defaults, and ``mu`` the builder's
        ``rigid_contact_mu``). They mean what they mean for a shape (see
        :meth:`add_shape_sphere` and :mod:`simkit.sim.contact_params`) and are mixed with the
        shape's for a shape-ground contact by the constraint-based contact solve
        (:mod:`simkit.kernels.contact_params`). The penalty ground contact of
        ``SemiImplicitEuler`` and ``XPBD`` uses the shape's own material, and of these only
        ``contype`` and ``conaffinity``: a shape touches the ground when ``contype_shape &
        conaffinity_ground`` or ``contype_ground & conaffinity_shape`` is nonzero. Particles
        touch the ground whatever the masks. On the model: ``model.contact.ground_mu``,
        ``ground_torsional_mu``, ``ground_rolling_mu``, ``ground_condim``, ``ground_solref``,
        ``ground_solimp``, ``ground_margin``, ``ground_gap``, ``ground_contype``,
        ``ground_conaffinity`` (one-element arrays).

        Example::

            b.set_ground_material(mu=1.0, condim=3, solref=(0.02, 1.0), conaffinity=0)
        """
        where = "set_ground_material"
        given = {"torsional_mu": torsional_mu, "rolling_mu": rolling_mu, "condim": condim, "solref": solref,
                 "solimp": solimp, "margin": margin, "gap": gap, "contype": contype, "conaffinity": conaffinity}
        material = contact_params(where, given, self.ground_material)
        material["mu"] = self.ground_material["mu"] if mu is None else V.nonneg(mu, f"{where}: mu")
        self.ground_material = material

    def set_contact_options(self, *, cone: str | None = None, impratio: float | None = None) -> None:
        """MuJoCo's model-wide contact options, for the constraint-based contact solve: the
        friction ``cone`` (``"pyramidal"``, the default, or ``"elliptic"``) and ``impratio``
        (default 1, > 0: the ratio of the frictional to the normal constraints' impedance).
        Those not given keep their values. On the model: ``model.contact_cone`` and
        ``model.impratio``.

        Example::

            b.set_contact_options(cone="elliptic", impratio=10.0)
        """
        if cone is not None:
            if cone not in CONE_KINDS:
                raise ValueError(f"set_contact_options: cone must be 'pyramidal' or 'elliptic', got {cone!r}")
            self.contact_cone = cone
        if impratio is not None:
            self.impratio = V.positive(impratio, "set_contact_options: impratio")

    def set_shape_collision(self, shape: int, group: int = 1, mask: int = 1) -> None:
        """Which other shapes ``shape`` touches, with MuJoCo's rule for its contype/conaffinity:
        shapes ``a`` and ``b`` collide when ``group_a & mask_b`` or ``group_b & mask_a`` is
        nonzero. Every shape starts with group 1 and mask 1, so all collide; shapes of one
        robot given ``group=1, mask=0`` stop touching each other but still touch shapes of
        mask 1 (static scenery). The ground has masks of its own (:meth:`set_ground_material`,
        1 and 1 by default); particles touch every shape. Both are bit masks of 32 bits, the
        shape's ``contype`` and ``conaffinity`` (also keyword arguments of ``add_shape_*``).

        Example::

            leg = b.add_shape_capsule((0, 0, 0), (0, 0, 0, 1), 0.05, 0.2, body=thigh)
            b.set_shape_collision(leg, group=1, mask=0)   # not against the robot's other parts
        """
        where = "set_shape_collision"
        shape = V.index(shape, self.shape_count, "shape", "shapes", where)
        for name, value in (("group", group), ("mask", mask)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 0 <= value < 2 ** 32:
                raise ValueError(f"{where}: {name} must be an int bit mask in [0, 2**32), got {value!r}")
        self.shape_collision[shape] = [int(group), int(mask)]

    def add_shape_sphere(self, pos: Sequence[float], radius: float, body: int = -1, density: float = 1000.0, *,
                         ke: float | None = None, kd: float | None = None, kf: float | None = None,
                         mu: float | None = None, time_constant: float | None = None,
                         damping_ratio: float | None = None, **contact: Any) -> int:
        """Add a sphere collider centered at ``pos`` (in the frame of ``body``, or the world
        when ``body=-1``, the default, which makes it static). ``density`` (kg/m^3) gives the
        body its mass; ``ke``, ``kd``, ``kf``, ``mu``, ``time_constant``, ``damping_ratio``
        override the builder's rigid contact material (gains or per unit mass, as in
        :class:`~simkit.sim.ModelBuilder`; those not given come from it).

        MuJoCo's contact parameters of the shape, keyword arguments of every ``add_shape_*``
        (their meaning and checks: :mod:`simkit.sim.contact_params`): ``torsional_mu``
        (default 0.005 m), ``rolling_mu`` (1e-4 m), ``condim`` (1, 3, 4 or 6; default 3),
        ``solref`` (``(timeconst, dampratio)``, default ``(0.02, 1.0)``, or MuJoCo's direct
        ``(-stiffness, -damping)``), ``solimp`` (``(dmin, dmax, width, midpoint, power)``,
        default ``(0.9, 0.95, 0.001, 0.5, 2.0)``), ``margin`` and ``gap`` (m, default 0),
        ``contype`` and ``conaffinity`` (32-bit masks, default 1 and 1; see
        :meth:`set_shape_collision`). The constraint-based contact solve reads them all
        (``model.shapes.<name>``); the penalty contact reads only the two masks.

        Example::

            b.add_shape_sphere((0.0, 0.5, 0.0), radius=0.4)                # static
            b.add_shape_sphere((0.0, 0.0, 0.0), radius=0.1, body=ball)     # the ball's collider
            b.add_shape_sphere((0.0, 0.0, 0.0), radius=0.1, body=ball, condim=1, solref=(0.01, 1.0))
        """
        return self._add_shape(SHAPE_SPHERE, V.vec3(pos, "add_shape_sphere: pos"), np.array([0.0, 0.0, 0.0, 1.0]),
                               np.array([V.positive(radius, "add_shape_sphere: radius"), 0.0, 0.0]), body, density,
                               (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_sphere", contact)

    def add_shape_box(self, pos: Sequence[float], rot: Sequence[float], half_extents: Sequence[float],
                      body: int = -1, density: float = 1000.0, *, ke: float | None = None, kd: float | None = None,
                      kf: float | None = None, mu: float | None = None, time_constant: float | None = None,
                      damping_ratio: float | None = None, **contact: Any) -> int:
        """Add a box collider with the given half extents along its local axes (static unless
        ``body`` is given; see :meth:`add_shape_sphere`).

        Example::

            b.add_shape_box((0, 0.2, 0), (0, 0, 0, 1), (0.5, 0.2, 0.5))
        """
        h = V.vec3(half_extents, "add_shape_box: half_extents")
        if np.any(h <= 0.0):
            raise ValueError(f"add_shape_box: half_extents must be > 0, got {half_extents!r}")
        return self._add_shape(SHAPE_BOX, V.vec3(pos, "add_shape_box: pos"), V.quat(rot, "add_shape_box: rot"), h,
                               body, density, (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_box",
                               contact)

    def add_shape_capsule(self, pos: Sequence[float], rot: Sequence[float], radius: float, half_height: float,
                          body: int = -1, density: float = 1000.0, *, ke: float | None = None,
                          kd: float | None = None, kf: float | None = None, mu: float | None = None,
                          time_constant: float | None = None, damping_ratio: float | None = None,
                          **contact: Any) -> int:
        """Add a capsule collider: a segment of length ``2 * half_height`` along its local y
        axis, thickened by ``radius`` (static unless ``body`` is given; see :meth:`add_shape_sphere`).

        Example::

            b.add_shape_capsule((0, 0.3, 0), (0, 0, 0.7071068, 0.7071068), radius=0.1, half_height=0.5)
        """
        return self._add_shape(SHAPE_CAPSULE, V.vec3(pos, "add_shape_capsule: pos"),
                               V.quat(rot, "add_shape_capsule: rot"),
                               np.array([V.positive(radius, "add_shape_capsule: radius"),
                                         V.nonneg(half_height, "add_shape_capsule: half_height"), 0.0]),
                               body, density, (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_capsule",
                               contact)

    def add_shape_cylinder(self, pos: Sequence[float], rot: Sequence[float], radius: float, half_height: float,
                           body: int = -1, density: float = 1000.0, *, ke: float | None = None,
                           kd: float | None = None, kf: float | None = None, mu: float | None = None,
                           time_constant: float | None = None, damping_ratio: float | None = None,
                           **contact: Any) -> int:
        """Add a solid cylinder collider of ``radius`` whose axis is its local y axis, with flat
        faces ``half_height`` above and below its center (static unless ``body`` is given;
        see :meth:`add_shape_sphere`). Its mass is ``density * pi r^2 2h``; its depth in a
        plane and in a sphere is exact, against the other shapes it is sampled
        (docs/geometry.md).

        Example::

            wheel = b.add_body(sk.transform((0, 0.3, 0), (0, 0, 0, 1)))
            b.add_shape_cylinder((0, 0, 0), (0.7071068, 0, 0, 0.7071068), radius=0.3, half_height=0.05, body=wheel)
        """
        return self._add_shape(SHAPE_CYLINDER, V.vec3(pos, "add_shape_cylinder: pos"),
                               V.quat(rot, "add_shape_cylinder: rot"),
                               np.array([V.positive(radius, "add_shape_cylinder: radius"),
                                         V.positive(half_height, "add_shape_cylinder: half_height"), 0.0]),
                               body, density, (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_cylinder",
                               contact)

    def add_shape_cone(self, pos: Sequence[float], rot: Sequence[float], radius: float, half_height: float,
                       body: int = -1, density: float = 1000.0, *, ke: float | None = None, kd: float | None = None,
                       kf: float | None = None, mu: float | None = None, time_constant: float | None = None,
                       damping_ratio: float | None = None, **contact: Any) -> int:
        """Add a solid cone collider along its local y axis: its base, of ``radius``, at ``y =
        -half_height`` and its apex at ``y = +half_height`` (``pos`` is the middle of its axis,
        not its center of mass, which is at ``y = -half_height / 2``; static unless ``body`` is
        given, see :meth:`add_shape_sphere`). Its mass is ``density * pi r^2 2h / 3``; its depth
        in a plane and in a sphere is exact, against the other shapes it is sampled
        (docs/geometry.md).

        Example::

            b.add_shape_cone((0, 0.2, 0), (0, 0, 0, 1), radius=0.1, half_height=0.2, body=top)
        """
        return self._add_shape(SHAPE_CONE, V.vec3(pos, "add_shape_cone: pos"), V.quat(rot, "add_shape_cone: rot"),
                               np.array([V.positive(radius, "add_shape_cone: radius"),
                                         V.positive(half_height, "add_shape_cone: half_height"), 0.0]),
                               body, density, (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_cone",
                               contact)

    def add_shape_ellipsoid(self, pos: Sequence[float], rot: Sequence[float], semi_axes: Sequence[float],
                            body: int = -1, density: float = 1000.0, *, ke: float | None = None,
                            kd: float | None = None, kf: float | None = None, mu: float | None = None,
                            time_constant: float | None = None, damping_ratio: float | None = None,
                            **contact: Any) -> int:
        """Add a solid ellipsoid collider with ``semi_axes`` along its local x, y, z (static unless
        ``body`` is given; see :meth:`add_shape_sphere`). Its mass is ``density * 4/3 pi a b c``;
        its depth in a plane, a box face and a sphere is exact (docs/geometry.md).

        Example::

            b.add_shape_ellipsoid((0, 0.2, 0), (0, 0, 0, 1), (0.2, 0.1, 0.15), body=egg)
        """
        e = V.vec3(semi_axes, "add_shape_ellipsoid: semi_axes")
        if np.any(e <= 0.0):
            raise ValueError(f"add_shape_ellipsoid: semi_axes must be > 0, got {semi_axes!r}")
        return self._add_shape(SHAPE_ELLIPSOID, V.vec3(pos, "add_shape_ellipsoid: pos"),
                               V.quat(rot, "add_shape_ellipsoid: rot"), e, body, density,
                               (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_ellipsoid", contact)

    def add_shape_plane(self, pos: Sequence[float], rot: Sequence[float], half_extents: Sequence[float] | None = None,
                        *, ke: float | None = None, kd: float | None = None, kf: float | None = None,
                        mu: float | None = None, time_constant: float | None = None,
                        damping_ratio: float | None = None, **contact: Any) -> int:
        """Add a static plane through ``pos`` facing its local +y axis turned by ``rot`` (an
        incline, a wall, a second floor at another height). Infinite when ``half_extents`` is
        None; else a rectangle of half extents ``(hx, hz)`` along its local x and z, which
        pushes out whatever is below it within its footprint (however deep) and nothing
        beside it. A plane is one-sided: a body that passes through it is pushed back to its
        front. Planes are always static (they take no ``body`` or ``density``); the contact
        material and MuJoCo's parameters are those of :meth:`add_shape_sphere`. Contact of
        every shape and particle with a plane is exact, as with the ground (docs/geometry.md).

        Example::

            theta = math.radians(20.0)      # a 20 degree incline through the origin, downhill +x
            b.add_shape_plane((0, 0, 0), (0, 0, -math.sin(theta / 2), math.cos(theta / 2)), mu=0.8)
            b.add_shape_plane((0, 1, 0), (0, 0, 0, 1), half_extents=(0.5, 0.3))   # a table top
        """
        where = "add_shape_plane"
        if "body" in contact or "density" in contact:
            raise TypeError(f"{where}: a plane is always static; it takes no "
                            f"{'body' if 'body' in contact else 'density'} argument")
        size = np.zeros(3)
        if half_extents is not None:
            try:
                h = np.asarray(half_extents, dtype=np.float64)
            except (TypeError, ValueError):
                h = np.zeros(0)
            if h.shape != (2,) or not np.all(np.isfinite(h)) or np.any(h <= 0.0):
                raise ValueError(f"{where}: half_extents must be None (infinite) or two finite numbers > 0 "
                                 f"(along local x and z), got {half_extents!r}")
            size[:2] = h
        return self._add_shape(SHAPE_PLANE, V.vec3(pos, f"{where}: pos"), V.quat(rot, f"{where}: rot"), size, -1,
                               0.0, (ke, kd, kf, mu, time_constant, damping_ratio), where, contact)

    # -- joints -------------------------------------------------------------------------
    # -- worlds ---------------------------------------------------------------------------
    def _append_rigid(self, other: "RigidBuilder", X: np.ndarray | None, offset: int) -> None:
        """The bodies, shapes and joints of ``other`` (see ``ModelBuilder.add_builder``), placed by
        the transform ``X`` (7 numbers, or None), their body indices shifted by ``offset``."""

        def place(t):
            return np.array(t, dtype=np.float64) if X is None else transform_multiply(X, t)

        def rotate(v):
            return np.array(v, dtype=np.float64) if X is None else G.quat_rotate(X[3:], v)

        def body(b):
            return b + offset if b >= 0 else -1

        self.body_q.extend(place(t) for t in other.body_q)
        self.body_qd.extend(np.concatenate([rotate(v[:3]), rotate(v[3:])]) for v in other.body_qd)
        self.body_armature.extend(other.body_armature)
        for b, parts in other.body_inertials.items():
            self.body_inertials.setdefault(b + offset, []).extend(parts)
        self.shape_kind.extend(other.shape_kind)
        self.shape_body.extend(body(b) for b in other.shape_body)
        self.shape_xform.extend(place(t) if b < 0 else t for t, b in zip(other.shape_xform, other.shape_body))
        self.shape_params.extend(other.shape_params)
        self.shape_density.extend(other.shape_density)
        self.shape_material.extend(list(m) for m in other.shape_material)
        self.shape_collision.extend(list(c) for c in other.shape_collision)
        self.shape_contact.extend(list(c) for c in other.shape_contact)
        self.joint_kind.extend(other.joint_kind)
        self.joint_parent.extend(body(p) for p in other.joint_parent)
        self.joint_child.extend(body(c) for c in other.joint_child)
        self.joint_parent_xform.extend(place(t) if p < 0 else t
                                       for t, p in zip(other.joint_parent_xform, other.joint_parent))
        for name in ("joint_child_xform", "joint_axis", "joint_axis2", "joint_limits", "joint_gains", "joint_dynamics",
                     "joint_limits2", "joint_limit_soft"):
            getattr(self, name).extend(getattr(other, name))
        # the joints of other's articulations are the next ones here; joints added after this
        # call join no articulation until add_articulation starts one
        first, articulations = self.joint_count - other.joint_count, self.articulation_count
        self.joint_articulation.extend(a + articulations if a >= 0 else -1 for a in other.joint_articulation)
        self.articulation_start.extend(s + first for s in other.articulation_start)
        self._articulation_open = False

    # -- finalize -----------------------------------------------------------------------
    def _rigid_data(self) -> dict:
        """The arrays :class:`~simkit.sim.model.Model` needs for bodies, shapes and joints."""
        n = self.body_count
        mass, com, inertia = np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3, 3))
        attached: list = [[] for _ in range(n)]
        for k, body, x, p, d in zip(self.shape_kind, self.shape_body, self.shape_xform, self.shape_params,
                                    self.shape_density):
            if body >= 0:
                attached[body].append((k, x, p, d))
        for b in range(n):
            mass[b], com[b], inertia[b] = combine_mass_properties(
                [body_mass_properties(attached[b])] + self.body_inertials.get(b, []))
            if mass[b] > 0.0:
                inertia[b] += np.eye(3) * self.body_armature[b]
        material = np.asarray(self.shape_material, dtype=np.float64).reshape(-1, len(SHAPE_MATERIAL))
        collision = np.asarray(self.shape_collision, dtype=np.int64).reshape(-1, 2)
        limits = np.asarray(self.joint_limits, dtype=np.float64).reshape(-1, 4)
        gains = np.asarray(self.joint_gains, dtype=np.float64).reshape(-1, 6)
        dynamics = np.asarray(self.joint_dynamics, dtype=np.float64).reshape(-1, 3)
        limits2 = np.asarray(self.joint_limits2, dtype=np.float64).reshape(-1, 2)
        soft = np.asarray(self.joint_limit_soft, dtype=np.float64).reshape(-1, 8)
        return {
            "body_q": self.body_q, "body_qd": self.body_qd, "body_mass": mass, "body_com": com,
            "body_inertia": inertia,
            "shape_kind": self.shape_kind, "shape_body": self.shape_body, "shape_xform": self.shape_xform,
            "shape_params": self.shape_params,
            **{f"shape_{name}": material[:, k] for k, name in enumerate(SHAPE_MATERIAL)},
            "shape_collision_group": collision[:, 0], "shape_collision_mask": collision[:, 1],
            "shape_contact": np.asarray(self.shape_contact, dtype=np.float64).reshape(-1, CONTACT_ROW_WIDTH),
            "ground_material": dict(self.ground_material), "contact_cone": self.contact_cone,
            "impratio": self.impratio,
            "joint_kind": self.joint_kind, "joint_parent": self.joint_parent, "joint_child": self.joint_child,
            "joint_parent_xform": self.joint_parent_xform, "joint_child_xform": self.joint_child_xform,
            "joint_axis": self.joint_axis, "joint_axis2": self.joint_axis2, "joint_limit_lower": limits[:, 0], "joint_limit_upper": limits[:, 1],
            "joint_limit_ke": limits[:, 2], "joint_limit_kd": limits[:, 3],
            "joint_target_ke": gains[:, 0], "joint_target_kd": gains[:, 1], "joint_linear_ke": gains[:, 2],
            "joint_linear_kd": gains[:, 3], "joint_angular_ke": gains[:, 4], "joint_angular_kd": gains[:, 5],
            "joint_armature": dynamics[:, 0], "joint_effort_limit": dynamics[:, 1], "joint_friction": dynamics[:, 2],
            "joint_limit2_lower": limits2[:, 0], "joint_limit2_upper": limits2[:, 1],
            "joint_limit_solref": soft[:, 0:2], "joint_limit_solimp": soft[:, 2:7], "joint_limit_margin": soft[:, 7],
            "joint_articulation": self.joint_articulation, "articulation_start": self.articulation_start,
        }
