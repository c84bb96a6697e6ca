"""A kernel that crashes the process in release mode (an unchecked index far out of range) says
which kernel it was and how to find the line before the process dies of the signal.

Each crash happens in a subprocess.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

CRASH = """
    import simkit as sk

    @sk.kernel
    def far_out(a: sk.array(dtype=float)):
        i = sk.tid()
        a[i * 100000000] = 1.0

    sk.set_threads(THREADS, adaptive=False)
    print(sk.config.mode, flush=True)
    sk.launch(far_out, NTHREADS, inputs=[sk.zeros(10)])
    print("survived", flush=True)
"""


def crash(tmp_path, threads: int, nthreads: int, flags: tuple = ()) -> subprocess.CompletedProcess:
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent(CRASH.replace("NTHREADS", str(nthreads)).replace("THREADS", str(threads))))
    env = {k: v for k, v in os.environ.items() if k not in ("SIMKIT_DEBUG", "PYTHONFAULTHANDLER")}
    return subprocess.run([sys.executable, *flags, str(script)], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.cpu_only("a signal handler of the CPU runtime")
@pytest.mark.parametrize("threads, nthreads", [(1, 100), (2, 100_000)], ids=["inline", "on-a-pool-worker-too"])
def test_a_release_mode_segfault_names_the_kernel_and_simkit_debug_then_dies_of_the_signal(tmp_path, threads,
                                                                                          nthreads):
    out = crash(tmp_path, threads, nthreads)
    assert out.stdout.splitlines() == ["release"], out.stdout
    assert out.returncode in (-signal.SIGSEGV, -signal.SIGBUS), (out.returncode, out.stderr[-2000:])
    assert "simkit: kernel 'far_out' (" in out.stderr and "crash.py) crashed with SIG" in out.stderr, out.stderr
    assert "rerun with SIMKIT_DEBUG=1 to get the index and line" in out.stderr


@pytest.mark.cpu_only("a signal handler of the CPU runtime")
def test_pythons_faulthandler_still_prints_the_python_stack_after_the_report(tmp_path):
    out = crash(tmp_path, 1, 100, flags=("-X", "faulthandler"))
    assert out.returncode in (-signal.SIGSEGV, -signal.SIGBUS), (out.returncode, out.stderr[-2000:])
    assert "simkit: kernel 'far_out' (" in out.stderr and "SIMKIT_DEBUG=1" in out.stderr, out.stderr
    assert "Fatal Python error" in out.stderr and 'crash.py", line 11 in <module>' in out.stderr, out.stderr
