"""The CPU thread pool: how many threads, which launches split, and that resizing it loses nothing."""

import os
import subprocess
import sys

import numpy as np
import pytest

import simkit as sk
from simkit.core.threads import launch_counts
from simkit.core import launch as L

pytestmark = pytest.mark.cpu_only("the CPU thread pool")


@sk.kernel
def count_once(hist: sk.array(dtype=int)):
    hist[sk.tid()] += 1


@sk.kernel
def heavy(x: sk.array(dtype=sk.float32), y: sk.array(dtype=sk.float32)):
    i = sk.tid()
    v = x[i]
    for _k in range(40):
        v = sk.sin(v) * 0.5 + sk.cos(v) * 0.25
    y[i] = v


def test_a_heavier_kernel_splits_from_a_smaller_grid():
    light, costly = L.grain_of(count_once.build_ir(), False), L.grain_of(heavy.build_ir(), False)
    assert costly < light
    assert L.grain_of(heavy.build_ir(), True) <= costly  # its adjoint is more work still


def test_a_grid_just_above_a_heavy_kernels_grain_runs_split():
    before = sk.get_threads()
    sk.set_threads(2)
    try:
        n = L.grain_of(heavy.build_ir(), False)
        x, y = sk.zeros(n, dtype=sk.float32), sk.zeros(n, dtype=sk.float32)
        counts = launch_counts()
        sk.launch(heavy, n, inputs=[x, y])
        assert launch_counts()["split"] == counts["split"] + 1
    finally:
        sk.set_threads(before)


def test_a_pool_resized_between_launches_runs_every_element_exactly_once():
    # New workers once picked up the dispatch that ran before they existed.
    before = sk.get_threads()
    n = 200_000
    try:
        for threads in (4, 1, 3, 2, 4, 2):
            sk.set_threads(threads)
            assert sk.get_threads() == threads
            hist = sk.zeros(n, dtype=int)
            sk.launch(count_once, n, inputs=[hist])
            assert np.array_equal(hist.numpy(), np.ones(n))
    finally:
        sk.set_threads(before)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_set_threads_refuses_anything_but_a_positive_int(bad):
    before = sk.get_threads()
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        sk.set_threads(bad)
    assert sk.get_threads() == before


def test_simkit_num_threads_sets_the_pool_size_before_the_first_launch():
    env = dict(os.environ, SIMKIT_NUM_THREADS="3")
    out = subprocess.run([sys.executable, "-c", "import simkit as sk; print(sk.get_threads())"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "3"


def test_a_malformed_simkit_num_threads_is_a_clear_error():
    env = dict(os.environ, SIMKIT_NUM_THREADS="many")
    proc = subprocess.run([sys.executable, "-c", "import simkit as sk; sk.get_threads()"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "SIMKIT_NUM_THREADS must be a whole number >= 1, got 'many'" in proc.stderr


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_the_default_pool_has_one_thread_per_core_the_process_may_use():
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "import simkit as sk; print(sk.get_threads())")
    env = {k: v for k, v in os.environ.items() if k != "SIMKIT_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"
