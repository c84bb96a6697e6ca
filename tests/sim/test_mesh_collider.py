"""Triangle-mesh shapes: mass properties against the analytic box, resting contacts against
the analytic plane and primitive shapes (both integrators), gradients against central
differences, and the errors of add_shape_mesh."""

import math

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.meshes import mesh_contact_rows, mesh_geometry
from simkit.kernels.shapes import collision_pairs
from simkit.kernels.structs import model_structs

from sim_helpers import central_difference

S = model_structs(sk.float64)
INTEGRATORS = {"euler": sk.sim.SemiImplicitEuler, "xpbd": sk.sim.XPBD}
# the default per-unit-mass contact (tc = 0.01 s) sinks a resting point by g tc^2
SAG = 9.81 * 0.01 ** 2


def box_mesh(half_extents):
    """The 8 corners and 12 outward-wound triangles of a box of ``half_extents``."""
    v = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], dtype=float) * half_extents
    f = np.array([[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4], [2, 6, 7], [2, 7, 3],
                  [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]])
    return v, f


FLOOR_V = np.array([[-2.0, 0.0, -2.0], [2.0, 0.0, -2.0], [2.0, 0.0, 2.0], [-2.0, 0.0, 2.0]])
FLOOR_F = np.array([[0, 2, 1], [0, 3, 2]])


def rest(model, integrator, steps=1500, dt=1e-3):
    return sk.sim.simulate(model, integrator(), model.state(), steps, dt, keep_states=False)[-1]


# -- mass properties ------------------------------------------------------------------------
def test_mesh_cube_mass_and_inertia_equal_the_analytic_box():
    h = np.array([0.3, 0.1, 0.2])
    rot = (0.0, math.sin(0.3), 0.0, math.cos(0.3))
    b = sk.sim.ModelBuilder()
    mesh_body = b.add_body()
    b.add_shape_mesh(mesh_body, *box_mesh(h), xform=sk.transform((0.1, 0.2, -0.3), rot), density=700.0)
    box_body = b.add_body()
    b.add_shape_box((0.1, 0.2, -0.3), rot, h, body=box_body, density=700.0)
    model = b.finalize(dtype=sk.float64)
    mass, com, inertia = (x.numpy() for x in (model.bodies.mass, model.bodies.com, model.bodies.inertia))
    assert mass[0] == pytest.approx(700.0 * 8 * h.prod(), rel=1e-12)
    assert mass[0] == pytest.approx(mass[1], rel=1e-12)
    np.testing.assert_allclose(com[0], com[1], atol=1e-12)
    # the shape's rotation passes through a float32 transform on one side: agreement to 1e-8
    np.testing.assert_allclose(inertia[0], inertia[1], rtol=1e-7)


def test_scale_multiplies_the_volume():
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    b.add_shape_mesh(body, *box_mesh(np.ones(3)), scale=(0.1, 0.2, 0.3), density=1.0)
    assert b.finalize().bodies.mass.numpy()[0] == pytest.approx(8 * 0.1 * 0.2 * 0.3, rel=1e-6)


def test_closed_mesh_wound_inward_is_flipped_outward():
    v, f = box_mesh(np.array([0.1, 0.1, 0.1]))
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    s = b.add_shape_mesh(body, v, f[:, ::-1], density=1000.0)
    assert b.shape_meshes[s].volume == pytest.approx(0.008, rel=1e-12)
    assert b.finalize().bodies.mass.numpy()[0] == pytest.approx(8.0, rel=1e-6)


# -- resting contacts -----------------------------------------------------------------------
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_particle_rests_on_top_of_a_static_mesh_box(integrator):
    b = sk.sim.ModelBuilder(ground=False)
    b.add_particle((0.1, 0.6, 0.05), (0.0, 0.0, 0.0), 1.0, radius=0.05)
    b.add_shape_mesh(-1, *box_mesh(np.array([0.5, 0.25, 0.5])))
    q = rest(b.finalize(dtype=sk.float64), INTEGRATORS[integrator]).particle_q.numpy()[0]
    sag = SAG if integrator == "euler" else 0.0
    assert q[1] == pytest.approx(0.25 + 0.05 - sag, abs=2e-4)
    np.testing.assert_allclose(q[[0, 2]], [0.1, 0.05], atol=1e-6)


