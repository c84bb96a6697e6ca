"""Particle-particle penalty contact found through a hash grid (SemiImplicitEuler)."""

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference, position_loss
from simkit.kernels.hash_grid import HashGrid, grid_hash, grid_neighbor_cell
from simkit.kernels.particle_contact import eval_particle_contact_forces

G = 9.81


def builder(gravity=0.0, ground=False, ke=1e4, kd=0.0, kf=0.0, mu=0.0):
    return sk.sim.ModelBuilder(gravity=-gravity, ground=ground, contact_ke=ke, contact_kd=kd, contact_kf=kf,
                               contact_mu=mu, particle_contact=True)


def run(model, seconds, dt):
    return sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), round(seconds / dt), dt,
                           keep_states=False)[-1]


def brute_force_neighbors(queries, points, radius):
    d = np.linalg.norm(queries[:, None, :] - points[None, :, :], axis=-1)
    return [sorted(np.nonzero(row < radius)[0].tolist()) for row in d]


# -- the grid -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [sk.float32, sk.float64])
@pytest.mark.parametrize("count", [20, 3000])
def test_grid_query_finds_exactly_the_points_within_the_radius(rng, dtype, count):
    # 20 points get the smallest table (64 buckets): many of the 27 cells around a
    # query share a bucket, which must neither hide nor repeat a neighbour.
    x = rng.uniform(-0.5, 0.5, (count, 3)) * count ** (1 / 3) * 0.1 + 7.3
    x[:3] *= -1.0   # a few on the negative side of the origin
    points = sk.array(x.astype(dtype.np_dtype), dtype=sk.vector(3, dtype))
    queries_np = np.concatenate([x[:50], rng.uniform(-1.0, 9.0, (50, 3))])
    queries = sk.array(queries_np.astype(dtype.np_dtype), dtype=sk.vector(3, dtype))
    grid = HashGrid(dtype=dtype)
    grid.build(points, cell_size=0.1)
    offsets, neighbors = grid.query(queries, radius=0.1)
    # the brute force sees the coordinates as stored, rounded to dtype
    expected = brute_force_neighbors(queries_np.astype(dtype.np_dtype).astype(np.float64),
                                     x.astype(dtype.np_dtype).astype(np.float64), 0.1)
    found = [sorted(neighbors[offsets[i]:offsets[i + 1]].tolist()) for i in range(len(queries_np))]
    assert found == expected
    assert sum(len(e) for e in expected) > 1.5 * min(count, 50)   # more than the points finding themselves


@sk.kernel
def neighbor_cell_hashes(cells: sk.array(dtype=sk.vec3i), out: sk.array(dtype=sk.uint32, ndim=2)):
    i, n = sk.tid()
    out[i, n] = grid_hash(grid_neighbor_cell(cells[i], n))


def test_the_27_cells_around_a_cell_have_distinct_hashes(rng):
    # a point is listed once per query only if no two of the 27 cells share a hash
    cells = np.concatenate([rng.integers(-1_000_000_000, 1_000_000_000, (200, 3)),
                            rng.integers(-3, 3, (50, 3))]).astype(np.int32)
    out = sk.zeros((len(cells), 27), dtype=sk.uint32)
    sk.launch(neighbor_cell_hashes, (len(cells), 27), inputs=[sk.array(cells, dtype=sk.vec3i), out])
    assert all(len(set(row)) == 27 for row in out.numpy().tolist())


def test_grid_buckets_list_every_point_once_in_ascending_order(rng):
    x = rng.uniform(0.0, 0.3, (500, 3))
    grid = HashGrid(dtype=sk.float64)
    grid.build(sk.array(x, dtype=sk.vec3d), cell_size=0.05)
    start = grid.view.cell_start.numpy()
    order = grid.view.sorted_index.numpy()[:500]
    assert start[0] == 0 and start[-1] == 500 and np.all(np.diff(start) >= 0)
    assert sorted(order.tolist()) == list(range(500))
    for b in np.nonzero(np.diff(start) > 1)[0]:
        assert np.all(np.diff(order[start[b]:start[b + 1]]) > 0)


