"""Arm reach: find the joint torques that make a 7-DoF arm's hand follow a moving target.

What is optimized: the torque of each of the seven joints of an arm at every frame
(``control.joint_act``, held over the frame's substeps), so that a point between the
fingers of its hand (``TOOL``, in the hand's frame) follows a target moving on a circle
of radius ``RADIUS`` in a vertical plane in front of the arm, once around in
``DURATION`` seconds. The torques are ``tau0 + I * u``: ``tau0`` holds the start
pose against gravity (the bias forces of ``sk.sim.bias_forces`` at rest), ``u`` (one
row per frame, one column per joint, zero at first, in rad/s^2) is what Adam updates,
and ``I`` is each joint's diagonal entry of the mass matrix at the start pose
(``sk.sim.mass_matrix``), so that one learning rate moves the shoulder (1.7 kg m^2) and
the wrist (4e-4 kg m^2) alike: Adam's steps are about the same size for every element,
and torque steps of one size would spin the wrist.

Physics: the arm of ``examples/data/arm7.urdf`` (16 kg, 1.2 m straight up; a base
welded to the ground and seven revolute joints alternating yaw/roll and pitch axes,
each with viscous damping and an effort limit from the file; the damping, heavy on the
shoulder and elbow, keeps the open-loop motion from drifting off and the optimization
well conditioned), loaded with
``ModelBuilder.add_urdf`` and simulated in joint coordinates by ``sk.sim.Featherstone``
at ``DT`` = 10 ms under gravity, float64; it starts at rest with the elbow bent
(``START``), the hand at the circle's start. The arm's parts do not touch each other
(nothing else is there to touch).

The loss is the mean over frames of the squared distance between the tool point and
the target (m^2), plus ``TORQUE_WEIGHT`` times the squared torque change ``I * u``
summed over the joints and averaged over the frames
(so that the arm pushes no more than it needs), backpropagated through every step
by ``sk.optim.Rollout`` (a ``frame_loss``, on a full tape).

Expected result: holding the start pose, the hand is 0.19 m from the target on average
(loss 2 RADIUS^2 = 4.5e-2 m^2); in ``DEFAULT_ITERATIONS`` = 100 iterations the loss falls
~100-fold (to ~4.2e-4 m^2) and the hand follows the circle ~18 mm from the target on
average (at most ~31 mm); 20 iterations give a 4.7-fold fall and ~92 mm. Adam improves
at a steady few percent per iteration: the torques early in the run, which move
everything after them, and late ones, which move little, get steps of one size.

Run::

    python examples/arm_reach.py                     # writes examples/out/arm_reach.usd
    python examples/arm_reach.py --iterations 20 --usd reach.usda --quiet
"""

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import simkit as sk

import command_line

URDF = Path(__file__).resolve().parent / "data" / "arm7.urdf"
HAND = "hand"
TOOL = (0.0, 0.0, 0.12)            # m, between the fingers, in the hand's frame
START = {"shoulder_pitch": 0.5, "elbow": 1.4, "wrist_pitch": 0.9}   # rad; the other joints at 0
RADIUS = 0.15                      # m, of the target's circle
DT = 1.0e-2
FPS = 50
FRAMES = 75                        # DURATION = FRAMES / FPS = 1.5 s
SUBSTEPS = round(1.0 / (FPS * DT))
DURATION = FRAMES / FPS
JOINTS = 7
TORQUE_WEIGHT = 1.0e-7             # m^2 per (N m)^2
LEARNING_RATE = 1.0
LR_DECAY = 0.3                     # the learning rate falls geometrically to LEARNING_RATE * LR_DECAY
DEFAULT_ITERATIONS = 100
DEFAULT_USD = Path(__file__).resolve().parent / "out" / "arm_reach.usd"


@sk.kernel
def set_torques(u: sk.array(dtype=sk.float64), row: sk.int32, joints: sk.array(dtype=sk.int32),
                tau0: sk.array(dtype=sk.float64), scale: sk.array(dtype=sk.float64),
                act: sk.array(dtype=sk.float64)):
    i = sk.tid()
    n = joints.shape[0]
    act[joints[i]] = tau0[i] + scale[i] * u[row * n + i]


@sk.kernel
def tracking_error(body_q: sk.array(dtype=sk.transformd), hand: sk.int32, tool: sk.vec3d, target: sk.vec3d,
                   weight: sk.float64, loss: sk.array(dtype=sk.float64)):
    d = sk.transform_point(body_q[hand], tool) - target
    sk.atomic_add(loss, 0, weight * sk.dot(d, d))


