"""The convex hull shape's contacts (add_shape_convex; simkit.kernels.convex): its rows against
the ground, a sphere, a box and another hull against closed forms (the hull of a box's corners
is that box) and against MuJoCo's mj_collision for mesh geoms (which it collides as their
convex hulls); the gradient of its rows with respect to the poses against central
differences (float64)."""

from __future__ import annotations

import numpy as np
import pytest

from shape_pairs import assert_rows_gradient_matches_finite_differences, mujoco_deepest, random_quat, simkit_deepest

IDENTITY = (0.0, 0.0, 0.0, 1.0)
H = np.array([0.1, 0.15, 0.2])
CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * H
BOX_HULL = ("convex", CORNERS)
# a wider slab: a box hull's corners resting on it stay inside its top face's region (their
# depth in it is then the distance to that face, not to a side)
SLAB = ("convex", CORNERS * (3.0, 1.0, 3.0))
DOWN = np.array([0.0, -1.0, 0.0])


def rotate(q, v) -> np.ndarray:
    x, y, z, w = q
    u = np.array([x, y, z])
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def box_distance(p, h) -> float:
    """The exact signed distance of ``p`` to a box of half extents ``h`` (box frame)."""
    outside = np.maximum(np.abs(p) - h, 0.0)
    return float(np.linalg.norm(outside)) if outside.any() else float((np.abs(p) - h).max())


def random_cloud(rng, n=12, size=0.1) -> np.ndarray:
    return rng.normal(size=(n, 3)) * size * rng.uniform(0.5, 1.5, size=3)


def test_a_box_shaped_hull_in_the_ground_is_as_deep_as_the_boxs_lowest_corner():
    rng = np.random.default_rng(1)
    for _ in range(10):
        q, depth = random_quat(rng), rng.uniform(0.001, 0.03)
        lowest = min(rotate(q, c)[1] for c in CORNERS)
        dist, n, _ = simkit_deepest([BOX_HULL], [((0.2, depth - lowest - depth * 2.0, -0.1), q)])
        assert dist == pytest.approx(-depth, abs=1e-12)
        np.testing.assert_allclose(n, DOWN, atol=1e-15)


def test_a_sphere_by_a_box_shaped_hull_is_as_deep_as_by_the_box_inside_and_out():
    rng = np.random.default_rng(2)
    radius, checked = 0.05, 0
    while checked < 12:
        p = rng.uniform(-1.0, 1.0, size=3) * (H + 0.06)
        d = box_distance(p, H)
        if d > radius:
            continue
        q = random_quat(rng)
        dist, _, _ = simkit_deepest([("sphere", (radius, 0.0, 0.0)), BOX_HULL], [(rotate(q, p), IDENTITY),
                                                                                  ((0, 0, 0), q)])
        assert dist == pytest.approx(d - radius, abs=1e-12)
        checked += 1


def test_a_box_shaped_hull_on_a_wider_one_is_as_deep_as_their_faces_overlap():
    rng = np.random.default_rng(3)
    for _ in range(6):
        depth, yaw = rng.uniform(0.001, 0.02), rng.uniform(-0.3, 0.3)
        q = (0.0, np.sin(yaw / 2), 0.0, np.cos(yaw / 2))
        top = (rng.uniform(-0.05, 0.05), 2.0 * H[1] - depth, rng.uniform(-0.05, 0.05))
        dist, n, _ = simkit_deepest([BOX_HULL, SLAB], [(top, q), ((0, 0, 0), IDENTITY)])
        assert dist == pytest.approx(-depth, abs=1e-12)
        np.testing.assert_allclose(n, DOWN, atol=1e-12)


def test_a_box_on_a_box_shaped_hull_is_as_deep_as_on_the_box():
    rng = np.random.default_rng(4)
    for _ in range(6):
        q, depth = random_quat(rng), rng.uniform(0.001, 0.02)
        lowest = min(rotate(q, c)[1] for c in CORNERS)
        pose = ((rng.uniform(-0.05, 0.05), H[1] - lowest - depth, rng.uniform(-0.05, 0.05)), q)
        on_hull, _, _ = simkit_deepest([("box", tuple(H)), BOX_HULL], [pose, ((0, 0, 0), IDENTITY)])
        on_box, _, _ = simkit_deepest([("box", tuple(H)), ("box", tuple(H))], [pose, ((0, 0, 0), IDENTITY)])
        assert on_hull == pytest.approx(on_box, abs=1e-12)


