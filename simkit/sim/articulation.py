"""Articulations in generalized coordinates: forward and inverse kinematics, the joint-space
mass matrix and the bias forces.

An articulation (:meth:`~simkit.sim.ModelBuilder.add_articulation`) is a tree of bodies
rooted in the world whose joints have generalized coordinates ``model.joint_q`` and
velocities ``model.joint_qd``. Joint ``j`` owns ``joint_q[joint_q_start[j]:joint_q_start[j + 1]]``
and ``joint_qd[joint_qd_start[j]:joint_qd_start[j + 1]]``:

========== ==== ===== ============================================================
kind       q    qd    meaning
========== ==== ===== ============================================================
revolute   1    1     angle about ``axis`` (rad), angular rate
prismatic  1    1     displacement along ``axis`` (m), its rate
ball       4    3     quaternion (x, y, z, w); angular velocity
fixed      0    0
free       7    6     position, quaternion (x, y, z, w); linear, angular velocity
universal  2    2     angles about ``axis``, then about ``axis2`` (turned by the first)
========== ==== ===== ============================================================

The coordinates place the child's joint frame in the parent's joint frame (the frames
``child_xform`` and ``parent_xform`` of the joint). The velocities are those of the child's
joint frame relative to the parent's, **in the parent's joint frame** (the world's, rotated
by ``parent_xform``, for a root joint): the linear velocity is that of the child joint
frame's origin (the time derivative of the position coordinates), the angular velocity ``w``
turns the quaternion as ``dq/dt = (w, 0) * q / 2``. A free joint from the world with the
identity frames therefore has ``q`` = the body's pose and ``qd = (v, w)`` = the velocity of
the body's origin and its angular velocity, world coordinates.

MuJoCo differs in two places: its quaternions are ``(w, x, y, z)``, and the angular
velocity of its ball and free joints is in the child's frame (``R^T w`` with ``R`` the
joint's rotation); its free-joint linear velocity is the same.

Example::

    import numpy as np, simkit as sk

    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y")
    b.add_articulation()
    link = b.add_body()
    b.add_shape_capsule((0.0, -0.5, 0.0), (0.0, 0.0, 0.0, 1.0), 0.05, 0.5, body=link)
    b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0))
    model = b.finalize(dtype=sk.float64)
    state = model.state()
    sk.sim.eval_fk(model, sk.array([0.3], dtype=sk.float64), sk.array([1.0], dtype=sk.float64), state)
    M = sk.sim.mass_matrix(model, model.joint_q)           # 1 x 1: the inertia about the hinge
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import array as A
from ..core.launch import launch
from ..kernels.articulation import articulation_kernels
from ..kernels.structs import (JOINT_BALL, JOINT_FREE, JOINT_PRISMATIC, JOINT_Q_COUNT, JOINT_QD_COUNT,
                               JOINT_REVOLUTE, JOINT_UNIVERSAL)
from . import geometry as G


def coordinate_starts(kinds: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(joint_q_start, joint_qd_start)`` for joints of ``kinds``: int32 arrays of
    ``len(kinds) + 1`` offsets into ``joint_q`` and ``joint_qd``."""
    kinds = np.asarray(kinds, dtype=np.int64)
    q = np.concatenate([[0], np.cumsum(np.asarray(JOINT_Q_COUNT)[kinds])]).astype(np.int32)
    qd = np.concatenate([[0], np.cumsum(np.asarray(JOINT_QD_COUNT)[kinds])]).astype(np.int32)
    return q, qd


def body_joints(child: Any, articulation: Any, body_count: int) -> np.ndarray:
    """Per body, the articulated joint whose child it is (-1: none)."""
    out = np.full(body_count, -1, dtype=np.int32)
    for j, (c, a) in enumerate(zip(np.asarray(child), np.asarray(articulation))):
        if a >= 0:
            out[c] = j
    return out


# -- numpy kinematics (float64), shared by the model's initial coordinates and the dynamics --
def _unit_quat(q: np.ndarray) -> np.ndarray:
    return np.asarray(q, dtype=np.float64) / np.linalg.norm(q)


def _quat_conj(q: np.ndarray) -> np.ndarray:
    return np.concatenate([-q[:3], q[3:]])


