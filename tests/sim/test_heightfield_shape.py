"""A static heightfield (``add_shape_heightfield``, MJCF ``hfield``): its signed distance
against a brute-force search over every triangle, shapes on a field sampled from a tilted
plane against the same shapes on that plane, shapes on a random terrain imported from MJCF
against MuJoCo's ``mj_collision``, the contact rows' gradients against central differences
(in the body's pose and in the heights), and the refusals (float64)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import simkit as sk
from shape_pairs import (assert_model_rows_gradient_matches_finite_differences, contact_rows, quat_multiply,
                         random_quat)
from sim_helpers import central_difference
from simkit.kernels.shapes import shape_surface_distance
from simkit.kernels.structs import SHAPE_HFIELD, model_structs
from simkit.sim.builder_heightfield import heightfield_triangles, heightfield_vertices
from simkit.sim.importers import RobotFileError, RobotFileWarning

S = model_structs(sk.float64)
HALF = (1.0, 0.8)
TERRAIN = np.random.default_rng(0).uniform(-0.1, 0.1, size=(7, 9))     # cells of 0.33 x 0.2 m
TILT = np.array([0.0, 0.0, np.sin(-0.35 / 2), np.cos(-0.35 / 2)])      # 20 degrees about -z
SIZES = {"sphere": (0.05, 0.0, 0.0), "box": (0.05, 0.03, 0.04), "capsule": (0.03, 0.05, 0.0),
         "cylinder": (0.05, 0.03, 0.0), "cone": (0.05, 0.05, 0.0), "ellipsoid": (0.06, 0.04, 0.03)}
HULL = np.random.default_rng(7).normal(size=(12, 3)) * (0.05, 0.035, 0.06)


@sk.kernel
def surface_distances(shapes: S.Shapes, s: int, p: sk.array(dtype=sk.vec3d), dist: sk.array(dtype=sk.float64),
                      normal: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    d, n = shape_surface_distance(shapes, s, p[i])
    dist[i] = d
    normal[i] = n


def terrain_model(heights=TERRAIN, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), requires_grad=False):
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_heightfield(pos, rot, heights, HALF)
    b.add_particle((0.0, 5.0, 0.0), (0.0, 0.0, 0.0), 1.0)      # a model needs something that moves
    return b.finalize(dtype=sk.float64, requires_grad=requires_grad)


def distances(model, points):
    p = sk.array(points, dtype=sk.vec3d)
    dist, normal = sk.zeros(len(points), dtype=sk.float64), sk.zeros(len(points), dtype=sk.vec3d)
    sk.launch(surface_distances, len(points), inputs=[model.shapes, 0, p], outputs=[dist, normal])
    return dist.numpy(), normal.numpy()


def closest_on_segment(p, a, b):
    t = np.clip(np.einsum("ij,ij->i", p - a, b - a) / np.einsum("ij,ij->i", b - a, b - a), 0.0, 1.0)
    return a + t[:, None] * (b - a)


def brute_force_distance(points, heights, half):
    """The unsigned distance of each point to the nearest of all the grid's triangles: the
    projection onto a triangle's plane where it falls inside, else the nearest point of its
    edges."""
    v = heightfield_vertices(heights, half)
    tri = v[heightfield_triangles(*heights.shape)]
    best = np.full(len(points), np.inf)
    for a, b, c in tri:
        n = np.cross(b - a, c - a)
        n /= np.linalg.norm(n)
        proj = points - np.outer((points - a) @ n, n)
        inside = np.all([np.cross(y - x, proj - x) @ n >= 0.0 for x, y in ((a, b), (b, c), (c, a))], axis=0)
        d = np.where(inside, np.abs((points - a) @ n), np.inf)
        for x, y in ((a, b), (b, c), (c, a)):
            A, B = np.tile(x, (len(points), 1)), np.tile(y, (len(points), 1))
            d = np.minimum(d, np.linalg.norm(points - closest_on_segment(points, A, B), axis=1))
        best = np.minimum(best, d)
    return best


def surface_height(points, heights, half):
    """The height of the triangulated surface above each point's (x, z)."""
    nx, nz = heights.shape
    u = (points[:, 0] + half[0]) / (2 * half[0]) * (nx - 1)
    w = (points[:, 2] + half[1]) / (2 * half[1]) * (nz - 1)
    i, j = np.minimum(np.floor(u).astype(int), nx - 2), np.minimum(np.floor(w).astype(int), nz - 2)
    u, w = u - i, w - j
    h00, h01, h10, h11 = heights[i, j], heights[i, j + 1], heights[i + 1, j], heights[i + 1, j + 1]
    lower = h00 + u * (h10 - h00) + w * (h01 - h00)
    upper = h11 + (1 - u) * (h01 - h11) + (1 - w) * (h10 - h11)
    return np.where(u + w <= 1.0, lower, upper)


