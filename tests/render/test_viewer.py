"""The viewer: camera math, tessellation, drawables from a model and from a USD file, and the
pause/step/reset logic, without a display; then OpenGL rendering under a virtual display.

The GL tests get their display from the session fixture ``display``: it starts Xvfb on a
free display number when Xvfb is installed (``.ci/run`` installs it) and points DISPLAY at
it; without Xvfb the viewer falls back to pyglet's headless EGL mode (off-screen frames
only). With neither, the GL tests are skipped with the reason. Rendered frames are saved as
PNG artifacts in ``tests/render/artifacts/`` (git-ignored).
"""

import math
import os
import select
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.structs import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_SPHERE
from simkit.render import Camera, UsdExporter, render_frame, write_png
from simkit.render.camera import look_at_matrix
from simkit.render.drawables import BACKGROUND, BODY_COLORS, ModelDrawables, UsdDrawables, scene_bounds
from simkit.render.geometry import (box_mesh, capsule_mesh, cylinder_mesh, ground_mesh, shape_mesh, sphere_mesh,
                                    transform_matrix, vertex_normals)
from simkit.render.image import read_png
from simkit.render.viewer import Playback, play_live, play_usd

ARTIFACTS = Path(__file__).parent / "artifacts"
W, H = 320, 240
EYE, TARGET = (0.0, 0.5, 4.0), (0.0, 0.5, 0.0)
QUARTER_Z = (0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5))      # 90 degrees about +z


