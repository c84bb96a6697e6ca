"""System identification: recover the stiffness and damping of springs from a trajectory.

What is optimized: the spring stiffness ``ke`` (N/m) and damping ``kd`` (N s/m) shared by
all the springs of a small mass-spring "mobile", so that its simulated motion matches an
observed one. The observation is made with the true values (``TRUE_KE``, ``TRUE_KD``);
the fit starts from ``GUESS`` (off by -33 % and -50 %). The two unknowns are optimized as
logarithms, ``ke = GUESS_KE * exp(theta_0)`` and ``kd = GUESS_KD * exp(theta_1)``, so
that one learning rate suits both (Adam's steps are then relative changes) and neither
can turn negative; a kernel writes them into every spring under a Tape, and the gradient
that the rollout leaves on ``model.springs.ke`` and ``.kd`` is backpropagated through it.

Physics: three 0.1 kg particles hanging from a pinned one by four damped springs (one
closing a triangle), under gravity, released with a sideways push so that they swing,
bounce and twist in 3-D; semi-implicit Euler at ``DT`` = 2 ms, float64. The observation
is the position of every particle at each of ``FRAMES`` frames (1 s at 100 frames per
second); the loss is the mean squared distance between simulated and observed positions
over all frames (a ``frame_loss`` of ``sk.optim.Rollout``, on a full tape).

Expected result: ke and kd are recovered to better than 0.2 % in 40 iterations of Adam
(the damping, which shows in the trajectory less than the stiffness does, is the slower
of the two: 0.15 %, ke 0.003 %); the loss falls by almost seven orders of magnitude.
With ``--optimizer lm``, Levenberg-Marquardt recovers both to machine precision in 6
iterations (its loss is below Adam's 40th in 5).

``--optimizer lm`` fits with Levenberg-Marquardt instead (``sk.optim.LevenbergMarquardt``):
the residuals are the simulated minus the observed positions, and their Jacobian with
respect to ``theta`` comes from forward mode (one ``sk.autograd.jvp`` of the rollout per
unknown).

Run::

    python examples/system_id.py                     # writes examples/out/system_id.usd
    python examples/system_id.py --iterations 20 --usd fit.usda --quiet
    python examples/system_id.py --optimizer lm      # 8 iterations
"""

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line
from tracking import observe, tracking_loss, tracking_residuals

TRUE_KE, TRUE_KD = 60.0, 2.0       # what the observation is made with
GUESS_KE, GUESS_KD = 40.0, 1.0     # where the fit starts
DT = 2.0e-3
FPS = 100
FRAMES = 100                       # 1 s
SUBSTEPS = round(1.0 / (FPS * DT))
LEARNING_RATE = 0.3
LR_DECAY = 0.01                    # the learning rate falls geometrically to LEARNING_RATE * LR_DECAY
DEFAULT_ITERATIONS = 40
LM_ITERATIONS = 8                  # the default of --optimizer lm (an iteration: 2 forward-mode rollouts + 1 trial)
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "system_id.usd"


@sk.kernel
def set_springs(theta: sk.array(dtype=sk.float64), guess: sk.vec2d, ke: sk.array(dtype=sk.float64),
                kd: sk.array(dtype=sk.float64)):
    s = sk.tid()
    ke[s] = guess[0] * sk.exp(theta[0])
    kd[s] = guess[1] * sk.exp(theta[1])


