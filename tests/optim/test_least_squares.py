"""Gauss-Newton and Levenberg-Marquardt (sk.optim) on residuals computed by kernels."""

import numpy as np
import pytest

import simkit as sk

T = np.linspace(0.0, 1.0, 20)
TRUE = np.array([2.0, -1.5])


@sk.kernel
def exp_residuals(theta: sk.array(dtype=sk.float64), t: sk.array(dtype=sk.float64),
                  y: sk.array(dtype=sk.float64), r: sk.array(dtype=sk.float64)):
    i = sk.tid()
    r[i] = theta[0] * sk.exp(theta[1] * t[i]) - y[i]


def curve_fit_problem(start):
    theta = sk.array(np.array(start, dtype=np.float64), dtype=sk.float64)
    t = sk.array(T, dtype=sk.float64)
    y = sk.array(TRUE[0] * np.exp(TRUE[1] * T), dtype=sk.float64)
    r = sk.zeros(len(T), dtype=sk.float64)

    def residuals():
        sk.launch(exp_residuals, len(T), inputs=[theta, t, y], outputs=[r])
        return r
    return theta, residuals


@pytest.mark.parametrize("method", [sk.optim.LevenbergMarquardt, sk.optim.GaussNewton])
def test_fits_an_exponential_and_the_cost_never_rises(method):
    theta, residuals = curve_fit_problem([1.0, 0.0])
    opt = method([theta], residuals)
    costs = [opt.step() for _ in range(15)]
    assert all(b <= a for a, b in zip(costs, costs[1:]))
    np.testing.assert_allclose(theta.numpy(), TRUE, rtol=1e-8)
    assert opt.cost < 1e-20


def test_the_jacobian_is_the_analytic_one():
    theta, residuals = curve_fit_problem([1.5, -0.5])
    r, J = sk.optim.LevenbergMarquardt([theta], residuals).linearize()
    a, b = 1.5, -0.5
    np.testing.assert_allclose(J, np.stack([np.exp(b * T), a * T * np.exp(b * T)], axis=1), rtol=1e-12)
    np.testing.assert_allclose(r, a * np.exp(b * T) - TRUE[0] * np.exp(TRUE[1] * T), rtol=1e-12)


@sk.kernel
def flat_residuals(theta: sk.array(dtype=sk.float64), r: sk.array(dtype=sk.float64)):
    r[sk.tid()] = 1.0 + 0.0 * theta[0]


def test_a_step_that_cannot_lower_the_cost_leaves_the_parameters():
    theta, r = sk.array([0.25], dtype=sk.float64), sk.zeros(3, dtype=sk.float64)

    def residuals():
        sk.launch(flat_residuals, 3, inputs=[theta], outputs=[r])
        return r
    opt = sk.optim.LevenbergMarquardt([theta], residuals, max_tries=2)
    assert opt.step() == 3.0 and opt.cost == 3.0
    assert theta.numpy().tolist() == [0.25]


def test_bad_arguments_are_refused():
    theta, residuals = curve_fit_problem([1.0, 0.0])
    with pytest.raises(ValueError, match="at least one parameter"):
        sk.optim.LevenbergMarquardt([], residuals)
    with pytest.raises(TypeError, match=r"params\[0\] must be a float sk array"):
        sk.optim.LevenbergMarquardt([sk.zeros(2, dtype=sk.int32)], residuals)
    with pytest.raises(TypeError, match="residuals must be a callable"):
        sk.optim.LevenbergMarquardt([theta], 3.0)
    with pytest.raises(ValueError, match="damping >= 0"):
        sk.optim.LevenbergMarquardt([theta], residuals, damping=-1.0)
    with pytest.raises(TypeError, match="must return an sk array"):
        sk.optim.LevenbergMarquardt([theta], lambda: 1.0).step()
