"""Python-side values of the kernel language's types behave like small numeric sequences."""

import numpy as np
import pytest

import simkit as sk

pytestmark = pytest.mark.cpu_only("Python-side values; launches nothing")


# -- construction ----------------------------------------------------------------

def test_vector_takes_one_number_per_component():
    v = sk.vec3(1, 2, 3)
    assert list(v) == [1.0, 2.0, 3.0]


def test_vector_from_one_number_broadcasts_it_to_every_component():
    assert sk.vec3(2.0) == [2.0, 2.0, 2.0]


def test_vector_without_arguments_is_zero():
    assert sk.vec3() == [0.0, 0.0, 0.0]
    assert sk.vec4i() == [0, 0, 0, 0]


def test_vector_from_a_sequence_or_numpy_array():
    assert sk.vec3([1, 2, 3]) == (1, 2, 3)
    assert sk.vec3(np.array([4.0, 5.0, 6.0])) == (4, 5, 6)


def test_vector_from_another_vector_converts_its_precision():
    v = sk.vec3(sk.vec3d(1.5, 2.5, 3.5))
    assert type(v) is sk.vec3 and v == [1.5, 2.5, 3.5]


def test_quat_without_arguments_is_the_identity_rotation():
    assert sk.quat() == [0.0, 0.0, 0.0, 1.0]
    assert sk.quatd() == [0.0, 0.0, 0.0, 1.0]


def test_transform_without_arguments_is_the_identity():
    t = sk.transform()
    assert t.p == [0, 0, 0] and t.q == [0, 0, 0, 1]


def test_transform_from_position_and_rotation():
    t = sk.transform(sk.vec3(1, 2, 3), sk.quat(0, 0, 1, 0))
    assert t.p == [1, 2, 3]
    assert t.q == [0, 0, 1, 0]
    assert len(t) == 7


def test_transform_from_p_and_q_keywords():
    t = sk.transform(p=[1, 2, 3], q=sk.quat(0, 1, 0, 0))
    assert t == [1, 2, 3, 0, 1, 0, 0]


def test_transform_p_and_q_are_typed_and_assignable():
    t = sk.transformd()
    assert type(t.p) is sk.vec3d and type(t.q) is sk.quatd
    t.p = (4, 5, 6)
    assert t.p == [4, 5, 6] and t.q == [0, 0, 0, 1]


def test_matrix_from_row_major_components_rows_or_vectors():
    expected = [[1, 2], [3, 4]]
    assert sk.mat22(1, 2, 3, 4) == expected
    assert sk.mat22([[1, 2], [3, 4]]) == expected
    assert sk.mat22(sk.vec2(1, 2), sk.vec2(3, 4)) == expected


def test_integer_vector_holds_integers():
    v = sk.vec3i(1, 2, 3)
    assert all(type(c) is int for c in v)


# -- wrong component counts --------------------------------------------------------

@pytest.mark.parametrize("make, count", [
    (lambda: sk.vec3(1, 2), 2),
    (lambda: sk.vec3(1, 2, 3, 4), 4),
    (lambda: sk.mat22(1, 2, 3), 3),
    (lambda: sk.quat(1, 2, 3), 3),
    (lambda: sk.transform(sk.vec3(1, 2, 3)), 3),
])
def test_wrong_component_count_is_a_value_error_naming_type_and_counts(make, count):
    with pytest.raises(ValueError, match=rf"takes \d+ components, got {count}"):
        make()


def test_non_numeric_components_are_a_type_error():
    with pytest.raises(TypeError, match="vec3"):
        sk.vec3("a", "b", "c")


@pytest.mark.parametrize("make", [lambda: sk.vec3(None), lambda: sk.vec3(1.0, None, 2.0),
                                  lambda: sk.vec3([1.0, None, 2.0]), lambda: sk.float32(None),
                                  lambda: sk.float64(None)])
def test_none_is_a_type_error_not_a_nan(make):
    with pytest.raises(TypeError, match="takes"):
        make()


