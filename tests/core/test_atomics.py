"""Atomics stay exact under the multithreaded CPU launch and on the GPU."""

import threading

import numpy as np
import pytest

import simkit as sk
from simkit.core.threads import launch_counts


@sk.kernel
def add_ones(cell: sk.array(dtype=int)):
    sk.atomic_add(cell, 0, 1)


@pytest.fixture(params=[1, 4], ids=["whole-grid", "split-over-4-threads"])
def threads(request):
    """Run on one thread (accumulation without atomics) and split over a pool of 4 (private
    accumulators, or real atomics where a kernel also reads what it adds into; an atomic
    split only happens from 3 threads on, so CI's 2 cores would never exercise it otherwise)."""
    before = sk.get_threads()
    sk.set_threads(request.param, adaptive=False)  # split even on a busy machine: these tests check the split
    yield request.param
    sk.set_threads(before)


def test_a_million_threaded_increments_of_one_int32_cell_are_exact(threads):
    cell = sk.zeros(1, dtype=int)
    sk.launch(add_ones, 1_000_000, inputs=[cell])
    assert cell.numpy()[0] == 1_000_000


@sk.kernel
def add_vectors(total: sk.array(dtype=sk.vec3d), sub: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(total, 0, sk.vec3d(1.0, 0.5, 0.25))
    sk.atomic_sub(sub, 0, sk.float64(0.5))


@sk.kernel
def add_halves(cell: sk.array(dtype=sk.float32)):
    cell[0] += 0.5


def test_small_launches_from_concurrent_python_threads_accumulate_exactly():
    # A grid below the parallel grain runs whole on the calling thread, which accumulates
    # without atomics; the runtime must then never run two launches at once.
    cell = sk.zeros(1, dtype=sk.float32)
    sk.launch(add_halves, 4000, inputs=[cell])
    cell.zero_()

    def worker():
        for _ in range(200):
            sk.launch(add_halves, 4000, inputs=[cell])

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cell.numpy()[0] == 4 * 200 * 4000 * 0.5


@sk.kernel
def add_ones_and_peek(cell: sk.array(dtype=int), seen: sk.array(dtype=int)):
    i = sk.tid()
    sk.atomic_add(cell, 0, 1)
    if i == 0:
        seen[0] = cell[1]  # it reads the array it adds into: its adds must be atomic


def test_a_million_threaded_atomic_increments_are_exact(threads):
    cell, seen = sk.zeros(2, dtype=int), sk.zeros(1, dtype=int)
    sk.launch(add_ones_and_peek, 1_000_000, inputs=[cell, seen])
    assert cell.numpy()[0] == 1_000_000


@pytest.mark.cpu_only("which path the CPU thread pool takes")
def test_a_kernel_reading_what_it_adds_into_splits_with_real_atomics(threads):
    cell, seen = sk.zeros(2, dtype=int), sk.zeros(1, dtype=int)
    before = launch_counts()
    sk.launch(add_ones_and_peek, 1_000_000, inputs=[cell, seen])
    path = "atomic" if threads > 2 else "inline"
    assert launch_counts()[path] == before[path] + 1


def test_vector_atomic_add_and_scalar_atomic_sub_in_float64(threads):
    total, sub = sk.zeros(1, dtype=sk.vec3d), sk.zeros(1, dtype=sk.float64)
    sk.launch(add_vectors, 200_000, inputs=[total, sub])
    assert total.numpy()[0].tolist() == [200_000.0, 100_000.0, 50_000.0]
    assert sub.numpy()[0] == -100_000.0


@sk.kernel
def extremes(x: sk.array(dtype=float), lo: sk.array(dtype=float), hi: sk.array(dtype=float),
             ilo: sk.array(dtype=int)):
    i = sk.tid()
    sk.atomic_min(lo, 0, x[i])
    sk.atomic_max(hi, 0, x[i])
    sk.atomic_min(ilo, 0, int(x[i] * 1000.0))


def test_atomic_min_and_max_find_the_extremes():
    x = np.random.default_rng(0).uniform(-5, 5, 100_000).astype(np.float32)
    lo, hi, ilo = sk.full(1, 1e30), sk.full(1, -1e30), sk.full(1, 2**30, dtype=sk.int32)
    sk.launch(extremes, len(x), inputs=[sk.array(x), lo, hi, ilo])
    assert lo.numpy()[0] == x.min() and hi.numpy()[0] == x.max()
    assert ilo.numpy()[0] == int(x.min() * np.float32(1000.0))


@sk.kernel
def claim_slots(counter: sk.array(dtype=int), slots: sk.array(dtype=int)):
    i = sk.tid()
    k = sk.atomic_add(counter, 0, 1)
    slots[k] = i


def test_atomic_add_returns_the_old_value_so_threads_get_unique_slots(threads):
    n = 50_000
    counter, slots = sk.zeros(1, dtype=int), sk.full(n, -1, dtype=sk.int32)
    sk.launch(claim_slots, n, inputs=[counter, slots])
    assert sorted(slots.numpy().tolist()) == list(range(n))


@sk.kernel
def say(x: sk.array(dtype=float)):
    i = sk.tid()
    sk.printf("thread %d sees %.2f\n", i, x[i])


def test_printf_prints_from_kernels(capfd):
    sk.launch(say, 1, inputs=[sk.full(1, 1.5)])
    assert "thread 0 sees 1.50" in capfd.readouterr().out


@sk.kernel
def add_composites(m: sk.array(dtype=sk.mat33), t: sk.array(dtype=sk.transform), q: sk.array(dtype=sk.quat),
                   old: sk.array(dtype=sk.vec3), v: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    c = float(i % 4)
    sk.atomic_add(m, i % 2, sk.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, c))
    sk.atomic_add(t, 0, sk.transform(sk.vec3(1.0, c, 2.0), sk.quat(3.0, 4.0, c, 5.0)))
    sk.atomic_add(q, 0, sk.quat(c, 1.0, 2.0, 3.0))
    old[i] = sk.atomic_add(v, 0, sk.vec3(1.0, 1.0, 1.0))


def test_composite_atomic_adds_are_exact_per_component_and_return_old_values(threads):
    # Matrices, transforms and quaternions accumulate component by component (one plain
    # add per component on one thread, atomics when split); each component returns its old value.
    n = 40_000
    m, t, q = sk.zeros(2, dtype=sk.mat33), sk.zeros(1, dtype=sk.transform), sk.zeros(1, dtype=sk.quat)
    old, v = sk.zeros(n, dtype=sk.vec3), sk.zeros(1, dtype=sk.vec3)
    sk.launch(add_composites, n, inputs=[m, t, q, old, v])
    c_sum = sum(float(i % 4) for i in range(n))
    for slot in (0, 1):
        expect = [k * (n // 2) for k in (1, 2, 3, 4, 5, 6, 7, 8)] + [sum(float(i % 4) for i in range(slot, n, 2))]
        assert m.numpy()[slot].ravel().tolist() == expect
    assert t.numpy()[0].tolist() == [n, c_sum, 2 * n, 3 * n, 4 * n, c_sum, 5 * n]
    assert q.numpy()[0].tolist() == [c_sum, n, 2 * n, 3 * n]
    seen = old.numpy()
    for k in range(3):  # each component's old values: every count once
        assert sorted(seen[:, k].tolist()) == [float(c) for c in range(n)]
