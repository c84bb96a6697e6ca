"""Forward mode (simkit.autograd.forward): jvp and JVP against reverse-mode Jacobians, tangent
bookkeeping of writes outside kernels, and the refusals."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64
V3 = sk.vec3d


@sk.func
def bump(x: F64, v: V3) -> F64:
    return x * sk.length(v) + sk.dot(v, v)


@sk.kernel
def mixed(x: sk.array(dtype=F64), v: sk.array(dtype=V3), n: int, y: sk.array(dtype=F64), w: sk.array(dtype=V3),
          total: sk.array(dtype=F64)):
    # a dynamic loop carrying a scalar and a vector, a branch, a function call and a scatter
    i = sk.tid()
    a = x[i]
    s = F64(0.0)
    acc = v[i]
    for j in range(n):
        s = s + sk.sin(a * F64(j + 1)) + bump(a, acc)
        acc = sk.cross(acc, v[(i + 1) % 4]) * F64(0.3) + acc
    if a > 0.5:
        s = s * sk.exp(-a)
    y[i] = s
    w[i] = acc * a
    sk.atomic_add(total, 0, a * s)


@sk.kernel
def newton_sqrt(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    # a while loop whose trip count depends on the data
    i = sk.tid()
    a = x[i]
    r = a
    while sk.abs(r * r - a) > 1e-12:
        r = 0.5 * (r + a / r)
    y[i] = r


@sk.kernel
def float_min(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    sk.atomic_min(y, 0, x[sk.tid()])


@sk.kernel
def scale(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = 3.0 * x[i]


def random_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (sk.array(rng.uniform(0.1, 1.0, 4), dtype=F64), sk.array(rng.uniform(-1, 1, (4, 3)), dtype=V3),
            rng.standard_normal(4), rng.standard_normal((4, 3)))


def test_jvp_of_a_kernel_with_loops_branches_and_calls_matches_the_reverse_jacobian():
    x, v, dx, dv = random_inputs()
    y, w, total = sk.zeros(4, dtype=F64), sk.zeros(4, dtype=V3), sk.zeros(1, dtype=F64)
    J = sk.autograd.jacobian(mixed, 4, inputs=[x, v, 3], outputs=[y, w, total], mode="reverse")
    total.zero_()

    def run(x, v):
        sk.launch(mixed, 4, inputs=[x, v, 3], outputs=[y, w, total])
        return y, w, total
    _, tans = sk.autograd.jvp(run, [x, v], [dx, dv])
    for o, t in enumerate(tans):
        np.testing.assert_allclose(t.numpy().ravel(), J[(0, o)] @ dx + J[(1, o)] @ dv.ravel(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_forward_jacobian_equals_the_reverse_jacobian(seed):
    x, v, _dx, _dv = random_inputs(seed)
    outs = [sk.zeros(4, dtype=F64), sk.zeros(4, dtype=V3), sk.zeros(1, dtype=F64)]
    fwd = sk.autograd.jacobian(mixed, 4, inputs=[x, v, 2], outputs=outs, mode="forward")
    rev = sk.autograd.jacobian(mixed, 4, inputs=[x, v, 2], outputs=outs, mode="reverse")
    for key in rev:
        np.testing.assert_allclose(fwd[key], rev[key], rtol=1e-12, atol=1e-12)


def test_tangents_flow_through_a_data_dependent_while_loop():
    x = sk.array([0.5, 2.0, 9.0], dtype=F64)
    y = sk.zeros(3, dtype=F64)

    def run(x):
        sk.launch(newton_sqrt, 3, inputs=[x], outputs=[y])
        return y
    _, ty = sk.autograd.jvp(run, [x], [np.ones(3)])
    np.testing.assert_allclose(ty.numpy(), 0.5 / np.sqrt(x.numpy()), rtol=1e-9)


def test_auto_mode_picks_forward_for_few_inputs_and_agrees():
    x = sk.array([0.3], dtype=F64)
    y = sk.zeros(4, dtype=F64)
    J = sk.autograd.jacobian(scale, 1, inputs=[x], outputs=[y])
    assert sk.autograd.jacobian(scale, 1, inputs=[x], outputs=[y], mode="forward")[(0, 0)].tolist() == J[(0, 0)].tolist()
    assert J[(0, 0)][0, 0] == 3.0


def test_jacobian_rejects_an_unknown_mode():
    x, y = sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)
    with pytest.raises(ValueError, match="mode must be 'auto', 'forward' or 'reverse'"):
        sk.autograd.jacobian(scale, 1, inputs=[x], outputs=[y], mode="sideways")


def test_zero_and_host_assign_give_a_zero_tangent_and_array_assign_copies_it():
    x = sk.array([1.0, 2.0], dtype=F64)
    y, z, c = sk.zeros(2, dtype=F64), sk.zeros(2, dtype=F64), sk.zeros(2, dtype=F64)
    with sk.autograd.JVP({x: [1.0, 1.0]}) as fwd:
        sk.launch(scale, 2, inputs=[x], outputs=[y])
        c.assign(y)  # a copy of y: its tangent too
        sk.launch(scale, 2, inputs=[x], outputs=[z])
        z.zero_()    # constant data now
        d = y.clone()
    assert fwd.tangent(c).numpy().tolist() == [3.0, 3.0]
    assert fwd.tangent(d).numpy().tolist() == [3.0, 3.0]
    assert fwd.tangent(z).numpy().tolist() == [0.0, 0.0]
    y.assign(np.ones(2))
    assert fwd.tangent(y).numpy().tolist() == [3.0, 3.0]  # outside the block: no longer tracked


def test_a_float_atomic_min_is_refused_naming_it():
    x, y = sk.array([1.0, 2.0], dtype=F64), sk.zeros(1, dtype=F64)
    with pytest.raises(sk.CompileError, match="atomic_min on a float array has no tangent"):
        sk.autograd.jvp(lambda x: (sk.launch(float_min, 2, inputs=[x], outputs=[y]), y)[1], [x], [np.ones(2)])


def test_jvp_checks_its_arguments():
    x = sk.array([1.0, 2.0], dtype=F64)
    with pytest.raises(ValueError, match="2 input"):
        sk.autograd.jvp(lambda a, b: a, [x, x], [np.ones(2)])
    with pytest.raises(TypeError, match=r"inputs\[0\] must be an sk array"):
        sk.autograd.jvp(lambda a: a, [1.0], [1.0])
    with pytest.raises(ValueError, match=r"tangents\[0\].*does not match"):
        sk.autograd.jvp(lambda a: a, [x], [np.ones(3)])
    with pytest.raises(TypeError, match="must return an sk array"):
        sk.autograd.jvp(lambda a: 1.0, [x], [np.ones(2)])


def test_an_adjoint_launch_inside_a_jvp_is_refused():
    x, y = sk.array([1.0], dtype=F64), sk.zeros(1, dtype=F64)
    with sk.autograd.JVP() as _fwd, pytest.raises(RuntimeError, match="forward mode runs tangent launches only"):
        sk.launch(scale, 1, inputs=[x], outputs=[y], adjoint=True)


def test_tangent_source_mirrors_the_forward_statements():
    src = scale.tangent_source()
    assert "sk::tan_store(" in src and "sk::tan_load(" in src
    assert "tan_" in src and "scale_" in src and "_cpu_tangent" in src and "_cuda_tangent" in src


def test_a_jvp_runs_the_tangent_entry_where_the_arrays_are(device):
    x = sk.array([1.0, 2.0], dtype=F64)
    y = sk.zeros(2, dtype=F64)
    assert x.device == device
    _, ty = sk.autograd.jvp(lambda x: (sk.launch(scale, 2, inputs=[x], outputs=[y]), y)[1], [x], [[1.0, -1.0]])
    assert ty.device == device and ty.numpy().tolist() == [3.0, -3.0]
    if device != "cpu":
        assert scale._cuda_tangent_loaded  # the tangent module built for the GPU


@pytest.mark.parametrize("tape_inside", [True, False])
def test_a_tape_around_or_inside_a_jvp_records_its_launches(tape_inside):
    x = sk.array([1.0, 2.0], dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64, requires_grad=True)
    if tape_inside:
        with sk.autograd.JVP({x: [1.0, 0.0]}) as fwd, sk.Tape() as tape:
            sk.launch(scale, 2, inputs=[x], outputs=[y])
    else:
        with sk.Tape() as tape, sk.autograd.JVP({x: [1.0, 0.0]}) as fwd:
            sk.launch(scale, 2, inputs=[x], outputs=[y])
    assert fwd.tangent(y).numpy().tolist() == [3.0, 0.0]
    tape.backward(grads={y: np.ones(2)})
    assert x.grad.numpy().tolist() == [3.0, 3.0]


@sk.func
def clipped(v: F64) -> F64:
    return sk.min(v, 1.0)


@sk.func_grad(clipped)
def clipped_grad(v: F64, adj_ret: F64):
    sk.adjoint[v] += adj_ret  # a straight-through estimator: reverse mode ignores the clip


@sk.kernel
def clip_kernel(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = clipped(x[i])


def test_the_tangent_of_a_function_with_a_custom_adjoint_comes_from_its_body():
    x, y = sk.array([0.5, 2.0], dtype=F64), sk.zeros(2, dtype=F64)
    _, ty = sk.autograd.jvp(lambda x: (sk.launch(clip_kernel, 2, inputs=[x], outputs=[y]), y)[1], [x], [[1.0, 1.0]])
    assert ty.numpy().tolist() == [1.0, 0.0]


@sk.kernel
def first_above(x: sk.array(dtype=F64), limit: F64, n: int, y: sk.array(dtype=F64)):
    # break and an early return inside a dynamic loop
    i = sk.tid()
    acc = F64(0.0)
    for j in range(n):
        v = x[(i + j) % n]
        if v < 0.0:
            y[i] = -v
            return
        acc = acc + v * v
        if acc > limit:
            break
    y[i] = acc


def test_tangents_follow_break_and_early_return_in_a_dynamic_loop():
    x = sk.array([0.5, 0.8, -0.3, 0.9, 0.4], dtype=F64)
    outs = [sk.zeros(5, dtype=F64)]
    fwd = sk.autograd.jacobian(first_above, 5, inputs=[x, 1.0, 5], outputs=outs, mode="forward")
    rev = sk.autograd.jacobian(first_above, 5, inputs=[x, 1.0, 5], outputs=outs, mode="reverse")
    np.testing.assert_allclose(fwd[(0, 0)], rev[(0, 0)], rtol=1e-14, atol=0)
    assert np.count_nonzero(rev[(0, 0)]) > 5
