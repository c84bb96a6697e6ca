"""Joint-limit rows for the constraint solve of :class:`simkit.sim.Featherstone`
(``contact="constraint"``): MuJoCo's soft limit constraints, solved with the contacts.

A limit slot follows the contact slots of :mod:`simkit.kernels.contact_rows`; it is one side
of one limited coordinate (a revolute or prismatic joint's lower or upper limit, either
angle of a universal joint) or a ball joint's cone (its rotation angle against
``limit_upper``). Its row is one-sided (``condim`` 1, force >= 0) on the joint's rates: the
coefficients in ``slot_normal`` on the dofs ``slot_dof`` gives (``+1`` on the coordinate
for a lower limit, ``-1`` for an upper one, minus the rotation's unit axis on a ball joint's
three rates), its distance the coordinate's distance to the limit (``q - lower``, ``upper -
q``, ``upper - angle``: negative past it), active below the joint's ``limit_margin``, with
the joint's ``limit_solref`` and ``limit_solimp`` (MuJoCo's ``jnt_solref``, ``jnt_solimp``,
``jnt_margin``).

Example::

    k = limit_row_kernels(sk.float64)
    sk.launch(k.limit_rows, limit_count, inputs=[...], outputs=[...])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints = sk.array(dtype=sk.int32)

# which bound a limit slot holds (``limit_which``)
LIMIT_LOWER, LIMIT_UPPER, LIMIT2_LOWER, LIMIT2_UPPER, LIMIT_CONE = 0, 1, 2, 3, 4


@sk.kernel
def limit_rows(limit_joint: ints, limit_which: ints, limit_coord: ints, first: int, joints: Any, joint_q: AnyArray,
               slot_body: ints, slot_normal: AnyArray, slot_dist: AnyArray, slot_condim: ints,
               slot_solref: AnyArray, slot_solimp: AnyArray, slot_margin: AnyArray, slot_active: ints):
    i = sk.tid()
    slot = first + i
    j = limit_joint[i]
    which = limit_which[i]
    c = limit_coord[i]
    q = joint_q[c]
    n = slot_normal.dtype(0.0, 0.0, 0.0)
    dist = q * 0.0
    if which == LIMIT_LOWER:
        dist = q - joints.limit_lower[j]
        n[0] = 1.0
    elif which == LIMIT_UPPER:
        dist = joints.limit_upper[j] - q
        n[0] = -1.0
    elif which == LIMIT2_LOWER:
        dist = q - joints.limit2_lower[j]
        n[0] = 1.0
    elif which == LIMIT2_UPPER:
        dist = joints.limit2_upper[j] - q
        n[0] = -1.0
    else:
        # the rotation angle of the ball's quaternion (x, y, z, w), the short way, about the
        # unit axis u: the angle's rate is u . w, so the row is -u on the three rates
        r = sk.quat_of(joint_q.dtype)(joint_q[c], joint_q[c + 1], joint_q[c + 2], joint_q[c + 3])
        if r[3] < 0.0:
            r = -r
        v = type(n)(r[0], r[1], r[2])
        angle = q * 0.0
        n[0] = -1.0
        # at the identity the axis is undefined (and sqrt'(0) infinite): MuJoCo's x axis
        if sk.dot(v, v) > 1.0e-30:
            s = sk.sqrt(sk.dot(v, v))
            angle = 2.0 * sk.atan2(s, r[3])
            n = -v / s
        dist = joints.limit_upper[j] - angle
    margin = joints.limit_margin[j]
    slot_active[slot] = 0
    if dist < margin:
        slot_active[slot] = 1
        slot_body[2 * slot] = -1
        slot_body[2 * slot + 1] = -1
        slot_normal[slot] = n
        slot_dist[slot] = dist
        slot_condim[slot] = 1
        slot_solref[slot] = joints.limit_solref[j]
        slot_solimp[slot] = joints.limit_solimp[j]
        slot_margin[slot] = margin


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    reals = sk.array(dtype=real)
    return {"joints": S.Joints, "joint_q": reals, "slot_normal": sk.array(dtype=S.vec3), "slot_dist": reals,
            "slot_solref": sk.array(dtype=S.vec2), "slot_solimp": sk.array(dtype=S.vec5), "slot_margin": reals}


@functools.cache  # asked for on every launch: a lookup
def limit_row_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together).

    Example::

        k = limit_row_kernels(sk.float32)
        k.limit_rows
    """
    return sk.instantiate(real, __name__)
