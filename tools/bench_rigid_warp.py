"""The warp side of the rigid-body benches: simkit's float32 semi-implicit body step
(``clear_body_forces``, body ``ground_contact`` and ``pair_contact``, ``eval_joints``,
``integrate_bodies``) written as warp-lang kernels, run on warp's CPU device over the
very arrays of a simkit Model.

warp-lang 1.19 ships no ``warp.sim``, so a speed comparison needs the same physics in
warp. Every kernel here is a line-by-line port of simkit's own
(``simkit/kernels/{bodies,body_contact,shapes,contact,joints}.py``): same float32 math in
the same order, same launch dimensions, same atomic accumulation into ``body_f``, and
parameter structs with simkit's fields. :class:`WarpRigidScene` copies a model into them
and its ``step`` launches what ``SemiImplicitEuler.step`` launches for a model with bodies
only. ``tools/bench_rigid.py`` (100 boxes on the ground) and ``tools/bench_joints.py`` (a
revolute chain) time it next to simkit, after :func:`position_difference` and
:func:`taped_gradients` have shown that both compute the same thing.

Example::

    scene = warp_scene(model)            # a WarpRigidScene, or a str: why warp cannot run here
    a, b = scene.state(), scene.state()
    scene.step(a, b, 1e-4)
"""

import functools
import time

import numpy as np

import simkit as sk
from simkit.kernels.shapes import BOX_CORNER_ROUNDING, MAX_PLANE_POINTS, collision_pairs
from simkit.kernels.structs import JOINT_FIXED, JOINT_PRISMATIC, JOINT_REVOLUTE, SHAPE_BOX, SHAPE_CAPSULE

from bench_sim_warp import DEVICE, load_scene, warp_module  # one warp initialisation for every port
from bench_sim_warp import _kernels as particle_kernels

