"""Free rigid bodies: mass properties from shapes, ballistic flight, torque-free rotation,
kinematic bodies, and the builder's error messages for bodies, shapes and joints."""

import math

import numpy as np
import pytest

import simkit as sk
from simkit.sim import geometry as G

IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)


def one_body(add_shape, dtype=sk.float64, **body):
    """A model with one body (at the origin unless ``origin`` is given) carrying the shape
    ``add_shape(builder, body)`` adds, no ground."""
    b = sk.sim.ModelBuilder(ground=False)
    i = b.add_body(body.pop("origin", None), **body)
    add_shape(b, i)
    return b.finalize(dtype=dtype)


def world_com(model, state) -> np.ndarray:
    X = state.body_q.numpy()[0]
    return X[:3] + G.quat_rotate(X[3:], model.bodies.com.numpy()[0])


def world_angular_momentum(model, state) -> np.ndarray:
    X = state.body_q.numpy()[0]
    R = G.quat_to_matrix(X[3:])
    return R @ model.bodies.inertia.numpy()[0] @ R.T @ state.body_qd.numpy()[0, :3]


def run(model, steps, dt, state=None):
    return sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state or model.state(), steps, dt,
                           keep_states=False)[-1]


# -- mass properties -----------------------------------------------------------------------

def test_sphere_mass_and_inertia_match_the_solid_sphere_formulas():
    r, rho = 0.3, 700.0
    model = one_body(lambda b, i: b.add_shape_sphere((0.0, 0.0, 0.0), r, body=i, density=rho))
    m = rho * 4.0 / 3.0 * math.pi * r ** 3
    assert model.bodies.mass.numpy()[0] == pytest.approx(m, rel=1e-12)
    assert model.bodies.inv_mass.numpy()[0] == pytest.approx(1.0 / m, rel=1e-12)
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], np.eye(3) * 0.4 * m * r * r, rtol=1e-12)
    np.testing.assert_allclose(model.bodies.com.numpy()[0], 0.0, atol=1e-15)


def test_box_mass_and_inertia_match_the_solid_cuboid_formulas():
    a, b_, c, rho = 0.4, 0.2, 0.1, 500.0   # full edge lengths 2a, 2b, 2c
    model = one_body(lambda b, i: b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (a, b_, c), body=i, density=rho))
    m = rho * (2 * a) * (2 * b_) * (2 * c)
    expected = np.diag([(2 * b_) ** 2 + (2 * c) ** 2, (2 * a) ** 2 + (2 * c) ** 2, (2 * a) ** 2 + (2 * b_) ** 2])
    assert model.bodies.mass.numpy()[0] == pytest.approx(m, rel=1e-12)
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], expected * m / 12.0, rtol=1e-12)
    inv = model.bodies.inv_inertia.numpy()[0]
    np.testing.assert_allclose(inv @ model.bodies.inertia.numpy()[0], np.eye(3), atol=1e-12)


def test_capsule_mass_and_inertia_match_a_quadrature_of_its_disks():
    # A solid of revolution about y: integrate thin disks of radius rho(y) along the axis.
    r, h, density = 0.1, 0.25, 900.0
    model = one_body(lambda b, i: b.add_shape_capsule((0.0, 0.0, 0.0), IDENTITY_Q, r, h, body=i, density=density))
    y = np.linspace(-h - r, h + r, 400001)
    rho2 = np.where(np.abs(y) <= h, r * r, np.clip(r * r - (np.abs(y) - h) ** 2, 0.0, None))
    dm = density * math.pi * rho2
    mass = np.trapezoid(dm, y)
    axial = np.trapezoid(0.5 * dm * rho2, y)
    transverse = np.trapezoid(dm * (0.25 * rho2 + y * y), y)
    assert model.bodies.mass.numpy()[0] == pytest.approx(mass, rel=1e-8)
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], np.diag([transverse, axial, transverse]), rtol=1e-7)


