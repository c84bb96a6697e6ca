"""Articulations checked against MuJoCo: the same small trees built in simkit and written as
MJCF, compared in float64 on random configurations for forward kinematics (body poses, the
angular velocity and center-of-mass velocity of every body), the joint-space mass matrix
(``mj_fullM`` after ``mj_forward``), the bias forces (``qfrc_bias``) and the accelerations
under applied generalized forces (``qacc``, contacts off).

The MJCF is written by hand from the same numbers as the simkit builder calls; only the
``<inertial>`` of each body is taken from simkit's model (mass, center of mass and inertia
that simkit computed from the shapes), so the comparison is of the kinematics and dynamics,
with a separate test for a box body whose inertia MuJoCo computes from its geom.

Conventions mapped: MuJoCo quaternions are (w, x, y, z); the angular velocity of its ball and
free joints is in the child's frame, simkit's in the parent's joint frame, so
``qvel = T qd`` with ``T`` the identity except ``R^T`` blocks, ``M_simkit = T^T M_mujoco T``
and ``C_simkit = T^T C_mujoco`` (``dT/dt qd`` is zero: ``d(R^T)/dt w = -R^T (w x w)``).
"""

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.structs import JOINT_BALL, JOINT_FREE
from simkit.sim import geometry as G

mujoco = pytest.importorskip("mujoco")

F64 = sk.float64
TOL = 1e-6


def quat_axis(axis, angle):
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    return np.concatenate([axis * np.sin(angle / 2.0), [np.cos(angle / 2.0)]])


