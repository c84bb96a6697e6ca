"""Value types of the kernel language: scalars, vectors, matrices, quaternions, transforms.

Every type object carries the same small protocol, read by the frontend, codegen
and the argument packer:

- ``_sk_kind``: "scalar", "vec", "mat", "quat", "transform" (arrays and structs
  add "array" and "struct" in their own modules)
- ``_sk_scalar``: the scalar component type (a :class:`ScalarType`)
- ``_sk_shape``: the component shape, ``()`` for scalars, ``(3,)`` for vec3 ...
- ``_sk_ctype``: the C++ spelling used by generated code

Python-side values of the composite types behave like small sequences and convert
to and from numpy::

    v = sk.vec3(1.0, 2.0, 3.0)
    v[0] + v[2]          # 4.0
    np.asarray(v)        # array([1., 2., 3.], dtype=float32)
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import mutation


class ScalarType:
    """A scalar type such as ``sk.float32``; calling it converts a Python number.

    Example::

        sk.float64(1.5)      # numpy.float64(1.5)
    """

    _sk_kind = "scalar"
    _sk_shape: tuple[int, ...] = ()

    def __init__(self, name: str, np_type: type, ctype: str, kind: str, c_type: Any):
        self.__name__ = name
        self.np_dtype = np.dtype(np_type)
        self._sk_ctype = ctype
        self.kind = kind  # 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool
        self.c_type = c_type  # the ctypes type used to pack launch arguments
        self._sk_scalar = self

    def __call__(self, x: Any = 0):
        if x is None or isinstance(x, (str, bytes)):  # numpy would make None a NaN
            raise TypeError(f"sk.{self.__name__}() takes a number, got {type(x).__name__}")
        return self.np_dtype.type(x)

    def __repr__(self) -> str:
        return f"sk.{self.__name__}"

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"


float32 = ScalarType("float32", np.float32, "float", "f", ctypes.c_float)
float64 = ScalarType("float64", np.float64, "double", "f", ctypes.c_double)
int32 = ScalarType("int32", np.int32, "int32_t", "i", ctypes.c_int32)
int64 = ScalarType("int64", np.int64, "int64_t", "i", ctypes.c_int64)
uint32 = ScalarType("uint32", np.uint32, "uint32_t", "u", ctypes.c_uint32)
bool_ = ScalarType("bool", np.bool_, "bool", "b", ctypes.c_bool)
bool_.__name__ = "bool"
# Narrow and wide integers, mostly for data: C++ computes on them in int and stores back
# with wrap-around, as numpy does. Atomics on the 8- and 16-bit ones are refused (a GPU has none).
int8 = ScalarType("int8", np.int8, "int8_t", "i", ctypes.c_int8)
uint8 = ScalarType("uint8", np.uint8, "uint8_t", "u", ctypes.c_uint8)
int16 = ScalarType("int16", np.int16, "int16_t", "i", ctypes.c_int16)
uint16 = ScalarType("uint16", np.uint16, "uint16_t", "u", ctypes.c_uint16)
uint64 = ScalarType("uint64", np.uint64, "uint64_t", "u", ctypes.c_uint64)

# Half precision: stored in 16 bits, computed in float32 (each operation rounds back to half).
float16 = ScalarType("float16", np.float16, "sk::half", "f", ctypes.c_uint16)

SCALARS = (float32, float64, int32, int64, uint32, bool_, int8, uint8, int16, uint16, uint64, float16)

# bfloat16 (Warp's wp.bfloat16): float32's range with 8 significant bits, stored in 16 bits and
# computed in float32 like float16 (each operation rounds back), on the CPU and the GPU. Its
# numpy dtype is ml_dtypes.bfloat16 (numpy has none); without the ml_dtypes package installed
# simkit has no bfloat16 and sk.bfloat16 says so.
try:
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes comes with jax and with warp-lang
    _ml_dtypes = None
if _ml_dtypes is not None:
    bfloat16 = ScalarType("bfloat16", _ml_dtypes.bfloat16, "sk::bfloat16", "f", ctypes.c_uint16)
    SCALARS = SCALARS + (bfloat16,)
else:
    bfloat16 = None
# The 16-bit floats, passed to launches and struct fields as their bit patterns (ctypes has no such type).
SMALL_FLOATS = tuple(t for t in (float16, bfloat16) if t is not None)


class ScalarCategory:
    """A generic component type, Warp's ``wp.Int``, ``wp.Float`` and ``wp.Scalar`` (and
    ``typing.Any`` as a vector's or matrix's ``dtype``): as an annotation it takes every scalar
    type of its kind, one overload each, alone (``x: sk.Float``) or as the components of a vector
    or matrix (``sk.types.vector(3, sk.Float)``).

    Example::

        @sk.func
        def total(v: sk.types.vector(3, sk.Float)):
            return v[0] + v[1] + v[2]          # one overload for vec3, another for vec3d
    """

    _sk_kind = "scalar_category"
    _sk_shape: tuple[int, ...] = ()
    _sk_ctype = ""  # never compiled: each overload has a concrete type

    def __init__(self, name: str, kinds: str):
        self.__name__ = name
        self.kinds = kinds  # the ScalarType kinds it takes: 'f', 'i', 'u', 'b'
        self._sk_scalar = self

    def accepts(self, t: Any) -> bool:
        """Whether the concrete scalar type ``t`` is of this category."""
        return isinstance(t, ScalarType) and t.kind in self.kinds

    def __repr__(self) -> str:
        return f"sk.{self.__name__}" if self.__name__ != "Any" else "Any"


Int = ScalarCategory("Int", "iu")
Float = ScalarCategory("Float", "f")
Scalar = ScalarCategory("Scalar", "iuf")
ANY_SCALAR = ScalarCategory("Any", "iufb")
_SCALAR_BY_NP = {s.np_dtype: s for s in SCALARS}


def scalar_from_numpy(dt: Any) -> ScalarType:
    """The simkit scalar type for a numpy dtype; ``TypeError`` if there is none."""
    dt = np.dtype(dt)
    try:
        return _SCALAR_BY_NP[dt]
    except KeyError:
        names = ", ".join(str(s.np_dtype) for s in SCALARS)
        raise TypeError(f"numpy dtype {dt} has no simkit scalar type (supported: {names})") from None


def dtype_from_numpy(numpy_dtype: Any) -> ScalarType:
    """The simkit scalar type of a numpy dtype (Warp's ``wp.dtype_from_numpy``).

    Takes a ``np.dtype``, a numpy scalar type or a dtype string; Python's own ``float``,
    ``int`` and ``bool`` are refused, since numpy reads ``float`` as float64 where a simkit
    annotation reads it as float32.

    Example::

        sk.dtype_from_numpy(np.float64)           # sk.float64
        sk.dtype_from_numpy(np.dtype("int32"))    # sk.int32
    """
    # Identity, not ==: np.dtype("float64") == float is True.
    if any(numpy_dtype is t for t in (float, int, bool, complex)):
        raise TypeError(f"dtype_from_numpy: numpy_dtype must be a numpy dtype (np.float32, np.dtype('int64'), "
                        f"...), got Python's {numpy_dtype.__name__}, which numpy and simkit read differently")
    if numpy_dtype is None:  # np.dtype(None) would be float64
        raise TypeError("dtype_from_numpy: numpy_dtype must be a numpy dtype, got None")
    try:
        dt = np.dtype(numpy_dtype)
    except TypeError:
        raise TypeError(f"dtype_from_numpy: numpy_dtype must be a numpy dtype, got {numpy_dtype!r}") from None
    try:
        return scalar_from_numpy(dt)
    except TypeError as e:
        raise TypeError(f"dtype_from_numpy: {e}") from None


def dtype_to_numpy(dtype: Any) -> type:
    """The numpy scalar type of a simkit scalar type (Warp's ``wp.dtype_to_numpy``).

    Vectors, matrices, quats and transforms are refused with a TypeError: take their
    component type first (``sk.types.type_scalar_type(sk.vec3)``).

    Example::

        sk.dtype_to_numpy(sk.float32)     # numpy.float32
        sk.dtype_to_numpy(float)          # numpy.float32: float means float32 in simkit
    """
    s = resolve(dtype)
    if isinstance(s, ScalarType):
        return s.np_dtype.type
    kind = getattr(s, "_sk_kind", None)
    if kind in ("vec", "mat", "quat", "transform"):
        raise TypeError(f"dtype_to_numpy: dtype must be a scalar type, got {type_name(s)}, a {kind} of "
                        f"{s._sk_scalar.__name__}; pass its component type, sk.types.type_scalar_type({type_name(s)})")
    names = ", ".join(x.__name__ for x in SCALARS)
    raise TypeError(f"dtype_to_numpy: dtype must be a simkit scalar type ({names}), got {dtype!r}")


# ---------------------------------------------------------------------------
# Composite values
# ---------------------------------------------------------------------------


class Composite:
    """Base of vector, matrix, quaternion and transform values (fixed-size, numpy-backed)."""

    _sk_kind = ""
    _sk_scalar: ScalarType = float32
    _sk_shape: tuple[int, ...] = ()
    _sk_ctype = ""
    # _held: a recorded step may have baked this value in (core/step_cache.py marks what it
    # can reach), so changing it in place counts as a change; any other value changes freely
    __slots__ = ("_v", "_held")

    def __init__(self, *args: Any):
        object.__setattr__(self, "_held", False)
        n = int(np.prod(self._sk_shape))
        dt = self._sk_scalar.np_dtype
        name = type(self).__name__
        if len(args) == 0:
            self._v = np.zeros(self._sk_shape, dt)
            return
        for a in args:  # numpy would turn a None (or a list holding one) into NaN
            if a is None or (isinstance(a, (list, tuple)) and np.asarray(a).dtype.kind not in "biuf"):
                raise TypeError(f"{name}() takes numbers or sequences of numbers, got {a!r}")
        try:
            if len(args) == 1 and np.ndim(args[0]) == 0:
                self._v = np.full(self._sk_shape, args[0], dt)
                return
            flat = np.concatenate([np.ravel(np.asarray(a, dtype=dt)) for a in args])
        except (TypeError, ValueError) as e:
            raise TypeError(f"{name}() takes numbers or sequences of numbers: {e}") from None
        if flat.size != n:
            raise ValueError(f"{name} takes {n} components, got {flat.size}")
        self._v = flat.reshape(self._sk_shape)

    @classmethod
    def _wrap(cls, arr: np.ndarray):
        obj = cls.__new__(cls)
        object.__setattr__(obj, "_v", np.asarray(arr, dtype=cls._sk_scalar.np_dtype).reshape(cls._sk_shape))
        object.__setattr__(obj, "_held", False)
        return obj

    def _changed(self) -> None:
        """Count an in-place change where a recorded step may hold this value (a value made
        some other way than __init__ or _wrap counts as held)."""
        if getattr(self, "_held", True):
            mutation.count[0] += 1

    def __array__(self, dtype=None, copy=None):
        if copy is False and (dtype is None or np.dtype(dtype) == self._v.dtype):
            return self._v
        return self._v.copy() if dtype is None else self._v.astype(dtype)

    def numpy(self) -> np.ndarray:
        """A numpy copy of the components."""
        return self._v.copy()

    def __len__(self) -> int:
        return self._sk_shape[0]

    def __iter__(self):
        for i in range(self._sk_shape[0]):
            yield self[i]

    def __getitem__(self, idx):
        r = self._v[idx]
        return r.item() if np.ndim(r) == 0 else r.copy()

    def __setitem__(self, idx, value):
        self._v[idx] = value
        self._changed()  # launches bake values in: a recorded step must not replay this one stale

    def __eq__(self, other) -> bool:
        try:
            o = np.asarray(other, dtype=self._v.dtype)
        except (TypeError, ValueError):
            return NotImplemented
        return o.shape == self._v.shape and bool(np.all(o == self._v))

    def __ne__(self, other) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        # str() of a numpy scalar is the shortest text that round-trips at its own
        # precision: vec3(0.1, ...) rather than vec3(0.10000000149011612, ...).
        comps = ", ".join(str(x) for x in self._v.ravel())
        return f"{type(self).__name__}({comps})"

    def __str__(self) -> str:
        """Warp's printing: a list of the components, ``[1.0, 2.0, 3.0]``; a matrix as a list of rows."""
        def row(r):
            return "[" + ", ".join(str(x) for x in r) + "]"
        if self._v.ndim == 2:
            return "[" + ",\n ".join(row(r) for r in self._v) + "]"
        return row(self._v)

    # Arithmetic mirrors the kernel language's operators: + and - between values of
    # the same shape (or a scalar), * and / by a scalar.
    def _operand(self, o, op: str):
        if isinstance(o, Composite):
            if o._sk_shape != self._sk_shape:
                raise TypeError(f"unsupported operand shapes for {op}: {type(self).__name__} and {type(o).__name__}")
            return o._v
        if isinstance(o, (str, bytes)):
            return None
        try:
            arr = np.asarray(o)
        except (TypeError, ValueError):
            return None
        if arr.dtype.kind not in "biuf":
            return None
        if arr.ndim and arr.shape != self._v.shape:
            raise ValueError(f"{type(self).__name__} {op} operand of shape {arr.shape}: "
                             f"expected a scalar or shape {self._v.shape}")
        return arr

    def __add__(self, o):
        x = self._operand(o, "+")
        return NotImplemented if x is None else type(self)._wrap(self._v + x)

    def __radd__(self, o):
        x = self._operand(o, "+")
        return NotImplemented if x is None else type(self)._wrap(x + self._v)

    def __sub__(self, o):
        x = self._operand(o, "-")
        return NotImplemented if x is None else type(self)._wrap(self._v - x)

    def __rsub__(self, o):
        x = self._operand(o, "-")
        return NotImplemented if x is None else type(self)._wrap(x - self._v)

    def __neg__(self):
        return type(self)._wrap(-self._v)

    def __pos__(self):
        return type(self)._wrap(self._v.copy())

    def __mul__(self, o):
        if _is_number(o):
            return type(self)._wrap(self._v * o)
        return NotImplemented

    def __rmul__(self, o):
        if _is_number(o):
            return type(self)._wrap(o * self._v)
        return NotImplemented

    def __truediv__(self, o):
        if _is_number(o):
            return type(self)._wrap(self._v / o)
        return NotImplemented

    def __rtruediv__(self, o):
        if _is_number(o):  # s / v: component by component, as in kernels and Warp
            return type(self)._wrap(o / self._v)
        return NotImplemented


def _is_number(o) -> bool:
    return isinstance(o, (int, float, np.number, np.bool_)) or (isinstance(o, np.ndarray) and o.ndim == 0)


class Vector(Composite):
    """Fixed-length vector value; ``sk.vec3(1, 2, 3)``."""

    _sk_kind = "vec"
    __slots__ = ()

    def __getattr__(self, name):
        i = _component(name, self._sk_shape[0])
        if i is None:
            raise AttributeError(f"{type(self).__name__} has no attribute '{name}'")
        return self._v[i].item()

    def __setattr__(self, name, value):
        i = _component(name, self._sk_shape[0])
        if i is None:
            object.__setattr__(self, name, value)
        else:
            self._v[i] = value
            self._changed()


def _component(name: str, length: int):
    """Index of the component called ``name`` (x, y, z, w) in a value of ``length`` components, else None."""
    i = "xyzw".find(name) if len(name) == 1 else -1
    return i if 0 <= i < length else None


class Matrix(Composite):
    """Fixed-shape matrix value (row-major); ``sk.mat22(1, 2, 3, 4)``."""

    _sk_kind = "mat"
    __slots__ = ()

    def __getitem__(self, idx):
        r = self._v[idx]
        if np.ndim(r) == 0:
            return r.item()
        if np.ndim(r) == 1:
            return vector(r.shape[0], self._sk_scalar)._wrap(r.copy())
        return r.copy()

    def __matmul__(self, o):
        r = self._v @ np.asarray(o, dtype=self._v.dtype)
        if r.ndim == 1:
            return vector(r.shape[0], self._sk_scalar)._wrap(r)
        return matrix(r.shape, self._sk_scalar)._wrap(r)

    def __mul__(self, o):
        if np.ndim(o) == 0:
            return type(self)._wrap(self._v * o)
        return self.__matmul__(o)


class Quat(Composite):
    """Quaternion stored (x, y, z, w); ``sk.quat(0, 0, 0, 1)`` is the identity."""

    _sk_kind = "quat"
    __slots__ = ()

    def __init__(self, *args):
        super().__init__(*args)
        if len(args) == 0:
            self._v[3] = 1.0  # the identity rotation, not a zero quaternion

    __getattr__ = Vector.__getattr__
    __setattr__ = Vector.__setattr__

    def __mul__(self, o):
        if isinstance(o, Quat):
            x1, y1, z1, w1 = self._v
            x2, y2, z2, w2 = o._v
            return type(self)._wrap(np.array([
                w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            ]))
        return super().__mul__(o)


class Transform(Composite):
    """Rigid transform ``(p, q)``: translation vec3 and rotation quat, 7 components."""

    _sk_kind = "transform"
    __slots__ = ()

    def __init__(self, *args, p: Any = None, q: Any = None):
        if args and (p is not None or q is not None):
            raise TypeError(f"{type(self).__name__}() takes components or p=/q= keywords, not both")
        if args:
            super().__init__(*args)
            return
        super().__init__([0, 0, 0, 0, 0, 0, 1])
        if p is not None:
            self.p = p
        if q is not None:
            self.q = q

    @property
    def p(self):
        """The translation (a copy; assign ``t.p = v`` to change it)."""
        return vector(3, self._sk_scalar)._wrap(self._v[:3].copy())

    @p.setter
    def p(self, value):
        self._v[:3] = vector(3, self._sk_scalar)(value)._v
        self._changed()

    @property
    def q(self):
        """The rotation quaternion (x, y, z, w) (a copy; assign ``t.q = r`` to change it)."""
        return quat_of(self._sk_scalar)._wrap(self._v[3:].copy())

    @q.setter
    def q(self, value):
        self._v[3:] = quat_of(self._sk_scalar)(value)._v
        self._changed()


# Warp's suffixes: vec3d, vec3i, vec3b (int8), vec3ub, vec3s (int16), vec3us, vec3l, vec3ul, vec3h (float16).
_CT_SUFFIX = {"float32": "f", "float64": "d", "int32": "i", "int64": "l", "uint32": "ui", "bool": "bool", "int8": "b",
              "uint8": "ub", "int16": "s", "uint16": "us", "uint64": "ul", "float16": "h",
              "bfloat16": "bf"}
_cache: dict[tuple, type] = {}


def _make(base: type, name: str, shape: tuple[int, ...], scalar: ScalarType, ctype: str) -> type:
    """The one type of ``base`` with this shape and scalar; it also carries Warp's class attributes
    ``_shape_``, ``_length_`` (components) and ``_wp_scalar_type_``, which Warp code reads."""
    key = (base, shape, scalar)
    if key not in _cache:
        t = type(name, (base,), {"__slots__": (), "_sk_shape": shape, "_sk_scalar": scalar, "_sk_ctype": ctype,
                                 "_shape_": shape, "_length_": int(np.prod(shape)), "_wp_scalar_type_": scalar,
                                 "__module__": "simkit"})
        _cache[key] = t
    return _cache[key]


def _check_scalar(dtype: Any, what: str) -> ScalarType:
    s = resolve(dtype)
    if not isinstance(s, ScalarType):
        raise TypeError(f"{what} components must be a scalar type, got {dtype!r}")
    return s


def _component_type(dtype: Any, what: str) -> Any:
    """A vector's or matrix's component type: a scalar type, or a generic one (``Any``, ``sk.Float``, ...)."""
    if dtype is Any:
        return ANY_SCALAR
    if isinstance(dtype, ScalarCategory):
        return dtype
    return _check_scalar(dtype, what)


def _suffix(s: Any) -> str:
    return "" if s is float32 else _CT_SUFFIX[s.__name__]


def _dim(n: Any, what: str) -> int:
    """One dimension of a vector or matrix type: a non-negative int, ``typing.Any`` meaning 0 (any)."""
    if n is Any:
        return 0
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{what} must be a non-negative int or typing.Any, got {n!r}")
    return int(n)


def vector(length: Any, dtype: Any = float32) -> type:
    """The vector type of ``length`` components of ``dtype``; ``sk.vector(3, sk.float64) is sk.vec3d``.

    ``length=typing.Any`` is Warp's generic length and the same type as ``length=0``: as a
    parameter annotation it takes a vector of any length of ``dtype`` (each length an overload);
    as a value, ``sk.vector(0, float)()`` is the empty vector.

    Example::

        sk.vector(length=5, dtype=sk.float64)     # vec5d
        sk.vector(typing.Any, float)              # a parameter taking vec2, vec3, vec6, ... of float32
    """
    s = _component_type(dtype, "vector")
    n = _dim(length, "vector length")
    generic = n == 0 or isinstance(s, ScalarCategory)
    name = f"vector({n or 'Any'}, {s.__name__})" if generic else f"vec{n}{_suffix(s)}"
    return _make(Vector, name, (n,), s, f"sk::vec_t<{n}, {s._sk_ctype}>")


def matrix(shape: tuple[Any, Any], dtype: Any = float32) -> type:
    """The matrix type of ``shape`` (rows, cols); ``sk.matrix((3, 3), float) is sk.mat33``.

    A dimension given as ``typing.Any`` (or 0, the same) is generic, as in Warp: as a parameter
    annotation ``sk.matrix((Any, Any), float)`` takes a float32 matrix of any shape.

    Example::

        sk.matrix(shape=(2, 3), dtype=float)      # mat23
        sk.matrix((typing.Any, 3), float)         # a parameter taking mat13, mat23, mat33, ...
    """
    s = _component_type(dtype, "matrix")
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise ValueError(f"matrix shape must be (rows, cols), got {shape!r}")
    r, c = (_dim(x, "matrix shape entries") for x in shape)
    generic = not (r and c) or isinstance(s, ScalarCategory)
    name = f"matrix(({r or 'Any'}, {c or 'Any'}), {s.__name__})" if generic else f"mat{r}{c}{_suffix(s)}"
    return _make(Matrix, name, (r, c), s, f"sk::mat_t<{r}, {c}, {s._sk_ctype}>")


def is_generic_value(t: Any) -> bool:
    """Whether ``t`` is a generic scalar (``sk.Float``, ...) or a vector or matrix type with a generic
    dimension (``Any``, i.e. 0) or component type."""
    if isinstance(t, ScalarCategory):
        return True
    return (getattr(t, "_sk_kind", None) in ("vec", "mat") and isinstance(t, type)
            and (0 in t._sk_shape or isinstance(t._sk_scalar, ScalarCategory)))


def fits_generic_value(want: Any, t: Any) -> bool:
    """Whether concrete type ``t`` instantiates the generic annotation ``want``: a scalar of its
    category; or a vector (matrix) of the same kind whose component type ``want``'s is or takes,
    of the same size in every dimension ``want`` fixes."""
    if isinstance(want, ScalarCategory):
        return want.accepts(t)
    if getattr(t, "_sk_kind", None) != want._sk_kind or is_generic_value(t):
        return False
    ws = want._sk_scalar
    return ((ws.accepts(t._sk_scalar) if isinstance(ws, ScalarCategory) else t._sk_scalar is ws)
            and all(w == 0 or w == n for w, n in zip(want._sk_shape, t._sk_shape)))


def quat_of(dtype: Any = float32) -> type:
    s = _check_scalar(dtype, "quat")
    return _make(Quat, "quat" + ("" if s is float32 else _CT_SUFFIX[s.__name__]), (4,), s, f"sk::quat_t<{s._sk_ctype}>")


def transform_of(dtype: Any = float32) -> type:
    s = _check_scalar(dtype, "transform")
    return _make(Transform, "transform" + ("" if s is float32 else _CT_SUFFIX[s.__name__]), (7,), s,
                 f"sk::transform_t<{s._sk_ctype}>")


def resolve(t: Any) -> Any:
    """Normalise a Python annotation to a simkit type (``float`` -> float32, ``int`` -> int32)."""
    if t is float:
        return float32
    if t is int:
        return int32
    if t is bool:
        return bool_
    return t


def is_type(t: Any) -> bool:
    return hasattr(resolve(t), "_sk_kind")


def is_value_type(t: Any) -> bool:
    """True for types a kernel can hold in a local: scalars, vectors, matrices, quats, transforms."""
    return getattr(t, "_sk_kind", None) in ("scalar", "vec", "mat", "quat", "transform")


def holds_floats(t: Any) -> bool:
    """Whether values of element type ``t`` carry float data (a gradient): a float scalar or
    composite, or a struct with such a field (an array of structs, at any depth)."""
    if getattr(t, "_sk_kind", None) == "struct":
        return any(holds_floats(f) for f in t._sk_fields.values())
    scalar = getattr(t, "_sk_scalar", None)
    return scalar is not None and scalar.is_float


def type_name(t: Any) -> str:
    if isinstance(t, ScalarType):
        return t.__name__
    return getattr(t, "__name__", None) or repr(t)


def np_shape(t: Any) -> tuple[int, ...]:
    """Trailing numpy dimensions of one element of type ``t``."""
    return tuple(t._sk_shape)


def type_size(t: Any) -> int:
    if getattr(t, "_sk_kind", None) in ("struct",):
        return ctypes.sizeof(t._sk_ctypes)
    return int(np.prod(t._sk_shape, dtype=np.int64)) * t._sk_scalar.np_dtype.itemsize


def ctypes_of(t: Any):
    """The ctypes type matching the C++ layout of a value of type ``t``."""
    if isinstance(t, ScalarType):
        return t.c_type
    kind = getattr(t, "_sk_kind", None)
    if kind in ("vec", "mat", "quat", "transform"):
        return t._sk_scalar.c_type * int(np.prod(t._sk_shape))
    if kind in ("array", "struct"):
        return t._sk_ctypes
    raise TypeError(f"no C layout for {t!r}")


# Callable inside kernels with compile-time arguments (calls.py, type_factory): sk.vector(3, type(x)).
for _f in (vector, matrix, quat_of, transform_of):
    _f._sk_type_factory = True

vec2, vec3, vec4 = (vector(n) for n in (2, 3, 4))
vec2d, vec3d, vec4d = (vector(n, float64) for n in (2, 3, 4))
vec2i, vec3i, vec4i = (vector(n, int32) for n in (2, 3, 4))
# Warp's names of the other integer vectors: vec2b ... vec4ul (sk.vec3b is vector(3, int8)).
WARP_NAMED_TYPES = {f"vec{n}{_CT_SUFFIX[s.__name__]}": vector(n, s)
                    for s in (int8, uint8, int16, uint16, int64, uint32, uint64) for n in (2, 3, 4)}
# And the half-precision ones: vec2h vec3h vec4h, mat22h mat33h mat44h, quath, transformh.
WARP_NAMED_TYPES.update({f"vec{n}h": vector(n, float16) for n in (2, 3, 4)})
WARP_NAMED_TYPES.update({f"mat{n}{n}h": matrix((n, n), float16) for n in (2, 3, 4)})
WARP_NAMED_TYPES.update(quath=quat_of(float16), transformh=transform_of(float16),
                        spatial_vectorh=vector(6, float16), spatial_matrixh=matrix((6, 6), float16))
# Warp's float32 spellings with the suffix: vec3f is vec3, mat33f is mat33, quatf is quat, ...
WARP_NAMED_TYPES.update({f"vec{n}f": vector(n, float32) for n in (2, 3, 4)})
WARP_NAMED_TYPES.update({f"mat{n}{n}f": matrix((n, n), float32) for n in (2, 3, 4)})
WARP_NAMED_TYPES.update(quatf=quat_of(float32), transformf=transform_of(float32),
                        spatial_vectorf=vector(6, float32), spatial_matrixf=matrix((6, 6), float32))
mat22, mat33, mat44 = (matrix((n, n)) for n in (2, 3, 4))
mat22d, mat33d, mat44d = (matrix((n, n), float64) for n in (2, 3, 4))
quat, quatd = quat_of(float32), quat_of(float64)
transform, transformd = transform_of(float32), transform_of(float64)
# Spatial (6-d) vectors and matrices, angular part first (Warp's names); builtins.py has their ops.
spatial_vector, spatial_vectord = vector(6, float32), vector(6, float64)
spatial_matrix, spatial_matrixd = matrix((6, 6), float32), matrix((6, 6), float64)
