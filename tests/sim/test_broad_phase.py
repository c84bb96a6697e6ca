"""The per-step broad phase of the penalty body contact (simkit/kernels/broad_phase.py): the
pairs it finds against a brute-force oracle of overlapping boxes, and the simulation it feeds
(states and gradients) against the static pair list."""

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.broad_phase import broad_phase_overflow, broad_phase_pairs
from simkit.kernels.broad_phase_options import AUTO_THRESHOLD, broad_phase_mode
from simkit.kernels.shapes import collision_pairs
from simkit.kernels.structs import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_SPHERE

IDENTITY = (0.0, 0.0, 0.0, 1.0)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """On one thread the atomic sums run in pair order, so the sweep must give the static
    list's results bit for bit (split launches would add in a varying order)."""
    threads = sk.get_threads()
    sk.set_threads(1)
    yield
    sk.set_threads(threads)


def random_rotation(rng) -> tuple:
    q = rng.normal(size=4)
    return tuple(q / np.linalg.norm(q))


def add_random_shape(b, rng, body: int, pos=(0.0, 0.0, 0.0)) -> int:
    kind = rng.integers(5)
    rot = random_rotation(rng)
    if kind == 0:
        return b.add_shape_sphere(pos, rng.uniform(0.03, 0.08), body=body)
    if kind == 1:
        return b.add_shape_box(pos, rot, tuple(rng.uniform(0.02, 0.08, size=3)), body=body)
    if kind == 2:
        return b.add_shape_capsule(pos, rot, rng.uniform(0.02, 0.05), rng.uniform(0.02, 0.06), body=body)
    if kind == 3:
        return b.add_shape_cylinder(pos, rot, rng.uniform(0.02, 0.06), rng.uniform(0.02, 0.06), body=body)
    return b.add_shape_ellipsoid(pos, rot, tuple(rng.uniform(0.02, 0.07, size=3)), body=body)


def world_of(sub_seed: int) -> sk.sim.ModelBuilder:
    """A world of free shapes in a 0.6 m cube, some jointed, some masked."""
    rng = np.random.default_rng(sub_seed)
    b = sk.sim.ModelBuilder(ground=False)
    bodies = []
    for _ in range(14):
        body = b.add_body(sk.transform(tuple(rng.uniform(-0.3, 0.3, size=3)), random_rotation(rng)))
        s = add_random_shape(b, rng, body)
        if rng.uniform() < 0.2:
            b.set_shape_collision(s, group=2, mask=2)
        bodies.append(body)
    b.add_joint_ball(bodies[0], bodies[1])
    b.add_joint_ball(bodies[2], bodies[3])
    return b


@pytest.fixture(scope="module")
def random_scene():
    """Three worlds of free shapes, and static shapes shared by every world, swept."""
    rng = np.random.default_rng(7)
    b = sk.sim.ModelBuilder(ground=False)
    for _ in range(8):
        add_random_shape(b, rng, -1, tuple(rng.uniform(-0.3, 0.3, size=3)))
    for w in range(3):
        b.add_builder(world_of(w))
    b.broad_phase = "sweep"
    model = b.finalize()
    state, after = model.state(), model.state()
    sk.sim.SemiImplicitEuler().step(model, state, after, None, 1e-4)
    return model, state, after


