"""Soft-body identification: recover the Lame parameters of a jelly block from its motion.

What is optimized: the material of a soft block, ``k_mu`` and ``k_lambda`` (Pa, shared by
all its tetrahedra), so that its simulated motion matches an observed one, made with the
true values. They are identified through Young's modulus ``E`` and Poisson's ratio ``nu``
(``theta = (log(E / GUESS_E), nu)``), the coordinates in which this experiment sees them
separately: the sag under gravity measures the stiffness and the twisting measures the
shear. In these two coordinates the loss is nearly round (its curvature differs by a
factor 1.3 between the principal directions); in ``log k_mu`` and ``log k_lambda`` the two
are 0.45 correlated and the curvature differs 200-fold. A kernel maps ``theta`` to the
Lame parameters of every tetrahedron under a Tape (``mu = E / (2 (1 + nu))``,
``lambda = E nu / ((1 + nu)(1 - 2 nu))`` and ``k_lambda = lambda - mu``, simkit's
Neo-Hookean parametrization); the gradient that the rollout leaves on
``model.tets.k_mu`` and ``.k_lambda`` is backpropagated through it.

Physics: a 0.1 x 0.2 x 0.1 m block of ``2 x 4 x 2`` hexahedral cells (80 Neo-Hookean
tetrahedra, 1000 kg/m^3, known damping) glued to the floor by its bottom face, released
from its rest shape under gravity with a twist (the top turning at 10 rad/s about the
vertical axis), so that it sags and twists back and forth; semi-implicit Euler at ``DT`` =
1 ms, float64. The observation is the position of every vertex at each of ``FRAMES``
frames (0.5 s at 50 frames per second); the loss is the mean squared distance between
simulated and observed vertices over all frames (``frame_loss`` on a full tape).

Expected result: starting from E = 20 kPa, nu = 0.3 (k_mu off by -28 %, k_lambda by
-88 %), 40 iterations of Adam recover E = 30 kPa and nu = 0.4, that is k_mu and k_lambda,
to better than 0.01 %; the loss falls by more than eight orders of magnitude.
With ``--optimizer lm``, Levenberg-Marquardt recovers both to machine precision in 11
iterations (its loss is below Adam's 40th in 10).

``--optimizer lm`` fits with Levenberg-Marquardt instead (``sk.optim.LevenbergMarquardt``):
the residuals are the simulated minus the observed vertices, and their Jacobian with
respect to ``theta`` comes from forward mode (one ``sk.autograd.jvp`` of the rollout per
unknown).

Run::

    python examples/soft_id.py                       # writes examples/out/soft_id.usd
    python examples/soft_id.py --iterations 20 --usd jelly.usda --quiet
    python examples/soft_id.py --optimizer lm      # 12 iterations
"""

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line
from tracking import observe, tracking_loss, tracking_residuals

TRUE_E, TRUE_NU = 3.0e4, 0.4       # what the observation is made with
GUESS_E, GUESS_NU = 2.0e4, 0.3     # where the fit starts
CELLS = (2, 4, 2)
CELL = 0.05                        # m
DENSITY = 1000.0                   # kg/m^3
DAMPING = 20.0                     # k_damp of every tetrahedron (known)
TWIST = 10.0                       # rad/s, of the top face at the start
DT = 1.0e-3
FPS = 50
FRAMES = 25                        # 0.5 s
SUBSTEPS = round(1.0 / (FPS * DT))
LEARNING_RATE = 0.1                # Adam moves nu by up to this per step: well short of 0.5, where lambda diverges
LR_DECAY = 0.01                    # the learning rate falls geometrically to LEARNING_RATE * LR_DECAY
DEFAULT_ITERATIONS = 40
LM_ITERATIONS = 12                 # the default of --optimizer lm (an iteration: 2 forward-mode rollouts + 1 trial)
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "soft_id.usd"


