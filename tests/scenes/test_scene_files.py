"""Every bundled scene loads, runs a few frames and exports USD that reopens with the prims
and time samples it should have; the two mesh formats agree; a run that blows up writes
nothing."""

import re
from pathlib import Path

import numpy as np
import pytest
from pxr import Usd, UsdGeom

from simkit.scene import SceneError, SimulationError, load_scene, load_tet_mesh, read_config, run_scene
from simkit.sim import geometry as G

SCENES = sorted((Path(__file__).resolve().parents[2] / "scenes").glob("*.toml"))
FRAMES = 3


def test_the_bundled_scenes_cover_every_kind_of_body():
    names = {p.stem for p in SCENES}
    assert {"cloth_drape", "flag", "soft_drop", "ball_bounce", "spring_walker", "jelly_hammock",
            "pendulum_chain", "quadruped_stand"} <= names
    kinds = set()
    for p in SCENES:
        config = read_config(p)
        assert config.description, f"{p.name} has no description"
        kinds |= {k for k in ("particles", "springs", "cloth", "soft_grid", "soft_mesh", "shapes", "bodies", "joints",
                              "robots") if getattr(config, k)}
        kinds |= {"optimize"} if config.optimize else set()
    assert kinds == {"particles", "springs", "cloth", "soft_grid", "soft_mesh", "shapes", "bodies", "joints",
                     "robots", "optimize"}


@pytest.mark.parametrize("path", SCENES, ids=[p.stem for p in SCENES])
def test_scene_loads_runs_and_exports_usd(path, tmp_path):
    scene = load_scene(path, frames=FRAMES)
    model = scene.model
    usd = tmp_path / f"{path.stem}.usda"
    result = run_scene(scene, usd_path=usd)
    assert result.frames == FRAMES and result.steps == FRAMES * scene.settings.substeps
    assert result.usd_path == usd.resolve()
    for a in (result.final_state.particle_q, result.final_state.body_q):
        assert np.all(np.isfinite(a.numpy()))

    stage = Usd.Stage.Open(str(usd))
    assert stage.GetTimeCodesPerSecond() == pytest.approx(scene.output["fps"])
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0.0, FRAMES)
    expected = []
    if model.tri_count:
        expected.append("/World/Cloth")
    if model.tet_count:
        expected.append("/World/SoftBodies")
    if model.spring_count:
        expected.append("/World/Springs")
    in_mesh = set(model.triangles.indices.numpy().ravel()) | set(model.tets.indices.numpy().ravel())
    if model.particle_count > len(in_mesh):
        expected.append("/World/Particles")
    for path_ in expected:
        prim = stage.GetPrimAtPath(path_)
        assert prim.IsValid(), path_
        points = UsdGeom.PointBased(prim).GetPointsAttr()
        assert points.GetTimeSamples() == [float(k) for k in range(FRAMES + 1)], path_
    for b in range(model.body_count):
        prim = stage.GetPrimAtPath(f"/World/Bodies/body_{b}")
        assert prim.IsValid()
        ops = UsdGeom.Xformable(prim).GetOrderedXformOps()
        assert ops[0].GetAttr().GetTimeSamples() == [float(k) for k in range(FRAMES + 1)]
    if np.any(model.shapes.body.numpy() < 0):
        assert stage.GetPrimAtPath("/World/Shapes").IsValid()
    # the last time sample is the final state
    if "/World/Particles" in expected:
        free = sorted(set(range(model.particle_count)) - in_mesh)
        last = np.array(UsdGeom.Points(stage.GetPrimAtPath("/World/Particles")).GetPointsAttr().Get(FRAMES))
        np.testing.assert_allclose(last, result.final_state.particle_q.numpy()[free], rtol=1e-6, atol=1e-6)


def test_the_two_mesh_formats_give_the_same_scene(edit_scene, tmp_path):
    vertices, tets = load_tet_mesh(Path(__file__).resolve().parents[2] / "scenes" / "meshes" / "jelly.tet")
    assert vertices.shape == (48, 3) and tets.shape == (90, 4)
    text_scene = edit_scene("jelly_hammock")
    np.savez(tmp_path / "meshes" / "jelly.npz", vertices=vertices, tets=tets.astype(np.int32))
    npz_scene = tmp_path / "jelly_npz.toml"
    npz_scene.write_text(text_scene.read_text().replace('file = "meshes/jelly.tet"', 'file = "meshes/jelly.npz"'))
    a, b = load_scene(text_scene), load_scene(npz_scene)
    np.testing.assert_array_equal(a.model.particle_q.numpy(), b.model.particle_q.numpy())
    np.testing.assert_array_equal(a.model.tets.indices.numpy(), b.model.tets.indices.numpy())
    jelly = a.bodies["jelly"]
    assert len(jelly.particles) == 48 and len(jelly.tets) == 90
    # the mesh is placed at pos: its base (y = 0 in the file) at y = 0.55
    q = a.model.particle_q.numpy()[jelly.particles.start:jelly.particles.stop]
    assert q[:, 1].min() == pytest.approx(0.55)


