"""Arrays of structs (``sk.array(dtype=MyStruct)``): host layout, kernel reads and writes of
elements and fields, gradients of the float fields, and the errors for bad input."""

import ctypes
import re

import numpy as np
import pytest

import simkit as sk


@sk.struct
class Inner:
    a: float
    m: sk.mat22


@sk.struct
class Particle:
    x: sk.vec3
    mass: float
    id: int
    d: sk.float64
    inner: Inner


@sk.struct
class Body:
    q: sk.quat
    t: sk.transform
    flag: sk.int8


@sk.struct
class Ints:
    n: int


@sk.struct
class WithArray:
    a: sk.array(dtype=float)


@sk.func
def energy(p: Particle) -> float:
    return p.mass * sk.dot(p.x, p.x) + p.inner.a


@sk.kernel
def read_fields(ps: sk.array(dtype=Particle), out: sk.array(dtype=float), ids: sk.array(dtype=int)):
    i = sk.tid()
    out[i] = ps[i].mass + ps[i].x[1] + ps[i].inner.a + ps[i].inner.m[0, 1] + float(ps[i].d)
    ids[i] = ps[i].id


@sk.kernel
def element_to_func(ps: sk.array(dtype=Particle), out: sk.array(dtype=float)):
    i = sk.tid()
    p = ps[i]
    out[i] = energy(p) + energy(ps[i])


@sk.kernel
def write_fields(w: sk.array(dtype=float), q: sk.array(dtype=Particle)):
    i = sk.tid()
    q[i].mass = 2.0 * w[i]
    q[i].x = sk.vec3(w[i], 0.0, 1.0)
    q[i].id = i + 10
    q[i].inner.a = w[i] * w[i]
    q[i].inner.m = sk.mat22(1.0, w[i], 0.0, 1.0)


@sk.kernel
def write_whole(w: sk.array(dtype=float), q: sk.array(dtype=Particle)):
    i = sk.tid()
    q[i] = Particle(x=sk.vec3(w[i]), mass=w[i] * 3.0, id=i, d=sk.float64(0.5), inner=Inner(a=1.0))


@sk.kernel
def scatter_mass(w: sk.array(dtype=float), q: sk.array(dtype=Particle)):
    i = sk.tid()
    q[i % 2].mass += w[i]
    q[i % 2].x -= sk.vec3(w[i])
    q[i % 2].inner.a += 1.0


