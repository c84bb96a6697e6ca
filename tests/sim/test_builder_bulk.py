"""The bulk adds (cloth and soft grids, soft meshes, add_builder) build exactly what adding
their particles and elements one by one builds: every array of the finalized model is
bit-for-bit the same, in the same order.

The references below spell out, with per-element calls in Python loops, what the grids are:
particles row-major (x fastest, then y, then z), two triangles per cloth cell with the
diagonal alternating, a bending hinge for each edge shared by two triangles (in the order
the second triangle is met), five tetrahedra per soft cell, each tetrahedron's mass split
equally between its four corners."""

import numpy as np
import pytest

import simkit as sk
from simkit.sim import geometry as G
from simkit.sim.columns import Column

POS, VEL = (0.3, 1.0, -0.2), (0.1, 0.0, -0.3)
ROT = (0.1, 0.3, -0.2, 0.9)  # not normalized: the builder normalizes it


def unit(q):
    q = np.asarray(q, dtype=np.float64)
    return q / np.linalg.norm(q)


def model_arrays(model) -> dict:
    """Every array of a finalized model, by name, as numpy."""
    out = {}
    for name, value in vars(model).items():
        if isinstance(value, sk.Array):
            out[name] = value.numpy()
        elif hasattr(value, "_sk_arrays"):
            out.update({f"{name}.{n}": a.numpy() for n, a in value._sk_arrays()})
    return out


def assert_same_model(b_new, b_ref, dtype=sk.float64):
    new, ref = model_arrays(b_new.finalize(dtype=dtype)), model_arrays(b_ref.finalize(dtype=dtype))
    assert new.keys() == ref.keys()
    for name in ref:
        assert new[name].dtype == ref[name].dtype and new[name].shape == ref[name].shape, name
        # bit for bit: compare the bytes, so that -0.0 and 0.0 (or two NaNs) count as different
        assert new[name].tobytes() == ref[name].tobytes(), f"{name} differs"


# -- references: per-element calls --------------------------------------------------------

def ref_grid_triangles(dim_x, dim_y, start):
    tris = []
    for y in range(dim_y):
        for x in range(dim_x):
            a = start + y * (dim_x + 1) + x
            b, c, d = a + 1, a + dim_x + 2, a + dim_x + 1
            tris += [(a, b, c), (a, c, d)] if (x + y) % 2 == 0 else [(a, b, d), (b, c, d)]
    return tris


def ref_bending_edges(tris):
    first, edges = {}, []
    for t in tris:
        for k in range(3):
            v0, v1, o = t[k], t[(k + 1) % 3], t[(k + 2) % 3]
            key = (min(v0, v1), max(v0, v1))
            if key in first:
                o_other, w0, w1 = first.pop(key)
                edges.append((o_other, o, w0, w1))
            else:
                first[key] = (o, v0, v1)
    return edges


def ref_cloth_grid(b, pos, rot, vel, dim_x, dim_y, cell_x, cell_y, mass, fix_left=False, fix_right=False,
                   fix_top=False, fix_bottom=False, k_mu=1.0e3, k_lambda=1.0e3, k_damp=0.0, edge_ke=0.1,
                   edge_kd=0.0, radius=0.01):
    start, q = b.particle_count, unit(rot)
    for y in range(dim_y + 1):
        for x in range(dim_x + 1):
            pinned = (fix_left and x == 0) or (fix_right and x == dim_x) or (fix_bottom and y == 0) or \
                     (fix_top and y == dim_y)
            p = np.asarray(pos, float) + G.quat_rotate(q, np.array([x * cell_x, y * cell_y, 0.0]))
            b.add_particle(p, vel, 0.0 if pinned else mass, radius)
    tris = ref_grid_triangles(dim_x, dim_y, start)
    for i, j, k in tris:
        b.add_triangle(i, j, k, k_mu, k_lambda, k_damp)
    for o0, o1, v0, v1 in ref_bending_edges(tris):
        b.add_edge(o0, o1, v0, v1, edge_ke, edge_kd)
    return start


def ref_grid_tets(nx, ny, nz):
    def vid(x, y, z):
        return (z * (ny + 1) + y) * (nx + 1) + x

    even = [(0, 1, 2, 4), (3, 2, 1, 7), (5, 4, 7, 1), (6, 7, 4, 2), (1, 2, 4, 7)]
    odd = [(1, 3, 0, 5), (2, 0, 3, 6), (4, 5, 6, 0), (7, 6, 5, 3), (0, 3, 5, 6)]
    tets = []
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                v = [vid(x + (c & 1), y + ((c >> 1) & 1), z + ((c >> 2) & 1)) for c in range(8)]
                for t in (even if (x + y + z) % 2 == 0 else odd):
                    corner = np.array([[c & 1, (c >> 1) & 1, (c >> 2) & 1] for c in t], dtype=float)
                    if np.linalg.det((corner[1:] - corner[0]).T) < 0.0:
                        t = (t[0], t[1], t[3], t[2])
                    tets.append([v[a] for a in t])
    return np.array(tets, dtype=np.int64).reshape(-1, 4)


