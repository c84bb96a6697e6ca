"""The kernels of scenes, generic over the float type: muscle activations, writing optimized
parameters into a model or an initial state, and the losses of ``[optimize]``.
:func:`scene_kernels` gives their overloads for one float type (all of them compile together
on the first launch).

Example::

    k = scene_kernels(sk.float64)
    sk.launch(k.gait, spring_count, inputs=[params, first, phase, amplitude, control.spring_activation])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk
from ..core import types as T

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


@sk.kernel
def gait(params: AnyArray, first: int, phase: Any, amplitude: Any, activation: AnyArray):
    # params[s] = (a, b): activation = amplitude tanh(a sin(phase) + b cos(phase)) of spring first + s
    s = sk.tid()
    p = params[s]
    activation[first + s] = amplitude * sk.tanh(p[0] * sk.sin(phase) + p[1] * sk.cos(phase))


@sk.kernel
def set_velocity(v: AnyArray, first: int, inv_mass: AnyArray, qd: AnyArray):
    # pinned (zero-mass) particles stay at rest
    i = first + sk.tid()
    if inv_mass[i] > 0.0:
        qd[i] = v[0]
    else:
        qd[i] = qd.dtype(0.0, 0.0, 0.0)


@sk.kernel
def set_body_velocity(v: AnyArray, body: int, w: Any, qd: AnyArray):
    x = v[0]
    qd[body] = qd.dtype(w[0], w[1], w[2], x[0], x[1], x[2])


@sk.kernel
def set_scaled(theta: AnyArray, base: Any, first: int, out: AnyArray):
    # a material parameter on a log scale: base * exp(theta)
    out[first + sk.tid()] = base * sk.exp(theta[0])


# Losses of a center: a body's origin, a particle, or the mean of a body's particles. Those that
# need no intermediate center array allocate nothing, so a run that evaluates them can replay.

@sk.func
def masked_square(d: Any, mask: Any):
    return mask[0] * d[0] * d[0] + mask[1] * d[1] * d[1] + mask[2] * d[2] * d[2]


@sk.kernel
def particle_center(q: AnyArray, first: int, weight: Any, center: AnyArray):
    sk.atomic_add(center, 0, weight * q[first + sk.tid()])


@sk.kernel
def squared_distance(center: AnyArray, target: Any, mask: Any, loss: AnyArray):
    sk.atomic_add(loss, 0, masked_square(center[0] - target, mask))


@sk.kernel
def point_distance(q: AnyArray, index: int, target: Any, mask: Any, loss: AnyArray):
    sk.atomic_add(loss, 0, masked_square(q[index] - target, mask))


@sk.kernel
def body_distance(body_q: AnyArray, body: int, target: Any, mask: Any, loss: AnyArray):
    sk.atomic_add(loss, 0, masked_square(body_q[body].p - target, mask))


@sk.kernel
def particle_travel(q: AnyArray, first: int, weight: Any, start: Any, direction: Any, loss: AnyArray):
    # the travel of the mean is the weighted sum of each particle's (weights summing to 1)
    sk.atomic_add(loss, 0, -weight * sk.dot(q[first + sk.tid()] - start, direction))


@sk.kernel
def body_travel(body_q: AnyArray, body: int, start: Any, direction: Any, loss: AnyArray):
    sk.atomic_add(loss, 0, -sk.dot(body_q[body].p - start, direction))


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    vec3 = T.vector(3, real)
    reals, vec3s = sk.array(dtype=real), sk.array(dtype=vec3)
    types = {"params": sk.array(dtype=T.vector(2, real)), "body_q": sk.array(dtype=T.transform_of(real)),
             # a body's velocity is spatial, a particle's a vec3
             "set_body_velocity.qd": sk.array(dtype=T.vector(6, real))}
    types.update(dict.fromkeys(["phase", "amplitude", "base", "weight"], real))
    types.update(dict.fromkeys(["activation", "inv_mass", "theta", "out", "loss"], reals))
    types.update(dict.fromkeys(["v", "qd", "q", "center"], vec3s))
    types.update(dict.fromkeys(["w", "target", "mask", "start", "direction"], vec3))
    return types


@functools.cache  # asked for on every launch: a lookup
def scene_kernels(real) -> SimpleNamespace:
    """The overloads of the scene kernels for float type ``real`` (``sk.float32`` or
    ``sk.float64``); they compile together.

    Example::

        scene_kernels(sk.float64).squared_distance
    """
    return sk.instantiate(real, __name__)
