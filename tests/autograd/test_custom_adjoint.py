"""Custom adjoints written Warp's way: an @sk.func_grad body that accumulates into sk.adjoint[x]."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.func
def scaled_norm(v: sk.vec3d, s: F64) -> F64:
    return s * sk.length(v)


@sk.func_grad(scaled_norm)
def scaled_norm_grad(v: sk.vec3d, s: F64, adj_ret: F64):
    n = sk.length(v)
    sk.adjoint[s] += n * adj_ret
    if n > 0.0:
        sk.adjoint[v] += v * (s * adj_ret / n)


@sk.func
def clipped_sqrt(x: F64) -> F64:
    return sk.sqrt(x)


@sk.func_grad(clipped_sqrt)
def clipped_sqrt_grad(x: F64, adj_ret: F64):
    sk.adjoint[x] = adj_ret / (2.0 * sk.max(sk.sqrt(x), F64(0.1)))


@sk.kernel
def norms(v: sk.array(dtype=sk.vec3d), s: sk.array(dtype=F64), out: sk.array(dtype=F64)):
    i = sk.tid()
    out[i] = scaled_norm(v[i], s[i])


@sk.kernel
def roots(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = clipped_sqrt(x[i])


def test_accumulated_adjoints_match_finite_differences():
    rng = np.random.default_rng(3)
    v = sk.array(rng.uniform(-1, 1, (4, 3)), dtype=sk.vec3d)
    s = sk.array(rng.uniform(0.5, 2, 4), dtype=F64)
    r = sk.autograd.gradcheck(norms, 4, inputs=[v, s], outputs=[sk.zeros(4, dtype=F64)], eps=1e-6)
    assert r.ok, r


def test_accumulated_adjoint_replaces_the_generated_one():
    x = sk.array([4.0, 1e-4], dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(roots, 2, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(2)})
    np.testing.assert_allclose(x.grad.numpy(), [0.25, 1.0 / 0.2], rtol=1e-12)  # bounded near 0


def test_return_in_an_accumulating_body_is_a_compile_error():
    @sk.func
    def f(x: F64) -> F64:
        return x * x

    @sk.func_grad(f)
    def f_grad(x: F64, adj_ret: F64):
        sk.adjoint[x] += 2.0 * x * adj_ret
        return

    @sk.kernel
    def k(a: sk.array(dtype=F64)):
        a[0] = f(a[0])

    with pytest.raises(sk.CompileError, match="returns nothing"):
        k.build_ir()


def test_adjoint_of_a_non_parameter_is_a_compile_error():
    @sk.func
    def g(x: F64) -> F64:
        return x * x

    @sk.func_grad(g)
    def g_grad(x: F64, adj_ret: F64):
        y = x * 2.0
        sk.adjoint[y] += adj_ret

    @sk.kernel
    def k(a: sk.array(dtype=F64)):
        a[0] = g(a[0])

    with pytest.raises(sk.CompileError, match=r"sk.adjoint\[...\] takes a parameter .*\(x\)"):
        k.build_ir()


def test_adjoint_outside_a_func_grad_body_is_a_compile_error():
    @sk.kernel
    def k(a: sk.array(dtype=F64)):
        sk.adjoint[a] += 1.0

    with pytest.raises(sk.CompileError, match="only available in the body of an @sk.func_grad"):
        k.build_ir()


def test_adjoint_outside_a_kernel_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="func_grad"):
        sk.adjoint[1.0]


@pytest.mark.cpu_only("compiles with NVRTC; launches nothing")
@pytest.mark.parametrize("kernel", [norms, roots], ids=lambda k: k.name)
def test_accumulating_custom_adjoints_compile_to_ptx(kernel):
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")
    fwd, bwd = sk.cuda.entry_points(kernel)
    ptx = sk.cuda.ptx(kernel)
    assert f".entry {fwd}(" in ptx and f".entry {bwd}(" in ptx
