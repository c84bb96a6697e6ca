"""Many worlds in one model (ModelBuilder.add_builder): each world moves exactly like the scene
alone, worlds never touch each other, world -1 touches them all, gradients stay inside their
world, and the per-world views of the arrays."""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import position_loss
from simkit.kernels.hash_grid import HashGrid
from simkit.kernels.shapes import collision_pairs
from simkit.sim import geometry as G

IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)

# (integrator, dt, steps) per integrator, for the particle scenes
INTEGRATORS = {"semi-implicit": (sk.sim.SemiImplicitEuler, 5e-4, 400), "xpbd": (lambda: sk.sim.XPBD(4), 1 / 600, 120)}


def about_y(angle: float) -> tuple:
    return (0.0, math.sin(angle / 2.0), 0.0, math.cos(angle / 2.0))


# Placements of the worlds: moved along the ground and turned about the up axis (the ground is
# shared, so a placement keeps the height), and one left where it is.
PLACEMENTS = [None, sk.transform((3.0, 0.0, -1.0), about_y(0.7)), sk.transform((-2.0, 0.0, 4.0), about_y(-2.0))]


def place(xform, points: np.ndarray) -> np.ndarray:
    """World positions of ``points`` (N x 3) of a scene placed by ``xform`` (None: as they are)."""
    if xform is None:
        return points
    X = np.asarray(xform, dtype=np.float64)
    return X[:3] + G.quat_rotate(X[3:] / np.linalg.norm(X[3:]), points)


def ball_scene() -> sk.sim.ModelBuilder:
    """A ball thrown onto the ground, and a pendulum of two particles on a spring."""
    b = sk.sim.ModelBuilder(contact_ke=1e4, contact_kd=10.0, contact_kf=100.0)
    b.add_particle((0.0, 0.5, 0.0), (0.8, 1.0, -0.3), mass=1.0, radius=0.1)
    b.add_particle((0.3, 0.6, 0.2), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.6, 0.3, 0.2), (0.0, 0.0, 0.5), mass=0.5, radius=0.05)
    b.add_spring(1, 2, ke=300.0, kd=0.5)
    return b


def cloth_scene() -> sk.sim.ModelBuilder:
    """A 4x4-cell cloth pinned along one side, swinging down onto the ground."""
    b = sk.sim.ModelBuilder(contact_ke=1e3, contact_kd=0.5, contact_kf=5.0)
    b.add_cloth_grid((0.0, 0.3, 0.0), (-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)), (0.0, 0.0, 0.0), 4, 4, 0.1, 0.1,
                     mass=0.02, fix_left=True, k_mu=500.0, k_lambda=500.0, k_damp=0.05, edge_ke=1e-2,
                     radius=0.02)
    return b


def worlds_of(scene: sk.sim.ModelBuilder, placements, **settings) -> sk.sim.ModelBuilder:
    b = sk.sim.ModelBuilder(gravity=scene.gravity, up_axis=scene.up_axis, **settings)
    for xform in placements:
        b.add_builder(scene, xform=xform)
    return b


def final(model, integrator, dt, steps, state=None):
    return sk.sim.simulate(model, integrator, state or model.state(), steps, dt, keep_states=False)[-1]


def particle_contact_settings(scene: sk.sim.ModelBuilder) -> dict:
    return {f"contact_{k}": v for k, v in scene.contact.items()}


# -- every world moves like the scene alone ---------------------------------------------------