@functools.cache
def warp_rigid_kernels() -> dict:
    """Warp structs and kernels mirroring simkit's float32 rigid step: ``clear``,
    ``ground_contact``, ``pair_contact`` and ``integrate_bodies`` (line by line from
    ``simkit/kernels/{bodies,body_contact,shapes,contact}.py``).

    Example::

        K = warp_rigid_kernels()
        K["integrate_bodies"]
    """
    wp = warp_module()
    reals = wp.array(dtype=wp.float32)
    transforms = wp.array(dtype=wp.transform)
    spatials = wp.array(dtype=wp.spatial_vector)
    BOX, CAPSULE = SHAPE_BOX, SHAPE_CAPSULE
    ROUNDING = BOX_CORNER_ROUNDING

    @wp.struct
    class Bodies:
        mass: reals
        inv_mass: reals
        inertia: wp.array(dtype=wp.mat33)
        inv_inertia: wp.array(dtype=wp.mat33)
        com: wp.array(dtype=wp.vec3)

    @wp.struct
    class Shapes:
        kind: wp.array(dtype=wp.int32)
        body: wp.array(dtype=wp.int32)
        xform: transforms
        params: wp.array(dtype=wp.vec3)
        ke: reals
        kd: reals
        kf: reals
        mu: reals
        time_constant: reals
        damping_ratio: reals

    @wp.func
    def top(s: wp.spatial_vector):
        return wp.vec3(s[0], s[1], s[2])

    @wp.func
    def bottom(s: wp.spatial_vector):
        return wp.vec3(s[3], s[4], s[5])

    @wp.func
    def make_spatial(a: wp.vec3, b: wp.vec3):
        return wp.spatial_vector(a[0], a[1], a[2], b[0], b[1], b[2])

    @wp.func
    def point_velocity(X: wp.transform, qd: wp.spatial_vector, com: wp.vec3, p: wp.vec3):
        return bottom(qd) + wp.cross(top(qd), p - wp.transform_point(X, com))

    @wp.func
    def wrench_at(X: wp.transform, com: wp.vec3, p: wp.vec3, force: wp.vec3):
        return make_spatial(wp.cross(p - wp.transform_point(X, com), force), force)

    # the particle port's contact law, shared (simkit's kernels share it too: kernels/contact.py)
    scaled_penalty_force = particle_kernels()["scaled_penalty_force"]

    @wp.func
    def world_inverse_inertia(X: wp.transform, bodies: Bodies, b: int):
        R = wp.quat_to_matrix(wp.transform_get_rotation(X))
        return R @ bodies.inv_inertia[b] @ wp.transpose(R)

    @wp.func
    def point_inverse_mass(X: wp.transform, bodies: Bodies, b: int, p: wp.vec3, n: wp.vec3):
        w = wp.float32(0.0)
        if b >= 0:
            rn = wp.cross(p - wp.transform_point(X, bodies.com[b]), n)
            w = bodies.inv_mass[b] + wp.dot(rn, world_inverse_inertia(X, bodies, b) @ rn)
        return w

    @wp.func
    def box_distance(p: wp.vec3, h: wp.vec3):
        closest = wp.min(wp.max(p, -h), h)
        d = p - closest
        dist = wp.length(d)
        n = d * 0.0
        if dist > 0.0:
            n = d / dist
        else:
            gap = h - wp.abs(p)
            axis = 0
            if gap[1] < gap[axis]:
                axis = 1
            if gap[2] < gap[axis]:
                axis = 2
            dist = -gap[axis]
            n[axis] = wp.sign(p[axis])
            if p[axis] == 0.0:
                n[axis] = 1.0
        return dist, n

    @wp.func
    def shape_distance(kind: int, p: wp.vec3, size: wp.vec3):
        if kind == BOX:
            dist, n = box_distance(p, size)
        else:
            d = p
            if kind == CAPSULE:
                axis_point = p * 0.0
                axis_point[1] = wp.clamp(p[1], -size[1], size[1])
                d = p - axis_point
            dist = wp.length(d) - size[0]
            n = wp.normalize(d)
        return dist, n

    @wp.func
    def shape_transform(shapes: Shapes, body_q: transforms, s: int):
        X = shapes.xform[s]
        b = shapes.body[s]
        if b >= 0:
            X = wp.transform_multiply(body_q[b], X)
        return X

    @wp.func
    def shape_point_count(kind: int):
        count = 1
        if kind == BOX:
            count = 20
        elif kind == CAPSULE:
            count = 3
        return count

    @wp.func
    def shape_plane_point_count(kind: int):
        count = 1
        if kind == BOX:
            count = 8
        elif kind == CAPSULE:
            count = 2
        return count

    @wp.func
    def shape_point(kind: int, size: wp.vec3, k: int, toward: wp.vec3):
        p = size * 0.0
        radius = size[0]
        if kind == BOX:
            radius = wp.min(wp.min(size[0], size[1]), size[2]) * ROUNDING
            p[0] = radius - size[0]
            p[1] = radius - size[1]
            p[2] = radius - size[2]
            if k < 8:
                if k % 2 == 1:
                    p[0] = -p[0]
                if (k // 2) % 2 == 1:
                    p[1] = -p[1]
                if k // 4 == 1:
                    p[2] = -p[2]
            else:
                e = k - 8
                axis = e // 4
                first = (axis + 1) % 3
                second = (axis + 2) % 3
                if e % 2 == 1:
                    p[first] = -p[first]
                if (e // 2) % 2 == 1:
                    p[second] = -p[second]
                p[axis] = radius * 0.0
        elif kind == CAPSULE:
            if k == 0:
                p[1] = -size[1]
            elif k == 1:
                p[1] = size[1]
            else:
                p[1] = wp.clamp(toward[1], -size[1], size[1])
        return p, radius

    @wp.func
    def shape_bounding_radius(kind: int, size: wp.vec3):
        r = size[0]
        if kind == BOX:
            r = wp.length(size)
        elif kind == CAPSULE:
            r = size[0] + size[1]
        return r

    @wp.kernel
    def clear(f: spatials):
        f[wp.tid()] = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)

    @wp.kernel
    def ground_contact(body_q: transforms, body_qd: spatials, bodies: Bodies, shapes: Shapes, ground_normal: wp.vec3,
                       body_f: spatials):
        s, k = wp.tid()
        b = shapes.body[s]
        kind = shapes.kind[s]
        if b < 0 or k >= shape_plane_point_count(kind):
            return
        X = wp.transform_multiply(body_q[b], shapes.xform[s])
        size = shapes.params[s]
        p_local, radius = shape_point(kind, size, k, size * 0.0)
        p = wp.transform_point(X, p_local)
        n = ground_normal
        depth = wp.dot(n, p) - radius
        if depth < 0.0:
            Xb = body_q[b]
            com = bodies.com[b]
            c = p - n * (radius + 0.5 * depth)
            v = point_velocity(Xb, body_qd[b], com, c)
            fc = scaled_penalty_force(n, depth, v, point_inverse_mass(Xb, bodies, b, c, n), shapes.ke[s],
                                      shapes.kd[s], shapes.kf[s], shapes.time_constant[s], shapes.damping_ratio[s],
                                      shapes.mu[s])
            wp.atomic_add(body_f, b, wrench_at(Xb, com, c, fc))

    @wp.func
    def point_wrenches(k: int, kind_a: int, size_a: wp.vec3, Xa: wp.transform, toward: wp.vec3, kind_b: int,
                       size_b: wp.vec3, Xb: wp.transform, Xb_inv: wp.transform, body_a: int, body_b: int,
                       body_q: transforms, body_qd: spatials, bodies: Bodies, ke: float, kd: float, kf: float,
                       tc: float, zeta: float, mu: float):
        p_local, radius = shape_point(kind_a, size_a, k, toward)
        p = wp.transform_point(Xa, p_local)
        dist, n_local = shape_distance(kind_b, wp.transform_point(Xb_inv, p), size_b)
        depth = dist - radius
        wa = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        wb = wa
        if depth < 0.0:
            n = wp.quat_rotate(wp.transform_get_rotation(Xb), n_local)
            c = p - n * (radius + 0.5 * depth)
            v = c * 0.0
            inv_mass = wp.float32(0.0)
            if body_a >= 0:
                v = point_velocity(body_q[body_a], body_qd[body_a], bodies.com[body_a], c)
                inv_mass = point_inverse_mass(body_q[body_a], bodies, body_a, c, n)
            if body_b >= 0:
                v = v - point_velocity(body_q[body_b], body_qd[body_b], bodies.com[body_b], c)
                inv_mass = inv_mass + point_inverse_mass(body_q[body_b], bodies, body_b, c, n)
            fc = scaled_penalty_force(n, depth, v, inv_mass, ke, kd, kf, tc, zeta, mu)
            if body_a >= 0:
                wa = wrench_at(body_q[body_a], bodies.com[body_a], c, fc)
            if body_b >= 0:
                wb = wrench_at(body_q[body_b], bodies.com[body_b], c, -fc)
        return wa, wb

    @wp.func
    def pair_wrenches(a: int, b: int, body_q: transforms, body_qd: spatials, bodies: Bodies, shapes: Shapes):
        kind_a = shapes.kind[a]
        kind_b = shapes.kind[b]
        size_a = shapes.params[a]
        size_b = shapes.params[b]
        Xa = shape_transform(shapes, body_q, a)
        Xb = shape_transform(shapes, body_q, b)
        Xb_inv = wp.transform_inverse(Xb)
        toward = wp.transform_point(wp.transform_inverse(Xa), wp.transform_get_translation(Xb))
        body_a = shapes.body[a]
        body_b = shapes.body[b]
        ke = 0.5 * (shapes.ke[a] + shapes.ke[b])
        kd = 0.5 * (shapes.kd[a] + shapes.kd[b])
        kf = 0.5 * (shapes.kf[a] + shapes.kf[b])
        tc = 0.5 * (shapes.time_constant[a] + shapes.time_constant[b])
        zeta = 0.5 * (shapes.damping_ratio[a] + shapes.damping_ratio[b])
        mu = 0.5 * (shapes.mu[a] + shapes.mu[b])
        count = shape_point_count(kind_a)
        fa = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        fb = fa
        for k in range(8):
            if k < count:
                wa, wb = point_wrenches(k, kind_a, size_a, Xa, toward, kind_b, size_b, Xb, Xb_inv, body_a, body_b,
                                        body_q, body_qd, bodies, ke, kd, kf, tc, zeta, mu)
                fa = fa + wa
                fb = fb + wb
        for k in range(8, 20):
            if k < count:
                wa, wb = point_wrenches(k, kind_a, size_a, Xa, toward, kind_b, size_b, Xb, Xb_inv, body_a, body_b,
                                        body_q, body_qd, bodies, ke, kd, kf, tc, zeta, mu)
                fa = fa + wa
                fb = fb + wb
        return fa, fb

    @wp.func
    def apart(body_q: transforms, body_a: int, pa: wp.vec3, body_b: int, pb: wp.vec3, reach: float):
        if body_a >= 0:
            pa = wp.transform_point(body_q[body_a], pa)
        if body_b >= 0:
            pb = wp.transform_point(body_q[body_b], pb)
        result = 0
        if wp.length(pa - pb) > reach:
            result = 1
        return result

    @wp.func_grad(apart)
    def apart_grad(body_q: transforms, body_a: int, pa: wp.vec3, body_b: int, pb: wp.vec3, reach: float,
                   adj_ret: int):
        # the same zero adjoint as simkit's apart_grad: nothing flows back
        pass

    @wp.kernel
    def pair_contact(pairs: wp.array2d(dtype=wp.int32), body_q: transforms, body_qd: spatials, bodies: Bodies,
                     shapes: Shapes, body_f: spatials):
        i = wp.tid()
        a = pairs[i, 0]
        b = pairs[i, 1]
        reach = shape_bounding_radius(shapes.kind[a], shapes.params[a]) + shape_bounding_radius(shapes.kind[b],
                                                                                                shapes.params[b])
        if apart(body_q, shapes.body[a], wp.transform_get_translation(shapes.xform[a]), shapes.body[b],
                 wp.transform_get_translation(shapes.xform[b]), reach) == 1:
            return
        fa, fb = pair_wrenches(a, b, body_q, body_qd, bodies, shapes)
        body_a = shapes.body[a]
        body_b = shapes.body[b]
        if body_a >= 0:
            wp.atomic_add(body_f, body_a, fa)
        if body_b >= 0:
            wp.atomic_add(body_f, body_b, fb)

    @wp.kernel
    def integrate_bodies(body_q: transforms, body_qd: spatials, body_f: spatials, bodies: Bodies, gravity: wp.vec3,
                         dt: float, q_out: transforms, qd_out: spatials):
        i = wp.tid()
        X = body_q[i]
        qd = body_qd[i]
        w = top(qd)
        v = bottom(qd)
        com = bodies.com[i]
        x_com = wp.transform_point(X, com)
        r = wp.transform_get_rotation(X)
        R = wp.quat_to_matrix(r)
        w_step = w
        w_new = w
        v_new = v
        L = wp.vec3()
        if bodies.inv_mass[i] > 0.0:
            f = body_f[i]
            v_new = v + (bottom(f) * bodies.inv_mass[i] + gravity) * dt
            L = R @ (bodies.inertia[i] @ (wp.transpose(R) @ w)) + top(f) * dt
            w_step = R @ (bodies.inv_inertia[i] @ (wp.transpose(R) @ L))
        spin = wp.quat(w_step[0], w_step[1], w_step[2], 0.0) * r
        r_sum = r + spin * (0.5 * dt)
        r_new = r_sum / wp.sqrt(r_sum[0] * r_sum[0] + r_sum[1] * r_sum[1] + r_sum[2] * r_sum[2] + r_sum[3] * r_sum[3])
        if bodies.inv_mass[i] > 0.0:
            R_new = wp.quat_to_matrix(r_new)
            w_new = R_new @ (bodies.inv_inertia[i] @ (wp.transpose(R_new) @ L))
        x_new = x_com + v_new * dt
        q_out[i] = wp.transform(x_new - wp.quat_rotate(r_new, com), r_new)
        qd_out[i] = make_spatial(w_new, v_new)

    return {"Bodies": Bodies, "Shapes": Shapes, "clear": clear, "ground_contact": ground_contact,
            "pair_contact": pair_contact, "integrate_bodies": integrate_bodies, "top": top,
            "make_spatial": make_spatial, "point_velocity": point_velocity, "wrench_at": wrench_at,
            "world_inverse_inertia": world_inverse_inertia, "point_inverse_mass": point_inverse_mass}


@functools.cache
def warp_joint_kernels() -> dict:
    """The ``Joints`` struct and ``eval_joints``, simkit's float32 penalty joint kernel
    (``simkit/kernels/joints.py``) line by line: one thread per joint, the child's wrench
    ``atomic_add``-ed and the parent's ``atomic_sub``-ed into ``body_f``.

    Example::

        J = warp_joint_kernels()
        wp.launch(J["eval_joints"], joint_count, inputs=[q, qd, bodies, joints, target, target_vel, act, dt, f])
    """
    wp = warp_module()
    R = warp_rigid_kernels()
    Bodies, top, make_spatial = R["Bodies"], R["top"], R["make_spatial"]
    point_velocity, wrench_at = R["point_velocity"], R["wrench_at"]
    world_inverse_inertia, point_inverse_mass = R["world_inverse_inertia"], R["point_inverse_mass"]
    reals = wp.array(dtype=wp.float32)
    ints = wp.array(dtype=wp.int32)
    transforms = wp.array(dtype=wp.transform)
    spatials = wp.array(dtype=wp.spatial_vector)
    REVOLUTE, PRISMATIC, FIXED = JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_FIXED

    @wp.struct
    class Joints:
        """simkit's ``Joints`` struct (``simkit/kernels/structs.py``), field for field."""
        kind: ints
        parent: ints
        child: ints
        parent_xform: transforms
        child_xform: transforms
        axis: wp.array(dtype=wp.vec3)
        limit_lower: reals
        limit_upper: reals
        limit_ke: reals
        limit_kd: reals
        target_ke: reals
        target_kd: reals
        linear_ke: reals
        linear_kd: reals
        angular_ke: reals
        angular_kd: reals

    @wp.kernel
    def eval_joints(body_q: transforms, body_qd: spatials, bodies: Bodies, joints: Joints, target: reals,
                    target_vel: reals, act: reals, dt: wp.float32, body_f: spatials):
        j = wp.tid()
        kind = joints.kind[j]
        p = joints.parent[j]
        c = joints.child[j]
        X_wc = body_q[c]
        qd_c = body_qd[c]
        com_c = bodies.com[c]
        X_c = wp.transform_multiply(X_wc, joints.child_xform[j])
        X_p = joints.parent_xform[j]
        X_wp = X_p
        qd_p = qd_c * 0.0
        com_p = com_c * 0.0
        if p >= 0:
            X_wp = body_q[p]
            qd_p = body_qd[p]
            com_p = bodies.com[p]
            X_p = wp.transform_multiply(X_wp, X_p)
        x_c = wp.transform_get_translation(X_c)
        q_p = wp.transform_get_rotation(X_p)
        q_c = wp.transform_get_rotation(X_c)
        local_axis = joints.axis[j]
        a = wp.quat_rotate(q_p, local_axis)

        e = x_c - wp.transform_get_translation(X_p)
        v_rel = point_velocity(X_wc, qd_c, com_c, x_c) - point_velocity(X_wp, qd_p, com_p, x_c)
        w_rel = top(qd_c) - top(qd_p)
        q_rel = wp.quat_inverse(q_p) * q_c
        if q_rel[3] < 0.0:
            q_rel = -q_rel
        rel = wp.vec3(q_rel[0], q_rel[1], q_rel[2])

        zero = w_rel * 0.0
        theta = zero
        w_err = zero
        coord = wp.float32(0.0)
        rate = wp.float32(0.0)
        if kind == REVOLUTE:
            theta = wp.cross(a, wp.quat_rotate(q_c, local_axis))
            w_err = w_rel - a * wp.dot(a, w_rel)
            coord = 2.0 * wp.atan2(wp.dot(local_axis, rel), q_rel[3])
            rate = wp.dot(a, w_rel)
        elif kind == PRISMATIC:
            theta = wp.quat_rotate(q_p, rel) * 2.0
            w_err = w_rel
            coord = wp.dot(a, e)
            rate = wp.dot(a, v_rel)
            e = e - a * coord
            v_rel = v_rel - a * rate
        elif kind == FIXED:
            theta = wp.quat_rotate(q_p, rel) * 2.0
            w_err = w_rel

        f = -(e * joints.linear_ke[j] + v_rel * joints.linear_kd[j])
        tau = -(theta * joints.angular_ke[j] + w_err * joints.angular_kd[j])
        if kind == REVOLUTE or kind == PRISMATIC:
            u = joints.target_ke[j] * (target[j] - coord) + act[j]
            kd = joints.target_kd[j]
            lower = joints.limit_lower[j]
            upper = joints.limit_upper[j]
            if coord < lower:
                u = u + joints.limit_ke[j] * (lower - coord)
                kd = kd + joints.limit_kd[j]
            elif coord > upper:
                u = u + joints.limit_ke[j] * (upper - coord)
                kd = kd + joints.limit_kd[j]
            mobility = wp.float32(0.0)
            if kind == REVOLUTE:
                mobility = wp.dot(a, world_inverse_inertia(X_wc, bodies, c) @ a)
                if p >= 0:
                    mobility = mobility + wp.dot(a, world_inverse_inertia(X_wp, bodies, p) @ a)
            else:
                mobility = point_inverse_mass(X_wc, bodies, c, x_c, a) + point_inverse_mass(X_wp, bodies, p, x_c, a)
            u = u + (joints.target_kd[j] * target_vel[j] - kd * rate) / (1.0 + kd * dt * mobility)
            if kind == REVOLUTE:
                tau = tau + a * u
            else:
                f = f + a * u

        couple = make_spatial(tau, zero)
        wp.atomic_add(body_f, c, wrench_at(X_wc, com_c, x_c, f) + couple)
        if p >= 0:
            wp.atomic_sub(body_f, p, wrench_at(X_wp, com_p, x_c, f) + couple)

    return {"Joints": Joints, "eval_joints": eval_joints}



class WarpRigidScene:
    """A float32 simkit Model's bodies, shapes and joints copied into warp arrays on the CPU
    (with the model's zero control), and :meth:`step`, the port of ``SemiImplicitEuler.step``
    for a model with bodies and no particles.

    Example::

        scene = WarpRigidScene(model)
        a, b = scene.state(), scene.state()
        scene.step(a, b, 1e-4)
    """

    def __init__(self, model):
        if model.dtype is not sk.float32:
            raise ValueError(f"WarpRigidScene: only float32 models are ported, got {model.dtype!r}")
        if model.particle_count:
            raise ValueError("WarpRigidScene: particles have no warp port")
        wp = self.wp = warp_module()
        K = self.K = warp_rigid_kernels()
        self.model = model
        grad = bool(model.requires_grad)

        def typed(a, dtype, requires_grad=grad):
            return wp.array(a.numpy(), dtype=dtype, device=DEVICE, requires_grad=requires_grad)

        self.bodies = K["Bodies"]()
        for name in ("mass", "inv_mass"):
            setattr(self.bodies, name, typed(getattr(model.bodies, name), wp.float32))
        self.bodies.inertia = typed(model.bodies.inertia, wp.mat33)
        self.bodies.inv_inertia = typed(model.bodies.inv_inertia, wp.mat33)
        self.bodies.com = typed(model.bodies.com, wp.vec3)
        self.shapes = K["Shapes"]()
        self.shapes.kind = typed(model.shapes.kind, wp.int32, False)
        self.shapes.body = typed(model.shapes.body, wp.int32, False)
        self.shapes.xform = typed(model.shapes.xform, wp.transform, False)
        self.shapes.params = typed(model.shapes.params, wp.vec3, False)
        for name in ("ke", "kd", "kf", "mu", "time_constant", "damping_ratio"):
            setattr(self.shapes, name, typed(getattr(model.shapes, name), wp.float32))
        self.pairs = wp.array(collision_pairs(model).numpy(), dtype=wp.int32, device=DEVICE)
        self.gravity = wp.vec3(*np.asarray(model.gravity, dtype=np.float32).tolist())
        self.ground_normal = wp.vec3(*np.asarray(model.contact.ground_normal, dtype=np.float32).tolist())
        self.joints = None
        if model.joint_count:
            J = warp_joint_kernels()
            self.eval_joints = J["eval_joints"]
            self.joints = J["Joints"]()
            types = {"kind": wp.int32, "parent": wp.int32, "child": wp.int32, "parent_xform": wp.transform,
                     "child_xform": wp.transform, "axis": wp.vec3}
            reals = ("limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_ke", "target_kd", "linear_ke",
                     "linear_kd", "angular_ke", "angular_kd")
            for name in (*types, *reals):
                a = getattr(model.joints, name)
                setattr(self.joints, name, typed(a, types.get(name, wp.float32), a.requires_grad))
            control = model.control()
            self.joint_target = typed(control.joint_target, wp.float32, False)
            self.joint_target_vel = typed(control.joint_target_vel, wp.float32, False)
            self.joint_act = typed(control.joint_act, wp.float32, False)

    def state(self, requires_grad: bool = False) -> dict:
        """Fresh warp buffers ``q``, ``qd``, ``f`` at the model's initial body poses and twists."""
        wp, m = self.wp, self.model
        return {"q": wp.array(m.body_q.numpy(), dtype=wp.transform, device=DEVICE, requires_grad=requires_grad),
                "qd": wp.array(m.body_qd.numpy(), dtype=wp.spatial_vector, device=DEVICE,
                               requires_grad=requires_grad),
                "f": wp.zeros(m.body_count, dtype=wp.spatial_vector, device=DEVICE, requires_grad=requires_grad)}

    def step(self, s_in: dict, s_out: dict, dt: float) -> None:
        """Clear ``s_in``'s wrenches, ground and pair contact, joints, integrate into ``s_out``."""
        wp, K, m = self.wp, self.K, self.model
        q, qd, f = s_in["q"], s_in["qd"], s_in["f"]
        wp.launch(K["clear"], m.body_count, inputs=[f], device=DEVICE)
        if m.ground:
            wp.launch(K["ground_contact"], (m.shape_count, MAX_PLANE_POINTS),
                      inputs=[q, qd, self.bodies, self.shapes, self.ground_normal, f], device=DEVICE)
        if self.pairs.shape[0]:
            wp.launch(K["pair_contact"], self.pairs.shape[0], inputs=[self.pairs, q, qd, self.bodies, self.shapes, f],
                      device=DEVICE)
        if self.joints is not None:
            wp.launch(self.eval_joints, m.joint_count,
                      inputs=[q, qd, self.bodies, self.joints, self.joint_target, self.joint_target_vel, self.joint_act,
                              dt, f],
                      device=DEVICE)
        wp.launch(K["integrate_bodies"], m.body_count,
                  inputs=[q, qd, f, self.bodies, self.gravity, dt, s_out["q"], s_out["qd"]], device=DEVICE)


def warp_scene(model):
    """A WarpRigidScene with its kernels loaded, or a str saying why warp cannot run here."""
    return load_scene(WarpRigidScene, model, "rigid")


def warp_step_timer(scene, dt: float):
    """fn(n): n warp steps, ping-ponging two preallocated states, then a device synchronize."""
    wp = scene.wp
    a, b = scene.state(), scene.state()

    def run(n):
        nonlocal a, b
        for _ in range(n):
            scene.step(a, b, dt)
            a, b = b, a
        wp.synchronize_device(DEVICE)
    return run


def warp_rollout_timer(scene, dt: float, steps: int, seed: np.ndarray | None = None):
    """run() -> (forward seconds, backward seconds) of one taped warp rollout, its final body
    poses seeded with ``seed`` (a ``(body_count, 7)`` array; ones when None)."""
    wp = scene.wp
    states = [scene.state(requires_grad=True) for _ in range(steps + 1)]
    if seed is None:
        seed = np.ones((scene.model.body_count, 7), dtype=np.float32)
    seed = wp.array(seed, dtype=wp.transform, device=DEVICE)

    def run():
        tape = wp.Tape()
        t0 = time.perf_counter()
        with tape:
            for k in range(steps):
                scene.step(states[k], states[k + 1], dt)
        wp.synchronize_device(DEVICE)
        t1 = time.perf_counter()
        tape.backward(grads={states[-1]["q"]: seed})
        wp.synchronize_device(DEVICE)
        t2 = time.perf_counter()
        tape.zero()
        return t1 - t0, t2 - t1
    return run



def position_difference(model, scene, steps: int, dt: float) -> float:
    """Max abs difference (metres) of the body origins after ``steps`` simkit and warp steps
    of ``dt`` from the model's initial state; ``inf`` when either run is not finite.

    Example::

        err = position_difference(model, warp_scene(model), 1000, 1e-4)
    """
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps, dt, keep_states=False)[-1]
    x_sk = final.body_q.numpy()[:, :3].astype(np.float64)
    a, b = scene.state(), scene.state()
    for _ in range(steps):
        scene.step(a, b, dt)
        a, b = b, a
    scene.wp.synchronize_device(DEVICE)
    x_wp = a["q"].numpy()[:, :3].astype(np.float64)
    if not (np.isfinite(x_sk).all() and np.isfinite(x_wp).all()):
        return float("inf")
    return float(np.max(np.abs(x_sk - x_wp)))


