"""The ``simkit`` command: run and optimize scene configs, inspect the installation.

::

    simkit run SCENE [--frames N] [--device D] [--usd PATH] [--view] [--quiet]
    simkit optimize SCENE [--iterations N] [--resume] [--plot loss.png] [--checkpoint PATH]
                          [--frames N] [--device D] [--usd PATH] [--quiet]
                          [--starts N [--spread S] [--seed K] [--address ADDR] [--cpus N]]
    simkit sweep SCENE --set KEY=VALUES [--set ...] [--frames N] [--out DIR] [--resume]
                       [--usd] [--iterations N] [--run-only] [--address ADDR] [--cpus N]
                       [--threads N] [--plot [--metric NAME]] [--quiet]
    simkit render SCENE --out DIR|FILE.mp4 [--frames N] [--size WxH] [--backend B] [--device D] [--quiet]
    simkit info
    simkit cache clear
    simkit bench [ARGS...]          (tools/bench.py of a source checkout)
    simkit view FILE.usda

``SCENE`` is a path to a TOML scene (``docs/scenes.md``), or the name of one in the
``scenes/`` folder of a source checkout. Exit codes: 0 done, 1 the run failed, 2 usage or
config error (one message on stderr, no traceback), 130 interrupted (Ctrl-C; ``optimize``
saves its checkpoint first, ``sweep`` its table). ``python -m simkit`` is the same command.
``sweep`` and ``optimize --starts`` run on Ray (``pip install 'simkit[ray]'``;
``docs/sweeps.md``).

``run`` and ``optimize`` stop a simulation that diverged (positions or velocities NaN,
infinite, or far beyond any speed or distance the scene can reach; see
``simkit.sim.StabilityCheck``) with one line naming the frame and exit code 1, writing no USD
and no checkpoint of the diverged iteration.

Example::

    from simkit.cli import main
    code = main(["run", "scenes/flag.toml", "--frames", "10", "--usd", "flag.usda", "--quiet"])
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import platform
import shlex
import subprocess
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Sequence

from .scene.schema import USD_EXTENSIONS
from .scene.validate import SceneError

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
    root = Path(__file__).resolve().parent.parent
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


def _check_usd_path(value: str | None, option: str = "--usd") -> None:
    if value is not None and os.path.splitext(value)[1].lower() not in USD_EXTENSIONS:
        raise UsageError(f"{option} {value}: expected a file name ending in {', '.join(USD_EXTENSIONS)}")


def _scene_inputs(scene: Any) -> dict:
    """The files a scene is read from, by description: what no output may overwrite."""
    inputs = {"the scene file": scene.path}
    for k, mesh in enumerate(scene.config.soft_mesh):
        inputs[f"the mesh file of soft_mesh[{k}]"] = mesh["file"]
    return inputs


def _check_plot_path(value: str | None) -> None:
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
    load is a usage error (exit 2), as a missing display is (see :func:`_in_window`)."""
    try:
        return importlib.import_module("simkit.render.viewer")
    except Exception as e:
        raise UsageError(f"the viewer could not be loaded ({type(e).__name__}: {e}); it needs pyglet and a "
                         "display") from e


def _in_window(name: str, *args: Any, **kwargs: Any) -> None:
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


def _progress(total: int, initial: int, unit: str, desc: str, quiet: bool) -> Any:
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

        from .core import compiler

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
def _announcing_compiles(quiet: bool):
    """Show the compiler runs of the block on stderr (:class:`_CompileProgress`)."""
    from .core import compiler

    before, compiler.compile_notice = compiler.compile_notice, _CompileProgress(quiet)
    try:
        yield
    finally:
        compiler.compile_notice = before


# ----------------------------------------------------------------------------------
# Commands
# ----------------------------------------------------------------------------------