def rotation(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of the unit quaternion ``(x, y, z, w)``."""
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def world_boxes(model, body_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each shape's world box, from points of its surface (a box's corners, a capsule's end
    spheres, a dense ring of a cylinder's rims and of an ellipsoid's), not from the kernel's
    formulas."""
    kind = model.shapes.kind.numpy()
    params = model.shapes.params.numpy().astype(np.float64)
    xform = model.shapes.xform.numpy().astype(np.float64)
    body = model.shapes.body.numpy()
    lo, hi = np.zeros((len(kind), 3)), np.zeros((len(kind), 3))
    t = np.linspace(0.0, 2.0 * np.pi, 4000, endpoint=False)
    for s in range(len(kind)):
        p, R = xform[s][:3], rotation(xform[s][3:])
        if body[s] >= 0:
            Rb = rotation(body_q[body[s]][3:])
            p, R = body_q[body[s]][:3] + Rb @ p, Rb @ R
        r, h = params[s][0], params[s][1]
        if kind[s] == SHAPE_SPHERE:
            lo[s], hi[s] = p - r, p + r
            continue
        if kind[s] == SHAPE_BOX:
            signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T
            pts, pad = signs * params[s], 0.0
        elif kind[s] == SHAPE_CAPSULE:
            pts, pad = np.array([[0.0, -h, 0.0], [0.0, h, 0.0]]), r
        elif kind[s] == SHAPE_CYLINDER:
            ring = np.stack([r * np.cos(t), np.zeros_like(t), r * np.sin(t)], axis=1)
            pts, pad = np.concatenate([ring + [0.0, -h, 0.0], ring + [0.0, h, 0.0]]), 0.0
        else:
            assert kind[s] == SHAPE_ELLIPSOID
            u = np.random.default_rng(s).normal(size=(20000, 3))
            pts, pad = u / np.linalg.norm(u, axis=1, keepdims=True) * params[s], 0.0
        world = pts @ R.T + p
        lo[s], hi[s] = world.min(axis=0) - pad, world.max(axis=0) + pad
    return lo, hi


def test_the_sweep_finds_exactly_the_candidate_pairs_whose_boxes_overlap(random_scene):
    model, state, after = random_scene
    lo, hi = world_boxes(model, state.body_q.numpy().astype(np.float64))
    candidates = collision_pairs(model).numpy()
    a, b = candidates[:, 0], candidates[:, 1]
    gap = np.minimum(hi[a] - lo[b], hi[b] - lo[a]).min(axis=1)   # > 0: the boxes overlap
    # the kernel's boxes are the exact ones padded by 1e-4 of the bounding radius; a pair
    # this close to touching could go either way, and the seed has none
    assert np.abs(gap).min() > 1e-3
    expected = candidates[gap > 0]
    found = broad_phase_pairs(after)
    assert len(expected) > 20
    np.testing.assert_array_equal(found, expected)


def test_the_sweep_keeps_shapes_of_two_worlds_apart_and_meets_the_shared_ones(random_scene):
    model, _, after = random_scene
    world = model.shape_world.numpy()
    found = broad_phase_pairs(after)
    wa, wb = world[found[:, 0]], world[found[:, 1]]
    assert np.all((wa < 0) | (wb < 0) | (wa == wb))
    assert np.any((wa < 0) != (wb < 0))


def pile(mode: str, count: int = 48, requires_grad: bool = False, boxes_only: bool = False):
    """Shapes dropped in a loose column onto the ground and a static slab."""
    rng = np.random.default_rng(3)
    b = sk.sim.ModelBuilder(ground=True)
    b.broad_phase = mode
    b.add_shape_box((0.0, 0.02, 0.0), (0.0, 0.0, 0.0, 1.0), (0.4, 0.02, 0.4))
    for i in range(count):
        pos = (rng.uniform(-0.12, 0.12), 0.12 + 0.05 * i, rng.uniform(-0.12, 0.12))
        body = b.add_body(sk.transform(pos, random_rotation(rng)))
        if boxes_only:
            b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.04, 0.04, 0.04), body=body)
        else:
            add_random_shape(b, rng, body)
    return b.finalize(requires_grad=requires_grad)


def run(model, steps: int, dt: float = 1e-3):
    return sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps=steps, dt=dt,
                           keep_states=False)[-1]


def test_a_pile_of_mixed_shapes_steps_to_the_same_states_with_the_sweep_as_with_the_static_list():
    static, swept = run(pile("static"), 400), run(pile("sweep"), 400)
    assert broad_phase_overflow(swept) == 0
    np.testing.assert_array_equal(swept.body_q.numpy(), static.body_q.numpy())
    np.testing.assert_array_equal(swept.body_qd.numpy(), static.body_qd.numpy())
    # the friction anchors of the touching contacts too (the slots differ; the set does not)
    stuck = static.contact_stuck.numpy().sum()
    assert stuck > 20 and swept.contact_stuck.numpy().sum() == stuck


def test_a_pile_of_boxes_settles_to_the_same_rest_with_the_sweep_as_with_the_static_list():
    static, swept = run(pile("static", 24, boxes_only=True), 2000), run(pile("sweep", 24, boxes_only=True), 2000)
    np.testing.assert_array_equal(swept.body_q.numpy(), static.body_q.numpy())
    # at rest on each other (at 1.5 s the last box is still sliding into place: 0.06 m/s)
    assert np.abs(swept.body_qd.numpy()).max() < 0.01
    assert swept.body_q.numpy()[:, 1].max() > 0.15       # stacked, not spread flat


