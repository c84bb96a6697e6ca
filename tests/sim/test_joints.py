"""Penalty joints of the semi-implicit integrator against physics: pendulum periods, hanging
chains, limits, sliders, welds, conical pendulums, drives, momentum conservation, gradients
against central differences, and the CUDA path of the joint kernel."""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference

G = 9.81
DENSITY = 1000.0
IDENTITY = (0.0, 0.0, 0.0, 1.0)
PIVOT = (0.0, 1.0, 0.0)
# The pendulum: a box hanging from its top face, pivoting about z.
ROD_HALF = (0.03, 0.25, 0.03)
ROD_MASS = DENSITY * 8.0 * ROD_HALF[0] * ROD_HALF[1] * ROD_HALF[2]
ROD_I_PIVOT = ROD_MASS * ((2 * ROD_HALF[0]) ** 2 + (2 * ROD_HALF[1]) ** 2) / 12.0 + ROD_MASS * ROD_HALF[1] ** 2


def z_rotation(angle):
    return (0.0, 0.0, math.sin(0.5 * angle), math.cos(0.5 * angle))


def rotate(q, v):
    """``v`` rotated by the unit quaternion ``q = (x, y, z, w)``."""
    u, w = np.asarray(q[:3], dtype=np.float64), float(q[3])
    t = 2.0 * np.cross(u, v)
    return np.asarray(v, dtype=np.float64) + w * t + np.cross(u, t)


def compose(a, b):
    """The transform ``a * b`` of two ``(p, q)`` 7-vectors."""
    u, w, v, z = np.asarray(a[3:6]), a[6], np.asarray(b[3:6]), b[6]
    q = np.concatenate([w * v + z * u + np.cross(u, v), [w * z - u @ v]])
    return np.concatenate([a[:3] + rotate(a[3:], b[:3]), q])


def hinge_angle(X):
    """The angle about z of a body whose joint frames are unrotated."""
    return 2.0 * math.atan2(X[5], X[6])


def joint_errors(model, state):
    """Distance between the two joint-frame origins of every joint."""
    X = state.body_q.numpy()
    J = model.joints
    parents, children = J.parent.numpy(), J.child.numpy()
    errors = []
    for px, cx, p, c in zip(J.parent_xform.numpy(), J.child_xform.numpy(), parents, children):
        xp = px if p < 0 else compose(X[p], px)
        errors.append(np.linalg.norm(compose(X[c], cx)[:3] - xp[:3]))
    return np.array(errors)


def run(model, steps, dt, control=None, record=None):
    """Step ``model`` from its initial state; ``record(state)`` after every step. Returns
    the final state and the list of records."""
    integrator = sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()
    records = []
    for _ in range(steps):
        integrator.step(model, a, b, control, dt)
        a, b = b, a
        if record is not None:
            records.append(record(a))
    return a, records


def pendulum(angle, gravity=-G, dtype=sk.float64, requires_grad=False, angular_velocity=0.0, **joint):
    """The box rod hanging from PIVOT by a revolute joint about z, turned by ``angle``."""
    b = sk.sim.ModelBuilder(gravity=gravity, up_axis="y", ground=False)
    link = b.add_body(sk.transform(PIVOT, z_rotation(angle)), angular_velocity=(0.0, 0.0, angular_velocity),
                      velocity=(ROD_HALF[1] * angular_velocity * math.cos(angle),
                                ROD_HALF[1] * angular_velocity * math.sin(angle), 0.0))
    b.add_shape_box((0.0, -ROD_HALF[1], 0.0), IDENTITY, ROD_HALF, body=link, density=DENSITY)
    b.add_joint_revolute(-1, link, parent_xform=sk.transform(PIVOT, IDENTITY), axis=(0.0, 0.0, 1.0), **joint)
    return b.finalize(dtype=dtype, requires_grad=requires_grad)


def test_revolute_pendulum_small_angle_period_matches_compound_pendulum():
    dt = 5e-4
    model = pendulum(0.05)
    _, angles = run(model, 6000, dt, record=lambda s: hinge_angle(s.body_q.numpy()[0]))
    angles = np.array(angles)
    k = np.nonzero(np.sign(angles[1:]) != np.sign(angles[:-1]))[0]
    crossings = (k + 1 + angles[k] / (angles[k] - angles[k + 1])) * dt
    period = 2.0 * np.mean(np.diff(crossings))
    expected = 2.0 * math.pi * math.sqrt(ROD_I_PIVOT / (ROD_MASS * G * ROD_HALF[1]))
    assert len(crossings) >= 4
    assert period == pytest.approx(expected, rel=0.01)


