"""The contention section of tools/bench.py: the simulation step on a busy machine.

Users rarely have the CPU to themselves: a training job runs beside the simulator,
several simulations run at once, CI shares its cores. This section starts one
CPU-bound competitor process itself (a Python busy loop, ended when the section ends
and after ``COMPETITOR_SECONDS`` at most) and then times, with the competitor running,
the forward step and the backward per step of the 64x64 cloth and the 16^3 soft grid
of the ``sim`` section (semi-implicit Euler):

- simkit with its default thread count, against simkit on one thread
  (``sk.set_threads(1)``): the pool must never lose to one thread (target <= 1.1);
- simkit with its default thread count against warp's port of the same step (warp
  runs a CPU launch on the calling thread): target <= 1.0 (simkit time / warp time).

The three contenders are timed interleaved, round by round, so that the competitor
and the rest of the machine's noise hit them alike.

Registered by bench.py through :func:`add_sections`.
"""

import subprocess
import sys
import time

import numpy as np

import simkit as sk

import bench_sim
import bench_sim_warp

COMPETITOR_SECONDS = 300    # the competitor ends by itself after this, whatever happens here
NOT_SLOWER_THAN_ONE_THREAD = 1.1
NOT_SLOWER_THAN_WARP = 1.0

_BUSY_LOOP = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"


class competitor:
    """``with competitor():`` one CPU-bound process runs (bounded in time) for the block."""

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", _BUSY_LOOP, str(COMPETITOR_SECONDS)])
        time.sleep(0.2)  # let it get going before anything is timed
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def with_threads(n: int, fn):
    """``fn(ops)`` run with the pool at ``n`` threads (restored afterwards)."""
    def run(ops):
        before = sk.get_threads()
        sk.set_threads(n)
        try:
            return fn(ops)
        finally:
            sk.set_threads(before)
    return run


def backward_timer(model, integrator, steps: int):
    """fn(ops): seconds per step of the backward pass of a ``steps``-step taped rollout,
    timed inside (the taped forward is not counted)."""
    roll = bench_sim.rollout_timer(model, integrator, steps)

    def run(ops):
        return sum(roll()[1] for _ in range(ops))
    return run


def add_sections(section, Result, Row, fmt, interleaved) -> None:
    """Register the ``contention`` section with bench.py's registry."""

    def row(metric, a, b, ref_name, target):
        r = a / b
        return Row(metric, f"{fmt(a * 1e3)} ms", f"{fmt(b * 1e3)} ms ({ref_name})", f"{r:.2f}x", f"<= {target}",
                   r <= target)

    @section("contention", "(e2) one other CPU-bound process running: simulation step, default threads vs one "
                           "thread and vs warp")
    def bench_contention(ctx) -> Result:
        res = Result()
        threads = sk.get_threads()
        if threads == 1:
            res.skipped = "the pool has one thread here (one core, or SIMKIT_NUM_THREADS=1): nothing to compare"
            return res
        wp = bench_sim_warp.warp_module()
        if isinstance(wp, str):
            res.notes.append(f"contention: warp rows skipped: {wp}")
        integ = sk.sim.SemiImplicitEuler()
        steps = bench_sim.ROLLOUT
        with competitor():
            for scene, make in (("cloth 64x64", bench_sim.cloth_model), ("soft 16^3", bench_sim.soft_model)):
                fwd_model, grad_model = make(), make(requires_grad=True)
                step = bench_sim.step_timer(fwd_model, integ)
                forward = {"default": step, "one": with_threads(1, step)}
                backward_fn = backward_timer(grad_model, integ, steps)
                backward = {"default": backward_fn, "one": with_threads(1, backward_fn)}
                if not isinstance(wp, str):
                    forward["warp"] = bench_sim_warp.warp_step_timer(fwd_model, bench_sim.DT)
                    w_roll = bench_sim_warp.warp_rollout_timer(grad_model, bench_sim.DT, steps)
                    backward["warp"] = lambda ops, w=w_roll: sum(w()[1] for _ in range(ops))
                st = interleaved(forward, rounds=ctx.reps(9, 3), ops=ctx.reps(20, 5))
                # backward contenders time themselves (the tape's forward is not counted)
                samples = {name: [] for name in backward}
                for r in range(ctx.reps(5, 2)):
                    names = list(backward)[r % len(backward):] + list(backward)[:r % len(backward)]
                    for name in names:
                        samples[name].append(backward[name](1) / steps)
                bw = {name: float(np.median(s)) for name, s in samples.items()}
                f = {name: s.median for name, s in st.items()}
                res.rows.append(row(f"{scene}: forward step, {threads} threads / 1 thread", f["default"], f["one"],
                                    "1 thread", NOT_SLOWER_THAN_ONE_THREAD))
                res.rows.append(row(f"{scene}: backward per step, {threads} threads / 1 thread", bw["default"],
                                    bw["one"], "1 thread", NOT_SLOWER_THAN_ONE_THREAD))
                if "warp" in f:
                    res.rows.append(row(f"{scene}: forward step, {threads} threads vs warp", f["default"], f["warp"],
                                        "warp", NOT_SLOWER_THAN_WARP))
                    res.rows.append(row(f"{scene}: backward per step, {threads} threads vs warp", bw["default"],
                                        bw["warp"], "warp", NOT_SLOWER_THAN_WARP))
                for name, s in st.items():
                    res.spread.append((f"{scene} forward {name}", s, 1e3, "ms"))
        res.notes.append(f"contention: one busy-loop process ran beside every timing; ratios are simkit time over "
                         f"the reference's (lower is better); backward = one {steps}-step taped rollout's backward "
                         "divided by its steps; semi-implicit Euler, DT as in the sim section.")
        return res
