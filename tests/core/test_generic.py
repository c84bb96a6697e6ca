"""Generic kernels and functions over ``typing.Any``: one overload per argument types."""

import re
from typing import Any

import numpy as np
import pytest

import simkit as sk


@sk.func
def twice(a: Any):
    return a + a


@sk.func
def first_of(a: sk.array(dtype=Any)):
    return a[0]


@sk.kernel
def scale_into(x: sk.array(dtype=Any), s: Any, out: sk.array(dtype=Any)):
    i = sk.tid()
    out[i] = twice(x[i]) * s


@sk.kernel
def head_of(x: sk.array(dtype=Any), out: sk.array(dtype=Any)):
    out[0] = first_of(x)


@sk.kernel
def pair_of_scalars(a: Any, b: Any):
    c = a * b


@sk.kernel
def fill_rows(a: sk.array(dtype=Any, ndim=2), v: Any):
    i, j = sk.tid()
    a[i, j] = v


def test_generic_kernel_runs_float32_and_float64_overloads():
    x32, o32 = sk.array([1.0, 2.0]), sk.zeros(2)
    x64, o64 = sk.array([1.0, 2.0], dtype=sk.float64), sk.zeros(2, dtype=sk.float64)
    sk.launch(scale_into, 2, inputs=[x32, 0.25, o32])
    sk.launch(scale_into, 2, inputs=[x64, 0.1, o64])
    np.testing.assert_allclose(o32.numpy(), [0.5, 1.0])
    np.testing.assert_array_equal(o64.numpy(), [2 * 1.0 * 0.1, 2 * 2.0 * 0.1])  # 0.1 kept in float64


def test_python_float_takes_the_precision_of_the_arrays():
    x = sk.array([1.0], dtype=sk.float64)
    sk.launch(scale_into, 1, inputs=[x, 0.1, sk.zeros(1, dtype=sk.float64)])
    assert scale_into.overload([x.type(), sk.float64, x.type()]) in scale_into._instances.values()


def test_python_float_takes_the_precision_of_a_numpy_scalar_argument():
    k = sk.overload(fill_rows, {"a": sk.array(dtype=sk.float64, ndim=2), "v": sk.float64})
    assert fill_rows.instance_for([np.zeros((2, 2)), 1.5]) is k  # a float64 numpy array
    assert pair_of_scalars.instance_for([np.float64(2.0), 0.5]).arg_types["b"] is sk.float64


def test_overload_lookup_tells_numpy_dtypes_apart():
    a64 = fill_rows.instance_for([np.zeros((2, 2)), 1.5])
    a32 = fill_rows.instance_for([np.zeros((2, 2), np.float32), 1.5])
    assert a64.arg_types["v"] is sk.float64 and a32.arg_types["v"] is sk.float32
    assert fill_rows.instance_for([np.zeros((3, 3)), 2.5]) is a64


def test_generic_kernel_over_vectors():
    v = sk.array(np.ones((2, 3)), dtype=sk.vec3)
    out = sk.zeros(2, dtype=sk.vec3)
    sk.launch(scale_into, 2, inputs=[v, 3.0, out])
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 6.0))


def test_overloads_are_cached_per_argument_types():
    x, o = sk.array([1.0, 2.0]), sk.zeros(2)
    sk.launch(scale_into, 2, inputs=[x, 1.0, o])
    n = len(scale_into._instances)
    sk.launch(scale_into, 2, inputs=[x, 2.0, o])
    assert len(scale_into._instances) == n


def test_generic_function_array_parameter():
    out = sk.zeros(1, dtype=sk.int32)
    sk.launch(head_of, 1, inputs=[sk.array([7, 8], dtype=sk.int32), out])
    assert out.numpy()[0] == 7


def test_generic_array_ndim_is_checked():
    with pytest.raises(TypeError, match=r"argument 'a' expects array\(dtype=Any, ndim=2\)"):
        sk.launch(fill_rows, (2, 2), inputs=[sk.zeros(4), 1.0])


def test_overload_builds_the_named_instance():
    k = sk.overload(fill_rows, {"a": sk.array(dtype=sk.float64, ndim=2), "v": sk.float64})
    a = sk.zeros((2, 3), dtype=sk.float64)
    sk.launch(k, (2, 3), inputs=[a, 1.5])
    assert k.arg_types["v"] is sk.float64 and not k.generic
    np.testing.assert_array_equal(a.numpy(), np.full((2, 3), 1.5))


def test_overload_refuses_a_generic_or_mismatched_type():
    with pytest.raises(TypeError, match="concrete simkit type for 'v'"):
        sk.overload(fill_rows, [sk.array(dtype=float, ndim=2), Any])
    with pytest.raises(TypeError, match="parameter 'a' is array"):
        sk.overload(fill_rows, [sk.array(dtype=float, ndim=1), sk.float32])


def test_generic_kernel_cannot_be_compiled_without_types():
    with pytest.raises(TypeError, match="generic"):
        scale_into.build_ir()


