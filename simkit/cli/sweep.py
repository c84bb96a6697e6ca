"""``simkit sweep``: a grid of overrides, every run a Ray task, one table (and its plot)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_INTERRUPTED, EXIT_OK, UsageError, resolve_scene


def cmd_sweep(args: argparse.Namespace) -> int:
    """``simkit sweep``: the grid of --set overrides, every run a Ray task, one table."""
    from ..scene import SweepInterrupted, parse_set, sweep
    from ..scene.overrides import OverrideError

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
    from ..scene import matplotlib_missing, read_config
    from ..scene.sweep_plot import default_metric, metric_names

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
    from ..scene.sweep_plot import PLOT_NAME, plot_sweep

    if not args.plot:
        return
    figure = plot_sweep(result.rows, result.keys, args.metric, Path(args.out) / PLOT_NAME, title=path.stem)
    if not args.quiet:
        print(f"  plot: {figure.resolve()} ({args.metric} per swept key)")
