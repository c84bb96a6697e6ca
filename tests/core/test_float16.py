"""``sk.float16`` and its vectors, matrices and quats (Warp's vec3h, mat22h, quath): IEEE half
storage, float32 arithmetic, every operation rounded back to half."""

from typing import Any

import numpy as np
import pytest

import simkit as sk

H = sk.float16
V3H, M22H, QH = sk.vector(3, H), sk.matrix((2, 2), H), sk.quat_of(H)


@sk.kernel
def round_trip(x: sk.array(dtype=float), h: sk.array(dtype=H), back: sk.array(dtype=float)):
    i = sk.tid()
    h[i] = sk.float16(x[i])
    back[i] = float(h[i])


@sk.kernel
def mixed_math(x: sk.array(dtype=Any), v: sk.array(dtype=Any), m: sk.array(dtype=Any), q: sk.array(dtype=Any),
               s: Any, out: sk.array(dtype=Any), w: sk.array(dtype=Any)):
    i = sk.tid()
    a = x[i] * s + 0.5
    b = sk.sin(a) + sk.sqrt(sk.abs(a)) - sk.exp(-a) + sk.max(a, type(a)(1.0))
    u = sk.normalize(v[i]) * b + sk.cross(v[i], sk.quat_rotate(q[i], v[i]))
    out[i] = b + sk.determinant(m[i] * sk.transpose(m[i])) + sk.length(u) + 2.0 * a
    w[i] = u


@sk.kernel
def gather_and_max(x: sk.array(dtype=H), idx: sk.array(dtype=int), y: sk.array(dtype=H), top: sk.array(dtype=H)):
    i = sk.tid()
    y[i] = x[idx[i]] * sk.float16(2.0)
    sk.atomic_max(top, 0, x[i])


@sk.struct
class HalfPair:
    a: sk.float16
    b: sk.vec3h


@sk.kernel
def from_struct(p: HalfPair, s: sk.float16, out: sk.array(dtype=H)):
    out[0] = p.a + p.b[1] * s


def _inputs():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(8, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return (rng.uniform(0.1, 1, 8), rng.uniform(0.1, 1, (8, 3)), rng.uniform(0.1, 1, (8, 2, 2)), q)


def _run(F, grad=False):
    x, v, m, q = _inputs()
    V, M, Q = sk.vector(3, F), sk.matrix((2, 2), F), sk.quat_of(F)
    np_f = F.np_dtype
    ins = [sk.array(x.astype(np_f), dtype=F, requires_grad=grad), sk.array(v.astype(np_f), dtype=V, requires_grad=grad),
           sk.array(m.astype(np_f), dtype=M), sk.array(q.astype(np_f), dtype=Q)]
    out, w = sk.zeros(8, dtype=F, requires_grad=grad), sk.zeros(8, dtype=V, requires_grad=grad)
    with sk.Tape() as tape:
        sk.launch(mixed_math, 8, inputs=[*ins, F(1.5), out, w])
    if grad:
        tape.backward(grads={out: np.ones(8, np_f)})
        return ins[0].grad.numpy(), ins[1].grad.numpy()
    return out.numpy(), w.numpy()


def test_storing_rounds_to_the_nearest_half_as_numpy_does_and_loading_is_exact():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(scale=s, size=2000) for s in (1e-7, 1e-5, 1e-3, 1.0, 1e3, 3e4)] +
                       [[0.0, -0.0, 65504.0, 65519.9, 65520.0, 1e6, -1e6, np.inf, -np.inf, np.nan, 2.0**-24,
                         2.0**-25, 1.5 * 2.0**-25, 2.0**-14, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11]]).astype(np.float32)
    h, back = sk.zeros(len(x), dtype=H), sk.zeros(len(x))
    sk.launch(round_trip, len(x), inputs=[sk.array(x), h, back])
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(h.numpy().view(np.uint16)[~np.isnan(x)], want.view(np.uint16)[~np.isnan(x)])
    assert np.isnan(h.numpy()[np.isnan(x)]).all()
    np.testing.assert_array_equal(back.numpy(), want.astype(np.float32))


