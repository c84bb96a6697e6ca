"""Kernels using lerp, smoothstep, matrix_from_rows/cols, get_diag and transform_compose, written once
for both Warp and simkit: test_builtins_warp.py imports this file as it is (``M`` is simkit) and a copy
whose first line reads ``import warp as M``, and compares the two. Nothing here may use a name the
other does not have."""
import simkit as M  # the first line: test_builtins_warp.py swaps it for "import warp as M"


@M.kernel
def interp(a: M.array(dtype=M.float64), b: M.array(dtype=M.float64), t: M.array(dtype=M.float64),
           va: M.array(dtype=M.vec3d), vb: M.array(dtype=M.vec3d), ma: M.array(dtype=M.mat33d),
           mb: M.array(dtype=M.mat33d), qa: M.array(dtype=M.quatd), qb: M.array(dtype=M.quatd),
           ta: M.array(dtype=M.transformd), tb: M.array(dtype=M.transformd),
           s: M.array(dtype=M.float64), v: M.array(dtype=M.vec3d), m: M.array(dtype=M.mat33d),
           q: M.array(dtype=M.quatd), x: M.array(dtype=M.transformd)):
    i = M.tid()
    s[i] = M.lerp(a[i], b[i], t[i]) + M.smoothstep(a[i], b[i], t[i])
    v[i] = M.lerp(va[i], vb[i], t[i])
    m[i] = M.lerp(ma[i], mb[i], t[i])
    q[i] = M.lerp(qa[i], qb[i], t[i])
    x[i] = M.lerp(ta[i], tb[i], t[i])


@M.kernel
def from_vectors(r0: M.array(dtype=M.vec3d), r1: M.array(dtype=M.vec3d), r2: M.array(dtype=M.vec3d),
                 q: M.array(dtype=M.quatd), rows: M.array(dtype=M.mat33d), cols: M.array(dtype=M.mat33d),
                 two_rows: M.array(dtype=M.types.matrix(shape=(2, 3), dtype=M.float64)),
                 two_cols: M.array(dtype=M.types.matrix(shape=(3, 2), dtype=M.float64)),
                 d: M.array(dtype=M.vec3d), c: M.array(dtype=M.mat44d)):
    i = M.tid()
    rows[i] = M.matrix_from_rows(r0[i], r1[i], r2[i])
    cols[i] = M.matrix_from_cols(r0[i], r1[i], r2[i])
    two_rows[i] = M.matrix_from_rows(r0[i], r2[i])
    two_cols[i] = M.matrix_from_cols(r1[i], r2[i])
    d[i] = M.get_diag(rows[i] * cols[i])
    c[i] = M.transform_compose(r0[i], q[i], r1[i])


@M.kernel
def smoothstep_only(a: M.array(dtype=M.float64), b: M.array(dtype=M.float64), x: M.array(dtype=M.float64),
                    s: M.array(dtype=M.float64)):
    i = M.tid()
    s[i] = M.smoothstep(a[i], b[i], x[i])