def test_five_link_chain_hangs_straight_with_joint_error_of_its_load():
    # Released at rest with unloaded joints: the joints stretch, ring down (linear_kd above
    # the default, so that the chain's slowest stretch mode settles within a second) and hold the load.
    half, spacing, n = (0.02, 0.09, 0.02), 0.2, 5
    mass = DENSITY * 8.0 * half[0] * half[1] * half[2]
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    parent = -1
    for i in range(n):
        link = b.add_body(sk.transform((0.0, 2.0 - spacing * i, 0.0), IDENTITY))
        b.add_shape_box((0.0, -0.5 * spacing, 0.0), IDENTITY, half, body=link, density=DENSITY)
        b.add_joint_revolute(parent, link, axis=(0.0, 0.0, 1.0), linear_kd=50.0)
        parent = link
    model = b.finalize(dtype=sk.float64)
    state, _ = run(model, 5000, 2e-4)
    X = state.body_q.numpy()
    errors = joint_errors(model, state)
    # each joint stretches by the weight it carries over the linear stiffness
    load = (n - np.arange(n)) * mass * G / model.joints.linear_ke.numpy()
    assert errors.max() < 1e-3
    np.testing.assert_allclose(errors, load, rtol=0.01)
    np.testing.assert_allclose(X[:, 1], 2.0 - spacing * np.arange(n) - np.cumsum(load), rtol=0, atol=1e-6)
    assert np.abs(X[:, [0, 2, 3, 4, 5]]).max() < 1e-9
    assert np.abs(state.body_qd.numpy()).max() < 1e-4


def test_revolute_limits_hold_the_angle_against_gravity():
    # Two pendulums fall towards the hanging position: one onto its lower limit, one onto its upper.
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    bounds = [(0.3, 1.0), (-1.0, -0.3)]
    for x, (lower, upper), start in zip((0.0, 2.0), bounds, (0.4, -0.4)):
        link = b.add_body(sk.transform((x, 1.0, 0.0), z_rotation(start)))
        b.add_shape_box((0.0, -ROD_HALF[1], 0.0), IDENTITY, ROD_HALF, body=link, density=DENSITY)
        b.add_joint_revolute(-1, link, parent_xform=sk.transform((x, 1.0, 0.0), IDENTITY), axis=(0.0, 0.0, 1.0),
                             limit_lower=lower, limit_upper=upper)
    model = b.finalize(dtype=sk.float64)
    _, angles = run(model, 3000, 5e-4, record=lambda s: [hinge_angle(x) for x in s.body_q.numpy()])
    angles = np.array(angles)
    limit_ke = model.joints.limit_ke.numpy()[0]
    # the impact speed from the energy drop, times the limit's time scale, bounds the overshoot
    speed = math.sqrt(2.0 * ROD_MASS * G * ROD_HALF[1] * (math.cos(0.3) - math.cos(0.4)) / ROD_I_PIVOT)
    overshoot = speed * math.sqrt(ROD_I_PIVOT / limit_ke)
    assert angles[:, 0].min() > 0.3 - overshoot
    assert angles[:, 1].max() < -0.3 + overshoot
    rest = ROD_MASS * G * ROD_HALF[1] * math.sin(0.3) / limit_ke
    assert angles[-1, 0] == pytest.approx(0.3 - rest, abs=2e-4)
    assert angles[-1, 1] == pytest.approx(-0.3 + rest, abs=2e-4)


def test_prismatic_slider_slides_down_its_axis_at_projected_gravity_and_stops_at_its_limit():
    alpha, upper, dt = math.radians(30.0), 0.3, 2e-4
    axis = np.array([math.cos(alpha), -math.sin(alpha), 0.0])
    mass = DENSITY * 0.1 ** 3
    limit_ke = 1e4
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    cart = b.add_body(sk.transform(PIVOT, IDENTITY))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.05, 0.05, 0.05), body=cart, density=DENSITY)
    b.add_joint_prismatic(-1, cart, axis=tuple(axis), limit_lower=-0.1, limit_upper=upper, limit_ke=limit_ke,
                          limit_kd=2.0 * math.sqrt(limit_ke * mass))
    model = b.finalize(dtype=sk.float64)
    _, slide = run(model, 5000, dt, record=lambda s: float((s.body_q.numpy()[0, :3] - PIVOT) @ axis))
    slide = np.array(slide)
    t = 1000 * dt
    assert 2.0 * slide[999] / t ** 2 == pytest.approx(G * math.sin(alpha), rel=0.005)
    assert slide.max() < upper + 0.01
    rest = mass * G * math.sin(alpha) / limit_ke
    assert slide[-1] == pytest.approx(upper + rest, abs=1e-4)


