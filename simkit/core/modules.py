"""Modules: the kernels of one Python module, compiled together, and the per-float-type
modules that hold the overloads of its generic kernels (``sk.overload_types``,
``sk.instantiate``, ``sk.load_module``).

A generic kernel's overloads for one float type live in ``<module>.float32`` or
``<module>.float64``; with the module's parameter types declared once, the first overload
for a float type makes those of every generic kernel of the module, so the first launch
compiles them in one compiler run.

Example::

    @sk.overload_types
    def _types(F):
        return {"x": sk.array(dtype=sk.vector(3, F)), "dt": F}

    k = sk.instantiate(sk.float64)      # the float64 overloads of this file's generic kernels
"""

from __future__ import annotations

import ctypes
import logging
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable

from . import codegen, compiler
from . import device as D
from . import types as T
from .array import GenericArrayType
from .config import config
from .errors import CompileError
from .launch import plan_for

if TYPE_CHECKING:
    from .kernel import Kernel

log = logging.getLogger("simkit")


def is_generic(t) -> bool:
    """Whether a parameter annotation is generic (``typing.Any``, ``sk.array(dtype=Any)``,
    ``sk.vector(Any, float)``, ``sk.matrix((Any, Any), float)``)."""
    return t is None or isinstance(t, GenericArrayType) or T.is_generic_value(t)


def generic_accepts(want, t) -> bool:
    """Whether concrete type ``t`` instantiates generic annotation ``want`` (``typing.Any``: any type)."""
    if want is None:
        return True
    if isinstance(want, GenericArrayType):
        return want.accepts(t)
    return T.fits_generic_value(want, t)


def float_of(t):
    """The float scalar type inside type ``t`` (an array's elements, a vector's components, a
    struct's first float field), or None when it holds no float."""
    kind = getattr(t, "_sk_kind", None)
    if kind == "array":
        return float_of(t.dtype)
    if kind == "struct":
        for ft in t._sk_fields.values():
            found = float_of(ft)
            if found is not None:
                return found
        return None
    s = getattr(t, "_sk_scalar", None)
    return s if s is not None and s.is_float else None


