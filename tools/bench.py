"""Micro-benchmarks of simkit on this machine, printed as one table.

Run from the repository root::

    python tools/bench.py                 # every section (~10-30 s, always < 2 min)
    python tools/bench.py --quick         # fewer repetitions, < 30 s: a smoke test
    python tools/bench.py --only launch   # one section (repeat --only or use commas)
    python tools/bench.py --list          # the sections there are
    python tools/bench.py --verbose       # also the spread (min / median / max) of each timing

Set ``SIMKIT_CACHE_DIR`` to keep the compiled kernels out of your usual cache; the
first launch of each kernel compiles, and every section warms up before it times.

Sections (each one a function registered with ``@section``; later ones, such as
autodiff, simulation or GPU, are added the same way and show up in ``--list``):

``launch``  the cost of ``sk.launch`` of an empty kernel with 1 and with 8 array
            arguments at dim=1, in microseconds per launch, next to the floor of
            one bare ctypes call into the runtime.
``saxpy``   ``y = a*x + y`` over 10M float32: time and GB/s (12 bytes per element:
            read x, read y, write y), next to numpy's ``y += a*x`` (naive, and with a
            preallocated temporary) and next to the machine's copy bandwidth
            (``np.copyto`` of 40 MB, bytes read + written over time; also the same copy
            split over simkit's thread count, for information).
``saxpy_add`` the same saxpy on one thread and on the default thread count, each
            next to numpy's ``np.add(y, x, out=y)`` (the same bytes moved).
``warp``    the same two workloads in warp-lang on the CPU, when ``import warp``
            works; skipped with a note otherwise.
``contention`` the simulation step with one CPU-bound competitor process running
            (started by the section): default threads vs one thread and vs warp.
``kernels`` every sim kernel (springs, triangles, bending, tets, contact, joints,
            integration) alone, forward and adjoint, simkit on one thread next to
            its warp port (tools/bench_sim_kernels.py).
``forward``  forward mode: jvp / forward of a 32x32 cloth rollout, and Levenberg-Marquardt
            vs Adam iterations on examples/system_id.py and soft_id.py
            (tools/bench_forward.py).
``featherstone`` ``sk.sim.Featherstone`` steps of gymnasium's ant (free base + 8 hinges,
            ground contact), forward in float64/float32 and a taped rollout's backward,
            next to MuJoCo's ``mj_step`` (tools/bench_featherstone.py).
``replay``  the ant's ``Featherstone`` step in a plain Python loop, replayed (and with
            replays off), and ``sk.replay`` of its captured launches, next to MuJoCo's Euler
            ``mj_step`` on one thread (tools/bench_replay.py).
``builder`` ``ModelBuilder`` build + finalize of 200x200 and 1000x1000 cloth grids and
            32^3 and 64^3 soft grids: seconds, and peak memory next to the model's bytes
            (``tools/bench_builder.py``).
``cloth_contact`` a 1 m sheet folded onto itself, 64x64 and 256x256 cells: time per step
            with and without cloth self-contact (XPBD, SemiImplicitEuler), and a taped
            64x64 rollout forward / backward (``tools/bench_cloth_contact.py``).
``cloth_shapes`` a 1 m sheet folded over a bar's edge, 64x64 and 256x256 cells: time per
            step with and without triangle-shape contact, each with and without
            self-contact, and a taped 64x64 rollout forward / backward
            (``tools/bench_cloth_shapes.py``).
``sweep``   a 16-run ``simkit.sweep`` on a local Ray with 2 CPUs against the same runs one
            after another (ratio), and the per-task overhead; skipped without Ray
            (``tools/bench_sweep.py``).
``broad_phase`` piles of 1000 and 10000 boxes: the per-step sweep and prune alone, the
            pairs it passes to the narrow phase against the static list's ``n (n - 1)``, and
            the whole step with each broad phase where the static list fits
            (``tools/bench_broad_phase.py``).

A new section is one function; ``Result.skipped`` explains a section that cannot run
here (no GPU, say)::

    @section("autodiff", "(d) tape backward of ...")
    def bench_autodiff(ctx: Context) -> Result:
        st = interleaved({"simkit": run_simkit, "warp": run_warp}, rounds=ctx.reps(15, 3))
        return Result(rows=[ratio_row(...)])

Columns: metric, simkit, reference (numpy / warp / copy bandwidth), ratio, target
and whether it is met. Every number is the median of several rounds; contenders
are timed interleaved round by round (the order rotates) so that a noisy, shared
machine hurts them alike. Timings are read with ``time.perf_counter``.

This is a tool for people, not a test: timings never live in tests (they would
flake on shared machines). The suite only checks behaviour; run this script by
hand, or in a benchmark job, and read the table.
"""

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import simkit as sk

