"""Checking the files a command will write before it runs: none may be one of its inputs (the
scene, a mesh) or another of its outputs, and each must be writable where it is to go, so a
long run never ends by overwriting the scene or failing to save.

Example::

    check_outputs({"the scene": scene.path}, {"--usd": "out.usda", "--checkpoint": "ball.npz"})
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path
from typing import Mapping

from .validate import SceneError

PathLike = str | os.PathLike


def _same(a: Path, b: Path) -> bool:
    """The same file: equal once resolved (symbolic links followed), or one file under two
    names (a hard link) when both exist."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_writable(path: PathLike, option: str, *, makes_folder: bool = False) -> None:
    """Raise a :class:`SceneError` naming ``path`` and ``option`` unless a file can be written
    at ``path``: an existing ``path`` must be a writable file, and the folder that holds it must
    exist and accept a new file (tried with a temporary one, which catches read-only file
    systems and permissions alike). Missing folders are not created, as ``UsdExporter`` and
    ``open`` do not: a mistyped folder fails here, before the run, instead of quietly becoming
    a new folder. ``makes_folder``: the command creates the folder holding ``path`` itself (a
    sweep's ``--out DIR``), so the folder above that one must exist.

    Example::

        check_writable("out/ball.usda", "--usd")   # SceneError unless the folder out/ exists
    """
    p = Path(path)
    if p.is_dir():
        raise SceneError(p, option, "is a directory; give a file name")
    if p.exists() and not os.access(p, os.W_OK):
        raise SceneError(p, option, "exists and is not writable")
    folder = p.absolute().parent
    if makes_folder and not folder.exists():
        folder = folder.parent
    if not folder.exists():
        raise SceneError(p, option, f"cannot be written: the folder {folder} does not exist (simkit creates no "
                                    "folders for its outputs; check the path or create the folder first)")
    if not folder.is_dir():
        raise SceneError(p, option, f"cannot be created: {folder} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".simkit-write-test-"):
            pass
    except OSError as e:
        raise SceneError(p, option, f"cannot be written: {folder} does not accept new files "
                                    f"({e.strerror or type(e).__name__})") from None


def check_outputs(inputs: Mapping[str, PathLike], outputs: Mapping[str, PathLike | None],
                  reads_and_writes: Mapping[str, PathLike] | None = None) -> None:
    """Refuse (a :class:`SceneError` naming both) an output that is the same file as an input or
    as another output, then check that each output is writable (:func:`check_writable`).
    ``inputs`` and ``outputs`` map a description (``"the scene"``, ``"--usd"``) to a path;
    outputs given as None are skipped. ``reads_and_writes`` are outputs that are also read
    (a checkpoint resumed from): they may be themselves, nothing else.

    Example::

        check_outputs({"the scene": "ball.toml"}, {"--usd": "ball.usda", "--checkpoint": "ball.npz"})
    """
    outs = [(name, Path(p)) for name, p in outputs.items() if p is not None]
    outs += [(name, Path(p)) for name, p in (reads_and_writes or {}).items()]
    for name, out in outs:
        for what, source in inputs.items():
            if _same(out, Path(source)):
                raise SceneError(out, name, f"is {what} ({source}); writing it would destroy it, so give "
                                            f"{name} another path")
    for k, (name, out) in enumerate(outs):
        for other, path in outs[:k]:
            if _same(out, path):
                raise SceneError(out, name, f"is also the path of {other}; one would overwrite the other, so give "
                                            "each output its own path")
    for name, out in outs:
        check_writable(out, name)


def write_atomic(path: PathLike, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` through a temporary file beside it renamed onto it, so that
    a reader (or an interrupt) never sees half a file. Returns the path.

    Example::

        write_atomic("sweep/results.csv", text)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def save_figure(fig, path: Path) -> None:
    """Save a matplotlib figure to ``path`` through a temporary file beside it, so that an
    interrupted save never leaves a half-written image under the final name.

    Example::

        save_figure(fig, Path("loss.png"))
    """
    tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex[:12]}.tmp{path.suffix}")
    try:
        fig.savefig(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
