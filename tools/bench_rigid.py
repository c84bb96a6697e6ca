"""Rigid-body bench: per-step cost of 100 boxes falling on the ground (semi-implicit Euler),
forward and taped backward, next to the same step written as plain warp kernels.

Run from the repository root::

    python tools/bench_rigid.py            # the table (a few seconds once compiled)
    python tools/bench_rigid.py --quick    # fewer repetitions

The scene: a 10 x 10 grid of 1 kg boxes (half extent 5 cm, 25 cm apart), each tilted at
random and starting with its lowest corner 1 mm into the ground, so every box is in
contact and rocks onto a face during the equivalence run. One simkit step is clear
forces, ``ground_contact`` (shape x 8 corner threads), ``pair_contact`` (one thread per
candidate pair: the model's 9,900 ordered pairs, all rejected by the bounding-sphere
test, since the boxes never touch each other) and ``integrate_bodies``.
Forward: one step between two preallocated states. Backward: a ``ROLLOUT``-step rollout
on a tape (one state per step), seeded with ones on the final ``body_q``, divided by its
steps; its ratio is backward / taped forward of the same rollout.

warp-lang 1.19 has no ``warp.sim``, so the reference is the same step ported kernel by
kernel to warp (``tools/bench_rigid_warp.py``: same float32 math, launch dimensions and
atomics, including the pair kernel with its broad phase), run on warp's CPU device
over the model's arrays. Before any warp timing is shown, ``EQUIV_STEPS`` steps of both
must give the same body positions within ``EQUIV_TOL``; otherwise the warp columns say
why they are missing. Ratio = warp_time / simkit_time (higher is better for simkit).

Example::

    rows, notes = rigid_rows(quick=True)
    for r in rows:
        print(r.metric, r.simkit, r.reference, r.ratio)
"""

import math
import sys
import time

import numpy as np

import simkit as sk
from bench_rigid_warp import (position_difference, relative_difference, taped_gradients, warp_rollout_timer,
                              warp_scene, warp_step_timer)

ROLLOUT = 20
DT = 1.0e-4
GRID = 10
HALF = 0.05
SPACING = 0.25
EQUIV_STEPS = 1000       # 0.1 s: every box lands on a face
EQUIV_TOL = 1.0e-4       # metres: more than float32 round-off means different physics


def boxes_model(requires_grad: bool = False):
    """The bench scene: GRID x GRID tilted 1 kg boxes, each with a corner 1 mm into the ground.

    Example::

        model = boxes_model()
        model.body_count       # 100
    """
    rng = np.random.default_rng(3)
    b = sk.sim.ModelBuilder()
    corners = np.array([[x, y, z] for x in (-HALF, HALF) for y in (-HALF, HALF) for z in (-HALF, HALF)])
    for i in range(GRID):
        for j in range(GRID):
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            angle = rng.uniform(0.1, 0.4)
            q = np.concatenate([axis * math.sin(angle / 2), [math.cos(angle / 2)]])
            lowest = min(sk.sim.geometry.quat_rotate(q, c)[1] for c in corners)
            pos = (i * SPACING, -lowest - 1e-3, j * SPACING)
            body = b.add_body(sk.transform(pos, tuple(q)))
            b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (HALF, HALF, HALF), body=body,
                            density=1.0 / (2 * HALF) ** 3)
    return b.finalize(requires_grad=requires_grad)


# -- simkit timers -------------------------------------------------------------------------

def step_timer(model):
    """fn(n): n simkit forward steps, ping-ponging two states (allocates nothing)."""
    integrator = sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()

    def run(n):
        nonlocal a, b
        for _ in range(n):
            integrator.step(model, a, b, None, DT)
            a, b = b, a
    return run


