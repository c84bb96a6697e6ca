"""Turning a checked :class:`~simkit.scene.schema.SceneConfig` into a model, an integrator
and the named bodies that ``[optimize]`` refers to: the :class:`Scene`.

Example::

    scene = load_scene("scenes/flag.toml")
    scene.model, scene.integrator, scene.settings.dt, scene.bodies["flag"].particles
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from ..sim import geometry as G
from ..sim.builder import ModelBuilder
from ..sim.featherstone import Featherstone
from ..sim.integrators import SemiImplicitEuler
from ..sim.model import Control, Model, State
from ..sim.xpbd import XPBD
from .objectives import scene_kernels
from .robots import Schedule, add_robot
from .schema import MATERIAL_KEYS, SceneConfig, read_config
from .validate import SceneError


@dataclass(frozen=True)
class Settings:
    """How a scene is simulated: ``frames`` frames of ``substeps`` integrator steps of ``dt``
    seconds each, by ``integrator`` (``"euler"``, ``"xpbd"`` with ``iterations``, or
    ``"featherstone"``), on
    ``device`` in ``dtype`` (``"float32"``/``"float64"``); ``gravity`` along ``up_axis``,
    with or without ``ground``.

    Example::

        scene.settings.frame_dt      # dt * substeps
    """

    dt: float
    substeps: int
    frames: int
    integrator: str
    iterations: int
    device: str
    dtype: str
    gravity: float
    up_axis: str
    ground: bool

    @property
    def frame_dt(self) -> float:
        """Seconds per frame: ``dt * substeps``.

        Example::

            t = frame * scene.settings.frame_dt
        """
        return self.dt * self.substeps

    @property
    def steps(self) -> int:
        """Integrator steps of a whole run: ``frames * substeps``.

        Example::

            tqdm(total=scene.settings.steps)
        """
        return self.frames * self.substeps


@dataclass
class Body:
    """A named part of a scene and where it lives in the model: its ``particles``,
    ``springs``, ``triangles`` and ``tets`` (ranges of indices) or its rigid ``body`` index;
    ``kind`` is the table it came from (``"particles"``, ``"springs"``, ``"cloth"``,
    ``"soft_grid"``, ``"soft_mesh"``, ``"bodies"``, ``"robots"``: ``body`` is then the
    robot's root link), ``key`` its key path, ``config`` its checked entry.

    Example::

        flag = scene.bodies["flag"]
        scene.model.particle_q.numpy()[flag.particles.start:flag.particles.stop]
    """

    name: str
    kind: str
    key: str
    config: dict
    particles: range = range(0)
    springs: range = range(0)
    triangles: range = range(0)
    tets: range = range(0)
    body: int = -1
    muscle: Any = None

    def center_start(self, model: Model) -> np.ndarray:
        """The body's center in the model's initial state: the mean of its particles, or a
        rigid body's origin.

        Example::

            scene.bodies["ball"].center_start(scene.model)      # array([0., 1., 0.])
        """
        if self.body >= 0:
            return np.asarray(model.body_q.numpy(), dtype=np.float64)[self.body, :3]
        q = np.asarray(model.particle_q.numpy(), dtype=np.float64)
        return q[self.particles.start:self.particles.stop].mean(axis=0)


@dataclass
class Muscle:
    """The gait of a spring set: spring ``first + s`` gets the activation
    ``amplitude * tanh(a_s sin(2 pi frequency t) + b_s cos(2 pi frequency t))`` at time ``t``;
    ``params`` holds the ``(a_s, b_s)`` pairs (an array of vec2 that ``[optimize]`` may change).

    Example::

        scene.bodies["legs"].muscle.params.numpy()
    """

    first: int
    count: int
    amplitude: float
    frequency: float
    params: A.Array


class Scene:
    """A loaded scene: ``model`` (a :class:`~simkit.sim.Model`), ``integrator``, ``settings``
    (:class:`Settings`), ``output`` (``{"usd": path, "fps": rate}``), ``optimize`` (the checked
    ``[optimize]`` table or None), ``bodies`` (name -> :class:`Body`) and ``config`` (the
    checked :class:`~simkit.scene.schema.SceneConfig`).

    Example::

        scene = load_scene("scenes/ball_bounce.toml")
        state = scene.initial_state()
        stepper = scene.stepper()
    """

    def __init__(self, config: SceneConfig, model: Model, bodies: dict[str, Body],
                 schedules: Mapping[int, Schedule] | None = None):
        self.config = config
        self.path = config.path
        self.name = config.name
        self.description = config.description
        self.settings = Settings(**config.sim)
        self.output = dict(config.output)
        self.optimize = config.optimize
        self.model = model
        self.bodies = bodies
        if self.settings.integrator == "xpbd":
            self.integrator: Any = XPBD(iterations=self.settings.iterations)
        elif self.settings.integrator == "featherstone":
            self.integrator = Featherstone()
        else:
            self.integrator = SemiImplicitEuler()
        self.muscles = [b.muscle for b in bodies.values() if b.muscle is not None]
        self._joint_target = np.zeros(model.joint_count, dtype=np.float64)
        self._joint_target[:len(config.joints)] = [j.get("target", 0.0) for j in config.joints]
        self._joint_target_vel = np.zeros(model.joint_count, dtype=np.float64)
        self._joint_target_vel[:len(config.joints)] = [j.get("target_vel", 0.0) for j in config.joints]
        # a robot's joint targets: {joint index: Schedule}; those that change are written every frame
        self.schedules = dict(schedules or {})
        for j, schedule in self.schedules.items():
            self._joint_target[j] = schedule.at(0.0)
        self._moving = {j: s for j, s in self.schedules.items() if not s.constant}

    def __repr__(self) -> str:
        return f"Scene({self.name!r}, {self.model!r})"

    def initial_state(self, requires_grad: bool = False) -> State:
        """A new state at the scene's initial positions and velocities.

        Example::

            s0 = scene.initial_state()
        """
        return self.model.state(requires_grad=requires_grad)

    @property
    def actuated(self) -> bool:
        """True when a control changes from frame to frame (the scene has muscles, or a
        robot's joint target follows a schedule).

        Example::

            controls = scene.frame_controls() if scene.actuated else scene.new_control()
        """
        return bool(self.muscles or self._moving)

    def new_control(self) -> Control | None:
        """A control holding the joints' targets and target rates (None when the scene has
        none and no muscles: the integrators then use a zero control).

        Example::

            control = scene.new_control()
        """
        if not self.actuated and not np.any(self._joint_target) and not np.any(self._joint_target_vel):
            return None
        control = self.model.control()
        if self.model.joint_count:
            control.joint_target.assign(self._joint_target)
            control.joint_target_vel.assign(self._joint_target_vel)
        return control

    def actuate(self, control: Control | None, frame: int) -> None:
        """Write every muscle's activation and every scheduled joint target of ``frame``
        (taken at the middle of the frame) into ``control``; the activations are recorded by
        an active Tape, so a gradient reaches the muscles' params.

        Example::

            scene.actuate(control, frame)
        """
        if control is None or not self.actuated:
            return
        t = (frame + 0.5) * self.settings.frame_dt
        if self._moving:
            for j, schedule in self._moving.items():
                self._joint_target[j] = schedule.at(t)
            control.joint_target.assign(self._joint_target)
        k = scene_kernels(self.model.dtype)
        for m in self.muscles:
            launch(k.gait, m.count, inputs=[m.params, m.first, 2.0 * math.pi * m.frequency * t, m.amplitude,
                                            control.spring_activation])

    def frame_controls(self, frames: int | None = None) -> Control | list[Control] | None:
        """The controls of a rollout of ``frames`` frames (default: the scene's): one per frame
        with the muscles' activations written when the scene has muscles, else one control
        (or None) for every frame.

        Example::

            rollout = sk.optim.Rollout(..., control=scene.frame_controls())
        """
        frames = self.settings.frames if frames is None else frames
        if not self.actuated:
            return self.new_control()
        controls = [self.new_control() for _ in range(frames)]
        for frame, control in enumerate(controls):
            self.actuate(control, frame)
        return controls

    def stepper(self, initial: State | None = None) -> "Stepper":
        """A :class:`Stepper` that runs the scene frame by frame from ``initial`` (default: the
        scene's initial state).

        Example::

            stepper = scene.stepper()
            state = stepper.reset()
            state = stepper.advance(state)
        """
        return Stepper(self, initial)


class Stepper:
    """Runs a scene one frame at a time between two reused states, with the scene's muscles
    and joint targets: :meth:`reset` returns the initial state, :meth:`advance` the state one
    frame later (``frame`` counts the frames since the reset). After ``settings.frames``
    frames, :meth:`advance` holds the last state. This is what a live viewer drives.

    Example::

        stepper = scene.stepper()
        state = stepper.reset()
        for _ in range(scene.settings.frames):
            state = stepper.advance(state)
    """

    def __init__(self, scene: Scene, initial: State | None = None):
        self.scene = scene
        self.initial = scene.initial_state() if initial is None else initial
        self._buffers = (scene.model.state(requires_grad=False), scene.model.state(requires_grad=False))
        self._control = scene.new_control()
        self._current = self._buffers[0]
        self.frame = 0

    def reset(self) -> State:
        """Go back to the initial state and return it.

        Example::

            state = stepper.reset()
        """
        self._current = self._buffers[0]
        self._current.copy_from(self.initial)
        self.frame = 0
        return self._current

    def advance(self, state: State | None = None) -> State:
        """Advance ``state`` (default: the last state returned) by one frame and return the new
        state (one of the stepper's two buffers, so ``state`` may be overwritten).

        Example::

            state = stepper.advance(state)
        """
        s = self.scene
        cur = self._current if state is None else state
        if cur is not self._buffers[0] and cur is not self._buffers[1]:
            self._buffers[0].copy_from(cur)
            cur = self._buffers[0]
        if self.frame >= s.settings.frames:
            self._current = cur
            return cur
        s.actuate(self._control, self.frame)
        nxt = self._buffers[1] if cur is self._buffers[0] else self._buffers[0]
        for _ in range(s.settings.substeps):
            s.integrator.step(s.model, cur, nxt, self._control, s.settings.dt)
            cur, nxt = nxt, cur
        self.frame += 1
        self._current = cur
        return cur


# ----------------------------------------------------------------------------------
# Building
# ----------------------------------------------------------------------------------

def load_scene(path: str | os.PathLike, *, device: str | None = None, frames: int | None = None,
               overrides: Mapping[str, Any] | None = None) -> Scene:
    """Read, check and build the scene file ``path`` (TOML, see ``docs/scenes.md``);
    ``device`` and ``frames`` override ``sim.device`` and ``sim.frames``, ``overrides`` (key
    path -> value, such as ``{"cloth[0].k_mu": 2000}``) any key of the file. Every problem with
    the file is one :class:`~simkit.scene.SceneError` naming the file, the key path and what
    was expected, raised before anything is simulated or written.

    Example::

        scene = load_scene("scenes/ball_bounce.toml", frames=10)
        scene.model.particle_count
    """
    return build_scene(read_config(path, device=device, frames=frames, overrides=overrides))


def _quat_inverse(q: np.ndarray) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


def _materials(entry: dict, *names: str) -> dict:
    return {n: entry[n] for n in names}


def build_scene(config: SceneConfig) -> Scene:
    """Build the model of a checked config; an error of the builder (a degenerate element,
    say) becomes a SceneError naming the entry it came from.

    Example::

        scene = build_scene(read_config("scenes/flag.toml"))
    """
    sim, c, r = config.sim, config.contact, config.rigid_contact
    b = ModelBuilder(gravity=sim["gravity"], up_axis=sim["up_axis"], ground=sim["ground"],
                     particle_contact=c["particle_contact"], contact_mu=c["mu"], rigid_contact_mu=r["mu"],
                     **{f"contact_{k}": c[k] for k in MATERIAL_KEYS},
                     **{f"rigid_contact_{k}": r[k] for k in MATERIAL_KEYS})
    bodies: dict[str, Body] = {}
    gaits: list[tuple[Body, dict]] = []

    def guarded(key: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError) as e:
            raise SceneError(config.file, key, f"expected an entry the model builder accepts, but {e}") from None

    for e in config.particles:
        start = b.particle_count
        pinned = set(e["pinned"])
        for i, p in enumerate(e["positions"]):
            guarded(e["key"], b.add_particle, p, e["velocity"], 0.0 if i in pinned else e["mass"], e["radius"])
        bodies[e["name"]] = Body(e["name"], "particles", e["key"], e, particles=range(start, b.particle_count))
    for e in config.cloth:
        start, tri = b.particle_count, b.tri_count
        guarded(e["key"], b.add_cloth_grid, e["pos"], e["rot"], e["velocity"], e["dim_x"], e["dim_y"], e["cell_x"],
                e["cell_y"], e["mass"], e["fix_left"], e["fix_right"], e["fix_top"], e["fix_bottom"],
                radius=e["radius"], **_materials(e, "k_mu", "k_lambda", "k_damp", "edge_ke", "edge_kd"))
        bodies[e["name"]] = Body(e["name"], "cloth", e["key"], e, particles=range(start, b.particle_count),
                                 triangles=range(tri, b.tri_count))
    for e in config.soft_grid:
        start, tet = b.particle_count, b.tet_count
        guarded(e["key"], b.add_soft_grid, e["pos"], e["rot"], e["velocity"], e["dim_x"], e["dim_y"], e["dim_z"],
                e["cell_x"], e["cell_y"], e["cell_z"], e["density"], e["k_mu"], e["k_lambda"], e["k_damp"],
                e["fix_left"], e["fix_right"], e["fix_top"], e["fix_bottom"], radius=e["radius"])
        bodies[e["name"]] = Body(e["name"], "soft_grid", e["key"], e, particles=range(start, b.particle_count),
                                 tets=range(tet, b.tet_count))
    for e in config.soft_mesh:
        start, tet = b.particle_count, b.tet_count
        guarded(e["key"], b.add_soft_mesh, e["pos"], e["rot"], e["scale"], e["velocity"], e["vertices"], e["tets"],
                e["density"], e["k_mu"], e["k_lambda"], e["k_damp"], radius=e["radius"])
        bodies[e["name"]] = Body(e["name"], "soft_mesh", e["key"], e, particles=range(start, b.particle_count),
                                 tets=range(tet, b.tet_count))
    for e in config.springs:
        group = bodies[e["particles"]]
        first = b.spring_count
        for i, j in e["pairs"]:
            guarded(e["key"], b.add_spring, group.particles[i], group.particles[j], e["ke"], e["kd"])
        body = Body(e["name"], "springs", e["key"], e, particles=group.particles,
                    springs=range(first, b.spring_count))
        bodies[e["name"]] = body
        if e["muscle"] is not None:
            gaits.append((body, e["muscle"]))
    for e in config.shapes:
        _add_shape(b, e, -1, config)
    for e in config.bodies:
        origin = T.transform(e["pos"], e["rot"])
        index = guarded(e["key"], b.add_body, origin, e["armature"], velocity=e["velocity"],
                        angular_velocity=e["angular_velocity"])
        for s in e["shapes"]:
            _add_shape(b, s, index, config)
        bodies[e["name"]] = Body(e["name"], "bodies", e["key"], e, body=index)
    for e in config.joints:
        _add_joint(b, e, bodies, config)
    schedules = {}
    for e in config.robots:
        first = b.body_count
        _articulation, targets = add_robot(b, e, config.file)
        schedules.update(targets)
        bodies[e["name"]] = Body(e["name"], "robots", e["key"], e, body=first)

    if config.cloth_self_contact is not None:
        b.set_cloth_self_contact(**config.cloth_self_contact)
    settings = config.sim
    dtype = T.float64 if settings["dtype"] == "float64" else T.float32
    try:
        model = b.finalize(device=settings["device"], dtype=dtype)
    except (TypeError, ValueError) as e:
        # the self-contact's checks of the cloth (thickness, triangles) run in finalize
        key = "cloth_self_contact" if str(e).startswith("set_cloth_self_contact") else ""
        raise SceneError(config.file, key, f"expected an entry the model builder accepts, but {e}") from None
    if settings["integrator"] == "featherstone" and not model.articulation_count:
        raise SceneError(config.file, "sim.integrator", 'expected a scene with a [[robots]] entry for integrator = '
                                                        '"featherstone" (it steps articulations), but it has none')
    if model.particle_count:
        # pinned particles are kinematic: they would keep a body's initial velocity and fly off
        qd = model.particle_qd.numpy().copy()
        qd[model.particles.mass.numpy() == 0.0] = 0.0
        model.particle_qd.assign(qd)
    for body, m in gaits:
        phase, gain = m["phase"], m["gain"]
        ab = np.stack([gain * np.cos(phase), gain * np.sin(phase)], axis=1)
        params = A.array(ab, dtype=T.vector(2, dtype), device=model.device)
        body.muscle = Muscle(body.springs.start, len(body.springs), m["amplitude"], m["frequency"], params)
    return Scene(config, model, bodies, schedules)


def _add_shape(b: ModelBuilder, e: dict, body: int, config: SceneConfig) -> None:
    material = {k: e[k] for k in MATERIAL_KEYS + ("mu",)}
    density = e.get("density", 0.0)
    try:
        if e["kind"] == "sphere":
            b.add_shape_sphere(e["pos"], e["radius"], body=body, density=density, **material)
        elif e["kind"] == "box":
            b.add_shape_box(e["pos"], e["rot"], e["half_extents"], body=body, density=density, **material)
        elif e["kind"] == "cylinder":
            b.add_shape_cylinder(e["pos"], e["rot"], e["radius"], e["half_height"], body=body, density=density,
                                 **material)
        elif e["kind"] == "ellipsoid":
            b.add_shape_ellipsoid(e["pos"], e["rot"], e["semi_axes"], body=body, density=density, **material)
        elif e["kind"] == "convex":
            b.add_shape_convex(e["pos"], e["rot"], e["points"], body=body, density=density, **material)
        elif e["kind"] == "plane":
            b.add_shape_plane(e["pos"], e["rot"], e["half_extents"], **material)
        elif e["kind"] == "heightfield":
            b.add_shape_heightfield(e["pos"], e["rot"], e["heights"], e["half_extents"], **material)
        elif e["kind"] == "cone":
            b.add_shape_cone(e["pos"], e["rot"], e["radius"], e["half_height"], body=body, density=density,
                             **material)
        else:
            b.add_shape_capsule(e["pos"], e["rot"], e["radius"], e["half_height"], body=body, density=density,
                                **material)
    except (TypeError, ValueError) as err:
        raise SceneError(config.file, e["key"], f"expected an entry the model builder accepts, but {err}") from None


def _add_joint(b: ModelBuilder, e: dict, bodies: dict[str, Body], config: SceneConfig) -> None:
    parent = -1 if e["parent"] == "world" else bodies[e["parent"]].body
    child_cfg = bodies[e["child"]].config
    child = bodies[e["child"]].body
    # the joint frame sits at the world point `anchor`, aligned with the world axes at the start
    q_inv = _quat_inverse(np.array(child_cfg["rot"]))
    local = G.quat_rotate(q_inv, np.array(e["anchor"]) - np.array(child_cfg["pos"]))
    child_xform = T.transform(tuple(local), tuple(q_inv))
    try:
        if e["kind"] in ("revolute", "prismatic"):
            add = b.add_joint_revolute if e["kind"] == "revolute" else b.add_joint_prismatic
            add(parent, child, child_xform=child_xform, axis=e["axis"], limit_lower=e["limit_lower"],
                limit_upper=e["limit_upper"], limit_ke=e["limit_ke"], limit_kd=e["limit_kd"],
                target_ke=e["target_ke"], target_kd=e["target_kd"])
        elif e["kind"] == "ball":
            b.add_joint_ball(parent, child, child_xform=child_xform)
        else:
            b.add_joint_fixed(parent, child, child_xform=child_xform)
    except (TypeError, ValueError) as err:
        raise SceneError(config.file, e["key"], f"expected an entry the model builder accepts, but {err}") from None


