"""The builtin table: every builtin function and operator of the kernel language.

Each entry states, in one place, the name, the signature (a pattern over types),
the forward C++ body and the adjoint C++ body. Adding a builtin is one entry here
plus one test. The table is turned into ``sk::`` template functions by
:func:`generate_header`; the frontend picks an overload with :func:`resolve`.

Signature patterns (a tiny language):

- ``F`` a float scalar, ``I`` an int scalar, ``S`` any numeric scalar, ``B`` bool,
  ``V`` any numeric value (scalar, vector, matrix, quat, transform);
  the same letter twice means the same type
- ``vec(N,F)``, ``mat(R,C,F)``, ``quat(F)``, ``transform(F)``; ``N R C K`` are lengths
- concrete scalars: ``float32 float64 int32 int64 uint32 bool int8 uint8 int16 uint16 uint64``
- ``void`` as the result: a statement with a side effect (``expect_eq``), run in the
  forward pass only (the adjoint pass does not repeat it)
- ``*name: pattern`` as the only parameter: a variadic builtin taking one or more arguments,
  all matching the pattern with the same bindings; ``#`` in the result is their count
  (``matrix_from_rows``: ``"*rows: vec(N,F)"`` -> ``"mat(#,N,F)"``). Its C++ functions are
  templates over the result type ``R`` and a parameter pack: the forward body sees the pack
  ``rows``, the tangent body ``tan_rows``, and the adjoint body only ``adj_ret`` and the pack
  ``adj_rows`` (not the inputs: a variadic builtin must be linear in its arguments)

Adjoint bodies see the inputs by name, ``adj_<name>`` accumulators for each input
and ``adj_ret`` for the result. ``adj=None`` marks a builtin without gradient
(piecewise constant or integer-valued: its tangent is zero too).

Tangent (forward-mode) bodies, ``tan=``, see the inputs by name and ``tan_<name>``,
the tangent of each input (of the input's type), and return the result's tangent.
A differentiable builtin without ``tan`` cannot be used in a tangent kernel: building
one refuses with a CompileError naming it (tests/core/test_builtins.py checks that
every differentiable builtin has one). Tangent functions go into a header of their
own (:func:`generate_tangent_header`), included only by tangent modules.

Example entry::

    _("sin", "x: F", "F", "return m::sin(x);", "adj_x += m::cos(x) * adj_ret;",
      tan="return m::cos(x) * tan_x;")
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import types as T

SCALAR_VARS = {"F": "f", "I": "iu", "S": "fiu", "B": "b"}
LENGTH_VARS = set("NRCK")
CONCRETE = {s.__name__: s for s in T.SCALARS}
# Struct results declared in a native header, by the name a table entry gives as its result:
# the C++ type, and the @sk.struct describing its fields (registered by the module defining it).
NAMED_CTYPES = {"MeshQueryPoint": "mesh_query_point_t", "MeshQueryRay": "mesh_query_ray_t"}
NAMED_TYPES: dict = {}
# Warp's out-parameter spellings of struct-returning builtins (filled by mesh_builtins.py; see
# there) and the examples help(sk.<name>) shows (core/lang.py), by builtin name.
OUT_PARAM_FORMS: dict = {}
EXAMPLES: dict = {}
# Builtins with several results computed together (linalg_builtins.py: a decomposition runs
# once): their entry returns the parts packed side by side in one matrix, and the frontend
# splits it (packed_results.py), by builtin name.
PACKED_RESULTS: dict = {}
# Builtins of several results computed apart (Warp's tuples: transform_decompose): by name, its
# inputs' count and the table builtins giving each result; the frontend calls them for a tuple,
# or writes them to Warp's out-parameters (``sk.quat_to_axis_angle(q, axis, angle)``). Filled by
# rotation_builtins.py.
MULTI_RESULTS: dict = {}
# The random builtins that advance a state local in place: by name, the draws a call takes
# (filled by random_builtins.py; see there).
STATE_DRAWS: dict = {}


class Weak:
    """Type of a Python number literal before it meets a typed operand."""

    def __init__(self, kind: str):
        self.kind = kind  # 'f' or 'i' or 'b'
        self._sk_kind = "weak"

    def default(self):
        return {"f": T.float32, "i": T.int32, "b": T.bool_}[self.kind]

    def __repr__(self):
        return {"f": "float literal", "i": "int literal", "b": "bool literal"}[self.kind]


WEAK_FLOAT, WEAK_INT, WEAK_BOOL = Weak("f"), Weak("i"), Weak("b")


def type_str(t) -> str:
    """How an error message names a type the frontend met: a literal, an array type, a value type."""
    if isinstance(t, Weak) or getattr(t, "_sk_kind", None) == "array":
        return repr(t)
    return T.type_name(t)


def _parse(p: str):
    """Pattern string -> nested tuple, e.g. 'vec(N,F)' -> ('vec', 'N', 'F')."""
    p = p.strip()
    m = re.fullmatch(r"(\w+)\((.*)\)", p)
    if m:
        return (m.group(1), *[_parse(a) for a in m.group(2).split(",")])
    return p


@dataclass
class Builtin:
    name: str
    params: list[tuple[str, object]]
    ret: object
    fwd: str
    adj: str | None
    cname: str
    doc: str = ""
    tparams: list[str] = field(default_factory=list)
    tan: str | None = None
    variadic: bool = False

    @property
    def differentiable(self) -> bool:
        return self.adj is not None


TABLE: dict[str, list[Builtin]] = {}
_cnames: dict[str, int] = {}


def _(name: str, sig: str, ret: str, fwd: str, adj: str | None, *, tan: str | None = None, doc: str = ""):
    params = []
    for part in filter(None, (s.strip() for s in re.split(r",\s*(?![^()]*\))", sig))):
        pname, pat = part.split(":")
        params.append((pname.strip(), _parse(pat)))
    variadic = params[0][0].startswith("*") if params else False
    if variadic:
        assert len(params) == 1, "a variadic entry has one parameter, *name: pattern"
        params = [(params[0][0][1:], params[0][1])]
    n = _cnames.get(name, 0)
    _cnames[name] = n + 1
    cname = f"{name}_{n}" if n else name
    b = Builtin(name, params, _parse(ret), fwd, adj, cname, doc, tan=tan, variadic=variadic)
    TABLE.setdefault(name, []).append(b)
    return b


# ---------------------------------------------------------------------------
# Scalar math
# ---------------------------------------------------------------------------
_("sin", "x: F", "F", "return m::sin(x);", "adj_x += m::cos(x) * adj_ret;",
  tan="return m::cos(x) * tan_x;")
_("cos", "x: F", "F", "return m::cos(x);", "adj_x -= m::sin(x) * adj_ret;",
  tan="return -m::sin(x) * tan_x;")
_("tan", "x: F", "F", "return m::tan(x);", "F c = m::cos(x); adj_x += adj_ret / (c * c);",
  tan="F c = m::cos(x); return tan_x / (c * c);")
_("asin", "x: F", "F", "return m::asin(x);", "adj_x += adj_ret / m::sqrt(F(1) - x * x);",
  tan="return tan_x / m::sqrt(F(1) - x * x);")
_("acos", "x: F", "F", "return m::acos(x);", "adj_x -= adj_ret / m::sqrt(F(1) - x * x);",
  tan="return -tan_x / m::sqrt(F(1) - x * x);")
_("atan", "x: F", "F", "return m::atan(x);", "adj_x += adj_ret / (F(1) + x * x);",
  tan="return tan_x / (F(1) + x * x);")
_("atan2", "y: F, x: F", "F", "return m::atan2(y, x);",
  "F d = x * x + y * y; adj_y += adj_ret * x / d; adj_x -= adj_ret * y / d;",
  tan="return (x * tan_y - y * tan_x) / (x * x + y * y);")
_("sinh", "x: F", "F", "return m::sinh(x);", "adj_x += m::cosh(x) * adj_ret;",
  tan="return m::cosh(x) * tan_x;")
_("cosh", "x: F", "F", "return m::cosh(x);", "adj_x += m::sinh(x) * adj_ret;",
  tan="return m::sinh(x) * tan_x;")
_("tanh", "x: F", "F", "return m::tanh(x);", "F t = m::tanh(x); adj_x += (F(1) - t * t) * adj_ret;",
  tan="F t = m::tanh(x); return (F(1) - t * t) * tan_x;")
_("sqrt", "x: F", "F", "return m::sqrt(x);", "adj_x += adj_ret / (F(2) * m::sqrt(x));",
  tan="return tan_x / (F(2) * m::sqrt(x));")
_("exp", "x: F", "F", "return m::exp(x);", "adj_x += m::exp(x) * adj_ret;",
  tan="return m::exp(x) * tan_x;")
_("log", "x: F", "F", "return m::log(x);", "adj_x += adj_ret / x;",
  tan="return tan_x / x;")
_("log2", "x: F", "F", "return m::log2(x);", "adj_x += adj_ret / (x * F(0.6931471805599453));",
  tan="return tan_x / (x * F(0.6931471805599453));")
_("log10", "x: F", "F", "return m::log10(x);", "adj_x += adj_ret / (x * F(2.302585092994046));",
  tan="return tan_x / (x * F(2.302585092994046));")
_("pow", "x: F, y: F", "F", "return m::pow(x, y);",
  "adj_x += adj_ret * y * m::pow(x, y - F(1)); if (x > F(0)) adj_y += adj_ret * m::log(x) * m::pow(x, y);",
  tan="F r = tan_x * y * m::pow(x, y - F(1)); if (x > F(0)) r += tan_y * m::log(x) * m::pow(x, y); return r;")
_("abs", "x: S", "S", "return abs_(x);", "adj_x += x < S(0) ? -adj_ret : adj_ret;",
  tan="return x < S(0) ? -tan_x : tan_x;")
_("abs", "x: vec(N,S)", "vec(N,S)", "vec_t<N, S> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = abs_(x[i]); return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) adj_x[i] += x[i] < S(0) ? -adj_ret[i] : adj_ret[i];",
  tan="vec_t<N, S> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = x[i] < S(0) ? -tan_x[i] : tan_x[i]; return r;")
_("sign", "x: S", "S", "return sign_(x);", None)
_("min", "a: S, b: S", "S", "return min_(a, b);", "if (a <= b) adj_a += adj_ret; else adj_b += adj_ret;",
  tan="return a <= b ? tan_a : tan_b;")
_("max", "a: S, b: S", "S", "return max_(a, b);", "if (a >= b) adj_a += adj_ret; else adj_b += adj_ret;",
  tan="return a >= b ? tan_a : tan_b;")
_("min", "a: vec(N,S), b: vec(N,S)", "vec(N,S)", "vec_t<N, S> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = min_(a[i], b[i]); return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) { if (a[i] <= b[i]) adj_a[i] += adj_ret[i]; else adj_b[i] += adj_ret[i]; }",
  tan="vec_t<N, S> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = a[i] <= b[i] ? tan_a[i] : tan_b[i]; return r;")
_("max", "a: vec(N,S), b: vec(N,S)", "vec(N,S)", "vec_t<N, S> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = max_(a[i], b[i]); return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) { if (a[i] >= b[i]) adj_a[i] += adj_ret[i]; else adj_b[i] += adj_ret[i]; }",
  tan="vec_t<N, S> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = a[i] >= b[i] ? tan_a[i] : tan_b[i]; return r;")
_("clamp", "x: S, lo: S, hi: S", "S", "return min_(max_(x, lo), hi);",
  "if (x < lo) adj_lo += adj_ret; else if (x > hi) adj_hi += adj_ret; else adj_x += adj_ret;",
  tan="return x < lo ? tan_lo : (x > hi ? tan_hi : tan_x);")
_("floor", "x: F", "F", "return m::floor(x);", None)
_("ceil", "x: F", "F", "return m::ceil(x);", None)
_("round", "x: F", "F", "return m::round(x);", None)
_("trunc", "x: F", "F", "return m::trunc(x);", None)

# Interpolation (Warp's lerp and smoothstep). lerp is a * (1 - t) + b * t component by component,
# for every float value Warp takes (a quat or transform too, not renormalized), t a scalar.
for _t in ("F", "vec(N,F)", "mat(R,C,F)", "quat(F)", "transform(F)"):
    _("lerp", f"a: {_t}, b: {_t}, t: F", _t, "return lerp_(a, b, t);", "adj_lerp_(a, b, t, adj_a, adj_b, adj_t, adj_ret);",
      tan="return tan_lerp_(a, b, t, tan_a, tan_b, tan_t);",
      doc="Linear interpolation a * (1 - t) + b * t (component-wise for vectors, matrices, quats, transforms).")
# Warp's definition: t = clamp((x - a) / (b - a), 0, 1), then 3 t^2 - 2 t^3. Flat (zero gradient)
# where clamped; a == b is a step at a (0 at and below it, 1 above).
_("smoothstep", "a: F, b: F, x: F", "F",
  "F t = min_(max_((x - a) / (b - a), F(0)), F(1)); return t * t * (F(3) - F(2) * t);",
  "F d = b - a, u = (x - a) / d; if (u > F(0) && u < F(1)) { F g = adj_ret * F(6) * u * (F(1) - u) / d;"
  " adj_x += g; adj_a += g * (u - F(1)); adj_b -= g * u; }",
  tan="F d = b - a, u = (x - a) / d; if (!(u > F(0) && u < F(1))) return F(0);"
  " return F(6) * u * (F(1) - u) * (tan_x - tan_a + u * (tan_a - tan_b)) / d;",
  doc="Warp's smoothstep: cubic Hermite 3t^2 - 2t^3 of t = clamp((x - a) / (b - a), 0, 1).")

# ---------------------------------------------------------------------------
# Operators (the frontend maps + - * / % // @ and unary - onto these)
# ---------------------------------------------------------------------------
_("add", "a: V, b: V", "V", "return a + b;", "adj_a += adj_ret; adj_b += adj_ret;",
  tan="return tan_a + tan_b;")
_("sub", "a: V, b: V", "V", "return a - b;", "adj_a += adj_ret; adj_b -= adj_ret;",
  tan="return tan_a - tan_b;")
_("neg", "a: V", "V", "return -a;", "adj_a -= adj_ret;",
  tan="return -tan_a;")
_("mul", "a: S, b: S", "S", "return a * b;", "adj_a += b * adj_ret; adj_b += a * adj_ret;",
  tan="return tan_a * b + a * tan_b;")
_("mul", "s: S, v: vec(N,S)", "vec(N,S)", "return s * v;", "adj_s += dot_(v, adj_ret); adj_v += adj_ret * s;",
  tan="return tan_s * v + s * tan_v;")
_("mul", "v: vec(N,S), s: S", "vec(N,S)", "return v * s;", "adj_s += dot_(v, adj_ret); adj_v += adj_ret * s;",
  tan="return tan_v * s + v * tan_s;")
_("mul", "s: F, a: mat(R,C,F)", "mat(R,C,F)", "return s * a;", "adj_s += inner_(a, adj_ret); adj_a += adj_ret * s;",
  tan="return tan_s * a + s * tan_a;")
_("mul", "a: mat(R,C,F), s: F", "mat(R,C,F)", "return a * s;", "adj_s += inner_(a, adj_ret); adj_a += adj_ret * s;",
  tan="return tan_a * s + a * tan_s;")
_("mul", "s: F, q: quat(F)", "quat(F)", "return s * q;", "adj_s += inner_(q, adj_ret); adj_q += adj_ret * s;",
  tan="return tan_s * q + s * tan_q;")
_("mul", "q: quat(F), s: F", "quat(F)", "return q * s;", "adj_s += inner_(q, adj_ret); adj_q += adj_ret * s;",
  tan="return tan_q * s + q * tan_s;")
_("mul", "a: mat(R,C,F), v: vec(C,F)", "vec(R,F)", "return matvec(a, v);",
  "adj_a += outer_(adj_ret, v); adj_v += matvec(transpose_(a), adj_ret);",
  tan="return matvec(tan_a, v) + matvec(a, tan_v);")
_("mul", "a: mat(R,K,F), b: mat(K,C,F)", "mat(R,C,F)", "return matmat(a, b);",
  "adj_a += matmat(adj_ret, transpose_(b)); adj_b += matmat(transpose_(a), adj_ret);",
  tan="return matmat(tan_a, b) + matmat(a, tan_b);")
_("mul", "a: quat(F), b: quat(F)", "quat(F)", "return qmul(a, b);",
  "adj_a += qmul(adj_ret, qconj(b)); adj_b += qmul(qconj(a), adj_ret);",
  tan="return qmul(tan_a, b) + qmul(a, tan_b);")
_("matmul", "a: mat(R,C,F), v: vec(C,F)", "vec(R,F)", "return matvec(a, v);",
  "adj_a += outer_(adj_ret, v); adj_v += matvec(transpose_(a), adj_ret);",
  tan="return matvec(tan_a, v) + matvec(a, tan_v);")
_("matmul", "a: mat(R,K,F), b: mat(K,C,F)", "mat(R,C,F)", "return matmat(a, b);",
  "adj_a += matmat(adj_ret, transpose_(b)); adj_b += matmat(transpose_(a), adj_ret);",
  tan="return matmat(tan_a, b) + matmat(a, tan_b);")
_("div", "a: F, b: F", "F", "return a / b;", "adj_a += adj_ret / b; adj_b -= adj_ret * a / (b * b);",
  tan="return tan_a / b - a * tan_b / (b * b);")
_("div", "v: vec(N,F), s: F", "vec(N,F)", "return v * (F(1) / s);",
  "adj_v += adj_ret * (F(1) / s); adj_s -= dot_(v, adj_ret) / (s * s);",
  tan="return tan_v * (F(1) / s) - v * (tan_s / (s * s));")
_("div", "a: mat(R,C,F), s: F", "mat(R,C,F)", "return a * (F(1) / s);",
  "adj_a += adj_ret * (F(1) / s); adj_s -= inner_(a, adj_ret) / (s * s);",
  tan="return tan_a * (F(1) / s) - a * (tan_s / (s * s));")
_("div", "q: quat(F), s: F", "quat(F)", "return q * (F(1) / s);",
  "adj_q += adj_ret * (F(1) / s); adj_s -= inner_(q, adj_ret) / (s * s);",
  tan="return tan_q * (F(1) / s) - q * (tan_s / (s * s));")
_("floordiv", "a: S, b: S", "S", "return floordiv_(a, b);", None)
_("mod", "a: S, b: S", "S", "return mod_(a, b);", "adj_a += adj_ret; adj_b -= floordiv_(a, b) * adj_ret;",
  tan="return tan_a - floordiv_(a, b) * tan_b;")
_("cw_mul", "a: vec(N,S), b: vec(N,S)", "vec(N,S)", "vec_t<N, S> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = a[i] * b[i]; return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) { adj_a[i] += b[i] * adj_ret[i]; adj_b[i] += a[i] * adj_ret[i]; }",
  tan="vec_t<N, S> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = tan_a[i] * b[i] + a[i] * tan_b[i]; return r;")
_("cw_div", "a: vec(N,F), b: vec(N,F)", "vec(N,F)", "vec_t<N, F> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = a[i] / b[i]; return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) { adj_a[i] += adj_ret[i] / b[i]; adj_b[i] -= adj_ret[i] * a[i] / (b[i] * b[i]); }",
  tan="vec_t<N, F> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = tan_a[i] / b[i] - a[i] * tan_b[i] / (b[i] * b[i]); return r;")
# Bitwise operators on integers (and &, |, ^ on bools). Shift counts outside [0, bit width)
# are defined, unlike in C++: << gives 0, >> gives the sign fill (0, or -1 for a negative a).
for _op, _c in (("bit_and", "&"), ("bit_or", "|"), ("bit_xor", "^")):
    _(_op, "a: I, b: I", "I", f"return I(a {_c} b);", None)
    _(_op, "a: B, b: B", "bool", f"return a {_c} b;", None)
_("invert", "a: I", "I", "return I(~a);", None)
_("lshift", "a: I, b: I", "I", "return (b < I(0) || b >= I(8 * sizeof(I))) ? I(0) : I(a << b);", None)
_("rshift", "a: I, b: I", "I",
  "return (b < I(0) || b >= I(8 * sizeof(I))) ? (a < I(0) ? I(-1) : I(0)) : I(a >> b);", None)
for _op, _c in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")):
    _(_op, "a: S, b: S", "bool", f"return a {_c} b;", None)
_("eq", "a: V, b: V", "bool", "return inner_eq_(a, b);", None)
_("ne", "a: V, b: V", "bool", "return !inner_eq_(a, b);", None)
_("eq", "a: B, b: B", "bool", "return a == b;", None)
_("ne", "a: B, b: B", "bool", "return a != b;", None)

# ---------------------------------------------------------------------------
# Vectors and matrices
# ---------------------------------------------------------------------------
_("dot", "a: vec(N,S), b: vec(N,S)", "S", "return dot_(a, b);", "adj_a += b * adj_ret; adj_b += a * adj_ret;",
  tan="return dot_(tan_a, b) + dot_(a, tan_b);")
_("cross", "a: vec(3,S), b: vec(3,S)", "vec(3,S)", "return cross_(a, b);",
  "adj_a += cross_(b, adj_ret); adj_b += cross_(adj_ret, a);",
  tan="return cross_(tan_a, b) + cross_(a, tan_b);")
_("length", "v: vec(N,F)", "F", "return m::sqrt(dot_(v, v));",
  "F l = m::sqrt(dot_(v, v)); if (l > F(0)) adj_v += v * (adj_ret / l);",
  tan="F l = m::sqrt(dot_(v, v)); return l > F(0) ? dot_(v, tan_v) / l : F(0);")
_("length_sq", "v: vec(N,S)", "S", "return dot_(v, v);", "adj_v += v * (S(2) * adj_ret);",
  tan="return S(2) * dot_(v, tan_v);")
_("normalize", "v: vec(N,F)", "vec(N,F)", "F l = m::sqrt(dot_(v, v)); return l > F(0) ? v * (F(1) / l) : v;",
  "F l = m::sqrt(dot_(v, v)); if (l > F(0)) { vec_t<N, F> n = v * (F(1) / l); adj_v += (adj_ret - n * dot_(n, adj_ret)) * (F(1) / l); } else { adj_v += adj_ret; }",
  tan="F l = m::sqrt(dot_(v, v)); if (!(l > F(0))) return tan_v; vec_t<N, F> n = v * (F(1) / l); return (tan_v - n * dot_(n, tan_v)) * (F(1) / l);")
_("outer", "a: vec(R,F), b: vec(C,F)", "mat(R,C,F)", "return outer_(a, b);",
  "adj_a += matvec(adj_ret, b); adj_b += matvec(transpose_(adj_ret), a);",
  tan="return outer_(tan_a, b) + outer_(a, tan_b);")
_("transpose", "a: mat(R,C,F)", "mat(C,R,F)", "return transpose_(a);", "adj_a += transpose_(adj_ret);",
  tan="return transpose_(tan_a);")
_("determinant", "a: mat(N,N,F)", "F", "return det_(a);", "adj_a += cofactor_(a) * adj_ret;",
  tan="return inner_(cofactor_(a), tan_a);")
_("inverse", "a: mat(N,N,F)", "mat(N,N,F)", "return inverse_(a);",
  "mat_t<N, N, F> t = transpose_(inverse_(a)); adj_a -= matmat(matmat(t, adj_ret), t);",
  tan="mat_t<N, N, F> i = inverse_(a); return -matmat(matmat(i, tan_a), i);")
_("trace", "a: mat(N,N,F)", "F", "F r = F(0); SK_UNROLL for (int i = 0; i < N; ++i) r += a[i][i]; return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) adj_a[i][i] += adj_ret;",
  tan="F r = F(0); SK_UNROLL for (int i = 0; i < N; ++i) r += tan_a[i][i]; return r;")
_("diag", "v: vec(N,F)", "mat(N,N,F)", "mat_t<N, N, F> r = {}; SK_UNROLL for (int i = 0; i < N; ++i) r[i][i] = v[i]; return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) adj_v[i] += adj_ret[i][i];",
  tan="mat_t<N, N, F> r = {}; SK_UNROLL for (int i = 0; i < N; ++i) r[i][i] = tan_v[i]; return r;")

_("get_diag", "m: mat(N,N,F)", "vec(N,F)", "vec_t<N, F> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = m[i][i]; return r;",
  "SK_UNROLL for (int i = 0; i < N; ++i) adj_m[i][i] += adj_ret[i];",
  tan="vec_t<N, F> r; SK_UNROLL for (int i = 0; i < N; ++i) r[i] = tan_m[i][i]; return r;",
  doc="The diagonal of a square matrix, as a vector.")
# Variadic: any number of equal vectors (a k x n matrix from k rows of length n, n x k from k columns).
_("matrix_from_rows", "*rows: vec(N,F)", "mat(#,N,F)", "return construct<R>(rows...);",
  "adj_construct(adj_ret, adj_rows...);", tan="return construct<R>(tan_rows...);",
  doc="The matrix whose i-th row is the i-th argument (vectors of one length and dtype).")
_("matrix_from_cols", "*cols: vec(N,F)", "mat(N,#,F)", "return transpose_(construct<typename transposed_<R>::type>(cols...));",
  "adj_construct(transpose_(adj_ret), adj_cols...);",
  tan="return transpose_(construct<typename transposed_<R>::type>(tan_cols...));",
  doc="The matrix whose j-th column is the j-th argument (vectors of one length and dtype).")

# ---------------------------------------------------------------------------
# Quaternions (x, y, z, w) and transforms (p, q)
# ---------------------------------------------------------------------------
_("quat_from_axis_angle", "axis: vec(3,F), angle: F", "quat(F)",
  "F s = m::sin(angle * F(0.5)); return quat_t<F>{{axis[0] * s, axis[1] * s, axis[2] * s, m::cos(angle * F(0.5))}};",
  "F s = m::sin(angle * F(0.5)), c = m::cos(angle * F(0.5));"
  " SK_UNROLL for (int i = 0; i < 3; ++i) adj_axis[i] += adj_ret[i] * s;"
  " adj_angle += F(0.5) * (c * (axis[0] * adj_ret[0] + axis[1] * adj_ret[1] + axis[2] * adj_ret[2]) - s * adj_ret[3]);",
  tan="F s = m::sin(angle * F(0.5)), c = m::cos(angle * F(0.5)), h = F(0.5) * tan_angle; return quat_t<F>{{tan_axis[0] * s + axis[0] * c * h, tan_axis[1] * s + axis[1] * c * h, tan_axis[2] * s + axis[2] * c * h, -s * h}};")
# Warp's convention: roll about x first, then pitch about y, then yaw about z (q = qz * qy * qx).
# Each factor's derivative is the factor at a quarter turn further, halved: d/da (s, c) = (c, -s) / 2.
_("quat_rpy", "roll: F, pitch: F, yaw: F", "quat(F)",
  "F h = F(0.5); return qmul(qmul(quat_t<F>{{F(0), F(0), m::sin(yaw * h), m::cos(yaw * h)}}, "
  "quat_t<F>{{F(0), m::sin(pitch * h), F(0), m::cos(pitch * h)}}), quat_t<F>{{m::sin(roll * h), F(0), F(0), m::cos(roll * h)}});",
  "F h = F(0.5), sr = m::sin(roll * h), cr = m::cos(roll * h), sp = m::sin(pitch * h), cp = m::cos(pitch * h),"
  " sy = m::sin(yaw * h), cy = m::cos(yaw * h);"
  " quat_t<F> qx = {{sr, F(0), F(0), cr}}, qy = {{F(0), sp, F(0), cp}}, qz = {{F(0), F(0), sy, cy}};"
  " quat_t<F> dx = {{h * cr, F(0), F(0), -h * sr}}, dy = {{F(0), h * cp, F(0), -h * sp}}, dz = {{F(0), F(0), h * cy, -h * sy}};"
  " adj_roll += inner_(adj_ret, qmul(qmul(qz, qy), dx)); adj_pitch += inner_(adj_ret, qmul(qmul(qz, dy), qx));"
  " adj_yaw += inner_(adj_ret, qmul(qmul(dz, qy), qx));",
  tan="F h = F(0.5), sr = m::sin(roll * h), cr = m::cos(roll * h), sp = m::sin(pitch * h), cp = m::cos(pitch * h),"
  " sy = m::sin(yaw * h), cy = m::cos(yaw * h);"
  " quat_t<F> qx = {{sr, F(0), F(0), cr}}, qy = {{F(0), sp, F(0), cp}}, qz = {{F(0), F(0), sy, cy}};"
  " quat_t<F> dx = {{h * cr * tan_roll, F(0), F(0), -h * sr * tan_roll}}, dy = {{F(0), h * cp * tan_pitch, F(0), -h * sp * tan_pitch}},"
  " dz = {{F(0), F(0), h * cy * tan_yaw, -h * sy * tan_yaw}};"
  " return qmul(qmul(qz, qy), dx) + qmul(qmul(qz, dy), qx) + qmul(qmul(dz, qy), qx);")
_("length", "q: quat(F)", "F", "return m::sqrt(inner_(q, q));",
  "F l = m::sqrt(inner_(q, q)); if (l > F(0)) adj_q += q * (adj_ret / l);",
  tan="F l = m::sqrt(inner_(q, q)); return l > F(0) ? inner_(q, tan_q) / l : F(0);")
_("length_sq", "q: quat(F)", "F", "return inner_(q, q);", "adj_q += q * (F(2) * adj_ret);",
  tan="return F(2) * inner_(q, tan_q);")
_("quat_rotate", "q: quat(F), v: vec(3,F)", "vec(3,F)", "return qrotate(q, v);",
  "adj_qrotate_(q, v, adj_q, adj_v, adj_ret);",
  tan="return tan_qrotate_(q, v, tan_q, tan_v);")
_("quat_rotate_inv", "q: quat(F), v: vec(3,F)", "vec(3,F)", "return qrotate(qconj(q), v);",
  "quat_t<F> adj_c = {}; adj_qrotate_(qconj(q), v, adj_c, adj_v, adj_ret); adj_q += qconj(adj_c);",
  tan="return tan_qrotate_(qconj(q), v, qconj(tan_q), tan_v);")
_("quat_inverse", "q: quat(F)", "quat(F)", "return qconj(q) * (F(1) / inner_(q, q));",
  "F n = inner_(q, q); adj_q += qconj(adj_ret) * (F(1) / n) - q * (F(2) * inner_(qconj(q), adj_ret) / (n * n));",
  tan="F n = inner_(q, q); return qconj(tan_q) * (F(1) / n) - qconj(q) * (F(2) * inner_(q, tan_q) / (n * n));")
_("quat_to_matrix", "q: quat(F)", "mat(3,3,F)",
  "mat_t<3, 3, F> r; SK_UNROLL for (int j = 0; j < 3; ++j) { vec_t<3, F> e = {}; e[j] = F(1); vec_t<3, F> c = qrotate(q, e); SK_UNROLL for (int i = 0; i < 3; ++i) r[i][j] = c[i]; } return r;",
  "SK_UNROLL for (int j = 0; j < 3; ++j) { vec_t<3, F> e = {}; e[j] = F(1); vec_t<3, F> a = {{adj_ret[0][j], adj_ret[1][j], adj_ret[2][j]}}; vec_t<3, F> adj_e = {}; adj_qrotate_(q, e, adj_q, adj_e, a); }",
  tan="mat_t<3, 3, F> r; SK_UNROLL for (int j = 0; j < 3; ++j) { vec_t<3, F> e = {}; e[j] = F(1); vec_t<3, F> c = tan_qrotate_(q, e, tan_q, vec_t<3, F>{}); SK_UNROLL for (int i = 0; i < 3; ++i) r[i][j] = c[i]; } return r;")
_("transform_point", "t: transform(F), p: vec(3,F)", "vec(3,F)", "return qrotate(t.q, p) + t.p;",
  "adj_t.p += adj_ret; adj_qrotate_(t.q, p, adj_t.q, adj_p, adj_ret);",
  tan="return tan_qrotate_(t.q, p, tan_t.q, tan_p) + tan_t.p;")
_("transform_vector", "t: transform(F), v: vec(3,F)", "vec(3,F)", "return qrotate(t.q, v);",
  "adj_qrotate_(t.q, v, adj_t.q, adj_v, adj_ret);",
  tan="return tan_qrotate_(t.q, v, tan_t.q, tan_v);")
_("transform_multiply", "a: transform(F), b: transform(F)", "transform(F)",
  "return transform_t<F>{qrotate(a.q, b.p) + a.p, qmul(a.q, b.q)};",
  "adj_a.p += adj_ret.p; adj_qrotate_(a.q, b.p, adj_a.q, adj_b.p, adj_ret.p);"
  " adj_a.q += qmul(adj_ret.q, qconj(b.q)); adj_b.q += qmul(qconj(a.q), adj_ret.q);",
  tan="return transform_t<F>{tan_qrotate_(a.q, b.p, tan_a.q, tan_b.p) + tan_a.p, qmul(tan_a.q, b.q) + qmul(a.q, tan_b.q)};")
_("transform_inverse", "t: transform(F)", "transform(F)",
  "quat_t<F> qi = qconj(t.q); return transform_t<F>{-qrotate(qi, t.p), qi};",
  "quat_t<F> qi = qconj(t.q); quat_t<F> adj_qi = adj_ret.q; vec_t<3, F> adj_p = {};"
  " adj_qrotate_(qi, t.p, adj_qi, adj_p, -adj_ret.p); adj_t.p += adj_p; adj_t.q += qconj(adj_qi);",
  tan="quat_t<F> qi = qconj(t.q), tqi = qconj(tan_t.q); return transform_t<F>{-tan_qrotate_(qi, t.p, tqi, tan_t.p), tqi};")

# Warp's transform_compose: [[R(q) diag(s), p], [0, 0, 0, 1]], R(q) as quat_to_matrix builds it.
_("transform_compose", "position: vec(3,F), rotation: quat(F), scale: vec(3,F)", "mat(4,4,F)",
  "mat_t<4, 4, F> r = {}; SK_UNROLL for (int j = 0; j < 3; ++j) { vec_t<3, F> e = {}; e[j] = F(1);"
  " vec_t<3, F> c = qrotate(rotation, e); SK_UNROLL for (int i = 0; i < 3; ++i) r[i][j] = c[i] * scale[j]; }"
  " SK_UNROLL for (int i = 0; i < 3; ++i) r[i][3] = position[i]; r[3][3] = F(1); return r;",
  "SK_UNROLL for (int j = 0; j < 3; ++j) { vec_t<3, F> e = {}; e[j] = F(1); vec_t<3, F> c = qrotate(rotation, e);"
  " vec_t<3, F> a = {{adj_ret[0][j] * scale[j], adj_ret[1][j] * scale[j], adj_ret[2][j] * scale[j]}};"
  " adj_scale[j] += c[0] * adj_ret[0][j] + c[1] * adj_ret[1][j] + c[2] * adj_ret[2][j];"
  " vec_t<3, F> adj_e = {}; adj_qrotate_(rotation, e, adj_rotation, adj_e, a); }"
  " SK_UNROLL for (int i = 0; i < 3; ++i) adj_position[i] += adj_ret[i][3];",
  tan="mat_t<4, 4, F> r = {}; SK_UNROLL for (int j = 0; j < 3; ++j) { vec_t<3, F> e = {}; e[j] = F(1);"
  " vec_t<3, F> c = qrotate(rotation, e), tc = tan_qrotate_(rotation, e, tan_rotation, vec_t<3, F>{});"
  " SK_UNROLL for (int i = 0; i < 3; ++i) r[i][j] = tc[i] * scale[j] + c[i] * tan_scale[j]; }"
  " SK_UNROLL for (int i = 0; i < 3; ++i) r[i][3] = tan_position[i]; return r;",
  doc="The 4x4 matrix of position p, rotation q and scale s: [[R(q) diag(s), p], [0, 0, 0, 1]].")

# ---------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------
_("select", "cond: B, a: V, b: V", "V", "return cond ? b : a;",
  "if (cond) adj_b += adj_ret; else adj_a += adj_ret;", tan="return cond ? tan_b : tan_a;",
  doc="Warp's order: select(cond, value_if_false, value_if_true).")
_("where", "cond: B, a: V, b: V", "V", "return cond ? a : b;",
  "if (cond) adj_a += adj_ret; else adj_b += adj_ret;", tan="return cond ? tan_a : tan_b;",
  doc="where(cond, value_if_true, value_if_false).")

# ---------------------------------------------------------------------------
# Checks (Warp's expect_*): print a failure to stdout and go on; no result, no adjoint
# ---------------------------------------------------------------------------
_("expect_eq", "a: V, b: V", "void", 'if (!inner_eq_(a, b)) expect_failed_("expect_eq", a, b);', None,
  doc="Print an error if a != b (a: the actual value, b: the expected one).")
_("expect_eq", "a: B, b: B", "void", 'if (a != b) expect_failed_("expect_eq", a, b);', None)
_("expect_neq", "a: V, b: V", "void", 'if (inner_eq_(a, b)) expect_failed_("expect_neq", a, b);', None,
  doc="Print an error if a == b.")
_("expect_neq", "a: B, b: B", "void", 'if (a == b) expect_failed_("expect_neq", a, b);', None)
# A NaN anywhere fails (Warp's |a - b| > tolerance lets it pass).
for _t in ("F", "vec(N,F)", "mat(R,C,F)", "quat(F)"):
    _("expect_near", f"a: {_t}, b: {_t}, tolerance: F", "void",
      "F d = max_abs_diff_(a, b); if (!(d <= tolerance)) expect_near_failed_(a, b, tolerance, d);", None,
      doc="Print an error if a component of a and b differ by more than tolerance.")


# ---------------------------------------------------------------------------
# C++ generation
# ---------------------------------------------------------------------------

def _vars(pat, acc: list):
    if isinstance(pat, tuple):
        for a in pat[1:]:
            _vars(a, acc)
    elif (pat in SCALAR_VARS or pat == "V" or pat in LENGTH_VARS) and pat not in acc:
        acc.append(pat)
    return acc


def _cpp_pat(pat) -> str:
    if isinstance(pat, tuple):
        head, *args = pat
        inner = ", ".join(_cpp_pat(a) for a in args)
        return {"vec": f"vec_t<{inner}>", "mat": f"mat_t<{inner}>", "quat": f"quat_t<{inner}>", "transform": f"transform_t<{inner}>"}[head]
    if pat in CONCRETE:
        return CONCRETE[pat]._sk_ctype
    return NAMED_CTYPES.get(pat, pat)


def _template_head(b: Builtin) -> str:
    tvars = []
    for _n, p in b.params:
        _vars(p, tvars)
    _vars(b.ret, tvars)
    tpl = ", ".join(("int " if v in LENGTH_VARS else "typename ") + v for v in tvars)
    return f"template <{tpl}> " if tpl else ""


def _cpp_function(b: Builtin) -> str:
    if b.variadic:
        (n, _p), = b.params
        head = "template <typename R, typename... A> "
        out = [f"{head}SK_FUNC R {b.cname}(const A&... {n}) {{ {b.fwd} }}"]
        if b.adj is not None:
            out.append(f"{head}SK_FUNC void adj_{b.cname}(const R& adj_ret, A&... adj_{n}) {{ {b.adj} }}")
        return "\n".join(out)
    head = _template_head(b)
    ins = ", ".join(f"const {_cpp_pat(p)}& {n}" for n, p in b.params)
    ret = _cpp_pat(b.ret)
    out = [f"{head}SK_FUNC {ret} {b.cname}({ins}) {{ {b.fwd} }}"]
    if b.adj is not None:
        adjs = ", ".join(f"{_cpp_pat(p)}& adj_{n}" for n, p in b.params)
        out.append(f"{head}SK_FUNC void adj_{b.cname}({ins}, {adjs}, const {ret}& adj_ret) {{ {b.adj} }}")
    return "\n".join(out)


def generate_header() -> str:
    """The C++ text of every table builtin, included by each generated module."""
    lines = ["// Generated from simkit/core/builtins.py: do not edit.", "#pragma once", '#include "simkit.h"',
             '#include "linalg.h"', '#include "decomp.h"', '#include "mesh.h"', '#include "builtin_helpers.h"',
             '#include "rotations.h"', '#include "random.h"', "namespace sk {"]
    for entries in TABLE.values():
        for b in entries:
            lines.append(_cpp_function(b))
    lines.append("}  // namespace sk")
    return "\n".join(lines) + "\n"


# Helpers the tangent bodies use.
_TANGENT_PRELUDE = r"""
// An array element's tangent (its tangent buffer travels in the grad slot; none: zero), and a store of one.
template <typename T> SK_FUNC T tan_load(const T* g) { return g ? *g : T{}; }
template <typename T> SK_FUNC void tan_store(T* g, const T& v) { if (g) *g = v; }
// Tangent of qrotate(q, v) = v + 2 w (u x v) + 2 u x (u x v), u = q.xyz, along (tq, tv).
template <typename F> SK_FUNC vec_t<3, F> tan_qrotate_(const quat_t<F>& q, const vec_t<3, F>& v, const quat_t<F>& tq, const vec_t<3, F>& tv) {
    vec_t<3, F> u = {{q[0], q[1], q[2]}}, du = {{tq[0], tq[1], tq[2]}};
    vec_t<3, F> uv = cross_(u, v);
    return qrotate(q, tv) + uv * (F(2) * tq[3]) + cross_(du, v) * (F(2) * q[3]) + cross_(du, uv) * F(2)
        + cross_(u, cross_(du, v)) * F(2);
}
"""


def tangent_function(b: Builtin) -> str:
    """``tan_<cname>(inputs..., input tangents...)``: the result's tangent (``b.tan`` set); a
    variadic builtin's ``tan_<cname><R>(input tangents...)`` (it is linear)."""
    if b.variadic:
        (n, _p), = b.params
        return f"template <typename R, typename... A> SK_FUNC R tan_{b.cname}(const A&... tan_{n}) {{ {b.tan} }}"
    head = _template_head(b)
    ins = ", ".join(f"const {_cpp_pat(p)}& {n}" for n, p in b.params)
    tans = ", ".join(f"const {_cpp_pat(p)}& tan_{n}" for n, p in b.params)
    return f"{head}SK_FUNC {_cpp_pat(b.ret)} tan_{b.cname}({ins}, {tans}) {{ {b.tan} }}"


