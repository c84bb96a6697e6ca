"""The per-step broad phase of the penalty body contact (simkit/kernels/broad_phase.py): boxes
in a loose pile, 1000 and 10000 of them, on the CPU in float32.

Rows: the sweep alone per step (bounds, sort, pairs), the ordered pairs it hands the narrow
phase against the static list's ``n (n - 1)`` ordered pairs (every pair of boxes both ways;
``n (n - 1) / 2`` unordered), and the whole ``SemiImplicitEuler`` step with each broad phase
where the static list fits in memory (1000 boxes: 999,000 pairs, 20 friction slots each).
The median of ``ROUNDS`` runs of ``STEPS`` steps. A tool for people, not a test: timings
never live in tests.

Run from the repository root::

    python tools/bench_broad_phase.py
    python tools/bench.py --only broad_phase
"""

import statistics
import sys
import time

import numpy as np

import simkit as sk
from simkit.kernels.broad_phase import broad_phase_pairs, sweep_pairs

ROUNDS = 3
STEPS = 5
SIZES = (1000, 10000)
STATIC_UP_TO = 1000        # the static list of 10000 boxes: 1e8 pairs, 2e9 friction slots
HALF = 0.05


def box_pile(count: int, mode: str):
    """``count`` boxes of 10 cm on a jittered lattice, neighbours a few millimetres apart or
    touching, some tilted, resting on the ground at the bottom layer."""
    rng = np.random.default_rng(0)
    side = int(np.ceil(count ** (1.0 / 3.0) * 1.6))     # a wide, low pile
    b = sk.sim.ModelBuilder(ground=True)
    b.broad_phase = mode
    for i in range(count):
        x, z, y = i % side, (i // side) % side, i // (side * side)
        pos = np.array([x, y, z]) * (2.0 * HALF + 0.004) + rng.uniform(-0.003, 0.003, size=3)
        pos[1] += HALF
        q = rng.normal(size=4) * np.array([0.05, 0.05, 0.05, 1.0])
        body = b.add_body(sk.transform(tuple(pos), tuple(q / np.linalg.norm(q))))
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (HALF, HALF, HALF), body=body)
    return b.finalize(device="cpu")


def median_times(fns: list) -> list:
    """Median seconds per call of each of ``fns``, timed in alternating rounds (so that a
    busy machine slows them alike)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(ROUNDS):
        for fn, out in zip(fns, times):
            t0 = time.perf_counter()
            for _ in range(STEPS):
                fn()
            out.append((time.perf_counter() - t0) / STEPS)
    return [statistics.median(t) for t in times]


def stepper(model):
    """A step of ``model`` that swaps its two states, and the states (the latest first)."""
    integrator = sk.sim.SemiImplicitEuler()
    states = [model.state(), model.state()]

    def step():
        integrator.step(model, states[0], states[1], None, 1e-3)
        states.reverse()

    return step, states


def measure() -> list:
    """Rows (boxes, sweep seconds, pairs found, static pairs, sweep step seconds, static step seconds or None)."""
    rows = []
    for n in SIZES:
        swept = box_pile(n, "sweep")
        state = swept.state()
        step, states = stepper(swept)
        fns = [lambda: sweep_pairs(swept, state.body_q, state.contact_pairs, state.contact_pair_count), step]
        if n <= STATIC_UP_TO:
            fns.append(stepper(box_pile(n, "static"))[0])
        times = median_times(fns)
        found = len(broad_phase_pairs(states[0]))
        rows.append((n, times[0], found, n * (n - 1), times[1], times[2] if len(times) > 2 else None))
    return rows


def add_sections(section, Result, Row, fmt) -> None:
    @section("broad_phase", "Broad phase: sweep and prune vs the static pair list (CPU step, float32, box piles)")
    def bench_broad_phase(ctx):
        res = Result()
        for n, sweep, found, static_pairs, step, static_step in measure():
            res.rows.append(Row(f"{n} boxes: sweep per step [ms]", f"{fmt(sweep * 1e3)} ms", "-", "-", "(info)", None))
            res.rows.append(Row(f"{n} boxes: pairs tested per step", f"{found}", f"{static_pairs} (static list)",
                                f"{found / static_pairs:.2g}x", "(info)", None))
            if static_step is not None:
                res.rows.append(Row(f"{n} boxes: whole step [ms]", f"{fmt(step * 1e3)} ms",
                                    f"{fmt(static_step * 1e3)} ms (static list)", f"{step / static_step:.2g}x",
                                    "(info)", None))
            else:
                res.rows.append(Row(f"{n} boxes: whole step [ms]", f"{fmt(step * 1e3)} ms",
                                    "(static list: too big)", "-", "(info)", None))
        res.notes.append("broad_phase: pairs are ordered (a's points against b), both ways for two boxes; the static "
                         "list holds n (n - 1) of them")
        return res


if __name__ == "__main__":
    for n, sweep, found, static_pairs, step, static_step in measure():
        static = f"{static_step * 1e3:9.2f} ms  ({step / static_step:.3g}x)" if static_step else "   (too big)"
        print(f"{n:6d} boxes: sweep {sweep * 1e3:8.2f} ms/step  pairs {found:8d} of {static_pairs:10d} "
              f"({found / static_pairs:.2g}x)  step {step * 1e3:9.2f} ms  static step {static}")
    sys.exit(0)
