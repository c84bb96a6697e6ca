"""MuJoCo's contact parameters on the builder and the model: per shape (add_shape_*), the
ground's (set_ground_material), the model's options (set_contact_options), their checks, the
mixing rules of a pair against MuJoCo itself, and the contype/conaffinity filter in the
penalty contacts."""

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.contact_params import mixed_contact_params
from simkit.kernels.shapes import collision_pairs

IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)
MUJOCO_DEFAULTS = {"torsional_mu": 0.005, "rolling_mu": 1e-4, "condim": 3, "solref": (0.02, 1.0),
                   "solimp": (0.9, 0.95, 0.001, 0.5, 2.0), "margin": 0.0, "gap": 0.0, "contype": 1, "conaffinity": 1}
CUSTOM = {"torsional_mu": 0.02, "rolling_mu": 0.003, "condim": 6, "solref": (-1000.0, -20.0),
          "solimp": (0.8, 0.99, 0.01, 0.3, 4.0), "margin": 0.02, "gap": 0.005, "contype": 2 ** 32 - 1,
          "conaffinity": 6}


def one_box(**contact):
    b = sk.sim.ModelBuilder()
    body = b.add_body(sk.transform((0.0, 0.5, 0.0), IDENTITY_Q))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=body, **contact)
    return b


def shape_values(model, name):
    value = getattr(model.shapes, name).numpy()[0]
    if name in ("contype", "conaffinity"):
        return int(np.int32(value).view(np.uint32))
    return tuple(value) if np.ndim(value) else value


def test_every_shape_starts_with_mujocos_contact_parameters():
    model = one_box().finalize(dtype=sk.float64)
    for name, value in MUJOCO_DEFAULTS.items():
        assert shape_values(model, name) == pytest.approx(value), name
    assert model.shapes.condim.dtype == sk.int32 and model.shapes.contype.dtype == sk.int32


@pytest.mark.parametrize("add", ["sphere", "box", "capsule", "mesh"])
def test_contact_parameters_given_to_add_shape_reach_model_shapes(add):
    b = sk.sim.ModelBuilder()
    body = b.add_body(sk.transform((0.0, 0.5, 0.0), IDENTITY_Q))
    if add == "sphere":
        b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body, **CUSTOM)
    elif add == "box":
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=body, **CUSTOM)
    elif add == "capsule":
        b.add_shape_capsule((0.0, 0.0, 0.0), IDENTITY_Q, 0.1, 0.2, body=body, **CUSTOM)
    else:
        v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
        f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
        b.add_shape_mesh(body, v, f, scale=0.2, **CUSTOM)
    model = b.finalize(dtype=sk.float64)
    for name, value in CUSTOM.items():
        assert shape_values(model, name) == pytest.approx(value), name


def test_the_ground_material_and_contact_options_reach_the_model():
    b = one_box()
    model = b.finalize(dtype=sk.float64)
    c = model.contact
    assert c.ground_mu.numpy()[0] == 0.5          # the builder's rigid_contact_mu, the shapes' default mu
    assert tuple(c.ground_solimp.numpy()[0]) == MUJOCO_DEFAULTS["solimp"]
    assert (model.contact_cone, model.impratio) == ("pyramidal", 1.0)
    b.set_ground_material(mu=1.0, **CUSTOM)
    b.set_contact_options(cone="elliptic", impratio=10.0)
    model = b.finalize(dtype=sk.float64)
    c = model.contact
    assert c.ground_mu.numpy()[0] == 1.0
    for name, value in CUSTOM.items():
        got = getattr(c, f"ground_{name}").numpy()[0]
        if name in ("contype", "conaffinity"):
            got = int(np.int32(got).view(np.uint32))
        assert (tuple(got) if np.ndim(got) else got) == pytest.approx(value), name
    assert (model.contact_cone, model.impratio) == ("elliptic", 10.0)


