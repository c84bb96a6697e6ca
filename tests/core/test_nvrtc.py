"""The CUDA path: every kernel below must compile to PTX with NVRTC (no GPU needed).

Each kernel exercises a family of language features; the test compiles its module
source (the same text g++ builds for the CPU) and checks that both entry points,
forward and adjoint, are in the PTX.
"""

import re

import pytest

pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")

import simkit as sk  # noqa: E402
from simkit.core import codegen, compiler, nvrtc  # noqa: E402
from simkit.core.cuda import module as cuda_module  # noqa: E402

pytestmark = pytest.mark.cpu_only("compiles with NVRTC; launches nothing")

# ---------------------------------------------------------------------------
# Helpers and structs used by the kernels
# ---------------------------------------------------------------------------


@sk.func
def sq(x: float):
    return x * x


@sk.func
def split(x):
    return x + 1.0, x * 2.0, x > 0.0


@sk.func
def reflect(v: sk.vec3, n: sk.vec3):
    d = sk.dot(v, n)
    return v - 2.0 * d * n, d


@sk.func
def nested(v: sk.vec3):
    r, d = reflect(v, sk.normalize(sk.vec3(0.0, 1.0, 1.0)))
    return r * sq(d)


@sk.struct
class Material:
    stiffness: sk.array(dtype=float)
    damping: float


@sk.struct
class Params:
    mass: sk.array(dtype=float)
    pos: sk.array(dtype=sk.vec3)
    rot: sk.array(dtype=sk.mat33, ndim=2)
    gravity: sk.vec3
    dt: float
    mat: Material


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@sk.kernel
def k_math(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    a = x[i]
    s = sk.sin(a) + sk.cos(a) + sk.tan(a) + sk.asin(a * 0.1) + sk.acos(a * 0.1) + sk.atan(a)
    s += sk.atan2(a, 2.0) + sk.sqrt(sk.abs(a)) + sk.exp(a) + sk.log(a * a + 1.0) + sk.pow(a * a + 1.0, 1.5)
    s += sk.sinh(a) + sk.cosh(a) + sk.tanh(a) + sk.log2(a * a + 1.0) + sk.log10(a * a + 1.0)
    s += sk.min(a, 1.0) + sk.max(a, 0.5) + sk.clamp(a, -1.0, 1.0) + sk.sign(a)
    s += sk.floor(a) + sk.ceil(a) + sk.round(a) + sk.trunc(a)
    s += a % 1.5 + a // 0.5 - a / 3.0 + float(i % 3) + float(i // 2) + float(-i)
    y[i] = s


@sk.kernel
def k_math64(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64), n: sk.int64, u: sk.uint32):
    i = sk.tid()
    a = x[i]
    s = sk.sin(a) * sk.exp(0.5 * a) + sk.sqrt(a * a + 1.0) + sk.pow(a, 2.0) + sk.atan2(a, 1.0)
    s += sk.float64(n % sk.int64(7)) + sk.float64(u // sk.uint32(3)) + sk.float64(sk.float32(a))
    y[i] = s


@sk.kernel
def k_vectors(a: sk.array(dtype=sk.vec3), b: sk.array(dtype=sk.vec4), c: sk.array(dtype=sk.vec2d),
              out: sk.array(dtype=sk.vec3), lens: sk.array(dtype=float)):
    i = sk.tid()
    v = a[i]
    w = sk.vec3(b[i][0], b[i].y, 1.0)
    v[1] = v.x * 2.0
    v.z = v.z + 1.0
    u = sk.cross(v, w) + sk.normalize(w) * sk.dot(v, w) - 0.5 * v + v / 2.0 + (-w)
    u = u + sk.abs(v) + sk.min(v, w) + sk.max(v, w) + sk.cw_mul(v, w) + sk.cw_div(v, w)
    m = sk.outer(v, w)
    out[i] = m * u
    d = c[i]
    lens[i] = sk.length(u) + sk.length_sq(w) + float(sk.length(d)) + float(len(b[i]))


@sk.kernel
def k_matrices(m2: sk.array(dtype=sk.mat22), m3: sk.array(dtype=sk.mat33), m4: sk.array(dtype=sk.mat44),
               md: sk.array(dtype=sk.mat33d), out: sk.array(dtype=sk.mat33), det: sk.array(dtype=float)):
    i = sk.tid()
    a = m3[i]
    a[0, 1] = a[1, 0] + 1.0
    r = a[2]
    b = sk.inverse(a) @ sk.transpose(a) + sk.diag(r) * 2.0 - a / 3.0 + sk.identity(n=3, dtype=float)
    v = b * r + a @ r
    out[i] = b * sk.trace(a) + sk.outer(v, r)
    d4 = sk.determinant(m4[i]) + sk.trace(sk.inverse(m4[i]))
    d2 = sk.determinant(m2[i]) + sk.inverse(m2[i])[0, 1]
    dd = sk.determinant(md[i]) + sk.inverse(md[i])[1, 1]
    det[i] = sk.determinant(a) + d4 + d2 + float(dd)


@sk.kernel
def k_quats(q: sk.array(dtype=sk.quat), v: sk.array(dtype=sk.vec3), out: sk.array(dtype=sk.vec3),
            qo: sk.array(dtype=sk.quat), mo: sk.array(dtype=sk.mat33)):
    i = sk.tid()
    r = sk.quat_from_axis_angle(sk.vec3(0.0, 0.0, 1.0), 0.3 * float(i))
    p = q[i] * r
    p.w = p.w + 0.1
    p = p + 0.5 * q[i] - q[i] / 4.0
    out[i] = sk.quat_rotate(p, v[i]) + sk.quat_rotate_inv(r, v[i])
    qo[i] = sk.quat_inverse(p)
    mo[i] = sk.quat_to_matrix(r)


@sk.kernel
def k_transforms(t: sk.array(dtype=sk.transform), x: sk.array(dtype=sk.vec3), out: sk.array(dtype=sk.vec3),
                 tout: sk.array(dtype=sk.transform)):
    i = sk.tid()
    a = t[i]
    b = sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat_from_axis_angle(sk.vec3(1.0, 0.0, 0.0), 0.2))
    c = sk.transform_multiply(a, b)
    c.p = c.p + x[i]
    out[i] = sk.transform_point(c, x[i]) + sk.transform_vector(sk.transform_inverse(c), a.p)
    tout[i] = sk.transform_inverse(c)


