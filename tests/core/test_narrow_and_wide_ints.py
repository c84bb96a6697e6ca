"""The integer types int8, uint8, int16, uint16 and uint64 and their vectors (Warp's vec3b, vec3ub,
vec3s, vec3us, vec3ul): arithmetic wraps around in the type, as numpy's does."""

import numpy as np
import pytest

import simkit as sk

NARROW = [(sk.int8, np.int8), (sk.uint8, np.uint8), (sk.int16, np.int16), (sk.uint16, np.uint16)]


@sk.kernel
def narrow_arith(a: sk.array(dtype=sk.int8), b: sk.array(dtype=sk.uint8), c: sk.array(dtype=sk.int16),
                 d: sk.array(dtype=sk.uint16), out: sk.array(dtype=sk.int64)):
    i = sk.tid()
    a[i] = a[i] + sk.int8(100)
    b[i] = b[i] * sk.uint8(3)
    c[i] = c[i] * 300 - 5        # literals take the array's type
    d[i] = d[i] // sk.uint16(2) + (d[i] & sk.uint16(1))
    out[i] = sk.int64(a[i]) + sk.int64(b[i]) + sk.int64(c[i]) + sk.int64(d[i])


@sk.kernel
def wide_arith(e: sk.array(dtype=sk.uint64), total: sk.array(dtype=sk.uint64), halves: sk.array(dtype=sk.float64)):
    i = sk.tid()
    e[i] = e[i] * sk.uint64(2) + sk.uint64(1)
    sk.atomic_add(total, 0, e[i])
    halves[i] = sk.float64(e[i] >> sk.uint64(1))


@sk.kernel
def int_vectors(v: sk.array(dtype=sk.vec3b), w: sk.array(dtype=sk.vec3ul), s: sk.array(dtype=sk.vec2us),
                dots: sk.array(dtype=sk.int8)):
    i = sk.tid()
    v[i] = v[i] + sk.vec3b(1, 2, 3)
    w[i] = w[i] * sk.uint64(2)
    s[i] = sk.max(s[i], sk.vec2us(sk.uint16(7), sk.uint16(70)))
    dots[i] = sk.dot(v[i], v[i])
    sk.expect_eq(v[i][0], sk.int8(2))


def _narrow_inputs():
    raw = np.array([100, -5, 127, 40000])
    return [raw.astype(n) for _, n in NARROW]


def _run_narrow(a, b, c, d):
    arrs = [sk.array(x, dtype=t) for x, (t, _) in zip((a, b, c, d), NARROW)]
    out = sk.zeros(len(a), dtype=sk.int64)
    sk.launch(narrow_arith, len(a), inputs=[*arrs, out])
    return [x.numpy() for x in arrs], out.numpy()


