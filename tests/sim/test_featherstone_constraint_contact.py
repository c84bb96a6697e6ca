"""Featherstone(contact="constraint"): MuJoCo's soft contact constraints in joint space,
checked against Coulomb's law on an incline, a stack of boxes, and MuJoCo itself.

The incline is the ground with gravity tilted by 20 degrees (exactly equivalent to a tilted
ground). The hold test uses impratio = 10: with MuJoCo's default impratio = 1 the soft
friction rows let a box that should stick creep (MuJoCo's own box creeps 5 mm in 3 s
here, and ours the same); impratio stiffens friction relative to the normal.
"""

import mujoco
import numpy as np
import pytest

import simkit as sk

F64 = sk.float64
SLOPE = np.radians(20.0)


def box_on_incline(mu: float, real=F64, half: float = 0.1, cone: str = "pyramidal"):
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.set_ground_material(mu=mu)      # a pair's friction is the larger of the two (MuJoCo's rule)
    b.set_contact_options(cone=cone)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, half - 1e-4), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (half, half, half), body=body,
                    density=1.0 / (8.0 * half ** 3), mu=mu)
    b.add_joint_free(-1, body)
    model = b.finalize(dtype=real)
    model.gravity = type(model.gravity)(9.81 * np.sin(SLOPE), 0.0, -9.81 * np.cos(SLOPE))
    return model


def run(model, integrator, dt: float, duration: float) -> np.ndarray:
    s0, s1 = model.state(), model.state()
    for _ in range(int(round(duration / dt))):
        integrator.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0.joint_q.numpy().astype(np.float64)


