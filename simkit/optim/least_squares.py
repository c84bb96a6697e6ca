"""Least squares: Gauss-Newton and Levenberg-Marquardt on residuals computed by kernels.

Both minimize ``cost = sum(r(theta)**2) + l2 * sum(theta**2)`` over float arrays ``theta``
(the parameters), where ``residuals()`` launches kernels (a rollout, a comparison with
observations) and returns an sk array ``r`` computed from the current contents of the
parameter arrays; ``l2`` (default 0) is a Tikhonov term, e.g. an effort penalty on control
forces, kept out of ``r`` so that ``r`` stays short. The Jacobian ``J = dr/dtheta`` is
built in forward mode, column by column (one :func:`simkit.autograd.jvp` per parameter
component: the cheap direction for the few parameters of an identification problem), or
in reverse mode, row by row (one taped run, then one backward pass per residual: the cheap
direction for many parameters and few residuals, as in a trajectory optimized for its
final state); ``jacobian="auto"`` (the default) takes the one with fewer passes. A step
solves ``(J^T J + l2 I + lambda D) delta = -(J^T r + l2 theta)`` (``D`` the diagonal of
``J^T J + l2 I``, Marquardt's scaling, so the damping does not depend on the parameters'
units).

Example::

    theta = sk.zeros(2, dtype=sk.float64)

    def residuals():
        sk.launch(set_springs, n, inputs=[theta, ...])   # theta -> the model's arrays
        ...                                              # rollout, then r = simulated - observed
        return r

    opt = sk.optim.LevenbergMarquardt([theta], residuals)
    for it in range(10):
        cost = opt.step()
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..autograd.forward import jvp
from ..autograd.tape import Tape
from ..core.array import Array

JACOBIAN_MODES = ("auto", "forward", "reverse")


class LevenbergMarquardt:
    """Levenberg-Marquardt on ``cost = sum(residuals()**2)`` over the float arrays ``params``.

    ``damping`` is the initial ``lambda``; a step that lowers the cost is taken and divides
    it by ``decrease``, one that does not is undone and multiplies it by ``increase``, up to
    ``max_tries`` times per :meth:`step`. ``lambda = 0`` throughout is Gauss-Newton
    (:class:`GaussNewton`). ``jacobian`` is ``"forward"``, ``"reverse"`` or ``"auto"``
    (the mode with fewer passes: forward when there are no more parameter components than
    residuals); ``l2`` adds ``l2 * sum(theta**2)`` to the cost (see the module's
    documentation).

    Example::

        opt = sk.optim.LevenbergMarquardt([theta], residuals, damping=1e-3)
        for it in range(10):
            cost = opt.step()          # the cost before the step
        opt.cost                       # after the last accepted step
    """

    def __init__(self, params: Sequence[Array], residuals: Callable[[], Array], damping: float = 1e-3,
                 increase: float = 10.0, decrease: float = 3.0, max_tries: int = 8, *, jacobian: str = "auto",
                 l2: float = 0.0):
        params = list(params)
        if not params:
            raise ValueError("LevenbergMarquardt needs at least one parameter array")
        for k, p in enumerate(params):
            if not isinstance(p, Array) or not getattr(getattr(p.dtype, "_sk_scalar", None), "is_float", False):
                raise TypeError(f"LevenbergMarquardt: params[{k}] must be a float sk array, got "
                                f"{type(p).__name__ if not isinstance(p, Array) else p.dtype.__name__}")
        if not callable(residuals):
            raise TypeError(f"LevenbergMarquardt: residuals must be a callable returning an sk array, "
                            f"got {type(residuals).__name__}")
        if not (damping >= 0 and increase > 1 and decrease >= 1 and max_tries >= 1):
            raise ValueError("LevenbergMarquardt: damping >= 0, increase > 1, decrease >= 1 and max_tries >= 1 "
                             f"(got {damping}, {increase}, {decrease}, {max_tries})")
        if jacobian not in JACOBIAN_MODES:
            raise ValueError(f"LevenbergMarquardt: jacobian must be one of {', '.join(JACOBIAN_MODES)}, got "
                             f"{jacobian!r}")
        if isinstance(l2, bool) or not isinstance(l2, (int, float)) or not 0.0 <= l2 < float("inf"):
            raise ValueError(f"LevenbergMarquardt: l2 must be a finite number >= 0, got {l2!r}")
        self.params = params
        self.residuals = residuals
        self.jacobian, self.l2 = jacobian, float(l2)
        self._residual_count: int | None = None
        self.damping = float(damping)
        self.increase, self.decrease, self.max_tries = float(increase), float(decrease), int(max_tries)
        self.cost: float | None = None
        self.sizes = [p.numpy().size for p in params]

    # -- pieces ---------------------------------------------------------------------
    def _values(self) -> np.ndarray:
        return np.concatenate([p.numpy().astype(np.float64).reshape(-1) for p in self.params])

    def _assign(self, x: np.ndarray) -> None:
        at = 0
        for p, n in zip(self.params, self.sizes):
            p.assign(x[at:at + n].reshape(p._host_shape))
            at += n

    def _evaluate(self) -> np.ndarray:
        r = self.residuals()
        if not isinstance(r, Array):
            raise TypeError(f"residuals() must return an sk array, got {type(r).__name__}")
        return r.numpy().astype(np.float64).reshape(-1).copy()

    def linearize(self) -> tuple[np.ndarray, np.ndarray]:
        """``(r, J)`` at the current parameters: one forward-mode run per parameter component,
        or one taped run and a backward pass per residual (see ``jacobian``)."""
        mode = self.jacobian
        if mode == "auto":
            if self._residual_count is None:   # one plain run, once: the count does not change
                self._residual_count = self._evaluate().size
            mode = "forward" if sum(self.sizes) <= self._residual_count else "reverse"
        return self._linearize_forward() if mode == "forward" else self._linearize_reverse()

    def _linearize_forward(self) -> tuple[np.ndarray, np.ndarray]:
        n = sum(self.sizes)
        cols, r = [], None
        for c in range(n):
            seed = np.zeros(n)
            seed[c] = 1.0
            tangents, at = [], 0
            for p, size in zip(self.params, self.sizes):
                tangents.append(seed[at:at + size].reshape(p._host_shape))
                at += size
            out, tan = jvp(lambda *_p: self.residuals(), self.params, tangents)
            if not isinstance(out, Array):
                raise TypeError(f"residuals() must return an sk array, got {type(out).__name__}")
            r = out.numpy().astype(np.float64).reshape(-1).copy()
            cols.append(tan.numpy().astype(np.float64).reshape(-1))
        return r, np.stack(cols, axis=1)

    def _linearize_reverse(self) -> tuple[np.ndarray, np.ndarray]:
        wanted = [p.requires_grad for p in self.params]
        for p in self.params:
            p.requires_grad = True
        try:
            tape = Tape()
            with tape:
                out = self.residuals()
            if not isinstance(out, Array):
                raise TypeError(f"residuals() must return an sk array, got {type(out).__name__}")
            r = out.numpy().astype(np.float64).reshape(-1).copy()
            rows = []
            for k in range(r.size):
                seed = np.zeros(r.size)
                seed[k] = 1.0
                tape.zero()
                tape.backward(grads={out: seed.reshape(out._host_shape)})
                rows.append(np.concatenate([p.grad.numpy().astype(np.float64).reshape(-1) for p in self.params]))
            tape.zero()
        finally:
            for p, w in zip(self.params, wanted):
                p.requires_grad = w
        return r, np.stack(rows, axis=0)

    def solve(self, r: np.ndarray, J: np.ndarray, damping: float, x: np.ndarray | None = None) -> np.ndarray:
        """The step ``delta`` of ``(J^T J + l2 I + damping D) delta = -(J^T r + l2 x)`` at parameters ``x``."""
        A = J.T @ J + self.l2 * np.eye(J.shape[1])
        g = J.T @ r + (self.l2 * x if self.l2 and x is not None else 0.0)
        D = np.diag(np.maximum(np.diag(A), 1e-12 * max(np.max(np.diag(A)), 1e-300)))
        return np.linalg.lstsq(A + damping * D, -g, rcond=None)[0]

    def _cost(self, r: np.ndarray, x: np.ndarray) -> float:
        return float(r @ r + self.l2 * (x @ x))

    # -- one iteration ------------------------------------------------------------------
    def step(self) -> float:
        """One iteration; returns the cost before it (``self.cost`` holds the cost after)."""
        x = self._values()
        r, J = self.linearize()
        cost = self._cost(r, x)
        for _ in range(self.max_tries):
            trial = x + self.solve(r, J, self.damping, x)
            self._assign(trial)
            new = self._evaluate()
            new_cost = self._cost(new, trial)
            if np.isfinite(new_cost) and new_cost < cost:
                self.damping /= self.decrease
                self.cost = new_cost
                return cost
            self._reject()
        self._assign(x)  # no try lowered the cost: stay
        self.cost = cost
        return cost

    def _reject(self) -> None:
        self.damping = self.damping * self.increase if self.damping > 0 else 1e-6


class GaussNewton(LevenbergMarquardt):
    """Gauss-Newton on ``cost = sum(residuals()**2)``: the undamped step ``J^T J delta = -J^T r``,
    halved until it lowers the cost (at most ``max_tries`` times per :meth:`step`).

    Example::

        opt = sk.optim.GaussNewton([theta], residuals)
        for it in range(5):
            cost = opt.step()
    """

    def __init__(self, params: Sequence[Array], residuals: Callable[[], Array], max_tries: int = 8, *,
                 jacobian: str = "auto", l2: float = 0.0):
        super().__init__(params, residuals, damping=0.0, max_tries=max_tries, jacobian=jacobian, l2=l2)
        self._scale = 1.0

    def solve(self, r: np.ndarray, J: np.ndarray, damping: float, x: np.ndarray | None = None) -> np.ndarray:
        return self._scale * super().solve(r, J, 0.0, x)

    def step(self) -> float:
        self._scale = 1.0
        return super().step()

    def _reject(self) -> None:
        self._scale *= 0.5
