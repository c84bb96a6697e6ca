"""sk.autograd.jacobian / jacobian_fd / gradcheck (docs/design.md, "Autodiff contract", rule 20).

Jacobian blocks are keyed (input index, output index) and shaped (output components,
input components), components in ``.numpy()`` order: element i of a vec3 array is
components 3i, 3i+1, 3i+2.
"""

import numpy as np
import pytest

import simkit as sk
import simkit.autograd as ag

f64 = sk.float64


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@sk.kernel
def sin_scaled(x: sk.array(dtype=f64), a: f64, y: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = sk.sin(x[i]) * a


@sk.kernel
def affine(x: sk.array(dtype=f64), w: sk.array(dtype=f64), y: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = w[0] * x[i] + w[1] * x[i] * x[i]


@sk.kernel
def cross_kernel(a: sk.array(dtype=sk.vec3d), b: sk.array(dtype=sk.vec3d), c: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    c[i] = sk.cross(a[i], b[i])


@sk.kernel
def sum_squares(x: sk.array(dtype=f64), total: sk.array(dtype=f64)):
    i = sk.tid()
    sk.atomic_add(total, 0, x[i] * x[i])


@sk.kernel
def gather(x: sk.array(dtype=f64), idx: sk.array(dtype=int), n: int, y: sk.array(dtype=f64),
           z: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = x[idx[i]] * f64(n)
    z[i] = x[i] * x[i]


@sk.kernel
def spring_like(p: sk.array(dtype=sk.vec3d), k: sk.array(dtype=f64), f: sk.array(dtype=sk.vec3d),
                e: sk.array(dtype=f64)):
    i = sk.tid()
    d = p[i]
    length = sk.length(d)
    f[i] = d * (k[i] * (length - 1.0) / length) + sk.vec3d(sk.sin(d[0] * d[1]), 0.0, sk.exp(d[2]))
    sk.atomic_add(e, 0, 0.5 * k[i] * (length - 1.0) * (length - 1.0))


@sk.kernel
def truncate(x: sk.array(dtype=f64), y: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = f64(int(x[i] * 10.0))


@sk.kernel
def write_then_read(x: sk.array(dtype=f64), y: sk.array(dtype=f64), z: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = x[i] * 2.0
    z[i] = y[i] * y[i]


@sk.kernel
def square32(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.struct
class Gains:
    k: sk.array(dtype=f64)


@sk.kernel
def gained(x: sk.array(dtype=f64), g: Gains, y: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = g.k[i] * x[i]


def f64_array(values, dtype=f64, requires_grad=False):
    return sk.array(np.asarray(values, dtype=np.float64), dtype=dtype, requires_grad=requires_grad)


def skew(v):
    """The matrix S(v) with S(v) @ w == cross(v, w)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def block_diag(blocks):
    n = sum(b.shape[0] for b in blocks)
    out = np.zeros((n, n))
    r = 0
    for b in blocks:
        out[r:r + b.shape[0], r:r + b.shape[1]] = b
        r += b.shape[0]
    return out


X3 = [0.3, -1.2, 2.0]


# ---------------------------------------------------------------------------
# Analytic Jacobians
# ---------------------------------------------------------------------------


def test_elementwise_kernel_has_a_diagonal_jacobian():
    x, y = f64_array(X3), sk.zeros(3, dtype=f64)
    J = ag.jacobian(sin_scaled, 3, inputs=[x, 2.5], outputs=[y])
    assert list(J) == [(0, 0)]  # the scalar 'a' has no Jacobian
    np.testing.assert_allclose(J[(0, 0)], np.diag(2.5 * np.cos(X3)), rtol=1e-12, atol=0)


def test_two_input_kernel_gives_one_block_per_input_shaped_outputs_by_inputs():
    x, w, y = f64_array(X3), f64_array([1.5, -0.5]), sk.zeros(3, dtype=f64)
    J = ag.jacobian(affine, 3, inputs=[x, w], outputs=[y])
    xs = np.array(X3)
    assert sorted(J) == [(0, 0), (1, 0)]
    assert J[(1, 0)].shape == (3, 2)
    np.testing.assert_allclose(J[(0, 0)], np.diag(1.5 - 1.0 * xs), rtol=1e-12)
    np.testing.assert_allclose(J[(1, 0)], np.stack([xs, xs * xs], axis=1), rtol=1e-12)
    assert J[(0, 0)].dtype == np.float64


def test_vec3_components_are_laid_out_element_major():
    a_np = np.array([[1.0, 2.0, 3.0], [-0.5, 0.25, 4.0]])
    b_np = np.array([[0.5, -1.0, 2.0], [3.0, 1.0, -2.0]])
    a, b, c = f64_array(a_np, sk.vec3d), f64_array(b_np, sk.vec3d), sk.zeros(2, dtype=sk.vec3d)
    J = ag.jacobian(cross_kernel, 2, inputs=[a, b], outputs=[c])
    assert J[(0, 0)].shape == (6, 6)
    # cross(a, b) = -S(b) a = S(a) b, one 3x3 block per element.
    np.testing.assert_allclose(J[(0, 0)], block_diag([-skew(v) for v in b_np]), atol=1e-12)
    np.testing.assert_allclose(J[(1, 0)], block_diag([skew(v) for v in a_np]), atol=1e-12)


def test_atomic_add_reduction_gives_one_row():
    x, total = f64_array(X3), sk.zeros(1, dtype=f64)
    J = ag.jacobian(sum_squares, 3, inputs=[x], outputs=[total])
    np.testing.assert_allclose(J[(0, 0)], 2.0 * np.array([X3]), rtol=1e-12)


def test_gradient_through_a_value_written_then_read_back_in_the_same_kernel():
    """z = y * y with y = 2x stored to an array first: the chain goes through y's grad (dz/dx = 8x)."""
    x, y, z = f64_array(X3), sk.zeros(3, dtype=f64), sk.zeros(3, dtype=f64)
    J = ag.jacobian(write_then_read, 3, inputs=[x], outputs=[y, z])
    np.testing.assert_allclose(J[(0, 0)], 2.0 * np.eye(3), rtol=1e-12)
    np.testing.assert_allclose(J[(0, 1)], np.diag(8.0 * np.array(X3)), rtol=1e-12)


def test_arrays_inside_struct_arguments_are_constants_and_keep_their_grads():
    k = f64_array([2.0, 3.0, 4.0], requires_grad=True)
    k.grad.fill_(7.0)
    x, y = f64_array(X3), sk.zeros(3, dtype=f64)
    J = ag.jacobian(gained, 3, inputs=[x, Gains(k=k)], outputs=[y])
    np.testing.assert_allclose(J[(0, 0)], np.diag([2.0, 3.0, 4.0]))
    assert k.grad.numpy().tolist() == [7.0, 7.0, 7.0]


def test_numpy_arrays_passed_directly_work_and_the_numpy_output_receives_the_result():
    x = np.array(X3)
    y = np.zeros(3)
    J = ag.jacobian(sin_scaled, 3, inputs=[x, 1.0], outputs=[y])
    np.testing.assert_allclose(J[(0, 0)], np.diag(np.cos(X3)), rtol=1e-12)
    np.testing.assert_allclose(y, np.sin(X3), rtol=1e-15)


# ---------------------------------------------------------------------------
# The mask
# ---------------------------------------------------------------------------


def gather_args():
    x = f64_array([1.0, 2.0, 3.0])
    idx = sk.array(np.array([2, 0, 1], dtype=np.int32), dtype=sk.int32)
    return [x, idx, 3], [sk.zeros(3, dtype=f64), sk.zeros(3, dtype=f64)]


def test_default_mask_pairs_every_float_array_input_with_every_float_array_output():
    inputs, outputs = gather_args()
    J = ag.jacobian(gather, 3, inputs, outputs)
    assert sorted(J) == [(0, 0), (0, 1)]  # idx (int array) and n (scalar) are left out
    np.testing.assert_allclose(J[(0, 0)], 3.0 * np.eye(3)[[2, 0, 1]])


def test_mask_by_names():
    inputs, outputs = gather_args()
    J = ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[("x", "z")])
    assert list(J) == [(0, 1)]
    np.testing.assert_allclose(J[(0, 1)], np.diag([2.0, 4.0, 6.0]))


def test_mask_by_integer_indices_returns_the_requested_blocks():
    """Regression: integer indices (input index into inputs, output index into outputs) are not ignored."""
    inputs, outputs = gather_args()
    J = ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[(0, 1), (0, 0)])
    assert sorted(J) == [(0, 0), (0, 1)]
    np.testing.assert_allclose(J[(0, 1)], np.diag([2.0, 4.0, 6.0]))
    np.testing.assert_allclose(J[(0, 0)], 3.0 * np.eye(3)[[2, 0, 1]])


def test_mask_mixes_names_and_indices_and_keys_are_always_indices():
    inputs, outputs = gather_args()
    J = ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[("x", 1), (np.int64(0), "y"), (0, "z")])
    assert sorted(J) == [(0, 0), (0, 1)]  # the repeated pair is computed once


def test_empty_mask_computes_nothing():
    inputs, outputs = gather_args()
    assert ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[]) == {}


def test_unknown_name_is_a_value_error_listing_the_valid_inputs():
    inputs, outputs = gather_args()
    with pytest.raises(ValueError, match=r"no input named 'q'.*valid inputs: 0 \('x'\)$"):
        ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[("q", "y")])


def test_out_of_range_index_is_a_value_error_listing_the_valid_outputs():
    inputs, outputs = gather_args()
    with pytest.raises(ValueError, match=r"output index 2 is out of range.*valid outputs: 0 \('y'\), 1 \('z'\)"):
        ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[(0, 2)])


def test_an_output_name_on_the_input_side_is_a_value_error_saying_so():
    inputs, outputs = gather_args()
    with pytest.raises(ValueError, match=r"'y' is an output of gather\(\), not an input"):
        ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[("y", "z")])


def test_an_int_array_in_the_mask_is_a_value_error_saying_why():
    inputs, outputs = gather_args()
    with pytest.raises(ValueError, match=r"input 1 \('idx'\) is an array of int32.*only float arrays.*no gradient"):
        ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[("idx", "y")])


