"""Keyword arguments to builtins in kernels, under Warp's parameter names (core/call_keywords.py)."""

import numpy as np
import pytest

import simkit as sk
import keyword_kernels as S  # tests/core is on sys.path
from warp_twin import import_as_warp

X = np.array([-0.9, 0.1, 0.4, 1.3], np.float32)
AXIS = np.array([[1.0, 0.0, 0.0], [0.3, -1.0, 2.0], [0.0, 0.0, 2.0], [1.0, 1.0, 1.0]], np.float32)


@pytest.fixture(scope="module")
def warp_kernels(tmp_path_factory):
    return import_as_warp(S, tmp_path_factory.mktemp("warp_keywords"))


def _run(M, kernel, **device):
    ins = [M.array(X, dtype=float, requires_grad=True, **device), M.array(AXIS, dtype=M.vec3, **device)]
    outs = [M.zeros(len(X), dtype=t, requires_grad=True, **device) for t in (float, M.vec3, M.quat, M.mat22)]
    tape = M.Tape()
    with tape:
        M.launch(kernel, len(X), inputs=ins + outs, **device)
    tape.backward(grads={outs[0]: M.array(np.ones(len(X), np.float32), dtype=float, **device)})
    return [o.numpy() for o in outs] + [tape.gradients[ins[0]].numpy()]


def test_keyword_calls_give_the_values_of_their_positional_forms():
    s, v, q, m, _g = _run(sk, S.by_keyword)
    clamped = np.clip(X, -0.5, 0.5)
    smooth = np.clip(X, 0.0, 1.0) ** 2 * (3.0 - 2.0 * np.clip(X, 0.0, 1.0))
    assert np.allclose(s, clamped + 0.75 * X + 0.5 + np.arctan2(X, 1.5) + smooth, atol=1e-5)
    unit = AXIS / np.linalg.norm(AXIS, axis=1, keepdims=True)
    assert np.allclose(q, np.concatenate([unit * np.sin(X / 2)[:, None], np.cos(X / 2)[:, None]], axis=1), atol=1e-6)
    assert np.allclose(m, np.stack([np.stack([X, np.ones_like(X)], 1), np.stack([2 + 0 * X, X * X], 1)], 1))
    rotated_norm = np.linalg.norm(v - np.stack([X, 2 * X, 3 + 0 * X], 1), axis=1)
    assert np.allclose(rotated_norm, np.linalg.norm(AXIS, axis=1), atol=1e-5)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_keyword_calls_match_warp_values_and_gradients(warp_kernels):
    wp, W = warp_kernels
    ours = _run(sk, S.by_keyword)
    theirs = _run(wp, W.by_keyword, device="cpu")
    for a, b in zip(ours, theirs):
        assert np.allclose(a, b, atol=1e-5)


def test_an_unknown_keyword_names_the_builtin_the_keyword_and_the_accepted_names():
    def bad(x: sk.array(dtype=float)):
        x[0] = sk.clamp(x[0], lo=0.0, hi=1.0)
    k = sk.Kernel(bad, key="bad_clamp_keyword")
    with pytest.raises(sk.CompileError, match=r"clamp\(\) got an unexpected keyword argument 'lo'; "
                                              r"it accepts \(x, low, high\)"):
        sk.launch(k, 1, inputs=[sk.zeros(1)])


def test_a_keyword_given_twice_is_refused():
    def twice(x: sk.array(dtype=float)):
        x[0] = sk.lerp(x[0], 1.0, a=0.5)
    k = sk.Kernel(twice, key="lerp_twice")
    with pytest.raises(sk.CompileError, match=r"lerp\(\) got argument 'a' both by position and by keyword"):
        sk.launch(k, 1, inputs=[sk.zeros(1)])


def test_a_gap_before_a_keyword_is_refused():
    def gap(x: sk.array(dtype=float)):
        x[0] = sk.lerp(x[0], t=0.5)
    k = sk.Kernel(gap, key="lerp_gap")
    with pytest.raises(sk.CompileError, match=r"lerp\(\) is missing argument 'b'"):
        sk.launch(k, 1, inputs=[sk.zeros(1)])


def test_quat_identity_takes_a_dtype_keyword_in_a_kernel():
    def ident(q: sk.array(dtype=sk.quatd)):
        q[0] = sk.quat_identity(dtype=sk.float64)
    k = sk.Kernel(ident, key="quat_identity_dtype")
    q = sk.zeros(1, dtype=sk.quatd)
    sk.launch(k, 1, inputs=[q])
    assert q.numpy().tolist() == [[0.0, 0.0, 0.0, 1.0]]


@sk.kernel
def vector_forms(x: sk.array(dtype=float), filled: sk.array(dtype=sk.vec3), ints: sk.array(dtype=sk.vec3i),
                 typed: sk.array(dtype=sk.vec3)):
    filled[0] = sk.vector(length=3, dtype=float)() + sk.vector(x[0], length=3)
    ints[0] = sk.vector(1, 2, 3)
    typed[0] = sk.vector(3, float)(1.0, 2.0, x[0])


def test_vector_builds_a_value_from_components_and_still_names_a_type_without_them():
    outs = [sk.zeros(1, dtype=t) for t in (sk.vec3, sk.vec3i, sk.vec3)]
    sk.launch(vector_forms, 1, inputs=[sk.array([5.0])] + outs)
    assert [o.numpy().tolist() for o in outs] == [[[5.0, 5.0, 5.0]], [[1, 2, 3]], [[1.0, 2.0, 5.0]]]


def test_an_unknown_keyword_of_vector_is_refused():
    def bad(x: sk.array(dtype=sk.vec3)):
        x[0] = sk.vector(1.0, 2.0, 3.0, size=3)
    k = sk.Kernel(bad, key="bad_vector_keyword")
    with pytest.raises(sk.CompileError, match=r"vector\(\) got an unexpected keyword argument 'size'; "
                                              r"it accepts length, dtype"):
        sk.launch(k, 1, inputs=[sk.zeros(1, dtype=sk.vec3)])


N = sk.constant(2)


@sk.kernel
def vector_type_forms(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.vec2d), pair: sk.array(dtype=sk.vec2i)):
    dt = x[0]
    out[0] = sk.vector(N, type(dt))(dt, 2.0 * dt) + sk.vector(2, sk.float64)(1.0, 1.0)
    pair[0] = sk.vector(3, 4)


def test_a_size_and_a_type_still_name_a_vector_type_and_two_numbers_build_one():
    out, pair = sk.zeros(1, dtype=sk.vec2d), sk.zeros(1, dtype=sk.vec2i)
    sk.launch(vector_type_forms, 1, inputs=[sk.array([1.5], dtype=sk.float64), out, pair])
    assert out.numpy().tolist() == [[2.5, 4.0]] and pair.numpy().tolist() == [[3, 4]]
