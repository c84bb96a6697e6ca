"""Jacobians of one kernel launch: from the generated adjoint, by central differences, and compared.

``jacobian(kernel, dim, inputs, outputs)`` answers "what does the adjoint of this
launch compute?" as plain matrices, one per (input, output) pair of float arrays;
``jacobian_fd`` answers "what should it compute?" by finite differences, and
``gradcheck`` compares the two and names the worst entry.

Layout: an array's components are counted in the order of its ``.numpy()`` view
(``shape + dtype shape``, C order), so an array of N ``vec3`` has 3N components,
component ``3*i + c`` being ``a[i][c]``. ``J[(i, o)]`` has shape
``(components of outputs[o], components of inputs[i])`` and is float64.

What happens to the caller's arrays (the same for all three functions):

- every launch runs on private copies of the array arguments, so ``inputs`` are
  never written (bit-identical afterwards, even if the kernel writes into one of
  them) and the caller's ``.grad`` buffers and ``requires_grad`` flags are never
  read, written or toggled;
- afterwards each array in ``outputs`` holds what one ``sk.launch`` from its
  initial contents would have left there (a kernel that accumulates with
  ``atomic_add`` adds once, not once per evaluation);
- arrays held inside ``@sk.struct`` arguments are constants of the Jacobian: their
  grads are detached while the adjoints run (so they neither receive nor feed
  gradient), they are reset before every finite-difference evaluation, and they end
  as one forward launch leaves them;
- nothing is recorded on an active ``sk.Tape``.

The analytic Jacobian is evaluated where a Tape would evaluate it: the forward runs
once and every adjoint launch then sees the arrays as that forward left them. A
kernel whose adjoint is wrong at that state (e.g. one that overwrites a value it
read) therefore shows up in ``gradcheck``, exactly as it would in ``tape.backward``.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple, Sequence, Union, overload

import numpy as np

from ..core import launch as _launch
from ..core import types as T
from ..core.array import Array, _refuse_in_capture, as_array
from ..core.errors import CompileError
from ..core.struct import is_struct_instance
from .components import _component_at, _component_shape, _components, _set_component
from .function_jacobian import function_jacobian

MaskKey = Union[int, str]
"""An argument named by its parameter name or by its position in ``inputs`` / ``outputs``."""
Mask = Sequence[tuple[MaskKey, MaskKey]]
Jacobians = dict[tuple[int, int], np.ndarray]

__all__ = ["jacobian", "jacobian_fd", "gradcheck", "GradcheckResult", "WorstEntry"]


def _kind(t: Any) -> str | None:
    return getattr(t, "_sk_kind", None)


def _is_float_array(t: Any) -> bool:
    return _kind(t) == "array" and T.holds_floats(t.dtype)


def _describe_type(t: Any) -> str:
    kind = _kind(t)
    if kind == "array":
        return f"an array of {T.type_name(t.dtype)}"
    if kind == "struct":
        return f"a struct {t.__name__}"
    name = T.type_name(t)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name} value"


def _element(name: str, ndim: int, np_shape: tuple, flat: int) -> str:
    """``flat`` component of an array as text: ``x[4]``, ``p[2][1]`` (element 2, component 1)."""
    idx = [int(k) for k in np.unravel_index(flat, np_shape)] if np_shape else []
    text = f"{name}[{', '.join(map(str, idx[:ndim]))}]"
    if len(idx) > ndim:
        text += f"[{', '.join(map(str, idx[ndim:]))}]"
    return text


class _Problem:
    """One launch to differentiate: private copies of its arrays, the resolved mask, cleanup."""

    def __init__(self, caller: str, kernel: Any, dim: Any, inputs: Sequence, outputs: Sequence,
                 mask: Mask | None):
        names = getattr(kernel, "arg_names", None)
        types = getattr(kernel, "arg_types", None)
        if names is None or types is None:
            raise TypeError(f"{caller} expects an @sk.kernel, got {type(kernel).__name__}")
        inputs, outputs = list(inputs), list(outputs)
        if getattr(kernel, "generic", False) and len(inputs) + len(outputs) == len(names):
            kernel = kernel.instance_for(inputs + outputs)  # the overload sk.launch would run
            types = kernel.arg_types
        if len(inputs) + len(outputs) != len(names):
            raise TypeError(f"{caller}: {kernel.name}() takes {len(names)} argument(s) ({', '.join(names)}), "
                            f"got {len(inputs)} input(s) and {len(outputs)} output(s)")
        self.caller, self.kernel, self.dim = caller, kernel, dim
        self.names = list(names)
        self.types = [types[n] for n in names]
        self.n_in = len(inputs)
        self.n_out = len(outputs)
        self.pairs = self._resolve_mask(mask)

        # Private copies of every array argument; one copy per object passed, so an
        # array given twice stays one array.
        self.values: list = []
        self.copies: list[Array] = []
        self.published: list[tuple[Array, Array]] = []
        by_id: dict[int, tuple[Array, Array]] = {}
        for k, (name, t, v) in enumerate(zip(self.names, self.types, inputs + outputs)):
            if _kind(t) != "array":
                self.values.append(v)
                continue
            if id(v) not in by_id:
                user = as_array(v, t, name)  # numpy / torch: zero-copy wrapper
                copy = user.clone(requires_grad=False)
                if T.holds_floats(copy.dtype):
                    copy.requires_grad = True
                by_id[id(v)] = (user, copy)
                self.copies.append(copy)
            user, copy = by_id[id(v)]
            self.values.append(copy)
            if k >= self.n_in:
                self.published.append((user, copy))
        self.initial = [c.numpy().copy() for c in self.copies]

        struct_arrays: dict[int, Array] = {}
        for v in self.values:
            if is_struct_instance(v):
                for _path, a in v._sk_arrays():
                    struct_arrays[id(a)] = a
        self.struct_initial = [(a, a.numpy().copy()) for a in struct_arrays.values()]

    # -- the mask -------------------------------------------------------------------
    def _resolve_mask(self, mask: Mask | None) -> list[tuple[int, int]]:
        if mask is None:
            ins = [k for k in range(self.n_in) if _is_float_array(self.types[k])]
            outs = [k for k in range(self.n_out) if _is_float_array(self.types[self.n_in + k])]
            return [(i, o) for i in ins for o in outs]
        pairs: list[tuple[int, int]] = []
        for entry in mask:
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise ValueError(f"{self.caller}: input_output_mask takes (input, output) pairs, got {entry!r}")
            pair = (self._resolve(entry[0], output=False), self._resolve(entry[1], output=True))
            if pair not in pairs:
                pairs.append(pair)
        return pairs

    def _resolve(self, entry: Any, output: bool) -> int:
        side = "output" if output else "input"
        lo, n = (self.n_in, self.n_out) if output else (0, self.n_in)
        kname = self.kernel.name
        valid = [f"{k} ('{self.names[lo + k]}')" for k in range(n) if _is_float_array(self.types[lo + k])]
        valid_text = (f"valid {side}s: {', '.join(valid)}" if valid
                      else f"no {side} of {kname}() is a float array")
        if isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
            k = int(entry)
            if not 0 <= k < n:
                raise ValueError(f"{self.caller}: {side} index {k} is out of range ({kname}() was given {n} "
                                 f"{side}(s)); {valid_text}")
        elif isinstance(entry, str):
            matches = [k for k in range(n) if self.names[lo + k] == entry]
            if not matches:
                if entry in self.names:
                    other = "an input" if output else "an output"
                    raise ValueError(f"{self.caller}: '{entry}' is {other} of {kname}(), not an {side}; "
                                     f"{valid_text}")
                raise ValueError(f"{self.caller}: {kname}() has no {side} named '{entry}'; {valid_text}")
            k = matches[0]
        else:
            raise ValueError(f"{self.caller}: an {side} in input_output_mask is an argument name or an integer "
                             f"index, got {entry!r} ({type(entry).__name__}); {valid_text}")
        t = self.types[lo + k]
        if not _is_float_array(t):
            if _kind(t) == "array":
                why = "integer data carries no gradient"
            elif _kind(t) == "struct":
                why = "arrays inside structs are held constant; pass one as an array argument to differentiate it"
            else:
                why = "non-array arguments get no gradient from an adjoint launch"
            raise ValueError(f"{self.caller}: {side} {k} ('{self.names[lo + k]}') is {_describe_type(t)}, and only "
                             f"float arrays have a Jacobian ({why}); {valid_text}")
        return k

    # -- running --------------------------------------------------------------------
    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Hide struct-held grads and any active Tape while the launches run; put all back after."""
        _refuse_in_capture(f"{self.caller}()")
        hooks = _launch.hooks
        saved_hooks = list(hooks)
        hooks.clear()
        detached = [(a, a.grad) for a, _d in self.struct_initial if a.grad is not None]
        for a, _g in detached:
            a.grad = None
        done = False
        try:
            yield
            done = True
        finally:
            for a, g in detached:
                a.grad = g
            if not done:  # nothing half-written: struct arrays go back to how they came in
                for a, data in self.struct_initial:
                    a._write(data)
            hooks[:] = saved_hooks

    def restore(self) -> None:
        """Every array (private copies and struct fields) back to its contents before the call."""
        for c, data in zip(self.copies, self.initial):
            c._write(data)
        for a, data in self.struct_initial:
            a._write(data)

    def forward(self) -> None:
        _launch.launch(self.kernel, self.dim, self.values)

    def finish(self) -> None:
        """Leave the caller's outputs (and struct fields) as one forward launch leaves them."""
        self.restore()
        self.forward()
        for user, copy in self.published:
            user.assign(copy)

    def array(self, k: int) -> Array:
        return self.values[k]

    def empty_jacobians(self) -> Jacobians:
        return {(i, o): np.zeros((math.prod(_component_shape(self.array(self.n_in + o))),
                                  math.prod(_component_shape(self.array(i)))))
                for i, o in self.pairs}

    def analytic(self) -> Jacobians:
        """One adjoint launch per output component, each seeded with a one-hot grad."""
        jac = self.empty_jacobians()
        self.restore()
        self.forward()
        for o in dict.fromkeys(o for _i, o in self.pairs):
            ins = [i for i, oo in self.pairs if oo == o]
            grad = self.array(self.n_in + o).grad
            seed = np.zeros(grad._host_shape, grad._np_dtype)
            for row in range(math.prod(_component_shape(grad))):
                for c in self.copies:
                    if c.grad is not None:
                        c.grad._write(0)
                _set_component(seed, grad.dtype, row, 1)
                grad._write(seed)
                _set_component(seed, grad.dtype, row, 0)
                _launch.launch(self.kernel, self.dim, self.values, adjoint=True)
                for i in ins:
                    jac[(i, o)][row] = _components(self.array(i).grad)
        return jac

    def tangents(self) -> Jacobians:
        """One tangent launch per input component, each seeded with a one-hot tangent
        (forward mode, simkit.autograd.forward), from restored arrays."""
        from .forward import JVP

        jac = self.empty_jacobians()
        for i in dict.fromkeys(i for i, _o in self.pairs):
            outs = [o for ii, o in self.pairs if ii == i]
            arr = self.array(i)
            seed = np.zeros(arr._host_shape, arr._np_dtype)
            for col in range(math.prod(_component_shape(arr))):
                self.restore()
                _set_component(seed, arr.dtype, col, 1)
                with JVP({arr: seed}) as fwd:
                    self.forward()
                _set_component(seed, arr.dtype, col, 0)
                for o in outs:
                    jac[(i, o)][:, col] = _components(fwd.tangent(self.array(self.n_in + o)))
        return jac

    def components(self, side: int) -> int:
        """Float components of the inputs (``side`` 0) or outputs (1) the pairs involve."""
        ks = dict.fromkeys(p[side] + (self.n_in if side else 0) for p in self.pairs)
        return sum(math.prod(_component_shape(self.array(k))) for k in ks)

    def numeric(self, eps: float) -> Jacobians:
        """Central differences: two forward launches per input component, from restored arrays."""
        if not (isinstance(eps, (int, float, np.floating)) and math.isfinite(eps) and eps > 0):
            raise ValueError(f"{self.caller}: eps must be a positive finite number, got {eps!r}")
        jac = self.empty_jacobians()
        for i in dict.fromkeys(i for i, _o in self.pairs):
            outs = [o for ii, o in self.pairs if ii == i]
            arr = self.array(i)
            x = self.initial[self.copies.index(arr)].copy()
            shape = _component_shape(arr)
            for col in range(math.prod(shape)):
                taken = []
                for step in (eps, -eps):
                    self.restore()
                    x0 = _component_at(x, arr.dtype, col)
                    at = _set_component(x, arr.dtype, col, x0 + step)  # as stored (float32 rounds it)
                    arr._write(x)
                    _set_component(x, arr.dtype, col, x0)
                    self.forward()
                    taken.append((at, [_components(self.array(self.n_in + o)) for o in outs]))
                (x_plus, f_plus), (x_minus, f_minus) = taken
                h = x_plus - x_minus
                if h == 0:
                    t = self.types[i]
                    raise ValueError(f"{self.caller}: eps={eps} does not change "
                                     f"{_element(self.names[i], t.ndim, shape, col)} = {x_plus} in "
                                     f"{T.type_name(t.dtype)}; use a larger eps")
                for o, a, b in zip(outs, f_plus, f_minus):
                    jac[(i, o)][:, col] = (a - b) / h
        return jac


