"""Silence a noisy library (warp's banner and module-load lines) around a block, for the bench tools.

Example::

    with quiet():
        import warp as wp
        wp.init()
"""

import contextlib
import io
import os
import sys


@contextlib.contextmanager
def quiet():
    """Swallow warp's banner and module-load messages, on Python's streams and on file
    descriptors 1 and 2 (warp's native code writes there directly)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [devnull]:
            os.close(fd)