def build_model(ke: float, kd: float) -> sk.sim.Model:
    """The mobile with every spring set to ``ke``, ``kd`` (float64, no ground)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.25, 0.8, 0.0), (0.0, 0.0, 0.5), mass=0.1)
    b.add_particle((0.45, 0.55, 0.1), (0.0, 0.0, 0.0), mass=0.1)
    b.add_particle((0.7, 0.45, 0.0), (0.0, 0.0, 0.0), mass=0.1)
    for i, j in ((0, 1), (1, 2), (2, 3), (1, 3)):
        b.add_spring(i, j, ke=ke, kd=kd)
    return b.finalize(dtype=sk.float64)


def set_parameters(model: sk.sim.Model, theta: sk.Array) -> sk.Tape:
    """Write ``ke``, ``kd`` of ``theta`` into every spring, recorded on the returned Tape."""
    with sk.Tape() as tape:
        sk.launch(set_springs, model.spring_count,
                  inputs=[theta, sk.vec2d(GUESS_KE, GUESS_KD), model.springs.ke, model.springs.kd])
    return tape


def identify(model: sk.sim.Model, observed: np.ndarray, iterations: int, quiet: bool) -> tuple[np.ndarray, list]:
    """Adam on ``theta``; returns the identified ``(ke, kd)`` and the loss of every
    iteration (before its update)."""
    model.springs.ke.requires_grad = True
    model.springs.kd.requires_grad = True
    theta = sk.zeros(2, dtype=sk.float64, requires_grad=True)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=FRAMES, substeps=SUBSTEPS, dt=1.0 / FPS,
                               frame_loss=tracking_loss(observed))
    s0 = model.state(requires_grad=False)
    opt = sk.optim.Adam([theta], lr=LEARNING_RATE, betas=(0.5, 0.9))
    losses = []
    with tqdm(total=iterations, desc="system_id", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            ke, kd = np.array([GUESS_KE, GUESS_KD]) * np.exp(theta.numpy())
            opt.zero_grad()
            tape = set_parameters(model, theta)
            loss = rollout.run(s0).loss
            tape.backward(grads={model.springs.ke: model.springs.ke.grad, model.springs.kd: model.springs.kd.grad})
            opt.step()
            tape.zero()
            opt.lr = LEARNING_RATE * LR_DECAY ** ((it + 1) / iterations)
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e} m^2  ke {ke:.4f} N/m  kd {kd:.5f} N s/m")
    set_parameters(model, theta)
    return np.array([GUESS_KE, GUESS_KD]) * np.exp(theta.numpy()), losses


def identify_lm(model: sk.sim.Model, observed: np.ndarray, iterations: int, quiet: bool) -> tuple[np.ndarray, list]:
    """Levenberg-Marquardt on ``theta`` (residuals: simulated minus observed positions, the
    Jacobian by forward mode); returns what :func:`identify` does."""
    theta = sk.zeros(2, dtype=sk.float64)
    rollout = tracking_residuals(model, observed, SUBSTEPS, DT)

    def residuals() -> sk.Array:
        sk.launch(set_springs, model.spring_count,
                  inputs=[theta, sk.vec2d(GUESS_KE, GUESS_KD), model.springs.ke, model.springs.kd])
        return rollout()
    opt = sk.optim.LevenbergMarquardt([theta], residuals)
    losses = []
    with tqdm(total=iterations, desc="system_id (lm)", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            ke, kd = np.array([GUESS_KE, GUESS_KD]) * np.exp(theta.numpy())
            loss = opt.step()
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e} m^2  ke {ke:.4f} N/m  kd {kd:.5f} N s/m")
    set_parameters(model, theta)
    return np.array([GUESS_KE, GUESS_KD]) * np.exp(theta.numpy()), losses


def replay(model: sk.sim.Model, observed: np.ndarray, path: Path) -> np.ndarray:
    """Simulate the identified model, write every frame to ``path`` with the observation as
    the points of ``/World/Observed``; returns the simulated positions of every frame."""
    from pxr import UsdGeom, Vt

    integrator = sk.sim.SemiImplicitEuler()
    state, spare = model.state(requires_grad=False), model.state(requires_grad=False)
    frames = []
    path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(path, model, fps=FPS) as usd:
        ghost = UsdGeom.Points.Define(usd.stage, "/World/Observed")
        ghost.GetWidthsAttr().Set(Vt.FloatArray([0.03] * observed.shape[1]))
        ghost.SetWidthsInterpolation(UsdGeom.Tokens.vertex)
        ghost.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(model.particle_q.numpy().astype(np.float32)), 0.0)
        usd.write(state, 0.0)
        for frame in range(FRAMES):
            for _ in range(SUBSTEPS):
                integrator.step(model, state, spare, None, DT)
                state, spare = spare, state
            usd.write(state, (frame + 1) / FPS)
            ghost.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(observed[frame].astype(np.float32)), frame + 1.0)
            frames.append(state.particle_q.numpy().copy())
    return np.array(frames)


def main(iterations: int | None = None, usd_path: str | Path = DEFAULT_USD, quiet: bool = False,
         optimizer: str = "adam") -> dict:
    """Observe the true mobile, identify ``ke`` and ``kd`` from the observation, write the
    identified model's motion to ``usd_path`` and return ``losses`` (per iteration),
    ``final_loss``, ``ke``, ``kd``, ``ke_error`` and ``kd_error`` (relative to the true
    values), ``usd_path`` and ``seconds``."""
    t0 = time.perf_counter()
    observed = observe(build_model(TRUE_KE, TRUE_KD), FRAMES, SUBSTEPS, DT)
    model = build_model(GUESS_KE, GUESS_KD)
    if optimizer not in ("adam", "lm"):
        raise ValueError(f"optimizer must be 'adam' or 'lm', got {optimizer!r}")
    if iterations is None:
        iterations = LM_ITERATIONS if optimizer == "lm" else DEFAULT_ITERATIONS
    (ke, kd), losses = (identify_lm if optimizer == "lm" else identify)(model, observed, iterations, quiet)
    fitted = replay(model, observed, Path(usd_path))
    final_loss = float(np.mean(np.sum((fitted - observed) ** 2, axis=-1)))
    return {"losses": losses, "final_loss": final_loss, "ke": float(ke), "kd": float(kd),
            "ke_error": abs(ke / TRUE_KE - 1.0), "kd_error": abs(kd / TRUE_KD - 1.0), "usd_path": str(usd_path),
            "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    return (f"system_id: loss {result['losses'][0]:.4e} -> {result['final_loss']:.4e} m^2 in "
            f"{len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  ke {result['ke']:.4f} N/m   (true {TRUE_KE:g}, guess {GUESS_KE:g}): "
            f"error {100 * result['ke_error']:.4f} %\n"
            f"  kd {result['kd']:.5f} N s/m (true {TRUE_KD:g}, guess {GUESS_KD:g}): "
            f"error {100 * result['kd_error']:.4f} %\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD, optimizers=("adam", "lm"))
