"""Cloth throw: find how to throw a sheet of cloth so that it comes to rest on a target.

What is optimized: the initial velocity field of a cloth sheet, parametrized smoothly as a
throw with spin: every particle starts with ``(v_x, LIFT, v_z) + spin * up x (x_i - c)``,
a common velocity plus a rotation about the vertical axis through the sheet's center ``c``.
The upward speed ``LIFT`` is fixed; the three numbers ``(v_x, v_z, spin)`` are optimized.
A kernel maps them to the 81 particle velocities under a Tape; the gradient that the
rollout leaves on the velocities is backpropagated through that Tape to the three numbers.

Physics: a 0.8 m square sheet of ``GRID`` x ``GRID`` cells (0.6 kg, membrane and bending
hinges) 0.4 m above the ground, semi-implicit Euler at ``DT`` = 1 ms, penalty contact with
Coulomb friction (mu = 0.5): the sheet flies for ~0.55 s, lands, slides and comes to rest
by ~1 s. The loss is the squared horizontal distance between the sheet's center (the mean
of its particles) and ``TARGET`` at the final time (1.2 s), so the slide after the landing
is part of what the gradient sees. The rollout is differentiated with gradient
checkpointing (``checkpoint_every="auto"``: it keeps every 8th frame and recomputes the
frames in between during the backward pass), which keeps the memory of long rollouts of
large models low at the price of a second forward pass; the gradient is the one of a
full tape.

Why not optimize the upward speed too: the time at which each particle touches the ground
moves with it, and penalty contact makes that dependence ragged at the scale of a time
step (a few millimetres here), so its gradient says little about the trend. The
horizontal throw and the spin change where the sheet lands, not when, and their
gradients are smooth.

Expected result: from a throw of (1, 0) m/s with a spin of 3 rad/s, SGD brings the loss
from 3.0 m^2 to ~1e-16 m^2 in 30 iterations (the center comes to rest on the target to
well below a micrometre), with a throw of about (3.05, 1.52) m/s and the spin barely
changed (3.04 rad/s).

Run::

    python examples/cloth_throw.py                   # writes examples/out/cloth_throw.usd
    python examples/cloth_throw.py --iterations 10 --usd throw.usda --quiet
"""

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line

GRID = 8                           # cells per side
SIZE = 0.8                         # m
HEIGHT = 0.4                       # m, of the sheet at the start
LIFT = 2.0                         # m/s, the upward speed of every throw
GUESS = (1.0, 0.0, 3.0)            # the first throw: v_x, v_z (m/s) and a spin about the vertical (rad/s)
TARGET = (2.0, 1.0)                # x, z: where the center should come to rest
DT = 1.0e-3
FPS = 50
FRAMES = 60                        # 1.2 s
SUBSTEPS = round(1.0 / (FPS * DT))
LEARNING_RATE = 1.0
DEFAULT_ITERATIONS = 30
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "cloth_throw.usd"


@sk.kernel
def throw_velocities(throw: sk.array(dtype=sk.float64), lift: sk.float64, rest: sk.array(dtype=sk.vec3d),
                     center: sk.vec3d, qd: sk.array(dtype=sk.vec3d)):
    # throw = (v_x, v_z, spin): horizontal velocity and angular velocity about the vertical axis
    i = sk.tid()
    r = rest[i] - center
    spin = throw[2]
    qd[i] = sk.vec3d(throw[0] + spin * r[2], lift, throw[1] - spin * r[0])


@sk.kernel
def accumulate_center(q: sk.array(dtype=sk.vec3d), weight: sk.float64, center: sk.array(dtype=sk.vec3d)):
    sk.atomic_add(center, 0, weight * q[sk.tid()])


@sk.kernel
def horizontal_distance_sq(center: sk.array(dtype=sk.vec3d), target: sk.vec2d, loss: sk.array(dtype=sk.float64)):
    c = center[0]
    dx = c[0] - target[0]
    dz = c[2] - target[1]
    sk.atomic_add(loss, 0, dx * dx + dz * dz)


