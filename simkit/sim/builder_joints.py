"""The joints of :class:`~simkit.sim.ModelBuilder`: ``add_joint_*``, drives, friction and
articulations (part of the rigid builder, simkit/sim/builder_rigid.py).

Joints connect a parent body (``-1``: the world) to a child body; the bodies of one
articulation form a tree that :class:`~simkit.sim.Featherstone` steps in joint coordinates.

Example::

    b = sk.sim.ModelBuilder()
    link = b.add_body(origin=sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0), target_ke=50.0)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..kernels.structs import (JOINT_BALL, JOINT_FIXED, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_UNIVERSAL,
                               NO_LIMIT)
from . import geometry as G
from . import validate as V
from .contact_params import check_solimp, check_solref

# MuJoCo's defaults of a joint's soft limit (solreflimit, solimplimit, margin)
LIMIT_SOLREF, LIMIT_SOLIMP, LIMIT_MARGIN = (0.02, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0), 0.0

IDENTITY_XFORM = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])

# Gains that hold a joint together in the semi-implicit integrator: stiff enough for a
# sub-millimetre joint error under a few kilograms. Stable at dt = 1e-4 s for jointed
# bodies whose effective mass at the anchor is above 3 g (slender links from 12 g) and whose
# smallest moment of inertia is above 2e-5 kg m^2; at dt = 5e-4 s above 35 g (slender links
# from 0.14 kg) and 3e-4 kg m^2. The conditions are in simkit/kernels/joints.py.
JOINT_LINEAR_KE, JOINT_LINEAR_KD = 1.0e5, 1.0e1
JOINT_ANGULAR_KE, JOINT_ANGULAR_KD = 1.0e3, 5.0e-2


def transform_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The transform ``a * b`` (7 numbers each: position, quaternion xyzw)."""
    return np.concatenate([a[:3] + G.quat_rotate(a[3:], b[:3]), G.quat_multiply(a[3:], b[3:])])


def transform_inverse(a: np.ndarray) -> np.ndarray:
    """The inverse of the transform ``a`` (7 numbers)."""
    q_inv = np.concatenate([-a[3:6], a[6:]])
    return np.concatenate([-G.quat_rotate(q_inv, a[:3]), q_inv])


