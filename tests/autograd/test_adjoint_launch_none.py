"""A None entry in adj_inputs/adj_outputs of a hand-run adjoint launch means "this array's own
.grad", as in Warp (issue 28, item 1): code ported from Warp relies on it.

Each behaviour is checked against its closed form; where warp-lang is importable, the same
launch is also run through Warp on its CPU device and the two gradients compared."""

import functools

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def square(a: sk.array(dtype=F64), b: sk.array(dtype=F64)):
    i = sk.tid()
    b[i] = a[i] * a[i]


@sk.kernel
def copy_scaled(a: sk.array(dtype=F64), s: F64, b: sk.array(dtype=F64)):
    i = sk.tid()
    b[i] = s * a[i]


@sk.kernel
def add_cube(a: sk.array(dtype=F64), b: sk.array(dtype=F64)):
    i = sk.tid()
    b[i] += a[i] * a[i] * a[i]


@sk.kernel
def square_2d(a: sk.array(dtype=F64, ndim=2), b: sk.array(dtype=F64, ndim=2)):
    i, j = sk.tid()
    b[i, j] = a[i, j] * a[i, j]


@sk.kernel
def product(a: sk.array(dtype=F64), c: sk.array(dtype=F64), b: sk.array(dtype=F64)):
    i = sk.tid()
    b[i] = a[i] * c[i]


@sk.kernel
def gather(idx: sk.array(dtype=sk.int32), a: sk.array(dtype=F64), b: sk.array(dtype=F64)):
    i = sk.tid()
    b[i] = a[idx[i]] * 2.0


def _f64(values, grad=False):
    return sk.array(np.asarray(values, dtype=np.float64), dtype=F64, requires_grad=grad)


def test_none_entries_accumulate_into_the_arrays_own_grads():
    """Issue 28's example: b.grad = ones, then a.grad = d(sum a^2)/da = 2a."""
    a, b = _f64([1.0, 2.0, 3.0], grad=True), _f64([0.0, 0.0, 0.0], grad=True)
    sk.launch(square, 3, inputs=[a], outputs=[b])
    b.grad = sk.ones(3, dtype=F64)
    sk.launch(square, 3, inputs=[a], outputs=[b], adjoint=True, adj_inputs=[None], adj_outputs=[None])
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.0, 0.0, 0.0])  # b[i] = ... consumed its seed


def test_none_for_a_scalar_argument_is_accepted():
    a, b = _f64([1.0, -2.0], grad=True), _f64([0.0, 0.0], grad=True)
    b.grad = _f64([1.0, 3.0])
    sk.launch(copy_scaled, 2, inputs=[a, 2.5], outputs=[b], adjoint=True, adj_inputs=[None, None],
              adj_outputs=[None])
    np.testing.assert_array_equal(a.grad.numpy(), [2.5, 7.5])


def test_none_and_an_explicit_buffer_mix():
    a, b = _f64([1.0, 2.0], grad=True), _f64([0.0, 0.0])
    seed = _f64([1.0, -1.0])
    sk.launch(square, 2, inputs=[a], outputs=[b], adjoint=True, adj_inputs=[None], adj_outputs=[seed])
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, -4.0])
    assert b.grad is None


def test_the_same_array_as_input_and_output_with_none_entries():
    """a[i] = a[i]^2 in place: the seed in a.grad is consumed by the store, then the read's
    adjoint adds 2a * seed: a.grad = 2a * seed."""
    a = _f64([1.0, 2.0, 3.0], grad=True)
    a.grad = _f64([1.0, 0.5, -1.0])
    sk.launch(square, 3, inputs=[a], outputs=[a], adjoint=True, adj_inputs=[None], adj_outputs=[None])
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0, -6.0])


def test_the_same_array_accumulated_into_itself_with_none_entries():
    """a[i] += a[i]^3: the += keeps the seed and the read adds 3a^2 * seed: (1 + 3a^2) * seed."""
    a = _f64([1.0, 2.0], grad=True)
    a.grad = _f64([1.0, 2.0])
    sk.launch(add_cube, 2, inputs=[a], outputs=[a], adjoint=True, adj_inputs=[None], adj_outputs=[None])
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 26.0])


@pytest.mark.cpu_only("the views are numpy views of host memory")
def test_gradients_land_in_a_column_of_a_2d_array():
    """A 1-d view a = base[:, 1] whose grad is the same view of base's grad: only that column moves."""
    base, gbase = np.arange(12.0).reshape(3, 4), np.zeros((3, 4))
    a = sk.from_numpy(base[:, 1], dtype=F64)
    a.grad = sk.from_numpy(gbase[:, 1], dtype=F64)
    b = _f64(np.zeros(3), grad=True)
    b.grad = sk.ones(3, dtype=F64)
    sk.launch(square, 3, inputs=[a], outputs=[b], adjoint=True, adj_inputs=[None], adj_outputs=[None])
    expected = np.zeros((3, 4))
    expected[:, 1] = 2.0 * base[:, 1]
    np.testing.assert_array_equal(gbase, expected)


