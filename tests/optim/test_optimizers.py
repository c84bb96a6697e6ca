"""SGD, Adam and gradient clipping against numpy, state_dict round trips, and bad input."""

import numpy as np
import pytest

import simkit as sk

# (dtype, shape of the array): scalars of both precisions, a 2-d array, vectors, matrices.
DTYPES = {
    "float32": (sk.float32, (7,)),
    "float64": (sk.float64, (7,)),
    "float32-2d": (sk.float32, (3, 4)),
    "vec3": (sk.vec3, (5,)),
    "vec3d": (sk.vec3d, (5,)),
    "mat22d": (sk.mat22d, (4,)),
    "mat33": (sk.mat33, (3,)),
}
STEPS = 4


def tolerance(dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if dtype._sk_scalar is sk.float32 else {"rtol": 1e-12, "atol": 1e-14}


def make_param(dtype, shape, rng):
    host = shape + tuple(dtype._sk_shape)
    return sk.array(rng.normal(size=host), dtype=dtype, requires_grad=True)


def grad_sequence(param, rng):
    """One gradient per step, in the parameter's numpy shape and precision."""
    np_dtype = param.dtype._sk_scalar.np_dtype
    return [rng.normal(size=param.numpy().shape).astype(np_dtype) for _ in range(STEPS)]


def run_steps(opt, param, grads):
    for g in grads:
        param.grad.assign(g)
        opt.step()


@pytest.fixture(params=list(DTYPES))
def case(request):
    dtype, shape = DTYPES[request.param]
    rng = np.random.default_rng(3)
    param = make_param(dtype, shape, rng)
    return dtype, param, grad_sequence(param, rng)


def test_sgd_matches_numpy(case):
    dtype, param, grads = case
    expected = param.numpy().astype(np.float64)
    for g in grads:
        expected = expected - 0.1 * g
    run_steps(sk.optim.SGD([param], lr=0.1), param, grads)
    np.testing.assert_allclose(param.numpy(), expected, **tolerance(dtype))


def test_sgd_with_momentum_matches_numpy(case):
    dtype, param, grads = case
    expected = param.numpy().astype(np.float64)
    buf = np.zeros_like(expected)
    for g in grads:
        buf = 0.9 * buf + g
        expected = expected - 0.05 * buf
    run_steps(sk.optim.SGD([param], lr=0.05, momentum=0.9), param, grads)
    np.testing.assert_allclose(param.numpy(), expected, **tolerance(dtype))


def adam_reference(p, grads, lr, b1, b2, eps):
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p, m, v


def test_adam_matches_numpy(case):
    dtype, param, grads = case
    expected, m, v = adam_reference(param.numpy().astype(np.float64), grads, 0.01, 0.8, 0.99, 1e-6)
    opt = sk.optim.Adam([param], lr=0.01, betas=(0.8, 0.99), eps=1e-6)
    run_steps(opt, param, grads)
    np.testing.assert_allclose(param.numpy(), expected, **tolerance(dtype))
    state = opt.state_dict()
    np.testing.assert_allclose(state["buffers"]["exp_avg"][0], m, **tolerance(dtype))
    np.testing.assert_allclose(state["buffers"]["exp_avg_sq"][0], v, **tolerance(dtype))
    assert state["step"] == STEPS


def test_adam_updates_several_params_of_different_dtypes_in_one_step():
    rng = np.random.default_rng(4)
    params = [make_param(sk.float32, (6,), rng), make_param(sk.vec3d, (2,), rng), make_param(sk.mat22, (3,), rng)]
    expected = []
    for p in params:
        g = rng.normal(size=p.numpy().shape)
        p.grad.assign(g)
        expected.append(adam_reference(p.numpy().astype(np.float64), [g], 0.1, 0.9, 0.999, 1e-8)[0])
    sk.optim.Adam(params, lr=0.1).step()
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.numpy(), e, **tolerance(p.dtype))