def test_pinned_particles_start_at_rest_and_the_others_get_the_velocity():
    scene = load_scene(Path(__file__).resolve().parents[2] / "scenes" / "flag.toml")
    qd = scene.model.particle_qd.numpy()
    pinned = scene.model.particles.mass.numpy() == 0.0
    assert pinned.sum() == 10                      # the left edge of a 15 x 9-cell flag
    np.testing.assert_array_equal(qd[pinned], 0.0)
    np.testing.assert_allclose(qd[~pinned], np.tile([0.0, 0.0, 1.5], ((~pinned).sum(), 1)))


def test_the_stepper_restarts_on_reset_and_holds_after_the_last_frame():
    scene = load_scene(Path(__file__).resolve().parents[2] / "scenes" / "ball_bounce.toml", frames=2)
    stepper = scene.stepper()
    s = stepper.reset()
    start = s.particle_q.numpy().copy()
    s = stepper.advance(stepper.advance(s))
    second = s.particle_q.numpy().copy()
    assert stepper.frame == 2 and not np.allclose(second, start)
    np.testing.assert_array_equal(stepper.advance(s).particle_q.numpy(), second)
    np.testing.assert_array_equal(stepper.reset().particle_q.numpy(), start)


def test_joints_are_anchored_where_the_scene_says(scenes_dir):
    scene = load_scene(scenes_dir / "pendulum_chain.toml")
    model = scene.model
    assert model.joint_count == 4 and model.body_count == 7
    # each hinge's child frame sits at its world anchor: link k's left end at x = 0.2 k
    child_xform = model.joints.child_xform.numpy()
    body_q = model.body_q.numpy()
    for k in range(4):
        p, q = body_q[k, :3], body_q[k, 3:]
        local = child_xform[k, :3]
        world = p + G.quat_rotate(q, local)
        np.testing.assert_allclose(world, [0.2 * k, 1.0, 0.0], atol=1e-6)


def test_a_run_that_blows_up_stops_with_an_error_and_writes_nothing(edit_scene, tmp_path):
    path = edit_scene("cloth_drape", "k_mu = 300.0", "k_mu = 3.0e7", "k_lambda = 300.0", "k_lambda = 3.0e7")
    usd = tmp_path / "blown.usda"
    with pytest.raises(SimulationError, match=r"frame \d+: the simulation diverged at step"):
        run_scene(load_scene(path, frames=20), usd_path=usd)
    assert not usd.exists()
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".usda" or ".tmp" in p.name]


def test_a_run_far_over_its_stability_bound_is_refused_although_it_stays_finite(edit_scene, tmp_path):
    # ball_bounce with a ground 2500 x too stiff for its dt (dt = 2500 x 2 sqrt(m / ke)): the first
    # contact step kicks the ball to ~10^7 m/s and it flies off, finite; no USD may show that
    path = edit_scene("ball_bounce", "ke = 4.0e3", "ke = 1.0e14")
    usd = tmp_path / "kicked.usda"
    with pytest.raises(SimulationError, match=r"ball_bounce.toml: frame \d+: the simulation diverged at step \d+ "
                                              r"\(t = .* s\): particle 0 moves at .* m/s, over the bound .* lower "
                                              r"sim.dt"):
        run_scene(load_scene(path), usd_path=usd)
    assert not usd.exists()


def test_scene_error_is_a_value_error_that_names_file_and_key(edit_scene):
    path = edit_scene("soft_drop", "dim_y = 4", "dim_y = 0")
    with pytest.raises(ValueError) as info:
        load_scene(path)
    e = info.value
    assert isinstance(e, SceneError)
    assert (e.file, e.key) == (str(path), "soft_grid[0].dim_y")
    assert e.message == "expected an integer >= 1, got 0 (an integer)"
    assert str(e) == f"{path}: soft_grid[0].dim_y: expected an integer >= 1, got 0 (an integer)"


