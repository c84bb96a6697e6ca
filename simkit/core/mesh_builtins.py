"""The mesh builtins of the table (:mod:`simkit.core.builtins`): Warp's queries of an
``sk.Mesh`` (:mod:`simkit.core.mesh`) by its uint64 id, implemented in ``native/mesh.h``.

Example::

    q = sk.mesh_query_point(mesh, p, 1.0e6)      # in a kernel taking mesh: sk.uint64
"""

from .builtins import _, EXAMPLES, OUT_PARAM_FORMS

# ---------------------------------------------------------------------------
# Triangle meshes (sk.Mesh, core/mesh.py; native/mesh.h): Warp's query builtins. A mesh is
# its uint64 id. Queries carry no gradient (a face index and where it was found); positions
# and velocities evaluated from (face, u, v) are differentiable in u and v.
# ---------------------------------------------------------------------------
_V3 = "vec(3,float32)"
_("mesh_query_point", f"id: uint64, point: {_V3}, max_dist: float32", "MeshQueryPoint",
  "return mesh_query_(id, point, max_dist, 1, 0.0f, 0.0f);", None,
  doc="The closest point of the mesh within max_dist; sign < 0 inside by three axis-aligned rays' votes.")
_("mesh_query_point_no_sign", f"id: uint64, point: {_V3}, max_dist: float32", "MeshQueryPoint",
  "return mesh_query_(id, point, max_dist, 0, 0.0f, 0.0f);", None,
  doc="The closest point of the mesh within max_dist; sign is left at 0.")
_("mesh_query_point_sign_normal", f"id: uint64, point: {_V3}, max_dist: float32", "MeshQueryPoint",
  "return mesh_query_(id, point, max_dist, 2, 1.0e-3f, 0.0f);", None,
  doc="The closest point; sign by the angle-weighted pseudo normal (epsilon 1e-3 of the mean edge).")
_("mesh_query_point_sign_normal", f"id: uint64, point: {_V3}, max_dist: float32, epsilon: float32",
  "MeshQueryPoint", "return mesh_query_(id, point, max_dist, 2, epsilon, 0.0f);", None)
_("mesh_query_point_sign_winding_number", f"id: uint64, point: {_V3}, max_dist: float32", "MeshQueryPoint",
  "return mesh_query_(id, point, max_dist, 3, 0.0f, 0.5f);", None,
  doc="The closest point; inside where the mesh's winding number about the point exceeds threshold (0.5).")
_("mesh_query_point_sign_winding_number",
  f"id: uint64, point: {_V3}, max_dist: float32, accuracy: float32, threshold: float32", "MeshQueryPoint",
  "return mesh_query_(id, point, max_dist, 3, 0.0f, threshold);", None)
_("mesh_query_ray", f"id: uint64, start: {_V3}, dir: {_V3}, max_t: float32", "MeshQueryRay",
  "return mesh_ray_(mesh_of_(id), start, dir, max_t);", None,
  doc="The closest hit of start + t dir, 0 <= t < max_t (t in multiples of |dir|).")
_("mesh_query_ray_anyhit", f"id: uint64, start: {_V3}, dir: {_V3}, max_t: float32", "bool",
  "return mesh_ray_(mesh_of_(id), start, dir, max_t).result;", None,
  doc="Whether start + t dir meets the mesh for some 0 <= t < max_t.")
_("mesh_eval_position", f"id: uint64, face: int32, bary_u: float32, bary_v: float32", _V3,
  "return mesh_eval_(id, mesh_of_(id).points, face, bary_u, bary_v);",
  "const mesh_t& m = mesh_of_(id); mesh_vec3 a, b, c; mesh_face_(m, face, a, b, c);"
  " adj_bary_u += dot_(a - c, adj_ret); adj_bary_v += dot_(b - c, adj_ret);",
  tan="const mesh_t& m = mesh_of_(id); mesh_vec3 a, b, c; mesh_face_(m, face, a, b, c);"
  " return (a - c) * tan_bary_u + (b - c) * tan_bary_v;",
  doc="p0 * u + p1 * v + p2 * (1 - u - v) of the face's points.")
_("mesh_eval_velocity", f"id: uint64, face: int32, bary_u: float32, bary_v: float32", _V3,
  "return mesh_eval_(id, mesh_of_(id).velocities, face, bary_u, bary_v);",
  "const mesh_t& m = mesh_of_(id); if (m.velocities) { const int32_t* ix = m.indices + 3 * face;"
  " mesh_vec3 c = m.velocities[ix[2]]; adj_bary_u += dot_(m.velocities[ix[0]] - c, adj_ret);"
  " adj_bary_v += dot_(m.velocities[ix[1]] - c, adj_ret); }",
  tan="const mesh_t& m = mesh_of_(id); if (!m.velocities) return mesh_vec3{}; const int32_t* ix = m.indices + 3 * face;"
  " mesh_vec3 c = m.velocities[ix[2]];"
  " return (m.velocities[ix[0]] - c) * tan_bary_u + (m.velocities[ix[1]] - c) * tan_bary_v;",
  doc="The velocities interpolated as mesh_eval_position interpolates the points (zero without velocities).")
