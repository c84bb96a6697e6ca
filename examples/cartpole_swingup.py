"""Cart-pole swing-up: find the force sequence that swings a hanging pole up to balance.

What is optimized: the horizontal force on the cart at every frame (``control.joint_act``
of its slider, held over the frame's substeps), so that after ``DURATION`` seconds the
pole, which starts hanging straight down at rest, stands upright and still, with the cart
back where it started. The force is ``FORCE_SCALE * u``, with ``u`` (one value per frame,
zero at first: nothing moves) the unknowns.

Physics: a 1 kg cart (a box) on a frictionless horizontal slider and a 1 m pole of 0.29 kg
(a capsule) hinged at the cart's center, built with the ModelBuilder API as one
articulation (a prismatic joint from the world, a revolute joint from the cart) and
simulated in joint coordinates by ``sk.sim.Featherstone`` at ``DT`` = 20 ms under
gravity, float64; a little damping on the hinge.

The pole's angle ``theta`` is 0 hanging down and ``pi`` upright (the loss uses the angle
itself, so it asks for the turn towards +pi). The loss on the final state is
``(theta - pi)^2 + VELOCITY_WEIGHT (omega^2 + v^2) + POSITION_WEIGHT x^2`` (``omega`` the
pole's rate, ``v`` and ``x`` the cart's), plus ``FORCE_WEIGHT`` times the mean squared
force over the frames.

Two optimizers:

- ``--optimizer lm`` (the default): Levenberg-Marquardt. The loss is a sum of squares of
  4 final-state residuals and of the 100 forces; the Jacobian of the 4 comes from 4
  backward passes through one taped run (reverse mode: one pass per residual, where
  forward mode would need one per frame), and each step solves a 100 x 100 system.
  From rest the loss falls from pi^2 = 9.87 to ~1.1e-3 (what is left is the force
  term) in ``DEFAULT_ITERATIONS`` = 20 iterations (~15 are needed): after 2 s the pole
  is within 0.05 degrees of upright, turning at ~0.003 rad/s, the cart within 2 mm of
  its start, with forces of at most ~34 N; the cart rocks the pole twice to pump energy in.
- ``--optimizer adam``: Adam on ``u`` with the loss's gradient from ``sk.optim.Rollout``
  (full tape). It is much slower to converge on this problem, whose forces early in the
  run matter far more than late ones: the loss falls below 1 in about 20 iterations and to
  ~0.09 in ``ADAM_ITERATIONS`` = 100, the pole ending ~11 degrees short of upright,
  turning at ~0.5 rad/s.

Run::

    python examples/cartpole_swingup.py              # writes examples/out/cartpole_swingup.usd
    python examples/cartpole_swingup.py --iterations 10 --usd swing.usda --quiet
    python examples/cartpole_swingup.py --optimizer adam
"""

import contextlib
import math
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line

CART_HALF_EXTENTS = (0.2, 0.1, 0.1)
CART_DENSITY = 62.5                # kg/m^3: a 1 kg cart
POLE_LENGTH = 1.0                  # m, hinge to tip
POLE_RADIUS = 0.03
POLE_DENSITY = 100.0               # kg/m^3: a 0.29 kg pole
HINGE_DAMPING = 0.01               # N m s/rad
DT = 2.0e-2
FPS = 50
FRAMES = 100                       # DURATION = FRAMES / FPS = 2 s
SUBSTEPS = round(1.0 / (FPS * DT))
DURATION = FRAMES / FPS
FORCE_SCALE = 10.0                 # N per unit of u
VELOCITY_WEIGHT = 0.1              # per (rad/s)^2 and (m/s)^2
POSITION_WEIGHT = 0.1              # per m^2
FORCE_WEIGHT = 1.0e-5              # per N^2
LEARNING_RATE = 0.4                # Adam's
LR_DECAY = 0.1                     # Adam's learning rate falls geometrically to LEARNING_RATE * LR_DECAY
ADAM_ITERATIONS = 100
DAMPING = 1.0e-2                   # Levenberg-Marquardt's initial lambda
DEFAULT_ITERATIONS = 20            # of Levenberg-Marquardt, the default optimizer
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "cartpole_swingup.usd"
# the final-state residuals of --optimizer lm: which coordinate each is, and its weight
RESIDUAL_COORDS = (("joint_q", 1), ("joint_qd", 1), ("joint_qd", 0), ("joint_q", 0))
RESIDUAL_WEIGHTS = np.sqrt([1.0, VELOCITY_WEIGHT, VELOCITY_WEIGHT, POSITION_WEIGHT])