@pytest.mark.parametrize("integrator", list(INTEGRATORS))
@pytest.mark.parametrize("scene", [ball_scene, cloth_scene])
def test_each_world_moves_exactly_like_the_scene_alone(scene, integrator):
    make, dt, steps = INTEGRATORS[integrator]
    alone = scene()
    single = final(alone.finalize(dtype=sk.float64), make(), dt, steps).particle_q.numpy()
    model = worlds_of(alone, PLACEMENTS + [None], **particle_contact_settings(alone)).finalize(dtype=sk.float64)
    assert model.world_count == 4
    q = final(model, make(), dt, steps).world_view("particle_q")
    assert np.abs(single[:, 1]).max() > 0.0 and np.isfinite(q).all()
    for xform, world_q in zip(PLACEMENTS + [None], q):
        np.testing.assert_allclose(world_q, place(xform, single), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(q[0], q[3])   # two worlds in the same place: the same numbers


@pytest.mark.parametrize("integrator", ["semi-implicit", "xpbd"])
def test_placed_bodies_and_joints_move_like_the_scene_alone(integrator):
    """A pendulum hinged to the world and a box dropped on a slant: joint frames attached to the
    world, body poses and velocities are placed with the world."""
    make, dt, steps = {"semi-implicit": (sk.sim.SemiImplicitEuler, 5e-4, 300),
                       "xpbd": (lambda: sk.sim.XPBD(4), 1 / 240, 60)}[integrator]
    scene = sk.sim.ModelBuilder()
    link = scene.add_body(sk.transform((0.0, 1.0, 0.0), IDENTITY_Q), angular_velocity=(0.0, 0.0, 2.0))
    scene.add_shape_box((0.0, -0.25, 0.0), IDENTITY_Q, (0.05, 0.25, 0.05), body=link, density=400.0)
    scene.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0))
    box = scene.add_body(sk.transform((1.0, 0.3, 0.0), (0.2, 0.0, 0.1, 1.0)), velocity=(0.5, 0.0, 0.2))
    scene.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=box, density=1000.0)
    single = final(scene.finalize(dtype=sk.float64), make(), dt, steps).body_q.numpy()
    model = worlds_of(scene, PLACEMENTS).finalize(dtype=sk.float64)
    poses = final(model, make(), dt, steps).world_view("body_q")
    assert np.abs(single[1, :3] - (1.0, 0.3, 0.0)).max() > 0.05    # the box moved
    for xform, world in zip(PLACEMENTS, poses):
        X = np.zeros(7) if xform is None else np.asarray(xform, dtype=np.float64)
        turn = X[3:] / np.linalg.norm(X[3:]) if xform is not None else None
        # a rotated world rounds differently, and 60 XPBD steps with contact amplify it to ~1e-8
        np.testing.assert_allclose(world[:, :3], place(xform, single[:, :3]), atol=1e-7)
        rot = [single[b, 3:] if xform is None else G.quat_multiply(turn, single[b, 3:]) for b in range(2)]
        np.testing.assert_allclose(world[:, 3:], rot, atol=1e-7)


# -- worlds never touch each other; world -1 touches all -------------------------------------

def two_particles_meeting(first: bool = True, second: bool = True) -> sk.sim.ModelBuilder:
    """Particles heading for each other along x, without gravity: they meet at t = 0.3 s."""
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False, particle_contact=True, contact_ke=1e4, contact_kd=1.0)
    if first:
        b.add_particle((-0.5, 1.0, 0.0), (1.0, 0.0, 0.0), mass=1.0, radius=0.1)
    if second:
        b.add_particle((0.5, 1.0, 0.0), (-1.0, 0.0, 0.0), mass=1.0, radius=0.1)
    return b


def test_particles_of_overlapping_worlds_pass_through_each_other_and_collide_within_one():
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False, particle_contact=True, contact_ke=1e4, contact_kd=1.0)
    b.add_builder(two_particles_meeting(second=False))
    b.add_builder(two_particles_meeting(first=False))
    b.add_builder(two_particles_meeting())
    model = b.finalize(dtype=sk.float64)
    s = final(model, sk.sim.SemiImplicitEuler(), 1e-3, 600)
    qd = s.particle_qd.numpy()
    np.testing.assert_array_equal(qd[:2], [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])      # worlds 0 and 1
    np.testing.assert_allclose(s.particle_q.numpy()[:2, 0], [0.1, -0.1], atol=1e-12)
    assert qd[2, 0] < -0.5 and qd[3, 0] > 0.5                                       # world 2 bounced


