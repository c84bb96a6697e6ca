"""The kernels the bench tools time, defined once (one simkit module, compiled once).

Example::

    from bench_kernels import saxpy
    sk.launch(saxpy, n, inputs=[x, y, 0.5])
"""

import simkit as sk

F32 = sk.array(dtype=float)


@sk.kernel
def empty1(a: F32):
    i = sk.tid()  # noqa: F841 - an empty kernel body


@sk.kernel
def empty8(a: F32, b: F32, c: F32, d: F32, e: F32, f: F32, g: F32, h: F32):
    i = sk.tid()  # noqa: F841 - an empty kernel body


@sk.kernel
def saxpy(x: F32, y: F32, a: float):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def chain_link(x: F32, y: F32):
    i = sk.tid()
    y[i] = sk.sin(x[i]) * 0.9 + 0.1 * x[i]