@overload
def jacobian(kernel: Any, dim: Any, inputs: Sequence, outputs: Sequence,
             input_output_mask: Mask | None = None, mode: str = "auto") -> Jacobians: ...
@overload
def jacobian(fn: Callable, inputs: Sequence[Array], outputs: Sequence[Array], mode: str = "auto") -> np.ndarray: ...


def jacobian(kernel: Any, *args: Any, **kwargs: Any) -> Jacobians | np.ndarray:
    """The Jacobians of one launch, computed with the kernel's generated adjoint or tangent;
    or, given a Python function of launches instead of a kernel (an integrator step, say),
    ``jacobian(fn, inputs, outputs, mode="auto")``: the Jacobian of its ``outputs`` arrays with
    respect to its ``inputs`` arrays as one dense matrix (rows: the outputs' components
    stacked, columns: the inputs'; :func:`~simkit.autograd.jacobian_blocks` cuts it per pair;
    see :mod:`simkit.autograd.function_jacobian`).

    Returns ``{(input_index, output_index): J}`` where ``J[r, c]`` is the derivative
    of component ``r`` of ``outputs[output_index]`` with respect to component ``c`` of
    ``inputs[input_index]`` (components in ``.numpy()`` order, float64 matrix).

    ``input_output_mask`` lists the (input, output) pairs wanted; each side is an
    argument name or an integer index into ``inputs`` / ``outputs``, mixed freely.
    By default every float array input is paired with every float array output.
    Only float arrays have a Jacobian: naming anything else, or a name or index that
    does not exist, raises ``ValueError`` listing the valid choices. The keys of the
    result are always integer indices.

    The caller's inputs and grads are left untouched and its outputs hold the result
    of one forward launch (see the module docstring).

    ``mode``: ``"reverse"`` runs one adjoint launch per output component (plus one
    forward), ``"forward"`` one tangent launch per input component (column by column,
    simkit.autograd.forward), ``"auto"`` (default) the forward mode when the inputs
    have fewer components than the outputs, and the reverse mode otherwise or when the
    kernel has no tangent (a builtin without a tangent rule, atomic_min/max on floats).

    Example::

        @sk.kernel
        def scale(x: sk.array(dtype=sk.float64), a: sk.array(dtype=sk.float64),
                  y: sk.array(dtype=sk.float64)):
            i = sk.tid()
            y[i] = sk.sin(x[i]) * a[i]

        J = sk.autograd.jacobian(scale, n, inputs=[x, a], outputs=[y],
                                 input_output_mask=[("x", "y"), (1, 0)])
        J[(0, 0)]   # diag(cos(x) * a)

        # a function of launches: one Featherstone step, w.r.t. its state and control
        J = sk.autograd.jacobian(lambda: integrator.step(model, s0, s1, control, dt),
                                 inputs=[s0.joint_q, s0.joint_qd, control.joint_act],
                                 outputs=[s1.joint_q, s1.joint_qd])
    """
    if getattr(kernel, "arg_names", None) is None and callable(kernel):
        return function_jacobian(kernel, *args, **kwargs)
    return _kernel_jacobian(kernel, *args, **kwargs)


