"""Test helpers: the narrow phase of two shapes (or one shape and the ground) at given world
poses, as the contact rows of simkit.kernels.contact_rows see it, and the same pair as
MuJoCo's mj_collision sees it (an MJCF model of two free bodies)."""

from __future__ import annotations

import numpy as np

import simkit as sk
from simkit.kernels.contact_rows import contact_row_kernels
from simkit.kernels.shapes import MAX_PLANE_POINTS, MAX_SHAPE_POINTS, collision_pairs

# a quaternion (x, y, z, w) turning local y onto local z: MuJoCo's cylinders and capsules lie
# along their z axis, simkit's along y
Y_TO_Z = np.array([np.sin(np.pi / 4), 0.0, 0.0, np.cos(np.pi / 4)])


def quat_multiply(a, b) -> np.ndarray:
    """The product ``a b`` of two quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def random_quat(rng) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _add(b, body, kind, size):
    I = (0.0, 0.0, 0.0, 1.0)
    if kind == "sphere":
        b.add_shape_sphere((0.0, 0.0, 0.0), size[0], body=body)
    elif kind == "box":
        b.add_shape_box((0.0, 0.0, 0.0), I, size, body=body)
    elif kind == "capsule":
        b.add_shape_capsule((0.0, 0.0, 0.0), I, size[0], size[1], body=body)
    elif kind == "cylinder":
        b.add_shape_cylinder((0.0, 0.0, 0.0), I, size[0], size[1], body=body)
    elif kind == "cone":
        b.add_shape_cone((0.0, 0.0, 0.0), I, size[0], size[1], body=body)
    elif kind == "ellipsoid":
        b.add_shape_ellipsoid((0.0, 0.0, 0.0), I, size, body=body)
    elif kind == "convex":
        b.add_shape_convex((0.0, 0.0, 0.0), I, size, body=body)
    else:
        raise ValueError(kind)


def pair_model(shapes, requires_grad: bool = False):
    """A float64 model of one body per shape of ``shapes`` (``[(kind, size)]``), the shape at the
    body's origin; with one shape, the ground y = 0 too."""
    b = sk.sim.ModelBuilder(ground=len(shapes) == 1)
    for kind, size in shapes:
        _add(b, b.add_body(), kind, size)
    return b.finalize(dtype=sk.float64, requires_grad=requires_grad)


def contact_rows(model, body_q) -> dict:
    """The contact rows of ``model`` at body poses ``body_q`` (launched: a Tape records them),
    as a dict of the slot arrays ``body, point, normal, dist, active``."""
    pairs = collision_pairs(model)
    ground = model.shape_count * MAX_PLANE_POINTS if model.ground else 0
    n = ground + pairs.shape[0] * MAX_SHAPE_POINTS
    S, real = model.types, sk.float64
    rows = dict(body=sk.zeros(2 * n, dtype=sk.int32), point=sk.zeros(n, dtype=S.vec3),
                normal=sk.zeros(n, dtype=S.vec3), dist=sk.zeros(n, dtype=real))
    mu, margin = sk.zeros(n, dtype=real), sk.zeros(n, dtype=real)
    condim, rows["active"] = sk.zeros(n, dtype=sk.int32), sk.zeros(n, dtype=sk.int32)
    solref, solimp, tangent = sk.zeros(n, dtype=S.vec2), sk.zeros(n, dtype=S.vec5), sk.zeros(n, dtype=S.vec3)
    slots = [rows["body"], rows["point"], rows["normal"], rows["dist"], mu, condim, solref, solimp, margin,
             rows["active"]]
    k = contact_row_kernels(real)
    if ground:
        sk.launch(k.ground_rows, model.shape_count,
                  inputs=[body_q, model.shapes, model.contact], outputs=slots + [tangent])
    if pairs.shape[0]:
        sk.launch(k.pair_rows, (pairs.shape[0], MAX_SHAPE_POINTS),
                  inputs=[pairs, body_q, model.shapes, model.contact, ground], outputs=slots)
    return rows


def simkit_deepest(shapes, poses):
    """The deepest contact row of shapes ``shapes`` (``[(kind, size)]``, one or two; one:
    against the ground y = 0) at world ``poses`` (``[(p, q)]``): its signed distance, its
    normal from the first shape towards the second (the ground: downwards) and its point."""
    model = pair_model(shapes)
    state = model.state()
    # the poses set in float64 (a transform built in Python is float32)
    state.body_q.assign(np.array([np.concatenate([p, q]) for p, q in poses], dtype=np.float64))
    rows = contact_rows(model, state.body_q)
    on = np.flatnonzero(rows["active"].numpy())
    if not len(on):
        return np.inf, None, None
    dist = rows["dist"].numpy()
    i = on[np.argmin(dist[on])]
    # a row's normal points from its second body's surface towards its first
    sign = -1.0 if rows["body"].numpy()[2 * i] == 0 else 1.0
    return float(dist[i]), sign * rows["normal"].numpy()[i], rows["point"].numpy()[i]