def test_particle_slides_off_a_tilted_tetrahedron_face_along_its_normal():
    # a particle on the slanted face of a tetrahedron, no friction: the surface force is
    # along the face normal (1, 1, 1)/sqrt(3), so it slides down towards -x -z
    v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    b = sk.sim.ModelBuilder(ground=False, contact_mu=0.0)
    b.add_particle((0.3, 0.4 + 0.05 * math.sqrt(3.0), 0.3), (0.0, 0.0, 0.0), 1.0, radius=0.05)
    b.add_shape_mesh(-1, v, f)
    model = b.finalize(dtype=sk.float64)
    q = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 200, 1e-3, keep_states=False)[-1]
    x = q.particle_q.numpy()[0]
    # still on the face (distance to the plane x + y + z = 1 is about the radius)
    assert (x.sum() - 1.0) / math.sqrt(3.0) == pytest.approx(0.05, abs=2e-3)
    assert x[0] > 0.3 and x[2] > 0.3 and x[0] == pytest.approx(x[2], abs=1e-9)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_sphere_rests_on_a_mesh_floor_at_the_height_it_rests_on_the_plane(integrator):
    heights = []
    for floor in ("mesh", "plane"):
        b = sk.sim.ModelBuilder(ground=floor == "plane")
        if floor == "mesh":
            b.add_shape_mesh(-1, FLOOR_V, FLOOR_F)
        ball = b.add_body(sk.transform((0.3, 0.3, 0.1), (0.0, 0.0, 0.0, 1.0)))
        b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=ball)
        heights.append(rest(b.finalize(dtype=sk.float64), INTEGRATORS[integrator]).body_q.numpy()[0, :3])
    np.testing.assert_allclose(heights[0], heights[1], atol=1e-6)
    sag = SAG if integrator == "euler" else 0.0
    assert heights[0][1] == pytest.approx(0.1 - sag, abs=2e-4)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_mesh_box_rests_on_the_ground_like_the_primitive_box(integrator):
    h = np.array([0.2, 0.1, 0.2])
    finals = []
    for kind in ("mesh", "box"):
        b = sk.sim.ModelBuilder()
        body = b.add_body(sk.transform((0.0, 0.3, 0.0), (0.0, 0.0, 0.0, 1.0)))
        if kind == "mesh":
            b.add_shape_mesh(body, *box_mesh(h))
        else:
            b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), h, body=body)
        finals.append(rest(b.finalize(dtype=sk.float64), INTEGRATORS[integrator]))
    mesh_q, box_q = (s.body_q.numpy()[0] for s in finals)
    assert mesh_q[1] == pytest.approx(0.1, abs=2e-3)
    assert mesh_q[1] == pytest.approx(box_q[1], abs=1e-3)
    np.testing.assert_allclose(mesh_q[3:], [0.0, 0.0, 0.0, 1.0], atol=1e-6)      # level
    assert np.abs(finals[0].body_qd.numpy()[0]).max() < 1e-3                       # at rest


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_finely_meshed_box_rests_on_the_ground_without_bouncing(integrator):
    # 386 vertices, 81 of them on the bottom face: per-mass gains are shared among the touching
    # points, so the explicit step stays stable and the box sinks about as much as on 4 corners
    trimesh = pytest.importorskip("trimesh")
    mesh = trimesh.creation.box(extents=(0.4, 0.2, 0.4)).subdivide().subdivide().subdivide()
    b = sk.sim.ModelBuilder()
    body = b.add_body(sk.transform((0.0, 0.15, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_mesh(body, np.array(mesh.vertices), np.array(mesh.faces))
    final = rest(b.finalize(dtype=sk.float64), INTEGRATORS[integrator], steps=1000)
    assert final.body_q.numpy()[0, 1] == pytest.approx(0.1, abs=2e-3)
    assert np.abs(final.body_qd.numpy()[0]).max() < 1e-3


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_box_rests_on_a_static_mesh_box(integrator):
    # a primitive box's points against a static mesh (the top of a 0.2 m high slab)
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_mesh(-1, *box_mesh(np.array([1.0, 0.1, 1.0])))
    body = b.add_body(sk.transform((0.1, 0.4, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body)
    q = rest(b.finalize(dtype=sk.float64), INTEGRATORS[integrator]).body_q.numpy()[0]
    assert q[1] == pytest.approx(0.2, abs=2e-3)
    np.testing.assert_allclose(q[3:], [0.0, 0.0, 0.0, 1.0], atol=1e-6)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_mesh_box_rests_on_a_static_mesh_box(integrator):
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_mesh(-1, *box_mesh(np.array([1.0, 0.1, 1.0])))
    body = b.add_body(sk.transform((0.1, 0.4, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_mesh(body, *box_mesh(np.array([0.1, 0.1, 0.1])))
    q = rest(b.finalize(dtype=sk.float64), INTEGRATORS[integrator]).body_q.numpy()[0]
    assert q[1] == pytest.approx(0.2, abs=2e-3)


def crate_and_particle(kind, particle):
    """docs/meshes.md's scene: a 16 kg crate (half extents 0.2, 0.1, 0.2) on a body, as a mesh
    or a box, falling 0.4 m onto a mesh floor, and a 0.1 kg particle of radius 0.05 at ``particle``."""
    h = np.array([0.2, 0.1, 0.2])
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_mesh(-1, FLOOR_V, FLOOR_F)
    crate = b.add_body(sk.transform((0.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0)))
    if kind == "mesh":
        b.add_shape_mesh(crate, *box_mesh(h), density=500.0)
    else:
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), h, body=crate, density=500.0)
    b.add_particle(particle, (0.0, 0.0, 0.0), mass=0.1, radius=0.05)
    return b.finalize(dtype=sk.float64)


# a particle 5 cm beside the crate, level with its bottom face (the plane of a mesh edge), and
# one resting on its top, right above the edge of the top and a side face
@pytest.mark.parametrize("particle, rest_height", [((0.1, 0.4, 0.3), 0.05), ((0.1, 0.65, 0.2), 0.25)],
                         ids=["beside", "on-top-edge"])
def test_particle_by_a_mesh_crate_lands_where_it_lands_by_a_box_crate(particle, rest_height):
    # XPBD threw the particle beside the crate off at 25 m/s and tipped the crate over: the
    # mesh distance took the bottom face's sign at the edge (issue 28)
    finals = [rest(crate_and_particle(kind, particle), sk.sim.XPBD, steps=1000) for kind in ("mesh", "box")]
    for final in finals:
        np.testing.assert_allclose(final.body_q.numpy()[0], [0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 1.0], atol=1e-3)
        np.testing.assert_allclose(final.particle_q.numpy()[0], [particle[0], rest_height, particle[2]], atol=1e-3)
    # the mesh's friction is solved per point, the box's per patch: the landings slip a little differently
    np.testing.assert_allclose(finals[0].particle_q.numpy(), finals[1].particle_q.numpy(), atol=1e-3)
    np.testing.assert_allclose(finals[0].body_q.numpy(), finals[1].body_q.numpy(), atol=1e-3)


def test_particle_pushes_a_mesh_body_and_momentum_is_conserved():
    # no gravity: a particle hits a free mesh box; contact forces are equal and opposite
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    b.add_particle((-0.4, 0.0, 0.0), (2.0, 0.0, 0.0), 0.5, radius=0.05)
    body = b.add_body()
    b.add_shape_mesh(body, *box_mesh(np.array([0.1, 0.1, 0.1])), density=500.0)
    model = b.finalize(dtype=sk.float64)
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 400, 1e-3, keep_states=False)[-1]
    m_body = model.bodies.mass.numpy()[0]
    v_particle = final.particle_qd.numpy()[0]
    v_body = final.body_qd.numpy()[0, 3:]
    assert v_body[0] > 0.2
    np.testing.assert_allclose(0.5 * v_particle + m_body * v_body, [1.0, 0.0, 0.0], atol=1e-9)


# -- pairs and filters ----------------------------------------------------------------------
def test_mesh_pairs_leave_the_primitive_pairs_and_follow_the_collision_filter():
    b = sk.sim.ModelBuilder(ground=False)
    floor = b.add_shape_mesh(-1, FLOOR_V, FLOOR_F)
    body = b.add_body()
    box = b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body)
    model = b.finalize()
    assert len(collision_pairs(model)) == 0
    # the box's 20 points against the floor, the floor's 4 vertices and 4 border edges against the box
    assert sorted({(int(a), int(c)) for a, c in mesh_contact_rows(model).numpy()[:, [0, 2]]}) == [(floor, box),
                                                                                               (box, floor)]
    assert len(mesh_contact_rows(model)) == 28
    b.set_shape_collision(box, group=2, mask=2)
    assert len(mesh_contact_rows(b.finalize())) == 0


# -- gradients ------------------------------------------------------------------------------
@sk.kernel
def weighted_origin(body_q: sk.array(dtype=S.transform), w: S.vec3, loss: sk.array(dtype=sk.float64)):
    sk.atomic_add(loss, 0, sk.dot(body_q[sk.tid()].p, w))


def test_gradient_through_mesh_contact_matches_finite_differences():
    # a tilted spinning mesh box thrown onto a static mesh floor: its vertices hit the floor's
    # triangles (mesh against mesh), with fixed gains and friction
    W = np.array([0.7, 1.0, -0.4])
    b = sk.sim.ModelBuilder(ground=False, rigid_contact_ke=1.0e4, rigid_contact_kd=30.0, rigid_contact_kf=30.0,
                            rigid_contact_mu=0.3)
    b.add_shape_mesh(-1, FLOOR_V, FLOOR_F)
    angle = 0.4
    body = b.add_body(sk.transform((0.0, 0.2, 0.0), (math.sin(angle / 2) / math.sqrt(2), 0.0,
                                                    math.sin(angle / 2) / math.sqrt(2), math.cos(angle / 2))),
                      velocity=(1.0, -0.5, 0.3), angular_velocity=(1.0, 2.0, -2.0))
    b.add_shape_mesh(body, *box_mesh(np.array([0.1, 0.06, 0.08])), density=1.0 / (8 * 0.1 * 0.06 * 0.08))
    model = b.finalize(dtype=sk.float64, requires_grad=True)

    def loss_of(state):
        final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, 300, 1e-3)[-1]
        loss = sk.zeros(1, dtype=sk.float64)
        sk.launch(weighted_origin, 1, inputs=[final.body_q, S.vec3(*W), loss])
        return loss

    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = loss_of(s0)
    tape.backward(loss=loss)
    grad = s0.body_qd.grad.numpy()
    fresh = model.state(requires_grad=False)
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), fresh, 300, 1e-3, keep_states=False)[-1]
    assert final.body_q.numpy()[0, 1] < 0.1                                     # it landed
    for component in (0, 2, 3, 4):
        fd = central_difference(lambda: float(loss_of(fresh).numpy()[0]), fresh.body_qd.numpy(), (0, component),
                                1e-7)
        assert abs(fd) > 1e-3
        assert grad[0, component] == pytest.approx(fd, rel=1e-4)


def test_particle_gradient_through_mesh_contact_matches_finite_differences():
    b = sk.sim.ModelBuilder(ground=False, contact_ke=1.0e4, contact_kd=10.0, contact_kf=20.0, contact_mu=0.3)
    b.add_particle((0.2, 0.4, 0.05), (0.5, -1.0, 0.3), 1.0, radius=0.05)
    b.add_shape_mesh(-1, *box_mesh(np.array([0.5, 0.25, 0.5])))
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    w = np.array([[0.3, 1.0, -0.6]])

    def loss_of(state):
        final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, 200, 1e-3)[-1]
        return float((final.particle_q.numpy() * w).sum()), final

    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s0, 200, 1e-3)[-1]
    tape.backward(grads={final.particle_q: sk.array(w, dtype=S.vec3)})
    grad = s0.particle_qd.grad.numpy()
    fresh = model.state(requires_grad=False)
    for component in range(3):
        fd = central_difference(lambda: loss_of(fresh)[0], fresh.particle_qd.numpy(), (0, component), 1e-7)
        assert abs(fd) > 1e-3
        assert grad[0, component] == pytest.approx(fd, rel=1e-4)


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("vertices, indices, message", [
    (np.zeros((4, 2)), [[0, 1, 2]], "vertices must be an N x 3 array"),
    ([[0, 0, 0], [1, 0, 0], [0, np.nan, 0]], [[0, 1, 2]], "vertex 2 is"),
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 3]], r"indices must be in \[0, 3\)"),
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1]], "indices must be a T x 3 integer array"),
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0.0, 1.0, 2.0]], "indices must be a T x 3 integer array"),
    ([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]], "has no area"),
])
def test_bad_mesh_arrays_are_refused_with_what_was_expected(vertices, indices, message):
    b = sk.sim.ModelBuilder()
    with pytest.raises(ValueError, match=message):
        b.add_shape_mesh(-1, vertices, indices)


