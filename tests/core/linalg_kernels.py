"""Kernels using the builtins of simkit/core/linalg_builtins.py, written once for both Warp and
simkit: test_linalg_builtins.py imports this file as it is (``M`` is simkit) and a copy whose
first line reads ``import warp as M``, and compares the two. Nothing here may use a name the other
does not have."""
import simkit as M  # the first line: the test swaps it for "import warp as M"


@M.kernel
def decompose3(a: M.array(dtype=M.mat33d), u: M.array(dtype=M.mat33d), sigma: M.array(dtype=M.vec3d),
               v: M.array(dtype=M.mat33d), q: M.array(dtype=M.mat33d), r: M.array(dtype=M.mat33d),
               eq: M.array(dtype=M.mat33d), ed: M.array(dtype=M.vec3d)):
    i = M.tid()
    U, s, V = M.svd3(a[i])
    u[i] = U
    sigma[i] = s
    v[i] = V
    Q, R = M.qr3(a[i])
    q[i] = Q
    r[i] = R
    E, d = M.eig3(a[i])
    eq[i] = E
    ed[i] = d


@M.kernel
def decompose3_out_params(a: M.array(dtype=M.mat33d), u: M.array(dtype=M.mat33d), sigma: M.array(dtype=M.vec3d),
                          v: M.array(dtype=M.mat33d), q: M.array(dtype=M.mat33d), r: M.array(dtype=M.mat33d),
                          eq: M.array(dtype=M.mat33d), ed: M.array(dtype=M.vec3d)):
    i = M.tid()
    U = M.mat33d()
    s = M.vec3d()
    V = M.mat33d()
    M.svd3(a[i], U, s, V)
    Q = M.mat33d()
    R = M.mat33d()
    M.qr3(a[i], Q, R)
    E = M.mat33d()
    d = M.vec3d()
    M.eig3(a[i], E, d)
    u[i] = U
    sigma[i] = s
    v[i] = V
    q[i] = Q
    r[i] = R
    eq[i] = E
    ed[i] = d


@M.kernel
def decompose2(a: M.array(dtype=M.mat22d), u: M.array(dtype=M.mat22d), sigma: M.array(dtype=M.vec2d),
               v: M.array(dtype=M.mat22d)):
    i = M.tid()
    U, s, V = M.svd2(a[i])
    u[i] = U
    sigma[i] = s
    v[i] = V


@M.kernel
def decompose2_out_params(a: M.array(dtype=M.mat22d), u: M.array(dtype=M.mat22d), sigma: M.array(dtype=M.vec2d),
                          v: M.array(dtype=M.mat22d)):
    i = M.tid()
    U = M.mat22d()
    s = M.vec2d()
    V = M.mat22d()
    M.svd2(a[i], U, s, V)
    u[i] = U
    sigma[i] = s
    v[i] = V


@M.kernel
def extreme_index(x: M.array(dtype=M.vec4d), lo: M.array(dtype=M.uint32), hi: M.array(dtype=M.uint32)):
    i = M.tid()
    lo[i] = M.argmin(x[i])
    hi[i] = M.argmax(x[i])


@M.kernel
def extreme_index_int(x: M.array(dtype=M.vec3i), lo: M.array(dtype=M.uint32), hi: M.array(dtype=M.uint32)):
    i = M.tid()
    lo[i] = M.argmin(x[i])
    hi[i] = M.argmax(x[i])


@M.kernel
def double_dot(a: M.array(dtype=M.mat33d), b: M.array(dtype=M.mat33d), out: M.array(dtype=M.float64)):
    i = M.tid()
    out[i] = M.ddot(a[i], b[i])
