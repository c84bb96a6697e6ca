"""The live viewer (pyglet, OpenGL 3.3): play a running simulation or a recorded USD file in a
window, or render one frame off-screen.

- :func:`play_live` shows ``advance(state)`` frame after frame;
- :func:`play_usd` loops over the frames of a USD file written by ``UsdExporter``;
- :func:`render_frame` draws one frame of a model and state into an image array, in a hidden
  window, or with no display at all through pyglet's headless EGL mode.

Keys: space pauses and resumes, right arrow steps one frame while paused, R resets (restarts
a recording), F frames the whole scene, Escape closes. Mouse: left drag orbits, shift- or
right-drag pans, the wheel zooms.

pyglet is imported on first use, never by ``import simkit``. The first call picks pyglet's
backend for the whole process: X11 when ``DISPLAY`` is set, else headless EGL (off-screen
rendering only). Without a usable display a call raises a RuntimeError that says so.

Example::

    import simkit as sk

    sim = sk.sim.SemiImplicitEuler()

    def advance(state):
        nxt = model.state()
        for _ in range(10):
            sim.step(model, state, nxt, None, 1e-3)
            state, nxt = nxt, state
        return state

    sk.render.play_live(model, model.state, advance)
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any, Callable, Generic, TypeVar

import numpy as np

from ..sim.model import Model, State
from .camera import Camera
from .drawables import ModelDrawables, UsdDrawables, scene_bounds

T = TypeVar("T")

NO_DISPLAY = "no display: set DISPLAY or run under xvfb-run (e.g. `xvfb-run -a simkit view run.usda`)"


class Playback(Generic[T]):
    """Pause, step and reset logic of the viewer, without a window: ``current`` is what is
    shown (a State, or a frame index for a recording), ``frame`` counts advances since the
    last reset and ``version`` changes whenever ``current`` does.

    ``key("space")`` toggles pause, ``key("right")`` advances one frame while paused,
    ``key("r")`` calls ``reset()``; ``tick()`` (once per display frame) advances unless paused.

    Example::

        playback = Playback(reset=lambda: 0, advance=lambda i: i + 1)
        playback.key("space"); playback.tick()       # paused: nothing happens
        playback.key("right")                        # one step: playback.current == 1
    """

    def __init__(self, reset: Callable[[], T], advance: Callable[[T], T], paused: bool = False):
        self._reset = reset
        self._advance = advance
        self.paused = bool(paused)
        self.current: T = reset()
        self.frame = 0
        self.version = 0

    def key(self, name: str) -> bool:
        """Handle the key ``name`` ("space", "right" or "r", any case); False if it is not
        one of them."""
        name = name.lower()
        if name == "space":
            self.paused = not self.paused
        elif name == "right":
            if self.paused:
                self.step()
        elif name == "r":
            self.reset()
        else:
            return False
        return True

    def tick(self) -> bool:
        """Advance one frame unless paused; True if it did."""
        if self.paused:
            return False
        self.step()
        return True

    def step(self) -> None:
        """Advance one frame, paused or not."""
        self.current = self._advance(self.current)
        self.frame += 1
        self.version += 1

    def reset(self) -> None:
        """Replace ``current`` by ``reset()`` and restart the frame count (pause is kept)."""
        self.current = self._reset()
        self.frame = 0
        self.version += 1


def _gl(window: bool) -> ModuleType:
    """The GL drawing module, importing pyglet on first use: X11 when ``DISPLAY`` is set, else
    headless EGL; ``window`` says an on-screen window is needed, which EGL cannot give."""
    linux = sys.platform.startswith("linux")
    has_display = not linux or bool(os.environ.get("DISPLAY"))
    if window and not has_display:
        raise RuntimeError(NO_DISPLAY)
    import pyglet

    if "pyglet.gl" not in sys.modules:
        pyglet.options["headless"] = linux and not has_display
        # without a shadow window, importing pyglet.gl opens nothing: a missing display shows
        # up when a window is opened, as a RuntimeError from gl.open_window
        pyglet.options["shadow_window"] = False
    elif window and pyglet.options["headless"]:
        raise RuntimeError(f"{NO_DISPLAY}; this process already started pyglet headless (EGL), which has no "
                           f"windows: set DISPLAY before the first render_frame")
    try:
        from . import gl
    except Exception as e:
        raise RuntimeError(f"{NO_DISPLAY} (pyglet could not load OpenGL: {type(e).__name__}: {e})") from e
    return gl


def _open_error() -> str:
    import pyglet

    if pyglet.options["headless"]:
        return f"{NO_DISPLAY}; DISPLAY is not set and off-screen OpenGL through EGL failed"
    return f"{NO_DISPLAY}; could not open an OpenGL 3.3 window on DISPLAY={os.environ.get('DISPLAY')!r}"


def render_frame(model: Model, state: State, width: int = 640, height: int = 480,
                 camera: Camera | None = None) -> np.ndarray:
    """Draw ``state`` of ``model`` off-screen and return the image: a (height, width, 3) uint8
    RGB array, top row first. ``camera`` defaults to :meth:`Camera.framing` of the scene's
    bounds (the ground excluded) for this aspect ratio.

    Example::

        image = sk.render.render_frame(model, model.state(), 320, 240)
        sk.render.write_png("thumbnail.png", image)
    """
    if not isinstance(model, Model):
        raise TypeError(f"render_frame: model must be a simkit.sim.Model, got {type(model).__name__}")
    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= 16384:
            raise ValueError(f"render_frame: {name} must be an int in 1..16384, got {value!r}")
    if camera is not None and not isinstance(camera, Camera):
        raise TypeError(f"render_frame: camera must be a simkit.render.Camera or None, got {type(camera).__name__}")
    drawables = ModelDrawables(model).frame(state)
    if camera is None:
        camera = Camera.framing(*scene_bounds(drawables), up_axis=model.up_axis, aspect=width / height)
    gl = _gl(window=False)
    return gl.render_offscreen(drawables, camera, int(width), int(height), _open_error())


def play_live(model: Model, reset: Callable[[], State], advance: Callable[[State], State], fps: float = 60.0,
              title: str = "simkit") -> None:
    """Show a running simulation of ``model`` in a window until it is closed: ``reset()``
    gives the state shown first (and again on R), ``advance(state)`` simulates one frame
    and returns the state to show next, called ``fps`` times a second unless paused.

    Example::

        def advance(state):
            out = model.state()
            sim.step(model, state, out, None, 1.0 / 60)
            return out

        sk.render.play_live(model, model.state, advance, fps=60)
    """
    if not isinstance(model, Model):
        raise TypeError(f"play_live: model must be a simkit.sim.Model, got {type(model).__name__}")
    if not callable(reset) or not callable(advance):
        raise TypeError("play_live: reset and advance must be callables (reset() -> State, advance(State) -> State)")
    if not fps > 0:
        raise ValueError(f"play_live: fps must be > 0, got {fps!r}")
    gl = _gl(window=True)
    source = ModelDrawables(model)
    playback = Playback(reset, advance)

    def status() -> str:
        return f"frame {playback.frame}   {'paused' if playback.paused else 'playing'}"

    gl.run_window(playback, source.frame, model.up_axis, float(fps), status, title, _open_error())


def play_usd(path: str | os.PathLike, title: str | None = None) -> None:
    """Play the USD file at ``path`` (points, meshes and shapes under time-sampled transforms,
    as ``UsdExporter`` writes them) in a loop in a window until it is closed, at the file's
    frame rate; R restarts from the first frame.

    Example::

        sk.render.play_usd("examples/out/ball_toss.usd")
    """
    source = UsdDrawables(path)
    gl = _gl(window=True)
    count = len(source)
    playback = Playback(lambda: 0, lambda i: (i + 1) % count)
    rate = float(source.stage.GetTimeCodesPerSecond())

    def status() -> str:
        time = source.times[playback.current]
        seconds = "" if time.IsDefault() else f"   t = {time.GetValue() / rate:.3f} s"
        return f"frame {playback.current + 1}/{count}{seconds}   {'paused' if playback.paused else 'playing'}"

    gl.run_window(playback, source.frame, source.up_axis, source.fps, status,
                  title or f"simkit - {os.path.basename(os.fspath(path))}", _open_error())
