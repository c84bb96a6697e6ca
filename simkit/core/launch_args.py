"""The adjoint buffers of a hand-run adjoint launch (``sk.launch(..., adjoint=True,
adj_inputs=[...], adj_outputs=[...])``), as Warp means them: a buffer given for an array
replaces its ``.grad`` for that launch, and None means the array's own ``.grad``.

Example::

    sk.launch(square, 3, inputs=[a], outputs=[b], adjoint=True, adj_inputs=[None], adj_outputs=[None])
"""

from __future__ import annotations

from . import types as T
from .array import Array


def with_adjoints(kernel, values, inputs, outputs, adj_inputs, adj_outputs, adjoint: bool) -> list:
    """``values`` with each array argument given an adjoint buffer replaced by an alias of it (same
    data) whose grad is that buffer, for a hand-run adjoint launch. A None entry means the array's
    own ``.grad`` (Warp's meaning). An input without one takes no gradient, as in Warp (nobody asked
    for it); an output without one is refused, naming it, since its seed would read as zero and
    every gradient of the launch silently be zero. An omitted list (``adj_inputs`` or
    ``adj_outputs`` left None) is a plain adjoint launch for its arrays."""
    if not adjoint:
        raise ValueError(f"{kernel.name}(): adj_inputs/adj_outputs are only used by an adjoint launch; "
                         "pass adjoint=True")
    adjs, slots = [], []
    for what, given, primal in (("adj_inputs", adj_inputs, inputs), ("adj_outputs", adj_outputs, outputs)):
        listed = given is not None
        given = [None] * len(primal) if given is None else list(given)
        if len(given) != len(primal):
            raise ValueError(f"{kernel.name}(): {what} has {len(given)} entries, but the launch has "
                             f"{len(primal)} {what[4:]}")
        adjs += given
        slots += [f"{what}[{k}]" if listed else None for k in range(len(given))]
    out = []
    for name, v, g, slot in zip(kernel.arg_names, values, adjs, slots):
        if type(v) is not Array:
            if g is not None and getattr(type(v), "_sk_kind", None) == "struct":
                raise TypeError(f"{kernel.name}(): argument '{name}' is a struct; its adjoint is accumulated into "
                                "the .grad of its array fields, so its adj_inputs/adj_outputs entry must be None")
            out.append(v)
            continue
        if g is None:
            if slot is not None and slot.startswith("adj_outputs") and v._grad is None \
                    and T.holds_floats(v.dtype):
                raise ValueError(f"{kernel.name}(): {slot} is None, which means the .grad of argument '{name}', "
                                 f"but that array has none, so its seed would be zero; give it one ({name}.grad = seed) or "
                                 f"pass its seed in {slot}")
            out.append(v)
            continue
        if type(g) is not Array:
            raise TypeError(f"{kernel.name}(): the adjoint given for argument '{name}' must be an sk array or None, "
                            f"got {type(g).__name__}")
        alias = Array(v._np, v.dtype, v.shape, v.device, owner=v, ptr=v._ptr, strides=v._strides)
        try:
            alias.grad = g
        except (TypeError, ValueError) as e:
            raise type(e)(f"{kernel.name}(): the adjoint given for argument '{name}': {e}") from None
        out.append(alias)
    return out