def test_two_shape_body_has_the_combined_center_of_mass_and_parallel_axis_inertia():
    b = sk.sim.ModelBuilder(ground=False)
    body = b.add_body()
    angle = 0.6
    rot = (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2))        # box turned about z
    b.add_shape_sphere((0.5, 0.1, 0.0), 0.2, body=body, density=1000.0)
    b.add_shape_box((-0.2, 0.0, 0.1), rot, (0.3, 0.1, 0.2), body=body, density=400.0)
    model = b.finalize(dtype=sk.float64)

    m_s = 1000.0 * 4.0 / 3.0 * math.pi * 0.2 ** 3
    m_b = 400.0 * 0.6 * 0.2 * 0.4
    c_s, c_b = np.array([0.5, 0.1, 0.0]), np.array([-0.2, 0.0, 0.1])
    com = (m_s * c_s + m_b * c_b) / (m_s + m_b)
    R = np.array([[math.cos(angle), -math.sin(angle), 0.0], [math.sin(angle), math.cos(angle), 0.0], [0, 0, 1]])
    I_box = R @ np.diag([0.2 ** 2 + 0.4 ** 2, 0.6 ** 2 + 0.4 ** 2, 0.6 ** 2 + 0.2 ** 2]) @ R.T * m_b / 12.0
    I_sph = np.eye(3) * 0.4 * m_s * 0.2 ** 2

    def shifted(inertia, m, d):
        return inertia + m * (d @ d * np.eye(3) - np.outer(d, d))

    expected = shifted(I_sph, m_s, c_s - com) + shifted(I_box, m_b, c_b - com)
    assert model.bodies.mass.numpy()[0] == pytest.approx(m_s + m_b, rel=1e-12)
    np.testing.assert_allclose(model.bodies.com.numpy()[0], com, rtol=1e-12)
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], expected, rtol=1e-12, atol=1e-15)


def test_armature_adds_to_the_diagonal_of_the_inertia():
    def box(b, i):
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=i)

    plain, padded = one_body(box), one_body(box, armature=0.05)
    np.testing.assert_allclose(padded.bodies.inertia.numpy()[0] - plain.bodies.inertia.numpy()[0],
                               np.eye(3) * 0.05, atol=1e-15)


# -- free motion ---------------------------------------------------------------------------

def test_center_of_mass_follows_the_projectile_parabola():
    # Off-center shape and a spin: the COM still flies the parabola. Symplectic Euler
    # (v += g dt, then x += v dt) lands exactly on x0 + v0 t + g t (t + dt) / 2.
    origin = sk.transform((0.1, 2.0, -0.3), (0.0, 0.0, math.sin(0.2), math.cos(0.2)))
    model = one_body(lambda b, i: b.add_shape_box((0.2, -0.1, 0.05), IDENTITY_Q, (0.1, 0.2, 0.3), body=i),
                     origin=origin, velocity=(1.5, 4.0, -0.7), angular_velocity=(3.0, -1.0, 2.0))
    s0 = model.state()
    x0 = world_com(model, s0)
    dt, steps = 1e-3, 800
    s = run(model, steps, dt, s0)
    t = steps * dt
    g = np.array([0.0, -9.81, 0.0])
    expected = x0 + np.array([1.5, 4.0, -0.7]) * t + 0.5 * g * t * (t + dt)
    np.testing.assert_allclose(world_com(model, s), expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(s.body_qd.numpy()[0, 3:], np.array([1.5, 4.0, -0.7]) + g * t, atol=1e-11)


@pytest.fixture(scope="module")
def tumbling_box():
    """An asymmetric box spinning about a non-principal axis for 2 s, no gravity:
    (model, initial state, final state, quaternion norms along the way)."""
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    body = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.1, 0.2, 0.3, 0.9)), angular_velocity=(2.0, 5.0, -3.0))
    b.add_shape_box((0.05, 0.0, -0.02), IDENTITY_Q, (0.3, 0.15, 0.06), body=body, density=800.0)
    model = b.finalize(dtype=sk.float64)
    s0 = model.state()
    s, norms = s0, []
    for _ in range(20):
        s = run(model, 100, 1e-3, s)
        norms.append(np.linalg.norm(s.body_q.numpy()[0, 3:]))
    return model, s0, s, np.array(norms)


def test_torque_free_body_conserves_world_angular_momentum(tumbling_box):
    model, s0, s, _ = tumbling_box
    L0, L = world_angular_momentum(model, s0), world_angular_momentum(model, s)
    w0, w = s0.body_qd.numpy()[0, :3], s.body_qd.numpy()[0, :3]
    assert np.linalg.norm(w - w0) > 1.0           # the angular velocity did precess
    assert np.linalg.norm(L - L0) < 5e-3 * np.linalg.norm(L0)


