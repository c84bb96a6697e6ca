"""gymnasium's ant under sk.sim.XPBD (rigid joints and limits between maximal-coordinate
bodies) checked against physics and kinematics, dropped from its file pose, whose ankles (at
0) lie outside their limits (30 to 70 degrees, or -70 to -30).

XPBD projects each ankle onto its nearest limit, 30 degrees (not the far one), within a few
steps, and like every XPBD correction the projection becomes velocity (the violation over
dt: see test_xpbd_rigid's hinge started outside its range). The legs leave their limits
swinging down at hundreds of rad/s, throw the torso up and land on steep ankles (about 62
degrees): the ant stands there at the height
its ankle angles give, a different and dt-dependent trajectory from the gentle push of
MuJoCo's soft limits and of the penalty limits of SemiImplicitEuler and Featherstone, which
leave the ankles at 30 degrees and the torso at 0.36 m. Started on its nearest limits
(docs/articulations.md), XPBD's ant rests there too."""

import numpy as np
import pytest

import simkit as sk
from simkit.sim.geometry import quat_rotate
from test_joints_ant import ant, run

DT = 1e-3
ANKLES = [3, 6, 9, 12]               # joint indices; joint 0 is the free joint, hips are 2, 5, 8, 11
HIPS = [2, 5, 8, 11]
LOWER_LEGS = [3, 6, 9, 12]           # body indices of the lower legs (ankle capsules)
LEG_REACH = 0.4 * np.sqrt(2.0)       # ankle to foot along the lower leg (fromto 0 0 0 0.4 0.4 0)
FOOT_RADIUS = 0.08                   # the capsules' radius


def coordinates(model, state):
    """The joint coordinates of ``state``."""
    q, qd = model.joint_q.clone(), model.joint_qd.clone()
    sk.sim.eval_ik(model, state, q, qd)
    return q.numpy()


def joint_values(model, state, joints):
    return coordinates(model, state)[model.joint_q_start.numpy()[joints]]


def feet(model, state):
    """World positions of the feet: the far ends of the lower legs' capsule axes."""
    X = state.body_q.numpy()
    ends = [np.array([0.4, 0.4, 0.0]), np.array([-0.4, 0.4, 0.0]), np.array([-0.4, -0.4, 0.0]),
            np.array([0.4, -0.4, 0.0])]
    return np.array([X[b, :3] + quat_rotate(X[b, 3:], e) for b, e in zip(LOWER_LEGS, ends)])


def clamped_to_limits(model):
    """The model's state with every hinge's coordinate clamped into its limits (as
    docs/articulations.md shows): the ankles on their nearest bound."""
    q = model.joint_q.numpy().copy()
    starts, kinds = model.joint_q_start.numpy(), model.joints.kind.numpy()
    lower, upper = model.joints.limit_lower.numpy(), model.joints.limit_upper.numpy()
    for j in np.flatnonzero(kinds <= 1):
        q[starts[j]] = np.clip(q[starts[j]], lower[j], upper[j])
    state = model.state()
    state.joint_q.assign(q)
    sk.sim.eval_fk(model, state.joint_q, state.joint_qd, state)
    return state


def test_ant_ankles_enter_their_range_through_their_nearest_limit_under_xpbd():
    model = ant(frictionless=False)
    lower, upper = model.joints.limit_lower.numpy()[ANKLES], model.joints.limit_upper.numpy()[ANKLES]
    nearest = np.where(np.abs(lower) < np.abs(upper), lower, upper)      # every ankle starts at 0
    state, values = model.state(), []
    for _ in range(10):
        state = run(model, state, sk.sim.XPBD(), 1, DT)
        values.append(joint_values(model, state, ANKLES))
    values = np.array(values)
    # from 0 towards the near bound only (the far one is 40 degrees beyond it)...
    assert np.all(values * np.sign(nearest) > 0.0)
    # ...and into the range across that bound (mass splitting spreads the projection over a few steps)
    inside = (values >= lower) & (values <= upper)
    first = np.argmax(inside, axis=0)
    assert inside.any(axis=0).all()
    np.testing.assert_allclose(values[first, range(4)], nearest, atol=np.radians(2.0))


def test_ant_snapped_onto_its_ankle_limits_under_xpbd_is_thrown_up():
    # the projection's velocity (30 degrees over a few steps of 1 ms) swings the lower legs
    # down: the torso, released at 0.75 m, rises instead of falling
    model = ant(frictionless=False)
    heights = []
    run(model, model.state(), sk.sim.XPBD(), 30, DT, every=1, record=lambda s: heights.append(s.body_q.numpy()[0, 2]))
    assert max(heights) > 0.8


def test_ant_dropped_from_its_file_pose_under_xpbd_stands_at_the_height_its_ankle_angles_give():
    model = ant(frictionless=False)
    speeds = []
    end = run(model, model.state(), sk.sim.XPBD(), 2000, DT, every=10,
              record=lambda s: speeds.append(np.abs(s.body_qd.numpy()).max()))
    # landed by 0.8 s (its feet's friction 1, the file's); then only a slow creep (ankles closing at about 1.2 degrees/s, feet
    # sliding out at 1 cm/s: MuJoCo's soft contacts creep at 0.7 degrees/s from a 60 degree stance)
    assert max(speeds[80:]) < 0.03
    ankles = joint_values(model, end, ANKLES)
    lower, upper = model.joints.limit_lower.numpy()[ANKLES], model.joints.limit_upper.numpy()[ANKLES]
    assert np.all((ankles >= lower) & (ankles <= upper))
    np.testing.assert_allclose(joint_values(model, end, HIPS), 0.0, atol=1e-3)
    # hips straight and torso level: each lower leg drops LEG_REACH sin(ankle) from the torso's
    # height to its foot, whose capsule end rests on the ground
    np.testing.assert_allclose(end.body_q.numpy()[0, 3:], [0.0, 0.0, 0.0, 1.0], atol=1e-3)
    np.testing.assert_allclose(feet(model, end)[:, 2], FOOT_RADIUS, atol=1e-3)
    kinematic = LEG_REACH * np.sin(np.abs(ankles)) + FOOT_RADIUS
    np.testing.assert_allclose(end.body_q.numpy()[0, 2], kinematic, atol=2e-3)


def test_ant_started_on_its_nearest_limits_rests_there_under_xpbd_at_its_rigid_height_less_a_sag_of_order_dt2():
    # No projection, no launch: the ant falls 0.39 m, lands and rests on its ankle limits,
    # where MuJoCo's, SemiImplicitEuler's and Featherstone's ants rest. Its torso sits below
    # the height of rigid joints on a rigid ground (LEG_REACH sin(30 deg) + FOOT_RADIUS) by the
    # sag of XPBD's joints under load: four Jacobi iterations per step leave them a
    # compliance of order dt^2 (3.6 mm at dt = 1e-3 s, 0.9 mm at 5e-4, 0.2 mm at 2.5e-4).
    gaps = []
    for dt in (1e-3, 5e-4):
        model = ant(frictionless=False)
        end = run(model, clamped_to_limits(model), sk.sim.XPBD(), round(2.0 / dt), dt)
        assert np.abs(end.body_qd.numpy()).max() < 1e-6
        ankles = np.abs(joint_values(model, end, ANKLES))
        np.testing.assert_allclose(ankles, np.radians(30.0), atol=np.radians(0.2))
        gaps.append(LEG_REACH * np.sin(ankles.mean()) + FOOT_RADIUS - end.body_q.numpy()[0, 2])
    assert 0.0 < gaps[0] < 4e-3
    assert gaps[0] / gaps[1] == pytest.approx(4.0, rel=0.1)
