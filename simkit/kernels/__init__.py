"""simkit.kernels: the physics kernels, written in simkit's own kernel language.

Every module here builds its kernels for one float type at a time (``float32`` or
``float64``) through a cached factory, so a model finalized in float64 runs the
same physics with double precision (finite-difference checks need it). The
launch wrappers take the objects of :mod:`simkit.sim` by duck typing, so this
layer imports nothing above ``simkit.core``.
"""
