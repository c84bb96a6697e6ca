"""The reference side of the ``sim`` bench: simkit's semi-implicit Euler step written
as warp-lang kernels, run on warp's CPU device over the very arrays of a simkit Model.

warp-lang 1.19 ships no ``warp.sim``, so a speed comparison needs the same physics in
warp. Every kernel below is a line-by-line port of simkit's own (``simkit/kernels``:
particles, springs, contact.ground_contact, triangles, bending, tets): same float32
math in the same order, same launch dimensions, same atomic accumulation into the
force array, and parameter structs shaped like simkit's. One step is what
``SemiImplicitEuler.step`` does: clear the forces, the force kernels in the order of
``simkit.sim.forces.eval_forces``, then the integration.

Only what the bench scenes use is ported: springs, membranes, bending, tetrahedra and
ground contact. A model with static shapes, particle-particle contact or a non-float32
dtype is refused (``ValueError``) rather than compared against a partial step.

Example::

    fn = warp_step_timer(cloth_model(), 1e-3)      # or a str: why warp cannot run here
    err = check_equivalence(cloth_model(), 1e-3)   # max |x_simkit - x_warp| after 10 steps
    fn(100)                                        # 100 warp steps
"""

import functools
import time

import numpy as np

import simkit as sk
from quiet import quiet as _quiet

DEVICE = "cpu"


@functools.cache
def warp_module():
    """The initialised ``warp`` module, or a str saying why it cannot be used here."""
    try:
        with _quiet():
            import warp as wp
            wp.config.quiet = True
            wp.init()
    except Exception as e:  # noqa: BLE001 - any failure means "no warp here"
        return f"import warp failed: {type(e).__name__}: {e}"
    return wp


