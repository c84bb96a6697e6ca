"""USD export: a small simulated scene written with sk.render.UsdExporter, reopened with pxr
and compared with the simulation; the boundary extraction of tetrahedral meshes; atomic
writes and bad input."""

import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom

import simkit as sk
from simkit.render import UsdExporter, tet_surface_triangles

FPS = 200.0
DT = 5.0e-4
SUBSTEPS = 10          # FPS * DT * SUBSTEPS = 1: one written frame every 10 steps
FRAMES = 4
BOX_ROT = (0.0, 0.0, np.sin(0.3), np.cos(0.3))
CAPSULE_ROT = (np.sin(0.4), 0.0, 0.0, np.cos(0.4))


def mixed_model(up_axis="y"):
    """Two free particles joined by a spring, a 2 x 2 cloth sheet, a one-cell soft cube and a
    static sphere, box and capsule. Particles 0-1 are free, 2-10 cloth, 11-18 the soft cube."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis=up_axis, ground=True)
    b.add_particle((0.0, 2.0, 0.0), (0.5, 0.0, 0.0), mass=0.1, radius=0.03)
    b.add_particle((0.3, 2.0, 0.0), (0.0, 1.0, 0.0), mass=0.1, radius=0.07)
    b.add_spring(0, 1, ke=50.0, kd=0.1)
    b.add_cloth_grid((1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 2, 2, 0.1, 0.1, mass=0.01,
                     fix_left=True)
    b.add_soft_grid((-1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 1, 1, 1, 0.1, 0.1, 0.1,
                    density=500.0, k_mu=1.0e3, k_lambda=1.0e3, k_damp=0.0)
    b.add_shape_sphere((0.0, 0.5, 0.0), 0.25)
    b.add_shape_box((1.0, 0.2, 0.5), BOX_ROT, (0.3, 0.2, 0.1))
    b.add_shape_capsule((-1.0, 0.3, 0.0), CAPSULE_ROT, radius=0.1, half_height=0.4)
    return b.finalize()


CLOTH = slice(2, 11)
SOFT = slice(11, 19)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The mixed scene simulated for FRAMES frames, written to run.usda; the positions of
    every written frame are kept for comparison."""
    model = mixed_model()
    path = tmp_path_factory.mktemp("usd") / "run.usda"
    integrator = sk.sim.SemiImplicitEuler()
    state, nxt = model.state(), model.state()
    frames = []
    with UsdExporter(path, model, fps=FPS) as usd:
        for k in range(FRAMES):
            usd.write(state, k / FPS)
            frames.append(state.particle_q.numpy().copy())
            for _ in range(SUBSTEPS):
                integrator.step(model, state, nxt, None, DT)
                state, nxt = nxt, state
    return SimpleNamespace(model=model, path=path, frames=frames, stage=Usd.Stage.Open(str(path)))


def rest_model():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    return b.finalize()


def points_at(stage, path, code):
    return np.array(UsdGeom.PointBased(stage.GetPrimAtPath(path)).GetPointsAttr().Get(code))


def world_point(stage, prim_path, p, code=Usd.TimeCode.Default()):
    m = UsdGeom.Xformable(stage.GetPrimAtPath(prim_path)).ComputeLocalToWorldTransform(code)
    return np.array(m.Transform(Gf.Vec3d(*p)))


# -- the written scene ------------------------------------------------------------------

def test_prims_have_expected_types_and_paths(run):
    expected = {"/World": "Xform", "/World/Particles": "Points", "/World/Springs": "BasisCurves",
                "/World/Cloth": "Mesh", "/World/SoftBodies": "Mesh", "/World/Ground": "Plane",
                "/World/Shapes/shape_0": "Xform", "/World/Shapes/shape_0/geom": "Sphere",
                "/World/Shapes/shape_1/geom": "Cube", "/World/Shapes/shape_2/geom": "Capsule"}
    for path, type_name in expected.items():
        assert run.stage.GetPrimAtPath(path).GetTypeName() == type_name, path
    assert run.stage.GetDefaultPrim().GetPath() == "/World"
    assert not run.stage.GetPrimAtPath("/World/Bodies")


def test_stage_metadata_matches_model_and_fps(run):
    stage = run.stage
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetTimeCodesPerSecond() == FPS
    assert stage.GetFramesPerSecond() == FPS
    assert stage.GetStartTimeCode() == 0.0
    assert stage.GetEndTimeCode() == FRAMES - 1


