"""The cone shape (add_shape_cone: base of radius r at y = -h, apex at y = +h): its contact
rows against the ground, a sphere and a box face against closed forms and an independent
optimizer (float64); its mass against the closed form and against the same solid as a
triangle mesh; resting on its base and on its side in every integrator; the gradient of its
contact rows with respect to the poses against central differences. (MuJoCo has no cone.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk
from shape_pairs import assert_rows_gradient_matches_finite_differences, random_quat, simkit_deepest
from simkit.kernels.structs import SHAPE_CONE
from simkit.render.geometry import cone_mesh
from simkit.sim.mass import shape_center_of_mass, shape_mass

R, H = 0.1, 0.15
CONE = ("cone", (R, H, 0.0))
DOWN = np.array([0.0, -1.0, 0.0])
IDENTITY = (0.0, 0.0, 0.0, 1.0)
HALF_ANGLE = math.atan2(R, 2.0 * H)
# lying on its side: the slant's outward normal (at HALF_ANGLE above the x axis) turned to -y
TURN = -(math.pi / 2 + HALF_ANGLE)
ON_ITS_SIDE = (0.0, 0.0, math.sin(TURN / 2), math.cos(TURN / 2))
# the height of its axis's middle above the slant
SIDE_HEIGHT = 2.0 * H * R / math.hypot(R, 2.0 * H) - H * R / math.hypot(R, 2.0 * H)


def rotate(q, v) -> np.ndarray:
    x, y, z, w = q
    u = np.array([x, y, z])
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def lowest(q) -> float:
    """How far below its axis's middle a cone of pose ``q`` reaches: its apex or its base's rim."""
    a = rotate(q, np.array([0.0, 1.0, 0.0]))
    return max(-H * a[1], H * a[1] + R * math.sqrt(max(0.0, 1.0 - a[1] ** 2)))


def about(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([np.sin(angle / 2) * axis, [np.cos(angle / 2)]])


@pytest.mark.parametrize("q", [np.array(IDENTITY), about((1, 0, 1), 0.5), np.array(ON_ITS_SIDE),
                               about((1, 0, 0), math.pi - 0.3)],
                         ids=["on-its-base", "on-its-rim", "on-its-side", "on-its-apex"])
def test_a_cone_in_the_ground_is_as_deep_as_its_lowest_point(q):
    dist, n, _ = simkit_deepest([CONE], [((0.2, lowest(q) - 0.01, 0.1), q)])
    assert dist == pytest.approx(-0.01, abs=1e-12)
    np.testing.assert_allclose(n, DOWN, atol=1e-15)


def test_a_cone_in_the_ground_at_random_poses_is_as_deep_as_its_lowest_point():
    rng = np.random.default_rng(7)
    for _ in range(10):
        q, depth = random_quat(rng), rng.uniform(0.001, 0.03)
        dist, _, _ = simkit_deepest([CONE], [((0.0, lowest(q) - depth, 0.0), q)])
        assert dist == pytest.approx(-depth, abs=1e-12)


def distance_to_cone(p) -> float:
    """The distance of an outside point ``p`` (cone frame) to the solid cone, by a constrained
    optimizer over the points of the solid (independent of simkit's closed form)."""
    from scipy.optimize import minimize
    inside = [{"type": "ineq", "fun": lambda x: R * (H - x[1]) / (2.0 * H) - math.hypot(x[0], x[2])},
              {"type": "ineq", "fun": lambda x: x[1] + H}]
    starts = ([0.0, 0.0, 0.0], [0.0, -0.9 * H, 0.0], [0.0, 0.9 * H, 0.0])
    return min(math.sqrt(minimize(lambda x: np.sum((p - x) ** 2), x0, constraints=inside, method="SLSQP",
                                  options=dict(ftol=1e-16, maxiter=500)).fun) for x0 in starts)


def test_a_sphere_touching_a_cone_is_as_deep_as_the_optimizers_distance():
    pytest.importorskip("scipy")
    rng = np.random.default_rng(8)
    radius, checked = 0.1, 0
    while checked < 8:
        u = rng.normal(size=3)
        p = u / np.linalg.norm(u) * rng.uniform(0.12, 0.25)
        d = distance_to_cone(p)
        if not 1e-3 < d < radius:
            continue          # inside (the optimizer's distance is 0), or not touching
        q = random_quat(rng)
        dist, _, _ = simkit_deepest([CONE, ("sphere", (radius, 0.0, 0.0))], [((0, 0, 0), q), (rotate(q, p), IDENTITY)])
        assert dist == pytest.approx(d - radius, abs=1e-7)
        checked += 1


def test_a_tilted_cone_on_a_box_face_is_as_deep_as_its_lowest_point():
    rng = np.random.default_rng(9)
    for _ in range(5):
        q, depth = random_quat(rng), rng.uniform(0.001, 0.03)
        p = (rng.uniform(-0.2, 0.2), 0.1 + lowest(q) - depth, rng.uniform(-0.2, 0.2))
        dist, n, _ = simkit_deepest([CONE, ("box", (0.5, 0.1, 0.5))], [(p, q), ((0, 0, 0), IDENTITY)])
        assert dist == pytest.approx(-depth, abs=1e-12)
        np.testing.assert_allclose(n, DOWN, atol=1e-12)


def test_a_cones_mass_inertia_and_center_are_the_closed_form():
    rho = 800.0
    m, inertia = shape_mass(SHAPE_CONE, (R, H, 0.0), rho)
    expected = rho * math.pi * R * R * 2.0 * H / 3.0
    assert m == pytest.approx(expected, rel=1e-15)
    transverse = expected * (3.0 / 20.0 * R * R + 3.0 / 80.0 * (2.0 * H) ** 2)
    np.testing.assert_allclose(inertia, np.diag([transverse, 0.3 * expected * R * R, transverse]), rtol=1e-14)
    np.testing.assert_allclose(shape_center_of_mass(SHAPE_CONE, (R, H, 0.0)), [0.0, -H / 2.0, 0.0])


def test_a_cone_bodys_mass_matches_the_same_solid_as_a_fine_triangle_mesh():
    tilt = about((0.3, 0.0, 1.0), 0.7)
    b = sk.sim.ModelBuilder(ground=False)
    cone, mesh = b.add_body(), b.add_body()
    b.add_shape_cone((0.1, 0.2, 0.0), tilt, R, H, body=cone)
    solid = cone_mesh(R, H, segments=512)
    # the drawn mesh repeats its apex and rim vertices (one normal each): welded, it is closed
    vertices, index = np.unique(np.round(solid.positions.astype(np.float64), 6), axis=0, return_inverse=True)
    b.add_shape_mesh(mesh, vertices, index.reshape(-1)[solid.triangles.astype(np.int64)],
                     xform=np.concatenate([[0.1, 0.2, 0.0], tilt]))
    model = b.finalize(dtype=sk.float64)
    mass, com, inertia = (getattr(model.bodies, k).numpy() for k in ("mass", "com", "inertia"))
    # the mesh is a 512-gon pyramid: 2.5e-5 less volume than the cone
    assert mass[0] == pytest.approx(mass[1], rel=1e-4)
    np.testing.assert_allclose(com[0], com[1], atol=1e-6)
    np.testing.assert_allclose(inertia[0], inertia[1], rtol=1e-3, atol=1e-9)


@pytest.mark.parametrize("kwargs,match", [
    (dict(radius=-0.1, half_height=0.1), r"add_shape_cone: radius"),
    (dict(radius=0.1, half_height=0.0), r"add_shape_cone: half_height must be > 0")])
def test_add_shape_cone_refuses_bad_sizes_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sk.sim.ModelBuilder().add_shape_cone((0.0, 0.0, 0.0), IDENTITY, **kwargs)


INTEGRATORS = {"semi-implicit": sk.sim.SemiImplicitEuler, "featherstone": sk.sim.Featherstone,
               "featherstone-constraint": lambda: sk.sim.Featherstone(contact="constraint"), "xpbd": sk.sim.XPBD}


@pytest.mark.parametrize("pose", ["base", "side"])
@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_a_cone_on_its_base_or_on_its_side_rests_without_falling_through(integrator, pose):
    b = sk.sim.ModelBuilder()
    featherstone = integrator.startswith("featherstone")
    if featherstone:
        b.add_articulation()
    body = b.add_body(sk.transform((0.0, H if pose == "base" else SIDE_HEIGHT, 0.0), IDENTITY))
    if featherstone:
        b.add_joint_free(-1, body)
    b.add_shape_cone((0.0, 0.0, 0.0), IDENTITY if pose == "base" else ON_ITS_SIDE, R, H, body=body, mu=1.0)
    model = b.finalize(dtype=sk.float64)
    start = model.state()
    end = sk.sim.simulate(model, INTEGRATORS[integrator](), start, 1500, 1e-3, keep_states=False)[-1]
    q0, q1 = start.body_q.numpy()[0], end.body_q.numpy()[0]
    # penalty contact settles g tc^2 = 1 mm in on its base, 2.8 mm on its two side points
    assert 0.0 <= q0[1] - q1[1] < 4e-3
    assert np.abs(q1[[0, 2]] - q0[[0, 2]]).max() < 1e-3
    assert np.abs(q1[3:] - q0[3:]).max() < 3e-3
    assert np.abs(end.body_qd.numpy()[0]).max() < 1e-3


POSED = {"ground": ([CONE], [((0.1, 0.1, -0.2), (0.3, 0.1, -0.15, 0.94))]),
         "sphere": ([CONE, ("sphere", (0.05, 0.0, 0.0))],
                    [((0, 0, 0), (0.1, 0.3, 0.05, 0.95)), ((0.06, 0.05, 0.03), IDENTITY)]),
         "box": ([CONE, ("box", (0.3, 0.1, 0.3))],
                 [((0.05, 0.24, 0.02), (0.25, 0.05, 0.1, 0.96)), ((0, 0, 0), IDENTITY)])}


@pytest.mark.parametrize("pair", list(POSED))
def test_the_gradient_of_cone_contact_rows_with_respect_to_the_poses_matches_finite_differences(pair):
    assert_rows_gradient_matches_finite_differences(*POSED[pair], seed=10)
