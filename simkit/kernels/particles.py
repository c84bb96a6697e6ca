"""Particle kernels: clearing the force accumulator, semi-implicit Euler integration with gravity.

The kernels are generic over the float type; :func:`particle_kernels` gives their overloads
for one (all of them compile together on the first launch).

Example::

    k = particle_kernels(sk.float32)
    sk.launch(k.integrate_particles, n, inputs=[q, qd, f, model.particles, gravity, dt, q_out, qd_out])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from .structs import model_structs

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def integrate_particles(q: AnyArray, qd: AnyArray, f: AnyArray, particles: Any, gravity: Any, dt: Any, q_out: AnyArray,
                        qd_out: AnyArray):
    # Velocity first, then position with the new velocity: symplectic, so an
    # undamped oscillator keeps its energy bounded over long runs.
    i = sk.tid()
    w = particles.inv_mass[i]
    a = f[i] * w
    if w > 0.0:
        a = a + gravity
    v1 = qd[i] + a * dt
    qd_out[i] = v1
    q_out[i] = q[i] + v1 * dt


@sk.kernel
def clear_forces(f: AnyArray):
    # A launch rather than Array.zero_(): it can be recorded by sk.capture and by a Tape.
    f[sk.tid()] = f.dtype(0.0, 0.0, 0.0)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' parameters for float type ``real``."""
    S = model_structs(real)
    vec3s = sk.array(dtype=S.vec3)
    return {"q": vec3s, "qd": vec3s, "f": vec3s, "q_out": vec3s, "qd_out": vec3s, "particles": S.Particles,
            "gravity": S.vec3, "dt": real}


@functools.cache  # asked for on every launch: a lookup
def particle_kernels(real) -> SimpleNamespace:
    """The particle kernels' overloads for float type ``real``."""
    return sk.instantiate(real, __name__)
