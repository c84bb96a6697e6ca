"""Sub-array views in kernels: ``a[i]`` of a 2-D array is its row i, a 1-D array sharing memory
and gradient with ``a``; readable, writable, differentiable, and passable to functions."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.func
def sum_sq(r: sk.array(dtype=F64)) -> F64:
    s = F64(0.0)
    for j in range(r.shape[0]):
        s += r[j] * r[j]
    return s


@sk.func
def scale_row(r: sk.array(dtype=F64), c: F64):
    for j in range(len(r)):
        r[j] = r[j] * c


@sk.kernel
def row_norms(a: sk.array(dtype=F64, ndim=2), out: sk.array(dtype=F64)):
    i = sk.tid()
    out[i] = sum_sq(a[i]) + a[i][1]


@sk.kernel
def write_rows(a: sk.array(dtype=F64, ndim=2), b: sk.array(dtype=F64, ndim=2)):
    i = sk.tid()
    row = a[i]
    dst = b[i]
    dst[0] = row[0] * row[1]
    b[i][1] = sk.sin(row[1])


@sk.kernel
def add_rows(a: sk.array(dtype=F64, ndim=2), b: sk.array(dtype=F64, ndim=2)):
    i = sk.tid()
    for j in range(2):
        b[0][j] += a[i][j] * a[i][j]


@sk.kernel
def scale_in_place(a: sk.array(dtype=F64, ndim=2), c: F64):
    scale_row(a[sk.tid()], c)


@sk.kernel
def planes(a: sk.array(dtype=F64, ndim=3), out: sk.array(dtype=F64, ndim=2)):
    i, j = sk.tid()
    plane = a[i]
    line = a[i, j]
    out[i, j] = plane[j, 0] * line[1] + F64(plane.shape[0] * 10 + len(line))


@sk.kernel
def vec_rows(v: sk.array(dtype=sk.vec3, ndim=2), out: sk.array(dtype=float)):
    i = sk.tid()
    r = v[i]
    out[i] = sk.dot(r[0], r[1])


@sk.kernel
def row_of_out_of_range(a: sk.array(dtype=F64, ndim=2), out: sk.array(dtype=F64), k: int):
    out[0] = a[k][0]


def _rows(n=3):
    return np.linspace(-1.0, 2.0, n * 2).reshape(n, 2)


def test_row_read_through_a_function():
    a = _rows()
    out = sk.zeros(3, dtype=F64)
    sk.launch(row_norms, 3, inputs=[sk.array(a, dtype=F64), out])
    np.testing.assert_allclose(out.numpy(), (a * a).sum(1) + a[:, 1])


def test_row_read_gradient_matches_finite_differences():
    r = sk.autograd.gradcheck(row_norms, 3, inputs=[sk.array(_rows(), dtype=F64)], outputs=[sk.zeros(3, dtype=F64)],
                              eps=1e-6)
    assert r.ok, r


def test_rows_written_through_views():
    a = _rows()
    b = sk.zeros((3, 2), dtype=F64)
    sk.launch(write_rows, 3, inputs=[sk.array(a, dtype=F64), b])
    np.testing.assert_allclose(b.numpy(), np.stack([a[:, 0] * a[:, 1], np.sin(a[:, 1])], 1))


def test_row_write_gradient_matches_finite_differences():
    r = sk.autograd.gradcheck(write_rows, 3, inputs=[sk.array(_rows(), dtype=F64)],
                              outputs=[sk.zeros((3, 2), dtype=F64)], eps=1e-6)
    assert r.ok, r


def test_atomic_add_through_a_view_and_its_gradient():
    a = _rows()
    b = sk.zeros((1, 2), dtype=F64)
    sk.launch(add_rows, 3, inputs=[sk.array(a, dtype=F64), b])
    np.testing.assert_allclose(b.numpy()[0], (a * a).sum(0))
    r = sk.autograd.gradcheck(add_rows, 3, inputs=[sk.array(a, dtype=F64)], outputs=[sk.zeros((1, 2), dtype=F64)],
                              eps=1e-6)
    assert r.ok, r


def test_function_writes_into_the_row_it_was_passed():
    a = sk.array(_rows(), dtype=F64)
    sk.launch(scale_in_place, 3, inputs=[a, 2.0])
    np.testing.assert_allclose(a.numpy(), 2.0 * _rows())


def test_views_of_a_3d_array_and_their_shapes():
    a = np.arange(24.0).reshape(2, 3, 4)
    out = sk.zeros((2, 3), dtype=F64)
    sk.launch(planes, (2, 3), inputs=[sk.array(a, dtype=F64), out])
    np.testing.assert_allclose(out.numpy(), a[:, :, 0] * a[:, :, 1] + 34.0)


@pytest.mark.cpu_only("a numpy array passed to a launch lives on the CPU")
def test_rows_of_a_strided_numpy_array():
    """A transposed numpy array is not row-major: the view follows its byte strides."""
    base = np.arange(8.0).reshape(2, 4)
    out = sk.zeros(4, dtype=F64)
    sk.launch(row_norms, 4, inputs=[base.T, out])
    np.testing.assert_allclose(out.numpy(), (base.T ** 2).sum(1) + base.T[:, 1])


def test_rows_of_vectors():
    v = np.arange(12.0, dtype=np.float32).reshape(2, 2, 3)
    out = sk.zeros(2)
    sk.launch(vec_rows, 2, inputs=[sk.array(v, dtype=sk.vec3), out])
    np.testing.assert_allclose(out.numpy(), (v[:, 0] * v[:, 1]).sum(1))


def test_assigning_a_whole_row_is_a_compile_error():
    @sk.kernel
    def assign_row(a: sk.array(dtype=F64, ndim=2), b: sk.array(dtype=F64, ndim=2)):
        a[0] = b[0]

    with pytest.raises(sk.CompileError, match="not assignable as a whole"):
        assign_row.build_ir()


def test_out_of_range_row_is_an_index_error_in_debug_mode(monkeypatch):
    monkeypatch.setattr(sk.config, "mode", "debug")
    with pytest.raises(IndexError, match=r"index \(5, 0\) out of bounds for array of shape \(3, 2\) \(dimension 0\)"):
        sk.launch(row_of_out_of_range, 1, inputs=[sk.zeros((3, 2), dtype=F64), sk.zeros(1, dtype=F64), 5])


@pytest.mark.cpu_only("compiles with NVRTC; launches nothing")
@pytest.mark.parametrize("kernel", [row_norms, write_rows, add_rows, scale_in_place, planes, vec_rows],
                         ids=lambda k: k.name)
def test_view_kernels_compile_to_ptx(kernel):
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")
    fwd, bwd = sk.cuda.entry_points(kernel)
    ptx = sk.cuda.ptx(kernel)
    assert f".entry {fwd}(" in ptx and f".entry {bwd}(" in ptx
