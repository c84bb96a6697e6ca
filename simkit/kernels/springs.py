"""Damped springs between particle pairs, with an actuation that scales their rest length.

The kernels are generic over the float type; :func:`spring_kernels` gives their overloads
for one (all of them compile together on the first launch).

Example::

    k = spring_kernels(sk.float32)
    sk.launch(k.eval_springs, model.spring_count,
              inputs=[q, qd, model.springs, control.spring_activation, f])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def eval_springs(q: AnyArray, qd: AnyArray, springs: Any, activation: AnyArray, f: AnyArray):
    # Hooke's law along the spring plus damping of the stretch rate; an
    # activation a makes the spring pull towards rest_length * (1 + a). Coincident
    # particles give the spring no direction: no force then, and (the length being
    # taken inside the branch) no 0/0 in the adjoint either.
    s = sk.tid()
    i = springs.indices[s, 0]
    j = springs.indices[s, 1]
    d = q[i] - q[j]
    dd = sk.dot(d, d)
    if dd > 0.0:
        length = sk.sqrt(dd)
        direction = d / length
        rest = springs.rest_length[s] * (1.0 + activation[s])
        stretch_rate = sk.dot(direction, qd[i] - qd[j])
        fs = direction * (springs.ke[s] * (length - rest) + springs.kd[s] * stretch_rate)
        sk.atomic_sub(f, i, fs)
        sk.atomic_add(f, j, fs)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' parameters for float type ``real``."""
    S = model_structs(real)
    return {"q": sk.array(dtype=S.vec3), "qd": sk.array(dtype=S.vec3), "f": sk.array(dtype=S.vec3),
            "springs": S.Springs, "activation": sk.array(dtype=real)}


@functools.cache  # asked for on every launch: a lookup
def spring_kernels(real) -> SimpleNamespace:
    """The spring kernels' overloads for float type ``real``."""
    return sk.instantiate(real, __name__)
