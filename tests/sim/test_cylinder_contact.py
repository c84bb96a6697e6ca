"""The contact rows of a cylinder (simkit.kernels.shapes, contact_rows): depth, normal and
point against the ground, a sphere, a box, a capsule and another cylinder, checked against
closed forms and against MuJoCo's mj_collision on the same pair (float64).

Exact pairs (the ground, a sphere, a rim into a face, a capsule's end or side, crossed
cylinders) match the closed forms to 1e-9 and MuJoCo to 1e-6 (its convex solver stops at
1e-6; the analytic plane, sphere and capsule pairs agree to 1e-12). Other poses of a box or
a cylinder are sampled (docs/geometry.md)."""

from __future__ import annotations

import numpy as np
import pytest

from shape_pairs import mujoco_deepest, quat_multiply, random_quat, simkit_deepest

R, H = 0.1, 0.15          # the cylinder under test: radius, half height
CYLINDER = ("cylinder", (R, H, 0.0))
DOWN = np.array([0.0, -1.0, 0.0])


def about(axis, angle) -> np.ndarray:
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([np.sin(angle / 2.0) * axis, [np.cos(angle / 2.0)]])


def rotate(q, v) -> np.ndarray:
    x, y, z, w = q
    u = np.array([x, y, z])
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def lowest_extent(q, r=R, h=H) -> float:
    """How far below its center a cylinder of pose ``q`` reaches: h |a_y| + r sqrt(1 - a_y^2)."""
    a = rotate(q, np.array([0.0, 1.0, 0.0]))
    return h * abs(a[1]) + r * np.sqrt(max(0.0, 1.0 - a[1] ** 2))


ON_ITS_SIDE = about((1.0, 0.0, 0.0), np.pi / 2)


@pytest.mark.parametrize("q", [np.array([0.0, 0.0, 0.0, 1.0]), about((1.0, 0.0, 1.0), 0.4), ON_ITS_SIDE,
                               about((0.0, 0.0, 1.0), 2.0)],
                         ids=["flat", "on-its-rim", "on-its-side", "rim-upside-down"])
def test_a_cylinder_in_the_ground_is_as_deep_as_its_lowest_rim_point(q):
    y = lowest_extent(q) - 0.01
    dist, n, point = simkit_deepest([CYLINDER], [((0.3, y, -0.2), q)])
    assert dist == pytest.approx(-0.01, abs=1e-12)
    np.testing.assert_allclose(n, DOWN, atol=1e-15)
    assert point[1] == pytest.approx(-0.005, abs=1e-12)       # midway between the two surfaces


def closest_on_cylinder(p, r=R, h=H):
    """Signed distance of ``p`` (cylinder frame) to the cylinder, and the outward normal there."""
    rho = np.hypot(p[0], p[2])
    radial = np.array([p[0], 0.0, p[2]]) / rho
    q0, q1 = rho - r, abs(p[1]) - h
    axial = np.array([0.0, np.sign(p[1]), 0.0])
    if q0 > 0 and q1 > 0:
        d = np.hypot(q0, q1)
        return d, (radial * q0 + axial * q1) / d
    return (q0, radial) if q0 > q1 else (q1, axial)


@pytest.mark.parametrize("where", [(0.03, 0.2, -0.04), (0.13, 0.05, 0.02), (0.12, 0.18, 0.06), (0.0, -0.02, 0.09)],
                         ids=["above-its-face", "beside-its-side", "beyond-its-rim", "inside-near-its-side"])
def test_a_sphere_touching_a_cylinder_is_as_deep_as_the_closed_form(where):
    q = about((0.3, 1.0, -0.5), 0.9)
    p_local = np.array(where)
    d, n_local = closest_on_cylinder(p_local)
    radius = 0.06
    dist, n, _ = simkit_deepest([CYLINDER, ("sphere", (radius, 0.0, 0.0))],
                                [((0.1, 0.2, 0.3), q), (np.array([0.1, 0.2, 0.3]) + rotate(q, p_local), (0, 0, 0, 1))])
    assert dist == pytest.approx(d - radius, abs=1e-12)
    np.testing.assert_allclose(n, rotate(q, n_local), atol=1e-12)


def tilted(rng) -> np.ndarray:
    """A random pose of a cylinder from upright to nearly on its side."""
    return about((np.cos(t := rng.uniform(0, 2 * np.pi)), 0.0, np.sin(t)), rng.uniform(0.05, 1.3))


@pytest.mark.parametrize("other", [("box", (0.5, 0.1, 0.5)), ("cylinder", (0.4, 0.1, 0.0))])
def test_a_tilted_cylinder_on_a_face_is_as_deep_as_its_lowest_rim_point(other):
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, depth = tilted(rng), rng.uniform(0.001, 0.03)
        p = (rng.uniform(-0.2, 0.2), 0.1 + lowest_extent(q) - depth, rng.uniform(-0.2, 0.2))
        dist, n, _ = simkit_deepest([CYLINDER, other], [(p, q), ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))])
        assert dist == pytest.approx(-depth, abs=1e-9)
        np.testing.assert_allclose(n, DOWN, atol=1e-9)


def test_a_cylinder_lying_on_a_long_box_far_from_its_center_touches_along_its_side():
    # the box's center is 1.5 m away: the rims' deepest points are found from the face below
    dist, n, _ = simkit_deepest([CYLINDER, ("box", (2.0, 0.1, 2.0))],
                                [((1.5, 0.1 + R - 0.004, 0.2), ON_ITS_SIDE), ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))])
    assert dist == pytest.approx(-0.004, abs=1e-12)
    np.testing.assert_allclose(n, DOWN, atol=1e-12)


