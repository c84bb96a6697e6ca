"""simkit.torch: simkit functions and rollouts as differentiable PyTorch operations.

Importable only where PyTorch is installed (``pip install "simkit[torch]"``); ``import
simkit`` itself never needs it.

- :func:`function` turns a Python function that takes and returns simkit arrays (and
  launches kernels or steps integrators) into one that takes and returns torch tensors.
  The forward pass runs the function on a :class:`~simkit.Tape`, the backward pass seeds
  its outputs with torch's gradients and hands the inputs' gradients back to torch.
- :class:`Rollout` makes a whole :class:`simkit.optim.Rollout` (full tape or checkpointed)
  one torch operation from per-step controls and parameters to the loss.

Tensors and simkit arrays share memory (on the tensor's device, CPU or CUDA); see
:func:`function` for the rules on non-contiguous tensors, dtypes and devices.

Example::

    import torch
    import simkit as sk
    import simkit.torch

    @sk.kernel
    def cube(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64)):
        i = sk.tid()
        y[i] = x[i] * x[i] * x[i]

    @simkit.torch.function
    def f(x):
        y = sk.zeros(x.shape, dtype=sk.float64, device=x.device)
        sk.launch(cube, len(x), inputs=[x], outputs=[y])
        return y

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    f(x).sum().backward()
    x.grad            # 3 x^2 = [3., 12.]
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Sequence

import numpy as np

try:
    import torch
except ImportError as e:
    raise ImportError("simkit.torch needs PyTorch, which is not installed: pip install \"simkit[torch]\" "
                      "(or pip install torch)") from e
from torch.autograd.function import once_differentiable

from .wrapping import Call, Wrapped
from ..core import types as T
from ..core.array import Array
from ..core.device import synchronize
from ..core.interop import from_torch, to_torch
from ..optim.rollout import Rollout as _SkRollout
from ..optim.rollout import RolloutResult
from ..sim.model import State

__all__ = ["function", "Rollout"]


# ----------------------------------------------------------------------------------
# tensors in, arrays out
# ----------------------------------------------------------------------------------

def _device_of(t: "torch.Tensor", what: str) -> str:
    if t.device.type == "cpu":
        return "cpu"
    if t.device.type == "cuda":
        return f"cuda:{t.device.index if t.device.index is not None else torch.cuda.current_device()}"
    raise ValueError(f"{what} is a tensor on {t.device}; simkit runs on 'cpu' and 'cuda' tensors")


def _wrap(t: "torch.Tensor", dtype: Any, what: str) -> Array:
    """``t`` as an sk array of ``dtype`` (None: the tensor's scalar type), sharing its memory.
    A 0-d tensor becomes a one-element array; a non-contiguous one is copied first."""
    if t.dim() == 0:
        t = t.reshape(1)
    if not t.is_contiguous():
        t = t.contiguous()
    try:
        return from_torch(t, dtype=dtype)
    except (TypeError, ValueError) as e:
        want = "" if dtype is None else f" as {T.type_name(dtype)}"
        raise type(e)(f"{what}: cannot use a {t.dtype} tensor of shape {tuple(t.shape)}{want}: {e}") from None


def _torch_waits(device: str | None) -> None:
    """Wait for torch's queued work on ``device`` before simkit reads it (simkit launches on its own stream)."""
    if device is not None and device.startswith("cuda"):
        torch.cuda.current_stream(torch.device(device)).synchronize()


def _simkit_waits(device: str | None) -> None:
    """Wait for simkit's launches on ``device`` before torch reads what they wrote."""
    if device is not None and device.startswith("cuda"):
        synchronize(device)


def _torch_dtype(a: Array) -> "torch.dtype":
    return torch.from_numpy(np.empty(0, a._np_dtype)).dtype


# ----------------------------------------------------------------------------------
# function
# ----------------------------------------------------------------------------------

class _Call(torch.autograd.Function):
    @staticmethod
    def forward(ctx, call: Call, *tensors):
        ctx.set_materialize_grads(False)
        devices = {}
        for label, t in zip(call.labels, tensors):
            devices.setdefault(_device_of(t, f"{call.name}: {label}"), label)
        if len(devices) > 1:
            (d0, l0), (d1, l1) = list(devices.items())[:2]
            raise ValueError(f"{call.name}: tensors on different devices ({l0} on {d0}, {l1} on {d1}); "
                             "simkit launches need them on one")
        _torch_waits(next(iter(devices), None))
        inputs = []
        for k, (t, dtype, label) in enumerate(zip(tensors, call.dtypes, call.labels)):
            a = _wrap(t, dtype, f"{call.name}: {label}")
            if ctx.needs_input_grad[1 + k]:
                a.requires_grad = True
            inputs.append(a)
        run = call.run(inputs)
        results = list(run.results)
        out_tensors, frozen = [], []
        for k, a in run.outputs():
            _simkit_waits(a.device)
            results[k] = to_torch(a)
            out_tensors.append(results[k])
            if not run.differentiable(a):
                frozen.append(results[k])
        ctx.call, ctx.run = call, run
        ctx.shapes = [tuple(t.shape) for t in tensors]
        ctx.mark_non_differentiable(*frozen)
        ctx.save_for_backward(*tensors, *out_tensors)  # torch then refuses backward after an in-place change
        return results[0] if run.single else tuple(results)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grad_outputs):
        ctx.saved_tensors  # noqa: B018 - raises if a saved tensor was changed in place since forward
        run = ctx.run
        run.check_outputs_unchanged(ctx.call.name)
        seeds = {}
        for k, a in run.outputs():
            g = grad_outputs[k]
            if g is not None and run.differentiable(a):
                seeds[a] = g.detach().to("cpu").reshape(a._host_shape).numpy()
        grads: list = [None] * len(run.inputs)
        if seeds:
            run.backward(seeds)
            for k, a in enumerate(run.inputs):
                if a.requires_grad:
                    _simkit_waits(a.device)
                    grads[k] = to_torch(a.grad).reshape(ctx.shapes[k])
        return (None, *grads)


