"""Builtins called from plain Python (core/host_builtins.py): the values the same call gives in a kernel."""

import numpy as np
import pytest

import simkit as sk

X = np.float32(0.7)
V = np.array([1.0, -2.0, 0.5], np.float32)
W = np.array([0.3, 0.4, -1.2], np.float32)
Q = np.array([0.1, -0.3, 0.2, 0.9], np.float32) / np.linalg.norm([0.1, -0.3, 0.2, 0.9]).astype(np.float32)
M = np.array([[2.0, 0.1, -0.3], [0.4, 1.5, 0.2], [-0.1, 0.3, 1.1]], np.float32)


@sk.kernel
def in_kernel(x: sk.array(dtype=float), v: sk.array(dtype=sk.vec3), w: sk.array(dtype=sk.vec3),
              q: sk.array(dtype=sk.quat), m: sk.array(dtype=sk.mat33), x64: sk.array(dtype=sk.float64),
              s: sk.array(dtype=float), s64: sk.array(dtype=sk.float64), vs: sk.array(dtype=sk.vec3),
              ms: sk.array(dtype=sk.mat33), qs: sk.array(dtype=sk.quat)):
    s[0] = sk.cos(x[0])
    s[1] = sk.length(v[0])
    s[2] = sk.dot(v[0], w[0])
    s[3] = sk.cos(0.5)
    s[4] = sk.atan2(x[0], 0.25)
    s64[0] = sk.sqrt(x64[0])
    s64[1] = sk.min(x64[0], 2.0)
    vs[0] = sk.cross(v[0], w[0])
    vs[1] = sk.normalize(v[0])
    vs[2] = sk.quat_rotate(q[0], v[0])
    vs[3] = sk.mul(m[0], v[0])
    ms[0] = sk.mul(m[0], m[0])
    ms[1] = sk.inverse(m[0])
    qs[0] = sk.quat_from_axis_angle(sk.normalize(w[0]), x[0])


@pytest.fixture(scope="module")
def kernel_values():
    outs = [sk.zeros(n, dtype=t) for n, t in ((5, float), (2, sk.float64), (4, sk.vec3), (2, sk.mat33), (1, sk.quat))]
    ins = [sk.array([X]), sk.array([V], dtype=sk.vec3), sk.array([W], dtype=sk.vec3), sk.array([Q], dtype=sk.quat),
           sk.array([M], dtype=sk.mat33), sk.array([3.0], dtype=sk.float64)]
    sk.launch(in_kernel, 1, inputs=ins + outs)
    return [o.numpy() for o in outs]


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.cpu_only("the host call runs on the CPU; the kernel it is compared with runs on each device")
def test_scalar_results_are_bit_identical_to_the_kernel(kernel_values):
    s, s64 = kernel_values[0], kernel_values[1]
    v, w = sk.vec3(V), sk.vec3(W)
    host = [sk.cos(X), sk.length(v), sk.dot(v, w), sk.cos(0.5), sk.atan2(X, 0.25)]
    assert np.array_equal(_bits(np.array(host, np.float32)), _bits(s))
    assert np.array_equal(_bits(np.array([sk.sqrt(np.float64(3.0)), sk.min(np.float64(3.0), 2.0)])), _bits(s64))


@pytest.mark.cpu_only("the host call runs on the CPU; the kernel it is compared with runs on each device")
def test_vector_matrix_and_quat_results_are_bit_identical_to_the_kernel(kernel_values):
    vs, ms, qs = kernel_values[2:]
    v, w, q, m = sk.vec3(V), sk.vec3(W), sk.quat(Q), sk.mat33(M)
    host_v = [sk.cross(v, w), sk.normalize(v), sk.quat_rotate(q, v), sk.mul(m, v)]
    assert np.array_equal(_bits(np.array([h.numpy() for h in host_v])), _bits(vs))
    assert np.array_equal(_bits(np.array([sk.mul(m, m).numpy(), sk.inverse(m).numpy()])), _bits(ms))
    assert np.array_equal(_bits(sk.quat_from_axis_angle(sk.normalize(w), X).numpy()), _bits(qs[0]))


