"""erf, erfc, cbrt, degrees, radians, frac, rint, step, nonzero, isnan, isinf, isfinite, the norms
(norm_l1, norm_l2, norm_huber, norm_pseudo_huber), quat_to_rpy, normalize of a quat, quat_identity, transform_identity,
transform_get_translation / _rotation and Warp's constants (pi, e, inf, ...) against warp-lang
1.19: the kernels of warp_math_kernels.py run under Warp (a copy whose first line imports warp as
M) and under simkit on the same float64 inputs and must give the same values and gradients. The
finite-difference checks of the differentiable ones are in test_builtins.py with every builtin's."""

import math

import numpy as np
import pytest

import simkit as sk
from warp_twin import import_as_warp  # tests/core is on sys.path

import warp_math_kernels as S  # tests/core is on sys.path (pytest prepends it)

N = 12


@pytest.fixture(scope="module")
def warp_kernels(tmp_path_factory):
    """(warp, the kernel text imported as Warp)."""
    wp, twin = import_as_warp(S, tmp_path_factory.mktemp("warp_math"))
    wp.set_device("cpu")  # Warp's arrays and launches on its CPU device, also where a GPU is
    return wp, twin


def _unit_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _taped(M, kernel, ins, outs, seed_rng):
    """Outputs and input gradients of one taped launch, output seeds drawn from ``seed_rng``."""
    xs = [M.array(x, dtype=t, requires_grad=True) for x, t in ins]
    ys = [M.zeros(shape, dtype=t, requires_grad=True) for shape, t in outs]
    tape = M.Tape()
    with tape:
        M.launch(kernel, N, inputs=xs + ys)
    tape.backward(grads={y: M.array(seed_rng.normal(size=y.numpy().shape), dtype=y.dtype) for y in ys})
    return [y.numpy() for y in ys] + [tape.gradients[x].numpy() for x in xs]


def _both(warp_kernels, name, ins, outs):
    wp, W = warp_kernels
    got = _taped(sk, getattr(S, name), [(x, getattr(sk, t)) for x, t in ins],
                 [(s, getattr(sk, t)) for s, t in outs], np.random.default_rng(5))
    want = _taped(wp, getattr(W, name), [(x, getattr(wp, t)) for x, t in ins],
                  [(s, getattr(wp, t)) for s, t in outs], np.random.default_rng(5))
    return got, want


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_scalar_functions_and_constants_match_warp(warp_kernels):
    x = np.random.default_rng(1).uniform(-3.0, 3.0, N)
    x[:4] = [-2.5, -0.5, 0.5, 2.5]  # rint's halfway cases go to even
    got, want = _both(warp_kernels, "scalar_functions", [(x, "float64")], [((N, 10), "float64")])
    np.testing.assert_allclose(got[0][:, :9], want[0][:, :9], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[0][:, 9], want[0][:, 9], rtol=1e-6)  # constants rounded to float32 in Warp
    frac_seed = np.random.default_rng(5).normal(size=(N, 10))[:, 5]  # Warp's frac has the gradient 0, simkit's 1
    np.testing.assert_allclose(got[1], want[1] + frac_seed, rtol=1e-6, atol=1e-12)
    assert got[0][:4, 6].tolist() == [-2.0, -0.0, 0.0, 2.0]


