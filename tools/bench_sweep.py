"""A parameter sweep on Ray against the same runs one after another: the ``sweep`` section.

Run from the repository root::

    python tools/bench_sweep.py            # 16 runs of cloth_drape, 2 local Ray CPUs
    python tools/bench_sweep.py --quick    # shorter runs

Workload: ``simkit.sweep`` of ``scenes/cloth_drape.toml`` over 16 values of
``cloth[0].k_mu`` (300..1200), ``FRAMES`` frames each, one simkit thread per run. The
sequential contender is the same sweep with ``use_ray=False`` (every run in this process);
the parallel one runs on a local Ray started with 2 CPUs, timed after a warm-up sweep so
that its two workers have imported simkit and loaded the compiled kernels (Ray's start and
that warm-up are reported on their own). Both write the same table, checked here.

Ratio = sequential wall time / Ray wall time (2 CPUs: at most 2). Per-task overhead =
(Ray wall time x 2 CPUs - the runs' own seconds) / 16: what a run costs beyond its own work
(scheduling, moving arguments and results, rewriting the table); next to it, the round trip
of an empty Ray task. Skipped (with a note) where Ray is not installed.

Registered by bench.py through :func:`add_sections`.
"""

import argparse
import csv
import os
import shutil
import statistics
import sys
import tempfile
import time

RUNS = 16
CPUS = 2
FRAMES = 100          # 2 s of cloth_drape: about 0.3 s a run on one thread
QUICK_FRAMES = 40
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENE = os.path.join(ROOT, "scenes", "cloth_drape.toml")


def _grid() -> dict:
    return {"cloth[0].k_mu": [300.0 + 60.0 * k for k in range(RUNS)]}


def _numbers(table: str) -> list:
    with open(table, newline="") as f:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)]


def measure(frames: int, rounds: int) -> dict:
    """Wall times of the sweep without and with Ray, Ray's start, and the empty-task round trip."""
    import ray

    import simkit as sk

    tmp = tempfile.mkdtemp(prefix="simkit-bench-sweep-")
    try:
        def run(use_ray: bool, name: str, grid=None, n=frames):
            out = os.path.join(tmp, name)
            t0 = time.perf_counter()
            result = sk.sweep(SCENE, grid or _grid(), out=out, frames=n, use_ray=use_ray)
            wall = time.perf_counter() - t0
            if result.failed:
                raise RuntimeError(f"{result.failed} runs of the benchmark sweep failed: {result.rows}")
            return wall, sum(r["seconds"] for r in result.rows), result.table

        sk.sweep(SCENE, {"cloth[0].k_mu": [300.0]}, out=os.path.join(tmp, "warm-local"), frames=2, use_ray=False)
        t0 = time.perf_counter()
        ray.init(num_cpus=CPUS, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        started = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()
            run(True, "warm-ray", {"cloth[0].k_mu": [300.0 + k for k in range(2 * CPUS)]}, 2)
            warm = time.perf_counter() - t0
            seq, par, work = [], [], []
            for r in range(rounds):
                # alternate which goes first, so a noisy neighbour hurts both alike
                order = (False, True) if r % 2 == 0 else (True, False)
                for use_ray in order:
                    wall, seconds, table = run(use_ray, f"{'ray' if use_ray else 'local'}-{r}")
                    (par if use_ray else seq).append(wall)
                    if use_ray:
                        work.append(seconds)
                        ray_table = table
                    else:
                        local_table = table
            same = _numbers(ray_table) == _numbers(local_table)

            @ray.remote(num_cpus=1)
            def empty():
                return None

            ray.get(empty.remote())
            trips = []
            for _ in range(50):
                t0 = time.perf_counter()
                ray.get(empty.remote())
                trips.append(time.perf_counter() - t0)
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    seq_s, par_s = statistics.median(seq), statistics.median(par)
    overhead = (par_s * CPUS - statistics.median(work)) / RUNS
    return {"sequential": seq_s, "ray": par_s, "ratio": seq_s / par_s, "overhead": overhead,
            "empty_task": statistics.median(trips), "ray_start": started, "warmup": warm, "same": same,
            "frames": frames}


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``sweep`` section with bench.py's registry."""

    @section("sweep", "(s) 16-run sweep on a local Ray with 2 CPUs vs the same runs one after another")
    def bench_sweep(ctx) -> Result:
        try:
            import ray  # noqa: F401
        except ImportError:
            return Result(skipped="ray is not installed (pip install 'simkit[ray]')")
        m = measure(QUICK_FRAMES if ctx.quick else FRAMES, ctx.reps(3, 1))
        res = Result()
        res.rows.append(Row(f"{RUNS} runs, sequential / Ray [s]", f"{fmt(m['ray'])} s (Ray)",
                            f"{fmt(m['sequential'])} s (sequential)", f"{m['ratio']:.2f}x", f"<= {CPUS} (CPUs)"))
        res.rows.append(Row("per-task overhead [ms]", f"{fmt(m['overhead'] * 1e3)} ms",
                            f"{fmt(m['empty_task'] * 1e3)} ms (empty task)"))
        res.rows.append(Row("Ray start / warm-up [s]", f"{fmt(m['ray_start'])} s", f"{fmt(m['warmup'])} s (warm-up)"))
        res.notes.append(f"sweep: cloth_drape, {m['frames']} frames a run, 1 thread a run; ratio = sequential / Ray "
                         f"wall time; overhead = (Ray wall x {CPUS} - the runs' own seconds) / {RUNS}; the two "
                         f"tables are {'identical' if m['same'] else 'DIFFERENT (a bug)'} but for the seconds")
        return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    m = measure(QUICK_FRAMES if args.quick else FRAMES, 1 if args.quick else args.rounds)
    print(f"{RUNS} runs of cloth_drape ({m['frames']} frames each), 1 thread a run")
    print(f"  sequential      {m['sequential']:.2f} s")
    print(f"  Ray, {CPUS} CPUs     {m['ray']:.2f} s   ratio {m['ratio']:.2f}x")
    print(f"  per-task overhead {m['overhead'] * 1e3:.1f} ms (empty task round trip {m['empty_task'] * 1e3:.2f} ms)")
    print(f"  Ray start {m['ray_start']:.2f} s, warm-up {m['warmup']:.2f} s; tables identical: {m['same']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