def test_a_scalar_argument_in_the_mask_is_a_value_error():
    inputs, outputs = gather_args()
    with pytest.raises(ValueError, match=r"input 2 \('n'\) is an int32 value.*valid inputs: 0 \('x'\)"):
        ag.jacobian(gather, 3, inputs, outputs, input_output_mask=[(2, "y")])


def test_a_mask_entry_that_is_not_a_pair_is_a_value_error():
    inputs, outputs = gather_args()
    with pytest.raises(ValueError, match=r"\(input, output\) pairs, got 'x'"):
        ag.jacobian(gather, 3, inputs, outputs, input_output_mask=("x", "y"))


def test_jacobian_fd_validates_the_mask_the_same_way():
    inputs, outputs = gather_args()
    with pytest.raises(ValueError, match=r"jacobian_fd: .*no output named 'w'.*valid outputs"):
        ag.jacobian_fd(gather, 3, inputs, outputs, input_output_mask=[(0, "w")])


# ---------------------------------------------------------------------------
# Finite differences and gradcheck
# ---------------------------------------------------------------------------


def spring_args():
    rng = np.random.default_rng(3)
    p = f64_array(rng.uniform(-1.5, 1.5, (4, 3)), sk.vec3d)
    k = f64_array(rng.uniform(0.5, 2.0, 4))
    e = f64_array([0.75])
    return [p, k], [sk.zeros(4, dtype=sk.vec3d), e]


