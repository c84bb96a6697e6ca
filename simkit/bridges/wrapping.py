"""What the PyTorch and JAX bridges share: finding the foreign arrays among a call's
arguments, the simkit dtype each becomes, running the function on a Tape with the foreign
arrays replaced by simkit arrays, and checking what it did with them.

Example::

    wrapped = Wrapped(fn, dtypes={"q": sk.vec3d}, bridge="simkit.torch.function")
    call = wrapped.bind(args, kwargs, is_foreign=lambda v: isinstance(v, torch.Tensor))
    run = call.run(arrays)           # arrays: one sk array per foreign argument
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..autograd.tape import Tape
from ..core.array import Array, ArrayType, _dtype


def _signature(fn: Callable) -> inspect.Signature:
    try:
        return inspect.signature(fn, eval_str=True)
    except Exception:  # annotations that do not evaluate are then not read for dtypes
        return inspect.signature(fn)


class Wrapped:
    """A function of simkit arrays with the dtype to give each foreign argument, by parameter."""

    def __init__(self, fn: Callable, dtypes: Mapping[str, Any] | None, bridge: str):
        if not callable(fn):
            raise TypeError(f"{bridge}: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
        self.signature = _signature(fn)
        dtypes = dict(dtypes or {})
        unknown = sorted(set(dtypes) - set(self.signature.parameters))
        if unknown:
            raise ValueError(f"{bridge}({self.name}): dtypes names {', '.join(map(repr, unknown))}, which "
                             f"{self.name} has no parameter for (parameters: "
                             f"{', '.join(self.signature.parameters) or 'none'})")
        self.declared: dict[str, Any] = {}
        for p in self.signature.parameters.values():
            if p.name in dtypes:
                try:
                    self.declared[p.name] = _dtype(dtypes[p.name])
                except TypeError as e:
                    raise TypeError(f"{bridge}({self.name}): dtypes[{p.name!r}]: {e}") from None
            elif isinstance(p.annotation, ArrayType):
                self.declared[p.name] = p.annotation.dtype

    def bind(self, args: tuple, kwargs: dict, is_foreign: Callable[[Any], bool]) -> "Call":
        """The call ``fn(*args, **kwargs)`` with its foreign arrays found (in argument order)."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}: {e}") from None
        call = Call(self, bound)
        for pname, value in bound.arguments.items():
            kind = self.signature.parameters[pname].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                entries = [(("var", (pname, i)), v, f"argument '{pname}[{i}]'") for i, v in enumerate(value)]
            elif kind is inspect.Parameter.VAR_KEYWORD:
                entries = [(("kw", (pname, k)), v, f"argument '{k}'") for k, v in value.items()]
            else:
                entries = [(("arg", pname), value, f"argument '{pname}'")]
            for slot, v, label in entries:
                if is_foreign(v):
                    call.values.append(v)
                    call.slots.append(slot)
                    call.dtypes.append(self.declared.get(pname))
                    call.labels.append(label)
        return call


@dataclass
class Run:
    """One run of the function on a tape: its inputs, its results (sk arrays and others) and
    the tape that recorded it."""

    inputs: list
    results: list
    single: bool
    tape: Tape
    versions: list        # of the sk arrays among results, as the run left them

    def outputs(self) -> list[tuple[int, Array]]:
        """(position, array) of every sk array among the results."""
        return [(k, r) for k, r in enumerate(self.results) if isinstance(r, Array)]

    def differentiable(self, a: Array) -> bool:
        """Whether output ``a`` depends on an array that requires grad (so it can be seeded)."""
        return a.requires_grad and id(a) in self.tape.touched

    def check_outputs_unchanged(self, name: str) -> None:
        """Refuse a backward after an output was overwritten (by a later call reusing it)."""
        for (k, a), v in zip(self.outputs(), self.versions):
            if a._version != v:
                raise RuntimeError(f"{name}: output {k} was overwritten after the function returned it (the "
                                   "function returns an array it reuses between calls?); return a new array from "
                                   "every call")

    def backward(self, seeds: dict) -> None:
        """Fresh zeroed grads for the inputs that require grad, then the tape's backward from ``seeds``."""
        for a in self.inputs:
            if a.requires_grad:
                # a new buffer each backward: the caller may keep the array it received for
                # the last one (torch keeps it as a leaf's .grad and adds into it)
                a.requires_grad = False
                a.requires_grad = True
        self.tape.backward(grads=seeds)


class Call:
    """One call: the bound arguments, and per foreign argument its slot, dtype and label."""

    def __init__(self, wrapped: Wrapped, bound: inspect.BoundArguments):
        self.wrapped = wrapped
        self.bound = bound
        self.values: list = []
        self.slots: list = []       # ("arg", name), ("var", (name, index)) or ("kw", (name, key))
        self.dtypes: list = []
        self.labels: list = []      # "argument 'x'", for messages

    @property
    def name(self) -> str:
        return self.wrapped.name

    def run(self, inputs: list[Array]) -> Run:
        """Run the function on a fresh Tape with ``inputs`` in place of the foreign arguments."""
        bound = inspect.BoundArguments(self.bound.signature, self.bound.arguments.copy())
        for (kind, key), a in zip(self.slots, inputs):
            if kind == "arg":
                bound.arguments[key] = a
            elif kind == "var":
                name, i = key
                items = list(bound.arguments[name])
                items[i] = a
                bound.arguments[name] = tuple(items)
            else:
                name, k = key
                bound.arguments[name] = {**bound.arguments[name], k: a}
        versions = [a._version for a in inputs]
        tape = Tape()
        with tape:
            result = self.wrapped.fn(*bound.args, **bound.kwargs)
        for a, v, label in zip(inputs, versions, self.labels):
            if a._version != v:
                raise RuntimeError(f"{self.name} wrote into its input ({label}); the inputs of a bridged "
                                   "function are read-only: write results into arrays it allocates and returns")
        single = not isinstance(result, (tuple, list))
        results = [result] if single else list(result)
        ids = {id(a) for a in inputs}
        for k, r in enumerate(results):
            if isinstance(r, Array) and id(r) in ids:
                raise ValueError(f"{self.name} returned one of its inputs unchanged (output {k}); return a new "
                                 "array (sk.clone(x)) so that its gradient is recorded")
        run = Run(list(inputs), results, single, tape, [])
        run.versions = [a._version for _k, a in run.outputs()]
        return run
