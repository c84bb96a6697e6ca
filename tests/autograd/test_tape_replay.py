"""TapedRun: a forward of launches and its backward, run again over the same arrays, replay
natively with the Tape's gradients, bit for bit; what a replay could not redo exactly runs
the Tape again and says why."""

import numpy as np
import pytest

import simkit as sk
from simkit.autograd.tape_replay import TapedRun


@sk.kernel
def square_into(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def weighted_sum(y: sk.array(dtype=float), w: float, loss: sk.array(dtype=float)):
    sk.atomic_add(loss, 0, w * y[sk.tid()])


class Chain:
    def __init__(self):
        self.x = sk.array(np.array([1.0, -2.0, 0.5], np.float32), requires_grad=True)
        self.y = sk.zeros(3)
        self.loss = sk.zeros(1)
        self.w = 2.0
        self.taped = TapedRun()

    def loss_fn(self, y, loss):
        sk.launch(weighted_sum, 3, inputs=[y, self.w, loss])

    def forward(self, user):
        self.loss.zero_()
        sk.launch(square_into, 3, inputs=[self.x], outputs=[self.y])
        user(self.loss_fn, self.y, self.loss)
        return self.loss, None

    def run(self, x):
        self.x.assign(np.asarray(x, np.float32))
        self.x.grad.zero_()
        _, replayed = self.taped.run((self.x, self.y, self.loss), (), self.forward)
        return replayed, self.loss.numpy()[0], self.x.grad.numpy().copy()


def test_the_third_run_replays_with_the_tapes_loss_and_gradient(device):
    c = Chain()
    out = [c.run([1.0 + k, -2.0, 0.5 * k]) for k in range(4)]
    # on a GPU every run goes through the Tape, with the same results
    assert [r for r, _l, _g in out] == ([False, False, True, True] if device == "cpu" else [False] * 4)
    for k, (_r, loss, g) in enumerate(out):
        x = np.array([1.0 + k, -2.0, 0.5 * k], np.float32)
        assert loss == np.float32(2.0) * np.sum(x * x, dtype=np.float32)
        assert np.array_equal(g, np.float32(4.0) * x)


def test_a_changed_scalar_of_a_user_function_runs_the_tape():
    c = Chain()
    for _ in range(3):
        c.run([1.0, 2.0, 3.0])
    c.w = 5.0
    replayed, loss, g = c.run([1.0, 2.0, 3.0])
    assert not replayed
    assert loss == pytest.approx(5.0 * 14.0)
    assert np.allclose(g, [10.0, 20.0, 30.0])


@pytest.mark.cpu_only("taped runs replay on the CPU only")
def test_a_grad_copy_on_the_tape_is_not_replayed_and_says_why():
    c = Chain()
    z = sk.zeros(3)

    def forward(user):
        c.loss.zero_()
        sk.launch(square_into, 3, inputs=[c.x], outputs=[c.y])
        sk.copy(z, c.y)
        user(c.loss_fn, z, c.loss)
        return c.loss, None
    for _ in range(3):
        c.x.grad.zero_()
        _, replayed = c.taped.run((c.x, c.y, c.loss, z), (), forward)
        assert not replayed
    assert "copies an array that requires grad" in c.taped.reason
    assert np.allclose(c.x.grad.numpy(), [4.0, -8.0, 2.0])


@pytest.mark.cpu_only("taped runs replay on the CPU only")
def test_in_debug_mode_a_run_goes_through_the_tape():
    c = Chain()
    saved = sk.config.mode
    sk.config.mode = "debug"
    try:
        assert not any(c.run([1.0, 2.0, 3.0])[0] for _ in range(4))
    finally:
        sk.config.mode = saved
