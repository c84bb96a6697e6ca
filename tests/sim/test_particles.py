"""Free particles under SemiImplicitEuler: analytic projectile, momentum, kinematic particles."""

import numpy as np
import pytest

import simkit as sk

G = 9.81


def projectile_model(v0, dtype=sk.float64):
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    b.add_particle((0.0, 1.0, 0.0), v0, mass=0.5)
    return b.finalize(dtype=dtype)


def final_position(model, steps, dt):
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps, dt, keep_states=False)
    return states[-1].particle_q.numpy()[0]


@pytest.mark.parametrize("dtype", [sk.float32, sk.float64])
def test_free_flight_matches_the_analytic_projectile_to_first_order_in_dt(dtype):
    v0 = np.array([2.0, 5.0, -1.0])
    t = 1.0
    errors = []
    for steps in (100, 200, 400):
        x = final_position(projectile_model(v0, dtype), steps, t / steps)
        exact = np.array([0.0, 1.0, 0.0]) + v0 * t + 0.5 * np.array([0.0, -G, 0.0]) * t * t
        errors.append(np.linalg.norm(x - exact))
        # symplectic Euler's position error is exactly g dt t / 2 for constant gravity
        assert errors[-1] == pytest.approx(0.5 * G * (t / steps) * t, rel=1e-2 if dtype is sk.float32 else 1e-6)
    assert errors[0] / errors[1] == pytest.approx(2.0, rel=0.05)
    assert errors[1] / errors[2] == pytest.approx(2.0, rel=0.05)


def test_gravity_points_along_the_chosen_up_axis():
    b = sk.sim.ModelBuilder(gravity=-2.0, up_axis="z", ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize(dtype=sk.float64)
    x = final_position(model, 10, 0.1)
    assert x[0] == 0.0 and x[1] == 0.0 and x[2] < 0.0


def test_kinematic_particles_keep_their_velocity_and_ignore_forces():
    b = sk.sim.ModelBuilder(ground=False)
    b.add_particle((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.0, -1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_spring(0, 1, ke=100.0, kd=0.0, rest_length=0.5)
    model = b.finalize(dtype=sk.float64)
    x = final_position(model, 100, 0.01)
    assert np.allclose(x, [1.0, 0.0, 0.0], atol=1e-12)


def test_a_spring_network_without_gravity_or_contact_conserves_momentum(rng):
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    n = 12
    for _ in range(n):
        b.add_particle(rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), mass=rng.uniform(0.5, 2.0))
    for i in range(n):
        for j in (i + 1, i + 3):
            b.add_spring(i, j % n, ke=rng.uniform(10, 50), kd=rng.uniform(0.0, 0.5), rest_length=rng.uniform(0.3, 1.0))
    model = b.finalize(dtype=sk.float64)
    mass = model.particles.mass.numpy()
    s0 = model.state()
    p0 = (mass[:, None] * s0.particle_qd.numpy()).sum(axis=0)
    s1 = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s0, 500, 1e-3, keep_states=False)[-1]
    p1 = (mass[:, None] * s1.particle_qd.numpy()).sum(axis=0)
    assert np.abs(s1.particle_qd.numpy() - s0.particle_qd.numpy()).max() > 0.1  # the springs did act
    assert np.allclose(p1, p0, atol=1e-12)
