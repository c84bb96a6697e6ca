// Triangle meshes of sk.Mesh (simkit/core/mesh.py) as kernels see them: a mesh id is the
// address of a mesh_t (in host memory for the CPU, device memory for CUDA) whose pointers
// are the mesh's arrays on that same device. The bounding volume hierarchy is built on the
// host (simkit/core/bvh.py): boxes in depth-first order, node_skip[i] the index past node
// i's subtree, so a search walks the array with no stack (i + 1 to open a node, skip[i]
// to prune it). Barycentrics follow Warp: a point is u * p0 + v * p1 + (1 - u - v) * p2.
#pragma once
#include "vec.h"

namespace sk {

typedef vec_t<3, float> mesh_vec3;
constexpr float MESH_INF = 3.402823466e+38f;  // FLT_MAX: NVRTC has no <cmath> INFINITY

struct mesh_t {
    const mesh_vec3* points;
    const mesh_vec3* velocities;  // null: the mesh has none
    const int32_t* indices;       // 3 per face
    const mesh_vec3* node_lo;
    const mesh_vec3* node_hi;
    const int32_t* node_skip;
    const int32_t* node_first;    // a leaf's first slot in leaf_faces
    const int32_t* node_count;    // faces of a leaf; 0 for an inner node
    const int32_t* leaf_faces;    // face indices in leaf order
    int32_t num_points;
    int32_t num_faces;
    int32_t num_nodes;
    float avg_edge;               // mean edge length (the unit of sign_normal's epsilon)
};

// Results, laid out as the @sk.struct types MeshQueryPoint / MeshQueryRay of core/mesh.py.
struct mesh_query_point_t {
    bool result;
    float sign;
    int32_t face;
    float u;
    float v;
};
struct mesh_query_ray_t {
    bool result;
    float sign;
    int32_t face;
    float t;
    float u;
    float v;
    mesh_vec3 normal;
};
// No gradient flows through a query; these only let generated adjoints declare one.
SK_FUNC mesh_query_point_t& operator+=(mesh_query_point_t& a, const mesh_query_point_t& b) {
    a.sign += b.sign; a.u += b.u; a.v += b.v; return a;
}
SK_FUNC mesh_query_ray_t& operator+=(mesh_query_ray_t& a, const mesh_query_ray_t& b) {
    a.sign += b.sign; a.t += b.t; a.u += b.u; a.v += b.v; a.normal += b.normal; return a;
}

SK_FUNC const mesh_t& mesh_of_(uint64_t id) { return *reinterpret_cast<const mesh_t*>(id); }

SK_FUNC void mesh_face_(const mesh_t& m, int32_t f, mesh_vec3& a, mesh_vec3& b, mesh_vec3& c) {
    a = m.points[m.indices[3 * f]];
    b = m.points[m.indices[3 * f + 1]];
    c = m.points[m.indices[3 * f + 2]];
}

// Squared distance from p to a node's box (0 inside).
SK_FUNC float mesh_box_d2_(const mesh_t& m, int32_t i, const mesh_vec3& p) {
    float d2 = 0.0f;
    for (int k = 0; k < 3; ++k) {
        float e = max_(max_(m.node_lo[i][k] - p[k], p[k] - m.node_hi[i][k]), 0.0f);
        d2 += e * e;
    }
    return d2;
}

// A face too thin to have a usable plane (its area tiny against its longest edge).
SK_FUNC bool mesh_degenerate_(const mesh_vec3& a, const mesh_vec3& b, const mesh_vec3& c) {
    mesh_vec3 n = cross_(b - a, c - a);
    float e = max_(max_(dot_(b - a, b - a), dot_(c - a, c - a)), dot_(c - b, c - b));
    return !(dot_(n, n) > 1.0e-12f * e * e);
}

// Closest point of triangle abc to p, as the weights (u of a, v of b, 1 - u - v of c);
// by the region of p's projection: a corner, an edge, or the face (Ericson's method).
SK_FUNC void mesh_closest_on_triangle_(const mesh_vec3& p, const mesh_vec3& a, const mesh_vec3& b,
                                       const mesh_vec3& c, float& u, float& v) {
    mesh_vec3 ab = b - a, ac = c - a, ap = p - a;
    float d1 = dot_(ab, ap), d2 = dot_(ac, ap);
    if (d1 <= 0.0f && d2 <= 0.0f) { u = 1.0f; v = 0.0f; return; }
    mesh_vec3 bp = p - b;
    float d3 = dot_(ab, bp), d4 = dot_(ac, bp);
    if (d3 >= 0.0f && d4 <= d3) { u = 0.0f; v = 1.0f; return; }
    float vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) { float s = d1 / (d1 - d3); u = 1.0f - s; v = s; return; }
    mesh_vec3 cp = p - c;
    float d5 = dot_(ab, cp), d6 = dot_(ac, cp);
    if (d6 >= 0.0f && d5 <= d6) { u = 0.0f; v = 0.0f; return; }
    float vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) { float s = d2 / (d2 - d6); u = 1.0f - s; v = 0.0f; return; }
    float va = d3 * d6 - d5 * d4;
    if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {
        float s = (d4 - d3) / ((d4 - d3) + (d5 - d6));  // along b -> c
        u = 0.0f; v = 1.0f - s; return;
    }
    float inv = 1.0f / (va + vb + vc);
    float wb = vb * inv, wc = vc * inv;  // weights of b and c
    u = 1.0f - wb - wc; v = wb;
}

