"""URDF import: :meth:`ModelBuilder.add_urdf <simkit.sim.ModelBuilder.add_urdf>`.

Links become bodies with the mass, center of mass and inertia of their ``<inertial>``;
their ``<collision>`` geometries become colliders of no mass (``<visual>`` is not physical and
is skipped); joints become simkit joints with the URDF's frames (the child link's frame is
the joint frame), axes, limits and damping. See docs/importers.md.

Example::

    b = sk.sim.ModelBuilder(up_axis="z", ground=False)
    arm = b.add_urdf("arm.urdf")
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .. import geometry as G
from ._tree import (IDENTITY_QUAT, Body, Geom, ImportRecord, Joint, RobotFileError, check_inertia, emit, mass_value,
                    quat_axis_angle)
from .mjcf import _floats, _load_xml

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_QUIET = {"material", "gazebo", "mujoco"}       # appearance, and other simulators' settings


def _rpy(rpy) -> np.ndarray:
    """URDF's roll-pitch-yaw: turns about the fixed x, then y, then z axes."""
    q = quat_axis_angle([1.0, 0.0, 0.0], rpy[0])
    q = G.quat_multiply(quat_axis_angle([0.0, 1.0, 0.0], rpy[1]), q)
    return G.quat_multiply(quat_axis_angle([0.0, 0.0, 1.0], rpy[2]), q)


def _origin(elem: ET.Element | None, where: str) -> np.ndarray:
    if elem is None:
        return np.concatenate([np.zeros(3), IDENTITY_QUAT])
    xyz = _floats(elem.get("xyz", "0 0 0"), where, "origin xyz", 3)
    return np.concatenate([xyz, _rpy(_floats(elem.get("rpy", "0 0 0"), where, "origin rpy", 3))])


def _where(elem: ET.Element, path: Path) -> str:
    name = elem.get("name")
    return f"<{elem.tag}{'' if name is None else f' name={name!r}'}> in {path}"


def _link(elem: ET.Element, path: Path, record: ImportRecord) -> Body:
    where = _where(elem, path)
    b = Body(elem.get("name"), -1, where, np.zeros(3), IDENTITY_QUAT.copy())
    inertial = elem.find("inertial")
    if inertial is not None:
        X = _origin(inertial.find("origin"), where)
        m = inertial.find("mass")
        if m is None or "value" not in m.attrib:
            raise RobotFileError(f"{where}: <inertial> needs <mass value=...>")
        i = inertial.find("inertia")
        if i is None:
            raise RobotFileError(f"{where}: <inertial> needs <inertia ixx=... >")
        try:
            v = {k: float(i.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        except ValueError:
            raise RobotFileError(f"{where}: <inertia> has a value that is not a number: {i.attrib}") from None
        I = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]])
        I = check_inertia(I, where, "<inertia>")
        R = G.quat_to_matrix(X[3:])
        b.mass, b.com, b.inertia = mass_value(m.get("value"), where, "<mass value>"), X[:3], R @ I @ R.T
    for c in elem.findall("collision"):
        g = _geometry(c, path, record)
        if g is not None:
            b.geoms.append(g)
    for child in elem:
        if child.tag not in ("inertial", "collision", "visual"):
            record.warn(f"{_where(child, path)} (in {where}) is not supported and is ignored")
    return b


def _geometry(collision: ET.Element, path: Path, record: ImportRecord) -> Geom | None:
    where = _where(collision, path)
    X = _origin(collision.find("origin"), where)
    geometry = collision.find("geometry")
    if geometry is None or len(geometry) == 0:
        raise RobotFileError(f"{where}: <collision> needs a <geometry>")
    shape = geometry[0]
    where = f"<{shape.tag}> of {where}"
    if shape.tag == "box":
        size = 0.5 * _floats(shape.get("size", ""), where, "size", 3)
        return Geom("box", where, X[:3], X[3:], size)
    if shape.tag == "sphere":
        return Geom("sphere", where, X[:3], X[3:], np.array([float(shape.get("radius", "0")), 0.0, 0.0]))
    if shape.tag in ("cylinder", "capsule"):
        return Geom(shape.tag, where, X[:3], X[3:],
                    np.array([float(shape.get("radius", "0")), 0.5 * float(shape.get("length", "0")), 0.0]))
    if shape.tag == "mesh":
        filename = shape.get("filename")
        if not filename:
            raise RobotFileError(f"{where}: <mesh> needs a filename")
        scale = _floats(shape.get("scale", "1 1 1"), where, "scale", 3)
        g = Geom("mesh", where, X[:3], X[3:], np.zeros(3))
        g.mesh = (_mesh_file(filename, path), scale)
        return g
    record.warn(f"{where}: unknown geometry, ignored")
    return None


def _mesh_file(filename: str, path: Path) -> Path:
    """The file a URDF ``<mesh filename>`` names: ``file://`` an absolute or relative path,
    ``package://name/rest`` the ``rest`` of the folder ``name`` found above the URDF (or next
    to it), a plain name relative to the URDF's folder."""
    base = Path(path).resolve().parent
    if filename.startswith("file://"):
        file = Path(filename[len("file://"):])
        return file if file.is_absolute() else base / file
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        for folder in [base, *base.parents]:
            if folder.name == package and (folder / rest).exists():
                return folder / rest
            if (folder / package / rest).exists():
                return folder / package / rest
        return base / rest
    return base / filename


