"""ModelBuilder.add_mjcf against MuJoCo compiling the same files: gymnasium's classic models
and small files for each MJCF feature (default classes, angles, orientations, fromto, meshes,
actuators), plus its warnings and errors."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.shapes import collision_pairs
from simkit.kernels.structs import SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_MESH, SHAPE_PLANE
from simkit.sim.builder_joints import transform_multiply
from simkit.sim.importers import RobotFileError, RobotFileWarning

from import_helpers import compare_with_mujoco, load

mujoco = pytest.importorskip("mujoco")

GYM_MODELS = ("inverted_pendulum", "reacher", "hopper", "half_cheetah", "ant", "humanoid")
TOL = 1e-9     # the issue asks for 1e-6 relative in float64; the importer agrees to rounding


def gym_asset(name: str) -> str:
    gymnasium = pytest.importorskip("gymnasium")
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name + ".xml")
    if not os.path.isfile(path):
        pytest.skip(f"gymnasium has no {name}.xml")
    return path


def write(tmp_path, text: str, name: str = "model.xml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name", GYM_MODELS)
def test_gymnasium_model_matches_mujoco(name):
    err = compare_with_mujoco(gym_asset(name))
    assert max(err.values()) < TOL, err


def test_hopper_joint_ref_is_simkit_zero():
    # rootz has ref=1.25: simkit's coordinate is MuJoCo's minus the reference
    b, a, rec, model, _ = load(gym_asset("hopper"))
    assert rec.joint_ref["rootz"] == pytest.approx(1.25)
    start, stop = model.articulation_coords(a)
    m = mujoco.MjModel.from_xml_path(gym_asset("hopper"))
    np.testing.assert_allclose(rec.joint_q_from_mujoco(m.qpos0), model.joint_q.numpy()[start:stop], atol=1e-12)


def test_ant_degrees_become_radian_limits():
    b, a, rec, model, _ = load(gym_asset("ant"))
    j = rec.joints["ankle_2"]
    assert model.joints.limit_lower.numpy()[j] == pytest.approx(math.radians(-70.0))
    assert model.joints.limit_upper.numpy()[j] == pytest.approx(math.radians(-30.0))


def test_ant_placed_by_xform_keeps_its_coordinates():
    X = np.array([1.0, 2.0, 0.5, 0.0, 0.0, math.sin(0.4), math.cos(0.4)])
    _, a0, _, plain, _ = load(gym_asset("ant"))
    _, a1, rec, placed, _ = load(gym_asset("ant"), xform=X)
    np.testing.assert_allclose(placed.joint_q.numpy(), plain.joint_q.numpy(), atol=1e-12)
    torso = rec.bodies["torso"]
    expected = sk.sim.geometry.quat_rotate(X[3:], plain.body_q.numpy()[torso, :3]) + X[:3]
    np.testing.assert_allclose(placed.body_q.numpy()[torso, :3], expected, atol=1e-12)


DEFAULTS = """
<mujoco>
  <compiler angle="radian"/>
  <default>
    <joint damping="0.5" range="-1 1" limited="true"/>
    <geom density="500" size="0.05"/>
    <default class="leg">
      <joint axis="0 1 0" range="-0.5 0.7"/>
      <geom type="capsule" density="800"/>
      <default class="foot">
        <geom type="box" size="0.05 0.04 0.02"/>
      </default>
    </default>
  </default>
  <worldbody>
    <body name="hip" pos="0 0 1" childclass="leg">
      <joint name="hip"/>
      <geom fromto="0 0 0 0 0 -0.4"/>
      <body name="knee" pos="0 0 -0.4">
        <joint name="knee" class="main" axis="1 0 0"/>
        <geom fromto="0 0 0 0.1 0 -0.4"/>
        <body name="foot" pos="0.1 0 -0.4">
          <joint name="ankle"/>
          <geom class="foot" pos="0.02 0 0"/>
          <geom class="main" type="sphere" pos="-0.03 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def test_default_classes_nest_and_childclass_applies(tmp_path):
    path = write(tmp_path, DEFAULTS)
    err = compare_with_mujoco(path)
    assert max(err.values()) < TOL, err
    _, _, rec, model, _ = load(path)
    m = mujoco.MjModel.from_xml_path(path)
    for name in ("hip", "knee", "ankle"):
        j, mj = rec.joints[name], m.joint(name)
        assert (model.joints.limit_lower.numpy()[j], model.joints.limit_upper.numpy()[j]) == pytest.approx(
            tuple(mj.range))
        np.testing.assert_allclose(model.joints.axis.numpy()[j], mj.axis, atol=1e-15)
        assert model.joints.target_kd.numpy()[j] == pytest.approx(m.dof_damping[m.jnt_dofadr[mj.id]])


