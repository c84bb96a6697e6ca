"""Articulations in generalized coordinates: the builder's articulations and coordinate layout,
forward and inverse kinematics (against analytic poses, each other and central differences),
the mass matrix and bias forces against analytic pendulums and the kinetic energy, and free
joints in the maximal-coordinate integrators. MuJoCo comparisons: test_articulation_mujoco.py."""

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.structs import JOINT_BALL, JOINT_FREE
from simkit.sim import geometry as G

F64 = sk.float64
IDENTITY = (0.0, 0.0, 0.0, 1.0)


def pendulum(length=0.8, radius=0.1, density=1000.0):
    """A sphere of ``radius`` hanging ``length`` below a hinge about z at (0, 1, 0), y up."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_articulation()
    bob = b.add_body(((0.0, 1.0, 0.0), IDENTITY))
    b.add_shape_sphere((0.0, -length, 0.0), radius, body=bob, density=density)
    b.add_joint_revolute(-1, bob, axis=(0.0, 0.0, 1.0))
    return b


def floating_chain():
    """A free box, a ball-jointed capsule, a slider, a hinged box and a link on a universal joint:
    every kind with coordinates."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_articulation()
    base = b.add_body(((0.2, 1.5, -0.1), (0.1, 0.2, 0.3, 0.9)))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.2, 0.1, 0.15), body=base)
    b.add_joint_free(-1, base)
    arm = b.add_body(((0.2, 1.0, 0.0), IDENTITY))
    b.add_shape_capsule((0.0, -0.2, 0.0), IDENTITY, 0.05, 0.2, body=arm)
    b.add_joint_ball(base, arm, child_xform=((0.0, 0.1, 0.0), IDENTITY))
    slider = b.add_body(((0.2, 0.6, 0.0), (0.0, 0.0, 0.38268343, 0.92387953)))
    b.add_shape_sphere((0.05, 0.0, 0.0), 0.05, body=slider)
    b.add_joint_prismatic(arm, slider, axis=(0.0, 1.0, 0.3))
    link = b.add_body(((0.3, 0.4, 0.0), IDENTITY))
    b.add_shape_box((0.0, -0.1, 0.0), IDENTITY, (0.03, 0.1, 0.03), body=link)
    b.add_joint_revolute(slider, link, child_xform=((0.0, 0.05, 0.0), IDENTITY), axis=(1.0, 0.0, 1.0))
    tip = b.add_body(((0.3, 0.2, 0.0), (0.0, 0.3826834, 0.0, 0.9238795)))
    b.add_shape_box((0.0, -0.05, 0.0), IDENTITY, (0.02, 0.05, 0.03), body=tip)
    b.add_joint_universal(link, tip, axis=(1.0, 0.0, 1.0), axis2=(0.0, 1.0, 0.0))
    return b


def random_coordinates(model, rng, spread=1.0):
    kinds = model.joints.kind.numpy()
    qs = model.joint_q_start.numpy()
    q = rng.uniform(-spread, spread, model.joint_coord_count)
    for j, kind in enumerate(kinds):
        if kind in (JOINT_BALL, JOINT_FREE):
            k = qs[j] + (3 if kind == JOINT_FREE else 0)
            r = rng.normal(size=4)
            r[3] = abs(r[3]) + 1.0      # away from w = 0, where inverse kinematics flips the sign
            q[k:k + 4] = r / np.linalg.norm(r)
    return q, rng.normal(size=model.joint_dof_count)


def fk(model, q, qd):
    state = model.state()
    sk.sim.eval_fk(model, sk.array(q, dtype=model.dtype), sk.array(qd, dtype=model.dtype), state)
    return state.body_q.numpy(), state.body_qd.numpy()


# -- builder and model -------------------------------------------------------------------------
def test_joint_coordinates_are_laid_out_by_kind():
    model = floating_chain().finalize(dtype=F64)
    assert model.joint_q_start.numpy().tolist() == [0, 7, 11, 12, 13, 15]
    assert model.joint_qd_start.numpy().tolist() == [0, 6, 9, 10, 11, 13]
    assert (model.joint_coord_count, model.joint_dof_count, model.articulation_count) == (15, 13, 1)
    assert model.body_joint.numpy().tolist() == [0, 1, 2, 3, 4]
    assert model.articulation_dofs(0) == (0, 13) and model.articulation_coords(0) == (0, 15)


