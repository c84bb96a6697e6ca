"""Generic kernels of one module, instantiated per float type together: sk.overload_types and sk.instantiate."""

import itertools
from typing import Any

import numpy as np
import pytest

import simkit as sk
from simkit.core import compiler
from simkit.core.modules import Module

Vecs = sk.array(dtype=Any)


@sk.kernel
def fall(x: Vecs, v: Vecs, g: Any, dt: Any):
    i = sk.tid()
    v[i] = v[i] + g * dt
    x[i] = x[i] + v[i] * dt


@sk.kernel
def stop(v: Vecs):
    v[sk.tid()] = v.dtype(0.0, 0.0, 0.0)


@sk.kernel
def scale_rows(m: sk.array(dtype=Any, ndim=2), s: Any):
    i, j = sk.tid()
    m[i, j] = m[i, j] * s


@sk.kernel
def fill_any(a: sk.array(dtype=Any), value: Any):
    a[sk.tid()] = value


@sk.overload_types
def _types(F):
    V = sk.vector(3, F)
    return {"x": sk.array(dtype=V), "v": sk.array(dtype=V), "g": V, "dt": F, "m": sk.array(dtype=F, ndim=2),
            "scale_rows.s": F}


def _builds() -> int:
    return compiler.stats["compiles"] + compiler.stats["cache_hits"]


def test_overloads_of_a_float_type_live_in_a_module_of_their_own():
    k32, k64 = sk.instantiate(sk.float32), sk.instantiate(sk.float64)
    assert k32.fall.module.name == f"{__name__}.float32"
    assert k64.fall.module.name == f"{__name__}.float64"
    assert k32.stop.module is k32.fall.module


def test_instantiate_makes_every_declared_kernel_and_leaves_out_the_others():
    k = sk.instantiate(sk.float64, __name__)
    assert set(vars(k)) == {"fall", "stop", "scale_rows"}  # fill_any's 'a' and 'value' are not declared
    assert k.scale_rows.arg_types["s"] is sk.float64  # the "kernel.parameter" key
    assert sk.instantiate(sk.float64).fall is k.fall  # made once


_FRESH = itertools.count()


def _fresh_module() -> tuple:
    """Generic kernels ``fall`` and ``stop`` in a new module of their own, with this file's overload types."""
    module = f"{__name__}.fresh{next(_FRESH)}"
    kernels = (sk.Kernel(fall.func, module=module), sk.Kernel(stop.func, module=module))
    sk.overload_types(_types, module=module)
    return kernels


@pytest.mark.cpu_only("counts the C++ compiler runs")
def test_the_first_launch_compiles_the_float_types_siblings_in_one_compiler_run():
    fall_k, stop_k = _fresh_module()
    sk.launch(fill_any, 1, inputs=[sk.zeros(1, dtype=sk.int32), 1])  # the runtime is built by now
    v = sk.zeros(2, dtype=sk.vec3d)
    before = _builds()
    sk.launch(stop_k, 2, inputs=[v])  # the launch, not instantiate, makes the overloads here
    assert _builds() == before + 1
    x = sk.zeros(2, dtype=sk.vec3d)
    sk.launch(fall_k, 2, inputs=[x, v, sk.vec3d(0.0, -10.0, 0.0), 0.5])
    assert _builds() == before + 1  # it was in that run
    np.testing.assert_array_equal(x.numpy()[0], [0.0, -2.5, 0.0])


@pytest.mark.cpu_only("reads what the CPU build loaded")
def test_one_float_types_launch_compiles_nothing_of_the_other():
    fall_k, stop_k = _fresh_module()
    sk.launch(stop_k, 1, inputs=[sk.zeros(1, dtype=sk.vec3)])
    assert stop_k.overload([sk.array(dtype=sk.vec3)])._loaded
    f64 = stop_k.overload([sk.array(dtype=sk.vec3d)])  # made now, with fall's float64 overload
    assert f64.module.name.endswith(".float64") and len(f64.module.kernels) == 2
    assert not any(k._loaded for k in f64.module.kernels)


def test_a_declared_kernel_parameter_key_overrides_the_module_wide_one():
    m = sk.array(np.ones((2, 2)), dtype=sk.float64)
    sk.launch(scale_rows, (2, 2), inputs=[m, 3.0])
    np.testing.assert_array_equal(m.numpy(), np.full((2, 2), 3.0))
    assert sk.instantiate(sk.float64).scale_rows.arg_types["s"] is sk.float64


def test_siblings_are_made_in_definition_order_whichever_launches_first():
    # the order fixes the generated names (and so the compiler cache key) of the batch
    k = sk.instantiate(sk.float64)
    assert [k.fall._index, k.stop._index, k.scale_rows._index] == sorted([k.fall._index, k.stop._index,
                                                                          k.scale_rows._index])


def test_a_kernel_generic_beyond_the_float_type_still_overloads_per_launch():
    a = sk.zeros(3, dtype=sk.int32)
    sk.launch(fill_any, 3, inputs=[a, 7])
    np.testing.assert_array_equal(a.numpy(), [7, 7, 7])
    assert fill_any.overload([sk.array(dtype=sk.int32), sk.int32]).module.name == __name__  # no float: the module


def test_load_module_loads_the_overloads_made_in_float_modules():
    k = sk.instantiate(sk.float64)
    sk.load_module(__name__)
    assert k.fall._loaded and k.stop._loaded


def test_instantiate_refuses_a_module_without_declared_types():
    module = f"{__name__}.undeclared"
    sk.Kernel(stop.func, module=module)
    with pytest.raises(TypeError, match="declares no overload types"):
        sk.instantiate(sk.float32, module)


def test_instantiate_refuses_a_type_that_is_not_a_float():
    with pytest.raises(TypeError, match="takes a float type"):
        sk.instantiate(sk.int32)


def test_instantiate_refuses_a_module_without_generic_kernels():
    with pytest.raises(ValueError, match="defines no generic kernels"):
        sk.instantiate(sk.float32, "no.such.module")


def test_overload_types_must_return_a_dict():
    module = f"{__name__}.bad{next(_FRESH)}"
    sk.Kernel(stop.func, module=module)
    sk.overload_types(lambda F: [F], module=module)
    with pytest.raises(TypeError, match="must return a dict"):
        sk.instantiate(sk.float32, module)


def test_a_module_declares_its_overload_types_once():
    with pytest.raises(ValueError, match="already declares"):
        sk.overload_types(lambda F: {}, module=__name__)
