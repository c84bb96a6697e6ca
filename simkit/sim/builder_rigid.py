"""The rigid part of :class:`~simkit.sim.ModelBuilder`: bodies, collision shapes and joints.

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

from ..kernels.structs import (JOINT_BALL, JOINT_FIXED, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE,
                               JOINT_UNIVERSAL, NO_LIMIT, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_SPHERE)
from . import geometry as G
from . import validate as V
from .contact_material import RIGID_PENALTY, contact_material
from .mass import body_mass_properties, combine_mass_properties

_IDENTITY = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])

# Gains that hold a joint together in the semi-implicit integrator: stiff enough for a
# sub-millimetre joint error under a few kilograms. Stable at dt = 1e-4 s for jointed
# bodies whose effective mass at the anchor is above 3 g (slender links from 12 g) and whose
# smallest moment of inertia is above 2e-5 kg m^2; at dt = 5e-4 s above 35 g (slender links
# from 0.14 kg) and 3e-4 kg m^2. The conditions are in simkit/kernels/joints.py.
JOINT_LINEAR_KE, JOINT_LINEAR_KD = 1.0e5, 1.0e1
JOINT_ANGULAR_KE, JOINT_ANGULAR_KD = 1.0e3, 5.0e-2


# the contact material of a shape, in the order of ``shape_material``'s rows
SHAPE_MATERIAL = ("ke", "kd", "kf", "mu", "time_constant", "damping_ratio")

def _transform_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.concatenate([a[:3] + G.quat_rotate(a[3:], b[:3]), G.quat_multiply(a[3:], b[3:])])


def _transform_inverse(a: np.ndarray) -> np.ndarray:
    q_inv = np.concatenate([-a[3:6], a[6:]])
    return np.concatenate([-G.quat_rotate(q_inv, a[:3]), q_inv])


class RigidBuilder:
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
        X = _IDENTITY.copy() if origin is None else V.xform(origin, "add_body: origin")
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
    def _add_shape(self, kind: int, pos, rot, params, body, density, material, where: str) -> int:
        body = V.index(body, self.body_count, "body", "bodies", where, allow_world=True)
        density = V.nonneg(density, f"{where}: density")
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
        self.shape_collision.append([1, 1])
        return self.shape_count - 1

    def set_shape_collision(self, shape: int, group: int = 1, mask: int = 1) -> None:
        """Which other shapes ``shape`` touches, with MuJoCo's rule for its contype/conaffinity:
        shapes ``a`` and ``b`` collide when ``group_a & mask_b`` or ``group_b & mask_a`` is
        nonzero. Every shape starts with group 1 and mask 1, so all collide; shapes of one
        robot given ``group=1, mask=0`` stop touching each other but still touch shapes of
        mask 1 (static scenery). The filter is between shapes: the ground plane and particles
        touch every shape. Both are bit masks of 32 bits.

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
                         damping_ratio: float | None = None) -> int:
        """Add a sphere collider centered at ``pos`` (in the frame of ``body``, or the world
        when ``body=-1``, the default, which makes it static). ``density`` (kg/m^3) gives the
        body its mass; ``ke``, ``kd``, ``kf``, ``mu``, ``time_constant``, ``damping_ratio``
        override the builder's rigid contact material (gains or per unit mass, as in
        :class:`~simkit.sim.ModelBuilder`; those not given come from it).

        Example::

            b.add_shape_sphere((0.0, 0.5, 0.0), radius=0.4)                # static
            b.add_shape_sphere((0.0, 0.0, 0.0), radius=0.1, body=ball)     # the ball's collider
        """
        return self._add_shape(SHAPE_SPHERE, V.vec3(pos, "add_shape_sphere: pos"), np.array([0.0, 0.0, 0.0, 1.0]),
                               np.array([V.positive(radius, "add_shape_sphere: radius"), 0.0, 0.0]), body, density,
                               (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_sphere")

    def add_shape_box(self, pos: Sequence[float], rot: Sequence[float], half_extents: Sequence[float],
                      body: int = -1, density: float = 1000.0, *, ke: float | None = None, kd: float | None = None,
                      kf: float | None = None, mu: float | None = None, time_constant: float | None = None,
                      damping_ratio: float | None = None) -> int:
        """Add a box collider with the given half extents along its local axes (static unless
        ``body`` is given; see :meth:`add_shape_sphere`).

        Example::

            b.add_shape_box((0, 0.2, 0), (0, 0, 0, 1), (0.5, 0.2, 0.5))
        """
        h = V.vec3(half_extents, "add_shape_box: half_extents")
        if np.any(h <= 0.0):
            raise ValueError(f"add_shape_box: half_extents must be > 0, got {half_extents!r}")
        return self._add_shape(SHAPE_BOX, V.vec3(pos, "add_shape_box: pos"), V.quat(rot, "add_shape_box: rot"), h,
                               body, density, (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_box")

    def add_shape_capsule(self, pos: Sequence[float], rot: Sequence[float], radius: float, half_height: float,
                          body: int = -1, density: float = 1000.0, *, ke: float | None = None,
                          kd: float | None = None, kf: float | None = None, mu: float | None = None,
                          time_constant: float | None = None, damping_ratio: float | None = None) -> int:
        """Add a capsule collider: a segment of length ``2 * half_height`` along its local y
        axis, thickened by ``radius`` (static unless ``body`` is given; see :meth:`add_shape_sphere`).

        Example::

            b.add_shape_capsule((0, 0.3, 0), (0, 0, 0.7071068, 0.7071068), radius=0.1, half_height=0.5)
        """
        return self._add_shape(SHAPE_CAPSULE, V.vec3(pos, "add_shape_capsule: pos"),
                               V.quat(rot, "add_shape_capsule: rot"),
                               np.array([V.positive(radius, "add_shape_capsule: radius"),
                                         V.nonneg(half_height, "add_shape_capsule: half_height"), 0.0]),
                               body, density, (ke, kd, kf, mu, time_constant, damping_ratio), "add_shape_capsule")

    # -- joints -------------------------------------------------------------------------
    def _add_joint(self, kind: int, where: str, parent, child, parent_xform, child_xform, axis, limits, gains,
                   axis2=(0.0, 1.0, 0.0), dynamics=(0.0, None, 0.0), limits2=(None, None)) -> int:
        parent = V.index(parent, self.body_count, "parent", "bodies", where, allow_world=True)
        child = V.index(child, self.body_count, "child", "bodies", where)
        if parent == child:
            raise ValueError(f"{where}: parent and child must differ, got body {child} twice")
        child_xform = _IDENTITY.copy() if child_xform is None else V.xform(child_xform, f"{where}: child_xform")
        if parent_xform is None:
            # The joint frame where the child's frame is now: the joint starts satisfied.
            world = _transform_multiply(self.body_q[child], child_xform)
            parent_xform = world if parent < 0 else _transform_multiply(_transform_inverse(self.body_q[parent]), world)
        else:
            parent_xform = V.xform(parent_xform, f"{where}: parent_xform")
        axis = V.vec3(axis, f"{where}: axis")
        if np.linalg.norm(axis) < 1e-9:
            raise ValueError(f"{where}: axis must be a nonzero vector, got {tuple(axis)}")
        axis2 = V.vec3(axis2, f"{where}: axis2")
        if np.linalg.norm(axis2) < 1e-9:
            raise ValueError(f"{where}: axis2 must be a nonzero vector, got {tuple(axis2)}")
        if kind == JOINT_UNIVERSAL and abs(axis @ axis2) > 1e-6 * np.linalg.norm(axis) * np.linalg.norm(axis2):
            raise ValueError(f"{where}: axis and axis2 must be perpendicular, got {tuple(map(float, axis))} and "
                             f"{tuple(map(float, axis2))}")
        lower, upper, limit_ke, limit_kd = limits
        lower = -NO_LIMIT if lower is None else V.number(lower, f"{where}: limit_lower")
        upper = NO_LIMIT if upper is None else V.number(upper, f"{where}: limit_upper")
        if not lower <= upper:
            raise ValueError(f"{where}: limit_lower must be <= limit_upper, got {lower} > {upper}")
        lower2 = -NO_LIMIT if limits2[0] is None else V.number(limits2[0], f"{where}: limit2_lower")
        upper2 = NO_LIMIT if limits2[1] is None else V.number(limits2[1], f"{where}: limit2_upper")
        if not lower2 <= upper2:
            raise ValueError(f"{where}: limit2_lower must be <= limit2_upper, got {lower2} > {upper2}")
        gains = [V.nonneg(g, f"{where}: {name}") for g, name in zip(gains, (
            "target_ke", "target_kd", "linear_ke", "linear_kd", "angular_ke", "angular_kd"))]
        limit_ke, limit_kd = V.nonneg(limit_ke, f"{where}: limit_ke"), V.nonneg(limit_kd, f"{where}: limit_kd")
        armature = V.nonneg(dynamics[0], f"{where}: armature")
        effort = NO_LIMIT if dynamics[1] is None else V.nonneg(dynamics[1], f"{where}: effort_limit")
        friction = V.nonneg(dynamics[2], f"{where}: friction")
        articulation = self._joint_articulation(where, parent, child)
        self.joint_kind.append(kind)
        self.joint_parent.append(parent)
        self.joint_child.append(child)
        self.joint_parent_xform.append(parent_xform)
        self.joint_child_xform.append(child_xform)
        self.joint_axis.append(axis / np.linalg.norm(axis))
        self.joint_axis2.append(axis2 / np.linalg.norm(axis2))
        self.joint_limits.append([lower, upper, limit_ke, limit_kd])
        self.joint_gains.append(gains)
        self.joint_dynamics.append([armature, effort, friction])
        self.joint_limits2.append([lower2, upper2])
        self.joint_articulation.append(articulation)
        return self.joint_count - 1

    def set_joint_friction(self, joint: int, friction: float) -> None:
        """Set the dry friction of ``joint`` (an imported robot's, say): in
        :class:`~simkit.sim.Featherstone`, a torque (N m) or force (N) of at most ``friction``
        opposing the rate of each of the joint's degrees of freedom (MuJoCo's ``frictionloss``).

        Example::

            b.set_joint_friction(b.imports[robot].joints["elbow"], 0.3)
        """
        where = "set_joint_friction"
        joint = V.index(joint, self.joint_count, "joint", "joints", where)
        self.joint_dynamics[joint][2] = V.nonneg(friction, f"{where}: friction")

    def set_joint_drive(self, joint: int, target_ke: float | None = None, target_kd: float | None = None) -> None:
        """Change the drive gains of a revolute, prismatic, universal or ball ``joint`` already
        added (an imported robot's, say); ``None`` keeps a gain as it is. The drive pulls the
        joint coordinate towards ``control.joint_target`` (a universal joint's two angles
        towards ``control.joint_dof_target``, a ball joint's rotation towards the rotation
        vector in its three entries of ``control.joint_dof_target``) with ``target_ke``
        (N m/rad or N/m) and pulls its rate towards ``control.joint_target_vel`` (Featherstone
        adds ``control.joint_dof_target_vel``; zero: a damper) with ``target_kd``.

        Example::

            knee = b.imports[robot].joints["knee"]
            b.set_joint_drive(knee, target_ke=200.0, target_kd=5.0)
        """
        where = "set_joint_drive"
        joint = V.index(joint, self.joint_count, "joint", "joints", where)
        if self.joint_kind[joint] not in (JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_UNIVERSAL, JOINT_BALL):
            raise ValueError(f"{where}: joint {joint} is not revolute, prismatic, universal or ball, so it has no "
                             "drive")
        if target_ke is not None:
            self.joint_gains[joint][0] = V.nonneg(target_ke, f"{where}: target_ke")
        if target_kd is not None:
            self.joint_gains[joint][1] = V.nonneg(target_kd, f"{where}: target_kd")

    def _joint_articulation(self, where: str, parent: int, child: int) -> int:
        """The articulation a new joint from ``parent`` to ``child`` joins (-1: none), after
        checking that it keeps the articulation a tree rooted in the world."""
        if not self._articulation_open:
            return -1
        a = self.articulation_count - 1
        first = self.articulation_start[a]
        children = {self.joint_child[j]: j for j in range(first, self.joint_count)}
        if parent >= 0 and parent not in children:
            raise ValueError(f"{where}: in articulation {a}, parent must be -1 (the world) or the child of an earlier "
                             f"joint of the articulation, got body {parent}")
        for j, (c, art) in enumerate(zip(self.joint_child, self.joint_articulation)):
            if c == child and art >= 0:
                raise ValueError(f"{where}: body {child} is already the child of joint {j} of articulation {art}; "
                                 "a body has at most one parent joint in articulations")
        return a

    def add_articulation(self) -> int:
        """Start a new articulation and return its index: the joints added after this call
        (until the next ``add_articulation``, ``end_articulation`` or ``add_builder``) form a
        tree of bodies in generalized coordinates, each joint's parent being the world (-1) or
        the child of an earlier joint of the same articulation, each body the child of at most
        one of them.

        The joints still act in the maximal-coordinate integrators as before; an articulation
        adds the generalized coordinates ``model.joint_q`` / ``model.joint_qd`` of its joints,
        :func:`simkit.sim.eval_fk`, :func:`simkit.sim.eval_ik` and
        :func:`simkit.sim.mass_matrix` (see docs/articulations.md).

        Example::

            a = b.add_articulation()
            b.add_joint_revolute(-1, upper, axis=(0.0, 0.0, 1.0))
            b.add_joint_revolute(upper, lower, axis=(0.0, 0.0, 1.0))
        """
        self.articulation_start.append(self.joint_count)
        self._articulation_open = True
        return self.articulation_count - 1

    def end_articulation(self) -> None:
        """End the articulation being built: the joints added next belong to no articulation
        (for instance a joint that closes a loop, which the maximal-coordinate integrators
        enforce) until ``add_articulation`` starts another.

        Example::

            b.end_articulation()
            b.add_joint_ball(left_foot, right_hand)       # a loop closure, outside the tree
        """
        self._articulation_open = False

    def add_joint_revolute(self, parent: int, child: int, parent_xform: Any = None, child_xform: Any = None,
                           axis: Sequence[float] = (0.0, 0.0, 1.0), *, limit_lower: float | None = None,
                           limit_upper: float | None = None, limit_ke: float = 1.0e4, limit_kd: float = 1.0e1,
                           target_ke: float = 0.0, target_kd: float = 0.0, linear_ke: float = JOINT_LINEAR_KE,
                           linear_kd: float = JOINT_LINEAR_KD, angular_ke: float = JOINT_ANGULAR_KE,
                           angular_kd: float = JOINT_ANGULAR_KD, armature: float = 0.0,
                           effort_limit: float | None = None, friction: float = 0.0) -> int:
        """A hinge: the child turns about ``axis`` (in the joint frame) relative to the parent.

        The joint frame is ``parent_xform`` in the parent's frame (``parent=-1``: the world)
        and ``child_xform`` in the child's (default: the child's origin); ``parent_xform=None``
        places it where the child's joint frame is now, so the joint starts satisfied. The
        angle is limited to ``[limit_lower, limit_upper]`` (radians, None: free) by a penalty
        ``limit_ke``/``limit_kd``, and driven towards ``control.joint_target`` by ``target_ke``
        (N m/rad) and towards the rate ``control.joint_target_vel`` by ``target_kd`` (N m s/rad;
        ``target_ke = 0``: a velocity drive); ``control.joint_act`` adds a torque about the axis.
        ``linear_*``/``angular_*`` hold the joint together in the semi-implicit integrator.
        In :class:`~simkit.sim.Featherstone`, ``armature`` (kg m^2) adds a rotor inertia to the
        joint, ``effort_limit`` (N m, None: unbounded) clamps drive plus ``joint_act`` and
        ``friction`` (N m) is a dry friction torque opposing the joint's rate (MuJoCo's
        ``frictionloss``; see docs/articulations.md). Returns the joint's index.

        Example::

            b.add_joint_revolute(-1, link, child_xform=sk.transform((0, 0.5, 0), (0, 0, 0, 1)), axis=(0, 0, 1))
        """
        return self._add_joint(JOINT_REVOLUTE, "add_joint_revolute", parent, child, parent_xform, child_xform, axis,
                               (limit_lower, limit_upper, limit_ke, limit_kd),
                               (target_ke, target_kd, linear_ke, linear_kd, angular_ke, angular_kd),
                               dynamics=(armature, effort_limit, friction))

    def add_joint_prismatic(self, parent: int, child: int, parent_xform: Any = None, child_xform: Any = None,
                            axis: Sequence[float] = (1.0, 0.0, 0.0), *, limit_lower: float | None = None,
                            limit_upper: float | None = None, limit_ke: float = 1.0e4, limit_kd: float = 1.0e1,
                            target_ke: float = 0.0, target_kd: float = 0.0, linear_ke: float = JOINT_LINEAR_KE,
                            linear_kd: float = JOINT_LINEAR_KD, angular_ke: float = JOINT_ANGULAR_KE,
                            angular_kd: float = JOINT_ANGULAR_KD, armature: float = 0.0,
                            effort_limit: float | None = None, friction: float = 0.0) -> int:
        """A slider: the child moves along ``axis`` (in the joint frame) relative to the parent,
        without turning. Limits (meters), drive (``target_ke`` in N/m), ``joint_act`` (a
        force along the axis) and ``friction`` (N) as for :meth:`add_joint_revolute`.

        Example::

            b.add_joint_prismatic(-1, cart, axis=(1, 0, 0), limit_lower=-1.0, limit_upper=1.0)
        """
        return self._add_joint(JOINT_PRISMATIC, "add_joint_prismatic", parent, child, parent_xform, child_xform, axis,
                               (limit_lower, limit_upper, limit_ke, limit_kd),
                               (target_ke, target_kd, linear_ke, linear_kd, angular_ke, angular_kd),
                               dynamics=(armature, effort_limit, friction))

    def add_joint_ball(self, parent: int, child: int, parent_xform: Any = None, child_xform: Any = None, *,
                       limit_angle: float | None = None, limit_ke: float = 1.0e4, limit_kd: float = 1.0e1,
                       target_ke: float = 0.0, target_kd: float = 0.0, linear_ke: float = JOINT_LINEAR_KE,
                       linear_kd: float = JOINT_LINEAR_KD, armature: float = 0.0, effort_limit: float | None = None,
                       friction: float = 0.0) -> int:
        """A ball-and-socket: the joint frames' origins coincide, rotation is free.

        In :class:`~simkit.sim.Featherstone` (the maximal-coordinate integrators ignore these):
        ``limit_angle`` (radians, None: free) bounds the total angle of the child frame's
        rotation from the parent's (MuJoCo's ball ``range``) by a penalty ``limit_ke`` /
        ``limit_kd`` about the rotation's axis; a drive turns the joint towards the target
        rotation ``exp(control.joint_dof_target[d:d + 3])`` (``d = model.joint_qd_start[joint]``;
        the three entries are a rotation vector, axis times angle, in the parent's joint
        frame) with a torque ``target_ke`` (N m/rad) times the angle between the two rotations,
        about their relative axis; ``target_kd`` pulls the angular velocity towards
        ``control.joint_dof_target_vel[d:d + 3]`` (zero by default: a damper),
        ``control.joint_dof_act`` adds a torque (in the parent's joint frame) and
        ``effort_limit`` (N m, None: unbounded) clamps the norm of drive, damping and act
        together; ``friction`` (N m) opposes each of the three components of the angular
        velocity and ``armature`` (kg m^2) is added to each of the three diagonal entries of
        the joint-space mass matrix.

        Example::

            b.add_joint_ball(torso, arm, child_xform=sk.transform((0, 0.3, 0), (0, 0, 0, 1)), limit_angle=0.8,
                             target_ke=100.0, target_kd=5.0)
        """
        if limit_angle is not None and not 0.0 <= V.number(limit_angle, "add_joint_ball: limit_angle") <= np.pi:
            raise ValueError(f"add_joint_ball: limit_angle must be in [0, pi] radians, got {limit_angle}")
        return self._add_joint(JOINT_BALL, "add_joint_ball", parent, child, parent_xform, child_xform, (1.0, 0.0, 0.0),
                               (None, limit_angle, limit_ke, limit_kd),
                               (target_ke, target_kd, linear_ke, linear_kd, 0.0, 0.0),
                               dynamics=(armature, effort_limit, friction))

    def add_joint_fixed(self, parent: int, child: int, parent_xform: Any = None, child_xform: Any = None, *,
                        linear_ke: float = JOINT_LINEAR_KE, linear_kd: float = JOINT_LINEAR_KD,
                        angular_ke: float = JOINT_ANGULAR_KE, angular_kd: float = JOINT_ANGULAR_KD) -> int:
        """Weld the child to the parent: the joint frames coincide.

        Example::

            b.add_joint_fixed(-1, base)        # pin a body to the world where it is
        """
        return self._add_joint(JOINT_FIXED, "add_joint_fixed", parent, child, parent_xform, child_xform,
                               (1.0, 0.0, 0.0), (None, None, 0.0, 0.0),
                               (0.0, 0.0, linear_ke, linear_kd, angular_ke, angular_kd))

    def add_joint_universal(self, parent: int, child: int, parent_xform: Any = None, child_xform: Any = None,
                            axis: Sequence[float] = (1.0, 0.0, 0.0), axis2: Sequence[float] = (0.0, 1.0, 0.0), *,
                            limit_lower: float | None = None, limit_upper: float | None = None,
                            limit2_lower: float | None = None, limit2_upper: float | None = None,
                            limit_ke: float = 1.0e4, limit_kd: float = 1.0e1, target_ke: float = 0.0,
                            target_kd: float = 0.0, linear_ke: float = JOINT_LINEAR_KE,
                            linear_kd: float = JOINT_LINEAR_KD, angular_ke: float = JOINT_ANGULAR_KE,
                            angular_kd: float = JOINT_ANGULAR_KD, armature: float = 0.0,
                            effort_limit: float | None = None, friction: float = 0.0) -> int:
        """A universal (Cardan) joint: the joint frames' origins coincide and the child turns
        about ``axis`` and about ``axis2`` (perpendicular to each other, in the joint frame),
        never about the third direction. Its coordinates are the two angles: the child's joint
        frame is the parent's turned by ``q0`` about ``axis``, then by ``q1`` about ``axis2``
        carried along by the first turn. The maximal-coordinate integrators keep the origins
        together and the angle between the parent's ``axis`` and the child's ``axis2`` (with
        ``linear_*`` and ``angular_*`` in the semi-implicit one) and ignore what follows.
        Frames as for :meth:`add_joint_revolute`; ``armature`` as for :meth:`add_joint_ball`.

        In :class:`~simkit.sim.Featherstone` each angle has what a revolute joint has: the first
        is bounded by ``[limit_lower, limit_upper]``, the second by ``[limit2_lower,
        limit2_upper]`` (radians, None: free; penalty ``limit_ke``/``limit_kd``); a drive with
        the shared gains ``target_ke``/``target_kd`` pulls them towards
        ``control.joint_dof_target`` and their rates towards ``control.joint_dof_target_vel``
        (two entries each, from ``model.joint_qd_start[joint]``),
        ``control.joint_dof_act`` adds torques, ``effort_limit`` clamps drive plus act per
        angle and ``friction`` (N m) opposes each angle's rate.

        Example::

            b.add_joint_universal(torso, leg, axis=(1.0, 0.0, 0.0), axis2=(0.0, 0.0, 1.0), limit_lower=-0.5,
                                  limit_upper=0.5, target_ke=50.0, target_kd=2.0)
        """
        return self._add_joint(JOINT_UNIVERSAL, "add_joint_universal", parent, child, parent_xform, child_xform,
                               axis, (limit_lower, limit_upper, limit_ke, limit_kd),
                               (target_ke, target_kd, linear_ke, linear_kd, angular_ke, angular_kd),
                               axis2, dynamics=(armature, effort_limit, friction), limits2=(limit2_lower, limit2_upper))

    def add_joint_free(self, parent: int, child: int, parent_xform: Any = None, child_xform: Any = None, *,
                       armature: float = 0.0, friction: float = 0.0) -> int:
        """A free joint: six degrees of freedom, no constraint (in the maximal-coordinate
        integrators it does nothing). In an articulation it makes ``child`` a floating base:
        its coordinates are the position and the quaternion (x, y, z, w) of the child's joint
        frame in the parent's, its velocities the linear velocity of that frame's origin and its
        angular velocity, both in the parent's joint frame.

        Unlike the other joints, ``parent_xform=None`` is the identity (the world frame for
        ``parent=-1``, the parent's frame otherwise), so that the coordinates of a free body are
        its pose: ``child_xform`` defaults to the child's origin. (``add_builder`` with an
        ``xform`` moves joint frames attached to the world with the rest, so every copy keeps
        the coordinates of the original, relative to its placement.) ``armature`` is added to
        each of its six diagonal entries of the joint-space mass matrix and ``friction`` opposes
        each of its six rates (:class:`~simkit.sim.Featherstone`). A free joint has no drive
        or limit (as in MuJoCo); ``control.joint_dof_act`` pushes it (see
        :class:`~simkit.sim.Control`).

        Example::

            b.add_articulation()
            base = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
            b.add_joint_free(-1, base)        # model.joint_q[0:7] == the base's pose
        """
        return self._add_joint(JOINT_FREE, "add_joint_free", parent, child,
                               _IDENTITY.copy() if parent_xform is None else parent_xform, child_xform,
                               (1.0, 0.0, 0.0), (None, None, 0.0, 0.0), (0.0,) * 6, dynamics=(armature, None, friction))

    # -- worlds ---------------------------------------------------------------------------
    def _append_rigid(self, other: "RigidBuilder", X: np.ndarray | None, offset: int) -> None:
        """The bodies, shapes and joints of ``other`` (see ``ModelBuilder.add_builder``), placed by
        the transform ``X`` (7 numbers, or None), their body indices shifted by ``offset``."""

        def place(t):
            return np.array(t, dtype=np.float64) if X is None else _transform_multiply(X, t)

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
        self.joint_kind.extend(other.joint_kind)
        self.joint_parent.extend(body(p) for p in other.joint_parent)
        self.joint_child.extend(body(c) for c in other.joint_child)
        self.joint_parent_xform.extend(place(t) if p < 0 else t
                                       for t, p in zip(other.joint_parent_xform, other.joint_parent))
        for name in ("joint_child_xform", "joint_axis", "joint_axis2", "joint_limits", "joint_gains", "joint_dynamics",
                     "joint_limits2"):
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
        return {
            "body_q": self.body_q, "body_qd": self.body_qd, "body_mass": mass, "body_com": com,
            "body_inertia": inertia,
            "shape_kind": self.shape_kind, "shape_body": self.shape_body, "shape_xform": self.shape_xform,
            "shape_params": self.shape_params,
            **{f"shape_{name}": material[:, k] for k, name in enumerate(SHAPE_MATERIAL)},
            "shape_collision_group": collision[:, 0], "shape_collision_mask": collision[:, 1],
            "joint_kind": self.joint_kind, "joint_parent": self.joint_parent, "joint_child": self.joint_child,
            "joint_parent_xform": self.joint_parent_xform, "joint_child_xform": self.joint_child_xform,
            "joint_axis": self.joint_axis, "joint_axis2": self.joint_axis2, "joint_limit_lower": limits[:, 0], "joint_limit_upper": limits[:, 1],
            "joint_limit_ke": limits[:, 2], "joint_limit_kd": limits[:, 3],
            "joint_target_ke": gains[:, 0], "joint_target_kd": gains[:, 1], "joint_linear_ke": gains[:, 2],
            "joint_linear_kd": gains[:, 3], "joint_angular_ke": gains[:, 4], "joint_angular_kd": gains[:, 5],
            "joint_armature": dynamics[:, 0], "joint_effort_limit": dynamics[:, 1], "joint_friction": dynamics[:, 2],
            "joint_limit2_lower": limits2[:, 0], "joint_limit2_upper": limits2[:, 1],
            "joint_articulation": self.joint_articulation, "articulation_start": self.articulation_start,
        }
