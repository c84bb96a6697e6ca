"""Shared checks of the URDF/MJCF importers against MuJoCo compiling the same file."""

from __future__ import annotations

import warnings

import numpy as np

import simkit as sk
from simkit.sim import geometry as G


def load(path, kind: str = "mjcf", **kw):
    """(builder, articulation, record, float64 model, warnings) for ``path``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = sk.sim.ModelBuilder(up_axis="z", ground=False)
        a = (b.add_mjcf if kind == "mjcf" else b.add_urdf)(path, **kw)
    return b, a, b.imports[a], b.finalize(dtype=sk.float64), [str(w.message) for w in caught]


def mujoco_inertia(m, i) -> np.ndarray:
    import mujoco
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, m.body_iquat[i])
    R = R.reshape(3, 3)
    return R @ np.diag(m.body_inertia[i]) @ R.T


def random_qpos(m, rng) -> np.ndarray:
    """A random configuration: free and ball joints anywhere, hinges and slides +-1 about qpos0."""
    qpos = m.qpos0.copy()
    for j in range(m.njnt):
        adr, t = m.jnt_qposadr[j], m.jnt_type[j]
        if t == 0:
            qpos[adr:adr + 3] = rng.normal(size=3)
            qpos[adr + 3:adr + 7] = rng.normal(size=4)
            qpos[adr + 3:adr + 7] /= np.linalg.norm(qpos[adr + 3:adr + 7])
        elif t == 1:
            qpos[adr:adr + 4] = rng.normal(size=4)
            qpos[adr:adr + 4] /= np.linalg.norm(qpos[adr:adr + 4])
        else:
            qpos[adr] += rng.uniform(-1.0, 1.0)
    return qpos


def velocity_map(m, qpos) -> np.ndarray:
    """``T`` with MuJoCo's ``qvel = T qd`` (simkit's): ``R^T`` blocks for the angular velocity
    of free and ball joints, which MuJoCo expresses in the child's frame."""
    T = np.eye(m.nv)
    for j in range(m.njnt):
        t = m.jnt_type[j]
        if t in (0, 1):
            o = m.jnt_dofadr[j] + (3 if t == 0 else 0)
            qa = m.jnt_qposadr[j] + (3 if t == 0 else 0)
            R = G.quat_to_matrix(np.roll(qpos[qa:qa + 4], -1))
            T[o:o + 3, o:o + 3] = R.T
    return T


def compare_with_mujoco(path, kind: str = "mjcf", trials: int = 4, seed: int = 0, mujoco_path=None) -> dict:
    """Relative errors of simkit's import of ``path`` against MuJoCo's: total mass, body
    masses, centers of mass and inertias, forward kinematics (positions and quaternions of
    every body) and the joint-space mass matrix (joint armature included) at random
    configurations. MuJoCo loads ``mujoco_path`` when given (the same
    robot without the meshes it cannot find, say)."""
    import mujoco
    b, a, rec, model, _ = load(path, kind)
    m = mujoco.MjModel.from_xml_path(str(mujoco_path or path))
    d = mujoco.MjData(m)
    names = [m.body(i).name for i in range(1, m.nbody)]
    if kind == "mjcf":
        sb = np.array(rec.body_order)
    else:
        sb = np.array([rec.bodies[n] for n in names])
    mass, com, inertia = model.bodies.mass.numpy(), model.bodies.com.numpy(), model.bodies.inertia.numpy()
    Imj = np.array([mujoco_inertia(m, i) for i in range(1, m.nbody)])
    scale_m, scale_I = m.body_mass.max(), np.abs(Imj).max()
    err = {
        "total_mass": abs(mass.sum() - mujoco.mj_getTotalmass(m)) / mujoco.mj_getTotalmass(m),
        "body_mass": np.abs(mass[sb] - m.body_mass[1:]).max() / scale_m,
        # centers of bodies of no mass are meaningless
        "body_com": np.abs((com[sb] - m.body_ipos[1:])[m.body_mass[1:] > 0]).max(initial=0.0),
        "body_inertia": np.abs(inertia[sb] - Imj).max() / scale_I,
        "fk": 0.0, "mass_matrix": 0.0,
    }
    rng = np.random.default_rng(seed)
    state = model.state()
    start, stop = model.articulation_coords(a)
    for _ in range(trials):
        qpos = random_qpos(m, rng)
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        jq = model.joint_q.numpy().copy()
        jq[start:stop] = rec.joint_q_from_mujoco(qpos)
        q = sk.array(jq, dtype=sk.float64)
        sk.sim.eval_fk(model, q, model.joint_qd, state)
        bq = state.body_q.numpy()[sb]
        xq = np.roll(d.xquat[1:], -1, axis=1)
        quat_err = np.minimum(np.abs(bq[:, 3:] - xq).max(1), np.abs(bq[:, 3:] + xq).max(1)).max()
        err["fk"] = max(err["fk"], np.abs(bq[:, :3] - d.xpos[1:]).max(), quat_err)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        T = velocity_map(m, qpos)
        M = T.T @ M @ T
        Ms = sk.sim.mass_matrix(model, q, articulation=a)
        err["mass_matrix"] = max(err["mass_matrix"], np.abs(Ms - M).max() / np.abs(M).max())
    return err