def ref_tet_body(b, world, tets, vel, density, k_mu, k_lambda, k_damp, radius, pinned):
    mass = np.zeros(len(world))
    for t in tets:
        _pose, vol = G.tet_rest_pose(*world[t])
        mass[t] += density * abs(vol) / 4.0
    start = b.particle_count
    for p, m, pin in zip(world, mass, pinned):
        b.add_particle(p, vel, 0.0 if pin else m, radius)
    for t in tets:
        b.add_tetrahedron(*(int(x) + start for x in t), k_mu, k_lambda, k_damp)
    return start


def ref_soft_grid(b, pos, rot, vel, nx, ny, nz, cx, cy, cz, density, k_mu, k_lambda, k_damp, fix_left=False,
                  fix_right=False, fix_top=False, fix_bottom=False, radius=0.01):
    local = np.array([[x * cx, y * cy, z * cz] for z in range(nz + 1) for y in range(ny + 1)
                      for x in range(nx + 1)])
    pinned = np.zeros(len(local), dtype=bool)
    if fix_left:
        pinned |= local[:, 0] <= 0.0
    if fix_right:
        pinned |= local[:, 0] >= nx * cx - 1e-12
    if fix_bottom:
        pinned |= local[:, 1] <= 0.0
    if fix_top:
        pinned |= local[:, 1] >= ny * cy - 1e-12
    world = np.array([np.asarray(pos, float) + G.quat_rotate(unit(rot), p) for p in local])
    return ref_tet_body(b, world, ref_grid_tets(nx, ny, nz), vel, density, k_mu, k_lambda, k_damp, radius, pinned)


# -- cloth --------------------------------------------------------------------------------

CLOTH_CASES = [
    dict(dim_x=1, dim_y=1, cell_x=0.1, cell_y=0.1, mass=0.01),
    dict(dim_x=3, dim_y=5, cell_x=0.07, cell_y=0.13, mass=0.02, fix_left=True),
    dict(dim_x=6, dim_y=3, cell_x=0.11, cell_y=0.05, mass=0.0, fix_right=True, fix_top=True),
    dict(dim_x=5, dim_y=7, cell_x=0.3, cell_y=0.2, mass=1.5, fix_bottom=True, fix_left=True, k_mu=2e3,
         k_lambda=5e2, k_damp=0.3, edge_ke=0.7, edge_kd=0.01, radius=0.02),
    dict(dim_x=4, dim_y=4, cell_x=0.1, cell_y=0.1, mass=0.1, fix_left=True, fix_right=True, fix_top=True,
         fix_bottom=True),
]


@pytest.fixture(params=["one block", "blocks of 5"])
def blocks(request, monkeypatch):
    """The geometry works through elements in blocks: also run with blocks of 5 elements, so
    that small grids cross block borders."""
    if request.param == "blocks of 5":
        monkeypatch.setattr(G, "_BLOCK", 5)


@pytest.mark.parametrize("case", CLOTH_CASES, ids=lambda c: f"{c['dim_x']}x{c['dim_y']}")
def test_a_cloth_grid_is_what_its_particles_triangles_and_hinges_added_one_by_one_are(case, blocks):
    new, ref = sk.sim.ModelBuilder(), sk.sim.ModelBuilder()
    assert new.add_cloth_grid(POS, ROT, VEL, **case) == ref_cloth_grid(ref, POS, ROT, VEL, **case) == 0
    assert_same_model(new, ref)
    assert_same_model(new, ref, dtype=sk.float32)


def test_cloth_grids_after_other_particles_and_elements_number_theirs_after_them():
    new, ref = sk.sim.ModelBuilder(), sk.sim.ModelBuilder()
    for b, cloth in ((new, new.add_cloth_grid), (ref, lambda *a, **k: ref_cloth_grid(ref, *a, **k))):
        b.add_particle((0.0, 2.0, 0.0), (0.0, 0.0, 0.0), 1.0)
        b.add_particle((0.0, 2.5, 0.0), (0.0, 0.0, 0.0), 1.0)
        b.add_spring(0, 1, 10.0, 0.1)
        assert cloth((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), VEL, 3, 2, 0.1, 0.1, 0.01, fix_left=True) == 2
        b.add_spring(2, 5, 20.0, 0.0)
        assert cloth((1.0, 1.0, 0.0), ROT, VEL, 2, 3, 0.2, 0.1, 0.02) == 14
        b.add_triangle(0, 1, 3)
    assert_same_model(new, ref)