def test_zero_grad_zeroes_every_grad():
    rng = np.random.default_rng(5)
    params = [make_param(sk.float64, (4,), rng), make_param(sk.vec3, (3,), rng)]
    for p in params:
        p.grad.assign(rng.normal(size=p.numpy().shape))
    sk.optim.SGD(params, lr=1.0).zero_grad()
    for p in params:
        assert not p.grad.numpy().any()


@pytest.mark.parametrize("make", [lambda ps: sk.optim.Adam(ps, lr=0.02, betas=(0.7, 0.95)),
                                  lambda ps: sk.optim.SGD(ps, lr=0.02, momentum=0.8)], ids=["adam", "sgd-momentum"])
def test_state_dict_round_trip_resumes_identically(make):
    rng = np.random.default_rng(6)
    a = [make_param(sk.vec3d, (4,), rng), make_param(sk.float64, (3,), rng)]
    b = [sk.array(p.numpy(), dtype=p.dtype, requires_grad=True) for p in a]
    grads = [[rng.normal(size=p.numpy().shape) for p in a] for _ in range(6)]

    def steps(opt, params, gs):
        for g in gs:
            for p, x in zip(params, g):
                p.grad.assign(x)
            opt.step()

    first = make(a)
    steps(first, a, grads)                  # six steps in one go
    second = make(b)
    steps(second, b, grads[:3])             # three steps, save, restore into a new optimizer, three more
    saved = second.state_dict()
    resumed = make(b)
    resumed.load_state_dict(saved)
    assert resumed.step_count == 3
    steps(resumed, b, grads[3:])
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_load_state_dict_restores_hyperparameters():
    p = sk.zeros(3, dtype=sk.float64, requires_grad=True)
    saved = sk.optim.Adam([p], lr=0.5, betas=(0.5, 0.6), eps=1e-3).state_dict()
    opt = sk.optim.Adam([p], lr=0.1)
    opt.load_state_dict(saved)
    assert (opt.lr, opt.betas, opt.eps) == (0.5, (0.5, 0.6), 1e-3)


def test_clip_grad_norm_scales_to_max_norm_and_returns_the_norm_before():
    rng = np.random.default_rng(8)
    params = [make_param(sk.float32, (1000,), rng), make_param(sk.vec3d, (7,), rng), make_param(sk.mat33, (2,), rng)]
    grads = [rng.normal(size=p.numpy().shape) for p in params]
    for p, g in zip(params, grads):
        p.grad.assign(g)
    stored = [p.grad.numpy().astype(np.float64) for p in params]
    norm = np.sqrt(sum((g ** 2).sum() for g in stored))
    assert sk.optim.clip_grad_norm(params, max_norm=2.0) == pytest.approx(norm, rel=1e-12)
    for p, g in zip(params, stored):
        np.testing.assert_allclose(p.grad.numpy(), g * (2.0 / norm), **tolerance(p.dtype))
    assert sk.optim.grad_norm(params) == pytest.approx(2.0, rel=1e-6)


def test_clip_grad_norm_leaves_grads_below_max_norm_unchanged():
    p = sk.array([3.0, 4.0], dtype=sk.float64, requires_grad=True)
    p.grad.assign([3.0, 4.0])
    assert sk.optim.clip_grad_norm(p, max_norm=10.0) == pytest.approx(5.0)
    np.testing.assert_array_equal(p.grad.numpy(), [3.0, 4.0])


def test_max_grad_norm_option_clips_before_the_update():
    p = sk.array([1.0, 1.0], dtype=sk.float64, requires_grad=True)
    p.grad.assign([30.0, 40.0])
    opt = sk.optim.SGD([p], lr=0.1, max_grad_norm=5.0)
    assert opt.step() == pytest.approx(50.0)
    np.testing.assert_allclose(p.numpy(), [1.0 - 0.1 * 3.0, 1.0 - 0.1 * 4.0], rtol=1e-14)


@sk.kernel
def sum_of_squares(x: sk.array(dtype=sk.float64), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, x[i] * x[i])


