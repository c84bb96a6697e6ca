"""Exceptions users see. Each one says where the problem is and what was expected."""

from __future__ import annotations


class CompileError(Exception):
    """A kernel or function that cannot be compiled; names file, line and the source line.

    Example message::

        tests/core/test_errors.py:14: in kernel 'bad': unknown name 'foo'
            y[i] = foo(x[i])
    """

    def __init__(self, message: str, file: str = "<unknown>", line: int = 0, source: str = "", where: str = ""):
        self.message = message
        self.file = file
        self.line = line
        self.source = source
        self.where = where
        text = f"{file}:{line}: {where + ': ' if where else ''}{message}"
        if source:
            text += f"\n    {source.strip()}"
        super().__init__(text)


class CompilerNotFoundError(RuntimeError):
    """No C++ compiler was found for the CPU backend."""


class NativeCompileError(RuntimeError):
    """The C++ compiler rejected generated code (a simkit bug): carries the compiler output."""


class KernelRuntimeError(RuntimeError):
    """A kernel stopped on a runtime check (e.g. the adjoint's loop stack overflowed)."""


class CacheRepairWarning(RuntimeWarning):
    """A damaged compile-cache entry (truncated, overwritten, or without its recorded size and
    hash) was found; simkit rebuilds it. The message names the file."""
