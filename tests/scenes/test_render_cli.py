"""``simkit render``: a scene's run drawn off-screen into PNG frames or an mp4, and its
usage errors (exit code 2, the message naming the option)."""

import sys

import numpy as np
import pytest

from simkit.cli import main
from simkit.render.image import read_png


def test_render_writes_one_png_per_frame_of_the_size_asked_and_the_ball_moves(scenes_dir, tmp_path, capsys):
    out = tmp_path / "frames"
    assert main(["render", str(scenes_dir / "ball_bounce.toml"), "--out", str(out), "--frames", "3",
                 "--size", "64x48"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["frame_0000.png", "frame_0001.png", "frame_0002.png"]
    pictures = [read_png(out / n) for n in names]
    assert all(p.shape == (48, 64, 3) for p in pictures)
    assert (pictures[0] != pictures[1]).any() and (pictures[1] != pictures[2]).any()
    stdout = capsys.readouterr().out
    assert "ball_bounce: 3 pictures of 64x48" in stdout and "drawn by: " in stdout


def test_render_software_backend_is_named_in_the_summary(scenes_dir, tmp_path, capsys):
    assert main(["render", "ball_bounce", "--out", str(tmp_path / "f"), "--frames", "2", "--size", "32x24",
                 "--backend", "software"]) == 0
    assert "drawn by: software rasterizer" in capsys.readouterr().out


@pytest.mark.parametrize("args, option", [
    (["--size", "64"], "argument --size: expected WIDTHxHEIGHT"),
    (["--size", "0x48"], "argument --size: expected a width and height in 1..16384"),
    (["--size", "axb"], "argument --size: expected WIDTHxHEIGHT"),
    (["--frames", "0"], "argument --frames: expected an integer >= 1"),
    (["--frames", "two"], "argument --frames: expected an integer >= 1"),
    (["--out", "{tmp}/pictures.png"], "pictures.png: expected a folder (for PNG frames) or a file name ending in .mp4"),
    (["--out", "{tmp}/missing/frames"], "missing/frames: the folder"),
    (["--backend", "vulkan"], "argument --backend: invalid choice: 'vulkan'"),
])
def test_render_usage_errors_exit_2_naming_the_option(scenes_dir, tmp_path, capsys, args, option):
    args = [a.format(tmp=tmp_path) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "frames")]
    assert main(["render", str(scenes_dir / "ball_bounce.toml"), "--quiet", *args]) == 2
    assert option in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_render_needs_out(scenes_dir, capsys):
    assert main(["render", str(scenes_dir / "ball_bounce.toml")]) == 2
    assert "the following arguments are required: --out" in capsys.readouterr().err


def test_render_mp4_without_the_video_extra_says_what_to_install(scenes_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)             # as if not installed
    assert main(["render", str(scenes_dir / "ball_bounce.toml"), "--out", str(tmp_path / "run.mp4"),
                 "--frames", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "pip install 'simkit[video]'" in err
    assert list(tmp_path.iterdir()) == []


def test_render_mp4_writes_a_video_of_the_frames(scenes_dir, tmp_path):
    ffmpeg = pytest.importorskip("imageio_ffmpeg")
    video = tmp_path / "bounce.mp4"
    assert main(["render", str(scenes_dir / "ball_bounce.toml"), "--out", str(video), "--frames", "4",
                 "--size", "64x48", "--quiet"]) == 0
    reader = ffmpeg.read_frames(str(video))
    assert tuple(next(reader)["size"]) == (64, 48)
    frames = [np.frombuffer(f, np.uint8) for f in reader]
    assert len(frames) == 4 and (frames[0] != frames[-1]).any()


def test_render_mp4_of_odd_size_is_refused(scenes_dir, tmp_path, capsys):
    pytest.importorskip("imageio_ffmpeg")
    assert main(["render", str(scenes_dir / "ball_bounce.toml"), "--out", str(tmp_path / "b.mp4"),
                 "--size", "65x48", "--quiet"]) == 2
    assert "--size 65x48: an mp4 video needs an even width and height" in capsys.readouterr().err


def test_render_scene_draws_the_whole_run_by_default_and_refuses_more(scenes_dir, tmp_path):
    from simkit.scene import load_scene
    from simkit.scene.pictures import render_scene

    scene = load_scene(scenes_dir / "ball_bounce.toml", frames=2)
    result = render_scene(scene, tmp_path / "f", size=(32, 24), backend="software")
    assert result.pictures == 3 and sorted(p.name for p in (tmp_path / "f").iterdir()) == [
        "frame_0000.png", "frame_0001.png", "frame_0002.png"]
    assert result.note.startswith("software rasterizer")
    with pytest.raises(ValueError, match=r"pictures must be an int in 1\.\.3"):
        render_scene(scene, tmp_path / "g", pictures=4)
    assert not (tmp_path / "g").exists()
