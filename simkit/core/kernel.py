"""``@sk.kernel`` and ``@sk.func``, and the modules that group kernels for compilation.

Kernels defined in one Python module are compiled together, lazily, the first
time any of them is launched: one C++ translation unit, one compiler run. A kernel
defined later (e.g. inside a function) gets a unit of its own. The overloads of
generic kernels go to a module per float type (``<module>.float64``); with the
module's parameter types declared (:func:`overload_types`), those of one float type
are made and compiled together too.

Example::

    @sk.func
    def sq(x: float) -> float:
        return x * x

    @sk.kernel
    def square_all(a: sk.array(dtype=float)):
        i = sk.tid()
        a[i] = sq(a[i])
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import logging
import re
import sys
import textwrap
import typing
from typing import Any, Callable, Sequence

import numpy as np

from . import codegen, compiler, frontend
from . import types as T
from .array import Array, ArrayType, GenericArrayType
from .config import config
from .errors import CompileError
from .calls import firm_float
from .exprs import Retype, type_str
from .modules import (Module, float_of, generic_accepts, instantiate, is_generic, load_module,  # noqa: F401 (API)
                      overload_types)

log = logging.getLogger("simkit")


def _annotations(pyfunc, what: str, require: bool) -> dict:
    sig = inspect.signature(pyfunc)
    out = {}
    for name, p in sig.parameters.items():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise CompileError(f"{what} parameters must be plain positional names, '{name}' is not",
                               inspect.getsourcefile(pyfunc) or "<unknown>", pyfunc.__code__.co_firstlineno)
        ann = p.annotation
        if isinstance(ann, str):  # from __future__ import annotations
            ann = eval_annotation(ann, pyfunc)
        if ann is Any:  # generic: each launch or call instantiates it with its argument's type
            out[name] = None
            continue
        if ann is inspect.Parameter.empty:
            if require:
                raise CompileError(f"kernel parameter '{name}' needs a type annotation, e.g. '{name}: float' or "
                                   f"'{name}: sk.array(dtype=float)'", inspect.getsourcefile(pyfunc) or "<unknown>",
                                   pyfunc.__code__.co_firstlineno)
            out[name] = None
            continue
        t = T.resolve(ann)
        if not hasattr(t, "_sk_kind"):
            raise CompileError(f"parameter '{name}' has annotation {ann!r}, which is not a simkit type",
                               inspect.getsourcefile(pyfunc) or "<unknown>", pyfunc.__code__.co_firstlineno)
        out[name] = t
    return out


def eval_annotation(text: str, owner) -> object:
    """Evaluate a string annotation in the namespace where ``owner`` (a function or class) was defined."""
    module = sys.modules.get(owner.__module__)
    env = dict(vars(module)) if module else {}
    if hasattr(owner, "__globals__"):
        env.update(owner.__globals__)
    try:
        return eval(text, env)
    except Exception as e:  # noqa: BLE001 - reported as a type error of the annotation
        raise TypeError(f"cannot evaluate annotation {text!r} of {owner.__qualname__}: {e}") from None


def _ann_name(want) -> str:
    """A generic annotation as its user wrote it: ``array(dtype=Any, ndim=1)``, ``vector(Any, float32)``."""
    return repr(want) if isinstance(want, GenericArrayType) else T.type_name(want)


def value_type(v, peer_float=None):
    """The simkit type a launch argument ``v`` gives a generic parameter, or None if it has none.

    A Python float takes ``peer_float`` (the float type of the launch's other arguments), so a
    kernel generic over its precision gets ``dt=0.01`` in the precision of its arrays."""
    if isinstance(v, Array):
        return v.type()
    if isinstance(v, (bool, np.bool_)):
        return T.bool_
    if isinstance(v, np.generic):
        return T.scalar_from_numpy(v.dtype)
    if isinstance(v, int):
        return T.int32
    if isinstance(v, float):
        return peer_float or T.float32
    if isinstance(v, np.ndarray):
        return ArrayType(T.scalar_from_numpy(v.dtype), v.ndim)
    kind = getattr(type(v), "_sk_kind", None)
    if kind in ("vec", "mat", "quat", "transform", "struct"):
        return type(v)
    return None


def _peer_float(values) -> T.ScalarType | None:
    """The float scalar type of the arrays and typed values among ``values`` (the first found)."""
    for v in values:
        t = value_type(v) if type(v) not in (float, int, bool) else None  # numpy scalars do count
        s = getattr(getattr(t, "dtype", t), "_sk_scalar", None)
        if s is not None and s.is_float:
            return s
    return None


class Kernel:
    """A compiled-on-demand kernel; launch it with ``sk.launch``.

    ``sk.Kernel(func, key=..., options=...)`` builds one from a plain Python function at run
    time, as Warp's ``wp.Kernel`` does (the decorator ``@sk.kernel`` does the same); ``key``
    names it (default: the function's name, which ``.key`` then reads). Of Warp's ``options``,
    ``{"enable_backward": False}`` is honoured; the others (``max_unroll``, ``fast_math``, ...)
    tune Warp's own code generator and are kept in ``.options`` and ignored.
    A kernel with ``typing.Any`` parameters is generic: each launch instantiates (and caches)
    an overload for its arguments' types, see :func:`overload`.

    Example::

        def scale(a: sk.array(dtype=Any), s: Any):
            a[sk.tid()] = a[sk.tid()] * s

        k = sk.Kernel(scale, key="scale_any")
        sk.launch(k, 3, inputs=[sk.zeros(3, dtype=sk.float64), 2.0])   # float64 overload, s: float64
        primal_only = sk.Kernel(func=scale, key="scale_fwd", options={"enable_backward": False})
    """

    _sk_kernel = True

    def __init__(self, func: Callable, key: str | None = None, module: str | None = None,
                 options: dict | None = None, *, enable_backward: bool = True, arg_types: dict | None = None):
        if not callable(func) or not hasattr(func, "__code__"):
            raise TypeError(f"sk.Kernel expects a Python function, got {type(func).__name__}")
        if key is not None and (not isinstance(key, str) or not key):
            raise TypeError(f"sk.Kernel(key=...) takes a non-empty string, got {key!r}")
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"sk.Kernel(options=...) takes a dict such as {{'enable_backward': False}}, "
                            f"got {type(options).__name__}")
        self.options = dict(options or {})
        enable_backward = self.options.get("enable_backward", enable_backward)
        if not isinstance(enable_backward, (bool, np.bool_)):
            raise TypeError(f"sk.Kernel: enable_backward must be True or False, got {enable_backward!r}")
        self.func = func
        self._custom_key = key  # a given key is part of the C name: two kernels of one function may coexist
        self.key = key or func.__name__
        self.name = self.key
        self.enable_backward = bool(enable_backward)
        self.arg_types = arg_types if arg_types is not None else _annotations(func, "kernel", require=True)
        self.arg_names = list(self.arg_types)
        self.generic = any(is_generic(t) for t in self.arg_types.values())
        self.module = Module.of(module or func.__module__)
        self._instances: dict[tuple, Kernel] = {}
        self._dispatch: dict[tuple, Kernel] = {}  # instance_for's cache
        self._ir = {}
        self._loaded: dict[str, tuple] = {}
        self._tangent_loaded: dict[str, tuple] = {}  # mode -> (library, IR, path) of the tangent entries
        self._cuda_tangent_loaded: dict[tuple, tuple] = {}  # (mode, GPU index) -> (CudaModule, IR), tangents
        self._hvp_loaded: dict[str, tuple] = {}  # mode -> (library, IR, path) of the second-order entries
        self._cuda_loaded: dict[tuple, tuple] = {}  # (mode, GPU index) -> (CudaModule, IR)
        self._plan = {}
        self._index = -1
        if not self.generic:  # a generic kernel compiles only as its overloads
            self.module.kernels.append(self)
            self._index = len(self.module.kernels) - 1
        else:
            self.module.generics.append(self)
        self.__doc__ = func.__doc__
        self.__wrapped__ = func

    @property
    def cname(self) -> str:
        ident = f"{self.module.name}.{self.func.__qualname__}" + (f":{self._custom_key}" if self._custom_key else "")
        h = hashlib.sha256(ident.encode()).hexdigest()[:6]
        return f"{re.sub(r'[^0-9A-Za-z_]', '_', self.name)}_{h}_{self._index}"

    def overload(self, types: Sequence | dict) -> "Kernel":
        """The overload of this generic kernel for concrete parameter ``types`` (a list in
        parameter order, or ``{name: type}`` for the generic ones), created on first use."""
        if isinstance(types, dict):
            unknown = set(types) - set(self.arg_names)
            if unknown:
                raise ValueError(f"{self.name}: no parameter(s) {sorted(unknown)}; parameters: {self.arg_names}")
            types = [types.get(n, t) for n, t in self.arg_types.items()]
        types = [T.resolve(t) for t in types]
        if len(types) != len(self.arg_names):
            raise TypeError(f"{self.name}: overload takes {len(self.arg_names)} type(s), got {len(types)}")
        for name, want, t in zip(self.arg_names, self.arg_types.values(), types):
            if t is None or is_generic(t) or not hasattr(t, "_sk_kind"):
                raise TypeError(f"{self.name}: overload needs a concrete simkit type for '{name}', got {t!r}")
            if is_generic(want) and not generic_accepts(want, t):
                raise TypeError(f"{self.name}: parameter '{name}' is {_ann_name(want)}, got {T.type_name(t)}")
            if want is not None and not is_generic(want) and t != want:
                raise TypeError(f"{self.name}: parameter '{name}' is {T.type_name(want)}, got {T.type_name(t)}")
        key = tuple(types)
        inst = self._instances.get(key) if self.generic else self
        if inst is None:
            # The overloads of one float type form a module of their own: it compiles in one
            # run, and without the other precision's.
            real = next((f for f in (float_of(t) for t, want in zip(types, self.arg_types.values())
                                     if is_generic(want)) if f is not None), None)
            target = self.module if real is None else self.module.float_module(real)
            if real is not None and self.module.param_types is not None and not target.instantiated:
                self.module.instantiate(real)  # its siblings first, in definition order: one batch, stable names
                inst = self._instances.get(key)
        if inst is None:
            inst = self._instances[key] = Kernel(self.func, self._custom_key, target.name, self.options,
                                                 enable_backward=self.enable_backward,
                                                 arg_types=dict(zip(self.arg_names, types)))
        return inst

    def instance_for(self, values: Sequence) -> "Kernel":
        """The overload a launch with ``values`` runs (see :func:`value_type` for Python numbers)."""
        # What decides the overload, cheap to compute: a generic launch pays a dict lookup, not inference.
        key = tuple((v.dtype, v.ndim) if type(v) is Array else (type(v), v.dtype, v.ndim) if type(v) is np.ndarray
                    else type(v) for v in values)
        inst = self._dispatch.get(key)
        if inst is None:
            inst = self._dispatch[key] = self._infer_instance(values)
        return inst

    def _infer_instance(self, values: Sequence) -> "Kernel":
        if len(values) != len(self.arg_names):
            raise TypeError(f"{self.name}() takes {len(self.arg_names)} argument(s) ({', '.join(self.arg_names)}), "
                            f"got {len(values)}")
        peer = _peer_float(values)
        types = []
        for name, want, v in zip(self.arg_names, self.arg_types.values(), values):
            if not is_generic(want):
                types.append(want)
                continue
            t = value_type(v, peer)
            if t is None:
                raise TypeError(f"{self.name}(): argument '{name}' is generic (Any) and got a "
                                f"{type(v).__name__}, which has no simkit type")
            if not generic_accepts(want, t):
                got = type(v).__name__ + (f" with ndim={t.ndim}" if isinstance(t, ArrayType) else
                                          "" if type(v).__name__ == T.type_name(t) else f" {T.type_name(t)}")
                raise TypeError(f"{self.name}(): argument '{name}' expects {_ann_name(want)}, got {got}")
            types.append(t)
        return self.overload(types)

    def _concrete(self, what: str) -> None:
        if self.generic:
            raise TypeError(f"kernel '{self.name}' is generic (typing.Any parameters): {what} one of its overloads, "
                            f"e.g. {self.name}.overload([...types...]), or launch it, which picks one")

    def build_ir(self):
        self._concrete("compile")
        mode = config.mode
        if mode not in self._ir:
            fir = frontend.build(self.func, self.arg_types, is_kernel=True, name=self.name, cname=self.cname)
            fir.enable_backward = self.enable_backward
            self._ir[mode] = fir
        return self._ir[mode]

    def source(self) -> str:
        """The generated C++ of this kernel alone (forward, adjoint, entry points)."""
        fir = self.build_ir()
        return codegen.module_source([fir], compiler.HEADER_NAME)

    def loaded(self):
        """(library, IR, path) for the current mode, compiling on first use."""
        entry = self._loaded.get(config.mode)
        if entry is None:
            self.module.load(self)
            entry = self._loaded[config.mode]
        return entry

    def tangent_loaded(self):
        """(library, IR, path) of the tangent (forward-mode) entries, compiling them on first use."""
        entry = self._tangent_loaded.get(config.mode)
        if entry is None:
            self.module.load_tangent(self)
            entry = self._tangent_loaded[config.mode]
        return entry

    def hvp_loaded(self):
        """(library, IR, path) of the Hessian-vector product entries (CPU), compiling them on first use."""
        entry = self._hvp_loaded.get(config.mode)
        if entry is None:
            self.module.load_hvp(self)
            entry = self._hvp_loaded[config.mode]
        return entry

    def hvp_source(self) -> str:
        """The generated C++ of this kernel's Hessian-vector product entry (its adjoint over dual numbers).

        Example::

            print(my_kernel.hvp_source())
        """
        from . import codegen_hvp

        return codegen_hvp.hvp_module_source([self.build_ir()])

    def tangent_source(self) -> str:
        """The generated C++ of this kernel's tangent (forward-mode) entries.

        Example::

            print(my_kernel.tangent_source())
        """
        from . import codegen_tangent

        return codegen_tangent.tangent_module_source([self.build_ir()])

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.name}' is launched with sk.launch({self.name}, dim, inputs=[...]), not called")

    def __repr__(self):
        return f"<sk.kernel {self.name}>"


def kernel(f: Callable | None = None, *, module: str | None = None, enable_backward: bool = True,
           key: str | None = None):
    """Decorate a typed Python function as a kernel.

    What a kernel body may contain (types, operators, builtins, loops, structs,
    functions) is in docs/design.md, "Kernel language reference". Parameters annotated
    ``typing.Any`` (or ``sk.array(dtype=Any)``) make it generic: each launch picks the
    overload for its arguments' types. ``enable_backward=False`` generates no adjoint
    (the tape refuses to differentiate through it rather than give zeros).

    Example::

        @sk.kernel
        def saxpy(x: sk.array(dtype=float), y: sk.array(dtype=float), a: float):
            i = sk.tid()
            y[i] = a * x[i] + y[i]

        sk.launch(saxpy, n, inputs=[x, y, 2.0])
    """
    if f is None:
        return lambda g: Kernel(g, key, module, enable_backward=enable_backward)
    return Kernel(f, key, module, enable_backward=enable_backward)


def overload(k: Kernel | Callable, types: Sequence | dict | None = None) -> Kernel:
    """The overload of generic kernel ``k`` for ``types`` (Warp's ``wp.overload``).

    As a bare decorator (as in Warp), it takes the types from the annotations of a stub
    named like the generic kernel, whose body is only ``...``, ``pass`` or a docstring,
    makes that overload and gives back the generic kernel itself, so the name still
    launches any overload.

    Example::

        @sk.kernel
        def fill(a: sk.array(dtype=Any), v: Any):
            a[sk.tid()] = v

        fill64 = sk.overload(fill, [sk.array(dtype=sk.float64), sk.float64])

        @sk.overload
        def fill(a: sk.array(dtype=sk.float32), v: sk.float32):
            ...
    """
    if isinstance(k, Kernel):
        if types is None:
            raise TypeError(f"sk.overload({k.name}) needs the parameter types: a list or {{name: type}}")
        return k.overload(types)
    if inspect.isfunction(k) and types is None:
        return _overload_from_stub(k, sys._getframe(1))
    raise TypeError(f"sk.overload expects an @sk.kernel (or, as a decorator, a stub function), got {type(k).__name__}")


def _overload_from_stub(stub: Callable, frame) -> Kernel:
    """``@sk.overload`` on a stub: the generic kernel its name binds where it is defined (else
    the only generic kernel of that qualified name in its module), overloaded for its annotations."""
    where = (inspect.getsourcefile(stub) or "<unknown>", stub.__code__.co_firstlineno)
    bound = frame.f_locals.get(stub.__name__, frame.f_globals.get(stub.__name__))
    if isinstance(bound, Kernel):  # what the name means where the stub is written
        k = bound
    else:
        found = [g for g in Module.of(stub.__module__).generics if g.func.__qualname__ == stub.__qualname__]
        if len(found) != 1:
            raise CompileError(f"@sk.overload {stub.__name__}: " + (
                "no generic @sk.kernel of that name is defined before it" if not found else
                f"{len(found)} generic kernels share that name; use sk.overload(kernel, [types])"), *where)
        k = found[0]
    if not k.generic:
        raise CompileError(f"@sk.overload {stub.__name__}: kernel '{k.name}' is not generic (no typing.Any "
                           "parameter), so it has no overloads to make", *where)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(stub)))
    except (OSError, SyntaxError):
        tree = None  # no source at hand (an exec'd string): nothing to check the body against
    if tree is not None:
        for node in tree.body[0].body:
            if not (isinstance(node, ast.Pass) or isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                    and (node.value.value is ... or isinstance(node.value.value, str))):
                raise CompileError(f"@sk.overload {stub.__name__}: the stub's body must be only '...', 'pass' or a "
                                   "docstring (the generic kernel's body is the one compiled)", where[0],
                                   where[1] + node.lineno - 1)
    types = _annotations(stub, "kernel overload", require=True)
    if len(types) != len(k.arg_names):  # matched by position, as in Warp
        raise CompileError(f"@sk.overload {stub.__name__}: the stub has {len(types)} parameter(s), the kernel "
                           f"{len(k.arg_names)} ({', '.join(k.arg_names)})", *where)
    k.overload(list(types.values()))
    return k


class FuncSpec:
    """One specialisation of an ``@sk.func`` for concrete parameter types."""

    def __init__(self, fn: "Function", param_types: list):
        self.fn = fn
        self.param_types = param_types
        key = fn.func.__module__ + "." + fn.func.__qualname__ + ":" + ",".join(t._sk_ctype for t in param_types)
        if fn.grouped:  # overloads share a qualified name: a generic one may specialise like another
            key += f"@{fn.func.__code__.co_firstlineno}"
        self.cname = f"{fn.name}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
        names = list(fn.arg_types)
        self.ir = frontend.build(fn.func, dict(zip(names, param_types)), is_kernel=False, name=fn.name, cname=self.cname,
                                 adjoint_of=len(fn.grad_of.arg_types) if fn.grad_of is not None else None)
        self.ret_types = self.ir.ret_types
        self.grad_spec = self._custom_grad() if fn.custom_grad is not None else None

    def _custom_grad(self) -> "FuncSpec":
        """Specialise the user's adjoint for (parameters..., adj_ret...) and check what it returns."""
        g = self.fn.custom_grad
        file = inspect.getsourcefile(g.func) or "<unknown>"
        line = g.func.__code__.co_firstlineno
        want_n = len(self.param_types) + len(self.ret_types)
        if len(g.arg_types) != want_n:
            raise CompileError(f"custom adjoint '{g.name}' of '{self.fn.name}' must take the {len(self.param_types)} "
                               f"parameter(s) of '{self.fn.name}' followed by {len(self.ret_types)} adj_ret value(s), "
                               f"it takes {len(g.arg_types)}", file, line)
        spec = g.spec_for_types(list(self.param_types) + list(self.ret_types))
        want = [t for t in self.param_types if getattr(t, "_sk_kind", "") != "array"]
        if [t._sk_ctype for t in spec.ret_types] != [t._sk_ctype for t in want]:
            raise CompileError(f"custom adjoint '{g.name}' must return the adjoints of the non-array parameters of "
                               f"'{self.fn.name}' ({', '.join(T.type_name(t) for t in want) or 'nothing'}), it returns "
                               f"({', '.join(T.type_name(t) for t in spec.ret_types)})", file, line)
        self.ir.funcs.append(spec)  # emitted before this function, which calls it
        return spec


class Function:
    """An ``@sk.func``: a helper callable from kernels, specialised per argument types."""

    _sk_func = True

    def __init__(self, pyfunc: Callable):
        self.func = pyfunc
        self.name = pyfunc.__name__
        self.arg_types = _annotations(pyfunc, "function", require=False)
        self._specs: dict[tuple, FuncSpec] = {}
        self._building = False
        self.custom_grad: Function | None = None
        self.grad_of: Function | None = None  # set on a custom adjoint: the function it differentiates
        # The definitions a call picks from (func_overloads.py): this one alone unless the name
        # was defined again in the same scope with other parameter types.
        self.members: list[Function] = [self]
        self.grouped = False
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc

    def specialize_for(self, args, builder, node) -> FuncSpec:
        """The specialisation a call with ``args`` (IR values) takes, of the overload they match."""
        if len(self.members) > 1:
            from . import func_overloads

            return func_overloads.pick_for_kernel(self, args, builder, node)._specialize(args, builder, node)
        return self._specialize(args, builder, node)

    def _specialize(self, args, builder, node) -> FuncSpec:
        from . import builtins as B

        if len(args) != len(self.arg_types):
            builder.error(f"{self.name}() takes {len(self.arg_types)} argument(s), got {len(args)}", node)
        # A literal (or a local initialised from one) passed for an unannotated parameter takes the
        # float type of the call's other float arguments: inner(0.5, x64) is inner(float64, float64).
        firm = next((a.type._sk_scalar for a in args if firm_float(a)), None)
        # without one, a bare literal follows a literal-initialised local (already retyped or not)
        peer = firm or next((a.type for a in args if getattr(a, "weak_origin", None) is not None
                             and isinstance(a.type, T.ScalarType) and a.type.is_float), None)
        types = []
        for (pname, want), a in zip(self.arg_types.items(), args):
            t = getattr(a, "type", None)
            if t is None:
                builder.error(f"{self.name}(): argument '{pname}' must be a value", node)
            if isinstance(want, T.ScalarCategory) and isinstance(t, B.Weak):  # a literal for x: sk.Float
                t = peer if peer is not None and t.default().is_float else t.default()
            if want is not None and is_generic(want):
                if not generic_accepts(want, t):
                    builder.error(f"{self.name}(): argument '{pname}' expects {_ann_name(want)}, got {type_str(t)}",
                                  node)
                types.append(t)
                continue
            if want is not None:
                types.append(want)
                continue
            if firm is not None and getattr(a, "weak_origin", None) is not None and t is not firm \
                    and isinstance(t, T.ScalarType) and t.is_float:
                raise Retype(a.weak_origin, firm)
            if isinstance(t, B.Weak):
                t = peer if peer is not None and t.default().is_float else t.default()
            types.append(t)
        if self._building and self._key(types) not in self._specs:
            builder.error(f"@sk.func '{self.name}' calls itself; recursion is not supported in kernels", node)
        return self.spec_for_types(types)

    @staticmethod
    def _key(types) -> tuple:
        return tuple(t._sk_ctype for t in types)

    def spec_for_types(self, types: list) -> FuncSpec:
        key = self._key(types)
        if key not in self._specs:
            self._building = True
            try:
                self._specs[key] = FuncSpec(self, types)
            finally:
                self._building = False
        return self._specs[key]

    def __call__(self, *args):
        from . import func_overloads

        # Checked also with one definition: a float32 value for a float64 parameter is refused
        # here as in a kernel (and in Warp), not computed in another precision.
        return func_overloads.pick_for_python(self, args).func(*args)

    def __repr__(self):
        n = len(self.members)
        return f"<sk.func {self.name}" + (f" ({n} overloads)>" if n > 1 else ">")


@typing.overload
def func(f: Callable) -> Function:
    """``@sk.func``: the bare decorator."""


@typing.overload
def func(f: None = None, *, module: str | None = None) -> Callable[[Callable], Function]:
    """``@sk.func(module=...)``: the decorator with arguments."""


def func(f: Callable | None = None, *, module: str | None = None):
    """Decorate a helper callable from kernels; unannotated parameters take the caller's types.

    Defined again under the same name in the same scope with other parameter types, it
    is overloaded by type as in Warp (see func_overloads.py); with the same types, the new
    definition replaces the old. The rules are in docs/design.md, "Functions: @sk.func and
    @sk.func_grad". ``module`` (a name, or ``"unique"``) is accepted as Warp's is, and
    changes nothing: a function compiles into the module of each kernel that calls it.

    Example::

        @sk.func
        def spring_force(d: sk.vec3, k: float) -> sk.vec3:
            return -k * d

        @sk.func(module="unique")
        def spring_energy(d: sk.vec3, k: float) -> float:
            return 0.5 * k * sk.dot(d, d)
    """
    if module is not None and not isinstance(module, str):
        raise TypeError(f"sk.func(module=...) takes a module name (a string, or 'unique'), got {type(module).__name__}")
    if f is None:
        def decorate(g: Callable) -> Function:
            return _make_func(g, sys._getframe(1).f_locals)
        return decorate
    return _make_func(f, sys._getframe(1).f_locals)


def _make_func(f: Callable, scope: dict) -> Function:
    from . import func_overloads

    if not callable(f) or not hasattr(f, "__code__"):
        raise TypeError(f"sk.func expects a Python function, got {type(f).__name__}")
    fn = Function(f)
    func_overloads.group_with_previous(fn, scope)
    return fn


def func_grad(f: Function):
    """Replace the generated adjoint of ``@sk.func`` ``f`` with your own.

    The decorated function takes ``f``'s parameters followed by one ``adj_ret`` per
    return value, and returns the adjoints of ``f``'s non-array parameters, in order.

    Example::

        @sk.func
        def safe_norm(v: sk.vec3) -> float:
            return sk.length(v)

        @sk.func_grad(safe_norm)
        def safe_norm_grad(v: sk.vec3, adj_ret: float):
            return v * (adj_ret / sk.max(sk.length(v), 1e-6))
    """
    if not isinstance(f, Function):
        raise TypeError(f"sk.func_grad expects an @sk.func, got {type(f).__name__}")

    def register(g: Callable) -> Function:
        if f._specs:
            raise RuntimeError(f"sk.func_grad({f.name}) must be declared before '{f.name}' is first compiled")
        f.custom_grad = Function(g)
        f.custom_grad.grad_of = f
        return f.custom_grad
    return register
