"""Private accumulators: a scatter kernel's CPU launch split over threads without atomics
(simkit/core/private.py decides which arrays, runtime.cpp copies and sums them)."""

import numpy as np
import pytest

import simkit as sk
from simkit.core.threads import launch_counts
from simkit.core.launch import plan_for
from simkit.core.private import accumulated, descriptors

pytestmark = pytest.mark.cpu_only("private accumulators are how the CPU thread pool splits a launch")

N = 100_000  # above the parallel grain: these launches split


@pytest.fixture
def four_threads():
    before = sk.get_threads()
    sk.set_threads(4, adaptive=False)  # these tests check how a launch splits, busy machine or not
    yield
    sk.set_threads(before)


def ran(path: str, launch) -> bool:
    """Did ``launch()`` run exactly one launch, and that one by ``path``?"""
    before = launch_counts()
    launch()
    after = launch_counts()
    return {k: after[k] - before[k] for k in after} == {k: int(k == path) for k in after}


def names(found):
    return None if found is None else {(n, p) for n, p in found}


@sk.kernel
def scatter(x: sk.array(dtype=sk.float32), index: sk.array(dtype=sk.int32), out: sk.array(dtype=sk.float32)):
    i = sk.tid()
    out[index[i]] += x[i]


@sk.kernel
def gather(x: sk.array(dtype=sk.float32), w: sk.array(dtype=sk.float32), index: sk.array(dtype=sk.int32),
           y: sk.array(dtype=sk.float32)):
    i = sk.tid()
    y[i] = x[index[i]] * w[index[i]]


@sk.kernel
def add_and_read(out: sk.array(dtype=sk.float32)):
    i = sk.tid()
    out[i % 7] += out[7]


@sk.kernel
def fetch_add(counter: sk.array(dtype=sk.int32), slots: sk.array(dtype=sk.int32)):
    i = sk.tid()
    slots[i] = sk.atomic_add(counter, 0, 1)


@sk.kernel
def lowest(x: sk.array(dtype=sk.float32), lo: sk.array(dtype=sk.float32)):
    sk.atomic_min(lo, 0, x[sk.tid()])


@sk.kernel
def own_adds(f: sk.array(dtype=sk.float32)):
    i = sk.tid()
    f[i] += 1.0


@sk.kernel
def shift(x: sk.array(dtype=sk.float32)):
    i = sk.tid()
    x[i] = x[(i + 1) % 5] * 2.0


@sk.func
def push(f: sk.array(dtype=sk.vec3), j: int, v: sk.vec3):
    f[j] += v


@sk.kernel
def push_through_func(f: sk.array(dtype=sk.vec3)):
    push(f, sk.tid() % 3, sk.vec3(1.0, 2.0, 3.0))


@sk.struct
class Forces:
    gain: float
    f: sk.array(dtype=sk.vec3)


@sk.kernel
def push_into_field(s: Forces):
    s.f[sk.tid() % 3] += sk.vec3(s.gain, 0.0, 0.0)


@sk.kernel
def scatter_twice(index: sk.array(dtype=sk.int32), a: sk.array(dtype=sk.int64), b: sk.array(dtype=sk.int64)):
    i = sk.tid()
    a[index[i]] += sk.int64(1)
    b[index[i]] += sk.int64(i)


def test_a_forward_adding_into_other_elements_accumulates_that_array_privately():
    assert names(accumulated(scatter.build_ir(), adjoint=False)) == {("out", ())}


def test_an_adjoint_gathering_from_other_elements_accumulates_those_gradients_privately():
    assert names(accumulated(gather.build_ir(), adjoint=True)) == {("x", ()), ("w", ())}


def test_reads_and_writes_of_the_threads_own_elements_need_nothing_private():
    assert names(accumulated(own_adds.build_ir(), adjoint=False)) == set()
    assert names(accumulated(scatter.build_ir(), adjoint=True)) == set()
    assert names(accumulated(gather.build_ir(), adjoint=False)) == set()


def test_a_kernel_reading_what_it_adds_into_needs_atomics():
    assert accumulated(add_and_read.build_ir(), adjoint=False) is None


def test_fetch_add_and_min_max_need_atomics():
    assert accumulated(fetch_add.build_ir(), adjoint=False) is None
    assert accumulated(lowest.build_ir(), adjoint=False) is None


def test_an_adjoint_gathering_from_an_array_the_kernel_writes_needs_atomics():
    assert accumulated(shift.build_ir(), adjoint=True) is None