def test_initial_coordinates_are_those_of_the_bodies_as_built():
    # the free base's coordinates are its pose; the other joints start where their bodies are
    b = floating_chain()
    b.body_qd[0] = np.array([0.1, 0.2, 0.3, 1.0, 2.0, 3.0])
    model = b.finalize(dtype=F64)
    q, qd = model.joint_q.numpy(), model.joint_qd.numpy()
    r = np.array([0.1, 0.2, 0.3, 0.9]) / np.linalg.norm([0.1, 0.2, 0.3, 0.9])
    np.testing.assert_allclose(q[:7], np.concatenate([[0.2, 1.5, -0.1], r]), atol=1e-15)
    np.testing.assert_allclose(q[7:], [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0], atol=1e-15)
    # the base's origin velocity: that of its center of mass (its origin, the box's center)
    np.testing.assert_allclose(qd[:6], [1.0, 2.0, 3.0, 0.1, 0.2, 0.3], atol=1e-15)


def test_initial_coordinates_are_what_inverse_kinematics_gives_for_the_built_state(rng):
    # the builder's coordinates (numpy, over all joints at once) and the eval_ik kernel agree
    b = floating_chain()
    for body in range(b.body_count):
        b.body_qd[body] = rng.normal(size=6)
    b.end_articulation()
    b.add_joint_revolute(0, 3, axis=(0.0, 1.0, 0.0))       # outside the articulation, and violated
    model = b.finalize(dtype=F64)
    q, qd = sk.zeros_like(model.joint_q), sk.zeros_like(model.joint_qd)
    sk.sim.eval_ik(model, model.state(), q, qd)
    np.testing.assert_allclose(q.numpy(), model.joint_q.numpy(), atol=1e-14)
    np.testing.assert_allclose(qd.numpy(), model.joint_qd.numpy(), atol=1e-14)


def test_joints_outside_articulations_have_coordinates_and_no_articulation():
    b = sk.sim.ModelBuilder(ground=False)
    loose = b.add_body(((0.0, 1.0, 0.0), IDENTITY))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=loose)
    b.add_joint_revolute(-1, loose)
    b.add_articulation()
    b.add_joint_ball(-1, b.add_body())
    model = b.finalize()
    assert model.joint_articulation.numpy().tolist() == [-1, 0]
    assert model.body_joint.numpy().tolist() == [-1, 1]
    assert model.articulation_joints(0) == (1, 2) and model.articulation_dofs(0) == (1, 4)


def test_a_joint_whose_parent_is_outside_the_articulation_is_refused():
    b = sk.sim.ModelBuilder()
    outside = b.add_body()
    b.add_articulation()
    with pytest.raises(ValueError, match=r"add_joint_revolute: in articulation 0, parent must be -1 \(the world\) "
                                         r"or the child of an earlier joint of the articulation, got body 0"):
        b.add_joint_revolute(outside, b.add_body())
    assert b.joint_count == 0


def test_a_body_with_two_parent_joints_in_articulations_is_refused():
    b = sk.sim.ModelBuilder()
    b.add_articulation()
    body = b.add_body()
    b.add_joint_free(-1, body)
    b.add_articulation()
    with pytest.raises(ValueError, match="add_joint_ball: body 0 is already the child of joint 0 of articulation 0"):
        b.add_joint_ball(-1, body)


