"""atomic_min / atomic_max are differentiable: the gradient of the extremum goes to the
contender that won (per component), or stays with the element's earlier value when that won."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def maximum(x: sk.array(dtype=F64), m: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_max(m, 0, x[i] * x[i])


@sk.kernel
def minimum_vec(x: sk.array(dtype=sk.vec3d), m: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    sk.atomic_min(m, 0, x[i])


@sk.kernel
def sin_of(m: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    sk.atomic_add(loss, 0, sk.sin(m[0]))


@sk.kernel
def square(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


def max_loss(x0: np.ndarray, start: float = -1e30):
    x = sk.array(x0, dtype=F64, requires_grad=True)
    m, loss = sk.full(1, start, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(maximum, len(x0), inputs=[x], outputs=[m])
        sk.launch(sin_of, 1, inputs=[m], outputs=[loss])
    tape.backward(loss=loss)
    return x.grad.numpy(), loss.numpy()[0]


def test_the_gradient_of_a_maximum_goes_to_the_winner_and_matches_finite_differences():
    x0 = np.random.default_rng(1).uniform(-2.0, 2.0, 1000)
    grad, _ = max_loss(x0)
    k = np.argmax(x0 * x0)
    expected = np.zeros_like(x0)
    expected[k] = np.cos(x0[k] ** 2) * 2 * x0[k]
    np.testing.assert_allclose(grad, expected, rtol=1e-12)
    eps = 1e-6
    for j in (k, (k + 1) % len(x0)):
        xp, xm = x0.copy(), x0.copy()
        xp[j] += eps
        xm[j] -= eps
        fd = (np.sin(np.max(xp * xp)) - np.sin(np.max(xm * xm))) / (2 * eps)
        assert grad[j] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_on_a_tie_exactly_one_contender_receives_the_gradient():
    x0 = np.full(512, 0.5)
    grad, _ = max_loss(x0)
    assert np.count_nonzero(grad) == 1
    assert grad.sum() == pytest.approx(np.cos(0.25) * 2 * 0.5, rel=1e-15)


def test_when_the_earlier_value_wins_it_keeps_the_gradient():
    p = sk.array([3.0], dtype=F64, requires_grad=True)
    x = sk.array([0.1, -0.2], dtype=F64, requires_grad=True)
    m, loss = sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 1, inputs=[p], outputs=[m])          # m = 9
        sk.launch(maximum, 2, inputs=[x], outputs=[m])         # nothing beats 9
        sk.launch(sin_of, 1, inputs=[m], outputs=[loss])
    tape.backward(loss=loss)
    assert x.grad.numpy().tolist() == [0.0, 0.0]
    assert p.grad.numpy()[0] == pytest.approx(np.cos(9.0) * 6.0, rel=1e-15)


def test_a_vector_minimum_sends_each_components_gradient_to_its_own_winner():
    x0 = np.array([[1.0, 5.0, -1.0], [2.0, -3.0, 4.0], [0.5, 0.0, 7.0]])
    x = sk.array(x0, dtype=sk.vec3d, requires_grad=True)
    m = sk.full(1, sk.vec3d(1e30, 1e30, 1e30), dtype=sk.vec3d)
    with sk.Tape() as tape:
        sk.launch(minimum_vec, 3, inputs=[x], outputs=[m])
    tape.backward(grads={m: np.array([[1.0, 2.0, 3.0]])})
    assert m.numpy().tolist() == [[0.5, -3.0, -1.0]]
    assert x.grad.numpy().tolist() == [[0.0, 0.0, 3.0], [0.0, 2.0, 0.0], [1.0, 0.0, 0.0]]


def test_changing_the_extremum_after_the_launch_refuses_backward_and_names_it():
    x = sk.array([0.1, 0.7], dtype=F64, requires_grad=True)
    m, loss = sk.full(1, -1e30, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(maximum, 2, inputs=[x], outputs=[m])
        sk.launch(sin_of, 1, inputs=[m], outputs=[loss])
        sk.launch(square, 1, inputs=[x], outputs=[m])
    with pytest.raises(RuntimeError, match=r"kernel 'maximum' \(launch #0\) left argument 'm' \(atomic_min/max "
                                           r"target\), which launch #2 of kernel 'square' overwrote"):
        tape.backward(loss=loss)
