"""Time per step of cloth folded onto itself, with and without cloth self-contact (issue 33).

Run from the repository root::

    python tools/bench_cloth_contact.py          # 64x64 and 256x256 cells
    python tools/bench.py --only cloth_contact   # the same, as a section of the bench table

The scene: a 1 m square sheet of ``n`` x ``n`` cells lying on the ground, its right half
folded back over its left half one thickness (1 mm) above it, so that every vertex of the
upper layer is in contact. Each row steps it (``XPBD(iterations=4)`` at dt = 1e-3 s, or
``SemiImplicitEuler`` at dt = 1e-4 s) on the CPU in float32 with the default thread count,
with ``set_cloth_self_contact`` and without it (the same model otherwise), and gives the
median time per step and their ratio; the target is at most 3x at 256x256. The 64x64 row of
``SemiImplicitEuler`` also times a taped rollout of ``BACKWARD_STEPS`` steps, forward and
backward.

This is a tool for people, not a test: timings never live in tests.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

import simkit as sk

TARGET_RATIO = 3.0  # self-contact step over the plain step at 256x256 (issue 33)
THICKNESS = 1e-3
BACKWARD_STEPS = 10


def folded_sheet(n: int, self_contact: bool):
    """The folded sheet of ``n`` x ``n`` cells (see the module documentation)."""
    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((0.0, 2e-3, 0.0), (-0.7071068, 0.0, 0.0, 0.7071068), (0.0, 0.0, 0.0), n, n, 1.0 / n, 1.0 / n,
                     mass=0.2 / (n + 1) ** 2, edge_ke=0.0, radius=2e-3)
    if self_contact:
        b.set_cloth_self_contact(thickness=THICKNESS)
    q = b.particle_q.values().copy()
    right = q[:, 0] > 0.5 + 0.25 / n
    q[right, 0] = 1.0 - q[right, 0]
    q[right, 1] += THICKNESS
    for i in np.flatnonzero(right):
        b.particle_q[i] = q[i]
    return b.finalize(device="cpu")


def step_seconds(model, integrator, dt: float, steps: int, rounds: int) -> float:
    """The median over ``rounds`` of the seconds per step of ``steps`` steps (after a warm-up)."""
    s0, s1 = model.state(), model.state()
    for _ in range(2):
        integrator.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            integrator.step(model, s0, s1, None, dt)
            s0, s1 = s1, s0
        samples.append((time.perf_counter() - t0) / steps)
    return statistics.median(samples)


def rollout_seconds(model, dt: float, steps: int) -> tuple[float, float]:
    """(forward, backward) seconds of a taped rollout of ``steps`` semi-implicit Euler steps."""
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    integrator = sk.sim.SemiImplicitEuler()
    tape = sk.Tape()
    t0 = time.perf_counter()
    with tape:
        for k in range(steps):
            integrator.step(model, states[k], states[k + 1], None, dt)
    t1 = time.perf_counter()
    seed = np.ones((model.particle_count, 3), dtype=np.float32)
    tape.backward(grads={states[-1].particle_q: sk.array(seed, dtype=sk.vec3)})
    return t1 - t0, time.perf_counter() - t1


def cloth_contact_rows(Row, fmt, quick: bool = False) -> list:
    rows = []
    cases = [("XPBD", 64, 1e-3), ("SemiImplicitEuler", 64, 1e-4), ("XPBD", 256, 1e-3)]
    for name, n, dt in cases[:2] if quick else cases:
        steps, rounds = (20, 3) if n <= 64 else (1, 3)
        times = {}
        for on in (False, True):
            model = folded_sheet(n, on)
            integrator = sk.sim.XPBD(iterations=4) if name == "XPBD" else sk.sim.SemiImplicitEuler()
            times[on] = step_seconds(model, integrator, dt, steps, rounds)
        ratio = times[True] / times[False]
        target = TARGET_RATIO if n == 256 else None
        rows.append(Row(f"{name} {n}x{n} folded: step with / without self-contact", f"{fmt(times[True] * 1e3)} ms",
                        f"{fmt(times[False] * 1e3)} ms (no self-contact)", f"{ratio:.2f}x",
                        f"<= {target}" if target else "(info)", (ratio <= target) if target else None))
        if name == "SemiImplicitEuler" and not quick:
            forward, backward = rollout_seconds(folded_sheet(n, True), dt, BACKWARD_STEPS)
            rows.append(Row(f"{name} {n}x{n} folded: taped rollout of {BACKWARD_STEPS} steps, forward / backward",
                            f"{fmt(forward * 1e3)} ms", f"{fmt(backward * 1e3)} ms (backward)",
                            f"{backward / forward:.2f}x", "(info)"))
    return rows


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``cloth_contact`` section with bench.py's registry."""

    @section("cloth_contact", "(i) cloth self-contact: folded sheet, step time with / without, CPU, float32")
    def bench_cloth_contact(ctx) -> Result:
        return Result(rows=cloth_contact_rows(Row, fmt, ctx.quick),
                      notes=["cloth_contact: a 1 m sheet folded onto itself 1 mm apart on the ground; median time "
                             "per step, with set_cloth_self_contact(thickness=1e-3) and without"])


def main(argv=None) -> int:
    from bench import Row, fmt, machine_line, print_table  # tools/ is the script's directory
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="the 64x64 rows only, no backward")
    args = p.parse_args(argv)
    print(f"simkit bench_cloth_contact: {machine_line()}")
    print(f"cache: {os.environ.get('SIMKIT_CACHE_DIR') or sk.config.cache_dir or '(default)'}")
    sys.stdout.flush()
    rows = cloth_contact_rows(Row, fmt, args.quick)
    print()
    print_table([("[cloth_contact] folded sheet, step with / without self-contact, CPU, float32", rows)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