def test_the_readme_scene_example_is_a_valid_scene(tmp_path):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"## Scenes and the simkit command.*?```toml\n(.*?)```", readme, re.S).group(1)
    path = tmp_path / "readme_ball.toml"
    path.write_text(block)
    scene = load_scene(path)
    assert scene.optimize["parameters"] == ["ball.velocity"]
    assert scene.optimize["loss"]["target"] == (1.8, 0.8, 0.45)
    assert scene.settings.frame_dt == pytest.approx(0.02) and scene.model.particle_count == 1


def test_xpbd_integrator_runs_a_scene(edit_scene):
    path = edit_scene("flag", "frames = 100", 'frames = 100\nintegrator = "xpbd"\niterations = 8')
    scene = load_scene(path, frames=5)
    assert type(scene.integrator).__name__ == "XPBD" and scene.integrator.iterations == 8
    q = run_scene(scene).final_state.particle_q.numpy()
    assert np.all(np.isfinite(q)) and q[:, 2].max() > 0.01       # the gust blows the flag out of its plane


SLIDER = """
[sim]
dt = 5.0e-4
substeps = 20
frames = 50
gravity = 0.0
ground = false

[[bodies]]
name = "cart"
pos = [0.0, 1.0, 0.0]
shapes = [{ kind = "box", half_extents = [0.1, 0.1, 0.1], density = 500.0 }]

[[joints]]
kind = "prismatic"
child = "cart"
axis = [1.0, 0.0, 0.0]
target = 0.3
target_ke = 200.0
target_kd = 40.0
"""


def test_a_joint_drive_pulls_towards_its_target(tmp_path):
    path = tmp_path / "slider.toml"
    path.write_text(SLIDER)
    scene = load_scene(path)
    p = run_scene(scene).final_state.body_q.numpy()[0, :3]
    np.testing.assert_allclose(p, [0.3, 1.0, 0.0], atol=0.01)


def test_a_joint_velocity_drive_runs_the_slider_at_its_target_rate(tmp_path):
    # 4 kg cart, target_kd = 40: time constant 0.1 s, 0.5 s of run: within exp(-5) of the rate
    path = tmp_path / "slider.toml"
    path.write_text(SLIDER.replace("target = 0.3\ntarget_ke = 200.0", "target_vel = 0.5"))
    scene = load_scene(path)
    v = run_scene(scene).final_state.body_qd.numpy()[0]
    assert v[3] == pytest.approx(0.5 * (1.0 - np.exp(-5.0)), rel=0.01)


def test_muscle_phases_follow_phase_and_wave(edit_scene):
    path = edit_scene("spring_walker", "gain = 1.0", "gain = 2.0\nphase = 0.5")
    scene = load_scene(path)
    muscles = scene.bodies["muscles"]
    ab = muscles.muscle.params.numpy()
    q = scene.model.particle_q.numpy()
    pairs = scene.model.springs.indices.numpy()
    phase = 0.5 - 31.4 * 0.5 * (q[pairs[:, 0], 0] + q[pairs[:, 1], 0])
    np.testing.assert_allclose(ab, 2.0 * np.stack([np.cos(phase), np.sin(phase)], axis=1), rtol=1e-5, atol=1e-6)
    assert len(muscles.springs) == 21                 # 8 along the rows, 5 rungs, 8 diagonals
    # the activation of frame 0 (at t = dt * substeps / 2) in a control
    control = scene.new_control()
    scene.actuate(control, 0)
    t = 0.5 * scene.settings.frame_dt
    expected = 0.1 * np.tanh(2.0 * np.sin(2.0 * np.pi * 2.0 * t + phase))
    np.testing.assert_allclose(control.spring_activation.numpy(), expected, rtol=1e-6, atol=1e-9)


def test_contact_given_per_unit_mass_reaches_the_model(edit_scene):
    path = edit_scene("ball_bounce", "ke = 4.0e3\nkd = 0.0\nkf = 50.0\n", "time_constant = 0.02\ndamping_ratio = 0.2\n",
                      "[[particles]]", "[rigid_contact]\ndamping_ratio = 0.5\n\n[[particles]]")
    contact = load_scene(path, frames=1).model.contact
    assert [a.numpy()[0] for a in (contact.ke, contact.kd, contact.kf)] == [0.0, 0.0, 0.0]
    assert contact.time_constant.numpy()[0] == pytest.approx(0.02)
    assert contact.damping_ratio.numpy()[0] == pytest.approx(0.2)


def test_a_contact_time_constant_of_zero_is_a_config_error(edit_scene):
    path = edit_scene("ball_bounce", "ke = 4.0e3\n", "time_constant = 0.0\n")
    with pytest.raises(SceneError, match="contact.time_constant: expected a number > 0"):
        load_scene(path)


