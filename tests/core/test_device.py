"""The device model: device strings, the default device, and life without a CUDA driver."""

import subprocess
import sys

import numpy as np
import pytest

import simkit as sk
from simkit.core import device as D

pytestmark = pytest.mark.cpu_only("the device model on a machine without a GPU (tests/cuda covers the GPU side)")

no_gpu = pytest.mark.skipif(sk.is_cuda_available(), reason="this machine has a GPU")


@sk.kernel
def double(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = a[i] * 2.0


@sk.kernel
def no_arrays(n: int):
    i = sk.tid()  # noqa: F841 - nothing to write


@pytest.fixture
def restore_default():
    saved = D.state.default
    yield
    D.state.default = saved


# -- device strings ------------------------------------------------------------------------

@pytest.mark.parametrize("text, want", [("cpu", "cpu"), (" cpu ", "cpu"), ("cuda:0", "cuda:0"), ("cuda:3", "cuda:3"),
                                        ("cuda", "cuda:0"), ("cuda:01", "cuda:1")])
def test_device_strings_are_canonical(text, want):
    assert D.parse(text) == want


@pytest.mark.parametrize("bad", ["gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "cpu:0", "", 0, 1.5, ["cpu"]])
def test_malformed_devices_are_value_errors_naming_the_parameter(bad):
    with pytest.raises(ValueError, match=r"to\(device\) must be 'cpu', 'cuda' or 'cuda:N', got"):
        D.parse(bad, "to(device)")


def test_objects_like_torch_device_are_read_by_their_string():
    class FakeTorchDevice:
        type = "cuda"

        def __str__(self):
            return "cuda:2"
    assert D.parse(FakeTorchDevice()) == "cuda:2"


def test_none_is_the_default_device():
    assert D.parse(None) == sk.get_device() == "cpu"


@pytest.mark.parametrize("call", [lambda: sk.zeros(2, device="gpu"), lambda: sk.ones(2, device="gpu"),
                                  lambda: sk.full(2, 1.0, device="gpu"), lambda: sk.empty(2, device="gpu"),
                                  lambda: sk.array([1.0], device="gpu"), lambda: sk.zeros(2).to("gpu"),
                                  lambda: sk.set_device("gpu"), lambda: sk.synchronize("gpu"),
                                  lambda: sk.capture("gpu"),
                                  lambda: sk.launch(double, 1, inputs=[sk.zeros(1)], device="gpu")],
                         ids=["zeros", "ones", "full", "empty", "array", "to", "set_device", "synchronize",
                              "capture", "launch"])
def test_every_device_parameter_is_validated(call):
    with pytest.raises(ValueError, match="must be 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        call()


# -- the default device ----------------------------------------------------------------------

def test_set_device_cpu_and_get_device(restore_default):
    sk.set_device("cpu")
    assert sk.get_device() == "cpu"
    assert sk.zeros(2).device == "cpu"


def test_to_the_same_device_is_the_array_itself():
    a = sk.zeros(3)
    assert a.to("cpu") is a


def test_cpu_synchronize_returns_at_once():
    sk.synchronize()
    sk.synchronize("cpu")


def test_a_kernel_without_arrays_runs_on_the_default_device():
    sk.launch(no_arrays, 3, inputs=[1])
    sk.launch(no_arrays, 3, inputs=[1], device="cpu")


# -- no driver, no problem ---------------------------------------------------------------------

@no_gpu
def test_without_a_driver_cuda_is_unavailable():
    assert sk.is_cuda_available() is False
    assert sk.get_cuda_device_count() == 0


@no_gpu
@pytest.mark.parametrize("call", [lambda: sk.zeros(2, device="cuda"), lambda: sk.array([1.0], device="cuda:0"),
                                  lambda: sk.zeros(2).to("cuda"), lambda: sk.set_device("cuda"),
                                  lambda: sk.synchronize("cuda:0"),
                                  lambda: sk.launch(double, 1, inputs=[sk.zeros(1)], device="cuda")],
                         ids=["zeros", "array", "to", "set_device", "synchronize", "launch"])
def test_without_a_driver_cuda_requests_are_runtime_errors(call, restore_default):
    with pytest.raises(RuntimeError, match="no CUDA driver/GPU was found"):
        call()
    assert sk.get_device() == "cpu"


@no_gpu
def test_without_a_driver_cpu_work_is_untouched():
    a = sk.array(np.arange(3.0), dtype=sk.float32)
    sk.launch(double, 3, inputs=[a])
    assert a.numpy().tolist() == [0.0, 2.0, 4.0]
    assert not hasattr(a, "__cuda_array_interface__")
    assert a.__dlpack_device__() == (1, 0)


def test_importing_simkit_does_not_touch_the_cuda_driver():
    code = ("import sys, simkit, simkit.cuda\n"
            "from simkit.core.cuda import driver\n"
            "assert driver._drv is None and driver._failure is None, 'the driver was opened'\n"
            "assert 'cuda.bindings.driver' not in sys.modules, 'the driver bindings were imported'\n"
            "a = simkit.zeros(3)\n"
            "assert driver._drv is None and driver._failure is None, 'a CPU array opened the driver'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_get_device_of_a_name_gives_its_canonical_name_as_warps_get_device_ident():
    assert sk.get_device("cpu") == "cpu" and sk.get_device(None) == sk.get_device()
    with pytest.raises(ValueError, match="get_device"):
        sk.get_device("tpu")


# -- Warp's Device questions ---------------------------------------------------------------

def test_get_device_answers_warps_device_questions_on_the_cpu():
    d = sk.get_device("cpu")
    assert (d.is_cpu, d.is_cuda, d.ordinal, d.arch, d.alias) == (True, False, -1, 0, "cpu")


def test_a_device_is_still_its_name():
    d = sk.get_device()
    assert isinstance(d, str) and d == "cpu" and {d: 1}["cpu"] == 1 and type(d.alias) is str


def test_a_device_is_capturing_only_inside_a_capture():
    d = sk.get_device("cpu")
    assert not d.is_capturing
    with sk.capture():
        assert d.is_capturing
    assert not d.is_capturing


def test_arrays_can_be_made_on_a_device_object():
    a = sk.zeros(3, device=sk.get_device("cpu"))
    assert a.device == "cpu" and a.numpy().tolist() == [0.0, 0.0, 0.0]


def test_synchronize_device_is_warps_name_for_synchronizing_one_device():
    sk.synchronize_device("cpu")
    sk.synchronize_device()
    with pytest.raises(ValueError, match="synchronize_device"):
        sk.synchronize_device("tpu")


def test_the_cpu_device_answers_as_warps_does():
    wp = pytest.importorskip("warp")
    w, s = wp.get_device("cpu"), sk.get_device("cpu")
    assert [getattr(s, k) for k in ("is_cpu", "is_cuda", "ordinal", "arch", "alias", "is_capturing")] == \
        [getattr(w, k) for k in ("is_cpu", "is_cuda", "ordinal", "arch", "alias", "is_capturing")]
    assert str(s) == str(w)
