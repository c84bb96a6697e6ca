"""Kernels using the builtins of simkit/core/warp_math_builtins.py, written once for both Warp and
simkit: test_warp_math_builtins.py imports this file as it is (``M`` is simkit) and a copy whose
first line reads ``import warp as M``, and compares the two. Nothing here may use a name the other
does not have. Warp's norms and quat_to_rpy are float32 functions: they are compared in float32."""
import simkit as M  # the first line: the test swaps it for "import warp as M"


@M.kernel
def scalar_functions(x: M.array(dtype=M.float64), out: M.array(dtype=M.float64, ndim=2)):
    i = M.tid()
    out[i, 0] = M.erf(x[i])
    out[i, 1] = M.erfc(x[i])
    out[i, 2] = M.cbrt(x[i])
    out[i, 3] = M.degrees(x[i])
    out[i, 4] = M.radians(x[i])
    out[i, 5] = M.frac(x[i])
    out[i, 6] = M.rint(x[i])
    out[i, 7] = M.step(x[i])
    out[i, 8] = M.nonzero(x[i])
    # Warp's constants are float32 in a kernel, simkit's take the other operand's type: cast both ways alike
    c = M.float32(M.pi + M.e - M.half_pi * M.tau / M.phi + M.ln2 * M.ln10 * M.log2e * M.log10e)
    out[i, 9] = x[i] * M.float64(c)


@M.kernel
def classify(x: M.array(dtype=M.float32), out: M.array(dtype=M.int32, ndim=2)):
    i = M.tid()
    if M.isnan(x[i]):
        out[i, 0] = 1
    if M.isinf(x[i]):
        out[i, 1] = 1
    if M.isfinite(x[i]):
        out[i, 2] = 1
    if x[i] == M.inf or x[i] == -M.inf:
        out[i, 3] = 1


@M.kernel
def norms(v: M.array(dtype=M.vec3), delta: M.array(dtype=M.float32), out: M.array(dtype=M.float32, ndim=2)):
    i = M.tid()
    out[i, 0] = M.norm_l1(v[i])
    out[i, 1] = M.norm_l2(v[i])
    out[i, 2] = M.norm_huber(v[i], delta[i])
    out[i, 3] = M.norm_huber(v[i])
    out[i, 4] = M.norm_pseudo_huber(v[i], delta[i])
    out[i, 5] = M.norm_pseudo_huber(v[i])


@M.kernel
def rotations(q: M.array(dtype=M.quat), t: M.array(dtype=M.transformd), rpy: M.array(dtype=M.vec3),
              p: M.array(dtype=M.vec3d), r: M.array(dtype=M.quatd), ident: M.array(dtype=M.quat),
              ident_t: M.array(dtype=M.transform)):
    i = M.tid()
    rpy[i] = M.quat_to_rpy(q[i])
    p[i] = M.transform_get_translation(t[i]) * M.float64(M.dot(q[i], q[i] * M.float32(0.5)))
    r[i] = M.transform_get_rotation(t[i])
    ident[i] = M.quat_identity() + M.normalize(q[i] * M.float32(3.0)) - q[i]
    ident_t[i] = M.transform_identity()


@M.kernel
def scalar_over(s: M.array(dtype=M.float64), v: M.array(dtype=M.vec3d), m: M.array(dtype=M.mat22d),
                q: M.array(dtype=M.quatd), ov: M.array(dtype=M.vec3d), om: M.array(dtype=M.mat22d),
                oq: M.array(dtype=M.quatd)):
    i = M.tid()
    ov[i] = s[i] / v[i]
    om[i] = M.float64(2.0) / m[i]
    oq[i] = s[i] / q[i]


@M.kernel
def frames(v: M.array(dtype=M.vec3d), m: M.array(dtype=M.mat44d), sk_out: M.array(dtype=M.mat33d), points: M.array(dtype=M.vec3d), dirs: M.array(dtype=M.vec3d)):
    i = M.tid()
    sk_out[i] = M.skew(v[i])
    points[i] = M.transform_point(m[i], v[i])
    dirs[i] = M.transform_vector(m[i], v[i])


@M.kernel
def point_velocity(qd: M.array(dtype=M.spatial_vector), r: M.array(dtype=M.vec3), vel: M.array(dtype=M.vec3)):
    # Warp's velocity_at_point is float32 only
    i = M.tid()
    vel[i] = M.velocity_at_point(qd[i], r[i])