@sk.kernel
def set_force(u: sk.array(dtype=sk.float64), frame: sk.int32, joint: sk.int32, scale: sk.float64,
              act: sk.array(dtype=sk.float64)):
    act[joint] = scale * u[frame]


@sk.kernel
def force_effort(act: sk.array(dtype=sk.float64), joint: sk.int32, weight: sk.float64,
                 loss: sk.array(dtype=sk.float64)):
    f = act[joint]
    sk.atomic_add(loss, 0, weight * f * f)


@sk.kernel
def upright_error(q: sk.array(dtype=sk.float64), qd: sk.array(dtype=sk.float64), target: sk.float64,
                  w_velocity: sk.float64, w_position: sk.float64, loss: sk.array(dtype=sk.float64)):
    # coordinates: q[0] the cart's position, q[1] the pole's angle (0: hanging)
    e = q[1] - target
    sk.atomic_add(loss, 0, e * e + w_velocity * (qd[0] * qd[0] + qd[1] * qd[1]) + w_position * q[0] * q[0])


def build_model() -> tuple[sk.sim.Model, int]:
    """The cart-pole at rest, the pole hanging (float64); returns the model and the index of
    the cart's slider joint (the pole's hinge is the next)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_articulation()
    cart = b.add_body(sk.transform((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    shapes = [b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), CART_HALF_EXTENTS, body=cart,
                              density=CART_DENSITY)]
    slider = b.add_joint_prismatic(-1, cart, axis=(1.0, 0.0, 0.0))
    pole = b.add_body(sk.transform((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    shapes.append(b.add_shape_capsule((0.0, -0.5 * POLE_LENGTH, 0.0), (0.0, 0.0, 0.0, 1.0), POLE_RADIUS,
                                      0.5 * POLE_LENGTH, body=pole, density=POLE_DENSITY))
    b.add_joint_revolute(cart, pole, axis=(0.0, 0.0, 1.0), target_kd=HINGE_DAMPING)
    for shape in shapes:
        b.set_shape_collision(shape, group=1, mask=0)        # the pole swings through the cart
    return b.finalize(dtype=sk.float64, requires_grad=True), slider


class Problem:
    """The differentiable swing-up: per-frame controls, the rollout and the force parameters
    ``u`` (one per frame)."""

    def __init__(self):
        self.model, self.slider = build_model()
        model = self.model
        self.s0 = model.state(requires_grad=False)
        self.u = sk.zeros(FRAMES, dtype=sk.float64, requires_grad=True)
        self.controls = [model.control() for _ in range(FRAMES)]
        for c in self.controls:
            c.joint_act.requires_grad = True
        self.rollout = sk.optim.Rollout(model, sk.sim.Featherstone(), steps=FRAMES, substeps=SUBSTEPS,
                                        dt=1.0 / FPS, loss=self.final_loss, frame_loss=self.frame_loss,
                                        control=self.controls)

    def final_loss(self, state: sk.sim.State, loss: sk.Array) -> None:
        sk.launch(upright_error, 1, inputs=[state.joint_q, state.joint_qd, math.pi, VELOCITY_WEIGHT,
                                            POSITION_WEIGHT, loss])

    def frame_loss(self, frame: int, state: sk.sim.State, loss: sk.Array) -> None:
        sk.launch(force_effort, 1, inputs=[self.controls[frame - 1].joint_act, self.slider, FORCE_WEIGHT / FRAMES,
                                           loss])

    def set_controls(self) -> sk.Tape:
        """Write ``FORCE_SCALE * u`` into every frame's ``joint_act``, recorded on the returned Tape."""
        with sk.Tape() as tape:
            for frame, c in enumerate(self.controls):
                sk.launch(set_force, 1, inputs=[self.u, frame, self.slider, FORCE_SCALE, c.joint_act])
        return tape

    def run(self) -> tuple[float, sk.Tape]:
        """One forward and backward pass: adds d(loss)/du to ``u.grad``; returns the loss and
        the tape of :meth:`set_controls` (``tape.zero()`` clears the controls' grads, and ``u``'s)."""
        tape = self.set_controls()
        loss = self.rollout.run(self.s0).loss
        # the rollout left d(loss)/d(force) on every frame's control: carry it to u
        tape.backward(grads={c.joint_act: c.joint_act.grad for c in self.controls})
        return loss, tape


    def residuals(self, final: sk.sim.State) -> np.ndarray:
        """The final state's residuals ``(theta - pi, sqrt(VELOCITY_WEIGHT) omega,
        sqrt(VELOCITY_WEIGHT) v, sqrt(POSITION_WEIGHT) x)``: their squares sum to the loss's
        final-state part."""
        (x, theta), (v, omega) = final.joint_q.numpy(), final.joint_qd.numpy()
        return RESIDUAL_WEIGHTS * np.array([theta - math.pi, omega, v, x])

    def shoot(self, taped: bool) -> tuple[sk.sim.State, sk.Tape | None]:
        """Simulate the forces of ``u`` from rest (recorded on a Tape when ``taped``); returns
        the final state and the tape."""
        model, integrator = self.model, sk.sim.Featherstone()
        self.set_controls()
        states = [self.s0] + [model.state(requires_grad=taped) for _ in range(FRAMES * SUBSTEPS)]
        tape = sk.Tape() if taped else None
        with tape if taped else contextlib.nullcontext():
            for k in range(FRAMES * SUBSTEPS):
                integrator.step(model, states[k], states[k + 1], self.controls[k // SUBSTEPS], DT)
        return states[-1], tape

    def jacobian(self, final: sk.sim.State, tape: sk.Tape) -> np.ndarray:
        """d(residuals)/du (4 x FRAMES): one backward pass of the taped shot per residual
        (reverse mode: 4 passes, where forward mode would need one per frame)."""
        rows = []
        for i, (field, coord) in enumerate(RESIDUAL_COORDS):
            seeds = {final.joint_q: np.zeros(2), final.joint_qd: np.zeros(2)}
            seeds[getattr(final, field)][coord] = RESIDUAL_WEIGHTS[i]
            tape.backward(grads=seeds)
            rows.append([FORCE_SCALE * c.joint_act.grad.numpy()[self.slider] for c in self.controls])
            tape.zero()
            for c in self.controls:
                c.joint_act.grad.zero_()
        return np.array(rows)


def optimize(problem: Problem, iterations: int, quiet: bool) -> list[float]:
    """Adam on ``u`` (the loss's gradient by a Rollout); returns the loss of every iteration
    (before its update)."""
    opt = sk.optim.Adam([problem.u], lr=LEARNING_RATE)
    losses = []
    with tqdm(total=iterations, desc="cartpole_swingup", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            opt.zero_grad()
            loss, tape = problem.run()
            opt.step()
            tape.zero()
            opt.lr = LEARNING_RATE * LR_DECAY ** ((it + 1) / iterations)
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e}")
    problem.set_controls()
    return losses


def optimize_lm(problem: Problem, iterations: int, quiet: bool) -> list[float]:
    """Levenberg-Marquardt on ``u``: the loss is the sum of squares of the four final-state
    residuals and of one force residual per frame (``sqrt(FORCE_WEIGHT / FRAMES) * force``,
    linear in ``u``), so a step solves ``(J^T J + c^2 I + lambda I) du = -(J^T r + c^2 u)``
    (``J`` the residuals' Jacobian, ``c`` the force residuals' gain, FRAMES unknowns); a step
    that lowers the loss is taken and divides ``lambda`` by 3, one that does not is undone
    and multiplies it by 10. Returns the loss of every iteration (before its step)."""
    c2 = FORCE_WEIGHT / FRAMES * FORCE_SCALE ** 2
    damping = DAMPING
    losses = []
    with tqdm(total=iterations, desc="cartpole_swingup (lm)", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            u = problem.u.numpy().copy()
            final, tape = problem.shoot(taped=True)
            r = problem.residuals(final)
            loss = float(r @ r + c2 * u @ u)
            J = problem.jacobian(final, tape)
            gradient, normal = J.T @ r + c2 * u, J.T @ J + c2 * np.eye(FRAMES)
            for _ in range(10):
                trial = u - np.linalg.solve(normal + damping * np.eye(FRAMES), gradient)
                problem.u.assign(trial)
                r_trial = problem.residuals(problem.shoot(taped=False)[0])
                if r_trial @ r_trial + c2 * trial @ trial < loss:
                    damping /= 3.0
                    break
                damping *= 10.0
            else:
                problem.u.assign(u)
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e}  lambda {damping:.1e}")
    problem.set_controls()
    return losses


def replay(problem: Problem, path: Path) -> sk.sim.State:
    """Simulate the optimized forces from rest and write every frame to ``path``; returns the final state."""
    model = problem.model
    integrator = sk.sim.Featherstone()
    state, spare = model.state(requires_grad=False), model.state(requires_grad=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(path, model, fps=FPS) as usd:
        usd.write(state, 0.0)
        for frame, control in enumerate(problem.controls):
            for _ in range(SUBSTEPS):
                integrator.step(model, state, spare, control, DT)
                state, spare = spare, state
            usd.write(state, (frame + 1) / FPS)
    return state


def main(iterations: int | None = None, usd_path: str | Path = DEFAULT_USD, quiet: bool = False,
         optimizer: str = "lm") -> dict:
    """Optimize the forces with ``optimizer`` (``"lm"`` or ``"adam"``; ``iterations`` None: its
    default), write the swing-up to ``usd_path`` and return ``losses`` (per
    iteration), ``final_loss``, ``angle_error`` (final pole angle minus upright, rad),
    ``pole_rate`` (rad/s), ``cart_position`` (m), ``cart_velocity`` (m/s), ``forces`` (N,
    per frame), ``usd_path`` and ``seconds``."""
    t0 = time.perf_counter()
    if optimizer not in ("adam", "lm"):
        raise ValueError(f"optimizer must be 'adam' or 'lm', got {optimizer!r}")
    if iterations is None:
        iterations = ADAM_ITERATIONS if optimizer == "adam" else DEFAULT_ITERATIONS
    problem = Problem()
    losses = (optimize if optimizer == "adam" else optimize_lm)(problem, iterations, quiet)
    final = replay(problem, Path(usd_path))
    (x, theta), (v, omega) = final.joint_q.numpy(), final.joint_qd.numpy()
    forces = FORCE_SCALE * problem.u.numpy()
    final_loss = ((theta - math.pi) ** 2 + VELOCITY_WEIGHT * (omega ** 2 + v ** 2) + POSITION_WEIGHT * x ** 2
                  + FORCE_WEIGHT * float(np.mean(forces ** 2)))
    return {"losses": losses, "final_loss": float(final_loss), "angle_error": float(theta - math.pi),
            "pole_rate": float(omega), "cart_position": float(x), "cart_velocity": float(v), "forces": forces,
            "usd_path": str(usd_path), "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    return (f"cartpole_swingup: loss {result['losses'][0]:.4e} -> {result['final_loss']:.4e} in "
            f"{len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  after {DURATION:g} s the pole is {math.degrees(result['angle_error']):+.2f} degrees from upright, "
            f"turning at {result['pole_rate']:+.3f} rad/s; the cart at {result['cart_position']:+.3f} m, "
            f"{result['cart_velocity']:+.3f} m/s\n"
            f"  largest force {np.abs(result['forces']).max():.1f} N\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD, optimizers=("lm", "adam"))
