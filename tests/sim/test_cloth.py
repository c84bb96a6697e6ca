"""Cloth: St. Venant-Kirchhoff membranes and dihedral bending hinges, tested against physics.

Forces are compared with the documented energies (computed here in numpy) and their
invariances; a pinned sheet must drape onto the ground and come to rest; rollout
gradients with respect to material parameters must match central differences.
"""

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.bending import eval_bending_forces
from simkit.kernels.triangles import eval_triangle_forces
from simkit.sim.geometry import dihedral_angle, quat_rotate, triangle_rest_pose

from sim_helpers import central_difference, position_loss

F64 = sk.float64
REST = np.array([[0.1, -0.2, 0.3], [1.3, 0.1, 0.2], [0.4, 0.9, -0.1]])


def random_rotation(rng) -> np.ndarray:
    """A uniformly random unit quaternion (x, y, z, w)."""
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def one_triangle(k_mu=300.0, k_lambda=200.0, k_damp=0.0, dtype=F64):
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    for p in REST:
        b.add_particle(p, (0.0, 0.0, 0.0), mass=1.0)
    b.add_triangle(0, 1, 2, k_mu=k_mu, k_lambda=k_lambda, k_damp=k_damp)
    return b.finalize(dtype=dtype)


def one_hinge(ke=2.0, kd=0.0, rest_angle=0.0):
    """Two unit right triangles sharing the edge v0-v1 along x; o0 at y = -1, o1 at y = +1 (flat)."""
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    for p in ((0.3, -1.0, 0.0), (0.6, 1.0, 0.0), (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)):
        b.add_particle(p, (0.0, 0.0, 0.0), mass=1.0)
    b.add_edge(0, 1, 2, 3, ke=ke, kd=kd, rest_angle=rest_angle)
    return b.finalize(dtype=F64)


def forces(model, evaluate, q, qd=None) -> np.ndarray:
    """The forces ``evaluate`` (a per-feature force function) adds at positions q, velocities qd."""
    state = model.state()
    state.particle_q.assign(np.asarray(q, dtype=np.float64))
    if qd is not None:
        state.particle_qd.assign(np.asarray(qd, dtype=np.float64))
    state.clear_forces()
    evaluate(model, state)
    return state.particle_f.numpy().astype(np.float64)


def stvk_energy(x, k_mu, k_lambda):
    """The documented membrane energy: area * (k_mu |E|^2 + k_lambda / 2 tr(E)^2) with the
    Green strain E of the deformation from REST to x."""
    pose, area = triangle_rest_pose(*REST)
    F = np.stack([x[1] - x[0], x[2] - x[0]], axis=1) @ pose
    E = 0.5 * (F.T @ F - np.eye(2))
    return area * (k_mu * np.sum(E * E) + 0.5 * k_lambda * np.trace(E) ** 2)


