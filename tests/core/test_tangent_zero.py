"""The constant-fields tangent body's algebra (simkit/core/tangent_zero.py): which tangents are
known zero, and the builtin rules without their zero terms."""

import simkit as sk
from simkit.core import codegen_tangent as CT
from simkit.core import ir
from simkit.core import tangent_zero as TZ


def test_the_terms_of_a_zero_tangent_are_dropped_and_the_rest_kept_in_order():
    assert TZ.drop_zero_terms("return tan_a * b + a * tan_b;", {"b"}) == "tan_a * b"
    assert TZ.drop_zero_terms("return tan_a * b + a * tan_b;", {"a"}) == "a * tan_b"
    assert TZ.drop_zero_terms("return tan_a / b - a * tan_b / (b * b);", {"a"}) == "-a * tan_b / (b * b)"
    assert TZ.drop_zero_terms("return dot_(tan_a, b) + dot_(a, tan_b);", {"a", "b"}) == "{}"
    assert TZ.drop_zero_terms("return -tan_a + tan_b * F(1e-5);", {"b"}) == "-tan_a"


def test_a_rule_that_is_not_a_sum_of_single_tangent_terms_is_left_alone():
    assert TZ.drop_zero_terms("F c = m::cos(x); return tan_x / (c * c);", {"x"}) is None
    assert TZ.drop_zero_terms("return (x * tan_y - y * tan_x) / (x * x + y * y);", {"x"}) is None
    assert TZ.drop_zero_terms("return a <= b ? tan_a : tan_b;", {"a"}) is None


@sk.struct
class Params:
    k: sk.array(dtype=sk.float64)


@sk.kernel
def carried(x: sk.array(dtype=sk.float64), p: Params, n: int, y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    s = p.k[i]            # a zero tangent when p.k has none ...
    for j in range(n):
        s = s * 0.5 + x[i]  # ... until the loop carries x's into it
    y[i] = s * p.k[i]


def test_a_value_a_loop_carries_a_tangent_into_is_not_known_zero():
    f = carried.build_ir()
    zero = TZ.static_zero(f, TZ.struct_field_arrays(f))
    loop = next(s for s in f.body.stmts if isinstance(s, ir.Loop))
    (c, final), = loop.carried
    first = next(s for s in f.body.stmts if isinstance(s, ir.Op) and s.outs and s.outs[0].name == "s")
    assert first.outs[0].id in zero  # s = p.k[i]: a field without tangent
    assert c.id not in zero and final.id not in zero


def test_a_kernel_reading_struct_fields_gets_a_constant_fields_entry():
    assert "_cpu_tangent_c(" in CT.kernel_tangent_source(carried.build_ir())