def test_two_crossed_cylinders_touch_side_on_side_at_the_closed_form_depth():
    along_x = about((0.0, 0.0, 1.0), np.pi / 2)
    rng = np.random.default_rng(2)
    for _ in range(5):
        depth = rng.uniform(0.001, 0.03)
        p = (rng.uniform(-0.1, 0.1), R + 0.1 - depth, rng.uniform(-0.1, 0.1))
        dist, n, _ = simkit_deepest([CYLINDER, ("cylinder", (0.1, 0.3, 0.0))],
                                    [(p, ON_ITS_SIDE), ((0.0, 0.0, 0.0), along_x)])
        # the axis point converges to 3e-5 m of the true one: the depth is off by its square
        assert dist == pytest.approx(-depth, abs=1e-8)
        np.testing.assert_allclose(n, DOWN, atol=1e-3)


def test_a_capsule_end_in_a_cylinder_face_is_as_deep_as_the_closed_form():
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = random_quat(rng)
        a = rotate(q, np.array([0.0, 1.0, 0.0])) * np.sign(rotate(q, np.array([0.0, 1.0, 0.0]))[1])
        depth = rng.uniform(0.001, 0.03)
        end = np.array([rng.uniform(-0.05, 0.05), H + 0.05 - depth, rng.uniform(-0.05, 0.05)])
        dist, n, _ = simkit_deepest([CYLINDER, ("capsule", (0.05, 0.1, 0.0))],
                                    [((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)), (end + 0.1 * a, q)])
        assert dist == pytest.approx(-depth, abs=1e-12)
        np.testing.assert_allclose(n, -DOWN, atol=1e-12)


# -- against MuJoCo ---------------------------------------------------------------------------
def plane_poses(rng):
    q = random_quat(rng)
    return [CYLINDER], [((rng.uniform(-1, 1), lowest_extent(q) - rng.uniform(0.001, 0.03), rng.uniform(-1, 1)), q)]


def sphere_poses(rng):
    u = rng.normal(size=3)
    return [CYLINDER, ("sphere", (0.05, 0.0, 0.0))], [((0.0, 0.0, 0.0), random_quat(rng)),
                                                      (u / np.linalg.norm(u) * rng.uniform(0.05, 0.14), (0, 0, 0, 1))]


def box_face_poses(rng):
    q = tilted(rng)
    p = (rng.uniform(-0.2, 0.2), 0.1 + lowest_extent(q) - rng.uniform(0.001, 0.03), rng.uniform(-0.2, 0.2))
    return [CYLINDER, ("box", (0.5, 0.1, 0.5))], [(p, q), ((0.0, 0.0, 0.0), random_yaw(rng))]


def random_yaw(rng):
    return about((0.0, 1.0, 0.0), rng.uniform(0, 2 * np.pi))


def capsule_side_poses(rng):
    p = (rng.uniform(-0.2, 0.2), H - rng.uniform(0.001, 0.03), rng.uniform(-0.1, 0.1))
    return [CYLINDER, ("capsule", (0.05, 0.3, 0.0))], [(p, ON_ITS_SIDE), ((0.0, 0.0, 0.0), about((0, 0, 1), np.pi / 2))]


def capsule_end_poses(rng):
    q = random_quat(rng)
    a = rotate(q, np.array([0.0, 1.0, 0.0]))
    end = np.array([rng.uniform(-0.05, 0.05), H + 0.05 - rng.uniform(0.001, 0.03), rng.uniform(-0.05, 0.05)])
    return [CYLINDER, ("capsule", (0.05, 0.1, 0.0))], [((0.0, 0.0, 0.0), (0, 0, 0, 1)),
                                                       (end + 0.1 * a * np.sign(a[1]), q)]


# (poses, depth tolerance, normal tolerance). MuJoCo's plane and sphere pairs are analytic
# (measured: 1e-13); its box-cylinder and capsule-cylinder pairs come from its convex solver
# (box: 4e-7 measured; capsule: 1e-11 side on side, but up to 2e-4 m shallower for a
# capsule's end in a face, where the closed form agrees with simkit to 1e-12, see
# test_a_capsule_end_in_a_cylinder_face_is_as_deep_as_the_closed_form)
MUJOCO_CASES = {"plane": (plane_poses, 1e-9, 1e-9), "sphere": (sphere_poses, 1e-9, 1e-9),
                "box-face": (box_face_poses, 1e-6, 1e-5), "capsule-side": (capsule_side_poses, 1e-9, 1e-7),
                "capsule-end": (capsule_end_poses, 3e-4, 1e-9)}


@pytest.mark.parametrize("case", list(MUJOCO_CASES))
def test_cylinder_contact_depth_and_normal_match_mujoco_at_random_poses(case):
    pytest.importorskip("mujoco")
    poses, depth_tol, normal_tol = MUJOCO_CASES[case]
    rng = np.random.default_rng(4)
    for _ in range(6):
        shapes, pose = poses(rng)
        dist, n, _ = simkit_deepest(shapes, pose)
        mj_dist, mj_n, _ = mujoco_deepest(shapes, pose)
        assert np.isfinite(mj_dist), "MuJoCo finds no contact: the poses are wrong"
        assert dist == pytest.approx(mj_dist, abs=depth_tol)
        np.testing.assert_allclose(n, mj_n, atol=normal_tol)