@functools.cache
def _kernels():
    """Warp structs and kernels mirroring simkit's float32 physics kernels (built once)."""
    wp = warp_module()
    vec3s = wp.array(dtype=wp.vec3)
    reals = wp.array(dtype=wp.float32)
    index2d = wp.array2d(dtype=wp.int32)

    # Structs with the fields of simkit.kernels.structs, so a launch passes one packed
    # argument per parameter group on both sides.
    @wp.struct
    class Particles:
        mass: reals
        inv_mass: reals
        radius: reals

    @wp.struct
    class Springs:
        indices: index2d
        rest_length: reals
        ke: reals
        kd: reals

    @wp.struct
    class Triangles:
        indices: index2d
        pose: wp.array(dtype=wp.mat22)
        area: reals
        k_mu: reals
        k_lambda: reals
        k_damp: reals

    @wp.struct
    class Edges:
        indices: index2d
        rest_angle: reals
        ke: reals
        kd: reals

    @wp.struct
    class Tets:
        indices: index2d
        pose: wp.array(dtype=wp.mat33)
        volume: reals
        k_mu: reals
        k_lambda: reals
        k_damp: reals

    @wp.struct
    class Contact:
        ke: reals
        kd: reals
        kf: reals
        mu: reals
        time_constant: reals
        damping_ratio: reals
        ground: wp.int32
        ground_normal: wp.vec3

    @wp.kernel
    def integrate_particles(q: vec3s, qd: vec3s, f: vec3s, particles: Particles, gravity: wp.vec3, dt: float,
                            q_out: vec3s, qd_out: vec3s):
        i = wp.tid()
        w = particles.inv_mass[i]
        a = f[i] * w
        if w > 0.0:
            a = a + gravity
        v1 = qd[i] + a * dt
        qd_out[i] = v1
        q_out[i] = q[i] + v1 * dt

    @wp.kernel
    def eval_springs(q: vec3s, qd: vec3s, springs: Springs, activation: reals, f: vec3s):
        s = wp.tid()
        i = springs.indices[s, 0]
        j = springs.indices[s, 1]
        d = q[i] - q[j]
        length = wp.length(d)
        direction = d / length
        rest = springs.rest_length[s] * (1.0 + activation[s])
        stretch_rate = wp.dot(direction, qd[i] - qd[j])
        fs = direction * (springs.ke[s] * (length - rest) + springs.kd[s] * stretch_rate)
        wp.atomic_sub(f, i, fs)
        wp.atomic_add(f, j, fs)

    @wp.func
    def penalty_force(n: wp.vec3, depth: float, v: wp.vec3, ke: float, kd: float, kf: float, mu: float):
        vn = wp.dot(n, v)
        fn = wp.max(-ke * depth - kd * vn, 0.0)
        vt = v - n * vn
        speed = wp.length(vt)
        ft = wp.vec3()
        if speed > 0.0:
            ft = vt * (-wp.min(kf * speed, mu * fn) / speed)
        return n * fn + ft

    @wp.func
    def scaled_penalty_force(n: wp.vec3, depth: float, v: wp.vec3, inv_mass: float, ke: float, kd: float, kf: float,
                             time_constant: float, damping_ratio: float, mu: float):
        k = ke
        c = kd
        f = kf
        if time_constant > 0.0 and inv_mass > 0.0:
            rate = 1.0 / time_constant
            m = 1.0 / inv_mass
            k = k + m * rate * rate
            c = c + 2.0 * damping_ratio * m * rate
            f = f + m * rate
        return penalty_force(n, depth, v, k, c, f, mu)

    @wp.kernel
    def ground_contact(q: vec3s, qd: vec3s, particles: Particles, contact: Contact, f: vec3s):
        i = wp.tid()
        n = contact.ground_normal
        if wp.dot(n, q[i]) < particles.radius[i]:
            depth = wp.dot(n, q[i]) - particles.radius[i]
            fc = scaled_penalty_force(n, depth, qd[i], particles.inv_mass[i], contact.ke[0], contact.kd[0],
                                      contact.kf[0], contact.time_constant[0], contact.damping_ratio[0],
                                      contact.mu[0])
            wp.atomic_add(f, i, fc)

    @wp.kernel
    def eval_triangles(q: vec3s, qd: vec3s, tris: Triangles, f: vec3s):
        t = wp.tid()
        i = tris.indices[t, 0]
        j = tris.indices[t, 1]
        k = tris.indices[t, 2]
        X = tris.pose[t]
        x1 = q[j] - q[i]
        x2 = q[k] - q[i]
        v1 = qd[j] - qd[i]
        v2 = qd[k] - qd[i]
        c0 = x1 * X[0, 0] + x2 * X[1, 0]
        c1 = x1 * X[0, 1] + x2 * X[1, 1]
        d0 = v1 * X[0, 0] + v2 * X[1, 0]
        d1 = v1 * X[0, 1] + v2 * X[1, 1]
        e00 = 0.5 * (wp.dot(c0, c0) - 1.0)
        e11 = 0.5 * (wp.dot(c1, c1) - 1.0)
        e01 = 0.5 * wp.dot(c0, c1)
        r00 = wp.dot(c0, d0)
        r11 = wp.dot(c1, d1)
        r01 = 0.5 * (wp.dot(c0, d1) + wp.dot(c1, d0))
        mu = tris.k_mu[t]
        lam = tris.k_lambda[t] * (e00 + e11)
        damp = tris.k_damp[t]
        s00 = 2.0 * mu * e00 + lam + damp * r00
        s11 = 2.0 * mu * e11 + lam + damp * r11
        s01 = 2.0 * mu * e01 + damp * r01
        p0 = c0 * s00 + c1 * s01
        p1 = c0 * s01 + c1 * s11
        a = tris.area[t]
        fj = (p0 * X[0, 0] + p1 * X[0, 1]) * (-a)
        fk = (p0 * X[1, 0] + p1 * X[1, 1]) * (-a)
        wp.atomic_add(f, i, -(fj + fk))
        wp.atomic_add(f, j, fj)
        wp.atomic_add(f, k, fk)

    @wp.func
    def hinge_angle_gradient(o0: wp.vec3, o1: wp.vec3, v0: wp.vec3, v1: wp.vec3):
        e = v1 - v0
        n0 = wp.cross(v0 - o0, v1 - o0)
        n1 = wp.cross(v1 - o1, v0 - o1)
        ee = wp.dot(e, e)
        a0 = wp.dot(n0, n0)
        a1 = wp.dot(n1, n1)
        theta = float(0.0)
        g0 = wp.vec3()
        g1 = wp.vec3()
        gv0 = wp.vec3()
        gv1 = wp.vec3()
        if ee > 0.0 and a0 > 0.0 and a1 > 0.0:
            el = wp.sqrt(ee)
            theta = wp.atan2(wp.dot(wp.cross(n0, n1), e), el * wp.dot(n0, n1))
            g0 = n0 * (-el / a0)
            g1 = n1 * (-el / a1)
            s0 = wp.dot(o0 - v0, e) / ee
            s1 = wp.dot(o1 - v0, e) / ee
            gv0 = g0 * (s0 - 1.0) + g1 * (s1 - 1.0)
            gv1 = g0 * (-s0) - g1 * s1
        return theta, g0, g1, gv0, gv1

    @wp.kernel
    def eval_bending(q: vec3s, qd: vec3s, edges: Edges, f: vec3s):
        h = wp.tid()
        i0 = edges.indices[h, 0]
        i1 = edges.indices[h, 1]
        j0 = edges.indices[h, 2]
        j1 = edges.indices[h, 3]
        theta, g0, g1, gv0, gv1 = hinge_angle_gradient(q[i0], q[i1], q[j0], q[j1])
        rate = wp.dot(g0, qd[i0]) + wp.dot(g1, qd[i1]) + wp.dot(gv0, qd[j0]) + wp.dot(gv1, qd[j1])
        torque = edges.ke[h] * (theta - edges.rest_angle[h]) + edges.kd[h] * rate
        wp.atomic_add(f, i0, g0 * (-torque))
        wp.atomic_add(f, i1, g1 * (-torque))
        wp.atomic_add(f, j0, gv0 * (-torque))
        wp.atomic_add(f, j1, gv1 * (-torque))

    @wp.kernel
    def eval_tets(q: vec3s, qd: vec3s, tets: Tets, f: vec3s):
        # simkit's mat33(a, b, c) takes rows; matrix_from_rows says so explicitly here.
        t = wp.tid()
        i = tets.indices[t, 0]
        j = tets.indices[t, 1]
        k = tets.indices[t, 2]
        l = tets.indices[t, 3]  # noqa: E741 - the same name as simkit's kernel
        x0 = q[i]
        v0 = qd[i]
        pose = tets.pose[t]
        pose_t = wp.transpose(pose)
        FT = pose_t @ wp.matrix_from_rows(q[j] - x0, q[k] - x0, q[l] - x0)
        dFT = pose_t @ wp.matrix_from_rows(qd[j] - v0, qd[k] - v0, qd[l] - v0)
        c0 = FT[0]
        c1 = FT[1]
        c2 = FT[2]
        cofT = wp.matrix_from_rows(wp.cross(c1, c2), wp.cross(c2, c0), wp.cross(c0, c1))
        J = wp.dot(c0, cofT[0])
        mu = tets.k_mu[t]
        lam = tets.k_lambda[t] + mu
        A = FT @ wp.transpose(dFT)
        strain_rate = 0.5 * (A + wp.transpose(A))
        PT = mu * FT + (lam * (J - 1.0) - mu) * cofT + tets.k_damp[t] * (strain_rate @ FT)
        HT = (-tets.volume[t]) * (pose @ PT)
        f1 = HT[0]
        f2 = HT[1]
        f3 = HT[2]
        wp.atomic_sub(f, i, f1 + f2 + f3)
        wp.atomic_add(f, j, f1)
        wp.atomic_add(f, k, f2)
        wp.atomic_add(f, l, f3)

    return {"Particles": Particles, "Springs": Springs, "Triangles": Triangles, "Edges": Edges, "Tets": Tets,
            "Contact": Contact, "integrate_particles": integrate_particles, "eval_springs": eval_springs,
            "ground_contact": ground_contact, "eval_triangles": eval_triangles, "eval_bending": eval_bending,
            "eval_tets": eval_tets, "penalty_force": penalty_force, "scaled_penalty_force": scaled_penalty_force}