# The kernels live in bench_kernels.py (one module, compiled once, shared with bench_gpu.py).
from bench_kernels import chain_link, empty1, empty8, saxpy  # noqa: E402

SAXPY_N = 10_000_000
SAXPY_BYTES = 12 * SAXPY_N  # read x, read y, write y
COPY_N = 10_000_000  # 40 MB of float32
COPY_BYTES = 2 * 4 * COPY_N  # read + write
SAXPY_A = 0.5

# Targets from the performance issue.
LAUNCH_VS_WARP = 0.5  # simkit_us / warp_us <= 0.5
SAXPY_VS_NUMPY = 1.0  # numpy(y += a*x) time / simkit time >= 1
SAXPY_VS_COPY = 0.85  # simkit GB/s / copy GB/s >= 0.85


# ----------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------

@dataclass
class Stats:
    """Seconds per operation over the rounds of one contender."""

    samples: list

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)


def interleaved(contenders: dict, rounds: int, ops: int = 1, warmup: int = 1) -> dict:
    """Time each contender ``rounds`` times, interleaved, and return {name: Stats}.

    A contender is a callable ``fn(n)`` that performs its operation ``n`` times; one
    sample is the seconds of one ``fn(ops)`` call divided by ``ops``. The order of the
    contenders rotates every round, and the garbage collector is off while timing.
    """
    names = list(contenders)
    for name in names:
        for _ in range(warmup):
            contenders[name](ops)
    samples = {name: [] for name in names}
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        clock = time.perf_counter
        for r in range(rounds):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                fn = contenders[name]
                t0 = clock()
                fn(ops)
                samples[name].append((clock() - t0) / ops)
    finally:
        if was_enabled:
            gc.enable()
    return {name: Stats(s) for name, s in samples.items()}


# ----------------------------------------------------------------------------------
# Table and section registry
# ----------------------------------------------------------------------------------

@dataclass
class Row:
    metric: str
    simkit: str = "-"
    reference: str = "-"
    ratio: str = "-"
    target: str = "-"
    met: bool | None = None


@dataclass
class Result:
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    spread: list = field(default_factory=list)  # (label, Stats, unit scale, unit)
    skipped: str | None = None


@dataclass
class Section:
    name: str
    title: str
    fn: Callable


SECTIONS: list = []


def section(name: str, title: str):
    """Register ``fn(ctx) -> Result`` as a section of the table, in definition order."""

    def deco(fn):
        SECTIONS.append(Section(name, title, fn))
        return fn
    return deco


