"""``for i in reversed(range(a, b, step))`` in kernels: the same indices as Python, last first."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def fold_backwards(x: sk.array(dtype=F64), out: sk.array(dtype=F64), a: int, b: int, c: int):
    acc = F64(0.0)
    for i in reversed(range(a, b, c)):
        acc = acc * 0.5 + x[i] * x[i]  # depends on the order of the indices
    out[0] = acc


@sk.kernel
def fold_backwards_const(x: sk.array(dtype=F64), out: sk.array(dtype=F64)):
    acc = F64(0.0)
    for i in reversed(range(1, 10, 3)):
        acc = acc * 0.5 + x[i]
    out[0] = acc


@sk.kernel
def fold_backwards_long(x: sk.array(dtype=F64), out: sk.array(dtype=F64)):
    acc = F64(0.0)
    for i in reversed(range(0, 200, 7)):
        acc = acc * 0.5 + x[i % 10]
    out[0] = acc


def _fold(x, r, square=True):
    acc = 0.0
    for i in reversed(r):
        acc = acc * 0.5 + (x[i] * x[i] if square else x[i])
    return acc


X = np.linspace(0.5, 2.0, 10)


@pytest.mark.parametrize("abc", [(0, 10, 1), (1, 10, 3), (9, -1, -2), (8, 0, -3), (2, 9, 2), (5, 5, 1),
                                 (3, 1, 1), (0, 0, -1), (1, 3, 5)])
def test_dynamic_bounds_visit_pythons_indices_in_reverse(abc):
    out = sk.zeros(1, dtype=F64)
    sk.launch(fold_backwards, 1, inputs=[sk.array(X, dtype=F64), out, *abc])
    assert out.numpy()[0] == pytest.approx(_fold(X, range(*abc)), rel=1e-14)


def test_one_argument_range_runs_backwards():
    out = sk.zeros(1, dtype=F64)
    sk.launch(fold_backwards, 1, inputs=[sk.array(X, dtype=F64), out, 0, 4, 1])
    assert out.numpy()[0] == pytest.approx(_fold(X, range(4)), rel=1e-14)


def test_constant_bounds_unrolled():
    out = sk.zeros(1, dtype=F64)
    sk.launch(fold_backwards_const, 1, inputs=[sk.array(X, dtype=F64), out])
    assert out.numpy()[0] == pytest.approx(_fold(X, range(1, 10, 3), square=False), rel=1e-14)


def test_constant_bounds_too_long_to_unroll():
    out = sk.zeros(1, dtype=F64)
    sk.launch(fold_backwards_long, 1, inputs=[sk.array(X, dtype=F64), out])
    want = 0.0
    for i in reversed(range(0, 200, 7)):
        want = want * 0.5 + X[i % 10]
    assert out.numpy()[0] == pytest.approx(want, rel=1e-14)


@pytest.mark.parametrize("abc", [(1, 10, 3), (9, -1, -2)])
def test_reversed_loop_gradient_matches_finite_differences(abc):
    r = sk.autograd.gradcheck(fold_backwards, 1, inputs=[sk.array(X, dtype=F64)],
                              outputs=[sk.zeros(1, dtype=F64), *abc], input_output_mask=[("x", "out")], eps=1e-6)
    assert r.ok, r


def test_reversed_needs_a_range():
    @sk.kernel
    def bad(x: sk.array(dtype=F64)):
        for i in reversed(x):
            x[i] = 0.0

    with pytest.raises(sk.CompileError, match=r"reversed\(range"):
        bad.build_ir()


def test_constant_zero_step_is_a_compile_error():
    @sk.kernel
    def zero_step(x: sk.array(dtype=F64)):
        for i in reversed(range(0, 4, 0)):
            x[i] = 0.0

    with pytest.raises(sk.CompileError, match="step must not be zero"):
        zero_step.build_ir()


@pytest.mark.cpu_only("compiles with NVRTC; launches nothing")
@pytest.mark.parametrize("kernel", [fold_backwards, fold_backwards_const, fold_backwards_long], ids=lambda k: k.name)
def test_reversed_loops_compile_to_ptx(kernel):
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")
    fwd, bwd = sk.cuda.entry_points(kernel)
    ptx = sk.cuda.ptx(kernel)
    assert f".entry {fwd}(" in ptx and f".entry {bwd}(" in ptx
