"""``simkit.jax``, the public name of the JAX bridge :mod:`simkit.bridges.jax`: importing it
imports that module and makes this name the same module object (so ``simkit.jax.X`` is
``simkit.bridges.jax.X``). Needs JAX.

Example::

    import simkit.jax

    @simkit.jax.function
    def f(x: sk.array(dtype=sk.float32)): ...
"""

import sys

from .bridges import jax as _bridge

sys.modules[__name__] = _bridge
