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

import contextlib
import sys
import traceback
import warnings
from typing import Sequence

from ..scene.validate import SceneError
from .common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, UsageError, announcing_compiles, source_root
from .parser import build_parser

__all__ = ["main", "build_parser", "UsageError", "source_root"]


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
        with _warnings_as_lines(), announcing_compiles(bool(getattr(args, "quiet", False))):
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
    from ..sim.stability import SimulationError

    return isinstance(e, SimulationError)