def test_the_distance_is_to_the_nearest_triangle_and_negative_below_the_surface():
    rng = np.random.default_rng(1)
    points = np.column_stack([rng.uniform(-HALF[0], HALF[0], 400), np.zeros(400), rng.uniform(-HALF[1], HALF[1], 400)])
    # within a tenth of a cell of the surface: the nearest point is in the 3 x 3 cells around
    points[:, 1] = surface_height(points, TERRAIN, HALF) + rng.uniform(-0.02, 0.02, 400)
    dist, _ = distances(terrain_model(), points)
    sign = np.where(points[:, 1] < surface_height(points, TERRAIN, HALF), -1.0, 1.0)
    np.testing.assert_allclose(dist, sign * brute_force_distance(points, TERRAIN, HALF), atol=1e-14)


def test_the_normal_is_the_gradient_of_the_distance():
    rng = np.random.default_rng(2)
    model = terrain_model()
    points = np.column_stack([rng.uniform(-0.9, 0.9, 40), np.zeros(40), rng.uniform(-0.7, 0.7, 40)])
    points[:, 1] = surface_height(points, TERRAIN, HALF) + rng.uniform(-0.02, 0.03, 40)
    _, normal = distances(model, points)
    h = 1e-7
    for i in range(len(points)):
        grad = [(distances(model, points[[i]] + h * e)[0][0] - distances(model, points[[i]] - h * e)[0][0]) / (2 * h)
                for e in np.eye(3)]
        np.testing.assert_allclose(normal[i], grad, atol=1e-6)


def test_a_point_beside_the_grid_is_outside_however_low():
    dist, _ = distances(terrain_model(), np.array([[1.5, -1.0, 0.0], [0.0, -3.0, -0.9]]))
    assert np.all(dist > 0.0)


def add_shape(b, kind, body, rot=(0.0, 0.0, 0.0, 1.0)):
    if kind == "convex":
        return b.add_shape_convex((0.0, 0.0, 0.0), rot, HULL, body=body)
    size = SIZES[kind]
    if kind == "sphere":
        return b.add_shape_sphere((0.0, 0.0, 0.0), size[0], body=body)
    if kind in ("box", "ellipsoid"):
        return getattr(b, f"add_shape_{kind}")((0.0, 0.0, 0.0), rot, size, body=body)
    return getattr(b, f"add_shape_{kind}")((0.0, 0.0, 0.0), rot, size[0], size[1], body=body)


def deepest(model, pose):
    state = model.state()
    state.body_q.assign(np.asarray(pose, dtype=np.float64)[None, :])
    rows = contact_rows(model, state.body_q)
    on = np.flatnonzero(rows["active"].numpy())
    if not len(on):
        return np.inf, None
    dist = rows["dist"].numpy()
    i = on[np.argmin(dist[on])]
    return float(dist[i]), rows["normal"].numpy()[i]


def rotate(q, v) -> np.ndarray:
    u, w = np.asarray(q[:3]), q[3]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


@pytest.mark.parametrize("kind", list(SIZES) + ["convex"])
def test_a_shape_on_a_field_sampled_from_a_plane_touches_as_on_that_plane(kind):
    # the plane of TILT through the origin, as heights: y = -tan(20 deg) x, exact on every cell
    v = heightfield_vertices(np.zeros((5, 4)), HALF)
    heights = -np.tan(0.35) * v[:, 0].reshape(5, 4)
    rng = np.random.default_rng(3)
    n = rotate(TILT, np.array([0.0, 1.0, 0.0]))
    models = []
    for terrain in (True, False):
        b = sk.sim.ModelBuilder(ground=False)
        if terrain:
            b.add_shape_heightfield((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), heights, HALF)
        else:
            b.add_shape_plane((0.0, 0.0, 0.0), TILT)
        add_shape(b, kind, b.add_body())
        models.append(b.finalize(dtype=sk.float64))
    for _ in range(10):
        pose = np.concatenate([rng.uniform(-0.5, 0.5, 3) * (1, 0, 1), random_quat(rng)])
        pose[1] = -np.tan(0.35) * pose[0]      # its center on the plane
        d, _ = deepest(models[1], pose)
        pose[:3] -= n * (d + rng.uniform(0.001, 0.02))
        plane_dist, plane_normal = deepest(models[1], pose)
        field_dist, field_normal = deepest(models[0], pose)
        assert field_dist == pytest.approx(plane_dist, abs=1e-12)
        np.testing.assert_allclose(field_normal, plane_normal, atol=1e-12)


