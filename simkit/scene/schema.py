"""The scene config format (TOML, see ``docs/scenes.md``): which tables a scene file has,
the keys, types, bounds and defaults of each, and reading a file against them.

:func:`read_config` parses a scene file with :mod:`tomllib` and checks every table against
the schema: unknown keys, wrong types, values out of range, missing files and dangling
names. The first problem found is raised as one :class:`SceneError` that names the file,
the key path (``cloth[0].dim_x``) and what was expected; nothing is built before the whole
file has passed. The result is a :class:`SceneConfig`: the same tables with every default
filled in, numbers converted, spring pairs and tetrahedral meshes loaded. The typed-value
checks are :class:`~simkit.scene.validate.Table`'s; mesh files are read by
:func:`~simkit.scene.meshes.load_tet_mesh`.

Example::

    config = read_config("scenes/ball_bounce.toml")
    config.sim["dt"], config.output["usd"], [b["name"] for b in config.particles]
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..core import device as D
from ..sim.cloth_contact import DEFAULTS as CLOTH_CONTACT_DEFAULTS
from ..sim.validate import float_problem, grid_size_problem
from .meshes import MESH_EXTENSIONS, load_tet_mesh
from .overrides import apply_overrides, describe_overrides
from .robots import ROBOT_KEYS, read_robot
from .validate import REQUIRED, SceneError, Table, describe, is_number

USD_EXTENSIONS = (".usd", ".usda", ".usdc")


# ----------------------------------------------------------------------------------
# What a table may hold
# ----------------------------------------------------------------------------------

TOP_KEYS = ("description", "sim", "contact", "rigid_contact", "cloth_self_contact", "output", "optimize", "particles",
            "springs", "cloth", "soft_grid", "soft_mesh", "shapes", "bodies", "joints", "robots")
SIM_KEYS = ("dt", "substeps", "frames", "integrator", "iterations", "device", "dtype", "gravity", "up_axis", "ground")
CONTACT_KEYS = ("ke", "kd", "kf", "mu", "time_constant", "damping_ratio", "particle_contact")
RIGID_CONTACT_KEYS = ("ke", "kd", "kf", "mu", "time_constant", "damping_ratio")
CLOTH_SELF_CONTACT_KEYS = ("thickness", "ke", "kd", "kf", "mu")
# a contact material: gains, or per unit mass (see ModelBuilder); None where not given
MATERIAL_KEYS = ("ke", "kd", "kf", "time_constant", "damping_ratio")
OUTPUT_KEYS = ("usd", "fps")
PARTICLES_KEYS = ("name", "positions", "velocity", "mass", "radius", "pinned")
SPRINGS_KEYS = ("name", "particles", "pairs", "within", "ke", "kd", "muscle")
MUSCLE_KEYS = ("amplitude", "frequency", "phase", "wave", "gain")
CLOTH_KEYS = ("name", "pos", "rot", "velocity", "dim_x", "dim_y", "cell_x", "cell_y", "mass", "fix_left", "fix_right",
              "fix_top", "fix_bottom", "k_mu", "k_lambda", "k_damp", "edge_ke", "edge_kd", "radius")
SOFT_GRID_KEYS = ("name", "pos", "rot", "velocity", "dim_x", "dim_y", "dim_z", "cell_x", "cell_y", "cell_z",
                  "density", "k_mu", "k_lambda", "k_damp", "fix_left", "fix_right", "fix_top", "fix_bottom", "radius")
SOFT_MESH_KEYS = ("name", "file", "pos", "rot", "scale", "velocity", "density", "k_mu", "k_lambda", "k_damp", "radius")
SHAPE_KINDS = {"sphere": ("pos", "radius"), "box": ("pos", "rot", "half_extents"),
               "capsule": ("pos", "rot", "radius", "half_height"),
               "cylinder": ("pos", "rot", "radius", "half_height"),
               "cone": ("pos", "rot", "radius", "half_height"), "ellipsoid": ("pos", "rot", "semi_axes"),
               "convex": ("pos", "rot", "points"), "plane": ("pos", "rot", "half_extents"),
               "heightfield": ("pos", "rot", "heights", "half_extents")}
SHAPE_COMMON = ("name", "kind", "ke", "kd", "kf", "mu", "time_constant", "damping_ratio")
BODY_KEYS = ("name", "pos", "rot", "velocity", "angular_velocity", "armature", "shapes")
JOINT_AXIS_KEYS = ("axis", "limit_lower", "limit_upper", "limit_ke", "limit_kd", "target", "target_vel", "target_ke",
                   "target_kd")
JOINT_KINDS = {"revolute": JOINT_AXIS_KEYS, "prismatic": JOINT_AXIS_KEYS, "ball": (), "fixed": ()}
JOINT_COMMON = ("name", "kind", "parent", "child", "anchor")
OPTIMIZE_KEYS = ("iterations", "learning_rate", "optimizer", "checkpoint_every", "checkpoint", "parameters", "loss")
LOSS_KINDS = {"position": ("target", "axes"), "travel": ("direction",)}
LOSS_COMMON = ("kind", "body")

# Which parameters of which kind of body [optimize] can change.
PARAMETERS = {
    "particles": ("velocity",),
    "cloth": ("velocity", "k_mu", "k_lambda", "k_damp"),
    "soft_grid": ("velocity", "k_mu", "k_lambda", "k_damp"),
    "soft_mesh": ("velocity", "k_mu", "k_lambda", "k_damp"),
    "springs": ("ke", "kd", "activation"),
    "bodies": ("velocity",),
}


# ----------------------------------------------------------------------------------
# The checked config
# ----------------------------------------------------------------------------------

@dataclass
class SceneConfig:
    """A scene file that passed every check, with defaults filled in.

    ``sim``, ``contact``, ``rigid_contact``, ``output`` are dicts of settings; ``optimize`` is
    a dict or None; the body lists hold one dict per entry, each with its ``key`` (the key
    path, e.g. ``"cloth[0]"``) for later messages; ``names`` maps every body name to its
    kind (``"particles"``, ``"springs"``, ``"cloth"``, ``"soft_grid"``, ``"soft_mesh"``,
    ``"bodies"``). ``fingerprint`` hashes what the physics and the optimization depend on.

    Example::

        config = read_config("scenes/flag.toml")
        config.cloth[0]["dim_x"]
    """

    path: Path
    name: str
    description: str
    sim: dict
    contact: dict
    rigid_contact: dict
    output: dict
    optimize: dict | None
    particles: list = field(default_factory=list)
    springs: list = field(default_factory=list)
    cloth: list = field(default_factory=list)
    soft_grid: list = field(default_factory=list)
    soft_mesh: list = field(default_factory=list)
    shapes: list = field(default_factory=list)
    bodies: list = field(default_factory=list)
    joints: list = field(default_factory=list)
    robots: list = field(default_factory=list)
    names: dict = field(default_factory=dict)
    fingerprint: str = ""
    # the [cloth_self_contact] table (ModelBuilder.set_cloth_self_contact), None when absent
    cloth_self_contact: dict | None = None

    @property
    def file(self) -> str:
        """The scene file as errors name it.

        Example::

            SceneError(config.file, "sim.dt", "expected a number > 0")
        """
        return str(self.path)


def read_config(path: str | os.PathLike, *, device: str | None = None, frames: int | None = None,
                overrides: Mapping[str, Any] | None = None) -> SceneConfig:
    """Read and check the scene file ``path``; ``device`` and ``frames`` override
    ``sim.device`` and ``sim.frames`` (as ``--device`` and ``--frames`` do), and
    ``overrides`` (key path -> value, see :mod:`simkit.scene.overrides`) set keys of the file
    before it is checked, so each passes the checks of a value in the file. Raises one
    :class:`SceneError` for the first problem found; one that a given override may have
    caused says so.

    Example::

        config = read_config("scenes/soft_drop.toml", frames=10, overrides={"soft_grid[0].k_mu": 2e4})
    """
    file = os.fspath(path)
    p = Path(file)
    if not p.is_file():
        raise SceneError(file, "", "no such scene file" if not p.exists() else "not a file")
    try:
        with open(p, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise SceneError(file, "", f"not valid TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SceneError(file, "", f"cannot be read: {e}") from None
    if not overrides:
        return _check(data, p, file, device, frames)
    data = apply_overrides(data, overrides, file)
    try:
        return _check(data, p, file, device, frames)
    except SceneError as e:
        raise SceneError(e.file, e.key, f"{e.message} ({_blame(e.key, overrides)})") from None


def _blame(key: str, overrides: Mapping[str, Any]) -> str:
    """Which override an error at ``key`` comes from, or all of them when none is at it."""
    for k, v in overrides.items():
        if key == k or key.startswith((f"{k}.", f"{k}[")) or k.startswith((f"{key}.", f"{key}[")):
            return f"set by the override {describe_overrides({k: v})}"
    return f"with the overrides {describe_overrides(overrides)}"


def _check(data: dict, p: Path, file: str, device: str | None, frames: int | None) -> SceneConfig:
    root = Table(data, "", file, TOP_KEYS)
    folder = p.resolve().parent
    description = root.string("description", "")
    sim = _sim(root, device, frames)
    config = SceneConfig(path=p, name=p.stem, description=description, sim=sim, contact=_contact(root),
                         rigid_contact=_rigid_contact(root), output=_output(root, sim, p.stem), optimize=None,
                         cloth_self_contact=_cloth_self_contact(root))
    readers = (("particles", PARTICLES_KEYS, _particles), ("cloth", CLOTH_KEYS, _cloth),
               ("soft_grid", SOFT_GRID_KEYS, _soft_grid), ("soft_mesh", SOFT_MESH_KEYS, _soft_mesh),
               ("springs", SPRINGS_KEYS, _springs), ("bodies", BODY_KEYS, _body),
               ("robots", ROBOT_KEYS, lambda t, config, folder: read_robot(t, folder)))
    for kind, keys, reader in readers:
        for i, entry in enumerate(root.tables(kind)):
            t = Table(entry, f"{kind}[{i}]", file, keys)
            name = t.name()
            if name in config.names:
                raise t.error("name", f"expected a name no other body has, got {json.dumps(name)} (a "
                                      f"{config.names[name]} entry has it too)")
            body = reader(t, config, folder)
            body.update(name=name, key=t.path)
            getattr(config, kind).append(body)
            config.names[name] = kind
    for i, entry in enumerate(root.tables("shapes")):
        shape = _shape(entry, f"shapes[{i}]", file, static=True)
        config.shapes.append(shape)
    for i, entry in enumerate(root.tables("joints")):
        config.joints.append(_joint(Table(entry, f"joints[{i}]", file, JOINT_COMMON + JOINT_AXIS_KEYS), config))
    if not any(getattr(config, k) for k in ("particles", "cloth", "soft_grid", "soft_mesh", "bodies", "robots")):
        raise SceneError(file, "", "the scene has nothing to simulate; expected at least one [[particles]], "
                                   "[[cloth]], [[soft_grid]], [[soft_mesh]], [[bodies]] or [[robots]] entry")
    opt = root.table("optimize", OPTIMIZE_KEYS)
    if opt is not None:
        config.optimize = _optimize(opt, config)
    config.fingerprint = _fingerprint(data, config)
    return config


def _fingerprint(data: dict, config: SceneConfig) -> str:
    """A hash of everything a checkpoint's parameters depend on: the physics, the bodies and
    their mesh and robot files, and the parameters and loss of [optimize] (not its iteration count,
    learning rate schedule, checkpoint settings or the output)."""
    physics = {k: v for k, v in data.items() if k not in ("output", "description", "optimize")}
    physics["sim"] = {k: v for k, v in config.sim.items() if k != "device"}
    if config.optimize is not None:
        physics["optimize"] = {k: data["optimize"].get(k) for k in ("parameters", "loss", "optimizer")}
    h = hashlib.sha256(json.dumps(physics, sort_keys=True, default=str).encode())
    for mesh in config.soft_mesh:
        h.update(mesh["vertices"].tobytes())
        h.update(mesh["tets"].tobytes())
    for robot in config.robots:
        h.update(robot["file"].read_bytes())
    return h.hexdigest()[:24]


# ----------------------------------------------------------------------------------
# Settings tables
# ----------------------------------------------------------------------------------

def _sim(root: Table, device: str | None, frames: int | None) -> dict:
    sim = root.table("sim", SIM_KEYS, required=True)
    out = {
        "dt": sim.number("dt", low=0.0, low_open=True),
        "substeps": sim.integer("substeps", 1, low=1),
        "frames": sim.integer("frames", low=1),
        "integrator": sim.choice("integrator", ("euler", "xpbd", "featherstone"), "euler"),
        "iterations": sim.integer("iterations", 4, low=1),
        "device": sim.string("device", "cpu"),
        "dtype": sim.choice("dtype", ("float32", "float64"), "float32"),
        "gravity": sim.number("gravity", -9.81),
        "up_axis": sim.choice("up_axis", ("x", "y", "z"), "y"),
        "ground": sim.boolean("ground", True),
    }
    problem = float_problem(out["dt"], np.dtype(out["dtype"]))
    if problem is not None:
        hint = ' or set sim.dtype = "float64"' if out["dtype"] == "float32" and out["dt"] < 1.0 else ""
        raise sim.error("dt", f'expected a number > 0 that sim.dtype = "{out["dtype"]}" can hold, got '
                              f'{describe(out["dt"])}, which {problem}; change sim.dt{hint}')
    if sim.has("iterations") and out["integrator"] != "xpbd":
        raise sim.error("iterations", 'only used by integrator = "xpbd"; remove it or set integrator = "xpbd"')
    if device is not None:
        out["device"] = device
    where = "--device" if device is not None else "sim.device"
    try:
        out["device"] = D.parse(out["device"], where)
    except (TypeError, ValueError):
        raise SceneError(root.file, where, f'expected "cpu", "cuda" or "cuda:N", got {json.dumps(out["device"])}') \
            from None
    try:
        D.require(out["device"], where)
    except (RuntimeError, ValueError) as e:
        raise SceneError(root.file, where, str(e)) from None
    if frames is not None:
        if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
            raise SceneError(root.file, "--frames", f"expected an integer >= 1, got {frames!r}")
        out["frames"] = frames
    return out


def _material(t: Table) -> dict:
    """The contact gains or per-mass parameters of ``t`` (None where not given)."""
    out = {k: t.number(k, None, low=0.0) for k in MATERIAL_KEYS if k != "time_constant"}
    out["time_constant"] = t.number("time_constant", None, low=0.0, low_open=True)
    return out


def _contact(root: Table) -> dict:
    t = root.table("contact", CONTACT_KEYS) or Table({}, "contact", root.file, CONTACT_KEYS)
    return {**_material(t), "mu": t.number("mu", 0.5, low=0.0),
            "particle_contact": t.boolean("particle_contact", False)}


def _rigid_contact(root: Table) -> dict:
    t = root.table("rigid_contact", RIGID_CONTACT_KEYS) or Table({}, "rigid_contact", root.file, RIGID_CONTACT_KEYS)
    return {**_material(t), "mu": t.number("mu", 0.5, low=0.0)}


def _cloth_self_contact(root: Table) -> dict | None:
    t = root.table("cloth_self_contact", CLOTH_SELF_CONTACT_KEYS)
    if t is None:
        return None
    return {"thickness": t.number("thickness", CLOTH_CONTACT_DEFAULTS["thickness"], low=0.0, low_open=True),
            **{k: t.number(k, CLOTH_CONTACT_DEFAULTS[k], low=0.0) for k in ("ke", "kd", "kf", "mu")}}


def _output(root: Table, sim: dict, stem: str) -> dict:
    t = root.table("output", OUTPUT_KEYS) or Table({}, "output", root.file, OUTPUT_KEYS)
    usd = t.string("usd", f"{stem}.usd")
    if os.path.splitext(usd)[1].lower() not in USD_EXTENSIONS:
        raise t.error("usd", f"expected a file name ending in {', '.join(USD_EXTENSIONS)}, got {json.dumps(usd)}")
    fps = t.number("fps", 1.0 / (sim["dt"] * sim["substeps"]), low=0.0, low_open=True)
    return {"usd": usd, "fps": fps}


# ----------------------------------------------------------------------------------
# Bodies
# ----------------------------------------------------------------------------------

def _positive(t: Table, name: str, default: Any = REQUIRED) -> float:
    return t.number(name, default, low=0.0, low_open=True)


def _nonneg(t: Table, name: str, default: Any = REQUIRED) -> float:
    return t.number(name, default, low=0.0)


def _particles(t: Table, config: SceneConfig, folder: Path) -> dict:
    positions = t.points("positions")
    return {"positions": positions, "velocity": t.vector("velocity", 3, (0.0, 0.0, 0.0)),
            "mass": _nonneg(t, "mass", 1.0), "radius": _positive(t, "radius", 0.05),
            "pinned": t.indices("pinned", len(positions), 1, [])}


def _fixes(t: Table) -> dict:
    return {k: t.boolean(k, False) for k in ("fix_left", "fix_right", "fix_top", "fix_bottom")}


def _grid_dims(t: Table, axes: str) -> dict:
    """The ``dim_*`` of a grid, refused (naming ``dim_x``) before anything is built when the
    grid has more particles than a model can index or needs more memory than there is."""
    dims = {f"dim_{a}": t.integer(f"dim_{a}", low=1) for a in axes}
    problem = grid_size_problem(dims)
    if problem is not None:
        raise t.error("dim_x", f"expected a grid that fits: {problem}")
    return dims


def _cloth(t: Table, config: SceneConfig, folder: Path) -> dict:
    return {"pos": t.vector("pos", 3), "rot": t.quat(), "velocity": t.vector("velocity", 3, (0.0, 0.0, 0.0)),
            **_grid_dims(t, "xy"),
            "cell_x": _positive(t, "cell_x"), "cell_y": _positive(t, "cell_y"), "mass": _positive(t, "mass"),
            **_fixes(t), "k_mu": _nonneg(t, "k_mu", 1.0e3), "k_lambda": _nonneg(t, "k_lambda", 1.0e3),
            "k_damp": _nonneg(t, "k_damp", 0.0), "edge_ke": _nonneg(t, "edge_ke", 0.1),
            "edge_kd": _nonneg(t, "edge_kd", 0.0), "radius": _positive(t, "radius", 0.01)}


def _soft_common(t: Table) -> dict:
    return {"velocity": t.vector("velocity", 3, (0.0, 0.0, 0.0)), "density": _positive(t, "density", 1000.0),
            "k_mu": _nonneg(t, "k_mu", 1.0e4), "k_lambda": _nonneg(t, "k_lambda", 1.0e4),
            "k_damp": _nonneg(t, "k_damp", 0.0), "radius": _positive(t, "radius", 0.01)}


def _soft_grid(t: Table, config: SceneConfig, folder: Path) -> dict:
    dims = _grid_dims(t, "xyz")
    cells = {f"cell_{a}": _positive(t, f"cell_{a}") for a in "xyz"}
    return {"pos": t.vector("pos", 3), "rot": t.quat(), **dims, **cells, **_fixes(t), **_soft_common(t)}


def _soft_mesh(t: Table, config: SceneConfig, folder: Path) -> dict:
    name = t.string("file")
    ext = os.path.splitext(name)[1].lower()
    if ext not in MESH_EXTENSIONS:
        raise t.error("file", f"expected a tetrahedral mesh file ending in {' or '.join(MESH_EXTENSIONS)}, "
                              f"got {json.dumps(name)}")
    path = folder / name
    if not path.is_file():
        raise t.error("file", f"expected an existing mesh file, but {str(path)!r} does not exist (paths are "
                              "relative to the scene's folder)")
    vertices, tets = load_tet_mesh(path, t.error)
    return {"file": str(path), "vertices": vertices, "tets": tets, "pos": t.vector("pos", 3), "rot": t.quat(),
            "scale": _positive(t, "scale", 1.0), **_soft_common(t)}


def _springs(t: Table, config: SceneConfig, folder: Path) -> dict:
    group = t.name("particles")
    if config.names.get(group) != "particles":
        known = [b["name"] for b in config.particles]
        listed = ", ".join(known) or "there are none"
        raise t.error("particles", f"expected the name of a [[particles]] entry ({listed}), got {json.dumps(group)}")
    positions = next(b for b in config.particles if b["name"] == group)["positions"]
    n = len(positions)
    if t.has("pairs") == t.has("within"):
        raise t.error("", "expected exactly one of 'pairs' (particle index pairs) and 'within' (a distance: "
                          "connect every pair closer than it)")
    if t.has("pairs"):
        pairs = t.indices("pairs", n, 2)
        if not pairs:
            raise t.error("pairs", "expected at least one pair of particle indices, got []")
    else:
        within = _positive(t, "within")
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)
                 if np.linalg.norm(positions[i] - positions[j]) <= within]
        if not pairs:
            raise t.error("within", f"expected a distance that connects at least one pair of {group}'s particles, "
                                    f"got {within:g}")
    out = {"particles": group, "pairs": pairs, "ke": _nonneg(t, "ke", 1.0e3), "kd": _nonneg(t, "kd", 1.0),
           "muscle": None}
    m = t.table("muscle", MUSCLE_KEYS)
    if m is not None:
        amplitude = m.number("amplitude", low=0.0, high=1.0, low_open=True, high_open=True)
        phase = m.data.get("phase", 0.0)
        if isinstance(phase, list):
            if len(phase) != len(pairs) or not all(is_number(v) and math.isfinite(v) for v in phase):
                raise m.error("phase", f"expected a number or an array of {len(pairs)} numbers (one per spring), "
                                       f"got {describe(phase)}")
            phases = np.array(phase, dtype=np.float64)
        else:
            phases = np.full(len(pairs), m.number("phase", 0.0))
        wave = np.array(m.vector("wave", 3, (0.0, 0.0, 0.0)))
        middle = np.array([0.5 * (positions[i] + positions[j]) for i, j in pairs])
        out["muscle"] = {"amplitude": amplitude, "frequency": _positive(m, "frequency"),
                         "phase": phases + middle @ wave, "gain": _positive(m, "gain", 1.0)}
    return out


def _shape(entry: Any, path: str, file: str, static: bool) -> dict:
    allowed = SHAPE_COMMON + ("pos", "rot", "radius", "half_extents", "half_height", "semi_axes", "points",
                              "heights") + (
        () if static else ("density",))
    t = Table(entry, path, file, allowed)
    kind = t.choice("kind", tuple(SHAPE_KINDS))
    if kind in ("plane", "heightfield") and not static:
        raise t.error("kind", f"a {kind} is always static; put it in [[shapes]], not in a body's shapes")
    takes = SHAPE_KINDS[kind]
    for key in t.data:
        if key not in SHAPE_COMMON + takes + ("density",):
            raise t.unknown(key, SHAPE_COMMON + takes + (() if static else ("density",)),
                            f"not a key of a {kind} shape")
    out = {"key": path, "kind": kind, "name": t.name() if t.has("name") else None,
           "pos": t.vector("pos", 3, (0.0, 0.0, 0.0)), "rot": t.quat()}
    if "radius" in takes:
        out["radius"] = _positive(t, "radius")
    if kind == "plane":
        out["half_extents"] = None          # infinite
        if t.has("half_extents"):
            h = t.vector("half_extents", 2)
            if min(h) <= 0.0:
                raise t.error("half_extents", f"expected an array of 2 numbers > 0, got {describe(list(h))}")
            out["half_extents"] = h
    elif kind == "heightfield":
        out["heights"] = t.grid("heights")
        h = t.vector("half_extents", 2)
        if min(h) <= 0.0:
            raise t.error("half_extents", f"expected an array of 2 numbers > 0, got {describe(list(h))}")
        out["half_extents"] = h
    elif "half_extents" in takes:
        h = t.vector("half_extents", 3)
        if min(h) <= 0.0:
            raise t.error("half_extents", f"expected an array of 3 numbers > 0, got {describe(list(h))}")
        out["half_extents"] = h
    if "semi_axes" in takes:
        e = t.vector("semi_axes", 3)
        if min(e) <= 0.0:
            raise t.error("semi_axes", f"expected an array of 3 numbers > 0, got {describe(list(e))}")
        out["semi_axes"] = e
    if "half_height" in takes:
        out["half_height"] = _nonneg(t, "half_height")
    if "points" in takes:
        out["points"] = t.points("points")
    for k in MATERIAL_KEYS + ("mu",):
        out[k] = _nonneg(t, k, None)
    if not static:
        out["density"] = _nonneg(t, "density", 1000.0)
    return out


def _body(t: Table, config: SceneConfig, folder: Path) -> dict:
    shapes = t.tables("shapes")
    return {"pos": t.vector("pos", 3, (0.0, 0.0, 0.0)), "rot": t.quat(),
            "velocity": t.vector("velocity", 3, (0.0, 0.0, 0.0)),
            "angular_velocity": t.vector("angular_velocity", 3, (0.0, 0.0, 0.0)),
            "armature": _nonneg(t, "armature", 0.0),
            "shapes": [_shape(s, t.key(f"shapes[{i}]"), t.file, static=False) for i, s in enumerate(shapes)]}


def _body_name(t: Table, key: str, config: SceneConfig, world: bool) -> str:
    bodies = [b["name"] for b in config.bodies]
    options = (['"world"'] if world else []) + [json.dumps(b) for b in bodies]
    value = t.data.get(key, "world" if world else REQUIRED)
    if value is REQUIRED:
        raise t.error(key, f"missing; expected the name of a [[bodies]] entry ({', '.join(options) or 'none'})")
    if not isinstance(value, str) or (value not in bodies and not (world and value == "world")):
        raise t.error(key, f"expected {'world or ' if world else ''}the name of a [[bodies]] entry "
                           f"({', '.join(options) or 'there are none'}), got {describe(value)}")
    return value


def _joint(t: Table, config: SceneConfig) -> dict:
    kind = t.choice("kind", tuple(JOINT_KINDS))
    takes = JOINT_COMMON + JOINT_KINDS[kind]
    for key in t.data:
        if key not in takes:
            raise t.unknown(key, takes, f"not a key of a {kind} joint")
    out = {"key": t.path, "kind": kind, "name": t.name() if t.has("name") else None,
           "parent": _body_name(t, "parent", config, world=True), "child": _body_name(t, "child", config, False)}
    if out["parent"] == out["child"]:
        raise t.error("child", f"expected a body other than the parent, got {json.dumps(out['child'])} twice")
    child = next(b for b in config.bodies if b["name"] == out["child"])
    out["anchor"] = t.vector("anchor", 3, child["pos"])
    if JOINT_KINDS[kind]:
        default_axis = (0.0, 0.0, 1.0) if kind == "revolute" else (1.0, 0.0, 0.0)
        out.update(axis=t.vector("axis", 3, default_axis, nonzero=True),
                   limit_lower=t.number("limit_lower", None), limit_upper=t.number("limit_upper", None),
                   limit_ke=_nonneg(t, "limit_ke", 1.0e4), limit_kd=_nonneg(t, "limit_kd", 1.0e1),
                   target=t.number("target", 0.0), target_vel=t.number("target_vel", 0.0),
                   target_ke=_nonneg(t, "target_ke", 0.0),
                   target_kd=_nonneg(t, "target_kd", 0.0))
        lo, hi = out["limit_lower"], out["limit_upper"]
        if lo is not None and hi is not None and lo > hi:
            raise t.error("limit_upper", f"expected a number >= limit_lower ({lo:g}), got {hi:g}")
    return out


# ----------------------------------------------------------------------------------
# [optimize]
# ----------------------------------------------------------------------------------

def _optimize(t: Table, config: SceneConfig) -> dict:
    out = {"iterations": t.integer("iterations", 30, low=1),
           "learning_rate": t.number("learning_rate", low=0.0, low_open=True),
           "optimizer": t.choice("optimizer", ("adam", "sgd"), "adam"),
           "checkpoint_every": t.integer("checkpoint_every", 10, low=1),
           "checkpoint": t.string("checkpoint", f"{config.name}.checkpoint.npz")}
    expected = 'an array of "body.parameter" strings, such as ["ball.velocity"]'
    params = t.data.get("parameters", REQUIRED)
    if params is REQUIRED:
        raise t.error("parameters", f"missing; expected {expected}")
    if not isinstance(params, list) or not params:
        raise t.error("parameters", f"expected {expected}, got {describe(params)}")
    out["parameters"] = []
    for i, p in enumerate(params):
        key = f"parameters[{i}]"
        if not isinstance(p, str) or p.count(".") != 1:
            raise t.error(key, f'expected a "body.parameter" string, got {describe(p)}')
        body, what = p.split(".")
        kind = config.names.get(body)
        if kind not in PARAMETERS:
            names = [n for n, k in config.names.items() if k in PARAMETERS]
            raise t.error(key, f"expected the name of a body ({', '.join(names)}) before the dot, got "
                               f"{json.dumps(body)}")
        if what not in PARAMETERS[kind]:
            raise t.error(key, f"expected one of the parameters of a {kind} entry after the dot "
                               f"({', '.join(PARAMETERS[kind])}), got {json.dumps(what)}")
        entry = next(b for b in getattr(config, kind) if b["name"] == body)
        if what == "activation" and entry["muscle"] is None:
            raise t.error(key, f"expected springs with a muscle table to optimize their activation, but "
                               f"{entry['key']} ({body}) has none")
        if what not in ("velocity", "activation") and entry[what] == 0.0:
            raise t.error(key, f"expected a material parameter whose value is > 0 (it is optimized on a log "
                               f"scale), but {entry['key']}.{what} is 0")
        if p in out["parameters"]:
            raise t.error(key, f"expected each parameter once, got {json.dumps(p)} twice")
        out["parameters"].append(p)
    loss = t.table("loss", LOSS_COMMON + tuple(k for v in LOSS_KINDS.values() for k in v), required=True)
    kind = loss.choice("kind", tuple(LOSS_KINDS))
    for key in loss.data:
        if key not in LOSS_COMMON + LOSS_KINDS[kind]:
            raise loss.unknown(key, LOSS_COMMON + LOSS_KINDS[kind], f"not a key of a {kind} loss")
    body = loss.name("body")
    if config.names.get(body) not in ("particles", "cloth", "soft_grid", "soft_mesh", "bodies"):
        names = [n for n, k in config.names.items() if k != "springs"]
        raise loss.error("body", f"expected the name of a body with a position ({', '.join(names)}), got "
                                 f"{json.dumps(body)}")
    out["loss"] = {"kind": kind, "body": body}
    if kind == "position":
        axes = loss.string("axes", "xyz")
        if not set(axes) <= set("xyz") or len(set(axes)) != len(axes):
            raise loss.error("axes", f'expected some of the letters "xyz", each at most once, got {json.dumps(axes)}')
        out["loss"].update(target=loss.vector("target", 3), axes=axes)
    else:
        d = np.array(loss.vector("direction", 3, nonzero=True))
        out["loss"]["direction"] = tuple(d / np.linalg.norm(d))
    return out
