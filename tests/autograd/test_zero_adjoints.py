"""The reverse sweep skips adjoints that are zero by construction (codegen.live_adjoints);
every value that does reach a stored result must still get its gradient. Each case here
mixes a value used only by a test with one used by the result, and compares the tape's
gradient with central differences of the same kernel (float64)."""

import numpy as np

import simkit as sk

EPS = 1e-6


def tape_and_fd(kernel, x: np.ndarray, n_out: int, extra=()):
    """(tape gradient, central differences) of sum(out) with respect to x."""
    def run(values, grad=False):
        xa = sk.array(values, dtype=sk.float64, requires_grad=grad)
        out = sk.zeros(n_out, dtype=sk.float64, requires_grad=grad)
        tape = sk.Tape()
        with tape:
            sk.launch(kernel, n_out, inputs=[xa, *extra], outputs=[out])
        return xa, out, tape
    xa, out, tape = run(x, True)
    tape.backward(grads={out: np.ones(n_out)})
    fd = np.zeros_like(x)
    for k in range(x.size):
        hi, lo = x.copy(), x.copy()
        hi[k] += EPS
        lo[k] -= EPS
        fd[k] = (run(hi)[1].numpy().sum() - run(lo)[1].numpy().sum()) / (2 * EPS)
    return xa.grad.numpy(), fd


@sk.kernel
def threshold_then_use(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    a = x[2 * i]
    b = x[2 * i + 1]
    if a * a < b:  # a*a feeds the test only; b feeds the test and the result
        out[i] = sk.sin(b) * a
    else:
        out[i] = b * b


def test_a_value_feeding_a_test_and_the_result_keeps_its_gradient():
    x = np.array([0.3, 0.9, 1.2, 0.4, -0.5, 0.7, 2.0, 1.0])
    grad, fd = tape_and_fd(threshold_then_use, x, 4)
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-9)


@sk.kernel
def loop_carried(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    acc = x[i]
    probe = x[i] * 0.0
    for k in range(sk.int32(x[i] * 0.0) + 3):
        probe = probe + acc  # probe only steers the loop's test below
        if probe > 10.0:
            acc = acc * 0.5
        acc = acc * acc + 0.1
    out[i] = acc


def test_loop_carried_values_keep_their_gradient():
    x = np.array([0.3, 0.9, 1.2, -0.5])
    grad, fd = tape_and_fd(loop_carried, x, 4)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)


@sk.kernel
def atomic_old_value(x: sk.array(dtype=sk.float64), acc: sk.array(dtype=sk.float64),
                     out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    old = sk.atomic_add(acc, 0, x[i])  # its result is unused: the add still carries x's gradient
    out[i] = x[i] * 2.0


def test_an_atomic_whose_result_is_unused_still_passes_the_gradient_of_what_it_added():
    acc = sk.zeros(1, dtype=sk.float64, requires_grad=True)
    x = sk.array([0.5, 1.5], dtype=sk.float64, requires_grad=True)
    out = sk.zeros(2, dtype=sk.float64, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(atomic_old_value, 2, inputs=[x, acc], outputs=[out])
    tape.backward(grads={acc: np.array([3.0]), out: np.ones(2)})
    np.testing.assert_allclose(x.grad.numpy(), [3.0 + 2.0, 3.0 + 2.0])


@sk.func
def doubled_and_count(x: sk.float64):
    return x * 2.0, int(3)


@sk.kernel
def sum_in_a_loop_of_a_function_with_an_int_result(x: sk.array(dtype=sk.float64), n: int,
                                                    out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    s = sk.float64(0.0)
    for j in range(n):
        y, m = doubled_and_count(x[i])  # the int result has no adjoint (none is cleared per iteration)
        s = s + y * sk.float64(m)
    out[i] = s


def test_a_function_returning_a_float_and_an_int_inside_a_loop_has_its_gradient():
    x = np.array([1.0, -2.0, 0.5])
    grad, fd = tape_and_fd(sum_in_a_loop_of_a_function_with_an_int_result, x, 3, extra=(4,))
    np.testing.assert_allclose(grad, 24.0)       # 4 iterations of 2 x * 3
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


@sk.func
def square_into(x: sk.array(dtype=sk.float64), i: int, out: sk.array(dtype=sk.float64)):
    out[i] = x[i] * x[i]


@sk.kernel
def calls_a_function_that_writes_its_result(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    square_into(x, i, out)


@sk.func
def chain_product_into(x: sk.array(dtype=sk.float64), parent: sk.array(dtype=sk.int32), i: int,
                       out: sk.array(dtype=sk.float64)):
    j = i
    v = sk.float64(1.0)
    while j >= 0:
        v = v * x[j] + x[j]
        j = parent[j]
    out[i] = v


@sk.kernel
def calls_a_function_that_walks_a_tree_and_writes(x: sk.array(dtype=sk.float64), parent: sk.array(dtype=sk.int32),
                                                   out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    chain_product_into(x, parent, i, out)


def test_a_function_that_writes_an_array_and_returns_nothing_passes_the_gradient_of_what_it_wrote():
    # a call with no result: its adjoint is all there is of the store inside it
    x = np.array([0.5, 1.5, -2.0])
    grad, fd = tape_and_fd(calls_a_function_that_writes_its_result, x, 3)
    np.testing.assert_allclose(grad, 2.0 * x)
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_a_function_that_walks_a_tree_in_a_while_loop_and_writes_passes_the_gradient():
    parent = sk.array(np.array([-1, 0, 1, 0], dtype=np.int32), dtype=sk.int32)
    x = np.array([0.5, 1.5, 2.0, 0.7])
    grad, fd = tape_and_fd(calls_a_function_that_walks_a_tree_and_writes, x, 4, extra=(parent,))
    np.testing.assert_allclose(grad, fd, rtol=1e-6)
    assert np.abs(grad).min() > 0.5


def test_forward_mode_through_a_function_that_writes_an_array():
    x = sk.array([0.5, 1.5, -2.0], dtype=sk.float64)
    out = sk.zeros(3, dtype=sk.float64)
    with sk.autograd.JVP({x: [1.0, 1.0, 1.0]}) as fwd:
        sk.launch(calls_a_function_that_writes_its_result, 3, inputs=[x], outputs=[out])
    np.testing.assert_allclose(fwd.tangent(out).numpy(), 2.0 * x.numpy())


def test_the_backward_pass_does_not_run_again_the_stores_of_a_function_returning_nothing():
    x = sk.array([0.5, 1.5, -2.0], dtype=sk.float64, requires_grad=True)
    out = sk.zeros(3, dtype=sk.float64, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(calls_a_function_that_writes_its_result, 3, inputs=[x], outputs=[out])
    out.assign(np.full(3, 7.0))                 # the caller's, after the forward
    tape.backward(grads={out: np.ones(3)})
    assert out.numpy().tolist() == [7.0, 7.0, 7.0]
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * x.numpy())
