"""Joint limits under Featherstone(contact="constraint"): MuJoCo's soft limit constraints
(solreflimit, solimplimit, margin), solved with the contacts, against mj_step (Euler, same dt)
on pendulums that fall onto their limits; their parameters from the builder and from MJCF.
"""

import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.sim.importers import RobotFileError, RobotFileWarning

mujoco = pytest.importorskip("mujoco")

PENDULUM = """<mujoco><option timestep="{dt}" integrator="Euler"/>
<default><joint {defaults}/></default>
<worldbody><body pos="0 0 1"><joint name="h" type="{kind}" axis="{axis}" range="{lo} {hi}" {extra}/>
<geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/></body></worldbody></mujoco>"""

CASES = {  # the hinge's attributes and <default>, the slider's
    "hinge, MuJoCo's defaults": dict(kind="hinge", axis="0 1 0", lo=-30, hi=30, extra="", defaults=""),
    "hinge, solreflimit solimplimit margin": dict(kind="hinge", axis="0 1 0", lo=-30, hi=20, defaults='margin="0.05"',
                                                  extra='solreflimit="0.05 0.4" solimplimit="0.8 0.99 0.02"'),
    "slide, direct solref": dict(kind="slide", axis="1 0 -1", lo=-0.1, hi=0.2, defaults="",
                                 extra='solreflimit="-3000 -100"'),
}


def write(tmp_path, **fields):
    path = tmp_path / "pendulum.xml"
    path.write_text(PENDULUM.format(**fields))
    return str(path)


def simkit_model(path):
    b = sk.sim.ModelBuilder(up_axis="z", ground=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b.add_mjcf(path)
    return b.finalize(dtype=sk.float64)


def trajectories(path, model, dt, steps, contacts=True):
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    model.contacts_enabled = contacts
    s0, s1 = model.state(), model.state()
    integrator = sk.sim.Featherstone(contact="constraint", tolerance=1e-14, iterations=200)
    ours, theirs = [], []
    for _ in range(steps):
        integrator.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        mujoco.mj_step(m, d)
        ours.append(s0.joint_q.numpy()[0])
        theirs.append(d.qpos[0])
    return np.array(ours), np.array(theirs)


@pytest.mark.parametrize("case", list(CASES))
def test_pendulum_falling_onto_its_limit_follows_mj_step(tmp_path, case):
    dt = 2e-3
    path = write(tmp_path, dt=dt, **CASES[case])
    ours, theirs = trajectories(path, simkit_model(path), dt, 400)
    # it comes to rest at its upper limit (a little past it, or before it with a margin)
    hi = CASES[case]["hi"] * (np.pi / 180.0 if CASES[case]["kind"] == "hinge" else 1.0)
    assert abs(theirs[-1] - hi) < 0.15 * abs(hi) and abs(theirs[-1] - theirs[-2]) < 1e-4
    np.testing.assert_allclose(ours, theirs, rtol=0.0, atol=1e-9)


def test_limits_hold_with_contacts_switched_off(tmp_path):
    dt = 2e-3
    path = write(tmp_path, dt=dt, **CASES["hinge, MuJoCo's defaults"])
    ours, theirs = trajectories(path, simkit_model(path), dt, 200, contacts=False)
    np.testing.assert_allclose(ours, theirs, rtol=0.0, atol=1e-9)


def test_ball_joint_swinging_onto_its_cone_follows_mj_step(tmp_path):
    dt = 2e-3
    xml = f"""<mujoco><option timestep="{dt}" integrator="Euler"/><worldbody><body pos="0 0 1">
    <joint name="b" type="ball" range="0 40"/>
    <geom type="capsule" fromto="0 0 0 0.5 0.1 0" size="0.05" mass="1"/></body></worldbody></mujoco>"""
    path = tmp_path / "ball.xml"
    path.write_text(xml)
    model = simkit_model(str(path))
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    s0, s1 = model.state(), model.state()
    integrator = sk.sim.Featherstone(contact="constraint", tolerance=1e-14, iterations=200)
    for _ in range(300):
        integrator.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        mujoco.mj_step(m, d)
    angle = 2.0 * np.arccos(min(1.0, abs(d.qpos[0])))
    assert abs(angle - np.radians(40.0)) < np.radians(3.0)          # resting on the cone
    # quaternions: MuJoCo's (w, x, y, z) turned by the exponential map, simkit's (x, y, z, w)
    # to first order, so equal to O(dt^2) per step, not to rounding
    np.testing.assert_allclose(s0.joint_q.numpy(), np.roll(d.qpos, -1), rtol=0.0, atol=1e-5)


def test_penalty_limit_is_off_in_constraint_mode():
    # a stiff limit penalty would stop the hinge at its limit; the soft constraint with
    # MuJoCo's default solref lets a heavy bar into it by the amount MuJoCo's does
    b = sk.sim.ModelBuilder(up_axis="z", ground=False)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_capsule((0.25, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.05, 0.25, body=body, density=1000.0)
    b.add_joint_revolute(-1, body, axis=(0.0, 1.0, 0.0), limit_lower=-0.1, limit_upper=0.1, limit_ke=1e9,
                         limit_kd=1e6, limit_solref=(0.2, 1.0))
    model = b.finalize(dtype=sk.float64)
    ends = {}
    for contact in ("penalty", "constraint"):
        s0, s1 = model.state(), model.state()
        for _ in range(300):
            sk.sim.Featherstone(contact=contact).step(model, s0, s1, None, 1e-3)
            s0, s1 = s1, s0
        ends[contact] = s0.joint_q.numpy()[0]
    assert abs(ends["penalty"] - 0.1) < 1e-3
    assert ends["constraint"] > 0.15       # a 0.2 s time constant: still sinking into the limit


def test_builder_stores_the_soft_limit_parameters():
    b = sk.sim.ModelBuilder()
    b.add_articulation()
    body = b.add_body()
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body)
    b.add_joint_revolute(-1, body, limit_lower=-1.0, limit_upper=1.0, limit_solref=(0.05, 0.5),
                         limit_solimp=(0.8, 0.9, 0.01, 0.4, 3.0), limit_margin=0.02)
    other = b.add_body()
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=other)
    b.add_joint_prismatic(body, other)
    model = b.finalize(dtype=sk.float64)
    np.testing.assert_allclose(model.joints.limit_solref.numpy(), [[0.05, 0.5], [0.02, 1.0]])
    np.testing.assert_allclose(model.joints.limit_solimp.numpy(),
                               [[0.8, 0.9, 0.01, 0.4, 3.0], [0.9, 0.95, 0.001, 0.5, 2.0]])
    np.testing.assert_allclose(model.joints.limit_margin.numpy(), [0.02, 0.0])


