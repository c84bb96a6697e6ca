"""Every builtin and operator of the kernel language, checked against numpy.

Forward values are compared with a numpy (or hand-derived) reference on random
inputs for float32 and float64, vectors of length 2, 3 and 4 and matrices 2x2 to
4x4. Adjoints and tangents (forward mode) of every differentiable builtin are
compared with central finite differences of the kernel's own forward pass in
float64. Coverage tests keep the table and the tests in step: a new table entry
without a test, or a differentiable one without a tangent rule, fails them.
tests/test_every_kernel_compiles_for_cuda.py compiles every kernel here to PTX.
On a GPU every test also runs there; the fake driver (no GPU) would run the CPU build
again, proving nothing the CPU run and the PTX compile do not, at two minutes of CI.

All kernels are created at import time by small factories, so the whole module
is one C++ translation unit compiled once on the first launch.
"""

import functools
import zlib

import numpy as np
import pytest

import simkit as sk
from simkit.core import builtins as B
from simkit.core.lang import _stub as lang_stub
from simkit.core.linalg_builtins import ENTRIES as LINALG_ENTRIES

pytestmark = pytest.mark.not_on_fake_driver("its numerics are the CPU run's; the PTX walk compiles every kernel here")

FLOATS = [sk.float32, sk.float64]
SIZES = [2, 3, 4]
N = 16  # elements (threads) per launch


def _name(t) -> str:
    return t.__name__


# ---------------------------------------------------------------------------
# Kernel factories: one kernel per builtin call or operator, per operand types
# ---------------------------------------------------------------------------
# Builtins are called through a closure variable (`fn`), which the frontend
# resolves like `sk.sin`; operators need their own source line each.


def _call0(fn, R):
    @sk.kernel
    def call0(out: sk.array(dtype=R)):
        out[sk.tid()] = fn()
    return call0


