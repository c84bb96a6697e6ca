"""The CPU entry's dense loop (arrays row-major without gaps, 1-D grid) and its strided
loop give the same results: the same kernel on contiguous arrays and on strided views of
the same values, forward and adjoint, for scalar, vector, 2-D and struct-field arrays;
views that are only partly dense (column slices, transposes) take the strided loop; and
arrays that overlap keep the order of a scalar loop."""

import numpy as np
import pytest

import simkit as sk

pytestmark = pytest.mark.cpu_only("numpy views (sk.from_numpy) and the CPU entry's two loops")

F32 = sk.array(dtype=sk.float32)
V3 = sk.array(dtype=sk.vec3)
M2 = sk.array(dtype=sk.float32, ndim=2)


@sk.kernel
def affine(x: F32, y: F32, a: float):
    i = sk.tid()
    y[i] = a * x[i] + sk.sin(y[i])


@sk.kernel
def vec_step(q: V3, v: V3, dt: float, q_out: V3):
    i = sk.tid()
    q_out[i] = q[i] + v[i] * dt + sk.vec3(0.0, -0.5 * dt * dt, 0.0)


@sk.kernel
def rows_scaled(m: M2, w: F32, out: M2):
    i = sk.tid()
    for j in range(m.shape[1]):
        out[i, j] = m[i, j] * w[i] + float(j)


@sk.kernel
def grid_scaled(m: M2, out: M2):
    i, j = sk.tid()
    out[i, j] = m[i, j] * 2.0 + float(i - j)


@sk.struct
class Springs:
    ke: F32
    rest: F32


@sk.kernel
def spring_force(s: Springs, x: F32, f: F32):
    i = sk.tid()
    f[i] = s.ke[i] * (x[i] - s.rest[i])


@sk.kernel
def shift_add(src: F32, dst: F32):
    i = sk.tid()
    dst[i] = src[i] + 1.0


@sk.kernel
def two_writes(a: F32, b: F32):
    i = sk.tid()
    a[i] = a[i] + 1.0
    b[i] = b[i] + a[i]


@sk.func
def weighted(w: F32, x: F32, i: int) -> float:
    return w[i] * x[i]


@sk.kernel
def weighted_plus_one(w: F32, x: F32, out: F32):
    i = sk.tid()
    out[i] = weighted(w, x, i) + 1.0


N = 1003  # not a multiple of any vector width: the vector loop's remainder runs too


def strided_copy(values: np.ndarray, step: int = 3) -> np.ndarray:
    """A numpy view with the values of ``values`` along axis 0, every ``step``-th row of a larger buffer."""
    base = np.full((values.shape[0] * step,) + values.shape[1:], np.nan, values.dtype)
    view = base[::step]
    view[...] = values
    return view


def dense_and_strided(values: np.ndarray, dtype=sk.float32, requires_grad=False):
    """The same values as a contiguous sk array and as a strided sk view."""
    dense = sk.from_numpy(values.copy(), dtype=dtype, requires_grad=requires_grad)
    strided = sk.from_numpy(strided_copy(values), dtype=dtype, requires_grad=requires_grad)
    assert dense.numpy().flags.c_contiguous and not strided.numpy().flags.c_contiguous
    return dense, strided


def rng_values(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape).astype(np.float32)


def test_cpu_entry_of_a_1d_kernel_has_a_dense_and_a_strided_loop():
    src = affine.source()
    assert "_forward<true>(a, i);" in src and "_forward<false>(a, i);" in src
    assert "_backward<true>(a, i);" in src and "_backward<false>(a, i);" in src
    assert "sk::dense(args.x) && sk::dense(args.y)" in src


def test_dense_check_covers_struct_array_fields():
    assert "sk::dense(args.s.ke) && sk::dense(args.s.rest) && sk::dense(args.x) && sk::dense(args.f)" in \
        spring_force.source()


def test_function_taking_arrays_runs_as_its_kernel_does():
    src = weighted_plus_one.source()
    assert "template <bool Dense>\nstatic SK_FUNC float weighted_" in src and "<Dense>(w, x, i_" in src
    # its adjoint is called out of line: the kernel's backward keeps the strided loop alone
    assert "_forward<true>(a, i);" in src and "_backward<true>" not in src
    w0, x0 = rng_values(N, seed=24), rng_values(N, seed=25)
    results = []
    for w, x, out in zip(dense_and_strided(w0, requires_grad=True), dense_and_strided(x0, requires_grad=True),
                         dense_and_strided(np.zeros(N, np.float32), requires_grad=True)):
        with sk.Tape() as tape:
            sk.launch(weighted_plus_one, N, inputs=[w, x], outputs=[out])
        tape.backward(grads={out: np.ones(N, np.float32)})
        results.append([out.numpy().copy(), w.grad.numpy().copy(), x.grad.numpy().copy()])
    for dense, strided in zip(*results):
        np.testing.assert_array_equal(dense, strided)
    np.testing.assert_allclose(results[0][0], w0 * x0 + 1.0, rtol=1e-6)
    np.testing.assert_allclose(results[0][1], x0, rtol=1e-6)


