"""simkit.render: output of simulations.

- :class:`UsdExporter` writes a run to a USD file (usd-core) as time-sampled points,
  meshes and transforms, atomically;
- :func:`tet_surface_triangles` extracts the outward boundary of a tetrahedral mesh;
- :func:`play_live`, :func:`play_usd` and :func:`render_frame` are the pyglet viewer (a live
  simulation, a recorded USD file, one off-screen frame), :class:`Camera` its orbit camera and
  :func:`write_png` saves a rendered frame;
- :class:`ImageExporter` writes a run as PNG frames or an mp4 video without a display
  (OpenGL through EGL when it can, else a numpy software rasterizer: :class:`OffscreenRenderer`).

The USD module (and with it ``pxr``, slow to import) loads on first use of
``UsdExporter``, and pyglet on the first viewer call, so ``import simkit`` stays fast and
never needs a display.

Example::

    import simkit as sk

    with sk.render.UsdExporter("run.usdc", model, fps=60) as usd:
        usd.write(state, 0.0)
"""

from __future__ import annotations

from typing import Any

from .camera import Camera
from .image import write_png
from .images import ImageExporter, OffscreenRenderer
from .mesh import tet_surface_triangles
from .viewer import play_live, play_usd, render_frame

__all__ = ["Camera", "ImageExporter", "OffscreenRenderer", "UsdExporter", "play_live", "play_usd", "render_frame",
           "tet_surface_triangles", "write_png"]


def __getattr__(name: str) -> Any:
    if name == "UsdExporter":
        from .usd import UsdExporter
        globals()["UsdExporter"] = UsdExporter
        return UsdExporter
    raise AttributeError(f"module 'simkit.render' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