# -- scenes -------------------------------------------------------------------------------
def three_objects():
    """A static sphere at the origin of the view, a rigid box (turned a quarter about z, its
    shape offset in the body frame) to the right and a free particle to the left; no ground."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_shape_sphere((0.0, 0.5, 0.0), 0.25)
    body = b.add_body(sk.transform((1.0, 0.5, 0.0), QUARTER_Z))
    # body y -> world -x: the box's center is at world (0.9, 0.5, 0), 0.4 wide and 0.2 high
    b.add_shape_box((0.0, 0.1, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.2, 0.1), body=body)
    b.add_particle((-1.0, 0.5, 0.0), (0.0, 0.0, 0.0), mass=0.1, radius=0.12)
    return b.finalize()


def mixed_model(up_axis="y"):
    """Every kind of drawable: two particles and a spring, a cloth sheet, a soft cube, static
    sphere/box/capsule, a rigid body with two shapes, and the ground."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis=up_axis, ground=True)
    b.add_particle((0.0, 2.0, 0.0), (0.5, 0.0, 0.0), mass=0.1, radius=0.03)
    b.add_particle((0.3, 2.0, 0.0), (0.0, 1.0, 0.0), mass=0.1, radius=0.07)
    b.add_spring(0, 1, ke=50.0, kd=0.1)
    b.add_cloth_grid((1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 3, 3, 0.15, 0.15, mass=0.01,
                     fix_left=True)
    b.add_soft_grid((-1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 1, 1, 1, 0.2, 0.2, 0.2,
                    density=500.0, k_mu=1.0e3, k_lambda=1.0e3, k_damp=0.0)
    b.add_shape_sphere((0.0, 0.5, 0.0), 0.25)
    b.add_shape_box((1.0, 0.2, 0.5), (0.0, 0.0, math.sin(0.3), math.cos(0.3)), (0.3, 0.2, 0.1))
    b.add_shape_capsule((-1.0, 0.3, 0.0), (math.sin(0.4), 0.0, 0.0, math.cos(0.4)), radius=0.1, half_height=0.4)
    body = b.add_body(sk.transform((0.5, 1.0, 1.0), QUARTER_Z), angular_velocity=(0.0, 3.0, 1.0))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=500.0)
    b.add_shape_sphere((0.0, 0.2, 0.0), 0.08, body=body, density=500.0)
    return b.finalize()


def simulate_frames(model, frames, substeps=10, dt=5e-4):
    """States of ``frames`` frames, ``substeps`` steps of ``dt`` apart."""
    integrator = sk.sim.SemiImplicitEuler()
    state, nxt = model.state(), model.state()
    out = []
    for _ in range(frames):
        snapshot = model.state()
        for name in ("particle_q", "body_q"):
            getattr(snapshot, name).assign(getattr(state, name).numpy())
        out.append(snapshot)
        for _ in range(substeps):
            integrator.step(model, state, nxt, None, dt)
            state, nxt = nxt, state
    return out


# -- camera ---------------------------------------------------------------------------------
def test_projection_of_known_points_lands_on_expected_pixels():
    cam = Camera.look_at(EYE, TARGET, fov=45.0)
    f = 1.0 / math.tan(math.radians(22.5))
    px = cam.project([TARGET, (1.0, 0.5, 0.0), (0.0, 1.5, 0.0), (0.0, 0.5, 8.0)], W, H)
    np.testing.assert_allclose(px[0], [W / 2, H / 2], atol=1e-9)
    # one unit right at depth 4: ndc x = f / aspect / 4; one unit up: ndc y = f / 4 (rows go down)
    np.testing.assert_allclose(px[1], [(1.0 + f / (W / H) / 4.0) * W / 2, H / 2], atol=1e-9)
    np.testing.assert_allclose(px[2], [W / 2, (1.0 - f / 4.0) * H / 2], atol=1e-9)
    assert np.isnan(px[3]).all()                     # behind the camera


def test_look_at_places_the_eye_for_every_up_axis():
    for up_axis, eye in (("y", (1.0, 2.0, 3.0)), ("z", (2.0, -3.0, 1.5)), ("x", (1.0, 0.5, -2.0))):
        cam = Camera.look_at(eye, (0.1, 0.2, 0.3), up_axis=up_axis)
        np.testing.assert_allclose(cam.eye, eye, atol=1e-9)
        view = cam.view_matrix()
        np.testing.assert_allclose(view @ [*eye, 1.0], [0.0, 0.0, 0.0, 1.0], atol=1e-9)
        target = view @ [0.1, 0.2, 0.3, 1.0]
        np.testing.assert_allclose(target[:2], 0.0, atol=1e-9)
        assert target[2] == pytest.approx(-cam.distance)
        assert view[1, :3] @ cam.up > 0.0            # the screen's up leans to the world's up
    np.testing.assert_allclose(look_at_matrix((0, 0, 5), (0, 0, 0), (0, 1, 0))[:3, 3], [0, 0, -5])
    with pytest.raises(ValueError, match="same point"):
        Camera.look_at(TARGET, TARGET)


def test_orbit_pan_zoom():
    cam = Camera(target=(1.0, 2.0, 3.0), distance=4.0, yaw=10.0, pitch=20.0)
    cam.orbit(30.0, 100.0)
    assert (cam.yaw, cam.pitch) == (40.0, 89.0)                # pitch stops short of the pole
    assert np.linalg.norm(cam.eye - cam.target) == pytest.approx(4.0)
    before_eye, before_target = cam.eye, cam.target.copy()
    cam.pan(0.25, -0.5)
    moved = cam.target - before_target
    assert moved @ (before_target - before_eye) == pytest.approx(0.0, abs=1e-9)   # across the view
    np.testing.assert_allclose(cam.eye - before_eye, moved, atol=1e-9)
    height = 2.0 * 4.0 * math.tan(math.radians(22.5))
    assert np.linalg.norm(moved) == pytest.approx(height * math.hypot(0.25, 0.5))
    cam.zoom(0.5)
    assert cam.distance == pytest.approx(2.0)


@pytest.mark.parametrize("aspect", [0.5, 4.0 / 3.0, 2.5])
def test_framing_keeps_the_bounds_in_view(aspect):
    lo, hi = np.array([-1.0, 0.0, -2.0]), np.array([3.0, 1.0, 0.5])
    cam = Camera.framing(lo, hi, up_axis="z", aspect=aspect)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    width, height = int(round(240 * aspect)), 240
    px = cam.project(corners, width, height)
    assert np.all((px >= 0.0) & (px <= (width, height)))
    np.testing.assert_allclose(cam.target, 0.5 * (lo + hi))
    empty = Camera.framing(np.full(3, np.inf), np.full(3, -np.inf))    # nothing to frame: 1 m at the origin
    np.testing.assert_allclose(empty.target, 0.0)


# -- geometry --------------------------------------------------------------------------------
def face_normals(mesh):
    x = mesh.positions.astype(np.float64)
    t = mesh.triangles.astype(np.int64)
    return np.cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]])


def enclosed_volume(mesh):
    """Divergence theorem: positive for a closed surface wound outward."""
    x = mesh.positions.astype(np.float64)[mesh.triangles.astype(np.int64)]
    return float(np.einsum("ij,ij->i", x[:, 0], np.cross(x[:, 1], x[:, 2])).sum() / 6.0)


def test_sphere_normals_are_unit_and_outward():
    r = 0.7
    mesh = sphere_mesh(r, rings=12, segments=24)
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(mesh.positions, axis=1), r, atol=1e-6)
    assert (np.einsum("ij,ij->i", mesh.normals, mesh.positions) > 0.0).all()
    faces = face_normals(mesh)
    centroids = mesh.positions[mesh.triangles.astype(np.int64)].mean(axis=1)
    assert (np.linalg.norm(faces, axis=1) > 0.0).all()                    # no collapsed pole triangles
    assert (np.einsum("ij,ij->i", faces, centroids) > 0.0).all()          # wound outward
    assert len(mesh.triangles) == 2 * 24 * (12 - 1)
    assert enclosed_volume(mesh) == pytest.approx(4.0 / 3.0 * math.pi * r ** 3, rel=0.05)


