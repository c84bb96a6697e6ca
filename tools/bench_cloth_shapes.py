"""Time per step of cloth dropped onto itself over a bar's edge, with and without the cloth's
triangles colliding with shapes and with and without self-contact (issue 33).

Run from the repository root::

    python tools/bench_cloth_shapes.py           # 64x64 and 256x256 cells
    python tools/bench.py --only cloth_shapes    # the same, as a section of the bench table

The scene: a 1 m square sheet of ``n`` x ``n`` cells, float32, on the CPU, lying folded over
the top edge of a static bar (a box turned 45 degrees about its long axis) 1 mm above it,
its halves hanging down on either side; the ground under it. Each row steps it
(``XPBD(iterations=4)`` at dt = 1e-3 s, or ``SemiImplicitEuler`` at dt = 1e-4 s) and gives
the median time per step with triangle-shape contact (on, the default) and without
(``set_cloth_shape_contact(False)``), each with and without self-contact. The 64x64 row of
``SemiImplicitEuler`` also times a taped rollout of ``BACKWARD_STEPS`` steps with both
contacts, forward and backward.

This is a tool for people, not a test: timings never live in tests.
"""

import argparse
import os
import sys

import numpy as np

import simkit as sk

from bench_cloth_contact import rollout_seconds, step_seconds

BACKWARD_STEPS = 10
BAR = 0.5          # m, the height of the bar's axis
HALF = 0.02        # m, the bar's half thickness


def sheet_over_a_bar(n: int, triangles: bool, self_contact: bool):
    """The sheet of ``n`` x ``n`` cells folded over the bar (see the module documentation)."""
    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((-0.5, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), n, n, 1.0 / n, 1.0 / n,
                     mass=0.2 / (n + 1) ** 2, edge_ke=1e-4, radius=2e-3)
    # fold the sheet's local y (its height here) over the edge: y < 0.5 hangs at z < 0, the rest at z > 0
    top = BAR + HALF * np.sqrt(2.0) + 3e-3
    q = b.particle_q.values().copy()
    s = q[:, 1] - 0.5
    q[:, 1] = top - np.abs(s) / np.sqrt(2.0)
    q[:, 2] = s / np.sqrt(2.0)
    for i in range(len(q)):
        b.particle_q[i] = q[i]
    b.add_shape_box((0.0, BAR, 0.0), (0.3826834, 0.0, 0.0, 0.9238795), (0.6, HALF, HALF))
    b.set_cloth_shape_contact(triangles)
    if self_contact:
        b.set_cloth_self_contact(thickness=1e-3)
    return b.finalize(device="cpu")


def cloth_shape_rows(Row, fmt, quick: bool = False) -> list:
    rows = []
    cases = [("XPBD", 64, 1e-3), ("SemiImplicitEuler", 64, 1e-4), ("XPBD", 256, 1e-3)]
    for name, n, dt in cases[:2] if quick else cases:
        steps, rounds = (20, 3) if n <= 64 else (1, 3)
        for self_contact in (False, True):
            times = {}
            for on in (False, True):
                integrator = sk.sim.XPBD(iterations=4) if name == "XPBD" else sk.sim.SemiImplicitEuler()
                times[on] = step_seconds(sheet_over_a_bar(n, on, self_contact), integrator, dt, steps, rounds)
            what = "with" if self_contact else "without"
            rows.append(Row(f"{name} {n}x{n} over a bar, {what} self-contact: step with / without triangle-shape "
                            "contact", f"{fmt(times[True] * 1e3)} ms", f"{fmt(times[False] * 1e3)} ms (vertices only)",
                            f"{times[True] / times[False]:.2f}x", "(info)"))
        if name == "SemiImplicitEuler" and not quick:
            forward, backward = rollout_seconds(sheet_over_a_bar(n, True, True), dt, BACKWARD_STEPS)
            rows.append(Row(f"{name} {n}x{n} over a bar, both contacts: taped rollout of {BACKWARD_STEPS} steps, "
                            "forward / backward", f"{fmt(forward * 1e3)} ms", f"{fmt(backward * 1e3)} ms (backward)",
                            f"{backward / forward:.2f}x", "(info)"))
    return rows


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``cloth_shapes`` section with bench.py's registry."""

    @section("cloth_shapes", "(j) cloth over a bar's edge: step time with / without triangle-shape contact, CPU, "
                             "float32")
    def bench_cloth_shapes(ctx) -> Result:
        return Result(rows=cloth_shape_rows(Row, fmt, ctx.quick),
                      notes=["cloth_shapes: a 1 m sheet folded over a bar's edge, median time per step with the "
                             "triangles against shapes and with the vertices alone, with and without self-contact"])


def main(argv=None) -> int:
    from bench import Row, fmt, machine_line, print_table  # tools/ is the script's directory
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="the 64x64 rows only, no backward")
    args = p.parse_args(argv)
    print(f"simkit bench_cloth_shapes: {machine_line()}")
    print(f"cache: {os.environ.get('SIMKIT_CACHE_DIR') or sk.config.cache_dir or '(default)'}")
    sys.stdout.flush()
    rows = cloth_shape_rows(Row, fmt, args.quick)
    print()
    print_table([("[cloth_shapes] sheet over a bar, step with / without triangle-shape contact, CPU, float32", rows)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
