"""svd3, svd2, qr3, eig3, ddot, argmin / argmax and integer matrix products
(simkit/core/linalg_builtins.py): the factors against numpy.linalg on random and on nearly
degenerate matrices in float32 and float64 (and float16), against warp-lang running the kernel
text of linalg_kernels.py, the adjoints and tangents against central differences on
well-separated spectra, and the errors of wrong calls."""

import numpy as np
import pytest

import simkit as sk
from simkit.core.linalg_builtins import ENTRIES
from warp_twin import import_as_warp  # tests/core is on sys.path

import linalg_kernels as S  # tests/core is on sys.path (pytest prepends it)

pytestmark = pytest.mark.not_on_fake_driver("its numerics are the CPU run's; the PTX walk compiles every kernel here")

N = 24
TOL = {sk.float32: 1e-5, sk.float64: 1e-12}


def _decompose3_kernel(F):
    """decompose3 of linalg_kernels.py for another float type (that file is float64, as Warp's twin)."""
    M3, V3 = sk.matrix((3, 3), F), sk.vector(3, F)

    @sk.kernel
    def decompose3_of(a: sk.array(dtype=M3), u: sk.array(dtype=M3), sigma: sk.array(dtype=V3), v: sk.array(dtype=M3),
                      q: sk.array(dtype=M3), r: sk.array(dtype=M3), eq: sk.array(dtype=M3), ed: sk.array(dtype=V3)):
        i = sk.tid()
        U, s, V = sk.svd3(a[i])
        u[i] = U
        sigma[i] = s
        v[i] = V
        Q, R = sk.qr3(a[i])
        q[i] = Q
        r[i] = R
        E, d = sk.eig3(a[i])
        eq[i] = E
        ed[i] = d
    return decompose3_of


def _decompose2_kernel(F):
    M2, V2 = sk.matrix((2, 2), F), sk.vector(2, F)

    @sk.kernel
    def decompose2_of(a: sk.array(dtype=M2), u: sk.array(dtype=M2), sigma: sk.array(dtype=V2), v: sk.array(dtype=M2)):
        i = sk.tid()
        U, s, V = sk.svd2(a[i])
        u[i] = U
        sigma[i] = s
        v[i] = V
    return decompose2_of


KERNELS3 = {sk.float64: S.decompose3, sk.float32: _decompose3_kernel(sk.float32),
            sk.float16: _decompose3_kernel(sk.float16)}
KERNELS2 = {sk.float64: S.decompose2, sk.float32: _decompose2_kernel(sk.float32)}
OUTS3 = ("U", "sigma", "V", "Q", "R", "E", "d")
OUTS2 = ("U", "sigma", "V")


def _run(kernel, a, F, names, n_rows, tangent=None):
    """The outputs by name of one launch on the matrices a; with ``tangent`` (a direction of a),
    their tangents instead."""
    M, V = sk.matrix((n_rows, n_rows), F), sk.vector(n_rows, F)
    x = sk.array(a, dtype=M)
    outs = [sk.zeros(len(a), dtype=V if name in ("sigma", "d") else M) for name in names]
    if tangent is None:
        sk.launch(kernel, len(a), inputs=[x, *outs])
        return {name: o.numpy().astype(np.float64) for name, o in zip(names, outs)}
    with sk.autograd.JVP({x: tangent}) as fwd:
        sk.launch(kernel, len(a), inputs=[x, *outs])
    return {name: fwd.tangent(o).numpy() for name, o in zip(names, outs)}


def _adjoint(kernel, a, names, n_rows, seeds):
    """d(sum over outputs of seed * output)/da, float64."""
    M, V = sk.matrix((n_rows, n_rows), sk.float64), sk.vector(n_rows, sk.float64)
    x = sk.array(a, dtype=M, requires_grad=True)
    outs = [sk.zeros(len(a), dtype=V if name in ("sigma", "d") else M, requires_grad=True) for name in names]
    sk.launch(kernel, len(a), inputs=[x, *outs])
    for name, o in zip(names, outs):
        o.grad.assign(seeds[name])
    sk.launch(kernel, len(a), inputs=[x, *outs], adjoint=True)
    return x.grad.numpy()


