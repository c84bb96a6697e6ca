"""Devices: where arrays live and kernels run, spelled ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

Every function that takes a device validates it here, so a typo is a
``ValueError`` naming the parameter, and a CUDA device on a machine without an
NVIDIA driver is a ``RuntimeError`` saying so. Nothing touches the CUDA driver
until a CUDA device is actually asked for: importing simkit, or working on the
CPU, never initialises CUDA.

The default device (``sk.get_device()``, ``"cpu"`` unless ``sk.set_device`` says
otherwise) is where ``sk.zeros`` and friends allocate when no device is given,
and where a launch runs whose arguments hold no arrays. A launch with arrays runs
where its arrays are.

Example::

    sk.is_cuda_available()         # False on a machine without an NVIDIA driver
    if sk.is_cuda_available():
        sk.set_device("cuda:0")    # new arrays go to the first GPU
    x = sk.zeros(10)
    sk.synchronize()               # wait for the launches queued on the GPU
"""

from __future__ import annotations

import re
from typing import Any

_CUDA = re.compile(r"^cuda(?::(\d+))?$")


class _State:
    """Process-wide device settings (one default for every thread, like the module cache)."""

    def __init__(self):
        self.default = "cpu"
        self.capturing = False  # inside sk.capture(): array writes outside kernels are refused


state = _State()

# Canonical GPU names already found to exist: launches on them skip the checks.
_checked: set = set()


class Device(str):
    """A canonical device name (``"cpu"``, ``"cuda:N"``) that also answers Warp's ``Device``
    questions, so code written for ``wp.get_device()`` ports: it is still the string, equal to
    ``"cpu"``, usable as a dict key and wherever a device is taken.

    Example::

        d = sk.get_device("cpu")
        d == "cpu", d.is_cpu, d.is_cuda, d.ordinal      # True True False -1
    """

    __slots__ = ()

    @property
    def alias(self) -> str:
        """The name as a plain string, ``"cpu"`` or ``"cuda:N"`` (Warp's ``Device.alias``)."""
        return str.__str__(self)

    @property
    def is_cpu(self) -> bool:
        """True for the CPU."""
        return self == "cpu"

    @property
    def is_cuda(self) -> bool:
        """True for a GPU."""
        return self != "cpu"

    @property
    def ordinal(self) -> int:
        """The GPU index, -1 for the CPU (as Warp)."""
        return -1 if self == "cpu" else ordinal(self)

    @property
    def arch(self) -> int:
        """The GPU's compute capability as Warp gives it (``90`` for sm_90), 0 for the CPU."""
        if self == "cpu":
            return 0
        from .cuda import driver

        major, minor = driver.context(ordinal(self)).compute_capability
        return 10 * major + minor

    @property
    def is_capturing(self) -> bool:
        """True while a capture (``sk.capture()``, ``capture_begin()``) is open: it records launches on
        every device."""
        return state.capturing


_devices: dict = {}


def device_object(name: str) -> Device:
    """The one :class:`Device` for a canonical name (made once per name).

    Example::

        device_object("cpu").is_cpu     # True
    """
    dev = _devices.get(name)
    if dev is None:
        dev = _devices[name] = Device(name)
    return dev


class DeviceMismatch(Exception):
    """Raised while packing a launch when an argument lives on another device than the one packed for.

    ``where`` names the argument (``"x"`` or ``"params.mass"``), or is None when the
    kernel has no array arguments and the default device is not the CPU. Launch
    catches it to run the kernel where its arrays are, or to explain the mismatch.
    """

    def __init__(self, device: str, where: str | None):
        super().__init__(device, where)
        self.device = device
        self.where = where