def test_every_point_prim_has_one_time_sample_per_frame(run):
    for path in ("/World/Particles", "/World/Springs", "/World/Cloth", "/World/SoftBodies"):
        attr = UsdGeom.PointBased(run.stage.GetPrimAtPath(path)).GetPointsAttr()
        assert attr.GetTimeSamples() == [float(k) for k in range(FRAMES)], path


def test_mesh_points_equal_simulated_positions(run):
    for k, q in enumerate(run.frames):
        np.testing.assert_allclose(points_at(run.stage, "/World/Cloth", k), q[CLOTH], rtol=0, atol=1e-6)
        np.testing.assert_allclose(points_at(run.stage, "/World/SoftBodies", k), q[SOFT], rtol=0, atol=1e-6)
    assert not np.allclose(run.frames[-1], run.frames[0])


def test_free_particles_are_points_with_widths_twice_the_radius(run):
    points = UsdGeom.Points(run.stage.GetPrimAtPath("/World/Particles"))
    for k, q in enumerate(run.frames):
        np.testing.assert_allclose(points_at(run.stage, "/World/Particles", k), q[:2], rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.array(points.GetWidthsAttr().Get()), [0.06, 0.14], rtol=1e-6)
    assert points.GetWidthsInterpolation() == UsdGeom.Tokens.vertex


def test_springs_are_linear_curve_segments_between_their_particles(run):
    curves = UsdGeom.BasisCurves(run.stage.GetPrimAtPath("/World/Springs"))
    assert curves.GetTypeAttr().Get() == UsdGeom.Tokens.linear
    assert list(curves.GetCurveVertexCountsAttr().Get()) == [2]
    for k, q in enumerate(run.frames):
        np.testing.assert_allclose(points_at(run.stage, "/World/Springs", k), q[[0, 1]], rtol=0, atol=1e-6)


def test_point_defaults_hold_rest_positions(run):
    rest = run.model.particle_q.numpy()
    np.testing.assert_allclose(points_at(run.stage, "/World/Cloth", Usd.TimeCode.Default()), rest[CLOTH], atol=1e-6)


def test_cloth_topology_is_the_model_triangles(run):
    mesh = UsdGeom.Mesh(run.stage.GetPrimAtPath("/World/Cloth"))
    counts = np.array(mesh.GetFaceVertexCountsAttr().Get())
    faces = np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3) + CLOTH.start
    assert np.all(counts == 3)
    np.testing.assert_array_equal(faces, run.model.triangles.indices.numpy())
    assert mesh.GetFaceVertexIndicesAttr().GetNumTimeSamples() == 0
    assert mesh.GetDoubleSidedAttr().Get()
    assert mesh.GetSubdivisionSchemeAttr().Get() == UsdGeom.Tokens.none


def test_soft_mesh_is_the_closed_boundary_of_the_cube(run):
    mesh = UsdGeom.Mesh(run.stage.GetPrimAtPath("/World/SoftBodies"))
    faces = np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3)
    assert len(faces) == 12
    rest = points_at(run.stage, "/World/SoftBodies", Usd.TimeCode.Default()).astype(np.float64)
    assert enclosed_volume(rest, faces) == pytest.approx(1.0e-3, rel=1e-5)


def test_extent_encloses_points_at_each_frame(run):
    for path in ("/World/Particles", "/World/Cloth", "/World/SoftBodies"):
        prim = UsdGeom.PointBased(run.stage.GetPrimAtPath(path))
        for k in range(FRAMES):
            lo, hi = np.array(prim.GetExtentAttr().Get(k))
            p = np.array(prim.GetPointsAttr().Get(k))
            assert np.all(lo <= p.min(axis=0) + 1e-7) and np.all(p.max(axis=0) <= hi + 1e-7), (path, k)