def _rotations(rng, n, k):
    q, r = np.linalg.qr(rng.standard_normal((n, k, k)))
    q = q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]
    q[np.linalg.det(q) < 0, :, 0] *= -1
    return q


def _with_singular_values(rng, s):
    """Matrices U diag(s) V^T of random rotations, one per row of s."""
    s = np.asarray(s, np.float64)
    u, v = _rotations(rng, len(s), s.shape[1]), _rotations(rng, len(s), s.shape[1])
    return np.einsum("nij,nj,nkj->nik", u, s, v)


def _nearly_degenerate3(rng):
    """Spectra numpy finds hard to pin down too: near repeats, near rank loss, exact repeats, rank 1, zero."""
    s = [[1.0, 1.0 + 1e-7, 1e-3], [1.0, 1e-6, 1e-7], [2.0, 2.0, 2.0], [3.0, 3.0, -1.0], [1.0, 1e-9, -1e-9],
         [5.0, 0.0, 0.0], [1.0, 1.0 - 1e-6, -(1.0 - 2e-6)], [1e-4, 1e-4, 1e-4]]
    a = _with_singular_values(rng, s)
    return np.concatenate([a, np.zeros((1, 3, 3)), np.diag([1.0, -2.0, 3.0])[None], np.eye(3)[None]])


def _check_svd(out, a, tol):
    """Warp's conventions and numpy's singular values: A = U diag(sigma) V^T, U and V rotations, |sigma|
    decreasing, sigma[2] (the last) with det A's sign (3x3), sigma >= 0 (2x2)."""
    u, s, v = out["U"], out["sigma"], out["V"]
    k = a.shape[1]
    scale = np.maximum(1.0, np.abs(a).max(axis=(1, 2)))[:, None, None]
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", u, s, v) / scale, a / scale, atol=tol * 10)
    for m in (u, v):
        np.testing.assert_allclose(np.einsum("nji,njk->nik", m, m), np.broadcast_to(np.eye(k), m.shape), atol=tol * 10)
    np.testing.assert_allclose(np.linalg.det(v), 1.0, atol=tol * 10)
    np.testing.assert_allclose(np.linalg.det(u), 1.0 if k == 3 else np.where(np.linalg.det(a) < 0, -1.0, 1.0),
                               atol=tol * 10)
    want = np.linalg.svd(a, compute_uv=False)
    if k == 3:
        want[:, 2] *= np.where(np.linalg.det(a) < 0, -1.0, 1.0)
    np.testing.assert_allclose(s / scale[:, :, 0], want / scale[:, :, 0], atol=tol * 10)


def _aligned(m, ref):
    """m with each column's sign flipped to agree with ref's."""
    return m * np.where(np.einsum("nij,nij->nj", m, ref) < 0, -1.0, 1.0)[:, None, :]


def _separated(rng, k, n, lo=0.3):
    """Random matrices with singular values at least lo apart and from zero."""
    s = np.sort(rng.uniform(0.2, 3.0, (4 * n, k)), axis=1)[:, ::-1]
    keep = np.all(-np.diff(s, axis=1) > lo, axis=1) & (s[:, -1] > lo)
    return _with_singular_values(rng, s[keep][:n])


@pytest.mark.parametrize("F", [sk.float32, sk.float64])
def test_svd3_of_random_matrices_matches_numpy(F):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((N, 3, 3)).astype(F.np_dtype)
    out = _run(KERNELS3[F], a, F, OUTS3, 3)
    _check_svd(out, a.astype(np.float64), TOL[F])


@pytest.mark.parametrize("F", [sk.float32, sk.float64])
def test_svd3_of_nearly_degenerate_matrices_matches_numpy(F):
    a = _nearly_degenerate3(np.random.default_rng(2)).astype(F.np_dtype)
    _check_svd(_run(KERNELS3[F], a, F, OUTS3, 3), a.astype(np.float64), TOL[F])


