"""The simulation section of tools/bench.py: per-step cost of the physics.

Workloads (both integrators): a 64x64-cell cloth pinned on one side over the ground
(springs-free membrane + bending + ground contact) and a 16x16x16-cell soft grid
(5 tets per cell) resting on the ground. Forward: one step between two preallocated
states. Backward: a rollout of ``ROLLOUT`` steps recorded on a tape with one state per
step, then ``tape.backward``; reported per step and as backward / forward of the
same recorded rollout.

Semi-implicit rows are also compared with the same step written as warp kernels
(``bench_sim_warp.py``) when warp-lang imports, after checking that both give the same
positions; XPBD has no warp port and stays simkit-only.

``DT`` and the soft grid's contact damping are chosen so that both scenes stay finite
under semi-implicit Euler for thousands of steps (at 1e-3 the cloth blew up within 10
steps and the soft grid once it touched the ground: timings of a NaN state and an
equivalence check between two NaN runs mean nothing). The cost of a step does not
depend on ``DT``.

Registered by bench.py through :func:`add_sections`, so this file holds no driver.
"""

import time

import numpy as np

import simkit as sk

import bench_sim_warp

ROLLOUT = 100           # steps of the taped rollout: issue 9's "backward of a 100-step rollout"
XPBD_ROLLOUT = 20       # XPBD's taped rollouts are ~10x dearer per step: fewer steps keep the bench short
SPEEDUP_VS_WARP = 1.7   # issue 9: the semi-implicit step at least 1.7x faster than warp's
BACKWARD_OVER_FORWARD = 3.0
DT = 1.0e-4
EQUIV_STEPS = 100       # steps of the simkit-vs-warp position check
EQUIV_TOL = 1.0e-4      # metres: more than float32 round-off means different physics


def cloth_model(requires_grad: bool = False):
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 64, 64, 1.0 / 64, 1.0 / 64,
                     mass=1e-3, fix_left=True, k_mu=1e3, k_lambda=1e3, k_damp=0.1, edge_ke=1e-3)
    return b.finalize(requires_grad=requires_grad)


