"""Rigid-body bench: per-step cost of 100 boxes falling on the ground (semi-implicit Euler),
forward and taped backward, next to the same step written as plain warp kernels.

Run from the repository root::

    python tools/bench_rigid.py            # the table (a few seconds once compiled)
    python tools/bench_rigid.py --quick    # fewer repetitions

The scene: a 10 x 10 grid of 1 kg boxes (half extent 5 cm, 25 cm apart), each tilted at
random and starting with its lowest corner 1 mm into the ground, so every box is in
contact and rocks onto a face during the equivalence run. One simkit step is clear
forces, ``ground_contact`` (shape x 8 corner threads), ``pair_contact`` (one thread per
candidate pair: the model's 9,900 ordered pairs, all rejected by the bounding-sphere
test, since the boxes never touch each other) and ``integrate_bodies``.
Forward: one step between two preallocated states. Backward: a ``ROLLOUT``-step rollout
on a tape (one state per step), seeded with ones on the final ``body_q``, divided by its
steps; its ratio is backward / taped forward of the same rollout.

warp-lang 1.19 has no ``warp.sim``, so the reference is the same step ported kernel by
kernel to warp (:func:`warp_rigid_kernels`: same float32 math, launch dimensions and
atomics, including the pair kernel with its broad phase), run on warp's CPU device
over the model's arrays. Before any warp timing is shown, ``EQUIV_STEPS`` steps of both
must give the same body positions within ``EQUIV_TOL``; otherwise the warp columns say
why they are missing. Ratio = warp_time / simkit_time (higher is better for simkit).

Example::

    rows, notes = rigid_rows(quick=True)
    for r in rows:
        print(r.metric, r.simkit, r.reference, r.ratio)
"""

import functools
import math
import sys
import time

import numpy as np

import simkit as sk
from simkit.kernels.shapes import BOX_CORNER_ROUNDING, MAX_PLANE_POINTS
from simkit.kernels.structs import SHAPE_BOX, SHAPE_CAPSULE

ROLLOUT = 20
DT = 1.0e-4
GRID = 10
HALF = 0.05
SPACING = 0.25
EQUIV_STEPS = 1000       # 0.1 s: every box lands on a face
EQUIV_TOL = 1.0e-4       # metres: more than float32 round-off means different physics
DEVICE = "cpu"


def boxes_model(requires_grad: bool = False):
    """The bench scene: GRID x GRID tilted 1 kg boxes, each with a corner 1 mm into the ground.

    Example::

        model = boxes_model()
        model.body_count       # 100
    """
    rng = np.random.default_rng(3)
    b = sk.sim.ModelBuilder()
    corners = np.array([[x, y, z] for x in (-HALF, HALF) for y in (-HALF, HALF) for z in (-HALF, HALF)])
    for i in range(GRID):
        for j in range(GRID):
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            angle = rng.uniform(0.1, 0.4)
            q = np.concatenate([axis * math.sin(angle / 2), [math.cos(angle / 2)]])
            lowest = min(sk.sim.geometry.quat_rotate(q, c)[1] for c in corners)
            pos = (i * SPACING, -lowest - 1e-3, j * SPACING)
            body = b.add_body(sk.transform(pos, tuple(q)))
            b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (HALF, HALF, HALF), body=body,
                            density=1.0 / (2 * HALF) ** 3)
    return b.finalize(requires_grad=requires_grad)


# -- simkit timers -------------------------------------------------------------------------

def step_timer(model):
    """fn(n): n simkit forward steps, ping-ponging two states (allocates nothing)."""
    integrator = sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()

    def run(n):
        nonlocal a, b
        for _ in range(n):
            integrator.step(model, a, b, None, DT)
            a, b = b, a
    return run


