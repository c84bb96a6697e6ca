"""Arrays of structs against Warp 1.19: the same kernel text, imported once as ``import warp as M``
and once as ``import simkit as M``, gives the same numpy layout, values and gradients."""

import importlib.util
import sys

import numpy as np
import pytest

import simkit as sk

# -- the same kernel text under Warp ----------------------------------------------------------

# Run once as `import warp as M` and once as `import simkit as M` (Warp reads a kernel's source
# from its file, so the text goes into a module file of its own).
KERNEL_TEXT = """
import LIB as M


@M.struct
class WInner:
    a: float
    m: M.mat22


@M.struct
class WParticle:
    x: M.vec3
    mass: float
    id: int
    inner: WInner


@M.func
def w_energy(p: WParticle):
    return p.mass * M.dot(p.x, p.x) + p.inner.a


@M.kernel
def w_step(ps: M.array(dtype=WParticle), s: M.array(dtype=float), q: M.array(dtype=WParticle),
           out: M.array(dtype=float)):
    i = M.tid()
    p = ps[i]
    x = ps[i].x * s[i]
    q[i].x = x
    q[i].mass = ps[i].mass * M.length(x) + ps[i].inner.m[0, 1]
    q[i].id = ps[i].id * 2
    inner = WInner()
    inner.a = M.sin(ps[i].inner.a) * s[i]
    inner.m = ps[i].inner.m * s[i]
    q[i].inner = inner
    M.atomic_add(out, 0, w_energy(p) * s[i])
"""


def _import_text(lib: str, folder):
    name = f"struct_arrays_under_{lib}"
    path = folder / f"{name}.py"
    path.write_text(KERNEL_TEXT.replace("LIB", lib))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run_text(M, k, np_dtype, **device):
    """Values and gradients of one taped launch of w_step: q, out, ps.grad, s.grad."""
    n = 4
    rng = np.random.default_rng(1)
    h = np.zeros(n, np_dtype)
    h["x"] = rng.normal(size=(n, 3))
    h["mass"] = rng.uniform(1.0, 2.0, n)
    h["id"] = np.arange(n)
    h["inner"]["a"] = rng.normal(size=n)
    h["inner"]["m"] = rng.normal(size=(n, 2, 2))
    ps = M.array(h, dtype=k.WParticle, requires_grad=True, **device)
    s = M.array(rng.uniform(0.5, 1.5, n).astype(np.float32), dtype=M.float32, requires_grad=True, **device)
    q = M.zeros(n, dtype=k.WParticle, requires_grad=True, **device)
    out = M.zeros(1, dtype=M.float32, requires_grad=True, **device)
    tape = M.Tape()
    with tape:
        M.launch(k.w_step, n, inputs=[ps, s, q, out], **device)
    seed = np.zeros(n, np_dtype)
    seed["mass"] = 1.0
    seed["x"] = [1.0, -2.0, 0.5]
    seed["inner"]["a"] = 3.0
    seed["inner"]["m"] = [[1.0, 2.0], [3.0, 4.0]]
    q.grad.assign(seed)
    out.grad.assign(np.ones(1, np.float32))
    tape.backward()  # both take the seeds already in the grads
    return q.numpy(), out.numpy(), ps.grad.numpy(), s.grad.numpy()


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_warp_gives_the_same_layout_values_and_gradients_for_the_same_kernel_text(tmp_path):
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()
    wk, sk_k = _import_text("warp", tmp_path), _import_text("simkit", tmp_path)
    assert sk_k.WParticle._sk_np_dtype == wk.WParticle.numpy_dtype()
    theirs = _run_text(wp, wk, wk.WParticle.numpy_dtype(), device="cpu")
    ours = _run_text(sk, sk_k, sk_k.WParticle._sk_np_dtype)
    for t, o in zip(theirs, ours):
        assert t.dtype == o.dtype
        if t.dtype.names is None:
            np.testing.assert_allclose(o, t, rtol=1e-5)
            continue
        for name in ("x", "mass", "id"):
            np.testing.assert_allclose(o[name], t[name], rtol=1e-5, atol=1e-6)
        for name in ("a", "m"):
            np.testing.assert_allclose(o["inner"][name], t["inner"][name], rtol=1e-5, atol=1e-6)
    assert np.abs(ours[2]["inner"]["a"]).min() > 0 and np.abs(ours[2]["x"]).min() > 0  # a real check
