"""MJCF ``<hfield>`` assets for :mod:`simkit.sim.importers.mjcf`: the elevation grid as a
simkit heightfield (``add_shape_heightfield``).

MuJoCo's asset has ``nrow x ncol`` elevations over ``[-size[0], size[0]] x [-size[1], size[1]]``
on its x-y plane; the elevations are normalized to [0, 1] and scaled by ``size[2]``; the
elevation text's first row is at +y. simkit's grid lies on the shape's x-z plane (the importer
turns it onto MuJoCo's x-y), so MuJoCo's +y is simkit's -z: elevation row ``r``, column ``c``
becomes ``heights[c, r]``. MuJoCo's base depth (``size[3]``) is not used: simkit's heightfield
is its surface alone.

Example::

    name, (heights, half_extents) = read_hfield(element, path, record)
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ._tree import ImportRecord, RobotFileError


def read_hfield(h: ET.Element, path: Path, record: ImportRecord) -> tuple:
    """``(name, (heights, (hx, hz)))`` of the ``<hfield>`` element ``h``, or ``(name, None)``
    with a warning for one whose elevations come from a file (not read).

    Example::

        read_hfield(ET.fromstring('<hfield name="h" nrow="2" ncol="2" size="1 1 0.1 0.1" elevation="0 1 0 1"/>'),
                    path, record)[1][0]      # [[0, 0], [0.1, 0.1]]
    """
    name = h.get("name", Path(h.get("file", "hfield")).stem)
    where = f"<hfield name={name!r}> in {path}"
    if h.get("file") is not None:
        record.warn(f"{where}: elevations from a file are not read; give them inline (elevation, nrow, ncol). "
                    "Geoms using it are not colliders")
        return name, None
    try:
        nrow, ncol = int(h.get("nrow", "0")), int(h.get("ncol", "0"))
        size = [float(x) for x in h.get("size", "").split()]
        values = np.array([float(x) for x in h.get("elevation", "").split()], dtype=np.float64)
    except ValueError:
        raise RobotFileError(f"{where}: nrow, ncol, size and elevation must be numbers") from None
    if nrow < 2 or ncol < 2:
        raise RobotFileError(f"{where}: nrow and ncol must be at least 2, got {nrow} and {ncol}")
    if len(size) != 4 or not all(np.isfinite(size)) or min(size[:3]) <= 0.0 or size[3] < 0.0:
        raise RobotFileError(f"{where}: size must be 4 numbers (radius x, radius y, elevation > 0, base >= 0), "
                             f"got {h.get('size')!r}")
    if len(values) == 0:
        values = np.zeros(nrow * ncol)          # MuJoCo's flat field, to be filled at run time
    if len(values) != nrow * ncol or not np.all(np.isfinite(values)):
        raise RobotFileError(f"{where}: elevation must be nrow x ncol = {nrow * ncol} finite numbers, "
                             f"got {len(values)}")
    span = values.max() - values.min()
    normalized = (values - values.min()) / span if span > 0.0 else np.zeros_like(values)
    heights = size[2] * normalized.reshape(nrow, ncol).T
    return name, (np.ascontiguousarray(heights), (size[0], size[1]))
