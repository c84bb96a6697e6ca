"""Kernels of tests/core/test_rotation_builtins.py, also run under warp-lang: the line
``import simkit as M`` becomes ``import warp as M`` in the copy Warp imports (warp_twin.py)."""

import simkit as M

Q, V, MAT, F = M.quatd, M.vec3d, M.mat44d, M.float64


@M.kernel
def rotations(q: M.array(dtype=Q), b: M.array(dtype=Q), t: M.array(dtype=F), m: M.array(dtype=MAT),
              slerp: M.array(dtype=Q), from33: M.array(dtype=Q), from44: M.array(dtype=Q), aa_axis: M.array(dtype=V),
              aa_angle: M.array(dtype=F), pos: M.array(dtype=V), rot: M.array(dtype=Q), scale: M.array(dtype=V)):
    i = M.tid()
    slerp[i] = M.quat_slerp(q[i], b[i], t[i])
    from33[i] = M.quat_from_matrix(M.quat_to_matrix(q[i]))
    from44[i] = M.quat_from_matrix(m[i])
    a, angle = M.quat_to_axis_angle(q[i])
    aa_axis[i] = a
    aa_angle[i] = angle
    p, rq, s = M.transform_decompose(m[i])
    pos[i] = p
    rot[i] = rq
    scale[i] = s


# Warp's quat_from_euler, quat_twist, quat_twist_angle(_signed) and smooth_normalize take float32 only.
@M.kernel
def rotations32(q: M.array(dtype=M.quat), e: M.array(dtype=M.vec3), axis: M.array(dtype=M.vec3),
                order: M.array(dtype=M.vec3i), euler: M.array(dtype=M.quat), twist: M.array(dtype=M.quat),
                twist_angle: M.array(dtype=float), twist_signed: M.array(dtype=float),
                smooth: M.array(dtype=M.vec3), smooth_half: M.array(dtype=M.vec3)):
    i = M.tid()
    o = order[i]
    euler[i] = M.quat_from_euler(e[i], o[0], o[1], o[2])
    twist[i] = M.quat_twist(axis[i], q[i])
    twist_angle[i] = M.quat_twist_angle(axis[i], q[i])
    twist_signed[i] = M.quat_twist_angle_signed(axis[i], q[i])
    smooth[i] = M.smooth_normalize(e[i])
    smooth_half[i] = M.smooth_normalize(e[i], 0.5)


@M.kernel
def axis_angle_out_params(q: M.array(dtype=Q), aa_axis: M.array(dtype=V), aa_angle: M.array(dtype=F)):
    i = M.tid()
    a = V(0.0)
    angle = F(0.0)
    M.quat_to_axis_angle(q[i], a, angle)
    aa_axis[i] = a
    aa_angle[i] = angle


@M.kernel
def inverse_erf(x: M.array(dtype=F), z: M.array(dtype=F), y: M.array(dtype=F), yc: M.array(dtype=F)):
    i = M.tid()
    y[i] = M.erfinv(x[i])
    yc[i] = M.erfcinv(z[i])


@M.kernel
def inverse_erf32(x: M.array(dtype=M.float32), y: M.array(dtype=M.float32)):
    i = M.tid()
    y[i] = M.erfinv(x[i])
