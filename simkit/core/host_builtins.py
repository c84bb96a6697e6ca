"""Builtins called from plain Python: ``sk.cos(0.5)``, ``sk.length(v)``, ``sk.mul(m, v)``, as Warp allows.

A call outside a kernel picks the builtin's overload exactly as a kernel would (Python numbers
are literals: ``sk.cos(0.5)`` is float32, ``sk.min(x64, 2.0)`` float64) and runs the table's own
C++ body in a one-thread CPU kernel, made once per (builtin, overload) and cached, so the
result is bit for bit the one the same call gives inside a kernel. The kernel runs straight
on its own one-element arrays, outside any ``sk.Tape``, ``sk.capture()`` or launch hook: a host
call is a computation on values, not a launch a tape could record. A float32 scalar result is
a Python float (exact), a float64 one a ``numpy.float64``, an integer an ``int``, a bool a
``bool`` and a vector, matrix, quat or transform a simkit value.

Builtins that only mean something in a kernel (``tid``, the atomics, ``printf``, the
``expect_*`` checks, mesh queries) raise a TypeError saying so.

Example::

    sk.length(sk.vec3(1.0, 2.0, 2.0))            # 3.0
    sk.quat_rotate(sk.quat_from_axis_angle(sk.vec3(0.0, 0.0, 1.0), 0.5), sk.vec3(1.0, 0.0, 0.0))
"""

from __future__ import annotations

import linecache
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np

from . import builtins as B
from . import call_keywords
from . import lang
from . import types as T
from .builtins import type_str

KERNEL_ONLY = {"tid", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "printf", "len",
               "expect_eq", "expect_neq", "expect_near"}
_VALUE_KINDS = ("scalar", "vec", "mat", "quat", "transform")
_runners: dict[tuple, "_Runner"] = {}
_resolved: dict[tuple, Any] = {}
_lock = threading.Lock()  # a runner's arrays hold one call's values at a time


def is_kernel_only(name: str) -> bool:
    """Whether builtin ``name`` has no meaning outside a kernel.

    Example::

        is_kernel_only("tid")     # True
    """
    return name in KERNEL_ONLY or name.startswith("mesh_")


def _arg_type(name: str, index: int, v: Any) -> Any:
    if isinstance(v, (bool, np.bool_)):
        return B.WEAK_BOOL if isinstance(v, bool) else T.bool_
    if isinstance(v, int):
        return B.WEAK_INT
    if isinstance(v, float) and not isinstance(v, np.floating):
        return B.WEAK_FLOAT
    if isinstance(v, np.generic):
        return T.scalar_from_numpy(v.dtype)
    kind = getattr(type(v), "_sk_kind", None)
    if kind in _VALUE_KINDS[1:]:
        return type(v)
    raise TypeError(f"sk.{name}(): argument {index + 1} is a {type(v).__name__}; in Python a builtin takes numbers "
                    f"(Python or numpy scalars) and simkit values (sk.vec3(...), sk.mat33(...), sk.quat(...), ...)")


class _Runner:
    """The one-thread CPU kernel of one builtin overload, with the one-element arrays it reads and writes."""

    def __init__(self, b: B.Builtin, arg_types: list, ret: Any, stub: Any):
        from .array import empty
        from .kernel import Kernel

        tag = f"{b.cname}_{len(_runners)}"
        params = ", ".join(f"a{k}" for k in range(len(arg_types)))
        reads = ", ".join(f"a{k}[0]" for k in range(len(arg_types)))
        source = f"def host_{tag}({params}, out):\n    out[0] = _sk.{b.name}({reads})\n"
        filename = f"<simkit host builtin {tag}>"
        # The frontend reads a kernel's source through linecache; an entry without an mtime is kept.
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        module = f"simkit_host.{tag}"
        if b.name in B.PACKED_RESULTS:  # the call is the packed matrix of the results (call() splits it)
            stub = _packed_stub(b.name)
        env = {"_sk": SimpleNamespace(**{b.name: stub}), "__name__": module}
        exec(compile(source, filename, "exec"), env)
        self.arrays = [empty(1, dtype=t, device="cpu") for t in (*arg_types, ret)]
        self.views = [a.numpy() for a in self.arrays]
        self.kernel = Kernel(env[f"host_{tag}"], key=f"host_{tag}", module=module, enable_backward=False,
                             arg_types={**{f"a{k}": a.type() for k, a in enumerate(self.arrays[:-1])},
                                        "out": self.arrays[-1].type()})
        self.ret = ret

    def __call__(self, values: list) -> Any:
        from .config import config
        from .launch import plan_for

        for view, v in zip(self.views, values):
            view[0] = np.asarray(v)
        plan = self.kernel._plan.get(config.mode) or plan_for(self.kernel)
        plan.pack(self.arrays)
        plan.set_bounds(1)
        plan.run(plan.jobs[False][1])
        if plan.error.code:
            plan.check_error()
        return _python_value(self.ret, self.views[-1])


