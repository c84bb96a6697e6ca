"""ModelBuilder.add_urdf against MuJoCo compiling the same URDF files (a 2-link arm and a
7-DoF arm-like chain in tests/sim/data), plus its frames, colliders, warnings and errors."""

from __future__ import annotations

import glob
import math
import os
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.structs import SHAPE_CYLINDER
from simkit.sim.importers import RobotFileError, RobotFileWarning

from import_helpers import compare_with_mujoco, load

DATA = os.path.join(os.path.dirname(__file__), "data")
ARM2, ARM7 = os.path.join(DATA, "arm2.urdf"), os.path.join(DATA, "arm7.urdf")
TOL = 1e-9


def write(tmp_path, text: str) -> str:
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("path", [ARM2, ARM7], ids=["arm2", "arm7"])
def test_urdf_matches_mujoco(path):
    pytest.importorskip("mujoco")
    err = compare_with_mujoco(path, kind="urdf")
    assert max(err.values()) < TOL, err


# URDFs shipped in the example-robot-data wheel (a dev extra); go1's base inertia is not
# positive definite, which MuJoCo refuses, so it is not among them
SHIPPED = ("ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf",
           "solo_description/robots/solo12.urdf", "z1_description/urdf/z1.urdf",
           "xarm_description/urdf/xarm7.urdf")


def shipped_urdf(rel: str) -> str:
    roots = glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "cmeel.prefix", "share",
                                   "example-robot-data", "robots"))
    if not roots or not os.path.isfile(os.path.join(roots[0], rel)):
        pytest.skip("example-robot-data is not installed")
    return os.path.join(roots[0], rel)


def without_geometry(src: str, dst) -> str:
    """``src`` with only its links' inertials and its joints, for MuJoCo, which would need the
    meshes (the geometry carries no mass in URDF)."""
    root = ET.parse(src).getroot()
    for e in list(root):
        if e.tag not in ("link", "joint"):
            root.remove(e)
    for link in root.findall("link"):
        for e in link.findall("visual") + link.findall("collision"):
            link.remove(e)
    ET.SubElement(ET.SubElement(root, "mujoco"), "compiler", discardvisual="true", fusestatic="false",
                  balanceinertia="false")
    ET.ElementTree(root).write(dst)
    return str(dst)


@pytest.mark.parametrize("rel", SHIPPED, ids=[os.path.basename(r)[:-5] for r in SHIPPED])
def test_shipped_urdf_matches_mujoco(tmp_path, rel):
    pytest.importorskip("mujoco")
    path = shipped_urdf(rel)
    err = compare_with_mujoco(path, kind="urdf", mujoco_path=without_geometry(path, tmp_path / "robot.urdf"))
    assert max(err.values()) < TOL, err


def test_limits_and_damping_are_imported():
    _, _, rec, model, caught = load(ARM7, "urdf")
    lower, upper = model.joints.limit_lower.numpy(), model.joints.limit_upper.numpy()
    assert (lower[rec.joints["j1"]], upper[rec.joints["j1"]]) == pytest.approx((-2.9, 2.9))
    assert (lower[rec.joints["j5"]], upper[rec.joints["j5"]]) == pytest.approx((-0.1, 0.1))
    assert lower[rec.joints["j7"]] < -1e10 and upper[rec.joints["j7"]] > 1e10     # continuous: no limits
    assert model.joints.target_kd.numpy()[rec.joints["j1"]] == pytest.approx(0.5)
    assert rec.joint_frictionloss["j1"] == 0.1
    assert model.joints.friction.numpy()[rec.joints["j1"]] == pytest.approx(0.1)     # simulated now: no warning
    assert not any("friction" in w for w in caught)


def test_floating_base_coordinates_are_relative_to_xform():
    # like add_builder's copies: the free joint's frame is xform, the base starts at q = identity
    X = np.array([0.5, -0.2, 1.0, 0.0, math.sin(0.3), 0.0, math.cos(0.3)])
    Y = np.array([0.1, 0.2, 0.3, math.sin(0.2), 0.0, 0.0, math.cos(0.2)])
    _, _, fixed_rec, fixed, _ = load(ARM7, "urdf")
    _, a, rec, floating, _ = load(ARM7, "urdf", xform=X, floating=True)
    start, stop = floating.articulation_coords(a)
    assert stop - start == 7 + 7
    np.testing.assert_allclose(floating.joint_q.numpy()[start:start + 7], [0, 0, 0, 0, 0, 0, 1], atol=1e-12)
    # a random arm pose on a moved base: every link moves with the base, by X then Y
    arm = np.random.default_rng(0).uniform(-1.0, 1.0, 7)
    s_fixed, s_float = fixed.state(), floating.state()
    sk.sim.eval_fk(fixed, sk.array(arm, dtype=sk.float64), fixed.joint_qd, s_fixed)
    sk.sim.eval_fk(floating, sk.array(np.concatenate([Y, arm]), dtype=sk.float64), floating.joint_qd, s_float)
    rotate = sk.sim.geometry.quat_rotate
    for name, b in fixed_rec.bodies.items():
        p = s_fixed.body_q.numpy()[b, :3]
        expected = rotate(X[3:], rotate(Y[3:], p) + Y[:3]) + X[:3]
        np.testing.assert_allclose(s_float.body_q.numpy()[rec.bodies[name], :3], expected, atol=1e-12)


