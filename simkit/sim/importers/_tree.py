"""The robot tree both importers parse into, and the code that puts it into a builder.

A parser (URDF or MJCF) produces :class:`Body` records in parent-before-child order, each
with its pose in its parent's frame, its mass properties, its geoms and its joints (in the
order the file applies them); :func:`emit` adds them to a ``ModelBuilder`` as one
articulation. Quaternions here are (x, y, z, w), like simkit's.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np

from ...kernels.structs import JOINT_Q_COUNT, JOINT_QD_COUNT
from .. import geometry as G
from .errors import RobotFileError, RobotFileWarning
from .meshes import collider_mesh
from .mujoco_state import MujocoConversions

IDENTITY_QUAT = np.array([0.0, 0.0, 0.0, 1.0])
INERTIA_FLOOR = 1e-12      # kg m^2: the smallest principal moment of a body with mass


# -- rotations -----------------------------------------------------------------------------
def quat_axis_angle(axis, angle: float) -> np.ndarray:
    """The unit quaternion (x, y, z, w) turning by ``angle`` (rad) about ``axis``."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    return np.concatenate([a * math.sin(0.5 * angle), [math.cos(0.5 * angle)]])


def quat_from_matrix(R: np.ndarray) -> np.ndarray:
    """The unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0.0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[k, k], 0.0))
        q = [0.0, 0.0, 0.0, (R[k, j] - R[j, k]) / s]
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def quat_z_to(v) -> np.ndarray:
    """The shortest rotation taking the z axis to the direction of ``v`` (MuJoCo's rule for
    ``fromto`` and ``zaxis``)."""
    v = np.asarray(v, dtype=np.float64)
    v = v / np.linalg.norm(v)
    c = np.cross([0.0, 0.0, 1.0], v)
    s = np.linalg.norm(c)
    if s < 1e-12:
        return IDENTITY_QUAT.copy() if v[2] > 0.0 else np.array([1.0, 0.0, 0.0, 0.0])
    return quat_axis_angle(c / s, math.atan2(s, v[2]))


def transform_multiply(a, b) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.concatenate([a[:3] + G.quat_rotate(a[3:], b[:3]), G.quat_multiply(a[3:], b[3:])])


def translation(p) -> np.ndarray:
    return np.concatenate([np.asarray(p, dtype=np.float64), IDENTITY_QUAT])


# -- mass values read from a file: finite and >= 0 (MuJoCo refuses negative masses,
#    inertias and densities too; a mass of 0 stays allowed: a massless frame link) ------------

def mass_value(text: str, where: str, attr: str) -> float:
    """The number ``text`` of attribute ``attr`` (a mass or density): finite and >= 0, else a
    RobotFileError naming ``where`` (the element and the file).

    Example::

        mass_value("-5", "<link name='arm'> in robot.urdf", "mass value")   # RobotFileError
    """
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise RobotFileError(f"{where}: {attr}={text!r} is not a number") from None
    if not math.isfinite(v) or v < 0.0:
        raise RobotFileError(f"{where}: {attr} must be a finite number >= 0, got {text!r}")
    return v


def check_inertia(I: np.ndarray, where: str, attr: str) -> np.ndarray:
    """``I`` (a 3x3 inertia matrix read from ``attr``) when finite with moments >= 0 on its
    diagonal, else a RobotFileError naming ``where`` and the values.

    Example::

        check_inertia(np.diag([-1.0, 1.0, 1.0]), "<inertial> of <body name='arm'> in arm.xml", "diaginertia")
    """
    if not np.all(np.isfinite(I)) or np.any(np.diag(I) < 0.0):
        raise RobotFileError(f"{where}: {attr} must be finite with moments ixx, iyy, izz >= 0, got "
                             f"ixx={I[0, 0]:g} iyy={I[1, 1]:g} izz={I[2, 2]:g} ixy={I[0, 1]:g} ixz={I[0, 2]:g} "
                             f"iyz={I[1, 2]:g}")
    return I


# -- mass of primitive geoms (MuJoCo's formulas: capsules and cylinders along z) -----------
def primitive_mass(kind: str, size, density: float | None, mass: float | None) -> tuple[float, np.ndarray]:
    """Mass and principal moments (about the geom's center, geom axes) of a solid primitive:
    ``density * volume``, or ``mass`` when given. Sizes: sphere (r), capsule and cylinder
    (r, half length along z), box (half extents), ellipsoid (semi-axes)."""
    s = np.asarray(size, dtype=np.float64)
    if kind == "sphere":
        volume, per_mass = 4.0 / 3.0 * math.pi * s[0] ** 3, np.full(3, 0.4 * s[0] ** 2)
    elif kind == "box":
        volume = 8.0 * s[0] * s[1] * s[2]
        per_mass = np.array([s[1] ** 2 + s[2] ** 2, s[0] ** 2 + s[2] ** 2, s[0] ** 2 + s[1] ** 2]) / 3.0
    elif kind == "ellipsoid":
        volume = 4.0 / 3.0 * math.pi * s[0] * s[1] * s[2]
        per_mass = np.array([s[1] ** 2 + s[2] ** 2, s[0] ** 2 + s[2] ** 2, s[0] ** 2 + s[1] ** 2]) / 5.0
    elif kind == "cylinder":
        r, length = s[0], 2.0 * s[1]
        volume = math.pi * r * r * length
        per_mass = np.array([(3.0 * r * r + length * length) / 12.0] * 2 + [0.5 * r * r])
    elif kind == "capsule":
        # a cylinder and a sphere split in two hemispheres moved to its ends
        r, length = s[0], 2.0 * s[1]
        volume = math.pi * r * r * (length + 4.0 / 3.0 * r)
        f_sphere = (4.0 / 3.0 * r) / (length + 4.0 / 3.0 * r)
        f_cyl = 1.0 - f_sphere
        transverse = f_cyl * (3.0 * r * r + length * length) / 12.0 + f_sphere * (
            0.4 * r * r + length * (3.0 * r + 2.0 * length) / 8.0)
        per_mass = np.array([transverse, transverse, f_cyl * 0.5 * r * r + f_sphere * 0.4 * r * r])
    else:
        raise ValueError(f"primitive_mass: unknown kind {kind!r}")
    m = float(mass) if mass is not None else float(density) * volume
    return m, m * per_mass


# -- the tree -------------------------------------------------------------------------------
@dataclass
class Geom:
    kind: str                     # sphere, box, capsule, cylinder, ellipsoid, mesh, plane, ...
    where: str                    # "<geom name='foot'> in file.xml", for messages
    pos: np.ndarray
    quat: np.ndarray
    size: np.ndarray              # as primitive_mass reads it
    collide: bool = True
    contype: int = 1              # MuJoCo's collision bitmasks (URDF: always 1)
    conaffinity: int = 1
    mesh: tuple | None = None     # a mesh geom's (file, scale)
    hfield: tuple | None = None   # a heightfield geom's (heights nx x nz in simkit's grid, (hx, hz))
    mu: float | None = None       # sliding friction coefficient (None: the builder's default)
    # MuJoCo's other contact parameters (torsional_mu, rolling_mu, condim, solref, solimp,
    # margin, gap), as add_shape_* takes them; empty: the builder's defaults (URDF)
    contact: dict = field(default_factory=dict)


@dataclass
class Joint:
    kind: str                     # hinge, slide, ball, free
    name: str
    where: str
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    limits: tuple | None = None   # in simkit coordinates (the file's reference subtracted); ball: (None, angle)
    ref: float = 0.0              # the file's coordinate where simkit's is 0
    damping: float = 0.0
    armature: float = 0.0
    stiffness: float = 0.0
    frictionloss: float = 0.0
    target_ke: float = 0.0
    target_kd: float = 0.0
    effort: float | None = None   # simkit's effort_limit (None: unbounded)
    # MuJoCo's soft limit (solreflimit, solimplimit, margin) as add_joint_* takes them
    # (limit_solref, limit_solimp, limit_margin); empty: the builder's defaults (URDF)
    soft: dict = field(default_factory=dict)


@dataclass
class Body:
    name: str | None
    parent: int                   # index into the body list, -1: the world
    where: str
    pos: np.ndarray
    quat: np.ndarray
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    geoms: list = field(default_factory=list)
    joints: list = field(default_factory=list)
    inertial: tuple | None = None   # (mass, com, inertia) as the file gives it, if it does


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _caller_outside_simkit() -> int:
    """The ``stacklevel`` of the first caller outside the simkit package, for a warning
    raised from its caller: the warning then shows the user's line that imported the robot
    file, not a line of simkit's, however deep in simkit the import ran."""
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    return level


@dataclass
class ImportRecord(MujocoConversions):
    """What an importer made of a robot file, in ``builder.imports[articulation]``.

    ``bodies`` and ``joints`` map the file's names to simkit body and joint indices;
    ``body_order`` lists the simkit body of each body of the file in the file's order (for
    MJCF, MuJoCo's body order without the world); ``joint_order`` the joints in the file's
    order (MuJoCo's ``qpos`` order), each as ``(name, kind, simkit joint)``. Per joint name:
    ``joint_ref`` (the file's coordinate at simkit's 0), ``joint_armature`` (simkit's joint
    ``armature``), ``joint_damping`` (simkit applies it as the drive's ``target_kd``; free
    joints: not simulated), ``joint_stiffness`` (not simulated) and ``joint_frictionloss``
    (simkit's joint ``friction``, simulated by :class:`~simkit.sim.Featherstone`).
    ``actuators`` lists the file's actuators as dicts; ``warnings`` what was not imported.
    ``q_offsets`` / ``qd_offsets`` give each joint of ``joint_order`` its offset in the
    articulation's coordinates / velocities. ``ground`` names the plane geom that became the
    builder's ground (None: none did). The conversions to and from MuJoCo's ``qpos``,
    ``qvel``, ``ctrl`` and tangent space are inherited from
    :class:`~simkit.sim.importers.mujoco_state.MujocoConversions`.
    """

    path: str
    articulation: int
    bodies: dict = field(default_factory=dict)
    body_order: list = field(default_factory=list)
    joints: dict = field(default_factory=dict)
    joint_order: list = field(default_factory=list)
    joint_ref: dict = field(default_factory=dict)
    joint_armature: dict = field(default_factory=dict)
    joint_damping: dict = field(default_factory=dict)
    joint_stiffness: dict = field(default_factory=dict)
    joint_frictionloss: dict = field(default_factory=dict)
    actuators: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    # per joint_order entry: its offsets in the articulation's joint_q and joint_qd, and their sizes
    q_offsets: list = field(default_factory=list)
    qd_offsets: list = field(default_factory=list)
    q_count: int = 0
    qd_count: int = 0
    ground: str | None = None     # the plane geom that became the builder's ground, if one did

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        warnings.warn(message, RobotFileWarning, stacklevel=_caller_outside_simkit())

    def joint_q_from_mujoco(self, qpos) -> np.ndarray:
        """The articulation's ``joint_q`` (to put at ``model.articulation_coords(a)``) for
        MuJoCo's ``qpos`` of the same file: references subtracted, quaternions to (x, y, z, w).

        Example::

            q = record.joint_q_from_mujoco(mj_data.qpos)
            start, stop = model.articulation_coords(record.articulation)
        """
        qpos = np.asarray(qpos, dtype=np.float64)
        out, i = np.zeros(self.q_count), 0
        for (name, kind, _), o in zip(self.joint_order, self.q_offsets):
            if kind == "free":
                out[o:o + 3], out[o + 3:o + 7] = qpos[i:i + 3], np.roll(qpos[i + 3:i + 7], -1)
                i += 7
            elif kind == "ball":
                out[o:o + 4] = np.roll(qpos[i:i + 4], -1)
                i += 4
            else:
                out[o] = qpos[i] - self.joint_ref.get(name, 0.0)
                i += 1
        return out



def _joint_args(j: Joint) -> dict:
    lo, hi = j.limits if j.limits is not None else (None, None)
    return dict(axis=j.axis, limit_lower=lo, limit_upper=hi, target_ke=j.target_ke, target_kd=j.target_kd,
                armature=j.armature, effort_limit=j.effort, friction=j.frictionloss, **j.soft)


def emit(builder, bodies: list, xform, record: ImportRecord, static_geoms: list) -> None:
    """Add ``bodies`` (parent before child) to ``builder`` as the articulation
    ``record.articulation`` placed by ``xform``, and ``static_geoms`` (in the world frame of
    the file) as static shapes."""
    world = np.asarray(xform, dtype=np.float64)
    _warn_unfiltered_overlaps(bodies, static_geoms, record)
    for b in bodies:
        w = np.linalg.eigvalsh(b.inertia)
        if b.mass > 0.0 and w.min() < INERTIA_FLOOR:
            # a body with mass needs an invertible inertia in simkit (and in MuJoCo)
            record.warn(f"{b.where}: the inertia of a body of mass {b.mass:g} has principal moments "
                        f"{np.round(w, 12).tolist()}; those below {INERTIA_FLOOR:g} kg m^2 are raised to it")
            V = np.linalg.eigh(b.inertia)[1]
            b.inertia = V @ np.diag(np.maximum(w, INERTIA_FLOOR)) @ V.T
    poses, index = [], []
    first_joint = builder.joint_count
    chained = []
    for b in bodies:
        local = np.concatenate([b.pos, b.quat])
        base = world if b.parent < 0 else poses[b.parent]
        pose = transform_multiply(base, local)
        poses.append(pose)
        sb = builder.add_body(origin=pose)
        index.append(sb)
        record.body_order.append(sb)
        if b.name is not None:
            record.bodies[b.name] = sb
        if b.mass > 0.0:
            builder.add_body_inertia(sb, b.mass, b.com, b.inertia)
        for g in b.geoms:
            _add_collider(builder, g, np.concatenate([g.pos, g.quat]), sb, record)
        parent = -1 if b.parent < 0 else index[b.parent]
        if not b.joints:
            builder.add_joint_fixed(parent, sb, parent_xform=local if parent >= 0 else pose)
            continue
        if any(j.kind == "free" for j in b.joints):
            if len(b.joints) > 1:
                raise RobotFileError(f"{b.where}: a free joint must be the body's only joint, got "
                                     f"{len(b.joints)} joints")
            j = b.joints[0]
            # the joint frame is the parent's frame (None: the identity), so the coordinates are the pose in it
            builder.add_joint_free(parent, sb, parent_xform=world if parent < 0 else None, armature=j.armature,
                                   friction=j.frictionloss)
            _record_joint(record, j, builder.joint_count - 1)
            continue
        if len(b.joints) > 1:
            chained.append(f"{b.where} ({len(b.joints)} joints)")
        frame = local if parent >= 0 else pose        # the body's reference frame in the parent's
        for k, j in enumerate(b.joints):
            child = sb if k == len(b.joints) - 1 else builder.add_body(origin=pose)
            anchor = translation(j.pos)
            px = transform_multiply(frame, anchor)
            if j.kind == "ball":
                builder.add_joint_ball(parent, child, parent_xform=px, child_xform=anchor, armature=j.armature,
                                       limit_angle=j.limits[1] if j.limits is not None else None,
                                       target_kd=j.target_kd, friction=j.frictionloss, **j.soft)
            elif j.kind in ("hinge", "slide"):
                add = builder.add_joint_revolute if j.kind == "hinge" else builder.add_joint_prismatic
                add(parent, child, parent_xform=px, child_xform=anchor, **_joint_args(j))
            else:
                raise RobotFileError(f"{j.where}: unknown joint type {j.kind!r}")
            _record_joint(record, j, builder.joint_count - 1)
            parent, frame = child, np.concatenate([np.zeros(3), IDENTITY_QUAT])
    for g in static_geoms:
        _add_collider(builder, g, transform_multiply(world, np.concatenate([g.pos, g.quat])), -1, record)
    if chained:
        record.warn(f"{record.path}: bodies with several joints are chained through massless bodies, which "
                    "mass_matrix, eval_fk and eval_ik handle but SemiImplicitEuler and XPBD move kinematically: "
                    + ", ".join(chained))
    # coordinate offsets of the file's joints inside the articulation
    kinds = builder.joint_kind[first_joint:]
    q_starts = np.concatenate([[0], np.cumsum([JOINT_Q_COUNT[k] for k in kinds])])
    qd_starts = np.concatenate([[0], np.cumsum([JOINT_QD_COUNT[k] for k in kinds])])
    record.q_offsets = [int(q_starts[j - first_joint]) for _, _, j in record.joint_order]
    record.qd_offsets = [int(qd_starts[j - first_joint]) for _, _, j in record.joint_order]
    record.q_count, record.qd_count = int(q_starts[-1]), int(qd_starts[-1])


def _bounding_radius(g: Geom) -> float | None:
    if g.kind == "sphere":
        return float(g.size[0])
    if g.kind == "capsule":
        return float(g.size[0] + g.size[1])
    if g.kind == "cylinder":
        return float(math.hypot(g.size[0], g.size[1]))
    if g.kind == "box":
        return float(np.linalg.norm(g.size[:3]))
    if g.kind == "ellipsoid":
        return float(np.max(g.size[:3]))
    return None                   # not a simkit collider


def _warn_unfiltered_overlaps(bodies: list, static_geoms: list, record: ImportRecord) -> None:
    """Warn about colliders of a parent and its child that overlap as built, which MuJoCo
    never lets collide but simkit will where the child hangs from its parent by more than one
    joint (through massless bodies): simkit skips the shapes of two bodies joined directly by
    a joint, and the file's contype/conaffinity bitmasks become simkit's collision filter
    (set_shape_collision)."""
    poses = []
    for b in bodies:
        local = np.concatenate([b.pos, b.quat])
        poses.append(local if b.parent < 0 else transform_multiply(poses[b.parent], local))
    shapes = [(-1, g.pos, _bounding_radius(g), g) for g in static_geoms if g.collide]
    for i, b in enumerate(bodies):
        shapes += [(i, transform_multiply(poses[i], np.concatenate([g.pos, g.quat]))[:3], _bounding_radius(g), g)
                   for g in b.geoms if g.collide]
    shapes = [s for s in shapes if s[2] is not None]
    found = []
    for k, (i, ci, ri, gi) in enumerate(shapes):
        for j, cj, rj, gj in shapes[k + 1:]:
            if i == j or np.linalg.norm(ci - cj) >= ri + rj:
                continue
            related = i >= 0 and (bodies[j].parent == i or bodies[i].parent == j)
            child = bodies[j] if related and bodies[j].parent == i else bodies[i]
            if related and len(child.joints) <= 1:
                continue          # one simkit joint between them: simkit skips the pair too
            masked = not (gi.contype & gj.conaffinity or gj.contype & gi.conaffinity)
            if related and not masked:
                found.append(f"{gi.where.split(' in ')[0]} and {gj.where.split(' in ')[0]}")
    if found:
        record.warn(f"{record.path}: {len(found)} pairs of colliders of a parent and its child may touch as built "
                    "though MuJoCo never lets them collide; simkit does (the child hangs by more than one joint), "
                    "so they push each other apart in SemiImplicitEuler and XPBD (set_shape_collision can separate "
                    "them): " + ", ".join(found[:8]) + (", ..." if len(found) > 8 else ""))


def _record_joint(record: ImportRecord, j: Joint, index: int) -> None:
    record.joints[j.name] = index
    record.joint_order.append((j.name, j.kind, index))
    record.joint_ref[j.name] = j.ref
    record.joint_armature[j.name] = j.armature
    record.joint_damping[j.name] = j.damping
    record.joint_stiffness[j.name] = j.stiffness
    record.joint_frictionloss[j.name] = j.frictionloss


# the files' capsules and cylinders lie along their z axis, simkit's along y
_Y_TO_Z = quat_axis_angle([1.0, 0.0, 0.0], 0.5 * math.pi)


def _add_collider(builder, g: Geom, X: np.ndarray, body: int, record: ImportRecord) -> None:
    """A collider for geom ``g`` at ``X`` (in the body's frame, or the world's for body -1);
    its mass, if any, is already in the body's inertia."""
    if g.kind == "plane" and _ground_plane(builder, g, X, body, record):
        return                                          # masks and all, even one that touches nothing
    if not g.collide:
        return
    pos, rot = X[:3], X[3:]
    material = dict(g.contact, mu=g.mu, contype=g.contype, conaffinity=g.conaffinity)
    if g.kind == "plane":
        # infinite, as MuJoCo collides every plane (its size is only drawn); its normal is its z
        builder.add_shape_plane(pos, G.quat_multiply(rot, _Y_TO_Z), **material)
        return
    if g.kind == "hfield":
        if g.hfield is None:
            return                                      # its elevations are in a file: warned at its asset
        if body >= 0:
            record.warn(f"{g.where}: a heightfield on a moving body is not imported as a collider (simkit's "
                        "heightfields are static)")
            return
        # MuJoCo's grid is on its x-y plane, heights along z: turned onto simkit's x-z plane and y
        builder.add_shape_heightfield(pos, G.quat_multiply(rot, _Y_TO_Z), g.hfield[0], g.hfield[1], **material)
        return
    if g.kind == "sphere":
        builder.add_shape_sphere(pos, g.size[0], body=body, density=0.0, **material)
    elif g.kind == "box":
        builder.add_shape_box(pos, rot, g.size[:3], body=body, density=0.0, **material)
    elif g.kind == "capsule":
        builder.add_shape_capsule(pos, G.quat_multiply(rot, _Y_TO_Z), g.size[0], g.size[1],
                                  body=body, density=0.0, **material)
    elif g.kind == "cylinder":
        builder.add_shape_cylinder(pos, G.quat_multiply(rot, _Y_TO_Z), g.size[0], g.size[1],
                                   body=body, density=0.0, **material)
    elif g.kind == "ellipsoid":
        builder.add_shape_ellipsoid(pos, rot, g.size[:3], body=body, density=0.0, **material)
    elif g.kind == "mesh" and g.mesh is not None:
        try:
            vertices, triangles = collider_mesh(g.mesh[0], g.mesh[1], g.where)
        except (ImportError, FileNotFoundError, RobotFileError) as e:
            record.warn(f"{e}; it is not a collider (the body's mass is unaffected)")
            return
        builder.add_shape_mesh(body, vertices, triangles, xform=X, density=0.0, **material)
    else:
        record.warn(f"{g.where}: simkit has no {g.kind} shape; it is not a collider (the body's mass is unaffected)")


def _ground_plane(builder, g: Geom, X: np.ndarray, body: int, record: ImportRecord) -> bool:
    """Make the plane geom ``g`` (at ``X`` in the world, or in a body's frame) the builder's
    ground where it is that plane: the first static plane through the origin, normal to the
    builder's up axis, when the builder has a ground. Its contact parameters become the
    ground's (``set_ground_material``). Returns whether it did, or whether the plane is to be
    left out (a plane on a moving body, with a warning naming the geom); any other plane
    becomes a plane shape (``add_shape_plane``)."""
    if body >= 0:
        record.warn(f"{g.where}: a plane on a moving body is not imported as a collider (simkit's planes are "
                    "static, as MuJoCo's)")
        return True
    up = np.zeros(3)
    up["xyz".index(builder.up_axis)] = 1.0
    normal = G.quat_rotate(X[3:], np.array([0.0, 0.0, 1.0]))
    if (not builder.ground or record.ground is not None
            or not (np.allclose(normal, up, atol=1e-9) and abs(float(X[:3] @ up)) <= 1e-9)):
        return False
    builder.set_ground_material(mu=g.mu, contype=g.contype, conaffinity=g.conaffinity, **g.contact)
    record.ground = g.where.split(" in ")[0]
    return True