class Context:
    """Options and lazily built fixtures that sections share."""

    def __init__(self, quick: bool):
        self.quick = quick
        self._fixtures: dict = {}

    def reps(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def fixture(self, key: str, make: Callable):
        if key not in self._fixtures:
            self._fixtures[key] = make()
        return self._fixtures[key]


def fmt(v: float, digits: int = 3) -> str:
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


def ratio_row(metric, sk_val, ref_val, unit, ratio, target_op, target, ref_name):
    """A row comparing simkit to a reference, with a target on ``ratio``."""
    met = None
    if target is not None:
        met = ratio <= target if target_op == "<=" else ratio >= target
    return Row(metric, f"{fmt(sk_val)} {unit}", f"{fmt(ref_val)} {unit} ({ref_name})", f"{ratio:.2f}x",
               f"{target_op} {target}" if target is not None else "(info)", met)


# ----------------------------------------------------------------------------------
# simkit fixtures
# ----------------------------------------------------------------------------------

def sk_launch_fixture(ctx: Context):
    def make():
        a = [sk.zeros(1, dtype=sk.float32) for _ in range(8)]
        t0 = time.perf_counter()
        sk.launch(empty1, 1, inputs=a[:1])  # compiles the module (or loads it from the cache)
        compile_s = time.perf_counter() - t0
        sk.launch(empty8, 1, inputs=a)
        launch = sk.launch

        def one(n, k=empty1, inputs=a[:1]):
            for _ in range(n):
                launch(k, 1, inputs=inputs)

        def eight(n, k=empty8, inputs=a):
            for _ in range(n):
                launch(k, 1, inputs=inputs)
        return {"1": one, "8": eight, "compile_s": compile_s, "arrays": a}
    return ctx.fixture("sk_launch", make)


def sk_saxpy_fixture(ctx: Context):
    def make():
        rng = np.random.default_rng(0)
        x = sk.array(rng.random(SAXPY_N, dtype=np.float32))
        y = sk.array(rng.random(SAXPY_N, dtype=np.float32))
        launch = sk.launch
        inputs = [x, y, SAXPY_A]

        def run(n):
            for _ in range(n):
                launch(saxpy, SAXPY_N, inputs=inputs)
        run(1)  # compile
        # correctness check, so that a fast but wrong kernel cannot look good
        xn, yn = x.numpy(), y.numpy()
        before = yn[:1000].copy()
        run(1)
        np.testing.assert_allclose(yn[:1000], SAXPY_A * xn[:1000] + before, rtol=1e-6)
        return run
    return ctx.fixture("sk_saxpy", make)


def launch_floor_fixture(ctx: Context):
    """One bare ctypes call of the runtime's ``sk_launch`` on empty1's prebuilt job (n=1)."""

    def make():
        sk_launch_fixture(ctx)
        try:  # reaches into simkit's internals: drop the row rather than fail when they change
            from simkit.core import launch as L
            plan = L.plan_for(empty1)
            run, job = plan.run, plan.jobs[0][1]
            plan.set_bounds(1)
            run(job)
        except Exception as e:  # noqa: BLE001
            return f"{type(e).__name__}: {e}"

        def floor(n):
            for _ in range(n):
                run(job)
        return floor
    return ctx.fixture("launch_floor", make)


# ----------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------

@section("launch", "(a) launch overhead: empty kernel, dim=1")
def bench_launch(ctx: Context) -> Result:
    res = Result()
    fx = sk_launch_fixture(ctx)
    floor = launch_floor_fixture(ctx)
    ops = ctx.reps(5000, 1000)
    contenders = {"1": fx["1"], "8": fx["8"]}
    if callable(floor):
        contenders["floor"] = floor
    else:
        res.notes.append(f"launch: no 'floor' row, simkit's launch internals changed ({floor}).")
    st = interleaved(contenders, rounds=ctx.reps(31, 5), ops=ops, warmup=1)
    for key, label in (("1", "sk.launch, 1 array arg"), ("8", "sk.launch, 8 array args")):
        us = st[key].median * 1e6
        res.rows.append(Row(f"{label} [us/launch]", f"{fmt(us)} us", "-", "-", "(ratio: see warp)", None))
        res.spread.append((label, st[key], 1e6, "us"))
    if "floor" in st:
        fl = st["floor"].median * 1e6
        res.rows.append(Row("floor: bare ctypes sk_launch [us]", f"{fmt(fl)} us", "-", "-", "(info)", None))
        res.spread.append(("bare ctypes call", st["floor"], 1e6, "us"))
    res.notes.append(f"launch: median of {ctx.reps(31, 5)} batches of {ops} launches; the 'floor' row is the "
                     "foreign call alone (no argument checks or packing); the warp section gives the ratios.")
    res.notes.append(f"launch: first launch of the bench module took {fx['compile_s'] * 1e3:.0f} ms "
                     "(compile, or load from SIMKIT_CACHE_DIR).")
    return res


def numpy_fixtures(ctx: Context):
    def make():
        rng = np.random.default_rng(1)
        x = rng.random(SAXPY_N, dtype=np.float32)
        y = rng.random(SAXPY_N, dtype=np.float32)
        tmp = np.empty_like(x)
        a = np.float32(SAXPY_A)
        src = rng.random(COPY_N, dtype=np.float32)
        dst = np.empty_like(src)
        mul, add, copyto = np.multiply, np.add, np.copyto

        def naive(n):
            nonlocal y
            for _ in range(n):
                y += a * x

        def prealloc(n):
            for _ in range(n):
                mul(x, a, out=tmp)
                add(y, tmp, out=y)

        def copy(n):
            for _ in range(n):
                copyto(dst, src)

        # The same copy split across as many threads as simkit uses (numpy drops the GIL
        # while it copies): the machine's all-core bandwidth, for information.
        threads = sk.get_threads()
        cuts = np.linspace(0, COPY_N, threads + 1).astype(int)
        parts = [(dst[lo:hi], src[lo:hi]) for lo, hi in zip(cuts[:-1], cuts[1:])]
        pool = ThreadPoolExecutor(threads) if threads > 1 else None

        def copy_part(part):
            copyto(*part)

        def copy_mt(n):
            for _ in range(n):
                if pool is None:
                    copyto(dst, src)
                else:
                    for _ in pool.map(copy_part, parts):
                        pass
        return {"naive": naive, "prealloc": prealloc, "copy": copy, "copy_mt": copy_mt, "threads": threads}
    return ctx.fixture("numpy", make)


@section("saxpy", "(b) saxpy y = a*x + y, 10M float32, vs numpy and copy bandwidth")
def bench_saxpy(ctx: Context) -> Result:
    res = Result()
    run = sk_saxpy_fixture(ctx)
    npf = numpy_fixtures(ctx)
    rounds = ctx.reps(41, 5)
    st = interleaved({"simkit": run, "naive": npf["naive"], "prealloc": npf["prealloc"], "copy": npf["copy"],
                      "copy_mt": npf["copy_mt"]}, rounds=rounds, ops=1, warmup=2)
    t_sk = st["simkit"].median
    t_naive, t_pre = st["naive"].median, st["prealloc"].median
    bw_sk = SAXPY_BYTES / t_sk / 1e9
    bw_copy = COPY_BYTES / st["copy"].median / 1e9
    r = t_naive / t_sk
    res.rows.append(ratio_row("saxpy time vs numpy `y += a*x` [ms]", t_sk * 1e3, t_naive * 1e3, "ms", r, ">=",
                              SAXPY_VS_NUMPY, "numpy naive"))
    res.rows.append(ratio_row("saxpy time vs numpy mul+add, prealloc tmp [ms]", t_sk * 1e3, t_pre * 1e3, "ms",
                              t_pre / t_sk, ">=", None, "numpy prealloc"))
    res.rows.append(ratio_row("saxpy bandwidth vs copy bandwidth [GB/s]", bw_sk, bw_copy, "GB/s", bw_sk / bw_copy,
                              ">=", SAXPY_VS_COPY, "np.copyto 40MB"))
    bw_mt = COPY_BYTES / st["copy_mt"].median / 1e9
    res.rows.append(ratio_row(f"saxpy bandwidth vs {npf['threads']}-thread copy [GB/s]", bw_sk, bw_mt, "GB/s",
                              bw_sk / bw_mt, ">=", None, f"copyto x{npf['threads']} threads"))
    for key, label, scale in (("simkit", "simkit saxpy", 1e3), ("naive", "numpy y += a*x", 1e3),
                              ("prealloc", "numpy mul+add prealloc", 1e3), ("copy", "np.copyto 40 MB", 1e3),
                              ("copy_mt", "np.copyto 40 MB, threaded", 1e3)):
        res.spread.append((label, st[key], scale, "ms"))
    res.notes.append(f"saxpy: median of {rounds} interleaved rounds; ratios are numpy_time / simkit_time and "
                     "simkit_GB/s / copy_GB/s (12 B/element for saxpy, 8 B/element for the copy).")
    res.notes.append(f"saxpy: numpy runs on one thread, simkit on {sk.get_threads()}; the issue's copy-bandwidth target "
                     "is against the single-thread np.copyto, the threaded copy row shows the all-core ceiling.")
    return res


SAXPY_VS_ADD_1T = 0.9  # numpy np.add(y, x, out=y) time / simkit saxpy time on one thread >= 0.9
SAXPY_VS_ADD = 1.0     # ... with the default thread count >= 1.0


@section("saxpy_add", "(b2) saxpy 10M float32 on 1 and the default threads vs numpy np.add(y, x, out=y)")
def bench_saxpy_add(ctx: Context) -> Result:
    res = Result()
    run = sk_saxpy_fixture(ctx)
    rng = np.random.default_rng(2)
    x = rng.random(SAXPY_N, dtype=np.float32)
    y = rng.random(SAXPY_N, dtype=np.float32)
    add = np.add

    def np_add(n):
        for _ in range(n):
            add(y, x, out=y)
    rounds = ctx.reps(41, 5)
    default = sk.get_threads()
    counts = [1] + ([default] if default > 1 else [])
    try:
        for threads, target in zip(counts, (SAXPY_VS_ADD_1T, SAXPY_VS_ADD)):
            sk.set_threads(threads)
            st = interleaved({"simkit": run, "np.add": np_add}, rounds=rounds, ops=1, warmup=2)
            t_sk, t_np = st["simkit"].median, st["np.add"].median
            res.rows.append(ratio_row(f"saxpy, {threads} thread(s), vs np.add(y, x, out=y) [ms]", t_sk * 1e3,
                                      t_np * 1e3, "ms", t_np / t_sk, ">=", target, "numpy np.add"))
            res.spread.append((f"simkit saxpy, {threads} thread(s)", st["simkit"], 1e3, "ms"))
            res.spread.append((f"np.add, beside {threads} thread(s)", st["np.add"], 1e3, "ms"))
    finally:
        sk.set_threads(default)
    res.notes.append(f"saxpy_add: median of {rounds} interleaved rounds per thread count; ratio = numpy_time / "
                     "simkit_time. np.add moves the same 12 B/element (read x, read y, write y) on one thread.")
    if default == 1:
        res.notes.append("saxpy_add: the default thread count is 1 here, so there is no default-threads row.")
    return res


from quiet import quiet as _quiet  # noqa: E402  (shared with bench_sim_warp.py)


def warp_fixture(ctx: Context):
    def make():
        try:
            with _quiet():
                import warp as wp
                wp.config.quiet = True
                wp.init()
        except Exception as e:  # noqa: BLE001 - any failure means "no warp here"
            return f"import warp failed: {type(e).__name__}: {e}"
        farr = wp.array(dtype=float)

        @wp.kernel
        def wp_empty1(a: farr):
            i = wp.tid()  # noqa: F841 - an empty kernel body

        @wp.kernel
        def wp_empty8(a: farr, b: farr, c: farr, d: farr, e: farr, f: farr, g: farr, h: farr):
            i = wp.tid()  # noqa: F841 - an empty kernel body

        @wp.kernel
        def wp_saxpy(x: farr, y: farr, a: float):
            i = wp.tid()
            y[i] = a * x[i] + y[i]

        dev = "cpu"
        arrs = [wp.zeros(1, dtype=float, device=dev) for _ in range(8)]
        rng = np.random.default_rng(2)
        x = wp.array(rng.random(SAXPY_N, dtype=np.float32), dtype=float, device=dev)
        y = wp.array(rng.random(SAXPY_N, dtype=np.float32), dtype=float, device=dev)
        launch = wp.launch
        t0 = time.perf_counter()
        try:
            with _quiet():
                launch(wp_empty1, dim=1, inputs=arrs[:1], device=dev)
                launch(wp_empty8, dim=1, inputs=arrs, device=dev)
                launch(wp_saxpy, dim=SAXPY_N, inputs=[x, y, SAXPY_A], device=dev)
                wp.synchronize_device(dev)
        except Exception as e:  # noqa: BLE001
            return f"warp could not build or launch CPU kernels: {type(e).__name__}: {e}"
        compile_s = time.perf_counter() - t0

        def one(n, inputs=arrs[:1]):
            for _ in range(n):
                launch(wp_empty1, dim=1, inputs=inputs, device=dev)

        def eight(n, inputs=arrs):
            for _ in range(n):
                launch(wp_empty8, dim=1, inputs=inputs, device=dev)

        def sax(n, inputs=[x, y, SAXPY_A]):
            for _ in range(n):
                launch(wp_saxpy, dim=SAXPY_N, inputs=inputs, device=dev)
            wp.synchronize_device(dev)
        return {"1": one, "8": eight, "saxpy": sax, "version": wp.config.version, "compile_s": compile_s}
    return ctx.fixture("warp", make)


@section("warp", "(c) simkit vs warp-lang on the CPU")
def bench_warp(ctx: Context) -> Result:
    res = Result()
    wf = warp_fixture(ctx)
    if isinstance(wf, str):
        res.skipped = wf
        return res
    skf = sk_launch_fixture(ctx)
    ops = ctx.reps(3000, 500)
    rounds = ctx.reps(31, 5)
    st = interleaved({"sk1": skf["1"], "wp1": wf["1"], "sk8": skf["8"], "wp8": wf["8"]}, rounds=rounds, ops=ops)
    for n in ("1", "8"):
        s_us, w_us = st["sk" + n].median * 1e6, st["wp" + n].median * 1e6
        label = f"launch overhead, {n} array arg{'s' if n != '1' else ''} [us]"
        res.rows.append(ratio_row(label, s_us, w_us, "us", s_us / w_us, "<=", LAUNCH_VS_WARP, "warp"))
        res.spread.append((f"simkit launch {n}", st["sk" + n], 1e6, "us"))
        res.spread.append((f"warp launch {n}", st["wp" + n], 1e6, "us"))
    sax_rounds = ctx.reps(31, 3)
    st2 = interleaved({"sk": sk_saxpy_fixture(ctx), "wp": wf["saxpy"]}, rounds=sax_rounds, ops=1, warmup=2)
    t_sk, t_wp = st2["sk"].median, st2["wp"].median
    res.rows.append(ratio_row("saxpy 10M f32 time [ms]", t_sk * 1e3, t_wp * 1e3, "ms", t_wp / t_sk, ">=", None,
                              "warp"))
    res.spread.append(("simkit saxpy", st2["sk"], 1e3, "ms"))
    res.spread.append(("warp saxpy", st2["wp"], 1e3, "ms"))
    res.notes.append(f"warp {wf['version']}: launch ratios are simkit_us / warp_us (lower is better), the saxpy "
                     "ratio is warp_time / simkit_time (higher is better); both timed interleaved.")
    res.notes.append("warp: CPU launches run the grid on the calling thread (no thread pool), and "
                     f"their first use took {wf['compile_s'] * 1e3:.0f} ms (compile or load from warp's kernel cache).")
    return res


CHAIN_N, CHAIN_LEN = 100_000, 100
BACKWARD_VS_FORWARD = 3.0


def _chain_reference(x0: np.ndarray) -> np.ndarray:
    """d(sum of the last link)/dx by the chain rule in numpy (float64)."""
    x, g = x0.astype(np.float64), np.ones_like(x0, dtype=np.float64)
    for _ in range(CHAIN_LEN):
        g *= 0.9 * np.cos(x) + 0.1
        x = np.sin(x) * 0.9 + 0.1 * x
    return g


def sk_chain_fixture(ctx: Context):
    """A 100-launch tape over fresh buffers: fn_forward(n) and fn_backward(n), checked once."""
    def make():
        x0 = np.random.default_rng(3).uniform(-1, 1, CHAIN_N).astype(np.float32)
        bufs = [sk.array(x0, requires_grad=True)] + [sk.zeros(CHAIN_N) for _ in range(CHAIN_LEN)]
        seed = np.ones(CHAIN_N, np.float32)
        state = {}

        def forward(n):
            for _ in range(n):
                tape = sk.Tape()
                with tape:
                    for k in range(CHAIN_LEN):
                        sk.launch(chain_link, CHAIN_N, inputs=[bufs[k]], outputs=[bufs[k + 1]])
                state["tape"] = tape

        def backward(n):
            for _ in range(n):
                state["tape"].zero()
                state["tape"].backward(grads={bufs[-1]: seed})

        forward(1)
        backward(1)
        err = np.max(np.abs(bufs[0].grad.numpy() - _chain_reference(x0)))
        if not err < 1e-4:
            return f"simkit chain gradient is wrong (max error {err:.3g}); not timed"
        return {"forward": forward, "backward": backward}
    return ctx.fixture("sk_chain", make)


def warp_chain_fixture(ctx: Context):
    def make():
        wf = warp_fixture(ctx)
        if isinstance(wf, str):
            return wf
        import warp as wp

        @wp.kernel
        def wp_chain_link(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i] = wp.sin(x[i]) * 0.9 + 0.1 * x[i]

        x0 = np.random.default_rng(3).uniform(-1, 1, CHAIN_N).astype(np.float32)
        bufs = [wp.array(x0, dtype=float, device="cpu", requires_grad=True)]
        bufs += [wp.zeros(CHAIN_N, dtype=float, device="cpu", requires_grad=True) for _ in range(CHAIN_LEN)]
        seed = wp.array(np.ones(CHAIN_N, np.float32), dtype=float, device="cpu")
        state = {}

        def forward(n):
            for _ in range(n):
                tape = wp.Tape()
                with tape:
                    for k in range(CHAIN_LEN):
                        wp.launch(wp_chain_link, dim=CHAIN_N, inputs=[bufs[k]], outputs=[bufs[k + 1]], device="cpu")
                state["tape"] = tape

        def backward(n):
            for _ in range(n):
                state["tape"].zero()
                state["tape"].backward(grads={bufs[-1]: seed})
            wp.synchronize_device("cpu")

        with _quiet():
            forward(1)
            backward(1)
        return {"forward": forward, "backward": backward}
    return ctx.fixture("warp_chain", make)


@section("autograd", "(d) autodiff: 100-launch chain of a 100k-element kernel, forward and backward")
def bench_autograd(ctx: Context) -> Result:
    res = Result()
    skf = sk_chain_fixture(ctx)
    if isinstance(skf, str):
        res.skipped = skf
        return res
    wf = warp_chain_fixture(ctx)
    contenders = {"sk_fwd": skf["forward"], "sk_bwd": skf["backward"]}
    if not isinstance(wf, str):
        contenders.update({"wp_fwd": wf["forward"], "wp_bwd": wf["backward"]})
    rounds = ctx.reps(9, 2)
    st = {}
    for phase in ("fwd", "bwd"):  # a backward needs the forward before it: time phases in pairs
        st.update(interleaved({k: v for k, v in contenders.items() if k.endswith(phase)}, rounds=rounds))
    f, b = st["sk_fwd"].median, st["sk_bwd"].median
    res.rows.append(Row("forward (recorded on a tape) [ms]", f"{fmt(f * 1e3)} ms"))
    res.rows.append(Row("backward [ms]", f"{fmt(b * 1e3)} ms"))
    res.rows.append(Row("backward / forward", f"{b / f:.2f}", "-", f"{b / f:.2f}x", f"<= {BACKWARD_VS_FORWARD}",
                        b / f <= BACKWARD_VS_FORWARD))
    if isinstance(wf, str):
        res.notes.append(f"warp comparison skipped: {wf}")
        return res
    wfw, wbw = st["wp_fwd"].median, st["wp_bwd"].median
    res.rows.append(ratio_row("forward vs warp [ms]", f * 1e3, wfw * 1e3, "ms", wfw / f, ">=", None, "warp"))
    res.rows.append(ratio_row("backward vs warp [ms]", b * 1e3, wbw * 1e3, "ms", wbw / b, ">=", None, "warp"))
    res.notes.append("autograd: fresh buffers per link (a reused buffer makes simkit's backward refuse, by design); "
                     "warp ratios are warp_time / simkit_time (higher is better); gradient checked against numpy.")
    return res


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_sim  # noqa: E402  (the simulation section lives in its own file)

bench_sim.add_sections(section, Result, Row, fmt, interleaved)

import bench_contention  # noqa: E402  (the simulation step with another process on the CPU)

bench_contention.add_sections(section, Result, Row, fmt, interleaved)

import bench_sim_kernels  # noqa: E402  (every sim kernel alone, one thread, vs its warp port)

bench_sim_kernels.add_sections(section, Result, Row, fmt)

import bench_compile  # noqa: E402  (cold compile and warm load, each in a fresh process)

bench_compile.add_sections(section, Result, Row, fmt)

import bench_sim_compile  # noqa: E402  (cold compile of the sim kernels, each run in a fresh process)

bench_sim_compile.add_sections(section, Result, Row, fmt)

import bench_optim  # noqa: E402  (checkpointed rollouts: the memory target)

bench_optim.add_sections(section, Result, Row, fmt)

import bench_forward  # noqa: E402  (forward mode: jvp cost, LM vs Adam)

bench_forward.add_sections(section, Result, Row, fmt)

import bench_featherstone  # noqa: E402  (the generalized-coordinate step of an ant vs MuJoCo)

bench_featherstone.add_sections(section, Result, Row, fmt, interleaved)

import bench_replay  # noqa: E402  (the ant stepped in a plain Python loop, replayed, vs MuJoCo)

bench_replay.add_sections(section, Result, Row, fmt, interleaved)

import bench_builder  # noqa: E402  (build + finalize of big grids: time and memory)

bench_builder.add_sections(section, Result, Row, fmt)

import bench_gpu  # noqa: E402  (the capture and GPU sections live in their own file)

bench_gpu.add_sections(section, Result, Row, fmt, interleaved, ratio_row, _quiet)

import bench_sweep  # noqa: E402  (a 16-run sweep on a local 2-CPU Ray vs sequential; skipped without Ray)

bench_sweep.add_sections(section, Result, Row, fmt)

import bench_meshes  # noqa: E402  (mesh colliders against the analytic shapes)

bench_meshes.add_sections(section, Result, Row, fmt)

import bench_broad_phase  # noqa: E402  (sweep and prune vs the static pair list, 1000 and 10000 boxes)

bench_broad_phase.add_sections(section, Result, Row, fmt)

import bench_cloth_contact  # noqa: E402  (cloth folded onto itself, with and without self-contact)

bench_cloth_contact.add_sections(section, Result, Row, fmt)

import bench_cloth_shapes  # noqa: E402  (cloth over a bar's edge, with and without triangle-shape contact)

bench_cloth_shapes.add_sections(section, Result, Row, fmt)


# ----------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------

def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return (f"{cpu}; {os.cpu_count()} cpu(s), {usable} usable; simkit {sk.__version__} ({sk.get_threads()} thread(s)); "
            f"numpy {np.__version__}; python {platform.python_version()}")


def print_table(title_rows: list) -> None:
    """``title_rows``: [(section title, [Row, ...] or skip note)] as one aligned table."""
    head = ("metric", "simkit", "reference", "ratio", "target", "met?")
    body = []
    for title, rows in title_rows:
        body.append(title)
        if isinstance(rows, str):
            body.append("  " + rows)  # a note line, not counted in the column widths
            continue
        for r in rows:
            met = "-" if r.met is None else ("yes" if r.met else "NO")
            body.append(("  " + r.metric, r.simkit, r.reference, r.ratio, r.target, met))
    cells = [head] + [b for b in body if isinstance(b, tuple)]
    w = [max(len(c[i]) for c in cells) for i in range(len(head))]
    line = "  ".join(h.ljust(w[i]) for i, h in enumerate(head))
    rule = "-" * len(line)
    print(rule)
    print(line)
    print(rule)
    for b in body:
        if isinstance(b, str):
            print(b)
        else:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(b)).rstrip())
    print(rule)