def compose(a, b):
    """The transform a * b of 7-number transforms (p, q xyzw)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.concatenate([a[:3] + G.quat_rotate(a[3:], b[:3]), G.quat_multiply(a[3:], b[3:])])


def pose(p, q=(0.0, 0.0, 0.0, 1.0)):
    """A transform for the builder in full float64 (an sk.transform would hold float32)."""
    return tuple(float(x) for x in p), tuple(float(x) for x in q)


def wxyz(q):
    return f"{q[3]:.17g} {q[0]:.17g} {q[1]:.17g} {q[2]:.17g}"


def inertial(model, b):
    m = float(model.bodies.mass.numpy()[b])
    c = model.bodies.com.numpy()[b]
    inertia = model.bodies.inertia.numpy()[b]
    numbers = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
    return (f'<inertial pos="{c[0]:.17g} {c[1]:.17g} {c[2]:.17g}" mass="{m:.17g}" '
            f'fullinertia="{" ".join(f"{x:.17g}" for x in numbers)}"/>')


def builder():
    return sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=False)


# -- the models --------------------------------------------------------------------------
CAPSULE_Z = quat_axis((1.0, 0.0, 0.0), -np.pi / 2.0)   # simkit capsules lie along local y; this turns y to -z


def double_pendulum():
    """Two links on hinges: a capsule hinged to the world about y, a box hinged to it about a
    tilted axis at an offset anchor, the second body turned about z."""
    X1 = np.concatenate([[0.1, -0.2, 2.0], quat_axis((1.0, 0.0, 0.0), 0.3)])
    rel2 = np.concatenate([[0.0, 0.0, -1.0], quat_axis((0.0, 0.0, 1.0), 0.4)])
    b = builder()
    b.add_articulation()
    l1 = b.add_body(pose(X1[:3], X1[3:]))
    b.add_shape_capsule((0.0, 0.0, -0.5), CAPSULE_Z, 0.05, 0.45, body=l1)
    b.add_joint_revolute(-1, l1, axis=(0.0, 1.0, 0.0))
    X2 = compose(X1, rel2)
    l2 = b.add_body(pose(X2[:3], X2[3:]))
    b.add_shape_box((0.0, 0.0, -0.3), (0.0, 0.0, 0.0, 1.0), (0.05, 0.1, 0.3), body=l2, density=700.0)
    b.add_joint_revolute(l1, l2, child_xform=pose((0.02, 0.0, 0.1)), axis=(1.0, 1.0, 0.0))
    model = b.finalize(dtype=F64)
    xml = f"""
    <mujoco><option gravity="0 0 -9.81"/><worldbody>
      <body pos="0.1 -0.2 2" quat="{wxyz(X1[3:])}">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 -0.05 0 0 -0.95" size="0.05"/>
        {inertial(model, 0)}
        <body pos="0 0 -1" quat="{wxyz(rel2[3:])}">
          <joint type="hinge" pos="0.02 0 0.1" axis="1 1 0"/>
          <geom type="box" pos="0 0 -0.3" size="0.05 0.1 0.3"/>
          {inertial(model, 1)}
        </body>
      </body>
    </worldbody></mujoco>"""
    return model, xml


def cart_pole():
    """A box cart on a slider along x, a capsule pole hinged to it about y."""
    b = builder()
    b.add_articulation()
    cart = b.add_body(pose((0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.2, 0.1, 0.05), body=cart)
    b.add_joint_prismatic(-1, cart, axis=(1.0, 0.0, 0.0))
    pole = b.add_body(pose((0.0, 0.0, 1.0)))
    b.add_shape_capsule((0.0, 0.0, 0.4), CAPSULE_Z, 0.03, 0.4, body=pole, density=500.0)
    b.add_joint_revolute(cart, pole, axis=(0.0, 1.0, 0.0))
    model = b.finalize(dtype=F64)
    xml = f"""
    <mujoco><option gravity="0 0 -9.81"/><worldbody>
      <body pos="0 0 1">
        <joint type="slide" axis="1 0 0"/>
        <geom type="box" size="0.2 0.1 0.05"/>
        {inertial(model, 0)}
        <body>
          <joint type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.8" size="0.03"/>
          {inertial(model, 1)}
        </body>
      </body>
    </worldbody></mujoco>"""
    return model, xml


def floating_base():
    """A free box with a ball-jointed capsule arm, a slider on the arm (its anchor moves with
    the arm's rotation: the Coriolis terms of a sliding joint), a hinged link at the slider's
    end and a block welded to that link (a fixed joint; in MuJoCo a body without a joint)."""
    X0 = np.concatenate([[0.3, 0.1, 1.5], quat_axis((1.0, 2.0, 3.0), 0.7)])
    rel1 = np.concatenate([[0.2, 0.0, -0.3], quat_axis((0.0, 1.0, 0.0), 0.5)])
    rel2 = np.array([0.0, 0.0, -0.6, 0.0, 0.0, 0.0, 1.0])
    rel3 = np.concatenate([[0.0, 0.1, -0.2], quat_axis((1.0, 0.0, 0.0), -0.3)])
    rel4 = np.concatenate([[0.05, 0.0, -0.25], quat_axis((0.0, 0.0, 1.0), 1.1)])
    b = builder()
    b.add_articulation()
    base = b.add_body(pose(X0[:3], X0[3:]))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.15, 0.1, 0.08), body=base)
    b.add_joint_free(-1, base)
    X1 = compose(X0, rel1)
    arm = b.add_body(pose(X1[:3], X1[3:]))
    b.add_shape_capsule((0.0, 0.0, -0.25), CAPSULE_Z, 0.04, 0.25, body=arm)
    b.add_joint_ball(base, arm, child_xform=pose((0.0, 0.0, 0.1)))
    X2 = compose(X1, rel2)
    slider = b.add_body(pose(X2[:3], X2[3:]))
    b.add_shape_sphere((0.0, 0.05, 0.0), 0.06, body=slider)
    b.add_joint_prismatic(arm, slider, child_xform=pose((0.0, 0.0, 0.05)), axis=(0.3, 0.0, 1.0))
    X3 = compose(X2, rel3)
    link = b.add_body(pose(X3[:3], X3[3:]))
    b.add_shape_box((0.0, 0.0, -0.1), (0.0, 0.0, 0.0, 1.0), (0.03, 0.04, 0.1), body=link, density=2000.0)
    b.add_joint_revolute(slider, link, child_xform=pose((0.0, 0.0, 0.02)), axis=(1.0, 0.0, 0.0))
    X4 = compose(X3, rel4)
    block = b.add_body(pose(X4[:3], X4[3:]))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.05, 0.03, 0.02), body=block)
    b.add_joint_fixed(link, block)
    model = b.finalize(dtype=F64)
    xml = f"""
    <mujoco><option gravity="0 0 -9.81"/><worldbody>
      <body pos="0.3 0.1 1.5" quat="{wxyz(X0[3:])}">
        <freejoint/>
        <geom type="box" size="0.15 0.1 0.08"/>
        {inertial(model, 0)}
        <body pos="0.2 0 -0.3" quat="{wxyz(rel1[3:])}">
          <joint type="ball" pos="0 0 0.1"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.04"/>
          {inertial(model, 1)}
          <body pos="0 0 -0.6">
            <joint type="slide" pos="0 0 0.05" axis="0.3 0 1"/>
            <geom type="sphere" pos="0 0.05 0" size="0.06"/>
            {inertial(model, 2)}
            <body pos="0 0.1 -0.2" quat="{wxyz(rel3[3:])}">
              <joint type="hinge" pos="0 0 0.02" axis="1 0 0"/>
              <geom type="box" pos="0 0 -0.1" size="0.03 0.04 0.1"/>
              {inertial(model, 3)}
              <body pos="0.05 0 -0.25" quat="{wxyz(rel4[3:])}">
                <geom type="box" size="0.05 0.03 0.02"/>
                {inertial(model, 4)}
              </body>
            </body>
          </body>
        </body>
      </body>
    </worldbody></mujoco>"""
    return model, xml


def universal_chain():
    """Two links on universal joints (in MuJoCo: two hinges in one body, applied in order), the
    first with tilted axes at an offset anchor, the second below it, turned."""
    X1 = np.concatenate([[0.0, 0.3, 1.8], quat_axis((0.0, 1.0, 0.0), 0.2)])
    rel2 = np.concatenate([[0.1, 0.0, -0.7], quat_axis((1.0, 0.0, 1.0), 0.6)])
    b = builder()
    b.add_articulation()
    l1 = b.add_body(pose(X1[:3], X1[3:]))
    b.add_shape_capsule((0.0, 0.0, -0.35), CAPSULE_Z, 0.04, 0.3, body=l1)
    b.add_joint_universal(-1, l1, child_xform=pose((0.0, 0.0, 0.05)), axis=(1.0, 1.0, 0.0), axis2=(0.0, 0.0, 1.0))
    X2 = compose(X1, rel2)
    l2 = b.add_body(pose(X2[:3], X2[3:]))
    b.add_shape_box((0.0, 0.02, -0.2), (0.0, 0.0, 0.0, 1.0), (0.04, 0.06, 0.2), body=l2)
    b.add_joint_universal(l1, l2, axis=(0.0, 1.0, 0.0), axis2=(1.0, 0.0, 0.0))
    model = b.finalize(dtype=F64)
    xml = f"""
    <mujoco><option gravity="0 0 -9.81"/><worldbody>
      <body pos="0 0.3 1.8" quat="{wxyz(X1[3:])}">
        <joint type="hinge" pos="0 0 0.05" axis="1 1 0"/>
        <joint type="hinge" pos="0 0 0.05" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 -0.05 0 0 -0.65" size="0.04"/>
        {inertial(model, 0)}
        <body pos="0.1 0 -0.7" quat="{wxyz(rel2[3:])}">
          <joint type="hinge" axis="0 1 0"/>
          <joint type="hinge" axis="1 0 0"/>
          <geom type="box" pos="0 0.02 -0.2" size="0.04 0.06 0.2"/>
          {inertial(model, 1)}
        </body>
      </body>
    </worldbody></mujoco>"""
    return model, xml


MODELS = {"double_pendulum": double_pendulum, "cart_pole": cart_pole, "floating_base": floating_base,
          "universal_chain": universal_chain}


# -- the mapping between the two conventions ---------------------------------------------------
def random_coordinates(model, rng):
    kinds = model.joints.kind.numpy()
    qs, ds = model.joint_q_start.numpy(), model.joint_qd_start.numpy()
    q = rng.uniform(-np.pi, np.pi, model.joint_coord_count)
    for j, kind in enumerate(kinds):
        if kind == JOINT_BALL:
            q[qs[j]:qs[j] + 4] = rng.normal(size=4)
        elif kind == JOINT_FREE:
            q[qs[j]:qs[j] + 3] = rng.normal(size=3)
            q[qs[j] + 3:qs[j] + 7] = rng.normal(size=4)
    for j, kind in enumerate(kinds):     # unit quaternions, so that MuJoCo reads the same rotation
        if kind in (JOINT_BALL, JOINT_FREE):
            k = qs[j] + (3 if kind == JOINT_FREE else 0)
            q[k:k + 4] /= np.linalg.norm(q[k:k + 4])
    qd = rng.normal(size=model.joint_dof_count) * 2.0
    return q, qd


def to_mujoco(model, q, qd):
    """MuJoCo's qpos and qvel for simkit's q and qd, and the matrix T with qvel = T qd."""
    kinds = model.joints.kind.numpy()
    qs, ds = model.joint_q_start.numpy(), model.joint_qd_start.numpy()
    qpos, T = [], np.eye(model.joint_dof_count)
    for j, kind in enumerate(kinds):
        a, b = qs[j], ds[j]
        if kind == JOINT_BALL:
            qpos.append(np.roll(q[a:a + 4], 1))
            T[b:b + 3, b:b + 3] = G.quat_to_matrix(q[a:a + 4]).T
        elif kind == JOINT_FREE:
            qpos += [q[a:a + 3], np.roll(q[a + 3:a + 7], 1)]
            T[b + 3:b + 6, b + 3:b + 6] = G.quat_to_matrix(q[a + 3:a + 7]).T
        else:
            qpos.append(q[a:qs[j + 1]])
    return np.concatenate(qpos), T @ qd, T


def mujoco_at(xml, qpos, qvel):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    return m, d


def relative_error(ours, theirs):
    return float(np.max(np.abs(ours - theirs)) / max(np.max(np.abs(theirs)), 1e-300))


def simkit_fk(model, q, qd):
    state = model.state()
    sk.sim.eval_fk(model, sk.array(q, dtype=F64), sk.array(qd, dtype=F64), state)
    return state.body_q.numpy(), state.body_qd.numpy()


# -- the comparisons -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(MODELS))
def test_the_models_have_the_same_degrees_of_freedom_and_bodies_as_their_mjcf(name):
    model, xml = MODELS[name]()
    m = mujoco.MjModel.from_xml_string(xml)
    assert (m.nq, m.nv, m.nbody - 1) == (model.joint_coord_count, model.joint_dof_count, model.body_count)
    np.testing.assert_allclose(m.body_mass[1:], model.bodies.mass.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
def test_forward_kinematics_poses_match_mujoco(name):
    model, xml = MODELS[name]()
    rng = np.random.default_rng(1)
    for _trial in range(5):
        q, qd = random_coordinates(model, rng)
        body_q, _ = simkit_fk(model, q, qd)
        _m, d = mujoco_at(xml, *to_mujoco(model, q, qd)[:2])
        np.testing.assert_allclose(body_q[:, :3], d.xpos[1:], rtol=0, atol=1e-12)
        ours = np.stack([G.quat_to_matrix(r) for r in body_q[:, 3:]])
        np.testing.assert_allclose(ours, d.xmat[1:].reshape(-1, 3, 3), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
def test_forward_kinematics_velocities_match_mujoco_jacobians(name):
    # body_qd = (angular velocity, velocity of the center of mass), world: MuJoCo's
    # mj_jacBodyCom rows times qvel
    model, xml = MODELS[name]()
    rng = np.random.default_rng(2)
    for _trial in range(5):
        q, qd = random_coordinates(model, rng)
        _, body_qd = simkit_fk(model, q, qd)
        qpos, qvel, _T = to_mujoco(model, q, qd)
        m, d = mujoco_at(xml, qpos, qvel)
        for b in range(model.body_count):
            jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacBodyCom(m, d, jacp, jacr, b + 1)
            np.testing.assert_allclose(body_qd[b], np.concatenate([jacr @ qvel, jacp @ qvel]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
def test_mass_matrix_matches_mujoco_full_m(name):
    model, xml = MODELS[name]()
    rng = np.random.default_rng(3)
    for _trial in range(5):
        q, qd = random_coordinates(model, rng)
        qpos, qvel, T = to_mujoco(model, q, qd)
        m, d = mujoco_at(xml, qpos, qvel)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        assert relative_error(sk.sim.mass_matrix(model, q), T.T @ full @ T) < TOL


@pytest.mark.parametrize("name", list(MODELS))
def test_bias_forces_match_mujoco_qfrc_bias(name):
    model, xml = MODELS[name]()
    rng = np.random.default_rng(4)
    for _trial in range(5):
        q, qd = random_coordinates(model, rng)
        qpos, qvel, T = to_mujoco(model, q, qd)
        _m, d = mujoco_at(xml, qpos, qvel)
        assert relative_error(sk.sim.bias_forces(model, q, qd), T.T @ d.qfrc_bias) < TOL


@pytest.mark.parametrize("name", list(MODELS))
def test_joint_accelerations_under_applied_forces_match_mujoco_qacc(name):
    # contacts off in MuJoCo: qacc = M^-1 (qfrc_applied - qfrc_bias); qacc = T qdd (dT/dt qd = 0)
    # and tau = T^T qfrc_applied, so qfrc_applied = T tau (T is orthogonal)
    model, xml = MODELS[name]()
    xml = xml.replace('<option gravity="0 0 -9.81"/>', '<option gravity="0 0 -9.81"><flag contact="disable"/></option>')
    rng = np.random.default_rng(6)
    for _trial in range(5):
        q, qd = random_coordinates(model, rng)
        tau = rng.normal(size=model.joint_dof_count) * 5.0
        qpos, qvel, T = to_mujoco(model, q, qd)
        m = mujoco.MjModel.from_xml_string(xml)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = qpos, qvel, T @ tau
        mujoco.mj_forward(m, d)
        assert relative_error(sk.sim.joint_accelerations(model, q, qd, tau), T.T @ d.qacc) < TOL


def test_box_inertia_from_density_matches_mujocos_geom_inertia():
    # no <inertial>: MuJoCo computes the box's mass and inertia from its geom and density
    b = builder()
    b.add_articulation()
    body = b.add_body(pose((0.0, 0.0, 1.0)))
    b.add_shape_box((0.1, 0.0, -0.2), (0.0, 0.0, 0.0, 1.0), (0.1, 0.2, 0.3), body=body, density=800.0)
    b.add_joint_ball(-1, body, child_xform=pose((0.0, 0.0, 0.3)))
    model = b.finalize(dtype=F64)
    xml = """
    <mujoco><worldbody><body pos="0 0 1">
      <joint type="ball" pos="0 0 0.3"/>
      <geom type="box" pos="0.1 0 -0.2" size="0.1 0.2 0.3" density="800"/>
    </body></worldbody></mujoco>"""
    q, qd = random_coordinates(model, np.random.default_rng(5))
    qpos, qvel, T = to_mujoco(model, q, qd)
    m, d = mujoco_at(xml, qpos, qvel)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    assert relative_error(sk.sim.mass_matrix(model, q), T.T @ full @ T) < TOL
