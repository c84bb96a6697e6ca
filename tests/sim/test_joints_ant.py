"""gymnasium's ant under sk.sim.SemiImplicitEuler (penalty joints between maximal-coordinate
bodies) checked against physics: dropped from its file pose (ankles outside their limits) it
stays finite, keeps its joints together and, its feet frictionless, comes to rest on its
ankle limits at the height sk.sim.Featherstone gives the same model, the gap being the
penalty joints' compliance; spinning freely, its kinetic energy never grows and its momentum
is conserved. (With friction, MuJoCo's ant and Featherstone(contact="constraint") rest higher,
on their feet: tests/sim/test_featherstone_constraint_ant.py.)

The ant's legs weigh 39 to 68 g with about 1e-4 kg m^2 about their hinges, and the file's
joint damping (1 N m s/rad) and the importer's limit damping (10) would reverse the legs'
rates within one explicit step of 1e-4 s: these dampers are implicit in the joint kernel."""

import os
import warnings

import numpy as np
import pytest

import simkit as sk
from test_joints import joint_errors, momenta, rotate

F64 = sk.float64
DT = 1e-4


def ant(ground=True, gravity=-9.81, gain_scale=1.0, frictionless=True):
    """gymnasium's ant as imported, its penalty gains scaled by ``gain_scale``, its feet
    frictionless unless told otherwise: with Coulomb friction that sticks, where the feet stop (and so the torso's
    rest height) depends on the path, which the two integrators take differently; without
    friction the ant settles onto one rest pose, its ankles on their limits."""
    gymnasium = pytest.importorskip("gymnasium")
    from simkit.sim.importers import RobotFileWarning
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=ground, gravity=gravity)
        b.add_mjcf(path)
    model = b.finalize(dtype=F64)
    for gains in (model.joints.linear_ke, model.joints.angular_ke):
        gains.assign(gains.numpy() * gain_scale)
    if frictionless:
        model.shapes.mu.assign(np.zeros(model.shape_count))
    return model


def inside_limits(model):
    """A state at the model's coordinates with every hinge moved inside its limits (the
    file's ankles are at 0, outside their 30 to 70 degrees)."""
    q = model.joint_q.numpy().copy()
    lower, upper = model.joints.limit_lower.numpy(), model.joints.limit_upper.numpy()
    qs, kinds = model.joint_q_start.numpy(), model.joints.kind.numpy()
    for j in np.flatnonzero(kinds <= 1):
        if not lower[j] <= q[qs[j]] <= upper[j]:
            q[qs[j]] = 0.5 * (lower[j] + upper[j])
    state = model.state()
    state.joint_q.assign(q)
    sk.sim.eval_fk(model, state.joint_q, state.joint_qd, state)
    return state


def run(model, state, integrator, steps, dt, every=0, record=None):
    """The state after ``steps`` steps; ``record(state)`` every ``every`` steps."""
    a, b = state, model.state()
    for i in range(steps):
        integrator.step(model, a, b, None, dt)
        a, b = b, a
        if every and i % every == 0:
            record(a)
    return a


def featherstone_rest_height():
    """The torso's resting height under sk.sim.Featherstone (rigid joints), from inside the limits."""
    model = ant()
    end = run(model, inside_limits(model), sk.sim.Featherstone(), 5000, 1e-3)
    assert np.abs(end.joint_qd.numpy()).max() < 1e-3     # the file's armature makes the last creep slow
    return end.body_q.numpy()[0, 2]


@pytest.mark.parametrize("dt", [1e-4, 2e-4])
def test_ant_dropped_from_its_file_pose_stays_finite_and_comes_to_rest_on_its_ankle_limits(dt):
    model = ant()
    worst = []
    every = round(5e-3 / dt)
    end = run(model, model.state(), sk.sim.SemiImplicitEuler(), round(2.5 / dt), dt, every=every,
              record=lambda s: worst.append(np.abs(s.body_qd.numpy()).max()))
    assert np.all(np.isfinite(worst))
    # Out by 30 degrees, each ankle is pushed in by its limit (limit_ke = 1e4 N m/rad, limit_kd
    # = 10 N m s/rad: five times critical damping for the leg) within about 10 ms; from 0.1 s
    # on the ant falls by 0.4 m, at most sqrt(2 g 0.4 m) = 2.8 m/s, and lands.
    assert max(worst[20:]) < 2.0 * np.sqrt(2.0 * 9.81 * 0.4)
    assert np.abs(end.body_qd.numpy()).max() < 1e-2
    # the limits pushed the ankles from 0 out to 30 degrees, where the torso's weight holds them
    q, qd = model.joint_q.clone(), model.joint_qd.clone()
    sk.sim.eval_ik(model, end, q, qd)
    ankles = np.abs(q.numpy()[model.joint_q_start.numpy()[[3, 6, 9, 12]]])
    np.testing.assert_allclose(ankles, np.radians(30.0), atol=2e-3)
    assert end.body_q.numpy()[0, 2] == pytest.approx(featherstone_rest_height(), abs=4e-3)