@sk.kernel
def set_material(theta: sk.array(dtype=sk.float64), guess_e: sk.float64, k_mu: sk.array(dtype=sk.float64),
                 k_lambda: sk.array(dtype=sk.float64)):
    t = sk.tid()
    e = guess_e * sk.exp(theta[0])
    nu = theta[1]
    mu = e / (2.0 * (1.0 + nu))
    k_mu[t] = mu
    k_lambda[t] = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)) - mu


def lame(e: float, nu: float) -> tuple[float, float]:
    """``(k_mu, k_lambda)`` of Young's modulus ``e`` and Poisson's ratio ``nu``."""
    mu = e / (2.0 * (1.0 + nu))
    return mu, e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)) - mu


def build_model(e: float, nu: float) -> sk.sim.Model:
    """The block of material ``(e, nu)``, glued to the floor, twisting at the start (float64)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    k_mu, k_lambda = lame(e, nu)
    nx, ny, nz = CELLS
    b.add_soft_grid((-0.5 * nx * CELL, 0.0, -0.5 * nz * CELL), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), nx, ny, nz,
                    CELL, CELL, CELL, density=DENSITY, k_mu=k_mu, k_lambda=k_lambda, k_damp=DAMPING, fix_bottom=True)
    model = b.finalize(dtype=sk.float64)
    # the initial twist: a rotation about the vertical axis whose rate grows from 0 at the floor to TWIST at the top
    q = model.particle_q.numpy()
    rate = TWIST * q[:, 1:2] / (ny * CELL)
    model.particle_qd.assign(rate * np.cross([0.0, 1.0, 0.0], q * [1.0, 0.0, 1.0]))
    return model


def set_parameters(model: sk.sim.Model, theta: sk.Array) -> sk.Tape:
    """Write the Lame parameters of ``theta`` into every tetrahedron, recorded on the returned Tape."""
    with sk.Tape() as tape:
        sk.launch(set_material, model.tet_count, inputs=[theta, GUESS_E, model.tets.k_mu, model.tets.k_lambda])
    return tape


def material(theta: sk.Array) -> tuple[float, float]:
    """``(E, nu)`` of ``theta``."""
    log_ratio, nu = theta.numpy()
    return GUESS_E * float(np.exp(log_ratio)), float(nu)


def identify(model: sk.sim.Model, observed: np.ndarray, iterations: int, quiet: bool) -> tuple[tuple, list]:
    """Adam on ``theta``; returns the identified ``(E, nu)`` and the loss of every iteration
    (before its update)."""
    model.tets.k_mu.requires_grad = True
    model.tets.k_lambda.requires_grad = True
    theta = sk.array(np.array([0.0, GUESS_NU]), dtype=sk.float64, requires_grad=True)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=FRAMES, substeps=SUBSTEPS, dt=1.0 / FPS,
                               frame_loss=tracking_loss(observed))
    s0 = model.state(requires_grad=False)
    opt = sk.optim.Adam([theta], lr=LEARNING_RATE, betas=(0.5, 0.9))
    losses = []
    with tqdm(total=iterations, desc="soft_id", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            e, nu = material(theta)
            opt.zero_grad()
            tape = set_parameters(model, theta)
            loss = rollout.run(s0).loss
            tape.backward(grads={model.tets.k_mu: model.tets.k_mu.grad, model.tets.k_lambda: model.tets.k_lambda.grad})
            opt.step()
            tape.zero()
            opt.lr = LEARNING_RATE * LR_DECAY ** ((it + 1) / iterations)
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e} m^2  E {e:.2f} Pa  nu {nu:.5f}")
    set_parameters(model, theta)
    return material(theta), losses


def identify_lm(model: sk.sim.Model, observed: np.ndarray, iterations: int, quiet: bool) -> tuple[tuple, list]:
    """Levenberg-Marquardt on ``theta`` (residuals: simulated minus observed vertices, the
    Jacobian by forward mode); returns what :func:`identify` does."""
    theta = sk.array(np.array([0.0, GUESS_NU]), dtype=sk.float64)
    rollout = tracking_residuals(model, observed, SUBSTEPS, DT)

    def residuals() -> sk.Array:
        sk.launch(set_material, model.tet_count, inputs=[theta, GUESS_E, model.tets.k_mu, model.tets.k_lambda])
        return rollout()
    opt = sk.optim.LevenbergMarquardt([theta], residuals)
    losses = []
    with tqdm(total=iterations, desc="soft_id (lm)", unit="it", disable=quiet) as bar:
        for it in range(iterations):
            e, nu = material(theta)
            loss = opt.step()
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3e}")
            bar.update()
            if not quiet:
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e} m^2  E {e:.2f} Pa  nu {nu:.5f}")
    set_parameters(model, theta)
    return material(theta), losses


def replay(model: sk.sim.Model, observed: np.ndarray, path: Path) -> np.ndarray:
    """Simulate the identified block, write every frame to ``path`` with the observed
    vertices as the points of ``/World/Observed``; returns the simulated positions of every frame."""
    from pxr import UsdGeom, Vt

    integrator = sk.sim.SemiImplicitEuler()
    state, spare = model.state(requires_grad=False), model.state(requires_grad=False)
    frames = []
    path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(path, model, fps=FPS) as usd:
        ghost = UsdGeom.Points.Define(usd.stage, "/World/Observed")
        ghost.GetWidthsAttr().Set(Vt.FloatArray([0.01] * observed.shape[1]))
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
    """Observe the true block, identify its material from the observation, write the
    identified block's motion to ``usd_path`` and return ``losses`` (per iteration),
    ``final_loss``, ``E``, ``nu``, ``k_mu``, ``k_lambda``, ``k_mu_error`` and
    ``k_lambda_error`` (relative to the true values), ``usd_path`` and ``seconds``."""
    t0 = time.perf_counter()
    observed = observe(build_model(TRUE_E, TRUE_NU), FRAMES, SUBSTEPS, DT)
    model = build_model(GUESS_E, GUESS_NU)
    if optimizer not in ("adam", "lm"):
        raise ValueError(f"optimizer must be 'adam' or 'lm', got {optimizer!r}")
    if iterations is None:
        iterations = LM_ITERATIONS if optimizer == "lm" else DEFAULT_ITERATIONS
    (e, nu), losses = (identify_lm if optimizer == "lm" else identify)(model, observed, iterations, quiet)
    fitted = replay(model, observed, Path(usd_path))
    final_loss = float(np.mean(np.sum((fitted - observed) ** 2, axis=-1)))
    (k_mu, k_lambda), (true_mu, true_lambda) = lame(e, nu), lame(TRUE_E, TRUE_NU)
    return {"losses": losses, "final_loss": final_loss, "E": e, "nu": nu, "k_mu": k_mu, "k_lambda": k_lambda,
            "k_mu_error": abs(k_mu / true_mu - 1.0), "k_lambda_error": abs(k_lambda / true_lambda - 1.0),
            "usd_path": str(usd_path), "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    (true_mu, true_lambda), (guess_mu, guess_lambda) = lame(TRUE_E, TRUE_NU), lame(GUESS_E, GUESS_NU)
    return (f"soft_id: loss {result['losses'][0]:.4e} -> {result['final_loss']:.4e} m^2 in "
            f"{len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  E {result['E']:.2f} Pa, nu {result['nu']:.5f} (true {TRUE_E:g}, {TRUE_NU:g})\n"
            f"  k_mu     {result['k_mu']:.2f} Pa (true {true_mu:.2f}, guess {guess_mu:.2f}): "
            f"error {100 * result['k_mu_error']:.4f} %\n"
            f"  k_lambda {result['k_lambda']:.2f} Pa (true {true_lambda:.2f}, guess {guess_lambda:.2f}): "
            f"error {100 * result['k_lambda_error']:.4f} %\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD, optimizers=("adam", "lm"))