def _frames(model) -> dict:
    """The joint data every numpy routine reads, as float64 host arrays."""
    j = model.joints
    return dict(kind=j.kind.numpy(), parent=j.parent.numpy(), child=j.child.numpy(),
                px=j.parent_xform.numpy().astype(np.float64), cx=j.child_xform.numpy().astype(np.float64),
                axis=j.axis.numpy().astype(np.float64), axis2=j.axis2.numpy().astype(np.float64), qs=model.joint_q_start.numpy(),
                ds=model.joint_qd_start.numpy(), art=model.joint_articulation.numpy(),
                armature=j.armature.numpy().astype(np.float64))


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise quaternion products ``a * b`` of (N, 4) arrays (x, y, z, w)."""
    u, w, v, z = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([w * v + z * u + np.cross(u, v), w * z - np.sum(u * v, axis=1, keepdims=True)], axis=1)


def _qrot(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise rotation of (N, 3) vectors by (N, 4) unit quaternions."""
    u, w = q[:, :3], q[:, 3:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def initial_coordinates(data: dict) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates and velocities of every joint at the builder's body poses and
    velocities (``data`` is what the builder gives :class:`~simkit.sim.Model`); as
    :func:`eval_ik`, in float64, all joints at once."""
    kinds = np.asarray(data["joint_kind"], dtype=np.int64)
    qs, ds = coordinate_starts(kinds)
    q, qd = np.zeros(qs[-1]), np.zeros(ds[-1])
    if not kinds.size:
        return q, qd
    body_q = np.asarray(data["body_q"], dtype=np.float64).reshape(-1, 7)
    body_qd = np.asarray(data["body_qd"], dtype=np.float64).reshape(-1, 6)
    com = np.asarray(data["body_com"], dtype=np.float64).reshape(-1, 3)
    parent = np.asarray(data["joint_parent"], dtype=np.int64)
    child = np.asarray(data["joint_child"], dtype=np.int64)
    Xp = np.asarray(data["joint_parent_xform"], dtype=np.float64).reshape(-1, 7)
    Xc = np.asarray(data["joint_child_xform"], dtype=np.float64).reshape(-1, 7)
    axis = np.asarray(data["joint_axis"], dtype=np.float64).reshape(-1, 3)
    axis2 = np.asarray(data["joint_axis2"], dtype=np.float64).reshape(-1, 3)
    # the parent's joint frame in the world and the parent's motion (the world: at rest)
    has = parent >= 0
    P = np.where(has[:, None], body_q[parent], np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]))
    rp = _qmul(P[:, 3:], Xp[:, 3:])
    xp = P[:, :3] + _qrot(P[:, 3:], Xp[:, :3])
    wp = np.where(has[:, None], body_qd[parent, :3], 0.0)
    vp = np.where(has[:, None], body_qd[parent, 3:], 0.0)
    cp = np.where(has[:, None], P[:, :3] + _qrot(P[:, 3:], com[parent]), 0.0)
    C = body_q[child]
    rc = _qmul(C[:, 3:], Xc[:, 3:])
    x = C[:, :3] + _qrot(C[:, 3:], Xc[:, :3])
    inv = rp * np.array([-1.0, -1.0, -1.0, 1.0])
    r = _qmul(inv, rc)
    r = np.where(r[:, 3:] < 0.0, -r, r)
    t = _qrot(inv, x - xp)
    wc = body_qd[child, :3]
    vc = body_qd[child, 3:] + np.cross(wc, x - (C[:, :3] + _qrot(C[:, 3:], com[child])))
    v_rel = _qrot(inv, vc - (vp + np.cross(wp, x - cp)))
    w_rel = _qrot(inv, wc - wp)
    # universal: r = R(a1, q0) R(a2, q1) (see simkit.kernels.articulation)
    a3 = np.cross(axis, axis2)
    b2, b1 = _qrot(r, axis2), _qrot(r * np.array([-1.0, -1.0, -1.0, 1.0]), axis)
    u0 = np.arctan2(np.sum(b2 * a3, axis=1), np.sum(b2 * axis2, axis=1))
    u1 = np.arctan2(np.sum(b1 * a3, axis=1), np.sum(b1 * axis, axis=1))
    turned = _qrot(np.concatenate([axis * np.sin(u0 / 2.0)[:, None], np.cos(u0 / 2.0)[:, None]], axis=1), axis2)
    for kind, coords, rates in (
            (JOINT_REVOLUTE, [2.0 * np.arctan2(np.sum(r[:, :3] * axis, axis=1), r[:, 3])],
             [np.sum(axis * w_rel, axis=1)]),
            (JOINT_PRISMATIC, [np.sum(axis * t, axis=1)], [np.sum(axis * v_rel, axis=1)]),
            (JOINT_BALL, list(r.T), list(w_rel.T)),
            (JOINT_FREE, list(t.T) + list(r.T), list(v_rel.T) + list(w_rel.T)),
            (JOINT_UNIVERSAL, [u0, u1], [np.sum(axis * w_rel, axis=1), np.sum(turned * w_rel, axis=1)])):
        sel = np.flatnonzero(kinds == kind)
        for k, values in enumerate(coords):
            q[qs[sel] + k] = values[sel]
        for k, values in enumerate(rates):
            qd[ds[sel] + k] = values[sel]
    return q, qd


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    return np.concatenate([axis * np.sin(angle / 2.0), [np.cos(angle / 2.0)]])


def _motion(kind: int, axis: np.ndarray, axis2: np.ndarray, q: np.ndarray) -> tuple:
    """Joint motion in the parent's joint frame: translation, rotation (quaternion), the
    velocity columns (3 x dofs, linear and angular) per unit generalized velocity."""
    t, r = np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
    n = JOINT_QD_COUNT[kind]
    lin, ang = np.zeros((3, n)), np.zeros((3, n))
    if kind == JOINT_REVOLUTE:
        r = _axis_angle(axis, q[0])
        ang[:, 0] = axis
    elif kind == JOINT_PRISMATIC:
        t = axis * q[0]
        lin[:, 0] = axis
    elif kind == JOINT_BALL:
        r = _unit_quat(q[:4])
        ang[:] = np.eye(3)
    elif kind == JOINT_FREE:
        t, r = np.array(q[:3], dtype=np.float64), _unit_quat(q[3:7])
        lin[:, :3], ang[:, 3:] = np.eye(3), np.eye(3)
    elif kind == JOINT_UNIVERSAL:
        first = _axis_angle(axis, q[0])
        r = G.quat_multiply(first, _axis_angle(axis2, q[1]))
        ang[:, 0], ang[:, 1] = axis, G.quat_rotate(first, axis2)
    return t, r, lin, ang


def _dynamics_terms(f: dict, com_local: np.ndarray, q: np.ndarray, qd: np.ndarray | None, joints: range,
                    dof0: int, ndof: int) -> dict:
    """Per body of the articulation whose joints are ``joints`` (and whose velocities are
    ``qd[dof0:dof0 + ndof]``): world rotation, center of mass, Jacobian (6 x ndof: angular
    rows, then linear rows of the center of mass), and with velocities its twist and bias
    accelerations (those at zero generalized acceleration)."""
    bodies: dict = {}
    zero = np.zeros(3)
    for j in joints:
        kind, p, c = int(f["kind"][j]), int(f["parent"][j]), int(f["child"][j])
        a, b = f["qs"][j], f["ds"][j] - dof0
        t, r, lin, ang = _motion(kind, f["axis"][j], f["axis2"][j], q[a:f["qs"][j + 1]])
        if p >= 0:
            P = bodies[p]
            R_pj = P["R"] @ G.quat_to_matrix(f["px"][j, 3:])
            x_pj = P["x"] + P["R"] @ f["px"][j, :3]
            J = P["J"].copy()
            w_p, v_p, al_p, a_p, c_p = P["w"], P["v"], P["alpha"], P["a"], P["com"]
        else:
            R_pj, x_pj = G.quat_to_matrix(f["px"][j, 3:]), f["px"][j, :3]
            J = np.zeros((6, ndof))
            w_p = v_p = al_p = a_p = c_p = zero
        R_cj = R_pj @ G.quat_to_matrix(r)
        x_j = x_pj + R_pj @ t
        R = R_cj @ G.quat_to_matrix(f["cx"][j, 3:]).T
        x = x_j - R @ f["cx"][j, :3]
        com = x + R @ com_local[c]
        # the ancestors' columns move the center of mass with their angular part about their
        # anchors: re-express the parent's linear rows at this body's center of mass
        J[3:] += np.cross(J[:3].T, com - c_p).T if p >= 0 else 0.0
        s_w, s_u = R_pj @ ang, R_pj @ lin
        n = JOINT_QD_COUNT[kind]
        J[:3, b:b + n] = s_w
        J[3:, b:b + n] = s_u + np.cross(s_w.T, com - x_j).T
        entry = dict(R=R, x=x, com=com, J=J)
        if qd is not None:
            dq = qd[f["ds"][j]:f["ds"][j] + n]
            u, om = s_u @ dq, s_w @ dq
            rr, d = x_j - c_p, com - x_j
            w = w_p + om
            alpha = al_p + np.cross(w_p, om)
            if kind == JOINT_UNIVERSAL:
                # the second axis turns with the first: d/dt (qd1 R1 a2) = (qd0 a1) x (qd1 R1 a2)
                alpha = alpha + np.cross(s_w[:, 0] * dq[0], s_w[:, 1] * dq[1])
            a_j = a_p + np.cross(al_p, rr) + np.cross(w_p, np.cross(w_p, rr)) + 2.0 * np.cross(w_p, u)
            v_j = v_p + np.cross(w_p, rr) + u
            entry.update(w=w, v=v_j + np.cross(w, d), alpha=alpha,
                         a=a_j + np.cross(alpha, d) + np.cross(w, np.cross(w, d)))
        else:
            entry.update(w=zero, v=zero, alpha=zero, a=zero)
        bodies[c] = entry
    return bodies


def _articulations(model, f: dict, articulation: int | None, where: str) -> list:
    """``(joints, dof0, ndof)`` of the requested articulation, or of every one."""
    if articulation is not None and (not isinstance(articulation, (int, np.integer)) or
                                     isinstance(articulation, bool) or
                                     not 0 <= articulation < model.articulation_count):
        raise ValueError(f"{where}: articulation must be an int in [0, {model.articulation_count}), "
                         f"got {articulation!r}")
    art = f["art"]
    members = np.flatnonzero(art >= 0)
    # the joints of an articulation are contiguous: where the id changes, one starts
    cuts = np.flatnonzero(np.diff(art[members])) + 1 if members.size else np.zeros(0, dtype=np.int64)
    out = []
    for group in np.split(members, cuts) if members.size else []:
        a = int(art[group[0]])
        if articulation is None or a == articulation:
            first, stop = int(group[0]), int(group[-1]) + 1
            out.append((range(first, stop), int(f["ds"][first]), int(f["ds"][stop] - f["ds"][first])))
    return out


def _host(values: Any) -> np.ndarray:
    return np.asarray(values.numpy() if isinstance(values, A.Array) else values, dtype=np.float64)


def _check_coordinates(model, values: Any, name: str, size: int, where: str) -> None:
    shape = values.shape if isinstance(values, A.Array) else np.shape(values)
    if tuple(shape) != (size,):
        raise ValueError(f"{where}: {name} must hold {size} numbers (one per generalized "
                         f"{'coordinate' if name.endswith('q') else 'velocity'} of the model), got shape "
                         f"{tuple(shape)}")


def mass_matrix(model, joint_q: Any, articulation: int | None = None) -> np.ndarray:
    """The joint-space mass matrix ``M(q)`` (float64 numpy, dense) at coordinates ``joint_q``
    (an sk or numpy array laid out like ``model.joint_q``): kinetic energy ``qd^T M qd / 2``
    for velocities ``qd`` laid out like ``model.joint_qd`` (in the convention of this
    module). It is ``(joint_dof_count, joint_dof_count)``, block-diagonal with one block per
    articulation; rows and columns of joints outside articulations are zero.
    ``articulation=a`` returns the block of articulation ``a`` only (its degrees of freedom
    are ``model.articulation_dofs(a)``): with many worlds, ask per articulation, since the
    whole matrix has ``joint_dof_count**2`` entries. Bodies' inertias include their armature, and
    the diagonal entries of each joint its joint ``armature``.

    Example::

        M = sk.sim.mass_matrix(model, model.joint_q)
        tau = M @ qdd + sk.sim.bias_forces(model, model.joint_q, model.joint_qd)
    """
    _check_coordinates(model, joint_q, "joint_q", model.joint_coord_count, "mass_matrix")
    f, q = _frames(model), _host(joint_q)
    mass = model.bodies.mass.numpy().astype(np.float64)
    inertia = model.bodies.inertia.numpy().astype(np.float64)
    com = model.bodies.com.numpy().astype(np.float64)
    parts = _articulations(model, f, articulation, "mass_matrix")
    size = (parts[0][2] if parts else 0) if articulation is not None else model.joint_dof_count
    out = np.zeros((size, size))
    for joints, dof0, ndof in parts:
        M = np.zeros((ndof, ndof))
        for c, e in _dynamics_terms(f, com, q, None, joints, dof0, ndof).items():
            I_w = e["R"] @ inertia[c] @ e["R"].T
            Jw, Jv = e["J"][:3], e["J"][3:]
            M += Jw.T @ I_w @ Jw + mass[c] * (Jv.T @ Jv)
        for j in joints:
            for d in range(f["ds"][j] - dof0, f["ds"][j + 1] - dof0):
                M[d, d] += f["armature"][j]
        at = 0 if articulation is not None else dof0
        out[at:at + ndof, at:at + ndof] = M
    return out


def bias_forces(model, joint_q: Any, joint_qd: Any, articulation: int | None = None) -> np.ndarray:
    """The bias forces ``C(q, qd)`` (float64 numpy, laid out like ``model.joint_qd``): Coriolis,
    centrifugal and gravity terms, so that ``M(q) qdd + C(q, qd) = tau`` for generalized forces
    ``tau`` (power ``tau . qd``). ``articulation=a`` returns the entries of articulation ``a``
    only; entries of joints outside articulations are zero. This is MuJoCo's ``qfrc_bias``
    (with the angular rows of ball and free joints rotated into this module's convention).

    Example::

        C = sk.sim.bias_forces(model, model.joint_q, model.joint_qd)
        qdd = np.linalg.solve(sk.sim.mass_matrix(model, model.joint_q), tau - C)
    """
    _check_coordinates(model, joint_q, "joint_q", model.joint_coord_count, "bias_forces")
    _check_coordinates(model, joint_qd, "joint_qd", model.joint_dof_count, "bias_forces")
    f, q, qd = _frames(model), _host(joint_q), _host(joint_qd)
    mass = model.bodies.mass.numpy().astype(np.float64)
    inertia = model.bodies.inertia.numpy().astype(np.float64)
    com = model.bodies.com.numpy().astype(np.float64)
    g = np.array([model.gravity[k] for k in range(3)], dtype=np.float64)
    parts = _articulations(model, f, articulation, "bias_forces")
    out = np.zeros((parts[0][2] if parts else 0) if articulation is not None else model.joint_dof_count)
    for joints, dof0, ndof in parts:
        C = np.zeros(ndof)
        for c, e in _dynamics_terms(f, com, q, qd, joints, dof0, ndof).items():
            I_w = e["R"] @ inertia[c] @ e["R"].T
            torque = I_w @ e["alpha"] + np.cross(e["w"], I_w @ e["w"])
            force = mass[c] * (e["a"] - g)
            C += e["J"][:3].T @ torque + e["J"][3:].T @ force
        at = 0 if articulation is not None else dof0
        out[at:at + ndof] = C
    return out


def joint_accelerations(model, joint_q: Any, joint_qd: Any, joint_tau: Any = None,
                        articulation: int | None = None) -> np.ndarray:
    """The generalized accelerations ``qdd = M(q)^-1 (tau - C(q, qd))`` of the articulations
    under generalized forces ``joint_tau`` (laid out like ``joint_qd``; None: zero) and gravity,
    without contacts, limits or drives (float64 numpy, laid out like ``joint_qd``; zero for
    joints outside articulations). ``articulation=a`` returns articulation ``a``'s only. The
    angular accelerations of ball and free joints are in the parent's joint frame, as their
    velocities.

    Example::

        qdd = sk.sim.joint_accelerations(model, model.joint_q, model.joint_qd)   # falling freely
    """
    _check_coordinates(model, joint_q, "joint_q", model.joint_coord_count, "joint_accelerations")
    _check_coordinates(model, joint_qd, "joint_qd", model.joint_dof_count, "joint_accelerations")
    tau = np.zeros(model.joint_dof_count)
    if joint_tau is not None:
        _check_coordinates(model, joint_tau, "joint_tau", model.joint_dof_count, "joint_accelerations")
        tau = _host(joint_tau)
    f = _frames(model)
    parts = _articulations(model, f, articulation, "joint_accelerations")
    out = np.zeros((parts[0][2] if parts else 0) if articulation is not None else model.joint_dof_count)
    M = mass_matrix(model, joint_q, articulation)
    rhs = tau - bias_forces(model, joint_q, joint_qd)
    for _joints, dof0, ndof in parts:
        at = 0 if articulation is not None else dof0
        block = slice(at, at + ndof)
        out[block] = np.linalg.solve(M[block, block], rhs[dof0:dof0 + ndof])
    return out


# -- kernels ------------------------------------------------------------------------------
def _check_array(model, values: Any, name: str, size: int, where: str) -> None:
    if not isinstance(values, A.Array):
        raise TypeError(f"{where}: {name} must be an sk array, got {type(values).__name__}")
    if values.dtype != model.dtype or values.shape != (size,):
        raise ValueError(f"{where}: {name} must be a 1-d {model.dtype.__name__} array of {size} values (as "
                         f"model.{name}), got dtype {values.dtype.__name__}, shape {values.shape}")
    if values.device != model.device:
        raise ValueError(f"{where}: {name} is on {values.device!r}, the model on {model.device!r}")


def eval_fk(model, joint_q: A.Array, joint_qd: A.Array, state) -> None:
    """Forward kinematics: write the pose (``state.body_q``) and velocity (``state.body_qd``)
    of every body of an articulation from the generalized coordinates ``joint_q`` and
    velocities ``joint_qd`` (sk arrays laid out like ``model.joint_q`` / ``model.joint_qd``).
    Bodies outside articulations are left as they are. Quaternion coordinates need not be
    normalized (they are normalized when read).

    It is one kernel launch, recorded by a Tape: gradients flow from ``state.body_q`` and
    ``state.body_qd`` to ``joint_q`` and ``joint_qd``.

    Example::

        state = model.state()
        q = sk.clone(model.joint_q, requires_grad=True)
        with sk.Tape() as tape:
            sk.sim.eval_fk(model, q, model.joint_qd, state)
    """
    _check_array(model, joint_q, "joint_q", model.joint_coord_count, "eval_fk")
    _check_array(model, joint_qd, "joint_qd", model.joint_dof_count, "eval_fk")
    if not model.articulation_count:
        return
    launch(articulation_kernels(model.dtype).eval_fk, model.body_count,
           inputs=[model.body_joint, model.joints, model.joint_q_start, model.joint_qd_start, joint_q, joint_qd,
                   model.bodies],
           outputs=[state.body_q, state.body_qd])


def eval_ik(model, state, joint_q: A.Array, joint_qd: A.Array) -> None:
    """Inverse kinematics: write the generalized coordinates and velocities of every joint
    (articulated or not) that the bodies of ``state`` have, into ``joint_q`` and
    ``joint_qd``. A revolute angle is in ``[-pi, pi]``; a quaternion has ``w >= 0``. Where the
    bodies violate a joint (a maximal-coordinate simulation), each coordinate is the
    projection onto the joint's motion: a revolute joint the twist of the relative rotation
    about its axis, a prismatic joint the offset along its axis.

    One kernel launch, recorded by a Tape (gradients flow back to ``state.body_q`` and
    ``state.body_qd``).

    Example::

        q, qd = sk.zeros_like(model.joint_q), sk.zeros_like(model.joint_qd)
        sk.sim.eval_ik(model, state, q, qd)
    """
    _check_array(model, joint_q, "joint_q", model.joint_coord_count, "eval_ik")
    _check_array(model, joint_qd, "joint_qd", model.joint_dof_count, "eval_ik")
    if not model.joint_count:
        return
    launch(articulation_kernels(model.dtype).eval_ik, model.joint_count,
           inputs=[state.body_q, state.body_qd, model.bodies, model.joints, model.joint_q_start,
                   model.joint_qd_start],
           outputs=[joint_q, joint_qd])
