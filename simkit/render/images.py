"""Pictures without a display: :class:`ImageExporter`, the sibling of ``UsdExporter`` that
writes a run as PNG frames or an mp4 video, drawn off-screen by :class:`OffscreenRenderer`.

The renderer picks its backend on the first frame: OpenGL through pyglet (an X display when
``DISPLAY`` is set, else headless EGL) when a context can be made, else the numpy software
rasterizer of :mod:`simkit.render.software`, which always works. ``note`` says which one drew.
Videos need imageio-ffmpeg (``pip install 'simkit[video]'``), which brings its own ffmpeg.

Example::

    with sk.render.ImageExporter("frames", model, size=(320, 240)) as images:
        for frame in range(60):
            images.write(state, frame / 60)
            ...                                  # simulate the next frame
    print(images.note)                           # e.g. "software rasterizer (no OpenGL: ...)"
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
import uuid
from typing import Any, Callable

import numpy as np

from ..sim.model import Model, State
from .camera import Camera
from .drawables import Drawable, ModelDrawables, scene_bounds
from .image import write_png

BACKENDS = ("auto", "opengl", "software")
VIDEO_EXTENSIONS = (".mp4",)
FRAME_NAME = "frame_{:04d}.png"
MAX_SIZE = 16384


def video_missing() -> str | None:
    """None when mp4 videos can be written (imageio-ffmpeg is installed), else what to install.

    Example::

        if (why := video_missing()) is not None:
            print(why)
    """
    try:
        importlib.import_module("imageio_ffmpeg")
    except ImportError:
        return ("writing an mp4 video needs imageio-ffmpeg, which is not installed; install it with "
                "pip install 'simkit[video]' (or pip install imageio-ffmpeg), or write PNG frames to a folder")
    return None


def check_size(size: Any, where: str = "size") -> tuple[int, int]:
    """``size`` as a ``(width, height)`` pair of ints in 1..16384, or a ValueError naming ``where``.

    Example::

        width, height = check_size((640, 480))
    """
    try:
        width, height = size
    except (TypeError, ValueError):
        raise ValueError(f"{where} must be a (width, height) pair, got {size!r}") from None
    for value in (width, height):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_SIZE:
            raise ValueError(f"{where} must be a (width, height) pair of ints in 1..{MAX_SIZE}, got {size!r}")
    return int(width), int(height)


class OffscreenRenderer:
    """Draws lists of drawables into images without a window. ``backend`` is "auto" (OpenGL
    when a context can be made on the first frame, else software), "opengl" (fail if there
    is no context) or "software" (the numpy rasterizer). After the first frame ``backend``
    is the one in use and ``note`` says it in words (empty until a frame is drawn).

    Example::

        renderer = OffscreenRenderer()
        image = renderer.render(drawables, camera, 320, 240)
        print(renderer.backend, renderer.note)
    """

    def __init__(self, backend: str = "auto"):
        if backend not in BACKENDS:
            raise ValueError(f"OffscreenRenderer: backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.backend = backend
        self.note = self._describe("software") if backend == "software" else ""
        self._target: Any = None

    @staticmethod
    def _describe(backend: str, why: str = "") -> str:
        if backend == "software":
            return "software rasterizer (numpy)" + (f"; no OpenGL context: {why}" if why else "")
        import pyglet

        where = "headless EGL" if pyglet.options["headless"] else f"X display {os.environ.get('DISPLAY', '')}"
        return f"OpenGL (pyglet, {where})"

    def _opengl(self, drawables: list[Drawable], camera: Camera, width: int, height: int) -> np.ndarray:
        from . import viewer

        gl = viewer._gl(window=False)
        if self._target is not None and (self._target.width, self._target.height) != (width, height):
            self.close()
        if self._target is None:
            self._target = gl.Offscreen(width, height, viewer._open_error())
        return self._target.draw(drawables, camera)

    def close(self) -> None:
        """Free the OpenGL context kept between frames (if any); the next frame makes a new one.

        Example::

            renderer.close()
        """
        target, self._target = self._target, None
        if target is not None:
            target.release()

    def render(self, drawables: list[Drawable], camera: Camera, width: int, height: int) -> np.ndarray:
        """``drawables`` seen by ``camera``: an (height, width, 3) uint8 RGB image, top row first.

        Example::

            image = renderer.render(ModelDrawables(model).frame(state), camera, 320, 240)
        """
        if self.backend == "auto":
            try:
                image = self._opengl(drawables, camera, width, height)
            except Exception as e:      # no display, no EGL, no GL 3.3: the software path always works
                self.close()
                self.backend, self.note = "software", self._describe("software", f"{type(e).__name__}: {e}")
            else:
                self.backend, self.note = "opengl", self._describe("opengl")
                return image
        if self.backend == "opengl":
            image = self._opengl(drawables, camera, width, height)
            self.note = self.note or self._describe("opengl")
            return image
        from .software import rasterize

        return rasterize(drawables, camera, width, height)


class ImageExporter:
    """Writes a simulation of ``model`` as pictures drawn off-screen, one per :meth:`write`:
    PNG files ``frame_0000.png``, ``frame_0001.png``, ... in the folder ``path`` (created if
    missing; its parent must exist), or an mp4 video when ``path`` ends in ``.mp4`` (played at
    ``fps``; needs imageio-ffmpeg: ``pip install 'simkit[video]'``). ``size`` is
    ``(width, height)`` in pixels.

    ``camera`` defaults to :meth:`Camera.framing` of everything the run shows (the ground
    excluded): the frames are then kept until :meth:`close`, which frames the whole run and
    draws them. With a camera given each frame is drawn as it is written. ``backend`` is
    that of :class:`OffscreenRenderer`; :attr:`note` says which one drew. ``on_draw(k)``, if
    given, is called once picture k is drawn (a progress bar).

    A video is written to a temporary file and renamed onto ``path`` by :meth:`close`; used as
    a context manager, nothing is written when the block raises (PNG frames already drawn
    with a given camera stay). Positions that are not finite are refused, naming the frame.

    Example::

        with sk.render.ImageExporter("drop.mp4", model, fps=30, size=(320, 240)) as images:
            state, nxt = model.state(), model.state()
            for frame in range(30):
                images.write(state, frame / 30)
                for _ in range(10):
                    integrator.step(model, state, nxt, None, 1.0 / 300)
                    state, nxt = nxt, state
    """

    def __init__(self, path: str | os.PathLike, model: Model, fps: float = 60, *, size: Any = (640, 480),
                 camera: Camera | None = None, backend: str = "auto", on_draw: Callable[[int], None] | None = None):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"ImageExporter: path must be a str or os.PathLike, got {type(path).__name__}")
        path = os.path.abspath(os.fspath(path))
        ext = os.path.splitext(path)[1].lower()
        self.video = ext in VIDEO_EXTENSIONS
        if not self.video and (ext or os.path.isfile(path)) and not os.path.isdir(path):
            raise ValueError(f"ImageExporter: path {path!r} must be a folder (for PNG frames) or a file name "
                             f"ending in {', '.join(VIDEO_EXTENSIONS)}, not {ext or 'a file'!r}")
        if self.video and os.path.isdir(path):
            raise ValueError(f"ImageExporter: path {path!r} is a directory")
        if not os.path.isdir(os.path.dirname(path)):
            raise FileNotFoundError(f"ImageExporter: the directory of {path!r} does not exist")
        if not isinstance(model, Model):
            raise TypeError(f"ImageExporter: model must be a simkit.sim.Model, got {type(model).__name__}")
        if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)) \
                or not math.isfinite(fps) or fps <= 0:
            raise ValueError(f"ImageExporter: fps must be a finite number > 0, got {fps!r}")
        self.width, self.height = check_size(size, "ImageExporter: size")
        if camera is not None and not isinstance(camera, Camera):
            raise TypeError(f"ImageExporter: camera must be a simkit.render.Camera or None, got "
                            f"{type(camera).__name__}")
        if self.video:
            why = video_missing()
            if why is not None:
                raise ImportError(f"ImageExporter: {why}")
            if self.width % 2 or self.height % 2:
                raise ValueError(f"ImageExporter: size {self.width}x{self.height}: an mp4 video needs an even width "
                                 "and height")
        self.path, self.fps, self.camera = path, float(fps), camera
        if on_draw is not None and not callable(on_draw):
            raise TypeError(f"ImageExporter: on_draw must be a callable or None, got {type(on_draw).__name__}")
        self.renderer = OffscreenRenderer(backend)
        self._on_draw = on_draw
        self.frames = 0
        self._emitted = 0
        self._source = ModelDrawables(model)
        self._kept: list[list[Drawable]] = []
        self._writer: Any = None
        self._tmp: str | None = None
        self._closed = False

    @property
    def note(self) -> str:
        """Which backend drew the frames, in words (empty before the first frame is drawn)."""
        return self.renderer.note

    def write(self, state: State, time: float | None = None) -> None:
        """Add a picture of ``state``. ``time`` is accepted for ``UsdExporter``'s calling
        pattern and not used: frames follow one another in the order written, ``1 / fps``
        apart in a video.

        Example::

            images.write(state)
        """
        if self._closed:
            raise RuntimeError("ImageExporter.write: the exporter is closed")
        drawables = self._source.frame(state)
        for d in drawables:
            bad = ~np.isfinite(np.asarray(d.positions)).all(axis=-1) if len(d.positions) else np.zeros(0, bool)
            if bad.any() or not np.isfinite(d.matrix).all():
                what = f"{int(bad.sum())} position(s) of {d.key!r}" if bad.any() else f"the transform of {d.key!r}"
                raise ValueError(f"ImageExporter: frame {self.frames}: {what} not finite (NaN or infinity); the "
                                 "simulation diverged before this frame")
        if self.camera is None:
            # a body's drawable is reused with a new matrix each frame: keep a copy
            self._kept.append([dataclasses.replace(d) for d in drawables])
        else:
            self._emit(self.renderer.render(drawables, self.camera, self.width, self.height))
        self.frames += 1

    def _emit(self, image: np.ndarray) -> None:
        index, self._emitted = self._emitted, self._emitted + 1
        if not self.video:
            os.makedirs(self.path, exist_ok=True)
            write_png(os.path.join(self.path, FRAME_NAME.format(index)), image)
        else:
            self._send(image)
        if self._on_draw is not None:
            self._on_draw(index)

    def _send(self, image: np.ndarray) -> None:
        if self._writer is None:
            import imageio_ffmpeg

            stem, ext = os.path.splitext(self.path)
            self._tmp = f"{stem}.{uuid.uuid4().hex[:12]}.tmp{ext}"
            self._writer = imageio_ffmpeg.write_frames(self._tmp, (self.width, self.height), fps=self.fps,
                                                       macro_block_size=1, ffmpeg_log_level="error")
            self._writer.send(None)
        self._writer.send(np.ascontiguousarray(image))

    def close(self) -> None:
        """Draw the frames kept for the automatic camera, and finish the video; a second call
        does nothing.

        Example::

            images.close()
        """
        if self._closed:
            return
        self._closed = True
        if self._kept:
            lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
            for drawables in self._kept:
                a, b = scene_bounds(drawables)
                lo, hi = np.minimum(lo, a), np.maximum(hi, b)
            camera = Camera.framing(lo, hi, up_axis=self._source.up_axis, aspect=self.width / self.height)
            kept, self._kept = self._kept, []
            try:
                for drawables in kept:
                    self._emit(self.renderer.render(drawables, camera, self.width, self.height))
            except BaseException:
                self._discard()
                raise
        self.renderer.close()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            os.replace(self._tmp, self.path)

    def _discard(self) -> None:
        self._closed = True
        self._kept = []
        self.renderer.close()
        if self._writer is not None:
            try:
                self._writer.close()
            finally:
                self._writer = None
                if self._tmp is not None and os.path.exists(self._tmp):
                    os.remove(self._tmp)

    def __enter__(self) -> "ImageExporter":
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is None:
            self.close()
        else:
            self._discard()
