"""What the commands of ``simkit`` share: exit codes, usage errors, the scene and output
checks, progress bars, the viewer and the compile notice."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..scene.schema import USD_EXTENSIONS
from ..scene.validate import SceneError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """A command line that cannot be carried out as given (exit code 2).

    Example::

        raise UsageError("--view shows the run live; use either --view or --usd")
    """


def source_root() -> Path | None:
    """The root of the source checkout simkit is imported from, or None for an installed copy
    (a checkout has ``pyproject.toml`` and ``tools/bench.py`` beside the package).

    Example::

        root = source_root()
    """
    root = Path(__file__).resolve().parent.parent.parent
    if (root / "pyproject.toml").is_file() and (root / "tools" / "bench.py").is_file():
        return root
    return None


def resolve_scene(arg: str) -> Path:
    """``arg`` as a scene path: the file itself when it exists, else ``scenes/ARG.toml`` of
    the source checkout when ``arg`` is a bare name. A SceneError when neither exists.

    Example::

        resolve_scene("ball_bounce")      # <checkout>/scenes/ball_bounce.toml
    """
    path = Path(arg)
    if path.exists():
        return path
    root = source_root()
    bundled = sorted(p.stem for p in (root / "scenes").glob("*.toml")) if root is not None else []
    if arg in bundled:
        return root / "scenes" / f"{arg}.toml"
    hint = f" (the bundled scenes are: {', '.join(bundled)})" if bundled else ""
    raise SceneError(arg, "", f"no such scene file{hint}")


def check_usd_path(value: str | None, option: str = "--usd") -> None:
    if value is not None and os.path.splitext(value)[1].lower() not in USD_EXTENSIONS:
        raise UsageError(f"{option} {value}: expected a file name ending in {', '.join(USD_EXTENSIONS)}")


def scene_inputs(scene: Any) -> dict:
    """The files a scene is read from, by description: what no output may overwrite."""
    inputs = {"the scene file": scene.path}
    for k, mesh in enumerate(scene.config.soft_mesh):
        inputs[f"the mesh file of soft_mesh[{k}]"] = mesh["file"]
    return inputs


def check_plot_path(value: str | None) -> None:
    """A --plot name whose extension matplotlib can write (else it fails after the whole run)."""
    if value is None:
        return
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    ext = os.path.splitext(value)[1].lower().lstrip(".")
    if ext not in formats:
        raise UsageError(f"--plot {value}: expected an image file name ending in "
                         f"{', '.join('.' + f for f in sorted(formats))}")


def _viewer() -> Any:
    """The viewer module, imported only when a command needs a window. A viewer that cannot
    load is a usage error (exit 2), as a missing display is (see :func:`in_window`)."""
    try:
        return importlib.import_module("simkit.render.viewer")
    except Exception as e:
        raise UsageError(f"the viewer could not be loaded ({type(e).__name__}: {e}); it needs pyglet and a "
                         "display") from e


def in_window(name: str, *args: Any, **kwargs: Any) -> None:
    """Call the viewer's ``name`` (``play_live``, ``play_usd``); no display to open a window on
    is the machine's setup, not a failed run: a usage error (exit 2), like --plot without
    matplotlib."""
    viewer = _viewer()
    try:
        getattr(viewer, name)(*args, **kwargs)
    except RuntimeError as e:
        if str(e).startswith(getattr(viewer, "NO_DISPLAY", "no display")):
            raise UsageError(str(e)) from None
        raise


def progress(total: int, initial: int, unit: str, desc: str, quiet: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit=unit, desc=desc, disable=quiet, file=sys.stderr,
                dynamic_ncols=True)


class _CompileProgress:
    """``compiler.compile_notice`` while a command runs: each compiler run shows a line on stderr
    with its elapsed time ticking (a cold compile takes seconds to a minute and must not look
    like a hang), then one line saying what it compiled and how long that took. ``quiet``:
    only the ``simkit`` logger's INFO line (compiler.log_compile)."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    @contextlib.contextmanager
    def __call__(self, what: str):
        from tqdm import tqdm

        from ..core import compiler

        if self.quiet:
            with compiler.log_compile(what):
                yield
            return
        started = time.perf_counter()
        line = tqdm(total=None, desc=f"simkit: compiling {what} (first run only)", bar_format="{desc}: {elapsed}",
                    file=sys.stderr, leave=False, dynamic_ncols=True)
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(0.5):
                line.refresh()
        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()
            line.close()
        tqdm.write(f"simkit: compiled {what} in {time.perf_counter() - started:.1f} s (first run only: cached in "
                   f"{compiler.cache_dir()})", file=sys.stderr)


@contextlib.contextmanager
def announcing_compiles(quiet: bool):
    """Show the compiler runs of the block on stderr (:class:`_CompileProgress`)."""
    from ..core import compiler

    before, compiler.compile_notice = compiler.compile_notice, _CompileProgress(quiet)
    try:
        yield
    finally:
        compiler.compile_notice = before
