"""The checks ``sk.expect_eq``, ``sk.expect_neq`` and ``sk.expect_near`` (Warp's): a failed check prints
Warp's message to stdout and the kernel goes on; they have no result and no adjoint.

Each kernel here runs one thread per row; a row whose check fails prints one message."""

import numpy as np
import pytest

import simkit as sk
from simkit.core import builtins as B
from simkit.core import codegen, compiler

M23 = sk.matrix((2, 3), sk.float64)


@sk.kernel
def eq_scalars(a: sk.array(dtype=float), b: sk.array(dtype=float), i32: sk.array(dtype=int),
               flags: sk.array(dtype=sk.bool_), done: sk.array(dtype=int)):
    i = sk.tid()
    sk.expect_eq(a[i], b[i])
    sk.expect_eq(i32[i], 7)
    sk.expect_eq(flags[i], True)
    done[i] = 1  # the kernel goes on after a failed check


@sk.kernel
def eq_composites(v: sk.array(dtype=sk.vec3), m: sk.array(dtype=M23), q: sk.array(dtype=sk.quat),
                  t: sk.array(dtype=sk.transform)):
    i = sk.tid()
    sk.expect_eq(v[i], sk.vec3(1.0, 2.0, 3.0))
    sk.expect_eq(m[i], M23())
    sk.expect_eq(q[i], sk.quat())
    sk.expect_eq(t[i], sk.transform())


@sk.kernel
def neq_values(a: sk.array(dtype=float), v: sk.array(dtype=sk.vec3), flags: sk.array(dtype=sk.bool_)):
    i = sk.tid()
    sk.expect_neq(a[i], 0.0)
    sk.expect_neq(v[i], sk.vec3(0.0, 0.0, 0.0))
    sk.expect_neq(flags[i], False)


@sk.kernel
def near_values(a: sk.array(dtype=sk.float64), v: sk.array(dtype=sk.vec3), m: sk.array(dtype=M23),
                q: sk.array(dtype=sk.quat), tol: float):
    i = sk.tid()
    sk.expect_near(a[i], sk.float64(1.0), sk.float64(0.01))
    sk.expect_near(v[i], sk.vec3(1.0, 2.0, 3.0), tol)
    sk.expect_near(m[i], M23(), sk.float64(0.5))
    sk.expect_near(q[i], sk.quat(), tol)


@sk.kernel
def checked_square(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    sk.expect_eq(x[i], 10.0)
    y[i] = x[i] * x[i]


KERNELS = [eq_scalars, eq_composites, neq_values, near_values, checked_square]


def _messages(text: str, name: str) -> list[str]:
    """The failure messages of check ``name`` in ``text``, each its lines joined by '|'."""
    blocks = text.split("Error, ")[1:]
    return ["|".join(line.strip() for line in b.strip().splitlines()) for b in blocks if b.startswith(name + "()")]


def test_expect_eq_is_silent_when_equal_and_prints_warps_message_when_not(capfd):
    done = sk.zeros(2, dtype=int)
    sk.launch(eq_scalars, 2, inputs=[sk.array([1.5, 2.0]), sk.array([1.5, 2.5]), sk.array([7, 7], dtype=int),
                                     sk.array([True, True], dtype=sk.bool_), done])
    assert _messages(capfd.readouterr().out, "expect_eq") == ["expect_eq() failed:|Expected: 2.5|Actual: 2"]
    assert done.numpy().tolist() == [1, 1]


def test_expect_eq_prints_ints_and_bools(capfd):
    sk.launch(eq_scalars, 1, inputs=[sk.array([1.0]), sk.array([1.0]), sk.array([8], dtype=int),
                                     sk.array([False], dtype=sk.bool_), sk.zeros(1, dtype=int)])
    assert _messages(capfd.readouterr().out, "expect_eq") == ["expect_eq() failed:|Expected: 7|Actual: 8",
                                                              "expect_eq() failed:|Expected: True|Actual: False"]


def test_expect_eq_prints_vectors_and_quats_as_lists_and_matrices_by_rows(capfd):
    t = np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    sk.launch(eq_composites, 1, inputs=[sk.array([[1.0, 2.0, 4.0]], dtype=sk.vec3),
                                        sk.array(np.arange(6.0).reshape(1, 2, 3), dtype=M23),
                                        sk.array([[0.0, 0.0, 0.0, 1.0]], dtype=sk.quat), sk.array(t, dtype=sk.transform)])
    assert _messages(capfd.readouterr().out, "expect_eq") == [
        "expect_eq() failed:|Expected: [1, 2, 3]|Actual: [1, 2, 4]",
        "expect_eq() failed:|Expected: [[0, 0, 0], [0, 0, 0]]|Actual: [[0, 1, 2], [3, 4, 5]]"]


def test_expect_neq_prints_when_the_values_are_equal(capfd):
    sk.launch(neq_values, 1, inputs=[sk.array([0.0]), sk.array([[0.0, 1.0, 0.0]], dtype=sk.vec3),
                                     sk.array([False], dtype=sk.bool_)])
    assert _messages(capfd.readouterr().out, "expect_neq") == ["expect_neq() failed:|Expected: 0|Actual: 0",
                                                               "expect_neq() failed:|Expected: False|Actual: False"]


def test_expect_near_prints_the_tolerance_and_the_largest_difference(capfd):
    sk.launch(near_values, 1, inputs=[sk.array([1.005], dtype=sk.float64), sk.array([[1.0, 2.5, 2.75]], dtype=sk.vec3),
                                      sk.array(np.full((1, 2, 3), 0.5), dtype=M23),
                                      sk.array([[0.0, 0.0, 0.0, 1.0]], dtype=sk.quat), 0.25])
    assert _messages(capfd.readouterr().out, "expect_near") == [
        "expect_near() failed with tolerance 0.25|Expected: [1, 2, 3]|Actual: [1, 2.5, 2.75]|"
        "Max absolute difference: 0.5"]  # 0.005 <= 0.01 and 0.5 <= 0.5 pass


def test_expect_near_fails_on_a_nan(capfd):
    sk.launch(near_values, 1, inputs=[sk.array([np.nan], dtype=sk.float64), sk.array([[1.0, 2.0, 3.0]], dtype=sk.vec3),
                                      sk.zeros(1, dtype=M23), sk.array([[np.nan, 0.0, 0.0, 1.0]], dtype=sk.quat), 0.1])
    got = _messages(capfd.readouterr().out, "expect_near")
    assert [m.split("|")[-1].lower() for m in got] == ["max absolute difference: nan"] * 2


def test_the_adjoint_pass_neither_repeats_the_check_nor_changes_the_gradient(capfd):
    x, y = sk.array([3.0, 10.0], requires_grad=True), sk.zeros(2, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(checked_square, 2, inputs=[x], outputs=[y])
    assert len(_messages(capfd.readouterr().out, "expect_eq")) == 1
    tape.backward(grads={y: np.ones(2, np.float32)})
    assert _messages(capfd.readouterr().out, "expect_eq") == []
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 20.0])