def test_set_shape_contact_changes_what_it_is_given_and_keeps_the_rest():
    b = one_box(condim=4, margin=0.01)
    b.set_shape_contact(0, mu=0.9, solref=(0.03, 0.5), contype=2)
    model = b.finalize(dtype=sk.float64)
    assert shape_values(model, "mu") == 0.9 and shape_values(model, "solref") == (0.03, 0.5)
    assert (shape_values(model, "condim"), shape_values(model, "margin")) == (4, 0.01)
    assert (shape_values(model, "contype"), shape_values(model, "conaffinity")) == (2, 1)
    with pytest.raises(ValueError, match="set_shape_contact: gap must be"):
        b.set_shape_contact(0, condim=1, gap=-1.0)
    assert b.shape_contact[0][2] == 4.0
    with pytest.raises(ValueError, match="set_shape_contact: shape=3 is out of range"):
        b.set_shape_contact(3, condim=1)


def test_contact_parameters_are_carried_by_add_builder():
    scene = sk.sim.ModelBuilder()
    scene.add_builder(one_box(condim=4, margin=0.01))
    scene.add_builder(one_box())
    model = scene.finalize()
    assert list(model.shapes.condim.numpy()) == [4, 3]
    assert list(model.shapes.margin.numpy()) == pytest.approx([0.01, 0.0])


@pytest.mark.parametrize("given, error, message", [
    ({"condim": 2}, ValueError, "add_shape_box: condim must be 1, 3, 4 or 6"),
    ({"condim": 3.0}, TypeError, "add_shape_box: condim must be an int"),
    ({"solref": (0.02, -1.0)}, ValueError, r"add_shape_box: solref must be \(timeconst > 0, dampratio > 0\)"),
    ({"solref": (0.0, 1.0)}, ValueError, "add_shape_box: solref must be"),
    ({"solref": (0.02,)}, ValueError, "add_shape_box: solref expects 2 finite numbers"),
    ({"solimp": (0.9, 0.95, 0.001)}, ValueError, "add_shape_box: solimp expects 5 finite numbers"),
    ({"solimp": (1.5, 0.95, 0.001, 0.5, 2.0)}, ValueError, "add_shape_box: solimp must be"),
    ({"solimp": (0.9, 0.95, 0.001, 0.5, 0.5)}, ValueError, "power >= 1"),
    ({"margin": -0.1}, ValueError, "add_shape_box: margin must be a finite number >= 0"),
    ({"gap": float("nan")}, ValueError, "add_shape_box: gap must be a finite number"),
    ({"torsional_mu": -1.0}, ValueError, "add_shape_box: torsional_mu must be"),
    ({"contype": -1}, ValueError, r"add_shape_box: contype must be an int bit mask in \[0, 2\*\*32\)"),
    ({"conaffinity": 2 ** 32}, ValueError, "add_shape_box: conaffinity must be an int bit mask"),
    ({"contype": True}, TypeError, "add_shape_box: contype must be an int"),
    ({"solrf": (0.02, 1.0)}, TypeError, "add_shape_box: unexpected keyword argument 'solrf'"),
])
def test_bad_shape_contact_parameters_are_refused_naming_the_method_and_parameter(given, error, message):
    b = one_box()
    with pytest.raises(error, match=message):
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=0, **given)
    assert b.shape_count == 1 and len(b.shape_contact) == 1 and len(b.shape_collision) == 1


@pytest.mark.parametrize("call, error, message", [
    (lambda b: b.set_ground_material(condim=5), ValueError, "set_ground_material: condim must be 1, 3, 4 or 6"),
    (lambda b: b.set_ground_material(mu=-0.5), ValueError, "set_ground_material: mu must be"),
    (lambda b: b.set_ground_material(solref=(1.0, 2.0, 3.0)), ValueError, "set_ground_material: solref expects"),
    (lambda b: b.set_contact_options(cone="circular"), ValueError,
     "set_contact_options: cone must be 'pyramidal' or 'elliptic'"),
    (lambda b: b.set_contact_options(impratio=0.0), ValueError, "set_contact_options: impratio must be"),
])
def test_bad_ground_material_and_options_are_refused_and_change_nothing(call, error, message):
    b = one_box()
    before = (dict(b.ground_material), b.contact_cone, b.impratio)
    with pytest.raises(error, match=message):
        call(b)
    assert (b.ground_material, b.contact_cone, b.impratio) == before