def test_float16_math_follows_float64_to_half_precision():
    out, w = _run(H)
    assert out.dtype == np.float16 and w.dtype == np.float16
    ref_out, ref_w = _run(sk.float64)
    np.testing.assert_allclose(out, ref_out, rtol=1e-2)
    np.testing.assert_allclose(w, ref_w, rtol=1e-2, atol=1e-2)


def test_float16_gradients_follow_float64_to_half_precision():
    gx, gv = _run(H, grad=True)
    rx, rv = _run(sk.float64, grad=True)
    np.testing.assert_allclose(gx, rx, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(gv, rv, rtol=2e-2, atol=3e-2)


def test_atomics_and_scattered_gradients_on_float16_arrays():
    x = sk.array(np.array([0.5, -1.25, 3.0, 2.0], np.float16), requires_grad=True)
    y, top = sk.zeros(4, dtype=H, requires_grad=True), sk.full(1, -10.0, dtype=H)
    with sk.Tape() as tape:
        sk.launch(gather_and_max, 4, inputs=[x, sk.array([2, 2, 0, 3], dtype=int), y, top])
    tape.backward(grads={y: np.ones(4, np.float16)})
    np.testing.assert_array_equal(y.numpy(), [6.0, 6.0, 1.0, 4.0])
    assert top.numpy()[0] == 3.0
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 4.0, 2.0])


def test_float16_struct_fields_and_scalar_parameters_reach_the_kernel():
    p = HalfPair(1.5, sk.vec3h(1.0, 2.0, 3.0))
    out = sk.zeros(1, dtype=H)
    sk.launch(from_struct, 1, inputs=[p, 0.25, out])
    assert out.numpy()[0] == 2.0


def test_half_types_have_warps_names_and_numpy_dtype():
    assert sk.vec3h is V3H and sk.mat22h is M22H and sk.quath is QH and sk.transformh is sk.transform_of(H)
    assert sk.dtype_from_numpy(np.float16) is H and sk.dtype_to_numpy(H) is np.float16
    assert sk.array(np.ones(2, np.float16)).dtype is H
    assert sk.vec3h(1.0, 2.0, 3.0).numpy().dtype == np.float16


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_rounds_float16_arithmetic_alike():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def w_chain(x: wp.array(dtype=wp.float16), v: wp.array(dtype=wp.vec3h), out: wp.array(dtype=wp.float16)):
        i = wp.tid()
        a = x[i] * wp.float16(1.5) + wp.float16(0.5)
        out[i] = a * a - wp.dot(v[i], v[i]) / a

    @sk.kernel
    def s_chain(x: sk.array(dtype=sk.float16), v: sk.array(dtype=sk.vec3h), out: sk.array(dtype=sk.float16)):
        i = sk.tid()
        a = x[i] * sk.float16(1.5) + sk.float16(0.5)
        out[i] = a * a - sk.dot(v[i], v[i]) / a

    x, v, _m, _q = _inputs()
    x, v = x.astype(np.float16), v.astype(np.float16)
    theirs = wp.zeros(8, dtype=wp.float16, device="cpu")
    wp.launch(w_chain, 8, inputs=[wp.array(x, dtype=wp.float16, device="cpu"),
                                  wp.array(v, dtype=wp.vec3h, device="cpu"), theirs], device="cpu")
    ours = sk.zeros(8, dtype=sk.float16)
    sk.launch(s_chain, 8, inputs=[sk.array(x), sk.array(v, dtype=sk.vec3h), ours])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_the_half_conversions_stay_out_of_line_on_the_cpu():
    # inlined at every operation of a half kernel, their branches made g++ -O3 take 43 s on one
    # matrix kernel (its float32 twin 0.7 s); out of line, 1.6 s
    import os

    from simkit.core import codegen
    base = open(os.path.join(os.path.dirname(codegen.__file__), "native", "base.h")).read()
    assert "#define SK_HALF_CONV inline __attribute__((noinline))" in base    # g++
    assert "SK_HALF_CONV uint16_t half_bits_(float f)" in base
    assert "SK_HALF_CONV float half_to_float_(uint16_t h)" in base
