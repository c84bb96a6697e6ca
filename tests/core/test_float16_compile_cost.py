"""The compile cost of float16 kernels on the CPU: a half kernel compiles in a small multiple of its
float32 twin's time (the half conversions stay out of line; forced inline they made g++ take
minutes on a module of matrix kernels)."""

import resource
import time

import numpy as np
import pytest

import simkit as sk

pytestmark = pytest.mark.cpu_only("g++'s time on the CPU module; NVRTC inlines as it likes")


def _matrix_ops(M):
    salt = float(time.time_ns() % 60001)  # a new source each run: compiled, never a cache hit

    @sk.kernel
    def matrix_ops(a: sk.array(dtype=M), b: sk.array(dtype=M), out: sk.array(dtype=M)):
        i = sk.tid()
        m = a[i]
        n = b[i]
        r = -m + n * m - sk.transpose(n) * m
        r = r - m * sk.transpose(m) + n - sk.transpose(r) * n
        out[i] = r * r - sk.transpose(m) * n + -r * salt

    return matrix_ops


def _compile_cpu_seconds(M) -> float:
    k = _matrix_ops(M)
    a = sk.array(np.full((2,) + M._sk_shape, 0.5), dtype=M)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sk.launch(k, 2, inputs=[a, a, sk.zeros(2, dtype=M)])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def test_a_float16_matrix_kernel_compiles_within_a_few_times_its_float32_twin():
    t16, t32 = _compile_cpu_seconds(sk.mat33h), _compile_cpu_seconds(sk.mat33)
    assert t16 < 4.0 * t32 + 1.0
