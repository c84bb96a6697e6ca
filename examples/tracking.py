"""Identification from an observed trajectory: record one, and a frame loss that tracks it.

Example::

    observed = observe(true_model, FRAMES, SUBSTEPS, DT)
    rollout = sk.optim.Rollout(model, integrator, steps=FRAMES, substeps=SUBSTEPS, dt=FRAMES_DT,
                               frame_loss=tracking_loss(observed))
"""

import numpy as np

import simkit as sk


@sk.kernel
def add_tracking_error(q: sk.array(dtype=sk.vec3d), observed: sk.array(dtype=sk.vec3d, ndim=2), frame: int,
                       weight: sk.float64, loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    d = q[i] - observed[frame, i]
    sk.atomic_add(loss, 0, weight * sk.dot(d, d))


@sk.kernel
def tracking_residual(q: sk.array(dtype=sk.vec3d), observed: sk.array(dtype=sk.vec3d, ndim=2), frame: int,
                      scale: sk.float64, r: sk.array(dtype=sk.vec3d, ndim=2)):
    i = sk.tid()
    r[frame, i] = (q[i] - observed[frame, i]) * scale


def tracking_residuals(model: sk.sim.Model, observed: np.ndarray, substeps: int, dt: float):
    """``run()``: simulate ``model`` from its initial state as :func:`observe` does and return the
    residuals ``(simulated - observed) / sqrt(frames * particles)`` of every frame (an sk array of
    vec3d, ``(frames, particles)``), whose sum of squares is the loss of :func:`tracking_loss`:
    what a least-squares optimizer (``sk.optim.LevenbergMarquardt``) takes."""
    frames, n = observed.shape[:2]
    target = sk.array(observed, dtype=sk.vec3d)
    r = sk.zeros((frames, n), dtype=sk.vec3d)
    scale = 1.0 / np.sqrt(frames * n)
    integrator = sk.sim.SemiImplicitEuler()

    def run() -> sk.Array:
        state, spare = model.state(), model.state()
        for frame in range(frames):
            for _ in range(substeps):
                integrator.step(model, state, spare, None, dt)
                state, spare = spare, state
            sk.launch(tracking_residual, n, inputs=[state.particle_q, target, frame, scale, r])
        return r
    return run


def observe(model: sk.sim.Model, frames: int, substeps: int, dt: float) -> np.ndarray:
    """The positions of every particle at the end of each frame, ``(frames, particles, 3)``,
    from ``frames * substeps`` semi-implicit steps of ``dt``."""
    integrator = sk.sim.SemiImplicitEuler()
    state, spare = model.state(), model.state()
    out = []
    for _ in range(frames):
        for _ in range(substeps):
            integrator.step(model, state, spare, None, dt)
            state, spare = spare, state
        out.append(state.particle_q.numpy().copy())
    return np.array(out)


def tracking_loss(observed: np.ndarray):
    """``frame_loss(frame, state, out)`` adding the mean squared distance to the observation
    of ``frame`` (divided by the number of frames, so the whole run adds up to the mean)."""
    frames, n = observed.shape[:2]
    target = sk.array(observed, dtype=sk.vec3d)
    weight = 1.0 / (frames * n)

    def frame_loss(frame: int, state: sk.sim.State, out: sk.Array) -> None:
        sk.launch(add_tracking_error, n, inputs=[state.particle_q, target, frame - 1, weight, out])
    return frame_loss