def test_adjoint_jacobian_matches_central_differences_for_a_nonlinear_float64_kernel():
    inputs, outputs = spring_args()
    J = ag.jacobian(spring_like, 4, inputs, outputs)
    Jn = ag.jacobian_fd(spring_like, 4, inputs, outputs, eps=1e-6)
    assert sorted(J) == sorted(Jn) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert J[(0, 0)].shape == (12, 12) and J[(1, 1)].shape == (1, 4)
    for key in J:
        np.testing.assert_allclose(J[key], Jn[key], atol=1e-7, rtol=1e-6)


def test_jacobian_fd_uses_the_step_actually_stored_in_float32():
    x = sk.array(np.array([0.3, 1.7, -2.2], dtype=np.float32))
    y = sk.zeros(3)
    Jn = ag.jacobian_fd(square32, 3, [x], [y], eps=1e-2)
    np.testing.assert_allclose(Jn[(0, 0)], np.diag(2.0 * x.numpy().astype(np.float64)), rtol=1e-4)


def test_jacobian_fd_rejects_a_non_positive_eps():
    x, y = f64_array(X3), sk.zeros(3, dtype=f64)
    with pytest.raises(ValueError, match="eps must be a positive"):
        ag.jacobian_fd(sin_scaled, 3, [x, 1.0], [y], eps=0.0)


