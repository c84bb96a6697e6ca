"""``@sk.kernel`` and ``@sk.func``, and the modules that group kernels for compilation.

Kernels defined in one Python module are compiled together, lazily, the first
time any of them is launched: one C++ translation unit, one compiler run. A kernel
defined later (e.g. inside a function) gets a unit of its own.

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

import ctypes
import hashlib
import inspect
import logging
import sys
from typing import Callable

from . import codegen, compiler, frontend
from . import types as T
from .config import config
from .errors import CompileError
from .calls import firm_float
from .exprs import Retype

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


class Module:
    """The kernels of one Python module; compiled in batches on first launch."""

    _registry: dict[str, "Module"] = {}

    def __init__(self, name: str):
        self.name = name
        self.kernels: list[Kernel] = []

    @classmethod
    def of(cls, name: str) -> "Module":
        if name not in cls._registry:
            cls._registry[name] = Module(name)
        return cls._registry[name]

    def batch(self, kernel: "Kernel", loaded: Callable[["Kernel"], bool]) -> tuple[list, list]:
        """``kernel`` and every other kernel of this module not ``loaded`` yet, with their IRs:
        what one compiler run builds (for the CPU, or for one GPU)."""
        batch, irs = [], []
        for k in [kernel] + [k for k in self.kernels if k is not kernel]:
            if loaded(k):
                continue
            try:
                fir = k.build_ir()
            except CompileError:
                if k is kernel:
                    raise
                continue  # a broken neighbour reports its error when it is launched itself
            batch.append(k)
            irs.append(fir)
        return batch, irs

    def load(self, kernel: "Kernel"):
        """Compile (or load from cache) every not-yet-loaded kernel of this module together with ``kernel``."""
        mode = config.mode
        batch, irs = self.batch(kernel, lambda k: mode in k._loaded)
        source = codegen.module_source(irs, compiler.HEADER_NAME)
        safe = "".join(c if c.isalnum() else "_" for c in self.name)[-40:]
        lib_path = compiler.build_shared(source, safe)
        lib = ctypes.CDLL(str(lib_path))
        if config.keep_source:
            log.warning("simkit: generated C++ for module %s: %s", self.name, compiler.source_path(lib_path))
        for k, fir in zip(batch, irs):
            k._loaded[mode] = (lib, fir, lib_path)


class Kernel:
    """A compiled-on-demand kernel; launch it with ``sk.launch``."""

    _sk_kernel = True

    def __init__(self, pyfunc: Callable, module: str | None = None):
        self.func = pyfunc
        self.name = pyfunc.__name__
        self.arg_types = _annotations(pyfunc, "kernel", require=True)
        self.arg_names = list(self.arg_types)
        self.module = Module.of(module or pyfunc.__module__)
        self.module.kernels.append(self)
        self._index = len(self.module.kernels) - 1
        self._ir = {}
        self._loaded: dict[str, tuple] = {}
        self._cuda_loaded: dict[tuple, tuple] = {}  # (mode, GPU index) -> (CudaModule, IR)
        self._plan = {}
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc

    @property
    def cname(self) -> str:
        h = hashlib.sha256(f"{self.module.name}.{self.func.__qualname__}".encode()).hexdigest()[:6]
        return f"{self.name}_{h}_{self._index}"

    def build_ir(self):
        mode = config.mode
        if mode not in self._ir:
            self._ir[mode] = frontend.build(self.func, self.arg_types, is_kernel=True, name=self.name, cname=self.cname)
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

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.name}' is launched with sk.launch({self.name}, dim, inputs=[...]), not called")

    def __repr__(self):
        return f"<sk.kernel {self.name}>"


def kernel(f: Callable | None = None, *, module: str | None = None):
    """Decorate a typed Python function as a kernel.

    What a kernel body may contain (types, operators, builtins, loops, structs,
    functions) is in docs/design.md, "Kernel language reference".

    Example::

        @sk.kernel
        def saxpy(x: sk.array(dtype=float), y: sk.array(dtype=float), a: float):
            i = sk.tid()
            y[i] = a * x[i] + y[i]

        sk.launch(saxpy, n, inputs=[x, y, 2.0])
    """
    if f is None:
        return lambda g: Kernel(g, module)
    return Kernel(f, module)


class FuncSpec:
    """One specialisation of an ``@sk.func`` for concrete parameter types."""

    def __init__(self, fn: "Function", param_types: list):
        self.fn = fn
        self.param_types = param_types
        key = fn.func.__module__ + "." + fn.func.__qualname__ + ":" + ",".join(t._sk_ctype for t in param_types)
        self.cname = f"{fn.name}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
        names = list(fn.arg_types)
        self.ir = frontend.build(fn.func, dict(zip(names, param_types)), is_kernel=False, name=fn.name, cname=self.cname)
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
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc

    def specialize_for(self, args, builder, node) -> FuncSpec:
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
        return self.func(*args)

    def __repr__(self):
        return f"<sk.func {self.name}>"


def func(f: Callable) -> Function:
    """Decorate a helper callable from kernels; unannotated parameters take the caller's types.

    The rules are in docs/design.md, "Functions: @sk.func and @sk.func_grad".

    Example::

        @sk.func
        def spring_force(d: sk.vec3, k: float) -> sk.vec3:
            return -k * d
    """
    return Function(f)


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
        return f.custom_grad
    return register