def test_collision_geometries_become_massless_colliders():
    b, _, rec, model, caught = load(ARM2, "urdf")
    upper = rec.bodies["upper"]
    shapes = [i for i in range(b.shape_count) if b.shape_body[i] == upper]
    assert len(shapes) == 1 and b.shape_density[shapes[0]] == 0.0
    np.testing.assert_allclose(b.shape_params[shapes[0]], [0.03, 0.25, 0.0])
    # simkit's capsule lies along its y axis, URDF's along z
    axis = sk.sim.geometry.quat_rotate(b.shape_xform[shapes[0]][3:], np.array([0.0, 1.0, 0.0]))
    np.testing.assert_allclose(np.abs(axis), [0.0, 0.0, 1.0], atol=1e-12)
    assert model.bodies.mass.numpy()[upper] == pytest.approx(1.0)


def test_a_cylinder_collision_becomes_a_cylinder_collider_along_the_links_z_axis():
    b, _, rec, model, caught = load(ARM7, "urdf")
    assert not [w for w in caught if "cylinder" in w]
    cylinders = [i for i in range(b.shape_count) if b.shape_kind[i] == SHAPE_CYLINDER]
    assert cylinders
    s = cylinders[0]
    np.testing.assert_allclose(b.shape_params[s], [0.1, 0.05, 0.0])      # radius 0.1, length 0.1
    assert b.shape_density[s] == 0.0
    axis = sk.sim.geometry.quat_rotate(b.shape_xform[s][3:], np.array([0.0, 1.0, 0.0]))
    np.testing.assert_allclose(np.abs(axis), [0.0, 0.0, 1.0], atol=1e-12)


def test_planar_joint_is_two_sliders_and_a_hinge(tmp_path):
    path = write(tmp_path, """<robot name="r"><link name="base"/><link name="puck"><inertial><mass value="1"/>
        <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
        <joint name="p" type="planar"><parent link="base"/><child link="puck"/><axis xyz="0 0 1"/></joint></robot>""")
    _, a, rec, model, _ = load(path, "urdf")
    assert model.articulation_coords(a) == (0, 3)
    state = model.state()
    sk.sim.eval_fk(model, sk.array([0.3, -0.2, 0.5], dtype=sk.float64), model.joint_qd, state)
    p = state.body_q.numpy()[rec.bodies["puck"]]
    assert p[2] == pytest.approx(0.0) and np.hypot(p[0], p[1]) == pytest.approx(math.hypot(0.3, 0.2))


def test_unsupported_elements_warn(tmp_path):
    path = write(tmp_path, """<robot name="r"><link name="a"/><link name="b"/>
        <joint name="j" type="continuous"><parent link="a"/><child link="b"/><mimic joint="k"/></joint>
        <transmission name="t"/></robot>""")
    with pytest.warns(RobotFileWarning) as caught:
        sk.sim.ModelBuilder().add_urdf(path)
    messages = [str(w.message) for w in caught]
    assert any("<transmission name='t'> in" in m and "robot.urdf" in m for m in messages)
    assert any("<joint name='j'> in" in m and "<mimic> is not simulated" in m for m in messages)


def test_point_mass_link_gets_a_tiny_inertia_and_a_warning(tmp_path):
    path = write(tmp_path, """<robot name="r"><link name="a"/><link name="tip"><inertial><mass value="0.3"/>
        <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
        <joint name="j" type="continuous"><parent link="a"/><child link="tip"/><origin xyz="0 0 -1"/></joint></robot>""")
    with pytest.warns(RobotFileWarning, match=r"<link name='tip'> in .*robot.urdf: the inertia of a body of mass 0.3"):
        b = sk.sim.ModelBuilder()
        a = b.add_urdf(path)
    model = b.finalize(dtype=sk.float64)          # an invertible inertia: finalize works
    assert np.linalg.eigvalsh(model.bodies.inertia.numpy()[b.imports[a].bodies["tip"]]).min() > 0.0


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"add_urdf: no such file: .*none.urdf"):
        sk.sim.ModelBuilder().add_urdf(tmp_path / "none.urdf")


LINKS = '<link name="a"/><link name="b"/><link name="c"/>'