def test_worlds_of_particles_search_only_their_own_cells():
    """The grid keys each world's cells apart: 200 overlapping worlds cost a particle the
    search of its own world, so the neighbour loops of the contact kernel stay short."""
    grid = HashGrid(dtype=sk.float64)
    points = sk.array(np.zeros((200, 3)), dtype=sk.vec3d)
    grid.build(points, cell_size=0.1, groups=sk.array(np.arange(200, dtype=np.int32), dtype=sk.int32))
    offsets, neighbors = grid.query(points, 0.1, groups=sk.array(np.arange(200, dtype=np.int32), dtype=sk.int32))
    np.testing.assert_array_equal(np.diff(offsets), 1)
    np.testing.assert_array_equal(neighbors, np.arange(200))
    assert grid.view.cell_start.numpy().max() > 0
    assert np.diff(grid.view.cell_start.numpy()).max() <= 2


def test_grid_query_with_groups_finds_the_points_of_the_same_group_and_of_group_minus_one(rng):
    points = rng.uniform(-0.3, 0.3, size=(300, 3))
    groups = rng.integers(-1, 4, size=300).astype(np.int32)
    query_groups = rng.integers(-1, 4, size=300).astype(np.int32)
    grid = HashGrid(dtype=sk.float64)
    pts = sk.array(points, dtype=sk.vec3d)
    grid.build(pts, cell_size=0.1, groups=sk.array(groups, dtype=sk.int32))
    offsets, neighbors = grid.query(pts, 0.1, groups=sk.array(query_groups, dtype=sk.int32))
    for i in range(300):
        near = np.linalg.norm(points - points[i], axis=1) < 0.1
        meets = (groups < 0) | (query_groups[i] < 0) | (groups == query_groups[i])
        assert sorted(neighbors[offsets[i]:offsets[i + 1]]) == list(np.flatnonzero(near & meets))


def boxes_meeting(first: bool = True, second: bool = True) -> sk.sim.ModelBuilder:
    """1 kg boxes heading for each other along x without gravity: they meet at t = 0.2 s."""
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    for present, x, v in ((first, -0.3, 1.0), (second, 0.3, -1.0)):
        if present:
            body = b.add_body(sk.transform((x, 1.0, 0.0), IDENTITY_Q), velocity=(v, 0.0, 0.0))
            b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=body, density=125.0)
    return b


@pytest.mark.parametrize("integrator", ["semi-implicit", "xpbd"])
def test_boxes_of_overlapping_worlds_pass_through_each_other_and_collide_within_one(integrator):
    make, dt, steps = {"semi-implicit": (sk.sim.SemiImplicitEuler, 1e-3, 400),
                       "xpbd": (lambda: sk.sim.XPBD(4), 1 / 240, 96)}[integrator]
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_builder(boxes_meeting(second=False))
    b.add_builder(boxes_meeting(first=False))
    b.add_builder(boxes_meeting())
    model = b.finalize(dtype=sk.float64)
    pairs = collision_pairs(model).numpy()
    world = model.shape_world.numpy()
    assert len(pairs) == 2 and (world[pairs[:, 0]] == 2).all() and (world[pairs[:, 1]] == 2).all()
    s = final(model, make(), dt, steps)
    v = s.body_qd.numpy()[:, 3]
    np.testing.assert_allclose(v[:2], [1.0, -1.0], atol=1e-12)     # worlds 0 and 1: untouched
    assert v[2] - v[3] < 1e-6                                       # world 2: they stopped approaching