def rollout_gradient(mode: str, steps: int = 60) -> tuple[np.ndarray, np.ndarray]:
    model = pile(mode, 16, requires_grad=True)
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    states[0].body_qd.assign(np.tile([0.0, 0.0, 0.0, 0.0, -2.0, 0.0], (model.body_count, 1)).astype(np.float32))
    integrator = sk.sim.SemiImplicitEuler()
    loss = sk.zeros(1, dtype=sk.float32, requires_grad=True)
    tape = sk.Tape()
    with tape:
        for i in range(steps):
            integrator.step(model, states[i], states[i + 1], None, 2e-3)
        sk.launch(height_sum, model.body_count, inputs=[states[-1].body_q, loss])
    tape.backward(loss=loss)
    return states[-1].body_q.numpy(), states[0].body_qd.grad.numpy()


@sk.kernel
def height_sum(body_q: sk.array(dtype=sk.transform), loss: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(loss, 0, body_q[i].p[1] + 0.3 * body_q[i].p[0])


def test_the_gradient_through_a_falling_pile_is_that_of_the_static_list():
    q_static, g_static = rollout_gradient("static")
    q_swept, g_swept = rollout_gradient("sweep")
    np.testing.assert_array_equal(q_swept, q_static)
    assert np.abs(g_static).max() > 0.1
    np.testing.assert_array_equal(g_swept, g_static)


def test_auto_sweeps_a_big_model_without_building_the_static_pair_list():
    b = sk.sim.ModelBuilder(ground=True)
    side = int(np.ceil(np.sqrt(AUTO_THRESHOLD + 1)))
    for i in range(side * side):
        body = b.add_body(sk.transform((0.1 * (i % side), 0.05, 0.1 * (i // side)), IDENTITY))
        b.add_shape_sphere((0.0, 0.0, 0.0), 0.03, body=body)
    model = b.finalize()
    assert broad_phase_mode(model) == "sweep"
    state = run(model, 2)
    assert "_collision_pairs" not in model.__dict__
    assert len(broad_phase_pairs(state)) == 0      # spheres 4 cm apart


def overlapping_row(capacity):
    b = sk.sim.ModelBuilder(ground=False)
    for i in range(4):
        body = b.add_body(sk.transform((0.03 * i, 0.0, 0.0), IDENTITY))
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.04, 0.04, 0.04), body=body)
    b.broad_phase, b.broad_phase_capacity = "sweep", capacity
    return b.finalize()


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.Featherstone])
def test_a_pair_list_too_small_stops_the_step_naming_the_pairs_it_needs(integrator):
    model = overlapping_row(2)
    if integrator is sk.sim.Featherstone:
        model = overlapping_row_articulated(2)
    s0, s1 = model.state(), model.state()
    # neighbours overlap (3 pairs) and so do second neighbours (2): each pair both ways
    with pytest.raises(RuntimeError, match="found 10 overlapping shape pairs.*broad_phase_capacity = 2"):
        integrator().step(model, s0, s1, None, 1e-3)
    assert broad_phase_overflow(s1) == 10 - 2
    np.testing.assert_array_equal(broad_phase_pairs(s1), [[0, 1], [0, 2]])


def overlapping_row_articulated(capacity):
    b = sk.sim.ModelBuilder(ground=False)
    for i in range(4):
        b.add_articulation()
        body = b.add_body(sk.transform((0.03 * i, 0.0, 0.0), IDENTITY))
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.04, 0.04, 0.04), body=body)
        b.add_joint_free(-1, body)
    b.broad_phase, b.broad_phase_capacity = "sweep", capacity
    return b.finalize()


def test_a_replayed_step_still_stops_when_the_pair_list_overflows():
    model = overlapping_row(2)
    apart = np.array([[0.5 * i, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] for i in range(4)], np.float32)
    s0, s1 = model.state(), model.state()
    integrator = sk.sim.SemiImplicitEuler()
    for _ in range(3):
        s0.body_q.assign(apart)
        integrator.step(model, s0, s1, None, 1e-3)
    assert integrator.recorded_steps()[0].replays == 1
    s0.body_q.assign(np.array([[0.03 * i, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] for i in range(4)], np.float32))
    with pytest.raises(RuntimeError, match="found 10 overlapping shape pairs"):
        integrator.step(model, s0, s1, None, 1e-3)
    assert integrator.recorded_steps()[0].replays == 2


@pytest.mark.parametrize("mode, capacity, error, words", [
    ("fast", None, ValueError, "broad_phase must be one of"),
    ("sweep", 0, ValueError, "broad_phase_capacity must be >= 1"),
    ("sweep", 2.5, TypeError, "broad_phase_capacity must be an int or None"),
])
def test_a_bad_broad_phase_option_is_refused_at_finalize(mode, capacity, error, words):
    b = sk.sim.ModelBuilder()
    b.add_shape_sphere((0.0, 1.0, 0.0), 0.1, body=b.add_body())
    b.broad_phase, b.broad_phase_capacity = mode, capacity
    with pytest.raises(error, match=f"finalize: {words}"):
        b.finalize()


