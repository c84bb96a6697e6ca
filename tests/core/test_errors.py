"""Bad input gets a clear error that says where and what was expected."""

import numpy as np
import pytest

import simkit as sk
from simkit.core import compiler

THIS_FILE = __file__


def compile_error(kernel) -> sk.CompileError:
    with pytest.raises(sk.CompileError) as e:
        kernel.build_ir()
    return e.value


@sk.kernel
def unknown_name(x: sk.array(dtype=float)):
    i = sk.tid()
    x[i] = undefined_helper(x[i])  # noqa: F821


def test_unknown_name_reports_file_line_and_source():
    e = compile_error(unknown_name)
    assert "unknown name 'undefined_helper'" in str(e)
    assert e.file == THIS_FILE and e.line == unknown_name.func.__code__.co_firstlineno + 3
    assert "x[i] = undefined_helper(x[i])" in str(e)
    assert "in kernel 'unknown_name'" in str(e)


@sk.kernel
def unsupported_syntax(x: sk.array(dtype=float)):
    y = [v for v in range(3)]  # noqa: F841


def test_unsupported_syntax_is_named():
    assert "unsupported expression 'ListComp'" in str(compile_error(unsupported_syntax))


@sk.kernel
def type_mismatch(x: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    x[i] = x[i] * x[i]


def test_vector_times_vector_suggests_dot_or_cw_mul():
    msg = str(compile_error(type_mismatch))
    assert "operator '*' does not accept (vec3, vec3)" in msg
    assert "sk.cw_mul" in msg and "sk.dot" in msg


@sk.kernel
def rows_of_two_lengths(x: sk.array(dtype=sk.vec3), y: sk.array(dtype=sk.vec2), m: sk.array(dtype=sk.mat33)):
    i = sk.tid()
    m[i] = sk.matrix_from_rows(x[i], y[i], x[i])


@sk.kernel
def rows_of_nothing(m: sk.array(dtype=sk.mat33)):
    m[sk.tid()] = sk.matrix_from_cols()


def test_matrix_from_rows_of_vectors_of_two_lengths_names_the_variadic_signature():
    msg = str(compile_error(rows_of_two_lengths))
    assert "matrix_from_rows() does not accept (vec3, vec2, vec3)" in msg
    assert "matrix_from_rows(*rows: vec(N,float))" in msg
    assert "matrix_from_cols() does not accept ()" in str(compile_error(rows_of_nothing))


@sk.kernel
def wrong_builtin_args(x: sk.array(dtype=sk.vec3), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = sk.dot(x[i], 1.0)


def test_wrong_builtin_arguments_list_the_accepted_signatures():
    msg = str(compile_error(wrong_builtin_args))
    assert "dot() does not accept (vec3, float literal)" in msg
    assert "dot(a: vec(N,number), b: vec(N,number))" in msg


@sk.kernel
def assigns_scalar_argument(x: sk.array(dtype=float), a: float):
    a = 2.0
    x[0] = a


def test_assigning_to_a_scalar_argument_is_rejected():
    assert "cannot assign to kernel argument 'a' (float32)" in str(compile_error(assigns_scalar_argument))


@sk.kernel
def changes_type(x: sk.array(dtype=float)):
    v = sk.vec3(1.0)
    v = 2.0
    x[0] = v


def test_a_local_cannot_change_type():
    assert "'v' changes type from vec3 to float32" in str(compile_error(changes_type))


@sk.kernel
def int_division(x: sk.array(dtype=int)):
    i = sk.tid()
    x[i] = i / 2


def test_true_division_of_integers_points_to_floor_division():
    assert "use '//' for integer division" in str(compile_error(int_division))


@sk.kernel
def undefined_after_branch(x: sk.array(dtype=float)):
    i = sk.tid()
    if i > 0:
        r = 1.0
    x[i] = r


def test_name_bound_in_one_branch_only_is_reported():
    assert "'r' is assigned only in one branch" in str(compile_error(undefined_after_branch))


@sk.kernel
def wrong_index_count(x: sk.array(dtype=float, ndim=2)):
    x[0] = 1.0


def test_array_indexed_with_too_few_indices():
    assert "2-d array indexed with 1 index(es)" in str(compile_error(wrong_index_count))


@sk.kernel
def python_round(x: sk.array(dtype=float)):
    x[0] = round(x[0])


def test_python_round_points_to_sk_round_instead_of_silently_rounding_differently():
    assert "use sk.round" in str(compile_error(python_round))


def test_missing_annotation_is_a_compile_error():
    with pytest.raises(sk.CompileError, match="kernel parameter 'x' needs a type annotation"):
        @sk.kernel
        def no_annotation(x):
            pass


@sk.kernel
def add_one(x: sk.array(dtype=float), a: float):
    i = sk.tid()
    x[i] = x[i] + a


def test_launch_with_wrong_argument_count_names_the_parameters():
    with pytest.raises(TypeError, match=r"add_one\(\) takes 2 argument\(s\) \(x, a\), got 1"):
        sk.launch(add_one, 1, inputs=[sk.zeros(1)])


def test_launch_with_wrong_dtype_names_the_parameter():
    with pytest.raises(TypeError, match=r"argument 'x' expects array\(dtype=float32, ndim=1\), got array of float64"):
        sk.launch(add_one, 1, inputs=[sk.zeros(1, dtype=sk.float64), 1.0])


def test_launch_with_wrong_ndim_names_the_parameter():
    with pytest.raises(TypeError, match="argument 'x' .* with ndim=2"):
        sk.launch(add_one, 1, inputs=[sk.zeros((1, 1)), 1.0])


def test_launch_with_a_vector_for_a_scalar_names_the_parameter():
    with pytest.raises(TypeError, match="argument 'a' expects float32, got vec3"):
        sk.launch(add_one, 1, inputs=[sk.zeros(1), sk.vec3()])


def test_launch_on_a_malformed_device_is_a_value_error():
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N', got 'gpu0'"):
        sk.launch(add_one, 1, inputs=[sk.zeros(1), 1.0], device="gpu0")


@pytest.mark.skipif(sk.is_cuda_available(), reason="this machine has a GPU")
@pytest.mark.cpu_only("about a machine without a GPU driver")
def test_launch_on_cuda_without_a_driver_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="device 'cuda:0' is not available: no CUDA driver/GPU was found"):
        sk.launch(add_one, 1, inputs=[sk.zeros(1), 1.0], device="cuda:0")


def test_numpy_array_of_the_wrong_dtype_names_the_parameter():
    with pytest.raises(TypeError, match="argument 'x'"):
        sk.launch(add_one, 1, inputs=[np.zeros(1, np.float64), 1.0])


def test_bad_dim_is_a_value_error():
    with pytest.raises(ValueError, match="dim must be"):
        sk.launch(add_one, (1, 2, 3, 4, 5), inputs=[sk.zeros(1), 1.0])


@sk.kernel
def two_d(x: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    x[i, j] = 1.0


def test_dim_must_match_the_unpacked_thread_index():
    with pytest.raises(ValueError, match=r"unpacks sk.tid\(\) into 2 index\(es\), but was launched with a 1-d dim"):
        sk.launch(two_d, 4, inputs=[sk.zeros((2, 2))])


@sk.kernel
def reads_past_the_end(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i + 1]


def test_debug_mode_reports_out_of_bounds_reads_with_kernel_line_and_index():
    x, y = sk.zeros(4), sk.zeros(4)
    sk.config.mode = "debug"
    try:
        with pytest.raises(IndexError) as e:
            sk.launch(reads_past_the_end, 4, inputs=[x, y])
    finally:
        sk.config.mode = "release"
    msg = str(e.value)
    assert "kernel 'reads_past_the_end'" in msg
    assert f":{reads_past_the_end.func.__code__.co_firstlineno + 3}" in msg
    assert "index (4,) out of bounds for array of shape (4,)" in msg
    np.testing.assert_array_equal(y.numpy()[:3], 0.0)


def test_debug_mode_leaves_later_launches_clean():
    x, y = sk.array([1.0, 2.0, 3.0, 4.0]), sk.zeros(4)
    sk.config.mode = "debug"
    try:
        with pytest.raises(IndexError):
            sk.launch(reads_past_the_end, 4, inputs=[x, y])
        sk.launch(reads_past_the_end, 3, inputs=[x, y])  # in bounds: no stale error
    finally:
        sk.config.mode = "release"
    assert y.numpy().tolist() == [2.0, 3.0, 4.0, 0.0]


def test_unknown_config_setting_and_mode_are_rejected():
    with pytest.raises(ValueError, match="'release' or 'debug'"):
        sk.config.mode = "fast"
    with pytest.raises(AttributeError, match="no setting 'modee'"):
        sk.config.modee = "debug"


@sk.kernel
def long_loop(x: sk.array(dtype=float), n: int, y: sk.array(dtype=float)):
    s = 0.0
    for k in range(n):
        s = s + x[0] * 0.5
    y[0] = s


@pytest.mark.cpu_only("the CPU's replay stack; tests/cuda/test_launch.py checks the GPU's")
def test_adjoint_of_a_loop_longer_than_its_replay_stack_is_a_clear_runtime_error():
    x, y = sk.ones(1, requires_grad=True), sk.zeros(1, requires_grad=True)
    n = sk.config.max_loop_iterations + 1
    sk.launch(long_loop, 1, inputs=[x, n, y])
    with pytest.raises(sk.KernelRuntimeError, match="max_loop_iterations"):
        sk.launch(long_loop, 1, inputs=[x, n, y], adjoint=True)


def test_missing_compiler_gives_install_instructions(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMKIT_CXX", "no-such-compiler-xyz")
    with pytest.raises(sk.CompilerNotFoundError, match="SIMKIT_CXX is set to 'no-such-compiler-xyz'"):
        compiler.find_compiler()
    monkeypatch.delenv("SIMKIT_CXX")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(sk.CompilerNotFoundError, match="apt-get install g\\+\\+"):
        compiler.find_compiler()