def main(argv=None) -> int:
    names = [s.name for s in SECTIONS]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repetitions (smoke test, < 30 s)")
    p.add_argument("--only", action="append", metavar="SECTION",
                   help=f"run only these sections (repeat, or comma-separate): {', '.join(names)}")
    p.add_argument("--list", action="store_true", help="list the sections and exit")
    p.add_argument("--verbose", action="store_true", help="also print min / median / max of every timing")
    args = p.parse_args(argv)

    if args.list:
        for s in SECTIONS:
            print(f"{s.name:10s} {s.title}")
        return 0
    chosen = SECTIONS
    if args.only:
        wanted = [w.strip() for item in args.only for w in item.split(",") if w.strip()]
        unknown = [w for w in wanted if w not in names]
        if unknown:
            p.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(names)}")
        chosen = [s for s in SECTIONS if s.name in wanted]

    t_start = time.perf_counter()
    print(f"simkit bench{' (--quick)' if args.quick else ''}: {machine_line()}")
    print(f"cache: {os.environ.get('SIMKIT_CACHE_DIR') or sk.config.cache_dir or '(default)'}")
    sys.stdout.flush()
    ctx = Context(quick=args.quick)
    results = []
    for s in chosen:
        t0 = time.perf_counter()
        res = s.fn(ctx)
        results.append((s, res, time.perf_counter() - t0))
        print(f"  ran [{s.name}] in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    print()
    print_table([(f"[{s.name}] {s.title}", res.skipped and f"skipped: {res.skipped}" or res.rows)
                 for s, res, _ in results])
    notes = [n for _, res, _ in results for n in res.notes]
    if notes:
        print("notes:")
        for n in notes:
            print(f"  - {n}")
    if args.verbose:
        print("spread (min / median / max):")
        for s, res, _ in results:
            for label, st, scale, unit in res.spread:
                print(f"  [{s.name}] {label:28s} {fmt(st.min * scale)} / {fmt(st.median * scale)} / "
                      f"{fmt(st.max * scale)} {unit}  (n={len(st.samples)})")
    missed = [r.metric for _, res, _ in results for r in res.rows if r.met is False]
    print(f"targets met: {sum(1 for _, res, _ in results for r in res.rows if r.met)} of "
          f"{sum(1 for _, res, _ in results for r in res.rows if r.met is not None)}"
          + (f" (missed: {'; '.join(m.strip() for m in missed)})" if missed else ""))
    print(f"total {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
