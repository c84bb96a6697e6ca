"""simkit.kernels: the physics kernels, written in simkit's own kernel language.

The kernels are generic over the float type (``typing.Any`` parameters); each module
declares its parameter types per float type (``sk.overload_types``) and its
``*_kernels(real)`` helper returns the overloads for ``float32`` or ``float64``, which
compile together on the first launch, so a model finalized in float64 runs the same
physics with double precision (finite-difference checks need it). Only the hash grid
(``hash_grid``) kernels are still built by a per-float-type factory. The
launch wrappers take the objects of :mod:`simkit.sim` by duck typing, so this
layer imports nothing above ``simkit.core``.
"""
