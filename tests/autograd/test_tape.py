"""The Tape and the autodiff contract: each rule has a regression test, gradients against finite differences."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


def fd_grad(f, x: np.ndarray, eps=1e-6) -> np.ndarray:
    """Central differences of scalar f at x (float64)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (f(xp) - f(xm)) / (2 * eps)
    return g


@sk.kernel
def square(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def sum_sin(y: sk.array(dtype=F64), loss: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.sin(y[i]))


def test_backward_from_a_loss_through_two_launches():
    x0 = np.array([0.3, -0.7, 1.1])
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y, loss = sk.zeros(3, dtype=F64), sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 3, inputs=[x], outputs=[y])
        sk.launch(sum_sin, 3, inputs=[y], outputs=[loss])
    tape.backward(loss=loss)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x0 ** 2) * 2 * x0, rtol=1e-12)


def test_outputs_created_without_requires_grad_get_a_grad_when_inputs_need_one():
    x = sk.array([1.0, 2.0], dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64)
    assert not y.requires_grad
    with sk.Tape() as tape:
        sk.launch(square, 2, inputs=[x], outputs=[y])
    assert y.requires_grad
    tape.backward(grads={y: np.ones(2)})
    assert x.grad.numpy().tolist() == [2.0, 4.0]


@sk.struct
class Springs:
    rest: sk.array(dtype=F64)
    ke: sk.array(dtype=F64)


@sk.kernel
def spring_energy_struct(s: Springs, x: sk.array(dtype=F64), e: sk.array(dtype=F64)):
    i = sk.tid()
    d = x[i] - s.rest[i]
    sk.atomic_add(e, 0, 0.5 * s.ke[i] * d * d)


@sk.kernel
def spring_energy_plain(rest: sk.array(dtype=F64), ke: sk.array(dtype=F64), x: sk.array(dtype=F64),
                        e: sk.array(dtype=F64)):
    i = sk.tid()
    d = x[i] - rest[i]
    sk.atomic_add(e, 0, 0.5 * ke[i] * d * d)


def test_arrays_inside_structs_get_exactly_the_gradient_of_plain_arguments():
    rest, ke, x = np.array([1.0, 2.0]), np.array([10.0, 30.0]), np.array([1.5, 1.0])
    s = Springs(rest=sk.array(rest, dtype=F64), ke=sk.array(ke, dtype=F64, requires_grad=True))
    e1 = sk.zeros(1, dtype=F64)  # no requires_grad: must still receive one
    with sk.Tape() as t1:
        sk.launch(spring_energy_struct, 2, inputs=[s, sk.array(x, dtype=F64)], outputs=[e1])
    t1.backward(loss=e1)
    plain_ke = sk.array(ke, dtype=F64, requires_grad=True)
    e2 = sk.zeros(1, dtype=F64)
    with sk.Tape() as t2:
        sk.launch(spring_energy_plain, 2, inputs=[sk.array(rest, dtype=F64), plain_ke, sk.array(x, dtype=F64)],
                  outputs=[e2])
    t2.backward(loss=e2)
    np.testing.assert_array_equal(s.ke.grad.numpy(), plain_ke.grad.numpy())
    np.testing.assert_allclose(s.ke.grad.numpy(), 0.5 * (x - rest) ** 2)


@sk.kernel
def scale_into(x: sk.array(dtype=F64), w: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] * w[i]