def taped_gradients(model, scene, steps: int, dt: float, seed: np.ndarray, joint_params=()) -> tuple:
    """simkit's and warp's gradients of ``sum(seed * final body_q)`` after a ``steps``-step
    taped rollout of ``dt``, as two dicts of float64 arrays: ``body_q`` and ``body_qd`` (with
    respect to the initial state) and ``joints.NAME`` for each joint parameter array named in
    ``joint_params``. ``model`` and ``scene`` must be finalized with ``requires_grad=True``
    and have no gradient accumulated yet.

    Example::

        g_sk, g_wp = taped_gradients(model, warp_scene(model), 20, 1e-4, np.ones((n, 7), np.float32))
        relative_difference(g_sk["body_qd"], g_wp["body_qd"])
    """
    wp = scene.wp
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s0, steps, dt)
    tape.backward(grads={states[-1].body_q: seed})
    w_states = [scene.state(requires_grad=True) for _ in range(steps + 1)]
    w_tape = wp.Tape()
    with w_tape:
        for k in range(steps):
            scene.step(w_states[k], w_states[k + 1], dt)
    w_tape.backward(grads={w_states[-1]["q"]: wp.array(seed, dtype=wp.transform, device=DEVICE)})
    wp.synchronize_device(DEVICE)
    g_sk = {"body_q": s0.body_q.grad.numpy(), "body_qd": s0.body_qd.grad.numpy()}
    g_wp = {"body_q": w_states[0]["q"].grad.numpy(), "body_qd": w_states[0]["qd"].grad.numpy()}
    for name in joint_params:
        g_sk[f"joints.{name}"] = getattr(model.joints, name).grad.numpy()
        g_wp[f"joints.{name}"] = getattr(scene.joints, name).grad.numpy()
    as64 = (lambda g: {k: np.asarray(v, dtype=np.float64) for k, v in g.items()})
    return as64(g_sk), as64(g_wp)


def relative_difference(reference: np.ndarray, other: np.ndarray) -> float:
    """``max |reference - other|`` over ``max |reference|`` (``inf`` when the reference is all zero)."""
    scale = float(np.max(np.abs(reference)))
    if scale == 0.0:
        return float("inf")
    return float(np.max(np.abs(reference - other)) / scale)