@sk.kernel
def grid_sum(g: sk.array(dtype=Particle, ndim=2), out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    out[i, j] = g[i, j].mass * float(g[i, j].id)


@sk.kernel
def scale_particles(ps: sk.array(dtype=Particle), s: sk.array(dtype=float), q: sk.array(dtype=Particle)):
    i = sk.tid()
    p = ps[i]
    p.x = p.x * s[i]
    p.mass = p.mass * sk.length(p.x)
    p.inner.a = sk.sin(p.inner.a) * p.mass
    q[i] = p


@sk.kernel
def loss_of(ps: sk.array(dtype=Particle), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, 0, energy(ps[i]) + ps[i].inner.m[1, 0] * ps[i].mass)


@sk.kernel
def bodies(b: sk.array(dtype=Body), out: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    out[i] = sk.quat_rotate(b[i].q, sk.vec3(1.0, 0.0, 0.0)) + sk.transform_point(b[i].t, sk.vec3(0.0))
    b[i].flag = sk.int8(3)


def _particles(n=3):
    ps = sk.zeros(n, dtype=Particle)
    h = ps.numpy().copy()
    h["x"] = np.arange(3 * n).reshape(n, 3) * 0.25
    h["mass"] = np.arange(1, n + 1)
    h["id"] = np.arange(5, 5 + n)
    h["d"] = 0.125
    h["inner"]["a"] = 0.5
    h["inner"]["m"][:, 0, 1] = 7.0
    h["inner"]["m"][:, 1, 0] = np.arange(n) * 0.5
    ps.assign(h)
    return ps


# -- host side -------------------------------------------------------------------------------

def test_numpy_gives_a_structured_array_with_the_c_layout():
    dt = sk.zeros(2, dtype=Particle).numpy().dtype
    assert dt.names == ("x", "mass", "id", "d", "inner")
    assert dt["x"] == np.dtype((np.float32, (3,))) and dt["id"] == np.int32 and dt["d"] == np.float64
    assert dt["inner"].names == ("a", "m") and dt["inner"]["m"] == np.dtype((np.float32, (2, 2)))
    c = Particle._sk_ctypes
    assert dt.itemsize == ctypes.sizeof(c) == 56
    assert [dt.fields[n][1] for n in dt.names] == [getattr(c, n).offset for n in dt.names] == [0, 12, 16, 24, 32]


def test_zeros_are_zero_in_every_field():
    h = sk.zeros(4, dtype=Particle).numpy()
    assert h.shape == (4,)
    assert not h["x"].any() and not h["mass"].any() and not h["id"].any() and not h["inner"]["m"].any()


def test_an_array_of_instances_holds_their_values():
    a = sk.array([Particle(mass=1.5, id=3), Particle(x=sk.vec3(1.0, 2.0, 3.0), inner=Inner(a=4.0))], dtype=Particle)
    h = a.numpy()
    np.testing.assert_array_equal(h["mass"], [1.5, 0.0])
    np.testing.assert_array_equal(h["id"], [3, 0])
    np.testing.assert_array_equal(h["x"][1], [1.0, 2.0, 3.0])
    assert h["inner"]["a"][1] == 4.0


def test_the_struct_dtype_is_inferred_from_instances():
    assert sk.array([Particle(), Particle()]).dtype is Particle
    assert sk.array([[Ints(n=1), Ints(n=2)], [Ints(n=3), Ints(n=4)]]).shape == (2, 2)


def test_warps_numpy_dtype_and_numpy_value_are_the_host_layout():
    assert Particle.numpy_dtype() == Particle._sk_np_dtype
    v = Particle(mass=2.5, id=4, inner=Inner(a=1.5)).numpy_value()
    assert v.dtype == Particle.numpy_dtype() and v["mass"] == 2.5 and v["id"] == 4 and v["inner"]["a"] == 1.5
    a = sk.array([v, Particle().numpy_value()], dtype=Particle)
    np.testing.assert_array_equal(a.numpy()["mass"], [2.5, 0.0])
    with pytest.raises(TypeError, match="WithArray holds arrays, so it has no numpy dtype"):
        WithArray.numpy_dtype()


def test_a_structured_numpy_array_converts_field_by_field():
    src = np.zeros(2, [("x", "<f8", (3,)), ("mass", "<f8"), ("id", "<i8"), ("d", "<f4"),
                       ("inner", [("a", "<f8"), ("m", "<f8", (2, 2))])])
    src["mass"] = [0.5, 2.5]
    src["id"] = [7, 8]
    src["inner"]["m"][1] = [[1, 2], [3, 4]]
    a = sk.array(src, dtype=Particle)
    np.testing.assert_array_equal(a.numpy()["mass"], [0.5, 2.5])
    np.testing.assert_array_equal(a.numpy()["id"], [7, 8])
    np.testing.assert_array_equal(a.numpy()["inner"]["m"][1], [[1, 2], [3, 4]])


def test_a_two_dimensional_array_of_structs_launches_over_both_axes():
    g = sk.zeros((2, 3), dtype=Particle)
    h = g.numpy().copy()
    h["mass"] = np.arange(6).reshape(2, 3)
    h["id"] = 2
    g.assign(h)
    out = sk.zeros((2, 3))
    sk.launch(grid_sum, (2, 3), inputs=[g, out])
    np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(2, 3) * 2.0)


def test_clone_copy_assign_and_fill_copy_every_field():
    a = _particles()
    b = a.clone()
    c = sk.empty_like(a)
    sk.copy(c, a)
    for other in (b, c):
        np.testing.assert_array_equal(other.numpy()["x"], a.numpy()["x"])
        np.testing.assert_array_equal(other.numpy()["inner"]["m"], a.numpy()["inner"]["m"])
    z = sk.zeros_like(a)
    assert z.dtype is Particle and not z.numpy()["mass"].any()
    z.fill_(Particle(mass=2.0, id=9, inner=Inner(a=-1.0)))
    np.testing.assert_array_equal(z.numpy()["id"], [9, 9, 9])
    np.testing.assert_array_equal(z.numpy()["inner"]["a"], [-1.0] * 3)
    z.assign(a)
    np.testing.assert_array_equal(z.numpy()["mass"], a.numpy()["mass"])


def test_a_grad_of_a_struct_array_has_the_same_struct_type():
    a = sk.zeros(3, dtype=Particle, requires_grad=True)
    assert a.grad.dtype is Particle and a.grad.shape == (3,)
    assert not a.grad.numpy()["mass"].any()


# -- kernels ---------------------------------------------------------------------------------

def test_a_kernel_reads_scalar_vector_matrix_and_nested_fields():
    ps = _particles()
    out, ids = sk.zeros(3), sk.zeros(3, dtype=int)
    sk.launch(read_fields, 3, inputs=[ps, out, ids])
    h = ps.numpy()
    np.testing.assert_allclose(out.numpy(), h["mass"] + h["x"][:, 1] + 0.5 + 7.0 + 0.125)
    np.testing.assert_array_equal(ids.numpy(), [5, 6, 7])


def test_an_element_passes_to_a_function():
    ps = _particles()
    out = sk.zeros(3)
    sk.launch(element_to_func, 3, inputs=[ps, out])
    h = ps.numpy()
    np.testing.assert_allclose(out.numpy(), 2 * (h["mass"] * (h["x"] ** 2).sum(1) + 0.5), rtol=1e-6)


def test_field_stores_write_only_their_field():
    q = sk.zeros(3, dtype=Particle)
    q.fill_(Particle(d=sk.float64(9.0)))
    sk.launch(write_fields, 3, inputs=[sk.array([1.0, 2.0, 3.0]), q])
    h = q.numpy()
    np.testing.assert_array_equal(h["mass"], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(h["x"][2], [3.0, 0.0, 1.0])
    np.testing.assert_array_equal(h["id"], [10, 11, 12])
    np.testing.assert_array_equal(h["inner"]["a"], [1.0, 4.0, 9.0])
    np.testing.assert_array_equal(h["inner"]["m"][1], [[1.0, 2.0], [0.0, 1.0]])
    np.testing.assert_array_equal(h["d"], [9.0] * 3)  # untouched


def test_a_whole_element_store_writes_every_field():
    q = sk.zeros(2, dtype=Particle)
    sk.launch(write_whole, 2, inputs=[sk.array([1.0, 2.0]), q])
    h = q.numpy()
    np.testing.assert_array_equal(h["mass"], [3.0, 6.0])
    np.testing.assert_array_equal(h["x"][1], [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(h["id"], [0, 1])
    np.testing.assert_array_equal(h["d"], [0.5, 0.5])
    np.testing.assert_array_equal(h["inner"]["a"], [1.0, 1.0])


def test_field_plus_equals_is_an_atomic_add():
    q = sk.zeros(2, dtype=Particle)
    n = 1000
    sk.launch(scatter_mass, n, inputs=[sk.ones(n), q])
    np.testing.assert_array_equal(q.numpy()["mass"], [n / 2, n / 2])
    np.testing.assert_array_equal(q.numpy()["x"][0], [-n / 2] * 3)
    np.testing.assert_array_equal(q.numpy()["inner"]["a"], [n / 2, n / 2])


def test_quat_transform_and_int8_fields_read_and_write():
    half = np.sqrt(0.5)  # a quarter turn about z, (x, y, z, w)
    b = sk.array([Body(q=sk.quat(0.0, 0.0, half, half), t=sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat())),
                  Body()], dtype=Body)
    out = sk.zeros(2, dtype=sk.vec3)
    sk.launch(bodies, 2, inputs=[b, out])
    np.testing.assert_allclose(out.numpy(), [[1.0, 3.0, 3.0], [1.0, 0.0, 0.0]], atol=1e-6)
    np.testing.assert_array_equal(b.numpy()["flag"], [3, 3])


@sk.struct
class Cloud:
    points: sk.array(dtype=Particle)
    scale: float


@sk.kernel
def through_a_struct_field(cloud: Cloud, out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = cloud.points[i].mass * cloud.scale
    cloud.points[i].inner.a += 1.0


def test_a_struct_field_holds_an_array_of_structs():
    ps = _particles()
    out = sk.zeros(3)
    sk.launch(through_a_struct_field, 3, inputs=[Cloud(points=ps, scale=2.0), out])
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(ps.numpy()["inner"]["a"], [1.5] * 3)


@pytest.mark.cpu_only("numpy memory is host memory")
def test_from_numpy_wraps_structured_data_of_the_exact_layout_without_a_copy():
    h = np.zeros(3, Particle._sk_np_dtype)
    a = sk.from_numpy(h, dtype=Particle)
    a.numpy()["mass"][1] = 4.0
    assert h["mass"][1] == 4.0
    out = sk.zeros(3)
    sk.launch(through_a_struct_field, 3, inputs=[Cloud(points=h, scale=1.0), out])  # wrapped at the launch
    np.testing.assert_array_equal(out.numpy(), [0.0, 4.0, 0.0])
    with pytest.raises(TypeError, match="is not the layout of Particle elements"):
        sk.from_numpy(np.zeros(3, [("x", "<f8", (3,)), ("mass", "<f4")]), dtype=Particle)
    with pytest.raises(TypeError, match="needs dtype= the @sk.struct"):
        sk.from_numpy(h)


# -- gradients -------------------------------------------------------------------------------

def test_a_tape_gives_the_gradient_of_every_float_field():
    ps = _particles()
    ps.requires_grad = True
    out = sk.zeros(1, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(loss_of, 3, inputs=[ps, out])
    tape.backward(loss=out)
    h, g = ps.numpy(), ps.grad.numpy()
    np.testing.assert_allclose(g["x"], 2 * h["mass"][:, None] * h["x"], rtol=1e-6)
    np.testing.assert_allclose(g["mass"], (h["x"] ** 2).sum(1) + h["inner"]["m"][:, 1, 0], rtol=1e-6)
    np.testing.assert_array_equal(g["inner"]["a"], [1.0] * 3)
    np.testing.assert_array_equal(g["inner"]["m"][:, 1, 0], h["mass"])
    np.testing.assert_array_equal(g["inner"]["m"][:, 0, 1], [0.0] * 3)
    np.testing.assert_array_equal(g["id"], [0, 0, 0])  # an int field carries no gradient


def test_field_store_gradients_flow_back_to_the_stored_values():
    w = sk.array([1.0, 2.0, 3.0], requires_grad=True)
    q = sk.zeros(3, dtype=Particle, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(write_fields, 3, inputs=[w, q])
    seed = np.zeros(3, Particle._sk_np_dtype)
    seed["mass"] = 1.0
    seed["inner"]["a"] = 1.0
    seed["inner"]["m"][:, 0, 1] = 10.0
    tape.backward(grads={q: seed})
    np.testing.assert_allclose(w.grad.numpy(), 2.0 + 2 * np.array([1.0, 2.0, 3.0]) + 10.0)


def _as_float64_particles(n=3):
    """_particles with float values moved off round numbers (finite differences in float32)."""
    ps = _particles(n)
    h = ps.numpy().copy()
    h["inner"]["a"] = [0.3, -0.7, 1.1][:n]
    ps.assign(h)
    return ps


def test_the_gradient_of_a_struct_array_matches_finite_differences():
    ps = _as_float64_particles()
    s = sk.array([0.9, 1.2, -0.4])
    q = sk.zeros(3, dtype=Particle)
    analytic = sk.autograd.jacobian(scale_particles, 3, inputs=[ps, s], outputs=[q])
    numeric = sk.autograd.jacobian_fd(scale_particles, 3, inputs=[ps, s], outputs=[q], eps=1e-2)
    assert set(analytic) == set(numeric) == {(0, 0), (1, 0)}
    for key in analytic:
        np.testing.assert_allclose(analytic[key], numeric[key], atol=2e-2, rtol=1e-2)


def test_gradcheck_passes_for_a_struct_array_kernel():
    ps = _as_float64_particles()
    result = sk.autograd.gradcheck(scale_particles, 3, inputs=[ps, sk.array([0.9, 1.2, -0.4])],
                                   outputs=[sk.zeros(3, dtype=Particle)], eps=1e-2, atol=2e-2, rtol=1e-2)
    assert result.ok, str(result)


@sk.kernel
def gather_mass(ps: sk.array(dtype=Particle), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = ps[i % 2].mass * 2.0 + ps[i % 2].x[1]


def test_gradients_and_adds_from_many_threads_into_the_same_elements_are_exact():
    before = sk.get_threads()
    sk.set_threads(4, adaptive=False)
    try:
        n = 1 << 17
        q = sk.zeros(2, dtype=Particle)
        sk.launch(scatter_mass, n, inputs=[sk.ones(n), q])
        np.testing.assert_array_equal(q.numpy()["mass"], [n / 2, n / 2])
        ps = sk.zeros(2, dtype=Particle, requires_grad=True)
        out = sk.zeros(n, requires_grad=True)
        with sk.Tape() as tape:
            sk.launch(gather_mass, n, inputs=[ps, out])
        tape.backward(grads={out: np.ones(n, np.float32)})
        np.testing.assert_array_equal(ps.grad.numpy()["mass"], [n, n])
        np.testing.assert_array_equal(ps.grad.numpy()["x"][:, 1], [n / 2, n / 2])
    finally:
        sk.set_threads(before)


# -- errors ----------------------------------------------------------------------------------

def test_a_struct_holding_arrays_cannot_be_an_array_element():
    with pytest.raises(TypeError, match="WithArray structs is not supported: its field\\(s\\) a hold arrays"):
        sk.zeros(2, dtype=WithArray)
    with pytest.raises(TypeError, match="WithArray"):
        sk.array([WithArray()], dtype=WithArray)


@sk.kernel
def reads_holders(h: sk.array(dtype=WithArray), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = h[i].a[0]


@sk.kernel
def doubles_in_the_same_module(x: sk.array(dtype=float)):
    i = sk.tid()
    x[i] = 2.0 * x[i]


def test_an_annotation_of_an_array_of_array_holding_structs_does_not_stop_its_module():
    assert sk.array(dtype=WithArray).dtype is WithArray
    x = sk.array(np.ones(2, np.float32))
    sk.launch(doubles_in_the_same_module, 2, inputs=[x])
    np.testing.assert_array_equal(x.numpy(), [2.0, 2.0])


def test_a_struct_without_float_fields_cannot_require_grad():
    with pytest.raises(TypeError, match="struct Ints has no float field"):
        sk.zeros(2, dtype=Ints, requires_grad=True)


def test_structured_data_with_other_field_names_is_refused():
    bad = np.zeros(2, [("y", "<f4", (3,)), ("mass", "<f4"), ("id", "<i4"), ("d", "<f8"),
                       ("inner", [("a", "<f4"), ("m", "<f4", (2, 2))])])
    with pytest.raises(TypeError, match=re.escape("has fields ['y', 'mass', 'id', 'd', 'inner'], but Particle has")):
        sk.array(bad, dtype=Particle)
    with pytest.raises(TypeError, match="has fields"):
        sk.zeros(2, dtype=Particle).assign(bad)


def test_structured_data_with_a_wrong_field_shape_or_kind_is_refused():
    base = [("x", "<f4", (3,)), ("mass", "<f4"), ("id", "<i4"), ("d", "<f8")]
    shape = np.zeros(1, [("x", "<f4", (2,))] + base[1:] + [("inner", [("a", "<f4"), ("m", "<f4", (2, 2))])])
    with pytest.raises(TypeError, match=re.escape("field 'x' has shape (2,) in the data, but vec3 needs (3,)")):
        sk.array(shape, dtype=Particle)
    kind = np.zeros(1, base[:2] + [("id", "<f4")] + base[3:] + [("inner", [("a", "<f4"), ("m", "<f4", (2, 2))])])
    with pytest.raises(TypeError, match="field 'id' is float32 in the data"):
        sk.array(kind, dtype=Particle)
    nested = np.zeros(1, base + [("inner", [("b", "<f4"), ("m", "<f4", (2, 2))])])
    with pytest.raises(TypeError, match="field inner has fields"):
        sk.array(nested, dtype=Particle)


def test_plain_numpy_data_for_a_struct_array_is_refused():
    with pytest.raises(TypeError, match="is not a structured array"):
        sk.array(np.zeros((2, 3)), dtype=Particle)
    with pytest.raises(TypeError, match="needs dtype="):
        sk.array(np.zeros(2, Particle._sk_np_dtype))


def test_instances_of_another_struct_are_refused():
    with pytest.raises(TypeError, match="expected a Particle instance, got Ints"):
        sk.array([Particle(), Ints()], dtype=Particle)
    with pytest.raises(TypeError, match="fill_: cannot make Particle elements from float"):
        sk.zeros(2, dtype=Particle).fill_(1.0)


@sk.kernel
def pick_and_put(ps: sk.array(dtype=Particle), which: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = ps[which[i]].inner.a
    ps[which[i]].mass = 1.0


def test_debug_mode_checks_the_bounds_of_field_reads_and_writes():
    ps, out = _particles(3), sk.zeros(2)
    sk.config.mode = "debug"
    try:
        sk.launch(pick_and_put, 2, inputs=[ps, sk.array([2, 0], dtype=int), out])
        np.testing.assert_array_equal(out.numpy(), [0.5, 0.5])
        with pytest.raises(IndexError, match=r"kernel 'pick_and_put' \(.*test_struct_arrays.py:\d+\)"):
            sk.launch(pick_and_put, 2, inputs=[ps, sk.array([1, 3], dtype=int), out])
    finally:
        sk.config.mode = "release"


@pytest.mark.cpu_only("hvp runs on the CPU only")
def test_hvp_refuses_an_array_of_structs():
    with pytest.raises(NotImplementedError, match="not implemented for arrays of structs"):
        sk.autograd.hvp(lambda ps: ps, [_particles()], [np.zeros(3, Particle._sk_np_dtype)])


def test_an_optimizer_refuses_an_array_of_structs():
    with pytest.raises(TypeError, match="must hold floats"):
        sk.optim.Adam([sk.zeros(2, dtype=Particle, requires_grad=True)])


def _compile_error(kernel):
    with pytest.raises(sk.CompileError) as e:
        kernel.build_ir()
    return str(e.value)


@sk.kernel
def reads_a_missing_field(ps: sk.array(dtype=Particle), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = ps[i].velocity


@sk.kernel
def writes_a_missing_field(ps: sk.array(dtype=Particle)):
    i = sk.tid()
    ps[i].inner.b = 1.0


@sk.kernel
def writes_a_wrong_type(ps: sk.array(dtype=Particle), v: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    ps[i].mass = v[i]


@sk.kernel
def stores_another_struct(ps: sk.array(dtype=Particle)):
    i = sk.tid()
    ps[i] = Ints(n=1)


@sk.kernel
def adds_whole_structs(ps: sk.array(dtype=Particle)):
    i = sk.tid()
    ps[i] += Particle()


def test_kernel_errors_name_the_field_or_type():
    missing = _compile_error(reads_a_missing_field)
    assert "struct Particle has no field 'velocity' (fields: x, mass, id, d, inner)" in missing
    assert "struct Inner has no field 'b' (fields: a, m)" in _compile_error(writes_a_missing_field)
    assert "expected float32, got vec3" in _compile_error(writes_a_wrong_type)
    assert "expected Particle, got Ints" in _compile_error(stores_another_struct)
    assert "not on whole structs" in _compile_error(adds_whole_structs)


# -- the CUDA path -----------------------------------------------------------------------------

def test_these_kernels_compile_to_ptx_forward_and_adjoint():
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")
    from simkit.core import codegen, compiler, nvrtc

    kernels = [k for k in globals().values() if isinstance(k, sk.Kernel) and _builds(k)]
    source = codegen.module_source([k.build_ir() for k in kernels], compiler.HEADER_NAME)
    ptx = nvrtc.compile_ptx(source, arch="sm_90", name="test_struct_arrays")
    for k in kernels:
        for entry in nvrtc.entry_names(k):
            assert re.search(rf"\.visible\s+\.entry\s+{entry}\s*\(", ptx), entry


def test_these_kernels_tangents_compile_to_ptx():
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")
    from simkit.core import codegen_tangent, nvrtc

    kernels = [k for k in globals().values() if isinstance(k, sk.Kernel) and _builds(k)]
    source = codegen_tangent.tangent_module_source([k.build_ir() for k in kernels])
    ptx = nvrtc.compile_ptx(source, arch="sm_90", name="test_struct_arrays_tangent")
    for k in kernels:
        assert re.search(rf"\.visible\s+\.entry\s+{k.build_ir().cname}_cuda_tangent\s*\(", ptx), k.name


def test_forward_mode_gives_the_reverse_mode_jacobian():
    ps = _as_float64_particles()
    s = sk.array([0.9, 1.2, -0.4])
    q = sk.zeros(3, dtype=Particle)
    fwd = sk.autograd.jacobian(scale_particles, 3, inputs=[ps, s], outputs=[q], mode="forward")
    rev = sk.autograd.jacobian(scale_particles, 3, inputs=[ps, s], outputs=[q], mode="reverse")
    for key in rev:
        np.testing.assert_allclose(fwd[key], rev[key], rtol=1e-6, atol=1e-7)


def _builds(k) -> bool:
    try:
        k.build_ir()
    except sk.CompileError:
        return False
    return True
