"""Spring walker: find an open-loop gait that moves a spring-mass caterpillar forward.

What is optimized: the gait of a creature made of particles and springs, every spring of
which is a muscle. Spring ``s`` gets the activation
``AMPLITUDE * tanh(a_s sin(2 pi f t) + b_s cos(2 pi f t))`` at time ``t`` (``f`` =
``FREQUENCY``), which scales its rest length to ``rest * (1 + activation)``: the pair
``(a_s, b_s)`` sets the spring's amplitude and phase, and the tanh keeps every activation
within +-``AMPLITUDE``. A kernel turns the parameters into one ``Control`` per frame under
a Tape; the gradient that the rollout leaves on the controls is backpropagated through it
to the parameters, which Adam updates.

Physics: a 2-D creature (it lives in the x-y plane) of ``CELLS`` square cells of 0.1 m in
a row, two rows of particles (0.05 kg each) joined by cross-braced damped springs, lying
on the ground, with penalty contact and Coulomb friction (mu = 1); semi-implicit Euler at
``DT`` = 1 ms for ``DURATION`` = 2 s (2000 steps), differentiated with gradient
checkpointing (``checkpoint_every="auto"``: 10 checkpoints, each segment recomputed in the
backward pass). The loss is minus the distance the creature's center moves along +x.
The muscles are gentle (at most 10 % of the rest length) and the gait is a smooth function
of its parameters: a creature that hops, or slams its feet down, makes the outcome hinge
on the instants of touch-down, which the gradient of one rollout cannot foresee; a
creature that rocks and crawls gives a loss that descends smoothly.

Expected result: from small random gait parameters (the creature shuffles 1 cm
backwards) Adam finds a rocking, inchworm-like gait (the body arches in the middle, then
its ends lift in turn) that covers ~0.68 m in 2 s after 40 iterations, improving at
nearly every iteration.

Run::

    python examples/spring_walker.py                 # writes examples/out/spring_walker.usd
    python examples/spring_walker.py --iterations 10 --usd walk.usda --quiet
"""

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line

CELLS = 4                          # cells along the body
CELL = 0.1                         # m
RADIUS = 0.02                      # m, of every particle
AMPLITUDE = 0.1                    # largest activation (a fraction of the rest length)
FREQUENCY = 2.0                    # Hz, of the gait
DT = 1.0e-3
FPS = 50
FRAMES = 100                       # DURATION = FRAMES / FPS = 2 s
SUBSTEPS = round(1.0 / (FPS * DT))
DURATION = FRAMES / FPS
SEED = 0
LEARNING_RATE = 0.2
DEFAULT_ITERATIONS = 40
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "spring_walker.usd"


@sk.kernel
def gait(params: sk.array(dtype=sk.vec2d), phase: sk.float64, amplitude: sk.float64,
         activation: sk.array(dtype=sk.float64)):
    s = sk.tid()
    p = params[s]
    activation[s] = amplitude * sk.tanh(p[0] * sk.sin(phase) + p[1] * sk.cos(phase))


@sk.kernel
def minus_distance(q: sk.array(dtype=sk.vec3d), start: sk.float64, weight: sk.float64,
                   loss: sk.array(dtype=sk.float64)):
    # weight = -1 / particle count: adds minus the distance the mean x has moved from start
    sk.atomic_add(loss, 0, weight * (q[sk.tid()][0] - start))


def build_model() -> sk.sim.Model:
    """The creature: two rows of ``CELLS + 1`` particles on the ground, every pair of
    neighbours (along, across and diagonally in each cell) joined by a spring (float64)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True, contact_ke=1.0e4, contact_kd=10.0,
                            contact_kf=20.0, contact_mu=1.0)
    index = {}
    for row in range(2):
        for col in range(CELLS + 1):
            index[col, row] = b.add_particle((col * CELL, RADIUS + row * CELL, 0.0), (0.0, 0.0, 0.0), mass=0.05,
                                             radius=RADIUS)
    pairs = [((c, r), (c + 1, r)) for r in range(2) for c in range(CELLS)]
    pairs += [((c, 0), (c, 1)) for c in range(CELLS + 1)]
    pairs += [pair for c in range(CELLS) for pair in (((c, 0), (c + 1, 1)), ((c + 1, 0), (c, 1)))]
    for i, j in pairs:
        b.add_spring(index[i], index[j], ke=300.0, kd=2.0)
    return b.finalize(dtype=sk.float64)


def distance_loss(model: sk.sim.Model):
    """``loss(state, out)`` adding minus the distance the creature's center has moved along x."""
    n = model.particle_count
    start = float(model.particle_q.numpy()[:, 0].mean())

    def loss(state: sk.sim.State, out: sk.Array) -> None:
        sk.launch(minus_distance, n, inputs=[state.particle_q, start, -1.0 / n, out])
    return loss


