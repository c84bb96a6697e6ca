"""Config errors: each rule (unknown key, wrong type, missing file, bad value, ...) gives one
message naming the file, the key path and what was expected, exit code 2 without a
traceback, and nothing simulated or written."""

import numpy as np
import pytest

from simkit.cli import main
from simkit.scene import SceneError, load_scene, sweep
from simkit.sim import validate as sim_validate

# (scene, [old, new, ...] edits, key path, what the message must say)
CASES = {
    "unknown key": ("cloth_drape", ["dim_x = 20", "dimx = 20"], "cloth[0].dimx",
                    "unknown key; did you mean 'dim_x'?"),
    "unknown table": ("ball_bounce", ["[contact]", "[contacts]"], "contacts", "unknown key; did you mean 'contact'?"),
    "wrong type": ("cloth_drape", ["dim_x = 20", "dim_x = 20.5"], "cloth[0].dim_x",
                   "expected an integer >= 1, got 20.5 (a number)"),
    "wrong type string": ("ball_bounce", ["dt = 5.0e-4", 'dt = "fast"'], "sim.dt",
                          'expected a number > 0, got "fast" (a string)'),
    "wrong vector": ("soft_drop", ["pos = [-0.2, 0.5, -0.2]", "pos = [-0.2, 0.5]"], "soft_grid[0].pos",
                     "expected an array of 3 numbers, got [-0.2, 0.5] (an array)"),
    "missing mesh file": ("jelly_hammock", ['file = "meshes/jelly.tet"', 'file = "meshes/jely.tet"'],
                          "soft_mesh[0].file", "expected an existing mesh file"),
    "bad value": ("jelly_hammock", ["k_mu = 3.0e3", "k_mu = -3.0e3"], "soft_mesh[0].k_mu",
                  "expected a number >= 0, got -3000.0 (a number)"),
    "bad choice": ("ball_bounce", ['dtype = "float64"', 'dtype = "double"'], "sim.dtype",
                   'expected one of "float32", "float64", got "double" (a string)'),
    "missing key": ("ball_bounce", ["frames = 50", ""], "sim.frames", "missing; expected an integer >= 1"),
    "key of another kind": ("pendulum_chain", ["half_extents = [0.1, 0.1, 0.1]", "radius = 0.1"],
                            "bodies[4].shapes[0].radius", "not a key of a box shape"),
    "dangling name": ("pendulum_chain", ['child = "link1"', 'child = "lnk1"'], "joints[1].child",
                      'expected the name of a [[bodies]] entry ("link0", "link1"'),
    "duplicate name": ("pendulum_chain", ['name = "box1"', 'name = "box0"'], "bodies[5].name",
                       "expected a name no other body has"),
    "index out of range": ("spring_walker", ["within = 0.15", "pairs = [[0, 1], [1, 10]]"], "springs[0].pairs[1]",
                           "expected an array of 2 different indices in 0..9, got [1, 10] (an array)"),
    "bad parameter": ("ball_bounce", ['parameters = ["ball.velocity"]', 'parameters = ["ball.k_mu"]'],
                      "optimize.parameters[0]", "expected one of the parameters of a particles entry after the "
                                                "dot (velocity)"),
    "dt that is 0 in float32": ("cloth_drape", ["dt = 5.0e-4", "dt = 1e-300"], "sim.dt",
                                'expected a number > 0 that sim.dtype = "float32" can hold, got 1e-300 (a number), '
                                "which is 0 in float32"),
    "dt subnormal in float64": ("ball_bounce", ["dt = 5.0e-4", "dt = 1e-310"], "sim.dt",
                                "which is a subnormal number in float64"),
    "xpbd setting without xpbd": ("flag", ["frames = 100", "frames = 100\niterations = 8"], "sim.iterations",
                                  'only used by integrator = "xpbd"'),
}