def fd_gradient(energy, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        g[idx] = central_difference(lambda: energy(x), x, idx, eps)
    return g


def rigid_velocity(rng, x):
    omega, v = rng.normal(size=3), rng.normal(size=3)
    return v + np.cross(omega, x)


def hinge_angle(x):
    return dihedral_angle(x[0], x[1], x[2], x[3])


def bend(x, angle):
    """Rotate o1 about the hinge edge (the x axis through v0) by ``angle``."""
    y = x.copy()
    y[1] = quat_rotate(np.array([np.sin(angle / 2), 0.0, 0.0, np.cos(angle / 2)]), x[1] - x[2]) + x[2]
    return y


# -- membrane -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [sk.float32, F64])
def test_a_triangle_in_its_rest_shape_feels_no_force_however_it_is_moved_rigidly(dtype, rng):
    model = one_triangle(k_damp=5.0, dtype=dtype)
    q = quat_rotate(random_rotation(rng), REST) + rng.normal(size=3)
    f = forces(model, eval_triangle_forces, q, rigid_velocity(rng, q))
    tol = 1e-3 if dtype is sk.float32 else 1e-10     # against forces of order k_mu * strain ~ 1e2
    assert np.abs(f).max() < tol


def test_stretched_membrane_forces_sum_to_zero_and_exert_no_net_torque(rng):
    model = one_triangle(k_damp=5.0)
    q = REST + 0.3 * rng.normal(size=(3, 3))
    f = forces(model, eval_triangle_forces, q, rng.normal(size=(3, 3)))
    scale = np.abs(f).max()
    assert scale > 1.0
    assert np.abs(f.sum(axis=0)).max() < 1e-12 * scale
    assert np.abs(np.cross(q, f).sum(axis=0)).max() < 1e-12 * scale


def test_membrane_force_is_minus_the_gradient_of_the_stvk_energy(rng):
    k_mu, k_lambda = 300.0, 200.0
    model = one_triangle(k_mu, k_lambda)
    q = REST + 0.2 * rng.normal(size=(3, 3))
    f = forces(model, eval_triangle_forces, q)
    expected = -fd_gradient(lambda x: stvk_energy(x, k_mu, k_lambda), q.copy())
    np.testing.assert_allclose(f, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())


def test_a_stretched_triangle_loses_energy_when_moved_along_its_force():
    k_mu, k_lambda = 300.0, 200.0
    q = REST * np.array([1.2, 0.9, 1.0])
    f = forces(one_triangle(k_mu, k_lambda), eval_triangle_forces, q)
    step = 1e-4 / np.abs(f).max()
    assert stvk_energy(q + step * f, k_mu, k_lambda) < stvk_energy(q, k_mu, k_lambda)


def test_membrane_damping_is_minus_the_velocity_gradient_of_the_strain_rate_dissipation(rng):
    k_damp = 5.0
    model = one_triangle(k_mu=0.0, k_lambda=0.0, k_damp=k_damp)
    pose, area = triangle_rest_pose(*REST)
    q = REST + 0.2 * rng.normal(size=(3, 3))
    F = np.stack([q[1] - q[0], q[2] - q[0]], axis=1) @ pose

    def dissipation(v):
        # phi = area * k_damp / 2 |dE/dt|^2 with dE/dt = sym(F^T dF/dt)
        Fdot = np.stack([v[1] - v[0], v[2] - v[0]], axis=1) @ pose
        Edot = 0.5 * (F.T @ Fdot + Fdot.T @ F)
        return 0.5 * area * k_damp * np.sum(Edot * Edot)

    v = rng.normal(size=(3, 3))
    f = forces(model, eval_triangle_forces, q, v)
    expected = -fd_gradient(dissipation, v.copy())
    np.testing.assert_allclose(f, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())


# -- bending --------------------------------------------------------------------------

def test_a_flat_hinge_at_rest_angle_zero_feels_no_force_however_it_is_moved_rigidly(rng):
    model = one_hinge(ke=2.0, kd=0.5)
    x0 = model.particle_q.numpy()
    q = quat_rotate(random_rotation(rng), x0) + rng.normal(size=3)
    f = forces(model, eval_bending_forces, q, rigid_velocity(rng, q))
    assert np.abs(f).max() < 1e-12


def test_a_bent_hinge_pulls_back_toward_flat_with_torque_ke_times_angle():
    ke, angle = 2.0, 0.4
    model = one_hinge(ke=ke)
    q = bend(model.particle_q.numpy(), angle)
    f = forces(model, eval_bending_forces, q)
    # o1 is a unit distance from the edge: its force is ke * angle, tangent to its circle
    # about the edge and turning it back toward flat.
    tangent = bend(q, 1e-7)[1] - q[1]
    assert np.linalg.norm(f[1]) == pytest.approx(ke * angle, rel=1e-9)
    assert np.dot(f[1], tangent) / (np.linalg.norm(f[1]) * np.linalg.norm(tangent)) == pytest.approx(-1.0)
    assert abs(hinge_angle(q + 1e-4 * f)) < abs(hinge_angle(q))


def test_a_hinge_bent_to_its_rest_angle_feels_no_force():
    model = one_hinge(ke=2.0, rest_angle=0.7)
    q = bend(model.particle_q.numpy(), 0.7)
    assert hinge_angle(q) == pytest.approx(0.7)
    assert np.abs(forces(model, eval_bending_forces, q)).max() < 1e-12


def test_bending_force_is_minus_the_gradient_of_the_hinge_energy_in_the_geometry_angle_convention(rng):
    ke, rest = 2.0, 0.3
    model = one_hinge(ke=ke, rest_angle=rest)
    q = model.particle_q.numpy() + 0.3 * rng.normal(size=(4, 3))
    f = forces(model, eval_bending_forces, q)
    expected = -fd_gradient(lambda x: 0.5 * ke * (hinge_angle(x) - rest) ** 2, q.copy())
    np.testing.assert_allclose(f, expected, rtol=1e-6, atol=1e-7 * np.abs(expected).max())


def test_bending_forces_sum_to_zero_and_exert_no_net_torque(rng):
    model = one_hinge(ke=2.0, kd=0.5)
    q = model.particle_q.numpy() + 0.3 * rng.normal(size=(4, 3))
    f = forces(model, eval_bending_forces, q, rng.normal(size=(4, 3)))
    scale = np.abs(f).max()
    assert scale > 0.1
    assert np.abs(f.sum(axis=0)).max() < 1e-12 * scale
    assert np.abs(np.cross(q, f).sum(axis=0)).max() < 1e-12 * scale


def test_hinge_damping_is_kd_times_the_angle_rate_against_the_angle_gradient(rng):
    kd = 0.5
    model = one_hinge(ke=0.0, kd=kd)
    q = model.particle_q.numpy() + 0.3 * rng.normal(size=(4, 3))
    v = rng.normal(size=(4, 3))
    f = forces(model, eval_bending_forces, q, v)
    eps = 1e-6
    rate = (hinge_angle(q + eps * v) - hinge_angle(q - eps * v)) / (2 * eps)
    expected = -kd * rate * fd_gradient(hinge_angle, q.copy())
    np.testing.assert_allclose(f, expected, rtol=1e-6, atol=1e-7 * np.abs(expected).max())
    assert np.sum(f * v) < 0.0


# -- a whole sheet --------------------------------------------------------------------

# A 1.6 m square of 32 x 32 cells, 0.01 kg per particle, pinned along one side 0.4 m above
# the ground. k_mu = k_lambda = 1e3 N/m and the damping below are stable at dt = 5e-4 s:
# membrane stiffness per particle ~ 6 (2 k_mu + k_lambda) ~ 2e4 N/m gives omega * dt ~ 0.7,
# and the strain-rate and hinge damping rates times dt stay below 1.
DRAPE = dict(k_mu=1.0e3, k_lambda=1.0e3, k_damp=1.0, edge_ke=0.1, edge_kd=1.0e-3)
DRAPE_DT, DRAPE_STEPS = 5.0e-4, 8000


def edge_stretch(model, q) -> float:
    """The largest relative elongation of any triangle edge."""
    q0, tri = model.particle_q.numpy(), model.triangles.indices.numpy()
    worst = 0.0
    for a, b in ((0, 1), (1, 2), (2, 0)):
        rest = np.linalg.norm(q0[tri[:, a]] - q0[tri[:, b]], axis=1)
        now = np.linalg.norm(q[tri[:, a]] - q[tri[:, b]], axis=1)
        worst = max(worst, float((now / rest - 1.0).max()))
    return worst


def test_a_pinned_sheet_drapes_onto_the_ground_and_comes_to_rest():
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True, contact_kf=10.0, contact_mu=0.5)
    flat = (-np.sin(np.pi / 4), 0.0, 0.0, np.cos(np.pi / 4))       # the sheet's local y onto -z
    b.add_cloth_grid((0.0, 0.4, 0.0), flat, (0.0, 0.0, 0.0), 32, 32, 0.05, 0.05, mass=0.01, fix_left=True,
                     radius=0.01, **DRAPE)
    model = b.finalize()
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), DRAPE_STEPS, DRAPE_DT,
                            keep_states=False)[-1]
    q, v = final.particle_q.numpy(), final.particle_qd.numpy()
    assert np.isfinite(q).all() and np.isfinite(v).all()
    # a fall from 0.4 m reaches ~2.8 m/s; at rest nothing moves faster than 2 cm/s
    assert np.linalg.norm(v, axis=1).max() < 0.02
    assert edge_stretch(model, q) < 0.03
    far_edge = q[32::33]                                     # the free side, x = 1.6 m at the start
    assert np.abs(far_edge[:, 1] - 0.01).max() < 0.005       # lies on the ground at its radius
    assert q[:, 1].min() > 0.0


