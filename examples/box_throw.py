"""Box throw: find the linear and angular velocity that make a box land on a target, turned
to a given heading.

What is optimized: the initial horizontal velocity and spin about the vertical of a rigid
box thrown upwards from 0.5 m above the ground (``STEERED`` components of its initial
twist), so that ``DURATION`` seconds later, after it has landed and slid to rest, it lies
at ``TARGET`` turned by ``TARGET_YAW`` about the vertical.

Physics: a 1 kg box (20 x 10 x 10 cm) under gravity, semi-implicit Euler at ``DT`` =
0.5 ms, penalty contact of its corners and edges with the ground with Coulomb friction
(mu = 0.5): the box flies, lands flat, slides and stops. Its spin about the vertical is
carried through the flight and braked by friction with the sliding. The contact is
softer than the builder's default and about critically damped (``CONTACT_KE``,
``CONTACT_KD``): a stiff, bouncy landing makes the final pose a jagged function of the
throw (smooth on average, with steep wiggles a gradient sees), and the optimization
stalls; a landing without rebound keeps the loss smooth.

The loss is the squared distance of the box's center from the target plus the heading
error ``1 - <q, q_target>^2`` (zero for both signs of the quaternion), backpropagated
through flight, landing and sliding by a checkpointed ``sk.optim.Rollout`` (float64).
Adam suits it: the two terms have different scales.

Expected result: from a throw of (1, 2, 0) m/s spinning at 1 rad/s the loss falls from
~0.76 to ~1e-3 or below in ``DEFAULT_ITERATIONS`` iterations; the box stops within about
a centimetre of the target and a couple of degrees of the heading, thrown at about
(1.95, 2, 0.64) m/s spinning at 2.65 rad/s.

Run::

    python examples/box_throw.py                     # writes examples/out/box_throw.usd
    python examples/box_throw.py --iterations 20 --usd throw.usda --quiet
"""

import math
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line

START = (0.0, 0.5, 0.0)
HALF_EXTENTS = (0.1, 0.05, 0.05)
DENSITY = 500.0                     # kg/m^3: a 1 kg box
GUESS = (0.0, 1.0, 0.0, 1.0, 2.0, 0.0)   # angular velocity, then linear velocity
# What the thrower steers: the horizontal velocity and the spin about the vertical. The
# upward speed and the tumbling spins stay as guessed (they decide how the box lands, and
# a box landing flat touches down with four corners at once, where the loss is not smooth).
STEERED = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
TARGET = (1.2, 0.05, 0.4)           # where the box's center must rest
TARGET_YAW = math.pi / 2            # its heading about the vertical there
HEADING_WEIGHT = 1.0                # m^2 per unit of heading error
CONTACT_KE = 2.0e4                  # N/m per contact point: soft enough to land smoothly
CONTACT_KD = 150.0                  # N s/m per point: about critical for four corners, no bounce
DT = 5.0e-4
FPS = 50
FRAMES = 60                         # DURATION = FRAMES / FPS = 1.2 s
SUBSTEPS = round(1.0 / (FPS * DT))
DURATION = FRAMES / FPS
LEARNING_RATE = 0.1
LEARNING_RATE_DECAY = 0.96          # per iteration: big steps first, then settle
DEFAULT_ITERATIONS = 60
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "box_throw.usd"


@sk.kernel
def pose_error(body_q: sk.array(dtype=sk.transformd), target: sk.transformd, weight: sk.float64,
               loss: sk.array(dtype=sk.float64)):
    X = body_q[0]
    d = X.p - target.p
    q, r = X.q, target.q
    c = q[0] * r[0] + q[1] * r[1] + q[2] * r[2] + q[3] * r[3]
    sk.atomic_add(loss, 0, sk.dot(d, d) + weight * (1.0 - c * c))


def target_transform() -> sk.transformd:
    return sk.transformd(TARGET, (0.0, math.sin(0.5 * TARGET_YAW), 0.0, math.cos(0.5 * TARGET_YAW)))


