"""MJCF (MuJoCo XML) import: :meth:`ModelBuilder.add_mjcf <simkit.sim.ModelBuilder.add_mjcf>`.

Reads the file with ``xml.etree`` and follows MuJoCo's compiler: ``default`` classes (nested,
``class`` and ``childclass``), ``compiler angle``/``eulerseq``/``inertiafromgeom``/
``settotalmass``/``boundmass``/``boundinertia``/``meshdir``, orientations given as ``quat``,
``euler``, ``axisangle``, ``xyaxes`` or ``zaxis``, ``fromto``, body masses from ``inertial``
or from the geoms (density 1000 unless given, MuJoCo's inertia of each primitive; meshes
through trimesh), ``frame`` and ``include``. See docs/importers.md.

Example::

    b = sk.sim.ModelBuilder(up_axis="z")
    a = b.add_mjcf("ant.xml")
    record = b.imports[a]          # names -> indices, armature, actuators, warnings
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from .. import geometry as G
from .. import validate as V
from ..builder_joints import LIMIT_SOLIMP, LIMIT_SOLREF
from ..contact_params import CONTACT_DEFAULTS, check_solimp, check_solref, contact_params
from ._tree import (IDENTITY_QUAT, Body, Geom, ImportRecord, Joint, RobotFileError, check_inertia, emit, mass_value,
                    primitive_mass, quat_axis_angle, quat_from_matrix, quat_z_to, transform_multiply)
from .hfield import read_hfield

_ACTUATORS = ("general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder", "muscle", "adhesion",
              "plugin")
# top-level sections that hold nothing physical simkit could use, or that the importer reads itself
_QUIET_SECTIONS = {"compiler", "option", "size", "visual", "statistic", "default", "asset", "worldbody", "actuator",
                   "sensor", "keyframe", "custom", "extension"}
_QUIET_IN_BODY = {"site", "camera", "light"}          # no mass, no joint


def _class_vector(elem: ET.Element, d: dict, attr: str, default: Any, where: str) -> np.ndarray:
    """The vector attribute ``attr`` of ``elem`` over its default class ``d`` over MuJoCo's
    ``default``: a vector given with fewer numbers keeps the rest from below, as MuJoCo reads it."""
    v = np.array(default, dtype=np.float64)
    for text in (d.get(attr), elem.get(attr)):
        if text is not None:
            given = _floats(text, where, attr)
            if not 1 <= len(given) <= len(v):
                raise RobotFileError(f"{where}: {attr} must have 1 to {len(v)} numbers, got {text!r}")
            v[:len(given)] = given
    return v


def _floats(text: str, where: str, attr: str, count: int | None = None) -> np.ndarray:
    try:
        v = np.array([float(t) for t in text.split()], dtype=np.float64)
    except ValueError:
        raise RobotFileError(f"{where}: {attr}={text!r} is not a list of numbers") from None
    if count is not None and len(v) != count:
        raise RobotFileError(f"{where}: {attr} must have {count} numbers, got {text!r}")
    return v


def _load_xml(path: Path, who: str) -> ET.Element:
    if not path.is_file():
        raise FileNotFoundError(f"{who}: no such file: {path}")
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as e:
        raise RobotFileError(f"{who}: {path} is not valid XML: {e}") from None


class _Reader:
    def __init__(self, path: Path, record: ImportRecord):
        self.path, self.record = path, record
        self.root = _load_xml(path, "add_mjcf")
        if self.root.tag != "mujoco":
            raise RobotFileError(f"add_mjcf: {path} is not MJCF: its root element is <{self.root.tag}>, not <mujoco>")
        self._expand_includes(self.root, path.parent, 0)
        c = {}
        for comp in self.root.iter("compiler"):
            c.update(comp.attrib)
        where = f"<compiler> in {path}"
        if c.get("coordinate", "local") != "local":
            raise RobotFileError(f"{where}: coordinate={c['coordinate']!r} is not supported (only 'local')")
        angle = c.get("angle", "degree")
        if angle not in ("degree", "radian"):
            raise RobotFileError(f"{where}: angle must be 'degree' or 'radian', got {angle!r}")
        self.angle = math.pi / 180.0 if angle == "degree" else 1.0
        self.eulerseq = c.get("eulerseq", "xyz")
        if len(self.eulerseq) != 3 or any(ch not in "xyzXYZ" for ch in self.eulerseq):
            raise RobotFileError(f"{where}: eulerseq must be three of x, y, z, X, Y, Z, got {self.eulerseq!r}")
        self.inertiafromgeom = c.get("inertiafromgeom", "auto")
        self.autolimits = c.get("autolimits", "true") == "true"
        self.settotalmass = float(c.get("settotalmass", "-1"))
        self.boundmass = float(c.get("boundmass", "0"))
        self.boundinertia = float(c.get("boundinertia", "0"))
        self.groups = _floats(c.get("inertiagrouprange", "0 5"), where, "inertiagrouprange", 2)
        if c.get("balanceinertia", "false") == "true":
            record.warn(f"{where}: balanceinertia is not supported; the inertias are used as given")
        model_dir = path.parent
        self.meshdir = model_dir / c.get("meshdir", c.get("assetdir", ""))
        self.classes: dict = {}
        for d in self.root.findall("default"):
            self._read_default(d, {}, "main")
        self.meshes = {}
        for asset in self.root.findall("asset"):
            for m in asset.findall("mesh"):
                file = m.get("file")
                if file is None:
                    record.warn(f"<mesh name={m.get('name')!r}> in {path}: a mesh without a file is not supported")
                    continue
                name = m.get("name", Path(file).stem)
                self.meshes[name] = (self.meshdir / file, _floats(m.get("scale", "1 1 1"), f"<mesh name={name!r}>",
                                                                  "scale", 3))
        # by name: (heights, half extents), or None for one whose file is not read (warned)
        self.hfields = dict(read_hfield(h, path, record) for asset in self.root.findall("asset")
                            for h in asset.findall("hfield"))
        self.bodies: list = []
        self._parts: list = []                 # per body, the (mass, center, inertia) of its geoms
        self.static_geoms: list = []
        self.joints: dict = {}
        self._unbounded: set = set()     # joints driven by an actuator without a force limit

    def _expand_includes(self, elem: ET.Element, folder: Path, depth: int) -> None:
        for i, child in enumerate(list(elem)):
            if child.tag == "include":
                if depth > 16:
                    raise RobotFileError(f"<include file={child.get('file')!r}> in {self.path}: includes nested too deep")
                inc = _load_xml(folder / child.get("file", ""), f"<include> in {self.path}")
                self._expand_includes(inc, folder, depth + 1)
                elem.remove(child)
                for k, sub in enumerate(list(inc) if inc.tag == "mujoco" else [inc]):
                    elem.insert(i + k, sub)
            else:
                self._expand_includes(child, folder, depth)

    def _read_default(self, elem: ET.Element, parent: dict, name: str) -> None:
        d = {tag: dict(attrs) for tag, attrs in parent.items()}
        for child in elem:
            if child.tag != "default":
                tag = "actuator" if child.tag in _ACTUATORS else child.tag
                d.setdefault(tag, {}).update(child.attrib)
        self.classes[name] = d
        for child in elem:
            if child.tag == "default":
                if "class" not in child.attrib:
                    raise RobotFileError(f"<default> in {self.path}: a nested default needs a class")
                self._read_default(child, d, child.get("class"))

    def attrs(self, elem: ET.Element, cls: str, tag: str | None = None) -> tuple[dict, dict]:
        """(the element's attributes over its class's defaults, the defaults alone)."""
        name = elem.get("class", cls)
        if name not in self.classes and name != "main":
            raise RobotFileError(f"{self.where(elem)}: unknown default class {name!r}")
        base = self.classes.get(name, {}).get(tag or elem.tag, {})
        return {**base, **elem.attrib}, base

    def where(self, elem: ET.Element) -> str:
        name = elem.get("name")
        return f"<{elem.tag}{'' if name is None else f' name={name!r}'}> in {self.path}"

    def where_in(self, elem: ET.Element, body: Body) -> str:
        """``elem`` of ``body`` in the file, for errors about a body's mass."""
        name = elem.get("name")
        return f"<{elem.tag}{'' if name is None else f' name={name!r}'}> of {body.where}"

    # -- orientations ---------------------------------------------------------------------
    def orientation(self, elem: ET.Element, defaults: dict) -> np.ndarray:
        own = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in elem.attrib]
        if len(own) > 1:
            raise RobotFileError(f"{self.where(elem)}: give one orientation, got {', '.join(own)}")
        src = elem.attrib if own else defaults
        where = self.where(elem)
        if "quat" in src:
            q = _floats(src["quat"], where, "quat", 4)
            if np.linalg.norm(q) < 1e-12:
                raise RobotFileError(f"{where}: quat must be nonzero")
            return np.roll(q / np.linalg.norm(q), -1)
        if "axisangle" in src:
            v = _floats(src["axisangle"], where, "axisangle", 4)
            return quat_axis_angle(v[:3], v[3] * self.angle)
        if "euler" in src:
            e = _floats(src["euler"], where, "euler", 3) * self.angle
            q = IDENTITY_QUAT.copy()
            for ch, angle in zip(self.eulerseq, e):
                turn = quat_axis_angle(np.eye(3)["xyz".index(ch.lower())], angle)
                # lower case: axes that turn with the frame (intrinsic); upper case: fixed axes
                q = G.quat_multiply(q, turn) if ch.islower() else G.quat_multiply(turn, q)
            return q
        if "xyaxes" in src:
            v = _floats(src["xyaxes"], where, "xyaxes", 6)
            x = v[:3] / np.linalg.norm(v[:3])
            y = v[3:] - (v[3:] @ x) * x
            y = y / np.linalg.norm(y)
            return quat_from_matrix(np.column_stack([x, y, np.cross(x, y)]))
        if "zaxis" in src:
            return quat_z_to(_floats(src["zaxis"], where, "zaxis", 3))
        return IDENTITY_QUAT.copy()

    # -- the body tree --------------------------------------------------------------------
    def read(self) -> None:
        worldbodies = self.root.findall("worldbody")
        if not worldbodies:
            raise RobotFileError(f"add_mjcf: {self.path} has no <worldbody>")
        for wb in worldbodies:
            self.walk(wb, -1, "main", None, [])
        self.options()
        for child in self.root:
            if child.tag not in _QUIET_SECTIONS:
                names = [e.get("name") for e in child.iter() if e.get("name")]
                self.record.warn(f"<{child.tag}> in {self.path} is not supported and is ignored"
                                 + (f" ({', '.join(names)})" if names else ""))
        self.colliders()
        for b, parts in zip(self.bodies, self._parts):
            self.body_mass(b, parts)
        self.adjust_masses()
        for section in self.root.findall("actuator"):
            for act in section:
                self.actuator(act)
        self.summarize_joints()

    def walk(self, elem: ET.Element, body: int, cls: str, frame, parts: list) -> None:
        """The children of ``elem`` (a body, -1 for the world), ``frame`` an extra transform
        of a ``<frame>`` between them and the body."""
        for child in elem:
            tag = child.tag
            if tag == "body":
                a = child.attrib
                pos = _floats(a.get("pos", "0 0 0"), self.where(child), "pos", 3)
                X = np.concatenate([pos, self.orientation(child, {})])
                if frame is not None:
                    X = transform_multiply(frame, X)
                b = Body(a.get("name"), body, self.where(child), X[:3], X[3:])
                self.bodies.append(b)
                self._parts.append([])
                index = len(self.bodies) - 1
                self.walk(child, index, a.get("childclass", cls), None, self._parts[index])
            elif tag == "frame":
                a, _ = self.attrs(child, cls)
                X = np.concatenate([_floats(a.get("pos", "0 0 0"), self.where(child), "pos", 3),
                                    self.orientation(child, {})])
                self.walk(child, body, child.get("childclass", cls), X if frame is None else transform_multiply(
                    frame, X), parts)
            elif tag == "geom":
                self.geom(child, body, cls, frame, parts)
            elif tag in ("joint", "freejoint"):
                if body < 0:
                    raise RobotFileError(f"{self.where(child)}: a joint must be inside a body, not the worldbody")
                self.joint(child, self.bodies[body], cls, frame)
            elif tag == "inertial":
                if body < 0:
                    raise RobotFileError(f"{self.where(child)}: the worldbody has no inertial")
                a = child.attrib
                X = np.concatenate([_floats(a.get("pos", "0 0 0"), self.where(child), "pos", 3),
                                    self.orientation(child, {})])
                if frame is not None:
                    X = transform_multiply(frame, X)
                if "mass" not in a:
                    raise RobotFileError(f"{self.where(child)}: an inertial needs a mass")
                if "fullinertia" in a:
                    f = _floats(a["fullinertia"], self.where(child), "fullinertia", 6)
                    I = np.array([[f[0], f[3], f[4]], [f[3], f[1], f[5]], [f[4], f[5], f[2]]])
                elif "diaginertia" in a:
                    I = np.diag(_floats(a["diaginertia"], self.where(child), "diaginertia", 3))
                else:
                    raise RobotFileError(f"{self.where(child)}: an inertial needs diaginertia or fullinertia")
                where = self.where_in(child, self.bodies[body])
                I = check_inertia(I, where, "fullinertia" if "fullinertia" in a else "diaginertia")
                R = G.quat_to_matrix(X[3:])
                self.bodies[body].inertial = (mass_value(a["mass"], where, "mass"), X[:3], R @ I @ R.T)
            elif tag not in _QUIET_IN_BODY:
                self.record.warn(f"{self.where(child)} is not supported and is ignored")

    def colliders(self) -> None:
        """A geom is a collider when MuJoCo would let it touch a geom of another body (or of the
        world): ``contype`` of one and ``conaffinity`` of the other share a bit."""
        geoms = [(-1, g) for g in self.static_geoms] + [(i, g) for i, b in enumerate(self.bodies) for g in b.geoms]
        for i, g in geoms:
            g.collide = any(j != i and (g.contype & h.conaffinity or h.contype & g.conaffinity) for j, h in geoms)

    def geom(self, elem: ET.Element, body: int, cls: str, frame, parts: list) -> None:
        a, d = self.attrs(elem, cls)
        where = self.where(elem)
        kind = a.get("type", "sphere")
        size = np.zeros(3)
        s = _floats(a.get("size", "0"), where, "size")
        size[:min(3, len(s))] = s[:3]
        if "fromto" in a:
            f = _floats(a["fromto"], where, "fromto", 6)
            if kind not in ("capsule", "cylinder", "box", "ellipsoid"):
                raise RobotFileError(f"{where}: fromto is for capsules, cylinders, boxes and ellipsoids, not {kind}")
            axis = f[3:] - f[:3]
            half = 0.5 * np.linalg.norm(axis)
            if half < 1e-12:
                raise RobotFileError(f"{where}: fromto has two equal ends")
            pos, quat = 0.5 * (f[:3] + f[3:]), quat_z_to(axis)
            # MuJoCo reads only the first size: boxes and ellipsoids get a square section
            size = np.array([size[0], half, 0.0]) if kind in ("capsule", "cylinder") else np.array(
                [size[0], size[0], half])
        else:
            pos = _floats(a.get("pos", "0 0 0"), where, "pos", 3)
            quat = self.orientation(elem, d)
        X = np.concatenate([pos, quat])
        if frame is not None:
            X = transform_multiply(frame, X)
        contype, conaffinity = int(a.get("contype", "1")), int(a.get("conaffinity", "1"))
        contact = self.contact_params(elem, a, d, where)
        g = Geom(kind, where, X[:3], X[3:], size, contype != 0 or conaffinity != 0, contype, conaffinity,
                 mu=contact.pop("mu"), contact=contact)
        if kind == "mesh":
            if a.get("mesh") not in self.meshes:
                raise RobotFileError(f"{where}: unknown mesh {a.get('mesh')!r} (not in <asset>)")
            g.mesh = self.meshes[a.get("mesh")]
        if kind == "hfield":
            if a.get("hfield") not in self.hfields:
                raise RobotFileError(f"{where}: an hfield geom needs hfield= naming an <hfield> asset, "
                                     f"got {a.get('hfield')!r}")
            g.hfield = self.hfields[a.get("hfield")]
        if body < 0:
            self.static_geoms.append(g)
            return
        self.bodies[body].geoms.append(g)
        group = int(a.get("group", "0"))
        if not self.groups[0] <= group <= self.groups[1]:
            return
        of_body = self.where_in(elem, self.bodies[body])
        density = mass_value(a.get("density", "1000"), of_body, "density")
        mass = mass_value(a["mass"], of_body, "mass") if "mass" in a else None
        if kind in ("sphere", "box", "capsule", "cylinder", "ellipsoid"):
            m, moments = primitive_mass(kind, size, density, mass)
            R = G.quat_to_matrix(X[3:])
            parts.append((m, X[:3], R @ np.diag(moments) @ R.T))
        elif kind == "mesh":
            from .meshes import mesh_mass
            name = a.get("mesh")
            if name not in self.meshes:
                raise RobotFileError(f"{where}: unknown mesh {name!r} (not in <asset>)")
            file, scale = self.meshes[name]
            m, com, I = mesh_mass(file, scale, density, mass, where)
            R = G.quat_to_matrix(X[3:])
            parts.append((m, X[:3] + R @ com, R @ I @ R.T))
        elif kind not in ("plane", "hfield"):
            self.record.warn(f"{where}: a {kind} geom is not supported: no collider and no mass")

    def contact_params(self, elem: ET.Element, a: dict, d: dict, where: str) -> dict:
        """MuJoCo's contact parameters of a geom (``a``: its attributes over its class's, ``d``:
        the class's): ``friction`` (sliding, torsional, rolling), ``solref``, ``solimp``,
        ``margin``, ``gap``, ``condim``, as ``add_shape_*`` takes them (``mu`` for the sliding
        friction). A vector given with fewer numbers than it has keeps the rest from the class
        (or MuJoCo's defaults), as MuJoCo reads it."""
        out = {}
        for attr, defaults in (("friction", (1.0, 0.005, 0.0001)), ("solref", CONTACT_DEFAULTS["solref"]),
                               ("solimp", CONTACT_DEFAULTS["solimp"])):
            out[attr] = _class_vector(elem, d, attr, defaults, where)
        friction = out.pop("friction")
        out.update(mu=friction[0], torsional_mu=friction[1], rolling_mu=friction[2])
        out.update(margin=float(a.get("margin", "0")), gap=float(a.get("gap", "0")))
        try:
            out["condim"] = int(a.get("condim", "3"))
        except ValueError:
            raise RobotFileError(f"{where}: condim must be an integer, got {a['condim']!r}") from None
        try:
            contact_params(where, {k: v for k, v in out.items() if k != "mu"})
            V.nonneg(out["mu"], f"{where}: friction[0]")
        except (TypeError, ValueError) as e:
            raise RobotFileError(str(e)) from None
        if float(a.get("priority", "0")) != 0.0 or float(a.get("solmix", "1")) != 1.0:
            self.record.warn(f"{where}: priority and solmix are not supported; its contacts mix their parameters as "
                             "MuJoCo does for equal priorities and solmix 1 (see docs/importers.md)")
        return out

    def limit_params(self, elem: ET.Element, a: dict, d: dict, where: str) -> dict:
        """A joint's soft limit as ``add_joint_*`` takes it: ``solreflimit``,
        ``solimplimit`` (a vector given with fewer numbers keeps the rest from the class, or
        MuJoCo's defaults) and ``margin``."""
        out = {}
        for attr, name, default in (("solreflimit", "limit_solref", LIMIT_SOLREF),
                                    ("solimplimit", "limit_solimp", LIMIT_SOLIMP)):
            out[name] = _class_vector(elem, d, attr, default, where)
        out["limit_margin"] = float(a.get("margin", "0"))
        try:
            check_solref(out["limit_solref"], f"{where}: solreflimit")
            check_solimp(out["limit_solimp"], f"{where}: solimplimit")
            V.nonneg(out["limit_margin"], f"{where}: margin")
        except (TypeError, ValueError) as e:
            raise RobotFileError(str(e)) from None
        return out

    def options(self) -> None:
        """The contact options of ``<option>`` (``cone``, ``impratio``) and its ``<flag
        contact=...>``; those simkit cannot honour go into the record's warnings."""
        opts, flags = {}, {}
        for o in self.root.findall("option"):
            opts.update(o.attrib)
            for f in o.findall("flag"):
                flags.update(f.attrib)
        where = f"<option> in {self.path}"
        # None: the file leaves the builder's option as it is
        self.cone = opts.get("cone")
        if self.cone not in (None, "pyramidal", "elliptic"):
            raise RobotFileError(f"{where}: cone must be 'pyramidal' or 'elliptic', got {self.cone!r}")
        self.impratio = float(opts["impratio"]) if "impratio" in opts else None
        if self.impratio is not None and not self.impratio > 0.0:
            raise RobotFileError(f"{where}: impratio must be > 0, got {opts['impratio']!r}")
        self.contact_flag = flags.get("contact", "enable")
        if self.contact_flag not in ("enable", "disable"):
            raise RobotFileError(f"{where}: <flag contact=...> must be 'enable' or 'disable', "
                                 f"got {self.contact_flag!r}")
        ignored = [f"{k}={opts[k]!r}" for k, default in (("noslip_iterations", "0"), ("noslip_tolerance", None),
                                                           ("o_margin", None), ("o_solref", None), ("o_solimp", None),
                                                           ("o_friction", None))
                   if k in opts and opts[k] != default]
        ignored += [f"<flag {k}={flags[k]!r}>" for k in ("override", "frictionloss", "filterparent")
                    if k in flags and flags[k] != ("disable" if k == "override" else "enable")]
        if ignored:
            self.record.warn(f"{where}: contact options simkit does not honour are ignored: {', '.join(ignored)}")

    def joint(self, elem: ET.Element, body: Body, cls: str, frame) -> None:
        if elem.tag == "freejoint":
            a, kind = elem.attrib, "free"
        else:
            a, defaults = self.attrs(elem, cls)
            kind = a.get("type", "hinge")
        where = self.where(elem)
        if kind not in ("hinge", "slide", "ball", "free"):
            raise RobotFileError(f"{where}: unknown joint type {kind!r} (hinge, slide, ball or free)")
        name = a.get("name") or f"{body.name or 'body'}_joint{len(body.joints)}"
        pos = _floats(a.get("pos", "0 0 0"), where, "pos", 3)
        axis = _floats(a.get("axis", "0 0 1"), where, "axis", 3)
        if np.linalg.norm(axis) < 1e-12:
            raise RobotFileError(f"{where}: axis must be nonzero")
        if frame is not None:
            pos = transform_multiply(frame, np.concatenate([pos, IDENTITY_QUAT]))[:3]
            axis = G.quat_rotate(frame[3:], axis)
        unit = self.angle if kind == "hinge" else 1.0
        ref = float(a.get("ref", "0")) * unit
        limited = a.get("limited", "auto")
        limits = None
        if "range" in a and (limited == "true" or (limited == "auto" and self.autolimits)):
            r = _floats(a["range"], where, "range", 2)
            if kind in ("hinge", "slide"):
                limits = (r[0] * unit - ref, r[1] * unit - ref)
            elif kind == "ball":
                # MuJoCo bounds a ball joint's total rotation angle by range[1]; range[0] is unused
                if r[0] != 0.0:
                    self.record.warn(f"{where}: a ball joint's range[0] ({r[0]:g}) is ignored; its rotation "
                                     f"angle is bounded by range[1] ({r[1]:g})")
                if not 0.0 < r[1] * self.angle < np.pi:
                    self.record.warn(f"{where}: a ball joint's range[1] must be in (0, 180) degrees to bound its "
                                     f"rotation, got {r[1]:g}; the joint is left unbounded")
                else:
                    limits = (None, r[1] * self.angle)
        j = Joint(kind, name, where, pos, axis / np.linalg.norm(axis), limits, ref,
                  damping=float(a.get("damping", "0")), armature=float(a.get("armature", "0")),
                  stiffness=float(a.get("stiffness", "0")), frictionloss=float(a.get("frictionloss", "0")))
        if elem.tag != "freejoint":
            j.soft = self.limit_params(elem, a, defaults, where)
        if j.kind in ("hinge", "slide", "ball"):
            j.target_kd = j.damping        # simkit's drive damping is a joint damping when there is no target
        if name in self.joints:
            raise RobotFileError(f"{where}: two joints are named {name!r}")
        if body.joints and (kind == "free" or body.joints[0].kind == "free"):
            raise RobotFileError(f"{body.where}: a free joint must be the body's only joint, got {where} too")
        self.joints[name] = j
        body.joints.append(j)

    # -- masses -----------------------------------------------------------------------------
    def body_mass(self, b: Body, parts: list) -> None:
        use_inertial = self.inertiafromgeom == "false" or (self.inertiafromgeom == "auto" and b.inertial is not None)
        if use_inertial:
            if b.inertial is None:
                return
            b.mass, b.com, b.inertia = b.inertial
            return
        from ..mass import combine_mass_properties
        b.mass, b.com, b.inertia = combine_mass_properties(parts)

    def adjust_masses(self) -> None:
        for b in self.bodies:
            if b.mass < self.boundmass:
                b.mass = self.boundmass
            if self.boundinertia > 0.0:
                w, V = np.linalg.eigh(b.inertia)
                b.inertia = V @ np.diag(np.maximum(w, self.boundinertia)) @ V.T
        if self.settotalmass > 0.0:
            total = sum(b.mass for b in self.bodies)
            if total > 0.0:
                for b in self.bodies:
                    b.mass, b.inertia = b.mass * self.settotalmass / total, b.inertia * self.settotalmass / total

    # -- actuators --------------------------------------------------------------------------
    def actuator(self, elem: ET.Element) -> None:
        where = self.where(elem)
        if elem.tag not in _ACTUATORS:
            self.record.warn(f"{where} is not an actuator MuJoCo knows; ignored")
            return
        a, _ = self.attrs(elem, "main", "actuator")
        gear = float(_floats(a.get("gear", "1"), where, "gear")[0])
        entry = {"name": a.get("name"), "type": elem.tag, "joint": a.get("joint"), "gear": gear,
                 "ctrlrange": tuple(_floats(a["ctrlrange"], where, "ctrlrange", 2)) if "ctrlrange" in a else None,
                 "forcerange": tuple(_floats(a["forcerange"], where, "forcerange", 2)) if "forcerange" in a else None}
        limited = a.get("ctrllimited", "auto")
        # whether MuJoCo clamps ctrl to ctrlrange (record.control_from_mujoco does the same)
        entry["ctrllimited"] = entry["ctrlrange"] is not None and (limited == "true" or
                                                                   (limited == "auto" and self.autolimits))
        self.record.actuators.append(entry)
        j = self.joints.get(a.get("joint")) if "joint" in a else None
        if j is None:
            target = next((f"{k}={a[k]!r}" for k in ("joint", "tendon", "site", "body", "jointinparent") if k in a),
                          "no transmission")
            self.record.warn(f"{where}: only actuators on joints of the file are mapped; {target} is recorded, "
                             "not simulated")
            return
        if j.kind in ("hinge", "slide"):
            self.actuator_effort(a, entry, j, where)
        if elem.tag == "motor":
            return                 # a torque gear * ctrl: control.joint_act of the joint
        if elem.tag in ("position", "velocity") and j.kind in ("hinge", "slide"):
            kp = float(a.get("kp", "1")) if elem.tag == "position" else 0.0
            kv = float(a.get("kv", "1" if elem.tag == "velocity" else "0"))
            entry.update(kp=kp, kv=kv)
            # force = kp (ctrl - gear q) - kv gear qd acts through the gear: a drive on q
            j.target_ke += kp * gear * gear
            j.target_kd += kv * gear * gear
            return
        self.record.warn(f"{where}: a {elem.tag} actuator on joint {j.name!r} is recorded, not simulated")

    def actuator_effort(self, a: dict, entry: dict, j, where: str) -> None:
        """The joint's effort limit from the actuator's ``forcerange`` (MuJoCo clamps the
        actuator's force, which reaches the joint times ``gear``): ``|gear| * max(|lo|, |hi|)``,
        symmetric, as simkit's ``effort_limit`` is. Actuators on one joint add up; one without
        a force limit leaves the joint unbounded."""
        limited = a.get("forcelimited", "auto")
        rng = entry["forcerange"]
        if rng is None or limited == "false" or (limited == "auto" and not self.autolimits):
            self._unbounded.add(j.name)
            j.effort = None
            return
        lo, hi = rng
        if lo > hi:
            raise RobotFileError(f"{where}: forcerange must have lower <= upper, got {lo} > {hi}")
        if lo != -hi:
            self.record.warn(f"{where}: forcerange {lo:g} {hi:g} is not symmetric; simkit's effort limit on joint "
                             f"{j.name!r} is symmetric: +-{max(abs(lo), abs(hi)):g} times the gear")
        if j.name in self._unbounded:
            return
        j.effort = (j.effort or 0.0) + abs(entry["gear"]) * max(abs(lo), abs(hi))

    def summarize_joints(self) -> None:
        names = [n for n, j in self.joints.items() if j.stiffness != 0.0]
        if names:
            self.record.warn(f"{self.path}: joint stiffness (a spring) is recorded in the import record but not "
                             f"simulated: {', '.join(names)}")
        free_damped = [n for n, j in self.joints.items() if j.kind == "free" and j.damping != 0.0]
        if free_damped:
            self.record.warn(f"{self.path}: the damping of free joints is not simulated: {', '.join(free_damped)}")


def add_mjcf(builder, path, xform=None) -> int:
    """Load the MJCF file ``path`` into ``builder`` as one articulation (see
    :meth:`simkit.sim.ModelBuilder.add_mjcf`) and return its index."""
    path = Path(path)
    X = np.concatenate([np.zeros(3), IDENTITY_QUAT]) if xform is None else V.xform(xform, "add_mjcf: xform")
    record = ImportRecord(str(path), -1)
    reader = _Reader(path, record)
    reader.read()
    record.articulation = builder.add_articulation()
    emit(builder, reader.bodies, X, record, reader.static_geoms)
    builder.end_articulation()
    builder.set_contact_options(cone=reader.cone, impratio=reader.impratio)
    if reader.contact_flag == "disable":
        builder.contacts_enabled = False
    builder.imports[record.articulation] = record
    return record.articulation
