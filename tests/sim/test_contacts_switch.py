"""model.contacts_enabled: one switch that turns every contact of every integrator off (ground,
shape pairs, particles against shapes, meshes and each other) and back on."""

import numpy as np
import pytest

import simkit as sk

IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)
INTEGRATORS = {"semi-implicit": (sk.sim.SemiImplicitEuler(), 1e-4), "xpbd": (sk.sim.XPBD(), 1e-3),
               "featherstone": (sk.sim.Featherstone(), 1e-4),
               "featherstone-constraint": (sk.sim.Featherstone(contact="constraint"), 1e-3)}


def run(model, name, seconds=0.4):
    integrator, dt = INTEGRATORS[name]
    return sk.sim.simulate(model, integrator, model.state(), int(round(seconds / dt)), dt, keep_states=False)[-1]


def box_over_ground():
    """A 0.2 m box on a free joint (an articulation, for Featherstone) 0.05 m above the ground."""
    b = sk.sim.ModelBuilder()
    b.add_articulation()
    box = b.add_body(sk.transform((0.0, 0.15, 0.0), IDENTITY_Q))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=box)
    b.add_joint_free(-1, box)
    return b


@pytest.mark.parametrize("name", list(INTEGRATORS))
def test_a_body_falls_through_the_ground_with_contacts_off_and_rests_when_they_are_back_on(name):
    model = box_over_ground().finalize(dtype=sk.float64)
    assert model.contacts_enabled is True
    model.contacts_enabled = False
    assert run(model, name).body_q.numpy()[0, 1] < -0.5
    model.contacts_enabled = True
    assert run(model, name).body_q.numpy()[0, 1] == pytest.approx(0.1, abs=3e-3)


@pytest.mark.parametrize("name", list(INTEGRATORS))
def test_particles_fall_through_the_ground_and_a_static_shape_with_contacts_off(name):
    b = box_over_ground()
    b.add_shape_box((2.0, 0.1, 0.0), IDENTITY_Q, (0.3, 0.1, 0.3))        # a static table top
    b.add_particle((2.0, 0.3, 0.0), (0.0, 0.0, 0.0), mass=0.1, radius=0.05)    # over the table
    b.add_particle((-2.0, 0.1, 0.0), (0.0, 0.0, 0.0), mass=0.1, radius=0.05)   # over the ground
    model = b.finalize(dtype=sk.float64)
    for enabled in (False, True):
        model.contacts_enabled = enabled
        y = run(model, name).particle_q.numpy()[:, 1]
        if enabled:
            assert y == pytest.approx([0.25, 0.05], abs=3e-3)
        else:
            assert np.all(y < -0.3)           # falling freely: 0.78 m in 0.4 s


@pytest.mark.parametrize("name", ["semi-implicit", "xpbd"])
def test_a_body_falls_through_a_static_shape_and_a_mesh_with_contacts_off(name):
    v = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1], [-1, -1, 1], [1, -1, 1], [1, 1, 1],
                  [-1, 1, 1]], dtype=float)
    f = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4], [1, 2, 6], [1, 6, 5],
                  [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]])
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.3, 0.1, 0.3))           # a static slab, top at 0.1
    box = b.add_body(sk.transform((0.0, 0.25, 0.0), IDENTITY_Q))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=box)
    b.add_shape_mesh(-1, v, f, xform=sk.transform((2.0, 0.0, 0.0), IDENTITY_Q), scale=(0.3, 0.1, 0.3), density=0.0)
    cube = b.add_body(sk.transform((2.0, 0.25, 0.0), IDENTITY_Q))
    b.add_shape_mesh(cube, v, f, scale=0.1, density=1000.0)
    model = b.finalize(dtype=sk.float64)
    for enabled in (False, True):
        model.contacts_enabled = enabled
        y = run(model, name).body_q.numpy()[:, 1]
        if enabled:
            assert y == pytest.approx([0.2, 0.2], abs=5e-3)
        else:
            assert np.all(y < -0.5)


def test_particles_pass_through_each_other_with_contacts_off():
    b = sk.sim.ModelBuilder(ground=False, particle_contact=True)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=0.0, radius=0.05)     # pinned
    b.add_particle((0.0, 0.15, 0.0), (0.0, 0.0, 0.0), mass=0.1, radius=0.05)
    model = b.finalize(dtype=sk.float64)
    for enabled in (False, True):
        model.contacts_enabled = enabled
        y = run(model, "semi-implicit").particle_q.numpy()[1, 1]
        if enabled:
            assert y == pytest.approx(0.1, abs=3e-3)
        else:
            assert y < -0.5


def test_the_builders_contacts_enabled_is_the_models_at_finalize():
    b = box_over_ground()
    b.contacts_enabled = False
    model = b.finalize(dtype=sk.float64)
    assert model.contacts_enabled is False
    assert run(model, "semi-implicit").body_q.numpy()[0, 1] < -0.5


def test_contacts_enabled_must_be_a_bool():
    b = box_over_ground()
    model = b.finalize()
    with pytest.raises(TypeError, match="Model.contacts_enabled must be a bool, got str 'no'"):
        model.contacts_enabled = "no"
    assert model.contacts_enabled is True
    b.contacts_enabled = 0
    with pytest.raises(TypeError, match="finalize: the builder's contacts_enabled must be a bool, got int 0"):
        b.finalize()