@pytest.mark.parametrize("F", [sk.float32, sk.float64])
def test_svd3_singular_vectors_match_numpys_up_to_the_sign_of_a_pair(F):
    a = _separated(np.random.default_rng(3), 3, N).astype(F.np_dtype)
    out = _run(KERNELS3[F], a, F, OUTS3, 3)
    u, _s, vt = np.linalg.svd(a.astype(np.float64))
    flip = np.where(np.einsum("nij,nij->nj", out["U"], u) < 0, -1.0, 1.0)[:, None, :]
    np.testing.assert_allclose(out["U"], u * flip, atol=TOL[F] * 10)
    np.testing.assert_allclose(out["V"], np.swapaxes(vt, 1, 2) * flip, atol=TOL[F] * 10)


@pytest.mark.parametrize("F", [sk.float32, sk.float64])
def test_svd2_matches_numpy_with_a_proper_rotation_v(F):
    rng = np.random.default_rng(4)
    a = np.concatenate([rng.standard_normal((N, 2, 2)), _with_singular_values(rng, [[1.0, 1.0 + 1e-7], [1.0, 1e-8],
                                                                                     [2.0, 0.0], [1.0, 1.0]]),
                        np.array([[[0.0, 1.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])]).astype(F.np_dtype)
    _check_svd(_run(KERNELS2[F], a, F, OUTS2, 2), a.astype(np.float64), TOL[F])


def _numpy_qr_in_warps_signs(a):
    q, r = np.linalg.qr(a)
    d = np.where(np.diagonal(r, axis1=1, axis2=2) < 0, -1.0, 1.0)
    q, r = q * d[:, None, :], r * d[:, :, None]
    flip = np.linalg.det(q) < 0
    q[flip, :, 2] *= -1
    r[flip, 2, :] *= -1
    return q, r


@pytest.mark.parametrize("F", [sk.float32, sk.float64])
def test_qr3_matches_numpy_with_a_rotation_q(F):
    rng = np.random.default_rng(5)
    a = np.concatenate([rng.standard_normal((N, 3, 3)), _with_singular_values(rng, [[1.0, 1e-3, 1e-4], [1.0, 1.0, -1e-5]])])
    a = a.astype(F.np_dtype)
    out = _run(KERNELS3[F], a, F, OUTS3, 3)
    q, r = _numpy_qr_in_warps_signs(a.astype(np.float64))
    np.testing.assert_allclose(np.linalg.det(out["Q"]), 1.0, atol=TOL[F] * 10)
    np.testing.assert_array_equal(np.tril(out["R"], -1), 0.0)
    np.testing.assert_allclose(out["Q"] @ out["R"], a, atol=TOL[F] * 10)
    well = np.abs(np.linalg.det(a.astype(np.float64))) > 0.05  # Q is unique where A has full rank
    np.testing.assert_allclose(out["Q"][well], q[well], atol=TOL[F] * 100)
    np.testing.assert_allclose(out["R"], r, atol=TOL[F] * 10)


@pytest.mark.parametrize("F", [sk.float32, sk.float64])
def test_eig3_of_the_symmetric_part_matches_numpys_eigh(F):
    rng = np.random.default_rng(6)
    a = np.concatenate([rng.standard_normal((N, 3, 3)), _nearly_degenerate3(rng)]).astype(F.np_dtype)
    out = _run(KERNELS3[F], a, F, OUTS3, 3)
    sym = (a.astype(np.float64) + np.swapaxes(a, 1, 2)) / 2
    d, q = np.linalg.eigh(sym)
    scale = np.maximum(1.0, np.abs(sym).max(axis=(1, 2)))
    np.testing.assert_allclose(out["d"] / scale[:, None], d / scale[:, None], atol=TOL[F] * 10)
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", out["E"], out["d"], out["E"]) / scale[:, None, None],
                               sym / scale[:, None, None], atol=TOL[F] * 10)
    np.testing.assert_allclose(np.linalg.det(out["E"]), 1.0, atol=TOL[F] * 10)
    gaps = np.diff(d, axis=1).min(axis=1) > 0.05  # eigenvectors are unique (up to sign) where d does not repeat
    np.testing.assert_allclose(_aligned(out["E"][gaps], q[gaps]), q[gaps], atol=TOL[F] * 100)


def test_svd3_of_float16_matrices_is_float32s_rounded_to_half():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((N, 3, 3)).astype(np.float16)
    out = _run(KERNELS3[sk.float16], a, sk.float16, OUTS3, 3)
    _check_svd(out, a.astype(np.float64), 2e-4)


def test_the_out_parameter_form_gives_the_tuple_forms_factors():
    rng = np.random.default_rng(8)
    a3, a2 = rng.standard_normal((N, 3, 3)), rng.standard_normal((N, 2, 2))
    for tuple_form, out_form, a, names, k in ((S.decompose3, S.decompose3_out_params, a3, OUTS3, 3),
                                             (S.decompose2, S.decompose2_out_params, a2, OUTS2, 2)):
        by_tuple, by_out = _run(tuple_form, a, sk.float64, names, k), _run(out_form, a, sk.float64, names, k)
        for name in names:
            np.testing.assert_array_equal(by_out[name], by_tuple[name])


def test_svd3_in_python_gives_the_kernels_factors():
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, -4.0]])
    u, s, v = sk.svd3(sk.mat33d(a))
    k = _run(S.decompose3, a[None], sk.float64, OUTS3, 3)
    # to rounding: the two builds may contract multiply-adds differently
    np.testing.assert_allclose(np.array(u), k["U"][0], atol=1e-15)
    np.testing.assert_allclose(np.array(s), k["sigma"][0], atol=1e-15)
    np.testing.assert_allclose(np.array(v), k["V"][0], atol=1e-15)


