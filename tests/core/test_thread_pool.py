"""The CPU thread pool: which launches split, and that resizing it loses nothing."""

import numpy as np

import simkit as sk
from simkit.core import compiler
from simkit.core import launch as L


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
    rt = compiler.runtime()
    before = rt.sk_get_threads()
    rt.sk_set_threads(2)
    try:
        n = L.grain_of(heavy.build_ir(), False)
        x, y = sk.zeros(n, dtype=sk.float32), sk.zeros(n, dtype=sk.float32)
        counts = compiler.launch_counts()
        sk.launch(heavy, n, inputs=[x, y])
        assert compiler.launch_counts()["split"] == counts["split"] + 1
    finally:
        rt.sk_set_threads(before)


def test_a_pool_resized_between_launches_runs_every_element_exactly_once():
    # New workers once picked up the dispatch that ran before they existed.
    rt = compiler.runtime()
    before = rt.sk_get_threads()
    n = 200_000
    try:
        for threads in (4, 1, 3, 2, 4, 2):
            rt.sk_set_threads(threads)
            assert rt.sk_get_threads() == threads
            hist = sk.zeros(n, dtype=int)
            sk.launch(count_once, n, inputs=[hist])
            assert np.array_equal(hist.numpy(), np.ones(n))
    finally:
        rt.sk_set_threads(before)