def _kernel_jacobian(kernel: Any, dim: Any, inputs: Sequence, outputs: Sequence,
                     input_output_mask: Mask | None = None, mode: str = "auto") -> Jacobians:
    if mode not in ("auto", "forward", "reverse"):
        raise ValueError(f"jacobian: mode must be 'auto', 'forward' or 'reverse', got {mode!r}")
    problem = _Problem("jacobian", kernel, dim, inputs, outputs, input_output_mask)
    with problem.session():
        if mode == "auto" and problem.pairs and problem.components(0) < problem.components(1):
            try:
                problem.kernel.tangent_loaded()
                mode = "forward"
            except CompileError:
                mode = "reverse"  # no tangent rule for something in it; the adjoint gives the same matrices
        jac = problem.tangents() if mode == "forward" else problem.analytic()
        problem.finish()
    return jac


def jacobian_fd(kernel: Any, dim: Any, inputs: Sequence, outputs: Sequence,
                input_output_mask: Mask | None = None, eps: float = 1e-4) -> Jacobians:
    """The Jacobians of one launch by central differences; same arguments and result as :func:`jacobian`.

    Each input component is moved by ``+eps`` and ``-eps`` (an absolute step) and
    the kernel run forward from the arrays' initial contents each time (outputs
    included, so accumulating kernels are handled); the step actually taken is read
    back after rounding to the array's dtype. Use float64 kernels for accurate
    differences: in float32 the rounding error is of order ``1e-7 * |y| / eps``.
    Costs two forward launches per input component.

    Example::

        Jn = sk.autograd.jacobian_fd(scale, n, inputs=[x, a], outputs=[y], eps=1e-6)
    """
    problem = _Problem("jacobian_fd", kernel, dim, inputs, outputs, input_output_mask)
    with problem.session():
        jac = problem.numeric(eps)
        problem.finish()
    return jac


