"""GPU arrays: allocation, copies in every direction, .to(), .numpy(), interop descriptors."""

import numpy as np
import pytest

import simkit as sk
from simkit.core import dlpack


def test_creation_functions_allocate_on_the_gpu(gpu):
    for a, want in ((sk.zeros(3, device=gpu), [0.0] * 3), (sk.ones(3, device=gpu), [1.0] * 3),
                    (sk.full(3, 2.5, device=gpu), [2.5] * 3), (sk.array([1.0, 2.0, 3.0], device=gpu), [1, 2, 3])):
        assert a.device == gpu and a.numpy().tolist() == want
    e = sk.empty((2, 2), dtype=sk.vec3, device=gpu)
    assert e.device == gpu and e.numpy().shape == (2, 2, 3)


def test_cuda_means_the_first_gpu(gpu):
    assert sk.zeros(1, device="cuda").device == "cuda:0"


def test_numpy_of_a_gpu_array_is_a_copy(gpu):
    a = sk.array([1.0, 2.0], device=gpu)
    h = a.numpy()
    h[0] = 99.0
    assert a.numpy().tolist() == [1.0, 2.0]


def test_to_moves_data_both_ways_and_keeps_requires_grad(gpu):
    c = sk.array(np.arange(6.0).reshape(2, 3), dtype=sk.float64, requires_grad=True)
    g = c.to(gpu)
    assert g.device == gpu and g.requires_grad and g.grad.device == gpu
    assert np.array_equal(g.numpy(), c.numpy()) and not g.grad.numpy().any()
    back = g.to("cpu")
    assert back.device == "cpu" and np.array_equal(back.numpy(), c.numpy())
    assert g.to(gpu) is g


def test_composite_dtypes_round_trip(gpu):
    data = np.random.default_rng(0).random((4, 3, 3)).astype(np.float32)
    g = sk.array(data, dtype=sk.mat33, device=gpu)
    assert g.shape == (4,) and np.array_equal(g.numpy(), data)
    q = sk.full(2, sk.vec3(1.0, 2.0, 3.0), device=gpu)
    assert q.numpy().tolist() == [[1.0, 2.0, 3.0]] * 2


def test_assign_and_copy_in_every_direction(gpu):
    src_cpu = sk.array([1.0, 2.0, 3.0])
    g1, g2 = sk.zeros(3, device=gpu), sk.zeros(3, device=gpu)
    g1.assign(src_cpu)                   # host -> device
    g2.assign(g1)                        # device -> device
    out = sk.zeros(3)
    sk.copy(out, g2)                     # device -> host
    assert out.numpy().tolist() == [1.0, 2.0, 3.0]
    g1.assign(np.array([4.0, 5.0, 6.0]))  # numpy -> device
    g1.assign([7.0, 8.0, 9.0])
    assert g1.numpy().tolist() == [7.0, 8.0, 9.0] and g1._version == 3


def test_in_place_ops_and_clone(gpu):
    g = sk.array([1.0, 2.0, 3.0], device=gpu, requires_grad=True)
    c = g.clone()
    g.fill_(5.0)
    assert g.numpy().tolist() == [5.0] * 3 and c.numpy().tolist() == [1.0, 2.0, 3.0]
    assert c.device == gpu and c.requires_grad and c.grad.device == gpu
    g.zero_()
    assert not g.numpy().any()
    v = sk.zeros(2, dtype=sk.vec3, device=gpu).fill_([1.0, 0.0, 2.0])
    assert v.numpy().tolist() == [[1.0, 0.0, 2.0]] * 2


def test_zero_size_arrays(gpu):
    a = sk.zeros(0, device=gpu)
    assert a.numpy().shape == (0,) and a.ptr == 0
    a.assign(np.zeros(0))
    a.requires_grad = True
    assert a.to("cpu").shape == (0,)


def test_the_header_holds_the_device_pointer_and_byte_strides(gpu):
    a = sk.zeros((3, 4), dtype=sk.vec3d, device=gpu, requires_grad=True)
    assert a._hdr.data == a.ptr != 0 and a._hdr.grad == a.grad.ptr != 0
    assert list(a._hdr.shape)[:2] == [3, 4] and list(a._hdr.strides)[:2] == [4 * 24, 24]


