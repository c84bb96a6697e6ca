"""Damped springs between particle pairs, with an actuation that scales their rest length.

Example::

    k = spring_kernels(sk.float32)
    sk.launch(k.eval_springs, model.spring_count,
              inputs=[q, qd, model.springs, control.spring_activation, f])
"""

import functools
from types import SimpleNamespace

import simkit as sk
from .structs import model_structs


@functools.cache
def spring_kernels(real) -> SimpleNamespace:
    """The spring kernels for float type ``real``."""
    S = model_structs(real)
    vec3s = sk.array(dtype=S.vec3)

    @sk.kernel(module=f"simkit.kernels.springs.{real.__name__}")
    def eval_springs(q: vec3s, qd: vec3s, springs: S.Springs, activation: sk.array(dtype=real), f: vec3s):
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

    return SimpleNamespace(eval_springs=eval_springs)