# ---------------------------------------------------------------------------
# Against warp-lang, the same kernel text
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def warp_kernels(tmp_path_factory):
    return import_as_warp(S, tmp_path_factory.mktemp("warp_linalg"))


def _launch_both(warp_kernels, name, ins, outs):
    """The outputs of kernel ``name`` of linalg_kernels.py under simkit and under Warp."""
    wp, W = warp_kernels
    got = []
    for M, mod, device in ((sk, S, {}), (wp, W, {"device": "cpu"})):
        xs = [M.array(x, dtype=getattr(M, t), **device) for x, t in ins]
        ys = [M.zeros(len(ins[0][0]), dtype=getattr(M, t), **device) for t in outs]
        M.launch(getattr(mod, name), len(ins[0][0]), inputs=[*xs, *ys], **device)
        got.append([y.numpy().astype(np.float64) for y in ys])
    return got


def test_decompositions_match_warps_up_to_its_documented_freedoms(warp_kernels):
    rng = np.random.default_rng(9)
    q = _rotations(rng, N, 3)  # symmetric (eig3's input), separated eigenvalues and singular values
    a = np.einsum("nij,nj,nkj->nik", q, rng.permuted(np.tile([2.5, -1.4, 0.5], (N, 1)), axis=1), q)
    a[::3] *= -1  # the determinant of either sign: sigma[2] < 0, R[2][2] < 0 half the time
    mine, theirs = _launch_both(warp_kernels, "decompose3", [(a, "mat33d")],
                                ["mat33d", "vec3d", "mat33d", "mat33d", "mat33d", "mat33d", "vec3d"])
    (u, s, v, q, r, e, d), (wu, ws, wv, wq, wr, we, wd) = mine, theirs
    np.testing.assert_allclose(s, ws, atol=1e-9)
    flip = np.where(np.einsum("nij,nij->nj", u, wu) < 0, -1.0, 1.0)[:, None, :]  # a pair (u_j, v_j) may flip
    np.testing.assert_allclose(u, wu * flip, atol=1e-9)
    np.testing.assert_allclose(v, wv * flip, atol=1e-9)
    np.testing.assert_allclose(q, wq, atol=1e-9)
    np.testing.assert_allclose(r, wr, atol=1e-9)
    order = np.argsort(wd, axis=1)  # Warp's eigenvalues come in no particular order
    np.testing.assert_allclose(d, np.take_along_axis(wd, order, axis=1), atol=1e-9)
    sym = (a + np.swapaxes(a, 1, 2)) / 2
    gaps = np.diff(np.linalg.eigvalsh(sym), axis=1).min(axis=1) > 0.05
    we = np.take_along_axis(we, order[:, None, :], axis=2)
    np.testing.assert_allclose(_aligned(e, we)[gaps], we[gaps], atol=1e-8)