ORIENTATIONS = """
<mujoco>
  <compiler angle="{angle}" eulerseq="{seq}"/>
  <worldbody>
    <geom type="box" size="0.1 0.2 0.3" pos="0.1 0 0" euler="{e1} {e2} {e3}"/>
    <body name="a" pos="0 0 1" euler="{e1} {e2} {e3}">
      <joint type="ball" pos="0.1 0 0"/>
      <geom type="box" size="0.1 0.2 0.3" quat="0.9 0.1 -0.3 0.2"/>
      <geom type="ellipsoid" size="0.1 0.2 0.05" pos="0 0.3 0" axisangle="1 1 0 {e2}"/>
      <body name="b" pos="0.3 0 0" xyaxes="0 1 0 -1 0.5 0.2">
        <joint type="hinge" axis="1 1 0" pos="0 0 0.1" ref="{e1}"/>
        <geom type="cylinder" fromto="0 0 0 0.2 0.1 -0.3" size="0.04"/>
        <geom type="box" fromto="0 0 0 -0.2 0.1 0.3" size="0.04 0.02"/>
        <body name="c" pos="0 0.2 0" zaxis="0 1 1">
          <joint type="slide" axis="0 0 1"/>
          <joint type="hinge" axis="0 1 0" pos="0.1 0 0"/>
          <geom type="capsule" size="0.03 0.1" euler="{e3} {e1} {e2}"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("angle,seq,euler", [("degree", "xyz", (30.0, -45.0, 60.0)),
                                             ("radian", "ZYX", (0.5, -0.8, 1.1)),
                                             ("radian", "xYz", (0.3, 0.9, -0.4))])
def test_orientations_and_fromto_match_mujoco(tmp_path, angle, seq, euler):
    path = write(tmp_path, ORIENTATIONS.format(angle=angle, seq=seq, e1=euler[0], e2=euler[1], e3=euler[2]))
    err = compare_with_mujoco(path)
    assert max(err.values()) < TOL, err


def test_geoms_that_collide_with_nothing_are_not_colliders():
    # every geom of the inverted pendulum has contype 0 and the default conaffinity 1: MuJoCo
    # lets none of them touch another, so simkit makes no colliders (the rail would hold the cart)
    b, _, _, model, _ = load(gym_asset("inverted_pendulum"))
    assert b.shape_count == 0
    assert model.bodies.mass.numpy().sum() == pytest.approx(mujoco.mj_getTotalmass(
        mujoco.MjModel.from_xml_path(gym_asset("inverted_pendulum"))))


def test_the_files_contype_and_conaffinity_become_the_collision_filter():
    # the ant's legs overlap its torso; its geoms have conaffinity 0, so none touches another,
    # while its floor (a plane shape here: this builder has no ground) has 1 and meets them all
    b, _, _, model, caught = load(gym_asset("ant"))
    kind = model.shapes.kind.numpy()
    floor = int(np.flatnonzero(kind == SHAPE_PLANE)[0])
    assert b.shape_collision[floor] == [1, 1]
    assert all(c == [1, 0] for i, c in enumerate(b.shape_collision) if i != floor)
    pairs = collision_pairs(model).numpy()
    assert len(pairs) == b.shape_count - 1 and (pairs[:, 1] == floor).all()
    assert not any("pairs of colliders" in w for w in caught)


FRICTION = """<mujoco><default><geom friction="0.8 0.01 0.001"/></default><worldbody>
<body name="a"><freejoint/><geom name="plain" type="box" size="0.1 0.1 0.1"/>
<geom name="own" type="sphere" size="0.05" pos="0 0 0.2" friction="0.3"/></body>
<body name="b" pos="1 0 0"><freejoint/><geom type="box" size="0.1 0.1 0.1" friction="0.25 0 0"/></body>
</worldbody></mujoco>"""


def test_a_geoms_sliding_friction_becomes_its_colliders_mu(tmp_path):
    # the first of MuJoCo's three coefficients, the default class's where the geom gives none
    b = sk.sim.ModelBuilder(up_axis="z")
    b.add_mjcf(write(tmp_path, FRICTION))
    assert b.finalize().shapes.mu.numpy().tolist() == pytest.approx([0.8, 0.3, 0.25])


def test_a_geom_without_friction_gets_mujocos_default_of_one(tmp_path):
    b = sk.sim.ModelBuilder(up_axis="z")
    b.add_mjcf(write(tmp_path, '<mujoco><worldbody><geom type="box" size="1 1 0.1"/>'
                               '<body pos="0 0 1"><freejoint/><geom size="0.1"/></body></worldbody></mujoco>'))
    assert b.finalize().shapes.mu.numpy().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("bad", ["-0.5", "", "nan 0 0"])
def test_a_bad_geom_friction_is_an_error_naming_the_geom(tmp_path, bad):
    text = f'<mujoco><worldbody><body><freejoint/><geom name="g" size="0.1" friction="{bad}"/></body></worldbody></mujoco>'
    with pytest.raises(RobotFileError, match="geom name='g'.*friction"):
        sk.sim.ModelBuilder(up_axis="z").add_mjcf(write(tmp_path, text))


def test_the_ant_dropped_on_the_ground_comes_to_rest_in_xpbd():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=True)
        b.add_mjcf(gym_asset("ant"))
    model = b.finalize(dtype=sk.float64)
    dt = 1e-3
    # 1 s: with the file's friction of 1 on its feet the landing takes 0.8 s
    end = sk.sim.simulate(model, sk.sim.XPBD(), model.state(), 1000, dt, keep_states=False)[-1]
    torso_z = end.body_q.numpy()[0, 2]
    assert 0.3 < torso_z < 0.75                     # fell from 0.75 and stands on its legs
    assert np.abs(end.body_qd.numpy()).max() < 0.1


def test_overlaps_of_a_parent_and_a_child_hanging_by_two_joints_are_warned(tmp_path):
    path = write(tmp_path, """<mujoco><worldbody><body name="a"><geom name="ga" size="0.1"/>
        <body name="b" pos="0 0 -0.15"><joint name="h1" axis="1 0 0"/><joint name="h2" axis="0 1 0"/>
        <geom name="gb" size="0.1"/></body></body></worldbody></mujoco>""")
    _, _, _, _, caught = load(path)
    assert any("1 pairs of colliders of a parent and its child may touch" in w for w in caught)


def test_hinge_limits_are_relative_to_ref(tmp_path):
    path = write(tmp_path, """<mujoco><worldbody><body name="a"><geom size="0.1"/>
        <joint name="h" range="-30 60" ref="20"/><body name="b" pos="0 0 -0.3"><geom size="0.1"/>
        <joint name="s" type="slide" range="-0.1 0.3" ref="0.2"/></body></body></worldbody></mujoco>""")
    _, _, rec, model, _ = load(path)
    lower, upper = model.joints.limit_lower.numpy(), model.joints.limit_upper.numpy()
    assert (lower[rec.joints["h"]], upper[rec.joints["h"]]) == pytest.approx((math.radians(-50), math.radians(40)))
    assert (lower[rec.joints["s"]], upper[rec.joints["s"]]) == pytest.approx((-0.3, 0.1))


def test_static_geoms_become_static_colliders(tmp_path):
    path = write(tmp_path, ORIENTATIONS.format(angle="degree", seq="xyz", e1=30, e2=-45, e3=60))
    b, _, _, _, _ = load(path)
    statics = [i for i in range(b.shape_count) if b.shape_body[i] == -1]
    assert len(statics) == 1 and b.shape_density[statics[0]] == 0.0
    np.testing.assert_allclose(b.shape_params[statics[0]], [0.1, 0.2, 0.3])


def test_inertial_overrides_geoms_unless_inertiafromgeom_true(tmp_path):
    body = """<body name="a"><joint/><inertial pos="0.1 0 0" mass="2" fullinertia="0.3 0.25 0.2 0.01 0 0.02"/>
              <geom size="0.1"/></body>"""
    for flag in ("auto", "true"):
        path = write(tmp_path, f'<mujoco><compiler inertiafromgeom="{flag}"/><worldbody>{body}</worldbody></mujoco>')
        err = compare_with_mujoco(path)
        assert max(err.values()) < TOL, (flag, err)
    _, _, rec, model, _ = load(path)
    assert model.bodies.mass.numpy()[rec.bodies["a"]] == pytest.approx(1000.0 * 4.0 / 3.0 * math.pi * 0.1 ** 3)


def test_frame_and_include_are_followed(tmp_path):
    write(tmp_path, """<mujoco><worldbody><body name="inc" pos="0 0 -0.3"><joint axis="1 0 0"/>
        <geom type="box" size="0.1 0.1 0.1"/></body></worldbody></mujoco>""", "part.xml")
    path = write(tmp_path, """<mujoco><worldbody><body name="a" pos="0 0 1"><joint/>
        <frame pos="0.2 0 0" euler="0 0 90"><geom type="capsule" size="0.05 0.2"/>
          <body name="b" pos="0.1 0 0"><joint axis="0 1 0"/><geom size="0.05"/></body></frame>
        </body></worldbody><include file="part.xml"/></mujoco>""")
    err = compare_with_mujoco(path)
    assert max(err.values()) < TOL, err


@pytest.mark.filterwarnings("ignore:.*a plane is not imported")
def test_mesh_geom_mass_matches_mujoco(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    box = trimesh.creation.box(extents=(0.2, 0.4, 0.1))
    box.apply_translation((0.3, -0.1, 0.05))
    box.export(str(tmp_path / "part.stl"))
    trimesh.creation.icosphere(subdivisions=2, radius=0.1).export(str(tmp_path / "ball.obj"))
    path = write(tmp_path, """<mujoco><asset><mesh name="part" file="part.stl" scale="1 2 1"/>
        <mesh file="ball.obj"/></asset><worldbody><geom type="plane" size="1 1 1"/>
        <body name="b" pos="0 0 1"><freejoint/>
        <geom type="mesh" mesh="part" pos="0.1 0.2 0" euler="10 20 30" density="700"/>
        <geom type="mesh" mesh="ball" pos="0 0 -0.3" mass="2"/></body></worldbody></mujoco>""")
    err = compare_with_mujoco(path)
    assert max(err.values()) < 1e-8, err

    # both mesh geoms are colliders (their convex hulls, as MuJoCo collides them)
    b = sk.sim.ModelBuilder(up_axis="z")
    b.add_mjcf(path)
    meshes = [s for s, k in enumerate(b.shape_kind) if k == SHAPE_MESH]
    assert len(meshes) == 2
    hull = b.shape_meshes[meshes[0]]
    assert hull.closed and hull.volume == pytest.approx(0.2 * 0.8 * 0.1, rel=1e-6)


@pytest.mark.filterwarnings("ignore:.*a plane is not imported")
def test_mesh_geom_collider_rests_on_the_ground(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    trimesh.creation.box(extents=(0.2, 0.2, 0.1)).export(str(tmp_path / "part.stl"))
    path = write(tmp_path, """<mujoco><asset><mesh name="part" file="part.stl"/></asset><worldbody>
        <geom type="plane" size="1 1 1"/><body name="b" pos="0 0 0.3"><freejoint/><geom type="mesh" mesh="part" density="500"/></body>
        </worldbody></mujoco>""")
    b = sk.sim.ModelBuilder(up_axis="z")
    b.add_mjcf(path)
    model = b.finalize(dtype=sk.float64)
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1000, 1e-3, keep_states=False)[-1]
    assert final.body_q.numpy()[0, 2] == pytest.approx(0.05, abs=2e-3)


ACTUATED = """<mujoco><worldbody><body name="a"><joint name="j0" axis="0 1 0" damping="0.3"/><geom size="0.1"/>
  <body name="b" pos="0 0 -0.5"><joint name="j1" axis="0 1 0"/><geom size="0.1"/>
  <body name="c" pos="0 0 -0.5"><joint name="j2" type="slide" axis="0 0 1"/><geom size="0.1"/>
  </body></body></body></worldbody>
  <tendon><fixed name="t"><joint joint="j0" coef="1"/></fixed></tendon>
  <actuator><motor name="m0" joint="j0" gear="50" ctrlrange="-1 1"/>
    <position name="p1" joint="j1" kp="20" gear="2"/>
    <velocity name="v2" joint="j2" kv="3"/>
    <motor name="mt" tendon="t"/></actuator></mujoco>"""


def test_actuators_become_drives_or_are_recorded(tmp_path):
    path = write(tmp_path, ACTUATED)
    _, _, rec, model, caught = load(path)
    ke, kd = model.joints.target_ke.numpy(), model.joints.target_kd.numpy()
    j0, j1, j2 = (rec.joints[n] for n in ("j0", "j1", "j2"))
    assert (ke[j0], kd[j0]) == pytest.approx((0.0, 0.3))          # the joint's damping
    assert (ke[j1], kd[j1]) == pytest.approx((20.0 * 4.0, 0.0))   # kp gear^2
    assert (ke[j2], kd[j2]) == pytest.approx((0.0, 3.0))
    assert [a["name"] for a in rec.actuators] == ["m0", "p1", "v2", "mt"]
    assert rec.actuators[0]["gear"] == 50.0 and rec.actuators[0]["ctrlrange"] == (-1.0, 1.0)
    assert any("<motor name='mt'>" in w and "tendon='t'" in w for w in caught)
    assert any("<tendon> in" in w and "model.xml" in w for w in caught)


def test_actuator_forcerange_becomes_the_joints_effort_limit(tmp_path):
    path = write(tmp_path, """<mujoco><compiler autolimits="true"/><worldbody>
      <body name="a"><joint name="j0" axis="0 1 0"/><geom size="0.1"/>
      <body name="b" pos="0 0 -0.5"><joint name="j1" axis="0 1 0"/><geom size="0.1"/>
      <body name="c" pos="0 0 -0.5"><joint name="j2" axis="0 1 0"/><geom size="0.1"/>
      <body name="d" pos="0 0 -0.5"><joint name="j3" axis="0 1 0"/><geom size="0.1"/>
      </body></body></body></body></worldbody>
      <actuator><motor joint="j0" gear="2" forcerange="-3 3"/>
        <position joint="j1" kp="5" forcerange="-1 4"/>
        <motor joint="j2" gear="1" forcerange="-3 3" forcelimited="false"/>
        <motor joint="j3" forcerange="-1 1"/><motor joint="j3" gear="2" forcerange="-2 2"/></actuator></mujoco>""")
    _, _, rec, model, caught = load(path)
    effort = model.joints.effort_limit.numpy()
    j0, j1, j2, j3 = (rec.joints[n] for n in ("j0", "j1", "j2", "j3"))
    assert effort[j0] == pytest.approx(6.0)          # |gear| * 3: MuJoCo clamps the force, the joint gets gear times it
    assert effort[j1] == pytest.approx(4.0)          # not symmetric: the larger magnitude, with a warning
    assert any("forcerange -1 4 is not symmetric" in w and "'j1'" in w for w in caught)
    assert effort[j2] > 1e29                         # forcelimited="false": unbounded
    assert effort[j3] == pytest.approx(1.0 + 4.0)    # two actuators on one joint add up


@pytest.mark.filterwarnings("ignore:.*a plane is not imported")
@pytest.mark.filterwarnings("ignore:.*geom is not supported")
def test_unsupported_geom_warns_naming_it_and_the_file(tmp_path):
    path = write(tmp_path, """<mujoco><worldbody><geom type="plane" size="1 1 1"/><body name="a"><joint/>
        <geom name="ball" type="sphere" size="0.1"/><geom name="land" type="sdf" size="1 1 0.1"/></body>
        </worldbody></mujoco>""")
    with pytest.warns(RobotFileWarning, match=r"<geom name='land'> in .*model.xml: simkit has no sdf shape"):
        b = sk.sim.ModelBuilder(up_axis="z")
        a = b.add_mjcf(path)
    model = b.finalize(dtype=sk.float64)
    assert b.shape_count == 1
    assert model.bodies.mass.numpy()[b.imports[a].bodies["a"]] == pytest.approx(1000.0 * 4.0 / 3.0 * math.pi * 1e-3)


CYLINDERS = """<mujoco><worldbody>
  <geom name="post" type="cylinder" size="0.05 0.3" pos="1 0 0.3" euler="10 20 0"/>
  <body name="a" pos="0 0 1" euler="0 30 45"><freejoint/>
    <geom name="can" type="cylinder" size="0.1 0.2" pos="0.1 0 0"/>
    <geom name="rod" type="cylinder" fromto="0 0 0 0.2 0.1 -0.3" size="0.04"/>
    <geom name="egg" type="ellipsoid" size="0.05 0.07 0.09" pos="0 0.1 0" euler="20 0 40"/>
  </body></worldbody></mujoco>"""


def test_mjcf_cylinders_and_ellipsoids_become_colliders_where_mujoco_puts_them(tmp_path):
    path = write(tmp_path, CYLINDERS)
    b, a, rec, model, caught = load(path)
    assert not [w for w in caught if "cylinder" in w]
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    assert sorted(b.shape_kind) == [SHAPE_CYLINDER] * 3 + [SHAPE_ELLIPSOID]
    state = model.state()
    body_q = state.body_q.numpy()
    for s in range(4):
        # the geom of the same size (the importer adds the worldbody's geoms last)
        g = int(np.argmin(np.abs(m.geom_size[:, :2] - b.shape_params[s][:2]).sum(axis=1)))
        n = 3 if b.shape_kind[s] == SHAPE_ELLIPSOID else 2
        np.testing.assert_allclose(b.shape_params[s][:n], m.geom_size[g][:n], atol=1e-12)
        X = np.asarray(b.shape_xform[s], dtype=np.float64)
        if b.shape_body[s] >= 0:
            X = transform_multiply(body_q[b.shape_body[s]], X)
        np.testing.assert_allclose(X[:3], d.geom_xpos[g], atol=1e-9)
        if b.shape_kind[s] == SHAPE_ELLIPSOID:
            # the same axes as MuJoCo's
            np.testing.assert_allclose(sk.sim.geometry.quat_to_matrix(X[3:]), d.geom_xmat[g].reshape(3, 3), atol=1e-9)
            continue
        # simkit's axis (local y) is MuJoCo's (local z), either way up (a cylinder is symmetric)
        axis = sk.sim.geometry.quat_rotate(X[3:], np.array([0.0, 1.0, 0.0]))
        assert abs(axis @ d.geom_xmat[g].reshape(3, 3)[:, 2]) == pytest.approx(1.0, abs=1e-12)
    assert model.bodies.mass.numpy()[rec.bodies["a"]] == pytest.approx(m.body_mass[1], rel=1e-12)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"add_mjcf: no such file: .*nothing.xml"):
        sk.sim.ModelBuilder().add_mjcf(tmp_path / "nothing.xml")


@pytest.mark.parametrize("text,match", [
    ("<mujoco><worldbody>", r"model.xml is not valid XML"),
    ("<robot/>", r"not MJCF: its root element is <robot>"),
    ("<mujoco><worldbody><body name='a'><joint name='j' type='screw'/></body></worldbody></mujoco>",
     r"<joint name='j'> in .*model.xml: unknown joint type 'screw'"),
    ("<mujoco><worldbody><body><geom class='nope' size='1'/></body></worldbody></mujoco>",
     r"<geom> in .*model.xml: unknown default class 'nope'"),
    ("<mujoco><worldbody><body name='a'><joint/><freejoint/></body></worldbody></mujoco>",
     r"<body name='a'> in .*model.xml: a free joint must be the body's only joint"),
    ("<mujoco><worldbody><body><geom size='1' quat='1 0 0 0' euler='0 0 1'/></body></worldbody></mujoco>",
     r"give one orientation"),
])
def test_bad_files_are_clear_errors(tmp_path, text, match):
    path = write(tmp_path, text)
    with pytest.raises(RobotFileError, match=match):
        sk.sim.ModelBuilder().add_mjcf(path)


def one_body(inside: str) -> str:
    return f"<mujoco><worldbody><body name='arm'><joint type='hinge'/>{inside}</body></worldbody></mujoco>"


@pytest.mark.parametrize("text,match", [
    (one_body("<inertial pos='0 0 0' mass='-1' diaginertia='1 1 1'/>"),
     r"<inertial> of <body name='arm'> in .*model.xml: mass must be a finite number >= 0, got '-1'"),
    (one_body("<inertial pos='0 0 0' mass='1' diaginertia='-1 1 1'/>"),
     r"<inertial> of <body name='arm'> in .*model.xml: diaginertia must be finite with moments ixx, iyy, izz >= 0"),
    (one_body("<inertial pos='0 0 0' mass='1' fullinertia='1 1 nan 0 0 0'/>"),
     r"<inertial> of <body name='arm'> in .*model.xml: fullinertia must be finite"),
    (one_body("<geom name='g' size='0.1' mass='-1'/>"),
     r"<geom name='g'> of <body name='arm'> in .*model.xml: mass must be a finite number >= 0, got '-1'"),
    (one_body("<geom name='g' size='0.1' density='-1'/>"),
     r"<geom name='g'> of <body name='arm'> in .*model.xml: density must be a finite number >= 0, got '-1'"),
    (one_body("<geom name='g' size='0.1' mass='inf'/>"),
     r"<geom name='g'> of <body name='arm'> in .*model.xml: mass must be a finite number >= 0, got 'inf'"),
    (one_body("<geom name='g' size='0.1' density='dense'/>"),
     r"<geom name='g'> of <body name='arm'> in .*model.xml: density='dense' is not a number"),
])
def test_negative_or_non_finite_masses_inertias_and_densities_are_refused_naming_the_body(tmp_path, text, match):
    # MuJoCo refuses these too ("mass, inertia or density are negative in geom")
    b = sk.sim.ModelBuilder()
    with pytest.raises(RobotFileError, match=match):
        b.add_mjcf(write(tmp_path, text))
    assert b.body_count == 0


def test_bad_file_leaves_the_builder_untouched(tmp_path):
    path = write(tmp_path, "<mujoco><worldbody><body><joint type='screw'/></body></worldbody></mujoco>")
    b = sk.sim.ModelBuilder()
    with pytest.raises(RobotFileError):
        b.add_mjcf(path)
    assert (b.body_count, b.joint_count, b.articulation_count) == (0, 0, 0)


def test_frictionloss_and_ball_range_and_damping_are_imported_without_warnings(tmp_path):
    path = write(tmp_path, """<mujoco><compiler angle="radian"/><worldbody>
      <body name="a"><joint name="h" type="hinge" frictionloss="0.3"/><geom size="0.1" mass="1"/>
        <body name="b" pos="0 0 -1"><joint name="s" type="ball" range="0 0.6" damping="0.2" frictionloss="0.1"/>
          <geom size="0.1" mass="1"/></body></body></worldbody></mujoco>""")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RobotFileWarning)
        b = sk.sim.ModelBuilder()
        a = b.add_mjcf(path)
    model = b.finalize(dtype=sk.float64)
    joints = b.imports[a].joints
    np.testing.assert_allclose(model.joints.friction.numpy()[[joints["h"], joints["s"]]], [0.3, 0.1])
    assert model.joints.limit_upper.numpy()[joints["s"]] == pytest.approx(0.6)
    assert model.joints.target_kd.numpy()[joints["s"]] == pytest.approx(0.2)


@pytest.mark.parametrize("rng, match", [("0.1 30", r"range\[0\] \(0.1\) is ignored"),
                                        ("0 200", r"range\[1\] must be in \(0, 180\) degrees")])
def test_ball_range_parts_that_bound_nothing_warn(tmp_path, rng, match):
    path = write(tmp_path, f"""<mujoco><worldbody><body><joint name="s" type="ball" range="{rng}"/>
      <geom size="0.1" mass="1"/></body></worldbody></mujoco>""")
    with pytest.warns(RobotFileWarning, match=match):
        sk.sim.ModelBuilder().add_mjcf(path)
