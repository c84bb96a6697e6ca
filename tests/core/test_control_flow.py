"""The kernel language's statements and control flow, each against plain Python."""

import numpy as np
import pytest

import simkit as sk
from simkit.core import launch as L

SCALE = 3.0
HALF = sk.constant(0.5)


def run(kernel, n, *arrays_and_args):
    """Launch with numpy inputs copied to the default device (the test's device)."""
    sk.launch(kernel, n, inputs=[sk.array(a) if isinstance(a, np.ndarray) else a for a in arrays_and_args])


@sk.kernel
def if_elif_else(x: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    v = x[i]
    if v < -1.0:
        r = -10.0
    elif v < 1.0:
        r = v * 2.0
    else:
        r = 10.0
    out[i] = r


def test_if_elif_else_picks_the_branch_python_would():
    x = np.array([-3.0, -0.5, 0.0, 0.7, 5.0], np.float32)
    out = sk.zeros(5)
    run(if_elif_else, 5, x, out)
    np.testing.assert_allclose(out.numpy(), [-10.0, -1.0, 0.0, 1.4, 10.0], rtol=1e-6)


@sk.kernel
def ternary(x: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = x[i] if x[i] > 0.0 else -x[i] * 2.0


def test_ternary_expression():
    out = sk.zeros(3)
    run(ternary, 3, np.array([1.0, -2.0, 0.0], np.float32), out)
    np.testing.assert_allclose(out.numpy(), [1.0, 4.0, -0.0])


@sk.kernel
def ranges(n: int, out: sk.array(dtype=int)):
    a = 0
    for i in range(n):
        a += i
    b = 0
    for i in range(2, n):
        b += i
    c = 0
    for i in range(n, 0, -2):
        c += i
    d = 0
    for i in range(4):  # constant bounds: unrolled
        d += i * 10
    out[0] = a
    out[1] = b
    out[2] = c
    out[3] = d


def test_range_forms_with_one_two_three_arguments():
    out = sk.zeros(4, dtype=int)
    run(ranges, 1, 7, out)
    assert out.numpy().tolist() == [sum(range(7)), sum(range(2, 7)), sum(range(7, 0, -2)), 60]


@sk.kernel
def break_continue(n: int, out: sk.array(dtype=int)):
    total = 0
    for i in range(n):
        if i % 2 == 1:
            continue
        if i > 10:
            break
        total += i
    k = 0
    while True:
        k += 1
        if k >= 7:
            break
    out[0] = total
    out[1] = k


def test_break_and_continue_in_dynamic_and_while_loops():
    out = sk.zeros(2, dtype=int)
    run(break_continue, 1, 100, out)
    assert out.numpy().tolist() == [0 + 2 + 4 + 6 + 8 + 10, 7]


@sk.kernel
def unrolled_break(out: sk.array(dtype=int)):
    s = 0
    for i in range(8):
        if i == 5:
            break
        if i == 1:
            continue
        s += i
    out[0] = s


def test_break_and_continue_in_unrolled_loops():
    out = sk.zeros(1, dtype=int)
    run(unrolled_break, 1, out)
    assert out.numpy()[0] == 0 + 2 + 3 + 4


@sk.kernel
def nested_loops(n: int, out: sk.array(dtype=int)):
    count = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            count += 1
    out[0] = count


def test_inner_break_leaves_only_the_inner_loop():
    out = sk.zeros(1, dtype=int)
    run(nested_loops, 1, 6, out)
    assert out.numpy()[0] == 21


@sk.kernel
def early_return(x: sk.array(dtype=float), n: int):
    i = sk.tid()
    if i >= n:
        return
    x[i] = 1.0


def test_early_return_skips_the_rest_of_the_kernel():
    x = sk.zeros(6)
    run(early_return, 6, x, 4)
    assert x.numpy().tolist() == [1, 1, 1, 1, 0, 0]


@sk.kernel
def short_circuit(x: sk.array(dtype=float), n: int, out: sk.array(dtype=int)):
    i = sk.tid()
    if i < n and x[i] > 0.0:
        out[i] = 1
    if i >= n or x[i] < 0.0:
        out[i] = 2


def test_and_or_short_circuit_never_read_out_of_bounds():
    sk.config.mode = "debug"  # an evaluated x[i] with i >= n would raise IndexError here
    try:
        out = sk.zeros(5, dtype=int)
        run(short_circuit, 5, np.array([1.0, -1.0, 0.0], np.float32), 3, out)
    finally:
        sk.config.mode = "release"
    assert out.numpy().tolist() == [1, 2, 0, 2, 2]


@sk.kernel
def nested_logic(bits: sk.array(dtype=int), out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    a = bits[i] & 1 != 0
    b = bits[i] & 2 != 0
    c = bits[i] & 4 != 0
    d = bits[i] & 8 != 0
    out[i, 0] = int(a or (b and c))
    out[i, 1] = int(a and (b or c))
    out[i, 2] = int(a or b or (c and d))
    out[i, 3] = int((a and b) or (c and d))
    out[i, 4] = 1 if a else (2 if b else 3)
    out[i, 5] = int(a or (b if c else d))
    r = 0
    for _k in range(2):  # the form the mesh distance's triangle search had (issue 28)
        if a or b or (c and d):
            r = r + 1
    out[i, 6] = r


def test_nested_and_or_and_conditional_expressions_give_what_python_gives():
    # an operand that itself branches (a nested and / or / if-else) was evaluated into a
    # branch's discarded copy of the variables: `a or (b and c)` was `a` (issue 28)
    bits = np.arange(16, dtype=np.int32)
    out = sk.zeros((16, 7), dtype=int)
    run(nested_logic, 16, bits, out)
    for n, row in zip(bits, out.numpy()):
        a, b, c, d = (bool(n & k) for k in (1, 2, 4, 8))
        expected = [a or (b and c), a and (b or c), a or b or (c and d), (a and b) or (c and d),
                    1 if a else (2 if b else 3), a or (b if c else d), 2 * (a or b or (c and d))]
        assert row.tolist() == [int(e) for e in expected], (a, b, c, d)


@sk.kernel
def comparisons(x: sk.array(dtype=float), out: sk.array(dtype=int)):
    i = sk.tid()
    v = x[i]
    out[i] = 1 if 0.0 <= v < 1.0 and not v == 0.5 else 0


def test_chained_comparison_and_not():
    out = sk.zeros(4, dtype=int)
    run(comparisons, 4, np.array([0.0, 0.5, 0.9, 1.0], np.float32), out)
    assert out.numpy().tolist() == [1, 0, 1, 0]


@sk.kernel
def augmented(out: sk.array(dtype=sk.vec3), m_out: sk.array(dtype=sk.mat22)):
    v = sk.vec3(1.0, 2.0, 3.0)
    v[0] += 10.0
    v.y *= 2.0
    v -= sk.vec3(1.0)
    m = sk.mat22(1.0, 2.0, 3.0, 4.0)
    m[1, 0] = 7.0
    m[0, 1] += 1.0
    out[0] = v
    m_out[0] = m


def test_component_assignment_and_augmented_assignment():
    out = sk.zeros(1, dtype=sk.vec3)
    m = sk.zeros(1, dtype=sk.mat22)
    run(augmented, 1, out, m)
    assert out.numpy()[0].tolist() == [10.0, 3.0, 2.0]
    assert m.numpy()[0].tolist() == [[1.0, 3.0], [7.0, 4.0]]


@sk.kernel
def array_augmented(hist: sk.array(dtype=int), x: sk.array(dtype=float)):
    i = sk.tid()
    hist[i % 4] += 1
    x[0] -= 0.5


def test_array_element_augmented_assignment_is_atomic():
    hist = sk.zeros(4, dtype=int)
    x = sk.zeros(1)
    run(array_augmented, 100_000, hist, x)
    assert hist.numpy().tolist() == [25_000] * 4
    assert x.numpy()[0] == -50_000.0


@sk.kernel
def conversions(x: sk.array(dtype=float), out_i: sk.array(dtype=int), out_d: sk.array(dtype=sk.float64)):
    i = sk.tid()
    out_i[i] = int(x[i])
    out_d[i] = sk.float64(x[i]) * 2.0 + sk.float64(float(i))


def test_type_conversions():
    oi, od = sk.zeros(2, dtype=int), sk.zeros(2, dtype=sk.float64)
    run(conversions, 2, np.array([2.7, -1.5], np.float32), oi, od)
    assert oi.numpy().tolist() == [2, -1]
    np.testing.assert_allclose(od.numpy(), [5.4, -2.0], rtol=1e-6)


@sk.kernel
def captured(out: sk.array(dtype=float)):
    out[0] = SCALE * HALF + sk.static(2.0 ** 4)


def test_module_constants_and_static_are_evaluated_at_compile_time():
    out = sk.zeros(1)
    run(captured, 1, out)
    assert out.numpy()[0] == 3.0 * 0.5 + 16.0


@sk.kernel
def weak_literals(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    acc = 0.0  # becomes float64 because it accumulates float64 values
    for j in range(i + 1):
        acc += 0.5 * x[j]
    out[i] = acc * 2 + 1


def test_literals_take_the_type_of_the_other_operand():
    x = np.array([1.0, 1e-9, 3.0])
    out = sk.zeros(3, dtype=sk.float64)
    run(weak_literals, 3, sk.array(x, dtype=sk.float64), out)
    np.testing.assert_allclose(out.numpy(), np.cumsum(x) + 1, rtol=1e-15)


@sk.func
def times(a, b):
    return a * b


@sk.func
def half_scaled(x):
    s = 0.5                      # literal-initialised, passed on with a float64
    s = times(s, x)
    return s


@sk.func
def repeated_add(x, n: int):
    s = 0.0
    for k in range(n):
        s = times(s, 1.0) + x    # a generic call fed only literals, then a float64
    return s


@sk.func
def bisect_sqrt(x):
    lo = 0.0
    hi = 4.0
    for it in range(2 * len_of_bisection()):
        mid = 0.5 * (lo + hi)    # computed only from literal-initialised locals
        if mid * mid > x:
            hi = mid
        else:
            lo = mid
    return lo


@sk.func
def len_of_bisection() -> int:
    return 30


@sk.kernel
def generic_literals(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64, ndim=2)):
    i = sk.tid()
    out[i, 0] = half_scaled(x[i])
    out[i, 1] = repeated_add(x[i], 3)
    out[i, 2] = bisect_sqrt(x[i])


def test_generic_functions_with_literal_initialised_locals_infer_float64():
    x = np.array([2.0, 3.0, 1e-9 + 1.0])
    out = sk.zeros((3, 3), dtype=sk.float64)
    run(generic_literals, 3, sk.array(x, dtype=sk.float64), out)
    got = out.numpy()
    np.testing.assert_array_equal(got[:, 0], 0.5 * x)
    np.testing.assert_array_equal(got[:, 1], 3 * x)
    np.testing.assert_allclose(got[:, 2], np.sqrt(x), rtol=1e-15)   # float32 would stop at ~1e-7


@sk.kernel
def literal_used_as_two_types(x: sk.array(dtype=sk.float64), y: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    a = 0.0
    b = a + x[i]
    out[i] = a + y[i] + float(b)


def test_a_literal_local_needed_as_two_float_types_is_a_compile_error_at_the_mixed_operation():
    out = sk.zeros(1)
    with pytest.raises(sk.CompileError, match=r"operator '\+' does not accept \(float64, float32\)"):
        run(literal_used_as_two_types, 1, sk.array([1.0], dtype=sk.float64), sk.array([2.0]), out)


@sk.func
def min_max(a: float, b: float):
    if a < b:
        return a, b
    return b, a


@sk.func
def first_negative(x: sk.array(dtype=float), n: int) -> int:
    for i in range(n):
        if x[i] < 0.0:
            return i
    return -1


@sk.func
def twice(v):
    return v * 2.0


@sk.kernel
def funcs(x: sk.array(dtype=float), out: sk.array(dtype=float), idx: sk.array(dtype=int),
          vd: sk.array(dtype=sk.vec3d)):
    lo, hi = min_max(x[0], x[1])
    out[0] = lo
    out[1] = hi
    idx[0] = first_negative(x, 4)
    vd[0] = twice(vd[0])


def test_functions_with_multiple_returns_early_returns_and_generic_parameters():
    out, idx = sk.zeros(2), sk.zeros(1, dtype=int)
    vd = sk.array([[1.0, 2.0, 3.0]], dtype=sk.vec3d)
    run(funcs, 1, np.array([5.0, 2.0, -1.0, -3.0], np.float32), out, idx, vd)
    assert out.numpy().tolist() == [2.0, 5.0]
    assert idx.numpy()[0] == 2
    assert vd.numpy()[0].tolist() == [2.0, 4.0, 6.0]


@sk.kernel
def grid4(out: sk.array(dtype=int, ndim=4)):
    i, j, k, l = sk.tid()
    out[i, j, k, l] = i * 1000 + j * 100 + k * 10 + l


def test_four_dimensional_launch_gives_each_thread_its_index():
    out = sk.zeros((2, 3, 4, 5), dtype=int)
    sk.launch(grid4, (2, 3, 4, 5), outputs=[out])
    i, j, k, l = np.indices((2, 3, 4, 5))
    assert np.array_equal(out.numpy(), i * 1000 + j * 100 + k * 10 + l)


@sk.kernel
def count_once(hist: sk.array(dtype=int)):
    i = sk.tid()
    hist[i] += 1


GRAIN = L.grain_of(count_once.build_ir(), adjoint=False)


@pytest.mark.parametrize("n", [0, 1, GRAIN - 1, GRAIN, 100_003])
def test_every_thread_runs_exactly_once_for_any_grid_size(n):
    # on a pool of 4 threads, so that grids from the grain on are really split
    before = sk.get_threads()
    sk.set_threads(4)
    try:
        hist = sk.zeros(max(n, 1), dtype=int)
        sk.launch(count_once, n, inputs=[hist])
    finally:
        sk.set_threads(before)
    assert hist.numpy()[:n].sum() == n and (n == 0 or hist.numpy()[:n].max() == 1)


@sk.kernel
def continued_line(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    x = a[0] + a[2] \
        + a[3]
    out[0] = x


def test_a_backslash_line_continuation_keeps_every_term():
    # the source-line comment in the generated C++ must not swallow the next statement
    out = sk.zeros(1)
    sk.launch(continued_line, 1, inputs=[sk.array([1.0, 2.0, 3.0, 4.0]), out])
    assert out.numpy()[0] == 8.0
