"""Cloth triangles against body shapes (simkit/kernels/cloth_shape_contact.py): a sphere much
smaller than a cell, pressed into the middle of a cell of a pinned sheet, and a box dropped
edge first between its vertices are held by the cloth in both integrators, where with the
vertices' contact alone they fall through; the penalty on a triangle is ``ke`` times the
depth, shared by the closest point's barycentric weights (numpy closed form); the forces and
torques of cloth and body sum to zero; rollout gradients through the contact match central
differences (float64).
"""

import numpy as np
import pytest

import simkit as sk

from sim_helpers import position_loss

F64 = sk.float64
FLAT = (-0.7071068, 0.0, 0.0, 0.7071068)    # the cloth grid's local x-y plane turned onto x-z
HEIGHT = 0.5
CELL = 0.1
CENTER = (0.15, HEIGHT, -0.15)              # the middle of the middle cell of a 3 x 3 sheet
RADIUS = 2e-3                               # the cloth's thickness (its particles' radius)
INTEGRATORS = [(sk.sim.SemiImplicitEuler(), 1e-4), (sk.sim.XPBD(iterations=4), 1e-3)]
IDS = ["semi_implicit", "xpbd"]


def pinned_sheet(triangles=True, gravity=-9.81, **contact):
    """A builder with a 3 x 3 sheet of 10 cm cells at height 0.5 m pinned on all its borders, 1 g
    particles, no ground; ``triangles=False`` leaves only its vertices touching shapes."""
    b = sk.sim.ModelBuilder(gravity=gravity, ground=False, **({"contact_ke": 1e3, "contact_kd": 1.0,
                                                                "contact_kf": 1.0} | contact))
    b.add_cloth_grid((0.0, HEIGHT, 0.0), FLAT, (0.0, 0.0, 0.0), 3, 3, CELL, CELL, mass=1e-3, fix_left=True,
                     fix_right=True, fix_top=True, fix_bottom=True, radius=RADIUS)
    b.set_cloth_shape_contact(triangles)
    return b


def _drop(model, integrator, dt, seconds):
    s0, s1 = model.state(), model.state()
    for _ in range(int(round(seconds / dt))):
        integrator.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0


def _middle_cell_height(state) -> float:
    """The mean height of the four corners of the middle cell."""
    q = state.particle_q.numpy()
    near = (np.abs(q[:, 0] - CENTER[0]) < CELL) & (np.abs(q[:, 2] - CENTER[2]) < CELL)
    return float(q[near, 1].mean())


def small_sphere(triangles=True, dtype=F64):
    """A 1 cm sphere (a tenth of the cell), 4 g, 3 cm above the middle of the sheet's middle cell,
    moving down at 0.5 m/s."""
    b = pinned_sheet(triangles)
    body = b.add_body(sk.transform((CENTER[0], HEIGHT + 0.03, CENTER[2]), (0.0, 0.0, 0.0, 1.0)),
                      velocity=(0.0, -0.5, 0.0))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.01, body=body)
    return b.finalize(dtype=dtype)


def box_edge_down(triangles=True, dtype=F64):
    """A 6 x 2 x 2 cm box, 12 g, turned 45 degrees about its long axis (x) so that an edge points
    down, 2 cm above the middle cell: the edge lies between the cell's corners."""
    b = pinned_sheet(triangles)
    body = b.add_body(sk.transform((CENTER[0], HEIGHT + 0.03, CENTER[2]), (0.3826834, 0.0, 0.0, 0.9238795)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.03, 0.01, 0.01), body=body, density=500.0)
    return b.finalize(dtype=dtype)


@pytest.mark.parametrize("integrator, dt", INTEGRATORS, ids=IDS)
def test_small_sphere_pressed_into_a_cell_is_stopped_by_the_cloth(integrator, dt):
    state = _drop(small_sphere(), integrator, dt, 0.2)
    y = state.body_q.numpy()[0][1]
    # above the cell it was pressed into, within its radius and the cloth's thickness
    assert y - _middle_cell_height(state) > 0.5 * 0.01
    assert y > HEIGHT - 0.05


