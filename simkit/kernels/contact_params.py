"""MuJoCo's rules for the contact parameters of a pair: how the parameters of two shapes (or
a shape and the ground) combine into those of their contact.

The rules are those of MuJoCo (checked against MuJoCo 4.0, the version the tests compare
with) for two geoms of the same ``priority`` and the default ``solmix`` (simkit has neither:
every shape has MuJoCo's defaults, priority 0 and solmix 1):

- friction (sliding ``mu``, ``torsional_mu``, ``rolling_mu``): the elementwise maximum;
- ``condim``: the maximum;
- ``solref``: the average when both are in the standard form (time constant > 0), else the
  elementwise minimum (MuJoCo's direct form, ``(-stiffness, -damping)``);
- ``solimp``: the average;
- ``margin`` and ``gap``: the sum. The contact is active (a constraint) while the distance
  between the surfaces is below the pair's margin; MuJoCo also reports it, inactive, up to
  margin + gap, so the gap changes no force. (MuJoCo 3 took the maximum of each and made
  the contact active below ``margin - gap``.)

Collision filtering (:func:`masks_collide`): two shapes, or a shape and the ground, may touch
when ``contype_a & conaffinity_b`` or ``contype_b & conaffinity_a`` is nonzero.

The helpers are ``@sk.func``s for the contact solve's kernels; :func:`pair_params` gives every
mixed parameter of shape ``a`` against shape ``b`` (``b = -1``: the ground), and the kernel
``pair_contact_params`` writes them for a list of pairs.

Example::

    friction, condim, solref, solimp, margin, gap = pair_params(shapes, contact, a, b)
"""

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import simkit as sk
from ..core import array as A
from ..core.launch import launch
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.func
def mix_friction(a: Any, b: Any):
    """The friction of a pair: the elementwise maximum of the two (sliding, torsional,
    rolling) vectors."""
    r = a
    for i in range(3):
        if b[i] > r[i]:
            r[i] = b[i]
    return r


@sk.func
def mix_condim(a: int, b: int) -> int:
    """The contact dimension of a pair: the larger one."""
    return sk.max(a, b)


@sk.func
def mix_solref(a: Any, b: Any):
    """The ``solref`` of a pair: the average of two standard ``(timeconst, dampratio)``, the
    elementwise minimum when either is in the direct form ``(-stiffness, -damping)``."""
    r = (a + b) * 0.5
    if a[0] <= 0.0 or b[0] <= 0.0:
        r = a
        for i in range(2):
            if b[i] < r[i]:
                r[i] = b[i]
    return r


@sk.func
def mix_solimp(a: Any, b: Any):
    """The ``solimp`` of a pair: the average of the two."""
    return (a + b) * 0.5


@sk.func
def mix_margin(a: Any, b: Any):
    """The ``margin`` (or the ``gap``) of a pair: the sum of the two (MuJoCo 4)."""
    return a + b


@sk.func
def masks_collide(contype_a: int, conaffinity_a: int, contype_b: int, conaffinity_b: int) -> int:
    """1 when two things with these collision masks may touch (MuJoCo's rule), else 0."""
    if (contype_a & conaffinity_b) != 0 or (contype_b & conaffinity_a) != 0:
        return 1
    return 0


@sk.func
def ground_collides(shapes: Any, contact: Any, s: int) -> int:
    """1 when shape ``s`` may touch the ground by the collision masks of both, else 0."""
    return masks_collide(shapes.contype[s], shapes.conaffinity[s], contact.ground_contype[0],
                         contact.ground_conaffinity[0])


@sk.func
def side_params(shapes: Any, contact: Any, s: int):
    """The contact parameters of shape ``s`` (``s = -1``: the ground): friction (sliding,
    torsional, rolling), condim, solref, solimp, margin, gap."""
    if s < 0:
        return (shapes.params.dtype(contact.ground_mu[0], contact.ground_torsional_mu[0],
                                    contact.ground_rolling_mu[0]),
                contact.ground_condim[0], contact.ground_solref[0], contact.ground_solimp[0],
                contact.ground_margin[0], contact.ground_gap[0])
    return (shapes.params.dtype(shapes.mu[s], shapes.torsional_mu[s], shapes.rolling_mu[s]), shapes.condim[s],
            shapes.solref[s], shapes.solimp[s], shapes.margin[s], shapes.gap[s])