def function(fn: Callable | None = None, *, dtypes: Mapping[str, Any] | None = None) -> Callable:
    """Wrap ``fn`` (simkit arrays in, simkit arrays out) as a differentiable function of torch tensors.

    Calling the wrapper with tensors wraps each tensor as an sk array sharing its memory,
    on the tensor's device (CPU or CUDA), runs ``fn`` on a fresh :class:`~simkit.Tape`,
    and returns each sk array ``fn`` returns as a tensor sharing the array's memory
    (composite dtypes add trailing dims: an array of ``vec3d`` becomes an ``(n, 3)``
    tensor). In the backward pass the outputs' gradients seed the tape, and the inputs'
    gradients go back to torch. Any other argument or return value (Python scalars,
    sk arrays, models, states) passes through untouched and gets no gradient.

    Rules:

    - dtype: each tensor becomes an array of the dtype given for its parameter in
      ``dtypes``, else of the parameter's annotation if it is an ``sk.array(dtype=...)``,
      else of the tensor's own scalar type. The tensor's scalar type must match (a float32
      tensor for a float64 array is a TypeError naming the argument; nothing converts silently).
    - devices: every tensor argument must be on one device, ``cpu`` or ``cuda``; ``fn``
      allocates its outputs there (``device=x.device``).
    - a 0-d tensor becomes a one-element array; a non-contiguous tensor is copied to a
      contiguous one first (its gradient still reaches the original); contiguous tensors
      are never copied.
    - inputs are read-only: ``fn`` writing into one is a RuntimeError; ``fn`` must return new
      arrays from every call (returning an input, or overwriting an earlier call's output
      before its backward, is an error).
    - inputs that need no gradient get none (torch receives None for them); an output that
      does not depend on any input requiring grad is returned as not differentiable.
    - sk arrays that ``fn`` reads but does not take as tensors (model parameters with
      ``requires_grad``) accumulate their ``.grad`` in simkit as with ``tape.backward``.
    - one backward per forward is the usual case; ``retain_graph=True`` allows more, each
      giving the same gradients (nothing carries over). Double backward is not supported.
    - on CUDA, simkit waits for torch's current stream before running ``fn`` and for its own
      launches before returning, so the tensors are ready when either side reads them.

    Example::

        @simkit.torch.function(dtypes={"q": sk.vec3d})
        def height(q):
            h = sk.zeros(1, dtype=sk.float64, device=q.device)
            sk.launch(sum_heights, len(q), inputs=[q], outputs=[h])
            return h

        height(torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)).backward()
    """
    if fn is None:
        return lambda f: function(f, dtypes=dtypes)
    wrapped = Wrapped(fn, dtypes, "simkit.torch.function")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        call = wrapped.bind(args, kwargs, lambda v: isinstance(v, torch.Tensor))
        return _Call.apply(call, *call.values)

    return wrapper