@pytest.mark.parametrize("integrator, dt", INTEGRATORS, ids=IDS)
def test_small_sphere_passes_between_the_vertices_without_triangle_contact(integrator, dt):
    state = _drop(small_sphere(triangles=False), integrator, dt, 0.2)
    assert state.body_q.numpy()[0][1] < HEIGHT - 0.2


@pytest.mark.parametrize("integrator, dt", INTEGRATORS, ids=IDS)
def test_box_dropped_edge_first_is_held_by_the_sheet(integrator, dt):
    state = _drop(box_edge_down(), integrator, dt, 0.3)
    y = state.body_q.numpy()[0][1]
    # the lowest edge is 0.01 * sqrt(2) below the box's center
    assert y - _middle_cell_height(state) > 0.01
    assert y > HEIGHT - 0.05


def test_box_dropped_edge_first_falls_through_without_triangle_contact():
    state = _drop(box_edge_down(triangles=False), sk.sim.XPBD(iterations=4), 1e-3, 0.3)
    assert state.body_q.numpy()[0][1] < HEIGHT - 0.2


def _forces(model, state):
    state.clear_forces()
    sk.sim.forces.eval_contact_forces(model, state)
    return state.particle_f.numpy().astype(np.float64), state.body_f.numpy().astype(np.float64)


def _point_segment(p, a, b):
    e = b - a
    t = np.clip(np.dot(p - a, e) / np.dot(e, e), 0.0, 1.0)
    return np.linalg.norm(p - (a + t * e))


def _barycentric(p, a, b, c):
    """The weights of p (in the plane of a, b, c) in that triangle: least squares with the
    weights summing to 1."""
    return np.linalg.lstsq(np.vstack([np.stack([a, b, c], axis=1), np.ones(3)]), np.append(p, 1.0), rcond=None)[0]


def _point_triangle(p, a, b, c):
    """The distance from p to triangle abc: the plane's foot where it falls inside, else the
    nearest side (numpy, independent of the kernels)."""
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n)
    foot = p - np.dot(p - a, n) * n
    w = _barycentric(foot, a, b, c)
    if (w >= 0.0).all():
        return abs(np.dot(p - a, n))
    return min(_point_segment(p, a, b), _point_segment(p, b, c), _point_segment(p, c, a))


def test_penalty_on_a_triangle_is_ke_times_the_depth_at_the_closest_point():
    ke, r, depth = 1e3, 0.01, 1.5e-3
    b = pinned_sheet(gravity=0.0, contact_ke=ke, contact_kd=0.0, contact_kf=0.0)
    # over a point inside the first triangle of the middle cell, away from its sides
    x, z = 0.125, -0.17
    body = b.add_body(sk.transform((x, HEIGHT + r + RADIUS - depth, z), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), r, body=body)
    model = b.finalize(dtype=F64)
    state = model.state()
    f, wrench = _forces(model, state)
    touched = np.flatnonzero(np.abs(f).max(axis=1) > 0.0)
    assert len(touched) == 3
    a, b_, c = model.particle_q.numpy()[touched]
    center = state.body_q.numpy()[0][:3]
    # the sphere's foot on the triangle's plane and its barycentric weights (numpy)
    n = np.cross(b_ - a, c - a)
    n /= np.linalg.norm(n)
    height = abs(np.dot(center - a, n))
    foot = center - np.dot(center - a, n) * n
    w = _barycentric(foot, a, b_, c)
    assert (w > 0.0).all() and w.sum() == pytest.approx(1.0, abs=1e-12)
    push = ke * (r + RADIUS - height)
    assert f[touched] == pytest.approx(-push * np.outer(w, n) * np.sign(np.dot(center - a, n)), rel=1e-9, abs=1e-12)
    assert wrench[0, 3:] == pytest.approx(-f[touched].sum(axis=0), rel=1e-12)
    assert push == pytest.approx(ke * depth, rel=1e-4)


def _rotate(quat, v):
    """``v`` turned by the unit quaternion ``quat`` (x, y, z, w), in numpy."""
    u, w = np.asarray(quat[:3]), quat[3]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


