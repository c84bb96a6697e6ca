"""``sk.grad(f)(args)`` in kernels (Warp's ``wp.grad``): the gradient of a scalar function or builtin."""

import numpy as np
import pytest

import simkit as sk
from simkit.core.errors import CompileError


@sk.func
def square(x: float):
    return x * x


@sk.func
def scaled_norm_sq(a: float, b: sk.vec3):
    return a * sk.dot(b, b)


@sk.func
def two_values(x: float):
    return x, x


@sk.kernel
def slopes(x: sk.array(dtype=float), out: sk.array(dtype=float, ndim=2), gv: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    out[i, 0] = sk.grad(square)(x[i])
    dy, dx = sk.grad(sk.atan2)(x[i], 2.0)
    out[i, 1] = dy
    out[i, 2] = dx
    ga, gb = sk.grad(scaled_norm_sq)(x[i], sk.vec3(1.0, 2.0, 3.0))
    out[i, 3] = ga
    gv[i] = gb


@sk.kernel
def slope_times_x(x: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = sk.grad(square)(x[i]) * x[i]


def _run(xs):
    x, out, gv = sk.array(xs.astype(np.float32)), sk.zeros((len(xs), 4)), sk.zeros(len(xs), dtype=sk.vec3)
    sk.launch(slopes, len(xs), inputs=[x, out, gv])
    return out.numpy(), gv.numpy()


def test_grad_of_a_function_matches_finite_differences():
    xs = np.array([1.5, -2.0, 0.3])
    out, gv = _run(xs)
    eps = 1e-3
    np.testing.assert_allclose(out[:, 0], ((xs + eps) ** 2 - (xs - eps) ** 2) / (2 * eps), rtol=1e-5)
    np.testing.assert_allclose(out[:, 3], np.full(3, 14.0), rtol=1e-6)
    np.testing.assert_allclose(gv, 2 * xs[:, None] * np.array([1.0, 2.0, 3.0]), rtol=1e-6)


def test_grad_of_a_builtin_gives_one_value_per_argument():
    xs = np.array([1.5, -2.0, 0.3])
    out, _ = _run(xs)
    eps = 1e-4
    np.testing.assert_allclose(out[:, 1], (np.arctan2(xs + eps, 2.0) - np.arctan2(xs - eps, 2.0)) / (2 * eps), rtol=1e-4)
    np.testing.assert_allclose(out[:, 2], (np.arctan2(xs, 2.0 + eps) - np.arctan2(xs, 2.0 - eps)) / (2 * eps), rtol=1e-4)


def test_grad_is_a_constant_for_the_kernels_own_adjoint():
    x = sk.array([1.5, -2.0], requires_grad=True)
    out = sk.zeros(2, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(slope_times_x, 2, inputs=[x, out])
    tape.backward(grads={out: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -4.0])  # d(g * x)/dx with g = 2x held fixed


def test_grad_of_a_function_with_two_results_is_refused():
    @sk.kernel
    def bad(x: sk.array(dtype=float)):
        x[0] = sk.grad(two_values)(x[0])

    with pytest.raises(CompileError, match="returning one float"):
        sk.launch(bad, 1, inputs=[sk.zeros(1)])


def test_grad_of_something_else_is_refused():
    with pytest.raises(TypeError, match="sk.grad expects an @sk.func or a differentiable builtin"):
        sk.grad(len)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_gives_the_same_gradients():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.func
    def wsquare(x: float):
        return x * x

    @wp.kernel
    def k(x: wp.array(dtype=float), out: wp.array2d(dtype=float)):
        i = wp.tid()
        out[i, 0] = wp.grad(wsquare)(x[i])
        dy, dx = wp.grad(wp.atan2)(x[i], 2.0)
        out[i, 1] = dy
        out[i, 2] = dx

    xs = np.array([1.5, -2.0, 0.3])
    out = wp.zeros((3, 3), dtype=float, device="cpu")
    wp.launch(k, 3, inputs=[wp.array(xs, dtype=float, device="cpu"), out], device="cpu")
    np.testing.assert_allclose(out.numpy(), _run(xs)[0][:, :3], rtol=1e-6)


def test_forward_mode_through_grad_is_refused_clearly():
    x, out = sk.array([1.5, -2.0]), sk.zeros(2)
    with pytest.raises(CompileError, match="sk.grad of function 'square' has no tangent"):
        with sk.autograd.JVP({x: np.ones(2)}):
            sk.launch(slope_times_x, 2, inputs=[x, out])