def parse(device: Any, param: str = "device") -> str:
    """``device`` as ``"cpu"`` or ``"cuda:N"``, without checking that the GPU exists.

    ``None`` is the default device; ``"cuda"`` is the default device when that is a
    GPU, else ``"cuda:0"``. A ``torch.device`` is accepted by its string.

    Example::

        parse("cuda")       # "cuda:0"
        parse("gpu")        # ValueError: device must be 'cpu', 'cuda' or 'cuda:N', got 'gpu'
    """
    if device is None:
        return state.default
    text = device if isinstance(device, str) else (str(device) if hasattr(device, "type") else None)
    if text is not None:
        text = text.strip()
        if text == "cpu":
            return "cpu"
        m = _CUDA.match(text)
        if m:
            if m.group(1) is not None:
                return f"cuda:{int(m.group(1))}"
            return state.default if state.default.startswith("cuda:") else "cuda:0"
    raise ValueError(f"{param} must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def ordinal(device: str) -> int:
    """The GPU index of a canonical ``"cuda:N"`` string.

    Example::

        ordinal("cuda:1")   # 1
    """
    return int(device[5:])


def require(device: Any, param: str = "device") -> str:
    """Like :func:`parse`, and a CUDA device must exist: ``RuntimeError`` without a driver or GPU,
    ``ValueError`` for an index past the last GPU.

    Example::

        require("cuda:0")   # "cuda:0" on a GPU machine; RuntimeError where there is none
    """
    if type(device) is str and device in _checked:
        return device
    dev = parse(device, param)
    if dev == "cpu":
        return dev
    from .cuda import driver  # lazy: the CPU never loads the CUDA bindings

    count = driver.device_count()
    if count == 0:
        raise RuntimeError(f"{param} {dev!r} is not available: no CUDA driver/GPU was found "
                           f"({driver.unavailable_reason()}); sk.is_cuda_available() is False here. "
                           "Use device='cpu', or run on a machine with an NVIDIA GPU and driver.")
    if ordinal(dev) >= count:
        names = ", ".join(f"cuda:{k}" for k in range(count))
        raise ValueError(f"{param} {dev!r} does not exist: this machine has {count} CUDA device(s) ({names})")
    _checked.add(dev)
    return dev


def get_device(device: Any = None) -> Device:
    """The default device: where arrays are allocated when no device is given; given a device
    (``"cpu"``, ``"cuda"``, ``"cuda:N"``), its canonical name, checked to exist, as Warp's
    ``wp.get_device(ident)``. The result is a :class:`Device`: the name as a string, with Warp's
    ``is_cpu``, ``is_cuda``, ``ordinal``, ``arch``, ``alias`` and ``is_capturing``.

    Example::

        sk.get_device()                  # "cpu" unless sk.set_device() chose a GPU
        sk.get_device("cpu").is_cuda     # False
    """
    return device_object(state.default if device is None else require(device, "get_device(device)"))


def set_device(device: str) -> None:
    """Make ``device`` (``"cpu"``, ``"cuda"`` or ``"cuda:N"``) the default for new arrays,
    captures and launches without array arguments.

    Example::

        sk.set_device("cuda:0")
        x = sk.zeros(3)        # x.device == "cuda:0"
    """
    state.default = require(device, "set_device(device)")


class ScopedDevice:
    """Make ``device`` the default inside a ``with`` block, restoring the previous default after.

    Example::

        with sk.ScopedDevice("cuda:0"):
            x = sk.zeros(3)        # x.device == "cuda:0"
        sk.get_device()            # back to what it was
    """

    def __init__(self, device: str):
        self.device = require(device, "ScopedDevice(device)")
        self._saved: list = []

    def __enter__(self) -> str:
        self._saved.append(state.default)
        state.default = self.device
        return self.device

    def __exit__(self, *exc) -> None:
        state.default = self._saved.pop()


def is_cuda_available() -> bool:
    """True when an NVIDIA driver and at least one GPU are present (loads the driver once).

    Example::

        device = "cuda" if sk.is_cuda_available() else "cpu"
    """
    return get_cuda_device_count() > 0


def get_cuda_device_count() -> int:
    """How many CUDA GPUs the driver sees; 0 without a driver.

    Example::

        for k in range(sk.get_cuda_device_count()):
            print(f"cuda:{k}")
    """
    from .cuda import driver

    return driver.device_count()


def synchronize(device: str | None = None) -> None:
    """Wait until every launch and copy queued on ``device`` (default: every GPU in use) has finished,
    and raise the first runtime error a kernel reported meanwhile (e.g. an index out of bounds in
    debug mode). CPU launches are synchronous, so on the CPU this returns at once.

    Example::

        sk.launch(step, n, inputs=[x_gpu])
        sk.synchronize()       # x_gpu is final now
    """
    if device is not None:
        dev = parse(device, "synchronize(device)")
        if dev == "cpu":
            return
        require(dev, "synchronize(device)")
        from .cuda import driver

        driver.synchronize(ordinal(dev))
        return
    from .cuda import driver

    driver.synchronize(None)


def synchronize_device(device: Any = None) -> None:
    """Warp's name for :func:`synchronize` of one device (default: the default device).

    Example::

        sk.synchronize_device("cpu")     # returns at once: CPU launches are synchronous
    """
    synchronize(parse(device, "synchronize_device(device)"))
