"""The ellipsoid shape (add_shape_ellipsoid, semi-axes along local x, y, z): its contact rows
against the ground, a sphere and a box face against closed forms, an independent optimizer and
MuJoCo's mj_collision (float64); its mass against MuJoCo's; resting on the ground in every
integrator; the gradient of its rows with respect to the poses against central differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk
from shape_pairs import assert_rows_gradient_matches_finite_differences, mujoco_deepest, random_quat, simkit_deepest

E = np.array([0.1, 0.2, 0.05])
ELLIPSOID = ("ellipsoid", tuple(E))
IDENTITY = (0.0, 0.0, 0.0, 1.0)
DOWN = np.array([0.0, -1.0, 0.0])


def rotate_inv(q, v) -> np.ndarray:
    x, y, z, w = q
    u = -np.array([x, y, z])
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def lowest(q, e=E) -> float:
    """How far below its center an ellipsoid of pose ``q`` reaches: |e * n| for n down in its frame."""
    return float(np.linalg.norm(e * rotate_inv(q, DOWN)))


def test_an_ellipsoid_in_the_ground_is_as_deep_as_its_lowest_point():
    rng = np.random.default_rng(11)
    for _ in range(10):
        q, depth = random_quat(rng), rng.uniform(0.001, 0.03)
        dist, n, _ = simkit_deepest([ELLIPSOID], [((0.1, lowest(q) - depth, 0.0), q)])
        assert dist == pytest.approx(-depth, abs=1e-12)
        np.testing.assert_allclose(n, DOWN, atol=1e-15)


def distance_to_ellipsoid(p) -> float:
    """The signed distance of ``p`` (ellipsoid frame) to the surface, by a constrained optimizer
    (independent of simkit's Newton steps)."""
    from scipy.optimize import minimize
    on = [{"type": "eq", "fun": lambda x: np.sum((x / E) ** 2) - 1.0}]
    starts = np.vstack([np.diag(E), -np.diag(E), p / np.sqrt(np.sum((p / E) ** 2))])
    d = min(math.sqrt(minimize(lambda x: np.sum((p - x) ** 2), x0, constraints=on, method="SLSQP",
                               options=dict(ftol=1e-18, maxiter=1000)).fun) for x0 in starts)
    return d if np.sum((p / E) ** 2) > 1.0 else -d


def test_a_sphere_touching_an_ellipsoid_is_as_deep_as_the_optimizers_distance():
    pytest.importorskip("scipy")
    rng = np.random.default_rng(12)
    radius, checked = 0.05, 0
    while checked < 10:
        u = rng.normal(size=3)
        p = u / np.linalg.norm(u) * rng.uniform(0.03, 0.25)
        d = distance_to_ellipsoid(p)
        if d > radius:
            continue
        q = random_quat(rng)
        x, y, z, w = q
        c = p + 2.0 * np.cross([x, y, z], np.cross([x, y, z], p) + w * p)
        dist, _, _ = simkit_deepest([ELLIPSOID, ("sphere", (radius, 0.0, 0.0))], [((0, 0, 0), q), (c, IDENTITY)])
        assert dist == pytest.approx(d - radius, abs=1e-10)     # inside and outside: 3e-15 measured
        checked += 1


def box_face_poses(rng):
    q = random_quat(rng)
    p = (rng.uniform(-0.2, 0.2), 0.1 + lowest(q) - rng.uniform(0.001, 0.03), rng.uniform(-0.2, 0.2))
    return [ELLIPSOID, ("box", (0.5, 0.1, 0.5))], [(p, q), ((0, 0, 0), IDENTITY)]


def plane_poses(rng):
    q = random_quat(rng)
    return [ELLIPSOID], [((0.0, lowest(q) - rng.uniform(0.001, 0.03), 0.0), q)]


def sphere_poses(rng):
    u = rng.normal(size=3)
    return [ELLIPSOID, ("sphere", (0.05, 0.0, 0.0))], [((0, 0, 0), random_quat(rng)),
                                                       (u / np.linalg.norm(u) * rng.uniform(0.06, 0.2), IDENTITY)]


# (poses, depth tolerance, normal tolerance): MuJoCo's plane-ellipsoid is analytic (1e-16
# measured); its box- and sphere-ellipsoid pairs are its convex solver's (5e-7 and 2e-6 m
# measured; the sphere's normal to 0.03: simkit's agrees with the optimizer to 3e-15)
MUJOCO_CASES = {"plane": (plane_poses, 1e-9, 1e-9), "box-face": (box_face_poses, 1e-6, 1e-5),
                "sphere": (sphere_poses, 5e-6, None)}


@pytest.mark.parametrize("case", list(MUJOCO_CASES))
def test_ellipsoid_contact_depth_and_normal_match_mujoco_at_random_poses(case):
    pytest.importorskip("mujoco")
    poses, depth_tol, normal_tol = MUJOCO_CASES[case]
    rng = np.random.default_rng(13)
    compared = 0
    for _ in range(10):
        shapes, pose = poses(rng)
        mj_dist, mj_n, _ = mujoco_deepest(shapes, pose)
        if not np.isfinite(mj_dist):
            continue          # a sphere off the surface
        dist, n, _ = simkit_deepest(shapes, pose)
        assert dist == pytest.approx(mj_dist, abs=depth_tol)
        if normal_tol is not None:
            np.testing.assert_allclose(n, mj_n, atol=normal_tol)
        compared += 1
    assert compared >= 5


def test_an_ellipsoid_bodys_inertia_matches_mujocos_for_the_same_geom():
    mujoco = pytest.importorskip("mujoco")
    q = np.array([0.2, -0.1, 0.3, 0.9]) / np.linalg.norm([0.2, -0.1, 0.3, 0.9])
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_ellipsoid((0.1, 0.0, 0.0), q, E, body=b.add_body(), density=700.0)
    model = b.finalize(dtype=sk.float64)
    m = mujoco.MjModel.from_xml_string(f"""<mujoco><worldbody><body><freejoint/><geom type="ellipsoid"
        size="{E[0]} {E[1]} {E[2]}" pos="0.1 0 0" quat="{q[3]:.17g} {q[0]:.17g} {q[1]:.17g} {q[2]:.17g}"
        density="700"/></body></worldbody></mujoco>""")
    assert model.bodies.mass.numpy()[0] == pytest.approx(m.body_mass[1], rel=1e-12)
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, m.body_iquat[1])
    R = R.reshape(3, 3)
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], R @ np.diag(m.body_inertia[1]) @ R.T,
                               rtol=1e-9, atol=1e-14)