@pytest.mark.parametrize("shape", ["sphere", "capsule", "box"])
def test_forces_and_torques_on_cloth_and_body_sum_to_zero(shape):
    b = pinned_sheet(gravity=0.0)
    rot = np.array([0.1, 0.2, 0.3, 0.927])
    body = b.add_body(sk.transform((0.14, HEIGHT + 0.009, -0.16), tuple(rot / np.linalg.norm(rot))),
                      velocity=(0.1, -0.2, 0.05))
    if shape == "sphere":
        b.add_shape_sphere((0.0, 0.0, 0.0), 0.01, body=body)
    elif shape == "capsule":
        b.add_shape_capsule((0.0, 0.0, 0.0), (0.0, 0.0, 0.7071068, 0.7071068), 0.008, 0.04, body=body)
    else:
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.04, 0.012, 0.02), body=body)
    model = b.finalize(dtype=F64)
    state = model.state()
    qd = np.random.default_rng(1).normal(scale=0.05, size=(model.particle_count, 3))
    state.particle_qd.assign(qd)
    f, wrench = _forces(model, state)
    assert np.abs(f).max() > 1e-3                       # the shape touches the cloth
    assert np.abs(f.sum(axis=0) + wrench[0, 3:]).max() < 1e-12 * np.abs(f).max() + 1e-14
    # at rest there is no friction, whose lever (the cloth's thickness) turns the pair
    state.particle_qd.zero_()
    state.body_qd.zero_()
    f, wrench = _forces(model, state)
    X = state.body_q.numpy()[0]
    com = X[:3] + _rotate(X[3:], model.bodies.com.numpy()[0])
    torque = np.cross(state.particle_q.numpy(), f).sum(axis=0) + wrench[0, :3] + np.cross(com, wrench[0, 3:])
    assert np.abs(f.sum(axis=0) + wrench[0, 3:]).max() < 1e-12 * np.abs(f).max() + 1e-14
    assert np.abs(torque).max() < 1e-11 * np.abs(f).max()


def _rollout(model, velocity, w, integrator, dt, steps):
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    qd = states[0].body_qd.numpy()
    qd[0, 3:] = velocity
    states[0].body_qd.assign(qd)
    for k in range(steps):
        integrator.step(model, states[k], states[k + 1], None, dt)
    return states, position_loss(states[-1].particle_q, w)


