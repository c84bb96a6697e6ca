"""``sk.types`` (Warp's ``wp.types``) and ``sk.dtype_from_numpy`` / ``sk.dtype_to_numpy``."""

import numpy as np
import pytest

import simkit as sk

T = sk.types

PAIRS = [(np.float32, sk.float32), (np.float64, sk.float64), (np.int32, sk.int32), (np.int64, sk.int64),
         (np.uint32, sk.uint32), (np.bool_, sk.bool_)]


@sk.struct
class Pair:
    a: float
    b: sk.vec3d


# -- dtype_from_numpy / dtype_to_numpy -----------------------------------------------------

@pytest.mark.parametrize("np_type, sk_type", PAIRS, ids=[p[1].__name__ for p in PAIRS])
def test_dtype_from_numpy_takes_a_numpy_type_a_dtype_or_its_name(np_type, sk_type):
    assert sk.dtype_from_numpy(np_type) is sk_type
    assert sk.dtype_from_numpy(np.dtype(np_type)) is sk_type
    assert sk.dtype_from_numpy(np.dtype(np_type).name) is sk_type


@pytest.mark.parametrize("np_type, sk_type", PAIRS, ids=[p[1].__name__ for p in PAIRS])
def test_dtype_to_numpy_gives_the_numpy_scalar_type(np_type, sk_type):
    assert sk.dtype_to_numpy(sk_type) is np_type


def test_dtype_to_numpy_reads_python_annotations_as_simkit_does():
    assert sk.dtype_to_numpy(float) is np.float32
    assert sk.dtype_to_numpy(int) is np.int32


@pytest.mark.parametrize("bad", [np.complex64, np.dtype("U4"), object], ids=["complex64", "str", "object"])
def test_dtype_from_numpy_refuses_an_unsupported_dtype_and_lists_the_supported_ones(bad):
    with pytest.raises(TypeError, match=r"dtype_from_numpy: numpy dtype .* has no simkit scalar type "
                                        r"\(supported: float32, float64, int32"):
        sk.dtype_from_numpy(bad)


@pytest.mark.parametrize("bad", [float, int, None, "no such dtype"], ids=["float", "int", "None", "nonsense"])
def test_dtype_from_numpy_refuses_what_is_not_a_numpy_dtype(bad):
    with pytest.raises(TypeError, match="dtype_from_numpy: numpy_dtype must be a numpy dtype"):
        sk.dtype_from_numpy(bad)


def test_dtype_to_numpy_refuses_a_vector_and_names_its_component_type():
    with pytest.raises(TypeError, match=r"got vec3d, a vec of float64; pass its component type, "
                                        r"sk.types.type_scalar_type\(vec3d\)"):
        sk.dtype_to_numpy(sk.vec3d)


@pytest.mark.parametrize("bad", [3.0, "float32", Pair], ids=["number", "string", "struct"])
def test_dtype_to_numpy_refuses_what_is_not_a_type(bad):
    with pytest.raises(TypeError, match=r"dtype_to_numpy: dtype must be a simkit scalar type \(float32, "):
        sk.dtype_to_numpy(bad)


def test_dtype_functions_are_reachable_as_sk_types_too():
    assert T.dtype_from_numpy is sk.dtype_from_numpy and T.dtype_to_numpy is sk.dtype_to_numpy


# -- constructors ---------------------------------------------------------------------------

def test_constructors_take_warps_keywords_and_give_the_named_types():
    assert T.vector(length=3, dtype=sk.float64) is sk.vec3d
    assert T.vector(length=6, dtype=float) is sk.spatial_vector
    assert T.matrix(shape=(3, 3), dtype=float) is sk.mat33
    assert T.quaternion(dtype=sk.float64) is sk.quatd
    assert T.transformation(dtype=float) is sk.transform


def test_any_length_and_shape_is_a_type_of_its_own():
    v7, m25 = T.vector(7, sk.int64), T.matrix((2, 5), sk.float64)
    assert v7 is sk.vector(7, sk.int64) and v7 is not sk.vector(7, sk.int32)
    assert v7(1, 2, 3, 4, 5, 6, 7)[6] == 7
    assert m25(range(10))[1] == [5.0, 6.0, 7.0, 8.0, 9.0]


# -- questions about types -------------------------------------------------------------------