CYLINDER_SCENE = """
[sim]
dt = 1.0e-3
substeps = 10
frames = 30

[[bodies]]
name = "can"
pos = [0.0, 0.2, 0.0]
shapes = [{ kind = "cylinder", radius = 0.1, half_height = 0.05, density = 500.0 }]

[[shapes]]
kind = "cylinder"
pos = [1.0, 0.3, 0.0]
radius = 0.2
half_height = 0.3

[[shapes]]
kind = "ellipsoid"
pos = [-1.0, 0.3, 0.0]
semi_axes = [0.2, 0.3, 0.1]

[[shapes]]
kind = "cone"
pos = [0.0, 0.2, 1.0]
radius = 0.2
half_height = 0.2
"""


def test_a_cylinder_scene_drops_its_can_onto_the_ground_and_keeps_its_post(tmp_path):
    from simkit.kernels.structs import SHAPE_CONE, SHAPE_CYLINDER, SHAPE_ELLIPSOID
    path = tmp_path / "cylinder.toml"
    path.write_text(CYLINDER_SCENE)
    scene = load_scene(path)
    kind = scene.model.shapes.kind.numpy()
    assert sorted(kind.tolist()) == sorted([SHAPE_CYLINDER, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_CONE])
    np.testing.assert_allclose(scene.model.shapes.params.numpy()[kind == SHAPE_ELLIPSOID][0], [0.2, 0.3, 0.1])
    y = run_scene(scene).final_state.body_q.numpy()[0, 1]
    assert y == pytest.approx(0.05, abs=3e-3)          # landed on its face, not through the ground


def test_a_flat_ellipsoid_in_a_scene_is_an_error_naming_its_key(tmp_path):
    path = tmp_path / "flat.toml"
    path.write_text(CYLINDER_SCENE.replace("semi_axes = [0.2, 0.3, 0.1]", "semi_axes = [0.2, 0.0, 0.1]"))
    with pytest.raises(SceneError, match=r"flat.toml: shapes\[1\].semi_axes: expected an array of 3 numbers > 0"):
        load_scene(path)


def test_a_cylinder_of_zero_height_in_a_scene_is_an_error_naming_its_key(tmp_path):
    path = tmp_path / "flat.toml"
    path.write_text(CYLINDER_SCENE.replace("half_height = 0.3", "half_height = 0.0"))
    with pytest.raises(SceneError, match=r"flat.toml: shapes\[0\].*half_height must be > 0"):
        load_scene(path)


PLANE_SCENE = """
[sim]
dt = 1.0e-3
substeps = 10
frames = 30
ground = false

[[bodies]]
name = "crate"
pos = [0.0, 0.101, 0.0]
shapes = [{ kind = "box", half_extents = [0.1, 0.1, 0.1], density = 500.0 }]

[[shapes]]
kind = "plane"
mu = 1.0

[[shapes]]
kind = "plane"
pos = [0.0, 0.8, 0.0]
rot = [0.0, 0.0, 1.0, 0.0]
half_extents = [0.5, 0.25]
"""


def test_a_plane_scene_sets_its_crate_on_an_infinite_plane_under_a_finite_one_facing_down(tmp_path):
    from simkit.kernels.structs import SHAPE_PLANE
    path = tmp_path / "plane.toml"
    path.write_text(PLANE_SCENE)
    scene = load_scene(path)
    planes = scene.model.shapes.kind.numpy() == SHAPE_PLANE
    assert not scene.model.ground and planes.sum() == 2
    np.testing.assert_allclose(scene.model.shapes.params.numpy()[planes], [[0.0, 0.0, 0.0], [0.5, 0.25, 0.0]])
    y = run_scene(scene).final_state.body_q.numpy()[0, 1]
    assert y == pytest.approx(0.1, abs=3e-3)           # on the plane, not through it


@pytest.mark.parametrize("edit, match", [
    (("half_extents = [0.5, 0.25]", "half_extents = [0.5, 0.0]"),
     r"shapes\[1\].half_extents: expected an array of 2 numbers > 0"),
    (("half_extents = [0.5, 0.25]", "half_extents = [0.5, 0.25, 0.1]"), r"shapes\[1\].half_extents: expected an array of 2"),
    (('{ kind = "box", half_extents = [0.1, 0.1, 0.1], density = 500.0 }', '{ kind = "plane" }'),
     r"bodies\[0\].shapes\[0\].kind: a plane is always static"),
])
def test_a_bad_plane_in_a_scene_is_an_error_naming_its_key(tmp_path, edit, match):
    path = tmp_path / "plane.toml"
    path.write_text(PLANE_SCENE.replace(*edit))
    with pytest.raises(SceneError, match=match):
        load_scene(path)