def test_fixed_joint_welds_a_cantilever_with_the_penalty_deflection_of_its_weight():
    # A rod welded to the world at one end sags by (weight torque) / angular_ke.
    angular_ke = 1e3
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    rod = b.add_body(sk.transform(PIVOT, IDENTITY))
    half = (ROD_HALF[1], ROD_HALF[0], ROD_HALF[2])
    b.add_shape_box((half[0], 0.0, 0.0), IDENTITY, half, body=rod, density=DENSITY)
    b.add_joint_fixed(-1, rod, angular_ke=angular_ke, angular_kd=2.0)
    model = b.finalize(dtype=sk.float64)
    _, poses = run(model, 6000, 2e-4, record=lambda s: s.body_q.numpy()[0].copy())
    poses = np.array(poses)
    sag = 2.0 * np.arcsin(np.linalg.norm(poses[:, 3:6], axis=1))
    static = ROD_MASS * G * half[0] / angular_ke
    assert sag.max() < 2.0 * static
    assert sag[-1] == pytest.approx(static, rel=0.02)
    assert poses[-1, 5] < 0.0    # it sags downwards (negative turn about z)
    assert np.linalg.norm(poses[:, :3] - PIVOT, axis=1).max() < 1e-3


def test_revolute_joint_holds_its_axis_against_a_tilting_load_with_the_penalty_deflection():
    # A rod along the hinge axis: gravity tilts the axis by (weight torque) / angular_ke, not the angle.
    angular_ke = 1e3
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    rod = b.add_body(sk.transform(PIVOT, IDENTITY))
    half = (ROD_HALF[0], ROD_HALF[2], ROD_HALF[1])
    b.add_shape_box((0.0, 0.0, half[2]), IDENTITY, half, body=rod, density=DENSITY)
    b.add_joint_revolute(-1, rod, axis=(0.0, 0.0, 1.0), angular_ke=angular_ke, angular_kd=2.0)
    model = b.finalize(dtype=sk.float64)
    state, _ = run(model, 6000, 2e-4)
    X = state.body_q.numpy()[0]
    tilt = 2.0 * math.asin(np.linalg.norm(X[3:6]))
    assert tilt == pytest.approx(ROD_MASS * G * half[2] / angular_ke, rel=0.02)
    assert X[3] > 0.0    # the free end drops: a positive turn about x
    assert abs(hinge_angle(X)) < 1e-9


def test_ball_joint_conical_pendulum_circles_at_the_conical_rate_keeping_the_anchor():
    length, cone, radius = 0.5, 0.3, 0.05
    rate = math.sqrt(G / (length * math.cos(cone)))
    start = np.array(PIVOT) + length * np.array([math.sin(cone), -math.cos(cone), 0.0])
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    bob = b.add_body(sk.transform(tuple(start), IDENTITY), velocity=(0.0, 0.0, -rate * length * math.sin(cone)),
                     angular_velocity=(0.0, rate, 0.0))
    b.add_shape_sphere((0.0, 0.0, 0.0), radius, body=bob, density=DENSITY)
    b.add_joint_ball(-1, bob, child_xform=sk.transform(tuple(np.array(PIVOT) - start), IDENTITY))
    model = b.finalize(dtype=sk.float64)
    dt, steps = 2e-4, 10000
    final, centers = run(model, steps, dt, record=lambda s: s.body_q.numpy()[0, :3].copy())
    r = np.array(centers) - PIVOT
    horizontal = np.hypot(r[:, 0], r[:, 2])
    assert np.abs(horizontal / (length * math.sin(cone)) - 1.0).max() < 2e-3
    assert np.abs(r[:, 1] + length * math.cos(cone)).max() < 1e-3
    azimuth = np.unwrap(np.arctan2(-r[:, 2], r[:, 0]))
    assert azimuth[-1] > 2.0 * math.pi
    assert azimuth[-1] == pytest.approx(rate * steps * dt, rel=1e-3)
    assert joint_errors(model, final).max() < 1e-3