def _mjcf_geom(kind, size, p, q, name="") -> str:
    if kind == "convex":
        # MuJoCo collides the convex hull of a mesh geom's vertices
        return (f'<body pos="{_numbers(p)}" quat="{_numbers([q[3], q[0], q[1], q[2]])}"><freejoint/>'
                f'<geom type="mesh" mesh="{name}"/></body>')
    if kind in ("capsule", "cylinder"):
        q = quat_multiply(q, Y_TO_Z)
    sizes = {"sphere": size[:1], "box": size, "capsule": size[:2], "cylinder": size[:2], "ellipsoid": size}[kind]
    return (f'<body pos="{_numbers(p)}" quat="{_numbers([q[3], q[0], q[1], q[2]])}"><freejoint/>'
            f'<geom type="{kind}" size="{_numbers(sizes)}"/></body>')


def _numbers(values) -> str:
    return " ".join(repr(float(v)) for v in values)


def mujoco_deepest(shapes, poses):
    """As :func:`simkit_deepest`, by MuJoCo (the ground: a plane whose normal is +y)."""
    import mujoco
    geoms = "".join(_mjcf_geom(kind, np.asarray(size, float), np.asarray(p, float), np.asarray(q, float), f"m{i}")
                    for i, ((kind, size), (p, q)) in enumerate(zip(shapes, poses)))
    meshes = "".join(f'<mesh name="m{i}" vertex="{_numbers(np.ravel(size))}"/>'
                     for i, (kind, size) in enumerate(shapes) if kind == "convex")
    plane = '<geom type="plane" size="0 0 1" zaxis="0 1 0"/>' if len(shapes) == 1 else ""
    m = mujoco.MjModel.from_xml_string(f"<mujoco><asset>{meshes}</asset><worldbody>{plane}{geoms}</worldbody>"
                                       "</mujoco>")
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    if not d.ncon:
        return np.inf, None, None
    c = min(d.contact[:d.ncon], key=lambda c: c.dist)
    n = np.array(c.frame[:3])
    if c.geom1 != m.ngeom - len(shapes):
        n = -n          # MuJoCo's normal points from geom1 to geom2, and it may list the second shape first
    return float(c.dist), n, np.array(c.pos)


@sk.kernel
def weighted_rows(dist: sk.array(dtype=sk.float64), normal: sk.array(dtype=sk.vec3d), point: sk.array(dtype=sk.vec3d),
                  active: sk.array(dtype=sk.int32), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    if active[i] != 0:
        sk.atomic_add(loss, 0, w[i][0] * dist[i] + sk.dot(normal[i], w[i]) + w[i][1] * sk.dot(point[i], w[i]))


def assert_rows_gradient_matches_finite_differences(shapes, poses, seed: int) -> None:
    """The gradient of a random weighting of the pair's contact rows (depths, normals, points)
    with respect to both bodies' poses against central differences (float64)."""
    model = pair_model(shapes, requires_grad=True)
    q = np.array([np.concatenate([p, np.asarray(r) / np.linalg.norm(r)]) for p, r in poses], dtype=np.float64)
    assert_model_rows_gradient_matches_finite_differences(model, q, seed)


def assert_model_rows_gradient_matches_finite_differences(model, q: np.ndarray, seed: int):
    """As :func:`assert_rows_gradient_matches_finite_differences`, for any float64 model with
    ``requires_grad`` at body poses ``q`` (``B x 7``); returns the loss as a function of
    ``body_q``, for checks of the other parameters it depends on."""
    from sim_helpers import central_difference

    w = sk.array(np.random.default_rng(seed).normal(size=(model.shape_count * 8 + 40, 3)), dtype=sk.vec3d)

    def loss_of(body_q):
        rows = contact_rows(model, body_q)
        loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
        sk.launch(weighted_rows, rows["dist"].shape[0],
                  inputs=[rows["dist"], rows["normal"], rows["point"], rows["active"], w, loss])
        return loss, rows

    body_q = sk.array(q, dtype=model.types.transform, requires_grad=True)
    with sk.Tape() as tape:
        loss, rows = loss_of(body_q)
    assert rows["active"].numpy().sum() > 0
    tape.backward(loss=loss)
    grad = body_q.grad.numpy().reshape(q.shape[0], 7)
    for b in range(q.shape[0]):
        for c in range(7):
            fd = central_difference(lambda: loss_of(sk.array(q, dtype=model.types.transform))[0].numpy()[0], q,
                                    (b, c), 1e-7)
            assert abs(grad[b, c] - fd) <= 1e-6 + 1e-5 * abs(fd), (b, c, grad[b, c], fd)
    return lambda body_q: loss_of(body_q)[0]