def rollout_timer(model):
    """run() -> (forward seconds, backward seconds) of one ROLLOUT-step simkit rollout on a tape."""
    integrator = sk.sim.SemiImplicitEuler()
    states = [model.state(requires_grad=True) for _ in range(ROLLOUT + 1)]
    seed = np.ones((model.body_count, 7), dtype=np.float32)

    def run():
        tape = sk.Tape()
        t0 = time.perf_counter()
        with tape:
            for k in range(ROLLOUT):
                integrator.step(model, states[k], states[k + 1], None, DT)
        t1 = time.perf_counter()
        tape.backward(grads={states[-1].body_q: seed})
        t2 = time.perf_counter()
        tape.zero()
        return t1 - t0, t2 - t1
    return run


def check_equivalence(model, scene, steps: int = EQUIV_STEPS) -> float:
    """Max abs difference (metres) of the body origins after ``steps`` simkit and warp steps
    from the model's initial state; ``inf`` when either run is not finite.

    Example::

        err = check_equivalence(model, warp_scene(model))
    """
    return position_difference(model, scene, steps, DT)


def gradient_difference(model, scene, steps: int = ROLLOUT) -> float:
    """Largest difference between simkit's and warp's gradients of ``sum(final body_q)``
    w.r.t. the initial ``body_qd`` after a ``steps``-step taped rollout, relative to the
    largest entry (``model`` and ``scene`` finalized with ``requires_grad=True``).

    Example::

        rel = gradient_difference(boxes_model(True), warp_scene(boxes_model(True)))
    """
    seed = np.ones((model.body_count, 7), dtype=np.float32)
    g_sk, g_wp = taped_gradients(model, scene, steps, DT, seed)
    return relative_difference(g_sk["body_qd"], g_wp["body_qd"])


def settled_fraction(model, steps: int = EQUIV_STEPS) -> float:
    """Fraction of boxes lying on a face (within 2 degrees) after ``steps`` simkit steps."""
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps, DT, keep_states=False)[-1]
    flat = 0
    for q in final.body_q.numpy()[:, 3:].astype(np.float64):
        up = sk.sim.geometry.quat_to_matrix(q).T @ np.array([0.0, 1.0, 0.0])
        flat += math.degrees(math.acos(min(1.0, np.abs(up).max()))) < 2.0
    return flat / model.body_count


# -- table ---------------------------------------------------------------------------------

def _helpers():
    """Row, fmt and interleaved from tools/bench.py (imported here, not at module level, so
    that bench.py can import this file)."""
    import bench
    return bench.Row, bench.fmt, bench.interleaved


