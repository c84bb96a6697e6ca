"""Forward mode: the cost of a Jacobian-vector product of a cloth rollout, and LM vs Adam.

Run from the repository root::

    python tools/bench_forward.py            # jvp / forward on the cloth, LM vs Adam on both identifications
    python tools/bench_forward.py --quick    # the cloth only (jvp and hvp)

Workload of the ratio: a 32x32-cell cloth (1089 particles, float32) pinned on one side,
semi-implicit Euler, 50 steps of 1e-4 s from the same initial state; ``forward`` is
``sk.sim.simulate``, ``jvp`` the same under ``sk.autograd.jvp`` along a tangent of the
initial velocities (tangent launches compute values and tangents together). The hvp row
takes the sum of squared final positions as the loss: ``gradient`` records the rollout on a
Tape and runs backward, ``hvp`` is ``sk.autograd.hvp`` along a direction of the initial
velocities (a jvp of the rollout recorded on a Tape, then its adjoints over dual numbers,
which also give the gradient). Medians of ``REPEATS`` runs after a warm-up (compilation)
run, the two sides of a ratio alternating. The identification rows run
examples/system_id.py and soft_id.py with Adam (40 iterations) and Levenberg-Marquardt, and
count the LM iterations until its loss is below Adam's final one.

This is a tool for people, not a test.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import simkit as sk

GRID = 32
STEPS = 50
DT = 1.0e-4
REPEATS = 7
TARGET_JVP_VS_FORWARD = 2.0
TARGET_HVP_VS_GRADIENT = 3.0
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def cloth_model():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), GRID, GRID, 1.0 / GRID, 1.0 / GRID,
                     mass=1e-3, fix_left=True, k_mu=1e3, k_lambda=1e3, k_damp=0.1, edge_ke=1e-3)
    return b.finalize()


def median_seconds(*fns) -> list:
    """Median seconds of each of ``fns``, run in turn (one of each per round) so that a ratio
    compares runs under the same load on a shared machine."""
    for fn in fns:
        fn()  # compile, allocate
    times = [[] for _ in fns]
    for _ in range(REPEATS):
        for fn, ts in zip(fns, times):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
    return [statistics.median(ts) for ts in times]


def cloth_rows(Row, fmt) -> list:
    model = cloth_model()
    integrator = sk.sim.SemiImplicitEuler()
    s0 = model.state()
    v = np.random.default_rng(0).standard_normal(s0.particle_qd.numpy().shape)

    def forward():
        return sk.sim.simulate(model, integrator, s0, STEPS, DT)[-1].particle_q

    def tangent():
        return sk.autograd.jvp(lambda qd: forward(), [s0.particle_qd], [v])

    f, j = median_seconds(forward, tangent)
    return [Row("cloth rollout, forward [ms]", f"{fmt(f * 1e3)} ms"),
            Row("cloth rollout, jvp [ms]", f"{fmt(j * 1e3)} ms"),
            Row("jvp / forward", f"{j / f:.2f}", "-", f"{j / f:.2f}x", f"<= {TARGET_JVP_VS_FORWARD}",
                j / f <= TARGET_JVP_VS_FORWARD)]


@sk.kernel
def squared_positions(q: sk.array(dtype=sk.vec3), loss: sk.array(dtype=sk.float32)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(q[i], q[i]))


def cloth_hvp_rows(Row, fmt) -> list:
    """hvp of a loss of the cloth rollout (sum of squared final positions) along a direction of the
    initial velocities, against its gradient (the rollout recorded on a Tape, then backward)."""
    model = cloth_model()
    integrator = sk.sim.SemiImplicitEuler()
    n = model.particle_count
    v = np.random.default_rng(1).standard_normal((n, 3))

    def loss_of(s0):
        q = sk.sim.simulate(model, integrator, s0, STEPS, DT)[-1].particle_q
        loss = sk.zeros(1, dtype=sk.float32)
        sk.launch(squared_positions, n, inputs=[q], outputs=[loss])
        return loss

    def gradient():
        s0 = model.state(requires_grad=True)
        with sk.Tape() as tape:
            loss = loss_of(s0)
        tape.backward(loss=loss)

    def second_order():
        s0 = model.state()
        sk.autograd.hvp(lambda qd: loss_of(s0), [s0.particle_qd], [v])

    g, h = median_seconds(gradient, second_order)
    return [Row("cloth rollout, gradient [ms]", f"{fmt(g * 1e3)} ms"),
            Row("cloth rollout, hvp [ms]", f"{fmt(h * 1e3)} ms"),
            Row("hvp / gradient", f"{h / g:.2f}", "-", f"{h / g:.2f}x", f"<= {TARGET_HVP_VS_GRADIENT}",
                h / g <= TARGET_HVP_VS_GRADIENT)]


def identification_rows(Row) -> list:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import tempfile

    rows = []
    for name in ("system_id", "soft_id"):
        module = __import__(name)
        with tempfile.TemporaryDirectory() as tmp:
            adam = module.main(iterations=40, usd_path=Path(tmp) / "a.usda", quiet=True, optimizer="adam")
            lm = module.main(usd_path=Path(tmp) / "l.usda", quiet=True, optimizer="lm")
        target = adam["final_loss"]
        costs = lm["losses"][1:] + [lm["final_loss"]]  # the loss after each LM iteration
        reached = next((k + 1 for k, c in enumerate(costs) if c <= target), None)
        rows.append(Row(f"{name}: iterations to Adam's 40th loss ({target:.1e})",
                        f"LM {reached if reached is not None else '>' + str(len(costs))}", "Adam 40",
                        f"{40 / reached:.1f}x" if reached else "-"))
        rows.append(Row(f"{name}: seconds, LM ({len(lm['losses'])} it) vs Adam (40 it)",
                        f"{lm['seconds']:.1f} s", f"{adam['seconds']:.1f} s"))
    return rows


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``forward`` section with bench.py's registry."""

    @section("forward", "(h) forward mode: jvp and hvp of a 32x32 cloth rollout; LM vs Adam on the identifications")
    def bench_forward(ctx) -> Result:
        rows = cloth_rows(Row, fmt) + cloth_hvp_rows(Row, fmt) + ([] if ctx.quick else identification_rows(Row))
        return Result(rows=rows, notes=["forward: jvp = values and tangents in one pass of tangent launches "
                                        "(simkit.autograd.jvp); hvp = that pass recorded on a Tape, then the "
                                        "adjoints over dual numbers (simkit.autograd.hvp), against Tape + "
                                        "backward; LM = sk.optim.LevenbergMarquardt, Jacobian columns by "
                                        "forward mode"])


def main(argv=None) -> int:
    from bench import Row, fmt, machine_line, print_table  # tools/ is the script's directory
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="the cloth ratio only")
    args = p.parse_args(argv)
    print(f"simkit bench_forward: {machine_line()}")
    sys.stdout.flush()
    rows = cloth_rows(Row, fmt) + cloth_hvp_rows(Row, fmt) + ([] if args.quick else identification_rows(Row))
    print()
    print_table([(f"[forward] {GRID}x{GRID} cloth, {STEPS} steps, float32; identification examples, float64", rows)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
