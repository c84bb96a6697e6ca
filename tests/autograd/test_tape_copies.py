"""Copies and host writes inside a Tape: ``clone``, ``copy`` and ``assign`` carry gradients,
a host write over an array the tape wrote cuts them, ``clone(requires_grad=False)`` detaches."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def cube(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i] * x[i]


@sk.kernel
def add_total(y: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, y[i])


@sk.kernel
def add_squares(y: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, y[i] * y[i])


X0 = np.array([0.5, -1.5, 2.0])


def leaf(values=X0):
    return sk.array(values, dtype=F64, requires_grad=True)


def test_a_clone_passes_its_gradient_back_to_its_source():
    x, loss = leaf(), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        y = sk.clone(x)
        sk.launch(add_total, 3, inputs=[x], outputs=[loss])        # sum x
        sk.launch(add_squares, 3, inputs=[y], outputs=[loss])      # + sum clone(x)^2
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), 1.0 + 2.0 * X0, rtol=1e-12)


def test_a_copy_into_an_intermediate_takes_the_gradient_from_what_it_overwrote():
    x, s, y, loss = leaf(), leaf(np.array([1.0, 2.0, 3.0])), sk.zeros(3, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(cube, 3, inputs=[x], outputs=[y])   # y = x^3, then overwritten unread
        sk.copy(y, s)
        sk.launch(add_squares, 3, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(s.grad.numpy(), 2.0 * np.array([1.0, 2.0, 3.0]), rtol=1e-12)
    assert x.grad.numpy().tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(y.grad.numpy(), s.grad.numpy(), rtol=0)  # the copy's own gradient stays


def test_assign_from_an_array_gives_a_plain_destination_a_gradient():
    x, y, loss = leaf(), sk.zeros(3, dtype=F64), sk.zeros(1, dtype=F64)
    assert not y.requires_grad
    with sk.Tape() as tape:
        y.assign(x)
        sk.launch(add_squares, 3, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    assert y.requires_grad
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * X0, rtol=1e-12)


@pytest.mark.parametrize("write", ["zero_", "fill_", "assign"])
def test_a_host_write_over_a_recorded_output_stops_its_gradient(write):
    x, y, loss = leaf(), sk.zeros(3, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(cube, 3, inputs=[x], outputs=[y])
        {"zero_": lambda: y.zero_(), "fill_": lambda: y.fill_(2.0),
         "assign": lambda: y.assign(np.array([1.0, 1.0, 1.0]))}[write]()
        sk.launch(add_total, 3, inputs=[x], outputs=[loss])
        sk.launch(add_total, 3, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3), rtol=1e-12)  # only the direct sum x
    np.testing.assert_allclose(y.grad.numpy(), np.ones(3), rtol=0)      # y's: of the values written


def test_a_host_write_into_an_input_before_its_use_keeps_the_inputs_gradient():
    x, loss = leaf(), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        x.assign(np.array([1.0, 2.0, 3.0]))
        sk.launch(add_squares, 3, inputs=[x], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0], rtol=1e-12)


def test_a_clone_without_grad_is_detached():
    x, loss = leaf(), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        y = sk.clone(x, requires_grad=False)
        sk.launch(add_total, 3, inputs=[x], outputs=[loss])
        sk.launch(add_squares, 3, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3), rtol=1e-12)


def test_a_copy_made_while_the_tape_is_paused_is_not_recorded():
    x, loss = leaf(), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        with sk.autograd.paused_tapes():
            y = sk.clone(x)
        sk.launch(add_total, 3, inputs=[x], outputs=[loss])
        sk.launch(add_squares, 3, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3), rtol=1e-12)


def test_a_second_backward_through_a_clone_gives_the_same_gradient():
    x, loss = leaf(), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        y = sk.clone(x)
        z = sk.clone(y)
        sk.launch(add_squares, 3, inputs=[z], outputs=[loss])
    tape.backward(loss=loss)
    first = x.grad.numpy().copy()
    tape.zero()
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), first, rtol=0)
    np.testing.assert_allclose(first, 2.0 * X0, rtol=1e-12)


def test_a_clone_of_a_clone_matches_finite_differences():
    def run(x0, tape=None):
        x, loss = leaf(x0), sk.zeros(1, dtype=F64)
        with tape or sk.Tape():
            y = sk.zeros(3, dtype=F64)
            sk.launch(cube, 3, inputs=[x], outputs=[y])
            z = y.clone()
            sk.launch(add_squares, 3, inputs=[z], outputs=[loss])
        return x, loss
    tape = sk.Tape()
    x, loss = run(X0, tape)
    tape.backward(loss=loss)
    eps, fd = 1e-6, np.zeros(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        fd[k] = (run(X0 + e)[1].numpy()[0] - run(X0 - e)[1].numpy()[0]) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-7)


def test_a_launch_reading_an_array_later_copied_over_is_refused_naming_the_copy():
    x, s, y = leaf(), leaf(), sk.zeros(3, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(cube, 3, inputs=[x], outputs=[y])
        x.assign(s)
    with pytest.raises(RuntimeError, match=r"read argument 'x', which a copy into it \(clone/copy/assign"):
        tape.backward(grads={y: np.ones(3)})


def test_a_seed_on_a_clone_reaches_its_source():
    x = leaf()
    with sk.Tape() as tape:
        y = sk.clone(x)
    tape.backward(grads={y: np.array([1.0, 2.0, 3.0])})
    assert x.grad.numpy().tolist() == [1.0, 2.0, 3.0]


def test_the_hessian_vector_product_passes_through_a_clone(device):
    if device != "cpu":
        pytest.skip("Hessian-vector products run on the CPU only")
    x, loss, v = leaf(), sk.zeros(1, dtype=F64), np.array([1.0, 0.5, -2.0])

    def f(x):
        loss.zero_()
        y = sk.zeros(3, dtype=F64)
        sk.launch(cube, 3, inputs=[sk.clone(x)], outputs=[y])
        sk.launch(add_total, 3, inputs=[y], outputs=[loss])
        return loss
    _loss, (g,), (hv,) = sk.autograd.hvp(f, [x], [v])
    np.testing.assert_allclose(g.numpy(), 3.0 * X0 ** 2, rtol=1e-12)
    np.testing.assert_allclose(hv.numpy(), 6.0 * X0 * v, rtol=1e-12)


def test_an_input_state_made_and_set_inside_the_tape_keeps_its_gradient():
    # model.state() clones the model's arrays; a host assign then sets the rollout's start
    base = leaf(np.zeros(3))
    loss = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        x = sk.clone(base)
        x.assign(X0)
        sk.launch(add_squares, 3, inputs=[x], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * X0, rtol=1e-12)
    assert base.grad.numpy().tolist() == [0.0, 0.0, 0.0]
