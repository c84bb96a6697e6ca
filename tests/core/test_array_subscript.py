"""``sk.array[float]``, ``sk.array[sk.vec3, 2]`` and ``sk.array2d[float]``: the kernel
annotations as Warp 1.19 spells them, the same types as ``sk.array(dtype=..., ndim=...)``."""

from typing import Any

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def scale_rows(x: sk.array2d[float], y: sk.array[float, 2], s: float):
    i, j = sk.tid()
    y[i, j] = x[i, j] * s


@sk.kernel
def lengths(v: sk.array[sk.vec3], out: sk.array[float]):
    i = sk.tid()
    out[i] = sk.length(v[i])


def test_a_subscript_is_the_annotation_sk_array_dtype_gives():
    assert repr(sk.array[float]) == repr(sk.array(dtype=float))
    assert repr(sk.array[sk.vec3, 2]) == repr(sk.array(dtype=sk.vec3, ndim=2))
    assert repr(sk.array2d[float]) == repr(sk.array(dtype=float, ndim=2))
    assert repr(sk.array3d(dtype=sk.float64)) == repr(sk.array(dtype=sk.float64, ndim=3))
    assert repr(sk.array[Any]) == repr(sk.array(dtype=Any))


def test_kernels_annotated_by_subscript_run(device):
    x = sk.array(np.arange(6.0, dtype=np.float32).reshape(2, 3), device=device)
    y = sk.zeros((2, 3), device=device)
    sk.launch(scale_rows, (2, 3), inputs=[x, y, 2.0])
    np.testing.assert_array_equal(y.numpy(), 2.0 * np.arange(6.0).reshape(2, 3))
    v = sk.array(np.full((4, 3), 2.0), dtype=sk.vec3, device=device)
    out = sk.zeros(4, device=device)
    sk.launch(lengths, 4, inputs=[v, out])
    np.testing.assert_allclose(out.numpy(), np.sqrt(12.0), rtol=1e-6)


def test_sk_array_still_makes_arrays():
    a = sk.array([1.0, 2.0], dtype=sk.float64, requires_grad=True)
    assert isinstance(a, sk.Array) and a.requires_grad and a.numpy().tolist() == [1.0, 2.0]


@pytest.mark.parametrize("bad", [(float,), (float, 2, 3), (float, "2"), (float, True)])
def test_a_subscript_that_is_not_a_dtype_and_ndim_is_refused(bad):
    with pytest.raises(TypeError, match=r"sk.array\[float, 2\]"):
        sk.array[bad]


def test_array2d_subscripted_takes_a_dtype_only():
    with pytest.raises(TypeError, match="takes a dtype"):
        sk.array2d[float, 2]


def test_array2d_with_data_makes_a_2d_array_as_warps_does():
    a = sk.array2d(np.arange(6.0).reshape(2, 3), dtype=sk.float64, requires_grad=True)
    assert a.shape == (2, 3) and a.dtype is sk.float64 and a.requires_grad
    assert a.numpy().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_array2d_refuses_data_of_another_dimension():
    with pytest.raises(ValueError, match=r"sk.array2d\(...\) makes an array of 2 dimensions; .* shape \(3,\)"):
        sk.array2d([1.0, 2.0, 3.0], dtype=float)


def test_array2d_with_only_a_dtype_is_the_annotation():
    assert sk.array2d(dtype=float) == sk.array(dtype=float, ndim=2)


def test_warp_runs_the_same_subscripted_kernel_to_the_same_numbers():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True

    @wp.kernel
    def w_scale_rows(x: wp.array2d[float], y: wp.array[float, 2], s: float):
        i, j = wp.tid()
        y[i, j] = x[i, j] * s

    data = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    wy = wp.zeros((3, 4), dtype=float, device="cpu")
    wp.launch(w_scale_rows, (3, 4), inputs=[wp.array(data, dtype=float, device="cpu"), wy, 0.3], device="cpu")
    y = sk.zeros((3, 4))
    sk.launch(scale_rows, (3, 4), inputs=[sk.array(data), y, 0.3])
    np.testing.assert_array_equal(y.numpy(), wy.numpy())
