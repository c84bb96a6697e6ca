"""A thread that reads back the element it stored earlier in the same kernel (store-to-load
forwarding): allowed, and differentiated exactly; in-place updates and reads of other
threads' elements stay refused."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def chain(x: sk.array(dtype=float), y: sk.array(dtype=float), z: sk.array(dtype=float),
          s: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i]
    z[i] = y[i]
    s[i] = z[i]


@pytest.mark.parametrize("make", [lambda x: sk.zeros_like(x), lambda x: sk.zeros(3)], ids=["zeros_like", "zeros"])
def test_the_copy_chain_gives_ones_for_each_seeded_output(make):
    x = sk.array([1.0, 2.0, 3.0], dtype=sk.float32, requires_grad=True)
    y, z, s = make(x), make(x), make(x)
    tape = sk.Tape()
    with tape:
        sk.launch(chain, 3, inputs=[x], outputs=[y, z, s])
    for out in (y, z, s):
        tape.backward(grads={out: np.ones(3, np.float32)})
        assert x.grad.numpy().tolist() == [1.0, 1.0, 1.0]
        tape.zero()
    assert s.numpy().tolist() == [1.0, 2.0, 3.0]


@sk.kernel
def nonlinear_readback(x: sk.array(dtype=F64), y: sk.array(dtype=F64), out: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = sk.sin(x[i]) * x[i]
    if x[i] > 0.0:
        out[i] = y[i] * y[i] + sk.exp(y[i])
    else:
        out[i] = 2.0 * y[i]


def test_a_read_back_value_is_differentiated_like_the_stored_expression():
    x0 = np.array([0.3, -0.8, 1.2, 2.0])
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y, out = sk.zeros(4, dtype=F64), sk.zeros(4, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(nonlinear_readback, 4, inputs=[x], outputs=[y, out])
    tape.backward(grads={out: np.ones(4)})

    def f(v):
        yy = np.sin(v) * v
        return np.where(v > 0, yy * yy + np.exp(yy), 2 * yy)
    eps = 1e-6
    fd = (f(x0 + eps) - f(x0 - eps)) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-7)


@sk.kernel
def double_in_place(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = y[i] * 2.0 + x[i]


def test_an_in_place_update_is_still_refused_with_the_clear_error():
    x = sk.array([1.0], dtype=F64, requires_grad=True)
    y = sk.ones(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(double_in_place, 1, inputs=[x], outputs=[y])
    with pytest.raises(RuntimeError, match="read argument 'y', which the same launch overwrote"):
        tape.backward(grads={y: np.ones(1)})


@sk.kernel
def read_neighbour(x: sk.array(dtype=F64), y: sk.array(dtype=F64), z: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i]
    z[i] = y[(i + 1) % 3]


def test_reading_an_element_another_thread_stores_is_still_refused():
    x = sk.array([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y, z = sk.zeros(3, dtype=F64), sk.zeros(3, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(read_neighbour, 3, inputs=[x], outputs=[y, z])
    with pytest.raises(RuntimeError, match="read argument 'y', which the same launch overwrote"):
        tape.backward(grads={z: np.ones(3)})


@sk.kernel
def store_in_branch_then_read(x: sk.array(dtype=F64), y: sk.array(dtype=F64), z: sk.array(dtype=F64)):
    i = sk.tid()
    if x[i] > 0.0:
        y[i] = x[i]
    z[i] = y[i]


def test_a_store_that_does_not_happen_on_every_path_is_not_forwarded():
    # the read may see y's earlier contents (x <= 0): a read of y, which this launch writes
    x = sk.array([1.0, -1.0], dtype=F64, requires_grad=True)
    y, z = sk.full(2, 5.0, dtype=F64), sk.zeros(2, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(store_in_branch_then_read, 2, inputs=[x], outputs=[y, z])
    assert z.numpy().tolist() == [1.0, 5.0]
    with pytest.raises(RuntimeError, match="read argument 'y', which the same launch overwrote"):
        tape.backward(grads={z: np.ones(2)})


@sk.kernel
def accumulate_in_loop(x: sk.array(dtype=F64), n: int, y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i]
    for k in range(n):
        y[i] = y[i] * x[i]


def test_a_loop_that_stores_again_reads_memory_not_the_value_stored_before_it():
    x = sk.array([2.0], dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)
    sk.launch(accumulate_in_loop, 1, inputs=[x, 3], outputs=[y])
    assert y.numpy().tolist() == [16.0]   # x^(n+1), as memory semantics give


def test_passing_one_array_for_two_outputs_of_a_forwarding_kernel_is_refused():
    x = sk.array([1.0, 2.0, 3.0], dtype=sk.float32)
    y, s = sk.zeros(3), sk.zeros(3)
    with pytest.raises(ValueError, match="'y' and 'z' are the same memory"):
        sk.launch(chain, 3, inputs=[x], outputs=[y, y, s])
