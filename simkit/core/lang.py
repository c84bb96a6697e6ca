"""Names of the kernel language that have no Python meaning of their own.

These stubs exist so that ``sk.tid``, ``sk.sin``, ... resolve as attributes and can
be imported; the frontend recognises them by their ``_sk_builtin`` marker. Called from
plain Python, a builtin runs as it would in a kernel (``host_builtins.py``: ``sk.cos(0.5)``,
``sk.length(v)``), except for the few with a Python meaning of their own
(:data:`PYTHON_SCOPE`: ``sk.quat_identity()``); kernel-only ones (``sk.tid()``) raise a TypeError.
"""

from __future__ import annotations

import math
from typing import Any

from . import builtins as _table
from . import types as _types

_SPECIAL = ("tid", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "printf", "identity", "len")


def _quat_identity(dtype: Any = float) -> Any:
    return _types.quat_of(dtype)()


def _transform_identity(dtype: Any = float) -> Any:
    return _types.transform_of(dtype)()


def _transform_part(name: str, part: str):
    def get(t: Any) -> Any:
        if getattr(type(t), "_sk_kind", None) != "transform":
            raise TypeError(f"sk.{name}() takes a transform, got {type(t).__name__}")
        return getattr(t, part)
    return get


# Builtins that also run in plain Python, as Warp's do (Warp code builds identities on the host).
PYTHON_SCOPE = {"quat_identity": _quat_identity, "transform_identity": _transform_identity,
                "transform_get_translation": _transform_part("transform_get_translation", "p"),
                "transform_get_rotation": _transform_part("transform_get_rotation", "q")}

# Warp's math constants (wp.pi, wp.PI, ...): plain floats, constants in kernels.
CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan, "half_pi": math.pi / 2, "tau": math.tau,
             "ln2": math.log(2.0), "ln10": math.log(10.0), "log2e": 1.0 / math.log(2.0),
             "log10e": 1.0 / math.log(10.0), "phi": (1.0 + math.sqrt(5.0)) / 2.0}
CONSTANTS.update({k.upper(): v for k, v in CONSTANTS.items()})


def _no_host_call(name: str, args: tuple, kwargs: dict, stub: Any) -> Any:
    raise RuntimeError(f"sk.{name}() in plain Python needs simkit.core.host_builtins (import simkit loads it)")


# How a builtin runs in plain Python: host_builtins.call, set when that module is imported
# (it builds kernels, and the kernel machinery imports this module: it cannot be imported here).
HOST_CALL = [_no_host_call]


def _stub(name: str):
    def f(*args, **kwargs):
        if name in PYTHON_SCOPE:
            return PYTHON_SCOPE[name](*args, **kwargs)
        if name in _table.MULTI_RESULTS:  # a tuple, one table builtin per result
            return tuple(HOST_CALL[0](part, args, kwargs, _stub(part)) for part in _table.MULTI_RESULTS[name][1])
        return HOST_CALL[0](name, args, kwargs, f)

    f.__name__ = name
    f.__qualname__ = name
    f._sk_builtin = name
    f.__doc__ = f"Kernel builtin ``{name}``; see docs/design.md, 'Kernel language reference', 'Builtins'."
    parts = _table.MULTI_RESULTS.get(name, (0, (name,)))[1]
    about = [b.doc for part in parts for b in _table.TABLE.get(part, ()) if b.doc]
    if about:
        f.__doc__ = about[0] + "\n\n" + f.__doc__
    example = _table.EXAMPLES.get(name)
    if example:
        f.__doc__ += "\n\nExample::\n\n" + "\n".join("    " + line for line in example.strip("\n").splitlines())
    return f


# The parts of a several-result builtin (quat_to_axis_angle__axis) are reached through it only.
BUILTIN_STUBS = {name: _stub(name) for name in [*_table.TABLE, *_table.MULTI_RESULTS, *_SPECIAL] if "__" not in name}


def static(value: Any) -> Any:
    """Evaluate ``expr`` at compile time: inside a kernel, ``sk.static(N * 2)`` is a constant.

    Example::

        @sk.kernel
        def k(a: sk.array(dtype=float)):
            a[sk.tid()] = sk.static(2.0 ** 10)
    """
    return value


static._sk_static = True


def constant(value: Any) -> Any:
    """Mark a module-level value as a kernel constant; kernels capture it when compiled.

    Example::

        GRAVITY = sk.constant(-9.81)
    """
    return value


class _Adjoint:
    """``sk.adjoint[x]``: inside an ``@sk.func_grad`` body, the adjoint of parameter ``x``
    (Warp's ``wp.adjoint``). A body that accumulates with it (``sk.adjoint[x] += ...``)
    returns nothing; simkit returns the accumulated adjoints for it.

    Example::

        @sk.func_grad(safe_sqrt)
        def safe_sqrt_grad(x: float, adj_ret: float):
            sk.adjoint[x] += adj_ret / (2.0 * sk.max(sk.sqrt(x), 1e-3))
    """

    _sk_adjoint = True

    def __getitem__(self, key):
        raise RuntimeError("sk.adjoint[...] can only be used inside an @sk.func_grad body")

    def __repr__(self):
        return "sk.adjoint"


adjoint = _Adjoint()


class GradOf:
    """``sk.grad(f)``: inside a kernel, ``sk.grad(f)(x, y)`` is the gradient of the scalar
    ``f(x, y)`` with respect to each argument (one value, or a tuple for several), as in
    Warp. ``f`` is an ``@sk.func`` or a builtin (``sk.atan2``). The result is a constant
    for the kernel's own adjoint: no gradient flows back through it.

    Example::

        @sk.func
        def square(x: float):
            return x * x

        @sk.kernel
        def slope(x: sk.array(dtype=float), out: sk.array(dtype=float)):
            i = sk.tid()
            out[i] = sk.grad(square)(x[i])   # 2 x
    """

    def __init__(self, f: Any):
        if not (getattr(f, "_sk_func", False) or getattr(f, "_sk_builtin", None) in _table.TABLE):
            raise TypeError(f"sk.grad expects an @sk.func or a differentiable builtin, got {f!r}")
        self.of = f

    def __call__(self, *args):
        raise RuntimeError("sk.grad(f)(...) can only be called inside an @sk.kernel or @sk.func")

    def __repr__(self):
        return f"sk.grad({getattr(self.of, '__name__', self.of)!r})"


def grad(f: Any) -> GradOf:
    """The gradient of ``f``, callable in kernels: see :class:`GradOf`."""
    return GradOf(f)