SK_FUNC mesh_vec3 mesh_bary_point_(const mesh_vec3& a, const mesh_vec3& b, const mesh_vec3& c, float u, float v) {
    return a * u + b * v + c * (1.0f - u - v);
}

// Keep in q the closest of q and leaf i's faces to p (best_d2: q's squared distance).
SK_FUNC void mesh_scan_leaf_(const mesh_t& m, int32_t i, const mesh_vec3& p, mesh_query_point_t& q, float& best_d2) {
    for (int32_t k = 0; k < m.node_count[i]; ++k) {
        int32_t f = m.leaf_faces[m.node_first[i] + k];
        mesh_vec3 a, b, c;
        mesh_face_(m, f, a, b, c);
        if (mesh_degenerate_(a, b, c)) continue;
        float u, v;
        mesh_closest_on_triangle_(p, a, b, c, u, v);
        mesh_vec3 d = p - mesh_bary_point_(a, b, c, u, v);
        float d2 = dot_(d, d);
        if (d2 < best_d2) { best_d2 = d2; q.result = true; q.face = f; q.u = u; q.v = v; }
    }
}

// The face closest to p strictly within max_dist (result false: none), with its weights.
// A first descent into the nearer child down to a leaf gives a close candidate, so that the
// walk over the tree then prunes most boxes.
SK_FUNC mesh_query_point_t mesh_closest_(const mesh_t& m, const mesh_vec3& p, float max_dist, float& best_d2) {
    mesh_query_point_t q = {false, 0.0f, -1, 0.0f, 0.0f};
    best_d2 = max_dist * max_dist;
    int32_t j = 0;
    while (m.node_count[j] == 0) {
        int32_t left = j + 1, right = m.node_skip[left];
        j = mesh_box_d2_(m, right, p) < mesh_box_d2_(m, left, p) ? right : left;
    }
    mesh_scan_leaf_(m, j, p, q, best_d2);
    int32_t i = 0;
    while (i < m.num_nodes) {
        if (!(mesh_box_d2_(m, i, p) < best_d2)) { i = m.node_skip[i]; continue; }
        if (i != j) mesh_scan_leaf_(m, i, p, q, best_d2);
        i = i + 1;
    }
    return q;
}

// Ray-triangle intersection, two-sided (Moller-Trumbore): t along dir and the weights.
SK_FUNC bool mesh_ray_triangle_(const mesh_vec3& o, const mesh_vec3& dir, const mesh_vec3& a, const mesh_vec3& b,
                                const mesh_vec3& c, float& t, float& u, float& v) {
    mesh_vec3 e1 = b - a, e2 = c - a;
    mesh_vec3 h = cross_(dir, e2);
    float det = dot_(e1, h);
    if (det == 0.0f) return false;
    float inv = 1.0f / det;
    mesh_vec3 s = o - a;
    float wb = dot_(s, h) * inv;
    if (wb < 0.0f || wb > 1.0f) return false;
    mesh_vec3 qv = cross_(s, e1);
    float wc = dot_(dir, qv) * inv;
    if (wc < 0.0f || wb + wc > 1.0f) return false;
    t = dot_(e2, qv) * inv;
    u = 1.0f - wb - wc; v = wb;
    return true;
}