HEIGHTFIELD_SCENE = PLANE_SCENE.split("[[shapes]]")[0] + """[[shapes]]
kind = "heightfield"
pos = [0.0, -0.2, 0.0]
heights = [[0.2, 0.2, 0.2], [0.2, 0.2, 0.2], [0.2, 0.2, 0.2], [0.0, 0.1, 0.0]]
half_extents = [0.6, 0.5]
mu = 1.0
"""


def test_a_heightfield_scene_sets_its_crate_on_the_terrain(tmp_path):
    from simkit.kernels.structs import SHAPE_HFIELD
    path = tmp_path / "terrain.toml"
    path.write_text(HEIGHTFIELD_SCENE)
    scene = load_scene(path)
    assert scene.model.shapes.kind.numpy().tolist() == [SHAPE_HFIELD, 1]      # the terrain, the crate's box
    assert scene.model.shapes.hfield.numpy()[0].tolist() == [0, 4, 3]
    y = run_scene(scene).final_state.body_q.numpy()[0, 1]
    assert y == pytest.approx(0.1, abs=3e-3)           # on the flat part (0.2 - 0.2 m), not through it


@pytest.mark.parametrize("edit, match", [
    (("[0.0, 0.1, 0.0]]", "[0.0, 0.1]]"), r"shapes\[0\].heights\[3\]: expected a row of at least 2 finite numbers"),
    (("heights = [[0.2, 0.2, 0.2], [0.2, 0.2, 0.2], [0.2, 0.2, 0.2], [0.0, 0.1, 0.0]]", "heights = [[0.2, 0.2]]"),
     r"shapes\[0\].heights: expected an array of at least 2 rows"),
    (("half_extents = [0.6, 0.5]", "half_extents = [0.6, -0.5]"), r"shapes\[0\].half_extents: expected an array of 2 numbers > 0"),
    (('{ kind = "box", half_extents = [0.1, 0.1, 0.1], density = 500.0 }',
      '{ kind = "heightfield", heights = [[0, 0], [0, 0]], half_extents = [1, 1] }'),
     r"bodies\[0\].shapes\[0\].kind: a heightfield is always static"),
])
def test_a_bad_heightfield_in_a_scene_is_an_error_naming_its_key(tmp_path, edit, match):
    path = tmp_path / "terrain.toml"
    path.write_text(HEIGHTFIELD_SCENE.replace(*edit))
    with pytest.raises(SceneError, match=match):
        load_scene(path)


CONVEX_SCENE = CYLINDER_SCENE.replace(
    'shapes = [{ kind = "cylinder", radius = 0.1, half_height = 0.05, density = 500.0 }]',
    'shapes = [{ kind = "convex", points = [[-0.1, -0.05, -0.1], [0.1, -0.05, -0.1], [-0.1, -0.05, 0.1], '
    '[0.1, -0.05, 0.1], [0.0, 0.05, 0.0]], density = 500.0 }]')


def test_a_convex_shape_in_a_scene_is_the_hull_of_its_points_and_lands_on_its_base(tmp_path):
    from simkit.kernels.structs import SHAPE_CONVEX
    path = tmp_path / "convex.toml"
    path.write_text(CONVEX_SCENE)
    scene = load_scene(path)
    s = int(np.flatnonzero(scene.model.shapes.kind.numpy() == SHAPE_CONVEX)[0])
    assert scene.model.shapes.hull.numpy()[s, 1] == 5             # a square pyramid's 5 vertices
    assert scene.model.bodies.mass.numpy()[0] == pytest.approx(500.0 * 0.2 * 0.2 * 0.1 / 3.0)
    y = run_scene(scene).final_state.body_q.numpy()[0, 1]
    assert y == pytest.approx(0.05, abs=3e-3)          # landed on its base, not through the ground


def test_a_flat_convex_shape_in_a_scene_is_an_error_naming_its_key(tmp_path):
    path = tmp_path / "flat.toml"
    path.write_text(CONVEX_SCENE.replace("[0.0, 0.05, 0.0]", "[0.0, -0.05, 0.0]"))
    with pytest.raises(SceneError, match=r"flat.toml: bodies\[0\].shapes\[0\].*the points are in a plane"):
        load_scene(path)
