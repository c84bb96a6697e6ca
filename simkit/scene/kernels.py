"""The kernels of scenes, one family per float type: muscle activations, writing optimized
parameters into a model or an initial state, and the losses of ``[optimize]``.

Example::

    k = scene_kernels(sk.float64)
    sk.launch(k.gait, spring_count, inputs=[params, first, phase, amplitude, control.spring_activation])
"""

import functools
from types import SimpleNamespace

import simkit as sk
from ..core import types as T


@functools.cache
def scene_kernels(real) -> SimpleNamespace:
    """The scene kernels for float type ``real`` (``sk.float32`` or ``sk.float64``).

    Example::

        scene_kernels(sk.float64).squared_distance
    """
    vec2 = T.vector(2, real)
    vec3 = T.vector(3, real)
    spatial = T.vector(6, real)
    transform = T.transform_of(real)
    reals = sk.array(dtype=real)
    vec3s = sk.array(dtype=vec3)
    module = f"simkit.scene.kernels.{real.__name__}"

    @sk.kernel(module=module)
    def gait(params: sk.array(dtype=vec2), first: int, phase: real, amplitude: real, activation: reals):
        # params[s] = (a, b): activation = amplitude tanh(a sin(phase) + b cos(phase)) of spring first + s
        s = sk.tid()
        p = params[s]
        activation[first + s] = amplitude * sk.tanh(p[0] * sk.sin(phase) + p[1] * sk.cos(phase))

    @sk.kernel(module=module)
    def set_velocity(v: vec3s, first: int, inv_mass: reals, qd: vec3s):
        # pinned (zero-mass) particles stay at rest
        i = first + sk.tid()
        if inv_mass[i] > 0.0:
            qd[i] = v[0]
        else:
            qd[i] = vec3(0.0, 0.0, 0.0)

    @sk.kernel(module=module)
    def set_body_velocity(v: vec3s, body: int, w: vec3, qd: sk.array(dtype=spatial)):
        x = v[0]
        qd[body] = spatial(w[0], w[1], w[2], x[0], x[1], x[2])

    @sk.kernel(module=module)
    def set_scaled(theta: reals, base: real, first: int, out: reals):
        # a material parameter on a log scale: base * exp(theta)
        out[first + sk.tid()] = base * sk.exp(theta[0])

    @sk.kernel(module=module)
    def particle_center(q: vec3s, first: int, weight: real, center: vec3s):
        sk.atomic_add(center, 0, weight * q[first + sk.tid()])

    @sk.kernel(module=module)
    def body_center(body_q: sk.array(dtype=transform), body: int, center: vec3s):
        X = body_q[body]
        sk.atomic_add(center, 0, X.p)

    @sk.kernel(module=module)
    def squared_distance(center: vec3s, target: vec3, mask: vec3, loss: reals):
        d = center[0] - target
        sk.atomic_add(loss, 0, mask[0] * d[0] * d[0] + mask[1] * d[1] * d[1] + mask[2] * d[2] * d[2])

    @sk.kernel(module=module)
    def minus_travel(center: vec3s, start: vec3, direction: vec3, loss: reals):
        sk.atomic_add(loss, 0, -sk.dot(center[0] - start, direction))

    return SimpleNamespace(gait=gait, set_velocity=set_velocity, set_body_velocity=set_body_velocity,
                           set_scaled=set_scaled, particle_center=particle_center, body_center=body_center,
                           squared_distance=squared_distance, minus_travel=minus_travel)