def test_narrow_integers_wrap_around_as_numpy_does():
    a, b, c, d = _narrow_inputs()
    (ga, gb, gc, gd), out = _run_narrow(a, b, c, d)
    with np.errstate(over="ignore"):
        wa, wb = a + np.int8(100), b * np.uint8(3)
        wc, wd = c * np.int16(300) - np.int16(5), d // np.uint16(2) + (d & np.uint16(1))
    for got, want in ((ga, wa), (gb, wb), (gc, wc), (gd, wd)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(out, wa.astype(np.int64) + wb + wc + wd)


def test_uint64_holds_values_above_the_int64_range_and_adds_atomically():
    e = sk.array(np.array([2**62 + 3, 5, 2**63 + 1], np.uint64), dtype=sk.uint64)
    total, halves = sk.zeros(1, dtype=sk.uint64), sk.zeros(3, dtype=sk.float64)
    sk.launch(wide_arith, 3, inputs=[e, total, halves])
    want = np.array([2**63 + 7, 11, 3], np.uint64)  # 2 (2^63 + 1) + 1 wraps to 3
    np.testing.assert_array_equal(e.numpy(), want)
    assert total.numpy()[0] == np.uint64(2**63 + 21)
    np.testing.assert_array_equal(halves.numpy(), (want >> np.uint64(1)).astype(np.float64))


def test_integer_vectors_compute_component_wise_in_their_type(capfd):
    v = sk.array(np.array([[1, 2, 3], [120, 0, -1]], np.int8), dtype=sk.vec3b)
    w = sk.array(np.array([[1, 2, 2**63], [0, 0, 1]], np.uint64), dtype=sk.vec3ul)
    s = sk.array(np.array([[9, 9], [65535, 0]], np.uint16), dtype=sk.vec2us)
    dots = sk.zeros(2, dtype=sk.int8)
    sk.launch(int_vectors, 2, inputs=[v, w, s, dots])
    np.testing.assert_array_equal(v.numpy(), [[2, 4, 6], [121, 2, 2]])
    np.testing.assert_array_equal(w.numpy(), np.array([[2, 4, 0], [0, 0, 2]], np.uint64))
    np.testing.assert_array_equal(s.numpy(), [[9, 70], [65535, 70]])
    np.testing.assert_array_equal(dots.numpy(), np.array([56, 121 * 121 + 8], np.int64).astype(np.int8))
    assert "Error, expect_eq() failed:\n\t Expected: 2\n\t Actual: 121\n" in capfd.readouterr().out


def test_the_integer_vectors_have_warps_names():
    assert sk.vec3b is sk.vector(3, sk.int8) and sk.vec2ub is sk.vector(2, sk.uint8)
    assert sk.vec4s is sk.vector(4, sk.int16) and sk.vec3us is sk.vector(3, sk.uint16)
    assert sk.vec3l is sk.vector(3, sk.int64) and sk.vec3ui is sk.vector(3, sk.uint32)
    assert sk.vec3ul is sk.vector(3, sk.uint64)


def test_numpy_data_of_the_new_types_makes_arrays_of_them():
    for t, n in [*NARROW, (sk.uint64, np.uint64)]:
        assert sk.array(np.zeros(2, n)).dtype is t
        assert sk.dtype_from_numpy(n) is t and sk.dtype_to_numpy(t) is n


@pytest.mark.parametrize("t", [sk.int8, sk.uint16], ids=["int8", "uint16"])
def test_atomics_on_8_and_16_bit_arrays_are_refused(t):
    @sk.kernel
    def count(a: sk.array(dtype=t)):
        sk.atomic_add(a, 0, t(1))

    with pytest.raises(sk.CompileError, match=r"atomic_add on an array of (int8|uint16): GPUs have no 8- or 16-bit "
                                              r"atomics; use an array of int32 or uint32"):
        sk.launch(count, 1, inputs=[sk.zeros(1, dtype=t)])


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_computes_the_same_integers():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def w_narrow_arith(a: wp.array(dtype=wp.int8), b: wp.array(dtype=wp.uint8), c: wp.array(dtype=wp.int16),
                       d: wp.array(dtype=wp.uint16), out: wp.array(dtype=wp.int64)):
        i = wp.tid()
        a[i] = a[i] + wp.int8(100)
        b[i] = b[i] * wp.uint8(3)
        c[i] = c[i] * wp.int16(300) - wp.int16(5)
        d[i] = d[i] // wp.uint16(2) + (d[i] & wp.uint16(1))
        out[i] = wp.int64(a[i]) + wp.int64(b[i]) + wp.int64(c[i]) + wp.int64(d[i])

    ins = _narrow_inputs()
    warrs = [wp.array(x, dtype=getattr(wp, t.__name__), device="cpu") for x, (t, _) in zip(ins, NARROW)]
    wout = wp.zeros(len(ins[0]), dtype=wp.int64, device="cpu")
    wp.launch(w_narrow_arith, len(ins[0]), inputs=[*warrs, wout], device="cpu")
    ours, out = _run_narrow(*ins)
    for got, theirs in zip(ours, warrs):
        np.testing.assert_array_equal(got, theirs.numpy())
    np.testing.assert_array_equal(out, wout.numpy())