def _cmd_run(args: argparse.Namespace) -> int:
    """``simkit run``: simulate a scene with a progress bar and write USD, or show it live."""
    from .scene import load_scene, run_scene
    from .scene.outputs import check_outputs

    if args.view and args.usd:
        raise UsageError("--view shows the run live in a window and writes no file; use either --view or --usd")
    _check_usd_path(args.usd)
    scene = load_scene(resolve_scene(args.scene), device=args.device, frames=args.frames)
    st = scene.settings
    if args.view:
        stepper = scene.stepper()
        _in_window("play_live", scene.model, stepper.reset, stepper.advance, fps=scene.output["fps"],
                   title=f"simkit: {scene.name}")
        return EXIT_OK
    usd = args.usd or scene.output["usd"]
    check_outputs(_scene_inputs(scene), {"--usd" if args.usd else "output.usd": usd})
    with _progress(st.steps, 0, "step", scene.name, args.quiet) as bar:
        result = run_scene(scene, usd_path=usd, on_frame=lambda frame, state: bar.update(st.substeps))
    if not args.quiet:
        rate = result.steps / result.seconds if result.seconds > 0 else float("inf")
        compiling = (f" (and {result.compile_seconds:.1f} s compiling kernels, first run only)"
                     if result.compile_seconds else "")
        print(f"{scene.name}: {result.frames} frames ({result.steps} steps of {st.dt:g} s) in {result.seconds:.2f} s, "
              f"{rate:.0f} steps/s{compiling}")
        print(f"  USD: {result.usd_path}")
    return EXIT_OK


