"""[[robots]] in scene files: a URDF or MJCF robot, its drives and joint targets over time."""

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import simkit as sk
from simkit.scene import SceneError, load_scene, read_config
from simkit.kernels.structs import JOINT_REVOLUTE
from simkit.scene.robots import Schedule

SCENES = Path(__file__).resolve().parents[2] / "scenes"
THIGH = SHIN = 0.18      # quadruped.xml: leg segment lengths (m)
FOOT_RADIUS = 0.025

PENDULUM_URDF = """<robot name="pendulum">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="bob">
    <inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
      <inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="swing" type="revolute">
    <parent link="base"/><child link="bob"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="10"/>
  </joint>
</robot>
"""


def stance_height(hip: float, knee: float) -> float:
    """Torso height of quadruped.xml standing on its feet with these joint angles."""
    return THIGH * math.cos(hip) + SHIN * math.cos(hip + knee) + FOOT_RADIUS


@pytest.fixture
def robot_scene(tmp_path):
    """``robot_scene(robot_toml, sim_toml="")``: a scene in ``tmp_path`` with the given
    [[robots]] entry (its files: ``pendulum.urdf`` and a copy of ``robots/quadruped.xml``)."""
    (tmp_path / "pendulum.urdf").write_text(PENDULUM_URDF)
    shutil.copytree(SCENES / "robots", tmp_path / "robots", dirs_exist_ok=True)

    def make(robot: str, sim: str = "") -> Path:
        path = tmp_path / "robot.toml"
        path.write_text(f'[sim]\ndt = 1.0e-3\nsubsteps = 10\nframes = 20\nup_axis = "z"\nground = false\n{sim}\n'
                        f"[[robots]]\n{robot}\n")
        return path
    return make


def torso_track(scene, frames: int) -> list:
    stepper = scene.stepper()
    state = stepper.reset()
    out = []
    for _ in range(frames):
        state = stepper.advance(state)
        out.append(state.body_q.numpy()[scene.bodies["dog"].body].copy())
    return out


def test_schedule_interpolates_and_holds_its_ends():
    s = Schedule(((1.0, 0.0), (3.0, 1.0)))
    assert [s.at(t) for t in (0.0, 1.0, 2.0, 3.0, 9.0)] == [0.0, 0.0, 0.5, 1.0, 1.0]
    assert Schedule(((0.0, 0.7),)).constant and Schedule(((0.0, 0.7),)).at(5.0) == 0.7


@pytest.fixture
def quadruped_scene(tmp_path):
    """``quadruped_scene(integrator)``: scenes/quadruped_stand.toml stepped by ``integrator``."""
    def make(integrator: str) -> Path:
        text = (SCENES / "quadruped_stand.toml").read_text()
        if integrator != "xpbd":
            text = text.replace('integrator = "xpbd"\niterations = 4', f'integrator = "{integrator}"')
        shutil.copytree(SCENES / "robots", tmp_path / "robots", dirs_exist_ok=True)
        path = tmp_path / "quadruped.toml"
        path.write_text(text)
        return path
    return make


@pytest.mark.parametrize("integrator", ["xpbd", "featherstone"])
def test_the_quadruped_stands_at_the_height_its_targets_give(quadruped_scene, integrator):
    scene = load_scene(quadruped_scene(integrator), frames=40)
    assert type(scene.integrator).__name__ == {"xpbd": "XPBD", "featherstone": "Featherstone"}[integrator]
    track = torso_track(scene, 40)
    z = track[-1][2]
    assert z == pytest.approx(stance_height(0.4, -0.8), abs=0.01)
    assert abs(track[-1][6]) > 0.999          # level: the torso's rotation stays near identity
    assert max(abs(p[2] - z) for p in track[-10:]) < 2e-3     # at rest, not bouncing


def test_the_knee_schedule_makes_the_quadruped_squat_and_rise_again():
    scene = load_scene(SCENES / "quadruped_stand.toml")
    assert scene.actuated
    track = torso_track(scene, scene.settings.frames)
    fps = 1.0 / scene.settings.frame_dt
    standing, squat, end = track[int(0.7 * fps)][2], track[int(1.3 * fps)][2], track[-1][2]
    assert squat < standing - 0.03
    assert squat == pytest.approx(stance_height(0.4, -1.3), abs=0.02)
    assert end == pytest.approx(standing, abs=0.01)


def test_a_urdf_pendulum_follows_its_drive_target(robot_scene):
    path = robot_scene('name = "arm"\nurdf = "pendulum.urdf"\ntarget_ke = 200.0\ntarget_kd = 20.0\n'
                       "targets = { swing = [[0.0, 0.0], [0.05, 0.5]] }", sim='integrator = "xpbd"')
    scene = load_scene(path, frames=40)
    assert scene.actuated
    stepper = scene.stepper()
    state = stepper.reset()
    for _ in range(40):
        state = stepper.advance(state)
    model = scene.model
    q = sk.zeros(model.joint_coord_count, dtype=model.dtype)
    qd = sk.zeros(model.joint_dof_count, dtype=model.dtype)
    sk.sim.eval_ik(model, state, q, qd)
    swing = model.joint_q_start.numpy()[list(model.joints.kind.numpy()).index(JOINT_REVOLUTE)]
    # the drive holds 0.5 rad against gravity's torque m g l sin(q) = ke * error
    error = 1.0 * 9.81 * 0.5 * math.sin(0.5) / 200.0
    assert q.numpy()[swing] == pytest.approx(0.5 - error, abs=0.01)


