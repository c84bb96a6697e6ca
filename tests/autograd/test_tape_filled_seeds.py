"""``tape.backward()`` with no arguments, seeded from the grads the user filled (Warp's idiom)."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def cube(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i] * x[i]


@sk.kernel
def total(y: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, y[i])


def record(x0):
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y, loss = sk.zeros(len(x0), dtype=F64), sk.zeros(1, dtype=F64)
    tape = sk.Tape()
    with tape:
        sk.launch(cube, len(x0), inputs=[x], outputs=[y])
        sk.launch(total, len(x0), inputs=[y], outputs=[loss])
    return tape, x, y, loss


def fd(f, x0, eps=1e-6):
    g = np.zeros_like(x0)
    for k in range(len(x0)):
        e = np.zeros_like(x0)
        e[k] = eps
        g[k] = (f(x0 + e) - f(x0 - e)) / (2 * eps)
    return g


def test_no_argument_backward_seeds_from_a_filled_loss_grad():
    x0 = np.array([0.5, -1.2, 2.0])
    tape, x, _y, loss = record(x0)
    loss.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), fd(lambda v: np.sum(v ** 3), x0), rtol=1e-8)


def test_no_argument_backward_seeds_from_a_filled_vector_grad():
    x0 = np.array([0.5, -1.2, 2.0])
    tape, x, y, _loss = record(x0)
    y.grad.assign(np.array([1.0, 2.0, 3.0]))
    tape.backward()
    w = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), fd(lambda v: np.dot(w, v ** 3), x0), rtol=1e-8)


def test_no_argument_backward_without_any_filled_grad_is_an_error():
    tape, x, _y, _loss = record(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"no seed.*loss\.grad\.fill_\(1\.0\)"):
        tape.backward()
    assert not np.any(x.grad.numpy())


def test_a_second_backward_after_zero_and_refill_gives_the_same_gradient():
    x0 = np.array([0.3, 1.5])
    tape, x, _y, loss = record(x0)
    loss.grad.fill_(1.0)
    tape.backward()
    first = x.grad.numpy().copy()
    tape.zero()
    loss.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), first, rtol=1e-12)


@sk.kernel
def doubled(s: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    sk.atomic_add(loss, 0, 2.0 * s[0])


def record_three(x0):
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y, s, loss = sk.zeros(len(x0), dtype=F64), sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)
    tape = sk.Tape()
    with tape:
        sk.launch(cube, len(x0), inputs=[x], outputs=[y])
        sk.launch(total, len(x0), inputs=[y], outputs=[s])
        sk.launch(doubled, 1, inputs=[s], outputs=[loss])
    return tape, x, s, loss


def test_what_a_backward_leaves_in_intermediates_is_not_a_seed_next_time():
    x0 = np.array([0.3, 1.5])
    tape, x, s, loss = record_three(x0)
    loss.grad.fill_(1.0)
    tape.backward()
    assert s.grad.numpy()[0] == 2.0   # left there by the first backward (an atomic_add target)
    x.grad.zero_()
    tape.backward()                   # the seed stays loss's; s's leftover is cleared, not replayed
    np.testing.assert_allclose(x.grad.numpy(), fd(lambda v: 2 * np.sum(v ** 3), x0), rtol=1e-8)


def test_a_leftover_intermediate_grad_alone_is_no_seed():
    tape, x, s, loss = record_three(np.array([0.3, 1.5]))
    loss.grad.fill_(1.0)
    tape.backward()
    loss.grad.zero_()
    x.grad.zero_()
    with pytest.raises(ValueError, match="no seed"):
        tape.backward()


def test_no_argument_backward_matches_warp_on_the_same_kernel_text():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True

    @wp.kernel
    def wcube(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = x[i] * x[i] * x[i]

    @wp.kernel
    def wtotal(y: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
        i = wp.tid()
        wp.atomic_add(loss, 0, y[i])

    x0 = np.array([0.5, -1.2, 2.0])
    wx = wp.array(x0, dtype=wp.float64, requires_grad=True, device="cpu")
    wy = wp.zeros(3, dtype=wp.float64, requires_grad=True, device="cpu")
    wl = wp.zeros(1, dtype=wp.float64, requires_grad=True, device="cpu")
    wtape = wp.Tape()
    with wtape:
        wp.launch(wcube, 3, inputs=[wx], outputs=[wy], device="cpu")
        wp.launch(wtotal, 3, inputs=[wy], outputs=[wl], device="cpu")
    wl.grad.fill_(1.0)
    wtape.backward()

    tape, x, _y, loss = record(x0)
    loss.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), wx.grad.numpy(), rtol=1e-12)
