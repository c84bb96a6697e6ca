"""@sk.func defined again under one name with other parameter types overloads by type, as in
Warp (issue 28, item 2: the last definition used to win, so custom(1) returned vec3(2, 1, 1))."""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


@sk.func
def custom(x: int):
    return x + 1


@sk.func
def custom(x: float):  # noqa: F811 (an overload)
    return x + 1.0


@sk.func
def custom(x: sk.vec3):  # noqa: F811
    return x + sk.vec3(1.0, 0.0, 0.0)


@sk.kernel
def call_custom(a: sk.array(dtype=int), b: sk.array(dtype=float), c: sk.array(dtype=sk.vec3)):
    a[0] = custom(1)
    b[0] = custom(1.0)
    c[0] = custom(sk.vec3(1.0, 1.0, 1.0))


def test_each_call_takes_the_definition_of_its_argument_type():
    a, b, c = sk.zeros(1, dtype=int), sk.zeros(1, dtype=float), sk.zeros(1, dtype=sk.vec3)
    sk.launch(call_custom, 1, outputs=[a, b, c])
    assert a.numpy()[0] == 2 and b.numpy()[0] == 2.0
    np.testing.assert_array_equal(c.numpy()[0], [2.0, 1.0, 1.0])


def test_a_call_from_python_takes_the_definition_of_its_argument_type():
    assert custom(1) == 2 and isinstance(custom(1), int)
    assert custom(1.0) == 2.0
    np.testing.assert_array_equal(np.asarray(custom(sk.vec3(1.0, 1.0, 1.0))), [2.0, 1.0, 1.0])
    assert repr(custom) == "<sk.func custom (3 overloads)>"


@sk.func
def scaled(x: sk.float32):
    return x * sk.float32(2.0)


@sk.func
def scaled(x: F64):  # noqa: F811
    return x * 3.0


@sk.kernel
def call_scaled(x32: sk.array(dtype=sk.float32), x64: sk.array(dtype=F64), y32: sk.array(dtype=sk.float32),
                y64: sk.array(dtype=F64)):
    i = sk.tid()
    y32[i] = scaled(x32[i])
    y64[i] = scaled(x64[i])


def test_float32_and_float64_values_take_their_own_definitions():
    x32, x64 = sk.array([1.5], dtype=sk.float32), sk.array([1.5], dtype=F64)
    y32, y64 = sk.zeros(1, dtype=sk.float32), sk.zeros(1, dtype=F64)
    sk.launch(call_scaled, 1, inputs=[x32, x64], outputs=[y32, y64])
    assert y32.numpy()[0] == 3.0 and y64.numpy()[0] == 4.5


@sk.func
def replaced(x: float):
    return x + 1.0


@sk.func
def replaced(x: float):  # noqa: F811 (same types: replaces, as in Warp)
    return x + 100.0


@sk.kernel
def call_replaced(b: sk.array(dtype=float)):
    b[0] = replaced(1.0)


def test_a_definition_with_the_same_types_replaces_the_earlier_one():
    b = sk.zeros(1)
    sk.launch(call_replaced, 1, outputs=[b])
    assert b.numpy()[0] == 101.0
    assert repr(replaced) == "<sk.func replaced>"


def test_redefining_one_overload_keeps_the_others():
    @sk.func
    def f(x: int):
        return x * 10

    @sk.func
    def f(x: float):  # noqa: F811
        return x + 0.5

    @sk.func
    def f(x: float):  # noqa: F811
        return x + 0.25

    @sk.kernel
    def k(a: sk.array(dtype=int), b: sk.array(dtype=float)):
        a[0] = f(3)
        b[0] = f(1.0)

    a, b = sk.zeros(1, dtype=int), sk.zeros(1)
    sk.launch(k, 1, outputs=[a, b])
    assert a.numpy()[0] == 30 and b.numpy()[0] == 1.25
    assert len(f.members) == 2


def test_an_int_literal_takes_another_int_type_when_int32_is_not_defined():
    @sk.func
    def g(x: sk.int64):
        return x * sk.int64(3)

    @sk.func
    def g(x: sk.vec3):  # noqa: F811
        return sk.int64(0)

    @sk.kernel
    def k(a: sk.array(dtype=sk.int64)):
        a[0] = g(5)

    a = sk.zeros(1, dtype=sk.int64)
    sk.launch(k, 1, outputs=[a])
    assert a.numpy()[0] == 15


def test_an_annotated_definition_is_preferred_to_an_unannotated_one():
    @sk.func
    def kind(x):
        return 1.0

    @sk.func
    def kind(x: float):  # noqa: F811
        return 2.0

    @sk.kernel
    def k(b: sk.array(dtype=float)):
        b[0] = kind(0.5)
        b[1] = kind(sk.vec3(0.0, 0.0, 0.0))

    b = sk.zeros(2)
    sk.launch(k, 1, outputs=[b])
    np.testing.assert_array_equal(b.numpy(), [2.0, 1.0])


