"""Warp's generic vector and matrix annotations, ``types.vector(length=Any, dtype=F)`` and
``types.matrix(shape=(Any, Any), dtype=F)``: a kernel or function parameter so annotated takes a
vector (matrix) of any length (shape) of ``F``, one overload per size, as in Warp. The kernels of
generic_value_kernels.py run under simkit and under warp-lang (a copy whose first line imports
warp as M) and must agree, values and gradients."""

from typing import Any

import numpy as np
import pytest

import simkit as sk
from warp_twin import import_as_warp  # tests/core is on sys.path

import generic_value_kernels as S  # tests/core is on sys.path (pytest prepends it)


@pytest.fixture(scope="module")
def warp_kernels(tmp_path_factory):
    """(warp, the kernel text imported as Warp)."""
    wp, twin = import_as_warp(S, tmp_path_factory.mktemp("warp_generic_values"))
    wp.set_device("cpu")  # Warp's arrays and launches on its CPU device, also where a GPU is
    return wp, twin


def _reduce(M, kernel_module, n, shape):
    v = M.types.vector(n, M.float64)(*np.arange(1.0, n + 1.0))
    m = M.types.matrix(shape, M.float64)(*np.linspace(-1.0, 2.0, shape[0] * shape[1]))
    out = M.zeros(4, dtype=M.float64)
    M.launch(kernel_module.reduce_values, 1, inputs=[v, m, out])
    return out.numpy()


@pytest.mark.parametrize("n, shape", [(2, (4, 4)), (5, (2, 3)), (9, (1, 6))])
@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_any_length_and_any_shape_parameters_take_every_size_like_warp(warp_kernels, n, shape):
    wp, W = warp_kernels
    got = _reduce(sk, S, n, shape)
    np.testing.assert_allclose(got, _reduce(wp, W, n, shape), rtol=1e-12)
    assert got[2:].tolist() == [n, shape[0]]


def _reduce_arrays_with_grads(M, kernel_module):
    rng = np.random.default_rng(3)
    xs = [M.array(rng.normal(size=(4,) + s), dtype=t, requires_grad=True)
          for s, t in (((3,), M.vec3d), ((6,), M.spatial_vectord), ((3, 3), M.mat33d))]
    out = M.zeros(4, dtype=M.float64, requires_grad=True)
    tape = M.Tape()
    with tape:
        M.launch(kernel_module.reduce_arrays, 4, inputs=xs, outputs=[out])
    tape.backward(grads={out: M.array(np.array([1.0, -2.0, 0.5, 3.0]), dtype=M.float64)})
    return [out.numpy()] + [tape.gradients[x].numpy() for x in xs]


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_generic_function_gradients_match_warp(warp_kernels):
    wp, W = warp_kernels
    for got, want in zip(_reduce_arrays_with_grads(sk, S), _reduce_arrays_with_grads(wp, W)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_any_is_warps_zero_size_and_its_values_are_empty():
    assert sk.types.vector(Any, float) is sk.types.vector(0, float)
    assert sk.types.matrix((Any, Any), sk.float64) is sk.types.matrix((0, 0), sk.float64)
    empty = sk.types.vector(0, float)()
    assert len(empty) == 0 and empty == sk.types.vector(length=0, dtype=float)()
    assert sk.types.type_is_vector(S.AnyVec) and sk.types.type_is_matrix(S.AnyMat)


def test_a_generic_function_called_from_python_checks_the_component_type():
    assert S.weighted_sum(sk.vec3d(1.0, 1.0, 1.0)) == 6.0
    with pytest.raises(TypeError, match=r"weighted_sum\(\).*vec3\b"):
        S.weighted_sum(sk.vec3(1.0, 1.0, 1.0))


def test_an_argument_of_another_component_type_or_kind_is_refused_naming_the_annotation():
    out = sk.zeros(4, dtype=sk.float64)
    with pytest.raises(TypeError, match=r"argument 'v' expects vector\(Any, float64\), got vec3$"):
        sk.launch(S.reduce_values, 1, inputs=[sk.vec3(), sk.mat22d(), out])
    with pytest.raises(TypeError, match=r"argument 'm' expects matrix\(\(Any, Any\), float64\), got vec4d"):
        sk.launch(S.reduce_values, 1, inputs=[sk.vec3d(), sk.vec4d(), out])


def test_a_partly_generic_matrix_fixes_its_other_dimension():
    @sk.kernel
    def rows_of_three(m: sk.types.matrix(shape=(Any, 3), dtype=float), out: sk.array(dtype=int)):
        out[0] = len(m)

    out = sk.zeros(1, dtype=int)
    sk.launch(rows_of_three, 1, inputs=[sk.types.matrix((5, 3), float)(), out])
    assert out.numpy()[0] == 5
    with pytest.raises(TypeError, match=r"expects matrix\(\(Any, 3\), float32\), got mat32"):
        sk.launch(rows_of_three, 1, inputs=[sk.types.matrix((3, 2), float)(), out])


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None])
def test_a_bad_length_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="vector length must be a non-negative int or typing.Any"):
        sk.types.vector(bad, float)
    with pytest.raises(ValueError, match="matrix shape entries must be a non-negative int or typing.Any"):
        sk.types.matrix((2, bad), float)


