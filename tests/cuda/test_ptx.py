"""simkit.cuda.ptx: a kernel's forward and adjoint as PTX, without a GPU."""

import importlib
import re

import pytest

pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")

import simkit as sk  # noqa: E402


@sk.kernel
def scale(a: sk.array(dtype=float), s: float):
    i = sk.tid()
    a[i] = a[i] * s


@sk.kernel
def with_loop(x: sk.array(dtype=float), n: int, y: sk.array(dtype=float)):
    i = sk.tid()
    acc = 0.0
    for j in range(n):
        acc = acc * 0.5 + x[j]
    y[i] = acc


def test_sk_cuda_is_the_module_and_importable_by_name():
    mod = importlib.import_module("simkit.cuda")
    assert sk.cuda is mod and callable(mod.ptx)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80", "compute_75"])
def test_ptx_holds_the_forward_and_the_adjoint(arch):
    text = sk.cuda.ptx(scale, arch=arch)
    fwd, bwd = sk.cuda.entry_points(scale)
    assert f".visible .entry {fwd}(" in text and f".visible .entry {bwd}(" in text
    assert f".target {arch.replace('compute', 'sm')}" in text


def test_the_default_arch_is_sm_90():
    assert ".target sm_90" in sk.cuda.ptx(scale)


def test_the_error_record_is_an_unmangled_global_the_host_can_find():
    assert ".global .align 8 .b8 sk_error[80]" in sk.cuda.ptx(scale)


def test_the_gpu_loop_stack_has_its_own_depth(monkeypatch):
    """The adjoint's loop replay stack is sized by cuda_max_loop_iterations on the GPU."""
    src = with_loop.source()
    assert f"#define SK_LOOP_STACK {sk.config.cuda_max_loop_iterations}" in src
    assert f"#define SK_LOOP_STACK {sk.config.max_loop_iterations}" in src
    assert re.search(r"L\d+_s0\[SK_LOOP_STACK\];", src)
    sk.cuda.ptx(with_loop)


def test_entry_points_are_the_unmangled_cuda_entries():
    fwd, bwd = sk.cuda.entry_points(scale)
    assert fwd == f"{scale.cname}_cuda_forward" and bwd == f"{scale.cname}_cuda_backward"


def test_bad_arch_and_non_kernels_are_refused():
    with pytest.raises(ValueError, match="architecture"):
        sk.cuda.ptx(scale, arch="hopper")
    with pytest.raises(TypeError, match="@sk.kernel"):
        sk.cuda.ptx(lambda x: x)
    with pytest.raises(TypeError, match="@sk.kernel"):
        sk.cuda.entry_points(object())


def test_nvrtc_version():
    major, minor = sk.cuda.nvrtc_version()
    assert major >= 12 and minor >= 0
