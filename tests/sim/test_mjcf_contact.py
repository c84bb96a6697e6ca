"""MJCF contact parameters (friction, solref, solimp, margin, gap, condim, contype,
conaffinity, <option cone impratio>, <flag contact>) and the plane that becomes the ground,
against what MuJoCo compiles from the same files."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.structs import SHAPE_PLANE
from simkit.sim import geometry as G
from simkit.sim.importers import RobotFileError, RobotFileWarning

mujoco = pytest.importorskip("mujoco")


def gym_asset(name: str) -> str:
    gymnasium = pytest.importorskip("gymnasium")
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name + ".xml")
    if not os.path.isfile(path):
        pytest.skip(f"gymnasium has no {name}.xml")
    return path


def write(tmp_path, text: str) -> str:
    path = tmp_path / "model.xml"
    path.write_text(text)
    return str(path)


def import_z_up(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = sk.sim.ModelBuilder(up_axis="z")
        a = b.add_mjcf(path)
    return b, b.imports[a], b.finalize(dtype=sk.float64), [str(w.message) for w in caught]


def masks(values) -> list:
    return [int(v) for v in np.asarray(values, dtype=np.int32).view(np.uint32)]


def assert_shapes_match_mujoco(m, model):
    """The shapes, in order, against MuJoCo's geoms on bodies; the ground against the plane."""
    geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] > 0]
    assert model.shape_count == len(geoms)
    s = model.shapes
    friction = np.stack([s.mu.numpy(), s.torsional_mu.numpy(), s.rolling_mu.numpy()], axis=1)
    np.testing.assert_allclose(friction, m.geom_friction[geoms], rtol=1e-12)
    np.testing.assert_allclose(s.solref.numpy(), m.geom_solref[geoms], rtol=1e-12)
    np.testing.assert_allclose(s.solimp.numpy(), m.geom_solimp[geoms], rtol=1e-12)
    np.testing.assert_allclose(s.margin.numpy(), m.geom_margin[geoms], rtol=1e-12)
    np.testing.assert_allclose(s.gap.numpy(), m.geom_gap[geoms], rtol=1e-12)
    assert list(s.condim.numpy()) == list(m.geom_condim[geoms])
    assert masks(s.contype.numpy()) == list(m.geom_contype[geoms])
    assert masks(s.conaffinity.numpy()) == list(m.geom_conaffinity[geoms])
    plane = [g for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE][0]
    c = model.contact
    ground = [c.ground_mu.numpy()[0], c.ground_torsional_mu.numpy()[0], c.ground_rolling_mu.numpy()[0]]
    np.testing.assert_allclose(ground, m.geom_friction[plane], rtol=1e-12)
    np.testing.assert_allclose(c.ground_solref.numpy()[0], m.geom_solref[plane], rtol=1e-12)
    np.testing.assert_allclose(c.ground_solimp.numpy()[0], m.geom_solimp[plane], rtol=1e-12)
    assert (c.ground_margin.numpy()[0], c.ground_gap.numpy()[0]) == (m.geom_margin[plane], m.geom_gap[plane])
    assert c.ground_condim.numpy()[0] == m.geom_condim[plane]
    assert masks(c.ground_contype.numpy()) == [m.geom_contype[plane]]
    assert masks(c.ground_conaffinity.numpy()) == [m.geom_conaffinity[plane]]
    cone = {int(mujoco.mjtCone.mjCONE_PYRAMIDAL): "pyramidal", int(mujoco.mjtCone.mjCONE_ELLIPTIC): "elliptic"}
    assert (model.contact_cone, model.impratio) == (cone[int(m.opt.cone)], m.opt.impratio)


@pytest.mark.parametrize("name", ["hopper", "half_cheetah", "ant", "humanoid"])
def test_gymnasium_contact_parameters_match_mujoco(name):
    path = gym_asset(name)
    _, record, model, caught = import_z_up(path)
    assert record.ground == "<geom name='floor'>"
    assert not [w for w in caught if "plane" in w]
    assert_shapes_match_mujoco(mujoco.MjModel.from_xml_path(path), model)


def test_the_ants_geoms_carry_its_default_class_contact_parameters():
    _, _, model, _ = import_z_up(gym_asset("ant"))
    s = model.shapes
    assert set(s.mu.numpy()) == {1.0} and set(s.torsional_mu.numpy()) == {0.5} and set(s.rolling_mu.numpy()) == {0.5}
    assert set(s.margin.numpy()) == {0.01} and set(s.condim.numpy()) == {3}
    assert masks(s.conaffinity.numpy()) == [0] * model.shape_count
    assert model.contact.ground_conaffinity.numpy()[0] == 1