def test_transform_refuses_components_and_keywords_together():
    with pytest.raises(TypeError, match="not both"):
        sk.transform(1, 2, 3, 0, 0, 0, 1, p=[0, 0, 0])


# -- sequence behaviour -------------------------------------------------------------

def test_vector_indexing_iteration_and_len():
    v = sk.vec4(1, 2, 3, 4)
    assert v[0] == 1.0 and v[-1] == 4.0
    assert list(v) == [1.0, 2.0, 3.0, 4.0]
    assert len(v) == 4


def test_vector_component_assignment_by_index():
    v = sk.vec3()
    v[1] = 5.0
    assert v == [0, 5, 0]


def test_vector_index_out_of_range_raises_index_error():
    with pytest.raises(IndexError):
        sk.vec3()[3]


def test_matrix_row_is_a_vector_and_element_index_is_a_number():
    m = sk.mat22(1, 2, 3, 4)
    assert type(m[1]) is sk.vec2 and m[1] == [3, 4]
    assert m[0, 1] == 2.0 and m[0][1] == 2.0
    assert len(m) == 2 and [list(r) for r in m] == [[1, 2], [3, 4]]


def test_named_components_read_and_write():
    v = sk.vec3(1, 2, 3)
    assert (v.x, v.y, v.z) == (1.0, 2.0, 3.0)
    v.y = 7.0
    assert v == [1, 7, 3]
    assert sk.quat(0, 0, 0, 1).w == 1.0


def test_component_beyond_the_length_is_an_attribute_error():
    with pytest.raises(AttributeError, match="vec2 has no attribute 'z'"):
        sk.vec2(1, 2).z
    with pytest.raises(AttributeError):
        sk.vec3().w


# -- equality and repr ---------------------------------------------------------------

def test_equality_with_lists_tuples_and_other_vectors():
    v = sk.vec3(1, 2, 3)
    assert v == [1, 2, 3] and v == (1, 2, 3) and v == sk.vec3(1, 2, 3)
    assert [1, 2, 3] == v
    assert v == sk.vec3d(1, 2, 3)
    assert v != [1, 2, 4]


def test_values_of_another_length_or_kind_are_not_equal():
    v = sk.vec3(1, 2, 3)
    assert v != [1, 2]
    assert v != "abc"
    assert v != None  # noqa: E711 - the comparison itself is under test


def test_values_are_unhashable_because_they_are_mutable():
    with pytest.raises(TypeError):
        hash(sk.vec3())


def test_repr_names_the_type_and_shows_shortest_components():
    assert repr(sk.vec3(1, 2, 3)) == "vec3(1.0, 2.0, 3.0)"
    assert repr(sk.vec3(0.1, 0.2, 0.3)) == "vec3(0.1, 0.2, 0.3)"  # float32, not 0.10000000149011612
    assert repr(sk.vec3i(1, 2, 3)) == "vec3i(1, 2, 3)"
    assert repr(sk.quat()) == "quat(0.0, 0.0, 0.0, 1.0)"


def test_repr_evaluates_back_to_an_equal_value():
    for v in (sk.vec3(0.1, -2.5, 3e20), sk.mat22d(1, 2, 3, 4), sk.transform(p=[1, 2, 3])):
        assert eval("sk." + repr(v)) == v


# -- numpy ----------------------------------------------------------------------------

@pytest.mark.parametrize("t, dtype", [(sk.vec3, np.float32), (sk.vec3d, np.float64), (sk.vec3i, np.int32),
                                      (sk.mat33, np.float32), (sk.quatd, np.float64)])
def test_numpy_round_trip_keeps_dtype_and_values(t, dtype):
    v = t(*range(1, int(np.prod(t._sk_shape)) + 1))
    a = np.asarray(v)
    assert a.dtype == dtype and a.shape == t._sk_shape
    assert t(a) == v


def test_np_asarray_is_a_copy_that_does_not_alias_the_value():
    v = sk.vec3(1, 2, 3)
    a = np.array(v)
    a[0] = 100
    assert v[0] == 1.0