def test_box_has_12_outward_triangles():
    h = np.array([0.3, 0.2, 0.1])
    mesh = box_mesh(h)
    assert mesh.triangles.shape == (12, 3) and mesh.positions.shape == (24, 3)
    faces = face_normals(mesh)
    unit = faces / np.linalg.norm(faces, axis=1, keepdims=True)
    np.testing.assert_allclose(unit, mesh.normals[mesh.triangles[:, 0]], atol=1e-6)   # flat, matching normals
    np.testing.assert_allclose(np.abs(mesh.positions), np.broadcast_to(h, (24, 3)), atol=1e-7)
    assert enclosed_volume(mesh) == pytest.approx(8.0 * h.prod())
    assert shape_mesh(SHAPE_BOX, h).triangles.shape == (12, 3)


def test_capsule_is_a_closed_outward_surface_along_y():
    r, half = 0.1, 0.4
    mesh = capsule_mesh(r, half)
    assert mesh.positions[:, 1].max() == pytest.approx(half + r)
    assert mesh.positions[:, 1].min() == pytest.approx(-half - r)
    assert np.abs(mesh.positions[:, [0, 2]]).max() <= r + 1e-6
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=1), 1.0, atol=1e-6)
    exact = math.pi * r * r * 2.0 * half + 4.0 / 3.0 * math.pi * r ** 3
    assert enclosed_volume(mesh) == pytest.approx(exact, rel=0.03)
    assert shape_mesh(SHAPE_CAPSULE, (r, half, 0.0)).positions.shape == mesh.positions.shape
    assert shape_mesh(SHAPE_SPHERE, (r, 0.0, 0.0)).positions.shape == sphere_mesh(r).positions.shape
    assert shape_mesh(99, (1.0, 1.0, 1.0)) is None


def test_cylinder_is_a_closed_outward_surface_along_y_with_flat_caps():
    r, half = 0.2, 0.1
    mesh = cylinder_mesh(r, half, segments=64)
    np.testing.assert_allclose(np.abs(mesh.positions[:, 1]), half, atol=1e-7)
    assert np.linalg.norm(mesh.positions[:, [0, 2]], axis=1).max() == pytest.approx(r, rel=1e-6)
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=1), 1.0, atol=1e-6)
    faces = face_normals(mesh)
    centers = mesh.positions[mesh.triangles].mean(axis=1)
    assert (np.einsum("ij,ij->i", faces, centers) > 0.0).all()          # every triangle faces outward
    assert enclosed_volume(mesh) == pytest.approx(math.pi * r * r * 2.0 * half, rel=0.01)
    assert shape_mesh(SHAPE_CYLINDER, (r, half, 0.0)).positions.shape == cylinder_mesh(r, half).positions.shape
    with pytest.raises(ValueError, match="segments >= 3"):
        cylinder_mesh(r, half, segments=2)


@pytest.mark.parametrize("up_axis", ["x", "y", "z"])
def test_ground_is_a_checkerboard_facing_up(up_axis):
    mesh = ground_mesh(up_axis, 2.0, tile=0.5)
    up = np.eye(3)[{"x": 0, "y": 1, "z": 2}[up_axis]]
    assert len(mesh.triangles) == 2 * 8 * 8
    faces = face_normals(mesh)
    np.testing.assert_allclose(faces / np.linalg.norm(faces, axis=1, keepdims=True), np.tile(up, (128, 1)), atol=1e-6)
    np.testing.assert_allclose(mesh.positions @ up, 0.0)
    assert np.abs(mesh.positions).max() == pytest.approx(2.0)
    tiles = mesh.colors[::4]                           # one color per tile, alternating
    assert len(np.unique(tiles, axis=0)) == 2 and not np.allclose(tiles[0], tiles[1])


def test_vertex_normals_and_transforms():
    square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [5, 5, 5]], dtype=np.float32)
    n = vertex_normals(square, [[0, 1, 2], [0, 2, 3]])
    np.testing.assert_allclose(n, np.tile([0.0, 0.0, 1.0], (5, 1)))        # the unused vertex gets +z
    m = transform_matrix([1.0, 2.0, 3.0, *QUARTER_Z])
    np.testing.assert_allclose(m @ [1.0, 0.0, 0.0, 1.0], [1.0, 3.0, 3.0, 1.0], atol=1e-12)   # x -> y, then moved


