"""Kernels flush subnormal float32 results to zero on the CPU as on the GPU, and leave the caller's mode alone."""

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def halve(x: sk.array(dtype=sk.float32), y: sk.array(dtype=sk.float32)):
    i = sk.tid()
    y[i] = x[i] * 0.5


@pytest.mark.not_on_fake_driver("GPU arithmetic")
def test_a_subnormal_result_is_flushed_to_zero_whole_grid_and_split():
    x = sk.array(np.full(100_000, 1.0e-38, dtype=np.float32))   # half of it is subnormal
    before = sk.get_threads()
    try:
        for threads in (1, 4):
            sk.set_threads(threads)
            y = sk.full(100_000, 7.0)
            sk.launch(halve, 100_000, inputs=[x, y])
            assert not y.numpy().any()
    finally:
        sk.set_threads(before)


@pytest.mark.cpu_only("the launching thread's floating-point mode")
def test_numpy_on_the_launching_thread_still_sees_subnormals_after_a_launch():
    sk.launch(halve, 4, inputs=[sk.ones(4), sk.zeros(4)])
    assert np.float32(1.0e-38) * np.float32(0.5) > 0.0
