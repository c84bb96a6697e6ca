"""Penalty contact with friction against the ground and static shapes (SemiImplicitEuler)."""

import numpy as np
import pytest

import simkit as sk

G = 9.81


def drop(pos, vel=(0.0, 0.0, 0.0), radius=0.05, mass=0.1, shapes=(), ground=True, mu=0.5, seconds=2.0, dt=5e-4,
         up_axis="y"):
    b = sk.sim.ModelBuilder(gravity=-G, up_axis=up_axis, ground=ground, contact_ke=1e4, contact_kd=20.0,
                            contact_kf=100.0, contact_mu=mu)
    b.add_particle(pos, vel, mass=mass, radius=radius)
    for add in shapes:
        add(b)
    model = b.finalize(dtype=sk.float64)
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), int(seconds / dt), dt,
                             keep_states=False)
    return model, states[-1]


@pytest.mark.parametrize("up_axis", ["y", "z"])
def test_a_particle_dropped_on_the_ground_comes_to_rest_at_its_radius(up_axis):
    axis = "xyz".index(up_axis)
    pos = np.zeros(3)
    pos[axis] = 0.5
    _model, s = drop(pos, up_axis=up_axis)
    # penalty contact sinks by m g / ke = 1e-4 m
    assert s.particle_q.numpy()[0, axis] == pytest.approx(0.05 - 0.1 * G / 1e4, abs=2e-5)
    assert np.abs(s.particle_qd.numpy()).max() < 1e-3


@pytest.mark.parametrize("mu", [0.2, 0.5])
def test_a_sliding_block_stops_after_v_squared_over_two_mu_g(mu):
    v = 2.0
    rest_height = 0.05 - 0.1 * G / 1e4
    _model, s = drop((0.0, rest_height, 0.0), vel=(v, 0.0, 0.0), mu=mu, seconds=v / (mu * G) + 0.5)
    assert s.particle_q.numpy()[0, 0] == pytest.approx(v * v / (2.0 * mu * G), rel=0.05)
    assert abs(s.particle_qd.numpy()[0, 0]) < 1e-3


def test_friction_does_not_act_without_normal_force():
    _model, s = drop((0.0, 1.0, 0.0), vel=(1.0, 0.0, 0.0), seconds=0.2, ground=True)
    assert s.particle_qd.numpy()[0, 0] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("shape, top", [
    (lambda b: b.add_shape_sphere((0.0, 0.3, 0.0), radius=0.2), 0.5),
    (lambda b: b.add_shape_box((0.0, 0.2, 0.0), (0.0, 0.0, 0.0, 1.0), (0.3, 0.2, 0.3)), 0.4),
    # a capsule lying along x: its local y axis rotated onto world x, top at 0.3 + 0.1
    (lambda b: b.add_shape_capsule((0.0, 0.3, 0.0), (0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)), 0.1, 0.5), 0.4),
    (lambda b: b.add_shape_cylinder((0.0, 0.2, 0.0), (0.0, 0.0, 0.0, 1.0), 0.3, 0.2), 0.4),
    # a cone standing on its apex: its base, on top, at 0.2 + 0.2
    (lambda b: b.add_shape_cone((0.0, 0.2, 0.0), (1.0, 0.0, 0.0, 0.0), 0.3, 0.2), 0.4),
    (lambda b: b.add_shape_ellipsoid((0.0, 0.2, 0.0), (0.0, 0.0, 0.0, 1.0), (0.3, 0.2, 0.4)), 0.4),
], ids=["sphere", "box", "capsule", "cylinder", "cone", "ellipsoid"])
def test_a_particle_dropped_on_a_static_shape_rests_on_its_top(shape, top):
    _model, s = drop((0.0, 1.0, 0.0), shapes=[shape], ground=False, mu=1.0, seconds=1.5)
    assert s.particle_q.numpy()[0, 1] == pytest.approx(top + 0.05 - 0.1 * G / 1e4, abs=2e-4)
    assert np.abs(s.particle_qd.numpy()).max() < 1e-2


def test_a_rotated_box_pushes_along_its_own_face_normal():
    # a box tilted 30 degrees about z: a particle at rest on it slides down the slope (mu = 0)
    angle = np.radians(30.0)
    rot = (0.0, 0.0, np.sin(angle / 2), np.cos(angle / 2))
    normal = np.array([-np.sin(angle), np.cos(angle), 0.0])
    start = normal * (0.05 + 0.1 + 0.1 * G * np.cos(angle) / 1e4)
    _model, s = drop(start, shapes=[lambda b: b.add_shape_box((0, 0, 0), rot, (2.0, 0.1, 2.0))], ground=False,
                     mu=0.0, seconds=0.3)
    v = s.particle_qd.numpy()[0]
    slope = np.array([-np.cos(angle), -np.sin(angle), 0.0])  # downhill along the face
    assert v @ slope == pytest.approx(G * np.sin(angle) * 0.3, rel=0.02)
    assert abs(v @ normal) < 1e-2