def test_worlds_copy_articulations_with_their_joints():
    world = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    for k in range(3):
        world.add_builder(floating_chain(), xform=((k * 2.0, 0.0, 0.0), IDENTITY))
    world.add_joint_fixed(-1, 0)      # after add_builder: in no articulation
    model = world.finalize(dtype=F64)
    assert model.articulation_count == 3
    assert [model.articulation_joints(a) for a in range(3)] == [(0, 5), (5, 10), (10, 15)]
    assert model.joint_articulation.numpy().tolist() == [0] * 5 + [1] * 5 + [2] * 5 + [-1]
    # the placement moves the joint frames attached to the world: every copy has the same
    # coordinates, its bodies are where the placement put them
    q = model.joint_q.numpy()
    np.testing.assert_allclose(q[15:30], q[0:15], atol=1e-15)
    body_q, _ = fk(model, q, model.joint_qd.numpy())
    np.testing.assert_allclose(body_q[5:10, :3] - body_q[0:5, :3], [[2.0, 0.0, 0.0]] * 5, atol=1e-12)
    np.testing.assert_allclose(body_q, model.body_q.numpy(), atol=1e-12)


# -- kinematics ----------------------------------------------------------------------------------
def test_forward_kinematics_of_a_pendulum_is_the_analytic_pose_and_velocity():
    length, theta, omega = 0.8, 0.7, -1.3
    model = pendulum(length).finalize(dtype=F64)
    body_q, body_qd = fk(model, [theta], [omega])
    r = body_q[0, 3:]
    np.testing.assert_allclose(body_q[0, :3], [0.0, 1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(G.quat_rotate(r, [0.0, -length, 0.0]), length * np.array([np.sin(theta),
                                                                                         -np.cos(theta), 0.0]))
    np.testing.assert_allclose(body_qd[0], [0.0, 0.0, omega, omega * length * np.cos(theta),
                                            omega * length * np.sin(theta), 0.0], atol=1e-15)


def test_forward_kinematics_of_the_built_coordinates_gives_the_built_bodies():
    model = floating_chain().finalize(dtype=F64)
    body_q, body_qd = fk(model, model.joint_q.numpy(), model.joint_qd.numpy())
    np.testing.assert_allclose(body_q, model.body_q.numpy(), atol=1e-15)
    np.testing.assert_allclose(body_qd, 0.0, atol=1e-15)


def test_inverse_kinematics_inverts_forward_kinematics(device, rng):
    model = floating_chain().finalize(dtype=F64)
    q, qd = random_coordinates(model, rng)
    state = model.state()
    sk.sim.eval_fk(model, sk.array(q, dtype=F64), sk.array(qd, dtype=F64), state)
    q2, qd2 = sk.zeros_like(model.joint_q), sk.zeros_like(model.joint_qd)
    sk.sim.eval_ik(model, state, q2, qd2)
    np.testing.assert_allclose(q2.numpy(), q, atol=1e-12)
    np.testing.assert_allclose(qd2.numpy(), qd, atol=1e-12)


def test_forward_kinematics_reads_quaternion_coordinates_normalized(rng):
    model = floating_chain().finalize(dtype=F64)
    q, qd = random_coordinates(model, rng)
    scaled = q.copy()
    scaled[3:7] *= 3.0
    scaled[7:11] *= 0.2
    for a, b in zip(fk(model, q, qd), fk(model, scaled, qd)):
        np.testing.assert_allclose(a, b, atol=1e-14)


def test_forward_kinematics_leaves_bodies_outside_articulations_as_they_are():
    b = sk.sim.ModelBuilder(ground=False)
    loose = b.add_body(((0.0, 2.0, 0.0), IDENTITY))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=loose)
    b.add_articulation()
    link = b.add_body()
    b.add_shape_sphere((0.0, -0.5, 0.0), 0.1, body=link)
    b.add_joint_revolute(-1, link)
    model = b.finalize(dtype=F64)
    body_q, _ = fk(model, [0.5], [0.0])
    np.testing.assert_array_equal(body_q[0], model.body_q.numpy()[0])


def _seeded_gradients(model, run, inputs, outputs, seeds):
    with sk.Tape() as tape:
        run()
    tape.backward(grads=dict(zip(outputs, seeds)))
    return [x.grad.numpy().copy() for x in inputs]


def test_forward_kinematics_gradients_match_central_differences(rng):
    model = floating_chain().finalize(dtype=F64)
    q0, qd0 = random_coordinates(model, rng)
    w_q = rng.normal(size=(model.body_count, 7))
    w_qd = rng.normal(size=(model.body_count, 6))

    def loss(q, qd):
        body_q, body_qd = fk(model, q, qd)
        return float(np.sum(w_q * body_q) + np.sum(w_qd * body_qd))

    q, qd = sk.array(q0, dtype=F64, requires_grad=True), sk.array(qd0, dtype=F64, requires_grad=True)
    state = model.state()
    g_q, g_qd = _seeded_gradients(model, lambda: sk.sim.eval_fk(model, q, qd, state), [q, qd],
                                  [state.body_q, state.body_qd], [w_q, w_qd])
    eps = 1e-6
    for values, grad, which in ((q0, g_q, 0), (qd0, g_qd, 1)):
        fd = np.zeros_like(values)
        for k in range(values.size):
            up, down = values.copy(), values.copy()
            up[k] += eps
            down[k] -= eps
            args_up = (up, qd0) if which == 0 else (q0, up)
            args_down = (down, qd0) if which == 0 else (q0, down)
            fd[k] = (loss(*args_up) - loss(*args_down)) / (2.0 * eps)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


def test_inverse_kinematics_gradients_match_central_differences(rng):
    model = floating_chain().finalize(dtype=F64)
    q0, qd0 = random_coordinates(model, rng, spread=0.5)
    body_q0, body_qd0 = fk(model, q0, qd0)
    w_q = rng.normal(size=model.joint_coord_count)
    w_qd = rng.normal(size=model.joint_dof_count)

    def loss(body_q, body_qd):
        state = model.state()
        state.body_q.assign(body_q)
        state.body_qd.assign(body_qd)
        q, qd = sk.zeros_like(model.joint_q), sk.zeros_like(model.joint_qd)
        sk.sim.eval_ik(model, state, q, qd)
        return float(w_q @ q.numpy() + w_qd @ qd.numpy())

    state = model.state(requires_grad=True)
    state.body_q.assign(body_q0)
    state.body_qd.assign(body_qd0)
    q, qd = sk.zeros_like(model.joint_q), sk.zeros_like(model.joint_qd)
    g_q, g_qd = _seeded_gradients(model, lambda: sk.sim.eval_ik(model, state, q, qd),
                                  [state.body_q, state.body_qd], [q, qd], [w_q, w_qd])
    eps = 1e-6
    for values, grad, which in ((body_q0, g_q, 0), (body_qd0, g_qd, 1)):
        fd = np.zeros_like(values)
        for k in np.ndindex(values.shape):
            up, down = values.copy(), values.copy()
            up[k] += eps
            down[k] -= eps
            fd[k] = ((loss(up, body_qd0) - loss(down, body_qd0)) if which == 0 else
                     (loss(body_q0, up) - loss(body_q0, down))) / (2.0 * eps)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


def test_kinematics_refuse_coordinates_of_the_wrong_size_or_type():
    model = floating_chain().finalize(dtype=F64)
    state = model.state()
    with pytest.raises(ValueError, match=r"eval_fk: joint_q must be a 1-d float64 array of 15 values \(as "
                                         r"model.joint_q\), got dtype float64, shape \(12,\)"):
        sk.sim.eval_fk(model, sk.zeros(12, dtype=F64), model.joint_qd, state)
    with pytest.raises(ValueError, match="eval_ik: joint_qd must be a 1-d float64 array of 13 values"):
        sk.sim.eval_ik(model, state, model.joint_q, sk.zeros(13, dtype=sk.float32))
    with pytest.raises(TypeError, match="eval_fk: joint_qd must be an sk array, got ndarray"):
        sk.sim.eval_fk(model, model.joint_q, np.zeros(13), state)


# -- dynamics ------------------------------------------------------------------------------------
def test_mass_matrix_of_a_pendulum_is_its_moment_of_inertia_about_the_hinge():
    length, radius = 0.8, 0.1
    model = pendulum(length, radius).finalize(dtype=F64)
    m = 1000.0 * 4.0 / 3.0 * np.pi * radius ** 3
    M = sk.sim.mass_matrix(model, np.array([0.4]))
    np.testing.assert_allclose(M, [[m * length ** 2 + 0.4 * m * radius ** 2]], rtol=1e-12)


def test_bias_force_of_a_pendulum_is_the_gravity_torque():
    # M theta'' + C = 0 with C = m g L sin(theta): no velocity term for one hinge
    length = 0.8
    model = pendulum(length).finalize(dtype=F64)
    m = float(model.bodies.mass.numpy()[0])
    for theta, omega in ((0.4, 0.0), (-1.1, 2.5)):
        np.testing.assert_allclose(sk.sim.bias_forces(model, [theta], [omega]), [m * 9.81 * length * np.sin(theta)],
                                   rtol=1e-12)


def test_mass_matrix_gives_the_kinetic_energy_of_the_bodies(rng):
    model = floating_chain().finalize(dtype=F64)
    q, qd = random_coordinates(model, rng)
    body_q, body_qd = fk(model, q, qd)
    energy = 0.0
    for b in range(model.body_count):
        R = G.quat_to_matrix(body_q[b, 3:])
        inertia = R @ model.bodies.inertia.numpy()[b] @ R.T
        w, v = body_qd[b, :3], body_qd[b, 3:]
        energy += 0.5 * model.bodies.mass.numpy()[b] * v @ v + 0.5 * w @ inertia @ w
    M = sk.sim.mass_matrix(model, q)
    np.testing.assert_allclose(M, M.T, atol=1e-14)
    np.testing.assert_allclose(0.5 * qd @ M @ qd, energy, rtol=1e-12)


def test_mass_matrix_blocks_follow_articulations():
    world = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    world.add_builder(pendulum())
    world.add_builder(floating_chain())
    model = world.finalize(dtype=F64)
    M = sk.sim.mass_matrix(model, model.joint_q)
    assert M.shape == (14, 14)
    np.testing.assert_array_equal(M[:1, 1:], 0.0)
    np.testing.assert_array_equal(sk.sim.mass_matrix(model, model.joint_q, articulation=1), M[1:, 1:])
    with pytest.raises(ValueError, match=r"mass_matrix: articulation must be an int in \[0, 2\), got 2"):
        sk.sim.mass_matrix(model, model.joint_q, articulation=2)
    with pytest.raises(ValueError, match=r"bias_forces: joint_qd must hold 14 numbers .* got shape \(3,\)"):
        sk.sim.bias_forces(model, model.joint_q, np.zeros(3))


def _coordinate_rates(model, q, qd):
    """dq/dt: the rates themselves, but for quaternions dr/dt = (w, 0) r / 2 (w in the parent's frame)."""
    out = np.zeros_like(q)
    qs, ds = model.joint_q_start.numpy(), model.joint_qd_start.numpy()
    for j, kind in enumerate(model.joints.kind.numpy()):
        a, b = qs[j], ds[j]
        if kind in (JOINT_BALL, JOINT_FREE):
            if kind == JOINT_FREE:
                out[a:a + 3] = qd[b:b + 3]
                a, b = a + 3, b + 3
            out[a:a + 4] = 0.5 * G.quat_multiply(np.concatenate([qd[b:b + 3], [0.0]]), q[a:a + 4])
        else:
            out[a:qs[j + 1]] = qd[b:ds[j + 1]]
    return out


def _energy(model, q, qd):
    body_q, _ = fk(model, q, qd)
    com = body_q[:, :3] + np.stack([G.quat_rotate(r, c) for r, c in zip(body_q[:, 3:], model.bodies.com.numpy())])
    g = np.array([model.gravity[k] for k in range(3)])
    return 0.5 * qd @ sk.sim.mass_matrix(model, q) @ qd - model.bodies.mass.numpy() @ (com @ g)


def test_mass_matrix_and_bias_forces_conserve_the_energy_of_a_free_motion(rng):
    # qdd = -M^-1 C integrated by RK4 (numpy): energy is conserved to the integrator's error only
    # if C holds exactly the Coriolis and gravity terms that belong to M
    model = floating_chain().finalize(dtype=F64)
    q, qd = random_coordinates(model, rng)
    qd *= 3.0

    def rates(state):
        x, v = state[:model.joint_coord_count], state[model.joint_coord_count:]
        acc = np.linalg.solve(sk.sim.mass_matrix(model, x), -sk.sim.bias_forces(model, x, v))
        return np.concatenate([_coordinate_rates(model, x, v), acc])

    state, dt = np.concatenate([q, qd]), 1e-3
    e0 = _energy(model, q, qd)
    for _step in range(300):
        k1 = rates(state)
        k2 = rates(state + 0.5 * dt * k1)
        k3 = rates(state + 0.5 * dt * k2)
        k4 = rates(state + dt * k3)
        state = state + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    e1 = _energy(model, state[:model.joint_coord_count], state[model.joint_coord_count:])
    scale = 0.5 * qd @ sk.sim.mass_matrix(model, q) @ qd
    assert abs(e1 - e0) < 1e-8 * scale


def test_small_swings_of_a_pendulum_have_the_period_of_its_mass_matrix_and_gravity():
    # M(0) theta'' = -dC/dtheta(0) theta: omega^2 = m g L / I about the hinge (analytic)
    length, radius = 0.8, 0.1
    model = pendulum(length, radius).finalize(dtype=F64)
    m = float(model.bodies.mass.numpy()[0])
    eps = 1e-6
    stiffness = (sk.sim.bias_forces(model, [eps], [0.0])[0] - sk.sim.bias_forces(model, [-eps], [0.0])[0]) / (2 * eps)
    omega2 = stiffness / sk.sim.mass_matrix(model, [0.0])[0, 0]
    np.testing.assert_allclose(omega2, m * 9.81 * length / (m * length ** 2 + 0.4 * m * radius ** 2), rtol=1e-8)


def test_a_free_body_falls_with_gravity_and_keeps_its_spin_rate_about_a_principal_axis():
    # a free box spinning about a principal axis: no angular acceleration, the origin (its
    # center of mass) accelerates with g; a force along x adds F / m
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_articulation()
    box = b.add_body(((0.0, 1.0, 0.0), (0.0, 0.0, 0.3826834, 0.9238795)), angular_velocity=(0.0, 0.0, 4.0))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.2, 0.3), body=box)
    b.add_joint_free(-1, box)
    model = b.finalize(dtype=F64)
    m = float(model.bodies.mass.numpy()[0])
    tau = np.array([2.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    qdd = sk.sim.joint_accelerations(model, model.joint_q, model.joint_qd, tau)
    np.testing.assert_allclose(qdd, [2.0 / m, -9.81, 0.0, 0.0, 0.0, 0.0], atol=1e-12)
    with pytest.raises(ValueError, match=r"joint_accelerations: joint_tau must hold 6 numbers .* got shape \(3,\)"):
        sk.sim.joint_accelerations(model, model.joint_q, model.joint_qd, np.zeros(3))


def test_float32_kinematics_agree_with_float64(rng):
    m64 = floating_chain().finalize(dtype=F64)
    m32 = floating_chain().finalize(dtype=sk.float32)
    q, qd = random_coordinates(m64, rng)
    for a, b in zip(fk(m32, q, qd), fk(m64, q, qd)):
        np.testing.assert_allclose(a, b, atol=1e-5)
    state = m32.state()
    sk.sim.eval_fk(m32, sk.array(q, dtype=sk.float32), sk.array(qd, dtype=sk.float32), state)
    q2, qd2 = sk.zeros_like(m32.joint_q), sk.zeros_like(m32.joint_qd)
    sk.sim.eval_ik(m32, state, q2, qd2)
    np.testing.assert_allclose(q2.numpy(), q, atol=1e-5)
    np.testing.assert_allclose(qd2.numpy(), qd, atol=1e-4)


# -- free joints in the maximal-coordinate integrators ----------------------------------------------
@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD])
def test_a_free_joint_leaves_a_body_as_free_as_without_it(integrator):
    def run(with_joint):
        b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
        body = b.add_body(((0.5, 2.0, -0.3), (0.1, 0.0, 0.2, 0.97)), velocity=(1.0, 2.0, 0.0),
                          angular_velocity=(0.5, -1.0, 2.0))
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.2, 0.3), body=body)
        if with_joint:
            b.add_articulation()
            b.add_joint_free(-1, body)
        model = b.finalize(dtype=F64)
        states = sk.sim.simulate(model, integrator(), model.state(), steps=20, dt=1e-3, keep_states=False)
        return states[-1].body_q.numpy(), states[-1].body_qd.numpy()

    for a, b in zip(run(True), run(False)):
        np.testing.assert_array_equal(a, b)


