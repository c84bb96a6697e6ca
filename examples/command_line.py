"""The command line every example shares: ``--iterations``, ``--usd`` and ``--quiet``.

Example::

    if __name__ == "__main__":
        run(__doc__, main, summary, DEFAULT_ITERATIONS, DEFAULT_USD)
"""

import argparse
from pathlib import Path
from typing import Callable


def parse_args(doc: str, iterations: int, usd: Path, argv=None, optimizers: tuple = ()) -> argparse.Namespace:
    """The options of an example whose docstring is ``doc``, with its defaults; ``optimizers``:
    the choices of ``--optimizer`` (the first is the default), for examples that offer some."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=None if optimizers else iterations,
                   help="optimization steps" + (" (default: the chosen optimizer's)" if optimizers else ""))
    p.add_argument("--usd", default=str(usd), help="output USD file (.usd, .usda or .usdc)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no per-iteration lines")
    if optimizers:
        p.add_argument("--optimizer", choices=optimizers, default=optimizers[0],
                       help="adam: gradient steps; lm: Levenberg-Marquardt")
    return p.parse_args(argv)


def run(doc: str, main: Callable[..., dict], summary: Callable[[dict], str], iterations: int, usd: Path,
        optimizers: tuple = ()) -> None:
    """Parse the command line, run ``main`` and print its ``summary``."""
    args = parse_args(doc, iterations, usd, optimizers=optimizers)
    extra = {"optimizer": args.optimizer} if optimizers else {}
    print(summary(main(iterations=args.iterations, usd_path=args.usd, quiet=args.quiet, **extra)))
