"""sk.Mesh and the mesh query builtins, against warp-lang 1.19 running the same kernel text
(tests/core/mesh_query_kernels.py, imported once as simkit and once as Warp) and against
closed forms: the distance to a cube, ray hits on a sphere."""


import numpy as np
import pytest

import simkit as sk
from warp_twin import import_as_warp  # tests/core is on sys.path

import mesh_query_kernels as K  # tests/core is on sys.path (pytest prepends it)

# The unit cube [0, 1]^3 as 12 triangles, counterclockwise seen from outside.
CUBE_POINTS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]],
                       dtype=np.float32)
CUBE_INDICES = np.array([0, 3, 2, 0, 2, 1, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4,
                         2, 3, 7, 2, 7, 6, 0, 4, 7, 0, 7, 3, 1, 2, 6, 1, 6, 5], dtype=np.int32)


def icosphere(subdivisions: int = 2):
    """Points on the unit sphere and outward (counterclockwise) triangles."""
    t = (1 + 5 ** 0.5) / 2
    v = [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
         [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
    f = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6],
         [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10],
         [8, 6, 7], [9, 8, 1]]
    v = [np.array(p, dtype=np.float64) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        mid, out = {}, []

        def middle(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                m = v[a] + v[b]
                v.append(m / np.linalg.norm(m))
                mid[key] = len(v) - 1
            return mid[key]
        for a, b, c in f:
            ab, bc, ca = middle(a, b), middle(b, c), middle(c, a)
            out += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
        f = out
    return np.array(v, dtype=np.float32), np.array(f, dtype=np.int32).ravel()


def make_mesh(M, points, indices, device, velocities=None):
    vel = None if velocities is None else M.array(velocities, dtype=M.vec3, device=device)
    return M.Mesh(points=M.array(points, dtype=M.vec3, device=device),
                  indices=M.array(indices, dtype=M.int32, device=device), velocities=vel,
                  support_winding_number=True)


def run_point_query(M, mod, kernel, points, indices, queries, max_dist, device):
    mesh = make_mesh(M, points, indices, device)
    n = len(queries)
    outs = [M.zeros(n, dtype=M.int32, device=device), M.zeros(n, dtype=M.float32, device=device),
            M.zeros(n, dtype=M.int32, device=device), M.zeros(n, dtype=M.vec2, device=device),
            M.zeros(n, dtype=M.vec3, device=device), M.zeros(n, dtype=M.float32, device=device)]
    M.launch(getattr(mod, kernel), n, inputs=[mesh.id, M.array(queries, dtype=M.vec3, device=device), max_dist],
             outputs=outs, device=device)
    return dict(zip(("found", "sign", "face", "uv", "pos", "dist"), (o.numpy() for o in outs)))


def run_ray_query(M, mod, points, indices, starts, dirs, max_t, device):
    mesh = make_mesh(M, points, indices, device)
    n = len(starts)
    outs = [M.zeros(n, dtype=M.int32, device=device), M.zeros(n, dtype=M.float32, device=device),
            M.zeros(n, dtype=M.int32, device=device), M.zeros(n, dtype=M.float32, device=device),
            M.zeros(n, dtype=M.vec2, device=device), M.zeros(n, dtype=M.vec3, device=device),
            M.zeros(n, dtype=M.vec3, device=device)]
    M.launch(mod.query_ray, n, inputs=[mesh.id, M.array(starts, dtype=M.vec3, device=device),
                                       M.array(dirs, dtype=M.vec3, device=device), max_t], outputs=outs, device=device)
    return dict(zip(("found", "sign", "face", "t", "uv", "normal", "hit"), (o.numpy() for o in outs)))


@pytest.fixture(scope="module")
def warp_kernels(tmp_path_factory):
    """(warp, the kernel text imported as Warp)."""
    return import_as_warp(K, tmp_path_factory.mktemp("warp_mesh"))


def cube_queries(n=300, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 2.0, (n, 3)).astype(np.float32)


def cube_distance(p):
    """Signed distance to the unit cube (negative inside)."""
    q = np.abs(p - 0.5) - 0.5
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=1)
    return outside + np.minimum(q.max(axis=1), 0.0)


def interior_of_a_face(uv):
    w = np.c_[uv, 1.0 - uv.sum(axis=1)]
    return (w > 1e-4).all(axis=1)


POINT_KERNELS = ["query_point", "query_point_no_sign", "query_point_sign_normal", "query_point_sign_winding_number"]


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
@pytest.mark.parametrize("kernel", POINT_KERNELS)
@pytest.mark.parametrize("shape", ["cube", "icosphere"])
def test_point_queries_match_warp(warp_kernels, kernel, shape):
    wp, W = warp_kernels
    points, indices = (CUBE_POINTS, CUBE_INDICES) if shape == "cube" else icosphere(2)
    queries = cube_queries() if shape == "cube" else np.random.default_rng(1).uniform(-1.5, 1.5, (300, 3))
    queries = queries.astype(np.float32)
    ours = run_point_query(sk, K, kernel, points, indices, queries, 0.8, "cpu")
    theirs = run_point_query(wp, W, kernel, points, indices, queries, 0.8, "cpu")
    found = theirs["found"] == 1
    assert 50 < found.sum() < len(queries)  # some points beyond max_dist, many within
    np.testing.assert_array_equal(ours["found"], theirs["found"])
    np.testing.assert_allclose(ours["pos"][found], theirs["pos"][found], atol=2e-6)
    np.testing.assert_allclose(ours["dist"][found], theirs["dist"][found], atol=2e-6)
    # signs, away from the surface (where float rounding may pick either side)
    clear = found & (theirs["dist"] > 1e-3)
    np.testing.assert_array_equal(ours["sign"][clear], theirs["sign"][clear])
    # the face and its barycentrics where the closest point is unique (inside one face)
    unique = found & interior_of_a_face(theirs["uv"])
    assert unique.sum() > 20
    np.testing.assert_array_equal(ours["face"][unique], theirs["face"][unique])
    np.testing.assert_allclose(ours["uv"][unique], theirs["uv"][unique], atol=2e-6)


@pytest.mark.parametrize("kernel", ["query_point", "query_point_sign_normal", "query_point_sign_winding_number"])
def test_signed_distance_to_a_cube_matches_the_closed_form(device, kernel):
    queries = cube_queries(seed=2)
    exact = cube_distance(queries.astype(np.float64))
    r = run_point_query(sk, K, kernel, CUBE_POINTS, CUBE_INDICES, queries, 1.0e6, device)
    assert (r["found"] == 1).all()
    np.testing.assert_allclose(r["dist"], np.abs(exact), atol=2e-6)
    clear = np.abs(exact) > 1e-3
    np.testing.assert_array_equal(r["sign"][clear], np.where(exact[clear] < 0, -1.0, 1.0))


def test_no_sign_leaves_the_sign_at_zero_as_warp_does(device):
    r = run_point_query(sk, K, "query_point_no_sign", CUBE_POINTS, CUBE_INDICES, cube_queries(50), 1.0e6, device)
    assert (r["found"] == 1).all() and (r["sign"] == 0).all()


def test_max_dist_is_strict_faces_at_or_beyond_it_are_not_found(device):
    # the point is 0.5 from the cube's top face and farther from every other one
    q = np.array([[0.5, 0.5, 1.5]], dtype=np.float32)
    at = run_point_query(sk, K, "query_point", CUBE_POINTS, CUBE_INDICES, q, 0.5, device)
    beyond = run_point_query(sk, K, "query_point", CUBE_POINTS, CUBE_INDICES, q, 0.5001, device)
    assert at["found"][0] == 0 and beyond["found"][0] == 1
    np.testing.assert_allclose(beyond["pos"][0], [0.5, 0.5, 1.0], atol=1e-6)


def ray_cases(n=200, seed=3):
    """Rays from points around the unit sphere toward random points near its center."""
    rng = np.random.default_rng(seed)
    starts = rng.normal(size=(n, 3))
    starts = 2.5 * starts / np.linalg.norm(starts, axis=1, keepdims=True)
    aims = rng.uniform(-1.2, 1.2, (n, 3))
    dirs = aims - starts
    return starts.astype(np.float32), dirs.astype(np.float32)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
@pytest.mark.parametrize("shape", ["cube", "icosphere"])
def test_ray_queries_match_warp(warp_kernels, shape):
    wp, W = warp_kernels
    points, indices = (CUBE_POINTS, CUBE_INDICES) if shape == "cube" else icosphere(2)
    starts, dirs = ray_cases()
    if shape == "cube":
        starts = starts + 0.5
    ours = run_ray_query(sk, K, points, indices, starts, dirs, 1.0, "cpu")
    theirs = run_ray_query(wp, W, points, indices, starts, dirs, 1.0, "cpu")
    hit = theirs["found"] == 1
    assert 20 < hit.sum() < len(starts)
    np.testing.assert_array_equal(ours["found"], theirs["found"])
    for name in ("sign", "t", "normal", "hit"):
        np.testing.assert_allclose(ours[name][hit], theirs[name][hit], atol=2e-5, err_msg=name)
    unique = hit & interior_of_a_face(theirs["uv"])
    np.testing.assert_array_equal(ours["face"][unique], theirs["face"][unique])
    np.testing.assert_allclose(ours["uv"][unique], theirs["uv"][unique], atol=2e-5)


def test_ray_hits_on_an_icosphere_lie_on_the_sphere_between_its_in_and_circumradius(device):
    points, indices = icosphere(3)
    starts, dirs = ray_cases(seed=4)
    unit = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    r = run_ray_query(sk, K, points, indices, starts, unit, 1.0e6, device)
    # closed form on the unit sphere: |s + t d| = 1, the first root
    b = (starts * unit).sum(axis=1)
    disc = b * b - ((starts * starts).sum(axis=1) - 1.0)
    meets = disc > 0.05  # clear of grazing rays, which may miss the inscribed polyhedron
    t_sphere = -b - np.sqrt(np.maximum(disc, 0.0))
    assert meets.sum() > 50
    assert (r["found"][meets] == 1).all()
    assert (r["found"][disc < -0.05] == 0).all()
    hits = r["hit"][meets]
    np.testing.assert_allclose(starts[meets] + r["t"][meets, None] * unit[meets], hits, atol=1e-5)
    radius = np.linalg.norm(hits, axis=1)
    assert (radius <= 1.0 + 1e-5).all() and (radius > 0.98).all()  # a level-3 icosphere's faces lie within
    assert (r["t"][meets] >= t_sphere[meets] - 1e-5).all()
    assert (r["sign"][meets] > 0).all()  # every hit from outside meets the front of a face
    assert (np.sum(r["normal"][meets] * hits, axis=1) / radius > 0.99).all()


def test_ray_from_inside_meets_the_back_of_a_face(device):
    r = run_ray_query(sk, K, CUBE_POINTS, CUBE_INDICES, np.array([[0.5, 0.5, 0.5]], dtype=np.float32),
                      np.array([[0.0, 0.0, 2.0]], dtype=np.float32), 1.0e6, device)
    assert r["found"][0] == 1 and r["sign"][0] == -1.0  # the back; |cross(p1 - p0, p2 - p0)| = 1 here
    np.testing.assert_allclose(r["t"][0], 0.25, atol=1e-6)  # t in multiples of |dir|
    np.testing.assert_allclose(r["normal"][0], [0, 0, 1], atol=1e-6)


def test_ray_beyond_max_t_or_pointing_away_misses(device):
    starts = np.array([[0.5, 0.5, 3.0], [0.5, 0.5, 3.0]], dtype=np.float32)
    dirs = np.array([[0.0, 0.0, -1.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    short = run_ray_query(sk, K, CUBE_POINTS, CUBE_INDICES, starts, dirs, 2.0, device)
    assert (short["found"] == 0).all()
    long = run_ray_query(sk, K, CUBE_POINTS, CUBE_INDICES, starts, dirs, 2.0001, device)
    assert long["found"].tolist() == [1, 0]


def eval_case(device, M=sk):
    points, indices = icosphere(1)
    rng = np.random.default_rng(5)
    velocities = rng.normal(size=points.shape).astype(np.float32)
    n = 16
    faces = rng.integers(0, len(indices) // 3, n).astype(np.int32)
    u, v = rng.uniform(0, 0.5, n).astype(np.float32), rng.uniform(0, 0.5, n).astype(np.float32)
    mesh = make_mesh(M, points, indices, device, velocities)
    return mesh, points, indices.reshape(-1, 3), velocities, faces, u, v


def test_eval_position_and_velocity_weigh_the_corners_by_u_v_and_1_minus_u_minus_v(device):
    mesh, points, tris, velocities, faces, u, v = eval_case(device)
    pos, vel = sk.zeros(len(faces), dtype=sk.vec3), sk.zeros(len(faces), dtype=sk.vec3)
    sk.launch(K.eval_at, len(faces), inputs=[mesh.id, sk.array(faces), sk.array(u), sk.array(v)], outputs=[pos, vel])
    w = np.c_[u, v, 1 - u - v][:, :, None]
    np.testing.assert_allclose(pos.numpy(), (points[tris[faces]] * w).sum(axis=1), atol=1e-6)
    np.testing.assert_allclose(vel.numpy(), (velocities[tris[faces]] * w).sum(axis=1), atol=1e-6)


def test_eval_velocity_of_a_mesh_without_velocities_is_zero(device):
    mesh = make_mesh(sk, CUBE_POINTS, CUBE_INDICES, device)
    pos, vel = sk.zeros(1, dtype=sk.vec3), sk.full(1, 7.0, dtype=sk.vec3)
    sk.launch(K.eval_at, 1, inputs=[mesh.id, sk.array(np.array([3], dtype=np.int32)), sk.array([0.2]),
                                    sk.array([0.3])], outputs=[pos, vel])
    assert (vel.numpy() == 0).all()


def eval_gradients(M, mod, device):
    mesh, points, tris, velocities, faces, u, v = eval_case(device, M)
    w = np.random.default_rng(6).normal(size=(len(faces), 3)).astype(np.float32)
    ua = M.array(u, dtype=M.float32, device=device, requires_grad=True)
    va = M.array(v, dtype=M.float32, device=device, requires_grad=True)
    loss = M.zeros(1, dtype=M.float32, device=device, requires_grad=True)
    tape = M.Tape()
    with tape:
        M.launch(mod.weighted_positions, len(faces), inputs=[mesh.id, M.array(faces, dtype=M.int32, device=device),
                                                               ua, va, M.array(w, dtype=M.vec3, device=device)],
                 outputs=[loss], device=device)
    tape.backward(loss=loss)
    return ua.grad.numpy(), va.grad.numpy(), (points, tris, velocities, faces, u, v, w)


def test_eval_position_and_velocity_gradients_in_u_v_match_the_closed_form(device):
    gu, gv, (points, tris, velocities, faces, u, v, w) = eval_gradients(sk, K, device)
    p, q = points[tris[faces]], velocities[tris[faces]]
    y = (q * np.c_[u, v, 1 - u - v][:, :, None]).sum(axis=1)
    want_u = ((p[:, 0] - p[:, 2]) * w).sum(1) + ((q[:, 0] - q[:, 2]) * y).sum(1)
    want_v = ((p[:, 1] - p[:, 2]) * w).sum(1) + ((q[:, 1] - q[:, 2]) * y).sum(1)
    np.testing.assert_allclose(gu, want_u, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gv, want_v, rtol=1e-5, atol=1e-5)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_eval_gradients_match_warp(warp_kernels):
    wp, W = warp_kernels
    ours = eval_gradients(sk, K, "cpu")
    theirs = eval_gradients(wp, W, "cpu")
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)


def test_distance_gradient_in_the_query_point_is_the_unit_offset(device):
    """The query's u, v are constants to the adjoint; the distance's gradient is still exact
    (the closest point moves along the surface, perpendicular to the offset)."""
    mesh = make_mesh(sk, CUBE_POINTS, CUBE_INDICES, device)
    q = np.array([[0.3, 0.4, 1.6], [1.5, 1.5, 0.5], [0.5, 0.2, 0.45]], dtype=np.float32)
    pts = sk.array(q, dtype=sk.vec3, requires_grad=True)
    dist = sk.zeros(len(q), requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(K.distance_to_mesh, len(q), inputs=[mesh.id, pts], outputs=[dist])
    tape.backward(grads={dist: sk.ones(len(q))})
    closest = np.array([[0.3, 0.4, 1.0], [1.0, 1.0, 0.5], [0.5, 0.0, 0.45]])
    offset = q - closest
    np.testing.assert_allclose(pts.grad.numpy(), offset / np.linalg.norm(offset, axis=1, keepdims=True), atol=1e-5)


def test_refit_follows_points_moved_in_place(device):
    mesh = make_mesh(sk, CUBE_POINTS, CUBE_INDICES, device)
    mesh.points.assign(CUBE_POINTS + np.float32(3.0))
    mesh.refit()
    queries = cube_queries(seed=7) + np.float32(3.0)
    dist = sk.zeros(len(queries))
    sk.launch(K.distance_to_mesh, len(queries), inputs=[mesh.id, sk.array(queries, dtype=sk.vec3)], outputs=[dist])
    np.testing.assert_allclose(dist.numpy(), np.abs(cube_distance(queries.astype(np.float64) - 3.0)), atol=3e-6)


def test_mesh_keeps_the_arrays_it_was_given_and_its_id_is_a_uint64(device):
    p, i = sk.array(CUBE_POINTS, dtype=sk.vec3), sk.array(CUBE_INDICES, dtype=sk.int32)
    mesh = sk.Mesh(p, i)
    assert mesh.points is p and mesh.indices is i and mesh.velocities is None
    assert isinstance(mesh.id, int) and 0 < mesh.id < 2 ** 64
    assert "12 triangles" in repr(mesh)


def test_indices_not_a_multiple_of_three_are_refused():
    with pytest.raises(ValueError, match="not a positive multiple of 3"):
        sk.Mesh(sk.array(CUBE_POINTS, dtype=sk.vec3), sk.array(CUBE_INDICES[:-1], dtype=sk.int32))


def test_out_of_range_indices_are_refused_naming_the_triangle():
    bad = CUBE_INDICES.copy()
    bad[7] = 8
    with pytest.raises(ValueError, match=r"triangle 2 has point indices \[4, 8, 6\] outside \[0, 8\)"):
        sk.Mesh(sk.array(CUBE_POINTS, dtype=sk.vec3), sk.array(bad, dtype=sk.int32))
    bad[7] = -1
    with pytest.raises(ValueError, match="triangle 2"):
        sk.Mesh(sk.array(CUBE_POINTS, dtype=sk.vec3), sk.array(bad, dtype=sk.int32))


def test_wrong_dtypes_are_refused_naming_the_argument():
    points, indices = sk.array(CUBE_POINTS, dtype=sk.vec3), sk.array(CUBE_INDICES, dtype=sk.int32)
    with pytest.raises(TypeError, match="points must be a 1-D array of sk.vec3 \\(float32\\), got 1-D array of vec3d"):
        sk.Mesh(sk.array(CUBE_POINTS.astype(np.float64), dtype=sk.vec3d), indices)
    with pytest.raises(TypeError, match="indices must be a 1-D array of sk.int32"):
        sk.Mesh(points, sk.array(CUBE_INDICES.astype(np.int64), dtype=sk.int64))
    with pytest.raises(TypeError, match="points must be an sk.array of sk.vec3, got ndarray"):
        sk.Mesh(CUBE_POINTS, indices)
    with pytest.raises(TypeError, match="velocities must be a 1-D array of sk.vec3"):
        sk.Mesh(points, indices, velocities=sk.zeros(8))
    with pytest.raises(ValueError, match="velocities has 3 entries, points 8"):
        sk.Mesh(points, indices, velocities=sk.zeros(3, dtype=sk.vec3))


def test_a_query_with_a_wrong_argument_type_is_a_compile_error():
    @sk.kernel
    def bad(mesh: sk.uint64, p: sk.array(dtype=sk.vec3d), out: sk.array(dtype=float)):
        i = sk.tid()
        out[i] = sk.mesh_query_point(mesh, p[i], 1.0).sign

    mesh = make_mesh(sk, CUBE_POINTS, CUBE_INDICES, "cpu")
    with pytest.raises(sk.CompileError, match=r"mesh_query_point\(\) does not accept"):
        sk.launch(bad, 1, inputs=[mesh.id, sk.zeros(1, dtype=sk.vec3d), sk.zeros(1)])


@pytest.mark.cpu_only("NVRTC compiles to PTX: no device is involved")
def test_mesh_kernels_compile_to_ptx():
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (cuda.bindings) is not installed")
    kernels = [k for k in vars(K).values() if isinstance(k, sk.Kernel)]
    assert len(kernels) == 11
    for kernel in kernels:
        text = sk.cuda.ptx(kernel, arch="sm_80")
        fwd, bwd = sk.cuda.entry_points(kernel)
        assert f".visible .entry {fwd}(" in text and f".visible .entry {bwd}(" in text


def test_eval_position_and_velocity_adjoints_match_finite_differences(device):
    mesh, points, tris, velocities, faces, u, v = eval_case(device)
    n = len(faces)
    result = sk.autograd.gradcheck(K.eval_at, n, inputs=[mesh.id, sk.array(faces), sk.array(u), sk.array(v)],
                                   outputs=[sk.zeros(n, dtype=sk.vec3), sk.zeros(n, dtype=sk.vec3)],
                                   eps=1e-3, atol=1e-3, rtol=1e-2)
    assert result.ok, str(result)


def test_eval_position_and_velocity_tangents_are_the_corner_differences(device):
    mesh, points, tris, velocities, faces, u, v = eval_case(device)
    n = len(faces)
    ua, va = sk.array(u), sk.array(v)
    pos, vel = sk.zeros(n, dtype=sk.vec3), sk.zeros(n, dtype=sk.vec3)

    def run(ua, va):
        sk.launch(K.eval_at, n, inputs=[mesh.id, sk.array(faces), ua, va], outputs=[pos, vel])
        return pos, vel

    du, dv = np.linspace(0.5, 1.5, n).astype(np.float32), np.linspace(-1.0, 1.0, n).astype(np.float32)
    _, (tp, tv) = sk.autograd.jvp(run, [ua, va], [du, dv])
    p, q = points[tris[faces]], velocities[tris[faces]]
    np.testing.assert_allclose(tp.numpy(), (p[:, 0] - p[:, 2]) * du[:, None] + (p[:, 1] - p[:, 2]) * dv[:, None],
                               atol=1e-5)
    np.testing.assert_allclose(tv.numpy(), (q[:, 0] - q[:, 2]) * du[:, None] + (q[:, 1] - q[:, 2]) * dv[:, None],
                               atol=1e-5)


def run_lookups(M, mod, device, with_velocities=True):
    points, indices = icosphere(1)
    velocities = np.random.default_rng(8).normal(size=points.shape).astype(np.float32) if with_velocities else None
    mesh = make_mesh(M, points, indices, device, velocities)
    n = len(indices)
    outs = [M.zeros(n, dtype=M.vec3, device=device), M.zeros(n, dtype=M.vec3, device=device),
            M.full(n, 7.0, dtype=M.vec3, device=device), M.zeros(n, dtype=M.int32, device=device)]
    M.launch(mod.lookups, n, inputs=[mesh.id], outputs=outs, device=device)
    return [o.numpy() for o in outs], (points, indices, velocities)


def test_face_normals_and_face_vertex_lookups_read_the_index_buffer(device):
    (normal, point, velocity, index), (points, indices, velocities) = run_lookups(sk, K, device)
    tri = points[indices.reshape(-1, 3)]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    np.testing.assert_allclose(normal, np.repeat(n / np.linalg.norm(n, axis=1, keepdims=True), 3, axis=0), atol=1e-6)
    np.testing.assert_array_equal(index, indices)
    np.testing.assert_array_equal(point, points[indices])
    np.testing.assert_array_equal(velocity, velocities[indices])
    (_, _, velocity, _), _ = run_lookups(sk, K, device, with_velocities=False)
    assert (velocity == 0).all()


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_face_normals_and_lookups_match_warp(warp_kernels):
    wp, W = warp_kernels
    ours, _ = run_lookups(sk, K, "cpu")
    theirs, _ = run_lookups(wp, W, "cpu")
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-6)


def run_out_parameter_forms(M, mod, device):
    queries = cube_queries(100, seed=9)
    dirs = np.random.default_rng(10).normal(size=queries.shape).astype(np.float32)
    mesh = make_mesh(M, CUBE_POINTS, CUBE_INDICES, device)
    n = len(queries)
    outs = [M.zeros(n, dtype=M.vec4, device=device) for _ in range(4)] + [M.zeros(n, dtype=M.vec3, device=device)]
    M.launch(mod.out_parameter_forms, n, inputs=[mesh.id, M.array(queries, dtype=M.vec3, device=device),
                                                 M.array(dirs, dtype=M.vec3, device=device)],
             outputs=outs, device=device)
    return queries, dirs, [o.numpy() for o in outs]


def test_out_parameter_forms_give_the_struct_forms_results(device):
    queries, dirs, (point, no_sign, normal, ray, ray_normal) = run_out_parameter_forms(sk, K, device)
    r = run_point_query(sk, K, "query_point", CUBE_POINTS, CUBE_INDICES, queries, 1.0e6, device)
    np.testing.assert_array_equal(point, np.c_[r["sign"], r["face"], r["uv"]])
    np.testing.assert_array_equal(no_sign, np.c_[np.zeros(len(queries)), r["face"], r["uv"]])
    s = run_point_query(sk, K, "query_point_sign_normal", CUBE_POINTS, CUBE_INDICES, queries, 1.0e6, device)
    np.testing.assert_array_equal(normal, np.c_[s["sign"], s["face"], s["uv"]])
    h = run_ray_query(sk, K, CUBE_POINTS, CUBE_INDICES, queries, dirs, 1.0e6, device)
    hit = h["found"] == 1
    np.testing.assert_array_equal(ray[hit], np.c_[h["t"], h["face"], h["uv"]][hit])
    np.testing.assert_array_equal(ray_normal[hit], (h["normal"] * h["sign"][:, None])[hit])
    assert (ray[~hit] == 0).all()


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_out_parameter_forms_match_warp(warp_kernels):
    wp, W = warp_kernels
    _, _, ours = run_out_parameter_forms(sk, K, "cpu")
    _, _, theirs = run_out_parameter_forms(wp, W, "cpu")
    point_uv = theirs[0][:, 2:]
    unique = interior_of_a_face(point_uv)
    for a, b in zip(ours, theirs):  # faces and barycentrics where the closest point is unique
        np.testing.assert_allclose(a[unique], b[unique], atol=2e-5)
    np.testing.assert_allclose(ours[0][:, 0], theirs[0][:, 0])  # every sign


def test_out_parameters_must_be_declared_locals():
    @sk.kernel
    def undeclared(mesh: sk.uint64, out: sk.array(dtype=float)):
        sign = float(0.0)
        face = int(0)
        u = float(0.0)
        if sk.mesh_query_point(mesh, sk.vec3(0.0, 0.0, 0.0), 1.0, sign, face, u, v):
            out[0] = sign

    mesh = make_mesh(sk, CUBE_POINTS, CUBE_INDICES, "cpu")
    with pytest.raises(sk.CompileError, match="declare the out-parameter 'v' before the call"):
        sk.launch(undeclared, 1, inputs=[mesh.id, sk.zeros(1)])


def run_anyhit(M, mod, device):
    starts, dirs = ray_cases(seed=11)
    mesh = make_mesh(M, CUBE_POINTS, CUBE_INDICES, device)
    hit = M.zeros(len(starts), dtype=M.int32, device=device)
    M.launch(mod.ray_anyhit, len(starts), inputs=[mesh.id, M.array(starts + 0.5, dtype=M.vec3, device=device),
                                                  M.array(dirs, dtype=M.vec3, device=device), 1.0],
             outputs=[hit], device=device)
    return starts + 0.5, dirs, hit.numpy()


def test_ray_anyhit_is_the_closest_hits_result(device):
    starts, dirs, hit = run_anyhit(sk, K, device)
    r = run_ray_query(sk, K, CUBE_POINTS, CUBE_INDICES, starts, dirs, 1.0, device)
    assert 20 < hit.sum() < len(hit)
    np.testing.assert_array_equal(hit, r["found"])


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_ray_anyhit_matches_warp(warp_kernels):
    wp, W = warp_kernels
    np.testing.assert_array_equal(run_anyhit(sk, K, "cpu")[2], run_anyhit(wp, W, "cpu")[2])


@pytest.mark.cpu_only("documentation")
def test_every_mesh_builtin_says_what_it_does_with_an_example():
    from simkit.core import builtins as B

    names = [name for name in B.TABLE if name.startswith("mesh_")]
    assert len(names) == 12
    for name in names:
        doc = getattr(sk, name).__doc__
        assert "Example::" in doc and f"sk.{name}(" in doc, name


@pytest.mark.parametrize("kernel", ["query_point", "query_point_sign_normal", "query_point_sign_winding_number"])
def test_points_off_the_cubes_edges_and_corners_are_outside_and_just_inside_them_inside(device, kernel):
    # closest to an edge or a corner, where several faces tie for the closest point
    out = np.array([[1.01, 1.01, 1.01], [-0.01, -0.01, 0.5], [0.5, 1.001, -0.001], [1.2, 0.5, 1.2]], dtype=np.float32)
    inside = np.array([[0.99, 0.99, 0.99], [0.01, 0.02, 0.5], [0.5, 0.999, 0.002]], dtype=np.float32)
    r = run_point_query(sk, K, kernel, CUBE_POINTS, CUBE_INDICES, np.r_[out, inside], 1.0e6, device)
    np.testing.assert_array_equal(r["sign"], [1.0] * len(out) + [-1.0] * len(inside))
    np.testing.assert_allclose(r["dist"], np.abs(cube_distance(np.r_[out, inside].astype(np.float64))), atol=2e-6)


def l_prism():
    """An L-shaped polygon extruded from z = 0 to 1: a closed mesh with a concave edge."""
    poly = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], dtype=np.float32)  # counterclockwise
    points = np.r_[np.c_[poly, np.zeros(6)], np.c_[poly, np.ones(6)]].astype(np.float32)
    fan = [(3, 4, 5), (3, 5, 0), (3, 0, 1), (3, 1, 2)]  # from the reflex corner (1, 1)
    tris = [(a, c, b) for a, b, c in fan] + [(a + 6, b + 6, c + 6) for a, b, c in fan]  # bottom faces down
    for k in range(6):
        a, b = k, (k + 1) % 6
        tris += [(a, b, b + 6), (a, b + 6, a + 6)]
    return points, np.array(tris, dtype=np.int32).ravel()


def inside_l_prism(p):
    x, y, z = p[:, 0], p[:, 1], p[:, 2]
    in_l = (x > 0) & (y > 0) & (((x < 2) & (y < 1)) | ((x < 1) & (y < 2)))
    return in_l & (z > 0) & (z < 1)


@pytest.mark.parametrize("kernel", ["query_point", "query_point_sign_normal", "query_point_sign_winding_number"])
def test_signs_on_a_concave_mesh_follow_the_inside_of_the_shape(device, kernel):
    points, indices = l_prism()
    queries = np.random.default_rng(12).uniform(-0.5, 2.5, (400, 3)).astype(np.float32)
    queries[:, 2] = queries[:, 2] * 0.6  # z in [-0.3, 1.5]: most within the prism's height
    r = run_point_query(sk, K, kernel, points, indices, queries, 1.0e6, device)
    clear = r["dist"] > 1e-3
    assert clear.sum() > 350 and inside_l_prism(queries).sum() > 50
    np.testing.assert_array_equal(r["sign"][clear] < 0, inside_l_prism(queries)[clear])


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_point_queries_on_a_concave_mesh_match_warp(warp_kernels):
    wp, W = warp_kernels
    points, indices = l_prism()
    queries = np.random.default_rng(13).uniform(-0.5, 2.5, (300, 3)).astype(np.float32)
    for kernel in POINT_KERNELS:
        ours = run_point_query(sk, K, kernel, points, indices, queries, 1.0e6, "cpu")
        theirs = run_point_query(wp, W, kernel, points, indices, queries, 1.0e6, "cpu")
        np.testing.assert_allclose(ours["dist"], theirs["dist"], atol=2e-6, err_msg=kernel)
        clear = theirs["dist"] > 1e-3
        np.testing.assert_array_equal(ours["sign"][clear], theirs["sign"][clear], err_msg=kernel)


def test_new_points_or_velocities_assigned_to_a_mesh_are_what_kernels_read(device):
    mesh = make_mesh(sk, CUBE_POINTS, CUBE_INDICES, device)
    mesh.points = sk.array(CUBE_POINTS * np.float32(2.0), dtype=sk.vec3)  # refits
    mesh.velocities = sk.full(8, 3.0, dtype=sk.vec3)
    pos, vel = sk.zeros(1, dtype=sk.vec3), sk.zeros(1, dtype=sk.vec3)
    sk.launch(K.eval_at, 1, inputs=[mesh.id, sk.array(np.array([2], dtype=np.int32)), sk.array([1.0]),
                                    sk.array([0.0])], outputs=[pos, vel])
    np.testing.assert_allclose(pos.numpy()[0], 2.0 * CUBE_POINTS[CUBE_INDICES[6]])
    np.testing.assert_allclose(vel.numpy()[0], [3.0, 3.0, 3.0])
    dist = sk.zeros(1)
    sk.launch(K.distance_to_mesh, 1, inputs=[mesh.id, sk.array(np.array([[1.0, 1.0, 2.5]]), dtype=sk.vec3)],
              outputs=[dist])
    np.testing.assert_allclose(dist.numpy(), [0.5], atol=1e-6)
    with pytest.raises(ValueError, match="new points have 3 entries, the mesh 8"):
        mesh.points = sk.zeros(3, dtype=sk.vec3)
    with pytest.raises(ValueError, match="velocities has 2 entries, points 8"):
        mesh.velocities = sk.zeros(2, dtype=sk.vec3)