def test_kernel_with_a_2d_thread_index_keeps_the_strided_loop_alone():
    src = grid_scaled.source()
    assert "_forward<true>" not in src and "_forward<false>(a, i);" in src


def test_scalar_kernel_gives_identical_results_on_dense_and_strided_arrays():
    x0, y0 = rng_values(N, seed=1), rng_values(N, seed=2)
    results = []
    for x, y in zip(dense_and_strided(x0), dense_and_strided(y0)):
        sk.launch(affine, N, inputs=[x, y, 0.75])
        results.append(y.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], 0.75 * x0 + np.sin(y0), rtol=1e-6, atol=1e-6)


def test_vector_kernel_gives_identical_results_on_dense_and_strided_arrays():
    q0, v0 = rng_values(N, 3, seed=3), rng_values(N, 3, seed=4)
    results = []
    for q, v, out in zip(dense_and_strided(q0, sk.vec3), dense_and_strided(v0, sk.vec3),
                         dense_and_strided(np.zeros((N, 3), np.float32), sk.vec3)):
        sk.launch(vec_step, N, inputs=[q, v, 0.1, out])
        results.append(out.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], q0 + v0 * 0.1 + [0.0, -0.005, 0.0], rtol=1e-6, atol=1e-6)


def test_2d_arrays_give_identical_results_on_dense_and_strided_arrays():
    m0, w0 = rng_values(N, 4, seed=5), rng_values(N, seed=6)
    results = []
    for m, w, out in zip(dense_and_strided(m0), dense_and_strided(w0),
                         dense_and_strided(np.zeros((N, 4), np.float32))):
        sk.launch(rows_scaled, N, inputs=[m, w, out])
        results.append(out.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], m0 * w0[:, None] + np.arange(4), rtol=1e-6)


@pytest.mark.parametrize("layout", ["column slice", "transpose", "reversed rows", "padded rows"])
def test_partly_dense_2d_views_read_and_write_the_right_elements(layout):
    # Views whose innermost axis is dense but whose rows are not where a dense layout puts them.
    m0 = rng_values(64, 4, seed=7)
    if layout == "column slice":
        m_np = np.concatenate([m0, rng_values(64, 2, seed=8)], axis=1)[:, :4]
        out_np = np.zeros((64, 6), np.float32)[:, 2:]
    elif layout == "transpose":
        m_np = np.ascontiguousarray(m0.T).T
        out_np = np.zeros((4, 64), np.float32).T
    elif layout == "reversed rows":
        m_np = np.ascontiguousarray(m0[::-1])[::-1]
        out_np = np.zeros((64, 4), np.float32)[::-1]
    else:
        m_np = np.zeros((64, 8), np.float32)[:, :4]
        m_np[...] = m0
        out_np = np.zeros((64, 5), np.float32)[:, 1:]
    w0 = rng_values(64, seed=9)
    m, out = sk.from_numpy(m_np), sk.from_numpy(out_np)
    sk.launch(rows_scaled, 64, inputs=[m, sk.from_numpy(w0), out])
    np.testing.assert_allclose(out_np, m0 * w0[:, None] + np.arange(4), rtol=1e-6)
    grid_out = sk.from_numpy(np.zeros((64, 4), np.float32))
    sk.launch(grid_scaled, (64, 4), inputs=[m, grid_out])
    np.testing.assert_allclose(grid_out.numpy(), m0 * 2.0 + (np.arange(64)[:, None] - np.arange(4)), rtol=1e-6)


def test_axes_of_extent_one_with_odd_strides_still_index_right():
    # numpy gives an axis of extent 1 any stride; such an array is dense all the same.
    m_np = np.zeros((7, 5), np.float32)[:, 2:3]  # shape (7, 1), strides (20, 4)
    m_np[:, 0] = np.arange(7)
    single = np.zeros((5, 7), np.float32)[2:3].T  # shape (7, 1) again, strides (4, 28)
    out = sk.from_numpy(single)
    sk.launch(rows_scaled, 7, inputs=[sk.from_numpy(m_np), sk.from_numpy(np.full(7, 3.0, np.float32)), out])
    np.testing.assert_array_equal(single[:, 0], np.arange(7) * 3.0)


