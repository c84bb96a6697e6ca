"""Arrays of structs: the host (numpy) side of ``sk.array(..., dtype=MyStruct)``.

One element of an array of ``@sk.struct`` type is laid out exactly as the C++ struct
codegen emits (ctypes computes the offsets with the platform's C alignment rules, as
Warp does), so the kernel indexes the same bytes numpy sees. On the host the elements
are a numpy *structured* array: one named field per struct field, in declaration order,
at the C offsets (padding included in ``itemsize``); a vector, matrix, quat or transform
field is a subarray of its scalar (``('v', '<f4', (3,))``), a nested struct is a nested
structured dtype, a float16 field is ``<f2``.

Only structs of values (scalars, vectors, matrices, quats, transforms and such structs)
can be array elements: a struct with an array field has no fixed host value.

Example::

    @sk.struct
    class Particle:
        x: sk.vec3
        mass: float
        id: int

    p = sk.zeros(100, dtype=Particle, requires_grad=True)
    p.numpy()["mass"]           # a (100,) float32 view on the CPU
    p.grad.dtype is Particle    # gradients of the float fields; id's stays zero
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import types as T


def is_struct(t: Any) -> bool:
    return getattr(t, "_sk_kind", None) == "struct"


def field_np_dtype(t: Any) -> np.dtype | None:
    """The numpy dtype of one value of field type ``t``; None for a type without a host value
    (an array, or a struct holding one)."""
    kind = getattr(t, "_sk_kind", None)
    if kind == "scalar":
        return np.dtype(t.np_dtype)
    if kind == "struct":
        return t._sk_np_dtype
    if kind in ("vec", "mat", "quat", "transform"):
        return np.dtype((t._sk_scalar.np_dtype, tuple(t._sk_shape)))
    return None


def numpy_dtype(fields: dict, ctypes_cls) -> np.dtype | None:
    """The structured numpy dtype of a struct with ``fields`` laid out as ``ctypes_cls``."""
    formats = [field_np_dtype(t) for t in fields.values()]
    if any(f is None for f in formats):
        return None
    import ctypes

    offsets = [getattr(ctypes_cls, n).offset for n in fields]
    return np.dtype({"names": list(fields), "formats": formats, "offsets": offsets,
                     "itemsize": ctypes.sizeof(ctypes_cls)})


def check_element_type(t: Any) -> None:
    """Refuse a struct that cannot be an array element (it holds arrays)."""
    if t._sk_np_dtype is None:
        held = [n for n, ft in t._sk_fields.items() if field_np_dtype(ft) is None]
        raise TypeError(f"an array of {t.__name__} structs is not supported: its field(s) {', '.join(held)} "
                        "hold arrays; only structs of scalars, vectors, matrices, quats, transforms and "
                        "such structs can be array elements")


def has_float_fields(t: Any) -> bool:
    for ft in t._sk_fields.values():
        kind = ft._sk_kind
        if (kind == "struct" and has_float_fields(ft)) or (kind == "scalar" and ft.is_float) or \
                (kind in ("vec", "mat", "quat", "transform") and ft._sk_scalar.is_float):
            return True
    return False


def _check_fields(src: np.dtype, t: Any, where: str, path: str = "") -> None:
    """``src`` (a numpy dtype) holds the fields of struct ``t``, by name and shape, at every depth."""
    want = t._sk_np_dtype
    if src.names is None:
        raise TypeError(f"{where}: data of numpy dtype {src} is not a structured array; an array of {t.__name__} "
                        f"takes a numpy structured array with fields {list(want.names)} "
                        f"(e.g. the .numpy() of one), or a list of {t.__name__} instances")
    if list(src.names) != list(want.names):
        raise TypeError(f"{where}: the structured data{' field ' + path if path else ''} has fields "
                        f"{list(src.names)}, but {t.__name__} has {list(want.names)}")
    for name, ft in t._sk_fields.items():
        sub = src.fields[name][0]
        here = f"{path}.{name}" if path else name
        if ft._sk_kind == "struct":
            _check_fields(sub, ft, where, here)
            continue
        exp = field_np_dtype(ft)
        if sub.shape != exp.shape:
            raise TypeError(f"{where}: field '{here}' has shape {sub.shape} in the data, but {T.type_name(ft)} "
                            f"needs {exp.shape}")
        base, wbase = sub.base if sub.shape else sub, exp.base if exp.shape else exp
        if base.kind not in "biuf" or (base.kind == "f" and wbase.kind in "biu"):
            raise TypeError(f"{where}: field '{here}' is {base} in the data, which does not convert to "
                            f"{T.type_name(ft)}")


def _copy_fields(dst: np.ndarray, src: np.ndarray, t: Any) -> None:
    for name, ft in t._sk_fields.items():
        if ft._sk_kind == "struct":
            _copy_fields(dst[name], src[name], ft)
        else:
            dst[name] = src[name]


def element_bytes(value: Any, t: Any, where: str) -> bytes:
    """The C bytes of one struct instance of type ``t`` (or of one structured numpy scalar of its fields)."""
    if isinstance(value, np.void) and value.dtype.names is not None:
        if value.dtype != t._sk_np_dtype:
            _check_fields(value.dtype, t, where)
            out = np.empty((), t._sk_np_dtype)
            _copy_fields(out, np.asarray(value), t)
            return out.tobytes()
        return value.tobytes()
    if type(value) is not t:
        raise TypeError(f"{where}: expected a {t.__name__} instance, got {type(value).__name__}")
    return bytes(value._sk_pack())


def host_data(data: Any, t: Any, where: str) -> np.ndarray:
    """``data`` as a new numpy array of ``t``'s structured dtype: from structured numpy data
    (fields checked by name and shape, values converted), one ``t`` instance, or (nested)
    lists of them."""
    want = t._sk_np_dtype
    if is_struct(type(data)):
        return np.frombuffer(element_bytes(data, t, where), want).reshape(()).copy()
    if hasattr(data, "numpy") and is_struct(getattr(data, "dtype", None)):
        data = data.numpy()  # an sk array of structs
    if isinstance(data, np.ndarray) or isinstance(data, np.void):
        data = np.asarray(data)
        if data.dtype == want:
            return data.copy()
        _check_fields(data.dtype, t, where)
        out = np.empty(data.shape, want)
        _copy_fields(out, data, t)
        return out
    if isinstance(data, (list, tuple)):
        shape, flat = [], []

        def walk(x, depth):
            if isinstance(x, (list, tuple)):
                if len(shape) <= depth:
                    shape.append(len(x))
                elif shape[depth] != len(x):
                    raise ValueError(f"{where}: the nested lists of {t.__name__} are ragged")
                for y in x:
                    walk(y, depth + 1)
            else:
                if depth != len(shape):
                    raise ValueError(f"{where}: the nested lists of {t.__name__} are ragged")
                flat.append(element_bytes(x, t, where))
        walk(data, 0)
        return np.frombuffer(b"".join(flat), want).reshape(shape).copy()
    raise TypeError(f"{where}: cannot make {t.__name__} elements from {type(data).__name__}; give a numpy "
                    f"structured array, a {t.__name__} instance or a list of them")


# -- the float values of struct elements, as components (autograd.jacobian counts them) ------

def float_dtype(t: Any) -> np.dtype:
    """``t``'s structured dtype with its float fields alone (same offsets and itemsize): a view of
    an array of ``t`` through it sees the values that carry gradients."""
    full = t._sk_np_dtype
    names = [n for n, ft in t._sk_fields.items() if T.holds_floats(ft)]
    formats = [float_dtype(t._sk_fields[n]) if is_struct(t._sk_fields[n]) else full.fields[n][0] for n in names]
    return np.dtype({"names": names, "formats": formats, "offsets": [full.fields[n][1] for n in names],
                     "itemsize": full.itemsize})


def float_components(h: np.ndarray, t: Any) -> np.ndarray:
    """The float values of the struct elements ``h`` as float64 of shape ``h.shape + (k,)``: per
    element, its float fields in declaration order, each flattened (nested structs in place)."""
    from numpy.lib import recfunctions

    return recfunctions.structured_to_unstructured(np.ascontiguousarray(h).view(float_dtype(t)), dtype=np.float64)


def set_float_components(h: np.ndarray, t: Any, values: np.ndarray) -> None:
    """Write ``values`` (as from :func:`float_components`) into the float fields of ``h`` (C-contiguous)."""
    from numpy.lib import recfunctions

    fd = float_dtype(t)
    h.view(fd)[...] = recfunctions.unstructured_to_structured(np.asarray(values).reshape(h.shape + (-1,)), dtype=fd)