def test_revolute_drive_settles_at_the_joint_target():
    target_ke = 20.0
    model = pendulum(0.0, gravity=0.0, target_ke=target_ke, target_kd=2.0 * math.sqrt(target_ke * ROD_I_PIVOT))
    control = model.control()
    control.joint_target.assign(np.array([0.7]))
    state, _ = run(model, 3000, 5e-4, control)
    assert hinge_angle(state.body_q.numpy()[0]) == pytest.approx(0.7, abs=1e-3)
    assert np.abs(state.body_qd.numpy()[0]).max() < 1e-2


@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_joint_act_accelerates_at_act_over_inertia(kind):
    act, t, dt = 0.3, 0.5, 5e-4
    steps = round(t / dt)
    if kind == "revolute":
        model = pendulum(0.0, gravity=0.0)
        inertia = ROD_I_PIVOT

        def coordinate(s):
            return hinge_angle(s.body_q.numpy()[0])
    else:
        b = sk.sim.ModelBuilder(gravity=0.0, up_axis="y", ground=False)
        cart = b.add_body(sk.transform(PIVOT, IDENTITY))
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.05, 0.05, 0.05), body=cart, density=DENSITY)
        b.add_joint_prismatic(-1, cart, axis=(1.0, 0.0, 0.0))
        model = b.finalize(dtype=sk.float64)
        inertia = DENSITY * 0.1 ** 3

        def coordinate(s):
            return s.body_q.numpy()[0, 0]
    control = model.control()
    control.joint_act.assign(np.array([act]))
    state, _ = run(model, steps, dt, control)
    assert coordinate(state) == pytest.approx(0.5 * act / inertia * t ** 2, rel=2e-3)


def momenta(model, state):
    """Total linear momentum and angular momentum about the world origin."""
    X, V = state.body_q.numpy(), state.body_qd.numpy()
    mass, inertia, com = model.bodies.mass.numpy(), model.bodies.inertia.numpy(), model.bodies.com.numpy()
    P, L = np.zeros(3), np.zeros(3)
    for x, v, m, I, c in zip(X, V, mass, inertia, com):
        R = np.stack([rotate(x[3:], e) for e in np.eye(3)], axis=1)
        centre = x[:3] + R @ c
        P += m * v[3:]
        L += R @ I @ R.T @ v[:3] + m * np.cross(centre, v[3:])
    return P, L


@pytest.mark.parametrize("kind", ["revolute", "prismatic", "ball", "fixed"])
def test_joint_forces_conserve_momentum_of_a_free_pair(kind):
    b = sk.sim.ModelBuilder(gravity=0.0, up_axis="y", ground=False)
    tilt = (0.1, 0.2, 0.0, math.sqrt(1.0 - 0.05))
    a = b.add_body(sk.transform((0.0, 0.0, 0.0), IDENTITY), velocity=(0.3, -0.2, 0.1),
                   angular_velocity=(0.5, 1.0, -0.4))
    c = b.add_body(sk.transform((0.3, 0.1, 0.0), tilt), velocity=(-0.4, 0.5, 0.2), angular_velocity=(-1.0, 0.3, 0.8))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.05, 0.04), body=a, density=DENSITY)
    b.add_shape_capsule((0.05, 0.0, 0.0), IDENTITY, 0.04, 0.1, body=c, density=DENSITY)
    # the child's joint frame starts off the parent's, turned by tilt: the joint starts loaded
    joint = dict(parent_xform=sk.transform((0.15, 0.05, 0.0), IDENTITY),
                 child_xform=sk.transform((-0.15, -0.05, 0.0), tilt))
    drive = dict(limit_lower=-0.05, limit_upper=0.05, target_ke=5.0, target_kd=0.1)
    if kind == "revolute":
        b.add_joint_revolute(a, c, axis=(0.3, 0.4, 0.87), **joint, **drive)
    elif kind == "prismatic":
        b.add_joint_prismatic(a, c, axis=(0.3, 0.4, 0.87), **joint, **drive)
    elif kind == "ball":
        b.add_joint_ball(a, c, **joint)
    else:
        b.add_joint_fixed(a, c, **joint)
    model = b.finalize(dtype=sk.float64)
    control = model.control()
    control.joint_target.assign(np.array([0.2]))
    control.joint_act.assign(np.array([0.5]))
    P0, L0 = momenta(model, model.state())
    state, errors = run(model, 2000, 2e-4, control, record=lambda s: joint_errors(model, s)[0])
    P1, L1 = momenta(model, state)
    assert max(errors) > 1e-4    # the joint worked: its penalty was loaded
    np.testing.assert_allclose(P1, P0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(L1, L0, rtol=0, atol=1e-12)


# -- gradients ---------------------------------------------------------------------------

@sk.kernel
def weighted_points64(q: sk.array(dtype=sk.transformd), local: sk.array(dtype=sk.vec3d),
                      w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(sk.transform_point(q[i], local[i]), w[i]))


def gradient_scene(kind):
    """A short, float64, gradient-tracked scene that exercises one joint kind."""
    if kind == "revolute":
        return pendulum(0.3, requires_grad=True, target_ke=2.0, target_kd=0.1)
    if kind == "revolute-limit":
        # resting on its upper limit for the whole rollout
        return pendulum(-0.04999, requires_grad=True, limit_lower=-1.0, limit_upper=-0.05)
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="y", ground=False)
    first = b.add_body(sk.transform(PIVOT, z_rotation(0.2)), velocity=(0.2, 0.0, -0.1),
                       angular_velocity=(0.3, -0.5, 0.8))
    b.add_shape_box((0.0, -0.1, 0.0), IDENTITY, (0.04, 0.09, 0.05), body=first, density=DENSITY)
    second = b.add_body(sk.transform((0.1, 0.7, 0.05), (0.1, 0.0, 0.2, math.sqrt(0.95))),
                        velocity=(-0.1, 0.2, 0.3), angular_velocity=(0.6, 0.2, -0.4))
    b.add_shape_capsule((0.0, -0.1, 0.0), IDENTITY, 0.04, 0.06, body=second, density=DENSITY)
    if kind == "prismatic":
        b.add_joint_prismatic(-1, first, axis=(0.8, -0.6, 0.0), target_ke=50.0, target_kd=1.0)
        b.add_joint_fixed(first, second)
    elif kind == "ball":
        b.add_joint_ball(-1, first)
        b.add_joint_ball(first, second, child_xform=sk.transform((-0.05, 0.1, 0.0), IDENTITY))
    else:
        b.add_joint_fixed(-1, first)
        b.add_joint_fixed(first, second)
    return b.finalize(dtype=sk.float64, requires_grad=True)


