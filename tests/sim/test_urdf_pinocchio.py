"""ModelBuilder.add_urdf and the articulation dynamics against Pinocchio, an outside oracle that
reads URDF natively: forward kinematics of every link, the joint-space mass matrix (CRBA) and
the bias forces (RNEA at zero acceleration) of real robots shipped in example-robot-data, at
random configurations and velocities."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.sim import geometry as G

from test_urdf import SHIPPED, shipped_urdf

pin = pytest.importorskip("pinocchio")

TOL = 1e-9       # relative, float64


def load_both(path: str):
    """(simkit float64 model, import record, pinocchio model) of the URDF ``path``, fixed base."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=False)
        a = b.add_urdf(path)
    record = b.imports[a]
    model = b.finalize(dtype=sk.float64)
    pm = pin.buildModelFromUrdf(path)
    if pm.nq != pm.nv:
        pytest.skip(f"{path} has continuous joints (cos/sin coordinates in Pinocchio)")
    return model, a, record, pm


def coordinate_maps(model, a, record, pm) -> tuple[np.ndarray, np.ndarray]:
    """(simkit coordinate index, simkit dof index) of each of Pinocchio's q entries, by joint name."""
    q_start = model.joint_q_start.numpy()
    qd_start = model.joint_qd_start.numpy()
    q0, _ = model.articulation_coords(a)
    d0, _ = model.articulation_dofs(a)
    qi, vi = np.zeros(pm.nq, dtype=int), np.zeros(pm.nv, dtype=int)
    for j in range(1, pm.njoints):
        name = pm.names[j]
        sj = record.joints[name]
        assert pm.joints[j].nq == q_start[sj + 1] - q_start[sj] == 1, name
        qi[pm.joints[j].idx_q] = q_start[sj] - q0
        vi[pm.joints[j].idx_v] = qd_start[sj] - d0
    return qi, vi


@pytest.mark.parametrize("rel", SHIPPED, ids=[r.split("/")[-1][:-5] for r in SHIPPED])
def test_shipped_urdf_dynamics_match_pinocchio(rel):
    path = shipped_urdf(rel)
    model, a, record, pm = load_both(path)
    pd = pm.createData()
    qi, vi = coordinate_maps(model, a, record, pm)
    q0, q1 = model.articulation_coords(a)
    d0, d1 = model.articulation_dofs(a)
    rng = np.random.default_rng(1)
    state = model.state()
    for _ in range(3):
        q = pin.randomConfiguration(pm, np.clip(pm.lowerPositionLimit, -2, 2), np.clip(pm.upperPositionLimit, -2, 2))
        v = rng.uniform(-1.0, 1.0, pm.nv)
        jq = model.joint_q.numpy().copy()
        jqd = np.zeros(model.joint_dof_count)
        jq[q0 + qi] = q
        jqd[d0 + vi] = v

        # forward kinematics: every link's frame
        sk.sim.eval_fk(model, sk.array(jq, dtype=sk.float64), sk.array(jqd, dtype=sk.float64), state)
        pin.framesForwardKinematics(pm, pd, q)
        body_q = state.body_q.numpy()
        links = [n for n in record.bodies if pm.existFrame(n, pin.FrameType.BODY)]
        assert len(links) > pm.nv      # every moving link (and the base) is compared
        for link in links:
            body = record.bodies[link]
            M = pd.oMf[pm.getFrameId(link, pin.FrameType.BODY)]
            np.testing.assert_allclose(body_q[body, :3], M.translation, atol=1e-12, err_msg=link)
            R = G.quat_to_matrix(body_q[body, 3:])
            np.testing.assert_allclose(R, M.rotation, atol=1e-12, err_msg=link)

        # M(q): Pinocchio fills the upper triangle
        Mp = pin.crba(pm, pd, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        Ms = sk.sim.mass_matrix(model, jq, articulation=a)[np.ix_(vi, vi)]
        assert np.abs(Ms - Mp).max() / np.abs(Mp).max() < TOL

        # C(q, qd): Coriolis, centrifugal and gravity
        Cp = pin.nonLinearEffects(pm, pd, q, v)
        Cs = sk.sim.bias_forces(model, jq, jqd, articulation=a)[vi]
        assert np.abs(Cs - Cp).max() / np.abs(Cp).max() < TOL
        assert d1 - d0 == pm.nv and q1 - q0 == pm.nq
