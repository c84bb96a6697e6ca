"""Rotation, special-function and normalization builtins of Warp that simkit had lacked
(:mod:`simkit.core.builtins` table entries; the C++ and its tangents are in
``native/rotations.h``): ``quat_from_euler``, ``quat_twist``, ``quat_twist_angle`` (and
``_signed``), ``quat_from_matrix`` (3x3 and 4x4), ``quat_slerp``, ``quat_to_axis_angle``,
``transform_decompose``, ``smooth_normalize``, ``erfinv`` and ``erfcinv``. Each adjoint is the
transpose of its tangent (``adj_from_tan_``), so one derivative serves both modes.

Example::

    q = sk.quat_from_euler(sk.vec3(0.1, 0.2, 0.3), 2, 1, 0)    # in a kernel: z, then y, then x
    axis, angle = sk.quat_to_axis_angle(q)
    p, r, s = sk.transform_decompose(m)                        # m: a mat44
"""

from .builtins import _, EXAMPLES, MULTI_RESULTS

_Q, _V3 = "quat(F)", "vec(3,F)"


def _adj(name: str, tan_call: str) -> str:
    """adj_<name> += J^T adj_ret, J the tangent map ``tan_call`` with ``d`` in ``name``'s place."""
    return f"adj_from_tan_(adj_{name}, adj_ret, [&](const auto& d) {{ return {tan_call}; }});"


_("quat_from_euler", f"e: {_V3}, i: int32, j: int32, k: int32", _Q, "return quat_from_euler_(e, i, j, k);",
  _adj("e", "tan_quat_from_euler_(e, i, j, k, d)"), tan="return tan_quat_from_euler_(e, i, j, k, tan_e);",
  doc="qk * qj * qi, qa the rotation by e[a] about axis a: rotations about the fixed axes i, j, k in that order.")
_("quat_twist", f"axis: {_V3}, q: {_Q}", _Q, "return quat_twist_(axis, q);",
  _adj("axis", "tan_quat_twist_(axis, q, d, quat_t<F>{})") + _adj("q", "tan_quat_twist_(axis, q, vec_t<3, F>{}, d)"),
  tan="return tan_quat_twist_(axis, q, tan_axis, tan_q);",
  doc="The twist of q about the unit axis: normalize((axis . q.xyz) axis, q.w).")
for _name, _signed in (("quat_twist_angle", "false"), ("quat_twist_angle_signed", "true")):
    _(_name, f"axis: {_V3}, q: {_Q}", "F", f"return quat_twist_angle_(axis, q, {_signed});",
      _adj("axis", f"tan_quat_twist_angle_(axis, q, d, quat_t<F>{{}}, {_signed})")
      + _adj("q", f"tan_quat_twist_angle_(axis, q, vec_t<3, F>{{}}, d, {_signed})"),
      tan=f"return tan_quat_twist_angle_(axis, q, tan_axis, tan_q, {_signed});",
      doc="The twist angle of q about the unit axis, 2 atan2(" + ("" if _signed == "true" else "|")
      + "axis . q.xyz" + ("" if _signed == "true" else "|") + ", q.w).")
_("quat_from_matrix", "mat: mat(3,3,F)", _Q, "return quat_from_matrix_(mat);",
  _adj("mat", "tan_quat_from_matrix_(mat, d)"), tan="return tan_quat_from_matrix_(mat, tan_mat);",
  doc="The unit quaternion of a rotation matrix (orthonormal, determinant +1); its sign is unspecified.")
_("quat_from_matrix", "mat: mat(4,4,F)", _Q, "return quat_from_matrix_(upper3_(mat));",
  _adj("mat", "tan_quat_from_matrix_(upper3_(mat), upper3_(d))"),
  tan="return tan_quat_from_matrix_(upper3_(mat), upper3_(tan_mat));",
  doc="The unit quaternion of the upper-left 3x3 block of a 4x4 transform matrix.")
_("quat_slerp", f"a: {_Q}, b: {_Q}, t: F", _Q, "return quat_slerp_(a, b, t);",
  _adj("a", "tan_quat_slerp_(a, b, t, d, quat_t<F>{}, F(0))") + _adj("b", "tan_quat_slerp_(a, b, t, quat_t<F>{}, d, F(0))")
  + _adj("t", "tan_quat_slerp_(a, b, t, quat_t<F>{}, quat_t<F>{}, d)"),
  tan="return tan_quat_slerp_(a, b, t, tan_a, tan_b, tan_t);",
  doc="Spherical linear interpolation from a (unit) to b / |b| along the shorter arc.")
