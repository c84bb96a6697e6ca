"""The ``gpu`` fixture: the device the tests in this folder run their GPU side on.

Each test runs once per parameter:

- ``gpu``: a real GPU (``cuda:0``); skipped, with the reason, on machines without one;
- ``fake-driver``: simkit's whole CUDA code path against :mod:`fake_driver`, a stand-in
  for the CUDA driver that runs the kernels' CPU entry points on tracked "device"
  memory. It needs no GPU, so CI exercises the host side of the CUDA backend; on a
  machine with a GPU it is skipped in favour of the real one.
"""

import pytest

pytest.importorskip("cuda.bindings.driver", reason="cuda-python (cuda.bindings) is not installed")

import simkit as sk  # noqa: E402


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

    with fake_driver.installed(monkeypatch):
        yield "cuda:0"
