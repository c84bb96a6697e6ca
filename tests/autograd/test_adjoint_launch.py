"""Adjoints run by hand (sk.launch(..., adjoint=True, adj_inputs=..., adj_outputs=...)),
tape.gradients, and kernels declared without a backward on a tape."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def poly(x: sk.array(dtype=F64), a: F64, y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = a * x[i] * x[i] * x[i] + sk.sin(x[i])


@sk.kernel(enable_backward=False)
def poly_no_backward(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def total(y: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    sk.atomic_add(loss, 0, y[sk.tid()])


def _poly(x, a=0.5):
    return a * x ** 3 + np.sin(x)


def test_adjoint_launch_accumulates_into_the_given_buffers():
    xs = np.array([0.3, -1.1, 2.0])
    x, y = sk.array(xs, dtype=F64), sk.zeros(3, dtype=F64)
    sk.launch(poly, 3, inputs=[x, 0.5], outputs=[y])
    adj_x, adj_y = sk.zeros(3, dtype=F64), sk.array([1.0, 2.0, -1.0], dtype=F64)
    sk.launch(poly, 3, inputs=[x, 0.5], outputs=[y], adj_inputs=[adj_x, None], adj_outputs=[adj_y], adjoint=True)
    eps = 1e-6
    fd = (_poly(xs + eps) - _poly(xs - eps)) / (2 * eps)
    np.testing.assert_allclose(adj_x.numpy(), fd * np.array([1.0, 2.0, -1.0]), rtol=1e-7)
    assert x.grad is None and y.grad is None  # the arrays' own grads are untouched


def test_adjoint_launch_consumes_the_seed_of_a_stored_output():
    """y[i] = ... overwrites y: its adjoint takes the seed and leaves zero, as on the tape."""
    x, y = sk.array([1.0], dtype=F64), sk.zeros(1, dtype=F64)
    adj_y = sk.ones(1, dtype=F64)
    sk.launch(poly, 1, inputs=[x, 0.5], outputs=[y], adj_inputs=[sk.zeros(1, dtype=F64), None],
              adj_outputs=[adj_y], adjoint=True)
    assert adj_y.numpy()[0] == 0.0


def test_adjoint_launch_with_adj_outputs_omitted_uses_the_outputs_grads():
    """No adj_outputs list: the outputs take part as in a plain adjoint launch (here y has no
    grad, so no seed reaches x)."""
    x, y = sk.array([1.0], dtype=F64), sk.zeros(1, dtype=F64)
    adj_x = sk.zeros(1, dtype=F64)
    sk.launch(poly, 1, inputs=[x, 0.5], outputs=[y], adj_inputs=[adj_x, None], adjoint=True)
    assert adj_x.numpy()[0] == 0.0


def test_adjoint_buffers_without_adjoint_flag_are_refused():
    x, y = sk.array([1.0], dtype=F64), sk.zeros(1, dtype=F64)
    with pytest.raises(ValueError, match="adjoint=True"):
        sk.launch(poly, 1, inputs=[x, 0.5], outputs=[y], adj_inputs=[sk.zeros(1, dtype=F64), None])


def test_adjoint_buffer_of_wrong_shape_names_the_argument():
    x, y = sk.array([1.0, 2.0], dtype=F64), sk.zeros(2, dtype=F64)
    with pytest.raises(ValueError, match="argument 'x'"):
        sk.launch(poly, 2, inputs=[x, 0.5], outputs=[y], adj_inputs=[sk.zeros(3, dtype=F64), None],
                  adj_outputs=[sk.ones(2, dtype=F64)], adjoint=True)


def test_adjoint_list_of_wrong_length_is_refused():
    x, y = sk.array([1.0], dtype=F64), sk.zeros(1, dtype=F64)
    with pytest.raises(ValueError, match="adj_inputs has 1 entries"):
        sk.launch(poly, 1, inputs=[x, 0.5], outputs=[y], adj_inputs=[None], adjoint=True)


def test_tape_gradients_maps_arrays_to_their_grads():
    x = sk.array([0.5, 1.5], dtype=F64, requires_grad=True)
    y, loss = sk.zeros(2, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(poly, 2, inputs=[x, 0.5], outputs=[y])
        sk.launch(total, 2, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    assert tape.gradients[x] is x.grad
    eps = 1e-6
    fd = (_poly(x.numpy() + eps) - _poly(x.numpy() - eps)) / (2 * eps)
    np.testing.assert_allclose(tape.gradients[x].numpy(), fd, rtol=1e-7)
    assert x in tape.gradients and len(tape.gradients) == 3
    with pytest.raises(KeyError, match="no launch recorded"):
        tape.gradients[sk.zeros(1)]


def test_tape_refuses_a_gradient_that_would_stop_at_a_kernel_without_backward():
    x = sk.array([0.5], dtype=F64, requires_grad=True)
    y, loss = sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(poly_no_backward, 1, inputs=[x], outputs=[y])
        sk.launch(total, 1, inputs=[y], outputs=[loss])
    with pytest.raises(RuntimeError, match="poly_no_backward.*enable_backward=False.*'y'"):
        tape.backward(loss=loss)


def test_tape_skips_a_kernel_without_backward_that_no_gradient_reaches():
    x = sk.array([0.5], dtype=F64, requires_grad=True)
    side, y, loss = sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(poly_no_backward, 1, inputs=[x], outputs=[side])  # a by-product the loss does not use
        sk.launch(poly, 1, inputs=[x, 0.5], outputs=[y])
        sk.launch(total, 1, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * 0.25 + np.cos(0.5), rtol=1e-12)