def test_grid_rebuild_reuses_its_buffers_until_the_point_count_grows(rng):
    grid = HashGrid(dtype=sk.float32)
    grid.build(sk.array(rng.uniform(0, 1, (100, 3)), dtype=sk.vec3), cell_size=0.1)
    buffers = (grid.view, grid.view.cell_start, grid.view.sorted_index, grid.view.cell_hash)
    grid.build(sk.array(rng.uniform(0, 1, (100, 3)), dtype=sk.vec3), cell_size=0.2)
    grid.build(sk.array(rng.uniform(0, 1, (60, 3)), dtype=sk.vec3), cell_size=0.2)
    now = (grid.view, grid.view.cell_start, grid.view.sorted_index, grid.view.cell_hash)
    assert all(a is b for a, b in zip(now, buffers))
    grid.build(sk.array(rng.uniform(0, 1, (101, 3)), dtype=sk.vec3), cell_size=0.2)
    assert grid.view.sorted_index is not buffers[2] and grid.capacity == 101


def test_grid_refuses_a_query_radius_beyond_one_cell(rng):
    grid = HashGrid(dtype=sk.float32)
    points = sk.array(rng.uniform(0, 1, (10, 3)), dtype=sk.vec3)
    grid.build(points, cell_size=0.1)
    with pytest.raises(ValueError, match="cell_size"):
        grid.query(points, radius=0.2)


# -- contact forces -----------------------------------------------------------------------

