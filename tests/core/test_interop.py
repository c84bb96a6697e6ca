"""Zero-copy interop with numpy, the array interface, DLPack and (when installed) torch."""

import numpy as np
import pytest

import simkit as sk

pytestmark = pytest.mark.cpu_only("numpy shares CPU memory; tests/cuda/test_arrays.py covers GPU arrays")


@sk.kernel
def add_one(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = a[i] + 1.0


@sk.kernel
def copy_to(src: sk.array(dtype=float), dst: sk.array(dtype=float)):
    i = sk.tid()
    dst[i] = src[i]


@sk.kernel
def lift(p: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    p[i] = p[i] + sk.vec3(0.0, 0.0, 1.0)


def _shares(a, b) -> bool:
    return np.shares_memory(np.asarray(a), np.asarray(b))


# -- .numpy() ---------------------------------------------------------------------------

def test_numpy_view_points_at_the_array_memory():
    a = sk.zeros(4)
    assert a.numpy().ctypes.data == a.ptr


def test_writes_through_the_numpy_view_are_seen_by_kernels():
    a, out = sk.zeros(3), sk.zeros(3)
    a.numpy()[:] = [1.0, 2.0, 3.0]
    sk.launch(copy_to, 3, inputs=[a, out])
    assert out.numpy().tolist() == [1.0, 2.0, 3.0]


def test_kernel_writes_are_seen_through_an_earlier_numpy_view():
    a = sk.zeros(3)
    view = a.numpy()
    sk.launch(add_one, 3, inputs=[a])
    assert view.tolist() == [1.0, 1.0, 1.0]


# -- from_numpy ---------------------------------------------------------------------------

def test_from_numpy_shares_memory():
    x = np.zeros(5, np.float32)
    a = sk.from_numpy(x)
    assert a.ptr == x.ctypes.data and a.dtype is sk.float32
    sk.launch(add_one, 5, inputs=[a])
    assert x.tolist() == [1.0] * 5


def test_from_numpy_with_a_vector_dtype_shares_memory():
    pts = np.zeros((4, 3), np.float32)
    a = sk.from_numpy(pts, dtype=sk.vec3)
    assert a.ptr == pts.ctypes.data and a.shape == (4,) and a.dtype is sk.vec3
    sk.launch(lift, 4, inputs=[a])
    assert pts[:, 2].tolist() == [1.0] * 4


def test_from_numpy_refuses_a_dtype_of_another_precision():
    with pytest.raises(TypeError, match="float64"):
        sk.from_numpy(np.zeros((4, 3)), dtype=sk.vec3)


def test_from_numpy_refuses_trailing_dims_that_do_not_match_the_dtype():
    with pytest.raises(ValueError, match="vec3"):
        sk.from_numpy(np.zeros((4, 2), np.float32), dtype=sk.vec3)


def test_from_numpy_refuses_unsupported_numpy_dtypes_and_non_arrays():
    with pytest.raises(TypeError, match="complex64"):
        sk.from_numpy(np.zeros(3, np.complex64))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        sk.from_numpy([1.0, 2.0])


def test_from_numpy_with_requires_grad_keeps_data_shared_and_adds_a_grad():
    x = np.ones(3)
    a = sk.from_numpy(x, requires_grad=True)
    assert a.ptr == x.ctypes.data and a.grad is not None and not _shares(a.grad, x)


# -- array interface ------------------------------------------------------------------------

def test_np_asarray_shares_memory():
    a = sk.zeros(3, dtype=sk.vec3d)
    v = np.asarray(a)
    assert v.shape == (3, 3) and v.dtype == np.float64
    v[1, 2] = 7.0
    assert a.numpy()[1, 2] == 7.0


def test_array_interface_describes_the_memory():
    a = sk.zeros((2, 3))
    iface = a.__array_interface__
    assert iface["data"][0] == a.ptr and iface["shape"] == (2, 3)


def test_np_array_of_an_sk_array_is_a_copy():
    a = sk.zeros(3)
    c = np.array(a)
    c[0] = 1.0
    assert a.numpy()[0] == 0.0


# -- DLPack -----------------------------------------------------------------------------------

def test_numpy_from_dlpack_of_an_sk_array_shares_memory():
    a = sk.zeros((2, 2), dtype=sk.vec3)
    x = np.from_dlpack(a)
    assert x.shape == (2, 2, 3) and x.ctypes.data == a.ptr
    x[0, 0, 0] = 5.0
    assert a.numpy()[0, 0, 0] == 5.0


def test_sk_from_dlpack_of_a_numpy_array_shares_memory():
    x = np.zeros(4, np.float32)
    a = sk.from_dlpack(x)
    assert a.ptr == x.ctypes.data
    sk.launch(add_one, 4, inputs=[a])
    assert x.tolist() == [1.0] * 4


def test_sk_from_dlpack_takes_a_composite_dtype():
    x = np.zeros((5, 3), np.float32)
    a = sk.from_dlpack(x, dtype=sk.vec3)
    assert a.shape == (5,) and a.dtype is sk.vec3 and a.ptr == x.ctypes.data


def test_dlpack_device_is_the_cpu():
    assert sk.zeros(1).__dlpack_device__()[0] == 1  # kDLCPU


# -- numpy straight to launch -------------------------------------------------------------------

def test_numpy_array_passed_to_launch_is_modified_in_place():
    x = np.zeros(6, np.float32)
    sk.launch(add_one, 6, inputs=[x])
    assert x.tolist() == [1.0] * 6


def test_numpy_array_passed_to_launch_for_a_vector_parameter_is_wrapped():
    pts = np.zeros((3, 3), np.float32)
    sk.launch(lift, 3, inputs=[pts])
    assert pts[:, 2].tolist() == [1.0, 1.0, 1.0]


def test_numpy_array_of_the_wrong_dtype_passed_to_launch_names_the_parameter():
    with pytest.raises(TypeError, match="'a'.*float64"):
        sk.launch(add_one, 3, inputs=[np.zeros(3)])


# -- torch (skipped when torch is not installed) --------------------------------------------------

def test_from_torch_shares_memory_with_the_tensor():
    torch = pytest.importorskip("torch")
    t = torch.zeros(4, dtype=torch.float32)
    a = sk.from_torch(t)
    assert a.ptr == t.data_ptr() and a.dtype is sk.float32
    sk.launch(add_one, 4, inputs=[a])
    assert t.tolist() == [1.0] * 4


def test_from_torch_with_a_vector_dtype():
    torch = pytest.importorskip("torch")
    t = torch.zeros(3, 3, dtype=torch.float32)
    a = sk.from_torch(t, dtype=sk.vec3)
    assert a.shape == (3,) and a.ptr == t.data_ptr()


def test_to_torch_shares_memory_with_the_array():
    torch = pytest.importorskip("torch")
    a = sk.zeros(3)
    t = sk.to_torch(a)
    assert isinstance(t, torch.Tensor) and t.data_ptr() == a.ptr
    t += 2.0
    assert a.numpy().tolist() == [2.0, 2.0, 2.0]


def test_torch_round_trip_returns_the_same_memory():
    torch = pytest.importorskip("torch")
    t = torch.arange(5, dtype=torch.float64)
    back = sk.to_torch(sk.from_torch(t))
    assert back.data_ptr() == t.data_ptr() and torch.equal(back, t)


def test_torch_tensor_passed_to_launch_is_modified_in_place():
    torch = pytest.importorskip("torch")
    t = torch.zeros(5, dtype=torch.float32)
    sk.launch(add_one, 5, inputs=[t])
    assert t.tolist() == [1.0] * 5


def test_torch_tensor_that_requires_grad_is_wrapped_without_copying():
    torch = pytest.importorskip("torch")
    t = torch.zeros(3, dtype=torch.float32, requires_grad=True)
    a = sk.from_torch(t)
    assert a.ptr == t.data_ptr()


def test_from_numpy_on_the_cpu_device_still_wraps_without_copying():
    x = np.zeros(3, np.float32)
    a = sk.from_numpy(x, device="cpu")
    x[1] = 5.0
    assert a.device == "cpu" and a.numpy()[1] == 5.0


def test_from_numpy_refuses_a_malformed_device():
    with pytest.raises(ValueError, match=r"from_numpy\(device\)"):
        sk.from_numpy(np.zeros(3, np.float32), device="gpu")
