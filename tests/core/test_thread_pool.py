"""The CPU thread pool: how many threads, which launches split, and that resizing it loses nothing."""

import os
import subprocess
import sys
import time

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
    sk.set_threads(2, adaptive=False)
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


def test_set_threads_refuses_a_non_bool_adaptive_flag():
    before = sk.get_threads()
    with pytest.raises(TypeError, match=r"adaptive=...\): expected True or False, got 'no'"):
        sk.set_threads(2, adaptive="no")
    assert sk.get_threads() == before


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


@sk.kernel
def bin_counts(index: sk.array(dtype=int), bins: sk.array(dtype=sk.int64)):
    bins[index[sk.tid()]] += 1


def test_every_element_runs_exactly_once_with_another_process_busy(busy_machine):
    # Chunks are claimed by whichever thread comes, the caller included; a worker without a
    # core must neither lose nor repeat one, split or with private accumulators.
    before = sk.get_threads()
    index = sk.from_numpy((np.arange(300_000) % 97).astype(np.int32))
    try:
        for threads in range(1, 9):
            sk.set_threads(threads)
            for n in (20_000, 100_003, 300_000):
                hist = sk.zeros(n, dtype=int)
                sk.launch(count_once, n, inputs=[hist])
                assert np.array_equal(hist.numpy(), np.ones(n)), (threads, n)
                bins = sk.zeros(97, dtype=sk.int64)
                sk.launch(bin_counts, n, inputs=[index, bins])
                assert np.array_equal(bins.numpy(), np.bincount(np.arange(n) % 97, minlength=97)), (threads, n)
    finally:
        sk.set_threads(before)


@sk.kernel
def scatter_float(x: sk.array(dtype=sk.float32), index: sk.array(dtype=int), out: sk.array(dtype=sk.float32)):
    i = sk.tid()
    out[index[i]] += x[i]


def chunk_order_sum(x: np.ndarray, index: np.ndarray, bins: int, chunks: int) -> np.ndarray:
    """What a private launch must give, to the bit: chunk 0 adds into the array, chunks 1.. into
    zeroed copies, element by element in float32; the copies are added in chunk order."""
    n = len(x)
    total = np.zeros(bins, np.float32)
    for k in range(chunks):
        part = slice(n * k // chunks, n * (k + 1) // chunks)
        copy = total if k == 0 else np.zeros(bins, np.float32)
        np.add.at(copy, index[part], x[part])
        if k:
            total += copy
    return total


def test_private_sums_are_reduced_in_chunk_order_whichever_thread_runs_which_chunk(busy_machine):
    before = sk.get_threads()
    rng = np.random.default_rng(5)
    n = 200_000
    x = rng.standard_normal(n).astype(np.float32)
    index = rng.integers(0, 300, n).astype(np.int32)
    try:
        for threads in (2, 3, 4):
            sk.set_threads(threads)
            want = chunk_order_sum(x, index, 300, threads)
            for _ in range(10):
                out = sk.zeros(300, dtype=sk.float32)
                counts = launch_counts()
                sk.launch(scatter_float, n, inputs=[sk.from_numpy(x), sk.from_numpy(index), out])
                assert launch_counts()["private"] == counts["private"] + 1
                np.testing.assert_array_equal(out.numpy(), want)
    finally:
        sk.set_threads(before)


def _system_load_is_about_our_cores() -> bool:
    """What the pool checks before trusting /proc/loadavg (pool.h, load_is_ours)."""
    return (os.path.exists("/proc/loadavg") and hasattr(os, "sched_getaffinity")
            and len(os.sched_getaffinity(0)) == os.sysconf("SC_NPROCESSORS_ONLN"))


@pytest.mark.skipif(not _system_load_is_about_our_cores(), reason="the system's runnable-thread count is not "
                    "about this process's cores here (a container pinned to some of a host's CPUs)")
def test_the_pool_runs_launches_alone_while_another_process_wants_a_core(busy_machine):
    # One busy process beside a pool with a thread per core: a worker would wait for a core,
    # so splitting a launch would hold it up for a scheduler slice. The caller sees it in
    # the runnable-thread count within two looks (8 ms) and runs launches alone.
    before = sk.get_threads()
    x = sk.zeros(50_000, dtype=sk.float32)
    y = sk.zeros(50_000, dtype=sk.float32)
    try:
        sk.set_threads(len(os.sched_getaffinity(0)) if len(os.sched_getaffinity(0)) > 1 else 2)
        deadline = time.monotonic() + 0.05
        while time.monotonic() < deadline:  # the busy process gets going; the pool looks
            sk.launch(heavy, 50_000, inputs=[x], outputs=[y])
        counts = launch_counts()
        for _ in range(40):
            sk.launch(heavy, 50_000, inputs=[x], outputs=[y])
        ran = {k: v - counts[k] for k, v in launch_counts().items()}
        assert ran["inline"] >= 36, ran
    finally:
        sk.set_threads(before)