def test_cuda_array_interface(gpu):
    a = sk.zeros((2, 5), dtype=sk.vec2, device=gpu)
    cai = a.__cuda_array_interface__
    assert cai["shape"] == (2, 5, 2) and cai["typestr"] == "<f4" and cai["data"] == (a.ptr, False)
    assert cai["version"] == 3 and cai["strides"] is None and cai["stream"]
    assert not hasattr(a, "__array_interface__")
    assert not hasattr(sk.zeros(1), "__cuda_array_interface__")


def test_numpy_conversion_is_a_copy_and_refuses_copy_false(gpu):
    a = sk.array([1.0, 2.0], device=gpu)
    assert np.asarray(a).tolist() == [1.0, 2.0]
    assert np.array(a, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="without a copy"):
        a.__array__(copy=False)


def test_repr_shows_the_device(gpu):
    assert "device='cuda:0'" in repr(sk.array([1.0], device=gpu))


class _CAI:
    """A foreign GPU buffer described only by __cuda_array_interface__ (as cupy or numba would)."""

    def __init__(self, base, shape, strides, typestr="<f4"):
        self.base = base
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (base.ptr, False),
                                         "strides": strides, "version": 3}


def test_wrapping_strided_foreign_gpu_memory(gpu):
    from simkit.core.interop import from_cuda_array_interface

    base = sk.array(np.arange(12.0), dtype=sk.float32, device=gpu)
    view = from_cuda_array_interface(_CAI(base, (6,), (8,)))  # every second element
    assert view.device == gpu and view.ptr == base.ptr and view.numpy().tolist() == [0, 2, 4, 6, 8, 10]
    view.assign(np.full(6, -1.0))
    assert base.numpy().tolist() == [-1, 1, -1, 3, -1, 5, -1, 7, -1, 9, -1, 11]
    view.requires_grad = True
    assert view.grad._strides == (8,) and not view.grad.numpy().any()
    assert np.array_equal(view.clone().numpy(), np.full(6, -1.0)) and view.clone()._contiguous


def test_dlpack_export_and_import_of_gpu_arrays(gpu):
    a = sk.array(np.arange(6.0).reshape(2, 3), dtype=sk.float32, device=gpu)
    assert a.__dlpack_device__() == (dlpack.KDL_CUDA, 0)
    b = sk.from_dlpack(a)
    assert b.device == gpu and b.ptr == a.ptr and b.shape == (2, 3)
    b.fill_(3.0)
    assert a.numpy().tolist() == [[3.0] * 3] * 2
    im = dlpack.import_capsule(a.__dlpack__())
    assert im.device_type == dlpack.KDL_CUDA and im.ptr == a.ptr and im.strides == (12, 4)


def test_numpy_from_dlpack_with_device_cpu_gets_a_host_copy(gpu):
    a = sk.array(np.arange(6.0).reshape(2, 3), dtype=sk.float32, device=gpu)
    x = np.from_dlpack(a, device="cpu")
    assert x.tolist() == np.arange(6.0).reshape(2, 3).tolist()
    x[0, 0] = 9.0
    assert a.numpy()[0, 0] == 0.0


def test_a_dlpack_export_to_the_cpu_without_a_copy_is_refused(gpu):
    a = sk.zeros(3, device=gpu)
    with pytest.raises(BufferError, match="only as a copy"):
        np.from_dlpack(a, device="cpu", copy=False)
    with pytest.raises(BufferError, match="cannot be exported to DLPack device"):
        a.__dlpack__(dl_device=(dlpack.KDL_CUDA, 5))


def test_dlpack_import_with_a_composite_dtype(gpu):
    a = sk.zeros((4, 3), device=gpu)
    v = sk.from_dlpack(a, dtype=sk.vec3)
    assert v.shape == (4,) and v.dtype is sk.vec3 and v.device == gpu


def test_torch_cuda_tensors_are_shared(gpu):
    torch = pytest.importorskip("torch")
    if gpu != "cuda:0" or not torch.cuda.is_available():
        pytest.skip("needs torch with CUDA on a real GPU")
    t = torch.arange(4, dtype=torch.float32, device="cuda")
    a = sk.from_torch(t)
    assert a.device == "cuda:0" and a.ptr == t.data_ptr()
    back = sk.to_torch(a)
    assert back.device.type == "cuda" and back.data_ptr() == t.data_ptr()