class WarpScene:
    """A simkit Model's parameters copied into warp arrays and structs on the CPU.

    Material arrays carry gradients when the simkit model does (``finalize(requires_grad=True)``),
    so a taped warp rollout accumulates the same parameter gradients as simkit's.
    """

    def __init__(self, model):
        if model.dtype is not sk.float32:
            raise ValueError(f"WarpScene: only float32 models are ported, got {model.dtype!r}")
        if model.shape_count or model.particle_contact:
            raise ValueError("WarpScene: static shapes and particle-particle contact have no warp port")
        wp = warp_module()
        K = _kernels()
        self.wp, self.K, self.model = wp, K, model
        grad = bool(model.requires_grad)

        def reals(a):
            return wp.array(a.numpy().astype(np.float32), dtype=wp.float32, device=DEVICE, requires_grad=grad)

        def typed(a, dtype, requires_grad=grad):
            return wp.array(a.numpy(), dtype=dtype, device=DEVICE, requires_grad=requires_grad)

        def index(a):
            return wp.array(a.numpy().astype(np.int32), dtype=wp.int32, device=DEVICE)

        m = model
        self.particles = K["Particles"]()
        self.particles.mass = reals(m.particles.mass)
        self.particles.inv_mass = reals(m.particles.inv_mass)
        self.particles.radius = reals(m.particles.radius)

        self.springs = K["Springs"]()
        self.springs.indices = index(m.springs.indices)
        for name in ("rest_length", "ke", "kd"):
            setattr(self.springs, name, reals(getattr(m.springs, name)))
        # simkit's step with control=None reads the model's zero control: all activations 0.
        self.activation = wp.zeros(m.spring_count, dtype=wp.float32, device=DEVICE)

        self.tris = K["Triangles"]()
        self.tris.indices = index(m.triangles.indices)
        self.tris.pose = typed(m.triangles.pose, wp.mat22)
        for name in ("area", "k_mu", "k_lambda", "k_damp"):
            setattr(self.tris, name, reals(getattr(m.triangles, name)))

        self.edges = K["Edges"]()
        self.edges.indices = index(m.edges.indices)
        for name in ("rest_angle", "ke", "kd"):
            setattr(self.edges, name, reals(getattr(m.edges, name)))

        self.tets = K["Tets"]()
        self.tets.indices = index(m.tets.indices)
        self.tets.pose = typed(m.tets.pose, wp.mat33)
        for name in ("volume", "k_mu", "k_lambda", "k_damp"):
            setattr(self.tets, name, reals(getattr(m.tets, name)))

        self.contact = K["Contact"]()
        for name in ("ke", "kd", "kf", "mu", "time_constant", "damping_ratio"):
            setattr(self.contact, name, reals(getattr(m.contact, name)))
        self.contact.ground = int(m.contact.ground)
        self.contact.ground_normal = wp.vec3(*np.asarray(m.contact.ground_normal, dtype=np.float32).tolist())
        self.gravity = wp.vec3(*np.asarray(model.gravity, dtype=np.float32).tolist())
        self.q0 = m.particle_q.numpy().astype(np.float32)
        self.qd0 = m.particle_qd.numpy().astype(np.float32)

    def state(self, requires_grad: bool = False) -> dict:
        """Fresh warp buffers ``q``, ``qd``, ``f`` at the model's initial positions and velocities."""
        wp = self.wp
        return {"q": wp.array(self.q0, dtype=wp.vec3, device=DEVICE, requires_grad=requires_grad),
                "qd": wp.array(self.qd0, dtype=wp.vec3, device=DEVICE, requires_grad=requires_grad),
                "f": wp.zeros(len(self.q0), dtype=wp.vec3, device=DEVICE, requires_grad=requires_grad)}

    def step(self, s_in: dict, s_out: dict, dt: float) -> None:
        """One ``SemiImplicitEuler.step``: clear ``s_in``'s forces, accumulate every force of
        the model in ``eval_forces`` order, integrate into ``s_out``."""
        wp, K, m = self.wp, self.K, self.model
        q, qd, f = s_in["q"], s_in["qd"], s_in["f"]
        f.zero_()
        if m.spring_count:
            wp.launch(K["eval_springs"], m.spring_count, inputs=[q, qd, self.springs, self.activation, f],
                      device=DEVICE)
        if m.tri_count:
            wp.launch(K["eval_triangles"], m.tri_count, inputs=[q, qd, self.tris, f], device=DEVICE)
        if m.edge_count:
            wp.launch(K["eval_bending"], m.edge_count, inputs=[q, qd, self.edges, f], device=DEVICE)
        if m.tet_count:
            wp.launch(K["eval_tets"], m.tet_count, inputs=[q, qd, self.tets, f], device=DEVICE)
        if m.ground:
            wp.launch(K["ground_contact"], m.particle_count, inputs=[q, qd, self.particles, self.contact, f],
                      device=DEVICE)
        wp.launch(K["integrate_particles"], m.particle_count,
                  inputs=[q, qd, f, self.particles, self.gravity, dt, s_out["q"], s_out["qd"]], device=DEVICE)