def test_adds_inside_a_called_function_count_for_the_kernel():
    assert names(accumulated(push_through_func.build_ir(), adjoint=False)) == {("f", ())}


def test_an_array_in_a_struct_is_found_at_its_field_offset():
    fir = push_into_field.build_ir()
    assert names(accumulated(fir, adjoint=False)) == {("s", ("f",))}
    plan = plan_for(push_into_field)
    (target,) = descriptors(fir, plan.Args, adjoint=False)
    assert target.offset == plan.Args.s.offset + Forces._sk_ctypes.f.offset
    assert (target.grad, target.ndim, target.scalar, target.elem_bytes) == (0, 1, 0, 12)


@sk.kernel
def masked_gather(x: sk.array(dtype=sk.float32), keep: sk.array(dtype=sk.bool_), y: sk.array(dtype=sk.float32)):
    i = sk.tid()
    if keep[(i + 1) % 8]:
        y[i] = x[(i + 1) % 8]


def test_gathered_arrays_without_gradients_need_no_private_copy():
    fir = masked_gather.build_ir()
    assert names(accumulated(fir, adjoint=True)) == {("x", ()), ("keep", ())}
    (target,) = descriptors(fir, plan_for(masked_gather).Args, adjoint=True)
    assert target.offset == plan_for(masked_gather).Args.x.offset


def test_a_split_scatter_sums_exactly_what_one_thread_sums(four_threads):
    rng = np.random.default_rng(0)
    index = sk.from_numpy(rng.integers(0, 1000, N).astype(np.int32))
    a, b = sk.zeros(1000, dtype=sk.int64), sk.zeros(1000, dtype=sk.int64)
    assert ran("private", lambda: sk.launch(scatter_twice, N, inputs=[index, a, b]))
    want_a = np.bincount(index.numpy(), minlength=1000)
    want_b = np.bincount(index.numpy(), weights=np.arange(N), minlength=1000).astype(np.int64)
    assert np.array_equal(a.numpy(), want_a) and np.array_equal(b.numpy(), want_b)


def test_private_float_sums_come_out_the_same_on_every_run(four_threads):
    rng = np.random.default_rng(1)
    x = sk.from_numpy(rng.standard_normal(N).astype(np.float32))
    index = sk.from_numpy(rng.integers(0, 500, N).astype(np.int32))
    runs = []
    for _ in range(5):
        out = sk.zeros(500, dtype=sk.float32)
        assert ran("private", lambda: sk.launch(scatter, N, inputs=[x, index, out]))
        runs.append(out.numpy().copy())
    want = np.zeros(500)
    np.add.at(want, index.numpy(), x.numpy().astype(np.float64))
    assert all(np.array_equal(r, runs[0]) for r in runs)
    assert np.allclose(runs[0], want, atol=1e-3)


def test_private_copies_start_from_zero_in_every_launch_whatever_the_one_before_left(four_threads):
    # The copies are cleared as they are summed and reused by the next launch: a launch with
    # larger, smaller or differently laid out copies must still start each of them at zero.
    rng = np.random.default_rng(3)
    for size in (1000, 10, 5000, 300, 1000, 7):
        index = sk.from_numpy(rng.integers(0, size, N).astype(np.int32))
        a, b = sk.zeros(size, dtype=sk.int64), sk.zeros(size, dtype=sk.int64)
        assert ran("private", lambda: sk.launch(scatter_twice, N, inputs=[index, a, b]))
        assert np.array_equal(a.numpy(), np.bincount(index.numpy(), minlength=size))
        weights = np.bincount(index.numpy(), weights=np.arange(N), minlength=size).astype(np.int64)
        assert np.array_equal(b.numpy(), weights)
        one = sk.zeros(size, dtype=sk.int64)
        assert ran("private", lambda: sk.launch(scatter_twice, N, inputs=[index, one, one]))
        assert np.array_equal(one.numpy(), np.bincount(index.numpy(), minlength=size) + weights)


def test_the_same_array_through_two_parameters_shares_one_private_copy(four_threads):
    index = sk.from_numpy((np.arange(N) % 10).astype(np.int32))
    both = sk.zeros(10, dtype=sk.int64)
    assert ran("private", lambda: sk.launch(scatter_twice, N, inputs=[index, both, both]))
    want = np.bincount(index.numpy(), minlength=10) + np.bincount(index.numpy(), weights=np.arange(N), minlength=10)
    assert np.array_equal(both.numpy(), want.astype(np.int64))


