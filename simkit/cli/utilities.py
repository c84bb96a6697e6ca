"""``simkit info``, ``cache clear``, ``bench`` and ``view``: the installation and its files."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from pathlib import Path

from ..scene.schema import USD_EXTENSIONS
from .common import EXIT_OK, UsageError, in_window, source_root


def _describe_bytes(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n} B"


def _compiler_line() -> str:
    from ..core.compiler import find_compiler
    from ..core.errors import CompilerNotFoundError

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
    from ..core.cuda import driver

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


def cmd_info(args: argparse.Namespace) -> int:
    """``simkit info``: version, devices, compiler, cache."""
    import numpy as np

    from .. import __version__
    from ..core import compiler, nvrtc

    rows = [("simkit", f"{__version__} ({Path(__file__).resolve().parent.parent})"),
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


def cmd_cache(args: argparse.Namespace) -> int:
    """``simkit cache clear``: delete the compiled modules."""
    from ..core import compiler

    files, size = compiler.clear_cache()
    print(f"removed {files} files ({_describe_bytes(size)}) from {compiler.cache_dir()}")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    """``simkit bench``: tools/bench.py of the source checkout, with the remaining arguments."""
    root = source_root()
    if root is None:
        raise UsageError(f"simkit bench runs tools/bench.py of a source checkout, and this simkit "
                         f"({Path(__file__).resolve().parent.parent}) is an installed copy without one; clone the "
                         "repository and run 'python tools/bench.py' there")
    return subprocess.call([sys.executable, str(root / "tools" / "bench.py"), *args.bench_args], cwd=root)


def cmd_view(args: argparse.Namespace) -> int:
    """``simkit view FILE``: play a recorded USD file in the viewer."""
    path = Path(args.file)
    if path.suffix.lower() not in USD_EXTENSIONS:
        raise UsageError(f"{args.file}: expected a USD file ending in {', '.join(USD_EXTENSIONS)}")
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file")
    in_window("play_usd", str(path))
    return EXIT_OK