def load_scene(cls, model, what: str):
    """``cls(model)`` (a warp port of ``model``) with its kernels built by one tiny step, or a
    str saying why warp cannot run here; ``what`` names the kernels in that message."""
    wp = warp_module()
    if isinstance(wp, str):
        return wp
    try:
        with _quiet():
            scene = cls(model)
            a, b = scene.state(), scene.state()
            scene.step(a, b, 1e-6)  # compiles the module, or loads it from warp's kernel cache
            wp.synchronize_device(DEVICE)
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 - a warp that cannot build CPU kernels is "no warp here"
        return f"warp could not build or launch the {what} kernels: {type(e).__name__}: {e}"
    return scene


def _scene(model):
    """A WarpScene of ``model`` with its kernels loaded, or a str saying why warp cannot run."""
    return load_scene(WarpScene, model, "sim")


def warp_step_timer(model, dt: float):
    """``fn(n)``: ``n`` warp steps of ``model`` (a float32 simkit Model) with time step ``dt``,
    ping-ponging two preallocated warp states and ending with a device synchronize; or a
    str explaining why warp is unavailable.

    Example::

        fn = warp_step_timer(cloth_model(), 1e-3)
        if not isinstance(fn, str):
            fn(20)
    """
    scene = _scene(model)
    if isinstance(scene, str):
        return scene
    wp = scene.wp
    a, b = scene.state(), scene.state()

    def run(n):
        nonlocal a, b
        for _ in range(n):
            scene.step(a, b, dt)
            a, b = b, a
        wp.synchronize_device(DEVICE)
    return run