# -- universal joints in the maximal-coordinate integrators ----------------------------------------
def universal_pendulum(kind):
    """A rod hanging from the world on a universal joint (axes x and z) or, for comparison, a
    ball joint, spun about its long axis y: the direction a universal joint blocks."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    rod = b.add_body(((0.0, 1.0, 0.0), IDENTITY), angular_velocity=(0.0, 3.0, 0.0), armature=1e-3)
    b.add_shape_box((0.0, -0.3, 0.0), IDENTITY, (0.05, 0.3, 0.05), body=rod)
    if kind == "universal":
        b.add_joint_universal(-1, rod, axis=(1.0, 0.0, 0.0), axis2=(0.0, 0.0, 1.0))
    else:
        b.add_joint_ball(-1, rod)
    return b.finalize(dtype=F64)


# the penalty of the semi-implicit integrator gives way: the spin's energy I w^2 / 2 at most
# bends it by w sqrt(I / angular_ke) = 3 sqrt(0.011 / 1e3) = 0.01 rad; XPBD's constraint is rigid
@pytest.mark.parametrize("integrator, give", [(sk.sim.SemiImplicitEuler, 0.011), (sk.sim.XPBD, 1e-3)])
def test_a_universal_joint_blocks_the_twist_a_ball_joint_lets_through(integrator, give):
    def twist(kind):
        model = universal_pendulum(kind)
        states = sk.sim.simulate(model, integrator(), model.state(), steps=400, dt=2.5e-4, keep_states=False)
        r = states[-1].body_q.numpy()[0, 3:]
        # the child's axis2 (z) against the world's axis (x): perpendicular while the joint holds
        return abs(G.quat_rotate(r, [0.0, 0.0, 1.0]) @ np.array([1.0, 0.0, 0.0])), states[-1]

    held, state = twist("universal")
    free, _ = twist("ball")
    assert free > 0.2            # 3 rad/s for 0.1 s turned the ball-jointed rod by 0.3 rad
    assert held < give
    np.testing.assert_allclose(state.body_q.numpy()[0, :3], [0.0, 1.0, 0.0], atol=1e-3)   # the anchor holds


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD])
def test_a_universal_joint_swings_freely_about_its_axes(integrator):
    # a sideways push about the first axis (x) swings the rod like a hinge about x
    def run(kind):
        b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
        rod = b.add_body(((0.0, 1.0, 0.0), IDENTITY), angular_velocity=(2.0, 0.0, 0.0), velocity=(0.0, 0.0, -0.6))
        b.add_shape_box((0.0, -0.3, 0.0), IDENTITY, (0.05, 0.3, 0.05), body=rod)
        if kind == "universal":
            b.add_joint_universal(-1, rod, axis=(1.0, 0.0, 0.0), axis2=(0.0, 0.0, 1.0))
        else:
            b.add_joint_revolute(-1, rod, axis=(1.0, 0.0, 0.0))
        model = b.finalize(dtype=F64)
        states = sk.sim.simulate(model, integrator(), model.state(), steps=400, dt=2.5e-4, keep_states=False)
        return states[-1].body_q.numpy()[0]

    np.testing.assert_allclose(run("universal"), run("revolute"), atol=1e-4)


def test_universal_axes_must_be_perpendicular():
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    with pytest.raises(ValueError, match=r"add_joint_universal: axis and axis2 must be perpendicular, got "
                                         r"\(1.0, 0.0, 0.0\) and \(1.0, 1.0, 0.0\)"):
        b.add_joint_universal(-1, body, axis=(1.0, 0.0, 0.0), axis2=(1.0, 1.0, 0.0))
