"""Sweeps and multi-start optimization on a real local Ray with 2 CPUs (one per module): the
table against the same runs made without Ray, resuming, retrying, Ctrl-C, keeping the best."""

import csv
import math
import struct

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from simkit.cli import main  # noqa: E402
from simkit.core.threads import get_threads, set_threads  # noqa: E402
from simkit.scene import Optimization, load_scene, multi_start, run_scene, sweep  # noqa: E402
from simkit.scene import sweeps as sweeps_module  # noqa: E402
from simkit.scene.pool import RayRunner  # noqa: E402
from simkit.scene.sweeps import PARQUET, SweepInterrupted  # noqa: E402
from simkit.scene.task import final_metrics  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def _table(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _without_seconds(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def test_a_sweep_on_ray_gives_the_numbers_of_the_same_runs_without_ray(scenes_dir, tmp_path):
    grid = {"cloth[0].k_mu": [500, 2000], "contact.mu": [0.1, 0.5]}
    result = sweep(scenes_dir / "cloth_drape.toml", grid, out=tmp_path / "ray", frames=3)
    assert [r["status"] for r in result.rows] == ["ok"] * 4
    before = get_threads()
    set_threads(1)  # a sweep's run has 1 thread unless told otherwise
    try:
        for row in result.rows:
            point = {k: row[k] for k in grid}
            scene = load_scene(scenes_dir / "cloth_drape.toml", frames=3, overrides=point)
            expected = final_metrics(scene, run_scene(scene).final_state)
            assert {k: row[k] for k in expected} == expected, point
    finally:
        set_threads(before)
    local = sweep(scenes_dir / "cloth_drape.toml", grid, out=tmp_path / "local", frames=3, use_ray=False)
    assert _without_seconds(_table(local.table)) == _without_seconds(_table(result.table))
    assert [r["cloth[0].k_mu"] for r in _table(result.table)] == ["500", "500", "2000", "2000"]


def test_the_parquet_table_holds_the_csv_rows(scenes_dir, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    result = sweep(scenes_dir / "ball_bounce.toml", {"sim.dt": [1e-3, 5e-4]}, out=tmp_path / "s", frames=2,
                   optimize=False)
    assert result.parquet == tmp_path / "s" / PARQUET
    table = pq.read_table(result.parquet).to_pylist()
    assert [r["sim.dt"] for r in table] == [1e-3, 5e-4]
    assert [r["com_y"] for r in table] == [r["com_y"] for r in result.rows]


def test_resume_runs_only_the_runs_missing_from_the_table(scenes_dir, tmp_path):
    scene, out = scenes_dir / "ball_bounce.toml", tmp_path / "s"
    first = sweep(scene, {"sim.dt": [1e-3, 5e-4, 2.5e-4]}, out=out, frames=2, optimize=False)
    lines = (out / "results.csv").read_text().splitlines()
    (out / "results.csv").write_text("\n".join(lines[:2] + lines[3:]) + "\n")   # as if run 1 never finished
    again = sweep(scene, {"sim.dt": [1e-3, 5e-4, 2.5e-4]}, out=out, frames=2, optimize=False, resume=True)
    assert (again.ran, again.skipped) == (1, 2)
    assert [r["run"] for r in again.rows] == [0, 1, 2]
    kept = _table(out / "results.csv")
    assert kept[0]["seconds"] == lines[1].split(",")[4] and kept[2]["seconds"] == lines[3].split(",")[4]
    assert [r["com_y"] for r in again.rows] == [r["com_y"] for r in first.rows]


def test_resume_refuses_the_folder_of_another_sweep(scenes_dir, tmp_path):
    scene, out = scenes_dir / "ball_bounce.toml", tmp_path / "s"
    sweep(scene, {"sim.dt": [1e-3]}, out=out, frames=2, optimize=False, use_ray=False)
    with pytest.raises(Exception, match="another sweep: its swept keys or values differ"):
        sweep(scene, {"sim.dt": [5e-4]}, out=out, frames=2, optimize=False, use_ray=False, resume=True)


def test_ctrl_c_leaves_a_table_of_the_finished_runs_that_resume_completes(scenes_dir, tmp_path, monkeypatch):
    scene, out, grid = scenes_dir / "ball_bounce.toml", tmp_path / "s", {"sim.dt": [1e-3, 5e-4, 2.5e-4]}
    real, calls = sweeps_module.run_point, []

    def interrupted_at_the_third(**kwargs):
        calls.append(kwargs)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(**kwargs)

    monkeypatch.setattr(sweeps_module, "run_point", interrupted_at_the_third)
    with pytest.raises(SweepInterrupted) as e:
        sweep(scene, grid, out=out, frames=2, optimize=False, use_ray=False)
    assert (e.value.finished, e.value.total) == (2, 3)
    assert [r["run"] for r in _table(out / "results.csv")] == ["0", "1"]
    monkeypatch.setattr(sweeps_module, "run_point", real)
    done = sweep(scene, grid, out=out, frames=2, optimize=False, resume=True)
    assert (done.ran, done.skipped) == (1, 2) and [r["status"] for r in done.rows] == ["ok"] * 3


def test_a_failing_run_is_retried_once_then_recorded_and_the_sweep_goes_on(scenes_dir, tmp_path):
    # cloth_drape diverges in its first frame with dt = 5e-3 (ten times its sim.dt)
    result = sweep(scenes_dir / "cloth_drape.toml", {"sim.dt": [5e-3, 5e-4]}, out=tmp_path / "s", frames=2)
    failed, ok = result.rows
    assert (failed["status"], failed["attempts"]) == ("failed", 2)
    assert failed["error"].startswith("SimulationError: ") and "diverged" in failed["error"]
    assert failed["kinetic_energy"] is None
    assert (ok["status"], ok["attempts"]) == ("ok", 1) and math.isfinite(ok["kinetic_energy"])
    table = _table(result.table)
    assert table[0]["status"] == "failed" and table[0]["kinetic_energy"] == ""


def test_ray_runner_retries_a_failed_task_exactly_once(tmp_path):
    log = tmp_path / "attempts.txt"

    def flaky(name: str, fail_times: int) -> str:
        with open(log, "a") as f:
            f.write(name + "\n")
        if open(log).read().split().count(name) <= fail_times:
            raise RuntimeError(f"{name} failed")
        return name

    outcomes = []
    with RayRunner() as runner:
        runner.run(flaky, [("once", {"name": "once", "fail_times": 1}),
                           ("always", {"name": "always", "fail_times": 99})], outcomes.append)
    by_key = {o.key: o for o in outcomes}
    assert (by_key["once"].ok, by_key["once"].attempts, by_key["once"].value) == (True, 2, "once")
    assert (by_key["always"].ok, by_key["always"].attempts) == (False, 2)
    assert by_key["always"].error == "RuntimeError: always failed"
    assert log.read_text().split().count("always") == 2


def test_the_sweep_command_writes_the_table_and_usd_per_run(scenes_dir, tmp_path, capsys):
    out = tmp_path / "s"
    code = main(["sweep", str(scenes_dir / "ball_bounce.toml"), "--set", "contact.mu=0.1,0.5", "--frames", "2",
                 "--run-only", "--usd", "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    rows = _table(out / "results.csv")
    assert [(r["contact.mu"], r["status"], r["usd"]) for r in rows] == [("0.1", "ok", "usd/run-0000.usd"),
                                                                         ("0.5", "ok", "usd/run-0001.usd")]
    assert (out / "usd" / "run-0001.usd").stat().st_size > 0


def test_a_sweep_of_an_optimize_scene_records_the_optimized_loss(scenes_dir, tmp_path):
    result = sweep(scenes_dir / "ball_bounce.toml", {"optimize.learning_rate": [0.4, 0.8]}, out=tmp_path / "s",
                   frames=10, iterations=2)
    for row in result.rows:
        assert row["status"] == "ok" and row["iterations"] == 2
        assert row["loss"] < row["initial_loss"]
        opt = Optimization(load_scene(scenes_dir / "ball_bounce.toml", frames=10,
                                      overrides={"optimize.learning_rate": row["optimize.learning_rate"]}),
                           checkpoint=tmp_path / "s" / row["checkpoint"], resume=True)
        assert opt.iteration == 2


def test_multi_start_keeps_the_start_of_the_lowest_loss(scenes_dir, tmp_path):
    scene = scenes_dir / "ball_bounce.toml"
    result = multi_start(scene, 3, frames=10, iterations=2, checkpoint=tmp_path / "best.npz")
    losses = [s.loss for s in result.starts]
    assert all(s.status == "ok" for s in result.starts) and len(set(losses)) == 3
    assert result.best == int(np.argmin(losses))
    local = multi_start(scene, 3, frames=10, iterations=2, checkpoint=tmp_path / "local.npz", use_ray=False)
    assert [s.loss for s in local.starts] == losses and [s.losses for s in local.starts] == \
        [s.losses for s in result.starts]
    opt = Optimization(load_scene(scene, frames=10), iterations=2, checkpoint=tmp_path / "best.npz", resume=True)
    assert opt.losses == result.best_start.losses
    before = get_threads()
    set_threads(1)
    try:
        assert opt.replay()[0] == result.best_start.loss
    finally:
        set_threads(before)


def test_the_sweep_command_plots_the_metric_against_each_key_next_to_the_table(scenes_dir, tmp_path, capsys):
    out = tmp_path / "s"
    code = main(["sweep", str(scenes_dir / "ball_bounce.toml"), "--set", "contact.mu=0.1,0.5",
                 "--set", "particles[0].velocity=[1,2,0],[2,2,0]", "--frames", "2", "--run-only", "--out", str(out),
                 "--plot", "--metric", "com_x"])
    assert code == 0, capsys.readouterr().err
    assert f"plot: {(out / 'results.png').resolve()} (com_x per swept key)" in capsys.readouterr().out
    data = (out / "results.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 1.8 * height                                  # two subplots side by side


def test_optimize_with_starts_writes_the_best_checkpoint_and_usd(scenes_dir, tmp_path, capsys):
    ckpt, usd = tmp_path / "ball.npz", tmp_path / "ball.usda"
    code = main(["optimize", str(scenes_dir / "ball_bounce.toml"), "--starts", "2", "--iterations", "2", "--frames",
                 "10", "--checkpoint", str(ckpt), "--usd", str(usd)])
    out = capsys.readouterr().out
    assert code == 0
    assert "start   0: loss" in out and "start   1: loss" in out and "(best)" in out
    assert ckpt.is_file() and usd.is_file()