def test_struct_array_fields_give_identical_results_on_dense_and_strided_arrays():
    ke0, rest0, x0 = rng_values(N, seed=10), rng_values(N, seed=11), rng_values(N, seed=12)
    results = []
    for ke, rest, x, f in zip(dense_and_strided(ke0), dense_and_strided(rest0), dense_and_strided(x0),
                              dense_and_strided(np.zeros(N, np.float32))):
        sk.launch(spring_force, N, inputs=[Springs(ke=ke, rest=rest), x, f])
        results.append(f.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], ke0 * (x0 - rest0), rtol=1e-6, atol=1e-7)


def test_one_strided_struct_field_sends_the_launch_down_the_strided_loop():
    ke0, rest0, x0 = rng_values(N, seed=13), rng_values(N, seed=14), rng_values(N, seed=15)
    f = sk.zeros(N)
    rest = sk.from_numpy(strided_copy(rest0))
    sk.launch(spring_force, N, inputs=[Springs(ke=sk.array(ke0), rest=rest), sk.array(x0), f])
    np.testing.assert_allclose(f.numpy(), ke0 * (x0 - rest0), rtol=1e-6, atol=1e-7)


def test_adjoints_give_identical_grads_on_dense_and_strided_arrays():
    q0, v0 = rng_values(N, 3, seed=16), rng_values(N, 3, seed=17)
    g_out = rng_values(N, 3, seed=18)
    grads = []
    for q, v, out in zip(dense_and_strided(q0, sk.vec3, True), dense_and_strided(v0, sk.vec3, True),
                         dense_and_strided(np.zeros((N, 3), np.float32), sk.vec3, True)):
        with sk.Tape() as tape:
            sk.launch(vec_step, N, inputs=[q, v, 0.1], outputs=[out])
        tape.backward(grads={out: g_out})
        grads.append((q.grad.numpy().copy(), v.grad.numpy().copy()))
    for dense, strided in zip(*grads):
        np.testing.assert_array_equal(dense, strided)
    np.testing.assert_allclose(grads[0][0], g_out, rtol=1e-6)
    np.testing.assert_allclose(grads[0][1], g_out * 0.1, rtol=1e-6)


def test_struct_field_adjoints_give_identical_grads_on_dense_and_strided_arrays():
    ke0, rest0, x0 = rng_values(N, seed=19), rng_values(N, seed=20), rng_values(N, seed=21)
    g_f = rng_values(N, seed=22)
    grads = []
    for ke, rest, x, f in zip(dense_and_strided(ke0, requires_grad=True), dense_and_strided(rest0, requires_grad=True),
                              dense_and_strided(x0, requires_grad=True),
                              dense_and_strided(np.zeros(N, np.float32), requires_grad=True)):
        with sk.Tape() as tape:
            sk.launch(spring_force, N, inputs=[Springs(ke=ke, rest=rest), x], outputs=[f])
        tape.backward(grads={f: g_f})
        grads.append([a.grad.numpy().copy() for a in (ke, rest, x)])
    for dense, strided in zip(*grads):
        np.testing.assert_array_equal(dense, strided)
    np.testing.assert_allclose(grads[0][0], g_f * (x0 - rest0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grads[0][2], g_f * ke0, rtol=1e-6)


@pytest.fixture
def one_thread():
    # The order of a scalar loop is only defined when one thread runs the whole grid.
    before = sk.get_threads()
    sk.set_threads(1)
    yield
    sk.set_threads(before)


def test_read_array_overlapping_the_written_one_keeps_scalar_order(one_thread):
    # dst is src shifted by one element: each element reads what the previous one wrote,
    # which a vector loop reading 16 elements ahead would not see.
    base = np.zeros(N + 1, np.float32)
    sk.launch(shift_add, N, inputs=[sk.from_numpy(base[:-1]), sk.from_numpy(base[1:])])
    np.testing.assert_array_equal(base, np.arange(N + 1, dtype=np.float32))


def test_two_written_arrays_overlapping_partly_keep_scalar_order(one_thread):
    # a is b shifted by two elements; small integers keep every sum exact.
    base = np.random.default_rng(23).integers(0, 10, N + 2).astype(np.float32)
    expect = base.copy()
    a, b = expect[:-2], expect[2:]
    for i in range(N):
        a[i] += 1.0
        b[i] += a[i]
    sk.launch(two_writes, N, inputs=[sk.from_numpy(base[:-2]), sk.from_numpy(base[2:])])
    np.testing.assert_array_equal(base, expect)