def check_equivalence(model, dt: float, steps: int = 10) -> float:
    """Max abs difference (metres) between the final particle positions of ``steps``
    simkit ``SemiImplicitEuler`` steps and the same number of warp steps, both from the
    model's initial state; ``inf`` when either run produced a non-finite position. Raises
    RuntimeError when warp is unavailable.

    Example::

        err = check_equivalence(soft_model(), 1e-3)   # float32 round-off, ~1e-7 m
    """
    scene = _scene(model)
    if isinstance(scene, str):
        raise RuntimeError(scene)
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps, dt, keep_states=False)[-1]
    x_sk = final.particle_q.numpy()
    a, b = scene.state(), scene.state()
    for _ in range(steps):
        scene.step(a, b, dt)
        a, b = b, a
    scene.wp.synchronize_device(DEVICE)
    x_wp = a["q"].numpy()
    if not (np.isfinite(x_sk).all() and np.isfinite(x_wp).all()):
        return float("inf")  # a blown-up run proves nothing, even if both blew up alike
    return float(np.max(np.abs(x_sk.astype(np.float64) - x_wp.astype(np.float64))))


def warp_rollout_timer(model, dt: float, steps: int):
    """``run()`` -> (forward seconds, backward seconds) of one ``steps``-step warp rollout
    recorded on a ``wp.Tape`` (one preallocated state per step, all requiring grad) and
    ``tape.backward`` seeded with ones on the final positions; or a str explaining why warp
    is unavailable. Pass a model finalized with ``requires_grad=True`` so that the material
    gradients are accumulated as in simkit's rollout.

    Example::

        roll = warp_rollout_timer(cloth_model(requires_grad=True), 1e-3, 20)
        t_forward, t_backward = roll()
    """
    scene = _scene(model)
    if isinstance(scene, str):
        return scene
    wp = scene.wp
    states = [scene.state(requires_grad=True) for _ in range(steps + 1)]
    seed = wp.array(np.ones((model.particle_count, 3), dtype=np.float32), dtype=wp.vec3, device=DEVICE)

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


