"""The two spellings of ``@sk.func`` (bare, and with Warp's ``module=``) and what type checkers see of them."""

import typing

import numpy as np
import pytest

import simkit as sk


@sk.func(module="unique")
def plus_one(x: float):
    return x + 1.0


@sk.func(module="unique")
def plus_one(x: sk.vec3):  # noqa: F811 - an overload by type, as with the bare decorator
    return x + sk.vec3(1.0, 1.0, 1.0)


@sk.kernel
def use_plus_one(a: sk.array(dtype=float), v: sk.array(dtype=sk.vec3)):
    a[0] = plus_one(a[0])
    v[0] = plus_one(v[0])


def test_func_with_module_unique_compiles_and_runs():
    a, v = sk.array([2.0]), sk.array(np.array([[1.0, 2.0, 3.0]], np.float32), dtype=sk.vec3)
    sk.launch(use_plus_one, 1, inputs=[a, v])
    assert a.numpy()[0] == 3.0
    np.testing.assert_array_equal(v.numpy()[0], [2.0, 3.0, 4.0])


def test_func_with_arguments_keeps_overloading_by_type():
    assert len(plus_one.members) == 2


def test_func_with_a_module_that_is_not_a_name_is_refused():
    with pytest.raises(TypeError, match=r"module=\.\.\.\) takes a module name"):
        sk.func(module=3)


def test_func_declares_both_decorator_forms_for_type_checkers():
    overloads = typing.get_overloads(sk.func)
    assert len(overloads) == 2
    assert any("Callable" in str(o.__annotations__.get("return", "")) for o in overloads)
