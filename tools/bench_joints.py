"""Per-step cost of penalty joints under semi-implicit Euler: a hanging chain of revolute links.

Forward: one step between two preallocated states (nothing recorded). Backward: a rollout of
``ROLLOUT`` steps recorded on a tape with one state per step, then ``tape.backward`` of the
last link's position; both reported per step, with backward / forward of the same recorded
rollout. Every number is the median of ``rounds`` repetitions after a warm-up (which also
compiles the kernels).

Run from the repository root::

    python tools/bench_joints.py              # 10 links, float32 and float64
    python tools/bench_joints.py --links 50   # a longer chain

This is a tool for people, not a test: timings never live in tests.
"""

import argparse
import statistics
import time

import numpy as np

import simkit as sk

ROLLOUT = 50
DT = 2.0e-4


def chain_model(links: int, dtype, requires_grad: bool = False):
    """``links`` box links of 0.29 kg, 0.2 m apart, hanging from the world by revolute
    joints about z, each turned a little so that the chain swings."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    top, parent = np.array([0.0, 2.0, 0.0]), -1
    for i in range(links):
        angle = 0.05 * (i + 1)
        rot = (0.0, 0.0, np.sin(0.5 * angle), np.cos(0.5 * angle))
        link = b.add_body(sk.transform(tuple(top), rot))
        b.add_shape_box((0.0, -0.1, 0.0), (0.0, 0.0, 0.0, 1.0), (0.02, 0.09, 0.02), body=link, density=1000.0)
        b.add_joint_revolute(parent, link, axis=(0.0, 0.0, 1.0))
        top = top + np.array([0.2 * np.sin(angle), -0.2 * np.cos(angle), 0.0])
        parent = link
    return b.finalize(dtype=dtype, requires_grad=requires_grad)


def forward_step_seconds(model, steps: int, rounds: int) -> float:
    """Median seconds of one unrecorded step."""
    integrator = sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()
    times = []
    for r in range(rounds + 1):
        start = time.perf_counter()
        for _ in range(steps):
            integrator.step(model, a, b, None, DT)
            a, b = b, a
        if r:
            times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def rollout_seconds(model, rounds: int) -> tuple[float, float]:
    """Median (recorded forward, backward) seconds of one ``ROLLOUT``-step rollout on a tape."""
    integrator = sk.sim.SemiImplicitEuler()
    seed = np.zeros((model.body_count, 7), dtype=model.dtype.np_dtype)
    seed[-1, :3] = 1.0
    fwd, bwd = [], []
    for r in range(rounds + 1):
        tape = sk.Tape()
        start = time.perf_counter()
        with tape:
            states = sk.sim.simulate(model, integrator, model.state(requires_grad=True), ROLLOUT, DT)
        mid = time.perf_counter()
        tape.backward(grads={states[-1].body_q: sk.array(seed, dtype=model.types.transform)})
        end = time.perf_counter()
        if r:
            fwd.append(mid - start)
            bwd.append(end - mid)
    return statistics.median(fwd), statistics.median(bwd)


def joint_rows(links: int = 10, steps: int = 2000, rounds: int = 5) -> list[dict]:
    """One row per float type: microseconds per forward step, per recorded step and per
    backward step of a ``links``-link chain, and backward / recorded forward.

    Example::

        for row in joint_rows(links=10):
            print(row["dtype"], row["forward_us"], row["backward_us"])
    """
    rows = []
    for dtype in (sk.float32, sk.float64):
        forward = forward_step_seconds(chain_model(links, dtype), steps, rounds)
        recorded, backward = rollout_seconds(chain_model(links, dtype, requires_grad=True), rounds)
        rows.append({"dtype": dtype.__name__, "links": links, "forward_us": forward * 1e6,
                     "recorded_us": recorded / ROLLOUT * 1e6, "backward_us": backward / ROLLOUT * 1e6,
                     "backward_over_forward": backward / recorded})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=10, help="links in the chain (default 10)")
    parser.add_argument("--rounds", type=int, default=5, help="timed repetitions (default 5)")
    args = parser.parse_args(argv)
    rows = joint_rows(args.links, rounds=args.rounds)
    print(f"revolute chain, semi-implicit Euler, dt={DT}, backward over a {ROLLOUT}-step rollout")
    header = f"{'dtype':<8} {'links':>5} {'forward us/step':>16} {'recorded us/step':>17} " \
             f"{'backward us/step':>17} {'bwd/fwd':>8}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['dtype']:<8} {r['links']:>5} {r['forward_us']:>16.1f} {r['recorded_us']:>17.1f} "
              f"{r['backward_us']:>17.1f} {r['backward_over_forward']:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