def run_config_error(path, tmp_path, capsys):
    usd = tmp_path / "out.usda"
    code = main(["run", str(path), "--usd", str(usd), "--quiet"])
    out, err = capsys.readouterr()
    assert not usd.exists(), "a config error must not write the USD file"
    assert not list(tmp_path.glob("*.usd*")) and not list(tmp_path.glob(".*.tmp*"))
    return code, out, err


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_config_error_names_file_key_and_expectation(case, edit_scene, tmp_path, capsys):
    name, edits, key, expected = CASES[case]
    path = edit_scene(name, *edits)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    assert info.value.key == key and info.value.file == str(path)
    assert expected in info.value.message

    code, out, err = run_config_error(path, tmp_path, capsys)
    assert code == 2
    assert out == ""
    assert err.startswith(f"simkit: error: {path}: {key}: ")
    assert expected in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("content, expected", [
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nt 0 1 2 4\n", "expected vertex indices in 0..3, got 4"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nt 0 1 2 x\n", "line 5: expected 'v x y z' or 't i j k l', got 't 0 1 2 x'"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\n", "expected at least 4 vertices"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 2 0 0\nt 0 1 2 3\n", "is degenerate"),
], ids=["index", "syntax", "too few vertices", "flat tetrahedron"])
def test_bad_mesh_file_is_a_config_error(content, expected, edit_scene, tmp_path, capsys):
    path = edit_scene("jelly_hammock", 'file = "meshes/jelly.tet"', 'file = "meshes/bad.tet"')
    (tmp_path / "meshes" / "bad.tet").write_text(content)
    code, out, err = run_config_error(path, tmp_path, capsys)
    assert code == 2
    assert err.startswith(f"simkit: error: {path}: soft_mesh[0]")
    assert expected in err and "Traceback" not in err


def test_npz_mesh_without_tets_is_a_config_error(edit_scene, tmp_path, capsys):
    path = edit_scene("jelly_hammock", 'file = "meshes/jelly.tet"', 'file = "meshes/bad.npz"')
    np.savez(tmp_path / "meshes" / "bad.npz", vertices=np.zeros((4, 3)))
    code, out, err = run_config_error(path, tmp_path, capsys)
    assert code == 2
    assert f"{path}: soft_mesh[0].file: " in err and "lacks the array(s) tets" in err


def test_npz_mesh_without_tets_says_so_once(edit_scene, tmp_path, capsys):
    path = edit_scene("jelly_hammock", 'file = "meshes/jelly.tet"', 'file = "meshes/bad.npz"')
    np.savez(tmp_path / "meshes" / "bad.npz", verts=np.zeros((4, 3)))
    code, out, err = run_config_error(path, tmp_path, capsys)
    assert code == 2
    assert err.count(str(path)) == 1 and err.count("soft_mesh[0].file") == 1
    assert "not a readable" not in err and "lacks the array(s) vertices, tets" in err


def test_a_text_file_named_npz_is_not_an_npz_archive(edit_scene, tmp_path, capsys):
    path = edit_scene("jelly_hammock", 'file = "meshes/jelly.tet"', 'file = "meshes/bad.npz"')
    (tmp_path / "meshes" / "bad.npz").write_text("v 0 0 0\n")
    code, out, err = run_config_error(path, tmp_path, capsys)
    assert code == 2
    assert f"{path}: soft_mesh[0].file: '{tmp_path / 'meshes' / 'bad.npz'}' is not an .npz archive" in err
    assert "pickle" not in err