// Does the ray o + t dir, t in [0, t_max), meet node i's box?
SK_FUNC bool mesh_ray_box_(const mesh_t& m, int32_t i, const mesh_vec3& o, const mesh_vec3& inv_dir, float t_max) {
    float lo = 0.0f, hi = t_max;
    for (int k = 0; k < 3; ++k) {
        float t0 = (m.node_lo[i][k] - o[k]) * inv_dir[k], t1 = (m.node_hi[i][k] - o[k]) * inv_dir[k];
        if (t0 != t0) t0 = -MESH_INF;  // 0 * inf: the ray lies in the slab's plane
        if (t1 != t1) t1 = MESH_INF;
        lo = max_(lo, min_(t0, t1));
        hi = min_(hi, max_(t0, t1));
    }
    return lo <= hi;
}

SK_FUNC mesh_query_ray_t mesh_ray_(const mesh_t& m, const mesh_vec3& o, const mesh_vec3& dir, float max_t) {
    mesh_query_ray_t q = {false, 0.0f, -1, max_t, 0.0f, 0.0f, {{0.0f, 0.0f, 0.0f}}};
    mesh_vec3 inv_dir = {{1.0f / dir[0], 1.0f / dir[1], 1.0f / dir[2]}};
    int32_t i = 0;
    while (i < m.num_nodes) {
        if (!mesh_ray_box_(m, i, o, inv_dir, q.t)) { i = m.node_skip[i]; continue; }
        for (int32_t k = 0; k < m.node_count[i]; ++k) {
            int32_t f = m.leaf_faces[m.node_first[i] + k];
            mesh_vec3 a, b, c;
            mesh_face_(m, f, a, b, c);
            float t, u, v;
            if (mesh_ray_triangle_(o, dir, a, b, c, t, u, v) && t >= 0.0f && t < q.t) {
                q.result = true; q.t = t; q.face = f; q.u = u; q.v = v;
            }
        }
        i = i + 1;
    }
    if (q.result) {
        mesh_vec3 a, b, c;
        mesh_face_(m, q.face, a, b, c);
        mesh_vec3 n = cross_(b - a, c - a);
        q.normal = n * (1.0f / m::sqrt(dot_(n, n)));
        // > 0: the front of the face. Its size is Warp's: twice the area of the face projected
        // along dir onto the plane across dir's largest component, -(dir . n) / max |dir_i|.
        float big = max_(max_(abs_(dir[0]), abs_(dir[1])), abs_(dir[2]));
        q.sign = -dot_(dir, n) / big;
    } else {
        q.t = 0.0f;
    }
    return q;
}

// Inside by three axis-aligned rays: each votes inside when its closest hit is on a face's back.
SK_FUNC float mesh_sign_rays_(const mesh_t& m, const mesh_vec3& p) {
    int inside = 0;
    for (int k = 0; k < 3; ++k) {
        mesh_vec3 dir = {{k == 0 ? 1.0f : 0.0f, k == 1 ? 1.0f : 0.0f, k == 2 ? 1.0f : 0.0f}};
        mesh_query_ray_t r = mesh_ray_(m, p, dir, MESH_INF);
        if (r.result && r.sign < 0.0f) ++inside;
    }
    return inside >= 2 ? -1.0f : 1.0f;
}

// The angle a triangle subtends at its point with weights (u, v): its corner angle at a
// corner (within tol), pi on an edge or inside (one face there: the weight does not matter).
SK_FUNC float mesh_angle_at_(const mesh_vec3& a, const mesh_vec3& b, const mesh_vec3& c, const mesh_vec3& x,
                             float tol) {
    const mesh_vec3* corner[3] = {&a, &b, &c};
    for (int k = 0; k < 3; ++k) {
        mesh_vec3 d = x - *corner[k];
        if (dot_(d, d) <= tol * tol) {
            mesh_vec3 e1 = *corner[(k + 1) % 3] - *corner[k], e2 = *corner[(k + 2) % 3] - *corner[k];
            float cs = dot_(e1, e2) / m::sqrt(dot_(e1, e1) * dot_(e2, e2));
            return m::acos(max_(-1.0f, min_(1.0f, cs)));
        }
    }
    return 3.14159265358979f;
}

