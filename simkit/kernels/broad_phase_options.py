"""Which broad phase a model's penalty body contact uses, and how many pairs its per-step
list holds (docs/geometry.md, "Broad phase"). Kept apart from
:mod:`simkit.kernels.broad_phase` so that the contact slot count can be known without its
kernels.

Example::

    broad_phase_mode(model)        # "static" or "sweep"
    broad_phase_capacity(model)    # the rows of the per-step pair list (sweep)
"""

from typing import Any

import numpy as np

from .structs import SHAPE_MESH

MODES = ("auto", "static", "sweep")
# "auto" sweeps above this many candidate shapes (those that are not meshes): with 512
# boxes the static list holds 261,632 ordered pairs, each tested every step.
AUTO_THRESHOLD = 512
# The default capacity of the per-step pair list, per candidate shape: a box in a dense
# pile meets a dozen others, each pair listed both ways.
PAIRS_PER_SHAPE = 32


def check_broad_phase_options(mode: Any, capacity: Any, where: str) -> None:
    """Raise a clear error unless ``mode`` is one of ``MODES`` and ``capacity`` is None or an
    int >= 1 (``where`` names the caller).

    Example::

        check_broad_phase_options("sweep", 10000, "finalize")
    """
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"{where}: broad_phase must be one of {MODES}, got {mode!r}")
    if capacity is not None:
        if isinstance(capacity, (bool, np.bool_)) or not isinstance(capacity, (int, np.integer)):
            raise TypeError(f"{where}: broad_phase_capacity must be an int or None, got "
                            f"{type(capacity).__name__} {capacity!r}")
        if capacity < 1:
            raise ValueError(f"{where}: broad_phase_capacity must be >= 1, got {capacity}")


def candidate_shapes(model) -> np.ndarray:
    """The shapes the broad phase sorts (every shape but meshes, whose pairs are
    :func:`~simkit.kernels.meshes.mesh_contact_rows`), ascending; cached on the model.

    Example::

        candidate_shapes(model)     # array([0, 1, 2, ...])
    """
    found = model.__dict__.get("_broad_phase_candidates")
    if found is None:
        found = np.flatnonzero(model.shapes.kind.numpy() != SHAPE_MESH).astype(np.int32)
        model._broad_phase_candidates = found
    return found


def broad_phase_mode(model) -> str:
    """``"sweep"`` when ``model``'s penalty body contact finds its pairs each step
    (:mod:`simkit.kernels.broad_phase`), ``"static"`` when it tests the pairs of
    :func:`~simkit.kernels.shapes.collision_pairs`: ``model.broad_phase``, where ``"auto"``
    sweeps above ``AUTO_THRESHOLD`` candidate shapes.

    Example::

        broad_phase_mode(model)     # "static" for a model of a few shapes
    """
    mode = getattr(model, "broad_phase", "auto")
    if mode == "auto":
        mode = "sweep" if len(candidate_shapes(model)) > AUTO_THRESHOLD else "static"
    return mode


def broad_phase_capacity(model) -> int:
    """How many ordered pairs the per-step list of ``model`` holds: ``model.broad_phase_capacity``,
    or by default ``PAIRS_PER_SHAPE`` per candidate shape.

    Example::

        broad_phase_capacity(model)     # 32000 for 1000 boxes
    """
    capacity = getattr(model, "broad_phase_capacity", None)
    if capacity is None:
        capacity = PAIRS_PER_SHAPE * max(len(candidate_shapes(model)), 1)
    return int(capacity)


def sweeps(model) -> bool:
    """Whether ``model``'s penalty body contact sweeps (:func:`broad_phase_mode` is
    ``"sweep"``), cached on the model for the setting it was asked with: a step asks every time.

    Example::

        sweeps(model)     # False for a model of a few shapes
    """
    setting = model.__dict__.get("broad_phase", "auto")
    cached = model.__dict__.get("_sweeps")
    if cached is None or cached[0] != setting:
        cached = model.__dict__["_sweeps"] = (setting, broad_phase_mode(model) == "sweep")
    return cached[1]


# On a GPU the count is read (a wait for the step) every this many steps, as the constraint
# contact's capacity check does; on the CPU after every step.
CHECK_EVERY = 100


def check_pair_capacity(model, state_out) -> None:
    """Raise if the step that wrote ``state_out`` found more overlapping shape pairs than its
    pair list holds: the contacts past the capacity were dropped, so bodies would pass through
    each other. A step of :class:`~simkit.sim.SemiImplicitEuler` or ``Featherstone(contact=
    "penalty")`` that sweeps calls it after each step, replayed or not.

    Example::

        check_pair_capacity(model, state_out)
    """
    count = state_out.contact_pair_count
    if count._np is None:
        steps = model.__dict__["_pair_checks"] = model.__dict__.get("_pair_checks", 0) + 1
        if steps % CHECK_EVERY:
            return
        found = int(count.numpy()[0])
    else:
        found = int(count._np[0])
    capacity = state_out.contact_pairs.shape[0]
    if found > capacity:
        raise RuntimeError(
            f"broad phase: a step found {found} overlapping shape pairs, more than the pair list holds "
            f"(broad_phase_capacity = {capacity}); the contacts past it were dropped, so bodies would pass "
            f"through each other. Set ModelBuilder.broad_phase_capacity (at least {found}) before finalize")
