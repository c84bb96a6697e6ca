"""Time and memory of building big scenes: ``ModelBuilder`` grids, built and finalized.

Run from the repository root::

    python tools/bench_builder.py            # cloth 200x200 and 1000x1000, soft 32^3 and 64^3 cells
    python tools/bench.py --only builder     # the same, as a section of the bench table

Each row builds one grid in a fresh builder (``add_cloth_grid``: pinned on one side, with
triangles and bending hinges; ``add_soft_grid``: five tetrahedra per cell) and finalizes it
on the CPU in float32: the time is build + finalize, the median of ``ROUNDS`` runs. Memory is measured in a second, separate run under ``tracemalloc`` (it slows Python
down, so it is not timed): the peak of the Python and numpy allocations made while building
and finalizing, next to the bytes of the finalized model's arrays. A grid whose time,
extrapolated linearly in its element count from the smaller grid, would exceed
``MAX_SECONDS`` is skipped, with the estimate in its row.

This is a tool for people, not a test: timings never live in tests.
"""

import argparse
import gc
import os
import statistics
import sys
import time
import tracemalloc

import simkit as sk

MAX_SECONDS = 60.0
ROUNDS = 3
TARGET_SECONDS = 3.0  # build + finalize of the big grids (issue 17)
CLOTH_SIZES = (200, 1000)  # cells per side
SOFT_SIZES = (32, 64)


def build_cloth(n: int):
    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), n, n, 1.0 / n, 1.0 / n, mass=1e-3,
                     fix_left=True, k_mu=1e3, k_lambda=1e3, k_damp=0.1, edge_ke=1e-3)
    return b.finalize(device="cpu")


def build_soft(n: int):
    b = sk.sim.ModelBuilder()
    b.add_soft_grid((0.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), n, n, n, 1.0 / n, 1.0 / n, 1.0 / n,
                    density=100.0, k_mu=1e4, k_lambda=1e4, k_damp=0.0, fix_bottom=True)
    return b.finalize(device="cpu")


def model_bytes(model) -> int:
    """The bytes of every array of ``model``."""
    total = 0
    for value in vars(model).values():
        if isinstance(value, sk.Array):
            total += value.nbytes
        elif hasattr(value, "_sk_arrays"):
            total += sum(a.nbytes for _, a in value._sk_arrays())
    return total


def measure(build, n: int, rounds: int) -> tuple[float, int, int, int]:
    """(median seconds of build + finalize, tracemalloc peak bytes, model bytes, particles)."""
    seconds = []
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter()
        model = build(n)
        seconds.append(time.perf_counter() - t0)
        size, particles = model_bytes(model), model.particle_count
        del model
    gc.collect()
    tracemalloc.start()
    try:
        model = build(n)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del model
    return statistics.median(seconds), peak, size, particles


def builder_rows(Row, fmt, quick: bool = False) -> list:
    rows = []
    for kind, build, sizes, cells in (("cloth", build_cloth, CLOTH_SIZES, lambda n: n * n),
                                      ("soft", build_soft, SOFT_SIZES, lambda n: n ** 3)):
        previous = None  # (cells, seconds)
        for n in sizes[:1] if quick else sizes:
            label = f"{kind} {n}x{n}" if kind == "cloth" else f"{kind} {n}^3"
            target = TARGET_SECONDS if n == sizes[-1] else None
            if previous is not None and previous[1] * cells(n) / previous[0] > MAX_SECONDS:
                estimate = previous[1] * cells(n) / previous[0]
                rows.append(Row(f"{label}: build + finalize", f"skipped (~{estimate:.0f} s estimated)",
                                target=f"<= {target} s" if target else "(info)", met=False if target else None))
                continue
            # a grid estimated to take more than 10 s (the per-element builder) is timed once
            slow = previous is not None and previous[1] * cells(n) / previous[0] > 10.0
            seconds, peak, size, particles = measure(build, n, rounds=1 if slow else ROUNDS)
            previous = (cells(n), seconds)
            rows.append(Row(f"{label}: build + finalize ({particles} particles)", f"{fmt(seconds)} s",
                            target=f"<= {target} s" if target else "(info)",
                            met=(seconds <= target) if target else None))
            rows.append(Row(f"{label}: peak memory / model bytes", f"{fmt(peak / 2**20)} MiB",
                            f"{fmt(size / 2**20)} MiB (model)", f"{peak / size:.2f}x", "(info)"))
    return rows


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``builder`` section with bench.py's registry."""

    @section("builder", "(h) ModelBuilder: build + finalize of big cloth and soft grids, CPU, float32")
    def bench_builder(ctx) -> Result:
        return Result(rows=builder_rows(Row, fmt, ctx.quick),
                      notes=["builder: time = median of build + finalize; peak = tracemalloc peak of the Python and "
                             "numpy allocations while building and finalizing (a separate, untimed run); model = bytes "
                             "of the finalized model's arrays"])


def main(argv=None) -> int:
    from bench import Row, fmt, machine_line, print_table  # tools/ is the script's directory
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="the small grids only")
    args = p.parse_args(argv)
    print(f"simkit bench_builder: {machine_line()}")
    print(f"cache: {os.environ.get('SIMKIT_CACHE_DIR') or sk.config.cache_dir or '(default)'}")
    sys.stdout.flush()
    rows = builder_rows(Row, fmt, args.quick)
    print()
    print_table([("[builder] build + finalize, CPU, float32; peak = tracemalloc peak, model = its arrays' bytes", rows)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
