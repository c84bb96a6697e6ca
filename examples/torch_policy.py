"""Torch policy: train a PyTorch MLP controller through the simulator, closed loop.

What is trained: a small torch MLP (6 -> 32 -> 32 -> 4, tanh) that drives a "reacher": a
0.1 kg particle held in the middle of a 0.5 m square by four damped springs from its
corners (pinned particles). Every frame the policy sees where the particle is relative to
its target, its velocity and the target, and sets the four springs' activations (each
scales its spring's rest length by ``1 + activation``, at most +-``AMPLITUDE``). The goal:
bring the particle to the target and hold it there against gravity.

How: ``BATCH`` reachers with different targets live side by side in one simkit model. One
frame of the simulation (``SUBSTEPS`` semi-implicit Euler steps) is a
:func:`simkit.torch.function` of the positions, velocities and activations, so a whole
episode is an ordinary torch graph: policy, frame, policy, frame, ... The loss, the mean
squared distance to the targets over the second half of the episode, is backpropagated
through every frame (simkit's adjoints) and every policy call (torch) into the MLP's
weights, which Adam updates.

Expected result: the untrained policy leaves each particle sagging near the middle
(loss 1.2e-2 m^2); the loss falls 10x in about 30 iterations and 27x in 60 (8 s on two
cores), each particle then ending 1.7 cm from its target on average. A learning curve is saved next to the USD file
(``.png``, if matplotlib is installed); the USD holds one evaluation episode.

Run::

    python examples/torch_policy.py                  # writes examples/out/torch_policy.usd (+ .png)
    python examples/torch_policy.py --iterations 10 --usd reach.usda --quiet
"""

import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

import simkit as sk
import simkit.torch

import command_line

BATCH = 8                          # reachers trained together, one target each
HALF = 0.25                        # m, half the side of each reacher's square
SPACING = 1.0                      # m, between reachers along x
REACH = 0.12                       # m, targets lie within +-REACH of the middle (x and y)
AMPLITUDE = 0.3                    # largest activation
KE, KD = 40.0, 0.5                 # spring stiffness (N/m) and damping
DT = 5.0e-3
SUBSTEPS = 4                       # per frame
FRAMES = 40                        # 40 frames of 20 ms: 0.8 s per episode
FPS = round(1.0 / (DT * SUBSTEPS))
SEED = 0
LEARNING_RATE = 3e-3
DEFAULT_ITERATIONS = 60
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "torch_policy.usd"


def build_model() -> tuple[sk.sim.Model, torch.Tensor]:
    """``BATCH`` reachers in the x-y plane (float64); returns the model and the index of each
    one's free particle."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    free = []
    for r in range(BATCH):
        cx = r * SPACING
        p = b.add_particle((cx, 0.0, 0.0), (0.0, 0.0, 0.0), mass=0.1, radius=0.02)
        for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            corner = b.add_particle((cx + sx * HALF, sy * HALF, 0.0), (0.0, 0.0, 0.0), mass=0.0, radius=0.01)
            b.add_spring(p, corner, ke=KE, kd=KD)
        free.append(p)
    return b.finalize(dtype=sk.float64), torch.tensor(free)


def make_frame(model: sk.sim.Model):
    """One frame as a differentiable torch function: (positions, velocities, activations) ->
    (positions, velocities) ``SUBSTEPS`` integrator steps later."""
    integrator = sk.sim.SemiImplicitEuler()
    h = DT

    @simkit.torch.function(dtypes={"q": sk.vec3d, "qd": sk.vec3d})
    def frame(q, qd, activation):
        state = model.state(requires_grad=False)
        state.particle_q, state.particle_qd = q, qd
        control = model.control()
        control.spring_activation = activation
        for _ in range(SUBSTEPS):
            nxt = model.state(requires_grad=False)      # a state per step: the tape keeps each one
            integrator.step(model, state, nxt, control, h)
            state = nxt
        return state.particle_q, state.particle_qd
    return frame


class Policy(torch.nn.Module):
    """(offset to target, velocity, target) of each reacher in the plane -> its 4 activations."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                                       torch.nn.Tanh(), torch.nn.Linear(32, 4))

    def forward(self, offset, velocity, target):
        x = torch.cat([offset / REACH, velocity, target / REACH], dim=1)
        return AMPLITUDE * torch.tanh(self.net(x))