@pytest.mark.cpu_only("the views are numpy views of host memory")
def test_gradients_land_in_a_1d_line_of_a_3d_array():
    base, gbase = np.arange(24.0).reshape(2, 3, 4), np.zeros((2, 3, 4))
    a = sk.from_numpy(base[1, :, 2], dtype=F64)
    a.grad = sk.from_numpy(gbase[1, :, 2], dtype=F64)
    b = _f64(np.zeros(3), grad=True)
    b.grad = _f64([1.0, 2.0, 3.0])
    sk.launch(square, 3, inputs=[a], outputs=[b], adjoint=True, adj_inputs=[None], adj_outputs=[None])
    expected = np.zeros((2, 3, 4))
    expected[1, :, 2] = 2.0 * base[1, :, 2] * [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(gbase, expected)


@pytest.mark.cpu_only("the views are numpy views of host memory")
def test_gradients_land_in_a_2d_plane_of_a_3d_array():
    base, gbase = np.arange(24.0).reshape(2, 3, 4), np.zeros((2, 3, 4))
    a = sk.from_numpy(base[:, 1, :], dtype=F64)
    a.grad = sk.from_numpy(gbase[:, 1, :], dtype=F64)
    b = sk.zeros((2, 4), dtype=F64, requires_grad=True)
    b.grad = sk.ones((2, 4), dtype=F64)
    sk.launch(square_2d, (2, 4), inputs=[a], outputs=[b], adjoint=True, adj_inputs=[None], adj_outputs=[None])
    expected = np.zeros((2, 3, 4))
    expected[:, 1, :] = 2.0 * base[:, 1, :]
    np.testing.assert_array_equal(gbase, expected)


def test_none_for_an_output_without_grad_names_it():
    # its seed would read as zero and every gradient of the launch silently be zero
    a, b = _f64([1.0, 2.0], grad=True), _f64([0.0, 0.0])
    with pytest.raises(ValueError, match=r"adj_outputs\[0\] is None.*argument 'b'.*has none"):
        sk.launch(square, 2, inputs=[a], outputs=[b], adjoint=True, adj_inputs=[None], adj_outputs=[None])


def test_none_for_an_input_without_grad_takes_no_gradient():
    # as in Warp: nobody asked for that input's gradient; the others' are still computed
    a, c, b = _f64([1.0, 2.0]), _f64([3.0, 4.0], grad=True), _f64([0.0, 0.0], grad=True)
    b.grad = _f64([1.0, 1.0])
    sk.launch(product, 2, inputs=[a, c], outputs=[b], adjoint=True, adj_inputs=[None, None], adj_outputs=[None])
    assert a.grad is None
    np.testing.assert_array_equal(c.grad.numpy(), [1.0, 2.0])


def test_none_for_an_integer_array_needs_no_grad():
    idx = sk.array(np.array([1, 0], dtype=np.int32), dtype=sk.int32)
    a, b = _f64([1.0, 2.0], grad=True), _f64([0.0, 0.0], grad=True)
    b.grad = _f64([1.0, 10.0])
    sk.launch(gather, 2, inputs=[idx, a], outputs=[b], adjoint=True, adj_inputs=[None, None], adj_outputs=[None])
    np.testing.assert_array_equal(a.grad.numpy(), [20.0, 2.0])


# -- Warp as an oracle, on its CPU device ---------------------------------------------------


@functools.lru_cache(maxsize=None)
def _warp():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def wp_square(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64)):
        i = wp.tid()
        b[i] = a[i] * a[i]

    @wp.kernel
    def wp_add_cube(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64)):
        i = wp.tid()
        b[i] += a[i] * a[i] * a[i]

    @wp.kernel
    def wp_square_2d(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64)):
        i, j = wp.tid()
        b[i, j] = a[i, j] * a[i, j]

    return wp, {"square": wp_square, "add_cube": wp_add_cube, "square_2d": wp_square_2d}


def _warp_adjoint(kernel, a_np, seed_np, same=False, view=None):
    """a's grad after Warp's adjoint launch of ``kernel`` with None entries, b.grad = seed
    (b is a itself when ``same``); ``view`` slices a (and so its grad) out of a larger array."""
    wp, kernels = _warp()
    a = wp.array(a_np, dtype=wp.float64, requires_grad=True, device="cpu")
    whole = a
    if view is not None:
        a = a[view]
    b = a if same else wp.zeros(a.shape, dtype=wp.float64, requires_grad=True, device="cpu")
    b.grad.assign(seed_np)
    wp.launch(kernels[kernel], a.shape, inputs=[a], outputs=[b], adjoint=True, adj_inputs=[None],
              adj_outputs=[None], device="cpu")
    return whole.grad.numpy()


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_agrees_on_the_issue_example():
    np.testing.assert_array_equal(_warp_adjoint("square", np.array([1.0, 2.0, 3.0]), np.ones(3)), [2.0, 4.0, 6.0])


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_agrees_on_aliased_arrays():
    np.testing.assert_array_equal(_warp_adjoint("square", np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.5, -1.0]),
                                                same=True), [2.0, 2.0, -6.0])
    np.testing.assert_array_equal(_warp_adjoint("add_cube", np.array([1.0, 2.0]), np.array([1.0, 2.0]), same=True),
                                  [4.0, 26.0])


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_agrees_on_gradients_into_views():
    base = np.arange(24.0).reshape(2, 3, 4)
    expected = np.zeros((2, 3, 4))
    expected[:, 1, :] = 2.0 * base[:, 1, :]
    np.testing.assert_array_equal(_warp_adjoint("square_2d", base, np.ones((2, 4)), view=(slice(None), 1)), expected)