STEPS, DT = 40, 5e-4


def rollout_loss(model, state, control):
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, STEPS, DT, control=control)
    n = model.body_count
    w = np.array([[0.7, -1.0, 0.4], [0.2, 0.9, -0.6]])[:n]
    loss = sk.zeros(1, dtype=sk.float64)
    sk.launch(weighted_points64, n, inputs=[states[-1].body_q, model.bodies.com,
                                            sk.array(w, dtype=sk.vec3d), loss])
    return loss


@pytest.mark.parametrize("kind", ["revolute", "revolute-limit", "prismatic", "ball", "fixed"])
def test_gradient_wrt_initial_body_velocity_matches_finite_differences(kind):
    model = gradient_scene(kind)
    control = model.control()
    control.joint_target.assign(np.full(model.joint_count, 0.1))
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = rollout_loss(model, s0, control)
    tape.backward(loss=loss)
    grad = s0.body_qd.grad.numpy()
    qd = s0.body_qd.numpy()
    assert np.abs(grad).max() > 1e-3
    for entry in [(0, 2), (0, 3), (0, 1), (model.body_count - 1, 4)]:
        fd = central_difference(lambda: float(rollout_loss(model, s0, control).numpy()[0]), qd, entry, 1e-5)
        assert grad[entry] == pytest.approx(fd, rel=1e-5, abs=1e-10)


@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_gradient_wrt_joint_target_matches_finite_differences(kind):
    model = gradient_scene(kind)
    control = model.control()
    control.joint_target.assign(np.full(model.joint_count, 0.1))
    control.joint_target.requires_grad = True
    with sk.Tape() as tape:
        loss = rollout_loss(model, model.state(), control)
    tape.backward(loss=loss)
    grad = control.joint_target.grad.numpy()[0]
    fd = central_difference(lambda: float(rollout_loss(model, model.state(), control).numpy()[0]),
                            control.joint_target.numpy(), 0, 1e-5)
    assert abs(fd) > 1e-4
    assert grad == pytest.approx(fd, rel=1e-5)


@pytest.mark.parametrize("kind, field", [("revolute", "target_ke"), ("revolute-limit", "limit_ke"),
                                         ("ball", "linear_ke"), ("fixed", "angular_ke"), ("prismatic", "target_kd")])
