"""Drawing a scene's run as pictures without a display: PNG frames in a folder or an mp4 video
(``simkit render``), through :class:`~simkit.render.ImageExporter`.

Example::

    scene = load_scene("scenes/ball_bounce.toml")
    result = render_scene(scene, "frames", pictures=10, size=(320, 240))
    print(result.pictures, result.note)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..render.camera import Camera
from ..render.images import ImageExporter
from .build import Scene
from .run import _check_frame, scene_check


@dataclass
class RenderResult:
    """What :func:`render_scene` returns: the ``path`` written (a folder of PNG frames or an
    mp4), the number of ``pictures``, the wall-clock ``seconds`` and the ``note`` that says
    which backend drew them.

    Example::

        result = render_scene(scene, "frames", pictures=3)
        result.path / "frame_0000.png"
    """

    path: Path
    pictures: int
    seconds: float
    note: str


def render_scene(scene: Scene, out: str | os.PathLike, pictures: int | None = None, size: Any = (640, 480),
                 *, camera: Camera | None = None, backend: str = "auto",
                 on_frame: Callable[[int], None] | None = None,
                 on_draw: Callable[[int], None] | None = None) -> RenderResult:
    """Simulate ``scene`` and draw ``pictures`` pictures of it into ``out`` (a folder of
    ``frame_0000.png`` ... or a file ending in ``.mp4``): the initial state and the
    ``pictures - 1`` frames after it, picture k at time k / fps. ``pictures`` defaults to the
    whole run, ``scene.settings.frames + 1``, the frames a USD file of the run holds (more than
    that is a ValueError: load the scene with more ``frames``). ``size`` is (width, height),
    ``camera`` defaults to one framing the whole run, ``backend`` is "auto", "opengl" or
    "software" (see :class:`~simkit.render.OffscreenRenderer`). ``on_frame(k)`` is called
    once state k is simulated and ``on_draw(k)`` once picture k is drawn (with the automatic
    camera every picture is drawn after the run). A run that diverges raises
    :class:`SimulationError` and writes no video.

    Example::

        render_scene(load_scene("scenes/flag.toml", frames=30), "flag.mp4", size=(480, 360))
    """
    st = scene.settings
    if pictures is None:
        pictures = st.frames + 1
    if isinstance(pictures, bool) or not isinstance(pictures, int) or not 1 <= pictures <= st.frames + 1:
        raise ValueError(f"render_scene: pictures must be an int in 1..{st.frames + 1} (sim.frames + 1), "
                         f"got {pictures!r}")
    t0 = time.perf_counter()
    stepper = scene.stepper()
    state = stepper.reset()
    check = scene_check(scene, state)
    with ImageExporter(out, scene.model, fps=scene.output["fps"], size=size, camera=camera,
                       backend=backend, on_draw=on_draw) as images:
        for frame in range(pictures):
            if frame > 0:
                state = stepper.advance(state)
                _check_frame(check, state, frame, scene)
            images.write(state, frame / scene.output["fps"])
            if on_frame is not None:
                on_frame(frame)
    return RenderResult(Path(images.path), pictures, time.perf_counter() - t0, images.note)