def test_value_without_simkit_type_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="argument 's' is generic"):
        sk.launch(scale_into, 1, inputs=[sk.zeros(1), "two", sk.zeros(1)])


def test_gradient_through_a_generic_kernel_matches_finite_differences():
    x = sk.array([0.3, -1.2, 2.0], dtype=sk.float64)
    out = sk.zeros(3, dtype=sk.float64)
    result = sk.autograd.gradcheck(scale_into, 3, inputs=[x, 1.7], outputs=[out], eps=1e-6)
    assert result.ok, result


@pytest.mark.cpu_only("compiles with NVRTC; launches nothing")
def test_generic_overloads_compile_to_ptx():
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")
    for types in ([sk.array(dtype=sk.float64), sk.float64, sk.array(dtype=sk.float64)],
                  [sk.array(dtype=sk.vec3), sk.float32, sk.array(dtype=sk.vec3)]):
        k = scale_into.overload(types)
        fwd, bwd = sk.cuda.entry_points(k)
        ptx = sk.cuda.ptx(k)
        assert f".entry {fwd}(" in ptx and f".entry {bwd}(" in ptx
    for k in (fall.overload([sk.array(dtype=sk.vec3d), sk.float64]), half_of.overload([sk.array(dtype=float)] * 2)):
        fwd, bwd = sk.cuda.entry_points(k)
        ptx = sk.cuda.ptx(k)
        assert f".entry {fwd}(" in ptx and f".entry {bwd}(" in ptx


@sk.kernel
def fall(v: sk.array(dtype=Any), dt: Any):
    i = sk.tid()
    g = sk.vector(3, type(dt))(0.0, -9.81, 0.0)   # in the instance's precision
    v[i] = v[i] + g * dt


@sk.kernel
def half_of(x: sk.array(dtype=Any), out: sk.array(dtype=Any)):
    i = sk.tid()
    out[i] = x[i] * x.dtype(0.5)


def test_generic_kernel_names_its_instance_types_with_type_and_vector():
    for V in (sk.vec3, sk.vec3d):
        v = sk.zeros(2, dtype=V)
        sk.launch(fall, 2, inputs=[v, 0.1])
        want = np.float64(-9.81) * 0.1 if V is sk.vec3d else np.float32(-9.81) * np.float32(0.1)
        assert v.numpy()[0, 1] == want


def test_array_dtype_is_its_element_type_in_kernels():
    out = sk.zeros(2, dtype=sk.float64)
    sk.launch(half_of, 2, inputs=[sk.array([1.0, 3.0], dtype=sk.float64), out])
    np.testing.assert_array_equal(out.numpy(), [0.5, 1.5])


def test_type_factory_needs_compile_time_arguments():
    @sk.kernel
    def bad(n: int, out: sk.array(dtype=float)):
        out[0] = sk.vector(n, float)(1.0)[0]

    with pytest.raises(sk.CompileError, match="compile-time arguments"):
        bad.build_ir()


@sk.kernel
def shapes_of_the_instance(m: sk.array(dtype=Any), dt: Any):
    F = type(dt)
    a = sk.matrix((2, 2), F)(1.0, 2.0, 3.0, 4.0)
    m[0] = sk.matrix((2, 2), F)(a[0, 0], 0.0, 0.0, a[1, 1]) + sk.identity(2, F) * dt


def test_matrix_shape_and_identity_take_the_instance_type_in_a_kernel():
    for M, R in ((sk.mat22, np.float32), (sk.mat22d, np.float64)):
        m = sk.zeros(1, dtype=M)
        sk.launch(shapes_of_the_instance, 1, inputs=[m, 0.5])
        assert m.numpy().dtype == R
        np.testing.assert_array_equal(m.numpy()[0], [[1.5, 0.0], [0.0, 4.5]])


@sk.struct
class _Volumes:
    volume: sk.array(dtype=sk.float64)


@sk.kernel
def types_without_loads(v: sk.array(dtype=Any), p: Any, out: sk.array(dtype=Any)):
    x = v[0]
    out[0] = sk.vector(3, type(x[0]))(1.0, 2.0, 3.0) * p.volume.dtype(2.0)


def test_type_of_a_component_and_dtype_of_a_struct_field_are_known_without_code():
    out = sk.zeros(1, dtype=sk.vec3d)
    vols = _Volumes(volume=sk.zeros(1, dtype=sk.float64))
    sk.launch(types_without_loads, 1, inputs=[sk.zeros(1, dtype=sk.vec3d), vols, out])
    np.testing.assert_array_equal(out.numpy()[0], [2.0, 4.0, 6.0])
    src = types_without_loads.overload([sk.array(dtype=sk.vec3d), _Volumes, sk.array(dtype=sk.vec3d)]).source()
    assert "p.volume;" not in src  # no load of the field for its dtype
    assert not re.search(r"= x_\d+\[0\]", src)  # no read of the component for its type