def test_torque_free_body_keeps_its_rotational_energy(tumbling_box):
    model, s0, s, _ = tumbling_box
    e0 = 0.5 * s0.body_qd.numpy()[0, :3] @ world_angular_momentum(model, s0)
    e = 0.5 * s.body_qd.numpy()[0, :3] @ world_angular_momentum(model, s)
    assert e == pytest.approx(e0, rel=0.03)


def test_quaternion_stays_normalized(tumbling_box):
    _, _, _, norms = tumbling_box
    np.testing.assert_allclose(norms, 1.0, atol=1e-12)


def test_torque_free_body_keeps_its_center_of_mass_at_rest(tumbling_box):
    model, s0, s, _ = tumbling_box
    np.testing.assert_allclose(world_com(model, s), world_com(model, s0), atol=1e-12)


def test_massless_body_is_kinematic_and_keeps_its_velocity():
    b = sk.sim.ModelBuilder(ground=True)
    body = b.add_body(sk.transform((0.0, 0.05, 0.0), IDENTITY_Q), velocity=(0.5, -0.2, 0.0),
                      angular_velocity=(0.0, 1.0, 0.0))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=body, density=0.0)
    model = b.finalize(dtype=sk.float64)
    assert model.bodies.mass.numpy()[0] == 0.0 and model.bodies.inv_mass.numpy()[0] == 0.0
    s = run(model, 500, 1e-3)      # through the ground: gravity and contact do not move it
    np.testing.assert_allclose(s.body_qd.numpy()[0], [0.0, 1.0, 0.0, 0.5, -0.2, 0.0], atol=1e-14)
    np.testing.assert_allclose(s.body_q.numpy()[0, :3], [0.25, 0.05 - 0.1, 0.0], atol=1e-12)


# -- builder errors ------------------------------------------------------------------------

def builder_with_body():
    b = sk.sim.ModelBuilder()
    b.add_body()
    return b


@pytest.mark.parametrize("call, pattern", [
    (lambda b: b.add_shape_box((0, 0, 0), IDENTITY_Q, (0.1, 0.1, 0.1), body=3),
     r"add_shape_box: body=3 is out of range: the builder has 1 bodies"),
    (lambda b: b.add_shape_sphere((0, 0, 0), 0.1, body=-2), r"add_shape_sphere: body=-2 is out of range"),
    (lambda b: b.add_shape_capsule((0, 0, 0), IDENTITY_Q, 0.1, 0.2, body=0, density=-5.0),
     r"add_shape_capsule: density must be a finite number >= 0, got -5.0"),
    (lambda b: b.add_shape_sphere((0, 0, 0), 0.1, body=0, mu=-0.1), r"add_shape_sphere: mu must be .*-0.1"),
    (lambda b: b.add_body(origin=(1.0, 2.0, 3.0, 4.0, 5.0)),
     r"add_body: origin expects a transform .*got \(1.0, 2.0, 3.0, 4.0, 5.0\)"),
    (lambda b: b.add_body(origin=sk.transform((0.0, float("nan"), 0.0), IDENTITY_Q)),
     r"add_body: origin expects 3 finite numbers"),
    (lambda b: b.add_body(armature=-1.0), r"add_body: armature must be a finite number >= 0, got -1.0"),
    (lambda b: b.add_joint_revolute(0, 0), r"add_joint_revolute: parent and child must differ, got body 0"),
    (lambda b: b.add_joint_ball(-1, 4), r"add_joint_ball: child=4 is out of range: the builder has 1 bodies"),
    (lambda b: b.add_joint_fixed(2, 0), r"add_joint_fixed: parent=2 is out of range"),
    (lambda b: b.add_joint_prismatic(-1, 0, limit_lower=0.5, limit_upper=-0.5),
     r"add_joint_prismatic: limit_lower must be <= limit_upper, got 0.5 > -0.5"),
])
def test_builder_rejects_bad_rigid_arguments_naming_method_and_value(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(builder_with_body())


def test_builder_rejects_a_non_integer_body_index():
    with pytest.raises(TypeError, match=r"add_shape_box: body must be an int, got float"):
        builder_with_body().add_shape_box((0, 0, 0), IDENTITY_Q, (0.1, 0.1, 0.1), body=0.0)