@sk.func
def pair_params(shapes: Any, contact: Any, a: int, b: int):
    """The contact parameters of shape ``a`` against shape ``b`` (``b = -1``: the ground),
    mixed by MuJoCo's rules: friction (a vector: sliding, torsional, rolling), condim,
    solref, solimp, margin, gap."""
    fa, ca, ra, ia, ma, ga = side_params(shapes, contact, a)
    fb, cb, rb, ib, mb, gb = side_params(shapes, contact, b)
    return (mix_friction(fa, fb), mix_condim(ca, cb), mix_solref(ra, rb), mix_solimp(ia, ib), mix_margin(ma, mb),
            mix_margin(ga, gb))


@sk.kernel
def pair_contact_params(pairs: sk.array(dtype=sk.int32, ndim=2), shapes: Any, contact: Any, friction: AnyArray,
                        condim: sk.array(dtype=sk.int32), solref: AnyArray, solimp: AnyArray, margin: AnyArray,
                        gap: AnyArray):
    # One thread per pair (a, b); b = -1 is the ground.
    i = sk.tid()
    f, c, r, m, mg, g = pair_params(shapes, contact, pairs[i, 0], pairs[i, 1])
    friction[i] = f
    condim[i] = c
    solref[i] = r
    solimp[i] = m
    margin[i] = mg
    gap[i] = g


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    return {"shapes": S.Shapes, "contact": S.Contact, "friction": sk.array(dtype=S.vec3),
            "solref": sk.array(dtype=S.vec2), "solimp": sk.array(dtype=S.vec5), "margin": sk.array(dtype=real),
            "gap": sk.array(dtype=real)}


@functools.cache  # asked for on every launch: a lookup
def contact_params_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real``."""
    return sk.instantiate(real, __name__)


def mixed_contact_params(model, pairs: Any) -> dict:
    """The contact parameters of each pair of ``pairs`` (an int32 sk array or numpy array of
    shape ``(P, 2)``; a second entry of -1 is the ground), mixed by MuJoCo's rules, as sk
    arrays: ``friction`` (vec3: sliding, torsional, rolling), ``condim``, ``solref`` (vec2),
    ``solimp`` (5-vector), ``margin``, ``gap``.

    Example::

        p = mixed_contact_params(model, np.array([[0, -1], [0, 1]], dtype=np.int32))
        p["friction"].numpy()[0]       # shape 0 against the ground
    """
    S = model.types
    if not isinstance(pairs, A.Array):
        pairs = A.array(np.asarray(pairs, dtype=np.int32).reshape(-1, 2), dtype=sk.int32, device=model.device)
    n = pairs.shape[0]
    out = {"friction": A.zeros(n, dtype=S.vec3, device=model.device),
           "condim": A.zeros(n, dtype=sk.int32, device=model.device),
           "solref": A.zeros(n, dtype=S.vec2, device=model.device),
           "solimp": A.zeros(n, dtype=S.vec5, device=model.device),
           "margin": A.zeros(n, dtype=model.dtype, device=model.device),
           "gap": A.zeros(n, dtype=model.dtype, device=model.device)}
    if n:
        launch(contact_params_kernels(model.dtype).pair_contact_params, n,
               inputs=[pairs, model.shapes, model.contact, out["friction"], out["condim"], out["solref"],
                       out["solimp"], out["margin"], out["gap"]])
    return out


def shapes_touching_ground(model) -> np.ndarray:
    """Per shape of ``model``, whether its collision masks and the ground's let it touch the
    ground (a bool numpy array; what the host-side contact lists use).

    Example::

        on_ground = np.flatnonzero(shapes_touching_ground(model) & (model.shapes.body.numpy() >= 0))
    """
    contype, conaffinity = model.shapes.contype.numpy(), model.shapes.conaffinity.numpy()
    ground_type, ground_affinity = model.contact.ground_contype.numpy()[0], model.contact.ground_conaffinity.numpy()[0]
    return ((contype & ground_affinity) != 0) | ((ground_type & conaffinity) != 0)
