"""Keyword arguments to builtins: Warp's parameter names, mapped onto the positions of a call.

A builtin call such as ``sk.clamp(x, low=0.0, high=1.0)`` or ``sk.lerp(a=p, b=q, t=0.5)`` is
turned into its positional form before the builtin table picks an overload, in kernels and
in Python alike (``host_builtins.py``). The names are Warp 1.19's, so ported code keeps its
keywords; a builtin Warp does not have takes the names of simkit's own table entry.

Example::

    ordered = positional("clamp", [x], {"low": 0.0, "high": 1.0})   # [x, 0.0, 1.0]
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from . import builtins as B
from . import ir
from .exprs import Py

# Warp's parameter names, per overload, of the builtins simkit shares with it (where they differ
# from the table's own, or where Warp has overloads of other arities).
WARP_PARAMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "abs": (("x",),), "acos": (("x",),), "asin": (("x",),), "atan": (("x",),), "atan2": (("y", "x"),),
    "cbrt": (("x",),), "ceil": (("x",),), "cos": (("x",),), "cosh": (("x",),), "degrees": (("x",),),
    "erf": (("x",),), "erfc": (("x",),), "exp": (("x",),), "floor": (("x",),), "frac": (("x",),),
    "log": (("x",),), "log10": (("x",),), "log2": (("x",),), "nonzero": (("x",),), "radians": (("x",),),
    "rint": (("x",),), "round": (("x",),), "sign": (("x",),), "sin": (("x",),), "sinh": (("x",),),
    "sqrt": (("x",),), "step": (("x",),), "tan": (("x",),), "tanh": (("x",),), "trunc": (("x",),),
    "neg": (("x",),), "isfinite": (("a",),), "isinf": (("a",),), "isnan": (("a",),),
    "pow": (("x", "y"),), "clamp": (("x", "low", "high"),), "min": (("a", "b"), ("a",)),
    "max": (("a", "b"), ("a",)), "lerp": (("a", "b", "t"),), "smoothstep": (("a", "b", "x"),),
    "select": (("cond", "value_if_false", "value_if_true"),),
    "where": (("cond", "value_if_true", "value_if_false"),),
    "add": (("a", "b"),), "sub": (("a", "b"),), "mul": (("a", "b"),), "div": (("a", "b"),),
    "mod": (("a", "b"),), "floordiv": (("a", "b"),), "bit_and": (("a", "b"),), "bit_or": (("a", "b"),),
    "bit_xor": (("a", "b"),), "lshift": (("a", "b"),), "rshift": (("a", "b"),), "invert": (("a",),),
    "cross": (("a", "b"),), "dot": (("a", "b"),), "outer": (("a", "b"),), "cw_mul": (("a", "b"),),
    "cw_div": (("a", "b"),), "length": (("a",),), "length_sq": (("a",),), "normalize": (("a",),),
    "determinant": (("a",),), "inverse": (("a",),), "trace": (("a",),), "transpose": (("a",),),
    "diag": (("vec",),), "get_diag": (("mat",),),
    "quat_from_axis_angle": (("axis", "angle"),), "quat_inverse": (("quat",),),
    "quat_rotate": (("quat", "vec"),), "quat_rotate_inv": (("quat", "vec"),),
    "quat_rpy": (("roll", "pitch", "yaw"),), "quat_to_matrix": (("quat",),),
    "transform_get_rotation": (("xform",),), "transform_get_translation": (("xform",),),
    "transform_inverse": (("xform",),), "transform_multiply": (("a", "b"),),
    "transform_point": (("xform", "point"), ("mat", "point")), "transform_vector": (("xform", "vec"), ("mat", "vec")),
    "skew": (("vec",),), "velocity_at_point": (("qd", "r"),),
    "spatial_adjoint": (("r", "s"),), "spatial_bottom": (("svec",),), "spatial_top": (("svec",),),
    "spatial_cross": (("a", "b"),), "spatial_cross_dual": (("a", "b"),), "spatial_dot": (("a", "b"),),
    "expect_eq": (("a", "b"),), "expect_neq": (("a", "b"),), "expect_near": (("a", "b", "tolerance"),),
    "mesh_eval_face_normal": (("id", "face"),), "mesh_eval_position": (("id", "face", "bary_u", "bary_v"),),
    "mesh_eval_velocity": (("id", "face", "bary_u", "bary_v"),), "mesh_get_index": (("id", "index"),),
    "mesh_get_point": (("id", "index"),), "mesh_get_velocity": (("id", "index"),),
    "mesh_query_point": (("id", "point", "max_dist"),), "mesh_query_point_no_sign": (("id", "point", "max_dist"),),
    "mesh_query_point_sign_normal": (("id", "point", "max_dist", "epsilon"),),
    "mesh_query_point_sign_winding_number": (("id", "point", "max_dist", "accuracy", "threshold"),),
    "mesh_query_ray": (("id", "start", "dir", "max_t"),), "mesh_query_ray_anyhit": (("id", "start", "dir", "max_t"),),
}


def param_names(name: str) -> tuple[tuple[str, ...], ...]:
    """The accepted parameter names of builtin ``name``, one tuple per overload.

    Example::

        param_names("clamp")     # (("x", "low", "high"),)
    """
    if name in WARP_PARAMS:
        return WARP_PARAMS[name]
    found: list[tuple[str, ...]] = []
    for b in B.TABLE.get(name, ()):
        names = tuple(n for n, _p in b.params)
        if not b.variadic and names not in found:
            found.append(names)
    return tuple(found)


def positional(name: str, args: list, keywords: dict[str, Any]) -> list:
    """``args`` followed by the ``keywords`` in the positions of builtin ``name``'s parameters.

    The keywords must continue the positional arguments without a gap (a builtin has no
    defaults in the middle); a name no overload has, or one given twice, is a TypeError naming
    the builtin, the keyword and the accepted names.

    Example::

        positional("lerp", [], {"a": p, "b": q, "t": 0.5})   # [p, q, 0.5]
    """
    if not keywords:
        return list(args)
    overloads = param_names(name)
    accepted = " or ".join(f"({', '.join(o)})" for o in overloads) or "no keywords"
    for key in keywords:
        if not any(key in o for o in overloads):
            raise TypeError(f"sk.{name}() got an unexpected keyword argument '{key}'; it accepts {accepted}")
    problem = ""
    for names in overloads:
        if len(args) > len(names):
            continue
        clash = [k for k in keywords if k in names[:len(args)]]
        if clash:
            problem = f"sk.{name}() got argument '{clash[0]}' both by position and by keyword"
            continue
        rest = names[len(args):len(args) + len(keywords)]
        if set(rest) == set(keywords):
            return list(args) + [keywords[n] for n in rest]
        missing = next(n for n in rest if n not in keywords)
        problem = problem or f"sk.{name}() is missing argument '{missing}' (its parameters: {', '.join(names)})"
    raise TypeError(problem or f"sk.{name}() takes {accepted}, got {len(args)} positional argument(s) "
                               f"and the keyword(s) {', '.join(keywords)}")


_ATOMICS = ("atomic_add", "atomic_sub", "atomic_min", "atomic_max")
_DTYPE_ONLY = {"quat_identity": "quat_of", "transform_identity": "transform_of"}


def kernel_call(builder, name: str, node):
    """A kernel's call of builtin ``name`` with keywords (``node`` an ``ast.Call``), compiled by
    ``builder`` (a frontend ``Builder``) as the positional call it stands for.

    Example::

        kernel_call(builder, "clamp", call)    # sk.clamp(x, low=0.0, high=1.0) as sk.clamp(x, 0.0, 1.0)
    """
    if any(k.arg is None for k in node.keywords):
        builder.error(f"sk.{name}(**...): keyword arguments must be named in a kernel", node)
    if name in _DTYPE_ONLY:  # sk.quat_identity(dtype=sk.float64): the identity of that float type
        from . import types as T
        if node.args or [k.arg for k in node.keywords] != ["dtype"]:
            builder.error(f"sk.{name}() takes only dtype=... (a float type)", node)
        dtype = T.resolve(builder.compile_time_arg(node.keywords[0].value, name, node))
        return builder.construct(getattr(T, _DTYPE_ONLY[name])(dtype), [], node)
    if name in _ATOMICS or name in B.OUT_PARAM_FORMS and len(node.args) > 3:
        builder.error(f"sk.{name}() takes no keyword arguments in a kernel", node)
    args = [builder.expr(a) for a in node.args]
    keywords = {k.arg: builder.expr(k.value) for k in node.keywords}
    try:
        ordered = positional(name, args, keywords)
    except TypeError as e:
        builder.error(str(e), node)
    return builder.call_builtin(name, ordered, node)


def factory_constructs(builder, fn, node) -> bool:
    """Whether ``sk.vector(...)`` / ``sk.matrix(...)`` in a kernel builds a value (Warp's
    ``wp.vector(x, y, z, dtype=float)``, ``wp.matrix(a, b, c, d, shape=(2, 2))``) rather than
    naming a type (``sk.vector(3, float)``, ``sk.vector(N, type(dt))``, ``sk.matrix((2, 2), F)``,
    ``sk.matrix(shape=(2, 2), dtype=float)``): a value when the size is a keyword beside
    components, or when the arguments are not a size and a type.

    Example::

        factory_constructs(builder, sk.vector, ast.parse("sk.vector(x, y, dtype=float)").body[0].value)  # True
    """
    from . import types as T
    if fn not in (T.vector, T.matrix) or not node.args:
        return False
    size_key = "length" if fn is T.vector else "shape"
    if any(k.arg == size_key for k in node.keywords) or len(node.args) > 2:
        return True

    def compile_time(e):  # a size or a type is a name, a constant, sk.float64 or type(dt), never a computation
        is_type_of = isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "type"
        if not (is_type_of or isinstance(e, (ast.Name, ast.Constant, ast.Attribute, ast.Tuple))):
            return None
        if isinstance(e, ast.Tuple):
            return tuple(compile_time(x) for x in e.elts)
        v = builder.expr(e)
        if isinstance(v, Py):
            return v.obj
        return v.value if isinstance(v, ir.Const) else None

    if len(node.args) == 2:  # (size, type) names a type, its size checked there; two numbers are components
        dtype = compile_time(node.args[1])
        return dtype is None or isinstance(dtype, (bool, int, float, np.generic))
    size = compile_time(node.args[0])
    if fn is T.vector:
        return not (isinstance(size, (int, np.integer)) and not isinstance(size, bool))
    return not (isinstance(size, tuple) and len(size) == 2)


def factory_value(builder, fn, node):
    """The value ``sk.vector(*components, length=..., dtype=...)`` or ``sk.matrix(*components,
    shape=..., dtype=...)`` builds in a kernel: its components in row order, or one to fill it.

    Example::

        factory_value(builder, sk.matrix, call)    # sk.matrix(a, b, c, d, shape=(2, 2)): a mat22
    """
    from . import types as T
    what = fn.__name__
    size_key = "length" if fn is T.vector else "shape"
    options = {}
    for k in node.keywords:
        if k.arg not in (size_key, "dtype"):
            builder.error(f"sk.{what}() got an unexpected keyword argument '{k.arg}'; it accepts {size_key}, dtype "
                          f"(after the components)", node)
        options[k.arg] = builder.compile_time_arg(k.value, what, node)
    args = [builder.expr(a) for a in node.args]
    dtype = options.get("dtype")
    if dtype is None:
        t = args[0].type
        t = t.default() if isinstance(t, B.Weak) else t
        dtype = getattr(t, "_sk_scalar", t)
    if fn is T.vector:
        size = options.get("length", len(args) if len(args) > 1 else None)
        if size is None:
            builder.error("sk.vector(x) of one component needs length=...", node)
    else:
        size = options.get("shape")
        if size is None:
            builder.error("sk.matrix(*components) needs shape=(rows, cols) in a kernel", node)
    try:
        t = fn(size, T.resolve(dtype))
    except (TypeError, ValueError) as e:
        builder.error(f"sk.{what}(): {e}", node)
    return builder.construct(t, args, node)