def mjcf_terrain(kind, pose, heights=TERRAIN) -> str:
    """An MJCF model of the terrain ``heights`` (simkit's grid: x-major, its z MuJoCo's -y, as
    an ``hfield`` asset, elevations 0..1 scaled by 0.2 m from a 0.1 m low) and one free body
    carrying ``kind`` at ``pose`` (MuJoCo's frame, z up)."""
    span = float(heights.max() - heights.min())
    rows = (heights - heights.min()).T / span              # MuJoCo's elevation rows: simkit's j
    size = np.asarray(SIZES[kind])
    sizes = {"sphere": size[:1], "box": size, "capsule": size[:2], "cylinder": size[:2], "ellipsoid": size}[kind]
    p, q = pose[:3], pose[3:]
    numbers = " ".join(repr(float(x)) for x in rows.ravel())
    return (f'<mujoco><asset><hfield name="t" nrow="{rows.shape[0]}" ncol="{rows.shape[1]}" '
            f'size="{HALF[0]} {HALF[1]} {span!r} 0.1" elevation="{numbers}"/></asset><worldbody>'
            f'<geom type="hfield" hfield="t" pos="0 0 {float(heights.min())!r}"/>'
            f'<body pos="{" ".join(map(repr, map(float, p)))}" quat="{" ".join(repr(float(x)) for x in (q[3], q[0], q[1], q[2]))}">'
            f'<freejoint/><geom type="{kind}" size="{" ".join(map(repr, map(float, sizes)))}"/></body>'
            '</worldbody></mujoco>')


@pytest.mark.parametrize("kind", ["sphere", "box", "capsule", "ellipsoid"])
def test_a_shape_on_an_imported_terrain_is_as_deep_as_mujoco_says(kind, tmp_path):
    # A sphere touching one face: MuJoCo's depth and normal, always. Other shapes: MuJoCo
    # finds the smallest translation separating the shape from a face's prism, simkit the
    # deepest point along the face's normal; where MuJoCo's separating direction is that
    # normal, both are the same number (else simkit's is the deeper).
    mujoco = pytest.importorskip("mujoco")
    rng = np.random.default_rng(4)
    checked = 0
    for trial in range(60):
        # over a cell's middle, so that it touches one face (MuJoCo's prisms have sides)
        i, j = rng.integers(1, 5), rng.integers(1, 7)
        x = -HALF[0] + (i + rng.uniform(0.35, 0.65)) * 2 * HALF[0] / 6
        y = -HALF[1] + (j + rng.uniform(0.35, 0.65)) * 2 * HALF[1] / 8
        z = surface_height(np.array([[x, 0.0, -y]]), TERRAIN, HALF)[0]      # MuJoCo's y is simkit's -z
        pose = np.concatenate([[x, y, z], random_quat(rng) if kind != "sphere" else [0, 0, 0, 1]])
        path = tmp_path / f"t{trial}.xml"
        path.write_text(mjcf_terrain(kind, pose))
        b = sk.sim.ModelBuilder(up_axis="z", ground=False)
        b.add_mjcf(str(path))
        model = b.finalize(dtype=sk.float64)
        d, _ = deepest(model, pose)
        pose[2] -= d + rng.uniform(0.001, 0.01)
        path.write_text(mjcf_terrain(kind, pose))
        m = mujoco.MjModel.from_xml_path(str(path))
        data = mujoco.MjData(m)
        mujoco.mj_forward(m, data)
        if data.ncon != 1:
            continue             # touching two faces' prisms: MuJoCo's sides and simkit's surface differ
        ours, normal = deepest(model, pose)
        theirs = data.contact[0]
        if kind != "sphere" and not np.allclose(normal, theirs.frame[:3], atol=1e-5):
            assert ours < theirs.dist, trial
            continue
        assert ours == pytest.approx(theirs.dist, abs=1e-6), trial
        np.testing.assert_allclose(normal, theirs.frame[:3], atol=1e-5)
        checked += 1
    assert checked >= (20 if kind == "sphere" else 5)


def test_the_gradient_of_terrain_contact_rows_matches_finite_differences_in_pose_and_heights():
    rng = np.random.default_rng(5)
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_heightfield((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), TERRAIN, HALF)
    add_shape(b, "box", b.add_body())
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    pose = np.concatenate([[0.1, 0.0, -0.15], random_quat(rng)])
    d, _ = deepest(model, pose)
    pose[1] -= d + 0.01
    q = pose[None, :].copy()
    loss_of = assert_model_rows_gradient_matches_finite_differences(model, q, seed=5)
    heights = model.shapes.hfield_heights
    grad_h = heights.grad.numpy().copy()
    assert np.count_nonzero(grad_h) > 0
    values = heights.numpy().copy()

    def loss_at_heights():
        heights.assign(values)
        return loss_of(sk.array(q, dtype=model.types.transform)).numpy()[0]

    for k in np.flatnonzero(grad_h)[:6]:
        fd = central_difference(loss_at_heights, values, k, 1e-7)
        assert abs(grad_h[k] - fd) <= 1e-6 + 1e-5 * abs(fd), (k, grad_h[k], fd)


