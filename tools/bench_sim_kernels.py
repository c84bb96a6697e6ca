"""The ``kernels`` section of tools/bench.py: every sim kernel, forward and adjoint, on one
thread, next to its line-by-line warp port.

Each scene is stepped once on a simkit Tape and once on a warp Tape (the ports in
``bench_sim_warp.py`` and ``bench_rigid_warp.py``, over the same model arrays); the two
recordings are paired launch by launch (same kernel name, same order), and each launch
is then re-run alone, its forward and its adjoint, simkit and warp interleaved round by
round. simkit runs on one thread (``sk.set_threads(1)``, restored afterwards): warp's
CPU device runs a launch on the calling thread, so the ratio compares the generated code,
not the pool. warp launches are replayed with ``record_cmd`` (its cheapest launch path),
simkit's with ``sk.launch``. A launch's fixed cost is a few percent of the large kernels,
but a fifth of the smallest (the 216 boxes' ``integrate_bodies``: ~3.5 us of ~17 us on
either side), so those rows compare launch paths as much as generated code.

Scenes: a 100x100 cloth with structural and shear springs (springs, triangles, bending,
ground contact, integration), the 16^3 soft grid (tets), 216 tilted boxes packed so that
neighbours touch (body ground and pair contact, body integration) and 100 ten-link
revolute chains, one world each (joints). Ratio = warp_time / simkit_time: above 1.0x
simkit is faster.

Run alone for more rounds::

    python tools/bench_sim_kernels.py --rounds 15

Registered by bench.py through :func:`add_sections`.
"""

import argparse
import contextlib
import gc
import math
import statistics
import sys
import time

import numpy as np

import simkit as sk

import bench_rigid_warp
import bench_sim
import bench_sim_warp

TARGET = 1.0          # issue 17: at least warp's single-thread speed, every kernel, both ways
SAMPLE_SECONDS = 0.01  # one timing sample repeats a launch about this long


