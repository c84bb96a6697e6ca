"""Rigid-body contact of the semi-implicit integrator against physics: resting contact on the
ground and on other bodies, rolling and sliding on a slope, two-way particle contact,
momentum conservation, and the pair filter of jointed bodies."""

import math

import numpy as np
import pytest

import simkit as sk
from simkit.sim import geometry as G
from simkit.kernels.shapes import collision_pairs

IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)
GRAVITY = 9.81
KE = 1.0e5          # the fixed gains these tests check (the builder's defaults are per unit mass)
DT = 1.0e-4
GAINS = dict(contact_ke=1.0e4, contact_kd=10.0, contact_kf=100.0, rigid_contact_ke=KE, rigid_contact_kd=1.0e2,
             rigid_contact_kf=1.0e2)


def builder(**kwargs):
    """A builder with fixed contact gains (those given replace them)."""
    return sk.sim.ModelBuilder(**{**GAINS, **kwargs})


def quat_about(axis, angle):
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    return tuple(np.concatenate([axis * math.sin(angle / 2.0), [math.cos(angle / 2.0)]]))


def run(model, seconds, state=None, dt=DT):
    return sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state or model.state(), int(round(seconds / dt)), dt,
                           keep_states=False)[-1]


def com(model, state, b=0) -> np.ndarray:
    X = state.body_q.numpy()[b]
    return X[:3] + G.quat_rotate(X[3:], model.bodies.com.numpy()[b])


def tilt_degrees(state, b=0) -> float:
    """Angle between the world's up axis and the nearest axis of body ``b`` (0: a face is flat)."""
    up_in_body = G.quat_to_matrix(state.body_q.numpy()[b, 3:]).T @ np.array([0.0, 1.0, 0.0])
    return math.degrees(math.acos(min(1.0, np.abs(up_in_body).max())))


def add_box(b, pos, half, mass, rot=IDENTITY_Q, **material):
    body = b.add_body(sk.transform(pos, rot))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, half, body=body, density=mass / (8.0 * np.prod(half)), **material)
    return body


def max_speed(state) -> float:
    return float(np.abs(state.body_qd.numpy()).max())


# -- ground --------------------------------------------------------------------------------

def test_dropped_box_rests_flat_with_the_penetration_of_four_corner_springs():
    b = builder()
    add_box(b, (0.0, 0.3, 0.0), (0.1, 0.1, 0.1), 1.0, rot=quat_about((0.0, 1.0, 0.0), 0.4))
    model = b.finalize(dtype=sk.float64)
    s = run(model, 1.0)
    depth = 1.0 * GRAVITY / (4.0 * KE)
    assert tilt_degrees(s) < 1.0
    assert max_speed(s) < 1e-3
    assert 0.1 - com(model, s)[1] == pytest.approx(depth, rel=0.02)


def test_box_dropped_on_a_corner_tips_over_and_rests_flat():
    b = builder()
    add_box(b, (0.0, 0.35, 0.0), (0.1, 0.1, 0.1), 1.0, rot=quat_about((1.0, 0.0, 1.0), 0.7))
    model = b.finalize()
    s0 = model.state()
    assert tilt_degrees(s0) > 30.0
    s = run(model, 1.5, s0)
    assert tilt_degrees(s) < 1.0
    assert max_speed(s) < 1e-2
    assert com(model, s)[1] == pytest.approx(0.1, abs=1e-3)


def test_capsule_dropped_tilted_comes_to_lie_flat_on_the_ground():
    r, half_height = 0.05, 0.2
    b = builder()
    body = b.add_body(sk.transform((0.0, 0.3, 0.0), quat_about((0.0, 0.0, 1.0), 1.1)))   # axis 27 deg up
    b.add_shape_capsule((0.0, 0.0, 0.0), IDENTITY_Q, r, half_height, body=body, density=1000.0)
    model = b.finalize()
    s = run(model, 1.5)
    axis = G.quat_rotate(s.body_q.numpy()[0, 3:].astype(np.float64), np.array([0.0, 1.0, 0.0]))
    assert math.degrees(math.asin(abs(axis[1]))) < 1.0
    assert com(model, s)[1] == pytest.approx(r, abs=5e-4)
    assert max_speed(s) < 1e-2