def test_one_overload_may_call_another():
    @sk.func
    def l1(x: float):
        return sk.abs(x)

    @sk.func
    def l1(v: sk.vec3):  # noqa: F811
        return l1(v[0]) + l1(v[1]) + l1(v[2])

    @sk.kernel
    def k(b: sk.array(dtype=float)):
        b[0] = l1(sk.vec3(1.0, -2.0, 3.5))

    b = sk.zeros(1)
    sk.launch(k, 1, outputs=[b])
    assert b.numpy()[0] == 6.5


def test_a_call_no_definition_takes_is_a_compile_error_naming_them():
    @sk.func
    def only_float(x: float):
        return x

    @sk.func
    def only_float(x: sk.vec3):  # noqa: F811
        return x[0]

    @sk.kernel
    def k(b: sk.array(dtype=float)):
        b[0] = only_float(sk.mat33())

    with pytest.raises(sk.CompileError, match=r"no definition of only_float\(\) takes \(mat33\); its definitions: "
                                              r"only_float\(x: float32\) at line \d+; only_float\(x: vec3\) at line"):
        k.build_ir()


def test_an_ambiguous_call_is_a_compile_error_naming_the_candidates():
    @sk.func
    def amb(x: sk.int64):
        return 1.0

    @sk.func
    def amb(x: sk.uint32):  # noqa: F811
        return 2.0

    @sk.kernel
    def k(b: sk.array(dtype=float)):
        b[0] = amb(7)

    with pytest.raises(sk.CompileError, match=r"the call amb\(int literal\) is ambiguous: it matches "
                                              r"amb\(x: int64\) at line \d+; amb\(x: uint32\) at line \d+"):
        k.build_ir()


def test_an_ambiguous_call_from_python_is_a_type_error():
    @sk.func
    def amb(x: sk.int64):
        return 1.0

    @sk.func
    def amb(x: sk.uint32):  # noqa: F811
        return 2.0

    with pytest.raises(TypeError, match=r"amb\(int\) is ambiguous"):
        amb(7)


def test_definitions_made_by_separate_calls_of_a_factory_stay_apart():
    def make(dtype):
        @sk.func
        def helper(x: dtype):
            return x + x
        return helper

    h32, h64 = make(sk.float32), make(F64)
    assert h32.members == [h32] and h64.members == [h64]


@sk.func
def cube(x: F64):
    return x * x * x


@sk.func
def cube(v: sk.vec3d):  # noqa: F811
    return v[0] * v[1] * v[2]


@sk.kernel
def cubes(x: sk.array(dtype=F64), v: sk.array(dtype=sk.vec3d), y: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = cube(x[i]) + cube(v[i])


def test_gradients_flow_through_each_overload():
    xs, vs = np.array([0.3, -1.2]), np.array([[1.0, 2.0, -0.5], [0.4, 0.7, 1.1]])
    x = sk.array(xs, dtype=F64, requires_grad=True)
    v = sk.array(vs, dtype=sk.vec3d, requires_grad=True)
    y = sk.zeros(2, dtype=F64, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(cubes, 2, inputs=[x, v], outputs=[y])
    tape.backward(grads={y: np.ones(2)})
    eps = 1e-6
    fd_x = ((xs + eps) ** 3 - (xs - eps) ** 3) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), fd_x, rtol=1e-8)
    fd_v = np.zeros_like(vs)
    for c in range(3):
        d = np.zeros(3)
        d[c] = eps
        fd_v[:, c] = (np.prod(vs + d, axis=1) - np.prod(vs - d, axis=1)) / (2 * eps)
    np.testing.assert_allclose(v.grad.numpy(), fd_v, rtol=1e-8)


# -- Warp as an oracle for what overloading means --------------------------------------------


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_gives_the_same_results_for_overloads_and_replacement():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.func
    def wcustom(x: int):
        return x + 1

    @wp.func
    def wcustom(x: float):  # noqa: F811
        return x + 1.0

    @wp.func
    def wcustom(x: wp.vec3):  # noqa: F811
        return x + wp.vec3(1.0, 0.0, 0.0)

    @wp.func
    def wreplaced(x: float):
        return x + 1.0

    @wp.func
    def wreplaced(x: float):  # noqa: F811
        return x + 100.0

    @wp.kernel
    def k(a: wp.array(dtype=int), b: wp.array(dtype=float), c: wp.array(dtype=wp.vec3)):
        a[0] = wcustom(1)
        b[0] = wcustom(1.0)
        c[0] = wcustom(wp.vec3(1.0, 1.0, 1.0))
        b[1] = wreplaced(1.0)

    a, b = wp.zeros(1, dtype=int, device="cpu"), wp.zeros(2, dtype=float, device="cpu")
    c = wp.zeros(1, dtype=wp.vec3, device="cpu")
    wp.launch(k, 1, outputs=[a, b, c], device="cpu")
    assert a.numpy()[0] == 2 and b.numpy()[0] == 2.0 and b.numpy()[1] == 101.0
    np.testing.assert_array_equal(c.numpy()[0], [2.0, 1.0, 1.0])