@pytest.mark.parametrize("integrator", ["semi-implicit", "xpbd"])
def test_particles_meet_only_the_shapes_of_their_world(integrator):
    """Worlds 0 and 1 hold a box on a body and a static sphere, world 2 a particle flying
    through both places, worlds 3 and 4 the particle with the box and with the sphere."""
    make, dt, steps = {"semi-implicit": (sk.sim.SemiImplicitEuler, 1e-3, 800),
                       "xpbd": (lambda: sk.sim.XPBD(4), 1 / 240, 192)}[integrator]
    settings = dict(gravity=0.0, ground=False, contact_ke=1e4, contact_kd=1.0)

    def scene(particle: bool = False, box: bool = False, sphere: bool = False) -> sk.sim.ModelBuilder:
        b = sk.sim.ModelBuilder(**settings)
        if particle:
            b.add_particle((-0.5, 1.0, 0.0), (1.0, 0.0, 0.0), mass=0.1, radius=0.05)
        if box:
            body = b.add_body(sk.transform((0.0, 1.0, 0.0), IDENTITY_Q))
            b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=body, density=125.0)
        if sphere:
            b.add_shape_sphere((0.0, 1.0, 0.0), 0.1)
        return b

    b = sk.sim.ModelBuilder(**settings)
    for parts in ({"box": True}, {"sphere": True}, {"particle": True}, {"particle": True, "box": True},
                  {"particle": True, "sphere": True}):
        b.add_builder(scene(**parts))
    model = b.finalize(dtype=sk.float64)
    s = final(model, make(), dt, steps)
    qd, q = s.particle_qd.numpy(), s.particle_q.numpy()
    np.testing.assert_allclose(qd[0], [1.0, 0.0, 0.0], rtol=0, atol=1e-12)  # world 2 flew through
    assert q[0, 0] == pytest.approx(-0.5 + steps * dt, abs=1e-9)
    assert qd[1, 0] < 0.5 and qd[2, 0] < 0.5                               # worlds 3 and 4: stopped
    body_v = s.body_qd.numpy()[:, 3:]
    np.testing.assert_array_equal(body_v[0], 0.0)                          # world 0's box: untouched
    assert body_v[1, 0] > 0.05                                             # world 3's box: pushed


def test_shared_static_shape_and_ground_meet_every_world():
    """A static sphere added directly to the builder (world -1) catches the ball of each world;
    beside it, the balls fall to the shared ground."""
    b = sk.sim.ModelBuilder(contact_ke=1e4, contact_kd=100.0)
    b.add_shape_sphere((0.0, 0.5, 0.0), 0.3)
    ball = sk.sim.ModelBuilder()
    ball.add_particle((0.0, 1.2, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
    for x in (0.0, 0.05, -0.02, 1.0):
        b.add_builder(ball, xform=sk.transform((x, 0.0, 0.0), IDENTITY_Q))
    model = b.finalize(dtype=sk.float64)
    assert model.shape_world.numpy().tolist() == [-1]
    s = final(model, sk.sim.SemiImplicitEuler(), 1e-3, 600)
    assert (s.particle_q.numpy()[:3, 1] > 0.85).all()      # on the sphere (top at 0.8, ball radius 0.1)
    y = final(model, sk.sim.SemiImplicitEuler(), 1e-3, 1400, s).particle_q.numpy()[:, 1]
    assert y[3] == pytest.approx(0.1, abs=5e-3)            # on the ground


def test_a_shared_particle_is_struck_by_the_particles_of_every_world():
    """Particles of three worlds fly at a free particle of world -1 from 0, 57 and 115 degrees: each
    bounces off it, and it takes the momentum all of them lost (contact conserves momentum)."""
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False, particle_contact=True, contact_ke=1e4, contact_kd=1.0)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=3.0, radius=0.1)
    for k in range(3):
        b.add_builder(two_particles_meeting(second=False), xform=sk.transform((0.0, 0.0, 0.0), about_y(1.0 * k)))
    model = b.finalize(dtype=sk.float64)
    assert model.particle_world.numpy().tolist() == [-1, 0, 1, 2]
    s0 = model.state()
    s = final(model, sk.sim.SemiImplicitEuler(), 1e-3, 600, s0)
    qd0, qd = s0.particle_qd.numpy(), s.particle_qd.numpy()
    for w in range(1, 4):
        assert np.dot(qd[w], qd0[w]) < 0.0            # each turned back
    mass = model.particles.mass.numpy()[:, None]
    np.testing.assert_allclose((mass * qd).sum(axis=0), (mass * qd0).sum(axis=0), atol=1e-9)
    assert np.linalg.norm(qd[0]) > 0.1


