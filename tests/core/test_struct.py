"""@sk.struct: fields, defaults, validation, and structs as kernel arguments and locals."""

import numpy as np
import pytest

import simkit as sk


@sk.struct
class Inner:
    scale: float
    values: sk.array(dtype=float)


@sk.struct
class Params:
    k: float
    n: int
    offset: sk.vec3
    rot: sk.mat33
    weights: sk.array(dtype=float)
    inner: Inner


@sk.struct
class Defaults:
    k: float = 2.5
    n: int = 3
    v: sk.vec3 = sk.vec3(1.0, 2.0, 3.0)
    q: sk.quat
    x: sk.transform
    a: sk.array(dtype=float)
    plain: float


@sk.struct
class Point:
    x: float
    y: float

    def norm_sq(self):
        return self.x * self.x + self.y * self.y


@sk.struct
class Pair:
    a: float
    b: float


@sk.struct
class Material:
    stiffness: sk.array(dtype=float)


@sk.struct
class Body:
    material: Material


@sk.struct
class Mixed:
    flag: bool
    d: sk.float64
    u: sk.uint32
    big: sk.int64
    v: sk.vec3d
    b2: bool
    m: sk.mat22
    arr: sk.array(dtype=sk.float64)
    last: sk.int32


# -- kernels -------------------------------------------------------------------------------

@sk.kernel
def read_scalars(p: Params, out: sk.array(dtype=float)):
    out[0] = p.k
    out[1] = float(p.n)


@sk.kernel
def read_vector_and_matrix(p: Params, out: sk.array(dtype=sk.vec3)):
    out[0] = p.offset
    out[1] = p.rot @ p.offset
    out[2] = sk.vec3(p.rot[0, 1], p.rot[1, 0], p.rot[2, 2])


