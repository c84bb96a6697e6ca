"""ModelBuilder, Model, State and Control: what they build, and the errors bad input gets."""

import re

import numpy as np
import pytest

import simkit as sk


def two_particles():
    b = sk.sim.ModelBuilder(ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_particle((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    return b


def test_a_spring_without_rest_length_rests_at_the_current_distance():
    b = two_particles()
    b.add_spring(0, 1, ke=1.0, kd=0.0)
    assert b.finalize().springs.rest_length.numpy()[0] == pytest.approx(1.0)


def test_a_cloth_grid_has_the_expected_particles_triangles_hinges_and_pins():
    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 4, 3, 0.1, 0.2, mass=0.01,
                     fix_left=True)
    m = b.finalize()
    assert m.particle_count == 5 * 4
    assert m.tri_count == 2 * 4 * 3
    edges = 4 * 4 + 3 * 5 + 4 * 3                      # horizontal, vertical, diagonal
    assert m.edge_count == edges - 2 * (4 + 3)           # every edge but the border has two triangles
    assert np.allclose(m.triangles.area.numpy(), 0.5 * 0.1 * 0.2)
    mass = m.particles.mass.numpy().reshape(4, 5)
    assert np.all(mass[:, 0] == 0.0) and np.all(mass[:, 1:] == pytest.approx(0.01))
    assert np.allclose(m.edges.rest_angle.numpy(), 0.0, atol=1e-6)


def test_a_soft_grid_has_the_mass_and_volume_of_its_box():
    b = sk.sim.ModelBuilder()
    b.add_soft_grid((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 3, 2, 2, 0.1, 0.2, 0.3, density=500.0,
                    k_mu=1e3, k_lambda=1e3, k_damp=0.0)
    m = b.finalize(dtype=sk.float64)
    volume = 0.3 * 0.4 * 0.6
    assert m.tet_count == 5 * 3 * 2 * 2
    assert m.tets.volume.numpy().sum() == pytest.approx(volume)
    assert np.all(m.tets.volume.numpy() > 0.0)
    assert m.particles.mass.numpy().sum() == pytest.approx(500.0 * volume)


def test_rotated_grids_keep_their_rest_shape():
    b = sk.sim.ModelBuilder()
    rot = (0.0, np.sin(0.4), 0.0, np.cos(0.4))
    b.add_soft_grid((1.0, 2.0, 3.0), rot, (0.0, 0.0, 0.0), 2, 2, 2, 0.1, 0.1, 0.1, 1000.0, 1e3, 1e3, 0.0)
    m = b.finalize(dtype=sk.float64)
    assert m.tets.volume.numpy().sum() == pytest.approx(0.2 ** 3)


def test_finalize_with_requires_grad_gives_every_float_parameter_a_grad():
    b = two_particles()
    b.add_spring(0, 1, 1.0, 0.0)
    m = b.finalize(requires_grad=True)
    assert m.springs.ke.requires_grad and m.particles.inv_mass.requires_grad and m.contact.mu.requires_grad
    assert not m.springs.indices.requires_grad
    assert m.state().particle_q.requires_grad
    assert not m.state(requires_grad=False).particle_q.requires_grad


def test_finalize_in_float64_makes_every_array_double():
    m = two_particles().finalize(dtype=sk.float64)
    assert m.particles.mass.dtype is sk.float64 and m.state().particle_q.dtype is sk.vec3d


@pytest.mark.parametrize("call, message", [
    (lambda b: b.add_spring(0, 5, 1.0, 0.0), "add_spring: particle index j=5 is out of range"),
    (lambda b: b.add_spring(0, 0, 1.0, 0.0), "add_spring: particle indices must differ"),
    (lambda b: b.add_spring(0, 1.0, 1.0, 0.0), "add_spring: particle index 'j' must be an int"),
    (lambda b: b.add_particle((0, 0, 0), (0, 0, 0), mass=-1.0), "add_particle: mass must be a finite number >= 0"),
    (lambda b: b.add_particle((0, 0), (0, 0, 0), mass=1.0), "add_particle: pos expects 3 finite numbers"),
    (lambda b: b.add_spring(0, 1, ke=-5.0, kd=0.0), "add_spring: ke must be"),
    (lambda b: b.add_shape_box((0, 0, 0), (0, 0, 0, 1), (1.0, 0.0, 1.0)), "add_shape_box: half_extents must be > 0"),
    (lambda b: b.add_shape_sphere((0, 0, 0), radius=0.0), "add_shape_sphere: radius must be > 0"),
    (lambda b: b.add_cloth_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 0, 3, 0.1, 0.1, 1.0), "dim_x must be an int >= 1"),
    (lambda b: b.add_soft_mesh((0, 0, 0), (0, 0, 0, 1), 1.0, (0, 0, 0), np.eye(4, 3), [[0, 1, 2, 9]], 1.0, 1.0, 1.0,
                               0.0), "tet_indices reference vertex 9, but there are 4 vertices"),
    (lambda b: b.finalize(dtype=sk.int32), "finalize: dtype must be sk.float32 or sk.float64"),
])
def test_bad_builder_input_gets_an_error_naming_the_method_and_the_value(call, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        call(two_particles())


def test_a_degenerate_triangle_is_refused():
    b = two_particles()
    b.add_particle((2.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    with pytest.raises(ValueError, match=r"add_triangle: triangle \(0, 1, 2\) is degenerate"):
        b.add_triangle(0, 1, 2)


def test_a_degenerate_tetrahedron_is_refused():
    b = two_particles()
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_particle((1.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    with pytest.raises(ValueError, match="add_tetrahedron: tetrahedron .* is degenerate"):
        b.add_tetrahedron(0, 1, 2, 3)


def test_an_inverted_tetrahedron_is_reoriented_to_positive_volume():
    b = two_particles()
    b.add_particle((0.0, 0.0, 1.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_tetrahedron(0, 1, 2, 3)
    m = b.finalize(dtype=sk.float64)
    assert m.tets.volume.numpy()[0] == pytest.approx(1.0 / 6.0)
    assert list(m.tets.indices.numpy()[0]) == [0, 1, 3, 2]


def test_finalize_builds_on_the_default_device():
    assert two_particles().finalize().device == sk.get_device() == "cpu"


def test_finalize_refuses_a_malformed_device_naming_the_parameter():
    with pytest.raises(ValueError, match=r"finalize\(device\) must be 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        two_particles().finalize(device="gpu")


def test_an_empty_builder_cannot_be_finalized():
    with pytest.raises(ValueError, match="no particles"):
        sk.sim.ModelBuilder().finalize()


@pytest.mark.parametrize("dt", [0.0, -1e-3, float("nan")])
def test_step_refuses_a_non_positive_dt(dt):
    m = two_particles().finalize()
    with pytest.raises(ValueError, match="dt must be a finite number > 0"):
        sk.sim.SemiImplicitEuler().step(m, m.state(), m.state(), None, dt)


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD, sk.sim.Featherstone])
@pytest.mark.parametrize("dtype, dt, problem", [
    (sk.float32, 1e-300, "is 0 in float32"),
    (sk.float32, 1e-40, "is a subnormal number in float32"),
    (sk.float32, 1e300, "overflows to inf in float32"),
    (sk.float64, 1e-310, "is a subnormal number in float64"),
])
def test_step_refuses_a_dt_the_model_float_type_cannot_hold_and_leaves_the_state(integrator, dtype, dt, problem):
    m = two_particles().finalize(dtype=dtype)
    s_in, s_out = m.state(), m.state()
    before = s_out.particle_q.numpy().copy()
    with pytest.raises(ValueError, match=re.escape(f"step: dt = {dt!r} {problem}")):
        integrator().step(m, s_in, s_out, None, dt)
    assert np.array_equal(s_out.particle_q.numpy(), before)


def test_step_takes_a_dt_float64_holds_that_float32_cannot():
    m = two_particles().finalize(dtype=sk.float64)
    s_in, s_out = m.state(), m.state()
    s_in.particle_qd.assign(np.ones((2, 3)))
    sk.sim.SemiImplicitEuler().step(m, s_in, s_out, None, 1e-300)
    assert np.allclose(s_out.particle_q.numpy()[0], 1e-300, rtol=1e-6, atol=0.0)


def test_step_refuses_a_state_of_another_model_and_leaves_both_untouched():
    m1, m2 = two_particles().finalize(), two_particles().finalize()
    s_in, s_out = m1.state(), m2.state()
    before = s_out.particle_q.numpy().copy()
    with pytest.raises(ValueError, match="state_out was made by another model"):
        sk.sim.SemiImplicitEuler().step(m1, s_in, s_out, None, 1e-3)
    assert np.array_equal(s_out.particle_q.numpy(), before)


def test_step_refuses_the_same_state_as_input_and_output():
    m = two_particles().finalize()
    s = m.state()
    with pytest.raises(ValueError, match="must be different states"):
        sk.sim.SemiImplicitEuler().step(m, s, s, None, 1e-3)


def test_step_refuses_a_control_of_another_model():
    m1, m2 = two_particles().finalize(), two_particles().finalize()
    with pytest.raises(ValueError, match="control was made by another model"):
        sk.sim.SemiImplicitEuler().step(m1, m1.state(), m1.state(), m2.control(), 1e-3)


def test_simulate_keeps_every_state_or_only_two_buffers():
    m = two_particles().finalize()
    s0 = m.state()
    kept = sk.sim.simulate(m, sk.sim.SemiImplicitEuler(), s0, 5, 1e-2, substeps=2)
    assert len(kept) == 11 and kept[0] is s0 and len({id(s) for s in kept}) == 11
    light = sk.sim.simulate(m, sk.sim.SemiImplicitEuler(), s0, 5, 1e-2, substeps=2, keep_states=False)
    assert len(light) == 2 and light[0] is s0
    assert np.array_equal(light[1].particle_q.numpy(), kept[-1].particle_q.numpy())
    assert np.array_equal(s0.particle_q.numpy(), m.particle_q.numpy())


def test_simulate_checks_the_number_of_per_frame_controls():
    m = two_particles().finalize()
    with pytest.raises(ValueError, match="control has 2 entries, expected one Control or one per frame \\(3\\)"):
        sk.sim.simulate(m, sk.sim.SemiImplicitEuler(), m.state(), 3, 1e-2, control=[m.control(), m.control()])
