"""``simkit run`` says when it compiles kernels (a cold compile must not look like a hang) and
leaves the compile out of its steps/s. Run as ``python -m simkit`` in subprocesses with a
cache folder of their own, first empty, then warm."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

SCENES = Path(__file__).resolve().parents[2] / "scenes"


def run_cli(scene, cache, usd) -> SimpleNamespace:
    env = dict(os.environ, SIMKIT_CACHE_DIR=str(cache))
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "simkit", "run", str(scene), "--frames", "3", "--usd", str(usd)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return SimpleNamespace(stdout=out.stdout, stderr=out.stderr, wall=time.perf_counter() - started)


@pytest.fixture(scope="module")
def cold_then_warm(tmp_path_factory):
    """The same run twice: with an empty cache folder, then with the one it filled."""
    tmp = tmp_path_factory.mktemp("first_run")
    cold = run_cli(SCENES / "ball_bounce.toml", tmp / "cache", tmp / "cold.usda")
    warm = run_cli(SCENES / "ball_bounce.toml", tmp / "cache", tmp / "warm.usda")
    return cold, warm


@pytest.mark.cpu_only("the CLI in a subprocess")
def test_a_cold_run_says_on_stderr_that_it_compiles_kernels_the_first_time(cold_then_warm):
    cold, _ = cold_then_warm
    # one module, or the step's modules compiling at once (sk.compile_ahead), named in one line
    what = r"\d+ kernels? of (module|\d+ modules at once:) simkit\.kernels\.\S+"
    assert re.search(rf"simkit: compiling {what}.* \(first run only\)", cold.stderr)
    assert re.search(rf"simkit: compiled {what}.* in [\d.]+ s", cold.stderr)


@pytest.mark.cpu_only("the CLI in a subprocess")
def test_a_run_on_a_warm_cache_says_nothing_of_compiling(cold_then_warm):
    _, warm = cold_then_warm
    assert "compiling" not in warm.stderr + warm.stdout and "compiled" not in warm.stderr + warm.stdout


@pytest.mark.cpu_only("the CLI in a subprocess")
def test_the_steps_per_second_of_a_cold_run_leave_the_compile_out(cold_then_warm):
    cold, _ = cold_then_warm
    m = re.search(r"\((\d+) steps of [\d.e-]+ s\) in ([\d.]+) s, (\d+) steps/s \(and ([\d.]+) s compiling kernels, "
                  r"first run only\)", cold.stdout)
    assert m, cold.stdout
    steps, seconds, rate, compiling = int(m[1]), float(m[2]), int(m[3]), float(m[4])
    assert compiling > 0.5 and seconds + compiling < cold.wall
    assert abs(rate - steps / seconds) <= max(1.0, 0.02 * rate)