CUSTOM = """<mujoco><option cone="elliptic" impratio="10"/>
  <default><geom friction="1 0.5 0.5" solimp="0.8 0.9" margin="0.002"/>
    <default class="soft"><geom solref="-2000 -40" condim="6" gap="0.001" contype="3" conaffinity="2"/></default>
  </default>
  <worldbody><geom name="floor" type="plane" size="1 1 1" friction="0.7" solimp="0.5 0.6 0.01 0.4 3" condim="1"/>
    <body name="a" pos="0 0 0.5"><freejoint/><geom class="soft" size="0.1" friction="0.8 0.2"/>
      <geom type="box" size="0.1 0.1 0.1" pos="0.3 0 0" solref="0.05 0.7" solimp="0.7" condim="4"/>
      <geom type="capsule" size="0.05 0.1" pos="-0.3 0 0" priority="0"/></body>
  </worldbody></mujoco>"""


def test_partial_vectors_classes_and_options_are_read_as_mujoco_reads_them(tmp_path):
    path = write(tmp_path, CUSTOM)
    _, _, model, caught = import_z_up(path)
    assert not caught
    assert_shapes_match_mujoco(mujoco.MjModel.from_xml_path(path), model)


def test_a_file_without_contact_options_leaves_the_builders_as_they_are(tmp_path):
    b = sk.sim.ModelBuilder(up_axis="z")
    b.set_contact_options(cone="elliptic", impratio=5.0)
    b.add_mjcf(write(tmp_path, CUSTOM.replace('<option cone="elliptic" impratio="10"/>', "")))
    assert (b.contact_cone, b.impratio) == ("elliptic", 5.0)
    b.add_mjcf(write(tmp_path, CUSTOM.replace('cone="elliptic" ', 'cone="pyramidal" ')))
    assert (b.contact_cone, b.impratio) == ("pyramidal", 10.0)


def test_contact_disabled_by_a_flag_turns_the_models_contacts_off(tmp_path):
    path = write(tmp_path, CUSTOM.replace('impratio="10"/>', 'impratio="10"><flag contact="disable"/></option>'))
    _, _, model, _ = import_z_up(path)
    assert model.contacts_enabled is False
    _, _, model, _ = import_z_up(write(tmp_path, CUSTOM))
    assert model.contacts_enabled is True


@pytest.mark.parametrize("option, message", [
    ('<option noslip_iterations="5"/>', r"<option> in .*model.xml: contact options simkit does not honour are "
                                        r"ignored: noslip_iterations='5'"),
    ('<option o_margin="0.1"><flag override="enable"/></option>', r"o_margin='0.1', <flag override='enable'>"),
])
def test_contact_options_simkit_cannot_honour_are_warned_about(tmp_path, option, message):
    path = write(tmp_path, CUSTOM.replace('<option cone="elliptic" impratio="10"/>', option))
    with pytest.warns(RobotFileWarning, match=message):
        b = sk.sim.ModelBuilder(up_axis="z")
        a = b.add_mjcf(path)
    assert any("ignored" in w for w in b.imports[a].warnings)


def test_priority_and_solmix_are_warned_about_naming_the_geom(tmp_path):
    path = write(tmp_path, CUSTOM.replace('priority="0"', 'name="c" priority="1"'))
    with pytest.warns(RobotFileWarning, match=r"<geom name='c'> in .*: priority and solmix are not supported"):
        sk.sim.ModelBuilder(up_axis="z").add_mjcf(path)


@pytest.mark.parametrize("plane, up, normal, point", [
    ('pos="0 0 0.2"', "z", (0.0, 0.0, 1.0), (0.0, 0.0, 0.2)),
    ('euler="20 0 0"', "z", (0.0, -np.sin(np.radians(20.0)), np.cos(np.radians(20.0))), (0.0, 0.0, 0.0)),
    ('', "y", (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)),
])
def test_a_plane_that_is_not_the_ground_becomes_a_plane_shape_with_its_contact_parameters(tmp_path, plane, up,
                                                                                          normal, point):
    path = write(tmp_path, CUSTOM.replace('name="floor"', f'name="floor" {plane}'))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = sk.sim.ModelBuilder(up_axis=up)
        a = b.add_mjcf(path)
    assert b.imports[a].ground is None
    assert b.ground_material["condim"] == 3             # the ground keeps its own material
    model = b.finalize(dtype=sk.float64)
    plane_shape = int(np.flatnonzero(model.shapes.kind.numpy() == SHAPE_PLANE)[0])
    x = model.shapes.xform.numpy()[plane_shape]
    np.testing.assert_allclose(x[:3], point, atol=1e-12)
    np.testing.assert_allclose(G.quat_rotate(x[3:], np.array([0.0, 1.0, 0.0])), normal, atol=1e-12)
    np.testing.assert_array_equal(model.shapes.params.numpy()[plane_shape], 0.0)     # infinite, as MuJoCo's
    assert model.shapes.mu.numpy()[plane_shape] == pytest.approx(0.7)
    assert model.shapes.condim.numpy()[plane_shape] == 1