# -- gradients stay inside their world --------------------------------------------------------

GRADIENT_CASES = {"semi-implicit": (sk.sim.SemiImplicitEuler, 2e-3, ball_scene),
                  "xpbd": (lambda: sk.sim.XPBD(4), 1e-2, ball_scene),
                  "particle-contact": (sk.sim.SemiImplicitEuler, 2e-3, two_particles_meeting)}


@pytest.mark.parametrize("case", list(GRADIENT_CASES))
def test_gradient_of_a_world_loss_is_the_scene_alone_gradient_and_zero_in_other_worlds(case):
    make, dt, scene = GRADIENT_CASES[case]
    steps = 200
    alone = scene()
    n = alone.particle_count
    weights = np.random.default_rng(3).normal(size=(n, 3))

    def gradient(model, w):
        s0 = model.state(requires_grad=True)
        with sk.Tape() as tape:
            states = sk.sim.simulate(model, make(), s0, steps, dt)
            loss = position_loss(states[-1].particle_q, w)
        tape.backward(loss=loss)
        return s0.particle_qd.grad.numpy().copy()

    single = gradient(alone.finalize(dtype=sk.float64, requires_grad=True), weights)
    settings = dict(particle_contact=alone.particle_contact, ground=alone.ground, **particle_contact_settings(alone))
    model = worlds_of(alone, [None] * 4, **settings).finalize(dtype=sk.float64, requires_grad=True)
    k = 2
    w = np.zeros((4, n, 3))
    w[k] = weights
    grad = model.world_view("particle", gradient(model, w.reshape(-1, 3)))
    assert np.abs(single).max() > 1e-3
    np.testing.assert_allclose(grad[k], single, rtol=1e-9, atol=1e-12)
    for j in range(4):
        if j != k:
            assert (grad[j] == 0.0).all()


# -- builder checks ----------------------------------------------------------------------------

def test_add_builder_returns_world_indices_and_offsets_everything():
    scene = ball_scene()
    link = scene.add_body(sk.transform((0.0, 1.0, 0.0), IDENTITY_Q))
    scene.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=link)
    scene.add_shape_box((0.0, 0.1, 0.0), IDENTITY_Q, (1.0, 0.1, 1.0))
    scene.add_joint_ball(-1, link)
    b = sk.sim.ModelBuilder()
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)            # world -1
    assert [b.add_builder(scene, sk.transform((2.0 * k, 0.0, 0.0), IDENTITY_Q)) for k in range(3)] == [0, 1, 2]
    assert b.add_builder(scene, world=-1) == -1
    assert b.world_count == 3
    model = b.finalize()
    assert model.world_count == 3
    assert model.world_range("particle", 1) == (4, 7)
    assert model.world_range("spring", 2) == (2, 3)
    np.testing.assert_array_equal(model.springs.indices.numpy()[:4], [[2, 3], [5, 6], [8, 9], [11, 12]])
    np.testing.assert_array_equal(model.particle_world.numpy(), [-1, 0, 0, 0, 1, 1, 1, 2, 2, 2, -1, -1, -1])
    np.testing.assert_array_equal(model.body_world.numpy(), [0, 1, 2, -1])
    np.testing.assert_array_equal(model.shape_world.numpy(), [0, 0, 1, 1, 2, 2, -1, -1])
    np.testing.assert_array_equal(model.shapes.body.numpy(), [0, -1, 1, -1, 2, -1, 3, -1])
    np.testing.assert_allclose(model.shapes.xform.numpy()[2:4, 0], [0.0, 2.0])  # the body's own / static, placed
    np.testing.assert_array_equal(model.joints.child.numpy(), [0, 1, 2, 3])
    np.testing.assert_allclose(model.joints.parent_xform.numpy()[:, 0], [0.0, 2.0, 4.0, 0.0])
    np.testing.assert_allclose(model.particle_q.numpy()[4:7, 0] - model.particle_q.numpy()[1:4, 0], 2.0)


