"""A vector or quaternion indexed by a value known only at run time: reads and writes the
component the index names, differentiably, and an index out of range touches no memory
outside the composite (it reads component 0 and writes nothing)."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64
vec3d = sk.vec3d
quatd = sk.quatd


@sk.kernel
def pick(v: sk.array(dtype=vec3d), which: sk.array(dtype=sk.int32), out: sk.array(dtype=F64)):
    i = sk.tid()
    x = v[i]
    out[i] = x[which[i]] * x[which[i]]


@sk.kernel
def flip(v: sk.array(dtype=vec3d), which: sk.array(dtype=sk.int32), out: sk.array(dtype=vec3d)):
    i = sk.tid()
    x = v[i]
    k = which[i]
    x[k] = -2.0 * x[k] * x[(k + 1) % 3]
    out[i] = x


@sk.kernel
def pick_quat(q: sk.array(dtype=quatd), which: sk.array(dtype=sk.int32), out: sk.array(dtype=F64)):
    i = sk.tid()
    out[i] = q[i][which[i]]


def _vectors(n=6, seed=3):
    return np.random.default_rng(seed).normal(size=(n, 3))


def test_a_run_time_index_reads_the_component_it_names():
    v, which = _vectors(), np.array([0, 1, 2, 2, 1, 0], dtype=np.int32)
    out = sk.zeros(6, dtype=F64)
    sk.launch(pick, 6, inputs=[sk.array(v, dtype=vec3d), sk.array(which, dtype=sk.int32)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), v[np.arange(6), which] ** 2)


def test_a_run_time_index_reads_quaternion_components():
    q, which = np.random.default_rng(1).normal(size=(4, 4)), np.array([3, 2, 1, 0], dtype=np.int32)
    out = sk.zeros(4, dtype=F64)
    sk.launch(pick_quat, 4, inputs=[sk.array(q, dtype=quatd), sk.array(which, dtype=sk.int32)],
              outputs=[out])
    np.testing.assert_array_equal(out.numpy(), q[np.arange(4), which])


def test_a_run_time_index_writes_only_the_component_it_names():
    v, which = _vectors(), np.array([0, 1, 2, 0, 1, 2], dtype=np.int32)
    out = sk.zeros(6, dtype=vec3d)
    sk.launch(flip, 6, inputs=[sk.array(v, dtype=vec3d), sk.array(which, dtype=sk.int32)], outputs=[out])
    expected = v.copy()
    rows = np.arange(6)
    expected[rows, which] = -2.0 * v[rows, which] * v[rows, (which + 1) % 3]
    np.testing.assert_array_equal(out.numpy(), expected)


def _flip_loss(v, which, weights):
    out = v.copy()
    rows = np.arange(len(v))
    out[rows, which] = -2.0 * v[rows, which] * v[rows, (which + 1) % 3]
    return float(np.sum(weights * out))


def test_gradients_through_run_time_component_reads_and_writes_match_finite_differences():
    v, which = _vectors(), np.array([2, 0, 1, 1, 2, 0], dtype=np.int32)
    weights = np.random.default_rng(7).normal(size=(6, 3))
    x = sk.array(v, dtype=vec3d, requires_grad=True)
    out = sk.zeros(6, dtype=vec3d, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(flip, 6, inputs=[x, sk.array(which, dtype=sk.int32)], outputs=[out])
    tape.backward(grads={out: weights})
    fd = np.zeros_like(v)
    h = 1e-6
    for idx in np.ndindex(*v.shape):
        plus, minus = v.copy(), v.copy()
        plus[idx] += h
        minus[idx] -= h
        fd[idx] = (_flip_loss(plus, which, weights) - _flip_loss(minus, which, weights)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-7, atol=1e-9)


def test_an_index_out_of_range_reads_component_zero_and_writes_nothing():
    v = _vectors(2)
    which = np.array([7, -1], dtype=np.int32)
    out = sk.zeros(2, dtype=F64)
    sk.launch(pick, 2, inputs=[sk.array(v, dtype=vec3d), sk.array(which, dtype=sk.int32)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), v[:, 0] ** 2)
    flipped = sk.zeros(2, dtype=vec3d)
    sk.launch(flip, 2, inputs=[sk.array(v, dtype=vec3d), sk.array(which, dtype=sk.int32)], outputs=[flipped])
    np.testing.assert_array_equal(flipped.numpy(), v)


def test_an_index_out_of_range_in_debug_mode_raises_naming_kernel_and_line():
    v = sk.array(_vectors(2), dtype=vec3d)
    which = sk.array(np.array([1, 3], dtype=np.int32), dtype=sk.int32)
    sk.config.mode = "debug"
    try:
        with pytest.raises(IndexError, match=r"kernel 'pick' \(.*test_component_index.py:\d+\): a vector or quaternion "
                                             r"component index out of range"):
            sk.launch(pick, 2, inputs=[v, which], outputs=[sk.zeros(2, dtype=F64)])
        with pytest.raises(IndexError, match="component index out of range"):
            sk.launch(flip, 2, inputs=[v, which], outputs=[sk.zeros(2, dtype=vec3d)])
    finally:
        sk.config.mode = "release"


@sk.kernel
def from_the_end(v: sk.array(dtype=vec3d), m: sk.array(dtype=sk.mat33d), out: sk.array(dtype=vec3d)):
    i = sk.tid()
    x = v[i]
    a = m[i]
    x[-1] = x[-3] * a[-1, -2]
    x[-2] += a[-1][0]
    out[i] = x


def test_a_negative_constant_index_counts_from_the_end_as_in_python_and_warp():
    rng = np.random.default_rng(4)
    v, m = rng.normal(size=(3, 3)), rng.normal(size=(3, 3, 3))
    va, ma = sk.array(v, dtype=vec3d, requires_grad=True), sk.array(m, dtype=sk.mat33d, requires_grad=True)
    out = sk.zeros(3, dtype=vec3d, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(from_the_end, 3, inputs=[va, ma], outputs=[out])
    want = v.copy()
    want[:, 2] = v[:, 0] * m[:, 2, 1]
    want[:, 1] += m[:, 2, 0]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    tape.backward(grads={out: np.ones((3, 3))})
    np.testing.assert_allclose(va.grad.numpy(), np.stack([1.0 + m[:, 2, 1], np.ones(3), np.zeros(3)], 1), rtol=1e-12)


def test_a_constant_index_past_either_end_is_refused_at_compile_time():
    @sk.kernel
    def too_far(v: sk.array(dtype=vec3d)):
        x = v[0]
        v[0] = sk.vec3d(x[-4], 0.0, 0.0)

    with pytest.raises(sk.CompileError, match="index -4 out of range for length 3"):
        sk.launch(too_far, 1, inputs=[sk.zeros(1, dtype=vec3d)])


def _narrow_index_kernel(M):
    def narrow_indices(a: M.array(dtype=float), out: M.array(dtype=float), v: M.vec3):
        x = a[M.uint8(1)] + v[M.int16(2)] + v[M.uint64(0)]
        M.atomic_min(out, M.uint32(0), x)
        M.atomic_add(out, M.int64(1), x)
    return M.kernel(narrow_indices)


def _run_narrow_indices(M):
    a = M.array(np.array([1.0, 2.0], np.float32), dtype=float)
    out = M.array(np.array([100.0, 0.0], np.float32), dtype=float)
    M.launch(_narrow_index_kernel(M), 1, inputs=[a, out, M.vec3(10.0, 0.0, 3.0)])
    return out.numpy()


def test_constant_indices_of_any_integer_type_index_arrays_components_and_atomics_as_in_warp():
    np.testing.assert_array_equal(_run_narrow_indices(sk), [15.0, 15.0])


def test_constant_indices_of_any_integer_type_agree_with_warp():
    wp = pytest.importorskip("warp")
    wp.set_device("cpu")
    np.testing.assert_array_equal(_run_narrow_indices(sk), _run_narrow_indices(wp))