def test_svd2_matches_warps(warp_kernels):
    a = _separated(np.random.default_rng(10), 2, N)
    a[::3, 0] *= -1
    (u, s, v), (wu, ws, wv) = _launch_both(warp_kernels, "decompose2", [(a, "mat22d")], ["mat22d", "vec2d", "mat22d"])
    np.testing.assert_allclose(s, ws, atol=1e-9)
    flip = np.where(np.einsum("nij,nij->nj", u, wu) < 0, -1.0, 1.0)[:, None, :]
    np.testing.assert_allclose(u, wu * flip, atol=1e-9)
    np.testing.assert_allclose(v, wv * flip, atol=1e-9)


ARG_CASES = np.array([[1.0, 0.0, 0.0, 1.0], [3.0, 3.0, 1.0, 1.0], [np.nan, 2.0, 1.0, 2.0], [np.nan] * 4,
                      [-np.inf, 0.0, np.inf, np.nan], [0.5, -0.5, 0.25, -0.25]])


def test_argmin_and_argmax_take_the_first_extreme_and_skip_nan():
    lo, hi = sk.zeros(len(ARG_CASES), dtype=sk.uint32), sk.zeros(len(ARG_CASES), dtype=sk.uint32)
    sk.launch(S.extreme_index, len(ARG_CASES), inputs=[sk.array(ARG_CASES, dtype=sk.vec4d), lo, hi])
    assert lo.numpy().tolist() == [1, 2, 2, 0, 0, 1]
    assert hi.numpy().tolist() == [0, 0, 1, 0, 2, 0]


def test_argmin_and_argmax_of_int_vectors_match_numpy():
    x = np.random.default_rng(11).integers(-3, 3, (N, 3)).astype(np.int32)
    lo, hi = sk.zeros(N, dtype=sk.uint32), sk.zeros(N, dtype=sk.uint32)
    sk.launch(S.extreme_index_int, N, inputs=[sk.array(x, dtype=sk.vec3i), lo, hi])
    np.testing.assert_array_equal(lo.numpy(), np.argmin(x, axis=1))
    np.testing.assert_array_equal(hi.numpy(), np.argmax(x, axis=1))


def test_argmin_argmax_and_ddot_match_warps(warp_kernels):
    mine, theirs = _launch_both(warp_kernels, "extreme_index", [(ARG_CASES, "vec4d")], ["uint32", "uint32"])
    for m, t in zip(mine, theirs):
        np.testing.assert_array_equal(m, t)
    rng = np.random.default_rng(12)
    ab = [(rng.standard_normal((N, 3, 3)), "mat33d"), (rng.standard_normal((N, 3, 3)), "mat33d")]
    (mine,), (theirs,) = _launch_both(warp_kernels, "double_dot", ab, ["float64"])
    np.testing.assert_allclose(mine, theirs, rtol=1e-14)
    np.testing.assert_allclose(mine, np.einsum("nij,nij->n", ab[0][0], ab[1][0]), rtol=1e-14)


# ---------------------------------------------------------------------------
# Integer matrix products
# ---------------------------------------------------------------------------
I2, I23, I32 = sk.matrix((2, 2), sk.int32), sk.matrix((2, 3), sk.int32), sk.matrix((3, 2), sk.int32)


@sk.kernel
def int_products(a: sk.array(dtype=I23), b: sk.array(dtype=I32), x: sk.array(dtype=sk.vec3i),
                 ab: sk.array(dtype=I2), ax: sk.array(dtype=sk.vec2i), times: sk.array(dtype=I23),
                 mul_ab: sk.array(dtype=I2), mul_ax: sk.array(dtype=sk.vec2i)):
    i = sk.tid()
    ab[i] = a[i] @ b[i]
    ax[i] = a[i] @ x[i]
    times[i] = 3 * a[i] * sk.int32(2)
    mul_ab[i] = sk.mul(a[i], b[i])
    mul_ax[i] = a[i] * x[i]


