"""The optimizer kernels, one family per float type: they work on flat scalar views of
parameters, gradients and moment buffers (a vec3 or mat33 array is viewed as its
components), so one kernel serves every element type.

Example::

    k = optim_kernels(sk.float64)
    sk.launch(k.sgd, n, inputs=[param_flat, grad_flat, 0.1])
"""

import functools
from types import SimpleNamespace

import simkit as sk

# Elements summed by one thread of ``sum_squares``: few enough atomics on the shared
# accumulator, enough threads to fill the CPU pool and a GPU.
NORM_CHUNK = 256


@functools.cache
def optim_kernels(real) -> SimpleNamespace:
    """The update, scaling and norm kernels for float type ``real`` (``sk.float32`` or ``sk.float64``)."""
    reals = sk.array(dtype=real)
    module = f"simkit.optim.kernels.{real.__name__}"

    @sk.kernel(module=module)
    def sgd(p: reals, g: reals, lr: real):
        i = sk.tid()
        p[i] = p[i] - lr * g[i]

    @sk.kernel(module=module)
    def sgd_momentum(p: reals, g: reals, buf: reals, lr: real, momentum: real):
        # buf <- momentum buf + g, p <- p - lr buf (buf starts at zero, so the first step is plain SGD)
        i = sk.tid()
        b = momentum * buf[i] + g[i]
        buf[i] = b
        p[i] = p[i] - lr * b

    @sk.kernel(module=module)
    def adam(p: reals, g: reals, m: reals, v: reals, lr: real, beta1: real, beta2: real, eps: real,
             bias1: real, bias2: real):
        # Kingma and Ba (2015), with the bias corrections 1 - beta^t passed in as bias1 and bias2.
        i = sk.tid()
        gi = g[i]
        mi = beta1 * m[i] + (1.0 - beta1) * gi
        vi = beta2 * v[i] + (1.0 - beta2) * gi * gi
        m[i] = mi
        v[i] = vi
        p[i] = p[i] - lr * (mi / bias1) / (sk.sqrt(vi / bias2) + eps)

    @sk.kernel(module=module)
    def scale(x: reals, factor: real):
        i = sk.tid()
        x[i] = x[i] * factor

    @sk.kernel(module=module)
    def sum_squares(x: reals, n: int, chunk: int, total: sk.array(dtype=sk.float64)):
        # Each thread sums the squares of one chunk in float64, then adds it to the total.
        c = sk.tid()
        start = c * chunk
        end = sk.min(start + chunk, n)
        s = sk.float64(0.0)
        for i in range(start, end):
            xi = sk.float64(x[i])
            s += xi * xi
        sk.atomic_add(total, 0, s)

    return SimpleNamespace(sgd=sgd, sgd_momentum=sgd_momentum, adam=adam, scale=scale, sum_squares=sum_squares)