// Sign by the angle-weighted pseudo normal at the closest point x: the unit normals of every
// face whose own closest point to p is x (within eps times the mean edge), each weighted by
// the angle it subtends at x.
SK_FUNC float mesh_sign_normal_(const mesh_t& m, const mesh_vec3& p, const mesh_vec3& x, float epsilon) {
    float tol = epsilon * m.avg_edge;
    mesh_vec3 n = {{0.0f, 0.0f, 0.0f}};
    int32_t i = 0;
    while (i < m.num_nodes) {  // such a face passes within tol of x: only boxes that near x are opened
        if (!(mesh_box_d2_(m, i, x) <= tol * tol)) { i = m.node_skip[i]; continue; }
        for (int32_t k = 0; k < m.node_count[i]; ++k) {
            int32_t f = m.leaf_faces[m.node_first[i] + k];
            mesh_vec3 a, b, c;
            mesh_face_(m, f, a, b, c);
            if (mesh_degenerate_(a, b, c)) continue;
            float u, v;
            mesh_closest_on_triangle_(p, a, b, c, u, v);
            mesh_vec3 y = mesh_bary_point_(a, b, c, u, v);
            mesh_vec3 gap = y - x;
            if (dot_(gap, gap) > tol * tol) continue;
            mesh_vec3 fn = cross_(b - a, c - a);
            n += fn * (mesh_angle_at_(a, b, c, x, tol) / m::sqrt(dot_(fn, fn)));
        }
        i = i + 1;
    }
    return dot_(p - x, n) < 0.0f ? -1.0f : 1.0f;
}

// Winding number of the whole mesh about p (the sum of the faces' solid angles over 4 pi;
// exact, one pass over the faces).
SK_FUNC float mesh_winding_(const mesh_t& m, const mesh_vec3& p) {
    float total = 0.0f;
    for (int32_t f = 0; f < m.num_faces; ++f) {
        mesh_vec3 a, b, c;
        mesh_face_(m, f, a, b, c);
        a = a - p; b = b - p; c = c - p;
        float la = m::sqrt(dot_(a, a)), lb = m::sqrt(dot_(b, b)), lc = m::sqrt(dot_(c, c));
        float num = dot_(a, cross_(b, c));
        float den = la * lb * lc + dot_(a, b) * lc + dot_(b, c) * la + dot_(c, a) * lb;
        total += 2.0f * m::atan2(num, den);
    }
    return total / (4.0f * 3.14159265358979f);
}

SK_FUNC mesh_query_point_t mesh_query_(uint64_t id, const mesh_vec3& p, float max_dist, int how, float epsilon,
                                       float threshold) {
    const mesh_t& m = mesh_of_(id);
    float d2;
    mesh_query_point_t q = mesh_closest_(m, p, max_dist, d2);
    if (!q.result) return q;
    if (how == 1) {
        q.sign = mesh_sign_rays_(m, p);
    } else if (how == 2) {
        mesh_vec3 a, b, c;
        mesh_face_(m, q.face, a, b, c);
        q.sign = mesh_sign_normal_(m, p, mesh_bary_point_(a, b, c, q.u, q.v), epsilon);
    } else if (how == 3) {
        q.sign = mesh_winding_(m, p) > threshold ? -1.0f : 1.0f;
    }
    return q;
}

SK_FUNC mesh_vec3 mesh_eval_(uint64_t id, const mesh_vec3* values, int32_t f, float u, float v) {
    const mesh_t& m = mesh_of_(id);
    if (!values) return mesh_vec3{{0.0f, 0.0f, 0.0f}};
    return mesh_bary_point_(values[m.indices[3 * f]], values[m.indices[3 * f + 1]], values[m.indices[3 * f + 2]], u, v);
}

}  // namespace sk
