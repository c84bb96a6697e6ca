"""Mesh query kernels written once for both Warp and simkit: test_mesh_queries.py imports this
file as it is (``M`` is simkit) and a copy whose first line reads ``import warp as M``, and
compares the two. Nothing here may use a name the other does not have."""
import simkit as M  # the first line: test_mesh_queries.py swaps it for "import warp as M"


@M.func
def write_point(q: M.MeshQueryPoint, mesh: M.uint64, p: M.vec3, i: int, found: M.array(dtype=M.int32),
                sign: M.array(dtype=M.float32), face: M.array(dtype=M.int32), uv: M.array(dtype=M.vec2),
                pos: M.array(dtype=M.vec3), dist: M.array(dtype=M.float32)):
    if q.result:
        found[i] = 1
        sign[i] = q.sign
        face[i] = q.face
        uv[i] = M.vec2(q.u, q.v)
        x = M.mesh_eval_position(mesh, q.face, q.u, q.v)
        pos[i] = x
        dist[i] = M.length(p - x)


@M.kernel
def query_point(mesh: M.uint64, pts: M.array(dtype=M.vec3), max_dist: float, found: M.array(dtype=M.int32),
                sign: M.array(dtype=M.float32), face: M.array(dtype=M.int32), uv: M.array(dtype=M.vec2),
                pos: M.array(dtype=M.vec3), dist: M.array(dtype=M.float32)):
    i = M.tid()
    p = pts[i]
    q = M.mesh_query_point(mesh, p, max_dist)
    write_point(q, mesh, p, i, found, sign, face, uv, pos, dist)


@M.kernel
def query_point_no_sign(mesh: M.uint64, pts: M.array(dtype=M.vec3), max_dist: float,
                        found: M.array(dtype=M.int32), sign: M.array(dtype=M.float32), face: M.array(dtype=M.int32),
                        uv: M.array(dtype=M.vec2), pos: M.array(dtype=M.vec3), dist: M.array(dtype=M.float32)):
    i = M.tid()
    p = pts[i]
    q = M.mesh_query_point_no_sign(mesh, p, max_dist)
    write_point(q, mesh, p, i, found, sign, face, uv, pos, dist)


@M.kernel
def query_point_sign_normal(mesh: M.uint64, pts: M.array(dtype=M.vec3), max_dist: float,
                            found: M.array(dtype=M.int32), sign: M.array(dtype=M.float32),
                            face: M.array(dtype=M.int32), uv: M.array(dtype=M.vec2), pos: M.array(dtype=M.vec3),
                            dist: M.array(dtype=M.float32)):
    i = M.tid()
    p = pts[i]
    q = M.mesh_query_point_sign_normal(mesh, p, max_dist)
    write_point(q, mesh, p, i, found, sign, face, uv, pos, dist)


@M.kernel
def query_point_sign_winding_number(mesh: M.uint64, pts: M.array(dtype=M.vec3), max_dist: float,
                                    found: M.array(dtype=M.int32), sign: M.array(dtype=M.float32),
                                    face: M.array(dtype=M.int32), uv: M.array(dtype=M.vec2),
                                    pos: M.array(dtype=M.vec3), dist: M.array(dtype=M.float32)):
    i = M.tid()
    p = pts[i]
    q = M.mesh_query_point_sign_winding_number(mesh, p, max_dist, 2.0, 0.5)
    write_point(q, mesh, p, i, found, sign, face, uv, pos, dist)


@M.kernel
def query_ray(mesh: M.uint64, starts: M.array(dtype=M.vec3), dirs: M.array(dtype=M.vec3), max_t: float,
              found: M.array(dtype=M.int32), sign: M.array(dtype=M.float32), face: M.array(dtype=M.int32),
              t: M.array(dtype=M.float32), uv: M.array(dtype=M.vec2), normal: M.array(dtype=M.vec3),
              hit: M.array(dtype=M.vec3)):
    i = M.tid()
    q = M.mesh_query_ray(mesh, starts[i], dirs[i], max_t)
    if q.result:
        found[i] = 1
        sign[i] = q.sign
        face[i] = q.face
        t[i] = q.t
        uv[i] = M.vec2(q.u, q.v)
        normal[i] = q.normal
        hit[i] = M.mesh_eval_position(mesh, q.face, q.u, q.v)


