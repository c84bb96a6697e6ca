"""Warp's names of types and its questions about them, as ported code reaches them: ``sk.bool``,
the f-suffixed float32 aliases (``vec3f`` ... ``spatial_matrixf``) and ``sk.types``' ``type_repr``,
``type_ctype``, ``type_is_*``, ``is_*`` and the scalar type tuples, each checked against warp-lang
on the same types and values."""

import ctypes
import typing

import numpy as np
import pytest

import simkit as sk

wp = pytest.importorskip("warp")

ALIASES = ["vec2f", "vec3f", "vec4f", "mat22f", "mat33f", "mat44f", "quatf", "transformf", "spatial_vectorf",
           "spatial_matrixf"]
REPR_TYPES = ["vec3", "vec2i", "vec3ub", "vec4ul", "mat44d", "mat22h", "quat", "quath", "transformd", "transform",
              "spatial_vector", "spatial_matrixd", "int64", "uint8", "float16", "float32", *ALIASES]


def _both(name):
    return getattr(sk, name), getattr(wp, name)


@pytest.mark.parametrize("name", ALIASES)
def test_the_f_suffixed_aliases_are_the_float32_types(name):
    s, w = _both(name)
    assert s is getattr(sk, name[:-1]) and sk.types.type_scalar_type(s) is sk.float32
    assert sk.types.type_size(s) == wp.types.type_size(w)


def test_sk_bool_is_the_kernel_bool():
    assert sk.bool is sk.bool_ and sk.types.type_repr(sk.bool) == "bool"

    @sk.kernel
    def flags(x: sk.array(dtype=float), out: sk.array(dtype=sk.bool)):
        i = sk.tid()
        out[i] = sk.bool(x[i] > 0.0)

    out = sk.zeros(3, dtype=sk.bool)
    sk.launch(flags, 3, inputs=[sk.array([1.0, -1.0, 2.0]), out])
    assert out.numpy().tolist() == [True, False, True]


@pytest.mark.parametrize("name", REPR_TYPES)
def test_type_repr_is_warps(name):
    s, w = _both(name)
    assert sk.types.type_repr(s) == wp.types.type_repr(w)


@pytest.mark.parametrize("shape, dtype", [((2, 3), "float64"), ((6, 6), "float32"), ((5, 1), "float16")])
def test_type_repr_of_other_shapes_is_warps(shape, dtype):
    s = sk.types.matrix(shape, getattr(sk, dtype))
    assert sk.types.type_repr(s) == wp.types.type_repr(wp.types.matrix(shape, getattr(wp, dtype)))
    v = sk.types.vector(shape[0] * shape[1], getattr(sk, dtype))
    assert sk.types.type_repr(v) == wp.types.type_repr(wp.types.vector(shape[0] * shape[1], getattr(wp, dtype)))


def test_type_repr_of_python_types_arrays_and_generic_sizes():
    assert [sk.types.type_repr(t) for t in (int, float, bool)] == ["int", "float", "bool"]
    assert sk.types.type_repr(sk.array(dtype=float, ndim=2)) == wp.types.type_repr(wp.array(dtype=float, ndim=2))
    assert sk.types.type_repr(sk.types.vector(length=typing.Any, dtype=float)) == "vector(length=Any, dtype=float32)"
    with pytest.raises(TypeError, match="type_repr: 3 is not a simkit type"):
        sk.types.type_repr(3)


@pytest.mark.parametrize("name", ["float32", "float64", "int8", "uint64", "float16", "bool"])
def test_type_ctype_of_scalars_is_warps(name):
    s, w = _both(name)
    assert sk.types.type_ctype(s) is wp.types.type_ctype(w)


def test_type_ctype_of_a_composite_is_a_ctypes_array_of_its_components():
    t = sk.types.type_ctype(sk.vec3d)
    assert issubclass(t, ctypes.Array) and t._type_ is ctypes.c_double and t._length_ == 3
    assert ctypes.sizeof(t) == ctypes.sizeof(wp.types.type_ctype(wp.vec3d))


TYPE_QUESTIONS = ["type_is_scalar", "type_is_value", "type_is_composite", "type_is_vector", "type_is_matrix",
                  "type_is_quaternion", "type_is_transformation", "type_is_int", "type_is_float"]


@pytest.mark.parametrize("question", TYPE_QUESTIONS)
def test_questions_about_types_answer_as_warps(question):
    for name in ("float32", "int16", "bool", "vec3", "spatial_vector", "mat23", "quatd", "transform"):
        if name == "mat23":
            s, w = sk.types.matrix((2, 3), float), wp.types.matrix((2, 3), float)
        else:
            s, w = _both(name)
        assert getattr(sk.types, question)(s) == getattr(wp.types, question)(w), (question, name)
    for t in (int, float):
        assert getattr(sk.types, question)(t) == getattr(wp.types, question)(t), (question, t)


VALUE_QUESTIONS = ["is_scalar", "is_value", "is_composite", "is_vector", "is_matrix", "is_quaternion",
                   "is_transformation", "is_int", "is_float"]


@pytest.mark.parametrize("question", VALUE_QUESTIONS)
def test_questions_about_values_answer_as_warps(question):
    values = [lambda M: 1, lambda M: 1.5, lambda M: True, lambda M: np.float32(1.0), lambda M: np.int64(2),
              lambda M: M.vec3(), lambda M: M.mat22(), lambda M: M.quat(), lambda M: M.transform(), lambda M: "x"]
    for make in values:
        assert getattr(sk.types, question)(make(sk)) == getattr(wp.types, question)(make(wp)), (question, make(sk))


def test_arrays_and_structs_are_told_apart():
    @sk.struct
    class Particle:
        mass: float

    assert sk.types.is_array(sk.zeros(3)) and not sk.types.is_array(np.zeros(3))
    assert sk.types.type_is_array(sk.array(dtype=float)) and not sk.types.type_is_array(sk.vec3)
    assert sk.types.type_is_struct(Particle) and sk.types.is_struct(Particle(mass=1.0))
    assert not sk.types.type_is_struct(sk.vec3) and not sk.types.is_struct(sk.vec3())


def test_the_scalar_type_tuples_hold_warps_types_by_kind():
    for tup in ("int_types", "float_types"):
        assert {t.__name__ for t in getattr(sk.types, tup)} == {t.__name__ for t in getattr(wp._src.types, tup)}
    assert set(sk.types.scalar_types) == set(sk.types.int_types) | set(sk.types.float_types) | {sk.bool}


def test_type_ctype_refuses_what_is_not_a_value_type():
    with pytest.raises(TypeError, match="type_ctype: expected a scalar, vector, matrix, quat or transform type"):
        sk.types.type_ctype("float32")


@pytest.mark.parametrize("name", ["vec3", "vec2d", "mat22", "mat33d", "quat", "transform",
                                  "spatial_vector", "vec4h"])
def test_composite_types_carry_warps_shape_length_and_scalar_class_attributes(name):
    s, w = getattr(sk, name), getattr(wp, name)
    assert (s._shape_, s._length_) == (w._shape_, w._length_)
    assert s._wp_scalar_type_.__name__ == w._wp_scalar_type_.__name__