def mujoco_box(mu: float, dt: float, duration: float, impratio: float = 1.0, cone: str = "pyramidal") -> np.ndarray:
    g = (9.81 * np.sin(SLOPE), 0.0, -9.81 * np.cos(SLOPE))
    xml = f"""<mujoco><option timestep="{dt}" integrator="Euler" impratio="{impratio}" cone="{cone}"
    gravity="{g[0]} {g[1]} {g[2]}" tolerance="1e-12" iterations="200"/>
    <worldbody><geom type="plane" size="5 5 .1" friction="{mu} 0.005 0.0001"/>
    <body pos="0 0 {0.1 - 1e-4}"><freejoint/>
    <geom type="box" size=".1 .1 .1" mass="1" friction="{mu} 0.005 0.0001"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    for _ in range(int(round(duration / dt))):
        mujoco.mj_step(m, d)
    return d.qpos.copy()


REALS = {"float64": (F64, 1e-8), "float32": (sk.float32, 1e-5)}   # the float type, the solve's tolerance


@pytest.mark.parametrize("real", list(REALS))
@pytest.mark.parametrize("dt", [1e-3, 1e-4])
def test_box_with_static_friction_holds_on_a_20_degree_incline_for_3_s(dt, real):
    real, tol = REALS[real]
    model = box_on_incline(0.8, real=real)
    q0 = model.state().joint_q.numpy()
    q = run(model, sk.sim.Featherstone(contact="constraint", impratio=10.0, tolerance=tol), dt, 3.0)
    assert np.linalg.norm(q[:2] - q0[:2]) < 1e-3


@pytest.mark.parametrize("real", list(REALS))
@pytest.mark.parametrize("dt", [1e-3, 1e-4])
def test_box_slides_down_a_20_degree_incline_for_3_s_as_coulomb_says(dt, real):
    real, tol = REALS[real]
    model = box_on_incline(0.2, real=real)
    q0 = model.state().joint_q.numpy()
    q = run(model, sk.sim.Featherstone(contact="constraint", tolerance=tol), dt, 3.0)
    expected = 0.5 * 9.81 * (np.sin(SLOPE) - 0.2 * np.cos(SLOPE)) * 3.0 ** 2
    assert q[0] - q0[0] == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("mu", [0.8, 0.2])
def test_box_on_incline_matches_mujoco(mu):
    # same solref, solimp, friction, cone, Euler and dt: both solve the same strictly
    # convex problem each step (MuJoCo by Newton to 1e-12, ours by Gauss-Seidel to 1e-14),
    # so they differ by the solvers' tolerances, accumulated over the steps: 1e-8 m on the
    # resting penetration, 1e-6 relative on the distance slid. (At the default 200 sweeps,
    # Gauss-Seidel stops short on the sliding box, whose pitching makes the pyramid's rows
    # nearly dependent: 4e-5 m off in height and 4e-5 relative in distance after 0.5 s.)
    dt, duration = 1e-3, 0.5
    integrator = sk.sim.Featherstone(contact="constraint", iterations=5000, tolerance=1e-14)
    ours = run(box_on_incline(mu), integrator, dt, duration)
    theirs = mujoco_box(mu, dt, duration)
    start = box_on_incline(mu).state().joint_q.numpy()
    assert ours[2] == pytest.approx(theirs[2], abs=1e-8)
    assert ours[0] - start[0] == pytest.approx(theirs[0], rel=1e-6, abs=1e-9)


def test_stack_of_five_boxes_stays_stacked():
    # the 10 s at dt = 2e-3 (5000 steps, 68 contacts: about 30 s of CPU)
    half, n = 0.1, 5
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    for i in range(n):
        b.add_articulation()
        body = b.add_body(((0.0, 0.0, half + 2.0 * half * i), (0.0, 0.0, 0.0, 1.0)))
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (half, half, half), body=body, density=125.0, mu=0.8)
        b.add_joint_free(-1, body)
    model = b.finalize(dtype=F64)
    q0 = model.state().joint_q.numpy().reshape(n, 7)
    q = run(model, sk.sim.Featherstone(contact="constraint"), 2e-3, 10.0).reshape(n, 7)
    assert np.abs(q[:, :2] - q0[:, :2]).max() < 1e-3
    # resting on each other: each box sinks by the soft contacts' sub-millimetre overlaps only
    assert np.abs(q[:, 2] - q0[:, 2]).max() < 1e-3


@pytest.mark.parametrize("kwargs, error", [
    (dict(contact="rigid"), "contact must be 'penalty' or 'constraint'"),
    (dict(impratio=0.0), "impratio must be None"),
    (dict(tolerance=-1.0), "tolerance must be a positive number"),
    (dict(max_contacts=0), "max_contacts must be a positive integer"),
    (dict(iterations=2.5), "iterations must be a positive integer"),
])
def test_bad_contact_arguments_are_refused_with_the_parameter_named(kwargs, error):
    with pytest.raises((ValueError, TypeError), match=error):
        sk.sim.Featherstone(**kwargs)


def test_constraint_contact_refuses_bodies_outside_articulations():
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.1), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body)
    b.add_joint_free(-1, body)
    loose = b.add_body(((1.0, 0.0, 0.1), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=loose)
    model = b.finalize(dtype=F64)
    with pytest.raises(ValueError, match="bodies outside articulations"):
        sk.sim.Featherstone(contact="constraint").step(model, model.state(), model.state(), None, 1e-3)


@pytest.mark.parametrize("mu, impratio", [(0.2, 1.0), (0.8, 10.0)])
def test_box_on_incline_with_the_elliptic_cone_matches_mujoco(mu, impratio):
    # sliding and held: MuJoCo's elliptic cone (normal and two friction rows, |f_t| <= mu
    # f_n, friction regularized by R_n / impratio), both solvers run to their 1e-12s
    dt, duration = 1e-3, 0.5
    integrator = sk.sim.Featherstone(contact="constraint", impratio=impratio, iterations=2000, tolerance=1e-13)
    model = box_on_incline(mu, cone="elliptic")
    start = model.state().joint_q.numpy()
    ours = run(model, integrator, dt, duration)
    theirs = mujoco_box(mu, dt, duration, impratio=impratio, cone="elliptic")
    assert ours[2] == pytest.approx(theirs[2], abs=1e-9)
    assert ours[0] - start[0] == pytest.approx(theirs[0], rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_a_step_under_a_tape_steps_as_without_and_records_a_gradient(cone):
    # the tape changes nothing forward (outside it the solve skips M^-1 J^T, which only the
    # backward reads); the backward reaches the initial rates and, the box sliding (mu = 0.2
    # < tan 20 deg), the shapes' friction (gradients: test_featherstone_constraint_*_grad.py)
    model = box_on_incline(0.2, cone=cone)
    model.shapes.mu.requires_grad = True
    integrator = sk.sim.Featherstone(contact="constraint", iterations=2000, tolerance=1e-12)
    plain = model.state(), model.state()
    integrator.step(model, plain[0], plain[1], None, 1e-3)
    s0, s1 = model.state(requires_grad=True), model.state(requires_grad=True)
    tape = sk.Tape()
    with tape:
        integrator.step(model, s0, s1, None, 1e-3)
    np.testing.assert_array_equal(s1.joint_q.numpy(), plain[1].joint_q.numpy())
    np.testing.assert_array_equal(s1.joint_qd.numpy(), plain[1].joint_qd.numpy())
    tape.backward(grads={s1.joint_qd: np.eye(6)[0]})
    assert s0.joint_qd.grad.numpy()[0] > 0.0
    assert np.abs(model.shapes.mu.grad.numpy()).max() > 0.0


def test_frictionless_condim_1_contact_lets_the_box_slide_freely():
    # condim = 1: a normal row only, so the box on the incline accelerates at g sin(20)
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.set_ground_material(condim=1)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.1 - 1e-4), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0, mu=0.8,
                    condim=1)
    b.add_joint_free(-1, body)
    model = b.finalize(dtype=F64)
    model.gravity = type(model.gravity)(9.81 * np.sin(SLOPE), 0.0, -9.81 * np.cos(SLOPE))
    q0 = model.state().joint_q.numpy()
    q = run(model, sk.sim.Featherstone(contact="constraint"), 1e-3, 0.5)
    assert q[0] - q0[0] == pytest.approx(0.5 * 9.81 * np.sin(SLOPE) * 0.25, rel=0.01)


def test_shapes_whose_masks_exclude_each_other_pass_through():
    # two stacked boxes, the upper one's contype and conaffinity exclude the lower one's: it
    # falls through it onto the ground (whose conaffinity 3 takes both), as in MuJoCo
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.set_ground_material(conaffinity=3)
    for i in range(2):
        b.add_articulation()
        body = b.add_body(((0.0, 0.0, 0.1 + 0.2 * i), (0.0, 0.0, 0.0, 1.0)))
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0,
                        contype=1 if i == 0 else 2, conaffinity=1 if i == 0 else 2)
        b.add_joint_free(-1, body)
    model = b.finalize(dtype=F64)
    q = run(model, sk.sim.Featherstone(contact="constraint"), 2e-3, 0.5).reshape(2, 7)
    assert q[1, 2] == pytest.approx(0.1, abs=1e-3)      # through the lower box, onto the ground
    assert q[0, 2] == pytest.approx(0.1, abs=1e-3)
