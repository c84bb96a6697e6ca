"""The optional bridges to PyTorch and JAX: :mod:`simkit.bridges.torch` and
:mod:`simkit.bridges.jax`, public as ``simkit.torch`` and ``simkit.jax`` (the same module
objects), with what they share in :mod:`simkit.bridges.wrapping`. Nothing here is imported
by ``import simkit``: each bridge imports its framework, which stays optional.

Example::

    import simkit.torch                  # the module simkit.bridges.torch

    @simkit.torch.function
    def f(x: sk.array(dtype=sk.float32)): ...
"""