def test_gradient_wrt_a_joint_gain_matches_finite_differences(kind, field):
    model = gradient_scene(kind)
    control = model.control()
    control.joint_target.assign(np.full(model.joint_count, 0.1))
    with sk.Tape() as tape:
        loss = rollout_loss(model, model.state(), control)
    tape.backward(loss=loss)
    gain = getattr(model.joints, field)
    grad = gain.grad.numpy()[0]
    values = gain.numpy()
    fd = central_difference(lambda: float(rollout_loss(model, model.state(), control).numpy()[0]), values, 0,
                            1e-5 * values[0])
    assert abs(fd) * values[0] > 1e-6
    assert grad == pytest.approx(fd, rel=1e-5)


def damped_spinner(kind, kd, where, rate, requires_grad=False):
    """A 10 cm cube jointed to the world at its center (so the joint's penalties stay
    unloaded) and moving along its joint at ``rate``, damped by ``kd`` as a drive's
    ``target_kd`` or, beyond its limit, as ``limit_kd``. Returns the model and the cube's
    inertia about the axis (its mass for a slider)."""
    b = sk.sim.ModelBuilder(gravity=0.0, up_axis="y", ground=False)
    axis = np.array([0.0, 0.0, 1.0])
    angular, linear = (axis * rate, (0.0, 0.0, 0.0)) if kind == "revolute" else ((0.0, 0.0, 0.0), axis * rate)
    cube = b.add_body(sk.transform(PIVOT, IDENTITY), angular_velocity=angular, velocity=linear)
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.05, 0.05, 0.05), body=cube, density=DENSITY)
    gains = {"target_kd": kd} if where == "drive" else {"limit_lower": -2.0, "limit_upper": -1.0, "limit_ke": 0.0,
                                                        "limit_kd": kd}
    add = b.add_joint_revolute if kind == "revolute" else b.add_joint_prismatic
    add(-1, cube, axis=tuple(axis), **gains)
    mass = DENSITY * 0.1 ** 3
    return b.finalize(dtype=sk.float64, requires_grad=requires_grad), (mass * 0.1 ** 2 / 6.0 if kind == "revolute"
                                                                       else mass)


def along_axis_rate(kind, state):
    return state.body_qd.numpy()[0, 2 if kind == "revolute" else 5]


@pytest.mark.parametrize("where", ["drive", "limit"])
@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_a_joint_damper_stiffer_than_the_step_slows_the_rate_without_reversing_it(kind, where):
    # kd dt / inertia = 5: an explicit damper would multiply the rate by -4 each step; the
    # implicit one divides it by 1 + 5, exactly, as backward Euler does.
    dt, steps = 1e-3, 6
    inertia = damped_spinner(kind, 1.0, where, 0.5)[1]
    model, _ = damped_spinner(kind, 5.0 * inertia / dt, where, 0.5)
    rates = []
    run(model, steps, dt, record=lambda s: rates.append(along_axis_rate(kind, s)))
    np.testing.assert_allclose(rates, 0.5 / 6.0 ** np.arange(1, steps + 1), rtol=1e-12)


@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_a_joint_damper_decays_the_rate_exponentially_at_kd_over_inertia(kind):
    inertia = damped_spinner(kind, 1.0, "drive", 0.5)[1]
    model, _ = damped_spinner(kind, 2.0 * inertia, "drive", 0.5)           # time constant 0.5 s
    state, _ = run(model, 2000, 5e-4)
    # backward Euler's error in the exponent is about (kd dt / inertia) / 2 per unit of kd t / inertia
    assert along_axis_rate(kind, state) == pytest.approx(0.5 * math.exp(-2.0), rel=2e-3)


@pytest.mark.parametrize("where", ["drive", "limit"])
@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_gradient_of_the_rate_wrt_an_implicit_damper_matches_its_closed_form(kind, where):
    # rate_n = rate_0 / (1 + kd dt / inertia)^n, so d rate_n / d kd = -n (dt / inertia) rate_n / (1 + kd dt / inertia)
    dt, steps, rate = 1e-3, 4, 0.5
    inertia = damped_spinner(kind, 1.0, where, rate)[1]
    kd = 3.0 * inertia / dt
    model, _ = damped_spinner(kind, kd, where, rate, requires_grad=True)
    with sk.Tape() as tape:
        states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(requires_grad=True), steps, dt)
    seed = np.zeros((1, 6))
    seed[0, 2 if kind == "revolute" else 5] = 1.0
    tape.backward(grads={states[-1].body_qd: seed})
    gains = model.joints.target_kd if where == "drive" else model.joints.limit_kd
    d = kd * dt / inertia
    expected = -steps * (dt / inertia) * rate / (1.0 + d) ** (steps + 1)
    assert gains.grad.numpy()[0] == pytest.approx(expected, rel=1e-10)
