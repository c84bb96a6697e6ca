"""A count of host-side changes that recorded launch sequences may have baked in.

A replayed step (:mod:`simkit.core.step_cache`) runs launches whose scalars, struct
fields and array headers were packed when the step was recorded. Whatever could change
them bumps :data:`count`: setting a field of an ``@sk.struct``, changing a component of a
vector or matrix value in place, setting an ``sk.config`` option, and (in
:mod:`simkit.sim`) setting a public attribute of a Model, State, Control or integrator. A
recorded step is replayed only while the count is the one it was recorded at; any other
value makes it run (and record) again. Array contents are not counted: a replay reads
whatever the arrays hold then.

Example::

    from simkit.core import mutation
    before = mutation.count[0]
    model.gravity = sk.vec3(0.0, 0.0, -1.62)
    mutation.count[0] > before        # True: recorded steps run again
"""

from __future__ import annotations

# One int in a list: bumping it (``count[0] += 1``) is a few tens of nanoseconds, so the
# setters above pay nothing noticeable.
count: list = [0]


def bump() -> None:
    """Count one host-side change (see the module documentation).

    Example::

        mutation.bump()
    """
    count[0] += 1