def rollout_timer(model):
    """run() -> (forward seconds, backward seconds) of one ROLLOUT-step simkit rollout on a tape."""
    integrator = sk.sim.SemiImplicitEuler()
    states = [model.state(requires_grad=True) for _ in range(ROLLOUT + 1)]
    seed = np.ones((model.body_count, 7), dtype=np.float32)

    def run():
        tape = sk.Tape()
        t0 = time.perf_counter()
        with tape:
            for k in range(ROLLOUT):
                integrator.step(model, states[k], states[k + 1], None, DT)
        t1 = time.perf_counter()
        tape.backward(grads={states[-1].body_q: seed})
        t2 = time.perf_counter()
        tape.zero()
        return t1 - t0, t2 - t1
    return run


# -- the warp port -------------------------------------------------------------------------

@functools.cache
def warp_module():
    """The initialised ``warp`` module, or a str saying why it cannot be used here."""
    try:
        from quiet import quiet
        with quiet():
            import warp as wp
            wp.config.quiet = True
            wp.init()
    except Exception as e:  # noqa: BLE001 - any failure means "no warp here"
        return f"import warp failed: {type(e).__name__}: {e}"
    return wp


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

    @wp.func
    def penalty_force(n: wp.vec3, depth: float, v: wp.vec3, ke: float, kd: float, kf: float, mu: float):
        vn = wp.dot(n, v)
        fn = wp.max(-ke * depth - kd * vn, 0.0)
        vt = v - n * vn
        speed = wp.length(vt)
        ft = vt * 0.0
        if speed > 0.0:
            ft = vt * (-wp.min(kf * speed, mu * fn) / speed)
        return n * fn + ft

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
        dist = wp.length(p) - size[0]
        n = wp.normalize(p)
        if kind == BOX:
            dist, n = box_distance(p, size)
        elif kind == CAPSULE:
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
            fc = penalty_force(n, depth, v, shapes.ke[s], shapes.kd[s], shapes.kf[s], shapes.mu[s])
            wp.atomic_add(body_f, b, wrench_at(Xb, com, c, fc))

    @wp.func
    def point_wrenches(k: int, kind_a: int, size_a: wp.vec3, Xa: wp.transform, toward: wp.vec3, kind_b: int,
                       size_b: wp.vec3, Xb: wp.transform, Xb_inv: wp.transform, body_a: int, body_b: int,
                       body_q: transforms, body_qd: spatials, bodies: Bodies, ke: float, kd: float, kf: float,
                       mu: float):
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
            if body_a >= 0:
                v = point_velocity(body_q[body_a], body_qd[body_a], bodies.com[body_a], c)
            if body_b >= 0:
                v = v - point_velocity(body_q[body_b], body_qd[body_b], bodies.com[body_b], c)
            fc = penalty_force(n, depth, v, ke, kd, kf, mu)
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
        mu = 0.5 * (shapes.mu[a] + shapes.mu[b])
        count = shape_point_count(kind_a)
        fa = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        fb = fa
        for k in range(8):
            if k < count:
                wa, wb = point_wrenches(k, kind_a, size_a, Xa, toward, kind_b, size_b, Xb, Xb_inv, body_a, body_b,
                                        body_q, body_qd, bodies, ke, kd, kf, mu)
                fa = fa + wa
                fb = fb + wb
        for k in range(8, 20):
            if k < count:
                wa, wb = point_wrenches(k, kind_a, size_a, Xa, toward, kind_b, size_b, Xb, Xb_inv, body_a, body_b,
                                        body_q, body_qd, bodies, ke, kd, kf, mu)
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
        L = w * 0.0
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
            "pair_contact": pair_contact, "integrate_bodies": integrate_bodies}