_("mesh_eval_face_normal", "id: uint64, face: int32", _V3,
  "mesh_vec3 a, b, c; mesh_face_(mesh_of_(id), face, a, b, c); mesh_vec3 n = cross_(b - a, c - a);"
  " return n * (1.0f / m::sqrt(dot_(n, n)));", None,
  doc="The unit normal of a face, by its winding (counterclockwise seen from the front).")
_("mesh_get_point", "id: uint64, index: int32", _V3, "return mesh_of_(id).points[mesh_of_(id).indices[index]];",
  None, doc="The point of entry index of the indices array (3 f + k: corner k of face f).")
_("mesh_get_velocity", "id: uint64, index: int32", _V3,
  "const mesh_t& m = mesh_of_(id); return m.velocities ? m.velocities[m.indices[index]] : mesh_vec3{};", None,
  doc="The velocity of entry index of the indices array (zero without velocities).")
_("mesh_get_index", "id: uint64, index: int32", "int32", "return mesh_of_(id).indices[index];", None,
  doc="Entry index of the indices array: the point of corner index % 3 of face index // 3.")
# Examples shown by help(sk.<name>) (core/lang.py's stubs).
EXAMPLES.update({
    "mesh_query_point": """
q = sk.mesh_query_point(mesh, p, 1.0e6)            # mesh: a sk.uint64 kernel parameter, sk.Mesh(...).id
if q.result:
    d = q.sign * sk.length(p - sk.mesh_eval_position(mesh, q.face, q.u, q.v))   # signed distance
""",
    "mesh_query_point_no_sign": """
q = sk.mesh_query_point_no_sign(mesh, p, 0.1)       # faces within 0.1 only
if q.result:
    x = sk.mesh_eval_position(mesh, q.face, q.u, q.v)
""",
    "mesh_query_point_sign_normal": """
q = sk.mesh_query_point_sign_normal(mesh, p, 1.0e6)  # or (mesh, p, 1.0e6, 1.0e-3): epsilon
inside = q.result and q.sign < 0.0
""",
    "mesh_query_point_sign_winding_number": """
q = sk.mesh_query_point_sign_winding_number(mesh, p, 1.0e6, 2.0, 0.5)
inside = q.result and q.sign < 0.0
""",
    "mesh_query_ray": """
r = sk.mesh_query_ray(mesh, start, sk.normalize(dir), 1.0e6)
if r.result:
    hit = start + r.t * sk.normalize(dir)             # == sk.mesh_eval_position(mesh, r.face, r.u, r.v)
""",
    "mesh_query_ray_anyhit": """
shadowed = sk.mesh_query_ray_anyhit(mesh, x, light - x, 1.0)   # anything between x and the light
""",
    "mesh_eval_position": """
x = sk.mesh_eval_position(mesh, face, 1.0 / 3.0, 1.0 / 3.0)   # the face's centroid
""",
    "mesh_eval_velocity": """
v = sk.mesh_eval_velocity(mesh, q.face, q.u, q.v)   # the surface's velocity at a query's closest point
""",
    "mesh_eval_face_normal": """
n = sk.mesh_eval_face_normal(mesh, q.face)
""",
    "mesh_get_point": """
p0 = sk.mesh_get_point(mesh, 3 * face)              # the face's first corner
""",
    "mesh_get_velocity": """
v0 = sk.mesh_get_velocity(mesh, 3 * face)
""",
    "mesh_get_index": """
i0 = sk.mesh_get_index(mesh, 3 * face)              # the point index of the face's first corner
""",
})

# Warp's older spelling of the queries, out-parameters instead of a struct:
# ``if sk.mesh_query_point(mesh, p, d, sign, face, u, v): ...`` writes the named locals (declared
# before, of the fields' types) and is the query's ``result``. Per builtin: how many inputs
# come first, then the fields written, in Warp's order; the overload's further inputs
# (sign_normal's epsilon, ...) follow the out-parameters.
OUT_PARAM_FORMS.update({
    "mesh_query_point": (3, ("sign", "face", "u", "v")),
    "mesh_query_point_no_sign": (3, ("face", "u", "v")),
    "mesh_query_point_sign_normal": (3, ("sign", "face", "u", "v")),
    "mesh_query_point_sign_winding_number": (3, ("sign", "face", "u", "v")),
    "mesh_query_ray": (4, ("t", "u", "v", "sign", "normal", "face")),
})
