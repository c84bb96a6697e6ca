"""Tetrahedral mesh files, the ``file`` of a ``[[soft_mesh]]`` entry (see ``docs/scenes.md``).

:func:`load_tet_mesh` reads ``.npz`` (arrays ``vertices`` and ``tets``) or ``.tet`` text
(``v x y z`` and ``t i j k l`` lines) and checks shapes, types and indices; a bad file is
one :class:`~simkit.scene.validate.SceneError`. ``MESH_EXTENSIONS`` are the endings it reads.

Example::

    vertices, tets = load_tet_mesh("scenes/meshes/jelly.tet")
    vertices.shape, tets.shape      # (N, 3) float64, (M, 4) int64
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .validate import SceneError

MESH_EXTENSIONS = (".npz", ".tet")


def load_tet_mesh(path: str | os.PathLike, error: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Read a tetrahedral mesh: ``.npz`` with arrays ``vertices`` (N x 3) and ``tets`` (M x 4,
    0-based), or ``.tet`` text with lines ``v x y z`` and ``t i j k l`` (``#`` starts a
    comment). ``error(key, message)`` makes the exception raised for a bad file (default: a
    SceneError about the mesh file itself).

    Example::

        vertices, tets = load_tet_mesh("scenes/meshes/jelly.tet")
    """
    path = Path(path)
    if error is None:
        def error(key: str, message: str) -> SceneError:
            return SceneError(path, "", message)
    if path.suffix.lower() == ".npz":
        if not zipfile.is_zipfile(path):
            # np.load takes anything that is not a zip for a pickle and says so, which misleads
            raise error("file", f"{str(path)!r} is not an .npz archive (the zip of arrays numpy.savez writes); "
                                "expected arrays 'vertices' (N x 3) and 'tets' (M x 4)")
        try:
            with np.load(path, allow_pickle=False) as data:
                missing = [k for k in ("vertices", "tets") if k not in data.files]
                if not missing:
                    vertices, tets = data["vertices"], data["tets"]
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            raise error("file", f"{str(path)!r} is not a readable .npz file: {e}") from None
        if missing:
            raise error("file", f"{str(path)!r} lacks the array(s) {', '.join(missing)}; expected "
                                "'vertices' (N x 3) and 'tets' (M x 4)")
    else:
        vertices, tets = _read_tet_text(path, error)
    vertices, tets = np.asarray(vertices), np.asarray(tets)
    if vertices.ndim != 2 or vertices.shape[1] != 3 or len(vertices) < 4 or vertices.dtype.kind not in "fiu" \
            or not np.all(np.isfinite(vertices)):
        raise error("file", f"{str(path)!r}: expected at least 4 vertices of 3 finite numbers, got an array of "
                            f"shape {vertices.shape}")
    if tets.ndim != 2 or tets.shape[1] != 4 or len(tets) < 1 or tets.dtype.kind not in "iu":
        raise error("file", f"{str(path)!r}: expected at least one tetrahedron of 4 integer vertex indices, got an "
                            f"array of shape {tets.shape} of {tets.dtype}")
    if tets.min() < 0 or tets.max() >= len(vertices):
        raise error("file", f"{str(path)!r}: expected vertex indices in 0..{len(vertices) - 1}, got "
                            f"{int(tets.min()) if tets.min() < 0 else int(tets.max())}")
    return vertices.astype(np.float64), tets.astype(np.int64)


def _read_tet_text(path: Path, error: Any) -> tuple[list, list]:
    vertices, tets = [], []
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise error("file", f"{str(path)!r} cannot be read: {e}") from None
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        try:
            if words[0] == "v" and len(words) == 4:
                vertices.append([float(w) for w in words[1:]])
                continue
            if words[0] == "t" and len(words) == 5:
                tets.append([int(w) for w in words[1:]])
                continue
        except ValueError:
            pass
        raise error("file", f"{str(path)!r} line {number}: expected 'v x y z' or 't i j k l', got {line.strip()!r}")
    return vertices, tets