def check_gradient_equivalence(model, dt: float, steps: int) -> float:
    """Largest difference between simkit's and warp's gradients of ``sum(final positions)``
    after a ``steps``-step taped rollout, with respect to the initial positions and to every
    float material array both sides carry, relative to the largest magnitude of each.
    ``model`` must be finalized with ``requires_grad=True``. Raises RuntimeError when warp
    is unavailable.

    Example::

        rel = check_gradient_equivalence(cloth_model(requires_grad=True), 1e-4, 20)
    """
    scene = _scene(model)
    if isinstance(scene, str):
        raise RuntimeError(scene)
    wp = scene.wp
    seed = np.ones((model.particle_count, 3), dtype=np.float32)
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s0, steps, dt)
    tape.backward(grads={states[-1].particle_q: seed})
    w_states = [scene.state(requires_grad=True) for _ in range(steps + 1)]
    w_tape = wp.Tape()
    with w_tape:
        for k in range(steps):
            scene.step(w_states[k], w_states[k + 1], dt)
    w_tape.backward(grads={w_states[-1]["q"]: wp.array(seed, dtype=wp.vec3, device=DEVICE)})
    wp.synchronize_device(DEVICE)
    pairs = [(s0.particle_q.grad, w_states[0]["q"].grad), (s0.particle_qd.grad, w_states[0]["qd"].grad)]
    groups = {"particles": scene.particles, "springs": scene.springs, "triangles": scene.tris,
              "edges": scene.edges, "tets": scene.tets, "contact": scene.contact}
    for group, w_struct in groups.items():
        sk_struct = getattr(model, group)
        for name in ("mass", "inv_mass", "radius", "rest_length", "ke", "kd", "kf", "mu", "time_constant",
                     "damping_ratio", "area", "k_mu", "k_lambda", "k_damp", "rest_angle", "volume"):
            sk_arr = getattr(sk_struct, name, None)
            w_arr = getattr(w_struct, name, None)
            if sk_arr is not None and w_arr is not None and sk_arr.grad is not None and len(w_arr):
                pairs.append((sk_arr.grad, w_arr.grad))
    worst = 0.0
    for g_sk, g_wp in pairs:
        a = g_sk.numpy().astype(np.float64)
        b = g_wp.numpy().astype(np.float64)
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            return float("inf")
        scale = max(np.max(np.abs(a)), np.max(np.abs(b)), 1e-30)
        worst = max(worst, float(np.max(np.abs(a - b)) / scale))
    return worst
