"""Values a tape sees overwritten: an array written twice, an element stored twice, grads of
intermediates from an earlier backward. The gradient is the one of the final program, or a
clear refusal, never a double count."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def square(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def cube_into(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i] * x[i]


@sk.kernel
def add_into(x: sk.array(dtype=F64), total: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(total, i, 3.0 * x[i])


@sk.kernel
def sum_sin(y: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.sin(y[i]))


def test_an_output_written_by_two_launches_gets_the_gradient_of_the_second_write_only():
    # y = x^2 twice into the same y, then z = y^2 = x^4: dz/dx = 4 x^3, not twice that
    x = sk.array([3.0], dtype=F64, requires_grad=True)
    y, z = sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 1, inputs=[x], outputs=[y])
        sk.launch(square, 1, inputs=[x], outputs=[y])
        sk.launch(square, 1, inputs=[y], outputs=[z])
    tape.backward(grads={z: np.ones(1)})
    assert x.grad.numpy().tolist() == [4 * 27.0]


def test_a_later_write_of_other_values_replaces_the_earlier_ones_in_the_gradient():
    # y = x^2 then y = x^3 (same buffer): loss = sin(x^3), the squares contribute nothing
    x0 = np.array([0.4, -0.9, 1.3])
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y, loss = sk.zeros(3, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 3, inputs=[x], outputs=[y])
        sk.launch(cube_into, 3, inputs=[x], outputs=[y])
        sk.launch(sum_sin, 3, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x0 ** 3) * 3 * x0 ** 2, rtol=1e-12)


@sk.kernel
def store_twice(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = 5.0 * x[i]
    y[i] = 2.0 * x[i]


def test_an_element_stored_twice_in_one_kernel_gets_the_gradient_of_the_last_store():
    x = sk.array([1.0, 2.0], dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(store_twice, 2, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(2)})
    assert x.grad.numpy().tolist() == [2.0, 2.0]


@sk.kernel
def store_in_loop(x: sk.array(dtype=F64), n: int, y: sk.array(dtype=F64)):
    i = sk.tid()
    for k in range(n):
        y[i] = sk.float64(k + 1) * x[i]


def test_an_element_stored_on_every_iteration_of_a_dynamic_loop_gets_the_last_iterations_gradient():
    x = sk.array([1.0], dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(store_in_loop, 1, inputs=[x, 4], outputs=[y])
    tape.backward(grads={y: np.ones(1)})
    assert x.grad.numpy().tolist() == [4.0]


@sk.kernel
def scatter_store(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[0] = x[i] * 0.0 + 7.0 * x[0]   # every thread stores the same value into one element


def test_an_element_many_threads_store_passes_its_gradient_once():
    x = sk.array(np.ones(64), dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(scatter_store, 64, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(1)})
    assert x.grad.numpy()[0] == 7.0


def test_accumulation_into_an_intermediate_does_not_carry_over_to_the_next_backward():
    # total (an intermediate written with atomic adds) is never zeroed by the user; each
    # backward must still give exactly one gradient's worth to x
    x0 = np.array([0.2, 0.5])
    x = sk.array(x0, dtype=F64, requires_grad=True)
    total, loss = sk.zeros(2, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(add_into, 2, inputs=[x], outputs=[total])
        sk.launch(sum_sin, 2, inputs=[total], outputs=[loss])
    expected = 3.0 * np.cos(3.0 * x0)
    for _ in range(3):
        x.grad.zero_()
        tape.backward(loss=loss)
        np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_leaf_grads_still_accumulate_across_backward_calls_until_zeroed():
    x = sk.array([0.2, 0.5], dtype=F64, requires_grad=True)
    total, loss = sk.zeros(2, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(add_into, 2, inputs=[x], outputs=[total])
        sk.launch(sum_sin, 2, inputs=[total], outputs=[loss])
    tape.backward(loss=loss)
    once = x.grad.numpy().copy()
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * once, rtol=1e-15)


def test_a_seed_given_as_another_arrays_grad_survives_the_clearing_of_intermediates():
    x = sk.array([1.5], dtype=F64, requires_grad=True)
    y, z = sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as first:
        sk.launch(square, 1, inputs=[x], outputs=[y])
    with sk.Tape() as second:
        sk.launch(square, 1, inputs=[y], outputs=[z])
    second.backward(grads={z: np.ones(1)})          # y.grad = 2 y
    first.backward(grads={y: y.grad})               # the seed is y's own grad
    assert x.grad.numpy()[0] == pytest.approx(4 * 1.5 ** 3, rel=1e-15)


@sk.kernel
def count_positive(x: sk.array(dtype=F64), counts: sk.array(dtype=sk.int32)):
    i = sk.tid()
    if x[i] > 0.0:
        sk.atomic_add(counts, 0, 1)


def test_launches_that_touch_no_array_with_a_grad_are_not_replayed(monkeypatch):
    from simkit.core import launch as L

    x = sk.array([1.0, -2.0], dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64)
    flags = sk.array([1.0, 1.0], dtype=F64)   # no grad
    counts = sk.zeros(1, dtype=sk.int32)
    with sk.Tape() as tape:
        sk.launch(count_positive, 2, inputs=[flags], outputs=[counts])
        sk.launch(square, 2, inputs=[x], outputs=[y])
    replayed = []
    real = L.launch
    monkeypatch.setattr(L, "launch", lambda k, *a, **kw: (replayed.append(k.name), real(k, *a, **kw))[1])
    tape.backward(grads={y: np.ones(2)})
    assert replayed == ["square"]
    assert x.grad.numpy().tolist() == [2.0, -4.0]