@sk.kernel
def k_grid2d(a: sk.array(dtype=float, ndim=2), v: sk.array(dtype=sk.vec3, ndim=2), out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    n = a.shape[1]
    left = a[i, (j + n - 1) % n]
    right = a[i, (j + 1) % n]
    out[i, j] = left + right - 2.0 * a[i, j] + sk.length(v[i, j])


@sk.kernel
def k_grid4d(a: sk.array(dtype=sk.float64, ndim=4), out: sk.array(dtype=sk.float64, ndim=3)):
    i, j, k, m = sk.tid()
    sk.atomic_add(out, i, j, k, a[i, j, k, m] * a[i, j, k, m])


@sk.kernel
def k_structs(p: Params, out: sk.array(dtype=sk.vec3, ndim=2)):
    i, j = sk.tid()
    s = p
    s.dt = 2.0 * p.dt
    m = p.mat
    m.damping = m.damping + 1.0
    f = p.gravity * p.mass[i] - p.pos[j] * (p.mat.stiffness[i] + m.damping)
    out[i, j] = p.rot[i, j] * f * s.dt


@sk.kernel
def k_loops(x: sk.array(dtype=float), y: sk.array(dtype=float), n: int):
    i = sk.tid()
    acc = 0.0
    v = sk.vec3(0.0)
    for j in range(n):
        if j == 2:
            continue
        if j > 5:
            break
        acc += x[j] * float(j)
        v = v + sk.vec3(x[j], acc, 1.0)
    for j in range(n - 1, 0, -2):
        acc = acc * 0.5 + x[j]
    for j in range(3):
        acc += float(j)
    z = x[i]
    while z < 10.0:
        z = z * 2.0 + 0.1
        if z > 100.0:
            break
    k = 0
    while k < n:
        k += 1
        if k % 2 == 0:
            continue
        acc += z
    y[i] = acc + z + sk.length(v)


@sk.kernel
def k_funcs(x: sk.array(dtype=float), v: sk.array(dtype=sk.vec3), y: sk.array(dtype=float)):
    i = sk.tid()
    a, b, positive = split(x[i])
    r = nested(v[i])
    q = 0.0
    if positive:
        q = sq(a) + b
    else:
        q = sq(b)
    y[i] = q + r[0]


@sk.kernel
def k_atomics(x: sk.array(dtype=float), v: sk.array(dtype=sk.vec3), fsum: sk.array(dtype=float),
              isum: sk.array(dtype=int), vsum: sk.array(dtype=sk.vec3), lo: sk.array(dtype=float),
              hi: sk.array(dtype=float), ilo: sk.array(dtype=int), ihi: sk.array(dtype=int),
              dsum: sk.array(dtype=sk.float64), dlo: sk.array(dtype=sk.float64), lsum: sk.array(dtype=sk.int64),
              usum: sk.array(dtype=sk.uint32), vlo: sk.array(dtype=sk.vec3), vhi: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    sk.atomic_add(fsum, 0, x[i] * x[i])
    sk.atomic_sub(fsum, 1, x[i])
    sk.atomic_add(isum, 0, 1)
    old = sk.atomic_add(isum, 1, i)
    sk.atomic_add(vsum, 0, v[i] * x[i])
    sk.atomic_min(lo, 0, x[i])
    sk.atomic_max(hi, 0, x[i])
    sk.atomic_min(ilo, 0, i + old)
    sk.atomic_max(ihi, 0, i)
    sk.atomic_add(dsum, 0, sk.float64(x[i]))
    sk.atomic_min(dlo, 0, sk.float64(x[i]))
    sk.atomic_add(lsum, 0, sk.int64(i))
    sk.atomic_add(usum, 0, sk.uint32(1))
    sk.atomic_min(vlo, 0, v[i])
    sk.atomic_max(vhi, 0, v[i])


@sk.kernel
def k_select(x: sk.array(dtype=float), flags: sk.array(dtype=sk.bool_), y: sk.array(dtype=float)):
    i = sk.tid()
    a = x[i]
    b = sk.select(a > 0.0, -a, a)
    c = sk.where(flags[i], a * 2.0, b)
    d = 1.0 if (a >= 0.0 and not flags[i]) or a < -1.0 else 2.0
    e = sk.select(i == 3, sk.vec3(a), sk.vec3(b))
    if i == 0:
        sk.printf("a=%f b=%g\n", a, b)
    y[i] = b + c + d + e[0]


@sk.kernel
def k_printf(x: sk.array(dtype=float), n: sk.int64, u: sk.uint32):
    i = sk.tid()
    sk.printf("i=%d n=%lld u=%u x=%f\n", i, n, u, x[i])


KERNELS = [k_math, k_math64, k_vectors, k_matrices, k_quats, k_transforms, k_grid2d, k_grid4d, k_structs,
           k_loops, k_funcs, k_atomics, k_select, k_printf]


def _entries(ptx: str) -> set[str]:
    return set(re.findall(r"\.visible\s+\.entry\s+(\w+)\s*\(", ptx))


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_kernel_compiles_to_ptx(kernel):
    ptx = nvrtc.kernel_ptx(kernel)
    fwd, bwd = nvrtc.entry_names(kernel)
    assert fwd == f"{kernel.cname}_cuda_forward" and bwd == f"{kernel.cname}_cuda_backward"
    # extern "C": the entry points are not mangled.
    assert f".visible .entry {fwd}(" in ptx
    assert f".visible .entry {bwd}(" in ptx
    assert _entries(ptx) == {fwd, bwd}
    assert ".target sm_90" in ptx


def test_whole_module_compiles_together():
    """The translation unit sk.launch builds for this test module (all kernels at once)."""
    source = codegen.module_source([k.build_ir() for k in KERNELS], compiler.HEADER_NAME)
    ptx = nvrtc.compile_ptx(source, arch="sm_80", name="test_nvrtc_module")
    assert ".target sm_80" in ptx
    want = {name for k in KERNELS for name in nvrtc.entry_names(k)}
    assert _entries(ptx) == want


def test_a_module_compiles_to_a_cubin_for_a_real_architecture():
    """What a launch on an sm_90 GPU loads: device machine code (an ELF image) holding every entry."""
    source = codegen.module_source([k.build_ir() for k in KERNELS], compiler.HEADER_NAME)
    image = nvrtc.compile_cubin(source, "sm_90", name="test_nvrtc_cubin")
    assert image[:4] == b"\x7fELF"
    assert all(name.encode() in image for k in KERNELS for name in nvrtc.entry_names(k))


def test_a_gpu_this_nvrtc_knows_gets_a_cubin_and_a_newer_one_ptx_for_the_newest_it_knows():
    newest = max(nvrtc.supported_archs())
    assert cuda_module.target_for("sm_90") == ("cubin", "sm_90")
    assert cuda_module.target_for(f"sm_{newest + 9}") == ("ptx", f"sm_{newest}")


def test_a_gpu_older_than_every_architecture_of_this_nvrtc_is_refused_naming_them():
    with pytest.raises(RuntimeError, match=f"cannot build for sm_10; it supports sm_{min(nvrtc.supported_archs())}"):
        cuda_module.target_for("sm_10")


def test_compile_error_carries_the_log():
    source = '#include "simkit.h"\nSK_FUNC int broken(int x) { return x + undefined_name_xyz; }\n'
    with pytest.raises(nvrtc.NvrtcCompileError) as info:
        nvrtc.compile_ptx(source, name="broken_module")
    err = info.value
    assert isinstance(err, sk.NativeCompileError) and isinstance(err, RuntimeError)
    assert "undefined_name_xyz" in err.log
    assert "broken_module" in err.log  # NVRTC names the file: broken_module.cu(2): error ...
    assert "undefined_name_xyz" in str(err) and "broken_module" in str(err)


def test_bad_arch_is_a_value_error():
    with pytest.raises(ValueError, match="sm_90"):
        nvrtc.compile_ptx("", arch="volta")


def test_headers_and_version():
    hdrs = nvrtc.headers()
    assert {"simkit.h", "base.h", "vec.h", "array.h", "linalg.h", compiler.HEADER_NAME} <= set(hdrs)
    major, minor = nvrtc.version()
    assert major >= 11 and minor >= 0
    assert nvrtc.is_available()


@sk.kernel
def k_halve(x: sk.array(dtype=sk.float32), y: sk.array(dtype=sk.float32)):
    i = sk.tid()
    y[i] = x[i] * 0.5


def test_float32_arithmetic_flushes_subnormals_on_the_gpu_as_on_the_cpu():
    ptx = nvrtc.kernel_ptx(k_halve)
    assert "mul.ftz.f32" in ptx and not re.search(r"mul(\.rn)?\.f32", ptx)