class Module:
    """The kernels of one Python module; compiled in batches on first launch.

    The overloads of a module's generic kernels live in a module of their own per float
    type, ``<module>.float32`` and ``<module>.float64`` (:meth:`float_module`), so one
    precision compiles without the other. Where the module declares the types of its generic
    parameters (:func:`overload_types`), the first overload made for a float type makes
    those of every generic kernel of the module for that type, in definition order, and the
    first launch compiles them all in one compiler run, as it does the module's plain kernels.
    """

    _registry: dict[str, "Module"] = {}

    def __init__(self, name: str):
        self.name = name
        self.kernels: list[Kernel] = []
        self.generics: list[Kernel] = []  # generic kernels defined here; their overloads go to float modules
        self.param_types: Callable | None = None  # overload_types(): float type -> {parameter name: type}
        self.parent: Module | None = None  # for a float module: the module its generic kernels are defined in
        self.instantiated = False  # for a float module: the parent's declared overloads have been made
        self._made: dict = {}  # float type -> (how many generic kernels then, {name: overload})
        # Warp's module options, read by ported code; simkit's options are per kernel
        # (sk.Kernel(options=...), @sk.kernel(enable_backward=False)), so these are the defaults.
        self.options = {"enable_backward": True}
        self.ahead: set = set()   # the modes compile_ahead has started this module's compile for
        self._ahead_made: tuple | None = None   # (mode, kernels, C++ source) compile_ahead generated

    @classmethod
    def of(cls, name: str) -> "Module":
        if name not in cls._registry:
            cls._registry[name] = Module(name)
        return cls._registry[name]

    def float_module(self, real) -> "Module":
        """The module that holds the overloads of this module's generic kernels for float type ``real``."""
        m = Module.of(f"{self.name}.{real.__name__}")
        m.parent = self
        return m

    def instantiate(self, real) -> dict:
        """{name: overload} of every generic kernel of this module for float type ``real``, made
        in definition order from the types :func:`overload_types` declares (a key
        ``"kernel.parameter"`` before ``"parameter"``). A kernel with a generic parameter the
        declaration does not name is generic over more than the float type: it is left out
        (its launches make its overloads)."""
        if self.param_types is None:
            raise TypeError(f"module {self.name!r} declares no overload types: add sk.overload_types(...) to it")
        made = self._made.get(real)
        if made is not None and made[0] == len(self.generics):
            return made[1]
        table = self.param_types(real)
        if not isinstance(table, dict):
            raise TypeError(f"sk.overload_types of module {self.name!r}: the function must return a dict "
                            f"{{parameter name: type}}, got {type(table).__name__} for {real.__name__}")
        self.float_module(real).instantiated = True
        out = {}
        for k in list(self.generics):
            names = [n for n, t in k.arg_types.items() if is_generic(t)]
            types = {n: table.get(f"{k.name}.{n}", table.get(n)) for n in names}
            if all(t is not None for t in types.values()):
                out[k.name] = k.overload(types)
        self._made[real] = (len(self.generics), out)
        return out

    def batch(self, kernel: "Kernel", loaded: Callable[["Kernel"], bool]) -> tuple[list, list]:
        """``kernel`` and every other kernel of this module not ``loaded`` yet, with their IRs:
        what one compiler run builds (for the CPU, or for one GPU). In the module's order,
        whichever kernel asks: the same source, so the run :func:`compile_ahead` started is the
        one a first launch waits for."""
        batch, irs = [], []
        for k in self.kernels + ([] if kernel in self.kernels else [kernel]):
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

    def _source(self, kernel: "Kernel") -> tuple[list, list, str, str]:
        """(kernels, IRs, C++ source, library name) of the CPU compiler run that loads ``kernel``."""
        mode = config.mode
        batch, irs = self.batch(kernel, lambda k: mode in k._loaded)
        safe = "".join(c if c.isalnum() else "_" for c in self.name)[-40:]
        made, self._ahead_made = self._ahead_made, None
        if made is not None and made[0] == mode and made[1] == tuple(batch):
            return batch, irs, made[2], safe   # the source compile_ahead generated: not twice
        return batch, irs, codegen.module_source(irs, compiler.HEADER_NAME), safe

    def ahead_source(self) -> tuple[int, str, str] | None:
        """(how many kernels, C++ source, library name) of the CPU compiler run that loads this
        module's not-yet-loaded kernels, which :func:`compile_ahead` starts on a compiler
        thread (their first launch then waits for that run instead of starting one); None
        when all are loaded."""
        mode = config.mode
        first = next((k for k in self.kernels if mode not in k._loaded), None)
        if first is None:
            return None
        batch, _irs, source, safe = self._source(first)
        self._ahead_made = (mode, tuple(batch), source)   # for the first launch's load
        return len(batch), source, safe

    def load(self, kernel: "Kernel"):
        """Compile (or load from cache) every not-yet-loaded kernel of this module together with ``kernel``."""
        mode = config.mode
        batch, irs, source, safe = self._source(kernel)
        lib_path = compiler.build_shared(source, safe, what=f"{_kernels(len(batch))} of module {self.name}")
        lib = ctypes.CDLL(str(lib_path))
        if config.keep_source:
            log.warning("simkit: generated C++ for module %s: %s", self.name, compiler.source_path(lib_path))
        for k, fir in zip(batch, irs):
            k._loaded[mode] = (lib, fir, lib_path)

    def load_tangent(self, kernel: "Kernel"):
        """Compile (or load) the tangent entries of ``kernel`` and of this module's other kernels
        whose tangents can be generated: a translation unit of their own, built on the first
        tangent launch, so the forward/adjoint module is unchanged (codegen_tangent)."""
        from . import codegen_tangent

        mode = config.mode
        batch, irs = self.batch(kernel, lambda k: mode in k._tangent_loaded)
        ok_batch, ok_irs = [], []
        for k, fir in zip(batch, irs):
            try:
                codegen_tangent.kernel_tangent_source(fir)
            except CompileError:
                if k is kernel:
                    raise
                continue  # no tangent rule for something in a neighbour: it refuses when it is used
            ok_batch.append(k)
            ok_irs.append(fir)
        source = codegen_tangent.tangent_module_source(ok_irs)
        safe = "".join(c if c.isalnum() else "_" for c in self.name)[-32:] + "_tangent"
        lib_path = compiler.build_shared(source, safe, what=f"the tangents of {_kernels(len(ok_batch))} of module "
                                                             f"{self.name}")
        lib = ctypes.CDLL(str(lib_path))
        for k, fir in zip(ok_batch, ok_irs):
            k._tangent_loaded[mode] = (lib, fir, lib_path)

    def load_hvp(self, kernel: "Kernel"):
        """Compile (or load) the Hessian-vector product entry of ``kernel``: a translation unit of
        its own (codegen_hvp), built on its first second-order launch. One kernel per unit: a
        neighbour whose adjoint has no dual form then cannot stop it."""
        from . import codegen_hvp

        fir = kernel.build_ir()
        source = codegen_hvp.hvp_module_source([fir])
        safe = "".join(c if c.isalnum() else "_" for c in fir.cname)[-36:] + "_hvp"
        lib_path = compiler.build_shared(source, safe, what=f"the Hessian-vector product of kernel {kernel.name}")
        kernel._hvp_loaded[config.mode] = (ctypes.CDLL(str(lib_path)), fir, lib_path)


