"""The C++ toolchain: compiler discovery, the on-disk module cache, building and loading.

Cache entries are keyed by a hash of the generated source, the native headers,
the compiler's identity (resolved path, size and modification time: read from
the file system, so a warm cache never runs the compiler) and the flags.

Each entry's size and SHA-256 are recorded next to it (``<entry>.sha256``), written
before the entry itself appears; both are written to a temporary file and renamed
into place, so another process never sees half of either. A load checks the entry
against that record first (hashing a 500 KB module takes ~0.3 ms), and a
truncated, overwritten or unrecorded entry is rebuilt with a warning naming it,
instead of crashing the process (SIGBUS) or failing on every run.

Example::

    lib = compiler.load_module(source_text)     # compiles once, then loads from cache
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from . import builtins as B
from .config import config
from .errors import CacheRepairWarning, CompilerNotFoundError, NativeCompileError

NATIVE_DIR = Path(__file__).parent / "native"
HEADER_NAME = "simkit_builtins.h"
CXX_FLAGS = ["-std=c++17", "-O3", "-fPIC", "-shared", "-w", "-fno-math-errno", "-march=native", "-pthread"]

# Counts real compiler invocations; tests read it to prove a warm cache compiles nothing.
# compile_seconds: the wall time during which at least one of them ran (runs at the same
# time count once), which the CLI leaves out of its steps/s.
stats = {"compiles": 0, "cache_hits": 0, "compile_seconds": 0.0}
_running = [0, 0.0]   # compiler runs in progress, and when the first of them started

log = logging.getLogger("simkit")


def log_compile(what: str) -> contextlib.AbstractContextManager:
    """The default :data:`compile_notice`: one INFO line on the ``simkit`` logger.

    Example::

        logging.basicConfig(level=logging.INFO)   # shows "simkit: compiling 3 kernels of ..."
    """
    log.info("simkit: compiling %s (first run only; cached in %s)", what, cache_dir())
    return contextlib.nullcontext()


# Entered around every compiler run as ``compile_notice(what)``, ``what`` naming what is
# compiled ("3 kernels of module my_sim"): a cold compile takes seconds to a minute, and
# must not look like a hang. The CLI replaces it with a progress line on stderr.
compile_notice = log_compile


def cache_dir() -> Path:
    """The module cache: ``sk.config.cache_dir``, ``$SIMKIT_CACHE_DIR`` or the user cache dir."""
    d = config.cache_dir or os.environ.get("SIMKIT_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "simkit")
    p = Path(d)
    p.mkdir(mode=0o700, parents=True, exist_ok=True)
    return p


# What simkit keeps in the cache folder: CPU modules, GPU modules, generated headers, and
# temporary files of writes in progress. Nothing else there is simkit's to count or delete.
CACHE_ENTRIES = ("modules", "cuda", "include-*", ".tmp-*")


def _cache_paths(d: Path) -> list[Path]:
    found: set[Path] = set()
    for pattern in CACHE_ENTRIES:
        found.update(d.glob(pattern))
    return sorted(found)


def _walk_files(p: Path) -> list[Path]:
    if p.is_symlink() or p.is_file():
        return [p]
    return [Path(root) / name for root, _dirs, names in os.walk(p) for name in names]


def cache_usage() -> tuple[int, int]:
    """``(files, bytes)`` of simkit's entries in :func:`cache_dir`.

    Example::

        files, size = cache_usage()
    """
    files = [f for p in _cache_paths(cache_dir()) for f in _walk_files(p)]
    return len(files), sum(f.lstat().st_size for f in files if f.exists() or f.is_symlink())


def clear_cache() -> tuple[int, int]:
    """Delete simkit's entries (compiled modules, generated headers, temporaries) from
    :func:`cache_dir`, leaving anything else in that folder alone; returns the ``(files,
    bytes)`` removed. Modules already loaded by this process keep working; the next new
    kernel compiles again.

    Example::

        files, size = clear_cache()
    """
    files, size = cache_usage()
    for p in _cache_paths(cache_dir()):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    left_files, left_size = cache_usage()
    return files - left_files, size - left_size


def find_compiler() -> str:
    """``$SIMKIT_CXX``, then ``g++``, then ``clang++``; raises CompilerNotFoundError otherwise."""
    env = os.environ.get("SIMKIT_CXX")
    if env:
        path = shutil.which(env)
        if path is None:
            raise CompilerNotFoundError(
                f"SIMKIT_CXX is set to {env!r}, but no such compiler was found on PATH. "
                "Point it at an installed C++ compiler (e.g. SIMKIT_CXX=g++) or unset it.")
        return path
    for name in ("g++", "clang++"):
        path = shutil.which(name)
        if path:
            return path
    raise CompilerNotFoundError(
        "simkit needs a C++ compiler for the CPU backend and found none (looked for $SIMKIT_CXX, g++, clang++). "
        "Install one, e.g. 'sudo apt-get install g++' on Debian/Ubuntu, 'sudo dnf install gcc-c++' on Fedora, "
        "or 'xcode-select --install' on macOS; or set SIMKIT_CXX to its path.")


def compiler_identity(path: str) -> str:
    real = os.path.realpath(path)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{int(st.st_mtime)}"


@lru_cache(maxsize=None)
def _cpu_identity() -> str:
    # -march=native code is only valid on the same CPU model.
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    return hashlib.sha256(line.encode()).hexdigest()[:16] + platform.machine()
    except OSError:
        pass
    return platform.processor() + platform.machine()


@lru_cache(maxsize=None)
def header_text() -> str:
    return B.generate_header()


@lru_cache(maxsize=None)
def tangent_header_text() -> str:
    """The tangent builtins (forward mode), included by tangent modules only; their sources
    name this text's hash, so it keys their cache entries and no other module's."""
    return B.generate_tangent_header()


@lru_cache(maxsize=None)
def headers_hash() -> str:
    h = hashlib.sha256(header_text().encode())
    for p in sorted(NATIVE_DIR.glob("*.h")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def include_dir() -> Path:
    """A cache folder holding the generated builtin header next to the module sources."""
    d = cache_dir() / f"include-{headers_hash()[:16]}"
    target = d / HEADER_NAME
    if not target.exists():
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        _atomic_write(target, header_text().encode())
    tangents = d / B.TANGENT_HEADER
    text = tangent_header_text().encode()
    if not tangents.exists() or tangents.stat().st_size != len(text) or tangents.read_bytes() != text:
        _atomic_write(tangents, text)
    return d


def _atomic_write(path: Path, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def record_entry(path: Path, data: bytes) -> None:
    """Write the size and hash of ``data``, the bytes about to be published at ``path``, next to
    it. Call it before the entry is renamed into place: whoever finds the entry finds its record."""
    _atomic_write(_record_path(path), f"{len(data)} {hashlib.sha256(data).hexdigest()}\n".encode())


def entry_problem(path: Path, data: bytes | None = None) -> str | None:
    """What is wrong with the cache entry at ``path`` (its bytes ``data`` if already read), or None
    when its size and hash match what :func:`record_entry` wrote."""
    try:
        fields = _record_path(path).read_text().split()
    except FileNotFoundError:
        return f"no size and hash were recorded for it ({_record_path(path).name} is missing)"
    except (OSError, UnicodeDecodeError) as e:
        return f"its record {_record_path(path).name} cannot be read: {e}"
    if len(fields) != 2 or not fields[0].isdigit():
        return f"its record {_record_path(path).name} is malformed"
    size, digest = int(fields[0]), fields[1]
    try:
        if data is None:
            if path.stat().st_size != size:
                return f"it is {path.stat().st_size} bytes, but {size} were written"
            data = path.read_bytes()
    except OSError as e:
        return f"it cannot be read: {e}"
    if len(data) != size:
        return f"it is {len(data)} bytes, but {size} were written"
    if hashlib.sha256(data).hexdigest() != digest:
        return "its contents differ from what was written"
    return None


def warn_rebuild(path: Path, problem: str) -> None:
    """Say that a damaged cache entry is being rebuilt (and what was wrong with it)."""
    warnings.warn(f"simkit: the cached module {path} is damaged ({problem}); rebuilding it",
                  CacheRepairWarning, stacklevel=3)


def module_key(source: str, cxx: str) -> str:
    h = hashlib.sha256()
    for part in (source, headers_hash(), compiler_identity(cxx), " ".join(CXX_FLAGS), _cpu_identity()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


# Compiler runs started ahead of the launches that need them (build_shared_ahead), by
# library path; build_shared of the same source waits for its run instead of starting one.
_ahead: dict[Path, Future] = {}
_ahead_lock = threading.Lock()
_workers: ThreadPoolExecutor | None = None


def _entry_paths(source: str, name: str) -> tuple[str, str, Path, Path, Path]:
    """(compiler, key, cache folder, library, source file) of the module ``source`` named ``name``."""
    cxx = find_compiler()
    key = module_key(source, cxx)
    out_dir = cache_dir() / "modules"
    out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return cxx, key, out_dir, out_dir / f"{name}-{key}.so", out_dir / f"{name}-{key}.cpp"


def _cached(lib: Path, src: Path, source: str) -> bool:
    """Whether ``lib`` is a valid cache entry (a damaged one is removed, with a warning)."""
    if not lib.exists():
        return False
    problem = entry_problem(lib)
    if problem is None:
        if config.keep_source and not src.exists():
            _atomic_write(src, source.encode())
        return True
    warn_rebuild(lib, problem)
    lib.unlink(missing_ok=True)
    return False


def _compile(cxx: str, source: str, out_dir: Path, lib: Path, src: Path, extra: tuple, what: str | None) -> Path:
    """One compiler run: ``source`` into the cache entry ``lib`` (any thread), announced as
    ``what`` (None: the caller announces it, :func:`announce_runs`)."""
    _atomic_write(src, source.encode())
    tmp = out_dir / f".{lib.stem}.{os.getpid()}.{threading.get_ident()}.so"
    cmd = [cxx, *CXX_FLAGS, *extra, f"-I{NATIVE_DIR}", f"-I{include_dir()}", str(src), "-o", str(tmp)]
    with _ahead_lock:
        if not _running[0]:
            _running[1] = time.perf_counter()
        _running[0] += 1
    try:
        with compile_notice(what) if what is not None else contextlib.nullcontext():
            proc = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        with _ahead_lock:
            stats["compiles"] += 1
            _running[0] -= 1
            if not _running[0]:
                stats["compile_seconds"] += time.perf_counter() - _running[1]
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise NativeCompileError(
            f"the C++ compiler rejected generated module {src} (this is a simkit bug; please report it "
            f"with the kernel):\n{' '.join(cmd)}\n{proc.stderr[-6000:]}")
    record_entry(lib, tmp.read_bytes())
    os.replace(tmp, lib)
    if not config.keep_source:
        src.unlink(missing_ok=True)
    return lib


def build_shared(source: str, name: str, extra: tuple = (), what: str | None = None) -> Path:
    """The path of the compiled shared library for ``source``, compiling only on a cache miss
    (announced through :data:`compile_notice` as ``what``, by default "module NAME"), or
    waiting for the run :func:`build_shared_ahead` started for it."""
    cxx, _key, out_dir, lib, src = _entry_paths(source, name)
    with _ahead_lock:
        running = _ahead.pop(lib, None)
    if running is not None:
        return running.result()   # its compiler error, if it failed, raised here
    if _cached(lib, src, source):
        stats["cache_hits"] += 1
        return lib
    return _compile(cxx, source, out_dir, lib, src, extra, what or f"module {name}")


def build_shared_ahead(source: str, name: str, extra: tuple = (), what: str | None = None,
                       announce: bool = True) -> Future | None:
    """Start compiling ``source`` on a compiler thread (one per core) unless it is cached or
    already running, so that independent modules compile at the same time; the
    :func:`build_shared` that needs it then waits for that run. Returns the run it started
    (None: none). ``announce=False`` leaves its :data:`compile_notice` to the caller, who
    names several runs in one (:func:`announce_runs`).

    Example::

        compiler.build_shared_ahead(source, "my_module")   # returns at once
        lib = compiler.build_shared(source, "my_module")   # waits for that compile
    """
    global _workers
    cxx, _key, out_dir, lib, src = _entry_paths(source, name)
    with _ahead_lock:
        if lib in _ahead:
            return None
    if _cached(lib, src, source):
        return None
    with _ahead_lock:
        if lib in _ahead:
            return None
        if _workers is None:
            _workers = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1), thread_name_prefix="simkit-compile")
        run = _ahead[lib] = _workers.submit(_compile, cxx, source, out_dir, lib, src, extra,
                                            (what or f"module {name}") if announce else None)
    return run


def announce_runs(what: str, runs: list[Future]) -> None:
    """One :data:`compile_notice` named ``what`` for the compiler ``runs`` started together
    (:func:`build_shared_ahead` with ``announce=False``), from their start until the last of
    them ends, on a thread of its own: a step's modules compiling at once say so in one line,
    not one per module.

    Example::

        runs = [compiler.build_shared_ahead(s, n, announce=False) for s, n in modules]
        compiler.announce_runs("2 modules at once: a, b", [r for r in runs if r is not None])
    """
    if not runs:
        return
    notice = compile_notice

    def wait() -> None:
        with notice(what):
            futures.wait(runs)
    threading.Thread(target=wait, name="simkit-compile-notice", daemon=True).start()


def source_path(lib: Path) -> Path:
    """Where the generated C++ of a cached module lives (kept with ``sk.config.keep_source``)."""
    return lib.with_suffix(".cpp")


@lru_cache(maxsize=None)
def runtime() -> ctypes.CDLL:
    """The thread-pool runtime shared by all CPU modules (compiled once, then cached)."""
    source = (NATIVE_DIR / "runtime.cpp").read_text()
    lib = ctypes.CDLL(str(build_shared(source, "runtime", what="the CPU runtime")))
    lib.sk_launch.argtypes = [ctypes.c_void_p]
    lib.sk_launch.restype = None
    lib.sk_replay.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.sk_replay.restype = ctypes.c_int64
    lib.sk_clear_many.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    lib.sk_clear_many.restype = None
    lib.sk_get_threads.restype = ctypes.c_int
    lib.sk_set_threads.argtypes = [ctypes.c_int]
    lib.sk_launch_counts.argtypes = [ctypes.c_void_p]
    lib.sk_launch_counts.restype = None
    lib.sk_catch_interrupts.restype = ctypes.c_int
    lib.sk_catch_crashes.restype = ctypes.c_int
    lib.sk_catch_crashes()  # a crash inside a kernel names it (runtime.cpp, on_fatal_signal)
    threads = os.environ.get("SIMKIT_NUM_THREADS")
    if threads:
        if not threads.isdigit() or int(threads) < 1:
            raise ValueError(f"SIMKIT_NUM_THREADS must be a whole number >= 1, got {threads!r}")
        lib.sk_set_threads(int(threads))
    return lib
