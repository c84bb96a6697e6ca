"""Overrides of scene keys and the value lists of a sweep: parsing, applying, and the errors of
a bad key or value (no Ray needed)."""

import math
import sys

import pytest

from simkit.cli import main
from simkit.scene import SceneError, read_config
from simkit.scene.overrides import OverrideError, expand_grid, parse_set, parse_values
from simkit.scene.sweeps import TABLE, sweep


def test_a_comma_list_is_read_as_toml_values():
    assert parse_set("sim.dt=1e-3,5e-4") == ("sim.dt", [0.001, 0.0005])
    assert parse_values('true,false') == [True, False]
    assert parse_values('"xpbd",euler') == ["xpbd", "euler"]
    assert parse_values("[1, 0, 0],[2.5, 0, 0]") == [[1, 0, 0], [2.5, 0, 0]]
    assert parse_values(".5,2") == [0.5, 2]


def test_a_bare_word_with_a_colon_is_a_string_not_a_range():
    assert parse_values("cuda:0,cpu") == ["cuda:0", "cpu"]


def test_lo_hi_n_is_evenly_spaced_with_both_ends():
    assert parse_values("0:1:5") == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert parse_values("1e-4:1e-3:2") == [1e-4, 1e-3]


def test_an_integer_range_of_whole_steps_stays_integer():
    values = parse_values("500:2000:4")
    assert values == [500, 1000, 1500, 2000] and all(type(v) is int for v in values)
    assert parse_values("1:2:3") == [1.0, 1.5, 2.0]


def test_a_log_range_is_geometric():
    values = parse_values("1e2:1e4:3:log")
    assert values[0] == 100.0 and values[-1] == 10000.0
    assert math.isclose(values[1], 1000.0, rel_tol=1e-12)


@pytest.mark.parametrize("text, message", [
    ("sim.dt", "expected KEY=VALUES"),
    ("=1,2", "expected KEY=VALUES"),
    ("sim.dt=", "expected KEY=VALUES"),
    ("sim..dt=1", "expected a key path"),
    ("cloth[x].k_mu=1", "expected a key path"),
    ("sim.dt=1e-3,1e-3", "expected each value once"),
    ("sim.dt=0:1:1", "integer N >= 2"),
    ("sim.dt=0:1:2.5", "integer N >= 2"),
    ("sim.dt=0:1:3:log", "LO and HI > 0"),
    ("sim.dt=1,,2", "got nothing"),
    ("sim.dt=@5", "expected a TOML value"),
])
def test_a_malformed_set_is_an_error_naming_it(text, message):
    with pytest.raises(OverrideError, match=message) as e:
        parse_set(text)
    assert str(e.value).startswith("--set ")


def test_the_grid_is_the_cartesian_product_last_key_fastest():
    grid = expand_grid({"a": [1, 2], "b": ["x", "y", "z"]})
    assert grid == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"},
                    {"a": 2, "b": "x"}, {"a": 2, "b": "y"}, {"a": 2, "b": "z"}]


def test_an_override_replaces_the_files_value(scenes_dir):
    config = read_config(scenes_dir / "ball_bounce.toml",
                         overrides={"sim.dt": 1e-3, "particles[0].velocity[0]": 3, "contact.mu": 0.25})
    assert config.sim["dt"] == 1e-3
    assert config.particles[0]["velocity"] == (3.0, 2.0, 0.0)
    assert config.contact["mu"] == 0.25


def test_an_override_changes_the_fingerprint(scenes_dir):
    plain = read_config(scenes_dir / "ball_bounce.toml")
    assert read_config(scenes_dir / "ball_bounce.toml", overrides={"sim.dt": 1e-3}).fingerprint != plain.fingerprint


def test_an_override_of_a_table_the_file_lacks_creates_it(scenes_dir):
    assert "[rigid_contact]" not in (scenes_dir / "ball_bounce.toml").read_text()
    config = read_config(scenes_dir / "ball_bounce.toml", overrides={"rigid_contact.mu": 0.9})
    assert config.rigid_contact["mu"] == 0.9


