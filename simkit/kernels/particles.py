"""Particle kernels: clearing the force accumulator, semi-implicit Euler integration with gravity.

Example::

    k = particle_kernels(sk.float32)
    sk.launch(k.integrate_particles, n, inputs=[q, qd, f, model.particles, gravity, dt, q_out, qd_out])
"""

import functools
from types import SimpleNamespace

import simkit as sk
from .structs import model_structs


@functools.cache
def particle_kernels(real) -> SimpleNamespace:
    """The particle kernels for float type ``real``."""
    S = model_structs(real)
    vec3s = sk.array(dtype=S.vec3)

    @sk.kernel(module=f"simkit.kernels.particles.{real.__name__}")
    def integrate_particles(q: vec3s, qd: vec3s, f: vec3s, particles: S.Particles, gravity: S.vec3, dt: real,
                            q_out: vec3s, qd_out: vec3s):
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

    @sk.kernel(module=f"simkit.kernels.particles.{real.__name__}")
    def clear_forces(f: vec3s):
        # A launch rather than Array.zero_(): it can be recorded by sk.capture and by a Tape.
        f[sk.tid()] = S.vec3(0.0, 0.0, 0.0)

    return SimpleNamespace(integrate_particles=integrate_particles, clear_forces=clear_forces)
