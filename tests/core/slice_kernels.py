"""Kernels slicing vectors and matrices, written once for both Warp and simkit: test_slices.py imports
this file as it is (``M`` is simkit) and a copy whose first line reads ``import warp as M``, and
compares the two. Nothing here may use a name the other does not have."""
import simkit as M  # the first line: test_slices.py swaps it for "import warp as M"


@M.kernel
def slice_reads(v: M.array(dtype=M.vec4), m: M.array(dtype=M.mat33), tail: M.array(dtype=M.vec3),
                head: M.array(dtype=M.vec2), even: M.array(dtype=M.vec2), row_tail: M.array(dtype=M.vec2),
                block: M.array(dtype=M.mat22), rows: M.array(dtype=M.types.matrix(shape=(2, 3), dtype=float)),
                col: M.array(dtype=M.vec3), back: M.array(dtype=M.vec2), s: M.array(dtype=float)):
    i = M.tid()
    a = v[i]
    b = m[i]
    tail[i] = a[1:]
    head[i] = a[:2]
    even[i] = a[::2]
    row_tail[i] = b[0, 1:]
    block[i] = b[1:, :2]
    rows[i] = b[1:]
    col[i] = b[:, 0]
    back[i] = a[-1:-3:-1]
    s[i] = M.dot(a[1:], b[0]) + M.length(b[2, ::2])


@M.kernel
def slice_writes(v: M.array(dtype=M.vec4), m: M.array(dtype=M.mat33), w: M.array(dtype=M.vec2),
                 out_v: M.array(dtype=M.vec4), out_m: M.array(dtype=M.mat33)):
    i = M.tid()
    a = v[i]
    a[1:3] = w[i] * 2.0
    a[::3] += w[i]
    b = m[i]
    b[0, 1:] = w[i]
    b[1:, :2] -= M.mat22(w[i][0], 1.0, 2.0, w[i][1])
    out_v[i] = a
    out_m[i] = b