def test_expect_near_refuses_integers_naming_its_signatures():
    @sk.kernel
    def near_ints(a: sk.array(dtype=int)):
        sk.expect_near(a[0], 1, 0)

    with pytest.raises(sk.CompileError, match=r"expect_near\(\) does not accept \(int32, int literal, int literal\)"
                                              r"; expected one of:\n\s+expect_near\(a: float, b: float, tolerance: float\)"):
        sk.launch(near_ints, 1, inputs=[sk.zeros(1, dtype=int)])


def test_expect_eq_refuses_values_of_two_types():
    @sk.kernel
    def eq_mixed(a: sk.array(dtype=sk.vec3), b: sk.array(dtype=sk.vec3d)):
        sk.expect_eq(a[0], b[0])

    with pytest.raises(sk.CompileError, match=r"expect_eq\(\) does not accept \(vec3, vec3d\)"):
        sk.launch(eq_mixed, 1, inputs=[sk.zeros(1, dtype=sk.vec3), sk.zeros(1, dtype=sk.vec3d)])


def test_every_check_overload_is_exercised_by_a_kernel_here():
    checks = {b.cname: b.name for entries in B.TABLE.values() for b in entries if b.ret == "void"}
    assert set(checks.values()) == {"expect_eq", "expect_neq", "expect_near"}
    source = codegen.module_source([k.build_ir() for k in KERNELS], compiler.HEADER_NAME)
    assert {c for c in checks if f"sk::{c}(" not in source} == set()


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_flags_the_same_failures(capfd):
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def w_checks(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), i32: wp.array(dtype=int)):
        i = wp.tid()
        wp.expect_eq(a[i], 1.5)
        wp.expect_neq(i32[i], 7)
        wp.expect_near(v[i], wp.vec3(1.0, 2.0, 3.0), 0.25)

    @sk.kernel
    def s_checks(a: sk.array(dtype=float), v: sk.array(dtype=sk.vec3), i32: sk.array(dtype=int)):
        i = sk.tid()
        sk.expect_eq(a[i], 1.5)
        sk.expect_neq(i32[i], 7)
        sk.expect_near(v[i], sk.vec3(1.0, 2.0, 3.0), 0.25)

    a, v, n = np.array([1.5, 2.0, 1.5]), np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.2], [1.0, 2.6, 3.0]]), np.array([1, 7, 7])
    wp.launch(w_checks, 3, inputs=[wp.array(a, dtype=float, device="cpu"), wp.array(v, dtype=wp.vec3, device="cpu"),
                                   wp.array(n, dtype=int, device="cpu")], device="cpu")
    wp.synchronize()
    theirs = capfd.readouterr().out
    sk.launch(s_checks, 3, inputs=[sk.array(a, dtype=float), sk.array(v, dtype=sk.vec3), sk.array(n, dtype=int)])
    ours = capfd.readouterr().out
    for name in ("expect_eq", "expect_neq"):
        assert sorted(_messages(ours, name)) == sorted(_messages(theirs, name)) != [], name
    # Warp prints a vector as "1 2.6 3 ", simkit as "[1, 2.6, 3]"; the rest is the same
    lines = [(m.split("|")[0], m.split("|")[-1]) for m in _messages(ours, "expect_near")]
    assert lines == [(m.split("|")[0], m.split("|")[-1]) for m in _messages(theirs, "expect_near")] != []
