"""``sk.types``: the type constructors and questions about types that Warp code reaches
through ``wp.types``, under Warp's names.

A "type" here is a simkit value type (``sk.float64``, ``sk.vec3``, ``sk.vector(5, sk.float64)``,
``sk.matrix((2, 3), float)``, ``sk.quat``, ``sk.transform``) or one of Python's ``float``,
``int`` and ``bool``, which mean float32, int32 and bool as they do in annotations.

Example::

    import simkit as sk

    vec5 = sk.types.vector(length=5, dtype=sk.float64)
    sk.types.type_size(vec5)                            # 5 components
    sk.types.type_size_in_bytes(vec5)                   # 40
    sk.types.type_scalar_type(vec5)                     # sk.float64
    sk.types.type_is_matrix(sk.types.matrix((2, 3), float))   # True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import types as _T
from .core.array import Array, ArrayType, GenericArrayType
from .core.types import dtype_from_numpy, dtype_to_numpy, matrix, vector

__all__ = ["vector", "matrix", "quaternion", "transformation", "dtype_from_numpy", "dtype_to_numpy", "type_size",
           "type_size_in_bytes", "type_length", "type_scalar_type", "type_is_vector", "type_is_matrix",
           "type_is_quaternion", "type_is_transformation", "type_is_int", "type_is_float", "types_equal",
           "type_repr", "type_ctype", "type_is_scalar", "type_is_value", "type_is_composite", "type_is_array",
           "type_is_struct", "is_scalar", "is_value", "is_composite", "is_vector", "is_matrix", "is_quaternion",
           "is_transformation", "is_array", "is_struct", "is_int", "is_float", "scalar_types", "int_types",
           "float_types"]

# The scalar types by kind, as Warp lists them (bool is a scalar type, neither int nor float).
int_types = (_T.int8, _T.uint8, _T.int16, _T.uint16, _T.int32, _T.uint32, _T.int64, _T.uint64)
float_types = _T.SMALL_FLOATS + (_T.float32, _T.float64)
scalar_types = int_types + float_types + (_T.bool_,)


def quaternion(dtype: Any = _T.float32) -> type:
    """The quaternion type over ``dtype`` (Warp's ``wp.types.quaternion``); ``quaternion(sk.float64) is sk.quatd``.

    Example::

        sk.types.quaternion(dtype=sk.float64)      # sk.quatd
    """
    return _T.quat_of(dtype)


def transformation(dtype: Any = _T.float32) -> type:
    """The transform type over ``dtype`` (Warp's ``wp.types.transformation``).

    Example::

        sk.types.transformation(dtype=float)       # sk.transform
    """
    return _T.transform_of(dtype)


quaternion._sk_type_factory = True
transformation._sk_type_factory = True


def _value_type(t: Any, fn: str) -> Any:
    """The value type ``t`` names (a value stands for its own type); TypeError for anything else."""
    if isinstance(t, _T.Composite):
        t = type(t)
    t = _T.resolve(t)
    if not _T.is_value_type(t):
        raise TypeError(f"sk.types.{fn}: expected a scalar, vector, matrix, quat or transform type, got {t!r}")
    return t


def type_size(dtype: Any) -> int:
    """The number of scalar components of a value type, as Warp counts them: 1 for a scalar,
    ``rows * cols`` for a matrix, 4 for a quat, 7 for a transform. (Bytes: :func:`type_size_in_bytes`.)

    Example::

        sk.types.type_size(sk.mat33)     # 9
    """
    return int(np.prod(_value_type(dtype, "type_size")._sk_shape, dtype=np.int64))


def type_size_in_bytes(dtype: Any) -> int:
    """The size in bytes of one value of ``dtype`` (a value type or a ``@sk.struct``).

    Example::

        sk.types.type_size_in_bytes(sk.vec3d)     # 24
    """
    if getattr(dtype, "_sk_kind", None) == "struct":
        return _T.type_size(dtype)
    return _T.type_size(_value_type(dtype, "type_size_in_bytes"))


def type_length(obj: Any) -> int:
    """The length of a value type's first dimension (Warp's ``type_length``): a vector's length,
    a matrix's rows, 4 for a quat, 7 for a transform, 1 for a scalar type; of a value, its ``len``.

    Example::

        sk.types.type_length(sk.matrix((2, 3), float))    # 2
        sk.types.type_length(sk.vec3(1.0, 2.0, 3.0))      # 3
    """
    t = _value_type(obj, "type_length")
    return t._sk_shape[0] if t._sk_shape else 1


def type_scalar_type(dtype: Any) -> _T.ScalarType:
    """The component type of a value type (a scalar type is its own).

    Example::

        sk.types.type_scalar_type(sk.vec3d)     # sk.float64
    """
    return _value_type(dtype, "type_scalar_type")._sk_scalar


def _kind(t: Any) -> Any:
    return getattr(_T.resolve(t), "_sk_kind", None) if isinstance(t, type) or isinstance(t, _T.ScalarType) else None


def type_is_vector(t: Any) -> bool:
    """Whether ``t`` is a vector type (a spatial vector is one; a quat is not). False for values, as in Warp.

    Example::

        sk.types.type_is_vector(sk.vector(5, float))    # True
    """
    return _kind(t) == "vec"


def type_is_matrix(t: Any) -> bool:
    """Whether ``t`` is a matrix type.

    Example::

        sk.types.type_is_matrix(sk.spatial_matrix)    # True
    """
    return _kind(t) == "mat"


def type_is_quaternion(t: Any) -> bool:
    """Whether ``t`` is a quaternion type.

    Example::

        sk.types.type_is_quaternion(sk.quatd)    # True
    """
    return _kind(t) == "quat"


def type_is_transformation(t: Any) -> bool:
    """Whether ``t`` is a transform type.

    Example::

        sk.types.type_is_transformation(sk.transform)    # True
    """
    return _kind(t) == "transform"


def type_is_int(t: Any) -> bool:
    """Whether ``t`` is an integer scalar type (``int`` counts, ``bool`` does not).

    Example::

        sk.types.type_is_int(sk.uint32)    # True
    """
    s = _T.resolve(t)
    return isinstance(s, _T.ScalarType) and s.is_int


def type_is_float(t: Any) -> bool:
    """Whether ``t`` is a floating-point scalar type (``float`` counts).

    Example::

        sk.types.type_is_float(sk.float64)    # True
    """
    s = _T.resolve(t)
    return isinstance(s, _T.ScalarType) and s.is_float


def types_equal(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` name the same type (``float`` and ``sk.float32`` do).

    Example::

        sk.types.types_equal(sk.vector(3, float), sk.vec3)    # True
    """
    return _T.resolve(a) is _T.resolve(b)


def _warp_suffix(s: _T.ScalarType) -> str:
    return "f" if s is _T.float32 else _T._CT_SUFFIX[s.__name__]


def type_repr(t: Any) -> str:
    """Warp's short text for a type: ``vec3f``, ``mat22h``, ``quatd``, ``vector(length=5, dtype=float64)``,
    ``array(ndim=2, dtype=float32)``; Python's ``int``, ``float`` and ``bool`` as themselves.

    Example::

        sk.types.type_repr(sk.vec3)                      # 'vec3f'
        sk.types.type_repr(sk.vector(6, sk.float32))     # 'vector(length=6, dtype=float32)'
    """
    if t in (int, float, bool):
        return t.__name__
    kind = getattr(t, "_sk_kind", None)
    if kind == "scalar":
        return t.__name__
    if kind == "array":
        return f"array(ndim={t.ndim}, dtype={type_repr(t.dtype)})"
    if kind == "generic" and hasattr(t, "ndim"):
        return f"array(ndim={t.ndim}, dtype=Any)"
    if kind == "struct":
        return t.__name__
    if kind in ("quat", "transform"):
        return ("quat" if kind == "quat" else "transform") + _warp_suffix(t._sk_scalar)
    generic_components = isinstance(getattr(t, "_sk_scalar", None), _T.ScalarCategory)
    if kind == "vec":
        n, = t._sk_shape
        if n in (2, 3, 4) and not generic_components:
            return f"vec{n}{_warp_suffix(t._sk_scalar)}"
        return f"vector(length={n or 'Any'}, dtype={t._sk_scalar.__name__})"
    if kind == "mat":
        r, c = t._sk_shape
        if r in (2, 3, 4) and c in (2, 3, 4) and not generic_components:
            return f"mat{r}{c}{_warp_suffix(t._sk_scalar)}"
        return f"matrix(shape=({r or 'Any'}, {c or 'Any'}), dtype={t._sk_scalar.__name__})"
    raise TypeError(f"sk.types.type_repr: {t!r} is not a simkit type")


def type_ctype(dtype: Any) -> Any:
    """The ctypes type of a value type's storage, as Warp's ``type_ctype``: ``ctypes.c_float`` for
    float32, a ctypes array of the components for a vector, matrix, quat or transform.

    Example::

        sk.types.type_ctype(sk.float64)     # ctypes.c_double
        sk.types.type_ctype(sk.vec3d)       # ctypes.c_double * 3
    """
    return _T.ctypes_of(_value_type(dtype, "type_ctype"))


def type_is_scalar(t: Any) -> bool:
    """Whether ``t`` is a numeric scalar type (``int`` and ``float`` count; ``bool`` does not, as in Warp).

    Example::

        sk.types.type_is_scalar(sk.float16)    # True
    """
    s = _T.resolve(t)
    return isinstance(s, _T.ScalarType) and s is not _T.bool_


def type_is_composite(t: Any) -> bool:
    """Whether ``t`` is a vector, matrix, quaternion or transform type.

    Example::

        sk.types.type_is_composite(sk.quat)    # True
    """
    return _kind(t) in ("vec", "mat", "quat", "transform")


def type_is_value(t: Any) -> bool:
    """Whether ``t`` is a scalar, bool or composite type (what a kernel local can hold).

    Example::

        sk.types.type_is_value(sk.vec3)    # True
    """
    return isinstance(_T.resolve(t), _T.ScalarType) or type_is_composite(t)


def type_is_array(t: Any) -> bool:
    """Whether ``t`` is an array annotation type (``sk.array(dtype=float)``, generic ones too).

    Example::

        sk.types.type_is_array(sk.array(dtype=float, ndim=2))    # True
    """
    return isinstance(t, (ArrayType, GenericArrayType))


def type_is_struct(t: Any) -> bool:
    """Whether ``t`` is an ``@sk.struct`` class.

    Example::

        sk.types.type_is_struct(MyStruct)    # True
    """
    return getattr(t, "_sk_kind", None) == "struct" and isinstance(t, type)


def is_scalar(x: Any) -> bool:
    """Whether ``x`` is a Python int or float, as Warp's ``is_scalar`` (a bool or numpy number is not).

    Example::

        sk.types.is_scalar(1.5)    # True
    """
    return is_int(x) or is_float(x)


def is_composite(x: Any) -> bool:
    """Whether ``x`` is a vector, matrix, quaternion or transform value.

    Example::

        sk.types.is_composite(sk.vec3())    # True
    """
    return isinstance(x, _T.Composite)


def is_value(x: Any) -> bool:
    """Whether ``x`` is a Python int, float or bool, or a composite value.

    Example::

        sk.types.is_value(sk.mat22())    # True
    """
    return is_scalar(x) or type(x) is bool or is_composite(x)


def is_vector(x: Any) -> bool:
    """Whether ``x`` is a vector value.

    Example::

        sk.types.is_vector(sk.vec3())    # True
    """
    return isinstance(x, _T.Vector)


def is_matrix(x: Any) -> bool:
    """Whether ``x`` is a matrix value.

    Example::

        sk.types.is_matrix(sk.mat33())    # True
    """
    return isinstance(x, _T.Matrix)


def is_quaternion(x: Any) -> bool:
    """Whether ``x`` is a quaternion value.

    Example::

        sk.types.is_quaternion(sk.quat())    # True
    """
    return isinstance(x, _T.Quat)


def is_transformation(x: Any) -> bool:
    """Whether ``x`` is a transform value.

    Example::

        sk.types.is_transformation(sk.transform())    # True
    """
    return isinstance(x, _T.Transform)


def is_array(x: Any) -> bool:
    """Whether ``x`` is a simkit array.

    Example::

        sk.types.is_array(sk.zeros(3))    # True
    """
    return isinstance(x, Array)


def is_struct(x: Any) -> bool:
    """Whether ``x`` is an instance of an ``@sk.struct`` class.

    Example::

        sk.types.is_struct(MyStruct())    # True
    """
    return type_is_struct(type(x))


def is_int(x: Any) -> bool:
    """Whether ``x`` is a Python int, as Warp's ``is_int`` (a bool or numpy integer is not).

    Example::

        sk.types.is_int(3)    # True
    """
    return type(x) is int


def is_float(x: Any) -> bool:
    """Whether ``x`` is a Python float, as Warp's ``is_float`` (a numpy float is not).

    Example::

        sk.types.is_float(2.0)    # True
    """
    return type(x) is float