def test_integer_matrix_products_match_numpy():
    rng = np.random.default_rng(13)
    a, b, x = (rng.integers(-9, 9, s).astype(np.int32) for s in ((N, 2, 3), (N, 3, 2), (N, 3)))
    outs = [sk.zeros(N, dtype=t) for t in (I2, sk.vec2i, I23, I2, sk.vec2i)]
    sk.launch(int_products, N, inputs=[sk.array(a, dtype=I23), sk.array(b, dtype=I32), sk.array(x, dtype=sk.vec3i), *outs])
    ab, ax, times, mul_ab, mul_ax = (o.numpy() for o in outs)
    np.testing.assert_array_equal(ab, a @ b)
    np.testing.assert_array_equal(mul_ab, a @ b)
    np.testing.assert_array_equal(ax, np.einsum("nij,nj->ni", a, x))
    np.testing.assert_array_equal(mul_ax, np.einsum("nij,nj->ni", a, x))
    np.testing.assert_array_equal(times, 6 * a)


# ---------------------------------------------------------------------------
# Adjoints and tangents against central differences (float64, well-separated spectra)
# ---------------------------------------------------------------------------
def _fd_inputs(rng, which):
    if which == "svd3":
        return _separated(rng, 3, 8) * np.where(np.arange(8) % 2, -1.0, 1.0)[:, None, None]
    if which == "svd2":
        return _separated(rng, 2, 8)
    if which == "qr3":
        return _separated(rng, 3, 8, lo=0.2) + 0.03 * rng.standard_normal((8, 3, 3))
    # eig3: a symmetric part with eigenvalues -1, 0.5, 2 and an antisymmetric part it ignores
    q = _rotations(rng, 8, 3)
    skew = rng.standard_normal((8, 3, 3))
    return np.einsum("nij,j,nkj->nik", q, [-1.0, 0.5, 2.0], q) + (skew - np.swapaxes(skew, 1, 2)) * 0.3


# builtin -> (kernel, the outputs seeded, all outputs, rows)
FD_CASES = {"svd3": (S.decompose3, ("U", "sigma", "V"), OUTS3, 3), "qr3": (S.decompose3, ("Q", "R"), OUTS3, 3),
            "eig3": (S.decompose3, ("E", "d"), OUTS3, 3), "svd2": (S.decompose2, OUTS2, OUTS2, 2)}


def _loss(kernel, a, names, rows, seeds):
    out = _run(kernel, a, sk.float64, names, rows)
    return sum((out[k] * seeds[k]).reshape(len(a), -1).sum(axis=1) for k in names)