# -- drawables -------------------------------------------------------------------------------
def test_model_drawables_gather_every_part_of_a_state():
    model = mixed_model()
    source = ModelDrawables(model)
    state = simulate_frames(model, 2)[-1]
    drawables = {d.key: d for d in source.frame(state)}
    assert set(drawables) == {"ground", "shape_0", "shape_1", "shape_2", "particles", "springs", "cloth", "soft",
                              "body_0/shape_3", "body_0/shape_4"}
    q = state.particle_q.numpy()
    np.testing.assert_allclose(drawables["particles"].positions, q[:2])
    np.testing.assert_allclose(drawables["particles"].radii, [0.03, 0.07])
    np.testing.assert_allclose(drawables["springs"].positions, q[:2])
    np.testing.assert_allclose(drawables["cloth"].positions, q[2:18])
    assert len(drawables["soft"].indices) == 12                            # the 6 faces of the cube
    body_q = state.body_q.numpy()[0]
    sphere = drawables["body_0/shape_4"]
    rotation = transform_matrix(body_q)[:3, :3]
    expected = (sphere_mesh(0.08).positions + (0.0, 0.2, 0.0)) @ rotation.T + body_q[:3]   # shape offset, then body
    np.testing.assert_allclose(sphere.world_positions(), expected, atol=1e-5)
    np.testing.assert_allclose(sphere.colors[0], BODY_COLORS[0], atol=1e-6)
    lo, hi = scene_bounds(list(drawables.values()))
    assert hi[1] == pytest.approx(2.45, abs=0.01)                          # the top of the cloth
    assert -2.0 < lo[0] and hi[0] < 2.0                                    # the ground (4.9 m) is not framed
    assert np.abs(drawables["ground"].positions).max() > 4.0
    other = mixed_model().state()
    with pytest.raises(ValueError, match="another model"):
        source.frame(other)


def test_model_drawables_draw_mesh_shapes_with_their_triangles():
    v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_mesh(-1, v, f, xform=sk.transform((1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)), scale=0.5)
    body = b.add_body()
    b.add_shape_mesh(body, v, f, density=100.0)
    model = b.finalize()
    drawables = {d.key: d for d in ModelDrawables(model).frame(model.state())}
    static = drawables["shape_0"]
    np.testing.assert_allclose(static.world_positions(), v * 0.5 + (1.0, 0.0, 0.0), atol=1e-6)
    assert len(static.indices) == 4
    assert "body_0/shape_1" in drawables


@pytest.mark.parametrize("stage_up", ["y", "z"])
def test_usd_drawables_replay_the_exported_run(tmp_path, stage_up):
    """Every point, mesh and shape of a file written by UsdExporter lands where the live
    drawables of the same states put it (rotated onto a z-up stage's axis)."""
    model = mixed_model()
    states = simulate_frames(model, 3)
    path = tmp_path / "run.usda"
    fps = 200.0
    with UsdExporter(path, model, fps=fps, up_axis=stage_up) as usd:
        for k, state in enumerate(states):
            usd.write(state, k / fps)
    source = UsdDrawables(path)
    assert len(source) == 3 and source.fps == pytest.approx(fps) and source.up_axis == stage_up
    turn = np.eye(3) if stage_up == "y" else np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    live = ModelDrawables(model)
    names = {"/World/Particles": "particles", "/World/Springs": "springs", "/World/Cloth": "cloth",
             "/World/SoftBodies": "soft", "/World/Ground/": "ground"}
    for k, state in enumerate(states):
        expected = {d.key: d for d in live.frame(state)}
        got = source.frame(k)
        assert len(got) == len(expected)
        for d in got:
            key = names.get(d.key, d.key.replace("/World/Shapes/", "").replace("/World/Bodies/", "")
                            .replace("/geom", ""))
            if d.key == "/World/Ground":
                assert not d.bounded
                continue
            want = expected[key]
            assert d.primitive == want.primitive
            np.testing.assert_allclose(d.world_positions(), want.world_positions() @ turn.T, atol=2e-5, err_msg=key)
            if d.primitive == "points":
                np.testing.assert_allclose(d.radii, want.radii, rtol=1e-6)
            if d.primitive == "triangles":
                np.testing.assert_array_equal(d.indices, want.indices)


