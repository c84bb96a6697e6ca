"""The ``sim_compile`` section of the bench: how long the physics kernels take to compile
from nothing, the first time a cloth step, a soft-body step, a rigid-body step and an XPBD
step run, and how long warp-lang takes for its first launch of the same kinds of kernels.

Each measurement is a fresh Python process with an empty ``SIMKIT_CACHE_DIR``: it builds
four small float32 models (the step cost is negligible next to compiling), then times the
first ``step`` of each (semi-implicit cloth, semi-implicit soft grid, semi-implicit rigid
bodies with shapes and a joint, XPBD over cloth and jointed bodies with shapes). Imports and
model building are outside the timed part. Each first step starts the modules it launches
compiling at once, one per core (``sk.compile_ahead``). The figure is the sum of the four
first steps, with the number of C++ compiler runs they took; a regression guard for the
generic kernels of issue 22 (cold compile of the sim kernels must not grow).

The warp side (issue 30, item 5) is one more fresh process, with ``wp.config.kernel_cache_dir``
an empty folder: the first step of the cloth model through the warp ports of
``bench_sim_warp.py``, whose one module holds the kernels of simkit's cloth and soft steps
(particle integration, springs, ground contact, triangle membranes, bending, tetrahedra),
forward and adjoint. It is set against simkit's cloth and soft first steps together.

Example::

    python tools/bench.py --only sim_compile
"""

import json
import os
import subprocess
import sys
import tempfile

REPS = 2  # cold runs per figure; the minimum is reported (a 2-core machine shared with others)

TOOLS = os.path.dirname(os.path.abspath(__file__))

# the models, shared by the simkit and the warp processes
_MODELS = r"""
import simkit as sk

def cloth():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 4, 4, 0.1, 0.1,
                     mass=1e-3, fix_left=True, k_mu=1e3, k_lambda=1e3, k_damp=0.1, edge_ke=1e-3)
    i = b.add_particle((0.0, 0.5, 0.0), (0.0, 0.0, 0.0), 1e-3)
    b.add_spring(0, i, ke=10.0, kd=0.1)
    return b.finalize()

def soft():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_soft_grid((0.0, 0.01, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 2, 2, 2, 0.02, 0.02, 0.02,
                    density=1000.0, k_mu=2e4, k_lambda=2e4, k_damp=0.0)
    return b.finalize()

def rigid(cloth_too=False):
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    if cloth_too:
        b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 4, 4, 0.1, 0.1,
                         mass=1e-3, fix_left=True, k_mu=1e3, k_lambda=1e3, k_damp=0.1, edge_ke=1e-3)
    a = b.add_body(sk.transform((0.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=a)
    c = b.add_body(sk.transform((0.3, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_capsule((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.05, 0.1, body=c)
    b.add_shape_sphere((1.0, 0.2, 0.0), 0.2)
    b.add_joint_revolute(a, c, sk.transform((0.15, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
                         sk.transform((-0.15, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    return b.finalize()
"""

_MAIN = _MODELS + r"""
import json, resource, time
from simkit.core import compiler

runs = [("cloth", cloth(), sk.sim.SemiImplicitEuler()), ("soft", soft(), sk.sim.SemiImplicitEuler()),
        ("rigid", rigid(), sk.sim.SemiImplicitEuler()), ("xpbd", rigid(cloth_too=True), sk.sim.XPBD(iterations=2))]
out = {}
for name, model, integ in runs:
    s0, s1 = model.state(), model.state()
    before = compiler.stats["compiles"]
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    integ.step(model, s0, s1, None, 1e-4)
    t1 = time.perf_counter()
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    out[name] = (t1 - t0, cpu, compiler.stats["compiles"] - before)
print(json.dumps(out))
"""

# argv: the tools folder, warp's kernel cache folder (empty)
_WARP_MAIN = _MODELS + r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import warp
warp.config.kernel_cache_dir = sys.argv[2]
import bench_sim_warp
from quiet import quiet

wp = bench_sim_warp.warp_module()   # wp.init(), quietly
if isinstance(wp, str):
    print(json.dumps({"error": wp}))
    sys.exit(0)
scene = bench_sim_warp.WarpScene(cloth())
a, b = scene.state(), scene.state()
c0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
with quiet():
    scene.step(a, b, 1e-4)
    wp.synchronize_device(bench_sim_warp.DEVICE)
