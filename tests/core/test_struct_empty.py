"""@sk.struct without fields (as Warp allows): instances carry nothing but pass to kernels and functions."""

import numpy as np
import pytest

import simkit as sk


@sk.struct
class Empty:
    pass


@sk.struct
class Holder:
    before: float
    nothing: Empty
    after: float


@sk.func
def scaled(e: Empty, x: float):
    return x * 3.0


@sk.kernel
def around_an_empty_struct(a: float, e: Empty, b: sk.float64, x: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    local = Empty()
    out[i] = scaled(e, x[i]) + scaled(local, a) + float(b)


@sk.kernel
def read_holder(h: Holder, out: sk.array(dtype=float)):
    out[0] = h.before
    out[1] = h.after


def test_an_empty_struct_builds_and_shows_no_fields():
    assert repr(Empty()) == "Empty()"
    assert Empty._sk_fields == {}


def test_an_empty_struct_refuses_any_field():
    with pytest.raises(AttributeError, match="no field 'x'"):
        Empty(x=1.0)
    with pytest.raises(TypeError, match="at most 0 positional"):
        Empty(1.0)


def test_arguments_around_an_empty_struct_reach_the_kernel_intact():
    out = sk.zeros(2)
    sk.launch(around_an_empty_struct, 2, inputs=[2.0, Empty(), 5.0, sk.array([1.0, 10.0]), out])
    np.testing.assert_array_equal(out.numpy(), [3.0 + 6.0 + 5.0, 30.0 + 6.0 + 5.0])


def test_fields_around_a_nested_empty_struct_reach_the_kernel_intact():
    out = sk.zeros(2)
    sk.launch(read_holder, 1, inputs=[Holder(before=1.5, after=-2.5), out])
    np.testing.assert_array_equal(out.numpy(), [1.5, -2.5])


def test_a_kernel_taking_an_empty_struct_is_differentiable():
    x = sk.array([1.0, 10.0], requires_grad=True)
    out = sk.zeros(2, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(around_an_empty_struct, 2, inputs=[2.0, Empty(), 5.0, x, out])
    tape.backward(grads={out: np.array([1.0, 2.0], np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 6.0])


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_gives_the_same_result_for_an_empty_struct():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()

    @wp.struct
    class WEmpty:
        pass

    @wp.func
    def wscaled(e: WEmpty, x: float):
        return x * 3.0

    @wp.kernel
    def k(a: float, e: WEmpty, b: wp.float64, x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        local = WEmpty()
        out[i] = wscaled(e, x[i]) + wscaled(local, a) + float(b)

    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(k, 2, inputs=[2.0, WEmpty(), 5.0, wp.array([1.0, 10.0], dtype=float, device="cpu"), out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), [3.0 + 6.0 + 5.0, 30.0 + 6.0 + 5.0])
