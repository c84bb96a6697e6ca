"""Tangent launches of kernels reading struct-field arrays: the constant-fields entry (those
arrays without tangents) and the general one (a field with a tangent) against reverse mode."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.struct
class Coeffs:
    k: sk.array(dtype=F64)
    c: sk.array(dtype=F64)


@sk.kernel
def blend(x: sk.array(dtype=F64), p: Coeffs, n: int, y: sk.array(dtype=F64)):
    i = sk.tid()
    a = x[i]
    k = p.k[i]
    s = k * 2.0 - 1.0
    for j in range(n):
        s = s * 0.5 + a * k - p.c[i] / (a + 2.0)
    y[i] = s * s + sk.sin(k) * a - k / (1.0 + a * a)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = sk.array(rng.uniform(0.2, 1.0, 5), dtype=F64)
    p = Coeffs(k=sk.array(rng.uniform(-1, 1, 5), dtype=F64), c=sk.array(rng.uniform(-1, 1, 5), dtype=F64))
    return x, p, rng


@pytest.mark.parametrize("along", ["x", "k", "x and c"])
def test_jvp_matches_central_differences_with_and_without_field_tangents(along):
    x, p, rng = inputs()
    y = sk.zeros(5, dtype=F64)
    wrt = {"x": [x], "k": [p.k], "x and c": [x, p.c]}[along]
    vs = [rng.standard_normal(5) for _ in wrt]

    def run(*_):
        sk.launch(blend, 5, inputs=[x, p, 3], outputs=[y])
        return y
    _, t = sk.autograd.jvp(run, wrt, vs)
    tangent = t.numpy().copy()
    base, h, ys = [a.numpy().copy() for a in wrt], 1e-6, []
    for sign in (1.0, -1.0):
        for a, b, v in zip(wrt, base, vs):
            a.assign(b + sign * h * v)
        ys.append(run().numpy().copy())
    np.testing.assert_allclose(tangent, (ys[0] - ys[1]) / (2 * h), rtol=1e-7, atol=1e-9)


def test_jvp_along_the_direct_input_matches_the_reverse_jacobian():
    x, p, rng = inputs(2)
    y = sk.zeros(5, dtype=F64)
    J = sk.autograd.jacobian(blend, 5, inputs=[x, p, 3], outputs=[y], mode="reverse")
    v = rng.standard_normal(5)
    _, t = sk.autograd.jvp(lambda x: (sk.launch(blend, 5, inputs=[x, p, 3], outputs=[y]), y)[1], [x], [v])
    np.testing.assert_allclose(t.numpy(), J[(0, 0)] @ v, rtol=1e-12, atol=1e-12)


def test_the_constant_fields_entry_runs_only_while_no_field_has_a_tangent(device):
    if device != "cpu":
        pytest.skip("the constant-fields entry is the CPU's")
    x, p, rng = inputs(1)
    y = sk.zeros(5, dtype=F64)
    plan = blend._plan[sk.config.mode]
    ran = []
    run = plan.run
    try:
        plan.run = lambda addr: (ran.append(addr.value), run(addr))[1]
        with sk.autograd.JVP({x: np.ones(5)}):
            sk.launch(blend, 5, inputs=[x, p, 2], outputs=[y])
        with sk.autograd.JVP({x: np.ones(5), p.k: np.ones(5)}):
            sk.launch(blend, 5, inputs=[x, p, 2], outputs=[y])
    finally:
        plan.run = run
    tp = plan._jvp_plan
    assert ran == [tp.job_c.value, tp.job.value]