def test_static_shapes_have_their_transforms_and_sizes(run):
    stage = run.stage
    sphere = UsdGeom.Sphere(stage.GetPrimAtPath("/World/Shapes/shape_0/geom"))
    assert sphere.GetRadiusAttr().Get() == pytest.approx(0.25)
    np.testing.assert_allclose(world_point(stage, "/World/Shapes/shape_0/geom", (0, 0, 0)), (0.0, 0.5, 0.0), atol=1e-6)

    cube = UsdGeom.Cube(stage.GetPrimAtPath("/World/Shapes/shape_1/geom"))
    assert cube.GetSizeAttr().Get() == 2.0
    half = np.array([0.3, 0.2, 0.1])
    corner = np.array([1.0, 1.0, 1.0])
    expected = np.array((1.0, 0.2, 0.5)) + sk.sim.geometry.quat_rotate(np.array(BOX_ROT), half * corner)
    np.testing.assert_allclose(world_point(stage, "/World/Shapes/shape_1/geom", corner), expected, atol=1e-6)

    capsule = UsdGeom.Capsule(stage.GetPrimAtPath("/World/Shapes/shape_2/geom"))
    assert capsule.GetAxisAttr().Get() == UsdGeom.Tokens.y
    assert capsule.GetRadiusAttr().Get() == pytest.approx(0.1)
    assert capsule.GetHeightAttr().Get() == pytest.approx(0.8)
    tip = np.array((-1.0, 0.3, 0.0)) + sk.sim.geometry.quat_rotate(np.array(CAPSULE_ROT), [0.0, 0.4, 0.0])
    np.testing.assert_allclose(world_point(stage, "/World/Shapes/shape_2/geom", (0, 0.4, 0)), tip, atol=1e-6)


def test_ground_is_a_plane_normal_to_the_up_axis(run):
    plane = UsdGeom.Plane(run.stage.GetPrimAtPath("/World/Ground"))
    assert plane.GetAxisAttr().Get() == "Y"
    assert plane.GetWidthAttr().Get() >= 4.0


# -- formats, axes, time codes ----------------------------------------------------------

@pytest.mark.parametrize("ext,magic", [(".usda", b"#usda"), (".usd", b"PXR-USDC"), (".usdc", b"PXR-USDC")])
def test_each_extension_writes_a_readable_file(tmp_path, ext, magic):
    model = rest_model()
    path = tmp_path / f"scene{ext}"
    with UsdExporter(str(path), model, fps=24) as usd:
        usd.write(model.state(), 0.0)
        usd.write(model.state(), 1.0)
    assert path.read_bytes().startswith(magic)
    stage = Usd.Stage.Open(str(path))
    assert UsdGeom.PointBased(stage.GetPrimAtPath("/World/Particles")).GetPointsAttr().GetTimeSamples() == [0.0, 24.0]