def _kernels(n: int) -> str:
    return f"{n} kernel" + ("" if n == 1 else "s")


def _module_name(module: Any, what: str, depth: int = 2) -> str:
    if module is None:
        return sys._getframe(depth).f_globals.get("__name__", "__main__")
    if isinstance(module, str):
        return module
    if isinstance(module, type(sys)):
        return module.__name__
    raise TypeError(f"{what}(module=...) takes a module or its name, got {type(module).__name__}")


def overload_types(types_of: Callable | None = None, *, module: Any = None):
    """Declare, once per Python module, the types the generic parameters of its kernels take
    for a float type: ``types_of(F)`` returns ``{parameter name: type}`` (a parameter name means
    the same type in every kernel of the module; a key ``"kernel.parameter"`` gives one kernel's
    parameter another type). Use it as a decorator.

    Then the first overload of any of the module's generic kernels for a float type ``F``
    (made by a launch, :func:`overload` or :func:`instantiate`) makes those of all of them
    for ``F``, and their first launch compiles them together in one compiler run, into the
    module ``<module>.<F>`` (``my.sim.float32``). Kernels with a generic parameter the
    declaration does not name are generic over more than the float type: launches make their
    overloads one by one. ``module`` (a module or its name; default: the one ``types_of`` is
    defined in) names the module of kernels declared with ``@sk.kernel(module=...)``.

    Example::

        @sk.kernel
        def integrate(x: sk.array(dtype=Any), v: sk.array(dtype=Any), dt: Any): ...

        @sk.overload_types
        def _types(F):
            return {"x": sk.array(dtype=sk.vector(3, F)), "v": sk.array(dtype=sk.vector(3, F)), "dt": F}
    """
    def declare(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"sk.overload_types expects a function of the float type, got {type(fn).__name__}")
        name = _module_name(module, "sk.overload_types") if module is not None else fn.__module__
        m = Module.of(name)
        if m.param_types is not None and m.param_types is not fn:
            raise ValueError(f"sk.overload_types: module {name!r} already declares its overload types")
        m.param_types = fn
        return fn
    return declare if types_of is None else declare(types_of)