class WarpRigidScene:
    """A float32 simkit Model's bodies and shapes copied into warp arrays on the CPU, and
    :meth:`step`, the port of ``SemiImplicitEuler.step`` for a model with only bodies.

    Example::

        scene = WarpRigidScene(boxes_model())
        a, b = scene.state(), scene.state()
        scene.step(a, b, 1e-4)
    """

    def __init__(self, model):
        if model.dtype is not sk.float32:
            raise ValueError(f"WarpRigidScene: only float32 models are ported, got {model.dtype!r}")
        if model.particle_count or model.joint_count:
            raise ValueError("WarpRigidScene: particles and joints have no warp port")
        from simkit.kernels.shapes import collision_pairs
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
        for name in ("ke", "kd", "kf", "mu"):
            setattr(self.shapes, name, typed(getattr(model.shapes, name), wp.float32))
        self.pairs = wp.array(collision_pairs(model).numpy(), dtype=wp.int32, device=DEVICE)
        self.gravity = wp.vec3(*np.asarray(model.gravity, dtype=np.float32).tolist())
        self.ground_normal = wp.vec3(*np.asarray(model.contact.ground_normal, dtype=np.float32).tolist())

    def state(self, requires_grad: bool = False) -> dict:
        """Fresh warp buffers ``q``, ``qd``, ``f`` at the model's initial body poses and twists."""
        wp, m = self.wp, self.model
        return {"q": wp.array(m.body_q.numpy(), dtype=wp.transform, device=DEVICE, requires_grad=requires_grad),
                "qd": wp.array(m.body_qd.numpy(), dtype=wp.spatial_vector, device=DEVICE,
                               requires_grad=requires_grad),
                "f": wp.zeros(m.body_count, dtype=wp.spatial_vector, device=DEVICE, requires_grad=requires_grad)}

    def step(self, s_in: dict, s_out: dict, dt: float) -> None:
        """Clear ``s_in``'s wrenches, ground and pair contact, integrate into ``s_out``."""
        wp, K, m = self.wp, self.K, self.model
        q, qd, f = s_in["q"], s_in["qd"], s_in["f"]
        wp.launch(K["clear"], m.body_count, inputs=[f], device=DEVICE)
        if m.ground:
            wp.launch(K["ground_contact"], (m.shape_count, MAX_PLANE_POINTS),
                      inputs=[q, qd, self.bodies, self.shapes, self.ground_normal, f], device=DEVICE)
        if self.pairs.shape[0]:
            wp.launch(K["pair_contact"], self.pairs.shape[0], inputs=[self.pairs, q, qd, self.bodies, self.shapes, f],
                      device=DEVICE)
        wp.launch(K["integrate_bodies"], m.body_count,
                  inputs=[q, qd, f, self.bodies, self.gravity, dt, s_out["q"], s_out["qd"]], device=DEVICE)


def warp_scene(model):
    """A WarpRigidScene with its kernels loaded, or a str saying why warp cannot run here."""
    wp = warp_module()
    if isinstance(wp, str):
        return wp
    try:
        from quiet import quiet
        with quiet():
            scene = WarpRigidScene(model)
            a, b = scene.state(), scene.state()
            scene.step(a, b, 1e-6)  # compiles the module, or loads it from warp's kernel cache
            wp.synchronize_device(DEVICE)
    except Exception as e:  # noqa: BLE001 - a warp that cannot build CPU kernels is "no warp here"
        return f"warp could not build or launch the rigid kernels: {type(e).__name__}: {e}"
    return scene


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


def warp_rollout_timer(scene, dt: float, steps: int):
    """run() -> (forward seconds, backward seconds) of one taped warp rollout seeded with ones
    on the final body poses."""
    wp = scene.wp
    states = [scene.state(requires_grad=True) for _ in range(steps + 1)]
    seed = wp.array(np.ones((scene.model.body_count, 7), dtype=np.float32), dtype=wp.transform, device=DEVICE)

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


def check_equivalence(model, scene, steps: int = EQUIV_STEPS) -> float:
    """Max abs difference (metres) of the body origins after ``steps`` simkit and warp steps
    from the model's initial state; ``inf`` when either run is not finite.

    Example::

        err = check_equivalence(model, warp_scene(model))
    """
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps, DT, keep_states=False)[-1]
    x_sk = final.body_q.numpy()[:, :3].astype(np.float64)
    a, b = scene.state(), scene.state()
    for _ in range(steps):
        scene.step(a, b, DT)
        a, b = b, a
    scene.wp.synchronize_device(DEVICE)
    x_wp = a["q"].numpy()[:, :3].astype(np.float64)
    if not (np.isfinite(x_sk).all() and np.isfinite(x_wp).all()):
        return float("inf")
    return float(np.max(np.abs(x_sk - x_wp)))


