"""The cost of one step Jacobian (sk.autograd.jacobian of a Featherstone step w.r.t. joint_q,
joint_qd and joint_act) against one step and against MuJoCo's mjd_transitionFD, in one run.

Run from the repository root (needs mujoco and gymnasium)::

    python tools/bench_step_jacobian.py            # hopper and ant, contacts and limits off
    python tools/bench_step_jacobian.py --repeat 20
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "sim"))

import gymnasium  # noqa: E402
import mujoco  # noqa: E402

import simkit as sk  # noqa: E402
from test_mujoco_state import both, random_mujoco_state  # noqa: E402


def best(fn, repeat: int) -> float:
    """The fastest of ``repeat`` calls, in seconds (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def measure(name: str, repeat: int) -> None:
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name + ".xml")
    record, model, m = both(path)
    d = random_mujoco_state(m, np.random.default_rng(0))
    s0, s1 = record.state_from_mujoco(model, d.qpos, d.qvel), model.state()
    control = record.control_from_mujoco(model, d.ctrl)
    integrator = sk.sim.Featherstone()
    dt = m.opt.timestep
    step = lambda: integrator.step(model, s0, s1, control, dt)
    inputs, outputs = [s0.joint_q, s0.joint_qd, control.joint_act], [s1.joint_q, s1.joint_qd]
    one_step = best(step, repeat)
    rows = {mode: best(lambda: sk.autograd.jacobian(step, inputs, outputs, mode=mode), repeat)
            for mode in ("reverse", "forward")}
    A, B = np.zeros((2 * m.nv, 2 * m.nv)), np.zeros((2 * m.nv, m.nu))
    fd = best(lambda: mujoco.mjd_transitionFD(m, d, 1e-6, True, A, B, None, None), repeat)
    mj_step = best(lambda: mujoco.mj_step(m, d), repeat)
    shape = sk.autograd.jacobian(step, inputs, outputs, mode="reverse").shape
    print(f"{name}: J {shape[0]} x {shape[1]}; simkit step {one_step * 1e6:.0f} us, mj_step {mj_step * 1e6:.1f} us, "
          f"mjd_transitionFD (centered) {fd * 1e6:.0f} us")
    for mode, t in rows.items():
        print(f"  {mode:8s} {t * 1e3:8.2f} ms = {t / one_step:6.0f} simkit steps = {t / fd:6.1f} x mjd_transitionFD")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for name in ("hopper", "ant"):
        measure(name, args.repeat)


if __name__ == "__main__":
    main()