# quat_to_axis_angle and transform_decompose give several results: one table builtin each
# (named <builtin>__<result>), joined into a tuple or Warp's out-parameters by the frontend.
_("quat_to_axis_angle__axis", f"quat: {_Q}", _V3, "return quat_axis_(quat);",
  _adj("quat", "tan_quat_axis_(quat, d)"), tan="return tan_quat_axis_(quat, tan_quat);",
  doc="The rotation axis of quat (unit; the x axis for the identity).")
_("quat_to_axis_angle__angle", f"quat: {_Q}", "F", "return quat_angle_(quat);",
  _adj("quat", "tan_quat_angle_(quat, d)"), tan="return tan_quat_angle_(quat, tan_quat);",
  doc="The rotation angle of quat, in [0, pi].")
_("transform_decompose__position", "m: mat(4,4,F)", _V3,
  "return vec_t<3, F>{{m[0][3], m[1][3], m[2][3]}};",
  "SK_UNROLL for (int i = 0; i < 3; ++i) adj_m[i][3] += adj_ret[i];",
  tan="return vec_t<3, F>{{tan_m[0][3], tan_m[1][3], tan_m[2][3]}};", doc="The translation column of m.")
_("transform_decompose__rotation", "m: mat(4,4,F)", _Q, "return quat_from_matrix_(decompose_rotation_matrix_(m));",
  _adj("m", "tan_decompose_rotation_(m, d)"), tan="return tan_decompose_rotation_(m, tan_m);",
  doc="The rotation of m's upper 3x3 block with its columns' lengths divided out.")
_("transform_decompose__scale", "m: mat(4,4,F)", _V3, "return decompose_scale_(m);",
  _adj("m", "tan_decompose_scale_(m, d)"), tan="return tan_decompose_scale_(m, tan_m);",
  doc="The lengths of m's first three columns (their upper three rows).")
MULTI_RESULTS.update({
    "quat_to_axis_angle": (1, ("quat_to_axis_angle__axis", "quat_to_axis_angle__angle")),
    "transform_decompose": (1, ("transform_decompose__position", "transform_decompose__rotation",
                                "transform_decompose__scale")),
})

_("smooth_normalize", "v: vec(N,F), delta: F", "vec(N,F)", "return smooth_normalize_(v, delta);",
  _adj("v", "tan_smooth_normalize_(v, delta, d, F(0))") + _adj("delta", "tan_smooth_normalize_(v, delta, vec_t<N, F>{}, d)"),
  tan="return tan_smooth_normalize_(v, delta, tan_v, tan_delta);",
  doc="v / norm_pseudo_huber(v, delta) = v / sqrt(delta^2 + |v|^2): a normalize smooth at 0.")
_("smooth_normalize", "v: vec(N,F)", "vec(N,F)", "return smooth_normalize_(v, F(1));",
  _adj("v", "tan_smooth_normalize_(v, F(1), d, F(0))"), tan="return tan_smooth_normalize_(v, F(1), tan_v, F(0));",
  doc="smooth_normalize with delta = 1.")
_("erfinv", "x: F", "F", "return erfinv_(x);", "adj_x += erfinv_slope_(erfinv_(x)) * adj_ret;",
  tan="return erfinv_slope_(erfinv_(x)) * tan_x;",
  doc="The inverse error function: erf(erfinv(x)) == x for -1 < x < 1 (+-inf at +-1).")
_("erfcinv", "x: F", "F", "return erfcinv_(x);", "adj_x -= erfinv_slope_(erfcinv_(x)) * adj_ret;",
  tan="return -erfinv_slope_(erfcinv_(x)) * tan_x;",
  doc="The inverse complementary error function: erfc(erfcinv(x)) == x for 0 < x < 2.")

EXAMPLES.update({
    "quat_to_axis_angle": """
axis, angle = sk.quat_to_axis_angle(q)      # or Warp's out-parameters: sk.quat_to_axis_angle(q, axis, angle)
""",
    "transform_decompose": """
p, r, s = sk.transform_decompose(sk.transform_compose(p0, r0, s0))   # p0, r0 (or -r0), s0
""",
    "quat_from_euler": """
q = sk.quat_from_euler(sk.vec3(roll, pitch, yaw), 0, 1, 2)   # == sk.quat_rpy(roll, pitch, yaw)
""",
})
