"""``[[robots]]`` in scene files: a URDF or MJCF robot, placed in the scene, with joint
targets that may change over time.

A robot entry names its file (``urdf = ...`` or ``mjcf = ...``, relative to the scene's
folder), where to put it (``pos``, ``rot``), and ``targets``: per joint of the file (by
its name there), the coordinate its drive pulls towards, a number or a schedule
``[[t0, q0], [t1, q1], ...]`` followed piecewise linearly (held before the first and after
the last point). ``target_ke`` / ``target_kd`` set the drive gains of the joints named in
``targets`` (default: what the file says). The joint names are checked when the scene is
built, against the file.

Example::

    config = read_config("scenes/quadruped_stand.toml")
    robot = config.robots[0]
    robot["targets"]["hip_1"].at(0.5)      # the hip's target half a second in
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core import types as T
from ..kernels.structs import JOINT_PRISMATIC, JOINT_REVOLUTE
from ..sim.builder import ModelBuilder
from .validate import SceneError, Table, describe, is_number

ROBOT_KEYS = ("name", "urdf", "mjcf", "pos", "rot", "floating", "target_ke", "target_kd", "targets")
ROBOT_EXTENSIONS = {"urdf": (".urdf",), "mjcf": (".xml", ".mjcf")}


@dataclass(frozen=True)
class Schedule:
    """A joint target over time: ``points`` is a tuple of ``(t, q)`` with ``t`` strictly
    increasing; ``at(t)`` interpolates linearly between them and holds the end values
    outside. One point is a constant.

    Example::

        Schedule(((0.0, 0.0), (1.0, 0.5))).at(0.5)     # 0.25
    """

    points: tuple

    @property
    def constant(self) -> bool:
        """True when the target never changes (one point).

        Example::

            Schedule(((0.0, 0.3),)).constant     # True
        """
        return len(self.points) == 1

    def at(self, t: float) -> float:
        """The target at time ``t`` (seconds).

        Example::

            Schedule(((0.0, 1.0), (2.0, 3.0))).at(5.0)    # 3.0 (held after the last point)
        """
        ts = [p[0] for p in self.points]
        qs = [p[1] for p in self.points]
        return float(np.interp(t, ts, qs))


def read_robot(t: Table, folder: Path) -> dict:
    """The checked ``[[robots]]`` entry ``t`` (its file must exist; joint names are checked
    when the scene is built, see :func:`add_robot`).

    Example::

        robot = read_robot(Table(entry, "robots[0]", file, ROBOT_KEYS), folder)
    """
    formats = [f for f in ("urdf", "mjcf") if t.has(f)]
    if len(formats) != 1:
        got = "both" if formats else "neither"
        raise t.error("urdf" if not formats else "mjcf",
                      f"expected exactly one of urdf = \"file.urdf\" or mjcf = \"file.xml\", got {got}")
    fmt = formats[0]
    path = folder / t.string(fmt)
    if not path.is_file():
        raise t.error(fmt, f"expected an existing robot file, but '{path}' does not exist (paths are relative to "
                           f"the scene's folder)")
    if path.suffix.lower() not in ROBOT_EXTENSIONS[fmt]:
        raise t.error(fmt, f"expected a file ending in {' or '.join(ROBOT_EXTENSIONS[fmt])} for {fmt}, got "
                           f"{json.dumps(path.name)}")
    if fmt == "mjcf" and t.has("floating"):
        raise t.unknown("floating", ROBOT_KEYS, "not a key of an mjcf robot (the file's freejoint decides)")
    out = {"format": fmt, "file": path, "pos": t.vector("pos", 3, (0.0, 0.0, 0.0)), "rot": t.quat(),
           "floating": t.boolean("floating", False) if fmt == "urdf" else None,
           "target_ke": t.number("target_ke", None, low=0.0), "target_kd": t.number("target_kd", None, low=0.0),
           "targets": _targets(t)}
    return out


def _targets(t: Table) -> dict:
    raw = t.data.get("targets", {})
    if not isinstance(raw, dict):
        raise t.error("targets", f"expected a table of joint name = target, got {describe(raw)}")
    out = {}
    expected = "a number or a schedule [[t0, q0], [t1, q1], ...] with t increasing"
    for name, value in raw.items():
        key = f"targets.{name}"
        if is_number(value):
            if not math.isfinite(value):
                raise t.error(key, f"expected a finite number, got {describe(value)}")
            out[name] = Schedule(((0.0, float(value)),))
            continue
        if not isinstance(value, list) or not value:
            raise t.error(key, f"expected {expected}, got {describe(value)}")
        points = []
        for i, p in enumerate(value):
            if (not isinstance(p, list) or len(p) != 2 or not all(is_number(x) and math.isfinite(x) for x in p)):
                raise t.error(f"{key}[{i}]", f"expected a point [t, q] of 2 finite numbers, got {describe(p)}")
            if points and p[0] <= points[-1][0]:
                raise t.error(f"{key}[{i}]", f"expected a time after the previous point's ({points[-1][0]:g}), got "
                                             f"{p[0]:g}")
            points.append((float(p[0]), float(p[1])))
        out[name] = Schedule(tuple(points))
    return out


def add_robot(b: ModelBuilder, e: dict, file: str) -> tuple[int, dict]:
    """Import the robot of the checked entry ``e`` into ``b``; returns the articulation's
    index and ``{joint index: Schedule}`` of its targets. Raises a :class:`SceneError`
    naming ``e["key"]`` for a file the importer refuses or a target naming no joint of it.

    Example::

        articulation, schedules = add_robot(builder, config.robots[0], config.file)
    """
    xform = T.transform(e["pos"], e["rot"])
    try:
        if e["format"] == "urdf":
            index = b.add_urdf(e["file"], xform=xform, floating=e["floating"])
        else:
            index = b.add_mjcf(e["file"], xform=xform)
    except (TypeError, ValueError, OSError) as err:
        raise SceneError(file, f"{e['key']}.{e['format']}", f"expected a robot file the importer accepts, but "
                                                           f"{err}") from None
    joints = b.imports[index].joints
    driven = {n: j for n, j in joints.items() if b.joint_kind[j] in (JOINT_REVOLUTE, JOINT_PRISMATIC)}
    schedules = {}
    for name, schedule in e["targets"].items():
        if name not in driven:
            listed = ", ".join(json.dumps(n) for n in list(driven)[:8]) + (", ..." if len(driven) > 8 else "")
            raise SceneError(file, f"{e['key']}.targets.{name}",
                             f"expected the name of a hinge or slide joint of {e['file'].name} ({listed or 'it has none'})"
                             f", got {json.dumps(name)}")
        j = driven[name]
        b.set_joint_drive(j, target_ke=e["target_ke"], target_kd=e["target_kd"])
        if b.joint_gains[j][0] == 0.0:
            raise SceneError(file, f"{e['key']}.target_ke", f"expected a drive stiffness > 0 for the joints given "
                                                            f"targets ({e['file'].name} gives {json.dumps(name)} none)")
        schedules[j] = schedule
    return index, schedules
