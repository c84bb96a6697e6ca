"""``@sk.struct``: named groups of scalars, vectors, matrices, arrays and nested structs.

A struct instance is passed to a kernel by value; its array fields carry their
grads exactly as plain array arguments do. A class-level value is the field's
default; fields without one start at zero (identity for quat and transform,
``None`` for arrays).

Example::

    @sk.struct
    class Springs:
        ke: sk.array(dtype=float)
        rest: float = 0.5

    s = Springs(ke=sk.zeros(10))

A struct of values (no array fields) can also be the dtype of an array,
``sk.zeros(10, dtype=MyStruct)``: see :mod:`simkit.core.struct_array`.
"""

from __future__ import annotations

import ctypes
import hashlib
import sys
from typing import Any

import numpy as np

from . import mutation
from . import types as T
from .array import ArrayType
from .device import DeviceMismatch
from .interop import as_array
from .struct_array import numpy_dtype as _numpy_layout

_HDR_SIZE = ctypes.sizeof(ArrayType._sk_ctypes)
EMPTY_PAD = "_sk_pad"  # the one byte field of a struct that declares none
_NULL_HEADER = bytes(_HDR_SIZE)  # an array field set to None


def _resolve_annotation(cls, name, ann):
    """A field annotation as a type; string annotations (``from __future__ import annotations``)
    are evaluated in the class's module, with the class body's names visible."""
    if not isinstance(ann, str):
        return ann
    module = sys.modules.get(cls.__module__)
    env = dict(vars(module)) if module else {}
    env.update(vars(cls))
    try:
        return eval(ann, env)
    except Exception as e:  # noqa: BLE001 - reported as a bad field type
        raise TypeError(f"@sk.struct {cls.__name__}: cannot evaluate the annotation {ann!r} of field "
                        f"'{name}': {e}") from None


def _field_type(cls, name, t):
    t = T.resolve(t)
    kind = getattr(t, "_sk_kind", None)
    if kind in ("scalar", "vec", "mat", "quat", "transform", "array", "struct"):
        return t
    raise TypeError(f"@sk.struct {cls.__name__}: field '{name}' has unsupported type {t!r} "
                    "(use a scalar, vector, matrix, quat, transform, sk.array(dtype=...) or another @sk.struct)")


def _scalar_value(t, value, where: str):
    """``value`` converted to the numpy scalar of ``t``; floats are refused for integer fields."""
    if isinstance(value, (str, bytes)) or np.ndim(value) != 0 or isinstance(value, T.Composite):
        raise TypeError(f"{where} expects {T.type_name(t)}, got {type(value).__name__}")
    if not isinstance(value, (int, float, bool, np.number, np.bool_, np.ndarray)):
        raise TypeError(f"{where} expects {T.type_name(t)}, got {type(value).__name__}")
    if not t.is_float and np.asarray(value).dtype.kind == "f":
        raise TypeError(f"{where} expects {T.type_name(t)}, got a float ({value!r})")
    try:
        return t(value)
    except OverflowError:
        raise ValueError(f"{where}: {value!r} is out of range for {T.type_name(t)}") from None