def test_gradcheck_passes_for_a_correct_kernel():
    inputs, outputs = spring_args()
    result = ag.gradcheck(spring_like, 4, inputs, outputs, eps=1e-6)
    assert result.ok and bool(result)
    assert result.failed == 0 and result.checked == 12 * 12 + 12 * 4 + 12 + 4
    assert result.max_abs_error < 1e-6
    assert str(result).startswith("gradcheck(spring_like): ok")


def test_gradcheck_reports_the_worst_entry_when_the_adjoint_misses_a_jump():
    """An honest adjoint/FD disagreement: y = float(int(10 x)) is a staircase.

    The generated adjoint differentiates the int cast as zero (its derivative
    almost everywhere), so the analytic Jacobian is 0. At x = 0.3 the input sits on
    a step (10 x = 3), and central differences straddle it: (3 - 2) / 2e-4 = 5000.
    The other inputs are 0.05 away from any step, where both agree on 0. gradcheck
    must say not ok and point at element 1 without raising.
    """
    x, y = f64_array([0.25, 0.3, 0.55]), sk.zeros(3, dtype=f64)
    result = ag.gradcheck(truncate, 3, [x], [y], eps=1e-4)
    assert not result.ok and not result
    assert result.failed == 1 and result.checked == 9
    assert result.worst.row == 1 and result.worst.col == 1
    assert (result.worst.input_index, result.worst.input_name) == (0, "x")
    assert (result.worst.output_index, result.worst.output_name) == (0, "y")
    assert result.analytic == 0.0
    assert result.numeric == pytest.approx(5000.0, rel=1e-6)
    assert result.max_abs_error == pytest.approx(5000.0, rel=1e-6)
    text = str(result)
    assert "MISMATCH in 1 of 9" in text and "d y[1] / d x[1]" in text
    assert "GradcheckResult(ok=False" in repr(result)


def test_gradcheck_names_vector_components_in_its_report():
    a_np = np.array([[1.0, 2.0, 3.0], [-0.5, 0.25, 4.0]])
    a, b, c = f64_array(a_np, sk.vec3d), f64_array(a_np[::-1], sk.vec3d), sk.zeros(2, dtype=sk.vec3d)
    result = ag.gradcheck(cross_kernel, 2, [a, b], [c], eps=1e-6)
    assert result.ok
    assert result.worst.output_element.startswith("c[") and result.worst.output_element.count("[") == 2


def test_gradcheck_with_nothing_to_compare_is_ok():
    x, y = f64_array(X3), sk.zeros(3, dtype=f64)
    result = ag.gradcheck(sin_scaled, 3, [x, 1.0], [y], input_output_mask=[])
    assert result.ok and result.worst is None and result.checked == 0


# ---------------------------------------------------------------------------
# The caller's arrays
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [ag.jacobian, ag.jacobian_fd, ag.gradcheck])
def test_inputs_are_bit_identical_and_outputs_hold_one_forward_launch(fn):
    """sum_squares accumulates into total: afterwards it holds initial + sum x^2, added once."""
    x_np = np.array([0.1, 0.7, -1.3, 2.9])
    x = f64_array(x_np)
    total = f64_array([10.0])
    fn(sum_squares, 4, [x], [total])
    assert x.numpy().tobytes() == x_np.tobytes()
    ref = f64_array([10.0])
    sk.launch(sum_squares, 4, inputs=[f64_array(x_np)], outputs=[ref])
    assert total.numpy().tolist() == ref.numpy().tolist()


@pytest.mark.parametrize("fn", [ag.jacobian, ag.jacobian_fd, ag.gradcheck])
def test_callers_grads_and_requires_grad_flags_are_untouched(fn):
    x = f64_array(X3, requires_grad=True)
    x.grad.assign([1.0, 2.0, 3.0])
    y = sk.zeros(3, dtype=f64)  # no grad
    fn(affine, 3, [x, f64_array([1.0, 1.0])], [y])
    assert x.grad.numpy().tolist() == [1.0, 2.0, 3.0]
    assert not y.requires_grad and y.grad is None


def test_jacobian_inside_a_tape_records_nothing():
    if not hasattr(sk, "Tape"):
        pytest.skip("sk.Tape is not available")
    x, y = f64_array(X3, requires_grad=True), sk.zeros(3, dtype=f64, requires_grad=True)
    with sk.Tape() as tape:
        ag.jacobian(sin_scaled, 3, [x, 1.0], [y])
        ag.jacobian_fd(sin_scaled, 3, [x, 1.0], [y])
    assert len(tape.entries) == 0
