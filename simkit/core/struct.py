"""``@sk.struct``: named groups of scalars, vectors, matrices, arrays and nested structs.

A struct instance is passed to a kernel by value; its array fields carry their
grads exactly as plain array arguments do.

Example::

    @sk.struct
    class Springs:
        ke: sk.array(dtype=float)
        rest: float

    s = Springs(ke=sk.zeros(10), rest=0.5)
"""

from __future__ import annotations

import ctypes
import hashlib
from typing import Any

import numpy as np

from . import types as T
from .array import Array, ArrayType, as_array


def _field_type(cls, name, t):
    t = T.resolve(t)
    kind = getattr(t, "_sk_kind", None)
    if kind in ("scalar", "vec", "mat", "quat", "transform", "array", "struct"):
        return t
    raise TypeError(f"@sk.struct {cls.__name__}: field '{name}' has unsupported type {t!r} "
                    "(use a scalar, vector, matrix, quat, transform, sk.array(dtype=...) or another @sk.struct)")


def struct(cls):
    """Turn an annotated class into a struct type usable as a kernel argument."""
    annotations = cls.__dict__.get("__annotations__", {})
    if not annotations:
        raise TypeError(f"@sk.struct {cls.__name__} declares no fields")
    fields = {name: _field_type(cls, name, t) for name, t in annotations.items()}
    spec = f"{cls.__module__}.{cls.__qualname__}:" + ";".join(
        f"{n}:{getattr(t, '_sk_ctype', '')}" for n, t in fields.items())
    cname = f"{cls.__name__}_{hashlib.sha256(spec.encode()).hexdigest()[:8]}"
    ctypes_cls = type(f"{cls.__name__}_C", (ctypes.Structure,), {"_fields_": [(n, T.ctypes_of(t)) for n, t in fields.items()]})

    def __init__(self, **kwargs):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_c", ctypes_cls())
        for n, t in fields.items():
            if t._sk_kind == "array":
                self._values[n] = None
            elif t._sk_kind == "struct":
                setattr(self, n, t())
            else:
                setattr(self, n, t())
        for k, v in kwargs.items():
            if k not in fields:
                raise AttributeError(f"{cls.__name__} has no field '{k}' (fields: {', '.join(fields)})")
            setattr(self, k, v)

    def __setattr__(self, name, value):
        t = fields.get(name)
        if t is None:
            raise AttributeError(f"{cls.__name__} has no field '{name}' (fields: {', '.join(fields)})")
        kind = t._sk_kind
        if kind == "array":
            if value is not None:
                value = as_array(value, t, f"{cls.__name__}.{name}")
                if value.dtype is not t.dtype or value.ndim != t.ndim:
                    raise TypeError(f"{cls.__name__}.{name} expects {t!r}, got array of "
                                    f"{T.type_name(value.dtype)} with ndim={value.ndim}")
        elif kind == "struct":
            if not isinstance(value, t):
                raise TypeError(f"{cls.__name__}.{name} expects a {t.__name__}, got {type(value).__name__}")
        elif kind == "scalar":
            if isinstance(value, (T.Composite, np.ndarray)) and np.ndim(value):
                raise TypeError(f"{cls.__name__}.{name} expects {T.type_name(t)}, got {type(value).__name__}")
            value = t(value)
            setattr(self._c, name, value.item())
        else:
            try:
                value = value if isinstance(value, t) else t(value)
            except (ValueError, TypeError) as e:
                raise TypeError(f"{cls.__name__}.{name} expects {T.type_name(t)}: {e}") from None
            ctypes.memmove(ctypes.addressof(self._c) + getattr(ctypes_cls, name).offset,
                           np.ascontiguousarray(value._v).ctypes.data, T.type_size(t))
        self._values[name] = value

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"{cls.__name__} has no field '{name}'") from None

    def _sk_pack(self):
        """The C layout of this struct with current array headers (grads may appear later)."""
        base = ctypes.addressof(self._c)
        for n, t in fields.items():
            v = self._values[n]
            off = getattr(ctypes_cls, n).offset
            if t._sk_kind == "array":
                if v is None:
                    ctypes.memset(base + off, 0, ctypes.sizeof(ArrayType._sk_ctypes))
                else:
                    ctypes.memmove(base + off, ctypes.addressof(v._hdr), ctypes.sizeof(v._hdr))
            elif t._sk_kind == "struct":
                inner = v._sk_pack()
                ctypes.memmove(base + off, ctypes.addressof(inner), ctypes.sizeof(inner))
        return self._c

    def _sk_arrays(self, prefix=""):
        """(path, array) for every array field, nested structs included."""
        for n, t in fields.items():
            v = self._values[n]
            if t._sk_kind == "array" and v is not None:
                yield prefix + n, v
            elif t._sk_kind == "struct":
                yield from v._sk_arrays(prefix + n + ".")

    def __repr__(self):
        inner = ", ".join(f"{n}={self._values[n]!r}" for n in fields)
        return f"{cls.__name__}({inner})"

    ns = {"__init__": __init__, "__setattr__": __setattr__, "__getattr__": __getattr__, "_sk_pack": _sk_pack,
          "_sk_arrays": _sk_arrays, "__repr__": __repr__, "__doc__": cls.__doc__, "__module__": cls.__module__,
          "__qualname__": cls.__qualname__, "_sk_kind": "struct", "_sk_fields": fields, "_sk_ctype": cname,
          "_sk_ctypes": ctypes_cls, "_sk_shape": (), "__slots__": ("_values", "_c")}
    return type(cls.__name__, (), ns)


def is_struct_instance(v: Any) -> bool:
    return getattr(type(v), "_sk_kind", None) == "struct"
