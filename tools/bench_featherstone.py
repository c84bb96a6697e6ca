"""Per-step cost of sk.sim.Featherstone on an ant-class robot, next to MuJoCo's mj_step.

Workload: gymnasium's ant.xml (free base + 8 hinges, 14 degrees of freedom, 9 bodies)
loaded with ``ModelBuilder.add_mjcf`` on a ground plane, standing on its legs. Forward: one
step between two preallocated states (nothing recorded), in float64 and float32, with the
penalty contacts (the default) and with ``contact="constraint"``. Backward: a
rollout of ``ROLLOUT`` steps recorded on a tape (one state per step), then ``tape.backward``
of the torso's pose, per step; and the same rollout as ``sk.optim.Rollout.run`` called again
over one initial state, as an optimization loop does, which replays its recorded forward and
backward (the issue 30 target: at most 4x the forward step). MuJoCo: ``mj_step`` of the same file compiled by MuJoCo, on
the CPU, once with the file's own integrator and once with its semi-implicit ``Euler`` (the
scheme simkit uses). The ratios are simkit_time / mujoco_time (lower is better for simkit);
MuJoCo has no backward pass, so the backward row compares with its forward step. The
last rows divide the constraint contact's step by the penalty contact's (the issue 29 target:
at most 1.5x for the forward step); the timings of a ratio are taken interleaved, under the
same load. The notes say how many contacts the standing ant has in each model.

A row steps ``WORLDS`` ants in one model (``add_builder``, float32), per ant: the launches are
the same, only wider. Every number is the median of ``rounds`` repetitions after a warm-up (which also compiles
the kernels), timed by ``bench.interleaved``.

Run from the repository root::

    python tools/bench_featherstone.py

This is a tool for people, not a test: timings never live in tests.
"""

import os
import sys
import warnings

import numpy as np

import simkit as sk

DT = 1e-3
ROLLOUT = 20
WORLDS = 64


def ant_path() -> str | None:
    try:
        import gymnasium
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
    return path if os.path.exists(path) else None


