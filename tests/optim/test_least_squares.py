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


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_both_jacobian_modes_give_the_analytic_jacobian(mode):
    theta, residuals = curve_fit_problem([1.5, -0.5])
    r, J = sk.optim.LevenbergMarquardt([theta], residuals, jacobian=mode).linearize()
    a, b = 1.5, -0.5
    np.testing.assert_allclose(J, np.stack([np.exp(b * T), a * T * np.exp(b * T)], axis=1), rtol=1e-12)
    assert not theta.requires_grad     # reverse mode gives the parameters a grad only while it runs


@sk.kernel
def final_residuals(u: sk.array(dtype=sk.float64), r: sk.array(dtype=sk.float64)):
    # two residuals of eight parameters: r0 = sum u_k^2 - 1, r1 = sum k u_k - 2
    k = sk.tid()
    sk.atomic_add(r, 0, u[k] * u[k] - 0.125)
    sk.atomic_add(r, 1, sk.float64(k) * u[k] - 0.25)


def few_residuals_problem():
    u = sk.array(np.full(8, 0.1), dtype=sk.float64)
    r = sk.zeros(2, dtype=sk.float64)

    def residuals():
        r.zero_()
        sk.launch(final_residuals, 8, inputs=[u], outputs=[r])
        return r
    return u, residuals


def test_auto_takes_reverse_mode_for_more_parameters_than_residuals(monkeypatch):
    u, residuals = few_residuals_problem()
    opt = sk.optim.LevenbergMarquardt([u], residuals)
    used = []
    monkeypatch.setattr(opt, "_linearize_forward", lambda: used.append("forward"))
    monkeypatch.setattr(opt, "_linearize_reverse", lambda: used.append("reverse"))
    opt.linearize()
    theta, residuals = curve_fit_problem([1.0, 0.0])
    opt = sk.optim.LevenbergMarquardt([theta], residuals)
    monkeypatch.setattr(opt, "_linearize_forward", lambda: used.append("forward"))
    opt.linearize()
    assert used == ["reverse", "forward"]


def test_the_reverse_jacobian_of_few_residuals_is_the_analytic_one():
    u, residuals = few_residuals_problem()
    r, J = sk.optim.LevenbergMarquardt([u], residuals, jacobian="reverse").linearize()
    np.testing.assert_allclose(J, np.stack([np.full(8, 0.2), np.arange(8.0)]), rtol=1e-12)
    np.testing.assert_allclose(r, [8 * 0.01 - 1.0, 0.1 * 28 - 2.0], rtol=1e-12)


def test_reverse_mode_lm_solves_two_equations_in_eight_unknowns():
    u, residuals = few_residuals_problem()
    opt = sk.optim.LevenbergMarquardt([u], residuals)
    for _ in range(20):
        opt.step()
    assert opt.cost < 1e-20


@sk.kernel
def line_residual(u: sk.array(dtype=sk.float64), r: sk.array(dtype=sk.float64)):
    k = sk.tid()
    sk.atomic_add(r, 0, sk.float64(k) * u[k] - 0.25)


def test_an_l2_term_gives_the_tikhonov_solution():
    # min (a.u - 2)^2 + l2 |u|^2 over 8 unknowns: u* = a (2 / (a.a + l2)); quadratic, so one Gauss-Newton step
    u, r = sk.zeros(8, dtype=sk.float64), sk.zeros(1, dtype=sk.float64)

    def residuals():
        r.zero_()
        sk.launch(line_residual, 8, inputs=[u], outputs=[r])
        return r
    a, l2 = np.arange(8.0), 0.5
    opt = sk.optim.GaussNewton([u], residuals, l2=l2)
    assert opt.step() == pytest.approx(4.0)
    np.testing.assert_allclose(u.numpy(), a * 2.0 / (a @ a + l2), rtol=1e-12)
    assert opt.cost == pytest.approx((a @ u.numpy() - 2.0) ** 2 + l2 * u.numpy() @ u.numpy(), rel=1e-12)


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
    with pytest.raises(ValueError, match="jacobian must be one of auto, forward, reverse"):
        sk.optim.LevenbergMarquardt([theta], residuals, jacobian="central")
    with pytest.raises(ValueError, match="l2 must be a finite number >= 0"):
        sk.optim.GaussNewton([theta], residuals, l2=-1.0)
    with pytest.raises(TypeError, match="must return an sk array"):
        sk.optim.LevenbergMarquardt([theta], lambda: 1.0, jacobian="reverse").linearize()
