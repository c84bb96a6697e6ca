"""The on-disk module cache: warm loads never run the compiler; changes invalidate."""

import os
import stat
import subprocess
import sys
import textwrap

import pytest

import simkit as sk
from simkit.core import compiler

pytestmark = pytest.mark.cpu_only("the CPU module cache (tests/cuda checks the GPU module cache)")

PROGRAM = textwrap.dedent('''
    import simkit as sk

    @sk.func
    def helper(x: float) -> float:
        return x * HELPER_FACTOR

    @sk.kernel
    def scale(a: sk.array(dtype=float)):
        i = sk.tid()
        a[i] = helper(a[i])

    a = sk.ones(4)
    sk.launch(scale, 4, inputs=[a])
    print(a.numpy()[0])
''')


@pytest.fixture
def project(tmp_path):
    """A script, an empty cache and a compiler wrapper that logs each call."""
    log = tmp_path / "compiler.log"
    wrapper = tmp_path / "logging-cxx"
    wrapper.write_text(f'#!/bin/sh\necho call >> "{log}"\nexec g++ "$@"\n')
    wrapper.chmod(0o755)
    env = dict(os.environ, SIMKIT_CACHE_DIR=str(tmp_path / "cache"), SIMKIT_CXX=str(wrapper))

    def run(factor: str, stderr: bool = False):
        """The program's output (and its stderr, with ``stderr=True``); it must exit cleanly."""
        script = tmp_path / "prog.py"
        script.write_text(PROGRAM.replace("HELPER_FACTOR", factor))
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-3000:]}"
        return (out.stdout.strip(), out.stderr) if stderr else out.stdout.strip()

    def calls() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    return run, calls, tmp_path / "cache"


def test_warm_cache_loads_without_invoking_the_compiler(project):
    run, calls, _ = project
    assert run("2.0") == "2.0"
    assert calls() >= 1
    before = calls()
    assert run("2.0") == "2.0"
    assert calls() == before


def test_changing_a_called_function_recompiles_the_kernel(project):
    run, calls, _ = project
    assert run("2.0") == "2.0"
    before = calls()
    assert run("3.0") == "3.0"
    assert calls() == before + 1


def test_cache_directory_is_private_to_the_user(project):
    run, _, cache = project
    run("2.0")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def cached_module(cache, prefix: str):
    """The one cached CPU module whose name starts with ``prefix`` (``__main__``: the program's kernels)."""
    (lib,) = [p for p in (cache / "modules").glob(f"{prefix}-*.so")]
    return lib


def damage(lib, how: str) -> None:
    data = lib.read_bytes()
    if how == "truncated":
        lib.write_bytes(data[: len(data) // 3])
    elif how == "garbage":
        lib.write_bytes(b"not a shared library")
    elif how == "same-size garbage":
        lib.write_bytes(bytes(len(data)))
    else:  # the record of its size and hash is gone
        (lib.parent / (lib.name + ".sha256")).unlink()


@pytest.mark.parametrize("how", ["truncated", "garbage", "same-size garbage", "record missing"])
def test_a_damaged_cached_module_is_rebuilt_with_a_warning_naming_it(project, how):
    run, calls, cache = project
    assert run("2.0") == "2.0"
    lib = cached_module(cache, "__main__")
    damage(lib, how)
    before = calls()
    out, err = run("2.0", stderr=True)
    assert out == "2.0"
    assert calls() == before + 1
    assert "CacheRepairWarning" in err and str(lib) in err and "rebuilding it" in err
    out, err = run("2.0", stderr=True)  # repaired: loads from the cache again, silently
    assert out == "2.0" and "CacheRepairWarning" not in err
    assert calls() == before + 1


def test_a_damaged_cached_runtime_is_rebuilt_too(project):
    run, calls, cache = project
    run("2.0")
    damage(cached_module(cache, "runtime"), "truncated")
    out, err = run("2.0", stderr=True)
    assert out == "2.0" and "CacheRepairWarning" in err and "runtime-" in err


def test_a_cache_entry_appears_only_with_its_record_and_no_temporary_is_left(project):
    run, _, cache = project
    run("2.0")
    names = sorted(p.name for p in (cache / "modules").iterdir())
    libs = [n for n in names if n.endswith(".so")]
    assert libs and sorted(n for n in names if not n.endswith(".so")) == sorted(n + ".sha256" for n in libs)


@sk.kernel
def kept(a: sk.array(dtype=float)):
    a[0] = 42.0


def test_keep_source_leaves_the_generated_cpp_next_to_the_module(tmp_path, monkeypatch):
    monkeypatch.setattr(sk.config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(sk.config, "keep_source", True)
    a = sk.zeros(1)
    sk.launch(kept, 1, inputs=[a])
    _lib, _ir, path = kept.loaded()
    src = compiler.source_path(path).read_text()
    assert "a[0] = 42.0" in src  # the user's line, as a marker above its C++
    assert "kept_" in src and "_backward" in src


def test_generated_source_mirrors_the_python_lines():
    src = kept.source()
    assert "// test_cache.py:" in src
    assert "sk::at<Dense>(a, 0) = 42.0f;" in src


def test_kernel_without_a_source_file_gets_a_clear_error():
    namespace = {"sk": sk}
    exec("@sk.kernel\ndef k(a: sk.array(dtype=float)):\n    a[0] = 1.0\n", namespace)
    with pytest.raises(sk.CompileError, match="cannot read the source"):
        namespace["k"].build_ir()


BRANCHY = textwrap.dedent('''
    import simkit as sk

    @sk.kernel
    def branchy(a: sk.array(dtype=float), b: sk.array(dtype=float)):
        i = sk.tid()
        x = a[i]
        y = b[i]
        if x > 0.0 and y < 1.0:
            x = x * 2.0
            y = y + 1.0
        else:
            y = y - 1.0
            x = x - 3.0
        for k in range(int(y)):
            x = x + twice(y)
        b[i] = (x if y > 0.0 else -x) + y

    if os.environ["EARLIER"]:   # another kernel (and its function) built first, as a bigger program would
        other.source()
    print(branchy.source())
''')

BEFORE_BRANCHY = textwrap.dedent('''
    import simkit as sk

    @sk.func
    def twice(v: float) -> float:
        w = v + v
        return w

    @sk.kernel
    def other(a: sk.array(dtype=float)):
        i = sk.tid()
        t = a[i] * 3.0
        for j in range(3):
            t = t + twice(t)
        a[i] = t
''')


def test_generated_source_is_the_same_in_every_process(tmp_path):
    # Names that depend on id(), on set order or on what the process built before would change
    # the cache key from one run to the next, and a warm cache would compile again.
    sources = set()
    script = tmp_path / "branchy.py"
    script.write_text(BEFORE_BRANCHY + BRANCHY.replace("import simkit as sk\n", "import os\n"))
    for seed, earlier in (("1", ""), ("2", ""), ("3", "1")):
        env = dict(os.environ, PYTHONHASHSEED=seed, EARLIER=earlier)
        run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        sources.add(run.stdout)
    assert len(sources) == 1 and "twice" in sources.pop()