def test_particles_that_do_not_touch_feel_nothing():
    b = builder(ke=1e4, kd=10.0, kf=100.0, mu=0.5)
    b.add_particle((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), mass=1.0, radius=0.1)
    b.add_particle((0.201, 0.0, 0.0), (-1.0, 0.0, 0.0), mass=1.0, radius=0.1)   # a gap of 1 mm
    b.add_particle((0.15, 0.15, 0.05), (0.0, 0.0, 0.0), mass=1.0, radius=0.05)  # a neighbouring cell, no overlap
    b.add_particle((25.0, -3.0, 4.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)     # far away
    model = b.finalize(dtype=sk.float64)
    state = model.state()
    eval_particle_contact_forces(model, state)
    assert np.all(state.particle_f.numpy() == 0.0)


def test_unequal_particles_overlapping_by_d_are_pushed_apart_by_ke_times_d():
    # particles at rest overlapping by 1 mm: the normal force is ke * overlap, pushing them apart
    b = builder(ke=1e4, kd=10.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
    b.add_particle((0.0, 0.119, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.02)
    model = b.finalize(dtype=sk.float64)
    state = model.state()
    eval_particle_contact_forces(model, state)
    f = state.particle_f.numpy()
    assert f[1] == pytest.approx([0.0, 1e4 * 0.001, 0.0], rel=1e-9, abs=1e-12)
    assert np.all(f[0] == -f[1])


def test_radii_enlarged_after_the_first_step_are_honoured():
    b = builder(ke=1e4)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
    b.add_particle((0.25, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
    model = b.finalize(dtype=sk.float64)
    eval_particle_contact_forces(model, model.state())
    model.particles.radius.assign(np.array([0.1, 0.2]))   # the grid cells must grow to 0.4
    state = model.state()
    eval_particle_contact_forces(model, state)
    assert state.particle_f.numpy()[1] == pytest.approx([1e4 * 0.05, 0.0, 0.0], rel=1e-9)


def test_a_head_on_collision_of_equal_particles_conserves_momentum_and_they_separate():
    b = builder(ke=1e4, kd=20.0, kf=100.0, mu=0.5)
    b.add_particle((0.0, 0.0, 0.0), (1.5, 0.0, 0.0), mass=0.5, radius=0.1)
    b.add_particle((0.4, 0.0, 0.0), (-0.5, 0.0, 0.0), mass=0.5, radius=0.1)
    model = b.finalize(dtype=sk.float64)
    s = run(model, 0.5, 1e-3)
    v = s.particle_qd.numpy()
    assert 0.5 * v.sum(axis=0) == pytest.approx([0.5, 0.0, 0.0], abs=1e-13)
    q = s.particle_q.numpy()
    assert q[1, 0] - q[0, 0] > 0.2 and v[1, 0] > v[0, 0]   # apart, and moving apart


def test_an_oblique_collision_with_friction_conserves_momentum():
    b = builder(ke=1e4, kd=20.0, kf=100.0, mu=0.5)
    b.add_particle((0.0, 0.0, 0.0), (2.0, 0.3, -0.2), mass=0.3, radius=0.1)
    b.add_particle((0.5, 0.08, 0.05), (-1.0, 0.0, 0.4), mass=0.7, radius=0.06)
    model = b.finalize(dtype=sk.float64)
    p0 = (model.particles.mass.numpy()[:, None] * model.particle_qd.numpy()).sum(axis=0)
    s = run(model, 0.4, 1e-3)
    p1 = (model.particles.mass.numpy()[:, None] * s.particle_qd.numpy()).sum(axis=0)
    assert np.abs(s.particle_qd.numpy() - model.particle_qd.numpy()).max() > 0.5   # they did collide
    assert p1 == pytest.approx(p0, abs=1e-12)


def test_an_undamped_head_on_collision_exchanges_the_velocities_of_equal_particles():
    # elastic collision of equal masses: the moving particle stops, the resting one leaves at its speed
    b = builder(ke=1e4, kd=0.0)
    b.add_particle((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), mass=1.0, radius=0.1)
    b.add_particle((0.5, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
    model = b.finalize(dtype=sk.float64)
    v = run(model, 1.0, 1e-3).particle_qd.numpy()
    assert v[0, 0] == pytest.approx(0.0, abs=0.02)
    assert v[1, 0] == pytest.approx(1.0, abs=0.02)
    assert 0.5 * (v ** 2).sum() == pytest.approx(0.5, rel=0.02)


def test_a_damped_collision_has_the_restitution_of_a_spring_dashpot():
    # two unit masses meet at 2 m/s: a spring ke and dashpot kd on the reduced mass 1/2, whose
    # restitution is exp(-zeta pi / sqrt(1 - zeta^2)) (light damping: the no-pull clip barely matters)
    ke, kd, reduced_mass = 1e4, 5.0, 0.5
    b = builder(ke=ke, kd=kd)
    b.add_particle((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), mass=1.0, radius=0.1)
    b.add_particle((0.5, 0.0, 0.0), (-1.0, 0.0, 0.0), mass=1.0, radius=0.1)
    model = b.finalize(dtype=sk.float64)
    v = run(model, 0.5, 5e-4).particle_qd.numpy()
    zeta = kd / (2.0 * np.sqrt(ke * reduced_mass))
    restitution = (v[1, 0] - v[0, 0]) / 2.0
    assert restitution == pytest.approx(np.exp(-zeta * np.pi / np.sqrt(1.0 - zeta ** 2)), rel=0.01)


def test_a_column_of_particles_rests_on_the_ground_compressed_by_the_weight_above_each_contact():
    r, m, ke, n = 0.05, 0.1, 1e4, 5
    b = builder(gravity=G, ground=True, ke=ke, kd=20.0, kf=100.0, mu=0.5)
    for k in range(n):   # released touching, then sagging under its own weight
        b.add_particle((0.0, r + 2.0 * r * k, 0.0), (0.0, 0.0, 0.0), mass=m, radius=r)
    model = b.finalize(dtype=sk.float64)
    s = run(model, 1.25, 5e-4)
    y = s.particle_q.numpy()[:, 1]
    # each contact is a spring of stiffness ke carrying the weight of everything above it
    overlap = np.array([(n - k) * m * G / ke for k in range(n)])   # ground, then between k-1 and k
    expected = r + 2.0 * r * np.arange(n) - np.cumsum(overlap)
    assert y == pytest.approx(expected, abs=1e-6)
    assert np.abs(s.particle_qd.numpy()).max() < 1e-4
    assert np.all(s.particle_q.numpy()[:, [0, 2]] == 0.0)


def test_a_pile_settles_in_a_box_without_particles_sinking_into_each_other(rng):
    r, m, kf = 0.05, 0.1, 100.0
    b = builder(gravity=G, ground=True, ke=1e4, kd=10.0, kf=kf, mu=0.5)
    for i, j, k in np.ndindex(3, 3, 3):   # a jittered 3 x 3 x 3 block, released without overlaps
        jitter = rng.uniform(-0.01, 0.01, 3)
        b.add_particle(np.array([(i - 1) * 0.12, r + 0.01 + 0.12 * j, (k - 1) * 0.12]) + jitter, (0.0, 0.0, 0.0),
                       mass=m, radius=r)
    inner, wall = 0.18, 0.05   # four walls around a 0.36 x 0.36 floor
    for axis in (0, 2):
        for side in (-1.0, 1.0):
            pos, half = np.array([0.0, 0.2, 0.0]), np.array([0.3, 0.2, 0.3])
            pos[axis], half[axis] = side * (inner + wall), wall
            b.add_shape_box(pos, (0.0, 0.0, 0.0, 1.0), half)
    model = b.finalize(dtype=sk.float64)
    s = run(model, 1.5, 5e-4)
    q = s.particle_q.numpy()
    gaps = np.linalg.norm(q[:, None] - q[None, :], axis=-1)[np.triu_indices(len(q), 1)] - 2 * r
    assert gaps.min() > -0.02 * r   # the heaviest contact carries two particles: 2 m g / ke = 0.4% of r
    assert q[:, 1].min() > r - 0.02 * r and np.abs(q[:, [0, 2]]).max() < inner - r + 0.02 * r
    # regularised friction cannot hold a tangential load without slipping: a particle resting
    # on a slope creeps at up to about m g / kf; nothing else moves
    assert np.abs(s.particle_qd.numpy()).max() < m * G / kf


# -- gradients ----------------------------------------------------------------------------

W = np.array([[0.0, 0.0, 0.0], [1.0, 0.6, -0.4]])


def colliding_pair():
    """A particle thrown at a slower one, off centre, under gravity: normal, damping and friction all act."""
    b = builder(gravity=G, ke=1e4, kd=5.0, kf=50.0, mu=0.3)
    b.add_particle((0.0, 0.0, 0.0), (2.0, 0.3, 0.1), mass=1.0, radius=0.1)
    b.add_particle((0.3, 0.05, 0.02), (-0.5, 0.0, 0.0), mass=0.7, radius=0.08)
    return b.finalize(dtype=sk.float64, requires_grad=True)


def final_loss(model, state):
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, 80, 1e-3)
    return position_loss(states[-1].particle_q, W)


def test_gradient_of_where_the_struck_particle_ends_up_wrt_the_throw_velocity_matches_finite_differences():
    model = colliding_pair()
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = final_loss(model, s0)
    tape.backward(loss=loss)
    grad = s0.particle_qd.grad.numpy()
    qd = s0.particle_qd.numpy()
    for c in range(3):
        fd = central_difference(lambda: float(final_loss(model, s0).numpy()[0]), qd, (0, c), 1e-6)
        assert abs(fd) > 1e-3   # particle B only moves this way through the contact
        assert grad[0, c] == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("param", ["ke", "kd", "kf", "mu"])
def test_gradient_wrt_a_contact_parameter_matches_finite_differences(param):
    model = colliding_pair()
    with sk.Tape() as tape:
        loss = final_loss(model, model.state())
    tape.backward(loss=loss)
    values = getattr(model.contact, param).numpy()
    fd = central_difference(lambda: float(final_loss(model, model.state()).numpy()[0]), values, 0,
                            1e-6 * values[0])
    assert abs(fd) > 1e-7
    assert getattr(model.contact, param).grad.numpy()[0] == pytest.approx(fd, rel=1e-4)


def test_grid_refuses_a_malformed_device_naming_the_parameter():
    with pytest.raises(ValueError, match=r"HashGrid\(device\) must be 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        HashGrid(device="gpu")


def test_grid_is_made_on_the_default_device():
    assert HashGrid().device == sk.get_device() == "cpu"
