"""Shared helpers of the simulation tests: a scalar loss on positions, central differences, and
Featherstone rollouts."""

import numpy as np

import simkit as sk


@sk.kernel
def weighted_positions64(q: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(q[i], w[i]))


def position_loss(q: sk.Array, w: np.ndarray) -> sk.Array:
    """``sum_i dot(q[i], w[i])`` as a one-element float64 array (recorded when a Tape is active)."""
    loss = sk.zeros(1, dtype=sk.float64)
    sk.launch(weighted_positions64, q.shape[0], inputs=[q, sk.array(w, dtype=sk.vec3d), loss])
    return loss


def central_difference(run, values: np.ndarray, index, eps: float) -> float:
    """d run() / d values[index] by central differences; ``values`` is edited in place and restored."""
    old = values[index].copy() if isinstance(values[index], np.ndarray) else values[index]
    values[index] = old + eps
    up = run()
    values[index] = old - eps
    down = run()
    values[index] = old
    return (up - down) / (2.0 * eps)


def spring_triangle(ground: bool):
    """Three particles, one pinned, damped springs and gravity, float64 with grads. With
    ``ground`` the third particle starts touching the ground, so contact is in the rollout."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=ground, contact_ke=1e4, contact_kd=20.0, contact_kf=100.0)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.4, 0.8, 0.1), (0.3, -0.2, 0.5), mass=0.2)
    b.add_particle((0.1, 0.045, 0.3), (0.5, -0.1, 0.0), mass=0.3, radius=0.05)
    b.add_spring(0, 1, ke=80.0, kd=0.3)
    b.add_spring(1, 2, ke=120.0, kd=0.2, rest_length=0.7)
    b.add_spring(0, 2, ke=60.0, kd=0.1)
    return b.finalize(dtype=sk.float64, requires_grad=True)


def finite_difference(run, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar ``run(x)`` with respect to every entry of ``x``."""
    out = np.zeros_like(x)
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        out[i] = (run(up) - run(down)) / (2.0 * eps)
    return out


def featherstone_rollout(model, state, steps, dt, control=None, integrator=None, tape=None):
    """The last state of ``steps`` Featherstone steps from ``state``: recorded on ``tape`` with
    one state per step, or through two buffers without one."""
    integrator = integrator or sk.sim.Featherstone()
    if tape is None:
        a, b = state, model.state()
        for _ in range(steps):
            integrator.step(model, a, b, control, dt)
            a, b = b, a
        return a
    states = [state] + [model.state(requires_grad=True) for _ in range(steps)]
    with tape:
        for k in range(steps):
            integrator.step(model, states[k], states[k + 1], control, dt)
    return states[-1]


def assert_jvp_matches_differences(fn, x: np.ndarray, v: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """``sk.autograd.jvp`` of ``fn`` (an sk array of float64 in, one out) at ``x`` along ``v``
    against central differences along ``v``; returns the differences."""
    _out, tangent = sk.autograd.jvp(fn, [sk.array(x, dtype=sk.float64)], [v])
    expected = (fn(sk.array(x + eps * v, dtype=sk.float64)).numpy()
                - fn(sk.array(x - eps * v, dtype=sk.float64)).numpy()) / (2.0 * eps)
    np.testing.assert_allclose(tangent.numpy(), expected, rtol=1e-6, atol=1e-9)
    return expected
