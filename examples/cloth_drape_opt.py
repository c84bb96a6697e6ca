"""Cloth drape: find how to toss a sheet of cloth so that it lands folded over a thin bar.

What is optimized: the horizontal initial velocity ``(v_x, v_z)`` of a sheet tossed from
beside a bar (its upward speed ``LIFT`` is fixed); every particle starts with the same
velocity. A kernel maps the two numbers to the particle velocities under a Tape; the
gradient the rollout leaves on the velocities is carried back through that Tape.

Physics: a 0.6 m square sheet of ``GRID`` x ``GRID`` cells (0.3 kg) starts 0.45 m up, 0.35 m
beside a static bar laid along x and turned 45 degrees so that one of its edges points up
(0.25 m high). The bar's edge is far narrower than a cell: it holds the sheet only because
the cloth's triangles collide with shapes (docs/cloth.md), not only its vertices.
Semi-implicit Euler at ``DT`` = 1 ms, penalty contact with friction. The loss is the squared
horizontal distance of the sheet's center (the mean of its particles) from the bar's top
edge at the final time (0.9 s): zero when the sheet hangs folded over the edge, its two
halves alike. The rollout is differentiated with gradient checkpointing.

Expected result: from a toss of (0.2, 1.1) m/s the sheet lands on the bar off its center and
slides towards the far side; SGD brings the loss from 3.2e-3 m^2 to below 1e-6 m^2 in 4
iterations, with a toss of about (0.0, 1.42) m/s: the sheet's center comes to rest within a
millimetre of the edge, folded over it, a part of each half hanging below it.

Run::

    python examples/cloth_drape_opt.py                  # writes examples/out/cloth_drape_opt.usd
    python examples/cloth_drape_opt.py --iterations 5 --usd drape.usda --quiet
"""

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line

GRID = 6                           # cells per side
SIZE = 0.6                         # m
HEIGHT = 0.45                      # m, of the sheet at the start
START_Z = 0.35                     # m, how far beside the bar (along -z) the sheet's center starts
BAR_HEIGHT = 0.25                  # m, of the bar's axis
LIFT = 0.5                         # m/s, the upward speed of every toss
GUESS = (0.2, 1.1)                 # the first toss: v_x, v_z (m/s)
DT = 1.0e-3
FPS = 50
FRAMES = 45                        # 0.9 s
SUBSTEPS = round(1.0 / (FPS * DT))
LEARNING_RATE = 5.0
DEFAULT_ITERATIONS = 20
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "cloth_drape_opt.usd"


@sk.kernel
def toss_velocities(toss: sk.array(dtype=sk.float64), lift: sk.float64, qd: sk.array(dtype=sk.vec3d)):
    qd[sk.tid()] = sk.vec3d(toss[0], lift, toss[1])


@sk.kernel
def accumulate_center(q: sk.array(dtype=sk.vec3d), weight: sk.float64, center: sk.array(dtype=sk.vec3d)):
    sk.atomic_add(center, 0, weight * q[sk.tid()])