def test_a_strided_array_is_accumulated_with_atomics(four_threads):
    index = sk.from_numpy((np.arange(N) % 10).astype(np.int32))
    base = np.zeros(40, np.int64)
    a, b = sk.from_numpy(base[::2]), sk.zeros(10, dtype=sk.int64)
    assert ran("atomic", lambda: sk.launch(scatter_twice, N, inputs=[index, a, b]))
    assert np.array_equal(base[:20:2], np.bincount(index.numpy(), minlength=10)) and not base[1::2].any()


def test_partly_overlapping_arrays_are_accumulated_with_atomics(four_threads):
    index = sk.from_numpy((np.arange(N) % 10).astype(np.int32))
    base = np.zeros(15, np.int64)
    a, b = sk.from_numpy(base[0:10]), sk.from_numpy(base[5:15])
    assert ran("atomic", lambda: sk.launch(scatter_twice, N, inputs=[index, a, b]))
    want = np.zeros(15, np.int64)
    want[0:10] += np.bincount(index.numpy(), minlength=10)
    want[5:15] += np.bincount(index.numpy(), weights=np.arange(N), minlength=10).astype(np.int64)
    assert np.array_equal(base, want)


def test_an_array_far_larger_than_the_grid_is_not_copied(four_threads):
    n, size = 20_000, 20_000 * 17
    index = sk.from_numpy((np.arange(n) * 17).astype(np.int32))
    a, b = sk.zeros(size, dtype=sk.int64), sk.zeros(size, dtype=sk.int64)
    assert ran("atomic", lambda: sk.launch(scatter_twice, n, inputs=[index, a, b]))
    assert a.numpy().sum() == n and a.numpy()[17 * 5] == 1


def test_a_split_adjoint_gathers_the_gradients_one_thread_gathers(four_threads):
    rng = np.random.default_rng(2)
    index = sk.from_numpy(rng.integers(0, 300, N).astype(np.int32))
    x_np, w_np = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    x, w = sk.from_numpy(x_np, requires_grad=True), sk.from_numpy(w_np)  # w has no gradient to gather
    y = sk.zeros(N, dtype=sk.float32, requires_grad=True)
    y.grad.fill_(1.0)
    assert ran("private", lambda: sk.launch(gather, N, inputs=[x, w, index, y], adjoint=True))
    want = np.bincount(index.numpy(), weights=w_np[index.numpy()].astype(np.float64), minlength=300)
    assert np.allclose(x.grad.numpy(), want, rtol=1e-4, atol=1e-3)


def test_a_grid_below_the_grain_runs_inline(four_threads):
    index = sk.from_numpy(np.zeros(100, np.int32))
    a, b = sk.zeros(1, dtype=sk.int64), sk.zeros(1, dtype=sk.int64)
    assert ran("inline", lambda: sk.launch(scatter_twice, 100, inputs=[index, a, b]))
    assert a.numpy()[0] == 100


def test_a_kernel_adding_only_into_its_own_elements_splits_without_copies(four_threads):
    f = sk.zeros(N, dtype=sk.float32)
    assert ran("split", lambda: sk.launch(own_adds, N, inputs=[f]))
    assert (f.numpy() == 1.0).all()


@sk.kernel
def scatter64(x: sk.array(dtype=sk.float64), index: sk.array(dtype=sk.int32), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    out[index[i]] += x[i] * x[i]


def test_a_tangent_launch_of_a_scatter_accumulates_values_and_tangents_privately(four_threads):
    # forward mode adds into the tangent buffer where the forward adds into the array, so both get copies
    rng = np.random.default_rng(1)
    idx = rng.integers(0, 1000, N).astype(np.int32)
    x_np, dx = rng.standard_normal(N), rng.standard_normal(N)
    x, index, out = sk.array(x_np, dtype=sk.float64), sk.from_numpy(idx), sk.zeros(1000, dtype=sk.float64)
    fwd = sk.autograd.JVP({x: dx})
    with fwd:
        sk.launch(scatter64, N, inputs=[x, index, out])  # compiles the tangent entry
        out.zero_()
        assert ran("private", lambda: sk.launch(scatter64, N, inputs=[x, index, out]))
    np.testing.assert_allclose(out.numpy(), np.bincount(idx, weights=x_np * x_np, minlength=1000), rtol=1e-12)
    np.testing.assert_allclose(fwd.tangent(out).numpy(), np.bincount(idx, weights=2 * x_np * dx, minlength=1000),
                               rtol=1e-12, atol=1e-12)