M23 = sk.matrix((2, 3), sk.float64)
SIZES = [(sk.float64, 1, 8, 1), (float, 1, 4, 1), (sk.vec3, 3, 12, 3), (sk.vector(5, sk.float64), 5, 40, 5),
         (M23, 6, 48, 2), (sk.spatial_matrix, 36, 144, 6), (sk.quatd, 4, 32, 4), (sk.transform, 7, 28, 7)]


@pytest.mark.parametrize("t, size, nbytes, length", SIZES, ids=[getattr(p[0], "__name__", str(p[0])) for p in SIZES])
def test_type_size_counts_components_type_size_in_bytes_counts_bytes_type_length_the_first_dimension(
        t, size, nbytes, length):
    assert (T.type_size(t), T.type_size_in_bytes(t), T.type_length(t)) == (size, nbytes, length)


def test_a_value_answers_for_its_type():
    assert T.type_size(M23()) == 6 and T.type_length(sk.vec3(1.0, 2.0, 3.0)) == 3
    assert T.type_scalar_type(sk.vec3d(0.0)) is sk.float64


def test_type_size_in_bytes_of_a_struct_is_its_c_layout():
    assert T.type_size_in_bytes(Pair) == 32  # a float32, padding to 8, three float64


def test_type_scalar_type_is_the_component_type():
    assert T.type_scalar_type(M23) is sk.float64
    assert T.type_scalar_type(sk.quat) is sk.float32
    assert T.type_scalar_type(sk.uint32) is sk.uint32
    assert T.type_scalar_type(float) is sk.float32


KINDS = [(sk.vec3, "vector"), (sk.vector(5, sk.int32), "vector"), (sk.spatial_vectord, "vector"), (M23, "matrix"),
         (sk.spatial_matrix, "matrix"), (sk.quatd, "quaternion"), (sk.transform, "transformation"),
         (sk.float32, None), (float, None), (Pair, None), (sk.vec3(1.0, 2.0, 3.0), None)]


@pytest.mark.parametrize("t, kind", KINDS, ids=[str(i) for i in range(len(KINDS))])
def test_type_is_predicates_tell_the_kinds_apart(t, kind):
    got = {k for k in ("vector", "matrix", "quaternion", "transformation") if getattr(T, f"type_is_{k}")(t)}
    assert got == ({kind} if kind else set())


def test_type_is_int_and_type_is_float():
    assert T.type_is_int(sk.uint32) and T.type_is_int(int) and not T.type_is_int(sk.bool_)
    assert T.type_is_float(sk.float64) and T.type_is_float(float) and not T.type_is_float(sk.vec3)


def test_types_equal_reads_annotations_as_their_types():
    assert T.types_equal(float, sk.float32) and T.types_equal(sk.vector(3, float), sk.vec3)
    assert not T.types_equal(sk.vec3, sk.vec3d)


@pytest.mark.parametrize("fn", ["type_size", "type_length", "type_scalar_type", "type_size_in_bytes"])
@pytest.mark.parametrize("bad", [3.0, "vec3", sk.zeros(1)], ids=["number", "string", "array"])
def test_size_questions_refuse_what_is_not_a_value_type(fn, bad):
    with pytest.raises(TypeError, match=rf"sk.types.{fn}: expected a scalar, vector, matrix, quat or transform type"):
        getattr(T, fn)(bad)


def test_warp_answers_the_same_type_questions():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    ours = [T.vector(5, sk.float64), T.matrix((2, 3), float), T.quaternion(sk.float64), T.transformation(float),
            sk.spatial_matrix, sk.float64]
    theirs = [wp.types.vector(5, wp.float64), wp.types.matrix((2, 3), wp.float32), wp.types.quaternion(wp.float64),
              wp.types.transformation(wp.float32), wp.spatial_matrix, wp.float64]
    for o, w in zip(ours, theirs):
        assert T.type_size(o) == wp.types.type_size(w)
        assert T.type_size_in_bytes(o) == wp.types.type_size_in_bytes(w)
        assert T.type_length(o) == wp._src.types.type_length(w)
        for k in ("vector", "matrix", "quaternion", "transformation"):
            assert getattr(T, f"type_is_{k}")(o) == getattr(wp.types, f"type_is_{k}")(w), (o, k)
        assert sk.dtype_to_numpy(T.type_scalar_type(o)) is wp.dtype_to_numpy(
            wp._src.types.type_scalar_type(w))
    for np_type, sk_type in PAIRS:
        assert sk.dtype_to_numpy(sk.dtype_from_numpy(np_type)) is wp.dtype_to_numpy(wp.dtype_from_numpy(np_type))
