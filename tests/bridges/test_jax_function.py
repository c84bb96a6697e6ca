"""simkit.jax.function: simkit code as a differentiable JAX function (jax.custom_vjp, DLPack).
Gradients checked against central differences (jax.test_util.check_grads) in float64;
skipped where JAX is missing."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import simkit as sk  # noqa: E402
import simkit.jax as skj  # noqa: E402

jax.config.update("jax_enable_x64", True)


@sk.kernel
def cube_plus_scaled(x: sk.array(dtype=sk.float64), w: sk.array(dtype=sk.float64), c: sk.float64,
                     y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    y[i] = x[i] * x[i] * x[i] + c * sk.sin(w[i]) * x[i]


@sk.kernel
def gather_scaled(x: sk.array(dtype=sk.float64), index: sk.array(dtype=sk.int32), y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    y[i] = 2.0 * x[index[i]]


@skj.function
def cubic(x: sk.array(dtype=sk.float64), w: sk.array(dtype=sk.float64), c: float):
    y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
    sk.launch(cube_plus_scaled, len(x), inputs=[x, w, c], outputs=[y])
    return y


X = jnp.array([0.3, -1.2, 2.0])
W = jnp.array([0.5, 1.5, -0.7])


def test_values_and_gradients_match_the_closed_form():
    y = cubic(X, W, 1.7)
    gx, gw = jax.grad(lambda x, w: cubic(x, w, 1.7).sum(), argnums=(0, 1))(X, W)
    x, w = np.asarray(X), np.asarray(W)
    np.testing.assert_allclose(np.asarray(y), x ** 3 + 1.7 * np.sin(w) * x, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(gx), 3 * x ** 2 + 1.7 * np.sin(w), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(gw), 1.7 * np.cos(w) * x, rtol=1e-14)


def test_reverse_mode_gradients_match_central_differences():
    check_grads(lambda x, w: cubic(x, w, 1.7), (X, W), order=1, modes=["rev"], eps=1e-6)


def test_the_function_used_twice_in_one_graph_gives_the_chain_rule():
    check_grads(lambda x, w: cubic(cubic(x, w, 0.5), w, -1.3) + cubic(2.0 * x, w, 0.7), (X, W), order=1,
                modes=["rev"], eps=1e-6)


def test_a_frame_of_simulation_with_vector_dtypes_matches_central_differences():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.3, 0.6, 0.0), (0.1, 0.0, 0.2), mass=0.1)
    b.add_spring(0, 1, ke=50.0, kd=0.1)
    model = b.finalize(dtype=sk.float64)

    @skj.function(dtypes={"q": sk.vec3d, "qd": sk.vec3d})
    def frame(q, qd, activation):
        state = model.state(requires_grad=False)
        state.particle_q, state.particle_qd = q, qd
        control = model.control()
        control.spring_activation = activation
        for _ in range(5):
            nxt = model.state(requires_grad=False)
            sk.sim.SemiImplicitEuler().step(model, state, nxt, control, 2e-3)
            state = nxt
        return state.particle_q, state.particle_qd

    q0 = jnp.asarray(model.particle_q.numpy())
    qd0 = jnp.asarray(model.particle_qd.numpy())
    check_grads(frame, (q0, qd0, jnp.array([0.1])), order=1, modes=["rev"], eps=1e-6)


def test_an_integer_input_passes_and_gets_no_gradient():
    @skj.function
    def gather(x: sk.array(dtype=sk.float64), index: sk.array(dtype=sk.int32)):
        y = sk.zeros(len(index), dtype=sk.float64, device=x.device)
        sk.launch(gather_scaled, len(index), inputs=[x, index], outputs=[y])
        return y

    index = jnp.array([2, 0, 2], dtype=jnp.int32)
    g = jax.grad(lambda x: gather(x, index).sum())(X)
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0, 4.0])


def test_the_backward_function_called_twice_gives_the_same_gradient():
    y, backward = jax.vjp(lambda x: cubic(x, W, 1.0), X)
    (g1,) = backward(jnp.ones_like(y))
    (g2,) = backward(jnp.ones_like(y))
    np.testing.assert_array_equal(np.asarray(g1), np.asarray(g2))
    np.testing.assert_allclose(np.asarray(g1), 3 * np.asarray(X) ** 2 + np.sin(np.asarray(W)), rtol=1e-14)


def test_a_0d_array_argument_gets_a_0d_gradient():
    @skj.function
    def scaled(x: sk.array(dtype=sk.float64), c: sk.array(dtype=sk.float64)):
        y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
        sk.launch(gather_scaled, len(x), inputs=[c, sk.zeros(len(x), dtype=sk.int32)], outputs=[y])
        return y

    g = jax.grad(lambda c: scaled(X, c).sum())(jnp.array(1.5))
    assert g.shape == ()
    assert float(g) == 6.0


# -- bad input ----------------------------------------------------------------------------

def test_calling_it_under_jit_is_a_type_error_saying_it_runs_eagerly():
    with pytest.raises(TypeError, match=r"cubic: argument 'x' is a JAX tracer: simkit.jax.function runs eagerly"):
        jax.jit(lambda x: cubic(x, W, 1.0))(X)


def test_a_float32_array_for_a_float64_parameter_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError, match=r"cubic: argument 'x': cannot use a float32 array of shape \(3,\) as float64"):
        cubic(X.astype(jnp.float32), W, 1.0)


def test_returning_something_other_than_sk_arrays_is_a_type_error():
    @skj.function
    def f(x: sk.array(dtype=sk.float64)):
        return sk.clone(x), 3

    with pytest.raises(TypeError, match=r"f returned int \(output 1\); a simkit.jax.function returns sk arrays only"):
        f(X)


def test_input_arrays_share_memory_with_the_jax_arrays():
    seen = {}

    @skj.function
    def f(x: sk.array(dtype=sk.float64)):
        seen["ptr"] = x.ptr
        return sk.clone(x)

    f(X)
    assert seen["ptr"] == X.unsafe_buffer_pointer()
