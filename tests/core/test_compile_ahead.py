"""sk.compile_ahead: the modules of a step compile at the same time, one per core, and each
first launch waits for its own module's run instead of starting one (issue 30, item 5)."""

import importlib
import os
import subprocess
import sys
import textwrap
import uuid

import pytest

import simkit as sk

pytestmark = pytest.mark.cpu_only("the CPU compiler runs")

MODULE = textwrap.dedent('''
    import simkit as sk

    @sk.kernel
    def scale(a: sk.array(dtype=float)):
        i = sk.tid()
        a[i] = a[i] * FACTOR
''')

PROGRAM = textwrap.dedent('''
    import simkit as sk
    import mod_a, mod_b

    sk.compile_ahead(mod_a.scale, mod_b.scale)
    a = sk.ones(4)
    sk.launch(mod_a.scale, 4, inputs=[a])
    sk.launch(mod_b.scale, 4, inputs=[a])
    print(a.numpy()[0])
''')

ANNOUNCED = textwrap.dedent('''
    import logging, sys, time
    import simkit as sk
    from simkit.core import compiler
    import mod_a, mod_b

    @sk.kernel
    def warm(a: sk.array(dtype=float)):
        a[sk.tid()] = 1.0

    sk.launch(warm, 4, inputs=[sk.ones(4)])   # the runtime compiles before what is measured
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
    before, started = compiler.stats["compile_seconds"], time.perf_counter()
    sk.compile_ahead(mod_a.scale, mod_b.scale)
    a = sk.ones(4)
    sk.launch(mod_a.scale, 4, inputs=[a])
    sk.launch(mod_b.scale, 4, inputs=[a])
    print("wall", time.perf_counter() - started, "compiling", compiler.stats["compile_seconds"] - before)
''')

FEATHERSTONE = textwrap.dedent('''
    import simkit as sk

    b = sk.sim.ModelBuilder(up_axis="z", ground=True)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.3), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body)
    b.add_joint_free(-1, body, parent_xform=((0.0, 0.0, 0.3), (0.0, 0.0, 0.0, 1.0)))
    model = b.finalize(dtype=sk.float32)
    s0, s1 = model.state(), model.state()
    sk.sim.Featherstone(contact=CONTACT).step(model, s0, s1, None, 1e-3)
    print(float(s1.joint_q.numpy()[2]))
''')


@pytest.fixture
def project(tmp_path):
    """A folder for scripts, an empty cache, and a compiler that logs when each of its runs
    starts and ends (a second apart at least, so that runs one after another cannot overlap)."""
    log = tmp_path / "compiler.log"
    wrapper = tmp_path / "logging-cxx"
    wrapper.write_text(f'#!/bin/sh\necho start >> "{log}"\nsleep 1\ng++ "$@"\nstatus=$?\necho end >> "{log}"\n'
                       f'exit $status\n')
    wrapper.chmod(0o755)
    env = dict(os.environ, SIMKIT_CACHE_DIR=str(tmp_path / "cache"), SIMKIT_CXX=str(wrapper),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))

    def run(program: str) -> str:
        script = tmp_path / "prog.py"
        script.write_text(program)
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600,
                             cwd=tmp_path)
        assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-3000:]}"
        return out.stdout.strip()

    def events() -> list[str]:
        return log.read_text().split() if log.exists() else []

    (tmp_path / "mod_a.py").write_text(MODULE.replace("FACTOR", "2.0"))
    (tmp_path / "mod_b.py").write_text(MODULE.replace("FACTOR", "3.0"))
    return run, events, tmp_path / "cache"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the compiler runs take turns")
def test_two_modules_compiled_ahead_compile_at_the_same_time(project):
    run, events, _ = project
    assert run(PROGRAM) == "6.0"
    # the two modules' runs overlap: both start before either ends (the runtime's comes after)
    assert events()[:2] == ["start", "start"]


def test_a_launch_after_compile_ahead_waits_for_that_run_and_starts_none(project):
    run, events, cache = project
    assert run(PROGRAM) == "6.0"
    libraries = [p.name for p in (cache / "modules").glob("*.so")]
    assert events().count("start") == len(libraries) == 3   # mod_a, mod_b and the runtime, once each


@pytest.mark.parametrize("contact", ["penalty", "constraint"])
def test_featherstones_first_step_compiles_each_of_its_modules_once(project, contact):
    # the modules started ahead are the very sources the launches ask for: no module twice
    run, events, cache = project
    assert float(run(FEATHERSTONE.replace("CONTACT", repr(contact)))) < 0.3
    names = [p.name.rsplit("-", 1)[0] for p in (cache / "modules").glob("*.so")]
    assert len(names) == len(set(names)) == events().count("start")


def test_modules_compiled_ahead_are_announced_in_one_line_naming_them(project):
    run, _, _ = project
    lines = [line for line in run(ANNOUNCED).splitlines() if "compiling" in line and "mod_" in line]
    assert len(lines) == 1
    assert lines[0].startswith("simkit: compiling 2 kernels of 2 modules at once: mod_a, mod_b (first run only")


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the compiler runs take turns")
def test_compiler_runs_at_the_same_time_count_once_in_the_compile_time(project):
    # each run takes a second at least; summed, the two would exceed the wall time they took
    run, _, _ = project
    words = run(ANNOUNCED).splitlines()[-1].split()
    wall, compiling = float(words[words.index("wall") + 1]), float(words[words.index("compiling") + 1])
    assert 1.0 < compiling <= wall


def test_the_longest_module_source_starts_compiling_first(tmp_path, monkeypatch):
    # with more modules than cores the last run to start should be a short one
    from simkit.core import compiler

    suffix = uuid.uuid4().hex[:8]
    kernel = MODULE.replace("import simkit as sk", "")
    kernels = "".join(kernel.replace("scale", f"scale{i}").replace("FACTOR", f"{i + 1.0}") for i in range(6))
    (tmp_path / f"short_{suffix}.py").write_text(MODULE.replace("FACTOR", "2.0"))
    (tmp_path / f"long_{suffix}.py").write_text("import simkit as sk\n" + kernels)
    monkeypatch.syspath_prepend(str(tmp_path))
    short, long = (importlib.import_module(f"{name}_{suffix}") for name in ("short", "long"))
    started = []
    monkeypatch.setattr(compiler, "build_shared_ahead", lambda source, name, announce: started.append(name))
    sk.compile_ahead(short.scale, long.scale0)
    assert [name.split("_")[0] for name in started] == ["long", "short"]
