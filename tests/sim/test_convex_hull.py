"""The convex hull of add_shape_convex (simkit.sim.hull, build time): its vertices and
triangles against the point set, the mass, center of mass and inertia of its solid against
closed forms (a box, a right tetrahedron), and its refusal of bad point sets."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk
from simkit.sim.hull import convex_hull
from simkit.sim.mesh_geometry import is_closed

IDENTITY = (0.0, 0.0, 0.0, 1.0)
H = np.array([0.1, 0.2, 0.3])
CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * H


def test_the_hull_of_a_boxs_corners_and_inner_points_is_the_8_corners_in_12_outward_triangles():
    inner = np.random.default_rng(1).uniform(-1.0, 1.0, size=(30, 3)) * H * 0.9
    face_centres = np.diag(H)
    v, t = convex_hull(np.vstack([inner, CORNERS, face_centres]))
    assert sorted(map(tuple, v)) == sorted(map(tuple, CORNERS))
    assert len(t) == 12 and is_closed(t)
    a, b, c = (v[t[:, k]] for k in range(3))
    outward = np.einsum("ij,ij->i", np.cross(b - a, c - a), (a + b + c) / 3.0)
    assert np.all(outward > 0.0)


def test_every_point_of_a_random_cloud_is_inside_or_on_its_hull():
    rng = np.random.default_rng(2)
    for n in (4, 10, 60, 300):
        p = rng.normal(size=(n, 3)) * rng.uniform(0.01, 3.0, size=3)
        v, t = convex_hull(p)
        a, b, c = (v[t[:, k]] for k in range(3))
        normal = np.cross(b - a, c - a)
        normal /= np.linalg.norm(normal, axis=1, keepdims=True)
        assert (p @ normal.T - np.einsum("ij,ij->i", normal, a)).max() < 1e-9 * np.ptp(p)
        assert is_closed(t)


def test_a_box_shaped_hulls_mass_center_and_inertia_are_the_boxs():
    q = np.array([0.3, -0.2, 0.1, 0.9]) / np.linalg.norm([0.3, -0.2, 0.1, 0.9])
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    b.add_shape_convex((0.05, -0.1, 0.2), q, CORNERS, body=body, density=700.0)
    model = b.finalize(dtype=sk.float64)
    m = 700.0 * 8.0 * H.prod()
    x, y, z, w = q
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    hx, hy, hz = H
    I_box = np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy]) * (m / 3.0)
    assert model.bodies.mass.numpy()[0] == pytest.approx(m, rel=1e-12)
    np.testing.assert_allclose(model.bodies.com.numpy()[0], (0.05, -0.1, 0.2), atol=1e-14)
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], R @ I_box @ R.T, rtol=1e-10, atol=1e-14)


def test_a_right_tetrahedrons_mass_center_and_inertia_match_the_closed_form():
    a, rho = 0.3, 500.0
    tet = np.array([[0, 0, 0], [a, 0, 0], [0, a, 0], [0, 0, a]], dtype=float)
    b = sk.sim.ModelBuilder()
    b.add_shape_convex((0.0, 0.0, 0.0), IDENTITY, tet, body=b.add_body(), density=rho)
    model = b.finalize(dtype=sk.float64)
    m = rho * a ** 3 / 6.0
    c = np.full(3, a / 4.0)
    # about the right-angle corner: int x^2 dV = a^5 / 60 and int x y dV = a^5 / 120 (per unit density)
    second = rho * (np.full((3, 3), a ** 5 / 120.0) + np.eye(3) * a ** 5 / 120.0)
    I_origin = np.trace(second) * np.eye(3) - second
    I_center = I_origin - m * (c @ c * np.eye(3) - np.outer(c, c))
    assert model.bodies.mass.numpy()[0] == pytest.approx(m, rel=1e-12)
    np.testing.assert_allclose(model.bodies.com.numpy()[0], c, atol=1e-14)
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], I_center, rtol=1e-10, atol=1e-16)


def test_a_hull_stores_its_vertices_planes_and_bounding_radius_for_the_kernels():
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body)
    s = b.add_shape_convex((0.0, 0.0, 0.0), IDENTITY, CORNERS, scale=2.0, body=body)
    model = b.finalize(dtype=sk.float64)
    first, count, tri_first, tri_count = model.shapes.hull.numpy()[s]
    v = model.shapes.hull_vertices.numpy()[first:first + count]
    np.testing.assert_allclose(np.sort(np.abs(v), axis=0), np.tile(2.0 * H, (8, 1)))
    normals = model.shapes.hull_normals.numpy()[tri_first:tri_first + tri_count]
    offsets = model.shapes.hull_offsets.numpy()[tri_first:tri_first + tri_count]
    np.testing.assert_allclose(np.abs(normals).sum(axis=1), 1.0, atol=1e-14)     # axis-aligned faces
    np.testing.assert_allclose(offsets, np.abs(normals) @ (2.0 * H), atol=1e-14)
    assert model.shapes.params.numpy()[s][0] == pytest.approx(2.0 * math.sqrt(H @ H))
    assert model.shapes.hull.numpy()[0].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("points, message", [
    (np.zeros((3, 3)), r"add_shape_convex: points: points must be an N x 3 array with N >= 4, got shape \(3, 3\)"),
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], r"add_shape_convex: points: the points are in a plane"),
    ([[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]], r"add_shape_convex: points: the points are on a line"),
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, np.nan]], r"add_shape_convex: points: points must be finite"),
    ("abc", r"add_shape_convex: points must be an N x 3 array of numbers, got str"),
])
def test_add_shape_convex_refuses_a_point_set_without_a_volume_naming_the_argument(points, message):
    with pytest.raises(ValueError, match=message):
        sk.sim.ModelBuilder().add_shape_convex((0.0, 0.0, 0.0), IDENTITY, points)


def test_add_shape_convex_refuses_a_nonpositive_scale():
    with pytest.raises(ValueError, match=r"add_shape_convex: scale must be > 0 \(one number or three\), got -1.0"):
        sk.sim.ModelBuilder().add_shape_convex((0.0, 0.0, 0.0), IDENTITY, CORNERS, scale=-1.0)


def test_copies_of_a_builder_with_a_hull_keep_their_hulls():
    one = sk.sim.ModelBuilder()
    one.add_shape_convex((0.0, 0.0, 0.0), IDENTITY, CORNERS, body=one.add_body())
    b = sk.sim.ModelBuilder()
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=b.add_body())
    for x in (0.0, 1.0):
        b.add_builder(one, xform=((x, 0.0, 0.0), IDENTITY))
    model = b.finalize(dtype=sk.float64)
    rows = model.shapes.hull.numpy()
    assert rows[0].tolist() == [0, 0, 0, 0]
    assert rows[1].tolist() == [0, 8, 0, 12] and rows[2].tolist() == [8, 8, 12, 12]
    np.testing.assert_allclose(model.bodies.mass.numpy()[1:], 1000.0 * 8.0 * H.prod())
