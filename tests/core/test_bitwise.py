"""Bitwise operators on integers (& | ^ ~ << >>) and on bools (& | ^): numpy's results,
defined shift counts, and clear errors for what has no meaning."""

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def bitwise_i32(a: sk.array(dtype=sk.int32), b: sk.array(dtype=sk.int32), out: sk.array(dtype=sk.int32, ndim=2)):
    i = sk.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x & y
    out[i, 1] = x | y
    out[i, 2] = x ^ y
    out[i, 3] = ~x
    out[i, 4] = x << (y & 7)
    out[i, 5] = x >> (y & 7)
    out[i, 6] = (x ^ 0x5A5A) & 255
    z = x
    z <<= 2
    z |= 1
    out[i, 7] = z


def test_integer_bitwise_operators_match_numpy():
    rng = np.random.default_rng(4)
    a = rng.integers(-2**20, 2**20, 64).astype(np.int32)
    b = rng.integers(0, 2**20, 64).astype(np.int32)
    out = sk.zeros((64, 8), dtype=sk.int32)
    sk.launch(bitwise_i32, 64, inputs=[sk.array(a), sk.array(b), out])
    s = b & 7
    want = np.stack([a & b, a | b, a ^ b, ~a, a << s, a >> s, (a ^ 0x5A5A) & 255, (a << 2) | 1], axis=1)
    np.testing.assert_array_equal(out.numpy(), want)


@sk.kernel
def shifts(a: sk.array(dtype=sk.int64), n: sk.array(dtype=sk.int64), out: sk.array(dtype=sk.int64, ndim=2)):
    i = sk.tid()
    out[i, 0] = a[i] << n[i]
    out[i, 1] = a[i] >> n[i]


def test_shift_counts_outside_the_bit_width_are_defined():
    a = np.array([5, -5, 5, -5, 1, 1], dtype=np.int64)
    n = np.array([64, 64, -1, -1, 63, 0], dtype=np.int64)
    out = sk.zeros((6, 2), dtype=sk.int64)
    sk.launch(shifts, 6, inputs=[sk.array(a), sk.array(n), out])
    assert out.numpy().tolist() == [[0, 0], [0, -1], [0, 0], [0, -1], [-2**63, 0], [1, 1]]


@sk.kernel
def unsigned_ops(a: sk.array(dtype=sk.uint32), out: sk.array(dtype=sk.uint32, ndim=2)):
    i = sk.tid()
    out[i, 0] = ~a[i]
    out[i, 1] = a[i] >> sk.uint32(31)


def test_unsigned_integers_invert_and_shift_logically():
    a = np.array([0, 1, 0x80000000], dtype=np.uint32)
    out = sk.zeros((3, 2), dtype=sk.uint32)
    sk.launch(unsigned_ops, 3, inputs=[sk.array(a), out])
    np.testing.assert_array_equal(out.numpy(), np.stack([~a, a >> 31], axis=1))


@sk.kernel
def bool_ops(a: sk.array(dtype=float), out: sk.array(dtype=sk.int32, ndim=2)):
    i = sk.tid()
    p = a[i] > 0.0
    q = a[i] < 2.0
    out[i, 0] = sk.select(p & q, 0, 1)
    out[i, 1] = sk.select(p | q, 0, 1)
    out[i, 2] = sk.select(p ^ q, 0, 1)


def test_and_or_xor_on_bools_are_logical():
    a = np.array([-1.0, 1.0, 3.0], dtype=np.float32)
    out = sk.zeros((3, 3), dtype=sk.int32)
    sk.launch(bool_ops, 3, inputs=[sk.array(a), out])
    p, q = a > 0, a < 2
    np.testing.assert_array_equal(out.numpy(), np.stack([p & q, p | q, p ^ q], axis=1).astype(np.int32))


def test_bitwise_operators_on_floats_are_a_compile_error():
    @sk.kernel
    def on_floats(a: sk.array(dtype=float)):
        i = sk.tid()
        a[i] = a[i] & 1.0

    with pytest.raises(sk.CompileError, match=r"operator '&' does not accept \(float32, float literal\)"):
        sk.launch(on_floats, 1, inputs=[sk.zeros(1)])


def test_invert_of_a_bool_is_a_compile_error_pointing_to_not():
    @sk.kernel
    def invert_bool(a: sk.array(dtype=float)):
        i = sk.tid()
        if ~(a[i] > 0.0):
            a[i] = 1.0

    with pytest.raises(sk.CompileError, match="use 'not'"):
        sk.launch(invert_bool, 1, inputs=[sk.zeros(1)])
