"""GPU launches: the same kernels give the same results on the CPU and the GPU; device rules; errors."""

import numpy as np
import pytest

import simkit as sk
from simkit.core import compiler
from simkit.core.cuda import module as cuda_module
from simkit.core.errors import CacheRepairWarning

F = sk.array(dtype=float)
F64 = sk.array(dtype=sk.float64)


@sk.func
def smooth(x: float):
    return x * x / (1.0 + sk.abs(x))


@sk.kernel
def k_math(x: F, y: F):
    i = sk.tid()
    a = x[i]
    y[i] = sk.sin(a) + sk.exp(0.5 * a) + sk.sqrt(a * a + 1.0) + sk.atan2(a, 2.0) + smooth(a) + float(i % 3)


@sk.kernel
def k_geometry(p: sk.array(dtype=sk.vec3), q: sk.array(dtype=sk.quat), m: sk.array(dtype=sk.mat33),
               out: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    v = sk.quat_rotate(q[i], p[i])
    out[i] = m[i] @ v + sk.cross(v, p[i]) * sk.length(p[i])


@sk.kernel
def k_grid(a: sk.array(dtype=float, ndim=2), out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    n = a.shape[1]
    out[i, j] = a[i, (j + 1) % n] - 2.0 * a[i, j] + a[i, (j + n - 1) % n]


@sk.kernel
def k_reduce4(a: sk.array(dtype=sk.float64, ndim=4), out: sk.array(dtype=sk.float64, ndim=2)):
    i, j, k, m = sk.tid()
    sk.atomic_add(out, i, j, a[i, j, k, m])


@sk.kernel
def k_atomics(x: F, ix: sk.array(dtype=int), fsum: F, lo: F, hi: F, isum: sk.array(dtype=int),
              imax: sk.array(dtype=int), lsum: sk.array(dtype=sk.int64)):
    i = sk.tid()
    sk.atomic_add(fsum, 0, x[i])
    sk.atomic_min(lo, 0, x[i])
    sk.atomic_max(hi, 0, x[i])
    sk.atomic_add(isum, 0, ix[i])
    sk.atomic_max(imax, 0, ix[i])
    sk.atomic_add(lsum, 0, sk.int64(ix[i]))


@sk.struct
class Springs:
    ke: sk.array(dtype=float)
    rest: float


@sk.struct
class Model:
    x: sk.array(dtype=sk.vec3)
    springs: Springs


@sk.kernel
def k_struct(m: Model, f: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    d = m.x[i] - m.x[(i + 1) % 4]
    f[i] = -m.springs.ke[i] * (sk.length(d) - m.springs.rest) * sk.normalize(d)


@sk.kernel
def k_loop(x: F, n: int, y: F):
    i = sk.tid()
    acc = x[i]
    k = 0
    while k < n:
        acc = acc * 0.9 + 0.1
        k += 1
    y[i] = acc


@sk.kernel
def k_scale(a: F, s: float):
    i = sk.tid()
    a[i] = a[i] * s


@sk.kernel
def k_read(x: F, index: int, out: F):
    i = sk.tid()
    out[i] = x[index + i]


@sk.kernel
def k_count(counter: sk.array(dtype=int)):
    sk.atomic_add(counter, 0, 1)


def _both(gpu, make):
    """Run ``make(device)`` on the CPU and on the GPU; the host copies of what each returns."""
    return [[a.numpy() for a in make(dev)] for dev in ("cpu", gpu)]


rng = np.random.default_rng(7)
X = rng.uniform(-2, 2, 300).astype(np.float32)


def test_math_and_functions_agree(gpu):
    def run(dev):
        x, y = sk.array(X, device=dev), sk.zeros(300, device=dev)
        sk.launch(k_math, 300, inputs=[x, y])
        return [y]
    (c,), (g,) = _both(gpu, run)
    np.testing.assert_allclose(g, c, rtol=2e-6, atol=2e-6)


def test_vectors_quaternions_and_matrices_agree(gpu):
    p = rng.normal(size=(50, 3)).astype(np.float32)
    q = rng.normal(size=(50, 4)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    m = rng.normal(size=(50, 3, 3)).astype(np.float32)

    def run(dev):
        out = sk.zeros(50, dtype=sk.vec3, device=dev)
        sk.launch(k_geometry, 50, inputs=[sk.array(p, dtype=sk.vec3, device=dev), sk.array(q, dtype=sk.quat, device=dev),
                                          sk.array(m, dtype=sk.mat33, device=dev), out])
        return [out]
    (c,), (g,) = _both(gpu, run)
    np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-5)


def test_2d_and_4d_grids_agree(gpu):
    a2 = rng.random((17, 33)).astype(np.float32)
    a4 = rng.random((3, 4, 5, 6))

    def run(dev):
        out2, out4 = sk.zeros((17, 33), device=dev), sk.zeros((3, 4), dtype=sk.float64, device=dev)
        sk.launch(k_grid, (17, 33), inputs=[sk.array(a2, device=dev), out2])
        sk.launch(k_reduce4, (3, 4, 5, 6), inputs=[sk.array(a4, dtype=sk.float64, device=dev), out4])
        return [out2, out4]
    (c2, c4), (g2, g4) = _both(gpu, run)
    np.testing.assert_allclose(g2, c2, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g4, a4.sum(axis=(2, 3)), rtol=1e-12)


def test_atomics_give_exact_integer_counts_and_extrema(gpu):
    n = 10_000
    ix = rng.integers(-50, 50, n).astype(np.int32)
    x = sk.array(X[np.arange(n) % 300], device=gpu)
    outs = [sk.zeros(1, device=gpu), sk.full(1, 1e9, device=gpu), sk.full(1, -1e9, device=gpu),
            sk.zeros(1, dtype=int, device=gpu), sk.full(1, -1000, dtype=int, device=gpu),
            sk.zeros(1, dtype=sk.int64, device=gpu)]
    sk.launch(k_atomics, n, inputs=[x, sk.array(ix, dtype=int, device=gpu), *outs])
    fsum, lo, hi, isum, imax, lsum = (o.numpy()[0] for o in outs)
    xs = X[np.arange(n) % 300]
    assert lo == xs.min() and hi == xs.max() and isum == ix.sum() and imax == ix.max() and lsum == ix.sum()
    assert fsum == pytest.approx(float(xs.sum()), rel=1e-4)
    counter = sk.zeros(1, dtype=int, device=gpu)
    sk.launch(k_count, 1_000_000, inputs=[counter])
    assert counter.numpy()[0] == 1_000_000


def test_structs_with_gpu_arrays_agree(gpu):
    x = rng.normal(size=(4, 3)).astype(np.float32)

    def run(dev):
        m = Model(x=sk.array(x, dtype=sk.vec3, device=dev),
                  springs=Springs(ke=sk.array([1.0, 2.0, 3.0, 4.0], device=dev), rest=0.5))
        f = sk.zeros(4, dtype=sk.vec3, device=dev)
        sk.launch(k_struct, 4, inputs=[m, f])
        return [f]
    (c,), (g,) = _both(gpu, run)
    np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-6)


def test_dynamic_loops_agree(gpu):
    def run(dev):
        y = sk.zeros(300, device=dev)
        sk.launch(k_loop, 300, inputs=[sk.array(X, device=dev), 37, y])
        return [y]
    (c,), (g,) = _both(gpu, run)
    np.testing.assert_allclose(g, c, rtol=1e-6)


# -- where a launch runs -----------------------------------------------------------------------

def test_a_launch_runs_where_its_arrays_are(gpu):
    a = sk.array([1.0, 2.0], device=gpu)
    sk.launch(k_scale, 2, inputs=[a, 3.0])
    sk.launch(k_scale, 2, inputs=[a, 2.0], device="cuda")
    assert a.numpy().tolist() == [6.0, 12.0] and a._version == 2


def test_mixing_devices_names_the_argument(gpu):
    with pytest.raises(ValueError, match=r"argument 'out' is on cpu, but the launch runs on cuda:0"):
        sk.launch(k_read, 1, inputs=[sk.zeros(2, device=gpu), 0, sk.zeros(1)])
    with pytest.raises(ValueError, match=r"argument 'x' is on cuda:0, but the launch runs on cpu"):
        sk.launch(k_read, 1, inputs=[sk.zeros(2, device=gpu), 0, sk.zeros(1, device=gpu)], device="cpu")
    with pytest.raises(ValueError, match=r"argument 'x' is on cpu, but the launch runs on cuda:0"):
        sk.launch(k_read, 1, inputs=[np.zeros(2, np.float32), 0, sk.zeros(1, device=gpu)])


def test_a_struct_field_on_the_wrong_device_is_named(gpu):
    m = Model(x=sk.zeros(4, dtype=sk.vec3, device=gpu), springs=Springs(ke=sk.zeros(4), rest=0.5))
    with pytest.raises(ValueError, match=r"argument 'm.springs.ke' is on cpu, but the launch runs on cuda:0"):
        sk.launch(k_struct, 4, inputs=[m, sk.zeros(4, dtype=sk.vec3, device=gpu)])
    cpu_model = Model(x=sk.zeros(4, dtype=sk.vec3), springs=Springs(ke=sk.zeros(4, device=gpu), rest=0.5))
    with pytest.raises(ValueError, match=r"argument 'm.springs.ke' is on cuda:0, but the launch runs on cpu"):
        sk.launch(k_struct, 4, inputs=[cpu_model, sk.zeros(4, dtype=sk.vec3)], device="cpu")


def test_set_device_makes_the_gpu_the_default(gpu):
    sk.set_device("cuda")
    try:
        assert sk.get_device() == "cuda:0" and sk.zeros(2).device == "cuda:0"
        counter = sk.zeros(1, dtype=int)
        sk.launch(k_count, 5, inputs=[counter])
        assert counter.numpy()[0] == 5
    finally:
        sk.set_device("cpu")


def test_synchronize_waits_for_the_gpu(gpu):
    a = sk.ones(1000, device=gpu)
    for _ in range(10):
        sk.launch(k_scale, 1000, inputs=[a, 2.0])
    sk.synchronize()
    sk.synchronize(gpu)
    assert a.numpy()[0] == 1024.0


# -- errors -----------------------------------------------------------------------------------

def test_debug_bounds_errors_raise_at_the_launch(gpu, monkeypatch):
    monkeypatch.setattr(sk.config, "mode", "debug")
    x, out = sk.zeros(4, device=gpu), sk.zeros(2, device=gpu)
    sk.launch(k_read, 2, inputs=[x, 2, out])
    with pytest.raises(IndexError, match=r"kernel 'k_read' .*index \(4,\) out of bounds for array of shape \(4,\)"):
        sk.launch(k_read, 2, inputs=[x, 3, out])
    sk.launch(k_read, 2, inputs=[x, 0, out])  # the record was cleared
    sk.synchronize()


def test_loop_stack_overflow_in_an_adjoint_is_reported_at_the_next_synchronisation(gpu, monkeypatch):
    limit = sk.config.cuda_max_loop_iterations
    x = sk.array(X[:8], device=gpu, requires_grad=True)
    y = sk.zeros(8, device=gpu, requires_grad=True)
    y.grad.fill_(1.0)
    # Past both depths: the fake driver runs the CPU build, whose stack is max_loop_iterations deep.
    too_many = max(limit, sk.config.max_loop_iterations) + 1
    sk.launch(k_loop, 8, inputs=[x, too_many, y], adjoint=True)
    with pytest.raises(sk.KernelRuntimeError, match=f"cuda_max_loop_iterations={limit} iterations on cuda:0"):
        sk.synchronize()
    sk.launch(k_loop, 8, inputs=[x, limit, y], adjoint=True)
    x.grad.numpy()  # within the limit: no error


def _forget_gpu_modules(kernel) -> None:
    for plan in kernel._plan.values():
        plan.cuda.clear()
    for k in kernel.module.kernels:
        k._cuda_loaded.clear()


def test_a_damaged_gpu_module_in_the_cache_is_rebuilt_with_a_warning(gpu, tmp_path, monkeypatch):
    monkeypatch.setattr(sk.config, "cache_dir", str(tmp_path))  # holds this module's image alone
    a = sk.ones(4, device=gpu)
    _forget_gpu_modules(k_scale)
    sk.launch(k_scale, 4, inputs=[a, 2.0])
    (image,) = [p for p in (tmp_path / "cuda").iterdir() if p.suffix in (".cubin", ".ptx")]
    image.write_bytes(image.read_bytes()[:100])
    _forget_gpu_modules(k_scale)
    before = dict(cuda_module.stats)
    with pytest.warns(CacheRepairWarning, match=f"cached module {image} is damaged"):
        sk.launch(k_scale, 4, inputs=[a, 2.0])
    assert cuda_module.stats["compiles"] == before["compiles"] + 1
    assert a.numpy().tolist() == [4.0] * 4
    assert compiler.entry_problem(image) is None


def test_a_warm_cache_loads_gpu_modules_without_nvrtc(gpu):
    a = sk.ones(4, device=gpu)
    sk.launch(k_scale, 4, inputs=[a, 2.0])
    for plan in k_scale._plan.values():
        plan.cuda.clear()
    for k in k_scale.module.kernels:
        k._cuda_loaded.clear()
    before = dict(cuda_module.stats)
    sk.launch(k_scale, 4, inputs=[a, 2.0])
    assert cuda_module.stats["compiles"] == before["compiles"]
    assert cuda_module.stats["cache_hits"] == before["cache_hits"] + 1
    assert a.numpy().tolist() == [4.0] * 4
