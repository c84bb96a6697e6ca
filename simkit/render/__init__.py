"""simkit.render: output of simulations.

- :class:`UsdExporter` writes a run to a USD file (usd-core) as time-sampled points,
  meshes and transforms, atomically;
- :func:`tet_surface_triangles` extracts the outward boundary of a tetrahedral mesh.

The USD module (and with it ``pxr``, slow to import) loads on first use of
``UsdExporter``, so ``import simkit`` stays fast.

Example::

    import simkit as sk

    with sk.render.UsdExporter("run.usdc", model, fps=60) as usd:
        usd.write(state, 0.0)
"""

from __future__ import annotations

from typing import Any

from .mesh import tet_surface_triangles

__all__ = ["UsdExporter", "tet_surface_triangles"]


def __getattr__(name: str) -> Any:
    if name == "UsdExporter":
        from .usd import UsdExporter
        globals()["UsdExporter"] = UsdExporter
        return UsdExporter
    raise AttributeError(f"module 'simkit.render' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