def _joint(elem: ET.Element, path: Path) -> tuple[list, np.ndarray]:
    """The simkit joints of a URDF joint (planar: two sliders and a hinge) and its origin."""
    where = _where(elem, path)
    kind, name = elem.get("type"), elem.get("name")
    X = _origin(elem.find("origin"), where)
    a = elem.find("axis")
    axis = _floats(a.get("xyz", "1 0 0"), where, "axis xyz", 3) if a is not None else np.array([1.0, 0.0, 0.0])
    if kind in ("revolute", "continuous", "prismatic", "planar") and np.linalg.norm(axis) < 1e-12:
        raise RobotFileError(f"{where}: axis must be nonzero")
    axis = axis / max(np.linalg.norm(axis), 1e-300)
    dyn = elem.find("dynamics")
    damping = float(dyn.get("damping", "0")) if dyn is not None else 0.0
    friction = float(dyn.get("friction", "0")) if dyn is not None else 0.0
    limits = None
    lim = elem.find("limit")
    if kind in ("revolute", "prismatic"):
        if lim is None:
            raise RobotFileError(f"{where}: a {kind} joint needs a <limit>")
        limits = (float(lim.get("lower", "0")), float(lim.get("upper", "0")))
    # <limit effort> bounds the joint's torque (force); 0 or absent: unbounded
    effort = float(lim.get("effort", "0")) if lim is not None else 0.0
    if not np.isfinite(effort) or effort < 0.0:
        raise RobotFileError(f"{where}: limit effort must be a finite number >= 0, got {effort}")
    if kind == "fixed":
        return [], X
    if kind == "floating":
        return [Joint("free", name, where)], X
    if kind == "planar":
        # two sliders in the plane normal to the axis, then a hinge about it
        u = np.cross(axis, [1.0, 0.0, 0.0] if abs(axis[0]) < 0.9 else [0.0, 1.0, 0.0])
        u /= np.linalg.norm(u)
        v = np.cross(axis, u)
        return [Joint("slide", f"{name}_u", where, axis=u), Joint("slide", f"{name}_v", where, axis=v),
                Joint("hinge", f"{name}_angle", where, axis=axis)], X
    j = Joint("hinge" if kind in ("revolute", "continuous") else "slide", name, where, axis=axis, limits=limits,
              damping=damping, frictionloss=friction, target_kd=damping, effort=effort if effort > 0.0 else None)
    return [j], X


def add_urdf(builder, path, xform=None, floating: bool = False) -> int:
    """Load the URDF file ``path`` into ``builder`` as one articulation (see
    :meth:`simkit.sim.ModelBuilder.add_urdf`) and return its index."""
    from .. import validate as V
    path = Path(path)
    X = np.concatenate([np.zeros(3), IDENTITY_QUAT]) if xform is None else V.xform(xform, "add_urdf: xform")
    record = ImportRecord(str(path), -1)
    root = _load_xml(path, "add_urdf")
    if root.tag != "robot":
        raise RobotFileError(f"add_urdf: {path} is not URDF: its root element is <{root.tag}>, not <robot>")
    links, joints = {}, []
    for child in root:
        if child.tag == "link":
            if not child.get("name"):
                raise RobotFileError(f"<link> in {path}: a link needs a name")
            if child.get("name") in links:
                raise RobotFileError(f"{_where(child, path)}: two links are named {child.get('name')!r}")
            links[child.get("name")] = _link(child, path, record)
        elif child.tag == "joint":
            joints.append(child)
        elif child.tag not in _QUIET:
            record.warn(f"{_where(child, path)} is not supported and is ignored")
    if not links:
        raise RobotFileError(f"add_urdf: {path} has no <link>")
    parent_of: dict = {}
    for j in joints:
        where = _where(j, path)
        if j.get("type") not in _JOINT_TYPES:
            raise RobotFileError(f"{where}: unknown joint type {j.get('type')!r} ({', '.join(_JOINT_TYPES)})")
        p, c = j.find("parent"), j.find("child")
        p, c = None if p is None else p.get("link"), None if c is None else c.get("link")
        for role, link in (("parent", p), ("child", c)):
            if link not in links:
                raise RobotFileError(f"{where}: its {role} link {link!r} is not a link of the file")
        if c in parent_of:
            raise RobotFileError(f"{where}: link {c!r} has two parents, {parent_of[c][0]!r} (joint "
                                 f"{parent_of[c][1].get('name')!r}) and {p!r}")
        parent_of[c] = (p, j)
        if j.find("mimic") is not None:
            record.warn(f"{where}: <mimic> is not simulated; the joint moves on its own")
    roots = [n for n in links if n not in parent_of]
    if len(roots) != 1:
        raise RobotFileError(f"add_urdf: {path} must have one root link (a link no joint has as child), got "
                             f"{roots if roots else 'none: the joints form a loop'}")
    # bodies in parent-before-child order, joints in that order too
    children: dict = {}
    for c, (p, j) in parent_of.items():
        children.setdefault(p, []).append(c)
    order, stack = [], [roots[0]]
    while stack:
        n = stack.pop()
        order.append(n)
        stack.extend(reversed(children.get(n, [])))
    index = {n: i for i, n in enumerate(order)}
    bodies = []
    for n in order:
        b = links[n]
        if n in parent_of:
            p, j = parent_of[n]
            b.parent = index[p]
            b.joints, origin = _joint(j, path)
            b.pos, b.quat = origin[:3], origin[3:]
        elif floating:
            b.joints = [Joint("free", "floating_base", f"the root link {n!r} of {path}")]
        bodies.append(b)
    record.articulation = builder.add_articulation()
    emit(builder, bodies, X, record, [])
    builder.end_articulation()
    builder.imports[record.articulation] = record
    return record.articulation