def instantiate(real: Any, module: Any = None) -> SimpleNamespace:
    """The overloads for float type ``real`` of every generic kernel of ``module`` (a module
    or its name; default: the caller's), by kernel name, from the types the module declares
    with :func:`overload_types`. Nothing compiles until one of them is launched; then all
    compile together.

    Example::

        k = sk.instantiate(sk.float64, "my.sim")
        sk.launch(k.integrate, n, inputs=[x64, v64, 0.01])
    """
    name = _module_name(module, "sk.instantiate")
    real = T.resolve(real)
    if not (isinstance(real, T.ScalarType) and real.is_float):
        raise TypeError(f"sk.instantiate takes a float type (sk.float32, sk.float64), got {real!r}")
    if name not in Module._registry or not Module._registry[name].generics:
        raise ValueError(f"sk.instantiate: module {name!r} defines no generic kernels")
    return SimpleNamespace(**Module._registry[name].instantiate(real))


def load_module(module: Any = None, device: str | None = None) -> None:
    """Compile (or load from the cache) every kernel of a Python module now, not at its first launch.

    ``module``: a module object or its name, default the caller's; ``device``: where to
    load them, default ``sk.get_device()``. Generic kernels load the overloads made so far
    (see :func:`instantiate` to make those of a float type first).

    Example::

        sk.load_module()                     # this file's kernels, for the default device
        sk.load_module("my.sim", "cuda:0")
    """
    name = _module_name(module, "sk.load_module")
    kernels = [k for m in list(Module._registry.values()) if m.name == name or (m.parent and m.parent.name == name)
               for k in m.kernels]
    if not kernels:
        raise ValueError(f"sk.load_module: module {name!r} defines no kernels")
    dev = D.require(D.state.default if device is None else device, "device")
    for k in kernels:
        if dev == "cpu":
            k.loaded()
        else:
            from .cuda import launch as cuda_launch

            cuda_launch.kernel_for(plan_for(k), dev)


def compile_ahead(*kernels: Any) -> None:
    """Start compiling the CPU modules of ``kernels`` (kernels, or namespaces of them as
    :func:`instantiate` gives) that are not loaded yet, on compiler threads (one per core;
    the longest sources start first), and return at once: independent modules then compile
    at the same time, and each first launch waits only for its own module. The integrators
    call it before their first step's launches. The runs it starts are announced once,
    together, from their start until the last one ends ("simkit: compiling 12 kernels of 3
    modules at once: ..." at INFO on the ``simkit`` logger; a line with its time ticking
    under ``simkit run``).

    Example::

        sk.compile_ahead(integrate, project)          # two kernels of two modules: both compile now
        sk.launch(integrate, n, inputs=[x, v])        # waits for its module's compile only
    """
    mode = config.mode
    seen = set()
    sources = []   # (module name, kernel count, source, library name) of each module to compile
    for item in kernels:
        for k in vars(item).values() if isinstance(item, SimpleNamespace) else [item]:
            m = getattr(k, "module", None)
            if not isinstance(m, Module) or id(m) in seen or mode in m.ahead:
                continue
            seen.add(id(m))
            m.ahead.add(mode)
            found = m.ahead_source()
            if found is not None:
                sources.append((m.name, *found))
    # the longest sources first: with more modules than cores, the last to start is a short one
    started = []   # (module name, kernel count, run)
    for name, n, source, safe in sorted(sources, key=lambda found: -len(found[2])):
        run = compiler.build_shared_ahead(source, safe, announce=False)
        if run is not None:
            started.append((name, n, run))
    if not started:
        return
    if len(started) == 1:
        what = f"{_kernels(started[0][1])} of module {started[0][0]}"
    else:
        what = (f"{_kernels(sum(n for _, n, _ in started))} of {len(started)} modules at once: "
                + ", ".join(name for name, _, _ in started))
    compiler.announce_runs(what, [run for _, _, run in started])
