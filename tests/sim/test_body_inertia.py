"""ModelBuilder.add_body_inertia: explicit masses combined with the shapes' masses."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk


def test_explicit_mass_adds_to_shape_mass_about_the_combined_center():
    b = sk.sim.ModelBuilder(ground=False)
    body = b.add_body()
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body, density=1000.0)
    b.add_body_inertia(body, 2.0, com=(0.3, 0.0, 0.0), inertia=np.diag([0.01, 0.02, 0.03]))
    model = b.finalize(dtype=sk.float64)
    m_sphere = 1000.0 * 4.0 / 3.0 * math.pi * 0.1 ** 3
    m = m_sphere + 2.0
    c = 2.0 * 0.3 / m
    assert model.bodies.mass.numpy()[0] == pytest.approx(m)
    np.testing.assert_allclose(model.bodies.com.numpy()[0], [c, 0.0, 0.0], atol=1e-15)
    # parallel axes: each part's distance to the combined center along x
    transverse = m_sphere * c * c + 2.0 * (0.3 - c) ** 2
    expected = np.diag([0.01, 0.02 + transverse, 0.03 + transverse]) + np.eye(3) * 0.4 * m_sphere * 0.01
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], expected, atol=1e-14)


def test_explicit_mass_follows_add_builder():
    robot = sk.sim.ModelBuilder(ground=False)
    robot.add_body_inertia(robot.add_body(), 1.5, inertia=np.eye(3) * 0.1)
    world = sk.sim.ModelBuilder(ground=False)
    world.add_body()
    for _ in range(2):
        world.add_builder(robot)
    np.testing.assert_allclose(world.finalize().bodies.mass.numpy(), [0.0, 1.5, 1.5])


@pytest.mark.parametrize("inertia", [np.ones(3), np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
                                     -np.eye(3), np.full((3, 3), np.nan)])
def test_bad_inertia_is_rejected(inertia):
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    with pytest.raises(ValueError, match="add_body_inertia: inertia must be a finite symmetric positive semidefinite"):
        b.add_body_inertia(body, 1.0, inertia=inertia)


def test_bad_body_or_mass_is_rejected():
    b = sk.sim.ModelBuilder()
    with pytest.raises(ValueError, match="add_body_inertia"):
        b.add_body_inertia(0, 1.0)
    body = b.add_body()
    with pytest.raises(ValueError, match="add_body_inertia: mass"):
        b.add_body_inertia(body, -1.0)
