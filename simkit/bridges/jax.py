"""simkit.jax: simkit functions as differentiable JAX functions (``jax.custom_vjp``).

Importable only where JAX is installed (``pip install "simkit[jax]"``); ``import simkit``
itself never needs it. :func:`function` turns a Python function that takes and returns
simkit arrays into one that takes and returns JAX arrays, differentiable with
``jax.grad``, ``jax.value_and_grad`` and ``jax.vjp``. Arrays cross by DLPack: the inputs
without a copy; the outputs and gradients without one where JAX aliases the buffer (on the
CPU it copies buffers that are not 64-byte aligned, which simkit's may not be).

It runs eagerly: simkit launches need concrete data, so the wrapped function cannot run
under ``jax.jit`` or ``jax.vmap`` (a clear error says so); ``jax.grad`` of code that calls
it outside ``jit`` works. Enable ``jax_enable_x64`` for float64.

Example::

    import jax, jax.numpy as jnp
    import simkit as sk
    import simkit.jax

    jax.config.update("jax_enable_x64", True)

    @simkit.jax.function
    def f(x: sk.array(dtype=sk.float64)):
        y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
        sk.launch(cube, len(x), inputs=[x], outputs=[y])
        return y

    jax.grad(lambda x: f(x).sum())(jnp.array([1.0, 2.0]))     # 3 x^2 = [3., 12.]
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import numpy as np

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    raise ImportError("simkit.jax needs JAX, which is not installed: pip install \"simkit[jax]\" "
                      "(or pip install jax)") from e

from .wrapping import Call, Wrapped
from ..core import types as T
from ..core.array import Array
from ..core.device import synchronize
from ..core.interop import from_dlpack

__all__ = ["function"]


def _device_of(x: "jax.Array", what: str) -> str:
    devices = x.devices()
    if len(devices) != 1:
        raise ValueError(f"{what} is sharded over {len(devices)} devices; simkit needs it on one")
    d = next(iter(devices))
    if d.platform == "cpu":
        return "cpu"
    if d.platform in ("gpu", "cuda"):
        return f"cuda:{d.local_hardware_id if d.local_hardware_id is not None else d.id}"
    raise ValueError(f"{what} is an array on {d.platform}; simkit runs on 'cpu' and 'cuda' arrays")


def _wrap(x: "jax.Array", dtype: Any, what: str) -> Array:
    """``x`` as an sk array of ``dtype`` (None: its scalar type) over the same memory; 0-d as one element."""
    if x.ndim == 0:
        x = x.reshape(1)
    try:
        return from_dlpack(x, dtype=dtype)
    except (TypeError, ValueError) as e:
        want = "" if dtype is None else f" as {T.type_name(dtype)}"
        raise type(e)(f"{what}: cannot use a {x.dtype} array of shape {x.shape}{want}: {e}") from None


def _to_jax(a: Array) -> "jax.Array":
    if a.device != "cpu":
        synchronize(a.device)
    return jnp.from_dlpack(a)


def _check_concrete(call: Call, xs: tuple) -> None:
    for label, v in zip(call.labels, xs):
        if isinstance(v, jax.core.Tracer):
            raise TypeError(f"{call.name}: {label} is a JAX tracer: simkit.jax.function runs eagerly (kernel "
                            "launches need concrete data), so call it outside jax.jit / jax.vmap; jax.grad, "
                            "jax.value_and_grad and jax.vjp of code that calls it work")


def _one(call: Call, xs: tuple, need_grad: bool):
    """Run the function once; returns the Run and its results as JAX values."""
    _check_concrete(call, xs)
    devices = {_device_of(x, f"{call.name}: {label}"): label for x, label in zip(xs, call.labels)}
    if len(devices) > 1:
        raise ValueError(f"{call.name}: arrays on different devices ({', '.join(devices)}); simkit launches "
                         "need them on one")
    inputs = []
    for x, dtype, label in zip(xs, call.dtypes, call.labels):
        a = _wrap(x, dtype, f"{call.name}: {label}")
        if need_grad and getattr(getattr(a.dtype, "_sk_scalar", None), "is_float", False):
            a.requires_grad = True
        inputs.append(a)
    run = call.run(inputs)
    outs = []
    for k, r in enumerate(run.results):
        if not isinstance(r, Array):
            raise TypeError(f"{call.name} returned {type(r).__name__} (output {k}); a simkit.jax.function returns "
                            "sk arrays only")
        outs.append(_to_jax(r))
    return run, tuple(outs)


def function(fn: Callable | None = None, *, dtypes: Mapping[str, Any] | None = None) -> Callable:
    """Wrap ``fn`` (simkit arrays in, simkit arrays out) as a differentiable function of JAX arrays.

    Each JAX array argument becomes an sk array over its memory (DLPack), on its device;
    ``fn`` runs on a fresh :class:`~simkit.Tape`; each sk array it returns (it must return
    sk arrays only, one or a tuple) becomes a JAX array. The backward pass (``jax.grad``,
    ``jax.vjp``) seeds the tape with the output cotangents and returns the inputs'
    gradients. Every other argument (Python scalars, models, sk arrays) passes through
    and gets no gradient.

    The rules of :func:`simkit.torch.function` hold: ``dtypes={"name": ...}``, then an
    ``sk.array(dtype=...)`` annotation, then the array's own scalar type gives each array's
    simkit dtype (a mismatch is a TypeError naming the argument); a 0-d array becomes a
    one-element array; inputs are read-only and outputs must be new arrays. Eager only:
    under ``jax.jit`` or ``jax.vmap`` the call is a TypeError saying so.

    Example::

        @simkit.jax.function(dtypes={"q": sk.vec3d})
        def heights(q):
            h = sk.zeros(len(q), dtype=sk.float64, device=q.device)
            sk.launch(height_kernel, len(q), inputs=[q], outputs=[h])
            return h

        jax.grad(lambda q: heights(q).sum())(jnp.zeros((4, 3)))
    """
    if fn is None:
        return lambda f: function(f, dtypes=dtypes)
    wrapped = Wrapped(fn, dtypes, "simkit.jax.function")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        call = wrapped.bind(args, kwargs, lambda v: isinstance(v, jax.Array))
        # one custom_vjp per call: its closure holds this call's tape from fwd to bwd, and
        # goes when JAX drops the backward function
        held: dict = {}

        @jax.custom_vjp
        def primal(*xs):
            run, outs = _one(call, xs, need_grad=False)
            held["single"] = run.single
            return outs

        def fwd(*xs):
            run, outs = _one(call, xs, need_grad=True)
            held["single"], held["run"] = run.single, run
            held["like"] = [(x.shape, x.dtype) for x in xs]
            return outs, None

        def bwd(_residual, cotangents):
            run = held["run"]
            run.check_outputs_unchanged(call.name)
            seeds = {}
            for (k, a), g in zip(run.outputs(), cotangents):
                if getattr(getattr(a.dtype, "_sk_scalar", None), "is_float", False) and run.differentiable(a):
                    seeds[a] = np.asarray(g).reshape(a._host_shape)
            if not seeds:
                return tuple(jnp.zeros(shape, dtype) if a.requires_grad else None
                             for (shape, dtype), a in zip(held["like"], run.inputs))
            run.backward(seeds)
            return tuple(_to_jax(a.grad).reshape(shape) if a.requires_grad else None
                         for (shape, _dtype), a in zip(held["like"], run.inputs))

        primal.defvjp(fwd, bwd)
        outs = primal(*call.values)
        return outs[0] if held["single"] else outs

    return wrapper
