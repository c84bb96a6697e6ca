"""Steps that replay: gymnasium's ant under ``sk.sim.Featherstone`` stepped in a plain Python
loop (``s0, s1 = s1, s0``), next to MuJoCo's Euler ``mj_step`` on one thread.

Rows (float64, penalty contact, dt = 1e-3, the ant standing on its legs):

- ``step, replayed``: ``integrator.step`` as a user writes it; from the third call in each
  direction it replays its recorded launches (simkit/sim/replay.py). Target: <= 1.0x mj_step
  (issue 30).
- ``step, replays off``: the same loop with ``integrator.replay = False``, every step
  running its Python (what every step cost before replays).
- ``sk.replay of a captured step``: the floor, one ``sk.replay`` of the step's launches.

Every number is the median of ``rounds`` interleaved repetitions of 200 steps after a
warm-up, on one simkit thread (``sk.set_threads(1)``, restored after).

Run from the repository root::

    python tools/bench_replay.py          # or: python tools/bench.py --only replay

This is a tool for people, not a test: timings never live in tests.
"""

import os
import sys

import simkit as sk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_featherstone import DT, ant_model, ant_path, standing  # noqa: E402

TARGET = 1.0   # replayed step / mj_step (Euler)
OPS = 200


def contenders(path: str) -> dict:
    import mujoco

    model = ant_model(path, sk.float64)
    start = standing(model, 500)

    def stepper(replay: bool):
        # its own integrator and states; replays switched off on the integrator, not in
        # sk.config (setting an option makes every recorded step record again)
        integrator = sk.sim.Featherstone()
        integrator.replay = replay
        s = [model.state(), model.state()]
        for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
            sk.copy(getattr(s[0], name), getattr(start, name))

        def loop(n):
            s0, s1 = s
            for _ in range(n):
                integrator.step(model, s0, s1, None, DT)
                s0, s1 = s1, s0
            s[:] = s0, s1
            s0.joint_q.numpy()
        return loop

    a, b = model.state(), model.state()
    for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
        sk.copy(getattr(a, name), getattr(start, name))
    integrator = sk.sim.Featherstone()
    integrator.step(model, a, b, None, DT)     # the first step places a's bodies: capture a later one
    with sk.capture() as graph:
        integrator.step(model, b, a, None, DT)

    def captured(n):
        for _ in range(n):
            sk.replay(graph)
        a.joint_q.numpy()

    m = mujoco.MjModel.from_xml_path(path)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    m.opt.timestep = DT
    d = mujoco.MjData(m)
    for _ in range(300):
        mujoco.mj_step(m, d)

    def mj(n):
        for _ in range(n):
            mujoco.mj_step(m, d)

    return {"step, replayed": stepper(True), "step, replays off": stepper(False),
            "sk.replay of a captured step": captured, "mj_step (Euler)": mj}


def add_sections(section, Result, Row, fmt, interleaved) -> None:
    """Register the ``replay`` section with bench.py's registry."""

    @section("replay", "(j) ant step in a plain Python loop (replayed) vs MuJoCo's Euler mj_step, one thread")
    def bench_replay(ctx) -> Result:
        path = ant_path()
        if path is None:
            return Result(skipped="gymnasium (with its MuJoCo assets) is not installed")
        try:
            import mujoco  # noqa: F401
        except ImportError:
            return Result(skipped="mujoco is not installed")
        threads = sk.get_threads()
        sk.set_threads(1)
        try:
            stats = interleaved(contenders(path), ctx.reps(15, 5), ops=OPS, warmup=2)
        finally:
            sk.set_threads(threads)
        ref = stats["mj_step (Euler)"].median
        rows = []
        for name, s in stats.items():
            if name.startswith("mj_step"):
                continue
            ratio = s.median / ref
            target = TARGET if name == "step, replayed" else None
            rows.append(Row(f"ant {name} [us/step]", f"{fmt(s.median * 1e6)} us",
                            f"{fmt(ref * 1e6)} us (mj_step)", f"{ratio:.2f}x",
                            f"<= {target}" if target else "(info)", ratio <= target if target else None))
        return Result(rows=rows, spread=[(name, s, 1e6, "us") for name, s in stats.items()], notes=[
            f"replay: dt = {DT} s, float64, penalty contact, {OPS} steps per sample, one simkit thread; "
            "ratio = simkit / MuJoCo's Euler mj_step"])


def main() -> int:
    from bench import Context, Result, Row, fmt, interleaved, machine_line, print_table
    registry = []
    add_sections(lambda name, title: (lambda fn: registry.append((title, fn)) or fn), Result, Row, fmt, interleaved)
    print(f"simkit bench_replay: {machine_line()}")
    title, fn = registry[0]
    result = fn(Context(quick="--quick" in sys.argv))
    print()
    print_table([(title, result.skipped or result.rows)])
    for note in result.notes:
        print(note)
    for label, st, scale, unit in result.spread:
        print(f"  {label:30s} min {fmt(st.min * scale)} / median {fmt(st.median * scale)} / max "
              f"{fmt(st.max * scale)} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
