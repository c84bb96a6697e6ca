"""sk.array and its constructors, in-place ops, grads, and kernels over arrays of 1 to 4 dims."""

import numpy as np
import pytest

import simkit as sk


# -- kernels (module level: one C++ unit for the whole file) -------------------------------

@sk.kernel
def scale_1d(src: sk.array(dtype=float), dst: sk.array(dtype=float), s: float):
    i = sk.tid()
    dst[i] = src[i] * s


@sk.kernel
def index_sum_2d(src: sk.array(dtype=float, ndim=2), dst: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    dst[i, j] = src[i, j] + float(10 * i + j)


@sk.kernel
def index_sum_3d(src: sk.array(dtype=sk.float64, ndim=3), dst: sk.array(dtype=sk.float64, ndim=3)):
    i, j, k = sk.tid()
    dst[i, j, k] = src[i, j, k] + sk.float64(100 * i + 10 * j + k)


@sk.kernel
def index_sum_4d(src: sk.array(dtype=int, ndim=4), dst: sk.array(dtype=int, ndim=4)):
    i, j, k, l = sk.tid()
    dst[i, j, k, l] = src[i, j, k, l] + 1000 * i + 100 * j + 10 * k + l


@sk.kernel
def double_in_place(a: sk.array(dtype=sk.float64)):
    i = sk.tid()
    a[i] = a[i] * sk.float64(2.0)


@sk.kernel
def transpose_copy(src: sk.array(dtype=sk.float64, ndim=2), dst: sk.array(dtype=sk.float64, ndim=2)):
    i, j = sk.tid()
    dst[i, j] = src[i, j]


@sk.kernel
def vec_norm_sq(v: sk.array(dtype=sk.vec3), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = sk.dot(v[i], v[i])


@sk.kernel
def write_vec_grid(out: sk.array(dtype=sk.vec3, ndim=2)):
    i, j = sk.tid()
    out[i, j] = sk.vec3(float(i), float(j), 1.0)


@sk.kernel
def square_into(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


# -- sk.array ---------------------------------------------------------------------------

def test_array_from_a_list_copies_the_data_as_float32(device):
    data = [1.0, 2.0, 3.0]
    a = sk.array(data)
    assert a.dtype is sk.float32 and a.shape == (3,) and a.device == device
    assert a.numpy().tolist() == data


def test_array_infers_dtype_from_numpy_and_from_python_ints():
    assert sk.array(np.arange(3.0)).dtype is sk.float64
    assert sk.array([1, 2, 3]).dtype is sk.int32
    assert sk.array([True, False]).dtype is sk.bool_


def test_array_copies_its_input():
    src = np.arange(3.0)
    a = sk.array(src)
    src[0] = 42
    assert a.numpy()[0] == 0.0


def test_array_with_explicit_dtype_converts():
    a = sk.array([1, 2, 3], dtype=sk.float64)
    assert a.numpy().dtype == np.float64


def test_numpy_scalar_dtypes_are_accepted_as_dtype():
    assert sk.array([1.0], dtype=np.float64).dtype is sk.float64
    assert sk.zeros(2, dtype="int32").dtype is sk.int32


def test_array_with_shape_reshapes_the_data():
    a = sk.array(np.arange(12.0), dtype=sk.float32, shape=(3, 4))
    assert a.shape == (3, 4) and a.numpy()[2, 3] == 11


def test_array_with_a_shape_that_does_not_fit_the_data_is_a_value_error():
    with pytest.raises(ValueError, match=r"12 element\(s\).*\(3, 5\)"):
        sk.array(np.arange(12.0), shape=(3, 5))


def test_array_with_shape_only_allocates_zeros():
    a = sk.array(shape=(2, 3), dtype=sk.vec3)
    assert a.shape == (2, 3) and not a.numpy().any()


def test_array_with_requires_grad_has_a_zero_grad_of_the_same_shape():
    a = sk.array([1.0, 2.0], requires_grad=True)
    assert a.requires_grad and a.grad.shape == (2,) and a.grad.dtype is sk.float32
    assert a.grad.numpy().tolist() == [0.0, 0.0]


def test_array_of_an_array_keeps_its_composite_dtype():
    v = sk.ones(3, dtype=sk.vec3)
    c = sk.array(v)
    assert c.dtype is sk.vec3 and c.shape == (3,)
    assert c.ptr != v.ptr


def test_array_of_vectors_from_nested_lists_flat_lists_or_vector_values():
    for data in ([[1, 2, 3], [4, 5, 6]], [1, 2, 3, 4, 5, 6], [sk.vec3(1, 2, 3), sk.vec3(4, 5, 6)]):
        a = sk.array(data, dtype=sk.vec3)
        assert a.shape == (2,) and a.numpy().tolist() == [[1, 2, 3], [4, 5, 6]]


def test_a_list_of_vector_values_infers_the_vector_dtype():
    assert sk.array([sk.vec3d(1, 2, 3), sk.vec3d(4, 5, 6)]).dtype is sk.vec3d


def test_array_of_matrices_has_trailing_matrix_dims():
    a = sk.array(np.arange(8.0), dtype=sk.mat22)
    assert a.shape == (2,) and a.numpy().shape == (2, 2, 2)


# -- annotation form -----------------------------------------------------------------------

def test_array_without_data_or_shape_is_a_parameter_annotation():
    t = sk.array(dtype=sk.vec3, ndim=2)
    assert isinstance(t, sk.ArrayType) and t.dtype is sk.vec3 and t.ndim == 2
    assert sk.array(dtype=float) == sk.array(dtype=sk.float32, ndim=1)


def test_annotation_needs_a_dtype():
    with pytest.raises(TypeError, match="needs a dtype"):
        sk.array()


@pytest.mark.parametrize("ndim", [0, 5, 2.0])
def test_annotation_ndim_must_be_1_to_4(ndim):
    with pytest.raises(ValueError, match="1 to 4 dimensions"):
        sk.array(dtype=float, ndim=ndim)


# -- constructors ------------------------------------------------------------------------

def test_zeros_ones_full_empty_have_the_asked_shape_and_values():
    assert sk.zeros((2, 3)).numpy().tolist() == [[0, 0, 0], [0, 0, 0]]
    assert sk.ones(3, dtype=int).numpy().tolist() == [1, 1, 1]
    assert sk.full(2, 2.5).numpy().tolist() == [2.5, 2.5]
    e = sk.empty((4, 2), dtype=sk.float64)
    assert e.shape == (4, 2) and e.dtype is sk.float64


def test_default_dtype_is_float32():
    for a in (sk.zeros(2), sk.ones(2), sk.empty(2)):
        assert a.dtype is sk.float32 and a.numpy().dtype == np.float32


def test_full_takes_the_dtype_of_its_value():
    assert sk.full(2, 3).dtype is sk.int32
    assert sk.full(2, sk.vec3(1, 2, 3)).dtype is sk.vec3
    assert sk.full(2, sk.vec3(1, 2, 3)).numpy().tolist() == [[1, 2, 3], [1, 2, 3]]


def test_vector_dtype_arrays_have_trailing_component_dims_in_numpy():
    assert sk.zeros(5, dtype=sk.vec3).numpy().shape == (5, 3)
    assert sk.zeros((2, 4), dtype=sk.mat33d).numpy().shape == (2, 4, 3, 3)
    assert sk.zeros(3, dtype=sk.transform).numpy().shape == (3, 7)


def test_ones_of_a_vector_dtype_sets_every_component():
    assert sk.ones(2, dtype=sk.vec3).numpy().tolist() == [[1, 1, 1], [1, 1, 1]]


@pytest.mark.parametrize("shape", [3, (3,), (2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_one_to_four_dims_are_allowed(shape):
    a = sk.zeros(shape)
    assert a.shape == (shape if isinstance(shape, tuple) else (shape,))
    assert a.ndim == len(a.shape)


@pytest.mark.parametrize("make", [lambda: sk.zeros((1, 2, 3, 4, 5)), lambda: sk.zeros(()),
                                  lambda: sk.array(np.zeros((1, 1, 1, 1, 1)))])
def test_more_than_four_or_zero_dims_are_rejected(make):
    with pytest.raises(ValueError, match="1 to 4 dimensions"):
        make()


def test_negative_shape_is_rejected():
    with pytest.raises(ValueError, match="negative"):
        sk.zeros(-1)


def test_like_constructors_copy_shape_dtype_and_requires_grad():
    a = sk.ones((2, 2), dtype=sk.vec3d, requires_grad=True)
    for b in (sk.zeros_like(a), sk.ones_like(a), sk.empty_like(a), sk.full_like(a, 2.0)):
        assert b.shape == a.shape and b.dtype is sk.vec3d and b.requires_grad
        assert b.ptr != a.ptr
    assert not sk.zeros_like(a).numpy().any()
    assert (sk.full_like(a, 2.0).numpy() == 2.0).all()
    assert not sk.zeros_like(a, requires_grad=False).requires_grad


def test_clone_copies_data_into_new_memory_with_its_own_grad():
    a = sk.array([1.0, 2.0], requires_grad=True)
    a.grad.fill_(5.0)
    c = sk.clone(a)
    assert c.numpy().tolist() == [1.0, 2.0] and c.ptr != a.ptr
    assert c.requires_grad and c.grad.numpy().tolist() == [0.0, 0.0]
    c.numpy()[0] = 9.0
    assert a.numpy()[0] == 1.0


def test_copy_writes_src_into_dst():
    dst, src = sk.zeros(3), sk.array([1.0, 2.0, 3.0])
    sk.copy(dst, src)
    assert dst.numpy().tolist() == [1.0, 2.0, 3.0]


def test_copy_between_mismatched_arrays_is_a_value_error():
    with pytest.raises(ValueError, match="dst is float32"):
        sk.copy(sk.zeros(3), sk.zeros(2))
    with pytest.raises(ValueError, match="int32"):
        sk.copy(sk.zeros(3), sk.zeros(3, dtype=int))
    with pytest.raises(TypeError, match="two sk arrays"):
        sk.copy(sk.zeros(3), np.zeros(3))


# -- bad input -------------------------------------------------------------------------

def test_unknown_device_is_a_value_error_naming_it():
    for make in (lambda: sk.zeros(3, device="gpu"), lambda: sk.array([1.0], device="cuda0"),
                 lambda: sk.empty(2, device="cuda:x")):
        with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
            make()


@pytest.mark.skipif(sk.is_cuda_available(), reason="this machine has a GPU")
@pytest.mark.cpu_only("about a machine without a GPU driver")
def test_cuda_device_without_a_driver_is_a_runtime_error_naming_it():
    for make in (lambda: sk.zeros(3, device="cuda:0"), lambda: sk.array([1.0], device="cuda"),
                 lambda: sk.empty(2, device="cuda:1")):
        with pytest.raises(RuntimeError, match="no CUDA driver/GPU was found"):
            make()


def test_cpu_device_is_accepted():
    assert sk.zeros(2, device="cpu").device == "cpu"


@pytest.mark.parametrize("dtype", [str, "complex64", object, sk.ArrayType(float)])
def test_bad_dtype_is_a_type_error(dtype):
    with pytest.raises(TypeError, match="array dtype"):
        sk.zeros(3, dtype=dtype)


def test_data_of_the_wrong_shape_for_a_composite_dtype_is_a_value_error():
    with pytest.raises(ValueError, match=r"does not hold elements of vec3"):
        sk.array([[1, 2], [3, 4]], dtype=sk.vec3)
    with pytest.raises(ValueError, match=r"does not hold elements of vec3"):
        sk.array([1, 2, 3, 4, 5], dtype=sk.vec3)


def test_data_that_is_not_numeric_is_rejected():
    with pytest.raises(TypeError, match="cannot infer a dtype"):
        sk.array(["a", "b"])
    with pytest.raises(ValueError, match="cannot make an array"):
        sk.array(["a", "b"], dtype=float)


def test_ndim_given_with_data_must_match_it():
    assert sk.array([[1.0, 2.0]], ndim=2).ndim == 2
    with pytest.raises(ValueError, match="ndim=1"):
        sk.array([[1.0, 2.0]], ndim=1)


# -- grads ---------------------------------------------------------------------------------

def test_setting_requires_grad_allocates_a_zeroed_grad():
    a = sk.ones(3)
    assert not a.requires_grad and a.grad is None
    a.requires_grad = True
    assert a.requires_grad and a.grad.numpy().tolist() == [0.0, 0.0, 0.0]


def test_clearing_requires_grad_drops_the_grad():
    a = sk.ones(3, requires_grad=True)
    a.requires_grad = False
    assert a.grad is None and not a.requires_grad


def test_an_integer_array_may_require_grad_and_its_grad_is_zero_as_in_warp():
    a = sk.zeros(3, dtype=sk.vec3i, requires_grad=True)
    assert a.grad.dtype is sk.vec3i and not a.grad.numpy().any()


@sk.kernel
def scale_by_count(n: sk.array(dtype=int), x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = float(n[i]) * x[i]


def test_a_taped_launch_reading_an_integer_array_that_requires_grad_leaves_its_grad_zero():
    n = sk.array(np.array([2, 3], np.int32), requires_grad=True)
    x = sk.array(np.array([1.0, 1.0], np.float32), requires_grad=True)
    y = sk.zeros(2, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(scale_by_count, 2, inputs=[n, x], outputs=[y])
    tape.backward(grads={y: np.ones(2, np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(n.grad.numpy(), [0, 0])


def test_only_integer_reads_do_not_make_a_taped_launchs_outputs_require_grad():
    n = sk.array(np.array([2, 3], np.int32), requires_grad=True)
    x = sk.array(np.array([1.0, 1.0], np.float32))
    y = sk.zeros(2)
    with sk.Tape():
        sk.launch(scale_by_count, 2, inputs=[n, x], outputs=[y])
    assert not y.requires_grad


def test_grad_of_a_vector_array_has_the_vector_dtype():
    a = sk.zeros(4, dtype=sk.vec3, requires_grad=True)
    assert a.grad.dtype is sk.vec3 and a.grad.numpy().shape == (4, 3)


def test_assigning_a_grad_array_checks_it_and_sets_requires_grad():
    a = sk.zeros(3)
    a.grad = sk.ones(3)
    assert a.requires_grad
    with pytest.raises(ValueError, match=r"float32\(3,\)"):
        a.grad = sk.ones(4)
    with pytest.raises(TypeError, match="sk array or None"):
        a.grad = np.ones(3, np.float32)


def test_grad_of_a_strided_view_shares_its_strides():
    base = np.arange(10.0)
    a = sk.from_numpy(base[::2], requires_grad=True)
    assert a.grad.numpy().strides == a.numpy().strides
    assert a.grad.numpy().tolist() == [0.0] * 5


# -- in-place ops ---------------------------------------------------------------------------

def test_zero_sets_every_element_to_zero_and_returns_the_array():
    a = sk.ones((2, 2))
    assert a.zero_() is a
    assert not a.numpy().any()


def test_fill_with_a_scalar():
    assert sk.zeros(3).fill_(4.0).numpy().tolist() == [4.0, 4.0, 4.0]
    assert sk.zeros(2, dtype=sk.vec3).fill_(5).numpy().tolist() == [[5, 5, 5], [5, 5, 5]]


def test_fill_with_a_vector_or_matrix_value():
    assert sk.zeros(2, dtype=sk.vec3).fill_(sk.vec3(1, 2, 3)).numpy().tolist() == [[1, 2, 3], [1, 2, 3]]
    assert sk.zeros(1, dtype=sk.mat22).fill_([1, 2, 3, 4]).numpy().tolist() == [[[1, 2], [3, 4]]]


def test_fill_with_a_value_of_the_wrong_size_is_a_value_error():
    with pytest.raises(ValueError, match="vec3"):
        sk.zeros(2, dtype=sk.vec3).fill_([1, 2])
    with pytest.raises(ValueError, match="float32"):
        sk.zeros(2).fill_([1, 2])


def test_assign_copies_a_list_numpy_or_sk_array_of_the_same_shape():
    a = sk.zeros(3)
    a.assign([1, 2, 3])
    assert a.numpy().tolist() == [1, 2, 3]
    a.assign(np.array([4.0, 5.0, 6.0]))
    assert a.numpy().tolist() == [4, 5, 6]
    a.assign(sk.array([7.0, 8.0, 9.0]))
    assert a.numpy().tolist() == [7, 8, 9]


def test_assign_of_another_shape_is_a_value_error():
    with pytest.raises(ValueError, match=r"\(2,\)"):
        sk.zeros(3).assign([1, 2])


def test_in_place_ops_bump_the_version_counter():
    a = sk.zeros(3)
    v0 = a._version
    a.fill_(1.0)
    a.zero_()
    a.assign([1, 2, 3])
    assert a._version == v0 + 3


def test_shape_dtype_device_len_size(device):
    a = sk.zeros((4, 5), dtype=sk.vec3d)
    assert a.shape == (4, 5) and a.dtype is sk.vec3d and a.device == device
    assert len(a) == 4 and a.size == 20 and a.ndim == 2


def test_repr_shows_dtype_device_and_grad(device):
    r = repr(sk.zeros(2, requires_grad=True))
    assert "dtype=float32" in r and f"device='{device}'" in r and "requires_grad=True" in r


# -- kernels over each ndim -----------------------------------------------------------------

def test_kernel_reads_and_writes_1d_arrays():
    src, dst = sk.array([1.0, 2.0, 3.0]), sk.zeros(3)
    sk.launch(scale_1d, 3, inputs=[src, dst, 2.0])
    assert dst.numpy().tolist() == [2.0, 4.0, 6.0]


def test_kernel_reads_and_writes_2d_arrays():
    src = sk.array(np.ones((3, 4), np.float32))
    dst = sk.zeros((3, 4))
    sk.launch(index_sum_2d, (3, 4), inputs=[src, dst])
    i, j = np.indices((3, 4))
    np.testing.assert_array_equal(dst.numpy(), 1 + 10 * i + j)


def test_kernel_reads_and_writes_3d_arrays():
    src = sk.full((2, 3, 4), 0.5, dtype=sk.float64)
    dst = sk.zeros((2, 3, 4), dtype=sk.float64)
    sk.launch(index_sum_3d, (2, 3, 4), inputs=[src, dst])
    i, j, k = np.indices((2, 3, 4))
    np.testing.assert_array_equal(dst.numpy(), 0.5 + 100 * i + 10 * j + k)


def test_kernel_reads_and_writes_4d_arrays():
    shape = (2, 3, 4, 5)
    src = sk.full(shape, 7, dtype=int)
    dst = sk.zeros(shape, dtype=int)
    sk.launch(index_sum_4d, shape, inputs=[src, dst])
    i, j, k, l = np.indices(shape)
    np.testing.assert_array_equal(dst.numpy(), 7 + 1000 * i + 100 * j + 10 * k + l)


def test_kernel_reads_a_vector_array():
    v = sk.array([[1, 2, 2], [0, 3, 4]], dtype=sk.vec3)
    out = sk.zeros(2)
    sk.launch(vec_norm_sq, 2, inputs=[v, out])
    assert out.numpy().tolist() == [9.0, 25.0]


def test_kernel_writes_a_2d_vector_array():
    out = sk.zeros((2, 3), dtype=sk.vec3)
    sk.launch(write_vec_grid, (2, 3), inputs=[out])
    assert out.numpy()[1, 2].tolist() == [1.0, 2.0, 1.0]
    assert out.numpy()[0, 1].tolist() == [0.0, 1.0, 1.0]


# -- non-contiguous numpy views ----------------------------------------------------------------

def test_every_other_element_view_is_written_in_place():
    base = np.arange(10.0)
    view = base[::2]
    sk.launch(double_in_place, len(view), inputs=[view])
    assert base.tolist() == [0, 1, 4, 3, 8, 5, 12, 7, 16, 9]


def test_reversed_view_is_written_in_place():
    base = np.arange(4.0)
    sk.launch(double_in_place, 4, inputs=[base[::-1]])
    assert base.tolist() == [0, 2, 4, 6]


def test_transposed_2d_view_is_read_through_its_strides():
    src = np.arange(6.0).reshape(2, 3)
    dst = np.zeros((3, 2))
    sk.launch(transpose_copy, (3, 2), inputs=[src.T, dst])
    np.testing.assert_array_equal(dst, src.T)


def test_column_slice_view_is_read_through_its_strides():
    src = np.arange(20.0).reshape(4, 5)[:, 1:4]
    dst = np.zeros((4, 3))
    sk.launch(transpose_copy, (4, 3), inputs=[src, dst])
    np.testing.assert_array_equal(dst, src)


def test_kernel_writing_into_a_strided_view_leaves_the_gaps_alone():
    x = np.arange(1.0, 7.0)
    y = np.full(12, -1.0)
    sk.launch(square_into, 6, inputs=[x, y[1::2]])
    assert y[1::2].tolist() == [1, 4, 9, 16, 25, 36]
    assert (y[0::2] == -1.0).all()


def test_vector_array_whose_components_are_not_contiguous_is_refused():
    strided = np.zeros((4, 6), np.float32)[:, ::2]
    with pytest.raises(TypeError, match="contiguous"):
        sk.launch(vec_norm_sq, 4, inputs=[strided, sk.zeros(4)])


@pytest.mark.cpu_only("sk.from_numpy views CPU memory")
def test_adjoint_launch_on_a_strided_view_accumulates_into_the_matching_grad_elements():
    base = np.arange(10.0)
    x = sk.from_numpy(base[::-2], requires_grad=True)  # 9, 7, 5, 3, 1
    y = sk.zeros(5, dtype=sk.float64, requires_grad=True)
    y.grad.fill_(1.0)
    sk.launch(square_into, 5, inputs=[x, y], adjoint=True)
    assert x.grad.numpy().tolist() == [18.0, 14.0, 10.0, 6.0, 2.0]