def test_open_mesh_with_density_on_a_body_is_refused():
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    with pytest.raises(ValueError, match="must be closed"):
        b.add_shape_mesh(body, FLOOR_V, FLOOR_F)
    b.add_shape_mesh(body, FLOOR_V, FLOOR_F, density=0.0)          # a collider without mass is fine


@pytest.mark.parametrize("scale", [0.0, -1.0, (1.0, 0.0, 1.0), float("inf")])
def test_bad_scale_is_refused(scale):
    with pytest.raises(ValueError, match="scale"):
        sk.sim.ModelBuilder().add_shape_mesh(-1, FLOOR_V, FLOOR_F, scale=scale)


def test_body_index_out_of_range_is_refused():
    with pytest.raises(ValueError, match="body"):
        sk.sim.ModelBuilder().add_shape_mesh(3, FLOOR_V, FLOOR_F)


def test_worlds_share_one_copy_of_a_mesh():
    world = sk.sim.ModelBuilder()
    body = world.add_body(sk.transform((0.0, 0.3, 0.0), (0.0, 0.0, 0.0, 1.0)))
    world.add_shape_mesh(body, *box_mesh(np.array([0.1, 0.1, 0.1])))
    b = sk.sim.ModelBuilder()
    for k in range(3):
        b.add_builder(world, sk.transform((float(k), 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    model = b.finalize()
    assert len(model.meshes.radius) == 1
    assert list(model.meshes.shape_mesh.numpy()) == [0, 0, 0]
    assert model.bodies.mass.numpy() == pytest.approx([8.0, 8.0, 8.0], rel=1e-6)


# -- the signed distance against an independent oracle ---------------------------------------
G64 = mesh_geometry(sk.float64)


@sk.kernel
def mesh_distances(meshes: G64.Meshes, points: sk.array(dtype=sk.vec3d), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    dist, _n = G64.mesh_distance(meshes, 0, points[i])
    out[i] = dist


def bumpy_sphere():
    """A closed, star-shaped, non-convex mesh: an icosphere whose radius varies by +-30%."""
    trimesh = pytest.importorskip("trimesh")
    sphere = trimesh.creation.icosphere(subdivisions=3)
    v = np.array(sphere.vertices)
    theta, phi = np.arccos(v[:, 2]), np.arctan2(v[:, 1], v[:, 0])
    return v * (1.0 + 0.3 * np.sin(3.0 * theta) * np.cos(2.0 * phi))[:, None], np.array(sphere.faces)


def winding_number(v, f, p):
    """The winding number of the closed mesh around ``p`` (1 inside, 0 outside): the sum of the
    solid angles of its triangles seen from ``p`` (Van Oosterom and Strackee) over 4 pi."""
    a, b, c = (v[f[:, k]] - p for k in range(3))
    la, lb, lc = (np.linalg.norm(x, axis=1) for x in (a, b, c))
    num = np.einsum("ij,ij->i", a, np.cross(b, c))
    den = la * lb * lc + np.einsum("ij,ij->i", a, b) * lc + np.einsum("ij,ij->i", b, c) * la \
        + np.einsum("ij,ij->i", c, a) * lb
    return 2.0 * np.arctan2(num, den).sum() / (4.0 * np.pi)


def sampled_distance(v, f, p, n=40):
    """The distance from ``p`` to the mesh by dense barycentric sampling of every triangle."""
    u, w = np.meshgrid(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    keep = u + w <= 1.0
    u, w = u[keep], w[keep]
    a, b, c = (v[f[:, k]] for k in range(3))
    samples = a[:, None] + (b - a)[:, None] * u[None, :, None] + (c - a)[:, None] * w[None, :, None]
    return np.sqrt(((samples.reshape(-1, 3) - p) ** 2).sum(axis=1).min())


def test_mesh_signed_distance_matches_winding_number_and_sampled_distance():
    v, f = bumpy_sphere()
    b = sk.sim.ModelBuilder(ground=False)
    b.add_particle((0.0, 5.0, 0.0), (0.0, 0.0, 0.0), 1.0)
    b.add_shape_mesh(-1, v, f)
    model = b.finalize(dtype=sk.float64)
    rng = np.random.default_rng(1)
    points = rng.uniform(-1.4, 1.4, size=(60, 3))
    out = sk.zeros(len(points), dtype=sk.float64)
    sk.launch(mesh_distances, len(points), inputs=[model.meshes, sk.array(points, dtype=sk.vec3d), out])
    dist = out.numpy()
    for p, d in zip(points, dist):
        inside = winding_number(v, f, p) > 0.5
        assert (d < 0.0) == inside, (p, d)
        # the sampled distance is an upper bound within the sampling's error
        assert abs(d) <= sampled_distance(v, f, p) + 1e-9
        assert abs(d) == pytest.approx(sampled_distance(v, f, p), abs=2e-3)


@sk.kernel
def com_loss64(q: sk.array(dtype=sk.transformd), com: sk.array(dtype=sk.vec3d), w: sk.vec3d,
               loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(sk.transform_point(q[i], com[i]), w))


def test_xpbd_gradient_of_a_mesh_box_landing_on_a_mesh_floor_matches_finite_differences():
    # thrown tumbling onto a static mesh floor: vertices against triangles, normal and friction
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_mesh(-1, FLOOR_V, FLOOR_F, mu=0.6)
    body = b.add_body(sk.transform((0.0, 0.3, 0.0), (0.1, 0.2, 0.0, math.sqrt(0.95))))
    b.add_shape_mesh(body, *box_mesh(np.array([0.1, 0.05, 0.08])), density=500.0, mu=0.6)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    qd = np.array([[0.5, -1.0, 2.0, 1.0, 1.0, 0.3]])
    w = sk.vec3d(0.3, 1.0, -0.5)

    def loss_of(state):
        loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
        sk.launch(com_loss64, 1, inputs=[state.body_q, model.bodies.com, w, loss])
        return loss

    def value():
        s0 = model.state()
        s0.body_qd.assign(qd)
        final = sk.sim.simulate(model, sk.sim.XPBD(), s0, 150, 4e-3, keep_states=False)[-1]
        return float(loss_of(final).numpy()[0])

    s0 = model.state(requires_grad=True)
    s0.body_qd.assign(qd)
    with sk.Tape() as tape:
        loss = loss_of(sk.sim.simulate(model, sk.sim.XPBD(), s0, 150, 4e-3)[-1])
    tape.backward(loss=loss)
    s = model.state()
    s.body_qd.assign(qd)
    assert sk.sim.simulate(model, sk.sim.XPBD(), s, 150, 4e-3, keep_states=False)[-1].body_q.numpy()[0, 1] < 0.1
    fd = [central_difference(value, qd, (0, j), 1e-6) for j in range(6)]
    np.testing.assert_allclose(s0.body_qd.grad.numpy()[0], fd, rtol=1e-3, atol=1e-5)


def test_xpbd_gradient_of_a_particle_on_a_mesh_matches_finite_differences():
    b = sk.sim.ModelBuilder(ground=False, contact_mu=0.3)
    b.add_particle((0.2, 0.4, 0.05), (0.0, 0.0, 0.0), 1.0, radius=0.05)
    b.add_shape_mesh(-1, *box_mesh(np.array([0.5, 0.25, 0.5])))
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    qd = np.array([[0.8, -1.5, 0.3]])
    w = np.array([[0.3, 1.0, -0.6]])

    def value():
        s0 = model.state()
        s0.particle_qd.assign(qd)
        final = sk.sim.simulate(model, sk.sim.XPBD(), s0, 100, 2e-3, keep_states=False)[-1]
        return float((final.particle_q.numpy() * w).sum())

    s0 = model.state(requires_grad=True)
    s0.particle_qd.assign(qd)
    with sk.Tape() as tape:
        final = sk.sim.simulate(model, sk.sim.XPBD(), s0, 100, 2e-3)[-1]
    tape.backward(grads={final.particle_q: sk.array(w, dtype=S.vec3)})
    assert final.particle_q.numpy()[0, 1] == pytest.approx(0.3, abs=1e-3)          # it landed
    fd = [central_difference(value, qd, (0, j), 1e-6) for j in range(3)]
    np.testing.assert_allclose(s0.particle_qd.grad.numpy()[0], fd, rtol=1e-3, atol=1e-6)


@sk.kernel
def weighted(q: sk.array(dtype=S.vec3), w: sk.array(dtype=S.vec3), loss: sk.array(dtype=sk.float64)):
    sk.atomic_add(loss, 0, sk.dot(q[0], w[0]))


@pytest.mark.cpu_only("the GPU path of tangent launches is tested in tests/autograd/test_forward.py")
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_jvp_through_a_mesh_contact_matches_the_reverse_gradient(integrator):
    b = sk.sim.ModelBuilder(ground=False, contact_ke=1.0e4, contact_kd=10.0, contact_kf=20.0, contact_mu=0.3)
    b.add_particle((0.2, 0.33, 0.05), (0.5, -1.0, 0.3), 1.0, radius=0.05)
    b.add_shape_mesh(-1, *box_mesh(np.array([0.5, 0.25, 0.5])))
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    w = sk.array(np.array([[0.3, 1.0, -0.6]]), dtype=S.vec3)

    def loss_of(state):
        final = sk.sim.simulate(model, INTEGRATORS[integrator](), state, 40, 2e-3)[-1]
        loss = sk.zeros(1, dtype=sk.float64, requires_grad=True)
        sk.launch(weighted, 1, inputs=[final.particle_q, w, loss])
        return loss

    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = loss_of(s0)
    tape.backward(loss=loss)
    direction = np.array([[0.2, -0.7, 0.4]])
    s1 = model.state()
    _out, tan = sk.autograd.jvp(lambda qd: loss_of(s1), [s1.particle_qd], [direction])
    assert tan.numpy()[0] == pytest.approx(float(np.sum(s0.particle_qd.grad.numpy() * direction)), rel=1e-8)