def test_playback_pause_step_reset():
    calls = []

    def reset():
        calls.append("reset")
        return 0

    def advance(x):
        calls.append("advance")
        return x + 10

    p = Playback(reset, advance)
    assert (p.current, p.frame, p.paused) == (0, 0, False) and calls == ["reset"]
    assert p.tick() and p.tick() and p.current == 20 and p.frame == 2
    assert p.key("right") and p.current == 20                      # stepping only works while paused
    assert p.key("space") and p.paused
    version = p.version
    assert not p.tick() and p.current == 20 and p.version == version
    p.key("right")
    assert p.current == 30 and p.frame == 3 and p.paused and p.version == version + 1
    assert p.key("R") and p.current == 0 and p.frame == 0 and p.paused
    p.key("space")
    assert not p.paused and p.tick() and p.current == 10
    assert not p.key("q")
    assert calls == ["reset", "advance", "advance", "advance", "reset", "advance"]


def test_png_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    for channels in (3, 4):
        image = rng.integers(0, 256, size=(5, 7, channels), dtype=np.uint8)
        write_png(tmp_path / f"x{channels}.png", image)
        np.testing.assert_array_equal(read_png(tmp_path / f"x{channels}.png"), image)
    with pytest.raises(ValueError, match="uint8"):
        write_png(tmp_path / "bad.png", np.zeros((4, 4, 3)))


# -- no display ------------------------------------------------------------------------------
def test_import_needs_no_display():
    code = "import sys, simkit, simkit.render; assert 'pyglet' not in sys.modules, sorted(sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_windows_without_display_raise_a_clear_error(monkeypatch, tmp_path):
    model = three_objects()
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(RuntimeError, match="no display: set DISPLAY or run under xvfb-run"):
        play_live(model, model.state, lambda s: s)
    path = tmp_path / "one.usda"
    with UsdExporter(path, model) as usd:
        usd.write(model.state(), 0.0)
    with pytest.raises(RuntimeError, match="no display"):
        play_usd(path)


def test_bad_render_arguments():
    model = three_objects()
    with pytest.raises(ValueError, match="width"):
        render_frame(model, model.state(), width=0)
    with pytest.raises(TypeError, match="camera"):
        render_frame(model, model.state(), camera="front")
    with pytest.raises(TypeError, match="Model"):
        render_frame("model", None)
    with pytest.raises(FileNotFoundError):
        play_usd(Path("/nonexistent/run.usda"))