@pytest.mark.parametrize("kwargs, message", [
    (dict(limit_solref=(0.02,)), "add_joint_revolute: limit_solref"),
    (dict(limit_solref=(0.02, -1.0)), "add_joint_revolute: limit_solref"),
    (dict(limit_solimp=(0.9, 1.5, 0.001, 0.5, 2.0)), "add_joint_revolute: limit_solimp"),
    (dict(limit_margin=-0.1), "add_joint_revolute: limit_margin"),
])
def test_builder_rejects_bad_soft_limit_parameters(kwargs, message):
    b = sk.sim.ModelBuilder()
    b.add_articulation()
    body = b.add_body()
    with pytest.raises(ValueError, match=message):
        b.add_joint_revolute(-1, body, **kwargs)
    assert b.joint_count == 0                       # nothing half-added


def test_mjcf_reads_soft_limits_over_default_classes(tmp_path):
    path = write(tmp_path, dt=1e-3, kind="hinge", axis="0 1 0", lo=-30, hi=30, extra='solimplimit="0.7"',
                 defaults='solreflimit="0.04 0.5" solimplimit="0.8 0.99 0.02" margin="0.1"')
    model = simkit_model(path)
    np.testing.assert_allclose(model.joints.limit_solref.numpy(), [[0.04, 0.5]])
    np.testing.assert_allclose(model.joints.limit_solimp.numpy(), [[0.7, 0.99, 0.02, 0.5, 2.0]])
    np.testing.assert_allclose(model.joints.limit_margin.numpy(), [0.1])


def test_mjcf_rejects_a_bad_solreflimit(tmp_path):
    path = write(tmp_path, dt=1e-3, kind="hinge", axis="0 1 0", lo=-30, hi=30, extra='solreflimit="0.02 1 3"',
                 defaults="")
    with pytest.raises(RobotFileError, match="solreflimit"):
        simkit_model(path)