t1 = time.perf_counter()
c1 = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"warp": (t1 - t0, (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime), 1)}))
"""


def _run(program: str, args: list, env: dict) -> dict:
    run = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, env=env, timeout=900)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else str(run.returncode))
    return {k: v if isinstance(v, str) else tuple(v) for k, v in json.loads(run.stdout.strip().splitlines()[-1]).items()}


def measure_once() -> dict:
    """{scene: (wall seconds, compiler CPU seconds, compiler runs)} of one cold process (raises
    if it fails), and ``warp``: (wall seconds, CPU seconds, 1 module) of warp's cold first
    cloth step, or ``error``: why warp could not run."""
    with tempfile.TemporaryDirectory(prefix="simkit-bench-simcompile-") as tmp:
        env = dict(os.environ, SIMKIT_CACHE_DIR=os.path.join(tmp, "cache"))
        out = _run(_MAIN, [], env)
        try:
            import warp  # noqa: F401
        except Exception as e:  # noqa: BLE001 - any failure means "no warp here"
            out["error"] = f"import warp failed: {type(e).__name__}"
            return out
        try:
            out.update(_run(_WARP_MAIN, [TOOLS, os.path.join(tmp, "warp")], env))
        except RuntimeError as e:   # warp's process failed: simkit's figures still stand
            out["error"] = f"warp's cold process failed: {e}"
        return out


def measure(reps: int = REPS) -> dict:
    """{scene: (wall seconds, compiler CPU seconds, compiler runs)}, plus ``total``, ``cloth +
    soft`` and, where warp ran, ``warp``: the minimum over ``reps`` cold processes of each
    time; ``error``: why warp did not run."""
    runs = [measure_once() for _ in range(reps)]
    for r in runs:
        r["total"] = tuple(sum(r[k][i] for k in ("cloth", "soft", "rigid", "xpbd")) for i in range(3))
        r["cloth + soft"] = tuple(r["cloth"][i] + r["soft"][i] for i in range(3))
    out = {}
    for k in {k for r in runs for k in r} - {"error"}:
        times = [r[k] for r in runs if k in r]
        out[k] = (min(t[0] for t in times), min(t[1] for t in times), times[0][2])
    errors = [r["error"] for r in runs if "error" in r]
    if errors and "warp" not in out:
        out["error"] = errors[0]
    return out


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``sim_compile`` section with bench.py's registry."""

    @section("sim_compile", "(f) cold compile of the sim kernels: first cloth, soft, rigid and XPBD steps")
    def bench_sim_compile(ctx) -> Result:
        res = Result()
        try:
            m = measure(1 if ctx.quick else REPS)
        except Exception as e:  # noqa: BLE001 - reported as a skip, the other sections still run
            res.skipped = f"cold process failed: {e}"
            return res
        for name in ("cloth", "soft", "rigid", "xpbd", "total"):
            sec, cpu, runs = m[name]
            res.rows.append(Row(f"{name} first step [s]", f"{fmt(sec)} s", f"{fmt(cpu)} s g++ CPU, {runs} run(s)"))
        sk_sec = m["cloth + soft"][0]
        if "warp" in m:
            sec, cpu, _ = m["warp"]
            res.rows.append(Row("cloth + soft first steps vs warp [s]", f"{fmt(sk_sec)} s",
                                f"warp {fmt(sec)} s ({fmt(cpu)} s CPU)", f"simkit/warp {sk_sec / sec:.2f}x"))
        else:
            res.rows.append(Row("cloth + soft first steps vs warp [s]", f"{fmt(sk_sec)} s", f"warp: {m['error']}"))
        res.notes.append("sim_compile: each scene's first step in a fresh process over an empty cache (imports and "
                         "model building excluded), float32; the minimum over the cold runs of the wall time and of the "
                         "CPU time of the compiler processes (steadier than the wall time on a shared machine); later scenes reuse "
                         "the kernels earlier ones compiled (XPBD reuses the semi-implicit particle kernels).")
        res.notes.append("sim_compile vs warp: warp-lang's first cloth step from an empty kernel cache, through the "
                         "ports of bench_sim_warp.py: one module of the six kernels of simkit's cloth and soft steps "
                         "(integration, springs, ground contact, membranes, bending, tetrahedra; forward and adjoint), "
                         "built in-process by its bundled clang; simkit's figure is its cloth and soft first steps "
                         "(those kernels in six modules, compiling side by side, plus its CPU runtime).")
        return res


if __name__ == "__main__":
    print(measure())
