"""Bare ``@sk.overload`` on a stub (as in Warp): the overload's types come from the stub's annotations."""

from typing import Any

import numpy as np
import pytest

import simkit as sk
from simkit.core.errors import CompileError


@sk.kernel
def add_scaled(x: sk.array(dtype=Any), s: Any, out: sk.array(dtype=Any)):
    i = sk.tid()
    out[i] = out[i] + x[i] * s


made_by_stub = add_scaled


@sk.overload
def add_scaled(x: sk.array(dtype=sk.float64), s: sk.float64, out: sk.array(dtype=sk.float64)):
    """The float64 overload."""
    ...


@sk.kernel
def not_generic(x: sk.array(dtype=float)):
    x[sk.tid()] = 1.0


def test_the_stub_gives_back_the_generic_kernel():
    assert add_scaled is made_by_stub and add_scaled.generic


def test_the_stub_makes_the_overload_of_its_annotations():
    types = (sk.array(dtype=sk.float64), sk.float64, sk.array(dtype=sk.float64))
    assert tuple(T for T in types) in add_scaled._instances


def test_the_name_still_launches_any_overload():
    out64 = sk.zeros(2, dtype=sk.float64)
    sk.launch(add_scaled, 2, inputs=[sk.array(np.array([1.0, 2.0])), 3.0, out64])
    out32 = sk.zeros(2)
    sk.launch(add_scaled, 2, inputs=[sk.array([1.0, 2.0]), 0.5, out32])
    np.testing.assert_array_equal(out64.numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(out32.numpy(), [0.5, 1.0])


def test_a_stub_overload_inside_a_function_finds_the_local_kernel():
    @sk.kernel
    def local_fill(a: sk.array(dtype=Any), v: Any):
        a[sk.tid()] = v

    @sk.overload
    def local_fill(a: sk.array(dtype=sk.int32), v: sk.int32):
        pass

    assert (sk.array(dtype=sk.int32), sk.int32) in local_fill._instances


def test_a_stub_with_a_body_is_refused():
    with pytest.raises(CompileError, match="body must be only"):
        @sk.overload
        def add_scaled(x: sk.array(dtype=float), s: float, out: sk.array(dtype=float)):
            out[0] = 1.0


def test_a_stub_without_a_generic_kernel_of_its_name_is_refused():
    with pytest.raises(CompileError, match="no generic @sk.kernel of that name"):
        @sk.overload
        def nowhere_defined(x: sk.array(dtype=float)):
            ...


def test_a_stub_for_a_kernel_that_is_not_generic_is_refused():
    with pytest.raises(CompileError, match="is not generic"):
        @sk.overload
        def not_generic(x: sk.array(dtype=float)):
            ...


def test_a_stub_with_an_unannotated_parameter_is_refused():
    with pytest.raises(CompileError, match="needs a type annotation"):
        @sk.overload
        def add_scaled(x: sk.array(dtype=float), s, out: sk.array(dtype=float)):
            ...


def test_a_stub_with_another_parameter_count_is_refused():
    with pytest.raises(CompileError, match="the stub has 2 parameter"):
        @sk.overload
        def add_scaled(x: sk.array(dtype=float), s: float):
            ...


def test_overload_of_a_kernel_without_types_is_refused():
    with pytest.raises(TypeError, match="needs the parameter types"):
        sk.overload(add_scaled)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_makes_the_same_overload_from_a_stub():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def wadd_scaled(x: wp.array(dtype=Any), s: Any, out: wp.array(dtype=Any)):
        i = wp.tid()
        out[i] = out[i] + x[i] * s

    generic = wadd_scaled

    @wp.overload
    def wadd_scaled(x: wp.array(dtype=wp.float64), s: wp.float64, out: wp.array(dtype=wp.float64)):
        ...

    assert wadd_scaled is generic
    out = wp.zeros(2, dtype=wp.float64, device="cpu")
    wp.launch(wadd_scaled, 2, inputs=[wp.array([1.0, 2.0], dtype=wp.float64, device="cpu"), wp.float64(3.0), out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), [3.0, 6.0])