def tilted_box_on_slab(requires_grad: bool = True):
    """A tilted box pressed into a static slab, sliding: corners and edges in contact that stick."""
    b = sk.sim.ModelBuilder(ground=False)
    b.broad_phase = "sweep"
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.3, 0.05, 0.3))
    s = np.sin(0.1)
    body = b.add_body(sk.transform((0.0, 0.097, 0.0), (s, 0.0, 0.0, np.cos(0.1))))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.05, 0.05, 0.05), body=body)
    return b.finalize(requires_grad=requires_grad, dtype=sk.float64)


def sliding_rollout(model, qd0: np.ndarray) -> tuple[list, float]:
    """Three steps from body velocities ``qd0``, and a weighted sum of the last velocities."""
    states = [model.state() for _ in range(4)]
    states[0].body_qd.assign(qd0)
    integrator = sk.sim.SemiImplicitEuler()
    for i in range(3):
        integrator.step(model, states[i], states[i + 1], None, 1e-3)
    return states, float(np.dot(states[-1].body_qd.numpy().ravel(), np.arange(1.0, 7.0)))


def test_the_gradient_through_swept_sticking_contacts_matches_central_differences():
    model = tilted_box_on_slab()
    qd0 = np.array([[0.1, -0.2, 0.05, 0.05, 0.0, 0.02]])    # (angular, linear): sliding
    tape = sk.Tape()
    with tape:
        states, _ = sliding_rollout(model, qd0)
    tape.backward(grads={states[-1].body_qd: np.arange(1.0, 7.0).reshape(1, 6)})
    grad = states[0].body_qd.grad.numpy().ravel()
    assert len(broad_phase_pairs(states[-1])) == 2 and states[-1].contact_stuck.numpy().sum() > 0
    eps = 1e-6
    numeric = np.zeros(6)
    for j in range(6):
        up, down = qd0.copy(), qd0.copy()
        up.ravel()[j] += eps
        down.ravel()[j] -= eps
        numeric[j] = (sliding_rollout(model, up)[1] - sliding_rollout(model, down)[1]) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def stack_of_free_boxes(mode: str):
    """Boxes on free joints (Featherstone's generalized coordinates), stacked a little askew."""
    rng = np.random.default_rng(1)
    b = sk.sim.ModelBuilder(ground=True)
    b.broad_phase = mode
    for i in range(5):
        b.add_articulation()
        pos = (rng.uniform(-0.03, 0.03), 0.06 + 0.11 * i, rng.uniform(-0.03, 0.03))
        body = b.add_body(sk.transform(pos, IDENTITY))
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.05, 0.05, 0.05), body=body)
        b.add_joint_free(-1, body)
    return b.finalize()


def test_featherstone_penalty_contact_stacks_the_same_with_the_sweep_as_with_the_static_list():
    static, swept = (sk.sim.simulate(m, sk.sim.Featherstone(contact="penalty"), m.state(), steps=300, dt=1e-3,
                                     keep_states=False)[-1] for m in (stack_of_free_boxes("static"),
                                                                      stack_of_free_boxes("sweep")))
    assert len(broad_phase_pairs(swept)) == 8           # 4 touching neighbours, both ways
    np.testing.assert_array_equal(swept.joint_q.numpy(), static.joint_q.numpy())
    assert swept.body_q.numpy()[-1, 1] > 0.4            # still stacked


@sk.kernel
def body_height(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    p = sk.transform_point(q[sk.tid()], sk.vec3d(0.02, 0.03, 0.04))
    sk.atomic_add(loss, 0, p[1] + 0.5 * p[0])


def test_a_checkpointed_rollout_over_swept_contacts_gives_the_full_tape_gradient():
    model = tilted_box_on_slab()

    def run_rollout(checkpoint_every):
        s0 = model.state(requires_grad=True)
        s0.body_qd.assign(np.array([[0.1, -0.2, 0.05, 0.05, 0.0, 0.02]]))
        rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=12, dt=1e-3,
                                   checkpoint_every=checkpoint_every,
                                   loss=lambda state, out: sk.launch(body_height, 1, inputs=[state.body_q, out]))
        return rollout.run(s0, wrt=[s0.body_qd]).grads[0]

    full, checkpointed = run_rollout(None), run_rollout(5)
    assert np.abs(full).max() > 1e-3
    np.testing.assert_allclose(checkpointed, full, rtol=1e-9, atol=1e-12)
