"""What Warp code sees of simkit values in Python: printing, truth of arrays, calling a function."""

import numpy as np
import pytest

import simkit as sk


@sk.func
def half_of(x: sk.float64):
    return x * sk.float64(0.5)


@sk.func
def size_of(v: sk.vec3):
    return sk.length(v)


def test_str_of_a_vector_is_the_list_of_its_components():
    assert str(sk.vec3(1.0, 2.0, 3.0)) == "[1.0, 2.0, 3.0]"
    assert str(sk.vec2i(1, 2)) == "[1, 2]"


def test_str_of_a_quat_and_a_transform_is_the_flat_list():
    assert str(sk.quat(0.0, 0.0, 0.0, 1.0)) == "[0.0, 0.0, 0.0, 1.0]"
    assert str(sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat())) == "[1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]"


def test_str_of_a_matrix_is_one_row_per_line():
    assert str(sk.mat22(1.0, 2.0, 3.0, 4.0)) == "[[1.0, 2.0],\n [3.0, 4.0]]"


def test_repr_still_names_the_type():
    assert repr(sk.vec3(1.0, 2.0, 3.0)) == "vec3(1.0, 2.0, 3.0)"


def test_an_array_is_true_when_its_first_dimension_is_not_empty():
    assert not sk.zeros(0)
    assert sk.zeros(1)
    assert not sk.zeros((0, 3))


def test_a_float64_parameter_refuses_a_float32_value_called_from_python():
    with pytest.raises(TypeError, match=r"no definition of half_of\(\) takes \(float32\)"):
        half_of(np.float32(1.0))


def test_a_float64_parameter_takes_a_float64_value_and_a_python_float():
    assert half_of(np.float64(3.0)) == 1.5
    assert half_of(3.0) == 1.5  # a literal is weakly typed, as in kernels


def test_a_vector_parameter_refuses_a_scalar_called_from_python():
    with pytest.raises(TypeError, match=r"no definition of size_of\(\) takes \(float\)"):
        size_of(1.0)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_prints_and_tests_truth_the_same_way():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()
    assert str(wp.vec3(1.0, 2.0, 3.0)) == str(sk.vec3(1.0, 2.0, 3.0))
    assert str(wp.mat22(1.0, 2.0, 3.0, 4.0)) == str(sk.mat22(1.0, 2.0, 3.0, 4.0))
    assert str(wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity())) == str(sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat()))
    assert bool(wp.zeros(0, dtype=float, device="cpu")) == bool(sk.zeros(0))
    assert bool(wp.zeros(1, dtype=float, device="cpu")) == bool(sk.zeros(1))