def test_an_unknown_key_is_the_scene_error_naming_it_and_the_override(scenes_dir):
    with pytest.raises(SceneError) as e:
        read_config(scenes_dir / "ball_bounce.toml", overrides={"sim.dtt": 1e-3})
    assert e.value.key == "sim.dtt"
    assert "unknown key; did you mean 'dt'?" in e.value.message
    assert "set by the override sim.dtt = 0.001" in e.value.message


def test_a_bad_value_is_the_scene_error_of_a_bad_value_in_the_file(scenes_dir):
    with pytest.raises(SceneError) as e:
        read_config(scenes_dir / "flag.toml", overrides={"cloth[0].dim_x": 20.5})
    assert e.value.key == "cloth[0].dim_x"
    assert e.value.message.startswith("expected an integer >= 1, got 20.5 (a number)")


def test_an_index_past_the_end_names_the_entry_and_the_count(scenes_dir):
    with pytest.raises(SceneError, match=r"particles\[3\]: index out of range: the scene's particles has 1 entry"):
        read_config(scenes_dir / "ball_bounce.toml", overrides={"particles[3].mass": 2.0})


def test_an_array_the_scene_lacks_cannot_be_indexed(scenes_dir):
    with pytest.raises(SceneError, match=r"cloth\[0\]: the scene has no array cloth"):
        read_config(scenes_dir / "ball_bounce.toml", overrides={"cloth[0].k_mu": 2.0})


def test_an_error_caused_jointly_names_every_override(scenes_dir):
    with pytest.raises(SceneError) as e:
        read_config(scenes_dir / "ball_bounce.toml", overrides={"sim.iterations": 3})
    assert e.value.key == "sim.iterations" and "only used by integrator" in e.value.message


def test_every_run_is_checked_before_any_runs(scenes_dir, tmp_path):
    out = tmp_path / "sweep"
    with pytest.raises(SceneError) as e:
        sweep(scenes_dir / "ball_bounce.toml", {"sim.dt": [1e-3, -1.0]}, out=out, frames=2, optimize=False,
              use_ray=False)
    assert e.value.key == "sim.dt" and "expected a number > 0, got -1.0" in e.value.message
    assert not out.exists()


def test_frames_and_an_override_of_sim_frames_conflict(scenes_dir, tmp_path):
    with pytest.raises(SceneError, match="set by an override and by --frames"):
        sweep(scenes_dir / "ball_bounce.toml", {"sim.frames": [2, 3]}, out=tmp_path / "s", frames=2,
              use_ray=False)


def test_an_existing_table_is_not_overwritten_without_resume(scenes_dir, tmp_path):
    out = tmp_path / "s"
    out.mkdir()
    (out / TABLE).write_text("run\n")
    with pytest.raises(SceneError, match="pass --resume to continue it"):
        sweep(scenes_dir / "ball_bounce.toml", {"sim.dt": [1e-3]}, out=out, frames=2, use_ray=False)
    assert (out / TABLE).read_text() == "run\n"


def test_the_sweep_command_refuses_an_unknown_key_with_exit_code_2(scenes_dir, tmp_path, capsys):
    code = main(["sweep", str(scenes_dir / "flag.toml"), "--set", "cloth[0].k_muu=1,2", "--out", str(tmp_path / "s"),
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "cloth[0].k_muu: unknown key; did you mean 'k_mu'?" in err and "Traceback" not in err


def test_the_sweep_command_refuses_a_key_set_twice(scenes_dir, tmp_path, capsys):
    code = main(["sweep", str(scenes_dir / "flag.toml"), "--set", "sim.dt=1e-3", "--set", "sim.dt=2e-3", "--quiet",
                 "--out", str(tmp_path / "s")])
    assert code == 2
    assert "--set sim.dt: given twice" in capsys.readouterr().err


def test_the_sweep_command_without_ray_says_how_to_install_it(scenes_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)       # import ray fails, whether or not it is installed
    code = main(["sweep", str(scenes_dir / "ball_bounce.toml"), "--set", "sim.dt=1e-3", "--frames", "2", "--quiet",
                 "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 1
    assert "run on Ray, which is not installed: pip install 'simkit[ray]'" in err


def test_multi_start_options_need_starts(scenes_dir, capsys):
    assert main(["optimize", str(scenes_dir / "ball_bounce.toml"), "--spread", "0.2", "--quiet"]) == 2
    assert "--spread: only used by a multi-start optimization" in capsys.readouterr().err