@sk.kernel
def torque_effort(act: sk.array(dtype=sk.float64), joints: sk.array(dtype=sk.int32),
                  tau0: sk.array(dtype=sk.float64), weight: sk.float64, loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    d = act[joints[i]] - tau0[i]
    sk.atomic_add(loss, 0, weight * d * d)


class Arm:
    """The arm's model and what the example needs to know about it: the joints it drives
    (``joints``, in the file's order), the hand's body index and the start coordinates."""

    def __init__(self):
        b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=False)
        arm = b.add_urdf(URDF)
        record = b.imports[arm]
        for shape in range(b.shape_count):
            b.set_shape_collision(shape, group=1, mask=0)       # the links never touch each other
        self.model = b.finalize(dtype=sk.float64, requires_grad=True)
        self.joints = [j for _name, kind, j in record.joint_order if kind == "hinge"]
        if len(self.joints) != JOINTS:
            raise ValueError(f"{URDF} has {len(self.joints)} revolute joints, expected {JOINTS}")
        self.hand = record.bodies[HAND]
        q0 = self.model.joint_q.numpy().copy()
        qs = self.model.joint_q_start.numpy()
        for name, angle in START.items():
            q0[qs[record.joints[name]]] = angle
        self.q0 = q0

    def start_state(self) -> sk.sim.State:
        """The arm at rest in the start pose, its bodies placed (for the tool's start point)."""
        state = self.model.state(requires_grad=False)
        state.joint_q.assign(self.q0)
        sk.sim.eval_fk(self.model, state.joint_q, state.joint_qd, state)
        return state

    def tool_point(self, state: sk.sim.State) -> np.ndarray:
        X = state.body_q.numpy()[self.hand]
        return X[:3] + quat_rotate(X[3:], np.asarray(TOOL))

    def holding_torques(self) -> np.ndarray:
        """The joint torques that hold the start pose against gravity (bias forces at rest)."""
        bias = sk.sim.bias_forces(self.model, self.q0, np.zeros(self.model.joint_dof_count))
        ds = self.model.joint_qd_start.numpy()
        return np.array([bias[ds[j]] for j in self.joints])

    def inertias(self) -> np.ndarray:
        """Each joint's diagonal entry of the mass matrix at the start pose (kg m^2): the
        torque per unit of its angular acceleration when it alone moves."""
        M = sk.sim.mass_matrix(self.model, self.q0)
        ds = self.model.joint_qd_start.numpy()
        return np.array([M[ds[j], ds[j]] for j in self.joints])


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` turned by the unit quaternion ``q`` (x, y, z, w)."""
    u, w = q[:3], q[3]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def target_path(start: np.ndarray) -> np.ndarray:
    """The target at every frame (``FRAMES + 1`` points, frame 0 = ``start``): once around a
    circle of ``RADIUS`` in the vertical plane through ``start`` facing the arm's base, its
    top at ``start``."""
    across = np.array([-start[1], start[0], 0.0])
    across /= np.linalg.norm(across)
    up = np.array([0.0, 0.0, 1.0])
    center = start - RADIUS * up
    angle = 2.0 * np.pi * np.arange(FRAMES + 1) / FRAMES
    return center + RADIUS * (np.cos(angle)[:, None] * up + np.sin(angle)[:, None] * across)


class Problem:
    """The differentiable reach: the per-frame controls, the rollout and the torque
    parameters ``u`` (``FRAMES * 7`` values, frame-major)."""

    def __init__(self, arm: Arm):
        self.arm = arm
        model = arm.model
        self.s0 = arm.start_state()
        self.targets = target_path(arm.tool_point(self.s0))
        n = len(arm.joints)
        self.joint_ids = sk.array(np.asarray(arm.joints, dtype=np.int32), dtype=sk.int32)
        self.tau0 = sk.array(arm.holding_torques(), dtype=sk.float64)
        self.scale = sk.array(arm.inertias(), dtype=sk.float64)
        self.u = sk.zeros(FRAMES * n, dtype=sk.float64, requires_grad=True)
        self.controls = [model.control() for _ in range(FRAMES)]
        for c in self.controls:
            c.joint_act.requires_grad = True
        self.rollout = sk.optim.Rollout(model, sk.sim.Featherstone(), steps=FRAMES, substeps=SUBSTEPS,
                                        dt=1.0 / FPS, frame_loss=self.frame_loss, control=self.controls)

    def frame_loss(self, frame: int, state: sk.sim.State, loss: sk.Array) -> None:
        sk.launch(tracking_error, 1, inputs=[state.body_q, self.arm.hand, sk.vec3d(*TOOL),
                                             sk.vec3d(*self.targets[frame]), 1.0 / FRAMES, loss])
        sk.launch(torque_effort, len(self.arm.joints), inputs=[self.controls[frame - 1].joint_act, self.joint_ids,
                                                               self.tau0, TORQUE_WEIGHT / FRAMES, loss])

    def set_controls(self) -> sk.Tape:
        """Write ``tau0 + I * u`` into every frame's ``joint_act``, recorded on the returned Tape."""
        with sk.Tape() as tape:
            for frame, c in enumerate(self.controls):
                sk.launch(set_torques, len(self.arm.joints),
                          inputs=[self.u, frame, self.joint_ids, self.tau0, self.scale, c.joint_act])
        return tape

    def run(self) -> tuple[float, sk.Tape]:
        """One forward and backward pass: adds d(loss)/du to ``u.grad``; returns the loss and
        the tape of :meth:`set_controls` (``tape.zero()`` clears the controls' grads, and ``u``'s)."""
        tape = self.set_controls()
        loss = self.rollout.run(self.s0).loss
        # the rollout left d(loss)/d(torque) on every frame's control: carry it to u
        tape.backward(grads={c.joint_act: c.joint_act.grad for c in self.controls})
        return loss, tape


def optimize(problem: Problem, iterations: int, quiet: bool) -> list[float]:
    """Adam on ``u``; returns the loss of every iteration (before its update)."""
    opt = sk.optim.Adam([problem.u], lr=LEARNING_RATE)
    losses = []
    with tqdm(total=iterations, desc="arm_reach", unit="it", disable=quiet) as bar:
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
                tqdm.write(f"iteration {it:3d}  loss {loss:.6e} m^2")
    problem.set_controls()
    return losses


def replay(problem: Problem, path: Path) -> np.ndarray:
    """Simulate the optimized torques from the start pose and write every frame to ``path``,
    with the target as a small sphere ``/World/Target``; returns the tool point at every frame."""
    from pxr import Gf, UsdGeom

    arm = problem.arm
    integrator = sk.sim.Featherstone()
    state, spare = problem.arm.start_state(), arm.model.state(requires_grad=False)
    points = [arm.tool_point(state)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with sk.render.UsdExporter(path, arm.model, fps=FPS) as usd:
        marker = UsdGeom.Sphere.Define(usd.stage, "/World/Target")
        marker.GetRadiusAttr().Set(0.02)
        move = UsdGeom.XformCommonAPI(marker)
        usd.write(state, 0.0)
        move.SetTranslate(Gf.Vec3d(*problem.targets[0]), 0.0)
        for frame, control in enumerate(problem.controls):
            for _ in range(SUBSTEPS):
                integrator.step(arm.model, state, spare, control, DT)
                state, spare = spare, state
            usd.write(state, (frame + 1) / FPS)
            move.SetTranslate(Gf.Vec3d(*problem.targets[frame + 1]), float(frame + 1))
            points.append(arm.tool_point(state))
    return np.array(points)


def main(iterations: int = DEFAULT_ITERATIONS, usd_path: str | Path = DEFAULT_USD, quiet: bool = False) -> dict:
    """Optimize the torques, write the reach to ``usd_path`` and return ``losses`` (per
    iteration), ``final_loss``, ``mean_error`` / ``max_error`` (distance from the tool point
    to the target over frames 1..FRAMES, m), ``start_error`` (the mean distance when the arm
    just holds its start pose), ``torques`` (N m, per frame and joint, as asked: the
    joints' effort limits clamp them in the simulation), ``usd_path`` and ``seconds``."""
    t0 = time.perf_counter()
    problem = Problem(Arm())
    losses = optimize(problem, iterations, quiet)
    points = replay(problem, Path(usd_path))
    errors = np.linalg.norm(points[1:] - problem.targets[1:], axis=1)
    held = np.linalg.norm(problem.targets[1:] - problem.targets[0], axis=1)
    torques = problem.tau0.numpy() + problem.scale.numpy() * problem.u.numpy().reshape(FRAMES, -1)
    effort = TORQUE_WEIGHT * float(np.mean(np.sum((torques - problem.tau0.numpy()) ** 2, axis=1)))
    return {"losses": losses, "final_loss": float(np.mean(errors ** 2)) + effort, "mean_error": float(errors.mean()),
            "max_error": float(errors.max()), "start_error": float(held.mean()), "torques": torques,
            "usd_path": str(usd_path), "seconds": time.perf_counter() - t0}


def summary(result: dict) -> str:
    """The result of :func:`main` in a few lines."""
    return (f"arm_reach: loss {result['losses'][0]:.4e} -> {result['final_loss']:.4e} m^2 in "
            f"{len(result['losses'])} iterations ({result['seconds']:.1f} s)\n"
            f"  tool point to target: mean {1e3 * result['mean_error']:.1f} mm, largest "
            f"{1e3 * result['max_error']:.1f} mm (holding still: mean {1e3 * result['start_error']:.0f} mm)\n"
            f"  USD: {result['usd_path']}")


if __name__ == "__main__":
    command_line.run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD)