def generate_tangent_header() -> str:
    """The C++ tangent functions of the table, included by tangent (forward-mode) modules only,
    so modules that never take a tangent parse none of them."""
    lines = ["// Generated from simkit/core/builtins.py: do not edit.", "#pragma once", f'#include "{HEADER}"',
             "namespace sk {", _TANGENT_PRELUDE]
    lines += [tangent_function(b) for entries in TABLE.values() for b in entries if b.tan is not None]
    lines.append("}  // namespace sk")
    return "\n".join(lines) + "\n"


HEADER = "simkit_builtins.h"
TANGENT_HEADER = "simkit_tangents.h"


# ---------------------------------------------------------------------------
# Overload resolution
# ---------------------------------------------------------------------------

def _is_numeric_value(t) -> bool:
    k = getattr(t, "_sk_kind", None)
    if k == "scalar":
        return t.kind != "b"
    return k in ("vec", "mat", "quat", "transform")


def _match(pat, t, env: dict) -> bool:
    """Unify a pattern with a concrete type, extending the bindings in ``env``."""
    if isinstance(pat, tuple):
        head, *args = pat
        if getattr(t, "_sk_kind", None) != head:
            return False
        if head == "vec":
            vals = [t._sk_shape[0], t._sk_scalar]
        elif head == "mat":
            vals = [t._sk_shape[0], t._sk_shape[1], t._sk_scalar]
        else:
            vals = [t._sk_scalar]
        return all(_match(a, v, env) for a, v in zip(args, vals))
    if isinstance(pat, str) and pat.isdigit():
        return t == int(pat)
    if pat in LENGTH_VARS:
        if pat in env:
            return env[pat] == t
        env[pat] = t
        return True
    if pat in CONCRETE:
        return t is CONCRETE[pat]
    if pat == "V":
        ok = _is_numeric_value(t)
    elif pat in SCALAR_VARS:
        ok = isinstance(t, T.ScalarType) and t.kind in SCALAR_VARS[pat]
    else:
        return False
    if not ok:
        return False
    if pat in env:
        return env[pat] is t
    env[pat] = t
    return True


