"""Gradient-descent optimizers over sk arrays: :class:`SGD`, :class:`Adam`, and clipping by
global norm (:func:`clip_grad_norm`, :func:`grad_norm`).

Every update runs as a kernel, in place, on the array's device, reading ``.grad``. Arrays
of vectors and matrices are updated component by component: the kernels see a flat scalar
view of the same memory (a ``vec3`` array of length n is 3n floats), so any float element
type works, and the moment buffers are flat arrays of the parameter's scalar type.

Example::

    opt = sk.optim.Adam([model.springs.ke, s0.particle_qd], lr=1e-2)
    for it in range(100):
        opt.zero_grad()
        rollout.run(s0)           # accumulates .grad of every array that requires grad
        opt.step()
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from ..core import types as T
from ..core.array import Array, zeros
from ..core.launch import launch
from .updates import NORM_CHUNK, compute_type, optim_kernels

Params = Array | Iterable[Array]


# ----------------------------------------------------------------------------------
# Validation and flat views
# ----------------------------------------------------------------------------------

def _describe(a: Array) -> str:
    return f"array of {T.type_name(a.dtype)} with shape {a.shape}"


def _is_contiguous(a: Array) -> bool:
    if a.device == "cpu":
        return a.numpy().flags.c_contiguous
    return a.__cuda_array_interface__["strides"] is None


def check_params(params: Params, where: str) -> list[Array]:
    """``params`` (one sk array or an iterable of them) as a list, each checked to be a
    contiguous float array, without duplicates; errors name ``params[i]``.

    Example::

        check_params(model.springs.ke, "SGD")      # [model.springs.ke]
    """
    if isinstance(params, Array):
        params = [params]
    elif isinstance(params, (str, bytes)) or not isinstance(params, Iterable):
        raise TypeError(f"{where}: params must be an sk array or an iterable of sk arrays, got {type(params).__name__}")
    out: list[Array] = []
    seen: set[int] = set()
    for i, p in enumerate(params):
        if not isinstance(p, Array):
            raise TypeError(f"{where}: params[{i}] must be an sk array, got {type(p).__name__}")
        if not getattr(getattr(p.dtype, "_sk_scalar", None), "is_float", False):
            raise TypeError(f"{where}: params[{i}] must hold floats (float32/float64 scalars, vectors or matrices), "
                            f"got an {_describe(p)}")
        if not _is_contiguous(p):
            raise ValueError(f"{where}: params[{i}] ({_describe(p)}) is not contiguous; optimize a contiguous copy "
                             "(p.clone()) instead")
        if id(p) in seen:
            raise ValueError(f"{where}: params[{i}] ({_describe(p)}) appears more than once")
        seen.add(id(p))
        out.append(p)
    if not out:
        raise ValueError(f"{where}: params is empty; pass the arrays to optimize")
    return out


def _positive(value: Any, name: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where}: {name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{where}: {name} must be a finite number > 0, got {value!r}")
    return value


def _unit(value: Any, name: str, where: str) -> float:
    """A number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where}: {name} must be a number in [0, 1), got {type(value).__name__}")
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{where}: {name} must be in [0, 1), got {value!r}")
    return value


def _components(a: Array) -> int:
    return a.size * int(np.prod(a.dtype._sk_shape, dtype=np.int64))


def _host_shape(a: Array) -> tuple:
    return a.shape + tuple(a.dtype._sk_shape)


def flat_view(a: Array) -> Array:
    """A 1-d array of ``a``'s scalar type over the same memory as contiguous ``a`` (no grad).

    Example::

        v = flat_view(sk.zeros(4, dtype=sk.vec3))    # 12 float32, shared with the vec3 array
    """
    scalar = a.dtype._sk_scalar
    count = _components(a)
    if a.device == "cpu":
        return Array(a.numpy().reshape(count), scalar, (count,), "cpu", owner=a)
    return Array(None, scalar, (count,), a.device, owner=a, ptr=a.ptr, strides=(scalar.np_dtype.itemsize,))


def _wrote(a: Array) -> None:
    """Count a write through a flat view on the viewed array itself, so that a Tape that recorded a
    read of it before the update refuses to run backward (overwrite detection)."""
    a._version += 1