def test_a_constant_target_needs_no_control_per_frame(robot_scene):
    path = robot_scene('name = "arm"\nurdf = "pendulum.urdf"\ntarget_ke = 10.0\ntargets = { swing = 0.3 }')
    scene = load_scene(path)
    assert not scene.actuated
    swing = list(scene.model.joints.kind.numpy()).index(JOINT_REVOLUTE)
    assert scene.new_control().joint_target.numpy()[swing] == pytest.approx(0.3)


def test_the_robot_file_is_part_of_the_scene_fingerprint(robot_scene, tmp_path):
    path = robot_scene('name = "arm"\nurdf = "pendulum.urdf"')
    before = read_config(path).fingerprint
    (tmp_path / "pendulum.urdf").write_text(PENDULUM_URDF.replace('ixx="1e-3"', 'ixx="2e-3"'))
    assert read_config(path).fingerprint != before


@pytest.mark.parametrize("robot, key, message", [
    ('name = "r"', "robots[0].urdf", "exactly one of urdf"),
    ('name = "r"\nurdf = "pendulum.urdf"\nmjcf = "robots/quadruped.xml"', "robots[0].mjcf", "got both"),
    ('name = "r"\nurdf = "nothere.urdf"', "robots[0].urdf", "does not exist"),
    ('name = "r"\nmjcf = "pendulum.urdf"', "robots[0].mjcf", "ending in .xml"),
    ('name = "r"\nmjcf = "robots/quadruped.xml"\nfloating = true', "robots[0].floating", "not a key of an mjcf"),
    ('name = "r"\nurdf = "pendulum.urdf"\ntargets = { swing = "up" }', "robots[0].targets.swing", "a number or"),
    ('name = "r"\nurdf = "pendulum.urdf"\ntargets = { swing = [[0.0, 1.0], [0.0, 2.0]] }',
     "robots[0].targets.swing[1]", "a time after the previous"),
    ('name = "r"\nurdf = "pendulum.urdf"\ntargets = { swing = [[0.0]] }', "robots[0].targets.swing[0]",
     "a point [t, q]"),
    ('name = "r"\nurdf = "pendulum.urdf"\ntarget_ke = -1.0', "robots[0].target_ke", ">= 0"),
    ('name = "r"\nurdf = "pendulum.urdf"\ntargets = { elbow = 0.1 }\ntarget_ke = 1.0', "robots[0].targets.elbow",
     '"swing"'),
    ('name = "r"\nmjcf = "robots/quadruped.xml"\ntargets = { root = 0.1 }\ntarget_ke = 1.0',
     "robots[0].targets.root", "hinge or slide joint"),
    ('name = "r"\nurdf = "pendulum.urdf"\ntargets = { swing = 0.1 }', "robots[0].target_ke", "stiffness > 0"),
])
def test_a_bad_robot_entry_is_one_error_naming_its_key(robot_scene, robot, key, message):
    path = robot_scene(robot)
    with pytest.raises(SceneError) as e:
        load_scene(path)
    assert e.value.key == key
    assert message in str(e.value)


def test_featherstone_needs_a_robot_in_the_scene(tmp_path):
    path = tmp_path / "ball.toml"
    path.write_text('[sim]\ndt = 1e-3\nframes = 2\nintegrator = "featherstone"\n'
                    '[[particles]]\nname = "p"\npositions = [[0.0, 1.0, 0.0]]\n')
    with pytest.raises(SceneError) as e:
        load_scene(path)
    assert e.value.key == "sim.integrator" and "[[robots]]" in str(e.value)


def test_set_joint_drive_changes_only_the_gains_given():
    b = sk.sim.ModelBuilder(ground=False)
    body = b.add_body()
    j = b.add_joint_revolute(-1, body, target_ke=5.0, target_kd=1.0)
    b.set_joint_drive(j, target_kd=3.0)
    model = b.finalize()
    assert (model.joints.target_ke.numpy()[j], model.joints.target_kd.numpy()[j]) == (5.0, 3.0)


def test_set_joint_drive_refuses_a_joint_without_a_drive():
    b = sk.sim.ModelBuilder(ground=False)
    j = b.add_joint_fixed(-1, b.add_body())
    with pytest.raises(ValueError, match="not revolute, prismatic, universal or ball"):
        b.set_joint_drive(j, target_ke=1.0)
    with pytest.raises(ValueError, match="out of range"):
        b.set_joint_drive(j + 1, target_ke=1.0)
    hinge = b.add_joint_revolute(-1, b.add_body())
    with pytest.raises(ValueError, match="target_ke"):
        b.set_joint_drive(hinge, target_ke=-1.0)