# -- gradients of a rollout ---------------------------------------------------------------

def small_cloth():
    """A 3 x 3-cell float64 sheet pinned along one side, launched with random velocities so that
    every membrane and hinge works during the rollout."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 3, 3, 0.1, 0.1, mass=0.01,
                     fix_left=True, k_mu=500.0, k_lambda=300.0, k_damp=0.2, edge_ke=0.05, edge_kd=1e-4)
    model = b.finalize(dtype=F64, requires_grad=True)
    v0 = np.random.default_rng(11).normal(scale=0.5, size=(model.particle_count, 3))
    v0[model.particles.mass.numpy() == 0.0] = 0.0
    return model, v0


@pytest.mark.parametrize("group, name", [("triangles", "k_mu"), ("triangles", "k_lambda"), ("triangles", "k_damp"),
                                         ("edges", "ke"), ("edges", "kd")])
def test_rollout_gradient_with_respect_to_a_cloth_parameter_matches_central_differences(group, name):
    model, v0 = small_cloth()
    w = np.random.default_rng(5).normal(size=(model.particle_count, 3))
    param = getattr(getattr(model, group), name)
    values = param.numpy().copy()

    def rollout():
        s0 = model.state()
        s0.particle_qd.assign(v0)
        states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s0, 40, 1e-3)
        return states[-1].particle_q

    with sk.Tape() as tape:
        loss = position_loss(rollout(), w)
    tape.backward(loss=loss)
    grad = param.grad.numpy().copy()

    def loss_at_values():
        param.assign(values)
        return position_loss(rollout(), w).numpy()[0]

    eps = 1e-6 * np.abs(values).max()
    fd = np.array([central_difference(loss_at_values, values, k, eps) for k in range(len(values))])
    assert np.abs(fd).max() > 1e-8
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-4 * np.abs(fd).max())