def soft_model(requires_grad: bool = False):
    # Lightest particle 3.3e-4 kg: explicit contact damping needs kd * DT / m < 1 (and kf
    # likewise) or it rings up; starting at y = particle radius puts the bottom layer in
    # contact from the first step, so contact is part of the measured work.
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True, contact_kd=1.0, contact_kf=10.0)
    b.add_soft_grid((0.0, 0.01, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 16, 16, 16, 0.02, 0.02, 0.02,
                    density=1000.0, k_mu=2e4, k_lambda=2e4, k_damp=0.0)
    return b.finalize(requires_grad=requires_grad)


def integrators() -> tuple:
    """({name: integrator}, note or None): XPBD is left out, with a note, when it does not import."""
    found = {"semi-implicit": sk.sim.SemiImplicitEuler()}
    try:
        from simkit.sim.xpbd import XPBD
    except Exception as e:  # noqa: BLE001 - a missing or broken XPBD must not sink the whole section
        return found, f"sim: xpbd rows skipped, simkit.sim.xpbd does not import ({type(e).__name__}: {e})"
    found["xpbd"] = XPBD(iterations=4)
    return found, None


def step_timer(model, integrator):
    """fn(n): n forward steps, ping-ponging two states (allocates nothing)."""
    a, b = model.state(), model.state()

    def run(n):
        nonlocal a, b
        for _ in range(n):
            integrator.step(model, a, b, None, DT)
            a, b = b, a
    return run


def rollout_timer(model, integrator, steps: int = ROLLOUT):
    """(forward seconds, backward seconds) of one ``steps``-step rollout on a tape."""
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    seed = np.ones((model.particle_count, 3), dtype=np.float32)

    def run():
        tape = sk.Tape()
        t0 = time.perf_counter()
        with tape:
            for k in range(steps):
                integrator.step(model, states[k], states[k + 1], None, DT)
        t1 = time.perf_counter()
        tape.backward(grads={states[-1].particle_q: seed})
        t2 = time.perf_counter()
        tape.zero()
        return t1 - t0, t2 - t1
    return run


def warp_reference(scene: str, fwd_model, grad_model, notes: list):
    """The warp step and rollout timers of a scene, or None (with the reason in ``notes``)
    when warp does not import or its positions differ from simkit's beyond EQUIV_TOL."""
    wp = bench_sim_warp.warp_module()
    if isinstance(wp, str):
        return None  # one skip note for the section, added by the caller
    err = bench_sim_warp.check_equivalence(fwd_model, DT, EQUIV_STEPS)
    if not err <= EQUIV_TOL:
        notes.append(f"sim {scene}: warp comparison refused, final positions after {EQUIV_STEPS} steps differ by "
                     f"{err:.3g} m (> {EQUIV_TOL:g} m): not the same physics")
        return None
    grad_rel = bench_sim_warp.check_gradient_equivalence(grad_model, DT, ROLLOUT)
    notes.append(f"sim {scene}: simkit and warp agree, max |x_simkit - x_warp| = {err:.2g} m after {EQUIV_STEPS} "
                 f"steps; gradients of sum(final x) over a {ROLLOUT}-step rollout differ by {grad_rel:.2g} "
                 "(relative to the largest entry, worst array; for information only: gradients through "
                 "resting friction contact are sensitive to float32 round-off, so only positions gate the ratio)")
    return {"step": bench_sim_warp.warp_step_timer(fwd_model, DT),
            "rollout": bench_sim_warp.warp_rollout_timer(grad_model, DT, ROLLOUT)}


def add_sections(section, Result, Row, fmt, interleaved) -> None:
    """Register the ``sim`` section with bench.py's registry."""

    def vs_warp(metric, sk_s, wp_s):
        # bench.py's ratio_row style: warp_time / simkit_time, higher is better (issue 9's target).
        r = wp_s / sk_s
        return Row(metric, f"{fmt(sk_s * 1e3)} ms", f"{fmt(wp_s * 1e3)} ms (warp)", f"{r:.2f}x",
                   f">= {SPEEDUP_VS_WARP}", r >= SPEEDUP_VS_WARP)

    @section("sim", "(e) simulation: per-step cost, 64x64 cloth and 16^3 soft grid, both integrators")
    def bench_sim(ctx) -> Result:
        res = Result()
        integs, skip = integrators()
        if skip:
            res.notes.append(skip)
        wp = bench_sim_warp.warp_module()
        if isinstance(wp, str):
            res.notes.append(f"sim: warp comparison skipped: {wp}")
        for scene, make in (("cloth 64x64", cloth_model), ("soft 16^3", soft_model)):
            fwd_model, grad_model = make(), make(requires_grad=True)
            ref = warp_reference(scene, fwd_model, grad_model, res.notes)
            for name, integ in integs.items():
                warp = ref if name == "semi-implicit" else None  # XPBD has no warp port
                run = step_timer(fwd_model, integ)
                run(2)
                contenders = {"step": run} if warp is None else {"step": run, "warp": warp["step"]}
                st = interleaved(contenders, rounds=ctx.reps(7, 2), ops=ctx.reps(20, 3))
                f = st["step"].median
                res.rows.append(Row(f"{scene}, {name}: forward step [ms]", f"{fmt(f * 1e3)} ms"))
                res.spread.append((f"{scene} {name} step", st["step"], 1e3, "ms"))
                if warp is not None:
                    res.rows.append(vs_warp(f"{scene}, {name} vs warp: forward step [ms]", f, st["warp"].median))
                    res.spread.append((f"{scene} warp step", st["warp"], 1e3, "ms"))
                steps = ROLLOUT if warp is not None else XPBD_ROLLOUT
                roll = rollout_timer(grad_model, integ, steps)
                roll()
                if warp is not None:
                    warp["rollout"]()
                times, w_times = [], []
                for _ in range(ctx.reps(3, 1)):  # alternate, so drift on a shared machine hits both
                    times.append(roll())
                    if warp is not None:
                        w_times.append(warp["rollout"]())
                tf = float(np.median([t[0] for t in times])) / steps
                tb = float(np.median([t[1] for t in times])) / steps
                res.rows.append(Row(f"{scene}, {name}: backward / taped forward", f"{fmt(tb * 1e3)} ms",
                                    f"{fmt(tf * 1e3)} ms (taped forward)", f"{tb / tf:.2f}x",
                                    f"<= {BACKWARD_OVER_FORWARD}", tb / tf <= BACKWARD_OVER_FORWARD))
                if warp is not None:
                    wb = float(np.median([t[1] for t in w_times])) / ROLLOUT
                    res.rows.append(vs_warp(f"{scene}, {name} vs warp: backward per step [ms]", tb, wb))
        res.notes.append(f"sim: forward = one step between two preallocated states; backward = one {ROLLOUT}-step "
                         f"rollout ({XPBD_ROLLOUT} for XPBD) on a tape (one state per step) divided by its steps; "
                         f"ratio = backward / taped forward of the same rollout. DT = {DT:g} s.")
        if not isinstance(wp, str):
            res.notes.append(f"sim vs warp: warp {wp.config.version} has no warp.sim, so tools/bench_sim_warp.py ports "
                             "simkit's semi-implicit step kernel by kernel (same float32 math, launch dims and "
                             "atomics) and runs it on the same model arrays; ratio = warp_time / simkit_time (higher "
                             "is better). warp's CPU device runs each launch's grid on the calling thread, simkit "
                             f"on {sk.get_threads()} thread(s). XPBD rows are simkit-only (no warp equivalent).")
        return res