@pytest.mark.parametrize("which", list(FD_CASES))
def test_adjoint_matches_central_differences(which):
    kernel, seeded, names, rows = FD_CASES[which]
    rng = np.random.default_rng(14)
    a = _fd_inputs(rng, which)
    shapes = _run(kernel, a, sk.float64, names, rows)
    seeds = {k: rng.standard_normal(v.shape) if k in seeded else np.zeros(v.shape) for k, v in shapes.items()}
    grad = _adjoint(kernel, a, names, rows, seeds)
    fd, h = np.zeros_like(a), 1e-6
    for i in range(rows):
        for j in range(rows):
            d = np.zeros_like(a)
            d[:, i, j] = h
            fd[:, i, j] = (_loss(kernel, a + d, names, rows, seeds) - _loss(kernel, a - d, names, rows, seeds)) / (2 * h)
    np.testing.assert_allclose(grad, fd, atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("which", list(FD_CASES))
def test_tangent_matches_central_differences(which):
    kernel, seeded, names, rows = FD_CASES[which]
    rng = np.random.default_rng(15)
    a = _fd_inputs(rng, which)
    da, h = rng.standard_normal(a.shape), 1e-6
    tan = _run(kernel, a, sk.float64, names, rows, tangent=da)
    plus, minus = _run(kernel, a + h * da, sk.float64, names, rows), _run(kernel, a - h * da, sk.float64, names, rows)
    for k in seeded:
        np.testing.assert_allclose(tan[k], (plus[k] - minus[k]) / (2 * h), atol=1e-7, rtol=1e-6, err_msg=k)


def test_the_gradient_of_the_singular_values_stays_exact_at_a_repeated_pair():
    """d(sum sigma)/dA = U V^T (the polar rotation) also where two singular values are equal."""
    a = _with_singular_values(np.random.default_rng(16), [[2.0, 2.0, 1.0], [1.0, 1.0, 1.0]])
    out = _run(S.decompose3, a, sk.float64, OUTS3, 3)
    seeds = {k: (np.ones(v.shape) if k == "sigma" else np.zeros(v.shape)) for k, v in out.items()}
    grad = _adjoint(S.decompose3, a, OUTS3, 3, seeds)
    np.testing.assert_allclose(grad, out["U"] @ np.swapaxes(out["V"], 1, 2), atol=1e-12)


def test_ddot_adjoint_and_tangent_match_central_differences():
    rng = np.random.default_rng(17)
    a, b = rng.standard_normal((N, 3, 3)), rng.standard_normal((N, 3, 3))
    xa, xb = (sk.array(m, dtype=sk.mat33d, requires_grad=True) for m in (a, b))
    out = sk.zeros(N, dtype=sk.float64, requires_grad=True)
    sk.launch(S.double_dot, N, inputs=[xa, xb, out])
    out.grad.assign(np.ones(N))
    sk.launch(S.double_dot, N, inputs=[xa, xb, out], adjoint=True)
    np.testing.assert_allclose(xa.grad.numpy(), b, rtol=1e-14)  # d(sum a_ij b_ij)/da = b, exactly linear
    np.testing.assert_allclose(xb.grad.numpy(), a, rtol=1e-14)
    da, db = rng.standard_normal(a.shape), rng.standard_normal(b.shape)
    with sk.autograd.JVP({xa: da, xb: db}) as fwd:
        sk.launch(S.double_dot, N, inputs=[xa, xb, out])
    h = 1e-6
    fd = (np.einsum("nij,nij->n", a + h * da, b + h * db) - np.einsum("nij,nij->n", a - h * da, b - h * db)) / (2 * h)
    np.testing.assert_allclose(fwd.tangent(out).numpy(), fd, rtol=1e-7)


# Every entry of linalg_builtins.py is exercised above; the differentiable ones by FD_CASES or ddot's test.
EXERCISED = {"svd3", "svd2", "qr3", "eig3", "ddot", "argmin", "argmax", "mul", "matmul"}


def test_every_entry_is_exercised_and_every_differentiable_one_fd_checked():
    assert {b.name for b in ENTRIES} == EXERCISED
    assert {b.name for b in ENTRIES if b.differentiable} == {*FD_CASES, "ddot"}
    assert all(b.tan is not None for b in ENTRIES if b.differentiable)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
def _build(source_fn):
    return sk.kernel(source_fn).build_ir()


def test_svd3_of_a_vector_is_refused_with_its_signature():
    def k(x: sk.array(dtype=sk.vec3)):
        U, s, V = sk.svd3(x[0])

    with pytest.raises(sk.CompileError, match=r"(?s)svd3\(\) does not accept \(vec3\).*svd3\(A: mat\(3,3,float\)\)"):
        _build(k)


def test_eig3_of_an_int_matrix_is_refused():
    def k(x: sk.array(dtype=sk.matrix((3, 3), sk.int32))):
        Q, d = sk.eig3(x[0])

    with pytest.raises(sk.CompileError, match=r"eig3\(\) does not accept"):
        _build(k)


def test_a_wrong_number_of_arguments_is_refused():
    def k(x: sk.array(dtype=sk.mat33)):
        Q = sk.mat33()
        sk.qr3(x[0], Q)

    with pytest.raises(sk.CompileError, match=r"qr3\(\) takes a matrix A, or A and the out-parameters Q, R.*got 2"):
        _build(k)


def test_an_undeclared_out_parameter_is_refused_by_name():
    def k(x: sk.array(dtype=sk.mat33)):
        Q = sk.mat33()
        sk.qr3(x[0], Q, R)  # noqa: F821  (R is the point: never declared)

    with pytest.raises(sk.CompileError, match=r"declare the out-parameter 'R' \(R\) before the call"):
        _build(k)


def test_an_out_parameter_that_is_not_a_name_is_refused():
    def k(x: sk.array(dtype=sk.mat33), q: sk.array(dtype=sk.mat33)):
        R = sk.mat33()
        sk.qr3(x[0], q[0], R)

    with pytest.raises(sk.CompileError, match=r"out-parameters must be local names"):
        _build(k)


def test_keywords_are_refused():
    def k(x: sk.array(dtype=sk.mat33)):
        U, s, V = sk.svd3(A=x[0])

    with pytest.raises(sk.CompileError, match=r"svd3\(\) takes its arguments by position"):
        _build(k)
