"""Ball toss: find the initial velocity that makes a ball bounce once and hit a target.

What is optimized: the initial velocity (3 numbers) of a ball thrown from 1 m above the
ground, so that exactly ``DURATION`` seconds later, after one bounce, it is at ``TARGET``.

Physics: one 1 kg particle of radius 0.2 m under gravity, semi-implicit Euler at
``DT`` = 0.5 ms, penalty contact with the ground (a soft rubber ball: stiffness 4 kN/m, no
contact damping, so the bounce keeps its energy, and a little Coulomb friction that takes
some of the horizontal speed at the bounce). The contact has no damping on purpose: a
damping force jumps from zero to ``kd * v`` at first touch, which makes the outcome depend
on where the touch falls between two time steps and the gradient ragged; the spring force
starts at zero, and with the contact resolved over ~100 steps the gradient is smooth.

The loss is the squared distance between the ball and the target at the final time,
backpropagated through the whole flight, the bounce included, by ``sk.optim.Rollout``
(float64) with gradient checkpointing (``checkpoint_every="auto"``: every 8th frame is
kept and the frames in between are recomputed during the backward pass). For a model this
small that is not about memory: reusing a pool of states is faster than allocating one
state per step for a full tape. Plain SGD suits the problem: around the answer the loss is
nearly quadratic in the velocity.

Expected result: from a guess of (1, 2, 0) m/s the loss falls from 1.4 m^2 to ~3e-11 m^2
in 30 iterations (the ball ends up 0.01 mm from the target), with a throw of about
(1.968, 2.980, 0.492) m/s that bounces at t = 0.83 s. The other answer, a high lob
that reaches the target without bouncing, is a different minimum; the guess lies in the
basin of the one-bounce answer.

Run::

    python examples/ball_toss.py                     # writes examples/out/ball_toss.usd
    python examples/ball_toss.py --iterations 20 --usd toss.usda --quiet
"""

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line

START = (0.0, 1.0, 0.0)
GUESS = (1.0, 2.0, 0.0)            # m/s: the first throw
TARGET = (1.8, 0.8, 0.45)          # where the ball must be at the final time
RADIUS = 0.2
DT = 5.0e-4                        # integrator step
FPS = 50                           # frames per second of the rollout and the USD file
FRAMES = 50                        # DURATION = FRAMES / FPS = 1 s
SUBSTEPS = round(1.0 / (FPS * DT))
DURATION = FRAMES / FPS
LEARNING_RATE = 0.8
DEFAULT_ITERATIONS = 30
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "ball_toss.usd"


@sk.kernel
def distance_sq(q: sk.array(dtype=sk.vec3d), target: sk.vec3d, loss: sk.array(dtype=sk.float64)):
    d = q[0] - target
    sk.atomic_add(loss, 0, sk.dot(d, d))


def build_model() -> sk.sim.Model:
    """One ball above the ground (float64), thrown with the initial guess."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True, contact_ke=4.0e3, contact_kd=0.0,
                            contact_kf=50.0, contact_mu=0.1)
    b.add_particle(START, GUESS, mass=1.0, radius=RADIUS)
    return b.finalize(dtype=sk.float64)


def target_loss(state: sk.sim.State, loss: sk.Array) -> None:
    """Add the squared distance of the ball from ``TARGET`` to ``loss``."""
    sk.launch(distance_sq, 1, inputs=[state.particle_q, sk.vec3d(*TARGET), loss])


def make_rollout(model: sk.sim.Model) -> sk.optim.Rollout:
    """The differentiable flight: ``FRAMES`` frames of ``SUBSTEPS`` steps, loss on the final
    state, checkpointed."""
    return sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=FRAMES, substeps=SUBSTEPS, dt=1.0 / FPS,
                            loss=target_loss, checkpoint_every="auto")


def replay(model: sk.sim.Model, start: sk.sim.State, path: Path) -> tuple[sk.sim.State, int]:
    """Simulate the throw from ``start`` and write every frame to ``path``, with a small sphere
    marking the target; returns the final state and how many times the ball touched down."""
    from pxr import Gf, UsdGeom

    integrator = sk.sim.SemiImplicitEuler()
    state, spare = model.state(requires_grad=False), model.state(requires_grad=False)
    sk.copy(state.particle_q, start.particle_q)
    sk.copy(state.particle_qd, start.particle_qd)
    touchdowns, touching = 0, False
    path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(path, model, fps=FPS) as usd:
        marker = UsdGeom.Sphere.Define(usd.stage, "/World/Target")
        marker.GetRadiusAttr().Set(0.05)
        UsdGeom.XformCommonAPI(marker).SetTranslate(Gf.Vec3d(*TARGET))
        usd.write(state, 0.0)
        for frame in range(1, FRAMES + 1):
            for _ in range(SUBSTEPS):
                integrator.step(model, state, spare, None, DT)
                state, spare = spare, state
                now = bool(state.particle_q.numpy()[0, 1] < RADIUS)
                touchdowns += now and not touching
                touching = now
            usd.write(state, frame / FPS)
    return state, touchdowns


def optimize(model: sk.sim.Model, iterations: int, quiet: bool) -> tuple[sk.sim.State, list[float]]:
    """SGD on the initial velocity; returns the optimized initial state and the loss of
    every iteration (before its update)."""
    s0 = model.state(requires_grad=False)
    s0.particle_qd.requires_grad = True
    rollout = make_rollout(model)
    opt = sk.optim.SGD([s0.particle_qd], lr=LEARNING_RATE)
    losses = []
    with tqdm(total=iterations, desc="ball_toss", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            v = s0.particle_qd.numpy()[0].copy()
            opt.zero_grad()
            loss = rollout.run(s0).loss
            opt.step()
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e} m^2  of the throw ({v[0]:.4f}, {v[1]:.4f}, "
                           f"{v[2]:.4f}) m/s")
    return s0, losses


def main(iterations: int = DEFAULT_ITERATIONS, usd_path: str | Path = DEFAULT_USD, quiet: bool = False) -> dict:
    """Optimize the throw, write the optimized flight to ``usd_path`` and return
    ``losses`` (per iteration), ``final_loss`` (of the optimized throw), ``velocity``,
    ``final_position``, ``miss`` (distance to the target, m), ``bounces``, ``usd_path``
    and ``seconds``."""
    t0 = time.perf_counter()
    model = build_model()
    s0, losses = optimize(model, iterations, quiet)
    final, bounces = replay(model, s0, Path(usd_path))
    position = final.particle_q.numpy()[0].copy()
    return {"losses": losses, "final_loss": float(np.sum((position - TARGET) ** 2)),
            "velocity": s0.particle_qd.numpy()[0].copy(), "final_position": position,
            "miss": float(np.linalg.norm(position - TARGET)), "bounces": bounces,
            "usd_path": str(usd_path), "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    v, p = result["velocity"], result["final_position"]
    return (f"ball_toss: loss {result['losses'][0]:.4e} -> {result['final_loss']:.4e} m^2 in "
            f"{len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  throw velocity ({v[0]:.4f}, {v[1]:.4f}, {v[2]:.4f}) m/s, {result['bounces']} bounce(s)\n"
            f"  ball at ({p[0]:.4f}, {p[1]:.4f}, {p[2]:.4f}) after {DURATION:g} s, "
            f"{1e3 * result['miss']:.3g} mm from the target {TARGET}\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD)
