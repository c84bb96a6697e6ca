"""What an ``@sk.struct`` class is made of: a subclass of ``StructBase``, whose ordinary
methods do the work, so its tracebacks and its ``help()`` name ``StructBase`` methods, not
functions made inside the decorator. (tests/core/test_struct*.py check what structs do.)"""

import traceback

import pytest

import simkit as sk
from simkit.core.struct import StructBase


@sk.struct
class Pair:
    a: float
    b: sk.vec3


@sk.struct
class Named:
    numpy_value: float        # a field named like Warp's method: the field wins


def test_a_struct_class_is_a_subclass_of_struct_base_with_its_methods():
    assert issubclass(Pair, StructBase)
    assert Pair.__init__ is StructBase.__init__ and Pair.__setattr__ is StructBase.__setattr__
    assert Pair._sk_pack is StructBase._sk_pack


def test_a_bad_field_value_is_reported_from_a_struct_base_method():
    with pytest.raises(TypeError, match=r"Pair\.a expects float32, got str") as info:
        Pair(a="x")
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "_sk_set_field" in frames and all("<locals>" not in f for f in frames)


def test_a_field_named_numpy_value_is_the_field_not_warps_method():
    assert Named(numpy_value=2.0).numpy_value == 2.0
    assert hasattr(Pair(), "numpy_value") and Pair.numpy_dtype() is Pair._sk_np_dtype
