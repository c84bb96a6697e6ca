"""A static plane of any pose (``add_shape_plane``), infinite or finite: its signed distance
against the closed form, the contact rows of every shape on a tilted plane against the same
shape on the ground turned with it and against MuJoCo's ``mj_collision``, the rows'
gradients against central differences, and the builder's refusals (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import simkit as sk
from shape_pairs import (assert_model_rows_gradient_matches_finite_differences, contact_rows, quat_multiply,
                         random_quat)
from simkit.kernels.shapes import shape_distance
from simkit.kernels.structs import SHAPE_PLANE

SIZES = {"sphere": (0.1, 0.0, 0.0), "box": (0.1, 0.05, 0.15), "capsule": (0.05, 0.1, 0.0),
         "cylinder": (0.1, 0.05, 0.0), "cone": (0.1, 0.1, 0.0), "ellipsoid": (0.15, 0.1, 0.05)}
# a hull of 12 points: an irregular, slightly flattened blob
HULL = np.random.default_rng(7).normal(size=(12, 3)) * (0.1, 0.07, 0.12)
TILT = np.array([0.0, 0.0, np.sin(-0.35 / 2), np.cos(-0.35 / 2)])    # 20 degrees about -z


@sk.kernel
def plane_distances(p: sk.array(dtype=sk.vec3d), size: sk.vec3d, dist: sk.array(dtype=sk.float64),
                    normal: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    d, n = shape_distance(SHAPE_PLANE, p[i], size)
    dist[i] = d
    normal[i] = n


def distances(points: np.ndarray, size) -> tuple[np.ndarray, np.ndarray]:
    p = sk.array(points, dtype=sk.vec3d)
    dist, normal = sk.zeros(len(points), dtype=sk.float64), sk.zeros(len(points), dtype=sk.vec3d)
    sk.launch(plane_distances, len(points), inputs=[p, sk.vec3d(*size)], outputs=[dist, normal])
    return dist.numpy(), normal.numpy()


def rotate(q, v) -> np.ndarray:
    """``v`` turned by the quaternion ``q`` (x, y, z, w)."""
    u, w = np.asarray(q[:3]), q[3]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def test_an_infinite_planes_distance_is_the_height_along_its_normal_everywhere():
    points = np.random.default_rng(0).uniform(-5.0, 5.0, size=(200, 3))
    dist, normal = distances(points, (0.0, 0.0, 0.0))
    np.testing.assert_allclose(dist, points[:, 1], atol=1e-15)
    np.testing.assert_array_equal(normal, np.tile([0.0, 1.0, 0.0], (200, 1)))


def test_a_finite_planes_distance_is_to_its_rectangle_or_to_the_column_below_it():
    hx, hz = 0.5, 0.3
    points = np.random.default_rng(1).uniform(-1.5, 1.5, size=(2000, 3))
    dist, normal = distances(points, (hx, hz, 0.0))
    off = np.array([np.maximum(np.abs(points[:, 0]) - hx, 0.0), np.zeros(len(points)),
                    np.maximum(np.abs(points[:, 2]) - hz, 0.0)]).T
    inside = (off[:, 0] == 0.0) & (off[:, 2] == 0.0)
    above = np.maximum(points[:, 1], 0.0)
    # within the footprint: the height, one-sided (a point below leaves upwards); beside it,
    # the distance to the rectangle (above its plane) or to the column's side (below it)
    expected = np.where(inside, points[:, 1], np.sqrt(off[:, 0] ** 2 + off[:, 2] ** 2 + above ** 2))
    np.testing.assert_allclose(dist, expected, atol=1e-14)
    np.testing.assert_allclose(normal[inside], np.tile([0.0, 1.0, 0.0], (inside.sum(), 1)), atol=1e-15)
    # the normal is the distance's gradient: check it by central differences off the footprint
    h = 1e-6
    for i in np.flatnonzero(~inside)[:50]:
        grad = [(distances(points[[i]] + h * e, (hx, hz, 0.0))[0][0]
                 - distances(points[[i]] - h * e, (hx, hz, 0.0))[0][0]) / (2 * h) for e in np.eye(3)]
        np.testing.assert_allclose(normal[i], grad, atol=1e-6)


def add_shape(b, kind, body, rot=(0.0, 0.0, 0.0, 1.0)):
    if kind == "convex":
        return b.add_shape_convex((0.0, 0.0, 0.0), rot, HULL, body=body)
    size = SIZES[kind]
    if kind == "sphere":
        return b.add_shape_sphere((0.0, 0.0, 0.0), size[0], body=body)
    if kind == "box":
        return b.add_shape_box((0.0, 0.0, 0.0), rot, size, body=body)
    if kind == "ellipsoid":
        return b.add_shape_ellipsoid((0.0, 0.0, 0.0), rot, size, body=body)
    return getattr(b, f"add_shape_{kind}")((0.0, 0.0, 0.0), rot, size[0], size[1], body=body)


def on_plane(kind, plane_q, pos, rot, half_extents=None, requires_grad=False, ground=False):
    """A float64 model of one body carrying ``kind`` at ``(pos, rot)`` above a static plane through
    the origin turned by ``plane_q`` (or, with ``ground``, above the ground alone)."""
    b = sk.sim.ModelBuilder(ground=ground)
    if not ground:
        b.add_shape_plane((0.0, 0.0, 0.0), plane_q, half_extents)
    add_shape(b, kind, b.add_body())
    model = b.finalize(dtype=sk.float64, requires_grad=requires_grad)
    return model, np.concatenate([pos, rot])


def deepest(model, pose):
    state = model.state()
    state.body_q.assign(pose[None, :])
    rows = contact_rows(model, state.body_q)
    on = np.flatnonzero(rows["active"].numpy())
    if not len(on):
        return np.inf, None, None
    dist = rows["dist"].numpy()
    i = on[np.argmin(dist[on])]
    return float(dist[i]), rows["normal"].numpy()[i], rows["point"].numpy()[i]


@pytest.mark.parametrize("kind", list(SIZES) + ["convex"])
def test_a_shape_on_a_tilted_plane_touches_as_it_touches_the_ground_turned_with_it(kind):
    rng = np.random.default_rng(2)
    n = rotate(TILT, np.array([0.0, 1.0, 0.0]))
    for _ in range(10):
        rot = random_quat(rng)
        depth = rng.uniform(0.001, 0.02)
        # the same pose relative to the surface: on the ground, and turned by TILT onto the plane
        ground, pose = on_plane(kind, None, np.zeros(3), rot, ground=True)
        lowest, _, _ = deepest(ground, pose)
        pose[1] -= lowest + depth
        d0, n0, p0 = deepest(ground, pose)
        plane, _ = on_plane(kind, TILT, np.zeros(3), rot)
        tilted = np.concatenate([rotate(TILT, pose[:3]), quat_multiply(TILT, pose[3:])])
        d1, n1, p1 = deepest(plane, tilted)
        assert d0 == pytest.approx(-depth, abs=1e-12)
        assert d1 == pytest.approx(d0, abs=1e-12)
        np.testing.assert_allclose(n1, n, atol=1e-12)
        np.testing.assert_allclose(p1, rotate(TILT, p0), atol=1e-12)


def mujoco_on_plane(kind, plane_q, pose):
    """MuJoCo's deepest contact of ``kind`` at ``pose`` on a plane through the origin turned by
    ``plane_q`` (its normal: the plane's local +y, so MuJoCo's plane is turned y onto z)."""
    import mujoco
    to_z = np.array([-np.sin(np.pi / 4), 0.0, 0.0, np.cos(np.pi / 4)])      # MuJoCo's z onto simkit's y
    plane = quat_multiply(plane_q, to_z)
    size = np.asarray(SIZES[kind])
    q = pose[3:]
    if kind in ("capsule", "cylinder"):
        q = quat_multiply(q, np.array([np.sin(np.pi / 4), 0.0, 0.0, np.cos(np.pi / 4)]))
    sizes = {"sphere": size[:1], "box": size, "capsule": size[:2], "cylinder": size[:2], "ellipsoid": size}[kind]

    def wxyz(r):
        return " ".join(repr(float(x)) for x in (r[3], r[0], r[1], r[2]))

    xml = (f'<mujoco><worldbody><geom type="plane" size="0 0 1" quat="{wxyz(plane)}"/>'
           f'<body pos="{" ".join(map(repr, map(float, pose[:3])))}" quat="{wxyz(q)}"><freejoint/>'
           f'<geom type="{kind}" size="{" ".join(map(repr, map(float, sizes)))}"/></body></worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    c = min(d.contact[:d.ncon], key=lambda c: c.dist)
    return float(c.dist), np.array(c.frame[:3])


@pytest.mark.parametrize("kind", ["sphere", "box", "capsule", "cylinder", "ellipsoid"])
def test_a_shape_on_a_tilted_plane_is_as_deep_as_mujoco_says(kind):
    pytest.importorskip("mujoco")
    rng = np.random.default_rng(3)
    plane_q = quat_multiply(TILT, np.array([np.sin(0.2), 0.0, 0.0, np.cos(0.2)]))
    n = rotate(plane_q, np.array([0.0, 1.0, 0.0]))
    for _ in range(10):
        model, pose = on_plane(kind, plane_q, np.zeros(3), random_quat(rng))
        lowest, _, _ = deepest(model, pose)
        pose[:3] -= n * (lowest + rng.uniform(0.001, 0.02))
        ours, normal, _ = deepest(model, pose)
        theirs, their_normal = mujoco_on_plane(kind, plane_q, pose)
        assert ours == pytest.approx(theirs, abs=1e-9)
        np.testing.assert_allclose(normal, n, atol=1e-12)
        np.testing.assert_allclose(their_normal, n, atol=1e-9)


def test_a_shape_beside_a_finite_plane_does_not_touch_it_and_one_above_it_does():
    model, pose = on_plane("box", TILT, np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), half_extents=(0.5, 0.5))
    n, t = rotate(TILT, np.array([0.0, 1.0, 0.0])), rotate(TILT, np.array([1.0, 0.0, 0.0]))
    pose[:3] = t * 0.3 + n * 0.05   # the box's corners reach 0.081 m along the normal
    assert deepest(model, pose)[0] == pytest.approx(0.05 - 0.081, abs=1e-3)
    pose[:3] = t * 0.9 + n * 0.05   # off the rectangle: its corners reach 0.11 m along it, to 0.79
    assert deepest(model, pose)[0] == np.inf


@pytest.mark.parametrize("kind", ["box", "cylinder", "ellipsoid", "capsule"])
def test_the_gradient_of_plane_contact_rows_with_respect_to_the_pose_matches_finite_differences(kind):
    rng = np.random.default_rng(4)
    n = rotate(TILT, np.array([0.0, 1.0, 0.0]))
    model, pose = on_plane(kind, TILT, np.zeros(3), random_quat(rng), requires_grad=True)
    lowest, _, _ = deepest(model, pose)
    pose[:3] -= n * (lowest + 0.01)
    assert_model_rows_gradient_matches_finite_differences(model, pose[None, :].copy(), seed=4)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(body=0), TypeError, "always static; it takes no body"),
    (dict(density=10.0), TypeError, "takes no density"),
    (dict(half_extents=(0.5,)), ValueError, r"half_extents must be None \(infinite\) or two finite numbers > 0"),
    (dict(half_extents=(0.5, 0.0)), ValueError, "half_extents must be"),
    (dict(half_extents="wide"), ValueError, "half_extents must be"),
    (dict(half_extents=(np.inf, 1.0)), ValueError, "half_extents must be"),
])
def test_add_shape_plane_refuses_what_a_plane_cannot_be_and_adds_nothing(kwargs, error, match):
    b = sk.sim.ModelBuilder()
    b.add_body()
    with pytest.raises(error, match=match):
        b.add_shape_plane((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), **kwargs)
    assert b.shape_count == 0


def test_add_shape_plane_refuses_a_bad_pose_naming_the_argument():
    b = sk.sim.ModelBuilder()
    with pytest.raises(ValueError, match="add_shape_plane: rot expects a quaternion"):
        b.add_shape_plane((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="add_shape_plane: pos expects 3 finite numbers"):
        b.add_shape_plane((0.0, np.nan, 0.0), (0.0, 0.0, 0.0, 1.0))
    assert b.shape_count == 0
