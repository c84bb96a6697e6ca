"""lerp, smoothstep, matrix_from_rows/cols, get_diag and transform_compose against warp-lang 1.19:
the kernels of interp_kernels.py run under Warp (a copy of the file whose first line imports warp
as M) and under simkit, on the same float64 inputs, give the same values and, seeded alike, the
same gradients of every input."""


import numpy as np
import pytest

import simkit as sk
from warp_twin import import_as_warp  # tests/core is on sys.path

import interp_kernels as S  # tests/core is on sys.path (pytest prepends it)

N = 16


@pytest.fixture(scope="module")
def warp_kernels(tmp_path_factory):
    """(warp, the kernel text imported as Warp)."""
    return import_as_warp(S, tmp_path_factory.mktemp("warp_interp"))


def _unit(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _interp_inputs(rng):
    a, b = rng.uniform(-1, -0.2, N), rng.uniform(0.2, 1, N)
    a[::4], b[::4] = b[::4].copy(), a[::4].copy()  # edges either way round
    t = rng.uniform(-1.5, 1.5, N)  # below, between and above the edges: smoothstep's clamp both ways
    xa = np.concatenate([rng.normal(size=(N, 3)), _unit(rng, N)], axis=1)
    xb = np.concatenate([rng.normal(size=(N, 3)), _unit(rng, N)], axis=1)
    return [(a, "float64"), (b, "float64"), (t, "float64"), (rng.normal(size=(N, 3)), "vec3d"),
            (rng.normal(size=(N, 3)), "vec3d"), (rng.normal(size=(N, 3, 3)), "mat33d"),
            (rng.normal(size=(N, 3, 3)), "mat33d"), (_unit(rng, N), "quatd"), (_unit(rng, N), "quatd"),
            (xa, "transformd"), (xb, "transformd")], ["float64", "vec3d", "mat33d", "quatd", "transformd"]


def _vector_inputs(rng):
    return [(rng.normal(size=(N, 3)), "vec3d"), (rng.normal(size=(N, 3)), "vec3d"),
            (rng.normal(size=(N, 3)), "vec3d"), (_unit(rng, N), "quatd")], \
        ["mat33d", "mat33d", (2, 3), (3, 2), "vec3d", "mat44d"]


def _dtype(M, name):
    return M.types.matrix(shape=name, dtype=M.float64) if isinstance(name, tuple) else getattr(M, name)


def _run(M, kernel, ins, outs, **device):
    """The outputs of one taped launch and the gradients of the inputs for fixed random output seeds."""
    rng = np.random.default_rng(7)
    xs = [M.array(x, dtype=_dtype(M, t), requires_grad=True, **device) for x, t in ins]
    ys = [M.zeros(N, dtype=_dtype(M, t), requires_grad=True, **device) for t in outs]
    tape = M.Tape()
    with tape:
        M.launch(kernel, N, inputs=[*xs, *ys], **device)
    seeds = {y: M.array(rng.normal(size=y.numpy().shape), dtype=y.dtype, **device) for y in ys}
    tape.backward(grads=seeds)
    return [y.numpy().copy() for y in ys], [x.grad.numpy().copy() for x in xs]


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
@pytest.mark.parametrize("name,inputs", [("interp", _interp_inputs), ("from_vectors", _vector_inputs)])
def test_values_and_gradients_match_warp(warp_kernels, name, inputs):
    wp, W = warp_kernels
    ins, outs = inputs(np.random.default_rng(3))
    theirs = _run(wp, getattr(W, name), ins, outs, device="cpu")
    ours = _run(sk, getattr(S, name), ins, outs)
    for k, (t, o) in enumerate(zip(theirs[0], ours[0])):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12, err_msg=f"{name}: value {k}")
    for k, ((x, dtype), t, o) in enumerate(zip(ins, theirs[1], ours[1])):
        if dtype == "quatd" and name == "from_vectors":
            # transform_compose rotates as quat_to_matrix does; off the unit sphere simkit's rotation
            # formula and Warp's differ (docs/porting-from-warp.md), so their gradients agree along
            # the sphere (the directions a unit quaternion can move in), not across it
            t, o = (g - np.sum(g * x, axis=1, keepdims=True) * x for g in (t, o))
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12, err_msg=f"{name}: gradient {k}")
    assert all(np.abs(g).max() > 0 for g in ours[1])  # every input gets a gradient: a real check


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_smoothstep_with_equal_edges_is_the_step_warp_gives(warp_kernels):
    """a == b: 0 at and below the edge, 1 above it, as in Warp (0 / 0 clamps to 0)."""
    wp, W = warp_kernels
    a = np.array([1.0, 1.0, 1.0, -2.0, 0.0, 0.0])
    x = np.array([0.5, 1.0, 1.5, -2.0, -1e-9, 1e-9])
    got = []
    for M, k, device in ((wp, W.smoothstep_only, dict(device="cpu")), (sk, S.smoothstep_only, {})):
        s = M.zeros(len(a), dtype=M.float64, **device)
        M.launch(k, len(a), inputs=[M.array(v, dtype=M.float64, **device) for v in (a, a, x)] + [s], **device)
        got.append(s.numpy())
    np.testing.assert_array_equal(got[1], got[0])
    np.testing.assert_array_equal(got[1], [0, 0, 1, 0, 0, 1])