def test_the_shape_holds_its_grid_and_its_reach():
    model = terrain_model()
    assert model.shapes.kind.numpy().tolist() == [SHAPE_HFIELD]
    assert model.shapes.hfield.numpy().tolist() == [[0, 7, 9]]
    np.testing.assert_array_equal(model.shapes.hfield_heights.numpy(), TERRAIN.ravel())
    reach = model.shapes.params.numpy()[0, 2]
    assert reach == pytest.approx(np.linalg.norm(heightfield_vertices(TERRAIN, HALF), axis=1).max())


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((TERRAIN, HALF), dict(body=0), TypeError, "always static; it takes no body"),
    ((TERRAIN, HALF), dict(density=10.0), TypeError, "takes no density"),
    ((TERRAIN[0], HALF), {}, ValueError, r"nx x nz array with nx, nz >= 2, got shape \(9,\)"),
    ((TERRAIN[:1], HALF), {}, ValueError, "nx, nz >= 2"),
    ((np.where(TERRAIN > 0.09, np.nan, TERRAIN), HALF), {}, ValueError, "heights must be finite"),
    (("hills", HALF), {}, ValueError, "heights must be an nx x nz array of numbers"),
    ((TERRAIN, (1.0,)), {}, ValueError, "half_extents must be two finite numbers > 0"),
    ((TERRAIN, (1.0, -1.0)), {}, ValueError, "half_extents must be"),
])
def test_add_shape_heightfield_refuses_what_a_terrain_cannot_be_and_adds_nothing(args, kwargs, error, match):
    b = sk.sim.ModelBuilder()
    b.add_body()
    with pytest.raises(error, match=match):
        b.add_shape_heightfield((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), *args, **kwargs)
    assert b.shape_count == 0


def test_an_mjcf_hfield_from_a_file_or_on_a_moving_body_is_left_out_with_a_warning(tmp_path):
    path = tmp_path / "m.xml"
    path.write_text('<mujoco><asset><hfield name="f" file="terrain.png" size="1 1 0.1 0.1"/>'
                    '<hfield name="g" nrow="2" ncol="2" size="1 1 0.1 0.1" elevation="0 1 0 1"/></asset>'
                    '<worldbody><geom type="box" size="1 1 0.1" pos="0 0 -1"/>'
                    '<body><freejoint/><geom type="sphere" size="0.1"/>'
                    '<geom type="hfield" hfield="g"/></body><geom type="hfield" hfield="f"/></worldbody></mujoco>')
    b = sk.sim.ModelBuilder(up_axis="z", ground=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b.add_mjcf(str(path))
    said = " ".join(str(w.message) for w in caught if issubclass(w.category, RobotFileWarning))
    assert "elevations from a file are not read" in said and "heightfield on a moving body" in said
    assert b.shape_count == 2         # the box and the sphere: neither terrain


@pytest.mark.parametrize("asset, match", [
    ('nrow="1" ncol="2" size="1 1 0.1 0.1" elevation="0 1"', "nrow and ncol must be at least 2"),
    ('nrow="2" ncol="2" size="1 1 0.1" elevation="0 1 0 1"', "size must be 4 numbers"),
    ('nrow="2" ncol="2" size="1 1 0.1 0.1" elevation="0 1 0"', r"elevation must be nrow x ncol = 4 finite numbers"),
    ('nrow="2" ncol="two" size="1 1 0.1 0.1"', "must be numbers"),
])
def test_a_bad_mjcf_hfield_is_an_error_naming_it(asset, match, tmp_path):
    path = tmp_path / "m.xml"
    path.write_text(f'<mujoco><asset><hfield name="bad" {asset}/></asset><worldbody/></mujoco>')
    with pytest.raises(RobotFileError, match=f"hfield name='bad'.*{match}"):
        sk.sim.ModelBuilder(up_axis="z", ground=False).add_mjcf(str(path))


def test_an_mjcf_hfield_geom_naming_no_asset_is_an_error_naming_the_geom(tmp_path):
    path = tmp_path / "m.xml"
    path.write_text('<mujoco><worldbody><geom name="land" type="hfield"/></worldbody></mujoco>')
    with pytest.raises(RobotFileError, match="geom name='land'.*needs hfield= naming an <hfield> asset, got None"):
        sk.sim.ModelBuilder(up_axis="z", ground=False).add_mjcf(str(path))