def test_a_tape_that_read_a_param_refuses_backward_after_a_step():
    x = sk.array([1.0, 2.0], dtype=sk.float64, requires_grad=True)
    loss = sk.zeros(1, dtype=sk.float64)
    with sk.Tape() as tape:
        sk.launch(sum_of_squares, 2, inputs=[x, loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    sk.optim.SGD([x], lr=0.1).step()
    with pytest.raises(RuntimeError, match="overwrote"):
        tape.backward(loss=loss)


# -- bad input ----------------------------------------------------------------------------

def test_a_param_that_is_not_an_sk_array_is_a_type_error_naming_it():
    good = sk.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match=r"params\[1\] must be an sk array, got ndarray"):
        sk.optim.Adam([good, np.zeros(2)], lr=0.1)


def test_an_integer_param_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match=r"SGD: params\[0\] must hold floats.*int32"):
        sk.optim.SGD([sk.zeros(3, dtype=sk.int32)], lr=0.1)


def test_step_with_a_param_without_grad_names_it():
    opt = sk.optim.Adam([sk.zeros(2, requires_grad=True), sk.zeros(3, dtype=sk.vec3)], lr=0.1)
    with pytest.raises(ValueError, match=r"Adam.step: params\[1\] \(array of vec3 with shape \(3,\)\) has no grad"):
        opt.step()


@pytest.mark.parametrize("lr", [0.0, -1e-3, float("nan"), float("inf")])
def test_a_learning_rate_that_is_not_positive_and_finite_is_a_value_error(lr):
    with pytest.raises(ValueError, match="lr must be a finite number > 0"):
        sk.optim.SGD([sk.zeros(2, requires_grad=True)], lr=lr)


def test_a_learning_rate_that_is_not_a_number_is_a_type_error():
    with pytest.raises(TypeError, match="lr must be a number, got str"):
        sk.optim.Adam([sk.zeros(2, requires_grad=True)], lr="0.1")


@pytest.mark.parametrize("betas, match", [((0.9,), "betas must be a pair"), ((1.0, 0.9), r"betas\[0\] must be in"),
                                          ((0.9, -0.1), r"betas\[1\] must be in"), (0.9, "betas must be a pair")])
def test_bad_betas_are_a_value_error_naming_them(betas, match):
    with pytest.raises(ValueError, match=match):
        sk.optim.Adam([sk.zeros(2, requires_grad=True)], lr=0.1, betas=betas)


@pytest.mark.parametrize("momentum", [-0.1, 1.0])
def test_momentum_outside_zero_one_is_a_value_error(momentum):
    with pytest.raises(ValueError, match="momentum must be in"):
        sk.optim.SGD([sk.zeros(2, requires_grad=True)], lr=0.1, momentum=momentum)


def test_the_same_param_twice_is_a_value_error():
    p = sk.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"params\[1\].*appears more than once"):
        sk.optim.SGD([p, p], lr=0.1)


def test_clip_grad_norm_with_a_non_positive_max_norm_is_a_value_error():
    with pytest.raises(ValueError, match="max_norm must be a finite number > 0"):
        sk.optim.clip_grad_norm([sk.zeros(2, requires_grad=True)], 0.0)


def test_load_state_dict_for_params_of_another_shape_names_the_buffer():
    saved = sk.optim.Adam([sk.zeros(3, requires_grad=True)], lr=0.1).state_dict()
    opt = sk.optim.Adam([sk.zeros(4, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match=r"buffers\['exp_avg'\]\[0\] has shape \(3,\), but params\[0\]"):
        opt.load_state_dict(saved)
    assert opt.step_count == 0


def test_load_state_dict_of_another_optimizer_is_a_value_error():
    saved = sk.optim.SGD([sk.zeros(3, requires_grad=True)], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="of optimizer 'SGD', not 'Adam'"):
        sk.optim.Adam([sk.zeros(3, requires_grad=True)], lr=0.1).load_state_dict(saved)