class WorstEntry(NamedTuple):
    """The Jacobian entry where the adjoint and finite differences disagree most."""

    input_index: int
    input_name: str
    output_index: int
    output_name: str
    row: int                 # output component (row of the Jacobian)
    col: int                 # input component (column of the Jacobian)
    output_element: str      # the row as an element, e.g. "y[3][1]" (element 3, component 1)
    input_element: str       # the column as an element, e.g. "x[3]"


@dataclass(repr=False)
class GradcheckResult:
    """What :func:`gradcheck` found. ``bool(result)`` is ``result.ok``.

    ``worst`` is the entry with the largest ``|analytic - numeric| - (atol + rtol *
    |numeric|)`` (reported even when every entry passes; ``None`` if nothing was
    compared), ``analytic`` and ``numeric`` are the two values there,
    ``max_abs_error`` is the largest ``|analytic - numeric|`` over all entries and
    ``failed`` how many entries are outside the tolerance (a NaN on either side
    counts as outside). The full matrices are in ``analytic_jacobian`` and
    ``numeric_jacobian``.
    """

    ok: bool
    worst: WorstEntry | None
    analytic: float | None
    numeric: float | None
    max_abs_error: float
    failed: int = 0
    checked: int = 0
    kernel_name: str = ""
    eps: float = 1e-4
    atol: float = 1e-5
    rtol: float = 1e-3
    analytic_jacobian: Jacobians = field(default_factory=dict)
    numeric_jacobian: Jacobians = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        head = f"gradcheck({self.kernel_name})"
        if self.worst is None:
            return f"{head}: ok (no Jacobian entries to compare)"
        w = self.worst
        where = (f"d {w.output_element} / d {w.input_element} (output {w.output_index} '{w.output_name}' row "
                 f"{w.row}, input {w.input_index} '{w.input_name}' col {w.col})")
        tol = self.atol + self.rtol * abs(self.numeric)
        values = f"analytic {self.analytic:.9g}, numeric {self.numeric:.9g}"
        if self.ok:
            return (f"{head}: ok, {self.checked} entries agree (max |analytic - numeric| = "
                    f"{self.max_abs_error:.3g}); closest to the tolerance: {where}: {values}")
        return (f"{head}: MISMATCH in {self.failed} of {self.checked} entries; worst {where}: {values}, "
                f"|difference| {abs(self.analytic - self.numeric):.6g} > tolerance {tol:.6g} "
                f"(atol {self.atol:g} + rtol {self.rtol:g} * |numeric|); "
                f"max |analytic - numeric| = {self.max_abs_error:.6g}")

    def __repr__(self) -> str:
        return (f"GradcheckResult(ok={self.ok}, worst={self.worst!r}, analytic={self.analytic!r}, "
                f"numeric={self.numeric!r}, max_abs_error={self.max_abs_error!r}, failed={self.failed}, "
                f"checked={self.checked})")