def gradient_difference(model, scene, steps: int = ROLLOUT) -> float:
    """Largest difference between simkit's and warp's gradients of ``sum(final body_q)``
    w.r.t. the initial ``body_qd`` after a ``steps``-step taped rollout, relative to the
    largest entry (``model`` and ``scene`` finalized with ``requires_grad=True``).

    Example::

        rel = gradient_difference(boxes_model(True), warp_scene(boxes_model(True)))
    """
    wp = scene.wp
    seed = np.ones((model.body_count, 7), dtype=np.float32)
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s0, steps, DT)
    tape.backward(grads={states[-1].body_q: seed})
    w_states = [scene.state(requires_grad=True) for _ in range(steps + 1)]
    w_tape = wp.Tape()
    with w_tape:
        for k in range(steps):
            scene.step(w_states[k], w_states[k + 1], DT)
    w_tape.backward(grads={w_states[-1]["q"]: wp.array(seed, dtype=wp.transform, device=DEVICE)})
    wp.synchronize_device(DEVICE)
    g_sk = s0.body_qd.grad.numpy().astype(np.float64)
    g_wp = w_states[0]["qd"].grad.numpy().astype(np.float64)
    return float(np.max(np.abs(g_sk - g_wp)) / np.max(np.abs(g_sk)))


def settled_fraction(model, steps: int = EQUIV_STEPS) -> float:
    """Fraction of boxes lying on a face (within 2 degrees) after ``steps`` simkit steps."""
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps, DT, keep_states=False)[-1]
    flat = 0
    for q in final.body_q.numpy()[:, 3:].astype(np.float64):
        up = sk.sim.geometry.quat_to_matrix(q).T @ np.array([0.0, 1.0, 0.0])
        flat += math.degrees(math.acos(min(1.0, np.abs(up).max()))) < 2.0
    return flat / model.body_count


# -- table ---------------------------------------------------------------------------------

def _helpers():
    """Row, fmt and interleaved from tools/bench.py (imported here, not at module level, so
    that bench.py can import this file)."""
    import bench
    return bench.Row, bench.fmt, bench.interleaved