# -- soft bodies --------------------------------------------------------------------------

SOFT_CASES = [
    dict(nx=1, ny=1, nz=1, cx=0.1, cy=0.1, cz=0.1, density=100.0),
    dict(nx=3, ny=2, nz=5, cx=0.1, cy=0.2, cz=0.07, density=500.0, fix_left=True),
    dict(nx=2, ny=3, nz=3, cx=0.05, cy=0.05, cz=0.05, density=1e3, fix_right=True, fix_top=True, radius=0.03),
    dict(nx=4, ny=3, nz=2, cx=0.3, cy=0.1, cz=0.2, density=10.0, fix_bottom=True, fix_left=True, fix_right=True),
]


def soft_args(c):
    return dict(dim_x=c["nx"], dim_y=c["ny"], dim_z=c["nz"], cell_x=c["cx"], cell_y=c["cy"], cell_z=c["cz"],
                **{k: v for k, v in c.items() if k not in ("nx", "ny", "nz", "cx", "cy", "cz")})


@pytest.mark.parametrize("case", SOFT_CASES, ids=lambda c: f"{c['nx']}x{c['ny']}x{c['nz']}")
def test_a_soft_grid_is_what_its_particles_and_tetrahedra_added_one_by_one_are(case, blocks):
    material = dict(k_mu=1e4, k_lambda=2e4, k_damp=0.1)
    new, ref = sk.sim.ModelBuilder(), sk.sim.ModelBuilder()
    new.add_particle((0.0, 3.0, 0.0), (0.0, 0.0, 0.0), 1.0)
    ref.add_particle((0.0, 3.0, 0.0), (0.0, 0.0, 0.0), 1.0)
    assert new.add_soft_grid(POS, ROT, VEL, **soft_args(case), **material) == 1
    assert ref_soft_grid(ref, POS, ROT, VEL, **case, **material) == 1
    assert_same_model(new, ref)
    assert_same_model(new, ref, dtype=sk.float32)


def test_a_soft_mesh_with_inverted_tetrahedra_is_what_they_added_one_by_one_are(blocks):
    rng = np.random.default_rng(3)
    verts = rng.normal(size=(12, 3))
    tets = np.array([rng.permutation(12)[:4] for _ in range(20)])   # about half of them inverted
    new, ref = sk.sim.ModelBuilder(), sk.sim.ModelBuilder()
    new.add_soft_mesh(POS, ROT, 0.7, VEL, verts, tets, 300.0, 1e4, 1e4, 0.0, radius=0.02)
    world = np.asarray(POS) + G.quat_rotate(unit(ROT), verts * 0.7)
    ref_tet_body(ref, world, tets, VEL, 300.0, 1e4, 1e4, 0.0, 0.02, np.zeros(12, dtype=bool))
    assert_same_model(new, ref)


# -- worlds -------------------------------------------------------------------------------

