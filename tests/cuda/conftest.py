"""The ``gpu`` fixture: the device the tests in this folder run their GPU side on.

Each test runs once per parameter:

- ``gpu``: a real GPU (``cuda:0``); skipped, with the reason, on machines without one;
- ``fake-driver``: simkit's whole CUDA code path against :mod:`fake_driver`, a stand-in
  for the CUDA driver that runs the kernels' CPU entry points on tracked "device"
  memory. It needs no GPU, so CI exercises the host side of the CUDA backend; on a
  machine with a GPU it is skipped in favour of the real one.
"""

import gc

import pytest

pytest.importorskip("cuda.bindings.driver", reason="cuda-python (cuda.bindings) is not installed")

import simkit as sk  # noqa: E402
from simkit.core import device as D  # noqa: E402
from simkit.core.cuda import driver  # noqa: E402
from simkit.core.kernel import Module  # noqa: E402


def _forget_gpu_state() -> None:
    """Drop every context, loaded GPU module and prepared launch (they belong to the driver in use)."""
    for mod in Module._registry.values():
        for k in mod.kernels:
            k._cuda_loaded.clear()
            for plan in k._plan.values():
                plan.cuda.clear()
    driver._reset_for_tests()
    D._checked.clear()
    D.state.default = "cpu"


@pytest.fixture(params=["gpu", "fake-driver"])
def gpu(request, monkeypatch):
    if request.param == "gpu":
        if not sk.is_cuda_available():
            pytest.skip("no CUDA GPU on this machine (sk.is_cuda_available() is False)")
        yield "cuda:0"
        sk.synchronize()
        return
    if sk.is_cuda_available():
        pytest.skip("this machine has a GPU: the real one runs these tests")
    import fake_driver

    _forget_gpu_state()
    monkeypatch.setattr(driver, "_import_bindings", lambda: fake_driver)
    yield "cuda:0"
    gc.collect()
    _forget_gpu_state()
    gc.collect()
