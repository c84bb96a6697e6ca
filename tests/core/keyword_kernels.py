"""Kernels calling builtins with Warp's keyword arguments, written once for both Warp and simkit:
test_call_keywords.py imports this file as it is (``M`` is simkit) and a copy whose first line reads
``import warp as M``, and compares the two. Nothing here may use a name the other does not have."""
import simkit as M  # the first line: test_call_keywords.py swaps it for "import warp as M"


@M.kernel
def by_keyword(x: M.array(dtype=float), axis: M.array(dtype=M.vec3), s: M.array(dtype=float),
               v: M.array(dtype=M.vec3), q: M.array(dtype=M.quat), m: M.array(dtype=M.mat22)):
    i = M.tid()
    s[i] = M.clamp(x[i], low=-0.5, high=0.5) + M.lerp(a=x[i], b=2.0, t=0.25) + M.atan2(y=x[i], x=1.5) \
        + M.smoothstep(0.0, b=1.0, x=x[i])
    v[i] = M.vector(x[i], 2.0 * x[i], 3.0, dtype=float) + M.quat_rotate(quat=M.quat_from_axis_angle(
        axis=M.normalize(axis[i]), angle=x[i]), vec=axis[i])
    q[i] = M.quat_from_axis_angle(axis=M.normalize(axis[i]), angle=x[i])
    m[i] = M.matrix(x[i], 1.0, 2.0, x[i] * x[i], shape=(2, 2))
