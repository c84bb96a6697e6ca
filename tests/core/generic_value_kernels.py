"""Kernels and functions with Warp's generic vector and matrix annotations, written once for both
Warp and simkit: test_generic_value_annotations.py imports this file as it is (``M`` is simkit)
and a copy whose first line reads ``import warp as M``. Nothing here may use a name the other
does not have."""
import simkit as M  # the first line: the test swaps it for "import warp as M"

from typing import Any

AnyVec = M.types.vector(length=Any, dtype=M.float64)
AnyMat = M.types.matrix(shape=(Any, Any), dtype=M.float64)


@M.func
def weighted_sum(v: M.types.vector(length=Any, dtype=M.float64)):
    s = M.float64(0.0)
    for i in range(len(v)):
        s += M.float64(i + 1) * v[i]
    return s


@M.func
def frobenius_sq(m: M.types.matrix(shape=(Any, Any), dtype=M.float64)):
    s = M.float64(0.0)
    for i in range(len(m)):
        for j in range(len(m[0])):
            s += m[i, j] * m[i, j]
    return s


@M.kernel
def reduce_values(v: AnyVec, m: AnyMat, out: M.array(dtype=M.float64)):
    out[0] = weighted_sum(v)
    out[1] = frobenius_sq(m)
    out[2] = M.float64(len(v))
    out[3] = M.float64(len(m))


@M.kernel
def reduce_arrays(v3: M.array(dtype=M.vec3d), v6: M.array(dtype=M.spatial_vectord), m: M.array(dtype=M.mat33d),
                  out: M.array(dtype=M.float64)):
    i = M.tid()
    out[i] = weighted_sum(v3[i]) + weighted_sum(v6[i]) + frobenius_sq(m[i])


@M.func
def component_sum(v: M.types.vector(3, M.Float)):
    return v[0] + v[1] + v[2]


@M.func
def int_trace(m: M.types.matrix((2, 2), M.Int)):
    return m[0, 0] + m[1, 1]


@M.func
def twice(x: M.Scalar):
    return x + x


@M.kernel
def generic_components(v: M.array(dtype=M.vec3d), h: M.array(dtype=M.vec3h),
                       m: M.array(dtype=M.types.matrix((2, 2), M.int32)), out: M.array(dtype=M.float64),
                       out_int: M.array(dtype=M.int32)):
    i = M.tid()
    out[i] = component_sum(v[i]) + M.float64(component_sum(h[i])) + twice(v[i][0])
    out_int[i] = int_trace(m[i]) + twice(m[i][0, 1])
