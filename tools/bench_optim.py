"""Memory and time of differentiable rollouts: full tape against gradient checkpointing.

Run from the repository root::

    python tools/bench_optim.py            # T = 100, 1000, 10000 (about a minute)
    python tools/bench_optim.py --quick    # T = 100, 1000

Workload: a 32x32-cell cloth (1089 particles, float32) pinned on one side over the ground,
semi-implicit Euler at ``DT``, loss = sum of final positions; one ``Rollout.run`` (forward,
loss, backward) per sample, gradients w.r.t. the initial velocities and the membrane
stiffness. Checkpointed rollouts use ``checkpoint_every="auto"`` (k = ceil(sqrt(T))).

Memory is ``Rollout.peak_bytes``: the data and grad buffers of the states, XPBD scratch,
checkpoints, seeds and loss arrays the rollout held at once (Python object overhead and the
tape's records are not counted; see ``simkit/optim/rollout.py``). Times are medians of a few
runs after a warm-up (compilation) run. A full-tape run whose memory or time, extrapolated
linearly from the previous T, would exceed ``MAX_MEMORY_FRACTION`` of the machine's available
memory or ``MAX_SECONDS`` is skipped, with the reason in its row.

This is a tool for people, not a test; the tests check the memory ratio on a small model.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

import simkit as sk


DT = 1.0e-4
GRID = 32
MAX_MEMORY_FRACTION = 0.5
MAX_SECONDS = 120.0
TARGET_MEMORY_RATIO = 5.0  # at T >= 1000, as in tests/optim/test_rollout.py


@sk.kernel
def sum_positions(q: sk.array(dtype=sk.vec3), loss: sk.array(dtype=sk.float32)):
    i = sk.tid()
    p = q[i]
    sk.atomic_add(loss, 0, p[0] + p[1] + p[2])


def cloth_model():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), GRID, GRID, 1.0 / GRID, 1.0 / GRID,
                     mass=1e-3, fix_left=True, k_mu=1e3, k_lambda=1e3, k_damp=0.1, edge_ke=1e-3)
    return b.finalize(requires_grad=True)


def available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def measure(model, steps: int, checkpoint_every, rounds: int) -> tuple[int, float, int | None]:
    """(peak bytes, median seconds of one run, k) of a rollout of ``steps`` steps."""

    def loss(state, out):
        sk.launch(sum_positions, model.particle_count, inputs=[state.particle_q, out])

    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=steps, dt=DT, loss=loss,
                               checkpoint_every=checkpoint_every)
    s0 = model.state(requires_grad=True)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        rollout.run(s0)
        times.append(time.perf_counter() - t0)
    return rollout.peak_bytes, statistics.median(times), rollout.checkpoint_every


def optim_rows(Row, fmt, steps_list=(100, 1000, 10000)) -> list:
    """One memory row and one time row per T: checkpointed (simkit column) against full tape
    (reference column), as ``Row`` objects of bench.py (passed in: bench.py imports this file)."""
    model = cloth_model()
    measure(model, 10, "auto", 1)  # compile (or load) every kernel before timing
    rows = []
    full_per_step = None  # (bytes, seconds) per step of the last full-tape run, to extrapolate
    for steps in steps_list:
        rounds = 5 if steps <= 100 else 3 if steps <= 1000 else 1
        ck_bytes, ck_s, k = measure(model, steps, "auto", rounds)
        skip = None
        if full_per_step is not None:
            want_bytes, want_s = full_per_step[0] * steps, full_per_step[1] * steps
            avail = available_bytes()
            if avail is not None and want_bytes > MAX_MEMORY_FRACTION * avail:
                skip = (f"skipped (full tape would hold ~{want_bytes / 2**20:.0f} MB of buffers, more than "
                        f"{MAX_MEMORY_FRACTION:.0%} of the {avail / 2**20:.0f} MB available)")
            elif want_s > MAX_SECONDS:
                skip = f"skipped (full tape would take ~{want_s:.0f} s, more than {MAX_SECONDS:.0f} s)"
        label = f"T={steps}"
        if skip:
            rows.append(Row(f"{label} peak memory [MB]", f"{ck_bytes / 2**20:.3g} MB (k={k})", skip))
            rows.append(Row(f"{label} run time (fwd+loss+bwd) [s]", f"{fmt(ck_s)} s (k={k})", skip))
            continue
        full_bytes, full_s, _ = measure(model, steps, None, rounds)
        full_per_step = (full_bytes / steps, full_s / steps)
        ratio = full_bytes / ck_bytes
        met = ratio >= TARGET_MEMORY_RATIO if steps >= 1000 else None
        rows.append(Row(f"{label} peak memory [MB]", f"{ck_bytes / 2**20:.3g} MB (k={k})",
                        f"{full_bytes / 2**20:.3g} MB (full tape)", f"{ratio:.1f}x",
                        f">= {TARGET_MEMORY_RATIO:g}" if met is not None else "(info)", met))
        rows.append(Row(f"{label} run time (fwd+loss+bwd) [s]", f"{fmt(ck_s)} s (k={k})",
                        f"{fmt(full_s)} s (full tape)", f"{ck_s / full_s:.2f}x", "(info)"))
    return rows


REPLAY_GRID = 100
REPLAY_STEPS = 20
TARGET_REPLAY_RATIO = 4.0  # issue 30: taped rollout + backward at most 4x the forward step


def replay_rows(Row, fmt, rounds: int = 5) -> list:
    """A 100x100 cloth: one ``Rollout.run`` (20 steps, forward and backward) per step, run
    again over the same initial state (replayed from its third run) and through the Tape
    (a new initial state each run), against one forward step in a plain Python loop
    (replayed too); medians of ``rounds``, interleaved."""
    from bench import interleaved  # tools/ is the script's directory

    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), REPLAY_GRID, REPLAY_GRID,
                     1.0 / REPLAY_GRID, 1.0 / REPLAY_GRID, mass=1e-4, fix_left=True, k_mu=1e3, k_lambda=1e3,
                     k_damp=0.1, edge_ke=1e-3)
    model = b.finalize(requires_grad=True)

    def loss(state, out):
        sk.launch(sum_positions, model.particle_count, inputs=[state.particle_q, out])

    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=REPLAY_STEPS, dt=DT, loss=loss)
    s0 = model.state(requires_grad=True)
    s1, s2 = model.state(), model.state()
    integrator = sk.sim.SemiImplicitEuler()

    def forward(n):
        for _ in range(n):
            integrator.step(model, s1, s2, None, DT)
        s2.particle_q.numpy()

    def replayed(n):
        for _ in range(n):
            rollout.run(s0)

    other = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=REPLAY_STEPS, dt=DT, loss=loss)

    def taped(n):
        # a new initial state each run: nothing to replay (turning replays off would count a
        # change, and so make the replayed contender record again)
        for _ in range(n):
            other.run(model.state(requires_grad=True))

    stats = interleaved({"forward": forward, "replayed": replayed, "taped": taped}, rounds, warmup=3)
    assert rollout.replays > 0, rollout.replay_reason
    step = stats["forward"].median
    rep, tape = stats["replayed"].median / REPLAY_STEPS, stats["taped"].median / REPLAY_STEPS
    return [
        Row(f"{REPLAY_GRID}x{REPLAY_GRID} cloth: Rollout.run replayed per step / forward step",
            f"{fmt(rep * 1e6)} us", f"{fmt(step * 1e6)} us", f"{rep / step:.1f}x", f"<= {TARGET_REPLAY_RATIO:g}x",
            rep / step <= TARGET_REPLAY_RATIO),
        Row(f"{REPLAY_GRID}x{REPLAY_GRID} cloth: Rollout.run through the Tape per step / forward step",
            f"{fmt(tape * 1e6)} us", f"{fmt(step * 1e6)} us", f"{tape / step:.1f}x", "(info)"),
    ]


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``optim`` and ``rollout_replay`` sections with bench.py's registry."""

    @section("rollout_replay", "(g2) a 100x100 cloth's Rollout.run replayed vs through the Tape vs its forward step")
    def bench_rollout_replay(ctx) -> Result:
        return Result(rows=replay_rows(Row, fmt, ctx.reps(7, 3)),
                      notes=[f"rollout_replay: {REPLAY_STEPS} steps of semi-implicit Euler at dt {DT}, loss = sum of "
                             "final positions, forward and backward, per step; forward = one replayed step in a "
                             "plain Python loop"])

    @section("optim", "(g) memory of a 32x32 cloth rollout: checkpointed vs full tape")
    def bench_optim(ctx) -> Result:
        return Result(rows=optim_rows(Row, fmt, (100, 1000) if ctx.quick else (100, 1000, 10000)),
                      notes=["optim: memory is Rollout.peak_bytes, data + grad buffers held at once; ratio = full "
                             "tape / checkpointed (k = ceil(sqrt(T))); time ratio = checkpointed / full tape"])


def main(argv=None) -> int:
    from bench import Row, fmt, machine_line, print_table  # tools/ is the script's directory
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="T = 100 and 1000 only")
    args = p.parse_args(argv)
    print(f"simkit bench_optim: {machine_line()}")
    print(f"cache: {os.environ.get('SIMKIT_CACHE_DIR') or sk.config.cache_dir or '(default)'}")
    sys.stdout.flush()
    rows = optim_rows(Row, fmt, (100, 1000) if args.quick else (100, 1000, 10000))
    print()
    print_table([(f"[optim] rollout of a {GRID}x{GRID} cloth, semi-implicit, float32: checkpointed (simkit) vs "
                  "full tape (reference); ratio = full / checkpointed for memory, checkpointed / full for time",
                  rows)])
    print("notes:")
    print("  - memory: Rollout.peak_bytes, data + grad buffers held at once (states, XPBD scratch, checkpoints, seeds,"
          " loss); Python objects and tape records are not counted")
    print(f"  - time: median of 5 (T <= 100), 3 (T <= 1000) or 1 run(s); numpy {np.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