@pytest.mark.parametrize("gain_scale, tolerance", [(1.0, 4e-3), (10.0, 6e-4)])
def test_ant_rests_at_featherstones_height_up_to_the_penalty_compliance(gain_scale, tolerance):
    # Featherstone's joints are rigid; the penalty joints sag under the torso's weight by
    # about load / gain, so ten times the gains leave a tenth of the gap.
    model = ant(gain_scale=gain_scale)
    end = run(model, inside_limits(model), sk.sim.SemiImplicitEuler(), 15000, DT)
    assert np.abs(end.body_qd.numpy()).max() < 1e-3
    assert end.body_q.numpy()[0, 2] == pytest.approx(featherstone_rest_height(), abs=tolerance)


def test_ant_joint_anchors_stay_within_a_fraction_of_a_millimetre_while_it_falls_and_lands():
    model = ant()
    errors = []
    run(model, inside_limits(model), sk.sim.SemiImplicitEuler(), 10000, DT, every=20,
        record=lambda s: errors.append(joint_errors(model, s)[1:].max()))       # joint 0 is the free joint
    # the landing loads each joint with about the ant's weight: 10 N over linear_ke = 1e5 N/m
    assert max(errors) < 3e-4


def kinetic_energy(model, state):
    X, V = state.body_q.numpy(), state.body_qd.numpy()
    energy = 0.0
    for x, v, m, inertia in zip(X, V, model.bodies.mass.numpy(), model.bodies.inertia.numpy()):
        R = np.stack([rotate(x[3:], e) for e in np.eye(3)], axis=1)
        energy += 0.5 * m * v[3:] @ v[3:] + 0.5 * v[:3] @ R @ inertia @ R.T @ v[:3]
    return energy


def spinning_ant():
    """The ant without ground or gravity, inside its limits, spinning rigidly at 6 rad/s
    about a tilted axis through its center of mass."""
    model = ant(ground=False, gravity=0.0)
    model.contacts_enabled = False      # the file's floor is a plane shape here: in free space nothing touches
    state = inside_limits(model)
    X, com, mass = state.body_q.numpy(), model.bodies.com.numpy(), model.bodies.mass.numpy()
    centres = np.array([x[:3] + rotate(x[3:], c) for x, c in zip(X, com)])
    c0 = mass @ centres / mass.sum()
    w = np.array([0.3, -0.2, 1.0]) * 6.0
    state.body_qd.assign(np.concatenate([np.tile(w, (len(X), 1)), np.cross(w, centres - c0)], axis=1))
    return model, state


def test_spinning_ant_kinetic_energy_never_grows_and_its_dampers_dissipate_it():
    model, state = spinning_ant()
    k0 = kinetic_energy(model, state)
    energies = []
    end = run(model, state, sk.sim.SemiImplicitEuler(), 10000, DT, every=20,
              record=lambda s: energies.append(kinetic_energy(model, s)))
    # the centrifugal load swings the legs against their limits; the joints' dampers take energy
    assert max(energies) <= k0 * (1.0 + 1e-6)
    assert kinetic_energy(model, end) < 0.95 * k0


def test_spinning_ant_without_dampers_never_gains_kinetic_energy():
    # no damper at all: the joints' springs trade energy with the motion (the legs swing out
    # onto their hip limits), and semi-implicit Euler keeps the total bounded, not growing
    model, state = spinning_ant()
    for gains in (model.joints.target_kd, model.joints.limit_kd, model.joints.linear_kd, model.joints.angular_kd):
        gains.zero_()
    k0 = kinetic_energy(model, state)
    energies = []
    run(model, state, sk.sim.SemiImplicitEuler(), 10000, DT, every=20,
        record=lambda s: energies.append(kinetic_energy(model, s)))
    assert max(energies) <= k0 * (1.0 + 1e-6)
    assert min(energies) > 0.9 * k0


def test_spinning_ant_conserves_linear_and_angular_momentum():
    # every joint force acts on both bodies at the same point, equal and opposite, implicit dampers included
    model, state = spinning_ant()
    p0, l0 = momenta(model, state)
    end = run(model, state, sk.sim.SemiImplicitEuler(), 3000, DT)
    p, l = momenta(model, end)
    assert np.abs(p - p0).max() < 1e-12
    np.testing.assert_allclose(l, l0, rtol=0, atol=1e-10 * np.abs(l0).max())