# -- slopes --------------------------------------------------------------------------------

THETA = math.radians(20.0)
SLOPE_Q = quat_about((0.0, 0.0, 1.0), THETA)
SLOPE_N = np.array([-math.sin(THETA), math.cos(THETA), 0.0])         # the slope's outward normal
DOWNHILL = np.array([-math.cos(THETA), -math.sin(THETA), 0.0])


def slope_model(add_body, mu, kf=200.0):
    """A static box whose top face is a 20 degree slope (no ground) and one body whose
    ``add_body(builder, surface_point, **material)`` puts it on the slope."""
    b = builder(ground=False)
    b.add_shape_box((0.0, 0.0, 0.0), SLOPE_Q, (3.0, 0.5, 1.0), mu=mu, kf=kf)
    add_body(b, 0.5 * SLOPE_N - 1.5 * DOWNHILL, mu=mu, kf=kf)
    return b.finalize(dtype=sk.float64)


def downhill_speeds(model, times):
    s, t, speeds = model.state(), 0.0, []
    for t_next in times:
        s = run(model, t_next - t, s)
        t = t_next
        speeds.append(s.body_qd.numpy()[0, 3:] @ DOWNHILL)
    return np.array(speeds), s


def test_sphere_rolls_down_a_slope_with_five_sevenths_of_g_sin_theta():
    r, m = 0.1, 1.0

    def sphere(b, surface, **material):
        body = b.add_body(sk.transform(tuple(surface + SLOPE_N * r), IDENTITY_Q))
        b.add_shape_sphere((0.0, 0.0, 0.0), r, body=body, density=m / (4.0 / 3.0 * math.pi * r ** 3), **material)

    model = slope_model(sphere, mu=0.5)
    v, s = downhill_speeds(model, [0.2, 0.6])
    a = (v[1] - v[0]) / 0.4
    assert a == pytest.approx(5.0 / 7.0 * GRAVITY * math.sin(THETA), rel=0.03)
    spin = s.body_qd.numpy()[0, :3]
    assert np.linalg.norm(spin) * r == pytest.approx(v[1], rel=0.03)      # rolling, not sliding


def box_on_slope(b, surface, **material):
    half = (0.1, 0.05, 0.1)
    add_box(b, tuple(surface + SLOPE_N * half[1]), half, 1.0, rot=SLOPE_Q, **material)


def test_box_on_a_slope_steeper_than_its_friction_angle_slides_with_g_sin_minus_mu_cos():
    mu = 0.2                                         # tan(20 deg) = 0.36
    v, _ = downhill_speeds(slope_model(box_on_slope, mu), [0.2, 0.6])
    a = (v[1] - v[0]) / 0.4
    assert a == pytest.approx(GRAVITY * (math.sin(THETA) - mu * math.cos(THETA)), rel=0.03)


def test_box_on_a_static_slope_within_its_friction_angle_sticks():
    # Each touching point holds on to its anchor on the slope: the box settles onto the
    # tangential springs and then stays (the old regularised friction crept at m g sin / (8 kf)).
    kf = 200.0
    v, s = downhill_speeds(slope_model(box_on_slope, mu=0.6, kf=kf), [0.3, 0.9])
    x0 = run(slope_model(box_on_slope, mu=0.6, kf=kf), 0.3).body_q.numpy()[0, :3] @ DOWNHILL
    assert abs(v[1]) < 1e-6
    assert abs(s.body_q.numpy()[0, :3] @ DOWNHILL - x0) < 1e-6


# -- body on body --------------------------------------------------------------------------

def test_sphere_dropped_on_a_box_resting_on_the_ground_stacks_and_rests():
    r = 0.05
    b = builder()
    add_box(b, (0.0, 0.1, 0.0), (0.1, 0.1, 0.1), 2.0)
    # Centered: off center, the ball tilts the compliant box and keeps rolling (no rolling resistance).
    ball = b.add_body(sk.transform((0.0, 0.45, 0.0), IDENTITY_Q))
    b.add_shape_sphere((0.0, 0.0, 0.0), r, body=ball, density=0.5 / (4.0 / 3.0 * math.pi * r ** 3))
    model = b.finalize(dtype=sk.float64)
    s = run(model, 1.0)
    assert max_speed(s) < 1e-3
    assert tilt_degrees(s, 0) < 0.5
    box_top = com(model, s, 0)[1] + 0.1
    assert com(model, s, 1)[1] - box_top == pytest.approx(r - 0.5 * GRAVITY / KE, abs=2e-5)
    assert 0.1 - com(model, s, 0)[1] == pytest.approx(2.5 * GRAVITY / (4.0 * KE), rel=0.05)


