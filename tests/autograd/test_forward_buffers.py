"""Forward mode's per-kernel launch plans and tangent buffers (simkit.autograd.forward): what a
tangent launch keeps from one launch to the next must never change what it computes."""

import gc

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.kernel
def triple(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = 3.0 * x[i]


@sk.kernel
def grow(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = 1.5 * x[i] + x[i] * x[i]


@sk.struct
class Gains:
    k: sk.array(dtype=F64)


@sk.kernel
def gained(x: sk.array(dtype=F64), g: Gains, y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = g.k[i] * x[i]


@sk.struct
class Out:
    y: sk.array(dtype=F64)


@sk.kernel
def into_field(x: sk.array(dtype=F64), o: Out):
    i = sk.tid()
    o.y[i] = x[i] * x[i]


def rollout(x, steps):
    """A rollout's pattern: every step writes a new array (a new tangent buffer each)."""
    for _ in range(steps):
        y = sk.zeros(x.shape[0], dtype=F64)
        sk.launch(grow, x.shape[0], inputs=[x], outputs=[y])
        x = y
    return x


def test_a_partial_write_leaves_the_rest_of_the_tangent_zero_in_reused_memory():
    n = 64
    # dirty the memory the next buffers may come from: many tangents of large values, then freed
    big = sk.array(np.full(n, 1e6), dtype=F64)
    sk.autograd.jvp(lambda x: rollout(x, 40), [big], [np.full(n, 1e6)])
    gc.collect()
    x = sk.array(np.linspace(0.1, 1.0, n), dtype=F64)
    ys = [sk.zeros(n, dtype=F64) for _ in range(30)]

    def half_writes(x):
        for y in ys:
            sk.launch(triple, n // 2, inputs=[x], outputs=[y])  # writes y[:n/2] only
        return ys

    _, tans = sk.autograd.jvp(half_writes, [x], [np.ones(n)])
    for t in tans:
        assert np.array_equal(t.numpy()[: n // 2], np.full(n // 2, 3.0))
        assert np.array_equal(t.numpy()[n // 2:], np.zeros(n // 2))


def test_two_jvps_of_a_rollout_give_identical_tangents_equal_to_the_chain_rule():
    x0 = np.linspace(-0.3, 0.2, 50)
    v = np.cos(np.arange(50.0))
    runs = [sk.autograd.jvp(lambda x: rollout(x, 12), [sk.array(x0, dtype=F64)], [v])[1].numpy() for _ in range(2)]
    assert np.array_equal(runs[0], runs[1])
    x, t = x0.copy(), v.copy()
    for _ in range(12):
        x, t = 1.5 * x + x * x, (1.5 + 2.0 * x) * t
    np.testing.assert_allclose(runs[0], t, rtol=1e-12)


def make_kernel(power: int):
    """Two kernels of one name and signature, different bodies (as a redefinition in a notebook)."""
    if power == 1:
        @sk.kernel
        def redefined(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
            i = sk.tid()
            y[i] = 2.0 * x[i]
    else:
        @sk.kernel
        def redefined(x: sk.array(dtype=F64), y: sk.array(dtype=F64)):
            i = sk.tid()
            y[i] = x[i] * x[i] * x[i]
    return redefined


def test_a_redefined_kernel_launches_its_own_tangent_not_the_cached_one():
    x = sk.array([1.0, 2.0], dtype=F64)
    linear, cubic = make_kernel(1), make_kernel(3)
    for kernel, expected in ((linear, [2.0, 2.0]), (cubic, [3.0, 12.0]), (linear, [2.0, 2.0])):
        y = sk.zeros(2, dtype=F64)
        _, t = sk.autograd.jvp(lambda x: (sk.launch(kernel, 2, inputs=[x], outputs=[y]), y)[1], [x], [np.ones(2)])
        assert t.numpy().tolist() == expected


def test_a_struct_field_replaced_between_launches_brings_its_own_tangent():
    x = sk.array([1.0, 2.0], dtype=F64)
    k1, k2 = sk.array([3.0, 4.0], dtype=F64), sk.array([5.0, 6.0], dtype=F64)
    g = Gains(k=k1)
    y1, y2 = sk.zeros(2, dtype=F64), sk.zeros(2, dtype=F64)
    with sk.autograd.JVP({k1: [1.0, 1.0]}) as fwd:
        sk.launch(gained, 2, inputs=[x, g], outputs=[y1])
        g.k = k2  # same kernel, same plan, another array in the field: it has no tangent
        sk.launch(gained, 2, inputs=[x, g], outputs=[y2])
        g.k = k1
        sk.launch(gained, 2, inputs=[y1, g], outputs=[y2])  # y2 = k1 * k1 * x
    assert fwd.tangent(y1).numpy().tolist() == [1.0, 2.0]
    assert fwd.tangent(y2).numpy().tolist() == [2 * 3.0 * 1.0, 2 * 4.0 * 2.0]


def test_an_array_written_through_a_struct_field_gets_a_tangent():
    x = sk.array([1.0, 2.0], dtype=F64)
    o = Out(y=sk.zeros(2, dtype=F64))
    with sk.autograd.JVP({x: [1.0, -1.0]}) as fwd:
        sk.launch(into_field, 2, inputs=[x, o])
    assert fwd.tangent(o.y).numpy().tolist() == [2.0, -4.0]


def test_one_array_in_a_read_and_a_written_slot_has_one_tangent():
    z = sk.array([1.0, 2.0], dtype=F64)
    with sk.autograd.JVP({z: [1.0, 0.5]}) as fwd:
        sk.launch(triple, 2, inputs=[z], outputs=[z])
    assert fwd.tangent(z).numpy().tolist() == [3.0, 1.5]
    w = sk.array([1.0, 2.0], dtype=F64)
    with sk.autograd.JVP() as fwd:
        sk.launch(triple, 2, inputs=[w], outputs=[w])
    assert fwd.tangent(w).numpy().tolist() == [0.0, 0.0]


def test_large_and_strided_arrays_get_tangents_laid_out_like_them(device):
    if device != "cpu":
        pytest.skip("host buffers: chunk carving and numpy strides are the CPU's")
    n = 20000  # 160 kB: larger than the carved buffers
    x = sk.array(np.linspace(0.0, 1.0, n), dtype=F64)
    y = sk.zeros(n, dtype=F64)
    base = np.zeros(2 * n)
    strided = sk.from_numpy(base[::2])
    with sk.autograd.JVP({x: np.ones(n)}) as fwd:
        sk.launch(triple, n, inputs=[x], outputs=[y])
        sk.launch(triple, n, inputs=[y], outputs=[strided])
    assert np.array_equal(fwd.tangent(y).numpy(), np.full(n, 3.0))
    assert np.array_equal(fwd.tangent(strided).numpy(), np.full(n, 9.0))
    np.testing.assert_allclose(base[::2], 9.0 * np.linspace(0.0, 1.0, n), rtol=1e-15)


def test_a_tangent_kept_from_an_ended_jvp_is_not_overwritten_by_later_ones():
    x = sk.array(np.linspace(0.1, 1.0, 16), dtype=F64)
    y = sk.zeros(16, dtype=F64)
    with sk.autograd.JVP({x: np.ones(16)}) as fwd:
        sk.launch(triple, 16, inputs=[x], outputs=[y])
    kept = fwd.tangent(y)  # a view of the JVP's buffer: it must outlive the JVP untouched
    del fwd
    gc.collect()
    for _ in range(3):  # later JVPs allocate buffers of the same size
        sk.autograd.jvp(lambda x: rollout(x, 20), [x], [np.full(16, 7.0)])
    assert np.array_equal(kept.numpy(), np.full(16, 3.0))


@sk.kernel
def gather(x: sk.array(dtype=F64), idx: sk.array(dtype=sk.int32), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = 2.0 * x[idx[i]]


def test_an_index_error_in_a_tangent_launch_raises_naming_the_kernel(monkeypatch):
    monkeypatch.setattr(sk.config, "mode", "debug")
    x, y = sk.array([1.0, 2.0], dtype=F64), sk.zeros(2, dtype=F64)
    idx = sk.array([0, 5], dtype=sk.int32)
    with sk.autograd.JVP({x: [1.0, 1.0]}), pytest.raises(IndexError, match="gather"):
        sk.launch(gather, 2, inputs=[x, idx], outputs=[y])
    idx = sk.array([1, 0], dtype=sk.int32)  # the record was cleared: the next launch runs
    with sk.autograd.JVP({x: [1.0, 3.0]}) as fwd:
        sk.launch(gather, 2, inputs=[x, idx], outputs=[y])
    assert fwd.tangent(y).numpy().tolist() == [6.0, 2.0]
