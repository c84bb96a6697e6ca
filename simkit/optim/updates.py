"""The optimizer kernels, generic over the float type: they work on flat scalar views of
parameters, gradients and moment buffers (a vec3 or mat33 array is viewed as its
components), so one kernel serves every element type. :func:`optim_kernels` gives their
overloads for one float type (all of them compile together on the first launch). A float16
parameter is updated in float32 (its moment buffers and the hyperparameters too: Adam's
``eps = 1e-8`` and the square of a gradient of 1e-3 are zero in half precision), each
result rounded once into the parameter; ``type(lr)`` is that arithmetic's type.

Example::

    k = optim_kernels(sk.float64)
    sk.launch(k.sgd, n, inputs=[param_flat, grad_flat, 0.1])
"""

import functools
from types import SimpleNamespace
from typing import Any

import simkit as sk

# Elements summed by one thread of ``sum_squares``: few enough atomics on the shared
# accumulator, enough threads to fill the CPU pool and a GPU.
NORM_CHUNK = 256

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it


def compute_type(real):
    """The float type the updates of ``real`` parameters compute in (and keep their moments
    in): float32 for float16, else ``real`` itself.

    Example::

        compute_type(sk.float16)      # sk.float32
    """
    return sk.float32 if real in (sk.float16, getattr(sk, "bfloat16", None)) else real


@sk.kernel
def sgd(p: AnyArray, g: AnyArray, lr: Any):
    i = sk.tid()
    c = type(lr)
    p[i] = p.dtype(c(p[i]) - lr * c(g[i]))


@sk.kernel
def sgd_momentum(p: AnyArray, g: AnyArray, buf: AnyArray, lr: Any, momentum: Any):
    # buf <- momentum buf + g, p <- p - lr buf (buf starts at zero, so the first step is plain SGD)
    i = sk.tid()
    c = type(lr)
    b = momentum * buf[i] + c(g[i])
    buf[i] = b
    p[i] = p.dtype(c(p[i]) - lr * b)


@sk.kernel
def sgd_nesterov(p: AnyArray, g: AnyArray, buf: AnyArray, lr: Any, momentum: Any, dampening: Any,
                 weight_decay: Any, nesterov: int, first: int):
    # PyTorch's and Warp's SGD: weight decay adds wd p to g; the first step's buf is g itself,
    # later ones momentum buf + (1 - dampening) g; Nesterov steps along g + momentum buf.
    i = sk.tid()
    c = type(lr)
    gi = c(g[i]) + weight_decay * c(p[i])
    b = gi
    if first == 0:
        b = momentum * buf[i] + (1.0 - dampening) * gi
    buf[i] = b
    d = b
    if nesterov != 0:
        d = gi + momentum * b
    p[i] = p.dtype(c(p[i]) - lr * d)


@sk.kernel
def adam(p: AnyArray, g: AnyArray, m: AnyArray, v: AnyArray, lr: Any, beta1: Any, beta2: Any, eps: Any,
         bias1: Any, bias2: Any):
    # Kingma and Ba (2015), with the bias corrections 1 - beta^t passed in as bias1 and bias2.
    i = sk.tid()
    c = type(lr)
    gi = c(g[i])
    mi = beta1 * m[i] + (1.0 - beta1) * gi
    vi = beta2 * v[i] + (1.0 - beta2) * gi * gi
    m[i] = mi
    v[i] = vi
    p[i] = p.dtype(c(p[i]) - lr * (mi / bias1) / (sk.sqrt(vi / bias2) + eps))


@sk.kernel
def scale(x: AnyArray, factor: Any):
    i = sk.tid()
    x[i] = x.dtype(type(factor)(x[i]) * factor)


@sk.kernel
def sum_squares(x: AnyArray, n: int, chunk: int, total: sk.array(dtype=sk.float64)):
    # Each thread sums the squares of one chunk in float64, then adds it to the total.
    c = sk.tid()
    start = c * chunk
    end = sk.min(start + chunk, n)
    s = sk.float64(0.0)
    for i in range(start, end):
        xi = sk.float64(x[i])
        s += xi * xi
    sk.atomic_add(total, 0, s)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    compute = compute_type(real)
    types = dict.fromkeys(["p", "g", "x"], sk.array(dtype=real))
    types.update(dict.fromkeys(["buf", "m", "v"], sk.array(dtype=compute)))
    types.update(dict.fromkeys(["lr", "momentum", "dampening", "weight_decay", "beta1", "beta2", "eps", "bias1", "bias2", "factor"], compute))
    return types



@functools.cache  # asked for on every launch: a lookup
def optim_kernels(real) -> SimpleNamespace:
    """The overloads of the update, scaling and norm kernels for float type ``real``
    (``sk.float32`` or ``sk.float64``); they compile together.

    Example::

        optim_kernels(sk.float32).adam
    """
    return sk.instantiate(real, __name__)