def gradcheck(kernel: Any, dim: Any, inputs: Sequence, outputs: Sequence, eps: float = 1e-4, atol: float = 1e-5,
              rtol: float = 1e-3, input_output_mask: Mask | None = None) -> GradcheckResult:
    """Compare :func:`jacobian` with :func:`jacobian_fd` entry by entry; never raises on a mismatch.

    An entry passes when ``|analytic - numeric| <= atol + rtol * |numeric|``. The
    result says whether all pass and which entry is worst (see
    :class:`GradcheckResult`); print it for a readable report. The caller's arrays
    are treated as by :func:`jacobian` (outputs end as one forward launch leaves them).
    The defaults suit float64 kernels; float32 needs a larger ``eps`` and ``atol``.

    Example::

        result = sk.autograd.gradcheck(scale, n, inputs=[x, a], outputs=[y])
        assert result.ok, str(result)
    """
    problem = _Problem("gradcheck", kernel, dim, inputs, outputs, input_output_mask)
    with problem.session():
        analytic = problem.analytic()
        numeric = problem.numeric(eps)
        problem.finish()

    worst, worst_excess = None, -math.inf
    failed = checked = 0
    max_abs = 0.0
    for (i, o), a in analytic.items():
        n = numeric[(i, o)]
        if a.size == 0:
            continue
        diff = np.abs(a - n)
        excess = diff - (atol + rtol * np.abs(n))
        excess = np.where(np.isnan(excess), np.inf, excess)
        checked += a.size
        failed += int(np.count_nonzero(excess > 0))
        block_max = float(np.max(diff))  # NaN if either side has one
        max_abs = block_max if math.isnan(block_max) or block_max > max_abs else max_abs
        row, col = (int(k) for k in np.unravel_index(int(np.argmax(excess)), excess.shape))
        if worst is None or excess[row, col] > worst_excess:
            worst_excess = float(excess[row, col])
            out_k = problem.n_in + o
            out_t, in_t = problem.types[out_k], problem.types[i]
            worst = (WorstEntry(i, problem.names[i], o, problem.names[out_k], row, col,
                                _element(problem.names[out_k], out_t.ndim, _component_shape(problem.array(out_k)), row),
                                _element(problem.names[i], in_t.ndim, _component_shape(problem.array(i)), col)),
                     float(a[row, col]), float(n[row, col]))
    entry, a_val, n_val = worst if worst is not None else (None, None, None)
    return GradcheckResult(ok=failed == 0, worst=entry, analytic=a_val, numeric=n_val, max_abs_error=max_abs,
                           failed=failed, checked=checked, kernel_name=kernel.name, eps=eps, atol=atol, rtol=rtol,
                           analytic_jacobian=analytic, numeric_jacobian=numeric)