def test_frac_has_the_gradient_one_where_warps_is_zero():
    @sk.kernel
    def fractional(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
        i = sk.tid()
        out[i] = sk.frac(x[i])

    x = sk.array(np.array([-2.75, -0.25, 0.5, 3.125]), dtype=sk.float64, requires_grad=True)
    out = sk.zeros(4, dtype=sk.float64, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(fractional, 4, inputs=[x], outputs=[out])
    tape.backward(grads={out: np.ones(4)})
    assert out.numpy().tolist() == [-0.75, -0.25, 0.5, 0.125]
    assert x.grad.numpy().tolist() == [1.0] * 4


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_classification_matches_warp(warp_kernels):
    wp, W = warp_kernels
    x = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3.0e38, 1.0e-45, -0.0] + [1.0] * (N - 8), np.float32)
    outs = []
    for M, K in ((sk, S), (wp, W)):
        out = M.zeros((N, 4), dtype=M.int32)
        M.launch(K.classify, N, inputs=[M.array(x, dtype=M.float32), out])
        outs.append(out.numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0][:, :3], np.stack([np.isnan(x), np.isinf(x), np.isfinite(x)], 1))


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_norms_match_warp_on_both_sides_of_delta(warp_kernels):
    rng = np.random.default_rng(2)
    v = rng.normal(size=(N, 3)) * rng.uniform(0.2, 3.0, (N, 1))
    delta = rng.uniform(0.5, 2.0, N)
    got, want = _both(warp_kernels, "norms", [(v, "vec3"), (delta, "float32")], [((N, 6), "float32")])
    lengths = np.linalg.norm(v, axis=1)
    assert (lengths < delta).any() and (lengths > delta).any()  # Huber's both branches
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_rotations_and_identities_match_warp(warp_kernels):
    rng = np.random.default_rng(3)
    q = _unit_quats(rng, N)
    t = np.concatenate([rng.normal(size=(N, 3)), _unit_quats(rng, N)], axis=1)
    got, want = _both(warp_kernels, "rotations", [(q, "quat"), (t, "transformd")],
                      [(N, "vec3"), (N, "vec3d"), (N, "quatd"), (N, "quat"), (N, "transform")])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[3], [[0.0, 0.0, 0.0, 1.0]] * N, atol=1e-6)  # identity + normalize(3 q) - q


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_a_scalar_over_a_vector_matrix_or_quat_divides_by_each_component_like_warp(warp_kernels):
    rng = np.random.default_rng(6)
    away = [rng.uniform(0.5, 2.0, (N,) + s) * rng.choice([-1.0, 1.0], (N,) + s) for s in ((3,), (2, 2), (4,))]
    got, want = _both(warp_kernels, "scalar_over",
                      [(rng.normal(size=N), "float64"), (away[0], "vec3d"), (away[1], "mat22d"), (away[2], "quatd")],
                      [(N, "vec3d"), (N, "mat22d"), (N, "quatd")])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_allclose(got[1], 2.0 / away[1], rtol=1e-12)
    assert 2.0 / sk.vec2(4.0, 0.5) == sk.vec2(0.5, 4.0)  # in Python too


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_skew_homogeneous_transforms_and_point_velocity_match_warp(warp_kernels):
    rng = np.random.default_rng(7)
    v, m, qd = rng.normal(size=(N, 3)), rng.normal(size=(N, 4, 4)), rng.normal(size=(N, 6))
    got, want = _both(warp_kernels, "frames", [(v, "vec3d"), (m, "mat44d")], [(N, "mat33d"), (N, "vec3d"), (N, "vec3d")])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    got, want = _both(warp_kernels, "point_velocity", [(qd, "spatial_vector"), (v, "vec3")], [(N, "vec3")])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_skew_homogeneous_transforms_and_point_velocity_are_their_closed_forms():
    rng = np.random.default_rng(8)
    v, m, qd = rng.normal(size=(N, 3)), rng.normal(size=(N, 4, 4)), rng.normal(size=(N, 6))
    outs = [sk.zeros(N, dtype=t) for t in (sk.mat33d, sk.vec3d, sk.vec3d)]
    sk.launch(S.frames, N, inputs=[sk.array(v, dtype=sk.vec3d), sk.array(m, dtype=sk.mat44d), *outs])
    skew, points, dirs = (o.numpy() for o in outs)
    vel = sk.zeros(N, dtype=sk.vec3)
    sk.launch(S.point_velocity, N, inputs=[sk.array(qd, dtype=sk.spatial_vector), sk.array(v, dtype=sk.vec3), vel])
    vel = vel.numpy()
    u = rng.normal(size=(N, 3))
    np.testing.assert_allclose(np.einsum("nij,nj->ni", skew, u), np.cross(v, u), atol=1e-12)
    np.testing.assert_allclose(points, np.einsum("nij,nj->ni", m[:, :3, :3], v) + m[:, :3, 3], atol=1e-12)
    np.testing.assert_allclose(dirs, np.einsum("nij,nj->ni", m[:, :3, :3], v), atol=1e-12)
    np.testing.assert_allclose(vel, np.cross(qd[:, :3], v) + qd[:, 3:], rtol=1e-5, atol=1e-5)   # float32


def test_quat_to_rpy_inverts_quat_rpy():
    @sk.kernel
    def round_trip(a: sk.array(dtype=sk.vec3d), out: sk.array(dtype=sk.vec3d)):
        i = sk.tid()
        out[i] = sk.quat_to_rpy(sk.quat_rpy(a[i][0], a[i][1], a[i][2]))

    angles = np.random.default_rng(4).uniform(-1.4, 1.4, (N, 3))
    out = sk.zeros(N, dtype=sk.vec3d)
    sk.launch(round_trip, N, inputs=[sk.array(angles, dtype=sk.vec3d), out])
    np.testing.assert_allclose(out.numpy(), angles, atol=1e-12)


def test_identities_and_transform_parts_also_run_in_python_as_in_warp():
    assert sk.quat_identity() == sk.quat(0.0, 0.0, 0.0, 1.0) and type(sk.quat_identity(sk.float64)) is sk.quatd
    assert type(sk.transform_identity(dtype=sk.float64)) is sk.transformd
    t = sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat_identity())
    assert sk.transform_get_translation(t) == sk.vec3(1.0, 2.0, 3.0) and sk.transform_get_rotation(t) == t.q
    with pytest.raises(TypeError, match=r"transform_get_translation\(\) takes a transform, got vec3"):
        sk.transform_get_translation(sk.vec3())
    assert sk.erf(0.5) == pytest.approx(math.erf(0.5), rel=1e-6)  # every value builtin runs in Python now


def test_constants_are_warps():
    assert (sk.pi, sk.e, sk.tau, sk.half_pi, sk.PI, sk.E) == (math.pi, math.e, math.tau, math.pi / 2, math.pi, math.e)
    assert sk.inf == math.inf and math.isnan(sk.nan) and math.isnan(sk.NAN)
    assert sk.phi == pytest.approx(1.618033988749895, rel=1e-15) and sk.log2e * sk.ln2 == pytest.approx(1.0)


def test_a_builtin_given_the_wrong_types_names_its_signatures():
    @sk.kernel
    def wrong(a: sk.array(dtype=sk.vec3)):
        a[0] = sk.vec3(sk.norm_huber(a[0], a[0]))

    with pytest.raises(sk.CompileError, match=r"norm_huber"):
        sk.launch(wrong, 1, inputs=[sk.zeros(1, dtype=sk.vec3)])