def test_a_bad_shape_is_a_clear_error():
    with pytest.raises(ValueError, match=r"matrix shape must be \(rows, cols\)"):
        sk.types.matrix((Any,), float)
    with pytest.raises(TypeError, match="components must be a scalar type"):
        sk.types.vector(3, "float32")


def _components(M, kernel_module):
    rng = np.random.default_rng(9)
    v = M.array(rng.normal(size=(4, 3)), dtype=M.vec3d, requires_grad=True)
    h = M.array(rng.normal(size=(4, 3)).astype(np.float16), dtype=M.vec3h)
    m = M.array(rng.integers(-5, 5, size=(4, 2, 2)).astype(np.int32), dtype=M.types.matrix((2, 2), M.int32))
    out, out_int = M.zeros(4, dtype=M.float64, requires_grad=True), M.zeros(4, dtype=M.int32)
    tape = M.Tape()
    with tape:
        M.launch(kernel_module.generic_components, 4, inputs=[v, h, m], outputs=[out, out_int])
    tape.backward(grads={out: M.array(np.arange(1.0, 5.0), dtype=M.float64)})
    return out.numpy(), out_int.numpy(), tape.gradients[v].numpy()


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_generic_component_types_int_float_scalar_match_warp(warp_kernels):
    wp, W = warp_kernels
    for got, want in zip(_components(sk, S), _components(wp, W)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_generic_component_type_refuses_another_kind():
    @sk.kernel
    def floats_only(v: sk.types.vector(3, sk.Float), out: sk.array(dtype=float)):
        out[0] = float(v[0])

    with pytest.raises(TypeError, match=r"expects vector\(3, Float\), got vec3i"):
        sk.launch(floats_only, 1, inputs=[sk.vec3i(1, 2, 3), sk.zeros(1)])


def test_any_components_and_any_length_take_every_vector():
    @sk.kernel
    def count(v: sk.types.vector(length=Any, dtype=Any), out: sk.array(dtype=int)):
        out[0] = len(v)

    out = sk.zeros(1, dtype=int)
    for v, n in ((sk.vec3i(1, 2, 3), 3), (sk.vector(5, sk.float64)(), 5), (sk.vec2h(), 2)):
        sk.launch(count, 1, inputs=[v, out])
        assert out.numpy()[0] == n
    assert sk.types.type_repr(sk.types.vector(3, sk.Float)) == "vector(length=3, dtype=Float)"


def test_a_literal_passed_for_a_generic_scalar_takes_its_default_type():
    assert S.twice(1.5) == 3.0 and S.twice(2) == 4
    with pytest.raises(TypeError, match="no definition|twice"):
        S.twice("x")