@pytest.mark.parametrize("name, edits, key, expected", [
    ("cloth_drape", ["dim_x = 20", "dim_x = 100000", "dim_y = 20", "dim_y = 100000"], "cloth[0].dim_x",
     "dim_x = 100000 by dim_y = 100000 cells make 10000200001 particles, more than a model can index"),
    ("cloth_drape", ["dim_x = 20", "dim_x = 40000", "dim_y = 20", "dim_y = 40000"], "cloth[0].dim_x",
     "dim_x = 40000 by dim_y = 40000 cells make 1600080001 particles and would need at least"),
    ("soft_drop", ["dim_x = 4", "dim_x = 2000", "dim_y = 4", "dim_y = 2000", "dim_z = 4", "dim_z = 2000"],
     "soft_grid[0].dim_x", "dim_x = 2000 by dim_y = 2000 by dim_z = 2000 cells make 8012006001 particles"),
], ids=["cloth over the index limit", "cloth over the memory", "soft grid over the index limit"])
def test_a_grid_too_big_to_build_is_refused_naming_its_size_before_allocating(name, edits, key, expected, edit_scene,
                                                                             tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sim_validate, "physical_memory", lambda: 16 * 2**30)   # the same on any machine
    path = edit_scene(name, *edits)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    assert info.value.key == key and info.value.message.startswith("expected a grid that fits: ")
    assert expected in info.value.message
    code, out, err = run_config_error(path, tmp_path, capsys)
    assert code == 2 and "Unable to allocate" not in err and err.count("\n") == 1


def test_invalid_toml_names_the_line(edit_scene, tmp_path, capsys):
    path = edit_scene("ball_bounce", "[sim]", "[sim")
    code, out, err = run_config_error(path, tmp_path, capsys)
    assert code == 2
    assert err.startswith(f"simkit: error: {path}: not valid TOML: ") and "line" in err


def test_scene_without_bodies_is_an_error(tmp_path, capsys):
    path = tmp_path / "empty.toml"
    path.write_text("[sim]\ndt = 1e-3\nframes = 10\n")
    code, out, err = run_config_error(path, tmp_path, capsys)
    assert code == 2 and "nothing to simulate" in err


def test_bad_device_override_names_the_option(scenes_dir, tmp_path, capsys):
    usd = tmp_path / "x.usda"
    code = main(["run", str(scenes_dir / "flag.toml"), "--device", "gpu", "--usd", str(usd), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not usd.exists()
    assert 'flag.toml: --device: expected "cpu", "cuda" or "cuda:N", got "gpu"' in err


def test_missing_scene_lists_the_bundled_ones(capsys):
    assert main(["run", "no_such_scene"]) == 2
    err = capsys.readouterr().err
    assert "no_such_scene: no such scene file (the bundled scenes are: ball_bounce," in err


def test_resuming_a_sweep_of_another_scene_file_says_its_scene_file_differs(scenes_dir, tmp_path):
    other = tmp_path / "ball.toml"
    other.write_bytes((scenes_dir / "ball_bounce.toml").read_bytes())
    out = tmp_path / "s"
    sweep(scenes_dir / "ball_bounce.toml", {"sim.dt": [1e-3]}, out=out, frames=2, optimize=False, use_ray=False)
    with pytest.raises(SceneError, match="another sweep: its scene file differs from this one's"):
        sweep(other, {"sim.dt": [1e-3]}, out=out, frames=2, optimize=False, use_ray=False, resume=True)


def test_a_robot_file_warning_is_one_line_naming_the_file_without_simkit_source(tmp_path, capsys):
    pytest.importorskip("trimesh")
    (tmp_path / "r.urdf").write_text(
        '<robot name="r"><link name="base"><inertial><mass value="2.0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" '
        'ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry><mesh filename="nothere.stl"/></geometry>'
        '</collision></link></robot>')
    scene = tmp_path / "s.toml"
    scene.write_text('[sim]\ndt = 1.0e-3\nframes = 2\nup_axis = "z"\n[[robots]]\nname = "r"\nurdf = "r.urdf"\n')
    assert main(["run", str(scene), "--usd", str(tmp_path / "o.usda"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err == (f"simkit: warning: <mesh> of <collision> in {tmp_path / 'r.urdf'}: no such mesh file: "
                   f"{tmp_path / 'nothere.stl'}; it is not a collider (the body's mass is unaffected) "
                   "(RobotFileWarning)\n")