def test_numpy_method_gives_a_copy_with_the_value_shape():
    m = sk.mat22(1, 2, 3, 4).numpy()
    assert m.shape == (2, 2) and m.dtype == np.float32


# -- type constructors -------------------------------------------------------------------

def test_generic_vector_and_matrix_return_the_named_types():
    assert sk.vector(3, sk.float64) is sk.vec3d
    assert sk.vector(3, float) is sk.vec3
    assert sk.vector(2, int) is sk.vec2i
    assert sk.matrix((3, 3), float) is sk.mat33
    assert sk.matrix((4, 4), sk.float64) is sk.mat44d


def test_generic_types_of_other_sizes_work_like_the_named_ones():
    v5 = sk.vector(5, sk.float32)
    assert v5 is sk.vector(5) and len(v5(1)) == 5
    m23 = sk.matrix((2, 3), float)
    assert m23(range(6))[1] == [3, 4, 5]


def test_bad_generic_type_arguments_are_reported():
    with pytest.raises(ValueError, match="non-negative int or typing.Any"):
        sk.vector(-1)
    with pytest.raises(ValueError, match="non-negative int or typing.Any"):
        sk.matrix((2, "3"), float)
    with pytest.raises(TypeError, match="scalar type"):
        sk.vector(3, sk.vec3)
    with pytest.raises(ValueError, match=r"\(rows, cols\)"):
        sk.matrix((3,), float)


def test_scalar_types_convert_numbers_to_their_precision():
    x = sk.float64(1.5)
    assert x == 1.5 and x.dtype == np.float64
    assert sk.float32(0.1) == np.float32(0.1)
    assert sk.int32(7).dtype == np.int32
    assert sk.uint32(5).dtype == np.uint32
    assert repr(sk.float64) == "sk.float64"


# -- arithmetic -----------------------------------------------------------------------

def test_vector_addition_and_subtraction():
    a, b = sk.vec3(1, 2, 3), sk.vec3(1, 1, 1)
    assert a + b == [2, 3, 4]
    assert a - b == [0, 1, 2]
    assert -a == [-1, -2, -3]
    assert type(a + b) is sk.vec3


def test_vector_with_a_plain_sequence_on_either_side():
    v = sk.vec3(1, 2, 3)
    assert v + [1, 1, 1] == [2, 3, 4]
    assert (1, 1, 1) + v == [2, 3, 4]
    assert [10, 10, 10] - v == [9, 8, 7]


def test_scalar_multiplication_and_division():
    v = sk.vec3(1, 2, 3)
    assert v * 2 == [2, 4, 6] and 2 * v == [2, 4, 6]
    assert v / 2 == [0.5, 1.0, 1.5]
    assert type(sk.vec3d(1, 2, 3) * 2.0) is sk.vec3d


def test_adding_vectors_of_different_lengths_is_a_type_error():
    with pytest.raises(TypeError, match="vec3 and vec2"):
        sk.vec3() + sk.vec2()
    with pytest.raises(ValueError, match="shape"):
        sk.vec3() + [1, 2]


def test_vector_times_vector_is_not_defined():
    with pytest.raises(TypeError):
        sk.vec3(1, 2, 3) * sk.vec3(1, 2, 3)


def test_matrix_vector_and_matrix_matrix_products():
    m = sk.mat22(1, 2, 3, 4)
    assert m @ sk.vec2(1, 1) == [3, 7]
    assert type(m @ sk.vec2(1, 1)) is sk.vec2
    assert m * sk.vec2(1, 1) == [3, 7]
    assert m @ sk.mat22(0, 1, 1, 0) == [[2, 1], [4, 3]]
    assert type(m @ m) is sk.mat22


def test_quaternion_product_of_two_rotations_composes_them():
    qz90 = sk.quat(0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4))
    q = qz90 * qz90
    assert np.allclose(np.asarray(q), [0, 0, 1, 0], atol=1e-6)