@M.kernel
def eval_at(mesh: M.uint64, faces: M.array(dtype=M.int32), u: M.array(dtype=M.float32),
            v: M.array(dtype=M.float32), pos: M.array(dtype=M.vec3), vel: M.array(dtype=M.vec3)):
    i = M.tid()
    pos[i] = M.mesh_eval_position(mesh, faces[i], u[i], v[i])
    vel[i] = M.mesh_eval_velocity(mesh, faces[i], u[i], v[i])


@M.kernel
def weighted_positions(mesh: M.uint64, faces: M.array(dtype=M.int32), u: M.array(dtype=M.float32),
                       v: M.array(dtype=M.float32), w: M.array(dtype=M.vec3), loss: M.array(dtype=M.float32)):
    i = M.tid()
    x = M.mesh_eval_position(mesh, faces[i], u[i], v[i])
    y = M.mesh_eval_velocity(mesh, faces[i], u[i], v[i])
    M.atomic_add(loss, 0, M.dot(x, w[i]) + 0.5 * M.dot(y, y))


@M.kernel
def distance_to_mesh(mesh: M.uint64, pts: M.array(dtype=M.vec3), dist: M.array(dtype=M.float32)):
    i = M.tid()
    p = pts[i]
    q = M.mesh_query_point_no_sign(mesh, p, 1.0e6)
    dist[i] = M.length(p - M.mesh_eval_position(mesh, q.face, q.u, q.v))


@M.kernel
def lookups(mesh: M.uint64, normal: M.array(dtype=M.vec3), point: M.array(dtype=M.vec3),
            velocity: M.array(dtype=M.vec3), index: M.array(dtype=M.int32)):
    i = M.tid()
    normal[i] = M.mesh_eval_face_normal(mesh, i // 3)
    point[i] = M.mesh_get_point(mesh, i)
    velocity[i] = M.mesh_get_velocity(mesh, i)
    index[i] = M.mesh_get_index(mesh, i)


@M.kernel
def out_parameter_forms(mesh: M.uint64, pts: M.array(dtype=M.vec3), dirs: M.array(dtype=M.vec3),
                        point: M.array(dtype=M.vec4), no_sign: M.array(dtype=M.vec4), normal: M.array(dtype=M.vec4),
                        ray: M.array(dtype=M.vec4), ray_normal: M.array(dtype=M.vec3)):
    # Warp's older spelling: results written into locals, the call itself the result flag
    i = M.tid()
    sign = float(0.0)
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    if M.mesh_query_point(mesh, pts[i], 1.0e6, sign, face, u, v):
        point[i] = M.vec4(sign, float(face), u, v)
    if M.mesh_query_point_no_sign(mesh, pts[i], 1.0e6, face, u, v):
        no_sign[i] = M.vec4(0.0, float(face), u, v)
    if M.mesh_query_point_sign_normal(mesh, pts[i], 1.0e6, sign, face, u, v, 1.0e-3):
        normal[i] = M.vec4(sign, float(face), u, v)
    t = float(0.0)
    n = M.vec3()
    if M.mesh_query_ray(mesh, pts[i], dirs[i], 1.0e6, t, u, v, sign, n, face):
        ray[i] = M.vec4(t, float(face), u, v)
        ray_normal[i] = n * sign


@M.kernel
def ray_anyhit(mesh: M.uint64, starts: M.array(dtype=M.vec3), dirs: M.array(dtype=M.vec3), max_t: float,
               hit: M.array(dtype=M.int32)):
    i = M.tid()
    if M.mesh_query_ray_anyhit(mesh, starts[i], dirs[i], max_t):
        hit[i] = 1