def test_z_up_model_gives_a_z_up_stage_without_rotation(tmp_path):
    usd = UsdExporter(tmp_path / "z.usda", mixed_model(up_axis="z"))
    usd.close()
    stage = Usd.Stage.Open(str(tmp_path / "z.usda"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.Xformable(stage.GetPrimAtPath("/World")).GetOrderedXformOps() == []
    assert UsdGeom.Plane(stage.GetPrimAtPath("/World/Ground")).GetAxisAttr().Get() == "Z"


def test_x_up_model_is_rotated_onto_the_y_up_stage(tmp_path):
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="x", ground=False)
    b.add_particle((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    with UsdExporter(tmp_path / "x.usda", b.finalize()):
        pass
    stage = Usd.Stage.Open(str(tmp_path / "x.usda"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
    np.testing.assert_allclose(world_point(stage, "/World/Particles", (1, 0, 0)), (0, 1, 0), atol=1e-6)
    np.testing.assert_allclose(world_point(stage, "/World/Particles", (0, 0, 1)), (0, 0, 1), atol=1e-6)


def test_up_axis_override_rotates_model_up_onto_stage_up(tmp_path):
    with UsdExporter(tmp_path / "yz.usda", rest_model(), up_axis="z"):
        pass
    stage = Usd.Stage.Open(str(tmp_path / "yz.usda"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    np.testing.assert_allclose(world_point(stage, "/World/Particles", (0, 1, 0)), (0, 0, 1), atol=1e-6)
    assert np.linalg.det(np.array(UsdGeom.Xformable(stage.GetPrimAtPath("/World")).GetLocalTransformation())[:3, :3]) \
        == pytest.approx(1.0)


def test_scale_is_a_uniform_scale_on_the_root(tmp_path):
    with UsdExporter(tmp_path / "s.usda", rest_model(), scale=100.0):
        pass
    stage = Usd.Stage.Open(str(tmp_path / "s.usda"))
    np.testing.assert_allclose(world_point(stage, "/World/Particles", (0, 1, 0)), (0, 100, 0), atol=1e-4)
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0


def test_time_codes_are_time_times_fps_snapped_to_whole_frames(tmp_path):
    model = rest_model()
    with UsdExporter(tmp_path / "t.usda", model, fps=60) as usd:
        for t in (0.1, 0.2, 0.3, 0.3 + 0.25 / 60):
            usd.write(model.state(), t)
    stage = Usd.Stage.Open(str(tmp_path / "t.usda"))
    codes = UsdGeom.Points(stage.GetPrimAtPath("/World/Particles")).GetPointsAttr().GetTimeSamples()
    assert codes[:3] == [6.0, 12.0, 18.0]
    assert codes[3] == pytest.approx(18.25)
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (6.0, pytest.approx(18.25))


def test_float64_model_is_written_as_float32_points(tmp_path):
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.1, 1.0, 0.2), (0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize(dtype=sk.float64)
    with UsdExporter(tmp_path / "d.usda", model) as usd:
        usd.write(model.state(), 0.0)
    stage = Usd.Stage.Open(str(tmp_path / "d.usda"))
    np.testing.assert_allclose(points_at(stage, "/World/Particles", 0), [[0.1, 1.0, 0.2]], atol=1e-7)


def test_unknown_shape_kind_warns_and_keeps_its_transform(tmp_path):
    model = mixed_model()
    shapes = model.shapes
    model.shapes = SimpleNamespace(kind=sk.array(np.array([0, 1, 99], dtype=np.int32), dtype=sk.int32),
                                   xform=shapes.xform, params=shapes.params, body=shapes.body)
    with pytest.warns(UserWarning, match="shape kind 99 at /World/Shapes/shape_2 has no USD counterpart"):
        UsdExporter(tmp_path / "k.usda", model).close()
    stage = Usd.Stage.Open(str(tmp_path / "k.usda"))
    assert stage.GetPrimAtPath("/World/Shapes/shape_2").GetTypeName() == "Xform"
    assert not stage.GetPrimAtPath("/World/Shapes/shape_2/geom")


# -- rigid bodies (the path that animates body-attached shapes) ------------------------------

def test_body_shapes_follow_their_body_in_time_samples(tmp_path):
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_shape_sphere((2.0, 0.5, 0.0), 0.25)
    box = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)), velocity=(0.5, 1.0, 0.0),
                     angular_velocity=(0.0, 0.0, 3.0))
    b.add_shape_box((0.1, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.2, 0.1, 0.1), body=box)
    model = b.finalize()
    state, nxt = model.state(), model.state()
    poses = []
    with UsdExporter(tmp_path / "b.usda", model, fps=10) as usd:
        for k in range(3):
            usd.write(state, k / 10)
            poses.append(state.body_q.numpy()[0].astype(np.float64))
            for _ in range(10):
                sk.sim.SemiImplicitEuler().step(model, state, nxt, None, 0.01)
                state, nxt = nxt, state
    stage = Usd.Stage.Open(str(tmp_path / "b.usda"))
    assert stage.GetPrimAtPath("/World/Shapes/shape_0/geom").GetTypeName() == "Sphere"
    assert not stage.GetPrimAtPath("/World/Shapes/shape_1")
    assert stage.GetPrimAtPath("/World/Bodies/body_0/shape_1/geom").GetTypeName() == "Cube"
    assert not np.allclose(poses[0], poses[-1])
    for k, pose in enumerate(poses):
        expected = pose[:3] + sk.sim.geometry.quat_rotate(pose[3:], np.array((0.1, 0.0, 0.0)))
        np.testing.assert_allclose(world_point(stage, "/World/Bodies/body_0/shape_1", (0, 0, 0), k), expected,
                                   atol=1e-5)
    ops = UsdGeom.Xformable(stage.GetPrimAtPath("/World/Bodies/body_0")).GetOrderedXformOps()
    assert [op.GetAttr().GetTimeSamples() for op in ops] == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]


# -- atomic writes -------------------------------------------------------------------------

def test_nothing_is_written_before_close(tmp_path):
    model = rest_model()
    path = tmp_path / "late.usda"
    usd = UsdExporter(path, model)
    usd.write(model.state(), 0.0)
    assert os.listdir(tmp_path) == []
    usd.close()
    assert os.listdir(tmp_path) == ["late.usda"]


def test_existing_file_is_untouched_until_close(tmp_path):
    model = rest_model()
    path = tmp_path / "old.usda"
    path.write_text("previous run")
    usd = UsdExporter(path, model)
    usd.write(model.state(), 0.0)
    assert path.read_text() == "previous run"
    usd.close()
    assert Usd.Stage.Open(str(path)).GetPrimAtPath("/World/Particles")


def test_exception_inside_with_block_leaves_path_as_it_was(tmp_path):
    model = rest_model()
    path = tmp_path / "crash.usdc"
    path.write_bytes(b"keep")
    with pytest.raises(RuntimeError, match="boom"):
        with UsdExporter(path, model) as usd:
            usd.write(model.state(), 0.0)
            raise RuntimeError("boom")
    assert path.read_bytes() == b"keep"
    assert os.listdir(tmp_path) == ["crash.usdc"]
    assert usd.closed


def test_close_twice_is_harmless_and_leaves_no_temporary_files(tmp_path):
    usd = UsdExporter(tmp_path / "twice.usd", rest_model())
    usd.close()
    usd.close()
    assert os.listdir(tmp_path) == ["twice.usd"]


def test_failed_save_leaves_path_untouched(tmp_path, monkeypatch):
    path = tmp_path / "fail.usda"
    path.write_text("previous run")
    usd = UsdExporter(path, rest_model())
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        usd.close()
    assert path.read_text() == "previous run"
    assert os.listdir(tmp_path) == ["fail.usda"]
    monkeypatch.undo()
    usd.close()
    assert Usd.Stage.Open(str(path)).GetPrimAtPath("/World/Particles")


# -- bad input -----------------------------------------------------------------------------

def test_write_rejects_a_non_state(tmp_path):
    usd = UsdExporter(tmp_path / "a.usda", rest_model())
    with pytest.raises(TypeError, match="UsdExporter.write: state must be a simkit.sim.State, got ndarray"):
        usd.write(np.zeros((1, 3)), 0.0)


def test_write_rejects_a_state_of_another_model(tmp_path):
    usd = UsdExporter(tmp_path / "a.usda", rest_model())
    with pytest.raises(ValueError, match="UsdExporter.write: state was made by another model"):
        usd.write(rest_model().state(), 0.0)


def test_write_rejects_time_that_does_not_increase(tmp_path):
    model = rest_model()
    usd = UsdExporter(tmp_path / "a.usda", model, fps=10)
    usd.write(model.state(), 0.5)
    for t in (0.4, 0.5):
        with pytest.raises(ValueError, match=rf"UsdExporter.write: time {t} s .* not after"):
            usd.write(model.state(), t)
    with pytest.raises(ValueError, match="UsdExporter.write: time must be finite"):
        usd.write(model.state(), float("nan"))
    with pytest.raises(TypeError, match="UsdExporter.write: time expects a number, got str"):
        usd.write(model.state(), "1")
    usd.write(model.state(), 0.6)
    assert usd.frame_count == 2


def test_write_refuses_a_nan_particle_naming_frame_time_and_prim_and_keeps_the_earlier_frames(tmp_path):
    model = rest_model()
    usd = UsdExporter(tmp_path / "a.usda", model, fps=10)
    usd.write(model.state(), 0.0)
    bad = model.state()
    bad.particle_q.assign(np.array([[0.0, float("nan"), 0.0]]))
    with pytest.raises(ValueError, match=r"UsdExporter.write: frame 1 \(time 0.1 s, time code 1\): particle 0 "
                                         r"\(of /World/Particles\) has a non-finite position \[0.0, nan, 0.0\]"):
        usd.write(bad, 0.1)
    assert usd.frame_count == 1
    usd.close()
    stage = Usd.Stage.Open(str(tmp_path / "a.usda"))
    assert stage.GetEndTimeCode() == 0.0 and np.all(np.isfinite(points_at(stage, "/World/Particles", 0.0)))


def test_write_refuses_an_infinite_body_pose_naming_the_body_prim(tmp_path):
    b = sk.sim.ModelBuilder(ground=False)
    body = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body)
    model = b.finalize()
    state = model.state()
    state.body_q.assign(np.array([[float("inf"), 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"frame 0 \(time 0 s, time code 0\): body 0 \(/World/Bodies/body_0\) has a "
                                         r"non-finite pose"):
        UsdExporter(tmp_path / "a.usda", model).write(state, 0.0)


def test_write_after_close_raises(tmp_path):
    model = rest_model()
    usd = UsdExporter(tmp_path / "a.usda", model)
    usd.close()
    with pytest.raises(ValueError, match="UsdExporter.write: .* is closed"):
        usd.write(model.state(), 0.0)


@pytest.mark.parametrize("name", ["out.usdz", "out.abc", "out"])
def test_unsupported_extension_raises_and_writes_nothing(tmp_path, name):
    with pytest.raises(ValueError, match="UsdExporter: path .* unsupported extension"):
        UsdExporter(tmp_path / name, rest_model())
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kwargs,error,message", [
    ({"model": "model"}, TypeError, "model must be a simkit.sim.Model, got str"),
    ({"fps": 0}, ValueError, "fps must be > 0"),
    ({"fps": True}, TypeError, "fps expects a number, got bool"),
    ({"scale": -1.0}, ValueError, "scale must be > 0"),
    ({"up_axis": "x"}, ValueError, "up_axis must be 'y', 'z' or None"),
])
def test_constructor_rejects_bad_arguments(tmp_path, kwargs, error, message):
    args = {"model": rest_model(), **kwargs}
    with pytest.raises(error, match=f"UsdExporter: {message}"):
        UsdExporter(tmp_path / "a.usda", **args)


def test_constructor_rejects_a_missing_folder_naming_it_and_creates_none(tmp_path):
    # the same rule as the CLI's --usd: no folder is created for an output
    with pytest.raises(FileNotFoundError, match=f"UsdExporter: the folder {tmp_path / 'missing'} of .* does not exist"):
        UsdExporter(tmp_path / "missing" / "a.usda", rest_model())
    assert not (tmp_path / "missing").exists()


def test_import_simkit_does_not_load_pxr():
    code = "import sys, simkit; assert 'pxr' not in sys.modules; simkit.render.UsdExporter; assert 'pxr' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- boundary of tetrahedral meshes --------------------------------------------------------

def enclosed_volume(points, triangles) -> float:
    """The volume a closed, outward-wound triangle surface encloses (divergence theorem)."""
    a, b, c = (points[triangles[:, i]] for i in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def assert_closed(triangles):
    """Every directed edge appears once and its reverse once: a closed, consistently wound surface."""
    edges = [(t[i], t[(i + 1) % 3]) for t in triangles.tolist() for i in range(3)]
    assert len(set(edges)) == len(edges)
    assert all((b, a) in set(edges) for a, b in edges)


def test_single_tet_has_four_outward_faces():
    p = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    tris = tet_surface_triangles([[0, 1, 2, 3]])
    assert tris.shape == (4, 3)
    center = p.mean(axis=0)
    for t in tris:
        normal = np.cross(p[t[1]] - p[t[0]], p[t[2]] - p[t[0]])
        assert normal @ (p[t].mean(axis=0) - center) > 0.0
    assert_closed(tris)


def test_soft_grid_surface_is_closed_and_outward():
    b = sk.sim.ModelBuilder(ground=False)
    b.add_soft_grid((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 2, 2, 2, 0.1, 0.1, 0.1,
                    density=100.0, k_mu=1.0e3, k_lambda=1.0e3, k_damp=0.0)
    model = b.finalize()
    points = model.particle_q.numpy().astype(np.float64)
    tris = tet_surface_triangles(model.tets.indices.numpy())
    assert tris.shape == (6 * 4 * 2, 3)
    assert_closed(tris)
    assert enclosed_volume(points, tris) == pytest.approx(0.2 ** 3, rel=1e-5)
    assert len(np.unique(tris)) == 26


def test_soft_mesh_hides_the_interior_particle(tmp_path):
    b = sk.sim.ModelBuilder(ground=False)
    b.add_soft_grid((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 2, 2, 2, 0.1, 0.1, 0.1,
                    density=100.0, k_mu=1.0e3, k_lambda=1.0e3, k_damp=0.0)
    with UsdExporter(tmp_path / "soft.usda", b.finalize()):
        pass
    stage = Usd.Stage.Open(str(tmp_path / "soft.usda"))
    points = points_at(stage, "/World/SoftBodies", Usd.TimeCode.Default())
    assert len(points) == 26
    assert not np.any(np.all(np.isclose(points, 0.1), axis=1))
    assert not stage.GetPrimAtPath("/World/Particles")


def test_inverted_tets_are_oriented_by_their_points():
    p = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    tris = tet_surface_triangles([[0, 1, 3, 2]], points=p)
    assert enclosed_volume(p, tris) == pytest.approx(1.0 / 6.0)
    assert enclosed_volume(p, tet_surface_triangles([[0, 1, 3, 2]])) == pytest.approx(-1.0 / 6.0)


def test_shared_faces_are_dropped():
    tris = tet_surface_triangles([[0, 1, 2, 3], [1, 2, 3, 4]])
    assert len(tris) == 6
    assert not any(sorted(t) == [1, 2, 3] for t in tris.tolist())


def test_surface_rejects_bad_tets():
    with pytest.raises(ValueError, match="tet_surface_triangles: tets must be an M x 4 integer array"):
        tet_surface_triangles(np.zeros((2, 3), dtype=np.int32))
    with pytest.raises(ValueError, match="tet_surface_triangles: points must be an N x 3 array"):
        tet_surface_triangles([[0, 1, 2, 3]], points=np.zeros((3, 3)))


def test_mesh_shapes_are_written_as_usd_meshes(tmp_path):
    v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    b = sk.sim.ModelBuilder()
    b.add_shape_mesh(-1, v, f, scale=2.0)
    body = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_mesh(body, v, f, scale=0.1)
    model = b.finalize()
    UsdExporter(tmp_path / "m.usda", model).close()
    stage = Usd.Stage.Open(str(tmp_path / "m.usda"))
    for path, scale in (("/World/Shapes/shape_0/geom", 2.0), ("/World/Bodies/body_0/shape_1/geom", 0.1)):
        mesh = UsdGeom.Mesh(stage.GetPrimAtPath(path))
        np.testing.assert_allclose(np.array(mesh.GetPointsAttr().Get()), v * scale, atol=1e-7)
        assert list(mesh.GetFaceVertexCountsAttr().Get()) == [3] * 4
        assert list(mesh.GetFaceVertexIndicesAttr().Get()) == f.reshape(-1).tolist()


def test_a_cylinder_is_a_usd_cylinder_along_y_at_its_body_pose(tmp_path):
    b = sk.sim.ModelBuilder()
    body = b.add_body(sk.transform((0.5, 1.0, 0.0), (0.0, 0.0, np.sin(0.2), np.cos(0.2))))
    b.add_shape_cylinder((0.0, 0.0, 0.0), CAPSULE_ROT, radius=0.2, half_height=0.1, body=body)
    model = b.finalize()
    path = tmp_path / "cylinder.usda"
    with UsdExporter(path, model, fps=FPS) as usd:
        usd.write(model.state(), 0.0)
    stage = Usd.Stage.Open(str(path))
    prim = next(p for p in stage.Traverse() if p.GetTypeName() == "Cylinder")
    cylinder = UsdGeom.Cylinder(prim)
    assert cylinder.GetAxisAttr().Get() == UsdGeom.Tokens.y
    assert cylinder.GetRadiusAttr().Get() == pytest.approx(0.2)
    assert cylinder.GetHeightAttr().Get() == pytest.approx(0.2)
    q = sk.sim.geometry.quat_multiply(np.array([0.0, 0.0, np.sin(0.2), np.cos(0.2)]), np.array(CAPSULE_ROT))
    top = np.array((0.5, 1.0, 0.0)) + sk.sim.geometry.quat_rotate(q, [0.0, 0.1, 0.0])
    np.testing.assert_allclose(world_point(stage, str(prim.GetPath()), (0, 0.1, 0), Usd.TimeCode(0.0)), top,
                               atol=1e-6)


def test_a_cone_is_a_usd_cone_along_y_with_its_apex_at_plus_half_height(tmp_path):
    b = sk.sim.ModelBuilder()
    b.add_shape_cone((0.5, 1.0, 0.0), CAPSULE_ROT, radius=0.2, half_height=0.3)      # static
    b.add_particle((0.0, 2.0, 0.0), (0.0, 0.0, 0.0), mass=0.1)
    model = b.finalize()
    path = tmp_path / "cone.usda"
    with UsdExporter(path, model, fps=FPS) as usd:
        usd.write(model.state(), 0.0)
    stage = Usd.Stage.Open(str(path))
    prim = next(p for p in stage.Traverse() if p.GetTypeName() == "Cone")
    cone = UsdGeom.Cone(prim)
    assert cone.GetAxisAttr().Get() == UsdGeom.Tokens.y
    assert cone.GetRadiusAttr().Get() == pytest.approx(0.2) and cone.GetHeightAttr().Get() == pytest.approx(0.6)
    apex = np.array((0.5, 1.0, 0.0)) + sk.sim.geometry.quat_rotate(np.array(CAPSULE_ROT), [0.0, 0.3, 0.0])
    np.testing.assert_allclose(world_point(stage, str(prim.GetPath()), (0, 0.3, 0)), apex, atol=1e-6)


def test_an_ellipsoid_is_a_unit_usd_sphere_scaled_to_its_semi_axes(tmp_path):
    b = sk.sim.ModelBuilder()
    b.add_shape_ellipsoid((0.5, 1.0, 0.0), BOX_ROT, (0.1, 0.2, 0.3))       # static
    b.add_particle((0.0, 2.0, 0.0), (0.0, 0.0, 0.0), mass=0.1)
    model = b.finalize()
    path = tmp_path / "ellipsoid.usda"
    with UsdExporter(path, model, fps=FPS) as usd:
        usd.write(model.state(), 0.0)
    stage = Usd.Stage.Open(str(path))
    prim = stage.GetPrimAtPath("/World/Shapes/shape_0/geom")
    assert prim.GetTypeName() == "Sphere" and UsdGeom.Sphere(prim).GetRadiusAttr().Get() == pytest.approx(1.0)
    tip = np.array((0.5, 1.0, 0.0)) + sk.sim.geometry.quat_rotate(np.array(BOX_ROT), [0.0, 0.0, 0.3])
    np.testing.assert_allclose(world_point(stage, str(prim.GetPath()), (0, 0, 1)), tip, atol=1e-6)


def test_a_plane_is_a_usd_plane_facing_its_local_y_sized_to_its_half_extents_or_drawn_20_m_when_infinite(tmp_path):
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_plane((0.5, 1.0, 0.0), BOX_ROT, half_extents=(0.4, 0.2))
    b.add_shape_plane((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    b.add_particle((0.0, 2.0, 0.0), (0.0, 0.0, 0.0), mass=0.1)
    model = b.finalize()
    path = tmp_path / "planes.usda"
    with UsdExporter(path, model, fps=FPS) as usd:
        usd.write(model.state(), 0.0)
    stage = Usd.Stage.Open(str(path))
    finite, infinite = (UsdGeom.Plane(stage.GetPrimAtPath(f"/World/Shapes/shape_{i}/geom")) for i in (0, 1))
    assert finite.GetAxisAttr().Get() == UsdGeom.Tokens.y
    assert finite.GetWidthAttr().Get() == pytest.approx(0.8) and finite.GetLengthAttr().Get() == pytest.approx(0.4)
    assert infinite.GetWidthAttr().Get() == pytest.approx(20.0) and infinite.GetLengthAttr().Get() == pytest.approx(20.0)
    corner = np.array((0.5, 1.0, 0.0)) + sk.sim.geometry.quat_rotate(np.array(BOX_ROT), [0.4, 0.0, 0.2])
    np.testing.assert_allclose(world_point(stage, "/World/Shapes/shape_0/geom", (0.4, 0.0, 0.2)), corner, atol=1e-6)


def test_a_convex_hull_is_written_as_the_usd_mesh_of_its_triangles(tmp_path):
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * 0.1
    b = sk.sim.ModelBuilder()
    body = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_convex((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), np.vstack([corners, [[0.0, 0.0, 0.0]]]), body=body)
    model = b.finalize()
    UsdExporter(tmp_path / "hull.usda", model).close()
    stage = Usd.Stage.Open(str(tmp_path / "hull.usda"))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/Bodies/body_0/shape_0/geom"))
    points = np.array(mesh.GetPointsAttr().Get())
    assert sorted(map(tuple, np.round(points.astype(np.float64), 6))) == sorted(map(tuple, np.round(corners, 6)))   # no inner point
    assert list(mesh.GetFaceVertexCountsAttr().Get()) == [3] * 12


def test_a_heightfield_is_written_as_the_usd_mesh_of_its_surface(tmp_path):
    heights = np.array([[0.0, 0.1, 0.0], [0.2, 0.3, 0.1]])
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_heightfield((0.0, -1.0, 0.0), (0.0, 0.0, 0.0, 1.0), heights, (0.5, 1.0))
    b.add_particle((0.0, 2.0, 0.0), (0.0, 0.0, 0.0), mass=0.1)
    model = b.finalize()
    UsdExporter(tmp_path / "terrain.usda", model).close()
    stage = Usd.Stage.Open(str(tmp_path / "terrain.usda"))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/Shapes/shape_0/geom"))
    points = np.array(mesh.GetPointsAttr().Get(), dtype=np.float64)
    # x-major vertices: x = -0.5, 0.5 across the 2 rows, z = -1, 0, 1 along the 3 columns
    np.testing.assert_allclose(points[:, 1], heights.ravel(), atol=1e-7)
    np.testing.assert_allclose(points[[0, 5], 0], (-0.5, 0.5))
    np.testing.assert_allclose(points[[0, 2], 2], (-1.0, 1.0))
    assert list(mesh.GetFaceVertexCountsAttr().Get()) == [3] * 4
    np.testing.assert_allclose(world_point(stage, "/World/Shapes/shape_0/geom", (0.0, 0.0, 0.0)), (0.0, -1.0, 0.0),
                               atol=1e-6)