@pytest.mark.parametrize("integrator, dt", INTEGRATORS, ids=IDS)
def test_rollout_gradient_through_triangle_contact_matches_central_differences(integrator, dt):
    b = pinned_sheet()
    body = b.add_body(sk.transform((0.14, HEIGHT + 0.01 + RADIUS - 1e-3, -0.16), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.01, body=body)
    model = b.finalize(dtype=F64, requires_grad=True)
    w = np.random.default_rng(2).normal(size=(model.particle_count, 3))
    v0 = np.array([0.05, -0.3, 0.02])
    steps = 10 if isinstance(integrator, sk.sim.SemiImplicitEuler) else 4
    tape = sk.Tape()
    with tape:
        states, loss = _rollout(model, v0, w, integrator, dt, steps)
    tape.backward(loss=loss)
    grad = states[0].body_qd.grad.numpy()[0, 3:].copy()
    assert np.abs(grad).max() > 1e-6                    # the sphere pushes the cloth
    eps = 1e-6
    for c in range(3):
        up, down = v0.copy(), v0.copy()
        up[c] += eps
        down[c] -= eps
        fd = (_rollout(model, up, w, integrator, dt, steps)[1].numpy()[0]
              - _rollout(model, down, w, integrator, dt, steps)[1].numpy()[0]) / (2 * eps)
        assert grad[c] == pytest.approx(fd, rel=1e-5, abs=1e-9), c


def test_set_cloth_shape_contact_refuses_a_non_bool():
    b = sk.sim.ModelBuilder()
    with pytest.raises(TypeError, match="set_cloth_shape_contact: enabled must be a bool, got str"):
        b.set_cloth_shape_contact("yes")


def draped_on_a_moving_sphere(dtype=F64, requires_grad=True):
    """A free 4 x 4 sheet of 3 cm cells lying on a kinematic 3 cm sphere (no density: it keeps its
    velocity) whose top is under the middle of a cell, with gravity and no ground."""
    b = sk.sim.ModelBuilder(ground=False, contact_ke=1e3, contact_kd=1.0, contact_kf=1.0)
    b.add_cloth_grid((-0.06, 0.0, 0.06), FLAT, (0.0, 0.0, 0.0), 4, 4, 0.03, 0.03, mass=1e-3, radius=RADIUS,
                     k_mu=100.0, k_lambda=100.0, edge_ke=1e-3)
    body = b.add_body(sk.transform((0.015, -0.03 - RADIUS + 5e-4, -0.015), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.03, body=body, density=0.0)
    return b.finalize(dtype=dtype, requires_grad=requires_grad)


@pytest.mark.parametrize("integrator, dt", INTEGRATORS, ids=IDS)
def test_gradient_of_cloth_draped_on_a_moving_sphere_matches_central_differences(integrator, dt):
    model = draped_on_a_moving_sphere()
    w = np.random.default_rng(4).normal(size=(model.particle_count, 3))
    v0 = np.array([0.2, 0.3, -0.1])
    steps = 30 if isinstance(integrator, sk.sim.SemiImplicitEuler) else 5
    tape = sk.Tape()
    with tape:
        states, loss = _rollout(model, v0, w, integrator, dt, steps)
    tape.backward(loss=loss)
    grad = states[0].body_qd.grad.numpy()[0, 3:].copy()
    # the sphere moved with its velocity: it is kinematic
    assert states[-1].body_q.numpy()[0][:3] == pytest.approx(model.body_q.numpy()[0][:3] + v0 * dt * steps,
                                                            abs=1e-12)
    assert np.abs(grad).max() > 1e-6
    eps = 1e-6
    for c in range(3):
        up, down = v0.copy(), v0.copy()
        up[c] += eps
        down[c] -= eps
        fd = (_rollout(model, up, w, integrator, dt, steps)[1].numpy()[0]
              - _rollout(model, down, w, integrator, dt, steps)[1].numpy()[0]) / (2 * eps)
        assert grad[c] == pytest.approx(fd, rel=1e-5, abs=1e-9), c


def test_capsule_penalty_is_ke_times_the_depth_of_its_axis_below_the_cloth_surface():
    from scipy.optimize import minimize_scalar
    ke, r, half = 1e3, 0.01, 0.03
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False, contact_ke=ke, contact_kd=0.0, contact_kf=0.0)
    corners = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.02, 0.0, -0.09]])
    for p in corners:
        b.add_particle(tuple(p), (0.0, 0.0, 0.0), mass=1e-3, radius=RADIUS)
    b.add_triangle(0, 1, 2)
    body = b.add_body()
    b.add_shape_capsule((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), r, half, body=body)
    model = b.finalize(dtype=F64)
    state = model.state()
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(40):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        center = np.array([rng.uniform(0.0, 0.1), rng.uniform(-0.02, 0.02), rng.uniform(-0.08, 0.0)])
        ends = [center + _rotate(quat, np.array([0.0, s * half, 0.0])) for s in (-1.0, 1.0)]
        if min(_point_segment(p, *ends) for p in corners) < r + RADIUS:
            continue                                    # the vertices' own contact would add
        # the distance of the axis from the triangle: convex along the axis, so a bounded search
        found = minimize_scalar(lambda s: _point_triangle(ends[0] + s * (ends[1] - ends[0]), *corners),
                                bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12})
        state.body_q.assign(np.concatenate([center, quat])[None])
        f, wrench = _forces(model, state)
        expected = ke * max(r + RADIUS - found.fun, 0.0)
        assert np.linalg.norm(f.sum(axis=0)) == pytest.approx(expected, rel=1e-6, abs=1e-9)
        checked += expected > 0.0
    assert checked >= 5