@sk.kernel
def read_arrays(p: Params, out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = p.weights[i] + p.inner.values[i] * p.inner.scale


@sk.kernel
def write_through_struct_array(p: Params):
    i = sk.tid()
    p.inner.values[i] = float(i) * 10.0


@sk.kernel
def assign_field_of_local_copy(p: Params, out: sk.array(dtype=float)):
    s = p
    s.k = 3.0
    out[0] = s.k
    out[1] = p.k


@sk.kernel
def construct_in_kernel(out: sk.array(dtype=float)):
    q = Pair(a=1.0)
    out[0] = q.a
    out[1] = q.b
    q.b = q.a + 2.0
    out[2] = q.b


@sk.kernel
def construct_positionally_in_kernel(x: sk.array(dtype=float), out: sk.array(dtype=float)):
    q = Pair(x[0] * x[0], b=x[1])
    r = Pair(q.b)
    out[0] = q.a
    out[1] = q.b + r.a + r.b


@sk.kernel
def construct_with_defaults(out: sk.array(dtype=float)):
    d = Defaults(plain=1.0)
    out[0] = d.k
    out[1] = d.q[3]


@sk.kernel
def stiffness_times_two(b: Body, out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = b.material.stiffness[i] * 2.0


@sk.kernel
def read_mixed(m: Mixed, out: sk.array(dtype=sk.float64)):
    out[0] = sk.float64(1.0) if m.flag else sk.float64(0.0)
    out[1] = m.d
    out[2] = sk.float64(m.u)
    out[3] = sk.float64(m.big)
    out[4] = m.v[2]
    out[5] = sk.float64(1.0) if m.b2 else sk.float64(0.0)
    out[6] = sk.float64(m.m[1, 0])
    out[7] = m.arr[1]
    out[8] = sk.float64(m.last)


def _params(**kw):
    base = dict(k=1.5, n=4, offset=sk.vec3(1, 2, 3), rot=sk.mat33(np.eye(3)),
                weights=sk.array([1.0, 2.0, 3.0]), inner=Inner(scale=2.0, values=sk.array([10.0, 20.0, 30.0])))
    base.update(kw)
    return Params(**base)


# -- Python side: fields and defaults -----------------------------------------------------------

def test_fields_are_set_by_keyword_and_read_back_typed():
    p = _params()
    assert p.k == 1.5 and p.k.dtype == np.float32
    assert p.n == 4 and p.n.dtype == np.int32
    assert type(p.offset) is sk.vec3 and p.offset == [1, 2, 3]
    assert type(p.rot) is sk.mat33
    assert p.weights.numpy().tolist() == [1, 2, 3]
    assert p.inner.scale == 2.0


def test_fields_without_defaults_start_at_zero_identity_or_none():
    d = Defaults()
    assert d.plain == 0.0
    assert d.q == [0, 0, 0, 1]
    assert d.x == [0, 0, 0, 0, 0, 0, 1]
    assert d.a is None


def test_class_level_values_are_defaults():
    d = Defaults()
    assert d.k == 2.5 and d.n == 3 and d.v == [1, 2, 3]
    assert Defaults(k=1.0).k == 1.0


def test_composite_defaults_are_copied_per_instance():
    a, b = Defaults(), Defaults()
    a.v[0] = 100.0
    assert b.v == [1, 2, 3]


def test_bad_default_is_reported_when_the_struct_is_declared():
    with pytest.raises(TypeError, match=r"Bad\.v expects vec3"):
        @sk.struct
        class Bad:
            v: sk.vec3 = (1.0, 2.0)


def test_nested_struct_field_defaults_to_a_fresh_instance():
    a, b = Params(), Params()
    assert isinstance(a.inner, Inner) and a.inner is not b.inner


def test_methods_of_the_class_are_kept():
    assert Point(x=3.0, y=4.0).norm_sq() == 25.0


def test_positional_arguments_fill_fields_in_declaration_order():
    p = Pair(1.0, b=2.0)
    assert (p.a, p.b) == (1.0, 2.0)


def test_kernel_constructs_a_struct_from_positional_fields():
    out = sk.zeros(2)
    sk.launch(construct_positionally_in_kernel, 1, inputs=[sk.array([3.0, 5.0]), out])
    np.testing.assert_array_equal(out.numpy(), [9.0, 10.0])


def test_positional_struct_fields_are_differentiable():
    x = sk.array([3.0, 5.0], requires_grad=True)
    out = sk.zeros(2)
    with sk.Tape() as tape:
        sk.launch(construct_positionally_in_kernel, 1, inputs=[x, out])
    tape.backward(grads={out: np.array([1.0, 1.0], np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 2.0])  # d(x0^2)/dx0; x1 reaches out[1] twice


def test_kernel_refuses_too_many_positional_fields():
    @sk.kernel
    def three(out: sk.array(dtype=float)):
        q = Pair(1.0, 2.0, 3.0)
        out[0] = q.a

    with pytest.raises(sk.CompileError, match=r"at most 2 positional field value\(s\) \(fields: a, b\), got 3"):
        three.build_ir()


def test_kernel_refuses_a_field_given_twice():
    @sk.kernel
    def twice(out: sk.array(dtype=float)):
        q = Pair(1.0, a=2.0)
        out[0] = q.a

    with pytest.raises(sk.CompileError, match="'a' both by position and by keyword"):
        twice.build_ir()


def test_too_many_positional_arguments_are_refused():
    with pytest.raises(TypeError, match=r"at most 2 positional .*got 3"):
        Pair(1.0, 2.0, 3.0)


def test_a_field_given_by_position_and_keyword_is_refused():
    with pytest.raises(TypeError, match="field 'a' both by position and by keyword"):
        Pair(1.0, a=2.0)


def test_unknown_field_is_an_attribute_error_listing_the_fields():
    with pytest.raises(AttributeError, match=r"no field 'c' \(fields: a, b\)"):
        Pair(c=1.0)
    p = Pair()
    with pytest.raises(AttributeError, match="no field 'c'"):
        p.c = 1.0


def test_repr_shows_every_field():
    assert repr(Pair(a=1.0, b=2.0)) == "Pair(a=1.0, b=2.0)"


def test_field_of_an_unsupported_type_is_refused():
    with pytest.raises(TypeError, match="field 'name' has unsupported type"):
        @sk.struct
        class Named:
            name: str


# -- Python side: validation on assignment -------------------------------------------------------

def test_array_field_of_the_wrong_dtype_is_a_type_error_naming_struct_and_field():
    p = _params()
    with pytest.raises(TypeError, match=r"Params\.weights"):
        p.weights = sk.zeros(3, dtype=sk.float64)


def test_array_field_of_the_wrong_ndim_is_a_type_error():
    with pytest.raises(TypeError, match=r"Params\.weights.*ndim=2"):
        _params(weights=sk.zeros((2, 2)))


def test_array_field_wraps_a_numpy_array_without_copying():
    x = np.zeros(3, np.float32)
    p = _params(weights=x)
    assert p.weights.ptr == x.ctypes.data


def test_numpy_array_of_the_wrong_dtype_for_an_array_field_names_the_field():
    with pytest.raises(TypeError, match=r"Params\.weights"):
        _params(weights=np.zeros(3))


def test_vector_field_converts_sequences_and_rejects_wrong_lengths():
    p = _params(offset=[4, 5, 6])
    assert type(p.offset) is sk.vec3 and p.offset == [4, 5, 6]
    with pytest.raises(TypeError, match=r"Params\.offset expects vec3"):
        p.offset = [1, 2]


def test_a_number_given_to_a_vector_field_is_refused_not_spread():
    p = _params()
    with pytest.raises(TypeError, match=r"Params\.offset expects vec3, got a single float"):
        p.offset = 2.0
    assert p.offset == [1, 2, 3]  # unchanged


def test_none_given_to_a_vector_or_quat_field_resets_it_to_its_unset_value():
    d = Defaults()
    d.q = sk.quat(0.0, 1.0, 0.0, 0.0)
    d.q = None
    d.x = None
    assert d.q == [0, 0, 0, 1] and d.x == [0, 0, 0, 0, 0, 0, 1]
    assert not np.isnan(d.q.numpy()).any()


def test_scalar_field_rejects_sequences_strings_and_floats_for_ints():
    p = _params()
    with pytest.raises(TypeError, match=r"Params\.k expects float32"):
        p.k = [1.0, 2.0]
    with pytest.raises(TypeError, match=r"Params\.k"):
        p.k = "x"
    with pytest.raises(TypeError, match=r"Params\.n expects int32, got a float"):
        p.n = 2.5


def test_nested_struct_field_must_be_that_struct():
    with pytest.raises(TypeError, match=r"Params\.inner expects a Inner struct"):
        _params(inner=Pair())


# -- kernels ---------------------------------------------------------------------------------

def test_kernel_reads_scalar_fields():
    out = sk.zeros(2)
    sk.launch(read_scalars, 1, inputs=[_params(), out])
    assert out.numpy().tolist() == [1.5, 4.0]


def test_fields_of_mixed_sizes_and_alignments_reach_the_kernel_intact():
    m = Mixed(flag=True, d=2.5, u=7, big=2**40, v=[1, 2, 3], b2=True, m=[1, 2, 3, 4],
              arr=sk.array([0.0, 9.0], dtype=sk.float64), last=-4)
    out = sk.zeros(9, dtype=sk.float64)
    sk.launch(read_mixed, 1, inputs=[m, out])
    assert out.numpy().tolist() == [1.0, 2.5, 7.0, 2.0**40, 3.0, 1.0, 3.0, 9.0, -4.0]


def test_out_of_range_integer_field_is_a_value_error():
    with pytest.raises(ValueError, match=r"Mixed\.u.*uint32"):
        Mixed(u=-1)


def test_kernel_reads_vector_and_matrix_fields():
    rot = sk.mat33(0, -1, 0, 1, 0, 0, 0, 0, 1)  # 90 degrees about z
    out = sk.zeros(3, dtype=sk.vec3)
    sk.launch(read_vector_and_matrix, 1, inputs=[_params(rot=rot), out])
    assert out.numpy().tolist() == [[1, 2, 3], [-2, 1, 3], [-1, 1, 1]]


def test_kernel_reads_arrays_of_the_struct_and_of_a_nested_struct():
    out = sk.zeros(3)
    sk.launch(read_arrays, 3, inputs=[_params(), out])
    assert out.numpy().tolist() == [21.0, 42.0, 63.0]


def test_kernel_writes_through_an_array_in_a_nested_struct():
    p = _params()
    sk.launch(write_through_struct_array, 3, inputs=[p])
    assert p.inner.values.numpy().tolist() == [0.0, 10.0, 20.0]


def test_field_assignment_in_a_kernel_changes_the_local_copy_only():
    p = _params()
    out = sk.zeros(2)
    sk.launch(assign_field_of_local_copy, 1, inputs=[p, out])
    assert out.numpy().tolist() == [3.0, 1.5]
    assert p.k == 1.5


def test_struct_constructed_in_a_kernel_sets_named_fields_and_zeroes_the_rest():
    out = sk.zeros(3)
    sk.launch(construct_in_kernel, 1, inputs=[out])
    assert out.numpy().tolist() == [1.0, 0.0, 3.0]


def test_struct_constructed_in_a_kernel_uses_the_same_defaults_as_python():
    out = sk.zeros(2)
    sk.launch(construct_with_defaults, 1, inputs=[out])
    assert out.numpy().tolist() == [2.5, 1.0]


def test_fields_changed_after_construction_reach_the_next_launch():
    p = _params()
    out = sk.zeros(3)
    p.weights = sk.array([0.0, 0.0, 0.0])
    p.inner.scale = 1.0
    sk.launch(read_arrays, 3, inputs=[p, out])
    assert out.numpy().tolist() == [10.0, 20.0, 30.0]


def test_vector_field_edited_in_place_reaches_the_next_launch():
    p = _params()
    p.offset[2] = 9.0
    out = sk.zeros(3, dtype=sk.vec3)
    sk.launch(read_vector_and_matrix, 1, inputs=[p, out])
    assert out.numpy()[0].tolist() == [1.0, 2.0, 9.0]


def test_kernel_refuses_a_struct_of_another_type():
    with pytest.raises(TypeError, match="'p'.*Params"):
        sk.launch(read_scalars, 1, inputs=[Pair(), sk.zeros(2)])


def test_requires_grad_set_after_the_struct_was_built_reaches_the_adjoint():
    body = Body(material=Material(stiffness=sk.array([1.0, 2.0, 3.0])))
    body.material.stiffness.requires_grad = True  # grad allocated after the struct holds the array
    out = sk.zeros(3, requires_grad=True)
    sk.launch(stiffness_times_two, 3, inputs=[body, out])
    out.grad.fill_(1.0)
    sk.launch(stiffness_times_two, 3, inputs=[body, out], adjoint=True)
    assert body.material.stiffness.grad.numpy().tolist() == [2.0, 2.0, 2.0]


def test_struct_array_gets_the_same_gradient_as_a_plain_argument_would():
    stiffness = sk.array([1.0, 2.0, 3.0], requires_grad=True)
    body = Body(material=Material(stiffness=stiffness))
    out = sk.zeros(3, requires_grad=True)
    out.grad.assign([1.0, 0.5, 0.25])
    sk.launch(stiffness_times_two, 3, inputs=[body, out], adjoint=True)
    assert stiffness.grad.numpy().tolist() == [2.0, 1.0, 0.5]


def test_struct_arrays_are_listed_with_their_paths():
    p = _params()
    assert [path for path, _ in p._sk_arrays()] == ["weights", "inner.values"]