def _call1(fn, A, R):
    @sk.kernel
    def call1(a: sk.array(dtype=A), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = fn(a[i])
    return call1


def _call2(fn, A, Bt, R):
    @sk.kernel
    def call2(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = fn(a[i], b[i])
    return call2


def _call3(fn, A, Bt, C, R):
    @sk.kernel
    def call3(a: sk.array(dtype=A), b: sk.array(dtype=Bt), c: sk.array(dtype=C), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = fn(a[i], b[i], c[i])
    return call3


def _call4(fn, A, Bt, C, Dt, R):
    @sk.kernel
    def call4(a: sk.array(dtype=A), b: sk.array(dtype=Bt), c: sk.array(dtype=C), d: sk.array(dtype=Dt),
              out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = fn(a[i], b[i], c[i], d[i])
    return call4


def _neg(A, R):
    @sk.kernel
    def neg(a: sk.array(dtype=A), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = -a[i]
    return neg


def _add(A, Bt, R):
    @sk.kernel
    def add(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] + b[i]
    return add


def _sub(A, Bt, R):
    @sk.kernel
    def sub(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] - b[i]
    return sub


def _mul(A, Bt, R):
    @sk.kernel
    def mul(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] * b[i]
    return mul


def _div(A, Bt, R):
    @sk.kernel
    def div(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] / b[i]
    return div


def _matmul(A, Bt, R):
    @sk.kernel
    def matmul(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] @ b[i]
    return matmul


def _mod(A, Bt, R):
    @sk.kernel
    def mod(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] % b[i]
    return mod


def _floordiv(A, Bt, R):
    @sk.kernel
    def floordiv(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] // b[i]
    return floordiv


def _pow(A, Bt, R):
    @sk.kernel
    def power(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] ** b[i]
    return power


def _lt(A, Bt, R):
    @sk.kernel
    def lt(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] < b[i]
    return lt


def _le(A, Bt, R):
    @sk.kernel
    def le(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] <= b[i]
    return le


def _gt(A, Bt, R):
    @sk.kernel
    def gt(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] > b[i]
    return gt


def _ge(A, Bt, R):
    @sk.kernel
    def ge(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] >= b[i]
    return ge


def _eq(A, Bt, R):
    @sk.kernel
    def eq(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] == b[i]
    return eq


def _ne(A, Bt, R):
    @sk.kernel
    def ne(a: sk.array(dtype=A), b: sk.array(dtype=Bt), out: sk.array(dtype=R)):
        i = sk.tid()
        out[i] = a[i] != b[i]
    return ne


# operator spelling -> (table name, kernel factory)
OPERATORS = {"neg": ("neg", _neg), "+": ("add", _add), "-": ("sub", _sub), "*": ("mul", _mul), "/": ("div", _div),
             "@": ("matmul", _matmul), "%": ("mod", _mod), "//": ("floordiv", _floordiv), "**": ("pow", _pow),
             "<": ("lt", _lt), "<=": ("le", _le), ">": ("gt", _gt), ">=": ("ge", _ge), "==": ("eq", _eq),
             "!=": ("ne", _ne)}


def _is_float(t) -> bool:
    return t._sk_scalar.is_float


class Op:
    """One compiled builtin call ``out[i] = op(a[i], b[i], ...)`` plus numpy-in, numpy-out runners."""

    def __init__(self, spelling: str, *ins):
        self.spelling, self.ins = spelling, ins
        if spelling in OPERATORS:
            self.builtin, factory = OPERATORS[spelling]
        else:
            self.builtin = spelling
            calls = {0: _call0, 1: _call1, 2: _call2, 3: _call3, 4: _call4}
            # a part of a several-result builtin (transform_decompose__scale) has no sk.<name>
            factory = functools.partial(calls[len(ins)], getattr(sk, spelling, None) or lang_stub(spelling))
        found = B.resolve(self.builtin, list(ins))
        assert found is not None, f"no overload of {self.builtin} for {[_name(t) for t in ins]}"
        self.overload, _, self.out = found
        self.kernel = factory(*ins, self.out)

    def _arrays(self, xs, grad: bool):
        return [sk.array(np.asarray(x), dtype=t, requires_grad=grad and _is_float(t)) for x, t in zip(xs, self.ins)]

    def __call__(self, *xs) -> np.ndarray:
        """Forward: numpy inputs (leading dim = elements) -> numpy output."""
        ins = self._arrays(xs, grad=False)
        out = sk.zeros(len(xs[0]), dtype=self.out)
        sk.launch(self.kernel, len(xs[0]), inputs=[*ins, out])
        return out.numpy().copy()

    def adjoint(self, xs, seed) -> list:
        """Backward: d(sum(seed * op(xs)))/d xs for each float input (None for the others)."""
        n = len(xs[0])
        ins = self._arrays(xs, grad=True)
        out = sk.zeros(n, dtype=self.out, requires_grad=True)
        sk.launch(self.kernel, n, inputs=[*ins, out])
        out.grad.assign(seed)
        sk.launch(self.kernel, n, inputs=[*ins, out], adjoint=True)
        return [a.grad.numpy().copy() if a.requires_grad else None for a in ins]

    def tangent(self, xs, dxs) -> np.ndarray:
        """Forward mode: the output's tangent along ``dxs`` (None for inputs that are not float)."""
        n = len(xs[0])
        ins = self._arrays(xs, grad=False)
        out = sk.zeros(n, dtype=self.out)
        with sk.autograd.JVP({a: d for a, d in zip(ins, dxs) if d is not None}) as fwd:
            sk.launch(self.kernel, n, inputs=[*ins, out])
        return fwd.tangent(out).numpy().copy()


UNARY_MATH = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sqrt", "exp", "log", "log2",
              "log10", "abs", "sign", "floor", "ceil", "round", "trunc"]
COMPARISONS = ["<", "<=", ">", ">=", "==", "!="]


def _float_signatures(F) -> list:
    """Every (spelling, operand types...) this module compiles for the float type F."""
    b, V3, Q, T = sk.bool_, sk.vector(3, F), sk.quat_of(F), sk.transform_of(F)
    M23, M34 = sk.matrix((2, 3), F), sk.matrix((3, 4), F)
    sigs = [(s, F) for s in [*UNARY_MATH, "neg"]]
    sigs += [(s, F, F) for s in ("+", "-", "*", "/", "%", "//", "**", "atan2", "pow", "min", "max", *COMPARISONS)]
    sigs += [("clamp", F, F, F), ("smoothstep", F, F, F), ("lerp", F, F, F)]
    sigs += [(s, b, X, X) for s in ("select", "where") for X in (F, V3)]
    sigs += [("lerp", X, X, F) for X in (Q, T, M23)]
    sigs += [("transform_compose", V3, Q, V3)]
    for k in (1, 2, 3, 4):  # the variadic builtins, with 1 to 4 vectors of lengths 3 and 2
        sigs += [(s, *[X] * k) for s in ("matrix_from_rows", "matrix_from_cols") for X in (V3, sk.vector(2, F))]
    for n in SIZES:
        V, M = sk.vector(n, F), sk.matrix((n, n), F)
        sigs += [(s, V, V) for s in ("+", "-", "dot", "min", "max", "cw_mul", "cw_div", "outer")]
        sigs += [(s, V) for s in ("neg", "length", "length_sq", "normalize", "abs", "diag")]
        sigs += [("lerp", V, V, F), ("lerp", M, M, F), ("get_diag", M)]
        sigs += [("*", F, V), ("*", V, F), ("/", V, F)]
        sigs += [(s, M, M) for s in ("+", "-", "*", "@")]
        sigs += [(s, M) for s in ("neg", "transpose", "determinant", "inverse", "trace")]
        sigs += [("*", F, M), ("*", M, F), ("/", M, F), ("*", M, V), ("@", M, V)]
    sigs += [("cross", V3, V3), ("==", V3, V3), ("!=", V3, V3), ("outer", sk.vector(2, F), sk.vector(4, F)),
             ("transpose", M23), ("@", M23, M34), ("*", M23, V3)]
    sigs += [("quat_from_axis_angle", V3, F), ("quat_rotate", Q, V3), ("quat_rotate_inv", Q, V3),
             ("quat_inverse", Q), ("quat_to_matrix", Q), ("neg", Q), ("quat_rpy", F, F, F), ("length", Q),
             ("length_sq", Q)]
    sigs += [(s, Q, Q) for s in ("*", "+", "-")] + [("*", F, Q), ("*", Q, F), ("/", Q, F)]
    sigs += [("transform_point", T, V3), ("transform_vector", T, V3), ("transform_inverse", T), ("neg", T)]
    sigs += [(s, T, T) for s in ("transform_multiply", "+", "-")]
    S6, M66, M33 = sk.vector(6, F), sk.matrix((6, 6), F), sk.matrix((3, 3), F)
    sigs += [("spatial_top", S6), ("spatial_bottom", S6), ("spatial_transpose", M66), ("spatial_adjoint", M33, M33)]
    sigs += [(s, S6, S6) for s in ("spatial_dot", "spatial_cross", "spatial_cross_dual")]
    sigs += [(s, T, S6) for s in ("transform_twist", "transform_wrench")]
    sigs += [(s, F) for s in WARP_MATH]  # warp_math_builtins.py
    sigs += [(s, V3) for s in NORMS] + [(s, V3, F) for s in ("norm_huber", "norm_pseudo_huber")]
    sigs += [("quat_to_rpy", Q), ("transform_get_translation", T), ("transform_get_rotation", T)]
    sigs += [("/", F, V3), ("/", F, M23), ("/", F, Q), ("normalize", Q), ("dot", Q, Q)]
    M44 = sk.matrix((4, 4), F)
    sigs += [("skew", V3), ("transform_point", M44, V3), ("transform_vector", M44, V3), ("velocity_at_point", S6, V3)]
    I = sk.int32  # rotation_builtins.py
    sigs += [("quat_from_euler", V3, I, I, I), ("quat_from_matrix", M33), ("quat_from_matrix", M44), ("quat_slerp", Q, Q, F)]
    sigs += [(s, V3, Q) for s in ("quat_twist", "quat_twist_angle", "quat_twist_angle_signed")]
    sigs += [(s, Q) for s in ROTATION_PARTS if s.startswith("quat")] + [(s, M44) for s in ROTATION_PARTS if s.startswith("transform")]
    sigs += [("smooth_normalize", V3, F), ("smooth_normalize", V3), ("erfinv", F), ("erfcinv", F)]
    return sigs


ROTATION_PARTS = [p for parts in B.MULTI_RESULTS.values() for p in parts[1]]


WARP_MATH = ["erf", "erfc", "cbrt", "degrees", "radians", "rint", "frac", "step", "nonzero", "isnan", "isinf",
             "isfinite"]
NORMS = ["norm_l1", "norm_l2", "norm_huber", "norm_pseudo_huber"]


def _int_signatures() -> list:
    I, L, b = sk.int32, sk.int64, sk.bool_
    sigs = [(s, I, I) for s in ("%", "//", "+", "-", "*", "min", "max", *COMPARISONS)]
    sigs += [(s, I) for s in ("neg", "abs", "sign")] + [("clamp", I, I, I)]
    sigs += [(s, I, I) for s in BITWISE] + [("invert", I)] + [(s, b, b) for s in ("bit_and", "bit_or", "bit_xor")]
    U, F = sk.uint32, sk.float32  # random_builtins.py
    sigs += [("rand_init", I), ("rand_init", I, I), ("randi", U, I, I), ("randu", U, U, U), ("randf", U, F, F)]
    sigs += [(s, U) for s in B.STATE_DRAWS]
    return sigs + [("%", L, L), ("//", L, L), ("==", b, b), ("!=", b, b)]


BITWISE = {"bit_and": np.bitwise_and, "bit_or": np.bitwise_or, "bit_xor": np.bitwise_xor,
           "lshift": np.left_shift, "rshift": np.right_shift}


# (spelling, operand types...) -> Op, e.g. OPS["*", sk.mat33d, sk.vec3d] or OPS["cross", sk.vec3, sk.vec3]
OPS: dict = {sig: Op(*sig) for sig in [*_float_signatures(sk.float32), *_float_signatures(sk.float64),
                                       *_int_signatures(), ("quat_identity",), ("transform_identity",)]}


@sk.kernel
def identity_kernel(out3: sk.array(dtype=sk.mat33d), out4: sk.array(dtype=sk.mat44)):
    i = sk.tid()
    out3[i] = sk.identity(n=3, dtype=sk.float64)
    out4[i] = sk.identity(4, sk.float32)


@sk.kernel
def literals_in_float64(x: sk.array(dtype=sk.float64), v: sk.array(dtype=sk.vec3d),
                        out: sk.array(dtype=sk.float64), vout: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    out[i] = 0.1 * x[i] + sk.min(x[i], 2) + sk.clamp(x[i], 0.3, 1) + sk.pow(x[i], 1.1) + x[i] % 0.7
    vout[i] = 0.1 * v[i] + v[i] / 3.0 + sk.select(x[i] > 0.5, v[i], v[i] * 0.3)


# ---------------------------------------------------------------------------
# Inputs and references
# ---------------------------------------------------------------------------
_rng = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _seed(request):
    """Every test draws from its own deterministic stream."""
    global _rng
    _rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def exact(x, F) -> np.ndarray:
    """``x`` as float64 holding exactly the values F stores, so references see what the kernel sees."""
    return np.asarray(x, dtype=F._sk_scalar.np_dtype).astype(np.float64)


def uniform(F, lo=-1.0, hi=1.0, shape=()) -> np.ndarray:
    return exact(_rng.uniform(lo, hi, (N, *shape)), F)


def away_from_zero(F, lo, hi, shape=()) -> np.ndarray:
    """Magnitudes in [lo, hi], random signs."""
    return exact(_rng.uniform(lo, hi, (N, *shape)) * _rng.choice([-1.0, 1.0], (N, *shape)), F)


def vectors(F, n, lo=0.5, hi=2.0) -> np.ndarray:
    """Vectors with norms in [lo, hi] (away from the singular zero vector)."""
    d = _rng.standard_normal((N, n))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return exact(d * _rng.uniform(lo, hi, (N, 1)), F)


def matrices(F, n) -> np.ndarray:
    """Well-conditioned n x n matrices (condition number below 10)."""
    out = []
    while len(out) < N:
        m = _rng.uniform(-1, 1, (n, n)) + 2.0 * np.eye(n)
        if np.linalg.cond(m) < 10:
            out.append(m)
    return exact(np.array(out), F)


def unit_quats(F) -> np.ndarray:
    q = _rng.standard_normal((N, 4))
    return exact(q / np.linalg.norm(q, axis=1, keepdims=True), F)


def transforms(F) -> np.ndarray:
    return np.concatenate([uniform(F, -2, 2, (3,)), unit_quats(F)], axis=1)


def bools() -> np.ndarray:
    c = _rng.random(N) < 0.5
    c[:2] = [True, False]
    return c


def non_integer_ratios(F):
    """(a, b) with a / b at least 0.1 away from an integer: // and % are smooth there."""
    b = away_from_zero(F, 0.7, 2.0)
    k = _rng.integers(-3, 4, N) + _rng.uniform(0.1, 0.9, N)
    return exact(k * b, F), b


def tol(F, scale=1.0) -> dict:
    if F._sk_scalar is sk.float32:
        return dict(rtol=1e-5 * scale, atol=1e-5 * scale)
    return dict(rtol=1e-12 * scale, atol=1e-12 * scale)


def assert_close(actual, expected, F, scale=1.0):
    np.testing.assert_allclose(actual, expected, **tol(F, scale))


def dot(a, b):
    return np.sum(a * b, axis=-1)


def q_mul(a, b):
    """Hamilton product of (x, y, z, w) quaternions."""
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), aw * bw - dot(av, bv)[..., None]], axis=-1)


def q_conj(q):
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def q_rotate(q, v):
    """Rotate v by unit q as the sandwich product q (v, 0) q*."""
    pure = np.concatenate([v, np.zeros(v.shape[:-1] + (1,))], axis=-1)
    return q_mul(q_mul(q, pure), q_conj(q))[..., :3]


def q_matrix(q):
    """Textbook rotation matrix of a unit (x, y, z, w) quaternion."""
    x, y, z, w = (q[..., k] for k in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def rodrigues(axis, angle, v):
    """Right-handed rotation of v about the unit ``axis`` by ``angle``."""
    c, s = np.cos(angle)[:, None], np.sin(angle)[:, None]
    return v * c + np.cross(axis, v) * s + axis * dot(axis, v)[:, None] * (1 - c)


floats = pytest.mark.parametrize("F", FLOATS, ids=_name)
sizes = pytest.mark.parametrize("n", SIZES)


# ---------------------------------------------------------------------------
# Scalar math
# ---------------------------------------------------------------------------
SCALAR_MATH = {  # name: (numpy reference, input range)
    "sin": (np.sin, (-3, 3)), "cos": (np.cos, (-3, 3)), "tan": (np.tan, (-1.2, 1.2)),
    "asin": (np.arcsin, (-0.9, 0.9)), "acos": (np.arccos, (-0.9, 0.9)), "atan": (np.arctan, (-3, 3)),
    "sinh": (np.sinh, (-2, 2)), "cosh": (np.cosh, (-2, 2)), "tanh": (np.tanh, (-2, 2)),
    "sqrt": (np.sqrt, (0.1, 4)), "exp": (np.exp, (-2, 2)), "log": (np.log, (0.1, 4)),
    "log2": (np.log2, (0.1, 4)), "log10": (np.log10, (0.1, 4)),
}


@floats
@pytest.mark.parametrize("name", list(SCALAR_MATH))
def test_scalar_math_matches_numpy(name, F):
    ref, (lo, hi) = SCALAR_MATH[name]
    x = uniform(F, lo, hi)
    assert_close(OPS[name, F](x), ref(x), F)


@floats
def test_atan2_matches_numpy_in_all_four_quadrants(F):
    angle, r = _rng.uniform(-3.0, 3.0, N), _rng.uniform(0.5, 2.0, N)
    y, x = exact(r * np.sin(angle), F), exact(r * np.cos(angle), F)
    assert_close(OPS["atan2", F, F](y, x), np.arctan2(y, x), F)


@floats
def test_pow_builtin_matches_numpy(F):
    x, y = uniform(F, 0.5, 2.0), uniform(F, -2.0, 2.0)
    assert_close(OPS["pow", F, F](x, y), x ** y, F)


@floats
def test_power_operator_is_pow(F):
    x, y = uniform(F, 0.5, 2.0), uniform(F, -2.0, 2.0)
    assert_close(OPS["**", F, F](x, y), x ** y, F)


@floats
def test_abs_of_floats(F):
    x = uniform(F, -3, 3)
    x[:2] = [0.0, -0.0]
    assert_close(OPS["abs", F](x), np.abs(x), F)


def test_abs_of_ints():
    x = np.array([-5, -1, 0, 1, 7] * 3 + [-(2 ** 31) + 1], np.int32)
    np.testing.assert_array_equal(OPS["abs", sk.int32](x), np.abs(x))


@floats
def test_sign_is_minus_one_zero_or_one(F):
    x = uniform(F, -3, 3)
    x[:3] = [0.0, 1e-30 if F is sk.float64 else 1e-20, -1e-20]
    assert_close(OPS["sign", F](x), np.sign(x), F)


def test_sign_of_ints():
    x = np.array([-7, -1, 0, 0, 1, 9] * 2 + [5, -5, 0, 3], np.int32)
    np.testing.assert_array_equal(OPS["sign", sk.int32](x), np.sign(x))


def _off_integer(F):
    """Values at least 0.1 away from integers and half-integers, of both signs."""
    k = _rng.integers(-5, 6, N)
    f = np.where(_rng.random(N) < 0.5, _rng.uniform(0.1, 0.4, N), _rng.uniform(0.6, 0.9, N))
    return exact(k + _rng.choice([-1.0, 1.0], N) * f, F)


@floats
@pytest.mark.parametrize("name,ref", [("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)])
def test_rounding_builtins_match_numpy(name, ref, F):
    x = _off_integer(F)
    x[:4] = [2.0, -2.0, 0.0, -0.5]
    assert_close(OPS[name, F](x), ref(x), F)


@floats
def test_round_goes_to_the_nearest_integer(F):
    x = _off_integer(F)
    assert_close(OPS["round", F](x), np.sign(x) * np.floor(np.abs(x) + 0.5), F)


@floats
def test_round_sends_halfway_cases_away_from_zero(F):
    """Like C's round and Warp's wp.round (not Python's banker's rounding)."""
    x = np.resize(np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5]), N)
    assert_close(OPS["round", F](x), np.sign(x) * np.ceil(np.abs(x)), F)


@floats
def test_min_and_max_of_floats(F):
    a, b = uniform(F, -2, 2), uniform(F, -2, 2)
    b[:2] = a[:2]
    assert_close(OPS["min", F, F](a, b), np.minimum(a, b), F)
    assert_close(OPS["max", F, F](a, b), np.maximum(a, b), F)


def test_min_and_max_of_ints():
    a, b = _rng.integers(-50, 50, N).astype(np.int32), _rng.integers(-50, 50, N).astype(np.int32)
    np.testing.assert_array_equal(OPS["min", sk.int32, sk.int32](a, b), np.minimum(a, b))
    np.testing.assert_array_equal(OPS["max", sk.int32, sk.int32](a, b), np.maximum(a, b))


@floats
def test_clamp_limits_to_the_interval(F):
    x, lo, hi = uniform(F, -3, 3), uniform(F, -1.5, -0.5), uniform(F, 0.5, 1.5)
    assert_close(OPS["clamp", F, F, F](x, lo, hi), np.clip(x, lo, hi), F)


def test_clamp_of_ints():
    x = np.arange(-8, 8, dtype=np.int32)
    lo, hi = np.full(N, -3, np.int32), np.full(N, 4, np.int32)
    np.testing.assert_array_equal(OPS["clamp", sk.int32, sk.int32, sk.int32](x, lo, hi), np.clip(x, -3, 4))


# ---------------------------------------------------------------------------
# Scalar operators
# ---------------------------------------------------------------------------
SCALAR_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


@floats
@pytest.mark.parametrize("op", list(SCALAR_ARITH))
def test_scalar_arithmetic_operators(op, F):
    a, b = uniform(F, -2, 2), away_from_zero(F, 0.5, 2)
    assert_close(OPS[op, F, F](a, b), SCALAR_ARITH[op](a, b), F)


@floats
def test_unary_minus_of_a_float(F):
    x = uniform(F, -2, 2)
    assert_close(OPS["neg", F](x), -x, F)


@pytest.mark.parametrize("op,ref", [("+", np.add), ("-", np.subtract), ("*", np.multiply)])
def test_int_arithmetic_operators(op, ref):
    a, b = _rng.integers(-1000, 1000, N).astype(np.int32), _rng.integers(-1000, 1000, N).astype(np.int32)
    np.testing.assert_array_equal(OPS[op, sk.int32, sk.int32](a, b), ref(a, b))


def test_unary_minus_of_an_int():
    x = _rng.integers(-1000, 1000, N).astype(np.int32)
    np.testing.assert_array_equal(OPS["neg", sk.int32](x), -x)


MOD_EXAMPLES = [(7, 3), (-7, 3), (7, -3), (-7, -3), (6, 3), (-6, 3), (6, -3), (0, 5), (0, -5), (1, 2), (-1, 2),
                (1, -2), (-1, -2), (-9, 4), (9, -4), (-2147483647, 10)]


@pytest.mark.parametrize("name", sorted(BITWISE))
def test_bitwise_builtins_match_numpy(name):
    a = _rng.integers(-1000, 1000, 32).astype(np.int32)
    b = _rng.integers(0, 31, 32).astype(np.int32)
    np.testing.assert_array_equal(OPS[name, sk.int32, sk.int32](a, b), BITWISE[name](a, b))
    np.testing.assert_array_equal(OPS["invert", sk.int32](a), np.invert(a))


@pytest.mark.parametrize("I", [sk.int32, sk.int64], ids=_name)
def test_integer_mod_and_floordiv_follow_python_on_negative_operands(I):
    a = np.array([x for x, _ in MOD_EXAMPLES], I.np_dtype)
    b = np.array([y for _, y in MOD_EXAMPLES], I.np_dtype)
    assert OPS["%", I, I](a, b).tolist() == [x % y for x, y in MOD_EXAMPLES]
    assert OPS["//", I, I](a, b).tolist() == [x // y for x, y in MOD_EXAMPLES]


@pytest.mark.parametrize("I", [sk.int32, sk.int64], ids=_name)
def test_integer_mod_and_floordiv_satisfy_the_division_identity(I):
    a = _rng.integers(-10 ** 6, 10 ** 6, N).astype(I.np_dtype)
    b = (_rng.integers(1, 50, N) * _rng.choice([-1, 1], N)).astype(I.np_dtype)
    q, r = OPS["//", I, I](a, b), OPS["%", I, I](a, b)
    np.testing.assert_array_equal(q, np.floor_divide(a, b))
    np.testing.assert_array_equal(r, np.mod(a, b))
    np.testing.assert_array_equal(q * b + r, a)


def test_int64_floordiv_keeps_64_bit_range():
    a = np.array([-(2 ** 40) - 1, 2 ** 40 + 1] * (N // 2), np.int64)
    b = np.array([3, -3] * (N // 2), np.int64)
    np.testing.assert_array_equal(OPS["//", sk.int64, sk.int64](a, b), a // b)


@floats
def test_float_mod_and_floordiv_follow_python(F):
    a, b = non_integer_ratios(F)
    assert_close(OPS["%", F, F](a, b), np.mod(a, b), F, scale=10)
    assert_close(OPS["//", F, F](a, b), np.floor_divide(a, b), F)


CMP_REF = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
           "!=": np.not_equal}


@pytest.mark.parametrize("T", [sk.float32, sk.float64, sk.int32], ids=_name)
@pytest.mark.parametrize("op", COMPARISONS)
def test_comparison_operators(op, T):
    a = _rng.integers(-3, 4, N).astype(T.np_dtype)  # small range: many ties
    b = _rng.integers(-3, 4, N).astype(T.np_dtype)
    if T.is_float:
        a[::3] += T.np_dtype.type(0.25)
    got = OPS[op, T, T](a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, CMP_REF[op](a, b))


@floats
def test_vector_equality_compares_every_component(F):
    V = sk.vector(3, F)
    a = uniform(F, -1, 1, (3,))
    b = a.copy()
    b[1::2, _rng.integers(0, 3)] += 0.5
    same = np.all(a == b, axis=1)
    np.testing.assert_array_equal(OPS["==", V, V](a, b), same)
    np.testing.assert_array_equal(OPS["!=", V, V](a, b), ~same)


def test_bool_equality():
    a, b = bools(), bools()
    np.testing.assert_array_equal(OPS["==", sk.bool_, sk.bool_](a, b), a == b)
    np.testing.assert_array_equal(OPS["!=", sk.bool_, sk.bool_](a, b), a != b)


# ---------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------


@floats
def test_select_uses_warp_order_false_value_first(F):
    c, a, b = bools(), uniform(F), uniform(F)
    assert_close(OPS["select", sk.bool_, F, F](c, a, b), np.where(c, b, a), F)


@floats
def test_where_uses_numpy_order_true_value_first(F):
    c, a, b = bools(), uniform(F), uniform(F)
    assert_close(OPS["where", sk.bool_, F, F](c, a, b), np.where(c, a, b), F)


@floats
def test_select_and_where_pick_whole_vectors(F):
    V = sk.vector(3, F)
    c, a, b = bools(), uniform(F, shape=(3,)), uniform(F, shape=(3,))
    assert_close(OPS["select", sk.bool_, V, V](c, a, b), np.where(c[:, None], b, a), F)
    assert_close(OPS["where", sk.bool_, V, V](c, a, b), np.where(c[:, None], a, b), F)


# ---------------------------------------------------------------------------
# Vectors
# ---------------------------------------------------------------------------


@sizes
@floats
@pytest.mark.parametrize("op,ref", [("+", np.add), ("-", np.subtract)])
def test_vector_add_and_sub(op, ref, n, F):
    V = sk.vector(n, F)
    a, b = uniform(F, shape=(n,)), uniform(F, shape=(n,))
    assert_close(OPS[op, V, V](a, b), ref(a, b), F)


@sizes
@floats
def test_vector_negation(n, F):
    V = sk.vector(n, F)
    a = uniform(F, shape=(n,))
    assert_close(OPS["neg", V](a), -a, F)


@sizes
@floats
def test_scalar_times_vector_from_either_side(n, F):
    V = sk.vector(n, F)
    s, v = uniform(F, -2, 2), uniform(F, shape=(n,))
    assert_close(OPS["*", F, V](s, v), s[:, None] * v, F)
    assert_close(OPS["*", V, F](v, s), s[:, None] * v, F)


@sizes
@floats
def test_vector_divided_by_scalar(n, F):
    V = sk.vector(n, F)
    v, s = uniform(F, shape=(n,)), away_from_zero(F, 0.5, 2)
    assert_close(OPS["/", V, F](v, s), v / s[:, None], F)


@sizes
@floats
def test_dot_matches_numpy(n, F):
    V = sk.vector(n, F)
    a, b = uniform(F, shape=(n,)), uniform(F, shape=(n,))
    assert_close(OPS["dot", V, V](a, b), dot(a, b), F)


@floats
def test_cross_matches_numpy(F):
    V = sk.vector(3, F)
    a, b = uniform(F, shape=(3,)), uniform(F, shape=(3,))
    assert_close(OPS["cross", V, V](a, b), np.cross(a, b), F)


@sizes
@floats
def test_length_and_length_sq_match_numpy(n, F):
    V = sk.vector(n, F)
    v = uniform(F, shape=(n,))
    assert_close(OPS["length", V](v), np.linalg.norm(v, axis=1), F)
    assert_close(OPS["length_sq", V](v), dot(v, v), F)


@sizes
@floats
def test_normalize_gives_unit_vectors_in_the_same_direction(n, F):
    V = sk.vector(n, F)
    v = vectors(F, n, 0.1, 10.0)
    assert_close(OPS["normalize", V](v), v / np.linalg.norm(v, axis=1, keepdims=True), F)


@sizes
@floats
def test_normalize_leaves_the_zero_vector_at_zero(n, F):
    V = sk.vector(n, F)
    v = uniform(F, shape=(n,))
    v[:3] = 0.0
    out = OPS["normalize", V](v)
    np.testing.assert_array_equal(out[:3], 0.0)
    assert np.all(np.isfinite(out))


@sizes
@floats
def test_componentwise_abs_min_max_of_vectors(n, F):
    V = sk.vector(n, F)
    a, b = uniform(F, shape=(n,)), uniform(F, shape=(n,))
    assert_close(OPS["abs", V](a), np.abs(a), F)
    assert_close(OPS["min", V, V](a, b), np.minimum(a, b), F)
    assert_close(OPS["max", V, V](a, b), np.maximum(a, b), F)


@sizes
@floats
def test_cw_mul_and_cw_div_are_componentwise(n, F):
    V = sk.vector(n, F)
    a, b = uniform(F, shape=(n,)), away_from_zero(F, 0.5, 2, (n,))
    assert_close(OPS["cw_mul", V, V](a, b), a * b, F)
    assert_close(OPS["cw_div", V, V](a, b), a / b, F)


@sizes
@floats
def test_outer_matches_numpy(n, F):
    V = sk.vector(n, F)
    a, b = uniform(F, shape=(n,)), uniform(F, shape=(n,))
    assert_close(OPS["outer", V, V](a, b), np.einsum("ni,nj->nij", a, b), F)


@floats
def test_outer_of_different_lengths_is_rectangular(F):
    a, b = uniform(F, shape=(2,)), uniform(F, shape=(4,))
    got = OPS["outer", sk.vector(2, F), sk.vector(4, F)](a, b)
    assert got.shape == (N, 2, 4)
    assert_close(got, np.einsum("ni,nj->nij", a, b), F)


@sizes
@floats
def test_diag_puts_the_vector_on_the_diagonal(n, F):
    V = sk.vector(n, F)
    v = uniform(F, shape=(n,))
    assert_close(OPS["diag", V](v), v[:, :, None] * np.eye(n), F)


# ---------------------------------------------------------------------------
# Matrices
# ---------------------------------------------------------------------------


@sizes
@floats
@pytest.mark.parametrize("op,ref", [("+", np.add), ("-", np.subtract)])
def test_matrix_add_and_sub(op, ref, n, F):
    M = sk.matrix((n, n), F)
    a, b = uniform(F, shape=(n, n)), uniform(F, shape=(n, n))
    assert_close(OPS[op, M, M](a, b), ref(a, b), F)


@sizes
@floats
def test_matrix_negation(n, F):
    M = sk.matrix((n, n), F)
    a = uniform(F, shape=(n, n))
    assert_close(OPS["neg", M](a), -a, F)


@sizes
@floats
def test_scalar_times_and_matrix_over_scalar(n, F):
    M = sk.matrix((n, n), F)
    s, a = away_from_zero(F, 0.5, 2), uniform(F, shape=(n, n))
    assert_close(OPS["*", F, M](s, a), s[:, None, None] * a, F)
    assert_close(OPS["*", M, F](a, s), s[:, None, None] * a, F)
    assert_close(OPS["/", M, F](a, s), a / s[:, None, None], F)


@sizes
@floats
@pytest.mark.parametrize("op", ["*", "@"])
def test_matrix_vector_product(op, n, F):
    M, V = sk.matrix((n, n), F), sk.vector(n, F)
    a, v = uniform(F, shape=(n, n)), uniform(F, shape=(n,))
    assert_close(OPS[op, M, V](a, v), np.einsum("nij,nj->ni", a, v), F)


@sizes
@floats
@pytest.mark.parametrize("op", ["*", "@"])
def test_matrix_matrix_product(op, n, F):
    M = sk.matrix((n, n), F)
    a, b = uniform(F, shape=(n, n)), uniform(F, shape=(n, n))
    assert_close(OPS[op, M, M](a, b), a @ b, F)


@floats
def test_rectangular_matrix_products(F):
    M23, M34, V3 = sk.matrix((2, 3), F), sk.matrix((3, 4), F), sk.vector(3, F)
    a, b, v = uniform(F, shape=(2, 3)), uniform(F, shape=(3, 4)), uniform(F, shape=(3,))
    got = OPS["@", M23, M34](a, b)
    assert got.shape == (N, 2, 4)
    assert_close(got, a @ b, F)
    assert_close(OPS["*", M23, V3](a, v), np.einsum("nij,nj->ni", a, v), F)


@sizes
@floats
def test_transpose_matches_numpy(n, F):
    M = sk.matrix((n, n), F)
    a = uniform(F, shape=(n, n))
    assert_close(OPS["transpose", M](a), np.swapaxes(a, 1, 2), F)


@floats
def test_transpose_of_a_rectangular_matrix(F):
    a = uniform(F, shape=(2, 3))
    got = OPS["transpose", sk.matrix((2, 3), F)](a)
    assert got.shape == (N, 3, 2)
    assert_close(got, np.swapaxes(a, 1, 2), F)


@sizes
@floats
def test_trace_matches_numpy(n, F):
    M = sk.matrix((n, n), F)
    a = uniform(F, shape=(n, n))
    assert_close(OPS["trace", M](a), np.trace(a, axis1=1, axis2=2), F)


@sizes
@floats
def test_determinant_matches_numpy(n, F):
    M = sk.matrix((n, n), F)
    a = matrices(F, n)
    assert_close(OPS["determinant", M](a), np.linalg.det(a), F, scale=10)


@sizes
@floats
def test_inverse_matches_numpy(n, F):
    M = sk.matrix((n, n), F)
    a = matrices(F, n)
    assert_close(OPS["inverse", M](a), np.linalg.inv(a), F, scale=10)


def test_identity_builds_identity_matrices_of_the_requested_size_and_dtype():
    out3, out4 = sk.zeros(N, dtype=sk.mat33d), sk.zeros(N, dtype=sk.mat44)
    sk.launch(identity_kernel, N, inputs=[out3, out4])
    np.testing.assert_array_equal(out3.numpy(), np.broadcast_to(np.eye(3), (N, 3, 3)))
    np.testing.assert_array_equal(out4.numpy(), np.broadcast_to(np.eye(4), (N, 4, 4)))
    assert out3.numpy().dtype == np.float64 and out4.numpy().dtype == np.float32


# ---------------------------------------------------------------------------
# Quaternions (x, y, z, w)
# ---------------------------------------------------------------------------


@floats
def test_quat_from_axis_angle_is_axis_sin_half_angle_and_cos_half_angle(F):
    axis, angle = vectors(F, 3, 1.0, 1.0), uniform(F, -3, 3)
    want = np.concatenate([axis * np.sin(angle / 2)[:, None], np.cos(angle / 2)[:, None]], axis=1)
    assert_close(OPS["quat_from_axis_angle", sk.vector(3, F), F](axis, angle), want, F)


@floats
def test_quat_from_axis_angle_rotates_right_handed_by_the_angle(F):
    V3, Q = sk.vector(3, F), sk.quat_of(F)
    axis, angle, v = vectors(F, 3, 1.0, 1.0), uniform(F, -3, 3), uniform(F, shape=(3,))
    q = OPS["quat_from_axis_angle", V3, F](axis, angle)
    assert_close(OPS["quat_rotate", Q, V3](q, v), rodrigues(axis, angle, v), F)


def test_a_quarter_turn_about_z_takes_x_to_y():
    V3, Q = sk.vec3d, sk.quatd
    q = OPS["quat_from_axis_angle", V3, sk.float64](np.tile([0.0, 0.0, 1.0], (N, 1)), np.full(N, np.pi / 2))
    got = OPS["quat_rotate", Q, V3](q, np.tile([1.0, 0.0, 0.0], (N, 1)))
    np.testing.assert_allclose(got, np.tile([0.0, 1.0, 0.0], (N, 1)), atol=1e-15)


@floats
def test_quat_rotate_is_the_sandwich_product(F):
    V3, Q = sk.vector(3, F), sk.quat_of(F)
    q, v = unit_quats(F), uniform(F, -2, 2, (3,))
    assert_close(OPS["quat_rotate", Q, V3](q, v), q_rotate(q, v), F)


@floats
def test_quat_rotate_inv_rotates_by_the_conjugate(F):
    V3, Q = sk.vector(3, F), sk.quat_of(F)
    q, v = unit_quats(F), uniform(F, -2, 2, (3,))
    assert_close(OPS["quat_rotate_inv", Q, V3](q, v), q_rotate(q_conj(q), v), F)


@floats
def test_quat_inverse_is_conjugate_over_squared_norm(F):
    q = unit_quats(F) * _rng.uniform(0.5, 2.0, (N, 1))
    q = exact(q, F)
    assert_close(OPS["quat_inverse", sk.quat_of(F)](q), q_conj(q) / dot(q, q)[:, None], F)


@floats
def test_quat_to_matrix_matches_the_textbook_rotation_matrix(F):
    q = unit_quats(F)
    assert_close(OPS["quat_to_matrix", sk.quat_of(F)](q), q_matrix(q), F)


@floats
def test_quat_rpy_rotates_by_roll_about_x_then_pitch_about_y_then_yaw_about_z(F):
    V3, Q = sk.vector(3, F), sk.quat_of(F)
    roll, pitch, yaw, v = uniform(F, -3, 3), uniform(F, -3, 3), uniform(F, -3, 3), uniform(F, shape=(3,))
    q = OPS["quat_rpy", F, F, F](roll, pitch, yaw)
    axis = [np.tile(e, (N, 1)) for e in np.eye(3)]
    want = rodrigues(axis[2], yaw, rodrigues(axis[1], pitch, rodrigues(axis[0], roll, v)))
    assert_close(OPS["quat_rotate", Q, V3](q, v), want, F)
    assert_close(np.linalg.norm(q.astype(np.float64), axis=1), np.ones(N), F)


def test_quat_rpy_of_a_roll_alone_is_the_x_axis_quaternion():
    roll, zero = np.full(N, 0.8), np.zeros(N)
    q = OPS["quat_rpy", sk.float64, sk.float64, sk.float64](roll, zero, zero)
    np.testing.assert_allclose(q, np.tile([np.sin(0.4), 0.0, 0.0, np.cos(0.4)], (N, 1)), atol=1e-15)


@pytest.mark.cpu_only("Warp runs on its own CPU device here")
def test_quat_rpy_agrees_with_warp():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()
    angles = [(0.1, 0.2, 0.3), (-1.2, 0.7, 2.5)]
    got = OPS["quat_rpy", sk.float64, sk.float64, sk.float64](*[np.array(a, np.float64) for a in zip(*angles)])
    for row, (r, p, y) in zip(got, angles):
        np.testing.assert_allclose(row, np.array(wp.quat_rpy(r, p, y)), atol=1e-6)


@floats
def test_length_of_a_quat_is_its_euclidean_norm(F):
    Q, q = sk.quat_of(F), uniform(F, -2, 2, (4,))
    assert_close(OPS["length", Q](q), np.linalg.norm(q.astype(np.float64), axis=1), F)
    assert_close(OPS["length_sq", Q](q), dot(q, q), F)


@floats
def test_quat_product_is_the_hamilton_product(F):
    Q = sk.quat_of(F)
    a, b = uniform(F, shape=(4,)), uniform(F, shape=(4,))
    assert_close(OPS["*", Q, Q](a, b), q_mul(a, b), F)


@floats
def test_quat_product_composes_rotations(F):
    """(q * r) rotates like r first, then q."""
    V3, Q = sk.vector(3, F), sk.quat_of(F)
    q, r, v = unit_quats(F), unit_quats(F), uniform(F, shape=(3,))
    qr = OPS["*", Q, Q](q, r)
    assert_close(OPS["quat_rotate", Q, V3](qr, v), q_rotate(q, q_rotate(r, v)), F)


@floats
def test_quat_scalar_scaling_and_elementwise_ops(F):
    Q = sk.quat_of(F)
    q, r, s = uniform(F, shape=(4,)), uniform(F, shape=(4,)), away_from_zero(F, 0.5, 2)
    assert_close(OPS["*", F, Q](s, q), s[:, None] * q, F)
    assert_close(OPS["*", Q, F](q, s), s[:, None] * q, F)
    assert_close(OPS["/", Q, F](q, s), q / s[:, None], F)
    assert_close(OPS["+", Q, Q](q, r), q + r, F)
    assert_close(OPS["-", Q, Q](q, r), q - r, F)
    assert_close(OPS["neg", Q](q), -q, F)


# ---------------------------------------------------------------------------
# Transforms (p, q)
# ---------------------------------------------------------------------------


@floats
def test_transform_point_rotates_then_translates(F):
    T, V3 = sk.transform_of(F), sk.vector(3, F)
    t, p = transforms(F), uniform(F, -2, 2, (3,))
    assert_close(OPS["transform_point", T, V3](t, p), q_rotate(t[:, 3:], p) + t[:, :3], F)


@floats
def test_transform_vector_only_rotates(F):
    T, V3 = sk.transform_of(F), sk.vector(3, F)
    t, v = transforms(F), uniform(F, -2, 2, (3,))
    assert_close(OPS["transform_vector", T, V3](t, v), q_rotate(t[:, 3:], v), F)


@floats
def test_transform_multiply_composes_child_into_parent(F):
    T = sk.transform_of(F)
    a, b = transforms(F), transforms(F)
    want = np.concatenate([q_rotate(a[:, 3:], b[:, :3]) + a[:, :3], q_mul(a[:, 3:], b[:, 3:])], axis=1)
    assert_close(OPS["transform_multiply", T, T](a, b), want, F)


@floats
def test_transform_inverse_undoes_the_transform(F):
    T = sk.transform_of(F)
    t = transforms(F)
    qi = q_conj(t[:, 3:])
    inv = OPS["transform_inverse", T](t)
    assert_close(inv, np.concatenate([-q_rotate(qi, t[:, :3]), qi], axis=1), F)
    ident = OPS["transform_multiply", T, T](t, inv)
    assert_close(ident, np.tile([0, 0, 0, 0, 0, 0, 1.0], (N, 1)), F, scale=10)


# ---------------------------------------------------------------------------
# Interpolation (lerp, smoothstep) and matrices from vectors (matrix_from_rows/cols, get_diag)
# ---------------------------------------------------------------------------


def _lerp_operands(F):
    """(type, sampler) of each kind of value lerp takes."""
    Q, T, M23 = sk.quat_of(F), sk.transform_of(F), sk.matrix((2, 3), F)
    kinds = [(F, lambda: uniform(F, -2, 2)), (Q, lambda: unit_quats(F)), (T, lambda: transforms(F)),
             (M23, lambda: uniform(F, -2, 2, (2, 3)))]
    for n in SIZES:
        kinds += [(sk.vector(n, F), lambda n=n: uniform(F, -2, 2, (n,))),
                  (sk.matrix((n, n), F), lambda n=n: uniform(F, -2, 2, (n, n)))]
    return kinds


@floats
def test_lerp_is_a_times_one_minus_t_plus_b_times_t_for_every_kind_of_value(F):
    for X, draw in _lerp_operands(F):
        a, b, t = draw(), draw(), uniform(F, -0.5, 1.5)
        tt = t.reshape((N,) + (1,) * (a.ndim - 1))
        assert_close(OPS["lerp", X, X, F](a, b, t), a * (1 - tt) + b * tt, F, scale=10)


@floats
def test_lerp_gives_a_at_zero_and_b_at_one(F):
    V = sk.vector(3, F)
    a, b = uniform(F, shape=(3,)), uniform(F, shape=(3,))
    assert_close(OPS["lerp", V, V, F](a, b, np.zeros(N)), a, F)
    assert_close(OPS["lerp", V, V, F](a, b, np.ones(N)), b, F)


def _smoothstep_ref(a, b, x):
    t = np.clip((x - a) / (b - a), 0.0, 1.0)
    return t * t * (3 - 2 * t)


@floats
def test_smoothstep_is_the_clamped_cubic_hermite(F):
    a, b = uniform(F, -1, -0.2), uniform(F, 0.2, 1)
    b[::3], a[::3] = a[::3].copy(), b[::3].copy()  # a > b too: decreasing
    x = uniform(F, -1.5, 1.5)
    x[:2] = [-5.0, 5.0]
    assert_close(OPS["smoothstep", F, F, F](a, b, x), _smoothstep_ref(a, b, x), F, scale=10)


@floats
def test_smoothstep_is_zero_below_and_one_above_the_edges(F):
    x = np.resize(np.array([-1.0, 0.0, 0.25, 0.5, 1.0, 2.0]), N)
    got = OPS["smoothstep", F, F, F](np.zeros(N), np.ones(N), x)
    assert_close(got, _smoothstep_ref(0.0, 1.0, x), F)
    assert got[0] == 0 and got[4] == 1 and got[3] == 0.5


@floats
@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [2, 3])
def test_matrix_from_rows_and_cols_stack_the_vectors(k, n, F):
    V = sk.vector(n, F)
    vs = [uniform(F, shape=(n,)) for _ in range(k)]
    rows = OPS[("matrix_from_rows", *[V] * k)]
    cols = OPS[("matrix_from_cols", *[V] * k)]
    assert rows.out._sk_shape == (k, n) and cols.out._sk_shape == (n, k)
    assert_close(rows(*vs), np.stack(vs, axis=1), F)
    assert_close(cols(*vs), np.stack(vs, axis=2), F)


@sizes
@floats
def test_get_diag_is_the_diagonal_and_undoes_diag(n, F):
    V, M = sk.vector(n, F), sk.matrix((n, n), F)
    m = uniform(F, shape=(n, n))
    assert_close(OPS["get_diag", M](m), np.diagonal(m, axis1=1, axis2=2), F)
    v = uniform(F, shape=(n,))
    assert_close(OPS["get_diag", M](OPS["diag", V](v)), v, F)


@floats
def test_transform_compose_is_rotation_times_scale_then_translation(F):
    V3, Q = sk.vector(3, F), sk.quat_of(F)
    p, q, s = uniform(F, -2, 2, (3,)), unit_quats(F), uniform(F, 0.5, 2, (3,))
    want = np.zeros((N, 4, 4))
    want[:, :3, :3] = q_matrix(q) * s[:, None, :]
    want[:, :3, 3], want[:, 3, 3] = p, 1.0
    assert_close(OPS["transform_compose", V3, Q, V3](p, q, s), want, F, scale=10)


# ---------------------------------------------------------------------------
# Spatial vectors (angular top, linear bottom) and 6x6 matrices
# ---------------------------------------------------------------------------


@floats
def test_spatial_top_and_bottom_are_the_halves(F):
    S6 = sk.vector(6, F)
    a = uniform(F, shape=(6,))
    assert_close(OPS["spatial_top", S6](a), a[:, :3], F)
    assert_close(OPS["spatial_bottom", S6](a), a[:, 3:], F)


@floats
def test_spatial_dot_is_the_6d_dot(F):
    S6 = sk.vector(6, F)
    a, b = uniform(F, shape=(6,)), uniform(F, shape=(6,))
    assert_close(OPS["spatial_dot", S6, S6](a, b), (a * b).sum(1), F)


@floats
def test_spatial_cross_is_the_motion_cross_product(F):
    """a x b equals the 6x6 matrix [[w~, 0], [v~, w~]] of a (Featherstone's crm) times b."""
    S6 = sk.vector(6, F)
    a, b = uniform(F, shape=(6,)), uniform(F, shape=(6,))
    want = np.stack([_crm(x) @ y for x, y in zip(a, b)])
    assert_close(OPS["spatial_cross", S6, S6](a, b), want, F)


@floats
def test_spatial_cross_dual_is_the_force_cross_product(F):
    """a x* b equals -crm(a)^T b (Featherstone's crf)."""
    S6 = sk.vector(6, F)
    a, b = uniform(F, shape=(6,)), uniform(F, shape=(6,))
    want = np.stack([-_crm(x).T @ y for x, y in zip(a, b)])
    assert_close(OPS["spatial_cross_dual", S6, S6](a, b), want, F)


@floats
def test_spatial_transpose_and_adjoint(F):
    M66, M33 = sk.matrix((6, 6), F), sk.matrix((3, 3), F)
    m, r, s_ = uniform(F, shape=(6, 6)), uniform(F, shape=(3, 3)), uniform(F, shape=(3, 3))
    assert_close(OPS["spatial_transpose", M66](m), m.transpose(0, 2, 1), F)
    zero = np.zeros_like(r)
    want = np.concatenate([np.concatenate([r, zero], 2), np.concatenate([s_, r], 2)], 1)  # [[r, 0], [s, r]]
    assert_close(OPS["spatial_adjoint", M33, M33](r, s_), want, F)


@floats
def test_transform_twist_and_wrench_are_the_plucker_transforms(F):
    """twist: X = [[R, 0], [p~R, R]]; wrench: X* = [[R, p~R], [0, R]] (the dual, X^-T)."""
    T, S6 = sk.transform_of(F), sk.vector(6, F)
    t, x = transforms(F), uniform(F, shape=(6,))
    R = np.stack([np.stack([q_rotate(q[None], e[None])[0] for e in np.eye(3)], 1) for q in t[:, 3:]])
    P = np.stack([_skew(p) for p in t[:, :3]])
    zero = np.zeros((3, 3))
    X = [np.block([[r, zero], [p @ r, r]]) for r, p in zip(R, P)]
    Xf = [np.block([[r, p @ r], [zero, r]]) for r, p in zip(R, P)]
    assert_close(OPS["transform_twist", T, S6](t, x), np.stack([m @ y for m, y in zip(X, x)]), F, scale=4)
    assert_close(OPS["transform_wrench", T, S6](t, x), np.stack([m @ y for m, y in zip(Xf, x)]), F, scale=4)


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _crm(a):
    w, v = _skew(a[:3]), _skew(a[3:])
    return np.block([[w, np.zeros((3, 3))], [v, w]])


@floats
def test_transform_elementwise_ops(F):
    T = sk.transform_of(F)
    a, b = transforms(F), transforms(F)
    assert_close(OPS["+", T, T](a, b), a + b, F)
    assert_close(OPS["-", T, T](a, b), a - b, F)
    assert_close(OPS["neg", T](a), -a, F)


# ---------------------------------------------------------------------------
# Number literals take the type of the other operand
# ---------------------------------------------------------------------------


def test_float_literals_meeting_float64_values_stay_float64():
    x = uniform(sk.float64, 0.05, 2.5)
    v = uniform(sk.float64, shape=(3,))
    out, vout = sk.zeros(N, dtype=sk.float64), sk.zeros(N, dtype=sk.vec3d)
    sk.launch(literals_in_float64, N, inputs=[sk.array(x), sk.array(v, dtype=sk.vec3d), out, vout])
    want = 0.1 * x + np.minimum(x, 2) + np.clip(x, 0.3, 1) + x ** 1.1 + np.mod(x, 0.7)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-14, atol=1e-14)
    vwant = 0.1 * v + v / 3.0 + np.where((x > 0.5)[:, None], v * 0.3, v)
    np.testing.assert_allclose(vout.numpy(), vwant, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name,args,want_args,want_ret", [
    pytest.param("mul", [B.WEAK_FLOAT, sk.vec3d], [sk.float64, sk.vec3d], sk.vec3d, id="0.5*vec3d"),
    pytest.param("mul", [sk.mat22d, B.WEAK_INT], [sk.mat22d, sk.float64], sk.mat22d, id="mat22d*2"),
    pytest.param("div", [sk.quatd, B.WEAK_FLOAT], [sk.quatd, sk.float64], sk.quatd, id="quatd/2.0"),
    pytest.param("add", [B.WEAK_INT, sk.int64], [sk.int64, sk.int64], sk.int64, id="1+int64"),
    pytest.param("min", [sk.float64, B.WEAK_INT], [sk.float64, sk.float64], sk.float64, id="min(float64,0)"),
    pytest.param("select", [sk.bool_, B.WEAK_FLOAT, sk.float64], [sk.bool_, sk.float64, sk.float64], sk.float64,
                 id="select(c,0.0,float64)"),
    pytest.param("sin", [B.WEAK_FLOAT], [sk.float32], sk.float32, id="sin(1.0)-defaults-to-float32"),
    pytest.param("sqrt", [B.WEAK_INT], [sk.float32], sk.float32, id="sqrt(2)-defaults-to-float32"),
    pytest.param("lerp", [sk.vec3d, sk.vec3d, B.WEAK_FLOAT], [sk.vec3d, sk.vec3d, sk.float64], sk.vec3d,
                 id="lerp(vec3d,vec3d,0.5)"),
    pytest.param("smoothstep", [B.WEAK_FLOAT, B.WEAK_FLOAT, sk.float64], [sk.float64] * 3, sk.float64,
                 id="smoothstep(0.0,1.0,float64)"),
    pytest.param("matrix_from_cols", [sk.vec2d] * 3, [sk.vec2d] * 3, sk.matrix((2, 3), sk.float64),
                 id="matrix_from_cols(3 x vec2d)-is-mat23d"),
])
def test_literal_arguments_resolve_to_the_typed_operand(name, args, want_args, want_ret):
    _b, concrete, ret = B.resolve(name, args)
    assert concrete == want_args and ret is want_ret


@pytest.mark.parametrize("name,args", [
    pytest.param("add", [sk.int32, B.WEAK_FLOAT], id="int32+1.0-no-silent-promotion"),
    pytest.param("add", [sk.float32, sk.float64], id="float32+float64-no-silent-precision-mix"),
    pytest.param("determinant", [sk.matrix((2, 3))], id="determinant-of-non-square"),
    pytest.param("cross", [sk.vec2, sk.vec2], id="cross-of-vec2"),
    pytest.param("mul", [sk.vec3, sk.vec3], id="vec3*vec3-use-dot-or-cw_mul"),
    pytest.param("matmul", [sk.mat33, sk.vec2], id="mat33@vec2-inner-dims-differ"),
    pytest.param("sqrt", [sk.int32], id="sqrt-of-int32"),
    pytest.param("lerp", [sk.vec3, sk.vec3, sk.float64], id="lerp-t-of-another-float-type"),
    pytest.param("lerp", [sk.int32, sk.int32, sk.int32], id="lerp-of-ints"),
    pytest.param("smoothstep", [sk.vec3, sk.vec3, sk.vec3], id="smoothstep-of-vectors"),
    pytest.param("get_diag", [sk.matrix((2, 3), sk.float32)], id="get_diag-of-a-non-square-matrix"),
    pytest.param("matrix_from_rows", [], id="matrix_from_rows-of-nothing"),
    pytest.param("matrix_from_rows", [sk.vec3, sk.vec2], id="matrix_from_rows-of-two-lengths"),
    pytest.param("matrix_from_cols", [sk.vec3, sk.vec3d], id="matrix_from_cols-of-two-dtypes"),
    pytest.param("matrix_from_rows", [sk.vec3i, sk.vec3i], id="matrix_from_rows-of-int-vectors"),
    pytest.param("matrix_from_rows", [sk.float32, sk.float32], id="matrix_from_rows-of-scalars"),
])
def test_mismatched_operands_resolve_to_no_overload(name, args):
    assert B.resolve(name, args) is None


# ---------------------------------------------------------------------------
# Adjoints against central finite differences (float64)
# ---------------------------------------------------------------------------


def assert_adjoint_matches_fd(op: Op, xs: list, eps=1e-6, rtol=1e-5, atol=1e-7):
    """The adjoint of ``sum(w * op(xs))`` against central differences of the kernel's own forward.

    Threads are independent, so perturbing component j of every element at once
    yields the j-th partial derivative of each element in one pair of launches.
    """
    seed = np.random.default_rng(1).standard_normal(op(*xs).shape)
    grads = op.adjoint(xs, seed)
    assert any(g is not None for g in grads)
    for k, (x, g) in enumerate(zip(xs, grads)):
        if g is None:
            continue
        flat = np.asarray(x, np.float64).reshape(len(x), -1)
        fd = np.empty_like(flat)
        for j in range(flat.shape[1]):
            def weighted(h):
                moved = flat.copy()
                moved[:, j] += h
                args = list(xs)
                args[k] = moved.reshape(np.shape(x))
                return (op(*args) * seed).reshape(len(x), -1).sum(axis=1)
            fd[:, j] = (weighted(eps) - weighted(-eps)) / (2 * eps)
        np.testing.assert_allclose(g.reshape(flat.shape), fd, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of argument {k} of {op.spelling}")


D = sk.float64


# Samplers for the float64 adjoint checks: each returns a function drawing one input (or all of them).
def _any(lo=-1.0, hi=1.0, shape=()):
    return lambda: uniform(D, lo, hi, shape)


def _nonzero(lo=0.5, hi=2.0, shape=()):
    return lambda: away_from_zero(D, lo, hi, shape)


def _vec(n, lo=0.5, hi=2.0):
    return lambda: vectors(D, n, lo, hi)


def _well_conditioned(n):
    return lambda: matrices(D, n)


def _quat():
    return unit_quats(D)


def _xform():
    return transforms(D)


def _distinct(shape=()):
    """Two inputs at least 0.1 apart in every component, either one the larger: min/max are smooth there."""
    def draw():
        a = uniform(D, -1, 1, shape)
        b = a + away_from_zero(D, 0.1, 1.0, shape)
        return [a, b] if _rng.random() < 0.5 else [b, a]
    return draw


def _clamp_inputs():
    """x below, inside and above [lo, hi], never within 0.1 of a bound."""
    lo, hi = uniform(D, -0.6, -0.4), uniform(D, 0.4, 0.6)
    region = _rng.integers(0, 3, N)
    region[:3] = [0, 1, 2]
    x = np.select([region == 0, region == 2], [lo - uniform(D, 0.1, 1.0), hi + uniform(D, 0.1, 1.0)],
                  uniform(D, -0.3, 0.3))
    return [x, lo, hi]


def _smoothstep_inputs():
    """Edges either way round; x below, between and above them, never within 0.1 of an edge (in t)."""
    a, b = uniform(D, -1, -0.5), uniform(D, 0.5, 1)
    swap = _rng.random(N) < 0.3
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    region = _rng.integers(0, 3, N)
    region[:3] = [0, 1, 2]
    u = np.select([region == 0, region == 2], [uniform(D, -1, -0.1), uniform(D, 1.1, 2)], uniform(D, 0.1, 0.9))
    return [a, b, a + u * (b - a)]


def _order(i, j, k):
    """quat_from_euler's axis indices, the same in every element."""
    return [lambda a=a: np.full(N, a, np.int32) for a in (i, j, k)]


def _rotations(n, scaled=False):
    """n x n matrices holding a random rotation (times a random positive scale per column) in the
    upper-left 3x3 block, a translation and 1 in the corner (for n == 4)."""
    out = np.zeros((N, n, n))
    for e, q in enumerate(unit_quats(D)):
        out[e, :3, :3] = q_matrix(q) * (_rng.uniform(0.5, 2.0, 3) if scaled else 1.0)
        if n == 4:
            out[e, :3, 3], out[e, 3, 3] = _rng.uniform(-2, 2, 3), 1.0
    return out


def _adjoint_cases() -> dict:
    """Test id -> (OPS key, samplers) for every differentiable overload, in float64."""
    V3, Q, T, M23, M34 = sk.vec3d, sk.quatd, sk.transformd, sk.matrix((2, 3), D), sk.matrix((3, 4), D)
    S6, M66, M33 = sk.spatial_vectord, sk.spatial_matrixd, sk.mat33d
    b, I = sk.bool_, sk.int32
    cases = {
        "sin": (("sin", D), [_any(-3, 3)]), "cos": (("cos", D), [_any(-3, 3)]),
        "tan": (("tan", D), [_any(-1.2, 1.2)]), "asin": (("asin", D), [_any(-0.9, 0.9)]),
        "acos": (("acos", D), [_any(-0.9, 0.9)]), "atan": (("atan", D), [_any(-3, 3)]),
        "sinh": (("sinh", D), [_any(-2, 2)]), "cosh": (("cosh", D), [_any(-2, 2)]),
        "tanh": (("tanh", D), [_any(-2, 2)]), "sqrt": (("sqrt", D), [_any(0.1, 4)]),
        "exp": (("exp", D), [_any(-2, 2)]), "log": (("log", D), [_any(0.1, 4)]),
        "log2": (("log2", D), [_any(0.1, 4)]), "log10": (("log10", D), [_any(0.1, 4)]),
        "abs": (("abs", D), [_nonzero(0.1, 2.0)]),
        "atan2": (("atan2", D, D), [_any(-2, 2), _any(-2, 2)]),
        "pow": (("pow", D, D), [_any(0.5, 2), _any(-2, 2)]), "**": (("**", D, D), [_any(0.5, 2), _any(-2, 2)]),
        "min": (("min", D, D), _distinct()), "max": (("max", D, D), _distinct()),
        "clamp": (("clamp", D, D, D), _clamp_inputs),
        "smoothstep": (("smoothstep", D, D, D), _smoothstep_inputs),
        "lerp-scalar": (("lerp", D, D, D), [_any(-2, 2), _any(-2, 2), _any(-0.5, 1.5)]),
        "lerp-quat": (("lerp", Q, Q, D), [_quat, _quat, _any(-0.5, 1.5)]),
        "lerp-transform": (("lerp", T, T, D), [_xform, _xform, _any(-0.5, 1.5)]),
        "lerp-mat23": (("lerp", M23, M23, D), [_any(shape=(2, 3)), _any(shape=(2, 3)), _any(-0.5, 1.5)]),
        "transform_compose": (("transform_compose", V3, Q, V3), [_any(-2, 2, (3,)), _quat, _any(0.5, 2, (3,))]),
        "matrix_from_rows-1-vec3": (("matrix_from_rows", V3), [_any(shape=(3,))]),
        "matrix_from_rows-3-vec2": (("matrix_from_rows", *[sk.vec2d] * 3), [_any(shape=(2,))] * 3),
        "matrix_from_rows-4-vec3": (("matrix_from_rows", *[V3] * 4), [_any(shape=(3,))] * 4),
        "matrix_from_cols-1-vec3": (("matrix_from_cols", V3), [_any(shape=(3,))]),
        "matrix_from_cols-3-vec2": (("matrix_from_cols", *[sk.vec2d] * 3), [_any(shape=(2,))] * 3),
        "matrix_from_cols-4-vec3": (("matrix_from_cols", *[V3] * 4), [_any(shape=(3,))] * 4),
        "neg": (("neg", D), [_any()]), "+": (("+", D, D), [_any(), _any()]), "-": (("-", D, D), [_any(), _any()]),
        "*": (("*", D, D), [_any(), _any()]), "/": (("/", D, D), [_any(), _nonzero()]),
        "%": (("%", D, D), lambda: list(non_integer_ratios(D))),
        "select-scalar": (("select", b, D, D), [bools, _any(), _any()]),
        "where-scalar": (("where", b, D, D), [bools, _any(), _any()]),
        "select-vec3": (("select", b, V3, V3), [bools, _any(shape=(3,)), _any(shape=(3,))]),
        "where-vec3": (("where", b, V3, V3), [bools, _any(shape=(3,)), _any(shape=(3,))]),
        "cross": (("cross", V3, V3), [_any(shape=(3,)), _any(shape=(3,))]),
        "outer-vec2-vec4": (("outer", sk.vec2d, sk.vec4d), [_any(shape=(2,)), _any(shape=(4,))]),
        "transpose-mat23": (("transpose", M23), [_any(shape=(2, 3))]),
        "mat23-matmul-mat34": (("@", M23, M34), [_any(shape=(2, 3)), _any(shape=(3, 4))]),
        "mat23-times-vec3": (("*", M23, V3), [_any(shape=(2, 3)), _any(shape=(3,))]),
        "quat_from_axis_angle": (("quat_from_axis_angle", V3, D), [_vec(3, 1.0, 1.0), _any(-3, 3)]),
        "quat_rotate": (("quat_rotate", Q, V3), [_quat, _any(shape=(3,))]),
        "quat_rotate_inv": (("quat_rotate_inv", Q, V3), [_quat, _any(shape=(3,))]),
        "quat_inverse": (("quat_inverse", Q), [_vec(4)]),
        "quat_to_matrix": (("quat_to_matrix", Q), [_quat]),
        "quat_rpy": (("quat_rpy", D, D, D), [_any(-3, 3), _any(-3, 3), _any(-3, 3)]),
        "length-quat": (("length", Q), [_vec(4)]), "length_sq-quat": (("length_sq", Q), [_any(shape=(4,))]),
        "quat-times-quat": (("*", Q, Q), [_any(shape=(4,)), _any(shape=(4,))]),
        "scalar-times-quat": (("*", D, Q), [_any(), _any(shape=(4,))]),
        "quat-times-scalar": (("*", Q, D), [_any(shape=(4,)), _any()]),
        "quat-over-scalar": (("/", Q, D), [_any(shape=(4,)), _nonzero()]),
        "quat-add": (("+", Q, Q), [_any(shape=(4,)), _any(shape=(4,))]),
        "quat-sub": (("-", Q, Q), [_any(shape=(4,)), _any(shape=(4,))]),
        "quat-neg": (("neg", Q), [_any(shape=(4,))]),
        "transform_point": (("transform_point", T, V3), [_xform, _any(shape=(3,))]),
        "transform_vector": (("transform_vector", T, V3), [_xform, _any(shape=(3,))]),
        "transform_multiply": (("transform_multiply", T, T), [_xform, _xform]),
        "transform_inverse": (("transform_inverse", T), [_xform]),
        "transform-add": (("+", T, T), [_xform, _xform]),
        "transform-sub": (("-", T, T), [_xform, _xform]),
        "transform-neg": (("neg", T), [_xform]),
        "spatial_top": (("spatial_top", S6), [_any(shape=(6,))]),
        "spatial_bottom": (("spatial_bottom", S6), [_any(shape=(6,))]),
        "spatial_dot": (("spatial_dot", S6, S6), [_any(shape=(6,)), _any(shape=(6,))]),
        "spatial_cross": (("spatial_cross", S6, S6), [_any(shape=(6,)), _any(shape=(6,))]),
        "spatial_cross_dual": (("spatial_cross_dual", S6, S6), [_any(shape=(6,)), _any(shape=(6,))]),
        "spatial_transpose": (("spatial_transpose", M66), [_any(shape=(6, 6))]),
        "spatial_adjoint": (("spatial_adjoint", M33, M33), [_any(shape=(3, 3)), _any(shape=(3, 3))]),
        "transform_twist": (("transform_twist", T, S6), [_xform, _any(shape=(6,))]),
        "transform_wrench": (("transform_wrench", T, S6), [_xform, _any(shape=(6,))]),
        "erf": (("erf", D), [_any(-2, 2)]), "erfc": (("erfc", D), [_any(-2, 2)]),
        "cbrt": (("cbrt", D), [_nonzero(0.2, 3.0)]), "degrees": (("degrees", D), [_any(-3, 3)]),
        "radians": (("radians", D), [_any(-180, 180)]), "frac": (("frac", D), [lambda: _off_integer(D)]),
        "norm_l1": (("norm_l1", V3), [_nonzero(0.1, 2.0, (3,))]), "norm_l2": (("norm_l2", V3), [_vec(3)]),
        "norm_huber": (("norm_huber", V3), [_any(-1.5, 1.5, (3,))]),
        "norm_huber-delta": (("norm_huber", V3, D), [_any(-1.5, 1.5, (3,)), _any(0.5, 2.0)]),
        "norm_pseudo_huber": (("norm_pseudo_huber", V3), [_any(-2, 2, (3,))]),
        "norm_pseudo_huber-delta": (("norm_pseudo_huber", V3, D), [_any(-2, 2, (3,)), _any(0.5, 2.0)]),
        "quat_to_rpy": (("quat_to_rpy", Q), [_quat]),
        "transform_get_translation": (("transform_get_translation", T), [_xform]),
        "transform_get_rotation": (("transform_get_rotation", T), [_xform]),
        "scalar-over-vec3": (("/", D, V3), [_any(), _nonzero(0.5, 2.0, (3,))]),
        "scalar-over-mat23": (("/", D, M23), [_any(), _nonzero(0.5, 2.0, (2, 3))]),
        "scalar-over-quat": (("/", D, Q), [_any(), _nonzero(0.5, 2.0, (4,))]),
        "normalize-quat": (("normalize", Q), [_vec(4)]),
        "dot-quat": (("dot", Q, Q), [_any(shape=(4,)), _any(shape=(4,))]),
        "skew": (("skew", V3), [_any(shape=(3,))]),
        "transform_point-mat44": (("transform_point", sk.mat44d, V3), [_any(shape=(4, 4)), _any(shape=(3,))]),
        "transform_vector-mat44": (("transform_vector", sk.mat44d, V3), [_any(shape=(4, 4)), _any(shape=(3,))]),
        "velocity_at_point": (("velocity_at_point", S6, V3), [_any(shape=(6,)), _any(shape=(3,))]),
        "quat_from_euler-zxy": (("quat_from_euler", V3, I, I, I), [_any(-3, 3, (3,)), *_order(2, 0, 1)]),
        "quat_from_euler-xyx": (("quat_from_euler", V3, I, I, I), [_any(-3, 3, (3,)), *_order(0, 1, 0)]),
        "quat_twist": (("quat_twist", V3, Q), [_vec(3, 1.0, 1.0), _quat]),
        "quat_twist_angle": (("quat_twist_angle", V3, Q), [_vec(3, 1.0, 1.0), _quat]),
        "quat_twist_angle_signed": (("quat_twist_angle_signed", V3, Q), [_vec(3, 1.0, 1.0), _quat]),
        "quat_from_matrix-mat33": (("quat_from_matrix", M33), [lambda: _rotations(3)]),
        "quat_from_matrix-mat44": (("quat_from_matrix", sk.mat44d), [lambda: _rotations(4)]),
        "quat_slerp": (("quat_slerp", Q, Q, D), [_quat, _quat, _any(0.0, 1.0)]),
        "quat_to_axis_angle-axis": (("quat_to_axis_angle__axis", Q), [_quat]),
        "quat_to_axis_angle-angle": (("quat_to_axis_angle__angle", Q), [_quat]),
        "transform_decompose-position": (("transform_decompose__position", sk.mat44d), [lambda: _rotations(4, True)]),
        "transform_decompose-rotation": (("transform_decompose__rotation", sk.mat44d), [lambda: _rotations(4, True)]),
        "transform_decompose-scale": (("transform_decompose__scale", sk.mat44d), [lambda: _rotations(4, True)]),
        "smooth_normalize": (("smooth_normalize", V3), [_any(-2, 2, (3,))]),
        "smooth_normalize-delta": (("smooth_normalize", V3, D), [_any(-2, 2, (3,)), _any(0.5, 2.0)]),
        "erfinv": (("erfinv", D), [_any(-0.95, 0.95)]), "erfcinv": (("erfcinv", D), [_any(0.05, 1.95)]),
    }
    for n in SIZES:
        V, M, v, m = sk.vector(n, D), sk.matrix((n, n), D), _any(shape=(n,)), _any(shape=(n, n))
        vec, mat = f"vec{n}", f"mat{n}{n}"
        cases.update({
            f"{vec}-add": (("+", V, V), [v, v]), f"{vec}-sub": (("-", V, V), [v, v]), f"{vec}-neg": (("neg", V), [v]),
            f"scalar-times-{vec}": (("*", D, V), [_any(), v]), f"{vec}-times-scalar": (("*", V, D), [v, _any()]),
            f"{vec}-over-scalar": (("/", V, D), [v, _nonzero()]),
            f"dot-{vec}": (("dot", V, V), [v, v]), f"length-{vec}": (("length", V), [_vec(n)]),
            f"length_sq-{vec}": (("length_sq", V), [v]), f"normalize-{vec}": (("normalize", V), [_vec(n)]),
            f"abs-{vec}": (("abs", V), [_nonzero(0.1, 1.0, (n,))]),
            f"min-{vec}": (("min", V, V), _distinct((n,))), f"max-{vec}": (("max", V, V), _distinct((n,))),
            f"cw_mul-{vec}": (("cw_mul", V, V), [v, v]),
            f"cw_div-{vec}": (("cw_div", V, V), [v, _nonzero(0.5, 2.0, (n,))]),
            f"outer-{vec}": (("outer", V, V), [v, v]), f"diag-{vec}": (("diag", V), [v]),
            f"lerp-{vec}": (("lerp", V, V, D), [v, v, _any(-0.5, 1.5)]),
            f"lerp-{mat}": (("lerp", M, M, D), [m, m, _any(-0.5, 1.5)]), f"get_diag-{mat}": (("get_diag", M), [m]),
            f"{mat}-add": (("+", M, M), [m, m]), f"{mat}-sub": (("-", M, M), [m, m]), f"{mat}-neg": (("neg", M), [m]),
            f"scalar-times-{mat}": (("*", D, M), [_any(), m]), f"{mat}-times-scalar": (("*", M, D), [m, _any()]),
            f"{mat}-over-scalar": (("/", M, D), [m, _nonzero()]),
            f"{mat}-times-vec": (("*", M, V), [m, v]), f"{mat}-matmul-vec": (("@", M, V), [m, v]),
            f"{mat}-times-mat": (("*", M, M), [m, m]), f"{mat}-matmul-mat": (("@", M, M), [m, m]),
            f"transpose-{mat}": (("transpose", M), [m]), f"trace-{mat}": (("trace", M), [m]),
            f"determinant-{mat}": (("determinant", M), [_well_conditioned(n)]),
            f"inverse-{mat}": (("inverse", M), [_well_conditioned(n)]),
        })
    return cases


ADJOINT_CASES = _adjoint_cases()


@pytest.mark.parametrize("case", list(ADJOINT_CASES))
def test_adjoint_matches_finite_differences(case):
    key, samplers = ADJOINT_CASES[case]
    xs = samplers() if callable(samplers) else [draw() for draw in samplers]
    assert_adjoint_matches_fd(OPS[key], xs)


@pytest.mark.parametrize("case", list(ADJOINT_CASES))
def test_gradcheck_passes_for_every_differentiable_builtin(case):
    key, samplers = ADJOINT_CASES[case]
    xs = samplers() if callable(samplers) else [draw() for draw in samplers]
    op = OPS[key]
    ins = op._arrays(xs, grad=False)
    out = sk.zeros(len(xs[0]), dtype=op.out)
    result = sk.autograd.gradcheck(op.kernel, len(xs[0]), inputs=ins, outputs=[out], eps=1e-6, atol=1e-6, rtol=1e-5)
    assert result.ok, str(result)


def assert_tangent_matches_fd(op: Op, xs: list, eps=1e-6, rtol=1e-5, atol=1e-7):
    """The tangent of ``op(xs)`` along a random direction against central differences along it."""
    rng = np.random.default_rng(2)
    dxs = [rng.standard_normal(np.shape(x)) if np.asarray(x).dtype.kind == "f" else None for x in xs]

    def moved(h):
        return op(*[x if d is None else np.asarray(x, np.float64) + h * d for x, d in zip(xs, dxs)])
    fd = (moved(eps).astype(np.float64) - moved(-eps)) / (2 * eps)
    np.testing.assert_allclose(op.tangent(xs, dxs), fd, rtol=rtol, atol=atol, err_msg=f"tangent of {op.spelling}")


@pytest.mark.cpu_only("tangent rules are the same C++ on every device; tests/autograd/test_forward.py runs tangents on GPUs")
@pytest.mark.parametrize("case", list(ADJOINT_CASES))
def test_tangent_matches_finite_differences(case):
    key, samplers = ADJOINT_CASES[case]
    xs = samplers() if callable(samplers) else [draw() for draw in samplers]
    assert_tangent_matches_fd(OPS[key], xs)


@pytest.mark.cpu_only("tangent rules are the same C++ on every device; tests/autograd/test_forward.py runs tangents on GPUs")
@pytest.mark.parametrize("spelling", ["floor", "ceil", "round", "trunc", "sign"])
def test_tangent_of_a_piecewise_constant_builtin_is_zero(spelling):
    xs = [uniform(D, -3, 3, ()) + 0.25]
    assert np.all(OPS[spelling, D].tangent(xs, [np.ones(N)]) == 0)


# ---------------------------------------------------------------------------
# The table and the tests stay in step
# ---------------------------------------------------------------------------


def _mesh_builtin(b) -> bool:
    """The mesh builtins take an sk.Mesh's id: tests/core/test_mesh_queries.py exercises them on
    meshes, with their finite-difference and tangent checks. The linear-algebra builtins
    (simkit/core/linalg_builtins.py: decompositions with several results, which one output
    here cannot hold) have theirs, and a coverage test of their own, in test_linalg_builtins.py."""
    return b.name.startswith("mesh_") or any(b is e for e in LINALG_ENTRIES)


def _all_overloads():
    """Every overload with a result; the checks (expect_*, no result) are exercised in test_builtins_expect.py."""
    return {b.cname for entries in B.TABLE.values() for b in entries if b.ret != "void" and not _mesh_builtin(b)}


def test_every_table_overload_is_exercised_by_a_kernel_here():
    covered = {op.overload.cname for op in OPS.values()}
    assert _all_overloads() - covered == set()


def test_every_differentiable_overload_has_a_finite_difference_check():
    checked = {OPS[key].overload.cname for key, _ in ADJOINT_CASES.values()}
    differentiable = {b.cname for entries in B.TABLE.values() for b in entries
                      if b.differentiable and not _mesh_builtin(b)}
    assert differentiable - checked == set()
    assert all(OPS[key].overload.differentiable for key, _ in ADJOINT_CASES.values())


def test_every_differentiable_overload_has_a_tangent_rule():
    missing = {b.cname for entries in B.TABLE.values() for b in entries if b.differentiable and b.tan is None}
    assert missing == set()
    assert all(b.tan is None for entries in B.TABLE.values() for b in entries if not b.differentiable)