@pytest.mark.parametrize("sizes", [(0.1, 0.1, 0.1), (0.12, 0.09, 0.07)], ids=["equal", "pyramid"])
def test_stack_of_three_boxes_rests(sizes):
    b = builder()
    y, tops = 0.0, []
    for i, h in enumerate(sizes):
        y += h + 0.002
        add_box(b, (0.004 * i, y, -0.003 * i), (h, h, h), 1.0, rot=quat_about((0.0, 1.0, 0.0), 0.1 * i))
        y += h
        tops.append(y)
    model = b.finalize()
    s = run(model, 1.2)
    assert max_speed(s) < 1e-2
    for i, h in enumerate(sizes):
        assert tilt_degrees(s, i) < 0.5
        assert com(model, s, i)[1] + h == pytest.approx(tops[i] - 0.002 * (i + 1), abs=1e-3)


def test_bar_laid_across_another_bar_rests_on_it():
    # No corner of either bar is inside the other: the edge midpoints carry the contact.
    b = builder()
    add_box(b, (0.0, 0.05, 0.0), (0.5, 0.05, 0.05), 1.0)
    add_box(b, (0.0, 0.155, 0.0), (0.05, 0.05, 0.5), 1.0)
    model = b.finalize()
    s = run(model, 0.5)
    assert max_speed(s) < 1e-2
    assert com(model, s, 1)[1] == pytest.approx(0.15, abs=1e-3)
    assert tilt_degrees(s, 1) < 0.5


def test_sphere_rests_on_top_of_a_static_sphere_with_the_penetration_of_one_spring():
    b = builder(ground=False)
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.3)
    ball = b.add_body(sk.transform((0.0, 0.41, 0.0), IDENTITY_Q))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=ball, density=1.0 / (4.0 / 3.0 * math.pi * 0.1 ** 3))
    model = b.finalize(dtype=sk.float64)
    s = run(model, 1.0)
    assert max_speed(s) < 1e-4
    assert 0.4 - com(model, s)[1] == pytest.approx(1.0 * GRAVITY / KE, rel=0.02)


def test_colliding_bodies_conserve_linear_and_angular_momentum():
    b = builder(gravity=0.0, ground=False)
    a = b.add_body(sk.transform((-0.5, 0.0, 0.0), quat_about((1.0, 2.0, 0.5), 0.3)), velocity=(3.0, 0.2, 0.0),
                   angular_velocity=(0.5, 1.0, -2.0))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.15, 0.1), body=a, density=500.0)
    c = b.add_body(sk.transform((0.0, 0.05, 0.03), quat_about((0.0, 1.0, 1.0), 0.5)))
    b.add_shape_box((0.02, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.12), body=c, density=700.0)
    b.add_shape_capsule((-0.1, 0.0, 0.0), IDENTITY_Q, 0.05, 0.1, body=c, density=700.0)
    model = b.finalize(dtype=sk.float64)

    def momenta(s):
        p, L = np.zeros(3), np.zeros(3)
        for i in range(2):
            m, x = model.bodies.mass.numpy()[i], com(model, s, i)
            R = G.quat_to_matrix(s.body_q.numpy()[i, 3:])
            w, v = s.body_qd.numpy()[i, :3], s.body_qd.numpy()[i, 3:]
            p += m * v
            L += np.cross(x, m * v) + R @ model.bodies.inertia.numpy()[i] @ R.T @ w
        return p, L

    s0 = model.state()
    s = run(model, 0.3, s0)
    assert np.linalg.norm(s.body_qd.numpy()[1, 3:]) > 0.5            # they did collide
    p0, L0 = momenta(s0)
    p, L = momenta(s)
    np.testing.assert_allclose(p, p0, rtol=0, atol=1e-10 * np.linalg.norm(p0))
    np.testing.assert_allclose(L, L0, rtol=0, atol=1e-9 * np.linalg.norm(L0))


