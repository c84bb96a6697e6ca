"""The ``compile`` section of the bench: how long a module of five kernels takes to build
from nothing, in simkit and in warp, and how long simkit takes to load it from a warm
disk cache in a fresh process.

Each measurement runs in its own Python process on a module written for it (five small
physics-like kernels, forward and adjoint, with a fresh salt in their source so that
neither simkit's nor warp's cache has seen them): cold = the first launch of every kernel
in a process with an empty cache directory; warm = the same in a second process over the
cache the first one filled. Interpreter start-up and imports are outside the timed part.

Example::

    python tools/bench.py --only compile
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

COLD_VS_WARP = 1.0      # issue 9: a cold compile no slower than warp's
WARM_LOAD_S = 0.050     # issue 9: warm-cache load under 50 ms

_KERNELS = """
import time
import numpy as np
SALT = {salt!r}

{decorate}
def scale(x: {arr}, y: {arr}, a: float):
    i = {tid}
    y[i] = a * x[i] + 1.0

{decorate}
def spring(x: {arr}, f: {arr}, k: float):
    i = {tid}
    d = x[i] - x[(i + 1) % 64]
    f[i] = -k * d * d

{decorate}
def smooth(x: {arr}, y: {arr}):
    i = {tid}
    y[i] = {sin}(x[i]) * {sqrt}(x[i] * x[i] + 1.0)

{decorate}
def energy(x: {arr}, e: {arr}):
    i = {tid}
    {atomic}(e, 0, 0.5 * x[i] * x[i])

{decorate}
def clamp_step(x: {arr}, v: {arr}, dt: float):
    i = {tid}
    y = x[i] + v[i] * dt
    if y < 0.0:
        y = 0.0
    v[i] = y
"""

_SIMKIT_MAIN = """
import simkit as sk
t0 = time.perf_counter()
x = sk.array(np.linspace(0.1, 1.0, 64), dtype=sk.float32)
y = sk.zeros(64, dtype=sk.float32)
for k, extra in ((scale, [2.0]), (spring, [3.0]), (smooth, []), (energy, []), (clamp_step, [0.1])):
    sk.launch(k, 64, inputs=[x, y] + extra)
print(time.perf_counter() - t0)
"""

_WARP_MAIN = """
import warp as wp
wp.config.quiet = True
wp.init()
t0 = time.perf_counter()
x = wp.array(np.linspace(0.1, 1.0, 64), dtype=wp.float32, device="cpu")
y = wp.zeros(64, dtype=wp.float32, device="cpu")
for k, extra in ((scale, [2.0]), (spring, [3.0]), (smooth, []), (energy, []), (clamp_step, [0.1])):
    wp.launch(k, 64, inputs=[x, y] + extra, device="cpu")
print(time.perf_counter() - t0)
"""


def _module(folder: Path, flavour: str, salt: str) -> Path:
    if flavour == "simkit":
        body = _KERNELS.format(salt=salt, decorate="@sk.kernel", arr="sk.array(dtype=sk.float32)", tid="sk.tid()",
                               sin="sk.sin", sqrt="sk.sqrt", atomic="sk.atomic_add")
        main = "import simkit as sk\n" + body + _SIMKIT_MAIN
    else:
        body = _KERNELS.format(salt=salt, decorate="@wp.kernel", arr="wp.array(dtype=wp.float32)", tid="wp.tid()",
                               sin="wp.sin", sqrt="wp.sqrt", atomic="wp.atomic_add")
        main = "import warp as wp\n" + body + _WARP_MAIN
    path = folder / f"compile_{flavour}_{salt}.py"
    path.write_text(textwrap.dedent(main))
    return path


def _run(script: Path, env: dict) -> float | str:
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    if run.returncode != 0:
        return f"failed: {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else run.returncode}"
    return float(run.stdout.strip().splitlines()[-1])


def measure() -> dict:
    """Seconds of the cold simkit compile, the warm simkit load and the cold warp compile
    (a str where one could not run)."""
    with tempfile.TemporaryDirectory(prefix="simkit-bench-compile-") as tmp:
        folder = Path(tmp)
        salt = uuid.uuid4().hex[:8]
        env = dict(os.environ, SIMKIT_CACHE_DIR=str(folder / "simkit-cache"), WARP_CACHE_PATH=str(folder / "warp"))
        sk_script = _module(folder, "simkit", salt)
        out = {"cold": _run(sk_script, env), "warm": _run(sk_script, env)}
        try:
            import warp  # noqa: F401
        except Exception as e:  # noqa: BLE001 - any failure means "no warp here"
            out["warp"] = f"import warp failed: {type(e).__name__}"
        else:
            out["warp"] = _run(_module(folder, "warp", salt), env)
    return out


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``compile`` section with bench.py's registry."""

    @section("compile", "(f) compile: a module of 5 kernels (forward + adjoint), cold and from a warm cache")
    def bench_compile(ctx) -> Result:
        res = Result()
        m = measure()
        cold, warm, wp = m["cold"], m["warm"], m["warp"]
        if isinstance(cold, str):
            res.skipped = f"simkit {cold}"
            return res
        if isinstance(wp, str):
            res.rows.append(Row("cold compile [s]", f"{fmt(cold)} s", f"warp: {wp}"))
        else:
            res.rows.append(Row("cold compile vs warp [s]", f"{fmt(cold)} s", f"{fmt(wp)} s (warp)",
                                f"{cold / wp:.2f}x", f"<= {COLD_VS_WARP}", cold / wp <= COLD_VS_WARP))
        if isinstance(warm, str):
            res.rows.append(Row("warm-cache load [ms]", warm))
        else:
            res.rows.append(Row("warm-cache load [ms]", f"{fmt(warm * 1e3)} ms", "-", "-",
                                f"<= {WARM_LOAD_S * 1e3:.0f} ms", warm <= WARM_LOAD_S))
        res.notes.append("compile: each figure is the first launch of all five kernels in a fresh process (imports "
                         "excluded): cold with empty caches and never-seen sources, warm over the cache the cold run "
                         "filled. simkit compiles forward and adjoint of the module in one g++ run; warp builds its "
                         "module (forward and adjoint) with its bundled clang.")
        return res


if __name__ == "__main__":
    print(measure())