def _weak_fits(pat, w: Weak, env: dict) -> bool:
    """Can a literal of kind ``w`` stand where ``pat`` is expected (binding defaults if needed)?"""
    if isinstance(pat, tuple):
        return False
    if pat in CONCRETE:
        return _weak_to(w, CONCRETE[pat])
    if pat in env:
        bound = env[pat]
        return isinstance(bound, T.ScalarType) and _weak_to(w, bound)
    if pat in SCALAR_VARS or pat == "V":
        d = w.default()
        if pat != "V" and d.kind not in SCALAR_VARS[pat]:
            if pat in ("F",) and w.kind == "i":
                env[pat] = T.float32
                return True
            return False
        env[pat] = d
        return True
    return False


def _weak_to(w: Weak, t: T.ScalarType) -> bool:
    if w.kind == "b":
        return t.kind == "b"
    if w.kind == "i":
        return t.kind in "fiu"
    return t.kind == "f"


def _subst(pat, env: dict):
    if isinstance(pat, tuple):
        head, *args = pat
        vals = [_subst(a, env) for a in args]
        if head == "vec":
            return T.vector(vals[0], vals[1])
        if head == "mat":
            return T.matrix((vals[0], vals[1]), vals[2])
        if head == "quat":
            return T.quat_of(vals[0])
        return T.transform_of(vals[0])
    if isinstance(pat, str) and pat.isdigit():
        return int(pat)
    if pat in CONCRETE:
        return CONCRETE[pat]
    if pat == "void":
        return None
    if pat in NAMED_CTYPES:
        from . import mesh  # noqa: F401  (registers the result structs)
        return NAMED_TYPES[pat]
    return env[pat]


