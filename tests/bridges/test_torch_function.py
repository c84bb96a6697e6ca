"""simkit.torch.function: simkit code as a differentiable torch function. Gradients checked by
torch.autograd.gradcheck (central differences) in float64; skipped where torch is missing."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import simkit as sk  # noqa: E402
import simkit.torch as skt  # noqa: E402


@sk.kernel
def cube_plus_scaled(x: sk.array(dtype=sk.float64), w: sk.array(dtype=sk.float64), c: sk.float64,
                     y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    y[i] = x[i] * x[i] * x[i] + c * sk.sin(w[i]) * x[i]


@sk.kernel
def square(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def total(y: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    sk.atomic_add(out, 0, y[sk.tid()])


@sk.kernel
def norms(q: sk.array(dtype=sk.vec3d), k: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    out[i] = k[0] * sk.length(q[i])


@sk.kernel
def double_in_place(x: sk.array(dtype=sk.float64)):
    i = sk.tid()
    x[i] = 2.0 * x[i]


@skt.function
def cubic(x: sk.array(dtype=sk.float64), w: sk.array(dtype=sk.float64), c: float):
    y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
    sk.launch(cube_plus_scaled, len(x), inputs=[x, w, c], outputs=[y])
    return y


@skt.function
def sum_of_squares(x: sk.array(dtype=sk.float64)):
    """Two launches: the intermediate y is read by the second one."""
    y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
    out = sk.zeros(1, dtype=sk.float64, device=x.device)
    sk.launch(square, len(x), inputs=[x], outputs=[y])
    sk.launch(total, len(x), inputs=[y], outputs=[out])
    return out


def f64(*values, grad=True):
    return torch.tensor(values, dtype=torch.float64, requires_grad=grad)


def test_gradcheck_of_a_kernel_with_a_python_scalar_argument():
    x, w = f64(0.3, -1.2, 2.0), f64(0.5, 1.5, -0.7)
    assert torch.autograd.gradcheck(lambda x, w: cubic(x, w, 1.7), (x, w))


def test_values_and_gradients_match_the_closed_form():
    x, w = f64(0.3, -1.2, 2.0), f64(0.5, 1.5, -0.7)
    y = cubic(x, w, 1.7)
    y.sum().backward()
    xs, ws = x.detach().numpy(), w.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), xs ** 3 + 1.7 * np.sin(ws) * xs, rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), 3 * xs ** 2 + 1.7 * np.sin(ws), rtol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), 1.7 * np.cos(ws) * xs, rtol=1e-14)


def test_vector_dtypes_from_dtypes_and_a_0d_tensor_argument_pass_gradcheck():
    @skt.function(dtypes={"q": sk.vec3d})
    def scaled_norms(q, k):
        out = sk.zeros(len(q), dtype=sk.float64, device=q.device)
        sk.launch(norms, len(q), inputs=[q, k], outputs=[out])
        return out

    q = torch.tensor([[0.3, 0.4, 1.0], [-1.0, 2.0, 0.5]], dtype=torch.float64, requires_grad=True)
    k = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)    # 0-d
    assert torch.autograd.gradcheck(scaled_norms, (q, k))
    scaled_norms(q, k).sum().backward()
    assert k.grad.shape == ()


def test_the_function_used_twice_in_one_graph_gives_the_chain_rule():
    x = f64(0.5, -0.8, 1.1)
    w = f64(0.2, 0.4, 0.6)
    assert torch.autograd.gradcheck(lambda x, w: cubic(cubic(x, w, 0.5), w, -1.3) + cubic(2.0 * x, w, 0.7),
                                    (x, w))


def test_an_input_that_needs_no_grad_gets_none_and_no_simkit_grad():
    seen = {}

    @skt.function
    def f(x: sk.array(dtype=sk.float64), w: sk.array(dtype=sk.float64)):
        seen["x"], seen["w"] = x, w
        y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
        sk.launch(cube_plus_scaled, len(x), inputs=[x, w, 2.0], outputs=[y])
        return y

    x, w = f64(1.0, 2.0), f64(0.5, 0.25, grad=False)
    f(x, w).sum().backward()
    assert w.grad is None
    assert not seen["w"].requires_grad
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([1.0, 4.0]) + 2.0 * np.sin([0.5, 0.25]), rtol=1e-14)


def test_an_output_that_depends_on_no_grad_input_is_not_differentiable():
    x, w = f64(1.0, 2.0, grad=False), f64(0.5, 0.25, grad=False)
    y = cubic(x, w, 1.0)
    assert not y.requires_grad


def test_contiguous_tensors_share_memory_with_the_arrays():
    seen = {}

    @skt.function
    def f(x: sk.array(dtype=sk.float64)):
        seen["ptr"] = x.ptr
        y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
        sk.launch(square, len(x), inputs=[x], outputs=[y])
        seen["y"] = y
        return y

    x = f64(1.0, 2.0, 3.0)
    y = f(x)
    assert seen["ptr"] == x.data_ptr()
    assert y.data_ptr() == seen["y"].ptr


def test_a_non_contiguous_tensor_is_copied_and_its_gradient_reaches_the_original():
    seen = {}

    @skt.function(dtypes={"q": sk.vec3d})
    def f(q, k):
        seen["ptr"] = q.ptr
        out = sk.zeros(len(q), dtype=sk.float64, device=q.device)
        sk.launch(norms, len(q), inputs=[q, k], outputs=[out])
        return out

    base = torch.tensor([[0.3, -1.0], [0.4, 2.0], [1.0, 0.5]], dtype=torch.float64, requires_grad=True)
    q = base.t()                                   # (2, 3), strides (1, 2): not contiguous
    assert not q.is_contiguous()
    k = f64(2.0)
    assert torch.autograd.gradcheck(f, (q, k))
    f(q, k).sum().backward()
    assert seen["ptr"] != q.data_ptr()             # a copy
    qs = q.detach().numpy()
    np.testing.assert_allclose(base.grad.numpy(), (2.0 * qs / np.linalg.norm(qs, axis=1, keepdims=True)).T,
                               rtol=1e-14)


def test_repeated_backward_gives_the_same_gradient_and_keeps_the_first():
    x = f64(0.5, -1.5, 2.0)
    out = sum_of_squares(x)
    (g1,) = torch.autograd.grad(out, x, retain_graph=True)
    (g2,) = torch.autograd.grad(out, x, retain_graph=True)
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_array_equal(g1.numpy(), 2 * x.detach().numpy())
    np.testing.assert_array_equal(g2.numpy(), g1.numpy())      # the first is not overwritten, nothing doubles
    np.testing.assert_array_equal(x.grad.numpy(), 2 * g1.numpy())  # torch accumulates the leaf, as it should


def test_two_calls_with_one_backward_each_are_independent():
    x = f64(1.0, 3.0)
    for scale in (1.0, 2.0):
        x.grad = None
        sum_of_squares(scale * x).backward()
        np.testing.assert_array_equal(x.grad.numpy(), 2 * scale * scale * x.detach().numpy())


def test_keyword_and_variadic_arguments_are_tensors_too():
    @skt.function
    def f(*xs, scale):
        out = sk.zeros(1, dtype=sk.float64, device=xs[0].device)
        for x in xs:
            y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
            sk.launch(square, len(x), inputs=[x], outputs=[y])
            sk.launch(total, len(x), inputs=[y], outputs=[out])
        return out

    a, b = f64(1.0, 2.0), f64(3.0)
    f(a, b, scale=1.0).backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(b.grad.numpy(), [6.0])


# -- bad input ----------------------------------------------------------------------------

def test_a_float32_tensor_for_a_float64_parameter_is_a_type_error_naming_the_argument():
    x = torch.ones(3, dtype=torch.float32, requires_grad=True)
    with pytest.raises(TypeError, match=r"cubic: argument 'x': cannot use a torch.float32 tensor of shape \(3,\) "
                                        r"as float64"):
        cubic(x, f64(1.0, 2.0, 3.0), 1.0)


def test_a_tensor_on_an_unsupported_device_is_a_value_error_naming_the_argument():
    x = torch.empty(3, dtype=torch.float64, device="meta")
    with pytest.raises(ValueError, match=r"cubic: argument 'x' is a tensor on meta; simkit runs on 'cpu' and 'cuda'"):
        cubic(x, f64(1.0, 2.0, 3.0), 1.0)


def test_writing_into_an_input_is_refused():
    @skt.function
    def f(x: sk.array(dtype=sk.float64)):
        sk.launch(double_in_place, len(x), inputs=[x])
        return sk.clone(x)

    with pytest.raises(RuntimeError, match=r"f wrote into its input \(argument 'x'\); the inputs of a bridged "
                                           r"function are read-only"):
        f(f64(1.0, 2.0))


def test_returning_an_input_is_refused():
    @skt.function
    def f(x: sk.array(dtype=sk.float64)):
        return x

    with pytest.raises(ValueError, match=r"returned one of its inputs unchanged \(output 0\)"):
        f(f64(1.0, 2.0))


def test_an_output_buffer_reused_by_a_later_call_is_refused_at_backward():
    y = sk.zeros(2, dtype=sk.float64)

    @skt.function
    def f(x: sk.array(dtype=sk.float64)):
        sk.launch(square, len(x), inputs=[x], outputs=[y])
        return y

    x = f64(1.0, 2.0)
    first = f(x)
    f(2.0 * x)
    with pytest.raises(RuntimeError, match="output 0 was overwritten after the function returned it"):
        first.sum().backward()


def test_changing_an_input_in_place_before_backward_is_refused_by_torch():
    x = f64(1.0, 2.0)
    x2 = x * 1.0
    out = sum_of_squares(x2)
    with torch.no_grad():
        x2.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_dtypes_for_a_parameter_the_function_lacks_is_a_value_error():
    def g(x):
        return x

    with pytest.raises(ValueError, match=r"dtypes names 'q', which .*g has no parameter for \(parameters: x\)"):
        skt.function(g, dtypes={"q": sk.vec3d})