def set_controls(params: sk.Array, controls: list) -> sk.Tape:
    """Write the activations of the gait ``params`` into every frame's control (the phase
    is taken at the middle of the frame), recorded on the returned Tape."""
    with sk.Tape() as tape:
        for frame, control in enumerate(controls):
            phase = 2.0 * np.pi * FREQUENCY * (frame + 0.5) / FPS
            sk.launch(gait, len(params), inputs=[params, phase, AMPLITUDE, control.spring_activation])
    return tape


def optimize(model: sk.sim.Model, iterations: int, quiet: bool) -> tuple[sk.Array, list, list[float]]:
    """Adam on the gait parameters; returns them, the per-frame controls they give and the
    loss of every iteration (before its update)."""
    rng = np.random.default_rng(SEED)
    params = sk.array(rng.normal(scale=0.5, size=(model.spring_count, 2)), dtype=sk.vec2d, requires_grad=True)
    controls = [model.control() for _ in range(FRAMES)]
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=FRAMES, substeps=SUBSTEPS, dt=1.0 / FPS,
                               loss=distance_loss(model), control=controls, checkpoint_every="auto")
    s0 = model.state(requires_grad=False)
    opt = sk.optim.Adam([params], lr=LEARNING_RATE)
    losses = []
    with tqdm(total=iterations, desc="spring_walker", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            opt.zero_grad()
            tape = set_controls(params, controls)
            loss = rollout.run(s0).loss
            # the rollout left d(loss)/d(activation) on every frame's control: carry it to the gait
            tape.backward(grads={c.spring_activation: c.spring_activation.grad for c in controls})
            opt.step()
            tape.zero()
            losses.append(loss)
            bar.set_postfix(distance=f"{-loss:.4f} m")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:+.6f} m  (walked {-loss:.4f} m in {DURATION:g} s)")
    set_controls(params, controls)
    return params, controls, losses


def replay(model: sk.sim.Model, controls: list, path: Path) -> sk.sim.State:
    """Simulate the gait of ``controls`` from rest, write every frame to ``path``; returns the final state."""
    integrator = sk.sim.SemiImplicitEuler()
    state, spare = model.state(requires_grad=False), model.state(requires_grad=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(path, model, fps=FPS) as usd:
        usd.write(state, 0.0)
        for frame, control in enumerate(controls):
            for _ in range(SUBSTEPS):
                integrator.step(model, state, spare, control, DT)
                state, spare = spare, state
            usd.write(state, (frame + 1) / FPS)
    return state


def main(iterations: int = DEFAULT_ITERATIONS, usd_path: str | Path = DEFAULT_USD, quiet: bool = False) -> dict:
    """Optimize the gait, write the optimized walk to ``usd_path`` and return ``losses``
    (per iteration: minus the distance walked, m), ``distance`` (of the optimized gait),
    ``params`` (one (a, b) pair per spring), ``usd_path`` and ``seconds``."""
    t0 = time.perf_counter()
    model = build_model()
    params, controls, losses = optimize(model, iterations, quiet)
    final = replay(model, controls, Path(usd_path))
    distance = float(final.particle_q.numpy()[:, 0].mean() - model.particle_q.numpy()[:, 0].mean())
    return {"losses": losses, "distance": distance, "params": params.numpy().copy(), "usd_path": str(usd_path),
            "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    return (f"spring_walker: walked {-result['losses'][0]:.4f} m -> {result['distance']:.4f} m in {DURATION:g} s "
            f"after {len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD)