class _Slot:
    """One parameter with cached flat views of its data and of its current grad."""

    def __init__(self, index: int, param: Array):
        self.index = index
        self.param = param
        self.flat = flat_view(param)
        self.count = self.flat.size
        self.real = param.dtype._sk_scalar
        self._grad: Array | None = None
        self._grad_flat: Array | None = None

    def grad(self, where: str) -> Array:
        """The flat view of the parameter's grad; ValueError naming it when it has none."""
        g = self.param.grad
        if g is None:
            raise ValueError(f"{where}: params[{self.index}] ({_describe(self.param)}) has no grad; set "
                             "requires_grad=True on it and run a backward pass before step()")
        if g is not self._grad:
            if not _is_contiguous(g):
                raise ValueError(f"{where}: the grad of params[{self.index}] ({_describe(self.param)}) is not "
                                 "contiguous")
            self._grad, self._grad_flat = g, flat_view(g)
        return self._grad_flat

    def buffer(self) -> Array:
        return zeros(self.count, dtype=compute_type(self.real), device=self.param.device)


# ----------------------------------------------------------------------------------
# Global gradient norm
# ----------------------------------------------------------------------------------

def _norm_of(slots: Sequence[_Slot], where: str) -> float:
    totals: dict[str, Array] = {}
    for s in slots:
        g = s.grad(where)
        if s.count == 0:
            continue
        total = totals.get(g.device)
        if total is None:
            total = totals[g.device] = zeros(1, dtype=T.float64, device=g.device)
        chunks = -(-s.count // NORM_CHUNK)
        launch(optim_kernels(s.real).sum_squares, chunks, inputs=[g, s.count, NORM_CHUNK, total])
    return math.sqrt(sum(float(t.numpy()[0]) for t in totals.values()))


def _scale_grads(slots: Sequence[_Slot], factor: float, where: str) -> None:
    for s in slots:
        if s.count:
            launch(optim_kernels(s.real).scale, s.count, inputs=[s.grad(where), factor])
            _wrote(s.param.grad)


def grad_norm(params: Params) -> float:
    """The global L2 norm of the grads of ``params`` (summed in float64 by a kernel).

    Example::

        n = sk.optim.grad_norm([model.springs.ke, s0.particle_qd])
    """
    slots = [_Slot(i, p) for i, p in enumerate(check_params(params, "grad_norm"))]
    return _norm_of(slots, "grad_norm")


def _clip(slots: Sequence[_Slot], max_norm: float, where: str) -> float:
    total = _norm_of(slots, where)
    if math.isfinite(total) and total > max_norm:
        _scale_grads(slots, max_norm / total, where)
    return total


def clip_grad_norm(params: Params, max_norm: float) -> float:
    """Scale the grads of ``params`` in place so that their global L2 norm is at most
    ``max_norm``; returns the norm before clipping. Grads whose norm is not finite (inf or nan)
    are left as they are; the returned norm tells.

    Example::

        norm = sk.optim.clip_grad_norm([model.springs.ke], max_norm=1.0)
    """
    max_norm = _positive(max_norm, "max_norm", "clip_grad_norm")
    slots = [_Slot(i, p) for i, p in enumerate(check_params(params, "clip_grad_norm"))]
    return _clip(slots, max_norm, "clip_grad_norm")


# ----------------------------------------------------------------------------------
# Optimizers
# ----------------------------------------------------------------------------------

class Optimizer:
    """What SGD and Adam share: parameters, learning rate, optional clipping, the step count,
    ``zero_grad`` and ``state_dict`` / ``load_state_dict``. A subclass names its hyperparameters
    in ``HYPER`` (checked by ``_check_hyper``), its moment buffers in ``_buffer_names`` and
    implements ``_update`` (one kernel launch over the flat views of a parameter and its grad).

    Example::

        opt: sk.optim.Optimizer = sk.optim.Adam(params, lr=1e-2)
        opt.lr = 5e-3            # a schedule, between steps
        opt.step_count           # steps taken so far
    """

    HYPER: tuple[str, ...] = ()

    def __init__(self, params: Params, lr: float, max_grad_norm: float | None = None, **hyper: Any):
        name = type(self).__name__
        self.params: list[Array] = check_params(params, name)
        self._slots = [_Slot(i, p) for i, p in enumerate(self.params)]
        self.lr = lr
        self.max_grad_norm = max_grad_norm
        self.__dict__.update(self._check_hyper(**hyper))
        self.step_count = 0
        self.buffers: dict[str, list[Array]] = {b: [s.buffer() for s in self._slots]
                                                for b in self._buffer_names(self._hyper())}

    @staticmethod
    def _check_hyper(**hyper: Any) -> dict:
        return {}

    @staticmethod
    def _buffer_names(hyper: dict) -> tuple[str, ...]:
        return ()

    def _hyper(self) -> dict:
        return {h: getattr(self, h) for h in self.HYPER}

    @property
    def lr(self) -> float:
        """The learning rate; assignable between steps (schedules), always > 0."""
        return self._lr

    @lr.setter
    def lr(self, value: float) -> None:
        self._lr = _positive(value, "lr", type(self).__name__)

    @property
    def max_grad_norm(self) -> float | None:
        """Clip the grads to this global norm before each step (None: no clipping)."""
        return self._max_grad_norm

    @max_grad_norm.setter
    def max_grad_norm(self, value: float | None) -> None:
        self._max_grad_norm = None if value is None else _positive(value, "max_grad_norm", type(self).__name__)

    def zero_grad(self) -> None:
        """Zero the grad of every parameter (those without a grad are skipped).

        Example::

            opt.zero_grad()
        """
        for p in self.params:
            if p.grad is not None:
                p.grad.zero_()

    def step(self, grad: Sequence[Array] | None = None) -> float | None:
        """Update every parameter in place from its grad; returns the global grad norm before
        clipping when ``max_grad_norm`` is set, else None. ``grad``: Warp's spelling, a list of
        gradient arrays, one per parameter, used instead of the parameters' ``.grad``.

        Example::

            opt.step()
            opt.step([x.grad])       # as warp.optim does
        """
        where = f"{type(self).__name__}.step"
        if grad is None:
            grads = [s.grad(where) for s in self._slots]
        else:
            grads = self._given_grads(grad, where)
        norm = None
        if self._max_grad_norm is not None:
            norm = _clip(self._slots, self._max_grad_norm, where)
        self.step_count += 1
        for s, g in zip(self._slots, grads):
            if s.count:
                self._update(s, g)
                _wrote(s.param)
        return norm

    def _given_grads(self, grad: Any, where: str) -> list[Array]:
        if isinstance(grad, Array) or not isinstance(grad, (list, tuple)) or len(grad) != len(self.params):
            raise ValueError(f"{where}(grad): expected a list of {len(self.params)} arrays, one per parameter, "
                             f"got {type(grad).__name__}")
        if self._max_grad_norm is not None:
            raise ValueError(f"{where}(grad): clipping (max_grad_norm) works on the parameters' .grad; "
                             "call step() without grad")
        flat = []
        for i, (p, g) in enumerate(zip(self.params, grad)):
            if not isinstance(g, Array) or g.dtype is not p.dtype or g.shape != p.shape or g.device != p.device:
                got = _describe(g) if isinstance(g, Array) else type(g).__name__
                raise ValueError(f"{where}(grad): grad[{i}] must be shaped like params[{i}] ({_describe(p)}), "
                                 f"got {got}")
            if not _is_contiguous(g):
                raise ValueError(f"{where}(grad): grad[{i}] is not contiguous")
            flat.append(flat_view(g))
        return flat

    def reset_internal_state(self) -> None:
        """Zero the moment buffers and the step count (Warp's name): the next step is a first step.

        Example::

            opt.reset_internal_state()
        """
        for bufs in self.buffers.values():
            for b in bufs:
                b.zero_()
        self.step_count = 0

    def _update(self, slot: _Slot, grad: Array) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict:
        """Everything needed to resume: the step count, hyperparameters and moment buffers
        (numpy copies, each shaped like its parameter's ``.numpy()``).

        Example::

            saved = opt.state_dict()
            np.savez("opt.npz", **{k: np.asarray(v, dtype=object) for k, v in saved.items()})
        """
        return {"optimizer": type(self).__name__, "step": self.step_count, "lr": self.lr,
                "max_grad_norm": self.max_grad_norm, **self._hyper(),
                "buffers": {name: [b.numpy().reshape(_host_shape(s.param)).copy() for s, b in zip(self._slots, bufs)]
                            for name, bufs in self.buffers.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned, for the same parameters: the next ``step``
        continues exactly where the saved optimizer left off (hyperparameters included).
        Everything is checked before anything changes.

        Example::

            opt = sk.optim.Adam(params, lr=1e-2)
            opt.load_state_dict(saved)
        """
        name = type(self).__name__
        where = f"{name}.load_state_dict"
        if not isinstance(state, dict):
            raise TypeError(f"{where}: expected the dict of state_dict(), got {type(state).__name__}")
        if state.get("optimizer") != name:
            raise ValueError(f"{where}: the state is of optimizer {state.get('optimizer')!r}, not {name!r}")
        # hyperparameters added in later versions (SGD's dampening, ...) take their defaults
        missing = [k for k in ("step", "lr", "max_grad_norm", "buffers") if k not in state]
        if missing:
            raise ValueError(f"{where}: the state lacks {', '.join(repr(k) for k in missing)}")
        step = state["step"]
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"{where}: 'step' must be an int >= 0, got {step!r}")
        lr = _positive(state["lr"], "lr", where)
        max_norm = None if state["max_grad_norm"] is None else _positive(state["max_grad_norm"], "max_grad_norm",
                                                                          where)
        hyper = self._check_hyper(**{h: state[h] for h in self.HYPER if h in state})
        names = self._buffer_names(hyper)
        buffers = state["buffers"]
        if not isinstance(buffers, dict) or set(buffers) != set(names):
            got = sorted(buffers) if isinstance(buffers, dict) else type(buffers).__name__
            raise ValueError(f"{where}: 'buffers' must hold {sorted(names)}, got {got}")
        data: dict[str, list[np.ndarray]] = {}
        for bname in names:
            arrays = buffers[bname]
            if not isinstance(arrays, (list, tuple)) or len(arrays) != len(self.params):
                raise ValueError(f"{where}: buffers[{bname!r}] must hold one array per parameter "
                                 f"({len(self.params)})")
            data[bname] = []
            for i, (s, x) in enumerate(zip(self._slots, arrays)):
                x = np.asarray(x)
                if x.shape != _host_shape(s.param):
                    raise ValueError(f"{where}: buffers[{bname!r}][{i}] has shape {x.shape}, but params[{i}] "
                                     f"({_describe(s.param)}) needs {_host_shape(s.param)}")
                data[bname].append(x)
        self.buffers = {b: self.buffers.get(b) or [s.buffer() for s in self._slots] for b in names}
        for bname, arrays in data.items():
            for b, x in zip(self.buffers[bname], arrays):
                b.assign(x.reshape(-1))
        self.step_count = int(step)
        self.lr, self.max_grad_norm = lr, max_norm
        self.__dict__.update(hyper)

    def __repr__(self) -> str:
        hyper = "".join(f", {k}={v!r}" for k, v in self._hyper().items())
        return f"{type(self).__name__}({len(self.params)} params, lr={self.lr!r}{hyper}, step={self.step_count})"


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (heavy-ball) momentum:
    ``buf = momentum * buf + grad; param -= lr * buf`` (``buf`` starts at zero); without
    momentum, ``param -= lr * grad``. ``dampening``, ``weight_decay`` and ``nesterov`` mean
    what they mean in PyTorch and warp.optim: ``g = grad + weight_decay * param``, the first
    step's ``buf`` is ``g``, later ones ``momentum * buf + (1 - dampening) * g``, and
    Nesterov steps along ``g + momentum * buf``.

    Example::

        opt = sk.optim.SGD([model.springs.ke], lr=0.1, momentum=0.9)
        opt.zero_grad()
        rollout.run(s0)
        opt.step()
    """

    HYPER = ("momentum", "dampening", "weight_decay", "nesterov")

    def __init__(self, params: Params, lr: float = 0.001, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, max_grad_norm: float | None = None):
        super().__init__(params, lr, max_grad_norm, momentum=momentum, dampening=dampening,
                         weight_decay=weight_decay, nesterov=nesterov)

    @staticmethod
    def _check_hyper(momentum: Any = 0.0, dampening: Any = 0.0, weight_decay: Any = 0.0, nesterov: Any = False) -> dict:
        if not isinstance(nesterov, (bool, np.bool_)):
            raise TypeError(f"SGD: nesterov must be True or False, got {nesterov!r}")
        momentum = _unit(momentum, "momentum", "SGD")
        if nesterov and momentum == 0.0:
            raise ValueError("SGD: nesterov=True needs a momentum > 0")
        decay = float(weight_decay) if isinstance(weight_decay, (int, float, np.number)) else None
        if isinstance(weight_decay, bool) or decay is None or not (decay >= 0.0 and np.isfinite(decay)):
            raise ValueError(f"SGD: weight_decay must be a finite number >= 0, got {weight_decay!r}")
        return {"momentum": momentum, "dampening": _unit(dampening, "dampening", "SGD"),
                "weight_decay": decay, "nesterov": bool(nesterov)}

    @staticmethod
    def _buffer_names(hyper: dict) -> tuple[str, ...]:
        # weight decay without momentum still goes through the momentum kernel, which stores its step there
        return ("momentum",) if hyper["momentum"] > 0.0 or hyper["weight_decay"] > 0.0 else ()

    def _update(self, slot: _Slot, grad: Array) -> None:
        k = optim_kernels(slot.real)
        if self.dampening or self.weight_decay or self.nesterov:
            first = self.step_count == 1 or self.momentum == 0.0
            launch(k.sgd_nesterov, slot.count,
                   inputs=[slot.flat, grad, self.buffers["momentum"][slot.index], self.lr, self.momentum,
                           self.dampening, self.weight_decay, int(self.nesterov), int(first)])
        elif self.momentum > 0.0:
            launch(k.sgd_momentum, slot.count,
                   inputs=[slot.flat, grad, self.buffers["momentum"][slot.index], self.lr, self.momentum])
        else:
            launch(k.sgd, slot.count, inputs=[slot.flat, grad, self.lr])


class Adam(Optimizer):
    """Adam (Kingma and Ba 2015): with ``t`` the step count,
    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``param -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``.

    Example::

        opt = sk.optim.Adam([model.triangles.k_mu, s0.particle_qd], lr=1e-2)
        for it in range(50):
            opt.zero_grad()
            rollout.run(s0)
            opt.step()
    """

    HYPER = ("betas", "eps")

    def __init__(self, params: Params, lr: float = 0.001, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, *,
                 max_grad_norm: float | None = None):
        super().__init__(params, lr, max_grad_norm, betas=betas, eps=eps)

    @staticmethod
    def _check_hyper(betas: Any = (0.9, 0.999), eps: Any = 1e-8) -> dict:
        if isinstance(betas, (str, bytes)) or not isinstance(betas, (tuple, list, np.ndarray)) or len(betas) != 2:
            raise ValueError(f"Adam: betas must be a pair (beta1, beta2) of numbers in [0, 1), got {betas!r}")
        return {"betas": (_unit(betas[0], "betas[0]", "Adam"), _unit(betas[1], "betas[1]", "Adam")),
                "eps": _positive(eps, "eps", "Adam")}

    @staticmethod
    def _buffer_names(hyper: dict) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq")

    def _update(self, slot: _Slot, grad: Array) -> None:
        b1, b2 = self.betas
        t = self.step_count
        launch(optim_kernels(slot.real).adam, slot.count,
               inputs=[slot.flat, grad, self.buffers["exp_avg"][slot.index], self.buffers["exp_avg_sq"][slot.index],
                       self.lr, b1, b2, self.eps, 1.0 - b1 ** t, 1.0 - b2 ** t])