def test_the_plane_of_a_builder_without_a_ground_becomes_a_plane_shape(tmp_path):
    b = sk.sim.ModelBuilder(up_axis="z", ground=False)
    a = b.add_mjcf(write(tmp_path, CUSTOM))
    assert b.imports[a].ground is None and b.shape_kind.count(SHAPE_PLANE) == 1


def test_a_plane_on_a_moving_body_is_left_out_with_a_warning_naming_it(tmp_path):
    path = write(tmp_path, CUSTOM.replace('<geom class="soft"', '<geom name="p" type="plane" size="1 1 1"/><geom class="soft"'))
    with pytest.warns(RobotFileWarning, match=r"<geom name='p'> in .*: a plane on a moving body is not imported"):
        b = sk.sim.ModelBuilder(up_axis="z")
        b.add_mjcf(path)
    assert SHAPE_PLANE not in b.shape_kind


def test_a_box_dropped_on_a_tilted_mjcf_plane_rests_on_it(tmp_path):
    path = write(tmp_path, """<mujoco><worldbody><geom type="plane" size="1 1 1" euler="0 10 0" friction="1"/>
      <body pos="0 0 0.3"><freejoint/><geom type="box" size="0.1 0.1 0.1" euler="0 10 0" friction="1"/></body>
      </worldbody></mujoco>""")
    b = sk.sim.ModelBuilder(up_axis="z", ground=False)
    b.add_mjcf(path)
    model = b.finalize(dtype=sk.float64)
    end = sk.sim.simulate(model, sk.sim.Featherstone(), model.state(), 1500, 1e-3, keep_states=False)[-1]
    n = np.array([np.sin(np.radians(10.0)), 0.0, np.cos(np.radians(10.0))])
    assert end.joint_q.numpy()[:3] @ n == pytest.approx(0.1, abs=2e-3)     # on it, not through it


def test_a_plane_under_the_import_placement_still_becomes_the_ground_when_it_stays_level(tmp_path):
    path = write(tmp_path, CUSTOM)
    b = sk.sim.ModelBuilder(up_axis="z")
    a = b.add_mjcf(path, xform=sk.transform((1.0, 2.0, 0.0), (0.0, 0.0, 0.3826834, 0.9238795)))
    assert b.imports[a].ground == "<geom name='floor'>" and b.ground_material["condim"] == 1


@pytest.mark.parametrize("attrs, message", [
    ('condim="2"', r"<geom name='g'> in .*: condim must be 1, 3, 4 or 6"),
    ('solref="0.02 -1"', r"<geom name='g'> in .*: solref must be"),
    ('solimp="0.9 0.95 0.001 0.5 2 7"', r"<geom name='g'> in .*: solimp must have 1 to 5 numbers"),
    ('friction="-1"', r"<geom name='g'> in .*: friction\[0\] must be a finite number >= 0"),
    ('margin="-0.1"', r"<geom name='g'> in .*: margin must be"),
])
def test_bad_contact_parameters_are_errors_naming_the_geom(tmp_path, attrs, message):
    path = write(tmp_path, f"""<mujoco><worldbody><body name="a"><freejoint/><geom name="g" size="0.1" {attrs}/>
        </body></worldbody></mujoco>""")
    with pytest.raises(RobotFileError, match=message):
        sk.sim.ModelBuilder(up_axis="z").add_mjcf(path)


def test_a_floor_that_excludes_the_robot_lets_it_fall_through(tmp_path):
    """MuJoCo's masks between the plane and the robot's geoms hold for simkit's ground too (a
    far static ball keeps the box a collider either way)."""
    text = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 1" conaffinity="{aff}" contype="{typ}"/>
      <geom pos="5 5 5" size="0.05" contype="0" conaffinity="1"/>
      <body name="a" pos="0 0 0.3"><freejoint/><geom type="box" size="0.1 0.1 0.1" contype="1" conaffinity="0"/>
      </body></worldbody></mujoco>"""
    for aff, typ, rests in ((1, 1, True), (0, 1, False)):
        _, _, model, _ = import_z_up(write(tmp_path, text.format(aff=aff, typ=typ)))
        end = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 3000, 1e-4, keep_states=False)[-1]
        z = end.body_q.numpy()[0, 2]
        if rests:
            assert z == pytest.approx(0.1, abs=3e-3)
        else:
            assert z < -0.05
