"""Names of the kernel language that have no Python meaning of their own.

These stubs exist so that ``sk.tid``, ``sk.sin``, ... resolve as attributes and can
be imported; the frontend recognises them by their ``_sk_builtin`` marker. Calling
one from plain Python raises a clear error instead of doing something else.
"""

from __future__ import annotations

from typing import Any

from . import builtins as _table

_SPECIAL = ("tid", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "printf", "identity", "len")


def _stub(name: str):
    def f(*args, **kwargs):
        raise RuntimeError(f"sk.{name}() can only be called inside an @sk.kernel or @sk.func")

    f.__name__ = name
    f.__qualname__ = name
    f._sk_builtin = name
    f.__doc__ = f"Kernel builtin ``{name}``; see docs/design.md, 'Kernel language reference', 'Builtins'."
    return f


BUILTIN_STUBS = {name: _stub(name) for name in list(_table.TABLE) + list(_SPECIAL)}


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