def ant_model(path: str, real, requires_grad: bool = False, worlds: int = 0):
    """The ant alone, or ``worlds`` copies of it side by side (``add_builder``)."""
    from simkit.sim.importers import RobotFileWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=True)
        b.add_mjcf(path)
    if worlds:
        scene = sk.sim.ModelBuilder(up_axis="z", ground=True)
        for w in range(worlds):
            scene.add_builder(b, xform=((3.0 * (w % 8), 3.0 * (w // 8), 0.0), (0.0, 0.0, 0.0, 1.0)))
        b = scene
    return b.finalize(dtype=real, requires_grad=requires_grad)


def standing(model, steps: int = 3000):
    """A state of the ant after it has settled on its legs (from its coordinates with the
    ankles moved inside their limits: the file has them at 0, outside 30 to 70 degrees)."""
    a, b = model.state(), model.state()
    q = model.joint_q.numpy().copy()
    lower, upper = model.joints.limit_lower.numpy(), model.joints.limit_upper.numpy()
    qs = model.joint_q_start.numpy()
    for j in range(model.joint_count):
        if model.joints.kind.numpy()[j] <= 1 and not lower[j] <= q[qs[j]] <= upper[j]:
            q[qs[j]] = 0.5 * (lower[j] + upper[j])
    a.joint_q.assign(q)
    sk.sim.eval_fk(model, a.joint_q, a.joint_qd, a)
    for _ in range(steps):
        sk.sim.Featherstone().step(model, a, b, None, DT)
        a, b = b, a
    return a


def constraint_tolerance(real) -> float:
    """The contact solve's tolerance: its default in float64, the one docs/contact.md advises in float32."""
    return 1e-8 if real is sk.float64 else 1e-5


def contacts_of_the_standing_ant(path: str) -> tuple[int, int, int]:
    """(penalty contact points touching, constraint contacts active, Gauss-Seidel sweeps of
    the constraint solve) in one float64 step of the standing ant: what the rows time."""
    model = ant_model(path, sk.float64)
    s0, s1 = standing(model), model.state()
    touching = int(s0.contact_stuck.numpy().sum())
    integrator = sk.sim.Featherstone(contact="constraint", tolerance=constraint_tolerance(sk.float64))
    for _ in range(50):
        integrator.step(model, s0, s1, None, DT)
        s0, s1 = s1, s0
    solve = next(iter(model._featherstone["contact_solves"].values()))
    return touching, int(solve.needed.numpy()[0]), int(solve.iterations.numpy()[0])


@sk.kernel
def torso_x_y_z(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    p = sk.transform_get_translation(q[0])
    sk.atomic_add(loss, 0, p[0] + p[1] + p[2])


def torso_position(state, loss):
    """The loss of the backward rows: the sum of the torso's coordinates (the seed they give)."""
    sk.launch(torso_x_y_z, 1, inputs=[state.body_q, loss])


def simkit_contenders(path: str) -> dict:
    out = {}
    for real in (sk.float64, sk.float32):
        model = ant_model(path, real)
        s0, s1 = standing(model), model.state()
        integrator = sk.sim.Featherstone()

        def forward(n, model=model, s0=s0, s1=s1, integrator=integrator):
            for _ in range(n):
                integrator.step(model, s0, s1, None, DT)
            s1.joint_q.numpy()

        out[f"simkit {real.__name__} forward"] = forward
    for real in (sk.float64, sk.float32):
        model = ant_model(path, real)
        s0, s1 = standing(model), model.state()
        integrator = sk.sim.Featherstone(contact="constraint", tolerance=constraint_tolerance(real))

        def forward(n, model=model, s0=s0, s1=s1, integrator=integrator):
            for _ in range(n):
                integrator.step(model, s0, s1, None, DT)
            s1.joint_q.numpy()

        out[f"simkit {real.__name__} forward, constraint contact"] = forward
    model = ant_model(path, sk.float32, worlds=WORLDS)
    s0, s1 = standing(model, 300), model.state()

    def many(n, model=model, s0=s0, s1=s1, integrator=sk.sim.Featherstone()):
        for _ in range(n):
            integrator.step(model, s0, s1, None, DT)
        s1.joint_q.numpy()

    out[f"simkit float32 forward, {WORLDS} ants in one model, per ant"] = many
    model = ant_model(path, sk.float64, requires_grad=True)
    start = standing(model)
    seed = np.zeros((model.body_count, 7))
    seed[0, :3] = 1.0

    def backward(n, contact="penalty"):
        integrator = sk.sim.Featherstone(contact=contact) if contact == "penalty" else \
            sk.sim.Featherstone(contact=contact, tolerance=constraint_tolerance(sk.float64))
        for _ in range(n):
            s0 = model.state(requires_grad=True)
            for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
                sk.copy(getattr(s0, name), getattr(start, name))
            states = [s0] + [model.state(requires_grad=True) for _ in range(ROLLOUT)]
            with sk.Tape() as tape:
                for k in range(ROLLOUT):
                    integrator.step(model, states[k], states[k + 1], None, DT)
            tape.backward(grads={states[-1].body_q: seed})
            s0.joint_qd.grad.numpy()

    out["simkit float64 rollout+backward"] = backward

    def replayed(n):
        # the optimization loop's way: one Rollout run again over the same initial state (new
        # values written into it), which replays its recorded forward and backward from the third run
        s0 = replayed.s0
        for _ in range(n):
            for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
                sk.copy(getattr(s0, name), getattr(start, name))
            s0.joint_qd.grad.zero_()
            replayed.rollout.run(s0)
        s0.joint_qd.grad.numpy()

    replayed.rollout = sk.optim.Rollout(model, sk.sim.Featherstone(), steps=ROLLOUT, dt=DT, loss=torso_position)
    replayed.s0 = model.state(requires_grad=True)
    out["simkit float64 rollout+backward, Rollout.run replayed"] = replayed
    out["simkit float64 rollout+backward, constraint contact"] = lambda n: backward(n, "constraint")
    return out


def mujoco_contenders(path: str) -> dict:
    import mujoco
    out = {}
    for label, integrator in (("file's integrator", None), ("Euler", mujoco.mjtIntegrator.mjINT_EULER)):
        m = mujoco.MjModel.from_xml_path(path)
        if integrator is not None:
            m.opt.integrator = integrator
        m.opt.timestep = DT
        d = mujoco.MjData(m)
        for _ in range(300):
            mujoco.mj_step(m, d)

        def step(n, m=m, d=d):
            for _ in range(n):
                mujoco.mj_step(m, d)

        out[f"mujoco mj_step ({label})"] = step
    return out


def add_sections(section, Result, Row, fmt, interleaved) -> None:
    """Register the ``featherstone`` section with bench.py's registry."""

    @section("featherstone", "(i) Featherstone step of gymnasium's ant (14 dofs, ground contact) vs MuJoCo mj_step")
    def bench_featherstone(ctx) -> Result:
        path = ant_path()
        if path is None:
            return Result(skipped="gymnasium (with its MuJoCo assets) is not installed")
        try:
            import mujoco  # noqa: F401
        except ImportError:
            return Result(skipped="mujoco is not installed")
        contenders = {**simkit_contenders(path), **mujoco_contenders(path)}
        touching, active, sweeps = contacts_of_the_standing_ant(path)
        rounds = ctx.reps(15, 5)
        # interleaved within each group, so that the ratios compare timings taken under the same load
        groups = [[n for n in contenders if "backward" not in n and "ants" not in n],
                  [n for n in contenders if "backward" in n], [n for n in contenders if "ants" in n]]
        stats = {}
        for group in groups:
            ops = 1 if "backward" in group[0] else 50
            stats.update(interleaved({name: contenders[name] for name in group}, rounds, ops=ops))
        ref = stats["mujoco mj_step (file's integrator)"].median
        ref_euler = stats["mujoco mj_step (Euler)"].median
        rows, per_step = [], {}
        for name, s in stats.items():
            per_step[name] = s.median / (ROLLOUT if "backward" in name else WORLDS if "ants" in name else 1)
            t = per_step[name]
            ratio = f"{t / ref_euler:.1f}x" if name.startswith("simkit") else "-"
            rows.append(Row(f"{name} [us/step]", f"{fmt(t * 1e6)} us" if name.startswith("simkit") else "-",
                            f"{fmt(t * 1e6)} us" if name.startswith("mujoco") else "-", ratio))
        # the target: the constraint solve makes a step at most 1.5x slower than penalty contact
        replay = per_step["simkit float64 rollout+backward, Rollout.run replayed"]
        rows.append(Row("Rollout.run replayed (rollout + backward) / forward step, float64",
                        f"{fmt(replay * 1e6)} us", f"{fmt(per_step['simkit float64 forward'] * 1e6)} us",
                        f"{replay / per_step['simkit float64 forward']:.1f}x", "<= 4x",
                        replay / per_step["simkit float64 forward"] <= 4.0))
        for base in ("simkit float64 forward", "simkit float32 forward", "simkit float64 rollout+backward"):
            penalty, constraint = per_step[base], per_step[f"{base}, constraint contact"]
            target = "<= 1.5x" if base.endswith("forward") else "-"
            met = constraint / penalty <= 1.5 if base.endswith("forward") else None
            rows.append(Row(f"{base[len('simkit '):]}: constraint / penalty contact", f"{fmt(constraint * 1e6)} us",
                            f"{fmt(penalty * 1e6)} us", f"{constraint / penalty:.2f}x", target, met))
        return Result(rows=rows, notes=[
            f"dt = {DT} s; ratio = simkit / MuJoCo Euler ({fmt(ref_euler * 1e6)} us; with the file's RK4 "
            f"{fmt(ref * 1e6)} us); backward = a {ROLLOUT}-step taped rollout and its backward, per step",
            f"the standing ant touches the ground at {touching} penalty contact points; the constraint solve "
            f"(tolerance 1e-8 in float64, 1e-5 in float32) has {active} contacts active and its last step "
            f"took {sweeps} Gauss-Seidel sweeps; the constraint / penalty rows compare the two (reference column: "
            f"penalty)"])


def main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench import Context, Result, Row, fmt, interleaved, machine_line, print_table
    registry = []
    add_sections(lambda name, title: (lambda fn: registry.append((title, fn)) or fn), Result, Row, fmt, interleaved)
    print(f"simkit bench_featherstone: {machine_line()}")
    title, fn = registry[0]
    result = fn(Context(quick=False))
    print()
    print_table([(title, result.skipped or result.rows)])
    for note in result.notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