def mujoco_scene() -> str:
    """A floor and three balls in MuJoCo: the first two rest on the floor, the third touches
    the second; every geom has contact parameters of its own (one in the direct form)."""
    return """
    <mujoco><option gravity="0 0 0"/><worldbody>
      <geom name="floor" type="plane" size="5 5 .1" friction="0.7 0.01 0.002" solref="0.03 0.8"
            solimp="0.8 0.9 0.002 0.4 3" margin="0.05" gap="0.01" condim="4"/>
      <body pos="0 0 0.09"><freejoint/><geom name="a" size="0.1" friction="0.9 0.003 0.0005" solref="0.01 1.2"
            solimp="0.95 0.99 0.001 0.6 2" margin="0.02" gap="0.015" condim="3"/></body>
      <body pos="1 0 0.09"><freejoint/><geom name="b" size="0.1" solref="-1000 -10" condim="6"/></body>
      <body pos="1 0 0.28"><freejoint/><geom name="c" size="0.1" friction="0.3 0.2 0.1" condim="1"
            solimp="0.5 0.6 0.01 0.5 1"/></body>
    </worldbody></mujoco>"""


def test_pair_parameters_are_mixed_as_mujoco_mixes_them():
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_string(mujoco_scene())
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    b = sk.sim.ModelBuilder(up_axis="z")
    g = 0   # the floor's parameters go to the ground, the balls' to three spheres
    b.set_ground_material(mu=m.geom_friction[g][0], torsional_mu=m.geom_friction[g][1],
                          rolling_mu=m.geom_friction[g][2], condim=int(m.geom_condim[g]), solref=m.geom_solref[g],
                          solimp=m.geom_solimp[g], margin=m.geom_margin[g], gap=m.geom_gap[g])
    for g in (1, 2, 3):
        body = b.add_body(sk.transform(m.body_pos[g], IDENTITY_Q))
        b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body, mu=m.geom_friction[g][0],
                           torsional_mu=m.geom_friction[g][1], rolling_mu=m.geom_friction[g][2],
                           condim=int(m.geom_condim[g]), solref=m.geom_solref[g], solimp=m.geom_solimp[g],
                           margin=m.geom_margin[g], gap=m.geom_gap[g])
    model = b.finalize(dtype=sk.float64)
    assert d.ncon == 3
    pairs = np.array([[c.geom1 - 1, c.geom2 - 1] for c in d.contact[:d.ncon]])
    mixed = {k: v.numpy() for k, v in mixed_contact_params(model, pairs).items()}
    for i, c in enumerate(d.contact[:d.ncon]):
        assert mixed["friction"][i] == pytest.approx(c.friction[[0, 2, 3]], rel=1e-12)
        assert mixed["condim"][i] == c.dim
        assert mixed["solref"][i] == pytest.approx(c.solref, rel=1e-12)
        assert mixed["solimp"][i] == pytest.approx(c.solimp, rel=1e-12)
        assert mixed["margin"][i] == pytest.approx(c.includemargin, rel=1e-12)


