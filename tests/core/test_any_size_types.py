"""Vectors and matrices of any length and shape in kernels, declared as Warp code declares them
(``sk.types.vector(length=5, dtype=...)``, ``sk.types.matrix(shape=(2, 3), dtype=...)``)."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64
vec5 = sk.types.vector(length=5, dtype=F64)
mat23 = sk.types.matrix(shape=(2, 3), dtype=F64)
mat55 = sk.types.matrix(shape=(5, 5), dtype=F64)


@sk.kernel
def mixed_sizes(v: sk.array(dtype=vec5), a: sk.array(dtype=mat23), m: sk.array(dtype=mat55),
                out: sk.array(dtype=sk.float64), w: sk.array(dtype=vec5)):
    i = sk.tid()
    x = v[i]
    y = m[i] * x
    u = a[i] * sk.vec3d(x[0], x[1], x[2])
    b = sk.transpose(a[i]) * u
    out[i] = sk.dot(y, x) + sk.length(u) + sk.trace(m[i] * sk.transpose(m[i])) + b[2]
    w[i] = sk.normalize(y) * x[4] + vec5(sk.float64(1.0), sk.float64(2.0), sk.float64(3.0), sk.float64(4.0),
                                         sk.float64(5.0))


def _inputs():
    rng = np.random.default_rng(3)
    return rng.uniform(-1, 1, (3, 5)), rng.uniform(-1, 1, (3, 2, 3)), rng.uniform(-1, 1, (3, 5, 5))


def _expected(V, A, M):
    y = np.einsum("nij,nj->ni", M, V)
    u = np.einsum("nij,nj->ni", A, V[:, :3])
    b = np.einsum("nji,nj->ni", A, u)
    out = (y * V).sum(1) + np.linalg.norm(u, axis=1) + (M * M).sum((1, 2)) + b[:, 2]
    w = y / np.linalg.norm(y, axis=1, keepdims=True) * V[:, 4:5] + np.arange(1.0, 6.0)
    return out, w


def _run(V, A, M):
    out, w = sk.zeros(3, dtype=F64), sk.zeros(3, dtype=vec5)
    sk.launch(mixed_sizes, 3, inputs=[sk.array(V, dtype=vec5), sk.array(A, dtype=mat23), sk.array(M, dtype=mat55)],
              outputs=[out, w])
    return out.numpy(), w.numpy()


def test_types_vector_and_matrix_are_the_same_types_as_sk_vector_and_matrix():
    assert vec5 is sk.vector(5, F64) and mat23 is sk.matrix((2, 3), F64) and mat55 is sk.matrix((5, 5), F64)


def test_vec5_mat23_and_mat55_compute_as_numpy_does():
    V, A, M = _inputs()
    out, w = _run(V, A, M)
    want_out, want_w = _expected(V, A, M)
    np.testing.assert_allclose(out, want_out, rtol=1e-12)
    np.testing.assert_allclose(w, want_w, rtol=1e-12)


def test_adjoints_of_vec5_mat23_and_mat55_match_finite_differences():
    V, A, M = _inputs()
    result = sk.autograd.gradcheck(
        mixed_sizes, 3, inputs=[sk.array(V, dtype=vec5), sk.array(A, dtype=mat23), sk.array(M, dtype=mat55)],
        outputs=[sk.zeros(3, dtype=F64), sk.zeros(3, dtype=vec5)], eps=1e-6, atol=1e-7, rtol=1e-6)
    assert result.ok, str(result)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_computes_the_same_kernel_text_alike():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()
    wvec5 = wp.types.vector(length=5, dtype=wp.float64)
    wmat23 = wp.types.matrix(shape=(2, 3), dtype=wp.float64)
    wmat55 = wp.types.matrix(shape=(5, 5), dtype=wp.float64)

    @wp.kernel
    def w_mixed_sizes(v: wp.array(dtype=wvec5), a: wp.array(dtype=wmat23), m: wp.array(dtype=wmat55),
                      out: wp.array(dtype=wp.float64), w: wp.array(dtype=wvec5)):
        i = wp.tid()
        x = v[i]
        y = m[i] * x
        u = a[i] * wp.vec3d(x[0], x[1], x[2])
        b = wp.transpose(a[i]) * u
        out[i] = wp.dot(y, x) + wp.length(u) + wp.trace(m[i] * wp.transpose(m[i])) + b[2]
        w[i] = wp.normalize(y) * x[4] + wvec5(wp.float64(1.0), wp.float64(2.0), wp.float64(3.0), wp.float64(4.0),
                                              wp.float64(5.0))

    V, A, M = _inputs()
    out, w = wp.zeros(3, dtype=wp.float64, device="cpu"), wp.zeros(3, dtype=wvec5, device="cpu")
    wp.launch(w_mixed_sizes, 3, inputs=[wp.array(V, dtype=wvec5, device="cpu"), wp.array(A, dtype=wmat23, device="cpu"),
                                        wp.array(M, dtype=wmat55, device="cpu")], outputs=[out, w], device="cpu")
    ours = _run(V, A, M)
    np.testing.assert_allclose(ours[0], out.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours[1], w.numpy(), rtol=1e-12)


mat65 = sk.types.matrix(shape=(6, 5), dtype=F64)


@sk.kernel
def five_and_six(v: sk.array(dtype=vec5), m: sk.array(dtype=mat55), rows: sk.array(dtype=mat65),
                 cols: sk.array(dtype=sk.types.matrix(shape=(5, 6), dtype=F64)), d: sk.array(dtype=vec5)):
    i = sk.tid()
    x = v[i]
    y = m[i] * x
    rows[i] = sk.matrix_from_rows(x, y, x * 2.0, sk.lerp(x, y, 0.3), y, x)
    cols[i] = sk.matrix_from_cols(y, x, y, x, y * x[0], sk.get_diag(m[i]))
    d[i] = sk.get_diag(sk.lerp(m[i], sk.transpose(m[i]) * m[i], 0.25))


def test_variadic_and_square_builtins_take_any_size():
    """matrix_from_rows/cols of six 5-vectors, get_diag and lerp of a mat55: values, then gradients."""
    V, _A, M = _inputs()
    outs = [sk.zeros(3, dtype=mat65), sk.zeros(3, dtype=sk.matrix((5, 6), F64)), sk.zeros(3, dtype=vec5)]
    sk.launch(five_and_six, 3, inputs=[sk.array(V, dtype=vec5), sk.array(M, dtype=mat55)], outputs=outs)
    Y = np.einsum("nij,nj->ni", M, V)
    np.testing.assert_allclose(outs[0].numpy(), np.stack([V, Y, 2 * V, 0.7 * V + 0.3 * Y, Y, V], axis=1), rtol=1e-12)
    diag = np.diagonal(M, axis1=1, axis2=2)
    np.testing.assert_allclose(outs[1].numpy(), np.stack([Y, V, Y, V, Y * V[:, :1], diag], axis=2), rtol=1e-12)
    mm = 0.75 * M + 0.25 * np.einsum("nki,nkj->nij", M, M)
    np.testing.assert_allclose(outs[2].numpy(), np.diagonal(mm, axis1=1, axis2=2), rtol=1e-12)
    result = sk.autograd.gradcheck(five_and_six, 3, inputs=[sk.array(V, dtype=vec5), sk.array(M, dtype=mat55)],
                                   outputs=[sk.zeros_like(o) for o in outs], eps=1e-6, atol=1e-7, rtol=1e-6)
    assert result.ok, str(result)
