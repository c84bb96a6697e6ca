"""ImageExporter (UsdExporter's sibling for pictures) and OffscreenRenderer: PNG frames and
mp4 videos of a run without a display, the automatic choice of backend, and bad input.

The OpenGL backend is checked in a subprocess without DISPLAY (pyglet's headless EGL); it is
skipped where no EGL context can be made. The software backend always runs."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import simkit as sk
from simkit.render import Camera, ImageExporter, OffscreenRenderer
from simkit.render.drawables import ModelDrawables
from simkit.render.image import read_png

W, H = 64, 48


def thrown_ball():
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True)
    b.add_particle((0.0, 1.0, 0.0), (2.0, 3.0, 0.0), mass=1.0, radius=0.2)
    return b.finalize()


def frames_of(model, count, substeps=20, dt=1e-3):
    integrator = sk.sim.SemiImplicitEuler()
    state, nxt = model.state(), model.state()
    for _ in range(count):
        yield state
        for _ in range(substeps):
            integrator.step(model, state, nxt, None, dt)
            state, nxt = nxt, state


def test_png_frames_show_the_ball_moving(tmp_path):
    model = thrown_ball()
    with ImageExporter(tmp_path / "frames", model, size=(W, H), backend="software") as images:
        for k, state in enumerate(frames_of(model, 3)):
            images.write(state, k / 60)
    names = sorted(p.name for p in (tmp_path / "frames").iterdir())
    assert names == ["frame_0000.png", "frame_0001.png", "frame_0002.png"]
    pictures = [read_png(tmp_path / "frames" / n) for n in names]
    assert all(p.shape == (H, W, 3) for p in pictures)
    assert (pictures[0] != pictures[1]).any() and (pictures[1] != pictures[2]).any()
    assert images.note.startswith("software rasterizer")


def test_a_given_camera_draws_each_frame_as_it_is_written(tmp_path):
    model = thrown_ball()
    drawn = []
    images = ImageExporter(tmp_path / "frames", model, size=(W, H), backend="software",
                           camera=Camera.look_at((0, 1, 6), (0, 1, 0)), on_draw=drawn.append)
    images.write(model.state())
    assert drawn == [0] and (tmp_path / "frames" / "frame_0000.png").is_file()
    images.close()


def test_the_automatic_camera_frames_the_whole_run(tmp_path):
    """The ball flies 2 m to the right: with the camera framed on the whole run it stays in
    the picture in the first frame and the last."""
    model = thrown_ball()
    with ImageExporter(tmp_path / "f", model, size=(W, H), backend="software") as images:
        for state in frames_of(model, 40):
            images.write(state)
    clear = np.round(np.asarray(sk.render.drawables.BACKGROUND) * 255.0)
    for name in ("frame_0000.png", "frame_0039.png"):
        image = read_png(tmp_path / "f" / name).astype(float)
        ball = (image[..., 0] > image[..., 2] + 60) & (np.abs(image - clear) > 10).any(axis=2)
        assert ball.sum() > 4, name


def test_mp4_video_has_one_frame_per_write(tmp_path):
    ffmpeg = pytest.importorskip("imageio_ffmpeg")
    model = thrown_ball()
    with ImageExporter(tmp_path / "run.mp4", model, fps=30, size=(W, H), backend="software") as images:
        for state in frames_of(model, 5):
            images.write(state)
    reader = ffmpeg.read_frames(str(tmp_path / "run.mp4"))
    meta = next(reader)
    assert tuple(meta["size"]) == (W, H)
    assert sum(1 for _ in reader) == 5
    assert [p.name for p in tmp_path.iterdir()] == ["run.mp4"]          # no temporary file left


def test_mp4_without_imageio_ffmpeg_names_the_extra_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)             # import fails as if not installed
    with pytest.raises(ImportError, match=r"simkit\[video\]"):
        ImageExporter(tmp_path / "run.mp4", thrown_ball())


def test_a_video_interrupted_by_an_error_leaves_no_file(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    model = thrown_ball()
    with pytest.raises(KeyError):
        with ImageExporter(tmp_path / "run.mp4", model, size=(W, H), backend="software",
                           camera=Camera.look_at((0, 1, 6), (0, 1, 0))) as images:
            images.write(model.state())
            raise KeyError("stop")
    assert list(tmp_path.iterdir()) == []


def test_positions_that_are_not_finite_are_refused_naming_the_frame(tmp_path):
    model = thrown_ball()
    images = ImageExporter(tmp_path / "f", model, size=(W, H), backend="software")
    images.write(model.state())
    bad = model.state()
    bad.particle_q.assign(np.array([[np.nan, 1.0, 0.0]]))
    with pytest.raises(ValueError, match="frame 1: 1 position"):
        images.write(bad)


@pytest.mark.parametrize("path, kwargs, error, words", [
    ("frames.png", {}, ValueError, "folder"),
    ("missing/frames", {}, FileNotFoundError, "directory"),
    ("f", {"size": (0, 10)}, ValueError, "size"),
    ("f", {"size": (64,)}, ValueError, "size"),
    ("f", {"fps": 0}, ValueError, "fps"),
    ("f", {"backend": "vulkan"}, ValueError, "backend"),
    ("f", {"camera": "front"}, TypeError, "camera"),
    ("run.mp4", {"size": (65, 48)}, ValueError, "even"),
])
def test_bad_arguments_are_refused_naming_them(tmp_path, path, kwargs, error, words):
    if path.endswith(".mp4"):
        pytest.importorskip("imageio_ffmpeg")
    with pytest.raises(error, match=words):
        ImageExporter(tmp_path / path, thrown_ball(), **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_auto_backend_draws_without_a_display_and_says_which_backend(tmp_path):
    """In a process without DISPLAY the automatic choice draws (EGL or software) and names it;
    where EGL works its picture agrees with the software rasterizer's."""
    script = tmp_path / "auto.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_images import thrown_ball, W, H
        from simkit.render import Camera, OffscreenRenderer
        from simkit.render.drawables import ModelDrawables
        model = thrown_ball()
        drawables = ModelDrawables(model).frame(model.state())
        renderer = OffscreenRenderer("auto")
        image = renderer.render(drawables, Camera.look_at((0, 1, 6), (0, 1, 0)), W, H)
        renderer.close()
        np.save({str(tmp_path / "auto.npy")!r}, image)
        print(renderer.backend)
        print(renderer.note)
    """))
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    backend, note = done.stdout.strip().splitlines()[-2:]
    assert (backend, note.split(" (")[0]) in {("opengl", "OpenGL"), ("software", "software rasterizer")}
    if backend == "software":
        assert "no OpenGL context" in note
        pytest.skip(f"no EGL context here, the software path drew: {note}")
    assert "headless EGL" in note
    model = thrown_ball()
    software = OffscreenRenderer("software").render(ModelDrawables(model).frame(model.state()),
                                                    Camera.look_at((0, 1, 6), (0, 1, 0)), W, H)
    egl = np.load(tmp_path / "auto.npy")
    assert np.abs(egl.astype(int) - software.astype(int)).mean() < 4.0


def test_auto_falls_back_to_software_and_says_why_when_opengl_fails(monkeypatch):
    def no_context(self, *args):
        raise RuntimeError("no display: EGL could not be initialized")

    monkeypatch.setattr(OffscreenRenderer, "_opengl", no_context)
    model = thrown_ball()
    drawables = ModelDrawables(model).frame(model.state())
    camera = Camera.look_at((0, 1, 6), (0, 1, 0))
    auto = OffscreenRenderer("auto")
    image = auto.render(drawables, camera, W, H)
    assert auto.backend == "software"
    assert auto.note == "software rasterizer (numpy); no OpenGL context: RuntimeError: no display: EGL could not " \
                        "be initialized"
    np.testing.assert_array_equal(image, OffscreenRenderer("software").render(drawables, camera, W, H))
    with pytest.raises(RuntimeError, match="EGL could not be initialized"):
        OffscreenRenderer("opengl").render(drawables, camera, W, H)
