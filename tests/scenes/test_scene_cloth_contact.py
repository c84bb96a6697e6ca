"""The ``[cloth_self_contact]`` table of scene files: read into the model's self-contact, its
bad values refused with the key named; scenes/cloth_fold.toml has it, and its cloth's
triangles meet its bar."""

from pathlib import Path

import pytest

from simkit.scene import SceneError, load_scene, read_config
from simkit.sim.cloth_shapes import cloth_shapes_active

SCENES = Path(__file__).resolve().parents[2] / "scenes"

SHEET = """
[sim]
dt = 1.0e-3
frames = 1

[[cloth]]
name = "sheet"
pos = [0.0, 0.5, 0.0]
dim_x = 4
dim_y = 4
cell_x = 0.05
cell_y = 0.05
mass = 0.001
"""


def _scene(tmp_path, text):
    path = tmp_path / "scene.toml"
    path.write_text(text)
    return path


def test_cloth_self_contact_table_sets_the_models_self_contact(tmp_path):
    scene = load_scene(_scene(tmp_path, SHEET + "\n[cloth_self_contact]\nthickness = 1.0e-3\nke = 50\n"))
    cc = scene.model.cloth_contact
    assert cc.thickness == 1e-3
    assert cc.params.ke.numpy()[0] == 50.0
    assert cc.params.kd.numpy()[0] == pytest.approx(0.05)


def test_without_the_table_cloth_has_no_self_contact(tmp_path):
    assert load_scene(_scene(tmp_path, SHEET)).model.cloth_contact is None


def test_negative_thickness_is_refused_naming_the_key(tmp_path):
    with pytest.raises(SceneError, match=r"cloth_self_contact\.thickness: expected a number > 0"):
        read_config(_scene(tmp_path, SHEET + "\n[cloth_self_contact]\nthickness = -1.0\n"))


def test_thickness_too_large_for_the_cloth_is_refused_naming_the_table(tmp_path):
    with pytest.raises(SceneError, match=r"cloth_self_contact: .*thickness 0.05 is too large"):
        load_scene(_scene(tmp_path, SHEET + "\n[cloth_self_contact]\nthickness = 0.05\n"))


def test_unknown_key_of_the_table_is_refused(tmp_path):
    with pytest.raises(SceneError, match=r"cloth_self_contact\.thicknes: unknown key"):
        read_config(_scene(tmp_path, SHEET + "\n[cloth_self_contact]\nthicknes = 1.0e-3\n"))


def test_cloth_fold_scene_has_self_contact_and_its_triangles_meet_the_bar():
    scene = load_scene(SCENES / "cloth_fold.toml")
    assert scene.model.cloth_contact.thickness == 3e-3
    assert cloth_shapes_active(scene.model)