def rigid_rows(quick: bool = False, helpers=None) -> tuple:
    """Measure the rigid scene and return ``(rows, notes)``: bench.py ``Row``s (metric,
    simkit, reference, ratio) and a list of note strings.

    Example::

        rows, notes = rigid_rows(quick=True)
    """
    Row, fmt, interleaved = helpers or _helpers()
    reps = (lambda full, fast: fast if quick else full)
    rows, notes = [], []
    fwd_model, grad_model = boxes_model(), boxes_model(requires_grad=True)
    from simkit.kernels.shapes import collision_pairs
    n_pairs = collision_pairs(fwd_model).shape[0]

    scene = warp_scene(fwd_model)
    warp = None
    if isinstance(scene, str):
        notes.append(f"rigid: warp columns n/a: {scene}")
    else:
        err = check_equivalence(fwd_model, scene)
        if not err <= EQUIV_TOL:
            notes.append(f"rigid: warp columns n/a: body origins differ by {err:.3g} m after {EQUIV_STEPS} steps "
                         f"(> {EQUIV_TOL:g} m): not the same physics")
        else:
            notes.append(f"rigid: simkit and warp agree, max |x_simkit - x_warp| = {err:.2g} m after {EQUIV_STEPS} "
                         f"steps ({EQUIV_STEPS * DT:g} s, {100 * settled_fraction(fwd_model):.0f}% of the boxes "
                         "have landed on a face)")
            grad_scene = warp_scene(grad_model)
            notes.append(f"rigid: gradients of sum(final body_q) w.r.t. the initial body_qd over a {ROLLOUT}-step "
                         f"rollout differ by {gradient_difference(grad_model, grad_scene):.2g} (relative to the "
                         "largest entry; for information: positions gate the comparison)")
            warp = {"step": warp_step_timer(scene, DT), "rollout": warp_rollout_timer(grad_scene, DT, ROLLOUT)}

    def vs_warp(metric, sk_s, wp_s):
        return Row(metric, f"{fmt(sk_s * 1e3)} ms", f"{fmt(wp_s * 1e3)} ms (warp)", f"{wp_s / sk_s:.2f}x", "(info)")

    run = step_timer(fwd_model)
    run(2)
    contenders = {"step": run} if warp is None else {"step": run, "warp": warp["step"]}
    st = interleaved(contenders, rounds=reps(7, 2), ops=reps(20, 5))
    f = st["step"].median
    rows.append(Row("100 boxes on the ground: forward step [ms]", f"{fmt(f * 1e3)} ms",
                    f"{fmt(st['warp'].median * 1e3)} ms (warp)" if warp else "n/a (warp)",
                    f"{st['warp'].median / f:.2f}x" if warp else "-", "(info)"))

    roll = rollout_timer(grad_model)
    roll()
    if warp is not None:
        warp["rollout"]()
    times, w_times = [], []
    for _ in range(reps(5, 1)):  # alternate, so drift on a shared machine hits both
        times.append(roll())
        if warp is not None:
            w_times.append(warp["rollout"]())
    tf = float(np.median([t[0] for t in times])) / ROLLOUT
    tb = float(np.median([t[1] for t in times])) / ROLLOUT
    rows.append(Row("100 boxes: taped forward per step [ms]", f"{fmt(tf * 1e3)} ms"))
    rows.append(Row("100 boxes: backward per step [ms]", f"{fmt(tb * 1e3)} ms", "-",
                    f"{tb / tf:.2f}x of its taped forward"))
    if warp is not None:
        wb = float(np.median([t[1] for t in w_times])) / ROLLOUT
        rows.append(vs_warp("100 boxes vs warp: backward per step [ms]", tb, wb))
    else:
        rows.append(Row("100 boxes vs warp: backward per step [ms]", f"{fmt(tb * 1e3)} ms", "n/a (warp)"))
    notes.append(f"rigid: one step = clear + ground_contact ({fwd_model.shape_count} x 8 threads) + pair_contact "
                 f"({n_pairs} candidate pairs, one thread each; the boxes never touch: all broad-phase rejects) + "
                 f"integrate_bodies; DT = {DT:g} s; backward = one {ROLLOUT}-step taped rollout / {ROLLOUT}.")
    if warp is not None:
        notes.append("rigid vs warp: warp 1.19 has no warp.sim; tools/bench_rigid_warp.py ports the same four kernels to "
                     "warp (same float32 math, launch dims, atomics) over the model's arrays; ratio = warp_time / "
                     "simkit_time (higher is better). warp's CPU device runs each grid on the calling thread, "
                     f"simkit on {sk.get_threads()} thread(s).")
    return rows, notes


def add_sections(section, Result, Row, fmt, interleaved) -> None:
    """Register a ``rigid`` section with bench.py's registry (``bench_sim.add_sections`` style)."""

    @section("rigid", "(f) rigid bodies: 100 boxes on the ground, semi-implicit, forward and backward")
    def bench_rigid(ctx) -> Result:
        rows, notes = rigid_rows(ctx.quick, (Row, fmt, interleaved))
        return Result(rows=rows, notes=notes)


def main(argv=None) -> int:
    import bench
    quick = "--quick" in (sys.argv[1:] if argv is None else argv)
    print(f"simkit rigid bench{' (--quick)' if quick else ''}: {bench.machine_line()}")
    rows, notes = rigid_rows(quick)
    bench.print_table([("[rigid] 100 boxes on the ground, semi-implicit Euler, float32, CPU", rows)])
    print("notes:")
    for n in notes:
        print(f"  - {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