def test_add_builder_rejects_what_it_cannot_honour():
    b = sk.sim.ModelBuilder()
    scene = ball_scene()
    with pytest.raises(TypeError, match="must be a simkit.sim.ModelBuilder"):
        b.add_builder("scene")
    with pytest.raises(ValueError, match="to itself"):
        b.add_builder(b)
    with pytest.raises(ValueError, match="gravity"):
        b.add_builder(sk.sim.ModelBuilder(gravity=-1.62))
    with pytest.raises(ValueError, match="up_axis"):
        b.add_builder(sk.sim.ModelBuilder(up_axis="z"))
    with pytest.raises(ValueError, match="world must be None"):
        b.add_builder(scene, world=0)
    with pytest.raises(ValueError, match="xform"):
        b.add_builder(scene, xform=(1.0, 2.0))
    nested = sk.sim.ModelBuilder()
    nested.add_builder(scene)
    with pytest.raises(ValueError, match="worlds do not nest"):
        b.add_builder(nested)
    assert b.particle_count == 0 and b.world_count == 0


# -- per-world views ---------------------------------------------------------------------------

def test_world_views_are_numpy_views_of_the_arrays():
    model = worlds_of(ball_scene(), [None] * 5).finalize()
    state, control = model.state(requires_grad=True), model.control()
    q = state.world_view("particle_q")
    assert q.shape == (5, 3, 3) and np.shares_memory(q, state.particle_q.numpy())
    q[3, 0, 1] = 7.0
    assert state.particle_q.numpy()[9, 1] == 7.0
    assert state.world_view("particle_qd", grad=True).shape == (5, 3, 3)
    assert model.world_view("particle", model.particles.mass).shape == (5, 3)
    assert model.world_view("spring", model.springs.ke.numpy()).shape == (5, 1)
    control.world_view("spring_activation")[:, 0] = np.arange(5.0)
    np.testing.assert_array_equal(control.spring_activation.numpy(), np.arange(5.0))
    assert state.world_view("body_q").shape == (5, 0, 7)


def test_world_views_explain_when_they_do_not_exist():
    plain = ball_scene().finalize()
    with pytest.raises(ValueError, match="no worlds"):
        plain.state().world_view("particle_q")
    two = sk.sim.ModelBuilder()
    two.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    two.add_particle((0.5, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b = sk.sim.ModelBuilder()
    b.add_builder(ball_scene())
    b.add_builder(two)
    uneven = b.finalize()
    with pytest.raises(ValueError, match=r"different numbers of particles \(world 0: 3, world 1: 2\)"):
        uneven.state().world_view("particle_q")
    assert uneven.world_range("particle", 1) == (3, 5)
    b = sk.sim.ModelBuilder()
    b.add_builder(ball_scene())
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_builder(ball_scene())
    with pytest.raises(ValueError, match="not back to back"):
        b.finalize().state().world_view("particle_q")
    model = worlds_of(ball_scene(), [None] * 2).finalize()
    with pytest.raises(ValueError, match="name must be one of"):
        model.state().world_view("particle_mass")
    with pytest.raises(ValueError, match="has no gradient"):
        model.state().world_view("particle_q", grad=True)
    with pytest.raises(ValueError, match="kind must be one of"):
        model.world_range("cloth", 0)
    with pytest.raises(ValueError, match=r"world must be an int in \[0, 2\)"):
        model.world_range("particle", 2)