def test_add_shape_ellipsoid_refuses_a_flat_one_naming_the_argument():
    with pytest.raises(ValueError, match=r"add_shape_ellipsoid: semi_axes must be > 0, got \(0.1, 0.0, 0.1\)"):
        sk.sim.ModelBuilder().add_shape_ellipsoid((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.0, 0.1))


INTEGRATORS = {"semi-implicit": sk.sim.SemiImplicitEuler, "featherstone": sk.sim.Featherstone,
               "featherstone-constraint": lambda: sk.sim.Featherstone(contact="constraint"), "xpbd": sk.sim.XPBD}


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_an_ellipsoid_lying_on_its_flattest_side_rests_without_falling_through(integrator):
    b = sk.sim.ModelBuilder()
    featherstone = integrator.startswith("featherstone")
    if featherstone:
        b.add_articulation()
    # its smallest semi-axis (z) turned to the vertical: it rests on its flattest side
    lie = (-math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4))
    body = b.add_body(sk.transform((0.0, E[2], 0.0), IDENTITY))
    if featherstone:
        b.add_joint_free(-1, body)
    b.add_shape_ellipsoid((0.0, 0.0, 0.0), lie, E, body=body, mu=1.0)
    model = b.finalize(dtype=sk.float64)
    start = model.state()
    end = sk.sim.simulate(model, INTEGRATORS[integrator](), start, 1500, 1e-3, keep_states=False)[-1]
    q0, q1 = start.body_q.numpy()[0], end.body_q.numpy()[0]
    assert 0.0 <= q0[1] - q1[1] < 2e-3            # penalty: about g tc^2 = 1 mm in; then it holds
    assert np.abs(q1[[0, 2]] - q0[[0, 2]]).max() < 1e-6
    assert np.abs(q1[3:] - q0[3:]).max() < 1e-6
    assert np.abs(end.body_qd.numpy()[0]).max() < 1e-3


POSED = {"ground": ([ELLIPSOID], [((0.1, 0.08, -0.2), (0.3, 0.1, -0.15, 0.94))]),
         "sphere": ([ELLIPSOID, ("sphere", (0.05, 0.0, 0.0))],
                    [((0, 0, 0), (0.1, 0.3, 0.05, 0.95)), ((0.07, 0.09, 0.03), IDENTITY)]),
         "box": ([ELLIPSOID, ("box", (0.3, 0.1, 0.3))],
                 [((0.05, 0.24, 0.02), (0.25, 0.05, 0.1, 0.96)), ((0, 0, 0), IDENTITY)])}


@pytest.mark.parametrize("pair", list(POSED))
def test_the_gradient_of_ellipsoid_contact_rows_with_respect_to_the_poses_matches_finite_differences(pair):
    assert_rows_gradient_matches_finite_differences(*POSED[pair], seed=14)