def test_result_types_follow_the_kernel_types():
    assert type(sk.cos(0.5)) is float  # a Python float literal is float32, as in a kernel
    assert sk.cos(0.5) == float(np.float32(sk.cos(0.5))) and sk.cos(0.5) != np.cos(0.5)  # rounded to float32
    assert type(sk.cos(np.float64(0.5))) is np.float64
    assert sk.cos(np.float64(0.5)) == np.cos(0.5)
    assert type(sk.min(3, 2)) is int and sk.min(3, 2) == 2
    assert type(sk.normalize(sk.vec3d(1.0, 2.0, 2.0))) is sk.vec3d
    assert sk.isnan(float("nan")) is True


def test_host_calls_take_warps_keywords():
    assert sk.clamp(2.0, low=0.0, high=1.0) == 1.0
    assert sk.lerp(a=1.0, b=3.0, t=0.25) == 1.5
    with pytest.raises(TypeError, match=r"clamp\(\) got an unexpected keyword argument 'hi'; it accepts \(x, low, high\)"):
        sk.clamp(2.0, 0.0, hi=1.0)


def test_identity_runs_in_python():
    assert np.array_equal(sk.identity(n=3, dtype=sk.float64).numpy(), np.eye(3))
    assert type(sk.identity(2)) is sk.mat22


@pytest.mark.parametrize("call", [lambda: sk.tid(), lambda: sk.atomic_add(sk.zeros(1), 0, 1.0),
                                  lambda: sk.printf("x\n"), lambda: sk.expect_eq(1, 1)],
                         ids=["tid", "atomic_add", "printf", "expect_eq"])
def test_kernel_only_builtins_say_they_only_work_in_kernels(call):
    with pytest.raises(TypeError, match=r"sk\.\w+\(\) only works inside kernels"):
        call()


def test_arguments_no_overload_takes_list_the_signatures():
    with pytest.raises(TypeError, match=r"cross\(\) does not accept \(vec3, vec2\); expected one of"):
        sk.cross(sk.vec3(1.0, 0.0, 0.0), sk.vec2(1.0, 0.0))


def test_an_argument_that_is_not_a_number_or_value_is_refused():
    with pytest.raises(TypeError, match=r"length\(\): argument 1 is a list"):
        sk.length([1.0, 2.0])


@sk.func
def size_of(v: sk.vec3):
    return sk.length(v) + sk.dot(v, sk.vec3(1.0, 0.0, 0.0))


def test_a_func_called_from_python_runs_its_builtins():
    assert size_of(sk.vec3(3.0, 4.0, 0.0)) == 8.0


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_host_values_match_warps_host_calls():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    v, w, q = (V.tolist(), W.tolist(), Q.tolist())
    pairs = [(sk.length(sk.vec3(*v)), wp.length(wp.vec3(*v))), (sk.cos(0.5), wp.cos(0.5)),
             (sk.cross(sk.vec3(*v), sk.vec3(*w)), wp.cross(wp.vec3(*v), wp.vec3(*w))),
             (sk.normalize(sk.vec3(*v)), wp.normalize(wp.vec3(*v))),
             (sk.quat_rotate(sk.quat(*q), sk.vec3(*v)), wp.quat_rotate(wp.quat(*q), wp.vec3(*v))),
             (sk.mul(sk.mat33(M), sk.vec3(*v)), wp.mul(wp.mat33(*M.ravel().tolist()), wp.vec3(*v)))]
    for ours, theirs in pairs:
        assert np.allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=1e-6, atol=1e-6)


def test_a_host_call_inside_a_capture_runs_at_once_and_is_not_captured():
    with sk.capture() as graph:
        n = sk.length(sk.vec3(3.0, 4.0, 0.0))
    assert n == 5.0
    assert len(graph) == 0
