"""sk.optim.SGD / Adam under warp.optim's constructor, step(grad) and reset_internal_state()."""

import numpy as np
import pytest

import simkit as sk
from simkit.optim import SGD, Adam


def param(values):
    return sk.array(np.array(values), dtype=sk.float64, requires_grad=True)


def torch_sgd(p, grads, lr, momentum, dampening, weight_decay, nesterov):
    """PyTorch's SGD update written out in numpy (float64)."""
    p, buf = np.array(p, float), None
    for g in grads:
        g = np.asarray(g, float) + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


@pytest.mark.parametrize("momentum,dampening,weight_decay,nesterov",
                         [(0.9, 0.0, 0.0, True), (0.8, 0.3, 0.0, False), (0.5, 0.1, 0.01, True),
                          (0.0, 0.0, 0.05, False)])
def test_sgd_with_warps_arguments_follows_the_torch_update(momentum, dampening, weight_decay, nesterov):
    p = param([1.0, -2.0, 0.5])
    grads = [np.array([0.3, -0.1, 2.0]), np.array([-1.0, 0.4, 0.2]), np.array([0.5, 0.5, -0.5])]
    opt = SGD([p], lr=0.1, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
    for g in grads:
        p.grad.assign(g)
        opt.step()
    want = torch_sgd([1.0, -2.0, 0.5], grads, 0.1, momentum, dampening, weight_decay, nesterov)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-12)


def test_sgd_positional_arguments_in_warps_order():
    p = param([1.0])
    opt = SGD([p], 0.1, 0.9, 0.0, 0.0, True)
    assert (opt.lr, opt.momentum, opt.nesterov) == (0.1, 0.9, True)


def test_step_with_a_list_of_grads_uses_them_instead_of_dot_grad():
    p = param([1.0, 2.0])
    g = sk.array(np.array([0.5, -1.0]), dtype=sk.float64)
    Adam(params=[p], lr=0.1, betas=(0.9, 0.999), eps=1e-8).step([g])
    # the first Adam step moves each component by lr * sign(g) (up to eps)
    np.testing.assert_allclose(p.numpy(), [0.9, 2.1], rtol=1e-6)
    assert not np.any(p.grad.numpy())


def test_step_with_a_grad_of_the_wrong_shape_names_it():
    p = param([1.0, 2.0])
    with pytest.raises(ValueError, match=r"grad\[0\] must be shaped like params\[0\]"):
        SGD([p], lr=0.1).step([sk.zeros(3, dtype=sk.float64)])


def test_reset_internal_state_makes_the_next_step_a_first_step():
    p = param([1.0])
    opt = Adam([p], lr=0.1)
    for _ in range(3):
        p.grad.assign(np.array([2.0]))
        opt.step()
    opt.reset_internal_state()
    assert opt.step_count == 0
    assert all(not np.any(b.numpy()) for bufs in opt.buffers.values() for b in bufs)
    before = p.numpy().copy()
    p.grad.assign(np.array([-3.0]))
    opt.step()
    np.testing.assert_allclose(p.numpy() - before, [0.1], rtol=1e-6)


def test_nesterov_without_momentum_is_refused():
    with pytest.raises(ValueError, match="nesterov=True needs a momentum"):
        SGD([param([1.0])], lr=0.1, nesterov=True)


def test_sgd_matches_warp_optim_on_the_same_steps():
    wp = pytest.importorskip("warp")
    import warp.optim
    wp.config.quiet = True
    grads = [np.array([0.3, -0.1], np.float32), np.array([-1.0, 0.4], np.float32)]
    wparam = wp.array(np.array([1.0, -2.0], np.float32), dtype=float, device="cpu")
    wopt = warp.optim.SGD([wparam], lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01, nesterov=True)
    p = sk.array(np.array([1.0, -2.0], np.float32), requires_grad=True)
    opt = SGD([p], lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01, nesterov=True)
    for g in grads:
        wopt.step([wp.array(g, dtype=float, device="cpu")])
        opt.step([sk.array(g)])
    np.testing.assert_allclose(p.numpy(), wparam.numpy(), rtol=1e-6)


def test_a_state_saved_before_dampening_existed_loads_with_the_defaults():
    p = param([1.0])
    opt = SGD([p], lr=0.1, momentum=0.9)
    p.grad.assign(np.array([1.0]))
    opt.step()
    old = opt.state_dict()
    for key in ("dampening", "weight_decay", "nesterov"):
        del old[key]
    fresh = SGD([param([1.0])], lr=0.5)
    fresh.load_state_dict(old)
    assert (fresh.momentum, fresh.dampening, fresh.weight_decay, fresh.nesterov) == (0.9, 0.0, 0.0, False)


def numpy_adam(p, grads, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Adam written out in numpy (float64)."""
    p, m, v = np.array(p, float), 0.0, 0.0
    for t, g in enumerate(grads, start=1):
        g = np.asarray(g, float)
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p


def test_adam_on_float16_parameters_computes_in_float32_and_rounds_once_per_step():
    # in half precision eps = 1e-8 and the square of a 1e-3 gradient are zero: the moments
    # and the arithmetic are float32, each step rounded into the parameter
    grads = [np.array([1e-3, 1.0], np.float16), np.array([-2e-3, 0.5], np.float16)]
    p = sk.array(np.array([2.0, 1.0], np.float16), dtype=sk.float16, requires_grad=True)
    opt = Adam([p], lr=0.01)
    for g in grads:
        opt.step([sk.array(g, dtype=sk.float16)])
    assert np.isfinite(p.numpy()).all()
    np.testing.assert_allclose(p.numpy().astype(float), numpy_adam([2.0, 1.0], grads, 0.01), atol=2e-3)
    assert opt.buffers["exp_avg"][0].dtype is sk.float32


def test_sgd_keeps_the_momentum_of_float16_parameters_in_float32():
    # 200 steps of a gradient of 1e-4: in half precision the momentum (0.9 m + g) stalls
    # at ~1e-3 in steps of its rounding; in float32 it converges to g / (1 - 0.9)
    p = sk.array(np.array([1.0], np.float16), dtype=sk.float16, requires_grad=True)
    opt = SGD([p], lr=1e-3, momentum=0.9)
    g = sk.array(np.array([1e-4], np.float16), dtype=sk.float16)
    for _ in range(200):
        opt.step([g])
    assert opt.buffers["momentum"][0].dtype is sk.float32
    np.testing.assert_allclose(opt.buffers["momentum"][0].numpy(), 1e-4 / 0.1, rtol=1e-3)