@pytest.mark.cpu_only("numpy arrays are CPU memory")
def test_numpy_arrays_passed_directly_are_bit_identical_after_backward():
    w_np = np.array([0.5, -2.0, 3.0])
    before = w_np.copy()
    x = sk.array([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = sk.zeros(3, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(scale_into, 3, inputs=[x, w_np], outputs=[y])
    tape.backward(grads={y: np.ones(3)})
    assert w_np.tobytes() == before.tobytes()
    assert x.grad.numpy().tolist() == w_np.tolist()


@sk.kernel
def component_wise(a: sk.array(dtype=F64), out: sk.array(dtype=F64)):
    tmp = sk.vec3d()
    tmp[0] += a[0]
    tmp[1] += a[1] * 2.0
    tmp.z = a[2]
    out[0] = sk.dot(tmp, tmp)


@sk.kernel
def whole_value(a: sk.array(dtype=F64), out: sk.array(dtype=F64)):
    tmp = sk.vec3d()
    tmp += sk.vec3d(a[0], a[1] * 2.0, a[2])
    out[0] = sk.dot(tmp, tmp)


def test_component_assignment_is_differentiable_like_whole_value_operations():
    grads = []
    for k in (component_wise, whole_value):
        a = sk.array([1.0, -2.0, 0.5], dtype=F64, requires_grad=True)
        out = sk.zeros(1, dtype=F64)
        with sk.Tape() as tape:
            sk.launch(k, 1, inputs=[a], outputs=[out])
        tape.backward(loss=out)
        grads.append(a.grad.numpy().copy())
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_allclose(grads[0], [2.0, -16.0, 1.0])


@sk.kernel
def two_outputs(x: sk.array(dtype=F64), y: sk.array(dtype=F64), z: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = 2.0 * x[i]
    z[i] = 3.0 * x[i]


def test_zero_between_backward_calls_leaks_nothing():
    x = sk.array([1.0, 1.0], dtype=F64, requires_grad=True)
    y, z = sk.zeros(2, dtype=F64), sk.zeros(2, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(two_outputs, 2, inputs=[x], outputs=[y, z])
    tape.backward(grads={y: np.ones(2)})
    assert x.grad.numpy().tolist() == [2.0, 2.0]
    tape.zero()
    assert y.grad.numpy().tolist() == [0.0, 0.0]
    tape.backward(grads={z: np.ones(2)})
    assert x.grad.numpy().tolist() == [3.0, 3.0]
    tape.zero()
    tape.backward(grads={z: np.ones(2)})
    assert x.grad.numpy().tolist() == [3.0, 3.0]


def test_seeding_an_array_no_launch_touched_is_an_error_naming_it():
    x = sk.array([1.0], dtype=F64, requires_grad=True)
    y, stranger = sk.zeros(1, dtype=F64), sk.zeros(7, dtype=F64, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(square, 1, inputs=[x], outputs=[y])
    with pytest.raises(ValueError, match=r"cannot seed array of float64 with shape \(7,\).*no launch recorded"):
        tape.backward(grads={stranger: np.ones(7)})


def test_seeding_an_output_that_depends_on_no_grad_input_is_an_error_not_zeros():
    x = sk.array([1.0], dtype=F64)
    y = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 1, inputs=[x], outputs=[y])
    with pytest.raises(ValueError, match="does not depend on any array that requires grad"):
        tape.backward(loss=y)


@sk.kernel
def euler_step(x_in: sk.array(dtype=F64), v: sk.array(dtype=F64), x_out: sk.array(dtype=F64)):
    i = sk.tid()
    x_out[i] = x_in[i] + 0.1 * v[i] * x_in[i]


def rollout(x0: np.ndarray, v: np.ndarray, steps: int, double_buffered: bool):
    x = sk.array(x0, dtype=F64, requires_grad=True)
    vel = sk.array(v, dtype=F64)
    bufs = [x, sk.zeros_like(x)] if double_buffered else [x] + [sk.zeros_like(x) for _ in range(steps)]
    tape = sk.Tape()
    with tape:
        for s in range(steps):
            src = bufs[s % 2] if double_buffered else bufs[s]
            dst = bufs[(s + 1) % 2] if double_buffered else bufs[s + 1]
            sk.launch(euler_step, len(x0), inputs=[src, vel], outputs=[dst])
    return tape, x, dst


def test_reused_state_buffers_make_backward_refuse_and_name_the_overwriting_launch():
    tape, _x, final = rollout(np.array([1.0, 2.0]), np.array([0.5, -1.0]), 4, double_buffered=True)
    with pytest.raises(RuntimeError, match=r"kernel 'euler_step' \(launch #0\) read argument 'x_in', which "
                                           r"launch #1 of kernel 'euler_step' overwrote"):
        tape.backward(grads={final: np.ones(2)})


def test_the_same_rollout_with_fresh_buffers_matches_finite_differences():
    x0, v = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    tape, x, final = rollout(x0, v, 4, double_buffered=False)
    tape.backward(grads={final: np.ones(2)})

    def f(xx):
        for _ in range(4):
            xx = xx + 0.1 * v * xx
        return xx.sum()
    np.testing.assert_allclose(x.grad.numpy(), fd_grad(f, x0), rtol=1e-8)


@sk.kernel
def power_loop(x: sk.array(dtype=F64), n: int, y: sk.array(dtype=F64)):
    i = sk.tid()
    r = 1.0
    for k in range(n):
        r = r * x[i]
    y[i] = r


def test_dynamic_loop_gradient_of_x_to_the_n():
    x0 = np.array([0.9, 1.3, -0.7])
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y = sk.zeros(3, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(power_loop, 3, inputs=[x, 7], outputs=[y])
    tape.backward(grads={y: np.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), 7 * x0 ** 6, rtol=1e-12)


@sk.kernel
def newton_sqrt(a: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    r = a[i]
    it = 0
    while it < 30:
        r = 0.5 * (r + a[i] / r)
        if sk.abs(r * r - a[i]) < 1e-14:
            break
        it += 1
    y[i] = r * sk.sin(r)


def test_while_loop_with_nonlinear_carried_update_and_break_matches_finite_differences():
    a0 = np.array([2.0, 5.0, 0.3])
    a = sk.array(a0, dtype=F64, requires_grad=True)
    y = sk.zeros(3, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(newton_sqrt, 3, inputs=[a], outputs=[y])
    tape.backward(grads={y: np.ones(3)})
    np.testing.assert_allclose(a.grad.numpy(), fd_grad(lambda v: np.sum(np.sqrt(v) * np.sin(np.sqrt(v))), a0),
                               rtol=1e-6)


@sk.kernel
def skip_and_stop(x: sk.array(dtype=F64), n: int, y: sk.array(dtype=F64)):
    s = 0.0
    for k in range(n):
        if k % 3 == 1:
            continue
        if x[k] > 10.0:
            break
        s += x[k] * x[k] * sk.float64(k + 1)
    y[0] = s


def test_break_and_continue_inside_dynamic_loops_have_exact_gradients():
    x0 = np.array([1.0, 2.0, -1.5, 0.5, 3.0, 20.0, 7.0])  # k=1, 4 continue; k=5 breaks before k=6
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(skip_and_stop, 1, inputs=[x, 7], outputs=[y])
    tape.backward(loss=y)
    expect = [2 * x0[k] * (k + 1) if k in (0, 2, 3) else 0.0 for k in range(7)]
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-12)


@sk.kernel
def fill_in_a_loop(x: sk.array(dtype=F64), n: int, y: sk.array(dtype=F64)):
    # each iteration writes one component of a local vector and one field of a local
    # transform: both are new versions of the whole local, carried around the loop
    v = sk.vec3d(0.0, 0.0, 0.0)
    t = sk.transformd(sk.vec3d(0.0, 0.0, 0.0), sk.quatd(0.0, 0.0, 0.0, 1.0))
    for k in range(n):
        v[k] = x[k] * x[k] + v[(k + 2) % 3]
        t.p = t.p + v
    y[0] = v[0] + 2.0 * v[1] + 3.0 * v[2] + t.p[2]


def test_element_and_field_assignments_inside_a_dynamic_loop_are_carried_with_exact_gradients():
    x0 = np.array([0.5, -1.5, 2.0])
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)

    def f(a):
        v = np.zeros(3)
        p2 = 0.0
        for k in range(3):
            v[k] = a[k] ** 2 + v[(k + 2) % 3]
            p2 += v[2]
        return v[0] + 2.0 * v[1] + 3.0 * v[2] + p2

    with sk.Tape() as tape:
        sk.launch(fill_in_a_loop, 1, inputs=[x, 3], outputs=[y])
    assert y.numpy()[0] == f(x0)
    tape.backward(loss=y)
    np.testing.assert_allclose(x.grad.numpy(), fd_grad(f, x0), rtol=1e-7)


@sk.kernel
def chain_link(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[i] + 0.1 * sk.sin(x[(i + 1) % 3]) * x[i]


def test_twenty_launch_chain_matches_finite_differences_of_the_whole_chain():
    x0 = np.array([0.2, -0.4, 0.9])
    bufs = [sk.array(x0, dtype=F64, requires_grad=True)] + [sk.zeros(3, dtype=F64) for _ in range(20)]
    loss = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        for k in range(20):
            sk.launch(chain_link, 3, inputs=[bufs[k]], outputs=[bufs[k + 1]])
        sk.launch(sum_sin, 3, inputs=[bufs[20]], outputs=[loss])
    tape.backward(loss=loss)

    def f(v):
        for _ in range(20):
            v = v + 0.1 * np.sin(np.roll(v, -1)) * v
        return np.sin(v).sum()
    np.testing.assert_allclose(bufs[0].grad.numpy(), fd_grad(f, x0), rtol=1e-7)


def test_record_func_runs_a_python_step_at_its_place_in_the_reverse_sweep():
    x = sk.array([1.0, 2.0], dtype=F64, requires_grad=True)
    doubled = sk.zeros(2, dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64)
    with sk.Tape() as tape:
        doubled.assign(2.0 * x.numpy())  # a step done in numpy: y2 = 2 x

        def back():
            x.grad.assign(x.grad.numpy() + 2.0 * doubled.grad.numpy())
        tape.record_func(back, arrays=[x, doubled])
        sk.launch(square, 2, inputs=[doubled], outputs=[y])
    tape.backward(grads={y: np.ones(2)})
    assert x.grad.numpy().tolist() == [8.0, 16.0]  # d(4 x^2)/dx


def test_paused_tapes_record_nothing_and_give_the_tapes_for_a_hand_written_adjoint():
    x = sk.array([1.0, 2.0], dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64, requires_grad=True)
    assert sk.autograd.active_tapes() == []
    with sk.Tape() as tape:
        assert sk.autograd.active_tapes() == [tape]
        with sk.autograd.paused_tapes() as tapes:
            assert tapes == [tape] and sk.autograd.active_tapes() == []
            sk.launch(square, 2, inputs=[x], outputs=[y])
        assert sk.autograd.active_tapes() == [tape] and tape.entries == []

        def back():
            x.grad.assign(x.grad.numpy() + 2.0 * x.numpy() * y.grad.numpy())
        tape.record_func(back, arrays=[x, y])
    tape.backward(grads={y: np.ones(2)})
    assert x.grad.numpy().tolist() == [2.0, 4.0]


def test_reset_forgets_launches_and_zeroes_grads():
    x = sk.array([3.0], dtype=F64, requires_grad=True)
    y = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 1, inputs=[x], outputs=[y])
    tape.backward(loss=y)
    tape.reset()
    assert x.grad.numpy()[0] == 0.0 and tape.entries == []


@sk.func
def clipped_sqrt(x: sk.float64) -> sk.float64:
    return sk.sqrt(x)


@sk.func_grad(clipped_sqrt)
def clipped_sqrt_grad(x: sk.float64, adj_ret: sk.float64):
    # A bounded slope near zero, where the true derivative 1/(2 sqrt x) blows up.
    return adj_ret / (2.0 * sk.max(sk.sqrt(x), sk.float64(0.1)))


@sk.func
def polar(r: sk.float64, t: sk.float64):
    return r * sk.cos(t), r * sk.sin(t)


@sk.func_grad(polar)
def polar_grad(r: sk.float64, t: sk.float64, adj_x: sk.float64, adj_y: sk.float64):
    return 100.0 * adj_x, 1000.0 * adj_y  # recognisable values, not the true derivative


@sk.kernel
def uses_custom_adjoints(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    a, b = polar(x[i], x[i])
    y[i] = clipped_sqrt(x[i]) + a + b


def test_func_grad_replaces_the_generated_adjoint():
    x0 = np.array([4.0, 0.0001])
    x = sk.array(x0, dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(uses_custom_adjoints, 2, inputs=[x], outputs=[y])
    np.testing.assert_allclose(y.numpy(), np.sqrt(x0) + x0 * np.cos(x0) + x0 * np.sin(x0))
    tape.backward(grads={y: np.ones(2)})
    clip = 1.0 / (2.0 * np.maximum(np.sqrt(x0), 0.1))
    np.testing.assert_allclose(x.grad.numpy(), clip + 100.0 + 1000.0, rtol=1e-12)


def test_func_grad_with_the_wrong_return_count_is_a_compile_error():
    @sk.func
    def f2(a: sk.float64, b: sk.float64) -> sk.float64:
        return a * b

    @sk.func_grad(f2)
    def f2_grad(a: sk.float64, b: sk.float64, adj_ret: sk.float64):
        return adj_ret * b

    @sk.kernel
    def k(x: sk.array(dtype=F64)):
        x[0] = f2(x[0], x[1])

    with pytest.raises(sk.CompileError, match=r"must return the adjoints of the non-array parameters of 'f2' "
                                              r"\(float64, float64\), it returns \(float64\)"):
        k.build_ir()


@sk.struct
class Stiffness:
    ke: sk.array(dtype=F64)


@sk.struct
class Model:
    springs: Stiffness
    scale: sk.float64


@sk.kernel
def nested_energy(m: Model, x: sk.array(dtype=F64), e: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(e, 0, m.scale * m.springs.ke[i] * x[i] * x[i])


def test_arrays_in_nested_structs_get_their_gradient():
    m = Model(springs=Stiffness(ke=sk.array([1.0, 2.0], dtype=F64, requires_grad=True)), scale=0.5)
    x = np.array([3.0, -1.0])
    e = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(nested_energy, 2, inputs=[m, sk.array(x, dtype=F64)], outputs=[e])
    tape.backward(loss=e)
    np.testing.assert_allclose(m.springs.ke.grad.numpy(), 0.5 * x ** 2)
    tape.zero()
    assert m.springs.ke.grad.numpy().tolist() == [0.0, 0.0]


def test_torch_tensors_passed_directly_are_bit_identical_after_backward(device):
    torch = pytest.importorskip("torch")
    if device != "cpu" and not torch.cuda.is_available():
        pytest.skip("a tensor on the GPU needs torch built with CUDA (and a real GPU)")
    w = torch.tensor([0.5, -2.0, 3.0], dtype=torch.float64, device="cpu" if device == "cpu" else "cuda")
    before = w.clone()
    x = sk.array([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = sk.zeros(3, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(scale_into, 3, inputs=[x, w], outputs=[y])
    tape.backward(grads={y: np.ones(3)})
    assert torch.equal(w, before)
    assert x.grad.numpy().tolist() == before.tolist()


@sk.kernel
def shared_and_owned(x: sk.array(dtype=F64), w: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = x[0] * w[i] + x[i // 2]


def test_elements_read_by_many_threads_accumulate_exactly_under_threads():
    n = 200_000
    w_np = np.arange(n, dtype=np.float64) % 7
    x = sk.zeros(n, dtype=F64, requires_grad=True)
    y = sk.zeros(n, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(shared_and_owned, n, inputs=[x, sk.array(w_np, dtype=F64)], outputs=[y])
    tape.backward(grads={y: np.ones(n)})
    g = x.grad.numpy()
    assert g[0] == w_np.sum() + 2.0
    assert np.all(g[1:n // 2] == 2.0) and np.all(g[n // 2:] == 0.0)


def test_only_loads_indexed_by_the_whole_thread_index_skip_the_atomic():
    src = shared_and_owned.source()
    assert "accum_grad_owned(sk::grad_ptr<Dense>(w, i_" in src
    assert "sk::accum_grad(sk::grad_ptr<Dense>(x, 0)" in src
    assert "sk::accum_grad(sk::grad_ptr<Dense>(x, _" in src  # x[i // 2]: shared by two threads


@sk.struct
class Pair:
    a: sk.float64
    b: sk.float64


@sk.kernel
def element_and_field_assignment(x: sk.array(dtype=F64), out: sk.array(dtype=F64)):
    m = sk.mat22d()
    m[0, 0] = x[0]
    m[1, 1] = x[1] * x[1]
    m[0, 1] += x[2]
    p = Pair()
    p.a = x[3]
    p.b = p.a * 3.0
    out[0] = sk.determinant(m) + m[0, 1] * p.b + p.a


def test_matrix_element_and_struct_field_assignment_are_differentiable():
    x0 = np.array([1.5, -0.5, 2.0, 0.7])
    x = sk.array(x0, dtype=F64, requires_grad=True)
    out = sk.zeros(1, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(element_and_field_assignment, 1, inputs=[x], outputs=[out])
    tape.backward(loss=out)

    def f(v):
        return v[0] * v[1] ** 2 + v[2] * 3.0 * v[3] + v[3]
    assert out.numpy()[0] == pytest.approx(f(x0))
    np.testing.assert_allclose(x.grad.numpy(), fd_grad(f, x0), rtol=1e-8)


def test_an_input_changed_outside_the_tape_also_stops_backward():
    x = sk.array([1.0, 2.0], dtype=F64, requires_grad=True)
    y = sk.zeros(2, dtype=F64)
    with sk.Tape() as tape:
        sk.launch(square, 2, inputs=[x], outputs=[y])
    x.fill_(3.0)
    with pytest.raises(RuntimeError, match="read argument 'x', which a write outside this tape"):
        tape.backward(grads={y: np.ones(2)})
    assert x.grad.numpy().tolist() == [0.0, 0.0]  # refused before any adjoint ran
