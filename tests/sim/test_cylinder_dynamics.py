"""A cylinder in every integrator: on its side it rolls down an incline at the rolling
acceleration 2/3 g sin(theta); standing on a face it rests (does not fall through the ground,
sink on, or drift); and the gradients of its contact rows and contact forces with respect to
the body poses match central differences (float64).

The incline is the ground with gravity tilted by theta about z (downhill is +x), as in
test_friction_incline.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk
from shape_pairs import assert_rows_gradient_matches_finite_differences, pair_model
from simkit.sim.forces import eval_body_contact_forces
from sim_helpers import central_difference

G = 9.81
THETA = math.radians(15.0)
R, H = 0.1, 0.05
ON_ITS_SIDE = (math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4))     # its axis along z
UPRIGHT = (0.0, 0.0, 0.0, 1.0)
DT = 1e-3

INTEGRATORS = {"semi-implicit": sk.sim.SemiImplicitEuler, "featherstone": sk.sim.Featherstone,
               "featherstone-constraint": lambda: sk.sim.Featherstone(contact="constraint"), "xpbd": sk.sim.XPBD}


def cylinder_on_the_ground(integrator, rot, height, theta=0.0, mu=1.0):
    """A cylinder of 0.1 m radius and 0.1 m height (3.1 kg) at ``height`` above the ground, under
    gravity tilted by ``theta``; on a free joint in Featherstone."""
    b = sk.sim.ModelBuilder()
    featherstone = integrator.startswith("featherstone")
    if featherstone:
        b.add_articulation()
    body = b.add_body(sk.transform((0.0, height, 0.0), UPRIGHT))
    if featherstone:
        b.add_joint_free(-1, body)
    b.add_shape_cylinder((0.0, 0.0, 0.0), rot, R, H, body=body, mu=mu)
    model = b.finalize(dtype=sk.float64)
    model.gravity = model.types.vec3(G * math.sin(theta), -G * math.cos(theta), 0.0)
    return model


def run(model, integrator, seconds, state=None):
    state = model.state() if state is None else state
    return sk.sim.simulate(model, INTEGRATORS[integrator](), state, int(round(seconds / DT)), DT,
                           keep_states=False)[-1]


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_a_cylinder_on_its_side_rolls_down_an_incline_at_two_thirds_g_sin_theta(integrator):
    model = cylinder_on_the_ground(integrator, ON_ITS_SIDE, R, THETA)
    # 0.1 s to settle onto its contact (penalty: about 1 mm), then 0.5 s timed from there
    start = run(model, integrator, 0.1)
    x0, v0 = start.body_q.numpy()[0, 0], start.body_qd.numpy()[0, 3]
    end = run(model, integrator, 0.5, start)
    a = 2.0 / 3.0 * G * math.sin(THETA)
    # measured: within 0.15 % of the closed form in every integrator at dt = 1e-3 s
    assert end.body_q.numpy()[0, 0] - x0 == pytest.approx(v0 * 0.5 + 0.5 * a * 0.25, rel=5e-3)
    # without slipping: the spin about z carries the center, v = -w_z r
    w, v = end.body_qd.numpy()[0, :3], end.body_qd.numpy()[0, 3:]
    assert -w[2] * R == pytest.approx(v[0], rel=5e-3)
    assert abs(end.body_q.numpy()[0, 2]) < 1e-6                 # it keeps its line


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_a_cylinder_standing_on_its_face_rests_without_sinking_or_drifting(integrator):
    model = cylinder_on_the_ground(integrator, UPRIGHT, H)
    settled = run(model, integrator, 1.0)
    end = run(model, integrator, 1.0, settled)
    q0, q1, q2 = model.state().body_q.numpy()[0], settled.body_q.numpy()[0], end.body_q.numpy()[0]
    # penalty contact settles about g tc^2 = 1 mm in (1.3 mm measured), the others less; then it stays
    assert 0.0 <= q0[1] - q2[1] < 2e-3
    assert abs(q2[1] - q1[1]) < 1e-6
    assert np.abs(q2[[0, 2]] - q0[[0, 2]]).max() < 1e-9
    assert np.abs(q2[3:6]).max() < 1e-9                            # upright
    assert np.abs(end.body_qd.numpy()[0]).max() < 1e-5


# (shapes, world poses (p, q)): each a contact at a generic pose, away from feature switches
POSED_PAIRS = {
    "ground": ([("cylinder", (R, H, 0.0))], [((0.1, 0.07, -0.2), (0.2, 0.1, -0.15, 0.96))]),
    "sphere": ([("cylinder", (R, H, 0.0)), ("sphere", (0.05, 0.0, 0.0))],
               [((0.0, 0.0, 0.0), (0.1, 0.3, 0.05, 0.95)), ((0.04, 0.09, 0.03), UPRIGHT)]),
    "box": ([("cylinder", (R, H, 0.0)), ("box", (0.3, 0.1, 0.3))],
            [((0.05, 0.18, 0.02), (0.25, 0.05, 0.1, 0.96)), ((0.0, 0.0, 0.0), (0.0, 0.2, 0.0, 0.98))]),
    "capsule": ([("cylinder", (R, H, 0.0)), ("capsule", (0.04, 0.1, 0.0))],
                [((0.0, 0.0, 0.0), (0.1, 0.0, 0.05, 0.99)), ((0.02, 0.18, 0.01), (0.3, 0.1, 0.2, 0.93))]),
    "cylinder": ([("cylinder", (R, H, 0.0)), ("cylinder", (0.08, 0.2, 0.0))],
                 [((0.01, 0.16, 0.02), (0.69, 0.1, 0.05, 0.71)), ((0.0, 0.0, 0.0), (0.05, 0.1, 0.7, 0.7))]),
}


@pytest.mark.parametrize("pair", list(POSED_PAIRS))
def test_the_gradient_of_cylinder_contact_rows_with_respect_to_the_poses_matches_finite_differences(pair):
    assert_rows_gradient_matches_finite_differences(*POSED_PAIRS[pair], seed=5)


def test_the_gradient_of_a_cylinders_penalty_contact_force_with_respect_to_its_pose_matches_finite_differences():
    shapes, poses = POSED_PAIRS["ground"]
    model = pair_model(shapes, requires_grad=True)
    q = np.array([np.concatenate(poses[0])], dtype=np.float64)
    q[0, 3:] /= np.linalg.norm(q[0, 3:])
    w = np.random.default_rng(6).normal(size=6)

    def loss_at(s_in, s_out):
        s_in.clear_forces()
        eval_body_contact_forces(model, s_in, s_out)
        loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
        sk.launch(dot_wrench, 1, inputs=[s_in.body_f, sk.array(w, dtype=sk.float64), loss])
        return loss

    def states(values):
        s_in, s_out = model.state(requires_grad=True), model.state(requires_grad=True)
        s_in.body_q.assign(values)
        return s_in, s_out

    s_in, s_out = states(q)
    with sk.Tape() as tape:
        loss = loss_at(s_in, s_out)
    tape.backward(loss=loss)
    body_q = s_in.body_q
    grad = body_q.grad.numpy().reshape(7)
    for c in range(7):
        fd = central_difference(lambda: loss_at(*states(q)).numpy()[0], q, (0, c), 1e-7)
        assert grad[c] == pytest.approx(fd, rel=1e-5, abs=1e-4), c


@sk.kernel
def dot_wrench(f: sk.array(dtype=sk.vector(6, sk.float64)), w: sk.array(dtype=sk.float64),
               loss: sk.array(dtype=sk.float64)):
    s = f[0][0] * w[0]
    for k in range(1, 6):
        s = s + f[0][k] * w[k]
    loss[0] = s


def test_a_cylinder_rolling_down_an_incline_in_featherstones_constraint_contact_matches_mujoco():
    mujoco = pytest.importorskip("mujoco")
    # z up, the cylinder's axis along y (simkit's local y, MuJoCo's zaxis="0 1 0"), 1 kg, mu 1;
    # the same solref, solimp, cone, Euler and dt: both see two contacts (each rim's lowest point)
    mu, steps, g = 1.0, 500, (G * math.sin(THETA), 0.0, -G * math.cos(THETA))
    b = sk.sim.ModelBuilder(gravity=-G, up_axis="z", ground=True)
    b.set_ground_material(mu=mu)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, R - 1e-4), UPRIGHT))
    b.add_shape_cylinder((0.0, 0.0, 0.0), UPRIGHT, R, H, body=body, density=1.0 / (math.pi * R * R * 2.0 * H), mu=mu)
    b.add_joint_free(-1, body)
    model = b.finalize(dtype=sk.float64)
    model.gravity = model.types.vec3(*g)
    integrator = sk.sim.Featherstone(contact="constraint", iterations=5000, tolerance=1e-14)
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        integrator.step(model, s0, s1, None, DT)
        s0, s1 = s1, s0
    ours = s0.joint_q.numpy()
    m = mujoco.MjModel.from_xml_string(f"""<mujoco><option timestep="{DT}" integrator="Euler"
        gravity="{g[0]!r} {g[1]!r} {g[2]!r}" tolerance="1e-12" iterations="200"/><worldbody>
        <geom type="plane" size="5 5 .1" friction="{mu} 0.005 0.0001"/><body pos="0 0 {R - 1e-4!r}"><freejoint/>
        <geom type="cylinder" size="{R} {H}" zaxis="0 1 0" mass="1" friction="{mu} 0.005 0.0001"/></body>
        </worldbody></mujoco>""")
    d = mujoco.MjData(m)
    for _ in range(steps):
        mujoco.mj_step(m, d)
    # measured: 0.2120111 m against MuJoCo's 0.2120118 m (3e-6 relative; the closed form
    # 1/2 (2/3 g sin theta) t^2 is 0.21158), the height within 1e-8 m
    assert ours[0] == pytest.approx(d.qpos[0], rel=1e-5)
    assert ours[2] == pytest.approx(d.qpos[2], abs=1e-7)
    assert ours[0] == pytest.approx(0.5 * 2.0 / 3.0 * G * math.sin(THETA) * (steps * DT) ** 2, rel=5e-3)


def test_a_cylinder_lying_on_a_mesh_floor_far_from_its_center_rests_as_at_its_center():
    # a static 4 m x 4 m slab as a triangle mesh, its top at y = 0.1; 1.5 m from its center the
    # direction to the mesh's center would miss the lowest rim points (0.5 mm deeper)
    from simkit.render.geometry import box_mesh
    slab = box_mesh((2.0, 0.05, 2.0))
    vertices, index = np.unique(slab.positions.astype(np.float64), axis=0, return_inverse=True)
    sinks = []
    for x in (0.0, 1.5):
        b = sk.sim.ModelBuilder(ground=False)
        b.add_shape_mesh(-1, vertices, index.reshape(-1)[slab.triangles.astype(np.int64)],
                         xform=sk.transform((0.0, 0.05, 0.0), UPRIGHT), density=0.0)
        body = b.add_body(sk.transform((x, 0.1 + R, 0.0), UPRIGHT))
        b.add_shape_cylinder((0.0, 0.0, 0.0), ON_ITS_SIDE, R, H, body=body, mu=1.0)
        end = run(b.finalize(dtype=sk.float64), "semi-implicit", 1.0)
        sinks.append(0.1 + R - end.body_q.numpy()[0, 1])
        assert np.abs(end.body_qd.numpy()[0]).max() < 1e-3
    assert 0.0 < sinks[0] < 2e-3                   # 0.86 mm measured
    assert sinks[1] == pytest.approx(sinks[0], abs=1e-9)