def resolve(name: str, arg_types: list):
    """Pick the overload of builtin ``name`` for ``arg_types`` (Weak for literals).

    Returns ``(builtin, concrete_arg_types, result_type)`` or ``None`` if nothing matches.
    """
    for b in TABLE.get(name, ()):
        if b.variadic:
            found = _resolve_variadic(b, arg_types)
            if found is not None:
                return found
            continue
        if len(b.params) != len(arg_types):
            continue
        env: dict = {}
        if not all(isinstance(t, Weak) or _match(p, t, env) for (_n, p), t in zip(b.params, arg_types)):
            continue
        if not all(not isinstance(t, Weak) or _weak_fits(p, t, env) for (_n, p), t in zip(b.params, arg_types)):
            continue
        concrete = [_subst(p, env) for _n, p in b.params]
        return b, concrete, _subst(b.ret, env)
    return None


def _resolve_variadic(b: Builtin, arg_types: list):
    """One or more arguments, each matching the one pattern with shared bindings; ``#`` is their count."""
    (_n, p), = b.params
    env: dict = {"#": len(arg_types)}
    if not arg_types or not all(not isinstance(t, Weak) and _match(p, t, env) for t in arg_types):
        return None
    return b, [_subst(p, env)] * len(arg_types), _subst(b.ret, env)


def signatures(name: str) -> list[str]:
    """Human-readable signatures of a builtin, for error messages."""
    def show(p):
        if isinstance(p, tuple):
            return f"{p[0]}({','.join(show(a) for a in p[1:])})"
        return {"F": "float", "I": "int", "S": "number", "B": "bool", "V": "value"}.get(p, p)
    return [f"{b.name}({', '.join(('*' if b.variadic else '') + n + ': ' + show(p) for n, p in b.params)})"
            for b in TABLE.get(name, ())]


# The spatial-algebra, mesh query, linear-algebra, rotation, random and further Warp math
# builtins are table entries like the others, kept in files of their own.
from . import (linalg_builtins, mesh_builtins, random_builtins, rotation_builtins, spatial_builtins,  # noqa: E402,F401
               warp_math_builtins)
