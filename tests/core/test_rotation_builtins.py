"""quat_from_euler, quat_twist, quat_twist_angle(_signed), quat_from_matrix, quat_slerp,
quat_to_axis_angle, transform_decompose, smooth_normalize, erfinv and erfcinv: the kernels of
rotation_kernels.py against warp-lang 1.19 running the same text, against closed forms, and the
inverse error functions against scipy.special. Their adjoints and tangents are checked against
central differences in tests/core/test_builtins.py."""

import numpy as np
import pytest

import simkit as sk
from warp_twin import import_as_warp  # tests/core is on sys.path

import rotation_kernels as S  # tests/core is on sys.path (pytest prepends it)

N = 24
ORDERS = np.array([(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1), (2, 0, 1), (1, 2, 0), (0, 1, 0), (2, 1, 2)] * 3,
                  dtype=np.int32)


@pytest.fixture(scope="module")
def warp_kernels(tmp_path_factory):
    return import_as_warp(S, tmp_path_factory.mktemp("warp_rotations"))


def _unit(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _matrix(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _transforms(rng, scaled: bool):
    m = np.zeros((N, 4, 4))
    for k, q in enumerate(_unit(rng, N, 4)):
        m[k, :3, :3] = _matrix(q) * (rng.uniform(0.5, 2.0, 3) if scaled else 1.0)
        m[k, :3, 3] = rng.normal(size=3)
        m[k, 3, 3] = 1.0
    return m


def _run(M, kernel, ins, outs, **device):
    xs = [M.array(x, dtype=getattr(M, t), **device) for x, t in ins]
    ys = [M.zeros(N, dtype=getattr(M, t), **device) for t in outs]
    M.launch(kernel, N, inputs=[*xs, *ys], **device)
    return [y.numpy().copy() for y in ys]


def _same_rotation(a, b, **tol):
    """Quaternions equal up to their sign (q and -q are one rotation)."""
    s = np.sign(np.sum(a * b, axis=-1, keepdims=True))
    np.testing.assert_allclose(a * s, b, **tol)


def _float64_inputs(rng, scaled):
    return [(_unit(rng, N, 4), "quatd"), (_unit(rng, N, 4), "quatd"), (rng.uniform(0, 1, N), "float64"),
            (_transforms(rng, scaled), "mat44d")]


F64_OUTS = ["quatd", "quatd", "quatd", "vec3d", "float64", "vec3d", "quatd", "vec3d"]


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_slerp_from_matrix_axis_angle_and_decompose_match_warp(warp_kernels):
    wp, W = warp_kernels
    ins = _float64_inputs(np.random.default_rng(3), scaled=False)
    theirs, ours = _run(wp, W.rotations, ins, F64_OUTS, device="cpu"), _run(sk, S.rotations, ins, F64_OUTS)
    for k, (t, o) in enumerate(zip(theirs, ours)):
        if F64_OUTS[k] == "quatd":
            _same_rotation(o, t, rtol=0, atol=1e-14, err_msg=f"result {k}")
        else:
            np.testing.assert_allclose(o, t, rtol=0, atol=1e-14, err_msg=f"result {k}")


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_quat_from_matrix_of_a_rounded_rotation_is_the_unit_quaternion_warp_gives(warp_kernels):
    # rotations written to two decimals, as in a hand-typed file: not orthonormal, yet their
    # quaternion must be a unit one (a non-unit one would scale every vector it turns); which
    # unit quaternion is not defined for such a matrix, and Warp's formula picks another one,
    # as near the rotation as the rounding
    wp, W = warp_kernels
    ins = _float64_inputs(np.random.default_rng(9), scaled=False)
    ins[3] = (np.round(ins[3][0], 2), "mat44d")
    theirs, ours = _run(wp, W.rotations, ins, F64_OUTS, device="cpu")[2], _run(sk, S.rotations, ins, F64_OUTS)[2]
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=0, atol=1e-14)
    _same_rotation(ours, theirs, rtol=0, atol=1e-2)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_euler_twist_and_smooth_normalize_match_warp(warp_kernels):
    wp, W = warp_kernels
    rng = np.random.default_rng(4)
    ins = [(_unit(rng, N, 4).astype(np.float32), "quat"), (rng.uniform(-2, 2, (N, 3)).astype(np.float32), "vec3"),
           (_unit(rng, N, 3).astype(np.float32), "vec3"), (ORDERS, "vec3i")]
    outs = ["quat", "quat", "float32", "float32", "vec3", "vec3"]
    theirs, ours = _run(wp, W.rotations32, ins, outs, device="cpu"), _run(sk, S.rotations32, ins, outs)
    for k, (t, o) in enumerate(zip(theirs, ours)):
        np.testing.assert_allclose(o, t, rtol=0, atol=3e-7, err_msg=f"result {k}")


def test_transform_decompose_inverts_transform_compose():
    ins = _float64_inputs(np.random.default_rng(5), scaled=True)
    m = ins[3][0]
    p, q, s = _run(sk, S.rotations, ins, F64_OUTS)[5:]
    for k in range(N):
        rebuilt = sk.transform_compose(sk.vec3d(p[k]), sk.quatd(q[k]), sk.vec3d(s[k]))
        np.testing.assert_allclose(np.asarray(rebuilt), m[k], atol=1e-13)


def test_quat_from_matrix_inverts_quat_to_matrix():
    ins = _float64_inputs(np.random.default_rng(6), scaled=False)
    from33 = _run(sk, S.rotations, ins, F64_OUTS)[1]
    _same_rotation(from33, ins[0][0], rtol=0, atol=1e-14)


def test_quat_to_axis_angle_rebuilds_the_rotation_with_an_angle_in_zero_to_pi():
    ins = _float64_inputs(np.random.default_rng(7), scaled=False)
    axis, angle = _run(sk, S.rotations, ins, F64_OUTS)[3:5]
    assert np.all((angle >= 0) & (angle <= np.pi))
    rebuilt = np.concatenate([axis * np.sin(angle / 2)[:, None], np.cos(angle / 2)[:, None]], axis=1)
    _same_rotation(rebuilt, ins[0][0], rtol=0, atol=1e-14)


def test_out_parameter_form_of_quat_to_axis_angle_equals_the_tuple():
    ins = _float64_inputs(np.random.default_rng(8), scaled=False)
    tuple_form = _run(sk, S.rotations, ins, F64_OUTS)[3:5]
    out_form = _run(sk, S.axis_angle_out_params, ins[:1], ["vec3d", "float64"])
    for a, b in zip(out_form, tuple_form):
        np.testing.assert_array_equal(a, b)


def test_slerp_keeps_unit_length_and_rotates_at_a_constant_rate():
    a = sk.quatd(0.0, 0.0, 0.0, 1.0)
    b = sk.quatd(0.0, 0.0, np.sin(1.0), np.cos(1.0))  # 2 rad about z
    for t in (0.0, 0.25, 0.5, 1.0):
        q = np.asarray(sk.quat_slerp(a, b, np.float64(t)))
        np.testing.assert_allclose(q, [0, 0, np.sin(t), np.cos(t)], atol=1e-15)
    # -b is the same rotation: the shorter arc is taken
    np.testing.assert_allclose(np.asarray(sk.quat_slerp(a, -b, np.float64(0.5))), [0, 0, np.sin(0.5), np.cos(0.5)],
                               atol=1e-15)


def test_quat_from_euler_in_xyz_order_is_quat_rpy():
    e = sk.vec3d(0.3, -0.7, 1.1)
    np.testing.assert_allclose(np.asarray(sk.quat_from_euler(e, 0, 1, 2)),
                               np.asarray(sk.quat_rpy(np.float64(0.3), np.float64(-0.7), np.float64(1.1))), atol=1e-15)


def test_twist_angles_of_a_rotation_about_the_axis_are_its_angle():
    q = sk.quat_from_axis_angle(sk.vec3d(0.0, 0.0, 1.0), np.float64(-0.8))
    assert abs(sk.quat_twist_angle_signed(sk.vec3d(0.0, 0.0, 1.0), q) + 0.8) < 1e-15
    assert abs(sk.quat_twist_angle(sk.vec3d(0.0, 0.0, 1.0), q) - 0.8) < 1e-15


def test_smooth_normalize_is_v_over_its_pseudo_huber_norm():
    v = np.array([3.0, -1.0, 2.0])
    got = np.asarray(sk.smooth_normalize(sk.vec3d(v), np.float64(0.5)))
    np.testing.assert_allclose(got, v / np.sqrt(0.25 + v @ v), rtol=1e-15)


def _inverse_erf(x, z):
    y, yc = sk.zeros(len(x), dtype=sk.float64), sk.zeros(len(x), dtype=sk.float64)
    sk.launch(S.inverse_erf, len(x), inputs=[sk.array(x, dtype=sk.float64), sk.array(z, dtype=sk.float64), y, yc])
    return y.numpy(), yc.numpy()


def test_erfinv_and_erfcinv_match_scipy_to_float64_round_off():
    special = pytest.importorskip("scipy.special")
    n = 1200
    x = np.resize(np.concatenate([np.linspace(-0.999999, 0.999999, 1001), 1 - np.logspace(-15, -1, 50),
                                  -1 + np.logspace(-15, -1, 50)]), n)
    z = np.resize(np.concatenate([np.logspace(-250, 0, 251), 2 - np.logspace(-15, 0, 50),
                                  np.linspace(0.01, 1.99, 199)]), n)
    y, yc = _inverse_erf(x, z)
    np.testing.assert_allclose(y, special.erfinv(x), rtol=2e-15, atol=0)
    np.testing.assert_allclose(yc, special.erfcinv(z), rtol=2e-14, atol=0)


def test_erf_of_erfinv_is_the_identity():
    special = pytest.importorskip("scipy.special")
    x = np.linspace(-0.99, 0.99, 199)
    y, _ = _inverse_erf(x, 1 - x)
    np.testing.assert_allclose(special.erf(y), x, rtol=0, atol=4e-16)


def test_inverse_erf_at_and_beyond_the_ends_is_infinite_or_nan():
    y, yc = _inverse_erf(np.array([1.0, -1.0, 1.5, 0.0]), np.array([0.0, 2.0, -0.1, 1.0]))
    np.testing.assert_array_equal(y, [np.inf, -np.inf, np.nan, 0.0])
    np.testing.assert_array_equal(yc, [np.inf, -np.inf, np.nan, 0.0])


def test_erfinv_in_float32_is_accurate_to_float32():
    special = pytest.importorskip("scipy.special")
    x = np.linspace(-0.9999, 0.9999, 2001).astype(np.float32)
    y = sk.zeros(len(x))
    sk.launch(S.inverse_erf32, len(x), inputs=[sk.array(x, dtype=sk.float32), y])
    np.testing.assert_allclose(y.numpy(), special.erfinv(x.astype(np.float64)), rtol=2e-7)


def test_quat_to_axis_angle_with_a_wrong_argument_count_names_both_forms():
    def bad(q: sk.array(dtype=sk.quat), out: sk.array(dtype=float)):
        a = sk.vec3(0.0)
        sk.quat_to_axis_angle(q[0], a)
        out[0] = a[0]
    with pytest.raises(sk.CompileError, match=r"quat_to_axis_angle\(\) takes 1 argument\(s\), or 3 with Warp's "
                                              r"out-parameters \(axis, angle\); got 2"):
        sk.launch(sk.kernel(bad), 1, inputs=[sk.zeros(1, dtype=sk.quat), sk.zeros(1)])


def test_quat_to_axis_angle_out_parameters_must_be_names():
    def bad(q: sk.array(dtype=sk.quat), out: sk.array(dtype=sk.vec3), angle: sk.array(dtype=float)):
        sk.quat_to_axis_angle(q[0], out[0], angle[0])
    with pytest.raises(sk.CompileError, match=r"out-parameters \(axis, angle\) must be local names"):
        sk.launch(sk.kernel(bad), 1, inputs=[sk.zeros(1, dtype=sk.quat), sk.zeros(1, dtype=sk.vec3), sk.zeros(1)])


def test_quat_from_matrix_of_a_vector_is_refused_with_its_signatures():
    def bad(v: sk.array(dtype=sk.vec3), out: sk.array(dtype=sk.quat)):
        out[0] = sk.quat_from_matrix(v[0])
    with pytest.raises(sk.CompileError, match=r"(?s)quat_from_matrix\(\) does not accept \(vec3\).*mat: mat\(3,3,float\)"):
        sk.launch(sk.kernel(bad), 1, inputs=[sk.zeros(1, dtype=sk.vec3), sk.zeros(1, dtype=sk.quat)])