def cloth_springs_model(n: int = 100, requires_grad: bool = False):
    """An ``n`` x ``n`` cloth grid pinned on one side, resting just above the ground, with
    structural and shear springs between its particles (about ``4 n^2`` springs)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    start = b.add_cloth_grid((0.0, 0.005, 0.0), (-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)), (0.0, 0.0, 0.0), n, n,
                             1.0 / n, 1.0 / n, mass=1e-3, fix_left=True, k_mu=1e3, k_lambda=1e3, k_damp=0.1,
                             edge_ke=1e-3)
    row = n + 1
    for y in range(n + 1):
        for x in range(n + 1):
            p = start + y * row + x
            if x < n:
                b.add_spring(p, p + 1, 10.0, 0.01)
            if y < n:
                b.add_spring(p, p + row, 10.0, 0.01)
            if x < n and y < n:
                b.add_spring(p, p + row + 1, 10.0, 0.01)
                b.add_spring(p + 1, p + row, 10.0, 0.01)
    return b.finalize(requires_grad=requires_grad)


def packed_boxes_model(side: int = 6, requires_grad: bool = False):
    """``side^3`` tilted 0.1 m boxes on a 0.1 m lattice, the lowest layer touching the
    ground: every box overlaps its neighbours a little, so pair contact does its narrow
    phase for many pairs (and the ground its corners)."""
    rng = np.random.default_rng(5)
    half = 0.05
    b = sk.sim.ModelBuilder()
    for i in range(side):
        for j in range(side):
            for k in range(side):
                axis = rng.normal(size=3)
                axis /= np.linalg.norm(axis)
                angle = rng.uniform(0.05, 0.2)
                q = np.concatenate([axis * math.sin(angle / 2), [math.cos(angle / 2)]])
                body = b.add_body(sk.transform((i * 0.1, half + k * 0.1, j * 0.1), tuple(q)))
                b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (half, half, half), body=body, density=1000.0)
    return b.finalize(requires_grad=requires_grad)


def chains_model(chains: int = 100, links: int = 10, requires_grad: bool = False):
    """``chains`` copies of tools/bench_joints.py's ``links``-link revolute chain, one world each
    (contact stays within a chain, so the pair list grows with the chain count)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    one = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    top, parent = np.array([0.0, 2.0, 0.0]), -1
    for i in range(links):
        angle = 0.05 * (i + 1)
        rot = (0.0, 0.0, np.sin(0.5 * angle), np.cos(0.5 * angle))
        link = one.add_body(sk.transform(tuple(top), rot))
        one.add_shape_box((0.0, -0.1, 0.0), (0.0, 0.0, 0.0, 1.0), (0.02, 0.09, 0.02), body=link, density=1000.0)
        one.add_joint_revolute(parent, link, axis=(0.0, 0.0, 1.0))
        top = top + np.array([0.2 * np.sin(angle), -0.2 * np.cos(angle), 0.0])
        parent = link
    for c in range(chains):
        b.add_builder(one, xform=sk.transform((0.5 * c, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    return b.finalize(requires_grad=requires_grad)


SCENES = {
    "cloth 100x100 + springs": (cloth_springs_model, bench_sim_warp.WarpScene, "particle_q"),
    "soft 16^3": (bench_sim.soft_model, bench_sim_warp.WarpScene, "particle_q"),
    "boxes 6^3 packed": (packed_boxes_model, bench_rigid_warp.WarpRigidScene, "body_q"),
    "chains 100x10": (chains_model, bench_rigid_warp.WarpRigidScene, "body_q"),
}
KERNEL_NAMES = {"clear": "clear_body_forces"}  # warp port name -> simkit kernel name where they differ


@contextlib.contextmanager
def one_thread():
    before = sk.get_threads()
    sk.set_threads(1)
    try:
        yield
    finally:
        sk.set_threads(before)


def simkit_launches(model, dt: float) -> list:
    """[(kernel name, forward fn(n), adjoint fn(n))] of one recorded semi-implicit step."""
    s0, s1 = model.state(requires_grad=True), model.state(requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.sim.SemiImplicitEuler().step(model, s0, s1, None, dt)
    out = []
    for e in tape.entries:
        if not hasattr(e, "kernel"):
            continue

        def fwd(n, e=e):
            for _ in range(n):
                sk.launch(e.kernel, e.dim, e.values)

        def adj(n, e=e):
            for _ in range(n):
                sk.launch(e.kernel, e.dim, e.values, adjoint=True)
        out.append((e.kernel.name, fwd, adj))
    return out


def warp_launches(scene, dt: float) -> list:
    """[(kernel name, forward fn(n), adjoint fn(n))] of one recorded warp step, replayed as
    ``record_cmd`` launches."""
    wp = scene.wp
    a, b = scene.state(requires_grad=True), scene.state(requires_grad=True)
    tape = wp.Tape()
    with tape:
        scene.step(a, b, dt)
    out = []
    for rec in tape.launches:
        if not isinstance(rec, list):
            continue
        kernel, dim, _max_blocks, inputs, outputs, device = rec[:6]
        common = dict(kernel=kernel, dim=dim, inputs=inputs, outputs=outputs, device=device, record_cmd=True)
        f_cmd = wp.launch(**common)
        a_cmd = wp.launch(**common, adj_inputs=[tape.get_adjoint(x) for x in inputs],
                          adj_outputs=[tape.get_adjoint(x) for x in outputs], adjoint=True)

        def run(n, cmd):
            for _ in range(n):
                cmd.launch()
            wp.synchronize_device(device)
        name = kernel.key.split("__locals__")[-1]  # warp keys a closure's kernel by its enclosing function
        out.append((KERNEL_NAMES.get(name, name), lambda n, c=f_cmd: run(n, c),
                    lambda n, c=a_cmd: run(n, c)))
    return out


def pair_launches(sk_side: list, wp_side: list) -> tuple:
    """Pairs of (simkit, warp) launches with the same kernel name, in order; names left unpaired."""
    pairs, left = [], []
    rest = list(wp_side)
    for name, f, a in sk_side:
        k = next((i for i, w in enumerate(rest) if w[0] == name), None)
        if k is None:
            left.append(name)
            continue
        pairs.append((name, (f, a), rest.pop(k)[1:]))
    left += [w[0] for w in rest]
    return pairs, left


def ops_for(fn) -> int:
    t0 = time.thread_time()
    fn(1)
    return max(1, int(SAMPLE_SECONDS / max(time.thread_time() - t0, 1e-6)))


def paired_ratio(s_fn, w_fn, rounds: int) -> tuple:
    """(simkit s, warp s, ratio): medians over ``rounds`` of the calling thread's CPU time per
    launch, the two alternating (order rotating) with the garbage collector off; ratio is the
    median of the per-round warp/simkit ratios. CPU time, not wall time: both run on this
    thread alone, and on a shared machine the time it spends descheduled is not the kernel's."""
    ops = min(ops_for(s_fn), ops_for(w_fn))
    s_fn(ops)
    w_fn(ops)
    s_t, w_t = [], []
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            for fn, out in ((s_fn, s_t), (w_fn, w_t))[::1 if r % 2 == 0 else -1]:
                t0 = time.thread_time()
                fn(ops)
                out.append((time.thread_time() - t0) / ops)
    finally:
        gc.enable()
    return statistics.median(s_t), statistics.median(w_t), statistics.median(w / s for s, w in zip(s_t, w_t))


def kernel_ratios(rounds: int, scenes=None, dt: float = 1e-4) -> tuple:
    """[(scene, kernel, "forward"/"adjoint", simkit s, warp s, ratio)] and notes, one thread."""
    rows, notes = [], []
    wp = bench_sim_warp.warp_module()
    if isinstance(wp, str):
        return rows, [f"kernels: skipped, {wp}"]
    with one_thread():
        for scene_name, (make, Scene, _out) in SCENES.items():
            if scenes and scene_name not in scenes:
                continue
            model = make(requires_grad=True)
            scene = bench_sim_warp.load_scene(Scene, model, scene_name)
            if isinstance(scene, str):
                notes.append(f"kernels {scene_name}: {scene}")
                continue
            pairs, left = pair_launches(simkit_launches(model, dt), warp_launches(scene, dt))
            if left:
                notes.append(f"kernels {scene_name}: no counterpart for {', '.join(left)}")
            for name, (sf, sa), (wf, wa) in pairs:
                for which, s_fn, w_fn in (("forward", sf, wf), ("adjoint", sa, wa)):
                    rows.append((scene_name, name, which, *paired_ratio(s_fn, w_fn, rounds)))
    return rows, notes


def add_sections(section, Result, Row, fmt) -> None:
    """Register the ``kernels`` section with bench.py's registry."""

    @section("kernels", "(e3) every sim kernel alone, forward and adjoint, one thread, vs its warp port")
    def bench_kernels(ctx) -> Result:
        res = Result()
        rows, res.notes = kernel_ratios(ctx.reps(9, 2))
        for scene, name, which, s, w, r in rows:
            res.rows.append(Row(f"{scene}: {name} {which} [us]", f"{fmt(s * 1e6)} us", f"{fmt(w * 1e6)} us (warp)",
                                f"{r:.2f}x", f">= {TARGET}", r >= TARGET))
        res.notes.append("kernels: each launch of one recorded step re-run alone, simkit on 1 thread; times are "
                         "medians of the thread's CPU time per launch; ratio = median over rounds of "
                         "warp_time / simkit_time (higher is better)")
        return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--scene", action="append", help=f"only these scenes: {', '.join(SCENES)}")
    args = p.parse_args(argv)
    rows, notes = kernel_ratios(args.rounds, args.scene)
    print(f"{'scene':26s} {'kernel':20s} {'pass':8s} {'simkit us':>10s} {'warp us':>10s} {'warp/simkit':>11s}")
    for scene, name, which, s, w, r in rows:
        print(f"{scene:26s} {name:20s} {which:8s} {s * 1e6:10.1f} {w * 1e6:10.1f} {r:10.2f}x")
    for n in notes:
        print("note:", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
