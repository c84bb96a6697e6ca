"""MuJoCo's ``qpos`` / ``qvel`` / ``ctrl`` and simkit's ``joint_q`` / ``joint_qd`` / control, both
ways, for the articulation an importer made of a file (the methods of
:class:`~simkit.sim.importers.ImportRecord` call these).

What differs (docs/importers.md, "MuJoCo's state and controls"):

- quaternions: MuJoCo ``(w, x, y, z)``, simkit ``(x, y, z, w)``;
- a hinge or slide coordinate: simkit's is MuJoCo's minus the joint's ``ref``;
- the angular velocity of a free or ball joint: MuJoCo's is in the child body's frame,
  simkit's in the parent's joint frame: ``w_mujoco = R^T w_simkit``, ``R`` the joint's rotation
  (a free joint's linear velocity is the same in both: its origin's, in the parent's frame);
- actuators: a ``motor`` on a hinge or slide is ``control.joint_act = gear * ctrl``; a
  ``position`` actuator (``kp``) is the drive's target, ``target_ke (joint_target - q)`` with
  ``target_ke * joint_target = sum(gear kp ctrl) - target_ke ref``; a ``velocity`` actuator
  (``kv``) the drive's target rate, ``target_kd * joint_target_vel = sum(gear kv ctrl)``;
  ``ctrl`` is first clamped to ``ctrlrange`` where MuJoCo clamps it (``ctrllimited``).

Example::

    state = record.state_from_mujoco(model, d.qpos, d.qvel)
    control = record.control_from_mujoco(model, d.ctrl)
    qpos, qvel = record.state_to_mujoco(model, state)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import geometry as G

_ACTUATED = ("motor", "position", "velocity")


def _vector(x: Any, n: int, what: str, where: str) -> np.ndarray:
    v = np.asarray(x.numpy() if hasattr(x, "numpy") else x, dtype=np.float64)
    if v.shape != (n,):
        raise ValueError(f"{where}: {what} must have shape ({n},), got {v.shape}")
    return v


def _rotation(q_xyzw: np.ndarray) -> np.ndarray:
    """The rotation of a quaternion (x, y, z, w), normalized as simkit and MuJoCo read it."""
    return G.quat_to_matrix(q_xyzw / np.linalg.norm(q_xyzw))


def _sizes(kind: str) -> tuple[int, int]:
    """Coordinates and velocities of a joint of this kind (in both simulators)."""
    return {"free": (7, 6), "ball": (4, 3)}.get(kind, (1, 1))


def _joints(record):
    """Per joint of the file: (name, kind, MuJoCo qpos and qvel offsets, simkit q and qd offsets)."""
    i = v = 0
    for (name, kind, _j), o, od in zip(record.joint_order, record.q_offsets, record.qd_offsets):
        yield name, kind, i, v, o, od
        n, nd = _sizes(kind)
        i, v = i + n, v + nd


def mujoco_sizes(record) -> tuple[int, int]:
    """``(nq, nv)`` of the file as MuJoCo compiles it."""
    sizes = [_sizes(kind) for _n, kind, _j in record.joint_order]
    return sum(n for n, _d in sizes), sum(d for _n, d in sizes)


def joint_q_to_mujoco(record, joint_q) -> np.ndarray:
    """MuJoCo's ``qpos`` for the articulation's ``joint_q`` (the inverse of ``joint_q_from_mujoco``)."""
    q = _vector(joint_q, record.q_count, "joint_q (the articulation's coordinates)", "joint_q_to_mujoco")
    qpos = np.zeros(mujoco_sizes(record)[0])
    for name, kind, i, _v, o, _od in _joints(record):
        if kind == "free":
            qpos[i:i + 3], qpos[i + 3:i + 7] = q[o:o + 3], np.roll(q[o + 3:o + 7], 1)
        elif kind == "ball":
            qpos[i:i + 4] = np.roll(q[o:o + 4], 1)
        else:
            qpos[i] = q[o] + record.joint_ref.get(name, 0.0)
    return qpos


def _convert_velocities(record, source, quats, to_mujoco: bool) -> np.ndarray:
    """``joint_qd`` from ``qvel`` or back: the angular parts of free and ball joints turned by
    ``R`` (to simkit) or ``R^T`` (to MuJoCo), ``R`` from the joint's quaternion in ``quats``
    (a ``qpos`` or a ``joint_q``); everything else copied."""
    out = np.zeros(mujoco_sizes(record)[1] if to_mujoco else record.qd_count)
    for _name, kind, i, v, o, od in _joints(record):
        src, dst = (od, v) if to_mujoco else (v, od)
        if kind not in ("free", "ball"):
            out[dst] = source[src]
            continue
        lin = 3 if kind == "free" else 0
        out[dst:dst + lin] = source[src:src + lin]
        if to_mujoco:
            R = _rotation(quats[o + lin:o + lin + 4]).T
        else:
            R = _rotation(np.roll(quats[i + lin:i + lin + 4], -1))
        out[dst + lin:dst + lin + 3] = R @ source[src + lin:src + lin + 3]
    return out


def joint_qd_from_mujoco(record, qvel, qpos) -> np.ndarray:
    """The articulation's ``joint_qd`` for MuJoCo's ``qvel`` at ``qpos`` (whose quaternions
    give the frames of the free and ball joints' angular velocities)."""
    nq, nv = mujoco_sizes(record)
    qvel = _vector(qvel, nv, "qvel", "joint_qd_from_mujoco")
    qpos = _vector(qpos, nq, "qpos", "joint_qd_from_mujoco")
    return _convert_velocities(record, qvel, qpos, to_mujoco=False)


def joint_qd_to_mujoco(record, joint_qd, joint_q) -> np.ndarray:
    """MuJoCo's ``qvel`` for the articulation's ``joint_qd`` at its ``joint_q``."""
    qd = _vector(joint_qd, record.qd_count, "joint_qd (the articulation's velocities)", "joint_qd_to_mujoco")
    q = _vector(joint_q, record.q_count, "joint_q (the articulation's coordinates)", "joint_qd_to_mujoco")
    return _convert_velocities(record, qd, q, to_mujoco=True)


def state_from_mujoco(record, model, qpos, qvel, state=None):
    """``state`` (default: a new ``model.state()``) with the articulation's coordinates and
    velocities set from MuJoCo's ``qpos`` / ``qvel`` and every body placed by forward
    kinematics; the other articulations' coordinates are left as they are."""
    from ..articulation import eval_fk

    nq, nv = mujoco_sizes(record)
    qpos = _vector(qpos, nq, "qpos", "state_from_mujoco")
    qvel = _vector(qvel, nv, "qvel", "state_from_mujoco")
    state = model.state() if state is None else state
    q, qd = state.joint_q.numpy().copy(), state.joint_qd.numpy().copy()
    (a, b), (c, d) = model.articulation_coords(record.articulation), model.articulation_dofs(record.articulation)
    q[a:b] = record.joint_q_from_mujoco(qpos)
    qd[c:d] = joint_qd_from_mujoco(record, qvel, qpos)
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    eval_fk(model, state.joint_q, state.joint_qd, state)
    return state


def state_to_mujoco(record, model, state) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's ``(qpos, qvel)`` of the articulation in ``state``."""
    (a, b), (c, d) = model.articulation_coords(record.articulation), model.articulation_dofs(record.articulation)
    q = state.joint_q.numpy()[a:b]
    return joint_q_to_mujoco(record, q), joint_qd_to_mujoco(record, state.joint_qd.numpy()[c:d], q)


def _actuation(record) -> list:
    """Per actuator of the file: (type, simkit joint or None, gear, the entry)."""
    kinds = {name: (kind, j) for name, kind, j in record.joint_order}
    out = []
    for entry in record.actuators:
        kind, j = kinds.get(entry.get("joint"), (None, None))
        mapped = entry["type"] in _ACTUATED and kind in ("hinge", "slide")
        out.append((entry["type"], j if mapped else None, float(entry["gear"]), entry))
    return out


def _gains(model) -> tuple[np.ndarray, np.ndarray]:
    return model.joints.target_ke.numpy(), model.joints.target_kd.numpy()


def control_from_mujoco(record, model, ctrl, control=None):
    """``control`` (default: a new ``model.control()``) with the articulation's ``joint_act``,
    ``joint_target`` and ``joint_target_vel`` set from MuJoCo's ``ctrl`` (zero on joints no
    actuator drives); the rest of the control is left as it is. An actuator simkit does not
    simulate (not on a hinge or slide, or not a motor, position or velocity actuator) must
    have a zero ``ctrl``."""
    acts = _actuation(record)
    ctrl = _vector(ctrl, len(acts), "ctrl (one per actuator of the file)", "control_from_mujoco")
    control = model.control() if control is None else control
    act, target, rate = (control.joint_act.numpy().copy(), control.joint_target.numpy().copy(),
                         control.joint_target_vel.numpy().copy())
    for _name, _kind, j in record.joint_order:
        act[j] = target[j] = rate[j] = 0.0
    ke, kd = _gains(model)
    positioned = set()
    for k, (kind, j, gear, entry) in enumerate(acts):
        u = float(ctrl[k])
        if entry.get("ctrllimited") and entry.get("ctrlrange") is not None:
            u = min(max(u, entry["ctrlrange"][0]), entry["ctrlrange"][1])  # what MuJoCo applies
        if j is None:
            if u != 0.0:
                raise ValueError(f"control_from_mujoco: actuator {k} ({entry.get('name')!r}, a {kind} on "
                                 f"{entry.get('joint')!r}) is recorded, not simulated by simkit; its ctrl must be "
                                 f"0, got {u}")
            continue
        if kind == "motor":
            act[j] += gear * u
        elif kind == "position":
            target[j] += gear * entry["kp"] * u / _nonzero(ke[j], "target_ke", j, entry)
            positioned.add(j)
        else:
            rate[j] += gear * entry["kv"] * u / _nonzero(kd[j], "target_kd", j, entry)
    refs = {j: record.joint_ref.get(name, 0.0) for name, _kind, j in record.joint_order}
    for j in positioned:
        target[j] -= refs[j]  # MuJoCo's actuator length is gear * qpos, ref included
    control.joint_act.assign(act)
    control.joint_target.assign(target)
    control.joint_target_vel.assign(rate)
    return control


def _nonzero(gain: float, name: str, j: int, entry: dict) -> float:
    if gain == 0.0:
        raise ValueError(f"control_from_mujoco: joint {j}'s {name} is 0, so the {entry['type']} actuator "
                         f"{entry.get('name')!r} on it has no effect in simkit (the importer sets it from the "
                         "actuator's gain; was it changed?)")
    return gain


def control_to_mujoco(record, model, control) -> np.ndarray:
    """MuJoCo's ``ctrl`` for the articulation's actuation in ``control`` (the inverse of
    :func:`control_from_mujoco` for controls inside ``ctrlrange``). A joint driven by two
    actuators of one type has no unique ``ctrl``: ``ValueError``."""
    acts = _actuation(record)
    seen: dict = {}
    for k, (kind, j, _gear, entry) in enumerate(acts):
        if j is not None and (kind, j) in seen:
            raise ValueError(f"control_to_mujoco: actuators {seen[(kind, j)]} and {k} are both {kind} actuators on "
                             f"joint {entry.get('joint')!r}; simkit's control holds their sum, which does not say "
                             "each one's ctrl")
        seen[(kind, j)] = k
    act, target, rate = control.joint_act.numpy(), control.joint_target.numpy(), control.joint_target_vel.numpy()
    ke, kd = _gains(model)
    refs = {j: record.joint_ref.get(name, 0.0) for name, _kind, j in record.joint_order}
    ctrl = np.zeros(len(acts))
    for k, (kind, j, gear, entry) in enumerate(acts):
        if j is None:
            continue
        if kind == "motor":
            ctrl[k] = act[j] / gear
        elif kind == "position":
            ctrl[k] = (target[j] + refs[j]) * ke[j] / (gear * entry["kp"])
        else:
            ctrl[k] = rate[j] * kd[j] / (gear * entry["kv"])
    return ctrl


# -- MuJoCo's tangent-space state: what mjd_transitionFD differentiates -------------------------------
def _cross(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _left(q: np.ndarray) -> np.ndarray:
    """The matrix of ``p -> q * p`` for quaternions stored (x, y, z, w)."""
    x, y, z, w = q
    return np.array([[w, -z, y, x], [z, w, -x, y], [-y, x, w, z], [-x, -y, -z, w]])


def _articulation(record, model, state) -> tuple[np.ndarray, np.ndarray]:
    (a, b), (c, d) = model.articulation_coords(record.articulation), model.articulation_dofs(record.articulation)
    return state.joint_q.numpy()[a:b].astype(np.float64), state.joint_qd.numpy()[c:d].astype(np.float64)


def tangent_from_mujoco(record, model, state) -> np.ndarray:
    """``d (joint_q, joint_qd) / d x`` of the articulation at ``state``, ``x`` MuJoCo's
    tangent-space state ``(dqpos, qvel)`` (``2 nv``: a free or ball joint's rotation perturbed
    as ``q * exp(dtheta)``, dtheta in the child's frame, as ``mj_integratePos`` does)."""
    q, qd = _articulation(record, model, state)
    nv = mujoco_sizes(record)[1]
    nq_s, nv_s = record.q_count, record.qd_count
    P = np.zeros((nq_s + nv_s, 2 * nv))
    for _name, kind, _i, v, o, od in _joints(record):
        if kind not in ("free", "ball"):
            P[o, v] = P[nq_s + od, nv + v] = 1.0
            continue
        lin = 3 if kind == "free" else 0
        quat = q[o + lin:o + lin + 4]
        R = _rotation(quat)
        omega = R.T @ qd[od + lin:od + lin + 3]              # MuJoCo's angular velocity
        P[o:o + lin, v:v + lin] = np.eye(lin)
        P[o + lin:o + lin + 4, v + lin:v + lin + 3] = 0.5 * _left(quat)[:, :3]
        r, c = nq_s + od, nv + v
        P[r:r + lin, c:c + lin] = np.eye(lin)
        P[r + lin:r + lin + 3, c + lin:c + lin + 3] = R                 # w = R omega
        P[r + lin:r + lin + 3, v + lin:v + lin + 3] = -R @ _cross(omega)   # R turns with dtheta
    return P


def tangent_to_mujoco(record, model, state) -> np.ndarray:
    """``d x / d (joint_q, joint_qd)`` of the articulation at ``state``: the other way, MuJoCo's
    tangent-space state from simkit's coordinates (a quaternion's change taken to its unit
    quaternion's rotation, as ``mj_differentiatePos``)."""
    q, qd = _articulation(record, model, state)
    nv = mujoco_sizes(record)[1]
    nq_s, nv_s = record.q_count, record.qd_count
    P = np.zeros((2 * nv, nq_s + nv_s))
    for _name, kind, _i, v, o, od in _joints(record):
        if kind not in ("free", "ball"):
            P[v, o] = P[nv + v, nq_s + od] = 1.0
            continue
        lin = 3 if kind == "free" else 0
        quat = q[o + lin:o + lin + 4]
        n = np.linalg.norm(quat)
        unit = quat / n
        conj = np.array([-unit[0], -unit[1], -unit[2], unit[3]])
        Q = 2.0 * _left(conj)[:3, :] @ ((np.eye(4) - np.outer(unit, unit)) / n)   # dtheta / dquat
        omega = _rotation(quat).T @ qd[od + lin:od + lin + 3]
        P[v:v + lin, o:o + lin] = np.eye(lin)
        P[v + lin:v + lin + 3, o + lin:o + lin + 4] = Q
        r, c = nv + v, nq_s + od
        P[r:r + lin, c:c + lin] = np.eye(lin)
        P[r + lin:r + lin + 3, c + lin:c + lin + 3] = _rotation(quat).T     # omega = R^T w
        P[r + lin:r + lin + 3, o + lin:o + lin + 4] = _cross(omega) @ Q
    return P


def control_jacobians(record, model) -> dict:
    """``{name: d control.name / d ctrl}`` for ``joint_act``, ``joint_target`` and
    ``joint_target_vel`` (each ``(model.joint_count, nu)``), inside ``ctrlrange``: the gears of
    motors, ``gear kp / target_ke`` of position and ``gear kv / target_kd`` of velocity
    actuators (zero columns for those simkit does not simulate)."""
    acts = _actuation(record)
    ke, kd = _gains(model)
    out = {name: np.zeros((model.joint_count, len(acts))) for name in ("joint_act", "joint_target",
                                                                        "joint_target_vel")}
    for k, (kind, j, gear, entry) in enumerate(acts):
        if j is None:
            continue
        if kind == "motor":
            out["joint_act"][j, k] = gear
        elif kind == "position":
            out["joint_target"][j, k] = gear * entry["kp"] / _nonzero(ke[j], "target_ke", j, entry)
        else:
            out["joint_target_vel"][j, k] = gear * entry["kv"] / _nonzero(kd[j], "target_kd", j, entry)
    return out


class MujocoConversions:
    """MuJoCo's state, controls and tangent space for the articulation of an
    :class:`~simkit.sim.importers.ImportRecord` (which inherits these methods): the rules are
    this module's docstring.

    Example::

        s0 = record.state_from_mujoco(model, d.qpos, d.qvel)
        control = record.control_from_mujoco(model, d.ctrl)
    """

    def joint_q_to_mujoco(self, joint_q) -> np.ndarray:
        """MuJoCo's ``qpos`` for the articulation's ``joint_q`` (references added, quaternions
        to (w, x, y, z)): the inverse of :meth:`joint_q_from_mujoco`.

        Example::

            d.qpos[:] = record.joint_q_to_mujoco(state.joint_q.numpy()[start:stop])
        """
        return joint_q_to_mujoco(self, joint_q)

    def joint_qd_from_mujoco(self, qvel, qpos) -> np.ndarray:
        """The articulation's ``joint_qd`` for MuJoCo's ``qvel`` at ``qpos``: the angular
        velocity of free and ball joints turned from the child's frame into the parent's.

        Example::

            qd = record.joint_qd_from_mujoco(d.qvel, d.qpos)
        """
        return joint_qd_from_mujoco(self, qvel, qpos)

    def joint_qd_to_mujoco(self, joint_qd, joint_q) -> np.ndarray:
        """MuJoCo's ``qvel`` for the articulation's ``joint_qd`` at its ``joint_q``.

        Example::

            d.qvel[:] = record.joint_qd_to_mujoco(qd, q)
        """
        return joint_qd_to_mujoco(self, joint_qd, joint_q)

    def state_from_mujoco(self, model, qpos, qvel, state=None):
        """``state`` (default a new one) at MuJoCo's ``qpos`` / ``qvel`` for this articulation,
        its bodies placed by forward kinematics; other articulations keep their coordinates.

        Example::

            s0 = record.state_from_mujoco(model, d.qpos, d.qvel)
        """
        return state_from_mujoco(self, model, qpos, qvel, state)

    def state_to_mujoco(self, model, state) -> tuple[np.ndarray, np.ndarray]:
        """MuJoCo's ``(qpos, qvel)`` for this articulation in ``state``.

        Example::

            d.qpos[:], d.qvel[:] = record.state_to_mujoco(model, s1)
        """
        return state_to_mujoco(self, model, state)

    def control_from_mujoco(self, model, ctrl, control=None):
        """``control`` (default a new one) with this articulation's ``joint_act``, ``joint_target``
        and ``joint_target_vel`` for MuJoCo's ``ctrl`` (one per actuator of the file, clamped to
        ``ctrlrange`` where MuJoCo clamps it): motors through their gear, position and velocity
        actuators as the drive's targets.

        Example::

            control = record.control_from_mujoco(model, d.ctrl)
        """
        return control_from_mujoco(self, model, ctrl, control)

    def control_to_mujoco(self, model, control) -> np.ndarray:
        """MuJoCo's ``ctrl`` for this articulation's actuation in ``control``.

        Example::

            d.ctrl[:] = record.control_to_mujoco(model, control)
        """
        return control_to_mujoco(self, model, control)

    def tangent_from_mujoco(self, model, state) -> np.ndarray:
        """``d (joint_q, joint_qd) / d x`` of this articulation at ``state``, ``x`` MuJoCo's
        tangent-space state ``(dqpos, qvel)`` of ``mjd_transitionFD`` (``2 nv`` columns).

        Example::

            A = record.tangent_to_mujoco(model, s1) @ J_state @ record.tangent_from_mujoco(model, s0)
        """
        return tangent_from_mujoco(self, model, state)

    def tangent_to_mujoco(self, model, state) -> np.ndarray:
        """``d x / d (joint_q, joint_qd)`` of this articulation at ``state`` (``2 nv`` rows):
        with :meth:`tangent_from_mujoco`, a step Jacobian in MuJoCo's convention.

        Example::

            P = record.tangent_to_mujoco(model, s1)
        """
        return tangent_to_mujoco(self, model, state)

    def control_jacobians(self, model) -> dict:
        """``{name: d control.name / d ctrl}`` for ``joint_act``, ``joint_target`` and
        ``joint_target_vel``, each ``(model.joint_count, nu)``.

        Example::

            B = P_out @ J_act @ record.control_jacobians(model)["joint_act"]
        """
        return control_jacobians(self, model)