def random_hull_on_a_slab(rng):
    """A random convex point set at a random orientation, a vertex of it into the top face of
    a slab (itself a mesh of a box's corners): a vertex-face contact."""
    cloud, q = random_cloud(rng), random_quat(rng)
    lowest = min(rotate(q, c)[1] for c in cloud)
    slab = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * (1.0, 0.05, 1.0)
    pose = (rng.uniform(-0.2, 0.2), 0.05 - lowest - rng.uniform(0.001, 0.02), rng.uniform(-0.2, 0.2))
    return [("convex", cloud), ("convex", slab)], [(pose, q), ((0.0, 0.0, 0.0), IDENTITY)]


def random_hull_in_the_ground(rng):
    cloud, q = random_cloud(rng), random_quat(rng)
    lowest = min(rotate(q, c)[1] for c in cloud)
    return [("convex", cloud)], [((0.1, -lowest - rng.uniform(0.001, 0.02), 0.0), q)]


def sphere_by_a_random_hull(rng):
    cloud, u = random_cloud(rng), rng.normal(size=3)
    return [("sphere", (0.05, 0.0, 0.0)), ("convex", cloud)], [(u / np.linalg.norm(u) * rng.uniform(0.05, 0.2),
                                                                IDENTITY), ((0, 0, 0), random_quat(rng))]


# (poses, depth tolerance, normal tolerance): MuJoCo's plane-mesh pair is exact at its vertices,
# which it stores in float32 (8e-9 m off for these 0.1 m clouds); its mesh-mesh and mesh-sphere
# pairs are its convex solver's (tolerance 1e-6)
MUJOCO_CASES = {"plane": (random_hull_in_the_ground, 1e-7, 1e-9), "slab": (random_hull_on_a_slab, 1e-6, 1e-5),
                "sphere": (sphere_by_a_random_hull, 1e-5, 1e-3)}


@pytest.mark.parametrize("case", list(MUJOCO_CASES))
def test_hull_contact_depth_and_normal_match_mujocos_mesh_geoms_at_random_poses(case):
    pytest.importorskip("mujoco")
    poses, depth_tol, normal_tol = MUJOCO_CASES[case]
    rng = np.random.default_rng(5)
    compared = 0
    for _ in range(12):
        shapes, pose = poses(rng)
        mj_dist, mj_n, _ = mujoco_deepest(shapes, pose)
        if not np.isfinite(mj_dist):
            continue          # a sphere off the surface
        dist, n, _ = simkit_deepest(shapes, pose)
        assert dist == pytest.approx(mj_dist, abs=depth_tol)
        np.testing.assert_allclose(n, mj_n, atol=normal_tol)
        compared += 1
    assert compared >= 6


TILT = (0.1, 0.3, -0.05, 0.95)
POSED = {"ground": ([BOX_HULL], [((0.1, 0.18, -0.2), TILT)]),
         "sphere": ([("sphere", (0.05, 0.0, 0.0)), BOX_HULL], [((0.08, 0.17, 0.03), IDENTITY), ((0, 0, 0), TILT)]),
         "box": ([("box", (0.3, 0.1, 0.3)), BOX_HULL], [((0.0, -0.27, 0.0), IDENTITY), ((0.02, 0.0, 0.01), TILT)]),
         "hull": ([BOX_HULL, SLAB], [((0.03, 0.33, 0.02), TILT), ((0, 0, 0), IDENTITY)])}


@pytest.mark.parametrize("pair", list(POSED))
def test_the_gradient_of_hull_contact_rows_with_respect_to_the_poses_matches_finite_differences(pair):
    assert_rows_gradient_matches_finite_differences(*POSED[pair], seed=6)
