"""Every registered kernel compiles for the GPU: NVRTC builds its forward and its adjoint (no GPU needed),
and its tangent (forward mode) where it has one.

pytest collects the files and folders of tests/ in name order, so this file comes after
every test folder: the kernels it walks are all those registered by then, which is every
kernel defined at module level anywhere in the test suite, every kernel of simkit itself,
and the kernel families of simkit.kernels and simkit.optim, built here for float32 and
float64. Each
kernel's Python module is compiled as one translation unit, as a launch on a GPU builds
it, once per module; each kernel is then one test that finds both its entry points.
"""

import functools
import importlib
import os
import pkgutil
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")

import simkit as sk  # noqa: E402
import simkit.kernels  # noqa: E402
import simkit.optim  # noqa: E402
from simkit.core import codegen, codegen_tangent, compiler, nvrtc  # noqa: E402
from simkit.core.cuda import module as cuda_module  # noqa: E402
from simkit.core.kernel import Kernel, Module  # noqa: E402

# A GPU newer than NVRTC knows gets PTX for the newest architecture NVRTC knows below it: sm_90
# (what the fake GPU of the tests is, tests/fake_driver.py), instead of a cubin (ptxas is slow).
PTX_FOR_SM_90 = "sm_99"


def _build_kernel_families() -> None:
    """Call every ``*_kernels`` factory of simkit.kernels and simkit.optim for both float types."""
    for package in (simkit.kernels, simkit.optim):
        for info in pkgutil.iter_modules(package.__path__):
            _build_families_of(importlib.import_module(f"{package.__name__}.{info.name}"))


def _build_families_of(module) -> None:
    for name, factory in vars(module).items():
        if name.endswith("_kernels") and callable(factory) and factory.__module__ == module.__name__:
            for real in (sk.float32, sk.float64):
                factory(real)


def _compiles_on_the_cpu_side(kernel) -> bool:
    """False for the kernels the tests define to be refused (their IR cannot be built)."""
    try:
        kernel.build_ir()
    except sk.CompileError:
        return False
    return True


def _registered_kernels() -> list:
    _build_kernel_families()
    return [k for module in list(Module._registry.values()) for k in list(module.kernels)
            if _compiles_on_the_cpu_side(k)]


def _compile(name: str, source: str, tangent: bool = False) -> str | Exception:
    """The PTX of one module, built as a launch on a GPU builds it (through simkit's GPU cache,
    so a module a fake-GPU test already built for sm_90 is not compiled twice)."""
    try:
        image, kind = cuda_module.build(source, cuda_module.image_name(name, tangent), PTX_FOR_SM_90)
    except nvrtc.NvrtcCompileError as error:
        return error
    assert kind == "ptx"
    return image.rstrip(b"\0").decode()


@functools.cache
def _all_ptx() -> dict:
    """Module name -> its PTX (or the NVRTC error), compiled on every core at once (NVRTC releases the GIL)."""
    modules: dict[str, list] = {}
    for k in KERNELS:
        modules.setdefault(k.module.name, []).append(k.build_ir())
    sources = {name: codegen.module_source(irs, compiler.HEADER_NAME) for name, irs in modules.items()}
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        return dict(zip(sources, pool.map(_compile, sources, sources.values())))


def _has_tangent(k) -> bool:
    """False for a kernel using something without a tangent rule (atomic_min/max on floats)."""
    try:
        codegen_tangent.kernel_tangent_source(k.build_ir())
    except sk.CompileError:
        return False
    return True


@functools.cache
def _all_tangent_ptx() -> dict:
    """Module name -> the PTX of its tangent module (or the NVRTC error), as a JVP on a GPU would build it."""
    modules: dict[str, list] = {}
    for k in KERNELS:
        if _has_tangent(k):
            modules.setdefault(k.module.name, []).append(k.build_ir())
    sources = {name: codegen_tangent.tangent_module_source(irs) for name, irs in modules.items()}
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        return dict(zip(sources, pool.map(functools.partial(_compile, tangent=True), sources, sources.values())))


KERNELS = _registered_kernels()


def test_the_walk_holds_every_kernel_of_every_collected_test_module(request):
    walked = {id(k) for k in KERNELS}
    modules = {item.module for item in request.session.items if getattr(item, "module", None) is not None}
    # a generic kernel (typing.Any parameters) compiles only as its overloads, which join the walk once made
    missed = [f"{m.__name__}.{name}" for m in modules for name, k in vars(m).items()
              if isinstance(k, Kernel) and not k.generic and id(k) not in walked and _compiles_on_the_cpu_side(k)]
    assert missed == []


def test_the_walk_holds_the_kernel_families_of_simkit():
    assert {"simkit.optim.updates.float64", "simkit.kernels.tets.float32"} <= {k.module.name for k in KERNELS}


@pytest.mark.parametrize("kernel", KERNELS, ids=[f"{k.module.name}.{k.name}" for k in KERNELS])
def test_kernel_compiles_to_ptx_forward_and_adjoint(kernel):
    ptx = _all_ptx()[kernel.module.name]
    if isinstance(ptx, Exception):
        raise ptx
    for entry in nvrtc.entry_names(kernel):
        assert re.search(rf"\.visible\s+\.entry\s+{entry}\s*\(", ptx), f"{entry} is missing from the PTX"


@pytest.mark.parametrize("kernel", KERNELS, ids=[f"{k.module.name}.{k.name}" for k in KERNELS])
def test_kernel_tangent_compiles_to_ptx(kernel):
    if not _has_tangent(kernel):
        pytest.skip("uses an operation without a tangent rule (refused with a CompileError when used)")
    ptx = _all_tangent_ptx()[kernel.module.name]
    if isinstance(ptx, Exception):
        raise ptx
    entry = f"{kernel.build_ir().cname}_cuda_tangent"
    assert re.search(rf"\.visible\s+\.entry\s+{entry}\s*\(", ptx), f"{entry} is missing from the PTX"
