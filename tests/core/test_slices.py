"""Constant slices of vectors and matrices in kernels (core/slices.py): values, gradients, errors."""

import numpy as np
import pytest

import simkit as sk
import slice_kernels as S  # tests/core is on sys.path
from warp_twin import import_as_warp

N = 3
RNG = np.random.default_rng(7)
V = RNG.normal(size=(N, 4)).astype(np.float32)
MAT = RNG.normal(size=(N, 3, 3)).astype(np.float32)
W = RNG.normal(size=(N, 2)).astype(np.float32)


@pytest.fixture(scope="module")
def warp_kernels(tmp_path_factory):
    return import_as_warp(S, tmp_path_factory.mktemp("warp_slices"))


def _read_outputs(M, **device):
    types = (M.vec3, M.vec2, M.vec2, M.vec2, M.mat22, M.types.matrix(shape=(2, 3), dtype=float), M.vec3, M.vec2, float)
    return [M.zeros(N, dtype=t, requires_grad=True, **device) for t in types]


def _read_inputs(M, **device):
    return [M.array(V, dtype=M.vec4, requires_grad=True, **device),
            M.array(MAT, dtype=M.mat33, requires_grad=True, **device)]


def _write_args(M, **device):
    ins = [M.array(V, dtype=M.vec4, requires_grad=True, **device), M.array(MAT, dtype=M.mat33, requires_grad=True, **device),
           M.array(W, dtype=M.vec2, requires_grad=True, **device)]
    return ins, [M.zeros(N, dtype=M.vec4, requires_grad=True, **device),
                 M.zeros(N, dtype=M.mat33, requires_grad=True, **device)]


def test_slice_reads_select_the_components_python_would():
    ins, outs = _read_inputs(sk), _read_outputs(sk)
    sk.launch(S.slice_reads, N, inputs=ins + outs)
    tail, head, even, row_tail, block, rows, col, back, s = (o.numpy() for o in outs)
    assert np.array_equal(tail, V[:, 1:]) and np.array_equal(head, V[:, :2]) and np.array_equal(even, V[:, ::2])
    assert np.array_equal(row_tail, MAT[:, 0, 1:]) and np.array_equal(block, MAT[:, 1:, :2])
    assert np.array_equal(rows, MAT[:, 1:]) and np.array_equal(col, MAT[:, :, 0])
    assert np.array_equal(back, V[:, -1:-3:-1])
    expect = np.einsum("ij,ij->i", V[:, 1:], MAT[:, 0]) + np.linalg.norm(MAT[:, 2, ::2], axis=1)
    assert np.allclose(s, expect, rtol=1e-6)


def test_slice_assignment_and_updates_change_only_the_selected_components():
    ins, outs = _write_args(sk)
    sk.launch(S.slice_writes, N, inputs=ins + outs)
    a, b = V.copy(), MAT.copy()
    a[:, 1:3] = 2.0 * W
    a[:, ::3] += W
    b[:, 0, 1:] = W
    b[:, 1:, :2] -= np.stack([np.stack([W[:, 0], np.ones(N)], 1), np.stack([2.0 * np.ones(N), W[:, 1]], 1)], 1)
    assert np.allclose(outs[0].numpy(), a, rtol=1e-6) and np.allclose(outs[1].numpy(), b, rtol=1e-6)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("kernel", ["slice_reads", "slice_writes"])
def test_slice_gradients_match_central_differences(kernel, mode):
    if kernel == "slice_reads":
        ins, outs = _read_inputs(sk), _read_outputs(sk)
    else:
        ins, outs = _write_args(sk)
    k = getattr(S, kernel)
    ours = sk.autograd.jacobian(k, N, inputs=ins, outputs=outs, mode=mode)
    fd = sk.autograd.jacobian_fd(k, N, inputs=ins, outputs=outs, eps=1e-2)
    assert ours.keys() == fd.keys()
    for key in ours:
        assert np.allclose(ours[key], fd[key], atol=2e-3), key


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_slice_values_match_warp_running_the_same_kernels(warp_kernels):
    wp, W_ = warp_kernels
    for M, mod, dev in ((sk, S, {}), (wp, W_, {"device": "cpu"})):
        ins, outs = _read_inputs(M, **dev), _read_outputs(M, **dev)
        M.launch(mod.slice_reads, N, inputs=ins + outs, **dev)
        wins, wouts = _write_args(M, **dev)
        M.launch(mod.slice_writes, N, inputs=wins + wouts, **dev)
        if M is sk:
            ours = [o.numpy() for o in outs + wouts]
        else:
            theirs = [o.numpy() for o in outs + wouts]
    for a, b in zip(ours, theirs):
        assert np.allclose(a, b, rtol=1e-6, atol=1e-7)


def test_overwritten_components_take_no_gradient_where_warp_passes_one():
    ins, outs = _write_args(sk)
    tape = sk.Tape()
    with tape:
        sk.launch(S.slice_writes, N, inputs=ins + outs)
    tape.backward(grads={outs[0]: np.ones((N, 4), np.float32), outs[1]: np.ones((N, 3, 3), np.float32)})
    assert np.array_equal(tape.gradients[ins[0]].numpy(), np.tile([1.0, 0.0, 0.0, 1.0], (N, 1)))  # Warp: all ones
    assert np.array_equal(tape.gradients[ins[1]].numpy()[:, 0], np.tile([1.0, 0.0, 0.0], (N, 1)))
    assert np.array_equal(tape.gradients[ins[2]].numpy(), np.full((N, 2), 3.0))


def _compile(body_fn, key):
    k = sk.Kernel(body_fn, key=key)
    sk.launch(k, 1, inputs=[sk.zeros(1, dtype=sk.vec4)])


def test_a_slice_bound_must_be_a_constant():
    def runtime_bound(v: sk.array(dtype=sk.vec4)):
        n = sk.tid() + 1
        w = v[0]
        v[0] = sk.vec4(w[n:][0], 0.0, 0.0, 0.0)
    with pytest.raises(sk.CompileError, match="expected a constant integer index"):
        _compile(runtime_bound, "slice_runtime_bound")


def test_an_empty_slice_is_refused():
    def empty(v: sk.array(dtype=sk.vec4)):
        w = v[0]
        v[0] = sk.vec4(w[3:1][0], 0.0, 0.0, 0.0)
    with pytest.raises(sk.CompileError, match=r"the slice selects no component of vec4 \(length 4\)"):
        _compile(empty, "slice_empty")


def test_assigning_a_value_of_another_shape_to_a_slice_is_refused():
    def wrong_shape(v: sk.array(dtype=sk.vec4)):
        w = v[0]
        w[1:] = sk.vec2(1.0, 2.0)
        v[0] = w
    with pytest.raises(sk.CompileError, match=r"the slice is a vec3; it takes a value of that shape, got vec2"):
        _compile(wrong_shape, "slice_wrong_shape")


def test_slices_of_arrays_are_refused_with_a_pointer_to_value_slices():
    def array_slice(v: sk.array(dtype=sk.vec4)):
        v[0] = v[1:][0]
    with pytest.raises(sk.CompileError, match=r"slices of arrays are not supported in kernels"):
        _compile(array_slice, "slice_of_array")
