"""The argument parser of ``simkit``: its commands, options and value checks."""

from __future__ import annotations

import argparse
from typing import Any

from .render import cmd_render
from .simulate import cmd_optimize, cmd_run
from .sweep import cmd_sweep
from .utilities import cmd_bench, cmd_cache, cmd_info, cmd_view


def _checked(convert: Any, ok: Any, expected: str) -> Any:
    """An argparse ``type``: ``convert(text)`` when that works and ``ok`` holds for it, else
    the error "expected {expected}, got 'text'"."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value
    return parse


_count = _checked(int, lambda v: v >= 1, "an integer >= 1")
_spread = _checked(float, lambda v: 0.0 <= v < 50.0, "a number in [0, 50)")
_seed = _checked(int, lambda v: v >= 0, "an integer >= 0")


def _size(text: str) -> tuple[int, int]:
    from ..render.images import MAX_SIZE

    parts = text.lower().split("x")
    try:
        width, height = (int(v) for v in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels (e.g. 640x480), got {text!r}") from None
    if not (1 <= width <= MAX_SIZE and 1 <= height <= MAX_SIZE):
        raise argparse.ArgumentTypeError(f"expected a width and height in 1..{MAX_SIZE} (e.g. 640x480), got {text!r}")
    return width, height


def _render_parser(sub: Any) -> None:
    from ..render.images import BACKENDS

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
    r.set_defaults(handler=cmd_render)


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
    from .. import __version__

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
    run.set_defaults(handler=cmd_run)

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
    opt.set_defaults(handler=cmd_optimize)

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
    sw.set_defaults(handler=cmd_sweep)

    _render_parser(sub)

    info = sub.add_parser("info", help="version, devices, compiler and cache")
    info.set_defaults(handler=cmd_info)

    cache = sub.add_parser("cache", help="manage the compiled-module cache")
    cache_sub = cache.add_subparsers(dest="action", metavar="ACTION", required=True)
    clear = cache_sub.add_parser("clear", help="delete the compiled modules (SIMKIT_CACHE_DIR or ~/.cache/simkit)")
    clear.set_defaults(handler=cmd_cache)

    bench = sub.add_parser("bench", help="run tools/bench.py of a source checkout (arguments are passed on)",
                           description="Run the benchmarks of tools/bench.py (source checkouts only); every "
                                       "further argument is passed on, e.g. simkit bench --quick.")
    bench.set_defaults(handler=cmd_bench)

    view = sub.add_parser("view", help="play a recorded USD file in the viewer")
    view.add_argument("file", metavar="FILE", help="a .usd, .usda or .usdc file")
    view.set_defaults(handler=cmd_view)
    return p
