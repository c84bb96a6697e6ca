"""``simkit sweep --plot``: the metric of the results table against each swept key (the
figure's data and layout, without Ray), and the option's usage errors."""

import struct

import pytest

pytest.importorskip("matplotlib")

from simkit.cli import main  # noqa: E402
from simkit.scene.sweep_plot import plot_sweep, sweep_series  # noqa: E402

ROWS = [
    {"contact.mu": 0.5, "sim.integrator": "xpbd", "status": "ok", "com_x": 3.0},
    {"contact.mu": 0.1, "sim.integrator": "xpbd", "status": "ok", "com_x": 4.0},
    {"contact.mu": 0.1, "sim.integrator": "euler", "status": "ok", "com_x": 5.0},
    {"contact.mu": 0.5, "sim.integrator": "euler", "status": "failed", "com_x": None},
]


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_series_hold_the_metric_against_each_key_one_curve_per_value_of_the_others():
    series = sweep_series(ROWS, ["contact.mu", "sim.integrator"], "com_x")
    assert series["contact.mu"] == {"sim.integrator=xpbd": [(0.1, 4.0), (0.5, 3.0)],
                                    "sim.integrator=euler": [(0.1, 5.0)]}          # the failed run is left out
    assert series["sim.integrator"] == {"contact.mu=0.5": [("xpbd", 3.0)],
                                        "contact.mu=0.1": [("xpbd", 4.0), ("euler", 5.0)]}


def test_plot_has_one_subplot_per_key(tmp_path):
    one = plot_sweep(ROWS, ["contact.mu"], "com_x", tmp_path / "one.png", title="ball")
    two = plot_sweep(ROWS, ["contact.mu", "sim.integrator"], "com_x", tmp_path / "two.png")
    (w1, h1), (w2, h2) = png_size(one), png_size(two)
    assert h1 == h2 and abs(w2 - 2 * w1) <= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.png", "two.png"]     # no temporary file left


@pytest.mark.parametrize("args, words", [
    (["--set", "contact.mu=0.1,0.5", "--metric", "com_x"], "--metric: chooses what --plot draws; add --plot"),
    (["--set", "contact.mu=0.1,0.5", "--plot", "--metric", "speed"], "--metric speed: not a column"),
    (["--set", "contact.mu=0.1,0.5", "--run-only", "--plot", "--metric", "loss"], "--metric loss: not a column"),
    (["--plot"], "give at least one --set"),
])
def test_sweep_plot_usage_errors_exit_2_before_anything_runs(scenes_dir, tmp_path, capsys, args, words):
    out = tmp_path / "s"
    assert main(["sweep", str(scenes_dir / "ball_bounce.toml"), "--out", str(out), "--quiet", *args]) == 2
    assert words in capsys.readouterr().err
    assert not out.exists()
