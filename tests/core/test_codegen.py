"""What the generated C++ looks like where it matters for speed."""

import os

import pytest

import simkit as sk
from simkit.core import codegen, ir

pytestmark = pytest.mark.cpu_only("inspects generated source; launches nothing")


@sk.func
def small(x: float) -> float:
    return x * x + 1.0


@sk.func
def large(x: float) -> float:
    y = x
    for _k in range(16):  # unrolled: 16 times the 5 statements below
        y = y * 0.5 + x
        y = sk.sin(y) * sk.cos(x)
    return y


def test_the_large_function_is_large_and_the_small_one_small():
    size = {f: ir.work_estimate(f.spec_for_types([sk.float32]).ir) for f in (small, large)}
    assert size[small] <= codegen.INLINE_STATEMENTS < size[large]


@sk.kernel
def uses_both(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = small(a[i]) + large(a[i])


def test_small_user_functions_are_always_inlined_and_large_ones_left_to_the_compiler():
    src = uses_both.source()
    assert "static SK_FUNC float small_" in src
    assert "static SK_USER_FUNC float large_" in src


def test_adjoints_of_small_user_functions_are_always_inlined_and_large_ones_kept_out_of_line_on_the_gpu():
    sizes = {f: ir.work_estimate(f.spec_for_types([sk.float32]).ir, True) for f in (small, large)}
    assert sizes[small] <= codegen.ADJOINT_INLINE_STATEMENTS < sizes[large]
    src = uses_both.source()
    assert "static SK_FUNC void adj_small_" in src
    assert "static SK_DERIVED_FUNC void adj_large_" in src
    base = open(os.path.join(os.path.dirname(codegen.__file__), "native", "base.h")).read()
    assert "#define SK_DERIVED_FUNC __device__ __noinline__" in base     # NVRTC: out of line
    assert "#define SK_DERIVED_FUNC inline" in base                      # g++: its choice


@sk.kernel
def clamp_positive(a: sk.array(dtype=float), b: sk.array(dtype=float)):
    i = sk.tid()
    x = a[i]
    if x > 0.0:
        y = sk.sin(x) * 2.0
        b[i] = y


def test_the_adjoint_of_a_value_living_in_one_branch_is_declared_in_that_branch():
    # A thread that skips the branch (most threads of a contact kernel) then never clears it.
    backward = clamp_positive.source().split("_backward(")[1]
    top, reverse = backward.split("// reverse sweep")
    assert "float adj_y_" not in top.split("// forward replay")[0]
    assert "float adj_y_" in reverse.split("if (")[1]


@sk.kernel
def push_below(q: sk.array(dtype=sk.vec3), r: sk.array(dtype=float), f: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    n = sk.vec3(0.0, 1.0, 0.0)
    if sk.dot(n, q[i]) < r[i]:
        f[i] += n * (r[i] - sk.dot(n, q[i]))


def test_the_reverse_sweep_skips_the_adjoint_of_a_value_that_only_feeds_a_comparison():
    # Off the ground, a contact thread then adds nothing into q's and r's gradients.
    reverse = push_below.source().split("_backward(")[1].split("// reverse sweep")[1].split("\n}")[0]
    after_branch = reverse.rsplit("\n    }", 1)[1]
    assert "accum_grad" not in after_branch and "adj_dot" not in after_branch
    assert reverse.count("accum_grad_owned(sk::grad_ptr<Dense>(q") == 1
