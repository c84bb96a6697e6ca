"""Throughput of many worlds in one model: steps per second of 1, 64 and 1024 copies of a scene.

Run from the repository root::

    python tools/bench_worlds.py               # 1, 64 and 1024 worlds (under a minute)
    python tools/bench_worlds.py --quick       # 1 and 64 worlds
    python tools/bench_worlds.py --device cuda # on a GPU

Workloads, each built once and added to one model with ``ModelBuilder.add_builder`` (the
worlds on a square grid, 2 m apart), float32, semi-implicit Euler, forward only:

- ball bounce: one ball (a particle of radius 0.1 m) dropped from 1 m onto the shared ground,
  undamped so that it bounces for the whole run, ``dt = 1e-3``;
- cloth: an 8x8-cell cloth (81 particles, 128 membrane triangles, 176 bending hinges) pinned
  on one side over the shared ground, ``dt = 1e-4`` (as ``bench_sim.py``'s cloth).

One step of the model steps every world, with one launch per kernel. ``steps/s`` is model
steps per second; ``world-steps/s`` is that times the number of worlds, the throughput; the
ratio is world-steps/s over the single world's. A single small world costs what its few
launches cost, so more worlds come almost free until the work fills the CPU's threads (or
the GPU), after which world-steps/s stays flat. Each figure is the median of ``ROUNDS`` runs
of enough steps to take about ``SECONDS`` each, after a warm-up (compilation) run, between
two preallocated states (a step allocates nothing); every run starts from the initial state,
so each times the same motion. The final state is checked finite.

Why the runs restart and the ball falls straight: a body that comes to rest with friction has
its sliding speed decay towards zero until the contact kernel's arithmetic meets subnormal
floats, which made a resting ball's step 5x slower on the CPU (the x86 default handles them
in microcode); a benchmark of settled scenes would time that instead of the worlds.

This is a tool for people, not a test.
"""

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

import simkit as sk

from bench import Row, fmt, machine_line, print_table  # noqa: E402  (tools/ is the script's directory)

WORLD_COUNTS = (1, 64, 1024)
ROUNDS = 3
SECONDS = 0.3
SPACING = 2.0
CLOTH_CELLS = 8


def ball_scene() -> sk.sim.ModelBuilder:
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True, contact_kd=0.0)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
    return b


def cloth_scene() -> sk.sim.ModelBuilder:
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), CLOTH_CELLS, CLOTH_CELLS,
                     1.0 / CLOTH_CELLS, 1.0 / CLOTH_CELLS, mass=1e-3, fix_left=True, k_mu=1e3, k_lambda=1e3,
                     k_damp=0.1, edge_ke=1e-3)
    return b


# name: (scene, dt)
SCENES = {"ball bounce": (ball_scene, 1.0e-3), f"cloth {CLOTH_CELLS}x{CLOTH_CELLS}": (cloth_scene, 1.0e-4)}


def worlds_model(scene: sk.sim.ModelBuilder, count: int, device: str) -> sk.sim.Model:
    """``count`` copies of ``scene`` on a square grid, ``SPACING`` apart, in one model."""
    b = sk.sim.ModelBuilder(gravity=scene.gravity, up_axis=scene.up_axis, ground=scene.ground)
    side = math.ceil(math.sqrt(count))
    for k in range(count):
        b.add_builder(scene, xform=sk.transform((SPACING * (k % side), 0.0, SPACING * (k // side)),
                                                (0.0, 0.0, 0.0, 1.0)))
    return b.finalize(device=device)


def steps_per_second(model: sk.sim.Model, dt: float) -> float:
    """Median model steps per second, ping-ponging two states from the initial state."""
    integrator = sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()

    def run(n: int) -> float:
        nonlocal a, b
        sk.copy(a.particle_q, model.particle_q)
        sk.copy(a.particle_qd, model.particle_qd)
        t0 = time.perf_counter()
        for _ in range(n):
            integrator.step(model, a, b, None, dt)
            a, b = b, a
        a.particle_q.numpy()  # waits for a GPU to finish
        return time.perf_counter() - t0

    run(3)  # compile or load every kernel
    n = 8
    while run(n) < SECONDS / 4 and n < 1 << 20:
        n *= 2
    n = max(1, int(n * SECONDS / max(run(n), 1e-9)))
    rate = statistics.median(n / run(n) for _ in range(ROUNDS))
    if not np.isfinite(a.particle_q.numpy()).all():
        raise RuntimeError(f"bench_worlds: the state of {model} is not finite after the timed steps")
    return rate


def world_rows(counts=WORLD_COUNTS, device: str = "cpu") -> list:
    """One row per scene and world count: steps/s (simkit column), world-steps/s (reference
    column) and the world-steps/s ratio to one world, as ``Row`` objects of bench.py.

    Example::

        print_table([("worlds", world_rows((1, 64)))])
    """
    rows = []
    for name, (scene, dt) in SCENES.items():
        builder = scene()
        base = None
        for count in counts:
            model = worlds_model(builder, count, device)
            rate = steps_per_second(model, dt)
            throughput = rate * count
            base = base or throughput
            particles = model.particle_count
            rows.append(Row(f"{name}, {count} world{'s' if count > 1 else ''} "
                            f"({particles} particle{'s' if particles > 1 else ''})",
                            f"{fmt(rate)} steps/s", f"{fmt(throughput)} world-steps/s", f"{throughput / base:.1f}x",
                            "(info)"))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="1 and 64 worlds only")
    p.add_argument("--device", default="cpu", help="device of the models (default: cpu)")
    args = p.parse_args(argv)
    print(f"simkit bench_worlds: {machine_line()}")
    print(f"device: {args.device}; cache: {os.environ.get('SIMKIT_CACHE_DIR') or sk.config.cache_dir or '(default)'}")
    sys.stdout.flush()
    counts = WORLD_COUNTS[:2] if args.quick else WORLD_COUNTS
    rows = world_rows(counts, args.device)
    print()
    print_table([("[worlds] semi-implicit, float32, forward: steps/s of the whole model (simkit column), "
                  "world-steps/s (reference column), ratio = world-steps/s / that of 1 world", rows)])
    print("notes:")
    print(f"  - median of {ROUNDS} runs of ~{SECONDS} s each after a warm-up; one launch per kernel steps all worlds")
    print("  - throughput grows with the worlds while one world's launches are mostly overhead, and levels off "
          "once the work fills the threads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
