"""Robot file importers: URDF and MJCF into a :class:`~simkit.sim.ModelBuilder` articulation.

``ModelBuilder.add_urdf`` and ``ModelBuilder.add_mjcf`` parse with the standard library's
``xml.etree``; mesh geoms need trimesh (``pip install simkit[meshes]``). What a file holds
that simkit does not simulate is kept in ``builder.imports[articulation]`` (an
:class:`ImportRecord`) and reported as a :class:`RobotFileWarning`. See docs/importers.md.

Example::

    b = sk.sim.ModelBuilder(up_axis="z")
    arm = b.add_urdf("arm.urdf")
    print(b.imports[arm].joints)         # {'shoulder': 1, 'elbow': 2, ...}
"""

from __future__ import annotations

from typing import Any

from ._tree import ImportRecord, RobotFileError, RobotFileWarning

__all__ = ["ImportRecord", "RobotFileError", "RobotFileWarning", "ImporterMixin"]


class ImporterMixin:
    """``add_urdf`` and ``add_mjcf`` for :class:`~simkit.sim.ModelBuilder`."""

    @property
    def imports(self) -> dict:
        """The :class:`ImportRecord` of each imported articulation, by articulation index."""
        return self.__dict__.setdefault("_imports", {})

    def add_urdf(self, path: Any, xform: Any = None, floating: bool = False) -> int:
        """Add the robot of the URDF file ``path`` as a new articulation and return its index.

        Links become bodies (mass, center of mass and inertia from their ``<inertial>``),
        ``<collision>`` boxes, spheres, capsules, cylinders and meshes (their convex hulls)
        become colliders, joints become simkit joints (revolute,
        continuous, prismatic, fixed, floating; planar as two sliders and a hinge) with their
        axes, limits, ``dynamics damping`` (as the drive's ``target_kd``) and ``dynamics
        friction`` (as the joint's dry ``friction``). The root link is
        welded to the world at ``xform`` (a transform, default identity), or free when
        ``floating=True``. Names map to indices in ``self.imports[index]``.

        Example::

            b = sk.sim.ModelBuilder(up_axis="z", ground=False)
            arm = b.add_urdf("arm.urdf", xform=sk.transform((0, 0, 0.5), (0, 0, 0, 1)))
            elbow = b.imports[arm].joints["elbow"]
        """
        from .urdf import add_urdf
        return add_urdf(self, path, xform, floating)

    def add_mjcf(self, path: Any, xform: Any = None) -> int:
        """Add the bodies of the MJCF (MuJoCo XML) file ``path`` as a new articulation, placed by
        ``xform`` (a transform, default identity), and return its index.

        Follows MuJoCo's compiler for default classes, angles (``compiler angle`` and
        ``eulerseq``), orientations, ``fromto`` and masses (``inertial``, or the geoms with
        density 1000 unless given); joints (hinge, slide, ball, free) keep their axes and
        ranges (a ball joint's bounds its rotation angle), their ``damping`` becomes the drive's
        ``target_kd``, their ``frictionloss`` the joint's dry ``friction``, and ``position`` /
        ``velocity`` actuators its ``target_ke`` / ``target_kd``. The simkit coordinate of a
        joint is MuJoCo's minus its ``ref``; ``self.imports[index].joint_q_from_mujoco(qpos)``
        converts. Worldbody geoms become static shapes.

        Example::

            b = sk.sim.ModelBuilder(up_axis="z")
            ant = b.add_mjcf("ant.xml")
            hip = b.imports[ant].joints["hip_1"]
        """
        from .mjcf import add_mjcf
        return add_mjcf(self, path, xform)