# -- particles and bodies ------------------------------------------------------------------

def test_particle_hitting_a_free_box_transfers_its_momentum():
    b = builder(gravity=0.0, ground=False)
    add_box(b, (0.0, 0.0, 0.0), (0.1, 0.1, 0.1), 1.0)
    b.add_particle((0.03, 0.3, 0.0), (0.0, -2.0, 0.0), mass=0.2, radius=0.02)
    model = b.finalize(dtype=sk.float64)
    s = run(model, 0.3)
    p_box = 1.0 * s.body_qd.numpy()[0, 3:]
    p_particle = 0.2 * s.particle_qd.numpy()[0]
    assert p_box[1] < -0.2                                        # pushed down
    np.testing.assert_allclose(p_box + p_particle, [0.0, -0.4, 0.0], atol=1e-10)
    assert s.particle_qd.numpy()[0, 1] > s.body_qd.numpy()[0, 4]   # separating after the hit


def test_particle_resting_on_a_box_resting_on_the_ground_loads_it_with_its_weight():
    m_box, m_p, r = 1.0, 0.2, 0.02
    b = builder(contact_ke=1e4)
    add_box(b, (0.0, 0.1, 0.0), (0.1, 0.1, 0.1), m_box)
    b.add_particle((0.0, 0.25, 0.0), (0.0, 0.0, 0.0), mass=m_p, radius=r)
    model = b.finalize(dtype=sk.float64)
    s = run(model, 1.0)
    assert max_speed(s) < 1e-3 and np.abs(s.particle_qd.numpy()).max() < 1e-3
    box_y = com(model, s)[1]
    assert 0.1 - box_y == pytest.approx((m_box + m_p) * GRAVITY / (4.0 * KE), rel=0.05)
    assert s.particle_q.numpy()[0, 1] - (box_y + 0.1) == pytest.approx(r - m_p * GRAVITY / 1e4, abs=1e-6)


# -- pair filter ---------------------------------------------------------------------------

def overlapping_boxes(joint: bool):
    b = builder(gravity=0.0)
    lower = add_box(b, (0.0, 0.5, 0.0), (0.1, 0.1, 0.1), 1.0)
    upper = add_box(b, (0.01, 0.695, 0.0), (0.1, 0.1, 0.1), 1.0)              # 5 mm into the lower box
    b.add_shape_box((0.0, -0.5, 0.0), IDENTITY_Q, (1.0, 0.5, 1.0))                   # static floor
    if joint:
        b.add_joint_ball(lower, upper, child_xform=sk.transform((0.0, -0.0975, 0.0), IDENTITY_Q))
        b.add_joint_revolute(-1, lower, axis=(0.0, 0.0, 1.0))
    return b.finalize()


def test_bodies_joined_by_a_joint_are_no_collision_pair():
    pairs = {tuple(p) for p in collision_pairs(overlapping_boxes(joint=True)).numpy()}
    assert pairs == {(0, 2), (2, 0), (1, 2), (2, 1)}                # each body with the floor only
    assert {(0, 1), (1, 0)} <= {tuple(p) for p in collision_pairs(overlapping_boxes(joint=False)).numpy()}


def test_jointed_bodies_without_shapes_have_no_pairs_and_step_in_xpbd():
    # a robot file whose links have inertials but no colliders: nothing to collide, no crash
    b = sk.sim.ModelBuilder(ground=False)
    link = b.add_body(sk.transform((0.0, -0.5, 0.0), IDENTITY_Q))
    b.add_body_inertia(link, 1.0, inertia=np.eye(3) * 1e-3)
    b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0), child_xform=sk.transform((0.0, 0.5, 0.0), IDENTITY_Q))
    model = b.finalize()
    assert collision_pairs(model).shape == (0, 2)
    s0, s1 = model.state(), model.state()
    sk.sim.XPBD().step(model, s0, s1, None, 1e-3)
    assert np.all(np.isfinite(s1.body_q.numpy()))


def test_overlapping_bodies_joined_by_a_joint_do_not_push_apart():
    joined, free = run(overlapping_boxes(joint=True), 0.05), run(overlapping_boxes(joint=False), 0.05)
    assert max_speed(joined) < 1e-3
    assert max_speed(free) > 1.0