@pytest.mark.parametrize("body,match", [
    ("<robot><link", r"robot.urdf is not valid XML"),
    ("<mujoco/>", r"not URDF: its root element is <mujoco>"),
    (f'<robot>{LINKS}<joint name="j" type="helical"><parent link="a"/><child link="b"/></joint></robot>',
     r"<joint name='j'> in .*robot.urdf: unknown joint type 'helical'"),
    (f'<robot>{LINKS}<joint name="j" type="fixed"><parent link="a"/><child link="c"/></joint>'
     f'<joint name="k" type="fixed"><parent link="b"/><child link="c"/></joint></robot>',
     r"<joint name='k'> in .*robot.urdf: link 'c' has two parents, 'a' \(joint 'j'\) and 'b'"),
    (f'<robot>{LINKS}<joint name="j" type="fixed"><parent link="a"/><child link="x"/></joint></robot>',
     r"<joint name='j'> in .*: its child link 'x' is not a link of the file"),
    ('<robot><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
     '</joint></robot>',
     r"<joint name='j'> in .*: a revolute joint needs a <limit>"),
    (f'<robot>{LINKS}<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>',
     r"must have one root link .*\['a', 'c'\]"),
])
def test_bad_files_are_clear_errors(tmp_path, body, match):
    path = write(tmp_path, body)
    b = sk.sim.ModelBuilder()
    with pytest.raises(RobotFileError, match=match):
        b.add_urdf(path)
    assert (b.body_count, b.joint_count) == (0, 0)


def inertial_link(mass: str, ixx: str = "0.01", ixy: str = "0") -> str:
    return (f'<robot><link name="arm"><inertial><mass value="{mass}"/><inertia ixx="{ixx}" iyy="0.01" izz="0.01" '
            f'ixy="{ixy}" ixz="0" iyz="0"/></inertial></link></robot>')


@pytest.mark.parametrize("body,match", [
    (inertial_link("-5"), r"<link name='arm'> in .*robot.urdf: <mass value> must be a finite number >= 0, got '-5'"),
    (inertial_link("nan"), r"<link name='arm'> in .*robot.urdf: <mass value> must be a finite number >= 0, got 'nan'"),
    (inertial_link("heavy"), r"<link name='arm'> in .*robot.urdf: <mass value>='heavy' is not a number"),
    (inertial_link("1", ixx="-0.01"), r"<link name='arm'> in .*robot.urdf: <inertia> must be finite with moments "
                                      r"ixx, iyy, izz >= 0, got ixx=-0.01"),
    (inertial_link("1", ixy="inf"), r"<link name='arm'> in .*robot.urdf: <inertia> must be finite"),
])
def test_negative_or_non_finite_masses_and_inertias_are_refused_naming_the_link(tmp_path, body, match):
    b = sk.sim.ModelBuilder()
    with pytest.raises(RobotFileError, match=match):
        b.add_urdf(write(tmp_path, body))
    assert b.body_count == 0


def test_a_link_of_mass_zero_is_still_a_massless_frame(tmp_path):
    b = sk.sim.ModelBuilder()
    b.add_urdf(write(tmp_path, inertial_link("0", ixx="0")))
    assert b.body_count == 1


MESH_LINK = """<robot name="r"><link name="base"><inertial><mass value="2.0"/>
  <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><mesh filename="{filename}" scale="1 1 2"/></geometry></collision></link></robot>"""


@pytest.mark.parametrize("filename", ["part.stl", "package://robot_pkg/meshes/part.stl"])
def test_mesh_collision_becomes_a_mesh_collider_that_rests_on_the_ground(tmp_path, filename):
    trimesh = pytest.importorskip("trimesh")
    folder = tmp_path / "robot_pkg"
    (folder / "meshes").mkdir(parents=True)
    mesh_dir = folder / "meshes" if filename.startswith("package://") else folder
    trimesh.creation.box(extents=(0.2, 0.2, 0.1)).export(str(mesh_dir / "part.stl"))
    path = folder / "robot.urdf"
    path.write_text(MESH_LINK.format(filename=filename))
    b = sk.sim.ModelBuilder(up_axis="z")
    b.add_urdf(str(path), xform=sk.transform((0.0, 0.0, 0.3), (0.0, 0.0, 0.0, 1.0)), floating=True)
    (shape,) = b.shape_meshes
    assert b.shape_meshes[shape].volume == pytest.approx(0.008, rel=1e-6)     # scaled 2x along z (STL: float32)
    model = b.finalize(dtype=sk.float64)
    assert model.bodies.mass.numpy()[0] == pytest.approx(2.0)                           # the inertial's, only
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1000, 1e-3, keep_states=False)[-1]
    assert final.body_q.numpy()[0, 2] == pytest.approx(0.1, abs=2e-3)


def test_missing_mesh_file_is_warned_about_and_not_a_collider(tmp_path):
    pytest.importorskip("trimesh")
    path = tmp_path / "robot.urdf"
    path.write_text(MESH_LINK.format(filename="package://nowhere/part.stl"))
    b = sk.sim.ModelBuilder(up_axis="z")
    with pytest.warns(RobotFileWarning, match="no such mesh file"):
        b.add_urdf(str(path))
    assert b.shape_count == 0


def test_a_robot_file_warning_points_at_the_callers_line_not_simkits(tmp_path):
    pytest.importorskip("trimesh")
    path = tmp_path / "robot.urdf"
    path.write_text(MESH_LINK.format(filename="part.stl"))
    with pytest.warns(RobotFileWarning, match="no such mesh file") as caught:
        sk.sim.ModelBuilder(up_axis="z").add_urdf(str(path))
    assert [w.filename for w in caught] == [__file__]