def _packed_stub(name: str) -> Any:
    """A stand-in for ``sk.<name>`` of a multi-result builtin that a kernel calls as its table
    entry, whose value is the results packed in one matrix, not split (packed_results.py)."""
    def packed(*args):
        raise TypeError(f"the packed form of sk.{name} is only called by the host runner's kernel")
    packed._sk_builtin = name
    packed._sk_packed = True
    return packed


def _python_value(t: Any, out: np.ndarray) -> Any:
    if isinstance(t, T.ScalarType):
        x = out[0]
        if t.kind == "b":
            return bool(x)
        if t.kind in "iu":
            return int(x)
        return np.float64(x) if t is T.float64 else float(x)
    return t._wrap(out[0])


def call(name: str, args: tuple, kwargs: dict, stub: Any) -> Any:
    """Builtin ``name`` applied to ``args`` (and Warp's keywords) in plain Python; see the module doc.
    ``stub`` is its Python stub (``sk.<name>``), which the one-thread kernel calls.

    Example::

        call("cross", (sk.vec3(1.0, 0.0, 0.0), sk.vec3(0.0, 1.0, 0.0)), {}, sk.cross)   # vec3(0, 0, 1)
    """
    if is_kernel_only(name):
        raise TypeError(f"sk.{name}() only works inside kernels (an @sk.kernel or @sk.func body); "
                        f"it cannot be called from Python")
    if name == "identity":
        return _identity(*args, **kwargs)
    args = call_keywords.positional(name, list(args), kwargs)
    types = [_arg_type(name, k, v) for k, v in enumerate(args)]
    key = (name, *types)
    found = _resolved.get(key)
    if found is None:
        found = _resolved[key] = B.resolve(name, types)
    if found is None:
        sigs = "\n      ".join(B.signatures(name))
        raise TypeError(f"sk.{name}() does not accept ({', '.join(type_str(t) for t in types)}); "
                        f"expected one of:\n      {sigs}")
    b, concrete, ret = found
    if getattr(ret, "_sk_kind", None) not in _VALUE_KINDS:
        raise TypeError(f"sk.{name}() only works inside kernels (an @sk.kernel or @sk.func body); "
                        f"it cannot be called from Python")
    values = [c.np_dtype.type(a) if isinstance(t, B.Weak) else a for a, t, c in zip(args, types, concrete)]
    with _lock:
        run = _runners.get((b.cname, *concrete))
        if run is None:
            run = _runners[(b.cname, *concrete)] = _Runner(b, concrete, ret, stub)
        result = run(values)
    parts = B.PACKED_RESULTS.get(name)
    return result if parts is None else _split(result, parts)


def _split(packed: Any, parts: tuple) -> tuple:
    """The results of a multi-result builtin (``sk.svd3(A)``: ``(U, sigma, V)``) from its packed matrix."""
    t, m = type(packed), np.asarray(packed)
    rows, F = t._sk_shape[0], t._sk_scalar
    return tuple(T.vector(rows, F)(m[:, first]) if cols == 1 else T.matrix((rows, cols), F)(m[:, first:first + cols])
                 for _name, first, cols in parts)


def _identity(n: int = 3, dtype: Any = float) -> Any:
    """``sk.identity(n, dtype)`` in Python: the n x n identity matrix of ``dtype``."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise TypeError(f"sk.identity(n=...) takes a positive int, got {n!r}")
    t = T.matrix((int(n), int(n)), T.resolve(dtype))
    return t(np.eye(int(n)))


lang.HOST_CALL[0] = call  # sk.<builtin>(...) in Python comes here