@sk.kernel
def horizontal_distance_sq(center: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    c = center[0]
    sk.atomic_add(loss, 0, c[0] * c[0] + c[2] * c[2])


def build_model() -> sk.sim.Model:
    """The sheet, horizontal, beside the bar (float64)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True, contact_ke=2.0e3, contact_kd=6.0,
                            contact_kf=5.0, contact_mu=0.5)
    flat = (-np.sin(np.pi / 4), 0.0, 0.0, np.cos(np.pi / 4))     # the sheet's local y onto -z
    cell = SIZE / GRID
    b.add_cloth_grid((-0.5 * SIZE, HEIGHT, 0.5 * SIZE - START_Z), flat, (0.0, 0.0, 0.0), GRID, GRID, cell, cell,
                     mass=0.3 / (GRID + 1) ** 2, k_mu=300.0, k_lambda=300.0, k_damp=0.1, edge_ke=0.01,
                     edge_kd=1.0e-4, radius=0.01)
    edge_up = (np.sin(np.pi / 8), 0.0, 0.0, np.cos(np.pi / 8))     # 45 degrees about x
    b.add_shape_box((0.0, BAR_HEIGHT, 0.0), edge_up, (0.6, 0.02, 0.02))
    return b.finalize(dtype=sk.float64)


def center_loss(state: sk.sim.State, loss: sk.Array) -> None:
    """Add the squared horizontal distance of the sheet's center from the bar's edge to ``loss``."""
    n = state.particle_count
    center = sk.zeros(1, dtype=sk.vec3d)
    sk.launch(accumulate_center, n, inputs=[state.particle_q, 1.0 / n, center])
    sk.launch(horizontal_distance_sq, 1, inputs=[center, loss])


def set_velocities(model: sk.sim.Model, toss: sk.Array, s0: sk.sim.State) -> sk.Tape:
    """Write the velocities of ``toss`` into ``s0.particle_qd``, recorded on the returned Tape."""
    with sk.Tape() as tape:
        sk.launch(toss_velocities, model.particle_count, inputs=[toss, LIFT, s0.particle_qd])
    return tape


def optimize(model: sk.sim.Model, iterations: int, quiet: bool) -> tuple[sk.Array, sk.sim.State, list[float]]:
    """SGD on the toss (v_x, v_z); returns the toss, the initial state it gives and the loss of
    every iteration (before its update)."""
    toss = sk.array(np.array(GUESS), dtype=sk.float64, requires_grad=True)
    s0 = model.state(requires_grad=False)
    s0.particle_qd.requires_grad = True
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=FRAMES, substeps=SUBSTEPS, dt=1.0 / FPS,
                               loss=center_loss, checkpoint_every="auto")
    opt = sk.optim.SGD([toss], lr=LEARNING_RATE)
    losses = []
    with tqdm(total=iterations, desc="cloth_drape_opt", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            vx, vz = toss.numpy()
            opt.zero_grad()
            tape = set_velocities(model, toss, s0)
            loss = rollout.run(s0).loss
            tape.backward(grads={s0.particle_qd: s0.particle_qd.grad})
            opt.step()
            tape.zero()
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e} m^2  of the toss v_x {vx:.4f} m/s, v_z {vz:.4f} m/s")
    set_velocities(model, toss, s0)
    return toss, s0, losses


def replay(model: sk.sim.Model, start: sk.sim.State, path: Path) -> sk.sim.State:
    """Simulate the toss from ``start``, write every frame to ``path``; returns the final state."""
    integrator = sk.sim.SemiImplicitEuler()
    state, spare = model.state(requires_grad=False), model.state(requires_grad=False)
    sk.copy(state.particle_q, start.particle_q)
    sk.copy(state.particle_qd, start.particle_qd)
    path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(path, model, fps=FPS) as usd:
        usd.write(state, 0.0)
        for frame in range(1, FRAMES + 1):
            for _ in range(SUBSTEPS):
                integrator.step(model, state, spare, None, DT)
                state, spare = spare, state
            usd.write(state, frame / FPS)
    return state


def main(iterations: int = DEFAULT_ITERATIONS, usd_path: str | Path = DEFAULT_USD, quiet: bool = False) -> dict:
    """Optimize the toss, write the optimized one to ``usd_path`` and return ``losses`` (per
    iteration), ``final_loss`` (of the optimized toss), ``toss`` (v_x, v_z), ``center`` (final),
    ``hanging`` (the fraction of the particles below the bar's edge on each side of it: the
    fold), ``usd_path`` and ``seconds``."""
    t0 = time.perf_counter()
    model = build_model()
    toss, s0, losses = optimize(model, iterations, quiet)
    final = replay(model, s0, Path(usd_path))
    q = final.particle_q.numpy()
    center = q.mean(axis=0)
    below = q[:, 1] < BAR_HEIGHT
    hanging = (float(np.mean(below & (q[:, 2] < 0.0))), float(np.mean(below & (q[:, 2] > 0.0))))
    return {"losses": losses, "final_loss": float(center[0] ** 2 + center[2] ** 2), "toss": toss.numpy().copy(),
            "center": center, "hanging": hanging, "usd_path": str(usd_path), "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    (vx, vz), c = result["toss"], result["center"]
    return (f"cloth_drape_opt: loss {result['losses'][0]:.4e} -> {result['final_loss']:.4e} m^2 in "
            f"{len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  toss: v ({vx:.4f}, {LIFT:g}, {vz:.4f}) m/s\n"
            f"  center at ({c[0]:.4f}, {c[1]:.4f}, {c[2]:.4f}) after {FRAMES / FPS:g} s; hanging below the edge: "
            f"{100 * result['hanging'][0]:.0f} % before it, {100 * result['hanging'][1]:.0f} % beyond it\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD)