def rigid_rows(quick: bool = False, helpers=None) -> tuple:
    """Measure the rigid scene and return ``(rows, notes)``: bench.py ``Row``s (metric,
    simkit, reference, ratio) and a list of note strings.

    Example::

        rows, notes = rigid_rows(quick=True)
    """
    Row, fmt, interleaved = helpers or _helpers()
    reps = (lambda full, fast: fast if quick else full)
    rows, notes = [], []
    fwd_model, grad_model = boxes_model(), boxes_model(requires_grad=True)
    from simkit.kernels.shapes import collision_pairs
    n_pairs = collision_pairs(fwd_model).shape[0]

    scene = warp_scene(fwd_model)
    warp = None
    if isinstance(scene, str):
        notes.append(f"rigid: warp columns n/a: {scene}")
    else:
        err = check_equivalence(fwd_model, scene)
        if not err <= EQUIV_TOL:
            notes.append(f"rigid: warp columns n/a: body origins differ by {err:.3g} m after {EQUIV_STEPS} steps "
                         f"(> {EQUIV_TOL:g} m): not the same physics")
        else:
            notes.append(f"rigid: simkit and warp agree, max |x_simkit - x_warp| = {err:.2g} m after {EQUIV_STEPS} "
                         f"steps ({EQUIV_STEPS * DT:g} s, {100 * settled_fraction(fwd_model):.0f}% of the boxes "
                         "have landed on a face)")
            grad_scene = warp_scene(grad_model)
            notes.append(f"rigid: gradients of sum(final body_q) w.r.t. the initial body_qd over a {ROLLOUT}-step "
                         f"rollout differ by {gradient_difference(grad_model, grad_scene):.2g} (relative to the "
                         "largest entry; for information: positions gate the comparison)")
            warp = {"step": warp_step_timer(scene, DT), "rollout": warp_rollout_timer(grad_scene, DT, ROLLOUT)}

    def vs_warp(metric, sk_s, wp_s):
        return Row(metric, f"{fmt(sk_s * 1e3)} ms", f"{fmt(wp_s * 1e3)} ms (warp)", f"{wp_s / sk_s:.2f}x", "(info)")

    run = step_timer(fwd_model)
    run(2)
    contenders = {"step": run} if warp is None else {"step": run, "warp": warp["step"]}
    st = interleaved(contenders, rounds=reps(7, 2), ops=reps(20, 5))
    f = st["step"].median
    rows.append(Row("100 boxes on the ground: forward step [ms]", f"{fmt(f * 1e3)} ms",
                    f"{fmt(st['warp'].median * 1e3)} ms (warp)" if warp else "n/a (warp)",
                    f"{st['warp'].median / f:.2f}x" if warp else "-", "(info)"))

    roll = rollout_timer(grad_model)
    roll()
    if warp is not None:
        warp["rollout"]()
    times, w_times = [], []
    for _ in range(reps(5, 1)):  # alternate, so drift on a shared machine hits both
        times.append(roll())
        if warp is not None:
            w_times.append(warp["rollout"]())
    tf = float(np.median([t[0] for t in times])) / ROLLOUT
    tb = float(np.median([t[1] for t in times])) / ROLLOUT
    rows.append(Row("100 boxes: taped forward per step [ms]", f"{fmt(tf * 1e3)} ms"))
    rows.append(Row("100 boxes: backward per step [ms]", f"{fmt(tb * 1e3)} ms", "-",
                    f"{tb / tf:.2f}x of its taped forward"))
    if warp is not None:
        wb = float(np.median([t[1] for t in w_times])) / ROLLOUT
        rows.append(vs_warp("100 boxes vs warp: backward per step [ms]", tb, wb))
    else:
        rows.append(Row("100 boxes vs warp: backward per step [ms]", f"{fmt(tb * 1e3)} ms", "n/a (warp)"))
    notes.append(f"rigid: one step = clear + ground_contact ({fwd_model.shape_count} x 8 threads) + pair_contact "
                 f"({n_pairs} candidate pairs, one thread each; the boxes never touch: all broad-phase rejects) + "
                 f"integrate_bodies; DT = {DT:g} s; backward = one {ROLLOUT}-step taped rollout / {ROLLOUT}.")
    if warp is not None:
        notes.append("rigid vs warp: warp 1.19 has no warp.sim; tools/bench_rigid.py ports the same four kernels to "
                     "warp (same float32 math, launch dims, atomics) over the model's arrays; ratio = warp_time / "
                     "simkit_time (higher is better). warp's CPU device runs each grid on the calling thread, "
                     f"simkit on {_sk_threads()} thread(s).")
    return rows, notes


def _sk_threads() -> int:
    try:
        from simkit.core import compiler
        return int(compiler.runtime().sk_get_threads())
    except Exception:  # noqa: BLE001 - informational only
        return -1


def add_sections(section, Result, Row, fmt, interleaved) -> None:
    """Register a ``rigid`` section with bench.py's registry (``bench_sim.add_sections`` style)."""

    @section("rigid", "(f) rigid bodies: 100 boxes on the ground, semi-implicit, forward and backward")
    def bench_rigid(ctx) -> Result:
        rows, notes = rigid_rows(ctx.quick, (Row, fmt, interleaved))
        return Result(rows=rows, notes=notes)


def main(argv=None) -> int:
    import bench
    quick = "--quick" in (sys.argv[1:] if argv is None else argv)
    print(f"simkit rigid bench{' (--quick)' if quick else ''}: {bench.machine_line()}")
    rows, notes = rigid_rows(quick)
    bench.print_table([("[rigid] 100 boxes on the ground, semi-implicit Euler, float32, CPU", rows)])
    print("notes:")
    for n in notes:
        print(f"  - {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
