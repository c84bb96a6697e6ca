"""Reverse mode on the GPU: the Tape, jacobian and the autodiff rules give what they give on the CPU."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.array(dtype=sk.float64)


@sk.kernel
def link(x: F64, y: F64):
    i = sk.tid()
    y[i] = sk.sin(x[i]) * 0.9 + 0.1 * x[i]


@sk.kernel
def energy(x: F64, k: float, e: F64):
    i = sk.tid()
    sk.atomic_add(e, 0, 0.5 * sk.float64(k) * x[i] * x[i])


@sk.struct
class Params:
    stiffness: sk.array(dtype=sk.float64)
    offset: sk.float64


@sk.kernel
def spring(p: Params, x: F64, f: F64):
    i = sk.tid()
    f[i] = -p.stiffness[i] * (x[i] - p.offset) * (x[i] - p.offset)


@sk.kernel
def loop_power(x: F64, n: int, y: F64):
    i = sk.tid()
    acc = sk.float64(1.0)
    for _k in range(n):
        acc = acc * x[i]
    y[i] = acc


@sk.kernel
def scale_in_place(x: F64):
    i = sk.tid()
    x[i] = x[i] * 2.0


X0 = np.linspace(-1.0, 1.0, 64)


def _rollout(dev):
    bufs = [sk.array(X0, dtype=sk.float64, device=dev, requires_grad=True)]
    bufs += [sk.zeros(64, dtype=sk.float64, device=dev) for _ in range(10)]
    e = sk.zeros(1, dtype=sk.float64, device=dev)
    with sk.Tape() as tape:
        for k in range(10):
            sk.launch(link, 64, inputs=[bufs[k]], outputs=[bufs[k + 1]])
        sk.launch(energy, 64, inputs=[bufs[-1], 3.0], outputs=[e])
    tape.backward(loss=e)
    return tape, bufs, e


def test_tape_rollout_gradients_agree_with_the_cpu(gpu):
    _t, cpu_bufs, cpu_e = _rollout("cpu")
    _t, gpu_bufs, gpu_e = _rollout(gpu)
    assert gpu_bufs[-1].requires_grad and gpu_bufs[-1].grad.device == gpu  # grad propagation
    np.testing.assert_allclose(gpu_e.numpy(), cpu_e.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gpu_bufs[0].grad.numpy(), cpu_bufs[0].grad.numpy(), rtol=1e-12)


def test_backward_twice_with_zero_between_gives_the_same_result(gpu):
    tape, bufs, e = _rollout(gpu)
    first = bufs[0].grad.numpy().copy()
    tape.zero()
    assert not bufs[0].grad.numpy().any() and not e.grad.numpy().any()
    tape.backward(loss=e)
    np.testing.assert_array_equal(bufs[0].grad.numpy(), first)


def test_struct_fields_get_their_gradient(gpu):
    def run(dev):
        p = Params(stiffness=sk.array([1.0, 2.0, 3.0], dtype=sk.float64, device=dev, requires_grad=True), offset=0.5)
        x = sk.array([0.0, 1.0, 2.0], dtype=sk.float64, device=dev, requires_grad=True)
        f = sk.zeros(3, dtype=sk.float64, device=dev)
        with sk.Tape() as tape:
            sk.launch(spring, 3, inputs=[p, x], outputs=[f])
        tape.backward(grads={f: np.ones(3)})
        return p.stiffness.grad.numpy(), x.grad.numpy()
    for c, g in zip(run("cpu"), run(gpu)):
        np.testing.assert_allclose(g, c, rtol=1e-12)


def test_dynamic_loop_adjoint_matches_finite_differences(gpu):
    x = sk.array([0.5, -1.5, 2.0], dtype=sk.float64, device=gpu, requires_grad=True)
    y = sk.zeros(3, dtype=sk.float64, device=gpu)
    with sk.Tape() as tape:
        sk.launch(loop_power, 3, inputs=[x, 5, y])
    tape.backward(grads={y: np.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), 5 * np.array([0.5, -1.5, 2.0]) ** 4, rtol=1e-12)


def test_primal_data_is_untouched_by_backward(gpu):
    x = sk.array(X0, dtype=sk.float64, device=gpu, requires_grad=True)
    w = sk.array(X0[::-1], dtype=sk.float64, device=gpu)
    y = sk.zeros(64, dtype=sk.float64, device=gpu)
    before = (x.numpy().copy(), w.numpy().copy())
    with sk.Tape() as tape:
        sk.launch(link, 64, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(64)})
    assert x.numpy().tobytes() == before[0].tobytes() and w.numpy().tobytes() == before[1].tobytes()


def test_overwrite_detection_on_the_gpu(gpu):
    x = sk.array([1.0, 2.0], dtype=sk.float64, device=gpu, requires_grad=True)
    y = sk.zeros(2, dtype=sk.float64, device=gpu)
    with sk.Tape() as tape:
        sk.launch(link, 2, inputs=[x], outputs=[y])
        sk.launch(scale_in_place, 2, inputs=[x])
    with pytest.raises(RuntimeError, match="overwrote"):
        tape.backward(grads={y: np.ones(2)})


def test_jacobian_and_gradcheck_agree_with_the_cpu(gpu):
    def run(dev):
        x = sk.array([0.1, 0.4, -0.3], dtype=sk.float64, device=dev)
        y = sk.zeros(3, dtype=sk.float64, device=dev)
        jac = sk.autograd.jacobian(link, 3, inputs=[x], outputs=[y])[(0, 0)]
        fd = sk.autograd.jacobian_fd(link, 3, inputs=[x], outputs=[y], eps=1e-6)[(0, 0)]
        assert x.numpy().tolist() == [0.1, 0.4, -0.3]  # inputs untouched
        return jac, fd, y.numpy()
    cpu, dev = run("cpu"), run(gpu)
    for c, g in zip(cpu, dev):
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dev[0], np.diag(0.9 * np.cos([0.1, 0.4, -0.3]) + 0.1), rtol=1e-12)
    x = sk.array([0.1, 0.4], dtype=sk.float64, device=gpu)
    assert sk.autograd.gradcheck(link, 2, inputs=[x], outputs=[sk.zeros(2, dtype=sk.float64, device=gpu)]).ok
