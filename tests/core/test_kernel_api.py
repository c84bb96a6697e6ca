"""Kernel objects built at run time, kernels without a backward, sk.ScopedDevice and sk.load_module."""

import sys
import typing

import numpy as np
import pytest

import simkit as sk


def _double(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = 2.0 * x[i]


@sk.kernel(enable_backward=False)
def count_positive(x: sk.array(dtype=float), n: sk.array(dtype=sk.int32)):
    if x[sk.tid()] > 0.0:
        sk.atomic_add(n, 0, 1)


@sk.kernel(enable_backward=False)
def copy_no_backward(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    y[sk.tid()] = x[sk.tid()]


def test_kernel_built_from_a_function_at_run_time():
    k = sk.Kernel(_double, key="double_rt")
    x, y = sk.array([1.0, 2.0]), sk.zeros(2)
    sk.launch(k, 2, inputs=[x, y])
    assert k.name == "double_rt"
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])


def test_two_keys_of_one_function_are_two_kernels():
    a, b = sk.Kernel(_double, key="double_a"), sk.Kernel(_double, key="double_b")
    assert a.cname != b.cname and a.cname.startswith("double_a_")


def test_kernel_refuses_a_non_function_and_a_bad_key():
    with pytest.raises(TypeError, match="Python function"):
        sk.Kernel(42)
    with pytest.raises(TypeError, match="key"):
        sk.Kernel(_double, key="")


def test_kernel_with_warps_keywords_func_key_and_options():
    k = sk.Kernel(func=_double, key="double_opts", options={"enable_backward": False, "max_unroll": 4})
    x, y = sk.array([1.0, 2.0]), sk.zeros(2)
    sk.launch(k, 2, inputs=[x, y])
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    assert (k.key, k.enable_backward, k.options) == ("double_opts", False, {"enable_backward": False, "max_unroll": 4})
    with pytest.raises(RuntimeError, match="enable_backward=False"):
        sk.launch(k, 2, inputs=[x, y], adjoint=True)


def test_kernel_key_defaults_to_the_function_name_as_in_warp():
    assert sk.Kernel(func=_double).key == "_double"
    assert count_positive.key == "count_positive"


def test_kernel_options_of_a_generic_kernel_reach_its_overloads():
    def fill(a: sk.array(dtype=typing.Any), v: typing.Any):
        a[sk.tid()] = v

    k = sk.Kernel(func=fill, key="fill_no_backward", options={"enable_backward": False})
    a = sk.zeros(2, dtype=sk.float64)
    sk.launch(k, 2, inputs=[a, 1.5])
    assert a.numpy().tolist() == [1.5, 1.5]
    assert k.overload([sk.array(dtype=sk.float64), sk.float64]).enable_backward is False


def test_kernel_refuses_options_that_are_not_a_dict_or_a_bad_enable_backward():
    with pytest.raises(TypeError, match=r"options=\.\.\.\) takes a dict"):
        sk.Kernel(func=_double, options=[("enable_backward", False)])
    with pytest.raises(TypeError, match="enable_backward must be True or False, got 'no'"):
        sk.Kernel(func=_double, options={"enable_backward": "no"})


def test_kernel_without_backward_runs_forward():
    n = sk.zeros(1, dtype=sk.int32)
    sk.launch(count_positive, 3, inputs=[sk.array([1.0, -1.0, 2.0]), n])
    assert n.numpy()[0] == 2


def test_kernel_without_backward_generates_an_empty_adjoint():
    src = count_positive.source()
    assert "enable_backward=False" in src and "atomic_add" in src


def test_kernel_without_backward_refuses_an_adjoint_launch():
    with pytest.raises(RuntimeError, match="enable_backward=False"):
        sk.launch(copy_no_backward, 1, inputs=[sk.zeros(1), sk.zeros(1)], adjoint=True)


def test_scoped_device_restores_the_default():
    before = sk.get_device()
    with sk.ScopedDevice("cpu") as d:
        assert d == "cpu" and sk.get_device() == "cpu"
        assert sk.zeros(1).device == "cpu"
    assert sk.get_device() == before


def test_scoped_device_restores_the_default_after_an_error():
    before = sk.get_device()
    with pytest.raises(KeyError):
        with sk.ScopedDevice("cpu"):
            raise KeyError("x")
    assert sk.get_device() == before


def test_scoped_device_refuses_a_bad_name():
    with pytest.raises(ValueError, match="ScopedDevice"):
        sk.ScopedDevice("tpu")


@pytest.mark.cpu_only("loads the CPU library; the GPU load is the same call per kernel")
def test_load_module_compiles_every_kernel_of_the_module():
    sk.load_module()
    assert all(sk.config.mode in k._loaded for k in (count_positive, copy_no_backward))
    sk.load_module(sys.modules[__name__], device="cpu")


def test_load_module_refuses_a_module_without_kernels():
    with pytest.raises(ValueError, match="defines no kernels"):
        sk.load_module("no_such_module_xyz")
    with pytest.raises(TypeError, match="module or its name"):
        sk.load_module(3)


@pytest.mark.cpu_only("compiles with NVRTC; launches nothing")
def test_run_time_and_no_backward_kernels_compile_to_ptx():
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")
    for k in (sk.Kernel(_double, key="double_ptx"), count_positive):
        fwd, bwd = sk.cuda.entry_points(k)
        ptx = sk.cuda.ptx(k)
        assert f".entry {fwd}(" in ptx and f".entry {bwd}(" in ptx


def test_a_kernels_module_has_warps_default_options():
    assert sk.Kernel(func=_double, key="double_module_opts").module.options == {"enable_backward": True}