class StructBase:
    """The base of every ``@sk.struct`` class: its methods read the class's layout, which
    :func:`struct` computes once per class (``_sk_fields``, ``_sk_ctypes``, ...).

    Example::

        @sk.struct
        class Pair:
            a: float
            b: sk.vec3

        isinstance(Pair(), StructBase)       # True
    """

    __slots__ = ()
    _sk_name: str                  # the decorated class's name, for messages
    _sk_fields: dict               # field name -> type, in declaration order
    _sk_defaults: dict             # field name -> class-level default
    _sk_ctypes: type               # the ctypes.Structure of the C layout
    _sk_repack: list               # (name, kind, start, end) of the fields _sk_pack refreshes
    _sk_np_dtype: Any              # the numpy dtype of one array element (None if it holds arrays)

    def __init__(self, *args, **kwargs):
        cls, fields = type(self), self._sk_fields
        names = list(fields)
        if len(args) > len(names):
            raise TypeError(f"{cls._sk_name}() takes at most {len(names)} positional field value(s) "
                            f"(fields: {', '.join(names)}), got {len(args)}")
        for n, v in zip(names, args):  # positional values fill the fields in declaration order
            if n in kwargs:
                raise TypeError(f"{cls._sk_name}() got field '{n}' both by position and by keyword")
            kwargs[n] = v
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_held", False)
        object.__setattr__(self, "_c", cls._sk_ctypes())
        object.__setattr__(self, "_view", memoryview(self._c).cast("B"))
        for k in kwargs:
            if k not in fields:
                raise AttributeError(f"{cls._sk_name} has no field '{k}' (fields: {', '.join(fields)})")
        for n, t in fields.items():
            if n in kwargs:
                self._sk_set_field(n, kwargs[n])
            elif n in cls._sk_defaults:
                self._sk_set_field(n, _copy_default(cls._sk_defaults[n]))
            elif t._sk_kind == "array":
                self._values[n] = None
            else:
                self._sk_set_field(n, t())

    def _sk_set_field(self, name: str, value: Any) -> None:
        """Check ``value`` against field ``name``'s type, convert it, and store it (scalars
        straight into the C layout)."""
        name_of = self._sk_name
        t = self._sk_fields.get(name)
        if t is None:
            raise AttributeError(f"{name_of} has no field '{name}' (fields: {', '.join(self._sk_fields)})")
        where = f"{name_of}.{name}"
        kind = t._sk_kind
        if kind == "array":
            if value is not None:
                value = as_array(value, t, where)
                if value.dtype is not t.dtype or value.ndim != t.ndim:
                    raise TypeError(f"{where} expects {t!r}, got array of "
                                    f"{T.type_name(value.dtype)} with ndim={value.ndim}")
        elif kind == "struct":
            if type(value) is not t:
                raise TypeError(f"{where} expects a {t.__name__} struct, got {type(value).__name__}")
        elif kind == "scalar":
            value = _scalar_value(t, value, where)
            # a float16 or bfloat16 goes in as its bit pattern (ctypes has no such type)
            setattr(self._c, name, (value.view(np.uint16) if t in T.SMALL_FLOATS else value).item())
        elif value is None:  # resets the field to what a struct built without it holds, as Warp does
            value = t()
        else:
            if np.ndim(value) == 0 and not isinstance(value, T.Composite):
                raise TypeError(f"{where} expects {T.type_name(t)}, got a single {type(value).__name__}: build "
                                f"the value ({T.type_name(t)}(...)), a number is not spread over its components")
            if type(value) is not t:
                try:
                    value = t(value)
                except (ValueError, TypeError) as e:
                    raise TypeError(f"{where} expects {T.type_name(t)}: {e}") from None
        self._values[name] = value

    def __setattr__(self, name, value):
        self._sk_set_field(name, value)
        # a recorded step (core/step_cache.py) that holds this struct packed the old value: it
        # must not replay. Not while __init__ fills a new struct, which no recording can hold
        # yet, nor for a struct no recording reached (step_cache marks those it reaches)
        if getattr(self, "_held", True):
            mutation.count[0] += 1

    def __getattr__(self, name):
        if name.startswith("_"):  # never recurse through the slots while half-built
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"{self._sk_name} has no field '{name}'") from None

    def _sk_pack(self, device="cpu", prefix=""):
        """The C layout of this struct, refreshed from the current field values.

        Byte copies by memoryview slice: a few hundred ns per field, no ctypes calls.
        An array field on another device than ``device`` raises DeviceMismatch naming
        the field (``prefix`` is the path of this struct inside the launch argument).
        """
        view, values = self._view, self._values
        for n, kind, start, end in self._sk_repack:
            v = values[n]
            if kind == "array":
                if v is None:
                    view[start:end] = _NULL_HEADER
                else:
                    if v.device != device:
                        raise DeviceMismatch(v.device, prefix + n)
                    view[start:end] = v._hdr_view
            elif kind == "struct":
                v._sk_pack(device, prefix + n + ".")
                view[start:end] = v._view
            else:
                view[start:end] = v._v.tobytes()
        return self._c

    def _sk_arrays(self, prefix=""):
        """(path, array) for every array field, nested structs included."""
        for n, t in self._sk_fields.items():
            v = self._values[n]
            if t._sk_kind == "array" and v is not None:
                yield prefix + n, v
            elif t._sk_kind == "struct":
                yield from v._sk_arrays(prefix + n + ".")

    def __repr__(self):
        def show(v):
            return str(v) if isinstance(v, (np.number, np.bool_)) else repr(v)
        inner = ", ".join(f"{n}={show(self._values[n])}" for n in self._sk_fields)
        return f"{self._sk_name}({inner})"


