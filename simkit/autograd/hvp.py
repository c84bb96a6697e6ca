"""Hessian-vector products of a scalar loss of launches and rollouts (forward-over-reverse).

``hvp(fn, inputs, vectors)`` runs ``fn`` once in forward mode along ``vectors`` (tangent
launches, simkit.autograd.forward) while a Tape records it, then replays the tape's
adjoints as *second-order* launches: each kernel's adjoint compiled over dual numbers
(simkit/core/codegen_hvp.py), which reads every value with its tangent and accumulates
every adjoint with its tangent. The adjoints are the gradient; their tangents are
``H v``, the Hessian of the loss times ``v``, exact to rounding (no finite differences).

Why forward-over-reverse: the adjoint code (replay, builtin adjoint rules, custom
adjoints, dynamic loops) already exists as C++ templates over the float type, so a dual
number type differentiates all of it at once. Reverse-over-forward would need an adjoint
for every tangent rule, a second set of hand-written rules.

Example::

    x = sk.array([0.5, 1.0], dtype=sk.float64)
    loss = sk.zeros(1, dtype=sk.float64)

    def f(x):
        loss.zero_()
        sk.launch(sum_of_cubes, 2, inputs=[x], outputs=[loss])   # loss = sum x^3
        return loss

    loss, (g,), (hv,) = sk.autograd.hvp(f, [x], [np.array([1.0, 0.0])])
    # g = 3 x^2, hv = 6 x * v = [3, 0]
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Sequence

from ..core import compiler
from ..core import launch as _launch
from ..core.array import Array, _zeros_laid_out_like
from ..core.errors import CompileError, NativeCompileError
from ..core.kernel_errors import ErrorRecord, raise_kernel_error
from ..core.launch import Job, grain_of, SCATTER_MIN_THREADS
from ..core.private import PrivateTarget, descriptors
from .forward import JVP, _is_float
from .tape import Tape, _Func, accumulate


class _HvpJob:
    """One kernel's second-order CPU launch: the entry, its two-struct argument buffer and error record."""

    def __init__(self, kernel, plan):
        try:
            lib, fir, _path = kernel.hvp_loaded()
        except NativeCompileError as e:
            first = next((ln for ln in str(e).splitlines() if "error" in ln), str(e).strip().splitlines()[0])
            f = kernel.build_ir()
            raise CompileError(
                "its adjoint could not be compiled over dual numbers, so hvp cannot differentiate it a second time "
                f"(an operation without a dual form; the C++ compiler said: {first.strip()[:300]})",
                f.file, f.line, f.source_lines.get(f.line, ""), f"in kernel '{kernel.name}'") from None
        self.size = ctypes.sizeof(plan.Args)
        self.words = self.size // 8
        self.buf = (ctypes.c_int64 * (2 * self.words))()
        get_error = lib.sk_get_error
        get_error.restype = ctypes.POINTER(ErrorRecord)
        self.error = get_error().contents
        self.fir = fir
        fn = ctypes.cast(getattr(lib, f"{fir.cname}_cpu_hvp"), ctypes.c_void_p).value
        # adjoints accumulate alike in both halves: a private copy for each (core/private.py)
        priv = descriptors(fir, plan.Args, True)
        if priv is not None:
            both = list(priv) + [PrivateTarget(p.offset + self.size, p.grad, p.ndim, p.scalar, p.elem_bytes)
                                 for p in priv]
            priv = (PrivateTarget * len(both))(*both)
        self.priv = priv  # the job points into it
        scatters = ctypes.c_int.in_dll(lib, f"{fir.cname}_cpu_hvp_scatters").value
        self.job = Job(fn, ctypes.addressof(self.buf), 2 * self.size, grain_of(fir, True),
                       SCATTER_MIN_THREADS if scatters and priv is None else 2,
                       ctypes.addressof(priv) if priv is not None and len(priv) else None,
                       -1 if priv is None else len(priv), ctypes.addressof(self.error),
                       ctypes.addressof(plan.extent_pairs), len(plan.extent_pairs) // 2 if plan.extents else 0,
                       plan.crash_label)


class _SecondOrder:
    """The launch hook of the reverse sweep: runs each adjoint launch as a second-order launch."""

    def __init__(self, fwd: JVP):
        self.fwd = fwd
        self.adj_tan: dict[int, tuple[Array, Array]] = {}  # id(array) -> (array, tangent of its adjoint)

    def adjoint_tangent(self, a: Array) -> Array:
        entry = self.adj_tan.get(id(a))
        if entry is None:
            entry = self.adj_tan[id(a)] = (a, Array(_zeros_laid_out_like(a._np), a.dtype, a.shape, a.device))
        return entry[1]

    def copied_adjoint(self, dst: Array, src: Array | None) -> None:
        """The reverse sweep passed a copy ``dst = src`` (None: host data): the tangent of dst's
        adjoint moves to src's, as its adjoint did."""
        entry = self.adj_tan.get(id(dst))
        if entry is None:
            return
        if src is not None and src.grad is not None:
            accumulate(self.adjoint_tangent(src), entry[1])
        entry[1]._write(0)

    def intercept(self, kernel, plan, dim, values: Sequence, device, adjoint: bool) -> bool:
        if not adjoint:
            return False
        dev = _launch.launch_device(plan, values, device)  # packs the arguments for a CPU launch
        if dev != "cpu":
            raise NotImplementedError(f"hvp: kernel '{kernel.name}' runs on {dev}; Hessian-vector products run on "
                                      "the CPU only (move the arrays with .to('cpu'))")
        job = getattr(plan, "_hvp", None)
        if job is None:
            job = plan._hvp = _HvpJob(kernel, plan)
        if not plan.set_bounds(dim):
            return True
        buf, words = job.buf, job.words
        ctypes.memmove(ctypes.addressof(buf), plan.base, job.size)
        ctypes.memmove(ctypes.addressof(buf) + job.size, plan.base, job.size)
        for k, path, word in plan.array_slots():
            a = values[k]
            for f in path:
                a = getattr(a, f, None)
            t_data = t_grad = 0
            if type(a) is Array and _is_float(a):
                tan = self.fwd._tan.get(id(a))
                if tan is not None:
                    t_data = tan[2]
                if a.grad is not None and a.size:
                    t_grad = self.adjoint_tangent(a)._ptr
            buf[words + word - 1] = t_data  # the header's data word precedes its grad word
            buf[words + word] = t_grad
        compiler.runtime().sk_launch(ctypes.byref(job.job))
        if job.error.code:
            record = ErrorRecord.from_buffer_copy(job.error)
            ctypes.memset(ctypes.addressof(job.error), 0, ctypes.sizeof(job.error))
            raise_kernel_error(kernel, job.fir, record, "cpu")
        return True


