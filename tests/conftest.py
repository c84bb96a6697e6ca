"""The ``device`` fixture: the device a test runs its arrays and launches on.

The core and autograd suites request it for every test (see their conftest.py), so
each of their tests runs once per device:

- ``cpu``;
- ``cuda``: the first GPU (``cuda:0``), on a machine that has one;
- ``cuda-fake-driver``, on a machine without one: simkit's whole CUDA code path
  (allocation, copies, NVRTC modules, launches, graphs) against :mod:`fake_driver`,
  which runs each kernel's CPU entry point on tracked "device" memory. So CI, which
  has no GPU, checks the host side of the CUDA backend with every test.

The header of pytest's report says which devices ran and why.

During the test the device is the default (``sk.set_device``): arrays made without a
``device=`` land there. A test about the CPU alone says so with
``@pytest.mark.cpu_only("why")`` and runs once, on the CPU; one that needs the GPU
itself, not the host side of the CUDA path, says ``@pytest.mark.not_on_fake_driver("why")``.
"""

import subprocess
import sys

import pytest


def _devices() -> tuple[str, str]:
    import simkit as sk

    return ("cpu", "cuda") if sk.is_cuda_available() else ("cpu", "cuda-fake-driver")


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_only(why): the test is about the CPU alone and runs once, on the CPU")
    config.addinivalue_line("markers", "not_on_fake_driver(why): the test needs a real GPU where it is not on the CPU")


def pytest_report_header(config):
    import simkit as sk

    if sk.is_cuda_available():
        return "simkit devices: cpu, cuda (cuda:0)"
    return ("simkit devices: cpu, cuda-fake-driver (no CUDA GPU here: sk.is_cuda_available() is False, "
            "so the GPU-only tests skip)")


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        cpu_only = metafunc.definition.get_closest_marker("cpu_only") is not None
        metafunc.parametrize("device", ["cpu"] if cpu_only else _devices(), indirect=True)


@pytest.fixture
def device(request, monkeypatch):
    import simkit as sk
    from simkit.core import device as D

    kind = getattr(request, "param", "cpu")
    if kind == "cpu":
        yield "cpu"
        return
    if kind == "cuda":
        sk.set_device("cuda:0")
        try:
            yield "cuda:0"
            sk.synchronize()
        finally:
            D.state.default = "cpu"
        return
    marker = request.node.get_closest_marker("not_on_fake_driver")
    if marker is not None:
        pytest.skip(f"the fake driver runs the CPU build: {marker.args[0]}")
    import fake_driver

    with fake_driver.resident(monkeypatch):
        sk.set_device("cuda:0")
        yield "cuda:0"
        sk.synchronize()  # a kernel error still pending belongs to this test


@pytest.fixture
def busy_machine():
    """Another CPU-bound process runs for the test, as on a machine users share (a busy loop
    that ends by itself after two minutes, and is killed when the test ends)."""
    code = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"
    proc = subprocess.Popen([sys.executable, "-c", code])
    yield
    proc.kill()
    proc.wait()