class _NumpyDtype:
    """Warp's ``numpy_dtype()`` of a struct class (left out where a field has that name)."""

    __slots__ = ()

    @classmethod
    def numpy_dtype(cls):
        """Warp's name: the numpy structured dtype of one element of an array of this struct."""
        if cls._sk_np_dtype is None:
            raise TypeError(f"{cls._sk_name} holds arrays, so it has no numpy dtype (it cannot be an array element)")
        return cls._sk_np_dtype


class _NumpyValue:
    """Warp's ``numpy_value()`` of a struct instance (left out where a field has that name)."""

    __slots__ = ()

    def numpy_value(self):
        """Warp's name: this instance as a numpy structured scalar of :meth:`numpy_dtype`."""
        if type(self)._sk_np_dtype is None:
            raise TypeError(f"{self._sk_name} holds arrays, so it has no numpy dtype (it cannot be an array element)")
        return np.frombuffer(bytes(self._sk_pack()), type(self)._sk_np_dtype)[0].copy()


# What the struct class's own namespace may not replace: the methods of StructBase that make it a struct.
_STRUCT_METHODS = ("__init__", "__setattr__", "__getattr__", "_sk_pack", "_sk_arrays", "__repr__")


def struct(cls):
    """Turn an annotated class into a struct type usable as a kernel argument.

    A class without annotated fields is allowed (as in Warp): its instances carry
    nothing, but can be passed to kernels and functions, e.g. to pick an overload.
    Methods, properties and other non-field attributes of the class are kept.

    Example::

        @sk.struct
        class Springs:
            ke: sk.array(dtype=float)
            rest: float = 0.5
    """
    annotations = cls.__dict__.get("__annotations__", {})
    fields = {name: _field_type(cls, name, _resolve_annotation(cls, name, t)) for name, t in annotations.items()}
    defaults = {name: cls.__dict__[name] for name in fields if name in cls.__dict__}
    spec = f"{cls.__module__}.{cls.__qualname__}:" + ";".join(
        f"{n}:{getattr(t, '_sk_ctype', '')}" for n, t in fields.items())
    cname = f"{cls.__name__}_{hashlib.sha256(spec.encode()).hexdigest()[:8]}"
    # A struct without fields still takes one byte, as an empty C++ struct does (and as in Warp):
    # the host layout must match the generated one, which gets the same pad field (struct_source).
    c_fields = [(n, T.ctypes_of(t)) for n, t in fields.items()] or [(EMPTY_PAD, ctypes.c_uint8)]
    ctypes_cls = type(f"{cls.__name__}_C", (ctypes.Structure,), {"_fields_": c_fields})
    offsets = {n: getattr(ctypes_cls, n).offset for n in fields}
    # What _sk_pack refreshes on every launch: array headers (a grad may have been
    # allocated since the field was set), composites (they may have been edited in
    # place, s.v[0] = 1) and nested structs. Scalars are written when set.
    repack = [(n, t._sk_kind, offsets[n], offsets[n] + (T.type_size(t) if t._sk_kind != "array" else _HDR_SIZE))
              for n, t in fields.items() if t._sk_kind != "scalar"]
    ns = {k: v for k, v in cls.__dict__.items()
          if k not in fields and k not in ("__dict__", "__weakref__", "__annotations__") and k not in _STRUCT_METHODS}
    ns.update({"_sk_kind": "struct", "_sk_name": cls.__name__, "_sk_fields": fields, "_sk_defaults": defaults,
               "_sk_ctype": cname, "_sk_ctypes": ctypes_cls, "_sk_shape": (), "_sk_repack": repack,
               # the host layout of one element of an array of this struct (None if it holds arrays)
               "_sk_np_dtype": _numpy_layout(fields, ctypes_cls),
               "__slots__": ("_values", "_c", "_view", "_held")})
    # Warp's numpy_dtype / numpy_value, unless a field has that name (the field wins, as
    # a method of the user's own does by being in the namespace)
    bases = (StructBase,) + tuple(m for name, m in (("numpy_dtype", _NumpyDtype), ("numpy_value", _NumpyValue))
                                  if name not in fields)
    new = type(cls.__name__, bases, ns)
    if defaults:
        new()  # a bad default is reported now, naming its field, not at the first use
    return new


def _copy_default(v: Any) -> Any:
    """A per-instance copy of a class-level default: composites and structs are values, not shared."""
    if isinstance(v, T.Composite):
        return type(v)._wrap(v._v.copy())
    if is_struct_instance(v):
        return type(v)(**{n: _copy_default(x) for n, x in v._values.items()})
    return v


def is_struct_instance(v: Any) -> bool:
    return getattr(type(v), "_sk_kind", None) == "struct"