def episode(model, frame, free, centers, policy, targets, record=None):
    """Run one closed-loop episode from rest; returns the loss (mean squared distance to the
    targets over the second half). ``record(frame_index, q)`` sees every frame's positions."""
    q = torch.from_numpy(model.particle_q.numpy().copy())
    qd = torch.zeros_like(q)
    loss = torch.zeros((), dtype=torch.float64)
    for k in range(FRAMES):
        offset = q[free, :2] - centers - targets
        act = policy(offset, qd[free, :2], targets).reshape(-1)     # spring 4 r + c of reacher r
        q, qd = frame(q, qd, act)
        if k >= FRAMES // 2:
            loss = loss + ((q[free, :2] - centers - targets) ** 2).sum(dim=1).mean()
        if record is not None:
            record(k + 1, q)
    return loss / (FRAMES - FRAMES // 2)


def train(iterations: int, quiet: bool) -> dict:
    """Adam on the policy's weights; returns the policy, the loss per iteration and the pieces
    of the task."""
    # a 6x32 MLP gains nothing from torch's worker threads, which would spin against simkit's
    # own thread pool between the two libraries' calls (3x slower on 2 idle cores, 10x on a busy machine)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    model, free = build_model()
    frame = make_frame(model)
    centers = torch.from_numpy(model.particle_q.numpy()[free, :2].copy())
    rng = np.random.default_rng(SEED)
    targets = torch.from_numpy(rng.uniform(-REACH, REACH, size=(BATCH, 2)))
    policy = Policy().double()
    opt = torch.optim.Adam(policy.parameters(), lr=LEARNING_RATE)
    losses = []
    with tqdm(total=iterations, desc="torch_policy", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            opt.zero_grad()
            loss = episode(model, frame, free, centers, policy, targets)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            bar.set_postfix(loss=f"{loss.item():.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss.item():.4e} m^2")
    return {"model": model, "frame": frame, "free": free, "centers": centers, "targets": targets,
            "policy": policy, "losses": losses}


def evaluate(task: dict, usd_path: Path) -> float:
    """One episode of the trained policy, written to ``usd_path``; returns the mean final distance (m)."""
    model = task["model"]
    state = model.state(requires_grad=False)
    usd_path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(usd_path, model, fps=FPS) as usd, torch.no_grad():
        usd.write(state, 0.0)
        last = {}

        def record(k, q):
            state.particle_q.assign(q.numpy())
            usd.write(state, k / FPS)
            last["q"] = q
        episode(model, task["frame"], task["free"], task["centers"], task["policy"], task["targets"], record)
    miss = last["q"][task["free"], :2] - task["centers"] - task["targets"]
    return float(miss.norm(dim=1).mean())


def save_plot(losses: list[float], path: Path) -> Path | None:
    """The learning curve as ``path`` (a PNG), or None without matplotlib."""
    from simkit.scene.optimize import matplotlib_missing, plot_losses

    if matplotlib_missing() is not None:
        return None
    return plot_losses(losses, path, title="torch_policy: closed-loop reaching")


def main(iterations: int = DEFAULT_ITERATIONS, usd_path: str | Path = DEFAULT_USD, quiet: bool = False) -> dict:
    """Train the policy, write an evaluation episode to ``usd_path`` and the learning curve next
    to it; returns ``losses`` (per iteration, m^2), ``distance`` (mean final distance to the
    targets, m), ``plot_path`` (None without matplotlib), ``usd_path`` and ``seconds``."""
    t0 = time.perf_counter()
    task = train(iterations, quiet)
    usd_path = Path(usd_path)
    distance = evaluate(task, usd_path)
    plot = save_plot(task["losses"], usd_path.with_suffix(".png"))
    return {"losses": task["losses"], "distance": distance, "plot_path": None if plot is None else str(plot),
            "usd_path": str(usd_path), "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    losses = result["losses"]
    return (f"torch_policy: loss {losses[0]:.3e} -> {losses[-1]:.3e} m^2 ({losses[0] / losses[-1]:.0f}x) after "
            f"{len(losses)} iterations ({result['seconds']:.1f} s); mean final distance {result['distance']:.4f} m\n"
            f"  USD: {result['usd_path']}" + (f"\n  learning curve: {result['plot_path']}" if result["plot_path"]
                                               else "\n  (no learning curve: matplotlib is not installed)"))


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD)