class JointBuilder:
    """The joint methods of the rigid builder; its lists live in ``RigidBuilder._init_rigid``."""

    def _add_joint(self, kind: int, where: str, parent, child, parent_xform, child_xform, axis, limits, gains,
                   axis2=(0.0, 1.0, 0.0), dynamics=(0.0, None, 0.0), limits2=(None, None),
                   soft=(LIMIT_SOLREF, LIMIT_SOLIMP, LIMIT_MARGIN)) -> int:
        parent = V.index(parent, self.body_count, "parent", "bodies", where, allow_world=True)
        child = V.index(child, self.body_count, "child", "bodies", where)
        if parent == child:
            raise ValueError(f"{where}: parent and child must differ, got body {child} twice")
        child_xform = IDENTITY_XFORM.copy() if child_xform is None else V.xform(child_xform, f"{where}: child_xform")
        if parent_xform is None:
            # The joint frame where the child's frame is now: the joint starts satisfied.
            world = transform_multiply(self.body_q[child], child_xform)
            parent_xform = world if parent < 0 else transform_multiply(transform_inverse(self.body_q[parent]), world)
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
        solref = check_solref(soft[0], f"{where}: limit_solref")
        solimp = check_solimp(soft[1], f"{where}: limit_solimp")
        margin = V.nonneg(soft[2], f"{where}: limit_margin")
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
        self.joint_limit_soft.append([*solref, *solimp, margin])
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
                           effort_limit: float | None = None, friction: float = 0.0,
                           limit_solref: Sequence[float] = LIMIT_SOLREF,
                           limit_solimp: Sequence[float] = LIMIT_SOLIMP, limit_margin: float = LIMIT_MARGIN) -> int:
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
        ``frictionloss``; see docs/articulations.md). With ``Featherstone(contact="constraint")``
        the limits are MuJoCo's soft limit constraints, solved with the contacts, instead of the
        penalty: ``limit_solref`` (time constant, damping ratio; MuJoCo's ``solreflimit``),
        ``limit_solimp`` (MuJoCo's ``solimplimit``) and ``limit_margin`` (the distance to a limit
        from which its constraint acts; MuJoCo's ``margin``), MuJoCo's defaults (docs/contact.md).
        Returns the joint's index.

        Example::

            b.add_joint_revolute(-1, link, child_xform=sk.transform((0, 0.5, 0), (0, 0, 0, 1)), axis=(0, 0, 1))
        """
        return self._add_joint(JOINT_REVOLUTE, "add_joint_revolute", parent, child, parent_xform, child_xform, axis,
                               (limit_lower, limit_upper, limit_ke, limit_kd),
                               (target_ke, target_kd, linear_ke, linear_kd, angular_ke, angular_kd),
                               dynamics=(armature, effort_limit, friction),
                               soft=(limit_solref, limit_solimp, limit_margin))

    def add_joint_prismatic(self, parent: int, child: int, parent_xform: Any = None, child_xform: Any = None,
                            axis: Sequence[float] = (1.0, 0.0, 0.0), *, limit_lower: float | None = None,
                            limit_upper: float | None = None, limit_ke: float = 1.0e4, limit_kd: float = 1.0e1,
                            target_ke: float = 0.0, target_kd: float = 0.0, linear_ke: float = JOINT_LINEAR_KE,
                            linear_kd: float = JOINT_LINEAR_KD, angular_ke: float = JOINT_ANGULAR_KE,
                            angular_kd: float = JOINT_ANGULAR_KD, armature: float = 0.0,
                            effort_limit: float | None = None, friction: float = 0.0,
                            limit_solref: Sequence[float] = LIMIT_SOLREF,
                            limit_solimp: Sequence[float] = LIMIT_SOLIMP, limit_margin: float = LIMIT_MARGIN) -> int:
        """A slider: the child moves along ``axis`` (in the joint frame) relative to the parent,
        without turning. Limits (meters), drive (``target_ke`` in N/m), ``joint_act`` (a
        force along the axis), ``friction`` (N) and the soft limit (``limit_solref``,
        ``limit_solimp``, ``limit_margin`` in meters) as for :meth:`add_joint_revolute`.

        Example::

            b.add_joint_prismatic(-1, cart, axis=(1, 0, 0), limit_lower=-1.0, limit_upper=1.0)
        """
        return self._add_joint(JOINT_PRISMATIC, "add_joint_prismatic", parent, child, parent_xform, child_xform, axis,
                               (limit_lower, limit_upper, limit_ke, limit_kd),
                               (target_ke, target_kd, linear_ke, linear_kd, angular_ke, angular_kd),
                               dynamics=(armature, effort_limit, friction),
                               soft=(limit_solref, limit_solimp, limit_margin))

    def add_joint_ball(self, parent: int, child: int, parent_xform: Any = None, child_xform: Any = None, *,
                       limit_angle: float | None = None, limit_ke: float = 1.0e4, limit_kd: float = 1.0e1,
                       target_ke: float = 0.0, target_kd: float = 0.0, linear_ke: float = JOINT_LINEAR_KE,
                       linear_kd: float = JOINT_LINEAR_KD, armature: float = 0.0, effort_limit: float | None = None,
                       friction: float = 0.0, limit_solref: Sequence[float] = LIMIT_SOLREF,
                       limit_solimp: Sequence[float] = LIMIT_SOLIMP, limit_margin: float = LIMIT_MARGIN) -> int:
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
        the joint-space mass matrix. With ``contact="constraint"`` the angle limit is MuJoCo's
        soft limit constraint (``limit_solref``, ``limit_solimp``, ``limit_margin``, as for
        :meth:`add_joint_revolute`).

        Example::

            b.add_joint_ball(torso, arm, child_xform=sk.transform((0, 0.3, 0), (0, 0, 0, 1)), limit_angle=0.8,
                             target_ke=100.0, target_kd=5.0)
        """
        if limit_angle is not None and not 0.0 <= V.number(limit_angle, "add_joint_ball: limit_angle") <= np.pi:
            raise ValueError(f"add_joint_ball: limit_angle must be in [0, pi] radians, got {limit_angle}")
        return self._add_joint(JOINT_BALL, "add_joint_ball", parent, child, parent_xform, child_xform, (1.0, 0.0, 0.0),
                               (None, limit_angle, limit_ke, limit_kd),
                               (target_ke, target_kd, linear_ke, linear_kd, 0.0, 0.0),
                               dynamics=(armature, effort_limit, friction),
                               soft=(limit_solref, limit_solimp, limit_margin))

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
                            effort_limit: float | None = None, friction: float = 0.0,
                            limit_solref: Sequence[float] = LIMIT_SOLREF,
                            limit_solimp: Sequence[float] = LIMIT_SOLIMP, limit_margin: float = LIMIT_MARGIN) -> int:
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
        angle and ``friction`` (N m) opposes each angle's rate. With ``contact="constraint"``
        both angles' limits are soft limit constraints (``limit_solref``, ``limit_solimp``,
        ``limit_margin``, shared, as for :meth:`add_joint_revolute`).

        Example::

            b.add_joint_universal(torso, leg, axis=(1.0, 0.0, 0.0), axis2=(0.0, 0.0, 1.0), limit_lower=-0.5,
                                  limit_upper=0.5, target_ke=50.0, target_kd=2.0)
        """
        return self._add_joint(JOINT_UNIVERSAL, "add_joint_universal", parent, child, parent_xform, child_xform,
                               axis, (limit_lower, limit_upper, limit_ke, limit_kd),
                               (target_ke, target_kd, linear_ke, linear_kd, angular_ke, angular_kd),
                               axis2, dynamics=(armature, effort_limit, friction), limits2=(limit2_lower, limit2_upper),
                               soft=(limit_solref, limit_solimp, limit_margin))

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
                               IDENTITY_XFORM.copy() if parent_xform is None else parent_xform, child_xform,
                               (1.0, 0.0, 0.0), (None, None, 0.0, 0.0), (0.0,) * 6, dynamics=(armature, None, friction))
