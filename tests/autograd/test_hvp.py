"""Hessian-vector products (simkit.autograd.hvp): against central differences of reverse-mode
gradients (float64) on kernels with nonlinear builtins, loops, branches, calls and scatters;
against a Hessian known in closed form; and the refusals."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64
V3 = sk.vec3d
pytestmark = pytest.mark.cpu_only("Hessian-vector products run on the CPU only")


@sk.func
def bump(x: F64, v: V3) -> F64:
    return x * sk.length(v) + sk.tanh(sk.dot(v, v))


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
        acc = sk.cross(acc, v[(i + 1) % 4]) * F64(0.3) + sk.normalize(acc)
    if a > 0.5:
        s = s * sk.exp(-a)
    y[i] = s
    w[i] = acc * sk.sqrt(a)
    sk.atomic_add(total, 0, a * s)


@sk.kernel
def mixed_loss(y: sk.array(dtype=F64), w: sk.array(dtype=V3), total: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    i = sk.tid()
    term = y[i] * y[i] + sk.log(1.0 + sk.dot(w[i], w[i])) + sk.atan2(y[i], 2.0 + total[0])
    sk.atomic_add(loss, 0, term)


@sk.kernel
def geometry(x: sk.array(dtype=F64), v: sk.array(dtype=V3), loss: sk.array(dtype=F64)):
    # quaternions, matrices, transforms, casts, clamps, powers and float modulo in one place
    i = sk.tid()
    a = x[i]
    q = sk.quat_from_axis_angle(sk.normalize(v[i]), a)
    r = sk.quat_rotate(q, v[(i + 1) % 3])
    m = sk.outer(r, v[i]) + sk.diag(sk.vec3d(2.0, 3.0, 4.0))
    k = int(a * 3.0)
    s = sk.determinant(m) * sk.pow(sk.abs(a) + 1.0, 1.5) + sk.clamp(a, 0.2, 0.8) * F64(k)
    s = s + sk.atan2(r[1], r[0]) + sk.trace(sk.inverse(m)) + sk.max(a, 0.3) * sk.min(r[2], 0.5) + (a % 0.7)
    p = sk.transform_point(sk.transformd(r, q), v[i]) + sk.quat_rotate_inv(q, r)
    sk.atomic_add(loss, 0, s * s + sk.length_sq(p) + sk.sinh(a) * sk.cosh(a))


@sk.func
def cube(v: F64) -> F64:
    return v * v * v


@sk.func_grad(cube)
def cube_grad(v: F64, adj_ret: F64):
    sk.adjoint[v] += 3.0 * v * v * adj_ret


@sk.kernel
def cubes(x: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    sk.atomic_add(loss, 0, cube(x[sk.tid()]))


@sk.kernel
def quadratic(x: sk.array(dtype=F64), a: sk.array(dtype=F64, ndim=2), b: sk.array(dtype=F64),
              loss: sk.array(dtype=F64)):
    # loss = 1/2 x^T A x + b^T x, one thread per (i, j)
    i, j = sk.tid()
    term = 0.5 * x[i] * a[i, j] * x[j]
    if j == 0:
        term = term + b[i] * x[i]
    sk.atomic_add(loss, 0, term)


@sk.kernel
def newton_sqrt(x: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    # a while loop whose trip count depends on the data: loss = sum sqrt(x)^3
    i = sk.tid()
    a = x[i]
    r = a
    while sk.abs(r * r - a) > 1e-12:
        r = 0.5 * (r + a / r)
    sk.atomic_add(loss, 0, r * r * r)


@sk.kernel
def interpolation(x: sk.array(dtype=F64), v: sk.array(dtype=V3), loss: sk.array(dtype=F64)):
    # lerp of each kind, smoothstep, matrices from vectors, get_diag and transform_compose
    i = sk.tid()
    a = x[i]
    w = v[(i + 1) % 3]
    q = sk.lerp(sk.quatd(v[i][0], v[i][1], v[i][2], 1.0), sk.quatd(w[0], w[1], w[2], 2.0), a)
    q = q / sk.length(q)
    m = sk.matrix_from_rows(v[i], w, sk.lerp(v[i], w, a * a)) + sk.lerp(sk.matrix_from_cols(w, v[i], w), sk.identity(3, F64), a)
    c = sk.transform_compose(v[i], q, w * a + sk.vec3d(1.0, 1.0, 1.0))
    t = sk.lerp(sk.transformd(v[i], q), sk.transformd(w, q), a)
    s = sk.smoothstep(-0.5, 1.5, sk.lerp(a, w[0], a)) * sk.dot(sk.get_diag(m * m), w) + sk.trace(c * c)
    sk.atomic_add(loss, 0, s + sk.length_sq(t.p) + sk.dot(sk.get_diag(sk.matrix_from_cols(w, v[i], w * a)), w))


@sk.kernel
def float_min(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    sk.atomic_min(y, 0, x[sk.tid()])


@sk.kernel(enable_backward=False)
def no_adjoint(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def square_sum(x: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, x[i] * x[i])


def mixed_rollout(n: int):
    y, w, total, loss = sk.zeros(4, dtype=F64), sk.zeros(4, dtype=V3), sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)

    def run(x, v):
        total.zero_()
        loss.zero_()
        sk.launch(mixed, 4, inputs=[x, v, n], outputs=[y, w, total])
        sk.launch(mixed_loss, 4, inputs=[y, w, total], outputs=[loss])
        return loss
    return run


def gradients(run, *values):
    """Reverse-mode gradient of ``run`` at ``values`` (numpy arrays)."""
    arrays = [sk.array(values[0], dtype=F64, requires_grad=True), sk.array(values[1], dtype=V3, requires_grad=True)]
    with sk.Tape() as tape:
        loss = run(*arrays)
    tape.backward(loss=loss)
    return [a.grad.numpy().copy() for a in arrays]


@pytest.mark.parametrize("seed", range(3))
def test_hvp_of_a_kernel_with_loops_branches_and_calls_matches_differences_of_gradients(seed):
    rng = np.random.default_rng(seed)
    x0, v0 = rng.uniform(0.1, 1.0, 4), rng.uniform(-1, 1, (4, 3))
    dx, dv = rng.standard_normal(4), rng.standard_normal((4, 3))
    run = mixed_rollout(3)
    x, v = sk.array(x0, dtype=F64), sk.array(v0, dtype=V3)
    loss, grads, hvs = sk.autograd.hvp(run, [x, v], [dx, dv])

    want_loss = run(sk.array(x0, dtype=F64), sk.array(v0, dtype=V3)).numpy()[0]
    assert loss.numpy()[0] == pytest.approx(want_loss, rel=1e-14)
    for got, want in zip(grads, gradients(run, x0, v0)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)
    eps = 1e-6
    up = gradients(run, x0 + eps * dx, v0 + eps * dv)
    down = gradients(run, x0 - eps * dx, v0 - eps * dv)
    for got, u, d in zip(hvs, up, down):
        np.testing.assert_allclose(got.numpy(), (u - d) / (2 * eps), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kernel,seed", [(geometry, 2), (interpolation, 5)], ids=["quat_matrix_transform", "lerp_smoothstep_rows"])
def test_hvp_through_geometry_and_interpolation_builtins_matches_differences_of_gradients(kernel, seed):
    rng = np.random.default_rng(seed)
    x0, v0 = rng.uniform(0.1, 0.9, 3), rng.uniform(-1, 1, (3, 3))
    dx, dv = rng.standard_normal(3), rng.standard_normal((3, 3))
    loss = sk.zeros(1, dtype=F64)

    def run(x, v):
        loss.zero_()
        sk.launch(kernel, 3, inputs=[x, v], outputs=[loss])
        return loss
    _, _, hvs = sk.autograd.hvp(run, [sk.array(x0, dtype=F64), sk.array(v0, dtype=V3)], [dx, dv])
    eps = 1e-6
    up, down = gradients(run, x0 + eps * dx, v0 + eps * dv), gradients(run, x0 - eps * dx, v0 - eps * dv)
    for got, u, d in zip(hvs, up, down):
        fd = (u - d) / (2 * eps)
        np.testing.assert_allclose(got.numpy(), fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())


def test_hvp_of_a_quadratic_is_the_matrix_times_the_vector():
    rng = np.random.default_rng(7)
    m = rng.standard_normal((5, 5))
    a_np = m + m.T
    b_np, x_np, v_np = rng.standard_normal(5), rng.standard_normal(5), rng.standard_normal(5)
    a, b, loss = sk.array(a_np, dtype=F64), sk.array(b_np, dtype=F64), sk.zeros(1, dtype=F64)

    def run(x):
        loss.zero_()
        sk.launch(quadratic, (5, 5), inputs=[x, a, b], outputs=[loss])
        return loss
    value, (g,), (hv,) = sk.autograd.hvp(run, [sk.array(x_np, dtype=F64)], [v_np])
    assert value.numpy()[0] == pytest.approx(0.5 * x_np @ a_np @ x_np + b_np @ x_np, rel=1e-13)
    np.testing.assert_allclose(g.numpy(), a_np @ x_np + b_np, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(hv.numpy(), a_np @ v_np, rtol=1e-13, atol=1e-13)


def test_hvp_follows_a_data_dependent_while_loop():
    x_np = np.array([0.5, 2.0, 9.0])
    loss = sk.zeros(1, dtype=F64)

    def run(x):
        loss.zero_()
        sk.launch(newton_sqrt, 3, inputs=[x], outputs=[loss])
        return loss
    _, (g,), (hv,) = sk.autograd.hvp(run, [sk.array(x_np, dtype=F64)], [np.ones(3)])
    # loss = sum x^1.5: gradient 1.5 x^0.5, Hessian diagonal 0.75 x^-0.5
    np.testing.assert_allclose(g.numpy(), 1.5 * np.sqrt(x_np), rtol=1e-9)
    np.testing.assert_allclose(hv.numpy(), 0.75 / np.sqrt(x_np), rtol=1e-8)


def test_hvp_differentiates_a_custom_adjoint_as_written():
    x_np, v_np = np.array([0.5, -1.5]), np.array([1.0, 2.0])
    loss = sk.zeros(1, dtype=F64)

    def run(x):
        loss.zero_()
        sk.launch(cubes, 2, inputs=[x], outputs=[loss])
        return loss
    _, (g,), (hv,) = sk.autograd.hvp(run, [sk.array(x_np, dtype=F64)], [v_np])
    np.testing.assert_allclose(g.numpy(), 3 * x_np ** 2, rtol=1e-14)
    np.testing.assert_allclose(hv.numpy(), 6 * x_np * v_np, rtol=1e-14)


def test_hvp_source_spells_the_adjoint_over_dual_numbers():
    src = square_sum.hvp_source()
    assert "square_sum" in src and "_cpu_hvp" in src
    assert "sk::dual<double>" in src and "sk::adj_mul" in src


def test_hvp_checks_its_arguments():
    x, loss = sk.array([1.0, 2.0], dtype=F64), sk.zeros(1, dtype=F64)

    def run(x):
        loss.zero_()
        sk.launch(square_sum, 2, inputs=[x], outputs=[loss])
        return loss
    with pytest.raises(ValueError, match="2 input"):
        sk.autograd.hvp(lambda a, b: run(a), [x, x], [np.ones(2)])
    with pytest.raises(TypeError, match=r"inputs\[0\] must be an sk float array"):
        sk.autograd.hvp(run, [1.0], [1.0])
    with pytest.raises(ValueError, match=r"vectors\[0\].*does not match"):
        sk.autograd.hvp(run, [x], [np.ones(3)])
    with pytest.raises(TypeError, match=r"vectors\[0\].*only float arrays"):
        sk.autograd.hvp(run, [sk.array([1, 2], dtype=sk.int32)], [np.ones(2)])
    with pytest.raises(ValueError, match="one-element float sk array, got an array of shape"):
        sk.autograd.hvp(lambda a: a, [x], [np.ones(2)])


def test_a_kernel_without_adjoint_is_refused_naming_it():
    x, y, loss = sk.array([1.0, 2.0], dtype=F64), sk.zeros(2, dtype=F64), sk.zeros(1, dtype=F64)

    def run(x):
        loss.zero_()
        sk.launch(no_adjoint, 2, inputs=[x], outputs=[y])
        sk.launch(square_sum, 2, inputs=[y], outputs=[loss])
        return loss
    with pytest.raises(RuntimeError, match="'no_adjoint'.*enable_backward=False"):
        sk.autograd.hvp(run, [x], [np.ones(2)])


def test_an_operation_without_a_tangent_is_refused_naming_it():
    x, y = sk.array([1.0, 2.0], dtype=F64), sk.zeros(1, dtype=F64)

    def run(x):
        sk.launch(float_min, 2, inputs=[x], outputs=[y])
        return y
    with pytest.raises(sk.CompileError, match="atomic_min on a float array has no tangent"):
        sk.autograd.hvp(run, [x], [np.ones(2)])


def test_a_python_step_on_the_tape_is_refused():
    x, loss = sk.array([1.0, 2.0], dtype=F64), sk.zeros(1, dtype=F64)
    from simkit.core import launch as L

    def run(x):
        loss.zero_()
        sk.launch(square_sum, 2, inputs=[x], outputs=[loss])
        tape = next(h for h in L.hooks if isinstance(h, sk.Tape))
        tape.record_func(lambda: None, arrays=[x])
        return loss
    with pytest.raises(NotImplementedError, match="record_func"):
        sk.autograd.hvp(run, [x], [np.ones(2)])