# -- OpenGL ----------------------------------------------------------------------------------
def _start_xvfb() -> tuple[subprocess.Popen, str, int] | None:
    """Xvfb on a display number it picks itself (-displayfd): the process, ":N" and the read
    end of the pipe it wrote N to (kept open while Xvfb runs: a write to a closed pipe would
    kill it), or None if it does not start within 10 s."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        return None
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([xvfb, "-displayfd", str(write_end), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_end)
    text = b""
    while not text.endswith(b"\n") and select.select([read_end], [], [], 10.0)[0]:
        chunk = os.read(read_end, 32)
        if not chunk:
            break
        text += chunk
    if not text.strip().isdigit():
        proc.kill()
        proc.wait()
        os.close(read_end)
        return None
    return proc, f":{int(text)}", read_end


@pytest.fixture(scope="session")
def display():
    """"x11" (Xvfb started for the session, DISPLAY set for this process) or "egl" (no X
    server: pyglet's headless mode); skips every GL test when no OpenGL 3.3 context can be had."""
    saved = os.environ.get("DISPLAY")
    started = _start_xvfb() if "pyglet.gl" not in sys.modules else None
    if started is not None:
        os.environ["DISPLAY"] = started[1]
    backend = "x11" if os.environ.get("DISPLAY") else "egl"
    try:
        try:
            probe = three_objects()
            render_frame(probe, probe.state(), 8, 8)
        except RuntimeError as e:
            pytest.skip(f"no OpenGL context for the viewer ({e}); install Xvfb and Mesa: "
                        f"apt-get install xvfb libgl1-mesa-dri libglx-mesa0")
        yield backend
    finally:
        if started is not None:
            started[0].terminate()
            started[0].wait(timeout=10)
            os.close(started[2])
            if saved is None:
                os.environ.pop("DISPLAY", None)
            else:
                os.environ["DISPLAY"] = saved


@pytest.fixture(scope="session")
def artifacts():
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def foreground(image):
    """Pixels that differ from the background by more than a rounding error."""
    background = np.round(np.asarray(BACKGROUND) * 255.0)
    return (np.abs(image.astype(np.float64) - background) > 10.0).any(axis=2)


def disk(center, radius):
    rows, cols = np.mgrid[0:H, 0:W]
    return (cols + 0.5 - center[0]) ** 2 + (rows + 0.5 - center[1]) ** 2 <= radius ** 2


def rectangle(lo, hi):
    rows, cols = np.mgrid[0:H, 0:W]
    return (cols + 0.5 >= lo[0]) & (cols + 0.5 <= hi[0]) & (rows + 0.5 >= lo[1]) & (rows + 0.5 <= hi[1])


def test_render_frame_puts_each_object_where_the_camera_projects_it(display, artifacts):
    model = three_objects()
    cam = Camera.look_at(EYE, TARGET, fov=45.0)
    image = render_frame(model, model.state(), W, H, camera=cam)
    write_png(artifacts / "viewer_three_objects.png", image)
    assert image.shape == (H, W, 3) and image.dtype == np.uint8
    f = 1.0 / math.tan(math.radians(22.5))
    # the sphere is on the optical axis: a circle of radius f r / sqrt(d^2 - r^2) half-heights
    sphere_r = f * 0.25 / math.sqrt(4.0 ** 2 - 0.25 ** 2) * H / 2
    sphere = cam.project([TARGET], W, H)[0]
    particle = cam.project([(-1.0, 0.5, 0.0)], W, H)[0]
    particle_r = f * 0.12 / 4.0 * H / 2
    corners = np.array([[x, y, z] for x in (0.7, 1.1) for y in (0.4, 0.6) for z in (-0.1, 0.1)])
    box = cam.project(corners, W, H)
    box_lo, box_hi = box.min(axis=0), box.max(axis=0)
    box_center = cam.project([(0.9, 0.5, 0.0)], W, H)[0]
    inside = [disk(sphere, sphere_r - 2.0), disk(particle, particle_r - 2.0),
              rectangle(box_center - (0.1 / 0.2 * (box_center[0] - box_lo[0]), 0.5 * (box_center[1] - box_lo[1])),
                        box_center + (0.1 / 0.2 * (box_hi[0] - box_center[0]), 0.5 * (box_hi[1] - box_center[1])))]
    allowed = disk(sphere, sphere_r + 2.0) | disk(particle, particle_r * 1.05 + 2.0) | \
        rectangle(box_lo - 2.0, box_hi + 2.0)
    fg = foreground(image)
    for region, name in zip(inside, ("sphere", "particle", "box")):
        assert region.sum() > 20 and fg[region].all(), f"the {name} is not drawn where expected"
    stray = np.argwhere(fg & ~allowed)
    assert len(stray) == 0, f"{len(stray)} pixels drawn outside the objects, e.g. (row, col) {stray[:5].tolist()}"
    gray, orange, amber = (image[region].mean(axis=0) for region in inside)
    assert gray.max() - gray.min() < 25                              # the static shape is gray
    assert orange[0] > orange[2] + 60 and amber[0] > amber[2] + 60   # the body and the particle are warm
    assert fg.sum() < 0.2 * W * H


def test_render_frame_of_a_full_scene(display, artifacts):
    model = mixed_model()
    state = simulate_frames(model, 2)[-1]
    image = render_frame(model, state, W, H)
    write_png(artifacts / "viewer_mixed_scene.png", image)
    fg = foreground(image)
    assert not fg[0, W // 2] and fg[H - 1, W // 2]                  # sky above, ground below
    blue = (image[..., 2].astype(int) > image[..., 0].astype(int) + 40) & fg
    assert blue.sum() > 20                                           # the cloth is in view
    np.testing.assert_array_equal(render_frame(model, state, W, H), image)   # deterministic


def test_render_frame_headless_egl_matches(display, tmp_path):
    """The same frame rendered in a process with no DISPLAY at all (pyglet's headless EGL)."""
    script = tmp_path / "egl.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_viewer import three_objects, EYE, TARGET, W, H
        from simkit.render import Camera, render_frame
        model = three_objects()
        try:
            image = render_frame(model, model.state(), W, H, camera=Camera.look_at(EYE, TARGET))
        except RuntimeError as e:
            print("SKIP", e)
            raise SystemExit(0)
        np.save({str(tmp_path / "egl.npy")!r}, image)
    """))
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    if done.stdout.startswith("SKIP"):
        pytest.skip(f"headless EGL is not available here: {done.stdout[5:].strip()}")
    egl = np.load(tmp_path / "egl.npy")
    model = three_objects()
    here = render_frame(model, model.state(), W, H, camera=Camera.look_at(EYE, TARGET))
    assert np.abs(egl.astype(int) - here.astype(int)).mean() < 1.0


def _run_scripted(start, script, timeout=20.0):
    """Run ``start()`` (which opens a viewer window and blocks) while ``script(window)`` runs
    from pyglet's clock once the window is up; the script closes the window. A watchdog closes
    it after ``timeout`` seconds in case the script never runs."""
    import pyglet

    result = {}

    def run_script(dt):
        (window,) = list(pyglet.app.windows)
        try:
            result["value"] = script(window)
        finally:
            window.close()

    def watchdog(dt):
        for window in list(pyglet.app.windows):
            window.close()

    pyglet.clock.schedule_once(run_script, 0.2)
    pyglet.clock.schedule_once(watchdog, timeout)
    try:
        start()
    finally:
        pyglet.clock.unschedule(run_script)
        pyglet.clock.unschedule(watchdog)
    assert "value" in result, "the viewer closed before the test script ran"
    return result["value"]


def _window_pixels(window):
    """Draw the window once and read its back buffer: (H, W, 3) uint8, top row first."""
    from pyglet import gl

    window.switch_to()
    window.dispatch_event("on_draw")
    w, h = window.get_framebuffer_size()
    pixels = np.empty((h, w, 4), dtype=np.uint8)
    gl.glReadBuffer(gl.GL_BACK)
    gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
    gl.glReadPixels(0, 0, w, h, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE, pixels.ctypes.data)
    return np.ascontiguousarray(pixels[::-1, :, :3])


def test_play_live_keys_mouse_and_drawing(display, artifacts):
    if display != "x11":
        pytest.skip("play_live needs an X display: Xvfb is not installed and headless EGL has no windows")
    from pyglet.window import key, mouse

    model = three_objects()
    counts = {"reset": 0, "advance": 0}

    def reset():
        counts["reset"] += 1
        return model.state()

    def advance(state):
        counts["advance"] += 1
        return state

    def script(window):
        window.dispatch_event("on_key_press", key.SPACE, 0)
        assert window.playback.paused
        before = counts["advance"]
        window.dispatch_event("on_key_press", key.RIGHT, 0)
        assert counts["advance"] == before + 1
        window.dispatch_event("on_key_press", key.R, 0)
        assert counts["reset"] == 2 and window.playback.frame == 0
        yaw, distance = window.camera.yaw, window.camera.distance
        window.dispatch_event("on_mouse_drag", 100, 100, 10, 0, mouse.LEFT, 0)
        window.dispatch_event("on_mouse_scroll", 100, 100, 0.0, 1.0)
        assert window.camera.yaw != yaw and window.camera.distance < distance
        window.dispatch_event("on_key_press", key.F, 0)               # frame all again
        return _window_pixels(window)

    image = _run_scripted(lambda: play_live(model, reset, advance, fps=60.0), script)
    write_png(artifacts / "viewer_live_window.png", image)
    fg = foreground(image)
    h, w = fg.shape
    assert fg[h // 2 - 5:h // 2 + 5, w // 2 - 5:w // 2 + 5].all()     # the sphere in the middle
    assert fg[h - 30:, :300].any()                                      # the help text


def test_play_usd_loops_and_restarts(display, tmp_path, artifacts):
    if display != "x11":
        pytest.skip("play_usd needs an X display: Xvfb is not installed and headless EGL has no windows")
    model = mixed_model()
    path = tmp_path / "run.usdc"
    with UsdExporter(path, model, fps=30.0) as usd:
        for k, state in enumerate(simulate_frames(model, 4)):
            usd.write(state, k / 30.0)

    from pyglet.window import key

    def script(window):
        p = window.playback
        p.paused = True
        p.reset()
        visited = [p.current]
        for _ in range(4):
            window.dispatch_event("on_key_press", key.RIGHT, 0)
            visited.append(p.current)
        image = _window_pixels(window)
        window.dispatch_event("on_key_press", key.R, 0)
        return visited, p.current, image

    visited, after_reset, image = _run_scripted(lambda: play_usd(path), script)
    assert visited == [0, 1, 2, 3, 0] and after_reset == 0
    write_png(artifacts / "viewer_usd_window.png", image)
    assert foreground(image).mean() > 0.05


def test_a_cylinder_is_drawn_where_it_is_live_and_from_its_usd_file(tmp_path):
    b = sk.sim.ModelBuilder()
    body = b.add_body(sk.transform((0.0, 0.5, 0.0), (0.0, 0.0, math.sin(0.3), math.cos(0.3))))
    b.add_shape_cylinder((0.1, 0.0, 0.0), (math.sin(0.4), 0.0, 0.0, math.cos(0.4)), 0.2, 0.1, body=body)
    model = b.finalize()
    state = model.state()
    path = tmp_path / "cylinder.usda"
    with UsdExporter(path, model, fps=100.0) as usd:
        usd.write(state, 0.0)
    live = {d.key: d for d in ModelDrawables(model).frame(state)}
    drawn = [d for d in UsdDrawables(path).frame(0) if "shape" in d.key]
    assert len(drawn) == 1
    want = live[drawn[0].key.replace("/World/Bodies/", "").replace("/geom", "")]
    assert want.positions.shape == cylinder_mesh(0.2, 0.1).positions.shape
    np.testing.assert_allclose(drawn[0].world_positions(), want.world_positions(), atol=2e-5)


def test_cone_is_a_closed_outward_surface_with_its_apex_up():
    from simkit.render.geometry import cone_mesh
    r, half = 0.2, 0.3
    mesh = cone_mesh(r, half, segments=128)
    assert mesh.positions[:, 1].max() == pytest.approx(half) and mesh.positions[:, 1].min() == pytest.approx(-half)
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=1), 1.0, atol=1e-6)
    centers = mesh.positions[mesh.triangles].mean(axis=1) - (0.0, -half / 2.0, 0.0)     # from its center of mass
    assert (np.einsum("ij,ij->i", face_normals(mesh), centers) > 0.0).all()
    assert enclosed_volume(mesh) == pytest.approx(math.pi * r * r * 2.0 * half / 3.0, rel=1e-3)
    from simkit.kernels.structs import SHAPE_CONE
    assert shape_mesh(SHAPE_CONE, (r, half, 0.0)).positions.shape == cone_mesh(r, half).positions.shape


def test_ellipsoid_is_a_scaled_sphere_with_the_surfaces_normals():
    from simkit.kernels.structs import SHAPE_ELLIPSOID
    from simkit.render.geometry import ellipsoid_mesh
    e = np.array([0.1, 0.2, 0.05])
    mesh = ellipsoid_mesh(e, rings=32, segments=64)
    x = mesh.positions.astype(np.float64)
    np.testing.assert_allclose(np.sum((x / e) ** 2, axis=1), 1.0, atol=1e-5)
    gradient = x / e ** 2
    np.testing.assert_allclose(mesh.normals, gradient / np.linalg.norm(gradient, axis=1, keepdims=True), atol=1e-5)
    assert enclosed_volume(mesh) == pytest.approx(4.0 / 3.0 * math.pi * e.prod(), rel=0.01)
    assert shape_mesh(SHAPE_ELLIPSOID, e).positions.shape == ellipsoid_mesh(e).positions.shape


def test_a_finite_plane_is_drawn_as_its_rectangle_and_an_infinite_one_as_a_checkerboard_outside_the_fit():
    from simkit.kernels.structs import SHAPE_PLANE
    rect = shape_mesh(SHAPE_PLANE, (0.4, 0.2, 0.0))
    np.testing.assert_allclose(np.abs(rect.positions).max(axis=0), (0.4, 0.0, 0.2))
    up = face_normals(rect) / np.linalg.norm(face_normals(rect), axis=1, keepdims=True)
    np.testing.assert_allclose(up, np.tile([0.0, 1.0, 0.0], (2, 1)), atol=1e-6)     # facing +y
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_plane((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    b.add_particle((0.0, 2.0, 0.0), (0.0, 0.0, 0.0), mass=0.1)
    model = b.finalize()
    drawables = ModelDrawables(model).frame(model.state())
    plane = next(d for d in drawables if d.key == "shape_0")
    assert not plane.bounded and np.abs(plane.positions).max() == pytest.approx(10.0)


def test_model_drawables_draw_a_convex_hull_with_its_triangles():
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * 0.1
    b = sk.sim.ModelBuilder(ground=False)
    body = b.add_body()
    b.add_shape_convex((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), corners, body=body)
    b.add_shape_convex((1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), corners)
    model = b.finalize()
    drawables = {d.key: d for d in ModelDrawables(model).frame(model.state())}
    static = drawables["shape_1"]
    assert sorted(map(tuple, np.round(static.world_positions().astype(np.float64), 6))) == sorted(
        map(tuple, np.round(corners + (1.0, 0.0, 0.0), 6)))
    assert len(static.indices) == 12
    assert "body_0/shape_0" in drawables


def test_model_drawables_draw_a_heightfield_as_its_surface_facing_up():
    heights = np.array([[0.0, 0.1, 0.0], [0.2, 0.3, 0.1]])
    b = sk.sim.ModelBuilder(ground=False)
    b.add_shape_heightfield((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), heights, (0.5, 1.0))
    b.add_particle((0.0, 2.0, 0.0), (0.0, 0.0, 0.0), mass=0.1)
    model = b.finalize()
    terrain = next(d for d in ModelDrawables(model).frame(model.state()) if d.key == "shape_0")
    np.testing.assert_allclose(terrain.world_positions()[:, 1], heights.ravel(), atol=1e-7)
    tri = np.asarray(terrain.indices).reshape(-1, 3)
    p = terrain.world_positions().astype(np.float64)
    assert len(tri) == 4 and np.all(np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])[:, 1] > 0.0)