def build_model() -> sk.sim.Model:
    """The sheet, horizontal and centered above the origin (float64)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True, contact_ke=2.0e3, contact_kd=6.0,
                            contact_kf=5.0, contact_mu=0.5)
    flat = (-np.sin(np.pi / 4), 0.0, 0.0, np.cos(np.pi / 4))     # the sheet's local y onto -z
    cell = SIZE / GRID
    b.add_cloth_grid((-0.5 * SIZE, HEIGHT, 0.5 * SIZE), flat, (0.0, 0.0, 0.0), GRID, GRID, cell, cell,
                     mass=0.6 / (GRID + 1) ** 2, k_mu=300.0, k_lambda=300.0, k_damp=0.1, edge_ke=0.01,
                     edge_kd=1.0e-4, radius=0.01)
    return b.finalize(dtype=sk.float64)


def center_loss(state: sk.sim.State, loss: sk.Array) -> None:
    """Add the squared horizontal distance of the sheet's center from ``TARGET`` to ``loss``."""
    n = state.particle_count
    center = sk.zeros(1, dtype=sk.vec3d)
    sk.launch(accumulate_center, n, inputs=[state.particle_q, 1.0 / n, center])
    sk.launch(horizontal_distance_sq, 1, inputs=[center, sk.vec2d(*TARGET), loss])


def make_rollout(model: sk.sim.Model) -> sk.optim.Rollout:
    """The differentiable throw, checkpointed: ``FRAMES`` frames of ``SUBSTEPS`` steps."""
    return sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=FRAMES, substeps=SUBSTEPS, dt=1.0 / FPS,
                            loss=center_loss, checkpoint_every="auto")


def set_velocities(model: sk.sim.Model, throw: sk.Array, s0: sk.sim.State) -> sk.Tape:
    """Write the velocity field of ``throw`` into ``s0.particle_qd``, recorded on the returned Tape."""
    rest = model.particle_q
    center = sk.vec3d(*rest.numpy().mean(axis=0))
    with sk.Tape() as tape:
        sk.launch(throw_velocities, model.particle_count, inputs=[throw, LIFT, rest, center, s0.particle_qd])
    return tape


def optimize(model: sk.sim.Model, iterations: int, quiet: bool) -> tuple[sk.Array, sk.sim.State, list[float]]:
    """SGD on the throw (v_x, v_z, spin); returns the throw parameters, the initial state they
    give and the loss of every iteration (before its update)."""
    throw = sk.array(np.array(GUESS), dtype=sk.float64, requires_grad=True)
    s0 = model.state(requires_grad=False)
    s0.particle_qd.requires_grad = True
    rollout = make_rollout(model)
    opt = sk.optim.SGD([throw], lr=LEARNING_RATE)
    losses = []
    with tqdm(total=iterations, desc="cloth_throw", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            vx, vz, spin = throw.numpy()
            opt.zero_grad()
            tape = set_velocities(model, throw, s0)
            loss = rollout.run(s0).loss
            # the rollout left d(loss)/d(velocities) in s0.particle_qd.grad: carry it to the throw
            tape.backward(grads={s0.particle_qd: s0.particle_qd.grad})
            opt.step()
            tape.zero()
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e} m^2  of the throw v_x {vx:.4f} m/s, "
                           f"v_z {vz:.4f} m/s, spin {spin:.4f} rad/s")
    set_velocities(model, throw, s0)
    return throw, s0, losses


def replay(model: sk.sim.Model, start: sk.sim.State, path: Path) -> sk.sim.State:
    """Simulate the throw from ``start``, write every frame to ``path``; returns the final state."""
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
    """Optimize the throw, write the optimized throw to ``usd_path`` and return ``losses``
    (per iteration), ``final_loss`` (of the optimized throw), ``throw`` (v_x, v_z, spin),
    ``center`` (final), ``miss`` (horizontal distance to the target, m), ``usd_path`` and
    ``seconds``."""
    t0 = time.perf_counter()
    model = build_model()
    throw, s0, losses = optimize(model, iterations, quiet)
    final = replay(model, s0, Path(usd_path))
    center = final.particle_q.numpy().mean(axis=0)
    miss = float(np.hypot(center[0] - TARGET[0], center[2] - TARGET[1]))
    return {"losses": losses, "final_loss": miss ** 2, "throw": throw.numpy().copy(), "center": center,
            "miss": miss, "usd_path": str(usd_path), "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    (vx, vz, spin), c = result["throw"], result["center"]
    return (f"cloth_throw: loss {result['losses'][0]:.4e} -> {result['final_loss']:.4e} m^2 in "
            f"{len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  throw: v ({vx:.4f}, {LIFT:g}, {vz:.4f}) m/s, spin {spin:.4f} rad/s\n"
            f"  center at ({c[0]:.4f}, {c[1]:.4f}, {c[2]:.4f}) after {FRAMES / FPS:g} s, "
            f"{1e3 * result['miss']:.3g} mm from the target (x, z) = {TARGET}\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD)
