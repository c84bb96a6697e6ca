"""Per-step cost of penalty joints under semi-implicit Euler: a hanging chain of revolute links,
next to the same step written as warp kernels.

Forward: one step between two preallocated states (nothing recorded). Backward: a rollout of
``ROLLOUT`` steps recorded on a tape (one preallocated state per step), then ``tape.backward``
of the last link's position; both reported per step, with backward / forward of the same
recorded rollout. Every number is the median of ``rounds`` repetitions after a warm-up (which
also compiles the kernels), timed by ``bench.interleaved``: simkit and warp alternate round by
round, with the garbage collector off, so that a noisy, shared machine slows them alike.

warp-lang 1.19 has no ``warp.sim``, so the reference is simkit's step ported kernel by kernel
to warp (``tools/bench_rigid_warp.py``: ``eval_joints`` and the body kernels, same float32
math, launch dimensions and atomics) over the float32 model's arrays, on warp's CPU device.
Before a warp timing is shown, ``EQUIV_STEPS`` steps of both must give the same body
origins within ``EQUIV_TOL``, and the gradients of the backward's loss over a ``ROLLOUT``-step
rollout must agree within ``GRAD_TOL``; otherwise, or when warp cannot be imported, the warp
row says why. The warp row's ratios are warp_time / simkit_time (higher is better for simkit).

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
from bench_rigid_warp import (position_difference, relative_difference, taped_gradients, warp_rollout_timer,
                              warp_scene, warp_step_timer)

ROLLOUT = 50
DT = 2.0e-4
EQUIV_STEPS = 1000       # 0.2 s of swinging
EQUIV_TOL = 1.0e-4       # metres: more than float32 round-off means different physics
GRAD_TOL = 1.0e-3        # relative: float32 round-off is about 1e-5 here


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


def last_link_seed(model) -> np.ndarray:
    """The backward's seed on the final ``body_q``: ones on the last link's position, so the
    loss is the sum of its coordinates."""
    seed = np.zeros((model.body_count, 7), dtype=model.dtype.np_dtype)
    seed[-1, :3] = 1.0
    return seed


def step_timer(model):
    """fn(n): n unrecorded simkit steps, ping-ponging two preallocated states."""
    integrator = sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()

    def run(n):
        nonlocal a, b
        for _ in range(n):
            integrator.step(model, a, b, None, DT)
            a, b = b, a
    return run


def rollout_timer(model):
    """run() -> (recorded forward seconds, backward seconds) of one ``ROLLOUT``-step simkit
    rollout on a tape, over preallocated states, seeded by :func:`last_link_seed`."""
    integrator = sk.sim.SemiImplicitEuler()
    states = [model.state(requires_grad=True) for _ in range(ROLLOUT + 1)]
    seed = sk.array(last_link_seed(model), dtype=model.types.transform)

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


def tangent_part(grad: np.ndarray, body_q: np.ndarray) -> np.ndarray:
    """A ``body_q`` gradient with each rotation's component along its own (unit) quaternion
    removed. That component is how the loss would change if the quaternion left the unit
    sphere, which depends on how each library writes its rotation formulas (simkit's and
    warp's agree on unit quaternions, not off them), so it is no part of the comparison."""
    out = np.array(grad, dtype=np.float64)
    q = np.asarray(body_q, dtype=np.float64)[:, 3:]
    out[:, 3:] -= np.sum(out[:, 3:] * q, axis=1, keepdims=True) * q
    return out


def warp_side(links: int):
    """The float32 chain's warp port, checked against simkit: a dict with ``step`` (fn(n)) and
    ``rollout`` (run()) timers, ``position_error_m`` and ``gradient_rel_diff`` ({``body_q``,
    ``body_qd``}), or a str saying why warp has no row here.

    Example::

        side = warp_side(10)
        side if isinstance(side, str) else side["position_error_m"]
    """
    fwd_model, grad_model = chain_model(links, sk.float32), chain_model(links, sk.float32, requires_grad=True)
    scene = warp_scene(fwd_model)
    if isinstance(scene, str):
        return scene
    err = position_difference(fwd_model, scene, EQUIV_STEPS, DT)
    if not err <= EQUIV_TOL:
        return (f"body origins differ by {err:.3g} m after {EQUIV_STEPS} steps (> {EQUIV_TOL:g} m): "
                "not the same physics")
    check_model = chain_model(links, sk.float32, requires_grad=True)
    check_scene = warp_scene(check_model)
    g_sk, g_wp = taped_gradients(check_model, check_scene, ROLLOUT, DT, last_link_seed(check_model))
    q0 = check_model.body_q.numpy()
    grads = {"body_q": relative_difference(tangent_part(g_sk["body_q"], q0), tangent_part(g_wp["body_q"], q0)),
             "body_qd": relative_difference(g_sk["body_qd"], g_wp["body_qd"])}
    worst = max(grads.values())
    if not worst <= GRAD_TOL:
        return (f"gradients over a {ROLLOUT}-step rollout differ by {worst:.3g} relative (> {GRAD_TOL:g}): "
                "not the same adjoint")
    return {"step": warp_step_timer(scene, DT),
            "rollout": warp_rollout_timer(warp_scene(grad_model), DT, ROLLOUT, last_link_seed(grad_model)),
            "position_error_m": err, "gradient_rel_diff": grads}


def _recording(rollout, times: list):
    """fn(n) for ``bench.interleaved``: n rollouts, appending each (recorded, backward) split to ``times``."""
    def run(n):
        for _ in range(n):
            times.append(rollout())
    return run


def joint_rows(links: int = 10, steps: int = 2000, rounds: int = 5) -> list[dict]:
    """Rows of the table: per float type a simkit row (``engine`` "simkit") with microseconds
    per forward step, per recorded step and per backward step of a ``links``-link chain and
    backward / recorded forward; after the float32 one, a warp row (``engine`` "warp") with
    the same numbers for the warp port, ``forward_ratio`` and ``backward_ratio``
    (warp_time / simkit_time), ``position_error_m`` and ``gradient_rel_diff`` from the
    equivalence check, or, when warp cannot run or disagrees, those set to None and
    ``note`` saying why.

    Example::

        for row in joint_rows(links=10):
            print(row["engine"], row["dtype"], row["forward_us"], row["backward_us"])
    """
    from bench import interleaved
    rows = []
    for dtype in (sk.float32, sk.float64):
        warp = warp_side(links) if dtype is sk.float32 else None
        contenders = {"simkit": step_timer(chain_model(links, dtype))}
        rollouts = {"simkit": rollout_timer(chain_model(links, dtype, requires_grad=True))}
        if isinstance(warp, dict):
            contenders["warp"], rollouts["warp"] = warp["step"], warp["rollout"]
        forward = interleaved(contenders, rounds=rounds, ops=steps)
        times = {name: [] for name in rollouts}
        interleaved({name: _recording(rollouts[name], times[name]) for name in rollouts}, rounds=rounds)
        timed = {}
        for name in rollouts:
            recorded = statistics.median(t[0] for t in times[name][1:])  # [0] is the warm-up
            backward = statistics.median(t[1] for t in times[name][1:])
            timed[name] = {"engine": name, "dtype": dtype.__name__, "links": links,
                           "forward_us": forward[name].median * 1e6, "recorded_us": recorded / ROLLOUT * 1e6,
                           "backward_us": backward / ROLLOUT * 1e6, "backward_over_forward": backward / recorded}
        rows.append(timed["simkit"])
        if isinstance(warp, dict):
            row = timed["warp"]
            row.update(forward_ratio=row["forward_us"] / timed["simkit"]["forward_us"],
                       backward_ratio=row["backward_us"] / timed["simkit"]["backward_us"],
                       position_error_m=warp["position_error_m"], gradient_rel_diff=warp["gradient_rel_diff"],
                       note=None)
            rows.append(row)
        elif isinstance(warp, str):
            rows.append({"engine": "warp", "dtype": dtype.__name__, "links": links, "forward_us": None,
                         "recorded_us": None, "backward_us": None, "backward_over_forward": None,
                         "forward_ratio": None, "backward_ratio": None, "position_error_m": None,
                         "gradient_rel_diff": None, "note": warp})
    return rows


def _pair_count(links: int) -> int:
    """The number of candidate shape pairs of the ``links``-link chain (jointed neighbours excluded)."""
    from simkit.kernels.shapes import collision_pairs
    return int(collision_pairs(chain_model(links, sk.float32)).shape[0])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=10, help="links in the chain (default 10)")
    parser.add_argument("--rounds", type=int, default=5, help="timed repetitions (default 5)")
    args = parser.parse_args(argv)
    rows = joint_rows(args.links, rounds=args.rounds)
    print(f"revolute chain, semi-implicit Euler, dt={DT}, backward over a {ROLLOUT}-step rollout")
    header = f"{'engine':<7} {'dtype':<8} {'links':>5} {'forward us/step':>16} {'recorded us/step':>17} " \
             f"{'backward us/step':>17} {'bwd/fwd':>8} {'fwd warp/sk':>12} {'bwd warp/sk':>12}"
    print(header)
    print("-" * len(header))
    for r in rows:
        lead = f"{r['engine']:<7} {r['dtype']:<8} {r['links']:>5}"
        if r["forward_us"] is None:
            print(f"{lead}  n/a: {r['note']}")
            continue
        line = f"{lead} {r['forward_us']:>16.1f} {r['recorded_us']:>17.1f} {r['backward_us']:>17.1f} " \
               f"{r['backward_over_forward']:>8.2f}"
        if r["engine"] == "warp":
            line += f" {r['forward_ratio']:>11.2f}x {r['backward_ratio']:>11.2f}x"
        print(line)
    warp = next((r for r in rows if r["engine"] == "warp"), None)
    n_pairs = _pair_count(args.links)
    print("notes:")
    print(f"  - one step = clear + pair_contact ({n_pairs} candidate pairs) + eval_joints ({args.links} threads) + "
          "integrate_bodies (the warp port launches the same); float64 has no warp row (the port is float32).")
    if warp is not None and warp["note"] is None:
        g = warp["gradient_rel_diff"]
        print(f"  - warp vs simkit: max |x_simkit - x_warp| = {warp['position_error_m']:.2g} m after {EQUIV_STEPS} "
              f"steps ({EQUIV_STEPS * DT:g} s); gradients of the last link's final position sum over a {ROLLOUT}-step "
              f"rollout differ by {g['body_qd']:.2g} (w.r.t. the initial body_qd) and {g['body_q']:.2g} (initial "
              "body_q, rotations on the unit sphere), relative to the largest entry.")
        print("  - ratio = warp_time / simkit_time (higher is better for simkit); warp's CPU device runs each grid on "
              f"the calling thread, simkit on {sk.get_threads()} thread(s).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