# ----------------------------------------------------------------------------------
# Rollout
# ----------------------------------------------------------------------------------

class _RolloutCall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op: "Rollout", *tensors):
        result, grads = op._run(tensors)
        ctx.grads = grads
        return torch.tensor(result.loss, dtype=tensors[0].dtype, device=tensors[0].device)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_loss):
        return (None, *(grad_loss * g for g in ctx.grads))


class Rollout:
    """A :class:`simkit.optim.Rollout` from ``state`` as one differentiable torch operation.

    ``op(*tensors)`` takes one tensor per array of ``params`` (model parameters or fields of
    the initial state, each tensor of that array's ``.numpy()`` shape), then one per name
    of ``controls`` (a :class:`~simkit.sim.Control` field such as ``"spring_activation"``),
    of shape ``(steps, ...)`` holding that field of every frame's control. It copies the
    values into those arrays and controls, runs the rollout (forward and backward), and
    returns the loss as a 0-d tensor whose gradient reaches every input tensor.
    ``op.result`` is the last :class:`~simkit.optim.RolloutResult` (final state included).

    The rollout needs one Control per frame (``control=[model.control() for _ in
    range(steps)]``) when ``controls`` is given. The op owns the ``.grad`` of its params and
    controls: it zeroes them before every run. Tensors must have the arrays' float type and
    device. The gradient is computed with the forward pass (the loss is a scalar, so the
    backward pass only scales it), so calling the op twice in one graph at different
    values is fine.

    Example::

        controls = [model.control() for _ in range(50)]
        rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=50, dt=1e-2, loss=my_loss,
                                   control=controls, checkpoint_every="auto")
        op = simkit.torch.Rollout(rollout, model.state(), params=[model.springs.ke],
                                  controls=["spring_activation"])
        ke = torch.full((model.spring_count,), 100.0, dtype=torch.float64, requires_grad=True)
        act = torch.zeros(50, model.spring_count, dtype=torch.float64, requires_grad=True)
        op(ke, act).backward()
    """

    def __init__(self, rollout: _SkRollout, state: State, params: Sequence[Array] = (),
                 controls: Sequence[str] = ()):
        if not isinstance(rollout, _SkRollout):
            raise TypeError(f"simkit.torch.Rollout: rollout must be a simkit.optim.Rollout, got "
                            f"{type(rollout).__name__}")
        if not isinstance(state, State) or state.model is not rollout.model:
            raise ValueError("simkit.torch.Rollout: state must be a State of the rollout's model (model.state())")
        params = list(params)
        for i, a in enumerate(params):
            if not isinstance(a, Array):
                raise TypeError(f"simkit.torch.Rollout: params[{i}] must be an sk array, got {type(a).__name__}")
            if not getattr(getattr(a.dtype, "_sk_scalar", None), "is_float", False):
                raise TypeError(f"simkit.torch.Rollout: params[{i}] holds {T.type_name(a.dtype)}; only float "
                                "arrays have gradients")
        if isinstance(controls, str):
            controls = [controls]
        controls = list(controls)
        if controls:
            frames = rollout.controls
            if any(c is None for c in frames) or len({id(c) for c in frames}) != len(frames):
                raise ValueError("simkit.torch.Rollout: controls need one Control per frame in the rollout: build "
                                 "it with control=[model.control() for _ in range(steps)]")
            for name in controls:
                if not isinstance(getattr(frames[0], name, None), Array):
                    raise ValueError(f"simkit.torch.Rollout: controls names {name!r}, which a Control does not "
                                     "have (spring_activation, joint_target, joint_target_vel, joint_act, "
                                     "joint_dof_target, joint_dof_target_vel or joint_dof_act)")
        if not params and not controls:
            raise ValueError("simkit.torch.Rollout: give params=[arrays] and/or controls=[names] to differentiate "
                             "with respect to")
        self.rollout = rollout
        self.state = state
        self.params = params
        self.controls = controls
        self.result: RolloutResult | None = None

    def _arrays(self, k: int) -> list[Array]:
        """The arrays input ``k`` writes into: one param, or one control field of every frame."""
        if k < len(self.params):
            return [self.params[k]]
        name = self.controls[k - len(self.params)]
        return [getattr(c, name) for c in self.rollout.controls]

    def _check(self, tensors: Sequence) -> None:
        n = len(self.params) + len(self.controls)
        if len(tensors) != n:
            raise TypeError(f"simkit.torch.Rollout takes {n} tensors ({len(self.params)} params, then "
                            f"{len(self.controls)} controls), got {len(tensors)}")
        for k, t in enumerate(tensors):
            what = f"params[{k}]" if k < len(self.params) else f"controls {self.controls[k - len(self.params)]!r}"
            arrays = self._arrays(k)
            a = arrays[0]
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"simkit.torch.Rollout: {what} must be a torch tensor, got {type(t).__name__}")
            want = a._host_shape if k < len(self.params) else (len(arrays), *a._host_shape)
            if tuple(t.shape) != want:
                raise ValueError(f"simkit.torch.Rollout: {what} must have shape {want}, got {tuple(t.shape)}")
            if t.dtype != _torch_dtype(a):
                raise TypeError(f"simkit.torch.Rollout: {what} must be a tensor of {a._np_dtype} (the array's "
                                f"type {T.type_name(a.dtype)}), got {t.dtype}")
            if _device_of(t, f"simkit.torch.Rollout: {what}") != a.device:
                raise ValueError(f"simkit.torch.Rollout: {what} is on {t.device}, its array on {a.device}")

    def _run(self, tensors: Sequence) -> tuple[RolloutResult, list]:
        """Copy ``tensors`` (checked by ``__call__``) in, run forward and backward; the result and
        the gradient of the loss with respect to each tensor."""
        _torch_waits(self.rollout.model.device)
        for k, t in enumerate(tensors):
            arrays = self._arrays(k)
            rows = [t] if k < len(self.params) else list(t)
            for a, row in zip(arrays, rows):
                a.assign(_wrap(row.detach(), a.dtype, "simkit.torch.Rollout"))
                a.requires_grad = True
                a.grad.zero_()
        self.result = self.rollout.run(self.state)
        grads = []
        for k in range(len(tensors)):
            arrays = self._arrays(k)
            g = [to_torch(a.grad.clone()) for a in arrays]
            grads.append(g[0] if k < len(self.params) else torch.stack(g))
        _simkit_waits(self.rollout.model.device)
        return self.result, grads

    def __call__(self, *tensors: "torch.Tensor") -> "torch.Tensor":
        """The loss of one run at these values, a 0-d tensor (see the class docstring)."""
        self._check(tensors)
        return _RolloutCall.apply(self, *tensors)