def _cmd_optimize(args: argparse.Namespace) -> int:
    """``simkit optimize``: run the scene's [optimize] table with resumable checkpoints."""
    from .scene import Optimization, load_scene, matplotlib_missing
    from .scene.outputs import check_outputs

    if args.plot:
        why = matplotlib_missing()
        if why is not None:
            raise UsageError(why)
        _check_plot_path(args.plot)
    _check_usd_path(args.usd)
    _check_multi_start_options(args)
    scene = load_scene(resolve_scene(args.scene), device=args.device, frames=args.frames)
    checkpoint = {"--checkpoint" if args.checkpoint else "optimize.checkpoint":
                  args.checkpoint or scene.optimize["checkpoint"]} if scene.optimize is not None else {}
    outputs = {"--usd" if args.usd else "output.usd": args.usd or scene.output["usd"], "--plot": args.plot}
    if not args.resume:
        outputs.update(checkpoint)
    check_outputs(_scene_inputs(scene), outputs, reads_and_writes=checkpoint if args.resume else None)
    say = (lambda *a: None) if args.quiet else print
    if args.starts > 1:
        _multi_start(args, scene, say)
        opt = Optimization(scene, iterations=args.iterations, checkpoint=args.checkpoint, resume=True)
        return _finish_optimize(args, scene, opt, say)
    opt = Optimization(scene, iterations=args.iterations, checkpoint=args.checkpoint, resume=args.resume)
    s = opt.settings
    say(f"{scene.name}: optimizing {', '.join(s['parameters'])} with {s['optimizer']} (learning rate "
        f"{s['learning_rate']:g}) for {opt.iterations} iterations")
    say(f"  loss: {opt.loss.describe()}")
    if args.resume:
        say(f"  resuming from {opt.checkpoint_path} after iteration {opt.iteration}")

    bar = _progress(opt.iterations, min(opt.iteration, opt.iterations), "it", scene.name, args.quiet)

    def on_iteration(iteration: int, loss: float) -> None:
        bar.set_postfix(loss=f"{loss:.4e}")
        bar.update()
        if not args.quiet:
            bar.write(f"iteration {iteration:4d}  loss {loss:.6e}", file=sys.stdout)

    try:
        opt.run(on_iteration)
    except KeyboardInterrupt:
        bar.close()
        again = shlex.join(["simkit", *[a for a in args.argv if a != "--resume"], "--resume"])
        print(f"simkit: interrupted; {opt.saved_iteration} completed iterations are saved in {opt.checkpoint_path} "
              f"(continue with: {again})", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        bar.close()
    return _finish_optimize(args, scene, opt, say)


def _multi_start(args: argparse.Namespace, scene: Any, say: Any) -> None:
    """``optimize --starts N``: every start a Ray task; the best's checkpoint is written."""
    from .scene import SceneError, multi_start

    s = scene.optimize
    if s is None:
        raise SceneError(scene.path, "optimize", "missing; the scene has no [optimize] table, so there is nothing "
                                                 "to optimize (see docs/scenes.md)")
    say(f"{scene.name}: optimizing {', '.join(s['parameters'])} from {args.starts} starts (spread {args.spread:g}, "
        f"seed {args.seed}) with {s['optimizer']} for {args.iterations or s['iterations']} iterations each")
    result = multi_start(scene.path, args.starts, frames=args.frames, device=args.device, iterations=args.iterations,
                         spread=args.spread, seed=args.seed, checkpoint=args.checkpoint or s["checkpoint"],
                         address=args.address, num_cpus=args.cpus, progress=not args.quiet)
    for r in result.starts:
        if r.status == "ok":
            say(f"  start {r.start:3d}: loss {r.initial_loss:.4e} -> {r.loss:.4e}"
                + ("   (best)" if r.start == result.best else ""))
        else:
            say(f"  start {r.start:3d}: failed ({r.error})")


def _check_multi_start_options(args: argparse.Namespace) -> None:
    if args.starts > 1:
        if args.resume:
            raise UsageError("--resume continues one optimization from its checkpoint; it cannot be combined with "
                             "--starts (which runs every start from the beginning)")
        args.spread = 0.5 if args.spread is None else args.spread
        args.seed = 0 if args.seed is None else args.seed
        return
    given = [name for name, value in (("--spread", args.spread), ("--seed", args.seed), ("--address", args.address),
                                      ("--cpus", args.cpus)) if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: only used by a multi-start optimization; add --starts N (N >= 2)")


def _finish_optimize(args: argparse.Namespace, scene: Any, opt: Any, say: Any) -> int:
    """Replay the optimized parameters to USD, plot, and summarize."""
    from .scene import plot_losses

    usd = args.usd or scene.output["usd"]
    final_loss, result = opt.replay(usd_path=usd)
    if args.plot:
        plot_losses(opt.losses + [final_loss], args.plot,
                    title=f"{scene.name}: loss over {opt.iteration} iterations")
    first = f"{opt.losses[0]:.4e} -> " if opt.losses else ""
    say(f"{scene.name}: loss {first}{final_loss:.4e} after {opt.iteration} iterations")
    for p in opt.parameters:
        say(f"  {p.describe()}")
    say(f"  checkpoint: {opt.checkpoint_path.resolve()}")
    say(f"  USD: {result.usd_path}")
    if args.plot:
        say(f"  plot: {Path(args.plot).resolve()}")
    return EXIT_OK


def _cmd_sweep(args: argparse.Namespace) -> int:
    """``simkit sweep``: the grid of --set overrides, every run a Ray task, one table."""
    from .scene import SweepInterrupted, parse_set, sweep
    from .scene.overrides import OverrideError

    grid: dict = {}
    for text in args.set:
        try:
            key, values = parse_set(text)
        except OverrideError as e:
            raise UsageError(str(e)) from None
        if key in grid:
            raise UsageError(f"--set {key}: given twice; list every value of a key in one --set (KEY=V1,V2)")
        grid[key] = values
    path = resolve_scene(args.scene)
    _check_sweep_plot(args, path, grid)
    runs = 1
    for values in grid.values():
        runs *= len(values)
    if not args.quiet:
        axes = " x ".join(f"{k} ({len(v)})" for k, v in grid.items()) or "the scene as it is"
        print(f"{path.stem}: {runs} run{'s' if runs != 1 else ''}: {axes} -> {Path(args.out) / 'results.csv'}")
    try:
        result = sweep(path, grid, out=args.out, frames=args.frames, device=args.device,
                       optimize=False if args.run_only else None, iterations=args.iterations, usd=args.usd,
                       resume=args.resume, address=args.address, num_cpus=args.cpus, threads=args.threads,
                       progress=not args.quiet)
    except OverrideError as e:
        raise UsageError(str(e)) from None
    except SweepInterrupted as e:
        again = shlex.join(["simkit", *[a for a in args.argv if a != "--resume"], "--resume"])
        print(f"simkit: interrupted; {e.finished} of {e.total} runs are in {e.table} (continue with: {again})",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if not args.quiet:
        print(f"{path.stem}: {result.ran} run now, {result.skipped} finished before, {result.failed} failed")
        print(f"  table: {result.table.resolve()}" + (f" (and {result.parquet.name})" if result.parquet else ""))
    _sweep_plot(args, path, result)
    return EXIT_OK


def _check_sweep_plot(args: argparse.Namespace, path: Path, grid: dict) -> None:
    """``sweep --plot [--metric M]``: matplotlib, a swept key and a metric of the table, checked
    before anything runs; sets ``args.metric``."""
    from .scene import matplotlib_missing, read_config
    from .scene.sweep_plot import default_metric, metric_names

    if not args.plot:
        if args.metric is not None:
            raise UsageError("--metric: chooses what --plot draws; add --plot")
        return
    why = matplotlib_missing()
    if why is not None:
        raise UsageError(why)
    if not grid:
        raise UsageError("--plot draws the metric against each swept key; give at least one --set KEY=VALUES")
    optimizing = read_config(path).optimize is not None and not args.run_only
    names = metric_names(optimizing)
    if args.metric is None:
        args.metric = default_metric(optimizing)
    elif args.metric not in names:
        raise UsageError(f"--metric {args.metric}: not a column of this sweep's table; expected one of "
                         f"{', '.join(names)}")


def _sweep_plot(args: argparse.Namespace, path: Path, result: Any) -> None:
    """Draw the table's ``args.metric`` against each swept key into DIR/results.png."""
    from .scene.sweep_plot import PLOT_NAME, plot_sweep

    if not args.plot:
        return
    figure = plot_sweep(result.rows, result.keys, args.metric, Path(args.out) / PLOT_NAME, title=path.stem)
    if not args.quiet:
        print(f"  plot: {figure.resolve()} ({args.metric} per swept key)")


def _cmd_render(args: argparse.Namespace) -> int:
    """``simkit render``: draw a scene's run off-screen into PNG frames or an mp4 video."""
    from .render.images import VIDEO_EXTENSIONS, video_missing
    from .scene import load_scene
    from .scene.outputs import check_outputs
    from .scene.pictures import render_scene

    out = Path(args.out)
    video = out.suffix.lower() in VIDEO_EXTENSIONS
    if not video and out.suffix and not out.is_dir():
        raise UsageError(f"--out {args.out}: expected a folder (for PNG frames) or a file name ending in "
                         f"{', '.join(VIDEO_EXTENSIONS)}")
    if video and (why := video_missing()) is not None:
        raise UsageError(f"--out {args.out}: {why}")
    if video and (args.size[0] % 2 or args.size[1] % 2):
        raise UsageError(f"--size {args.size[0]}x{args.size[1]}: an mp4 video needs an even width and height")
    if not out.resolve().parent.is_dir():
        raise UsageError(f"--out {args.out}: the folder {out.resolve().parent} does not exist")
    if out.exists() and not video and not out.is_dir():
        raise UsageError(f"--out {args.out}: is a file; expected a folder for the PNG frames")
    # --frames N: N pictures, the initial state and N - 1 frames after it
    scene = load_scene(resolve_scene(args.scene), device=args.device,
                       frames=None if args.frames is None else max(args.frames - 1, 1))
    pictures = scene.settings.frames + 1 if args.frames is None else args.frames
    if video:
        check_outputs(_scene_inputs(scene), {"--out": out})
    # the automatic camera frames the whole run: every picture is drawn once the run is simulated
    bars = [_progress(pictures, 0, "frame", f"{scene.name}: simulate", args.quiet)]

    def on_draw(k: int) -> None:
        if len(bars) == 1:
            bars[0].close()
            bars.append(_progress(pictures, 0, "frame", f"{scene.name}: draw", args.quiet))
        bars[-1].update()

    try:
        result = render_scene(scene, out, pictures, args.size, backend=args.backend,
                              on_frame=lambda k: bars[0].update(), on_draw=on_draw)
    finally:
        for bar in bars:
            bar.close()
    if not args.quiet:
        where = out.resolve() if video else out.resolve() / "frame_0000.png ..."
        print(f"{scene.name}: {result.pictures} pictures of {args.size[0]}x{args.size[1]} in {result.seconds:.2f} s")
        print(f"  drawn by: {result.note}")
        print(f"  {'video' if video else 'frames'}: {where}")
    return EXIT_OK


def _describe_bytes(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n} B"


def _compiler_line() -> str:
    from .core.compiler import find_compiler
    from .core.errors import CompilerNotFoundError

    try:
        cxx = find_compiler()
    except CompilerNotFoundError as e:
        return f"none ({e})"
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=20).stdout
        version = out.splitlines()[0] if out else "version unknown"
    except (OSError, subprocess.SubprocessError):
        version = "version unknown"
    return f"{cxx} ({version})"


def _cuda_lines() -> list[str]:
    from .core.cuda import driver

    count = driver.device_count()
    if count == 0:
        return [f"cuda: none ({driver.unavailable_reason() or 'no GPU found'})"]
    lines = []
    for k in range(count):
        try:
            ctx = driver.context(k)
            lines.append(f"cuda:{k} {ctx.gpu_name} (sm_{ctx.compute_capability[0]}{ctx.compute_capability[1]})")
        except Exception as e:
            lines.append(f"cuda:{k} (could not be opened: {e})")
    return lines


def _cmd_info(args: argparse.Namespace) -> int:
    """``simkit info``: version, devices, compiler, cache."""
    import numpy as np

    from . import __version__
    from .core import compiler, nvrtc

    rows = [("simkit", f"{__version__} ({Path(__file__).resolve().parent})"),
            ("python", f"{platform.python_version()} ({sys.executable})"),
            ("numpy", np.__version__),
            ("devices", f"cpu ({os.cpu_count()} cores)")]
    rows += [("", line) for line in _cuda_lines()]
    rows.append(("compiler", _compiler_line()))
    try:
        rows.append(("nvrtc", "{}.{}".format(*nvrtc.version()) if nvrtc.is_available() else "not available"))
    except Exception as e:
        rows.append(("nvrtc", f"not available ({e})"))
    files, size = compiler.cache_usage()
    rows.append(("cache", f"{compiler.cache_dir()} ({files} files, {_describe_bytes(size)})"))
    for name, value in rows:
        print(f"{name:<10}{value}")
    return EXIT_OK


def _cmd_cache(args: argparse.Namespace) -> int:
    """``simkit cache clear``: delete the compiled modules."""
    from .core import compiler

    files, size = compiler.clear_cache()
    print(f"removed {files} files ({_describe_bytes(size)}) from {compiler.cache_dir()}")
    return EXIT_OK


def _cmd_bench(args: argparse.Namespace) -> int:
    """``simkit bench``: tools/bench.py of the source checkout, with the remaining arguments."""
    root = source_root()
    if root is None:
        raise UsageError(f"simkit bench runs tools/bench.py of a source checkout, and this simkit "
                         f"({Path(__file__).resolve().parent}) is an installed copy without one; clone the "
                         "repository and run 'python tools/bench.py' there")
    return subprocess.call([sys.executable, str(root / "tools" / "bench.py"), *args.bench_args], cwd=root)


def _cmd_view(args: argparse.Namespace) -> int:
    """``simkit view FILE``: play a recorded USD file in the viewer."""
    path = Path(args.file)
    if path.suffix.lower() not in USD_EXTENSIONS:
        raise UsageError(f"{args.file}: expected a USD file ending in {', '.join(USD_EXTENSIONS)}")
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file")
    _in_window("play_usd", str(path))
    return EXIT_OK


# ----------------------------------------------------------------------------------
# Parsing
# ----------------------------------------------------------------------------------

def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _spread(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 50), got {text!r}") from None
    if not 0.0 <= value < 50.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 50), got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _size(text: str) -> tuple[int, int]:
    from .render.images import MAX_SIZE

    parts = text.lower().split("x")
    try:
        width, height = (int(v) for v in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels (e.g. 640x480), got {text!r}") from None
    if not (1 <= width <= MAX_SIZE and 1 <= height <= MAX_SIZE):
        raise argparse.ArgumentTypeError(f"expected a width and height in 1..{MAX_SIZE} (e.g. 640x480), got {text!r}")
    return width, height


def _render_parser(sub: Any) -> None:
    from .render.images import BACKENDS

    r = sub.add_parser("render", help="draw a scene's run into PNG frames or an mp4, without a display",
                       description="Simulate a scene and draw it off-screen (OpenGL through EGL when it can, else a "
                                   "software rasterizer) into PNG frames DIR/frame_0000.png ... or an mp4 video.")
    r.add_argument("scene", metavar="SCENE", help="a scene file (.toml), or the name of a bundled scene")
    r.add_argument("--out", required=True, metavar="DIR|FILE.mp4", help="a folder for PNG frames, or a video file "
                   "ending in .mp4 (needs pip install 'simkit[video]')")
    r.add_argument("--frames", type=_count, metavar="N", help="pictures to draw: the initial state and the N-1 "
                   "frames after it (default: the whole run, sim.frames + 1)")
    r.add_argument("--size", type=_size, default=(640, 480), metavar="WxH", help="picture size in pixels "
                   "(default: 640x480)")
    r.add_argument("--backend", choices=BACKENDS, default="auto", help="auto (default): OpenGL when a context can be "
                   "made, else software; opengl: fail without a context; software: always the numpy rasterizer")
    r.add_argument("--device", metavar="D", help='where to run: "cpu", "cuda" or "cuda:N" (default: sim.device)')
    r.add_argument("--quiet", action="store_true", help="no progress bars and no summary")
    r.set_defaults(handler=_cmd_render)


def _sweep_plot_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plot", action="store_true", help="draw the table's metric against each swept key into "
                   "DIR/results.png (needs matplotlib)")
    p.add_argument("--metric", metavar="NAME", help="the column --plot draws (default: loss when the runs optimize, "
                   "else kinetic_energy)")


def _ray_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", metavar="ADDR", help='the Ray cluster to join ("auto", "ray://HOST:10001"); '
                   "default: start a local Ray")
    p.add_argument("--cpus", type=_count, metavar="N", help="CPUs of the local Ray (default: all)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``simkit`` command.

    Example::

        build_parser().parse_args(["run", "scenes/flag.toml", "--frames", "10"])
    """
    from . import __version__

    p = argparse.ArgumentParser(prog="simkit", description="simkit: differentiable physics simulation. Run and "
                                "optimize scene configs (TOML, see docs/scenes.md), inspect the installation.")
    p.add_argument("--version", action="version", version=f"simkit {__version__}")
    p.add_argument("--traceback", action="store_true", help="print the traceback of a failed run (exit code 1)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser("run", help="simulate a scene and write it to USD",
                         description="Simulate a scene with a progress bar and write every frame to USD.")
    run.add_argument("scene", metavar="SCENE", help="a scene file (.toml), or the name of a bundled scene")
    run.add_argument("--frames", type=_count, metavar="N", help="frames to simulate (default: sim.frames)")
    run.add_argument("--device", metavar="D", help='where to run: "cpu", "cuda" or "cuda:N" (default: sim.device)')
    run.add_argument("--usd", metavar="PATH", help="the USD file to write (default: output.usd)")
    run.add_argument("--view", action="store_true", help="show the run live in a window instead of writing USD")
    run.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    run.set_defaults(handler=_cmd_run)

    opt = sub.add_parser("optimize", help="run a scene's [optimize] table",
                         description="Optimize the parameters of a scene's [optimize] table, with checkpoints "
                                     "to resume from, then write the optimized run to USD.")
    opt.add_argument("scene", metavar="SCENE", help="a scene file (.toml) with an [optimize] table")
    opt.add_argument("--iterations", type=_count, metavar="N", help="iterations in total, those of a --resume'd "
                     "checkpoint included (default: optimize.iterations; a checkpoint at 60 with --iterations 70 "
                     "runs 10 more)")
    opt.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    opt.add_argument("--plot", metavar="PATH", help="save the loss per iteration as an image (needs matplotlib)")
    opt.add_argument("--checkpoint", metavar="PATH", help="the checkpoint file (default: optimize.checkpoint)")
    opt.add_argument("--frames", type=_count, metavar="N", help="frames of each rollout (default: sim.frames)")
    opt.add_argument("--device", metavar="D", help='where to run: "cpu", "cuda" or "cuda:N"')
    opt.add_argument("--usd", metavar="PATH", help="the USD file of the optimized run (default: output.usd)")
    opt.add_argument("--quiet", action="store_true", help="no progress bar and no output but errors")
    opt.add_argument("--starts", type=_count, default=1, metavar="N", help="multi-start: optimize from N perturbed "
                     "initial parameters at once (Ray tasks) and keep the best (default: 1)")
    opt.add_argument("--spread", type=_spread, metavar="S", help="multi-start: how far starts 1.. "
                     "move the parameters (docs/sweeps.md; default: 0.5)")
    opt.add_argument("--seed", type=_seed, metavar="K", help="multi-start: the seed of the "
                     "perturbations (default: 0)")
    _ray_options(opt)
    opt.set_defaults(handler=_cmd_optimize)

    sw = sub.add_parser("sweep", help="run a grid of overrides of a scene's keys on Ray, into one table",
                        description="Run a scene once for every combination of --set values, each run a Ray task, "
                                    "and write one row per run (overrides, metrics or optimized loss, wall time, "
                                    "status) to DIR/results.csv. See docs/sweeps.md.")
    sw.add_argument("scene", metavar="SCENE", help="a scene file (.toml), or the name of a bundled scene")
    sw.add_argument("--set", action="append", default=[], metavar="KEY=VALUES",
                    help="a key path and its values: v1,v2,... or lo:hi:n (n evenly spaced) or lo:hi:n:log, "
                         "e.g. sim.dt=1e-3,5e-4 or cloth[0].k_mu=500:2000:4; repeat for more keys")
    sw.add_argument("--frames", type=_count, metavar="N", help="frames of every run (default: sim.frames)")
    sw.add_argument("--device", metavar="D", help='where the runs run: "cpu", "cuda" or "cuda:N"')
    sw.add_argument("--out", default="sweep", metavar="DIR", help="the folder of the table (default: ./sweep)")
    sw.add_argument("--resume", action="store_true", help="continue the sweep in DIR: only the runs not in its table")
    sw.add_argument("--usd", action="store_true", help="also write every run to DIR/usd/run-NNNN.usd")
    sw.add_argument("--iterations", type=_count, metavar="N", help="iterations of each optimization (scenes with "
                    "[optimize]; default: optimize.iterations)")
    sw.add_argument("--run-only", action="store_true", help="simulate scenes with [optimize] once instead of "
                    "optimizing them")
    sw.add_argument("--threads", type=_count, default=1, metavar="N", help="simkit CPU threads (and Ray CPUs) per "
                    "run (default: 1)")
    sw.add_argument("--quiet", action="store_true", help="no progress bar and no output but errors")
    _sweep_plot_options(sw)
    _ray_options(sw)
    sw.set_defaults(handler=_cmd_sweep)

    _render_parser(sub)

    info = sub.add_parser("info", help="version, devices, compiler and cache")
    info.set_defaults(handler=_cmd_info)

    cache = sub.add_parser("cache", help="manage the compiled-module cache")
    cache_sub = cache.add_subparsers(dest="action", metavar="ACTION", required=True)
    clear = cache_sub.add_parser("clear", help="delete the compiled modules (SIMKIT_CACHE_DIR or ~/.cache/simkit)")
    clear.set_defaults(handler=_cmd_cache)

    bench = sub.add_parser("bench", help="run tools/bench.py of a source checkout (arguments are passed on)",
                           description="Run the benchmarks of tools/bench.py (source checkouts only); every "
                                       "further argument is passed on, e.g. simkit bench --quick.")
    bench.set_defaults(handler=_cmd_bench)

    view = sub.add_parser("view", help="play a recorded USD file in the viewer")
    view.add_argument("file", metavar="FILE", help="a .usd, .usda or .usdc file")
    view.set_defaults(handler=_cmd_view)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``simkit`` command with ``argv`` (default: ``sys.argv[1:]``) and return its
    exit code: 0 done, 1 failed, 2 usage or config error, 130 interrupted.

    Example::

        main(["info"])
    """
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, extra = parser.parse_known_args(argv)
        args.argv = argv
        if args.command == "bench":
            args.bench_args = extra
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    try:
        with _warnings_as_lines(), _announcing_compiles(bool(getattr(args, "quiet", False))):
            return args.handler(args)
    except (SceneError, UsageError) as e:
        print(f"simkit: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("simkit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:
        print(f"simkit: error: {e}" if str(e) else f"simkit: error: {type(e).__name__}", file=sys.stderr)
        if args.traceback:
            traceback.print_exc()
        elif not _explains_itself(e):
            print("simkit: (run with --traceback for the details)", file=sys.stderr)
        return EXIT_FAILED


@contextlib.contextmanager
def _warnings_as_lines():
    """Show each warning of a command as one line, ``simkit: warning: ...``: the Python source
    line a warning would point at is simkit's, not the user's, whose file the message names."""
    with warnings.catch_warnings():
        def show(message, category, filename, lineno, file=None, line=None):
            print(f"simkit: warning: {message} ({category.__name__})", file=sys.stderr if file is None else file)

        warnings.showwarning = show
        yield


def _explains_itself(e: Exception) -> bool:
    """A diverged simulation: its message says where and what to change, a traceback adds nothing."""
    from .sim.stability import SimulationError

    return isinstance(e, SimulationError)
