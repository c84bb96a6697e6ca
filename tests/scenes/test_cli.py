"""The ``simkit`` command, called in-process through ``simkit.cli.main`` (and as ``python -m
simkit`` in a subprocess): exit codes, messages, outputs, resuming an interrupted
optimization, and the viewer commands with the viewer replaced by a recorder."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from pxr import Usd, UsdGeom

import simkit
from simkit.cli import main, source_root
from simkit.cli import utilities as cli_utilities
from simkit.scene import optimize as scene_optimize
from simkit.sim import Model, State

FAST = ["--frames", "3", "--quiet"]


def samples(usd_path, prim="/World/Particles"):
    stage = Usd.Stage.Open(str(usd_path))
    return UsdGeom.PointBased(stage.GetPrimAtPath(prim)).GetPointsAttr().GetTimeSamples()


# ----------------------------------------------------------------------------------
# run
# ----------------------------------------------------------------------------------

def test_run_writes_usd_with_one_sample_per_frame_and_reports_steps_per_second(scenes_dir, tmp_path, capsys):
    usd = tmp_path / "bounce.usda"
    assert main(["run", str(scenes_dir / "ball_bounce.toml"), "--frames", "4", "--usd", str(usd)]) == 0
    out, err = capsys.readouterr()
    assert samples(usd) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert "ball_bounce: 4 frames (160 steps of 0.0005 s)" in out and "steps/s" in out
    assert f"USD: {usd.resolve()}" in out
    assert "step/s" in err and "160/160" in err          # the progress bar counts integrator steps


def test_run_quiet_prints_nothing_and_default_usd_goes_to_the_working_directory(scenes_dir, tmp_path, monkeypatch,
                                                                               capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(scenes_dir / "soft_drop.toml"), *FAST]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    assert samples(tmp_path / "soft_drop.usd", "/World/SoftBodies") == [0.0, 1.0, 2.0, 3.0]


def test_run_finds_a_bundled_scene_by_name(tmp_path, capsys):
    usd = tmp_path / "walker.usdc"
    assert main(["run", "spring_walker", "--usd", str(usd), *FAST]) == 0
    assert samples(usd, "/World/Springs") == [0.0, 1.0, 2.0, 3.0]


def test_run_rejects_a_usd_path_with_another_extension(scenes_dir, tmp_path, capsys):
    assert main(["run", str(scenes_dir / "flag.toml"), "--usd", str(tmp_path / "flag.obj"), *FAST]) == 2
    assert "--usd" in capsys.readouterr().err and not list(tmp_path.iterdir())


def test_run_that_blows_up_exits_1_without_traceback_or_file(edit_scene, tmp_path, capsys):
    path = edit_scene("cloth_drape", "k_mu = 300.0", "k_mu = 3.0e7", "k_lambda = 300.0", "k_lambda = 3.0e7")
    usd = tmp_path / "blown.usda"
    assert main(["run", str(path), "--frames", "20", "--usd", str(usd), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("simkit: error:") and "the simulation diverged at step" in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not usd.exists()


def test_run_far_over_the_stability_bound_exits_1_and_writes_no_usd(edit_scene, tmp_path, capsys):
    path = edit_scene("ball_bounce", "ke = 4.0e3", "ke = 1.0e14")
    usd = tmp_path / "kicked.usda"
    assert main(["run", str(path), "--usd", str(usd), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "particle 0 moves at" in err and "lower sim.dt" in err and len(err.strip().splitlines()) == 1
    assert not usd.exists()


def test_optimize_of_a_diverging_scene_exits_1_and_writes_no_checkpoint_or_usd(edit_scene, tmp_path, capsys):
    path = edit_scene("ball_bounce", "ke = 4.0e3", "ke = 1.0e14")
    ckpt, usd = tmp_path / "ckpt.npz", tmp_path / "opt.usda"
    assert main(["optimize", str(path), "--iterations", "2", "--checkpoint", str(ckpt), "--usd", str(usd),
                 "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "iteration 1: " in err and "the simulation diverged" in err and len(err.strip().splitlines()) == 1
    assert not ckpt.exists() and not usd.exists()


def test_run_view_plays_the_scene_live_and_writes_nothing(scenes_dir, tmp_path, monkeypatch, fake_viewer, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(scenes_dir / "ball_bounce.toml"), "--view"]) == 0
    (name, (model, reset, advance), kwargs), (_, (last,), _) = fake_viewer
    assert name == "play_live"
    assert isinstance(model, Model) and model.particle_count == 1
    assert kwargs == {"fps": pytest.approx(50.0), "title": "simkit: ball_bounce"}
    assert callable(reset) and callable(advance)
    assert isinstance(last, State) and last.model is model
    start = model.particle_q.numpy()[0]
    assert last.particle_q.numpy()[0, 0] > start[0]        # three frames of the throw along +x
    assert list(tmp_path.iterdir()) == []


def test_run_view_and_usd_together_is_a_usage_error(scenes_dir, fake_viewer, capsys):
    assert main(["run", str(scenes_dir / "flag.toml"), "--view", "--usd", "x.usda"]) == 2
    assert "either --view or --usd" in capsys.readouterr().err and fake_viewer == []


# ----------------------------------------------------------------------------------
# view
# ----------------------------------------------------------------------------------

def test_view_plays_a_usd_file(scenes_dir, tmp_path, fake_viewer, capsys):
    usd = tmp_path / "flag.usda"
    assert main(["run", str(scenes_dir / "flag.toml"), "--usd", str(usd), *FAST]) == 0
    assert main(["view", str(usd)]) == 0
    assert fake_viewer == [("play_usd", (str(usd),), {"title": None})]


@pytest.mark.parametrize("name, message", [("missing.usda", "no such file"), ("notes.txt", "expected a USD file")])
def test_view_refuses_what_it_cannot_play(name, message, tmp_path, fake_viewer, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["view", str(tmp_path / name)]) == 2
    assert message in capsys.readouterr().err and fake_viewer == []


def test_view_without_a_working_viewer_is_a_usage_error_exit_2(tmp_path, monkeypatch, capsys):
    usd = tmp_path / "x.usda"
    usd.write_text("#usda 1.0\n")
    monkeypatch.setitem(sys.modules, "simkit.render.viewer", None)      # importing it fails
    assert main(["view", str(usd)]) == 2
    err = capsys.readouterr().err
    assert "the viewer could not be loaded" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["run", "view"])
def test_view_without_a_display_is_a_usage_error_exit_2(command, scenes_dir, tmp_path, fake_viewer, monkeypatch,
                                                        capsys):
    viewer = sys.modules["simkit.render.viewer"]
    message = "no display: set DISPLAY or run under xvfb-run"

    def no_window(*args, **kwargs):
        raise RuntimeError(f"{message}; DISPLAY is not set")

    monkeypatch.setattr(viewer, "NO_DISPLAY", message, raising=False)
    monkeypatch.setattr(viewer, "play_live", no_window)
    monkeypatch.setattr(viewer, "play_usd", no_window)
    usd = tmp_path / "x.usda"
    usd.write_text("#usda 1.0\n")
    argv = ["run", str(scenes_dir / "ball_bounce.toml"), "--view"] if command == "run" else ["view", str(usd)]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"simkit: error: {message}; DISPLAY is not set\n"


def test_view_that_fails_otherwise_still_exits_1(scenes_dir, fake_viewer, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("shader compile failed")

    monkeypatch.setattr(sys.modules["simkit.render.viewer"], "play_live", broken)
    assert main(["run", str(scenes_dir / "ball_bounce.toml"), "--view"]) == 1
    assert "shader compile failed" in capsys.readouterr().err


# ----------------------------------------------------------------------------------
# optimize
# ----------------------------------------------------------------------------------

def optimize_args(scenes_dir, tmp_path, *more, frames=10):
    return ["optimize", str(scenes_dir / "ball_bounce.toml"), "--frames", str(frames), "--checkpoint",
            str(tmp_path / "ckpt.npz"), "--usd", str(tmp_path / "opt.usda"), *more]


def read_checkpoint(path):
    """(completed iterations, loss per iteration, the throw velocity) of a checkpoint."""
    with np.load(path) as data:
        return data["losses"].size, data["losses"].copy(), data["param_0"].copy()


def test_optimize_prints_losses_and_writes_checkpoint_and_usd(scenes_dir, tmp_path, capsys):
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "3")) == 0
    out, err = capsys.readouterr()
    assert "optimizing ball.velocity with sgd (learning rate 0.8) for 3 iterations" in out
    assert "iteration    3  loss" in out and "ball.velocity = (" in out and "it/s" in err
    count, losses, velocity = read_checkpoint(tmp_path / "ckpt.npz")
    assert count == 3 and losses[2] < losses[0]
    assert samples(tmp_path / "opt.usda") == [float(k) for k in range(11)]


def test_optimize_resumes_after_an_interruption_and_ends_like_an_uninterrupted_run(scenes_dir, tmp_path,
                                                                                     monkeypatch, capsys):
    straight = tmp_path / "straight"
    straight.mkdir()
    assert main(optimize_args(scenes_dir, straight, "--iterations", "6", "--quiet")) == 0

    step = scene_optimize.Optimization.step

    def interrupt_after_4(self):
        if self.iteration == 4:
            raise KeyboardInterrupt
        return step(self)

    monkeypatch.setattr(scene_optimize.Optimization, "step", interrupt_after_4)
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "6", "--quiet")) == 130
    err = capsys.readouterr().err
    assert "interrupted; 4 completed iterations are saved" in err and "--resume" in err
    count, losses4, _ = read_checkpoint(tmp_path / "ckpt.npz")
    assert count == 4 and not (tmp_path / "opt.usda").exists()

    monkeypatch.setattr(scene_optimize.Optimization, "step", step)
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "6", "--resume")) == 0
    out = capsys.readouterr().out
    assert "resuming from" in out and "after iteration 4" in out
    assert "iteration    5  loss" in out and "iteration    1  loss" not in out
    _, resumed, v_resumed = read_checkpoint(tmp_path / "ckpt.npz")
    _, uninterrupted, v_straight = read_checkpoint(straight / "ckpt.npz")
    np.testing.assert_array_equal(resumed[:4], losses4)
    np.testing.assert_allclose(resumed, uninterrupted, rtol=1e-12)
    np.testing.assert_allclose(v_resumed, v_straight, rtol=1e-12)


def test_optimize_spring_walker_resumed_ends_bit_identical_to_an_uninterrupted_run(scenes_dir, tmp_path):
    # Adam over a spring controller: every iteration's gradient must be the same whether the
    # process ran before or not (no gradient left over in the model's or state's buffers).
    def run(out, iterations, *more):
        out.mkdir(exist_ok=True)
        return main(["optimize", str(scenes_dir / "spring_walker.toml"), "--frames", "30", "--iterations",
                     str(iterations), "--checkpoint", str(out / "ckpt.npz"), "--usd", str(out / "o.usda"),
                     "--quiet", *more])
    assert run(tmp_path / "straight", 4) == 0
    assert run(tmp_path / "resumed", 2) == 0
    assert run(tmp_path / "resumed", 4, "--resume") == 0
    with np.load(tmp_path / "straight" / "ckpt.npz") as a, np.load(tmp_path / "resumed" / "ckpt.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_ctrl_c_saves_the_checkpoint_and_exits_130(scenes_dir, tmp_path):
    ckpt = tmp_path / "ckpt.npz"
    args = optimize_args(scenes_dir, tmp_path, "--iterations", "100000", "--quiet")
    proc = subprocess.Popen([sys.executable, "-m", "simkit", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while not ckpt.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    count, losses, _ = read_checkpoint(ckpt)
    assert count >= 1 and np.all(np.isfinite(losses))
    assert f"interrupted; {count} completed iterations are saved in {ckpt}" in err
    assert f"--checkpoint {ckpt}" in err and err.rstrip().endswith("--resume)")
    assert not (tmp_path / "opt.usda").exists() and not list(tmp_path.glob(".*tmp*"))


def test_optimize_resume_refuses_a_checkpoint_of_another_scene_version(scenes_dir, tmp_path, capsys):
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "1", "--quiet")) == 0
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "2", "--resume", "--quiet", frames=11)) == 2
    assert "was written for another version of" in capsys.readouterr().err
    assert read_checkpoint(tmp_path / "ckpt.npz")[0] == 1


def test_optimize_resume_without_checkpoint_is_a_usage_error(scenes_dir, tmp_path, capsys):
    assert main(optimize_args(scenes_dir, tmp_path, "--resume")) == 2
    assert "ckpt.npz: no checkpoint to resume from" in capsys.readouterr().err


def test_optimize_plot_saves_the_loss_curve_as_a_png(scenes_dir, tmp_path, capsys):
    plot = tmp_path / "loss.png"
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "3", "--plot", str(plot))) == 0
    data = plot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert str(plot) in capsys.readouterr().out
    assert not list(tmp_path.glob(".*tmp*"))


def test_optimize_plot_draws_the_loss_after_0_to_n_iterations(scenes_dir, tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    drawn, plot = [], Axes.plot

    def record(self, x, y, *args, **kwargs):
        drawn.append((list(x), list(y), self))
        return plot(self, x, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", record)
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "3", "--plot", str(tmp_path / "l.png"),
                              "--quiet")) == 0
    (x, y, ax), = drawn
    _, losses, _ = read_checkpoint(tmp_path / "ckpt.npz")
    assert x == [0, 1, 2, 3] and y[:3] == list(losses)      # the start, then after each of the 3 iterations
    assert ax.get_xlabel() == "iterations done (0: the starting parameters)"
    assert ax.get_title().endswith("loss over 3 iterations")


def test_optimize_resume_with_fewer_iterations_than_the_checkpoint_is_a_usage_error(scenes_dir, tmp_path, capsys):
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "3", "--quiet")) == 0
    before = (tmp_path / "ckpt.npz").read_bytes()
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "2", "--resume")) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--iterations: 2 iterations in all, but the checkpoint" in err
    assert "already holds 3; --iterations counts every iteration, those of the checkpoint included: give " \
           "--iterations 5 for 2 more" in err
    assert (tmp_path / "ckpt.npz").read_bytes() == before


def test_optimize_resume_with_more_iterations_runs_the_difference(scenes_dir, tmp_path, capsys):
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "2", "--quiet")) == 0
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "3", "--resume")) == 0
    out = capsys.readouterr().out
    assert "iteration    3  loss" in out and "iteration    2  loss" not in out and "after 3 iterations" in out
    assert read_checkpoint(tmp_path / "ckpt.npz")[0] == 3


def test_optimize_plot_without_matplotlib_says_how_to_get_it_and_does_nothing(scenes_dir, tmp_path, monkeypatch,
                                                                              capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)          # as if it were not installed
    assert main(optimize_args(scenes_dir, tmp_path, "--plot", str(tmp_path / "loss.png"))) == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib, which is not installed" in err and "pip install 'simkit[plot]'" in err
    assert list(tmp_path.iterdir()) == []


def test_optimize_a_scene_without_an_optimize_table_is_a_usage_error(scenes_dir, capsys):
    assert main(["optimize", str(scenes_dir / "flag.toml")]) == 2
    assert "flag.toml: optimize: missing; the scene has no [optimize] table" in capsys.readouterr().err


# ----------------------------------------------------------------------------------
# info, cache, bench, usage
# ----------------------------------------------------------------------------------

def test_info_reports_version_devices_compiler_and_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SIMKIT_CACHE_DIR", str(tmp_path))
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "m.so").write_bytes(b"x" * 2000)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"simkit    {simkit.__version__} (")
    for word in ("python", "numpy", "devices   cpu (", "cuda", "compiler", "nvrtc"):
        assert word in out
    assert f"cache     {tmp_path} (1 files, 2.0 kB)" in out


def test_cache_clear_removes_simkit_entries_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SIMKIT_CACHE_DIR", str(tmp_path))
    for name in ("modules/a.so", "modules/a.cpp", "cuda/b.cubin", "include-0123/simkit_builtins.h"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * 100)
    (tmp_path / "notes.txt").write_text("not simkit's")
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == f"removed 4 files (400 B) from {tmp_path}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert main(["cache", "clear"]) == 0
    assert "removed 0 files" in capsys.readouterr().out


def test_bench_runs_tools_bench_with_the_remaining_arguments(monkeypatch):
    calls = []
    monkeypatch.setattr(cli_utilities.subprocess, "call", lambda cmd, cwd: calls.append((cmd, cwd)) or 0)
    assert main(["bench", "--quick", "--only", "launch"]) == 0
    (cmd, cwd), = calls
    assert cmd[0] == sys.executable and cmd[1].endswith("tools/bench.py") and cmd[2:] == ["--quick", "--only", "launch"]
    assert cwd == source_root()


def test_bench_outside_a_source_checkout_says_so(monkeypatch, capsys):
    monkeypatch.setattr(cli_utilities, "source_root", lambda: None)
    assert main(["bench"]) == 2
    assert "runs tools/bench.py of a source checkout" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["fly"], ["run"], ["run", "x.toml", "--bogus"], ["cache"],
                                  ["optimize", "x.toml", "--iterations", "0"]])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "usage: simkit" in capsys.readouterr().err


def test_python_dash_m_simkit_runs_a_scene_and_reports_config_errors(scenes_dir, edit_scene, tmp_path):
    usd = tmp_path / "drape.usda"
    ok = subprocess.run([sys.executable, "-m", "simkit", "run", str(scenes_dir / "cloth_drape.toml"), "--usd",
                         str(usd), "--frames", "2"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "cloth_drape: 2 frames" in ok.stdout and samples(usd, "/World/Cloth") == [0.0, 1.0, 2.0]
    bad = edit_scene("cloth_drape", "cell_x = 0.06", "cell_x = 0")
    fail = subprocess.run([sys.executable, "-m", "simkit", "run", str(bad)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert fail.returncode == 2 and fail.stdout == ""
    assert fail.stderr == f"simkit: error: {bad}: cloth[0].cell_x: expected a number > 0, got 0 (an integer)\n"


# ----------------------------------------------------------------------------------
# output paths: never an input or another output, writable before the run starts
# ----------------------------------------------------------------------------------

@pytest.fixture
def no_run(monkeypatch):
    """Makes any simulation or optimization fail loudly: a refusal must come before the run."""
    import simkit.scene as scene_pkg

    def refuse(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr(scene_pkg, "run_scene", refuse)
    monkeypatch.setattr(scene_optimize.Optimization, "run", refuse)


def copied_scene(scenes_dir, tmp_path):
    scene = tmp_path / "ball.toml"
    scene.write_bytes((scenes_dir / "ball_bounce.toml").read_bytes())
    return scene


def test_optimize_refuses_a_checkpoint_path_that_is_the_scene_and_leaves_it_intact(scenes_dir, tmp_path, no_run,
                                                                                  capsys):
    scene = copied_scene(scenes_dir, tmp_path)
    before = scene.read_bytes()
    assert main(["optimize", str(scene), "--checkpoint", str(scene), "--usd", str(tmp_path / "o.usda"), *FAST]) == 2
    err = capsys.readouterr().err
    assert f"{scene}: --checkpoint: is the scene file ({scene})" in err and len(err.strip().splitlines()) == 1
    assert scene.read_bytes() == before


def test_optimize_refuses_one_path_for_two_outputs(scenes_dir, tmp_path, no_run, capsys):
    same = tmp_path / "both.usda"
    assert main(["optimize", str(scenes_dir / "ball_bounce.toml"), "--checkpoint", str(same), "--usd", str(same),
                 *FAST]) == 2
    assert "is also the path of" in capsys.readouterr().err
    assert not same.exists()


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_run_refuses_a_usd_path_that_is_a_link_to_the_scene(link, scenes_dir, tmp_path, no_run, capsys):
    scene = copied_scene(scenes_dir, tmp_path)
    usd = tmp_path / "alias.usda"
    (usd.symlink_to if link == "symlink" else usd.hardlink_to)(scene)
    before = scene.read_bytes()
    assert main(["run", str(scene), "--usd", str(usd), *FAST]) == 2
    assert "--usd: is the scene file" in capsys.readouterr().err
    assert scene.read_bytes() == before


def test_optimize_refuses_a_checkpoint_given_as_another_spelling_of_the_scene_path(scenes_dir, tmp_path, no_run,
                                                                                  monkeypatch, capsys):
    scene = copied_scene(scenes_dir, tmp_path)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert main(["optimize", "../ball.toml", "--checkpoint", "./../sub/../ball.toml", "--usd", "o.usda", *FAST]) == 2
    assert "--checkpoint: is the scene file" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--usd", "--checkpoint", "--plot"])
def test_optimize_checks_that_each_output_can_be_written_before_the_run(option, scenes_dir, tmp_path, no_run,
                                                                        capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    name = {"--usd": "o.usda", "--checkpoint": "c.npz", "--plot": "loss.png"}[option]
    paths = {"--usd": tmp_path / "o.usda", "--checkpoint": tmp_path / "c.npz", "--plot": tmp_path / "loss.png"}
    paths[option] = blocker / name
    args = ["optimize", str(scenes_dir / "ball_bounce.toml"), *[x for k, v in paths.items() for x in (k, str(v))]]
    assert main([*args, *FAST]) == 2
    err = capsys.readouterr().err
    assert f"{blocker / name}: {option}: cannot be created: {blocker} is not a directory" in err


def test_run_refuses_a_usd_in_a_missing_folder_and_creates_no_folder(scenes_dir, tmp_path, no_run, capsys):
    usd = tmp_path / "typo" / "deeper" / "x.usda"
    assert main(["run", str(scenes_dir / "ball_bounce.toml"), "--usd", str(usd), *FAST]) == 2
    err = capsys.readouterr().err
    assert f"{usd}: --usd: cannot be written: the folder {usd.parent} does not exist" in err
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("option", ["--usd", "--checkpoint", "--plot"])
def test_optimize_refuses_an_output_in_a_missing_folder_and_creates_no_folder(option, scenes_dir, tmp_path, no_run,
                                                                              capsys):
    name = {"--usd": "o.usda", "--checkpoint": "c.npz", "--plot": "loss.png"}[option]
    paths = {"--usd": tmp_path / "o.usda", "--checkpoint": tmp_path / "c.npz", "--plot": tmp_path / "loss.png"}
    paths[option] = tmp_path / "typo" / name
    args = ["optimize", str(scenes_dir / "ball_bounce.toml"), *[x for k, v in paths.items() for x in (k, str(v))]]
    assert main([*args, *FAST]) == 2
    assert f"{option}: cannot be written: the folder {tmp_path / 'typo'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_sweep_makes_its_out_folder_but_not_the_folders_above_it(scenes_dir, tmp_path, capsys):
    out = tmp_path / "typo" / "sweep"
    args = ["sweep", str(scenes_dir / "ball_bounce.toml"), "--set", "sim.dt=1e-3", "--frames", "2", "--run-only",
            "--quiet"]
    assert main([*args, "--out", str(out)]) == 2
    assert f"--out: cannot be written: the folder {tmp_path / 'typo'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_run_checks_that_the_usd_can_be_written_before_the_run(scenes_dir, tmp_path, no_run, capsys):
    folder = tmp_path / "out.usda"
    folder.mkdir()
    assert main(["run", str(scenes_dir / "ball_bounce.toml"), "--usd", str(folder), *FAST]) == 2
    assert "--usd: is a directory" in capsys.readouterr().err


def test_optimize_refuses_a_plot_format_matplotlib_cannot_write_before_the_run(scenes_dir, tmp_path, no_run, capsys):
    pytest.importorskip("matplotlib")
    assert main(optimize_args(scenes_dir, tmp_path, "--plot", str(tmp_path / "loss.xyz"))) == 2
    assert "--plot" in capsys.readouterr().err and not list(tmp_path.iterdir())


def _damage(kind, good):
    data = good.read_bytes()
    if kind == "truncated":
        return data[: len(data) // 2]
    if kind == "garbage":
        return b"this is not a checkpoint\n" * 10
    if kind == "flipped byte":
        damaged = bytearray(data)
        damaged[len(damaged) // 2] ^= 0xFF
        return bytes(damaged)
    buffer = __import__("io").BytesIO()
    np.savez(buffer, something=np.zeros(3))            # a valid .npz of something else
    return buffer.getvalue()


@pytest.mark.parametrize("kind", ["truncated", "garbage", "flipped byte", "other npz"])
def test_resume_from_a_damaged_checkpoint_is_one_line_naming_the_file(kind, scenes_dir, tmp_path, capsys):
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "1", "--quiet", frames=2)) == 0
    ckpt = tmp_path / "ckpt.npz"
    ckpt.write_bytes(_damage(kind, ckpt))
    capsys.readouterr()
    assert main(optimize_args(scenes_dir, tmp_path, "--iterations", "2", "--resume", "--quiet", frames=2)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"simkit: error: {ckpt}: not a") and "checkpoint" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