def hvp(fn: Callable[..., Any], inputs: Sequence[Array], vectors: Sequence[Any]) -> tuple[Array, list, list]:
    """Loss, gradient and Hessian-vector product of a scalar loss: ``(loss, grads, hvs)``.

    ``fn(*inputs)`` launches kernels (directly or through integrator steps) and returns a
    one-element float array, the loss; ``vectors[k]`` is the direction for ``inputs[k]``
    (float arrays; an sk array or array-like of the input's ``.numpy()`` shape). Returns
    the loss array, the gradient with respect to each input and ``H v`` for each input
    (sk arrays shaped like the inputs), where ``H`` is the Hessian of the loss with
    respect to all inputs together and ``v`` the vectors stacked alike.

    Cost: one forward pass in forward mode and one reverse sweep over dual numbers. CPU
    only; every launch of ``fn`` must have an adjoint, and steps recorded with
    ``tape.record_func`` (Python code) are refused. The inputs get ``requires_grad``; the
    gradients of every array the run touched are reset first, and the inputs' ``.grad``
    hold the gradient afterwards.

    Example::

        @sk.kernel
        def cubes(x: sk.array(dtype=sk.float64), loss: sk.array(dtype=sk.float64)):
            i = sk.tid()
            sk.atomic_add(loss, 0, x[i] * x[i] * x[i])

        x = sk.array([0.5, 1.0], dtype=sk.float64)
        loss = sk.zeros(1, dtype=sk.float64)

        def f(x):
            loss.zero_()
            sk.launch(cubes, 2, inputs=[x], outputs=[loss])
            return loss

        loss, (g,), (hv,) = sk.autograd.hvp(f, [x], [[1.0, 0.0]])   # g = 3x^2, hv = [6 * 0.5, 0]
    """
    inputs, vectors = list(inputs), list(vectors)
    if len(inputs) != len(vectors):
        raise ValueError(f"hvp: {len(inputs)} input(s) but {len(vectors)} vector(s); give one vector per input")
    fwd = JVP()
    for k, (a, v) in enumerate(zip(inputs, vectors)):
        if not isinstance(a, Array):
            raise TypeError(f"hvp: inputs[{k}] must be an sk float array (hold a scalar in a one-element array), "
                            f"got {type(a).__name__}")
        if a.device != "cpu":
            raise NotImplementedError(f"hvp: inputs[{k}] is on {a.device}; Hessian-vector products run on the CPU "
                                      "only")
        if getattr(a.dtype, "_sk_kind", None) == "struct":
            raise NotImplementedError(f"hvp: inputs[{k}] is an array of {a.dtype.__name__} structs; Hessian-vector "
                                      "products are not implemented for arrays of structs (jacobian, gradcheck and "
                                      "forward mode are): keep the fields in arrays of their own")
        try:
            fwd.set_tangent(a, v)
        except (TypeError, ValueError) as e:
            raise type(e)(f"hvp: vectors[{k}]: {e}") from None
        a.requires_grad = True
    tape = Tape()
    with fwd, tape:
        loss = fn(*inputs)
    if not isinstance(loss, Array) or loss.size != 1 or not _is_float(loss):
        what = f"an array of shape {loss.shape} holding {loss.dtype.__name__}" if isinstance(loss, Array) \
            else type(loss).__name__
        raise ValueError(f"hvp: fn must return the loss as a one-element float sk array, got {what}")
    for e in tape.entries:
        if isinstance(e, _Func):
            raise NotImplementedError("hvp: the rollout records a step written in Python (tape.record_func), whose "
                                      "backward has no second-order form; compute that step with kernels")
    tape.zero()
    second = _SecondOrder(fwd)
    _launch.hooks.append(second)
    try:
        tape.backward(loss=loss)
    finally:
        _launch.hooks.remove(second)
    grads, hvs = [], []
    for a in inputs:
        grads.append(a.grad.clone())
        entry = second.adj_tan.get(id(a))
        hvs.append(entry[1].clone() if entry is not None else Array(_zeros_laid_out_like(a._np), a.dtype, a.shape,
                                                                     a.device))
    return loss, grads, hvs
