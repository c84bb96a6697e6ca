"""Writes the version counters cannot see (through a ``.numpy()`` view of a CPU array): debug
mode checksums every recorded read and refuses backward when the data changed."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64

pytestmark = pytest.mark.cpu_only(".numpy() is a writable view of the data only on the CPU")


@sk.kernel
def square(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@pytest.fixture
def debug_mode():
    old = sk.config.mode
    sk.config.mode = "debug"
    yield
    sk.config.mode = old


def test_debug_mode_refuses_backward_after_a_write_through_a_numpy_view(debug_mode):
    x = sk.array([1.0], dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 1, inputs=[x], outputs=[y])
    x.numpy()[:] = 5.0
    with pytest.raises(RuntimeError, match=r"kernel 'square' \(launch #0\) read argument 'x', whose data changed "
                                           r"afterwards without a launch.*\.numpy\(\) view"):
        tape.backward(grads={y: np.ones(1)})
    assert x.grad.numpy().tolist() == [0.0]


def test_debug_mode_accepts_an_untouched_recording(debug_mode):
    x = sk.array([1.5], dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 1, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(1)})
    assert x.grad.numpy().tolist() == [3.0]


def test_a_write_through_assign_is_caught_in_every_mode():
    x = sk.array([1.0], dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 1, inputs=[x], outputs=[y])
    x.assign(np.array([5.0]))
    with pytest.raises(RuntimeError, match="read argument 'x', which a write outside this tape"):
        tape.backward(grads={y: np.ones(1)})