@pytest.mark.parametrize("height, found, active", [(0.16, True, True), (0.2, True, False), (0.24, False, False)])
def test_a_contact_is_active_within_the_summed_margin_and_found_within_margin_plus_gap(height, found, active):
    mujoco = pytest.importorskip("mujoco")
    xml = f"""<mujoco><option gravity="0 0 0"/><worldbody>
      <geom type="plane" size="5 5 .1" margin="0.05" gap="0.04"/>
      <body pos="0 0 {height}"><freejoint/><geom size="0.1" margin="0.02" gap="0.015"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    b = sk.sim.ModelBuilder(up_axis="z")
    b.set_ground_material(margin=0.05, gap=0.04)
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=b.add_body(), margin=0.02, gap=0.015)
    mixed = mixed_contact_params(b.finalize(dtype=sk.float64), np.array([[0, -1]]))
    margin, gap = mixed["margin"].numpy()[0], mixed["gap"].numpy()[0]
    distance = height - 0.1
    assert (distance < margin + gap, distance < margin) == (found, active)
    assert (d.ncon == 1, d.nefc > 0) == (found, active)


def box_on(ground_masks=None, **box_masks):
    """A 0.2 m box dropped from 0.3 m onto the ground."""
    b = sk.sim.ModelBuilder()
    body = b.add_body(sk.transform((0.0, 0.3, 0.0), IDENTITY_Q))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=body, **box_masks)
    if ground_masks:
        b.set_ground_material(contype=ground_masks[0], conaffinity=ground_masks[1])
    return b


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler(), sk.sim.XPBD()], ids=["semi-implicit", "xpbd"])
@pytest.mark.parametrize("ground, box, collide", [
    (None, {}, True),
    (None, {"contype": 0}, True),                    # the ground's contype meets the box's conaffinity
    (None, {"contype": 0, "conaffinity": 0}, False),
    ((2, 2), {}, False),                             # no shared bit either way
    ((2, 2), {"conaffinity": 3}, True),
], ids=["default", "one-way", "box-off", "ground-apart", "ground-meets"])
def test_a_box_touches_the_ground_only_when_the_masks_let_it(integrator, ground, box, collide):
    dt = 1e-3 if isinstance(integrator, sk.sim.XPBD) else 1e-4
    model = box_on(ground, **box).finalize(dtype=sk.float64)
    end = sk.sim.simulate(model, integrator, model.state(), int(round(0.5 / dt)), dt, keep_states=False)[-1]
    y = end.body_q.numpy()[0, 1]
    if collide:
        assert y == pytest.approx(0.1, abs=3e-3)     # resting on the ground
    else:
        assert y < -0.5                              # fell through it


def test_a_mesh_touches_the_ground_only_when_the_masks_let_it():
    v = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1], [-1, -1, 1], [1, -1, 1], [1, 1, 1],
                  [-1, 1, 1]], dtype=float)
    f = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4], [1, 2, 6], [1, 6, 5],
                  [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]])
    dt = 1e-4
    for masks, collide in (({}, True), ({"contype": 0, "conaffinity": 0}, False)):
        b = sk.sim.ModelBuilder()
        body = b.add_body(sk.transform((0.0, 0.3, 0.0), IDENTITY_Q))
        b.add_shape_mesh(body, v, f, scale=0.1, density=1000.0, **masks)
        model = b.finalize(dtype=sk.float64)
        end = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), int(round(0.5 / dt)), dt,
                              keep_states=False)[-1]
        y = end.body_q.numpy()[0, 1]
        if collide:
            assert y == pytest.approx(0.1, abs=3e-3)
        else:
            assert y < -0.5


def test_a_box_whose_masks_exclude_another_box_falls_through_it():
    for masks, collide in (({}, True), ({"contype": 2, "conaffinity": 2}, False)):
        b = sk.sim.ModelBuilder()
        b.add_shape_box((0.0, 0.1, 0.0), IDENTITY_Q, (0.3, 0.1, 0.3))            # a static table top
        body = b.add_body(sk.transform((0.0, 0.5, 0.0), IDENTITY_Q))
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=body, **masks)
        model = b.finalize(dtype=sk.float64)
        assert (len(collision_pairs(model).numpy()) > 0) == collide
        dt = 1e-4
        end = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), int(round(0.5 / dt)), dt,
                              keep_states=False)[-1]
        y = end.body_q.numpy()[0, 1]
        if collide:
            assert y == pytest.approx(0.3, abs=3e-3)       # on the table top
        else:
            assert y < 0.0       # through the top (and the ground, whose masks exclude it too)
