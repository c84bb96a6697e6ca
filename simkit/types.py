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
from .core.types import dtype_from_numpy, dtype_to_numpy, matrix, vector

__all__ = ["vector", "matrix", "quaternion", "transformation", "dtype_from_numpy", "dtype_to_numpy", "type_size",
           "type_size_in_bytes", "type_length", "type_scalar_type", "type_is_vector", "type_is_matrix",
           "type_is_quaternion", "type_is_transformation", "type_is_int", "type_is_float", "types_equal"]


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
