"""Springs under SemiImplicitEuler: oscillation period, energy, damping, actuation."""

import numpy as np
import pytest

import simkit as sk


def oscillator(m=0.5, k=200.0, kd=0.0, stretch=0.1):
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((1.0 + stretch, 0.0, 0.0), (0.0, 0.0, 0.0), mass=m)
    b.add_spring(0, 1, ke=k, kd=kd, rest_length=1.0)
    return b.finalize(dtype=sk.float64)


def trajectory_x(model, steps, dt, control=None):
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps, dt, control=control)
    return np.array([s.particle_q.numpy()[1, 0] for s in states])


def test_a_mass_on_a_spring_oscillates_with_period_two_pi_sqrt_m_over_k():
    m, k = 0.5, 200.0
    period = 2.0 * np.pi * np.sqrt(m / k)
    dt = period / 500
    x = trajectory_x(oscillator(m, k), int(3 * period / dt), dt) - 1.0
    # upward zero crossings, interpolated
    up = [i + x[i] / (x[i] - x[i + 1]) for i in range(len(x) - 1) if x[i] < 0.0 <= x[i + 1]]
    measured = (up[-1] - up[0]) / (len(up) - 1) * dt
    assert len(up) >= 2
    assert measured == pytest.approx(period, rel=0.01)


def spring_chain(n=6):
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    rng = np.random.default_rng(3)
    for i in range(n):
        b.add_particle((0.5 * i, 0.0, 0.0), rng.uniform(-0.5, 0.5, 3), mass=1.0)
    for i in range(n - 1):
        b.add_spring(i, i + 1, ke=100.0, kd=0.0, rest_length=0.5)
    return b.finalize(dtype=sk.float64)


def energy(model, state):
    q, v = state.particle_q.numpy(), state.particle_qd.numpy()
    kinetic = 0.5 * (model.particles.mass.numpy() * (v * v).sum(axis=1)).sum()
    idx = model.springs.indices.numpy()
    length = np.linalg.norm(q[idx[:, 0]] - q[idx[:, 1]], axis=1)
    potential = 0.5 * (model.springs.ke.numpy() * (length - model.springs.rest_length.numpy()) ** 2).sum()
    return kinetic + potential


def test_an_undamped_spring_system_keeps_its_energy_within_one_percent_over_ten_thousand_steps():
    model = spring_chain()
    integrator = sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()
    e0 = energy(model, a)
    worst = 0.0
    for step in range(10_000):
        integrator.step(model, a, b, None, 2e-4)
        a, b = b, a
        if step % 100 == 99:
            worst = max(worst, abs(energy(model, a) - e0) / e0)
    assert worst < 0.01


def test_spring_damping_removes_energy():
    model = oscillator(kd=2.0)
    s = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 2000, 1e-3, keep_states=False)
    assert energy(model, s[-1]) < 0.05 * energy(model, s[0])


def test_spring_activation_moves_the_equilibrium_to_rest_length_times_one_plus_activation():
    model = oscillator(kd=5.0, stretch=0.0)
    control = model.control()
    control.spring_activation.assign(np.array([0.2]))
    x = trajectory_x(model, 4000, 1e-3, control=control)
    assert x[-1] == pytest.approx(1.2, abs=1e-4)


@sk.kernel
def _sum_of_heights(q: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    sk.atomic_add(loss, 0, q[sk.tid()][1])


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler(), sk.sim.XPBD()], ids=["euler", "xpbd"])
def test_a_spring_between_coincident_particles_exerts_nothing_and_keeps_positions_and_gradients_finite(integrator):
    # The direction is undefined, so no force: both particles fall freely, and the loss (the sum
    # of heights) has the free-fall gradient steps * dt per particle w.r.t. the initial velocity.
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_spring(0, 1, ke=100.0, kd=1.0, rest_length=0.5)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    s0 = model.state(requires_grad=True)
    steps, dt = 10, 1e-3

    def loss(state, out):
        sk.launch(_sum_of_heights, state.particle_count, inputs=[state.particle_q, out])

    result = sk.optim.Rollout(model, integrator, steps=steps, dt=dt, loss=loss).run(
        s0, wrt=[s0.particle_qd, model.springs.ke])
    q = result.final_state.particle_q.numpy()
    fallen = 1.0 - 9.81 * dt * dt * steps * (steps + 1) / 2     # semi-implicit free fall
    assert np.allclose(q[:, 1], fallen, rtol=1e-9)
    assert np.allclose(result.grads[0][:, 1], steps * dt, rtol=1e-9)
    assert np.all(np.isfinite(result.grads[0])) and result.grads[1][0] == 0.0
