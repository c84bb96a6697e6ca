"""Ctrl-C stops one long launch within a bounded time, whatever its size and however the pool
runs it: inline on the calling thread, split over the pool, in private-accumulator chunks, or
inline because an atomic split would not pay (the call site a busy machine takes).

Each program runs in a subprocess, which gets SIGINT a second into a launch of 10^6 x 10^6
threads (about 20 minutes of work on one core, or years for threads of milliseconds each).
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

TIMEOUT = 20

LONG = """
    import sys
    import time

    import simkit as sk
    from simkit.core.launch import plan_for
    from simkit.core.threads import launch_counts

    @sk.kernel
    def stores(a: sk.array(dtype=float)):
        i, j = sk.tid()
        a[(i + j) % 8] = float(i)

    @sk.kernel
    def scatters(a: sk.array(dtype=float)):
        i, j = sk.tid()
        a[(i + j) % 8] += 1.0

    @sk.kernel
    def reads_and_scatters(a: sk.array(dtype=float)):
        i, j = sk.tid()
        sk.atomic_add(a, (i + j) % 8, a[(i + j + 1) % 8] * 0.0 + 1.0)

    @sk.kernel
    def heavy(a: sk.array(dtype=float)):
        # milliseconds a thread: a chain of two million dependent multiply-adds
        i, j = sk.tid()
        x = float(i)
        for k in range(2000000):
            x = x * 0.999 + 1.0
        a[(i + j) % 8] = x

    sk.set_threads(THREADS, adaptive=False)
    kernel = KERNEL
    a = sk.zeros(8)
    plan_for(kernel).ensure_cpu()  # compile before saying ready: Ctrl-C must hit the launch
    before = launch_counts()
    print("ready", flush=True)
    start = time.perf_counter()
    try:
        sk.launch(kernel, (10**6, 10**6), inputs=[a])   # one index may not pass 2^31 - 1
    except KeyboardInterrupt as e:
        ran = {k: v - before[k] for k, v in launch_counts().items() if v > before[k]}
        print(f"interrupted after {time.perf_counter() - start:.2f} s on the {','.join(ran)} path: {e}", flush=True)
        sys.exit(3)
"""


def interrupt_after_a_second(tmp_path, threads: int, kernel: str) -> tuple[subprocess.CompletedProcess, float]:
    """Run the program, SIGINT it a second into its launch; its result and how long it took to exit."""
    script = tmp_path / "long_launch.py"
    script.write_text(textwrap.dedent(LONG.replace("THREADS", str(threads)).replace("KERNEL", kernel)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SIMKIT_NUM_THREADS=str(threads)))
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the launch ran on for {TIMEOUT} s after SIGINT")
        took = time.perf_counter() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), took


@pytest.mark.cpu_only("Ctrl-C stops CPU launches; GPU kernels cannot be interrupted")
@pytest.mark.parametrize("threads, kernel, path", [
    (1, "stores", "inline"),
    (2, "stores", "split"),
    (2, "scatters", "private"),
    (2, "reads_and_scatters", "inline"),
], ids=["one-thread-inline", "split-over-the-pool", "private-chunks", "inline-beside-idle-workers"])
def test_ctrl_c_stops_a_launch_of_a_trillion_cheap_threads_within_seconds(tmp_path, threads, kernel, path):
    out, took = interrupt_after_a_second(tmp_path, threads, kernel)
    assert out.returncode == 3, out.stderr[-2000:]
    assert f"on the {path} path: kernel '{kernel}'" in out.stdout, out.stdout
    assert "interrupted (SIGINT)" in out.stdout
    assert took < 5.0, f"exited {took:.1f} s after SIGINT"


@pytest.mark.cpu_only("Ctrl-C stops CPU launches; GPU kernels cannot be interrupted")
@pytest.mark.parametrize("threads, path", [(1, "inline"), (2, "split")], ids=["one-thread-inline", "split-over-the-pool"])
def test_ctrl_c_stops_a_launch_of_threads_of_milliseconds_each_within_a_second(tmp_path, threads, path):
    # the entry looks at the interrupt every few threads, not after thousands of them
    out, took = interrupt_after_a_second(tmp_path, threads, "heavy")
    assert out.returncode == 3, out.stderr[-2000:]
    assert f"on the {path} path: kernel 'heavy'" in out.stdout, out.stdout
    assert took < 1.0, f"exited {took:.1f} s after SIGINT"
