"""``python -m simkit``: the ``simkit`` command (see :mod:`simkit.cli`).

Example::

    python -m simkit run scenes/ball_bounce.toml --frames 10
"""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