def world_builder() -> sk.sim.ModelBuilder:
    b = sk.sim.ModelBuilder()
    b.add_cloth_grid((0.0, 1.0, 0.0), ROT, VEL, 3, 2, 0.1, 0.1, 0.01, fix_left=True)
    b.add_soft_grid((0.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0), VEL, 2, 1, 2, 0.1, 0.1, 0.1, 100.0, 1e3, 1e3, 0.0)
    b.add_spring(0, 14, 10.0, 0.1)
    b.add_particle((0.5, 0.5, 0.5), (1.0, 0.0, 0.0), 0.5)
    body = b.add_body(sk.transform((0.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body)
    b.add_shape_box((1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.2, 0.3))
    b.add_joint_revolute(-1, body)
    return b


XFORMS = [None, sk.transform((1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
          sk.transform((0.0, 0.2, 3.0), tuple(unit((0.2, -0.1, 0.4, 0.8)))),
          sk.transform((-2.0, 0.0, 1.0), tuple(unit((0.0, 1.0, 0.0, 1.0))))]


def test_worlds_are_copies_of_the_added_builder_placed_by_their_transforms():
    other = world_builder()
    one = model_arrays(other.finalize(dtype=sk.float64))
    scene = sk.sim.ModelBuilder()
    scene.add_particle((0.0, 5.0, 0.0), (0.0, 0.0, 0.0), 1.0)          # world -1, before the worlds
    for X in XFORMS:
        scene.add_builder(other, xform=X)
    scene.add_particle((0.0, 6.0, 0.0), (0.0, 0.0, 0.0), 2.0)          # world -1, after them
    got = model_arrays(scene.finalize(dtype=sk.float64))
    n, per = 1, other.particle_count
    for w, X in enumerate(XFORMS):
        rows = slice(n + w * per, n + (w + 1) * per)
        q, qd = one["particle_q"], one["particle_qd"]
        if X is not None:
            X = np.asarray(X, dtype=np.float64)       # sk.transform is float32; the builder normalizes q
            X = np.concatenate([X[:3], unit(X[3:])])
            q, qd = X[:3] + G.quat_rotate(X[3:], q), G.quat_rotate(X[3:], qd)
        assert got["particle_q"][rows].tobytes() == q.tobytes()
        assert got["particle_qd"][rows].tobytes() == qd.tobytes()
        for name in ("particles.mass", "particles.inv_mass", "particles.radius"):
            assert got[name][rows].tobytes() == one[name].tobytes(), name
        for kind, count in (("springs", other.spring_count), ("triangles", other.tri_count),
                            ("edges", other.edge_count), ("tets", other.tet_count)):
            rows_k = slice(w * count, (w + 1) * count)
            for name in (k for k in one if k.startswith(kind + ".")):
                expect = one[name] + (n + w * per) if name.endswith(".indices") else one[name]
                assert got[name][rows_k].tobytes() == expect.tobytes(), f"world {w}: {name}"
    assert got["particle_q"][[0, -1]].tolist() == [[0.0, 5.0, 0.0], [0.0, 6.0, 0.0]]
    assert got["particle_world"].tolist() == [-1] + sum(([w] * per for w in range(len(XFORMS))), []) + [-1]


def test_many_worlds_of_grids_give_the_model_of_the_same_builders_added_one_world_at_a_time_by_element():
    # add_builder of a grid builder, against the same grid built per element in each world's place
    other = sk.sim.ModelBuilder()
    other.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), VEL, 3, 3, 0.1, 0.1, 0.01, fix_top=True)
    new, ref = sk.sim.ModelBuilder(), sk.sim.ModelBuilder()
    for w in range(5):
        new.add_builder(other)
        ref_cloth_grid(ref, (0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), VEL, 3, 3, 0.1, 0.1, 0.01, fix_top=True)
    new_m, ref_m = model_arrays(new.finalize(dtype=sk.float64)), model_arrays(ref.finalize(dtype=sk.float64))
    for name in ref_m:
        if name != "particle_world":
            assert new_m[name].tobytes() == ref_m[name].tobytes(), name
    assert new_m["particle_world"].tolist() == sum(([w] * 16 for w in range(5)), [])


# -- the hinges of any triangle mesh ------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_bending_edges_of_a_mesh_pair_its_triangles_in_walking_order(seed):
    # random triangles over few vertices: edges with one, two, three or more triangles
    rng = np.random.default_rng(seed)
    tris = [tuple(int(v) for v in rng.permutation(7)[:3]) for _ in range(40)]
    assert G.bending_edges(tris).tolist() == [list(e) for e in ref_bending_edges(tris)]


@pytest.mark.parametrize("dims", [(1, 1), (2, 1), (1, 3), (6, 5), (9, 4)])
def test_the_hinges_of_a_grid_are_those_found_in_its_triangles(dims):
    tris = G.grid_triangles(*dims, start=3)
    assert G.grid_bending_edges(*dims, start=3).tolist() == [list(e) for e in ref_bending_edges(tris.tolist())]


# -- bulk adds refuse what their elements would refuse ------------------------------------

def lengths(b):
    return {k: len(v) for k, v in vars(b).items() if isinstance(v, (list, Column))}


def test_a_cloth_grid_with_degenerate_triangles_is_refused_and_leaves_the_builder_as_it_was():
    b = sk.sim.ModelBuilder()
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0)
    before = lengths(b)
    with pytest.raises(ValueError, match=r"add_cloth_grid: triangle \(1, 2, 6\) is degenerate \(rest area 5e-15\)"):
        b.add_cloth_grid((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 3, 3, 1e-7, 1e-7, 0.01)
    assert lengths(b) == before


def test_a_cloth_grid_placed_out_of_the_float_range_is_refused_naming_the_particle():
    b = sk.sim.ModelBuilder()
    with pytest.raises(ValueError, match=r"add_cloth_grid: particle 1 gets a non-finite position"):
        b.add_cloth_grid((1e308, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 2, 2, 1e308, 1.0, 0.01)
    assert b.particle_count == 0 and b.tri_count == 0


def test_a_soft_grid_whose_masses_overflow_is_refused_naming_the_particle():
    b = sk.sim.ModelBuilder()
    with pytest.raises(ValueError, match=r"add_soft_grid: particle 0 gets a non-finite mass"):
        b.add_soft_grid((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), 2, 2, 2, 1e200, 1e200, 1e200, 1.0, 1e3, 1e3, 0.0)
    assert b.particle_count == 0 and b.tet_count == 0


def test_a_soft_mesh_with_a_repeated_corner_is_refused_and_leaves_the_builder_as_it_was():
    b = sk.sim.ModelBuilder()
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0)
    verts = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    before = lengths(b)
    with pytest.raises(ValueError, match=r"add_soft_mesh: add_tetrahedron: particle indices must differ, "
                                         r"got \(1, 2, 3, 2\)"):
        b.add_soft_mesh((0, 0, 0), (0, 0, 0, 1), 1.0, (0, 0, 0), verts, [[0, 1, 2, 3], [0, 1, 2, 1]], 100.0, 1e3,
                        1e3, 0.0)
    assert lengths(b) == before


# -- storage ------------------------------------------------------------------------------

def test_a_column_keeps_rows_and_blocks_in_the_order_they_were_added():
    c = Column((2,))
    c.append((1.0, 2.0))
    c.extend(np.array([[3.0, 4.0], [5.0, 6.0]]))
    c.append(np.array([7.0, 8.0]))
    c.extend(np.broadcast_to(np.array([9.0, 9.5]), (2, 2)), copy=False)
    assert len(c) == 6
    assert [list(c[i]) for i in range(6)] == [[1, 2], [3, 4], [5, 6], [7, 8], [9, 9.5], [9, 9.5]]
    assert list(c[-1]) == [9.0, 9.5]
    assert c.array().tolist() == [[1, 2], [3, 4], [5, 6], [7, 8], [9, 9.5], [9, 9.5]]
    with pytest.raises(IndexError, match="row 6 is out of range"):
        c[6]


def test_writing_a_row_of_a_broadcast_block_writes_that_row_only():
    c = Column()
    c.extend(np.arange(3.0))
    c.extend(np.broadcast_to(np.float64(0.5), (4,)), copy=False)
    c[4] = 2.0
    assert c.array().tolist() == [0.0, 1.0, 2.0, 0.5, 2.0, 0.5, 0.5]


def test_truncating_a_column_drops_the_rows_after_it_whatever_their_blocks():
    c = Column()
    c.extend(np.arange(3.0))
    c.append(3.0)
    c.extend(np.arange(4.0, 8.0))
    c.truncate(5)
    assert c.array().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    c.truncate(2)
    c.append(9.0)
    assert c.array().tolist() == [0.0, 1.0, 9.0]


def test_writing_into_a_world_leaves_the_builder_it_was_copied_from_alone():
    other = sk.sim.ModelBuilder()
    other.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), VEL, 2, 2, 0.1, 0.1, 0.01)
    scene = sk.sim.ModelBuilder()
    scene.add_builder(other)
    scene.add_builder(other)
    scene.tri_k_mu[1] = 5.0                      # a broadcast block, shared when copied
    scene.particle_mass[0] = 7.0                 # an array block
    scene.particle_q[9][1] = 3.0                 # a row of the second world, in place
    assert other.tri_k_mu.array().tolist() == [1e3] * 8
    assert other.particle_mass.array().tolist() == [0.01] * 9
    assert other.particle_q[0].tolist() == [0.0, 1.0, 0.0]
    assert scene.tri_k_mu.array().tolist() == [1e3, 5.0] + [1e3] * 14
    assert scene.particle_q.array()[[0, 9], 1].tolist() == [1.0, 3.0]


def test_a_big_grid_is_stored_in_a_few_blocks_and_finalized_within_a_few_times_its_model_size():
    # no Python object per element, and memory bounded by the model's size (the per-element
    # builder peaked at about 8 times it)
    import tracemalloc

    b = sk.sim.ModelBuilder()
    tracemalloc.start()
    try:
        b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), VEL, 200, 200, 0.01, 0.01, 0.01)
        model = b.finalize(dtype=sk.float32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = sum(a.nbytes for a in model_arrays(model).values())
    assert peak < 3.5 * size, f"peak {peak / 2**20:.1f} MiB for a model of {size / 2**20:.1f} MiB"
    assert all(len(getattr(b, name)._rows) == 0 and len(getattr(b, name)._blocks) == 1 for name in
               ("particle_q", "tri_pose", "edge_rest"))