def build_model() -> sk.sim.Model:
    """The box above the ground (float64), thrown with the initial guess."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True)
    box = b.add_body(sk.transform(START, (0.0, 0.0, 0.0, 1.0)), angular_velocity=GUESS[:3], velocity=GUESS[3:])
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), HALF_EXTENTS, body=box, density=DENSITY, ke=CONTACT_KE,
                    kd=CONTACT_KD)
    return b.finalize(dtype=sk.float64)


def make_rollout(model: sk.sim.Model) -> sk.optim.Rollout:
    """The differentiable throw, checkpointed every ~sqrt(FRAMES) frames."""
    target = target_transform()

    def loss(state, out):
        sk.launch(pose_error, 1, inputs=[state.body_q, target, HEADING_WEIGHT, out])

    return sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=FRAMES, substeps=SUBSTEPS, dt=1.0 / FPS,
                            loss=loss, checkpoint_every="auto")


def heading(q: np.ndarray) -> float:
    """The yaw (radians, about +y) of a box lying flat with orientation ``q`` (x, y, z, w)."""
    return 2.0 * math.atan2(q[1], q[3])


def replay(model: sk.sim.Model, start: sk.sim.State, path: Path) -> sk.sim.State:
    """Simulate the throw from ``start`` and write every frame to ``path`` with a small cube
    marking the target; returns the final state."""
    from pxr import Gf, UsdGeom

    integrator = sk.sim.SemiImplicitEuler()
    state, spare = model.state(requires_grad=False), model.state(requires_grad=False)
    sk.copy(state.body_q, start.body_q)
    sk.copy(state.body_qd, start.body_qd)
    path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(path, model, fps=FPS) as usd:
        marker = UsdGeom.Cube.Define(usd.stage, "/World/Target")
        marker.GetSizeAttr().Set(0.02)
        UsdGeom.XformCommonAPI(marker).SetTranslate(Gf.Vec3d(*TARGET))
        usd.write(state, 0.0)
        for frame in range(1, FRAMES + 1):
            for _ in range(SUBSTEPS):
                integrator.step(model, state, spare, None, DT)
                state, spare = spare, state
            usd.write(state, frame / FPS)
    return state


def optimize(model: sk.sim.Model, iterations: int, quiet: bool) -> tuple[sk.sim.State, list[float]]:
    """Adam on the initial twist; returns the optimized initial state and the loss of every
    iteration (before its update)."""
    s0 = model.state(requires_grad=False)
    s0.body_qd.requires_grad = True
    rollout = make_rollout(model)
    opt = sk.optim.Adam([s0.body_qd], lr=LEARNING_RATE)
    losses = []
    with tqdm(total=iterations, desc="box_throw", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            opt.zero_grad()
            loss = rollout.run(s0).loss
            s0.body_qd.grad.assign(s0.body_qd.grad.numpy() * STEERED)
            opt.step()
            opt.lr = LEARNING_RATE * LEARNING_RATE_DECAY ** (it + 1)
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                w, v = s0.body_qd.numpy()[0, :3], s0.body_qd.numpy()[0, 3:]
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e}  velocity ({v[0]:.3f}, {v[1]:.3f}, {v[2]:.3f}) m/s  "
                           f"spin ({w[0]:.3f}, {w[1]:.3f}, {w[2]:.3f}) rad/s")
    return s0, losses


def main(iterations: int = DEFAULT_ITERATIONS, usd_path: str | Path = DEFAULT_USD, quiet: bool = False) -> dict:
    """Optimize the throw, write it to ``usd_path`` and return ``losses`` (per iteration),
    ``final_loss``, ``twist`` (the optimized initial angular and linear velocity),
    ``final_position``, ``miss`` (distance to the target, m), ``heading_error`` (radians),
    ``usd_path`` and ``seconds``."""
    t0 = time.perf_counter()
    model = build_model()
    s0, losses = optimize(model, iterations, quiet)
    final = replay(model, s0, Path(usd_path))
    X = final.body_q.numpy()[0].copy()
    r = np.asarray(target_transform())[3:]
    miss = float(np.linalg.norm(X[:3] - TARGET))
    error = abs((heading(X[3:]) - TARGET_YAW + math.pi) % (2.0 * math.pi) - math.pi)
    return {"losses": losses, "final_loss": miss ** 2 + HEADING_WEIGHT * (1.0 - float(X[3:] @ r) ** 2),
            "twist": s0.body_qd.numpy()[0].copy(), "final_position": X[:3], "miss": miss, "heading_error": error,
            "usd_path": str(usd_path), "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    w, v, p = result["twist"][:3], result["twist"][3:], result["final_position"]
    return (f"box_throw: loss {result['losses'][0]:.4e} -> {result['final_loss']:.4e} in "
            f"{len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  throw velocity ({v[0]:.3f}, {v[1]:.3f}, {v[2]:.3f}) m/s, spin ({w[0]:.3f}, {w[1]:.3f}, {w[2]:.3f}) rad/s\n"
            f"  box at ({p[0]:.4f}, {p[1]:.4f}, {p[2]:.4f}) after {DURATION:g} s, {1e3 * result['miss']:.1f} mm from "
            f"the target, heading off by {math.degrees(result['heading_error']):.2f} degrees\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD)
