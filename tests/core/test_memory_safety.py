"""Kernels cannot take the process down: grids wider than their arrays are refused, integer
division is defined for every operand, debug mode names the line, Ctrl-C stops a launch.

What could crash the interpreter on a regression runs in a subprocess.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import simkit as sk


def run_program(tmp_path, source: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``source`` as a script (kernels need a file to read their source from) in a new interpreter."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, str(script)], env=dict(os.environ, **(env or {})), capture_output=True,
                          text=True, timeout=timeout)


@sk.kernel
def gather_total(x: sk.array(dtype=float), total: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(total, 0, x[i])


@sk.kernel
def transpose_into(a: sk.array(dtype=float, ndim=2), out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    out[i, j] = a[j, i]


@sk.struct
class Particles:
    x: sk.array(dtype=float)
    scale: float


@sk.kernel
def struct_total(p: Particles, total: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(total, 0, p.x[i] * p.scale)


@sk.kernel
def guarded_total(x: sk.array(dtype=float), total: sk.array(dtype=float)):
    i = sk.tid()
    if i < x.shape[0]:
        sk.atomic_add(total, 0, x[i])


# -- grids wider than the arrays their threads index ------------------------------------

def test_a_grid_wider_than_an_array_indexed_by_tid_is_refused_before_it_runs():
    x, total = sk.ones(4), sk.zeros(1)
    with pytest.raises(ValueError) as e:
        sk.launch(gather_total, 5, inputs=[x, total])
    msg = str(e.value)
    assert "gather_total()" in msg and "'x'" in msg and "(4,)" in msg and "dim=5" in msg
    assert "test_memory_safety.py:" in msg
    assert total.numpy()[0] == 0.0  # nothing ran


def test_the_adjoint_launch_is_refused_alike():
    x, total = sk.ones(4, requires_grad=True), sk.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="'x' has shape \\(4,\\)"):
        sk.launch(gather_total, 5, inputs=[x, total], adjoint=True)


def test_a_grid_that_fits_runs():
    x, total = sk.ones(4), sk.zeros(1)
    sk.launch(gather_total, 4, inputs=[x, total])
    assert total.numpy()[0] == 4.0


def test_each_axis_of_a_2d_grid_is_checked_against_the_array_axis_it_indexes():
    a = sk.array(np.arange(6.0, dtype=np.float32).reshape(3, 2))
    out = sk.zeros((2, 3))
    sk.launch(transpose_into, (2, 3), inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), np.arange(6.0).reshape(3, 2).T)
    with pytest.raises(ValueError) as e:
        sk.launch(transpose_into, (2, 4), inputs=[a, sk.zeros((2, 4))])
    msg = str(e.value)
    assert "'a' has shape (3, 2)" in msg and "axis 0" in msg and "component 1 of sk.tid()" in msg


def test_an_array_in_a_struct_indexed_by_tid_is_checked():
    p = Particles(x=sk.ones(3), scale=2.0)
    total = sk.zeros(1)
    with pytest.raises(ValueError, match="argument 'p.x' has shape \\(3,\\)"):
        sk.launch(struct_total, 4, inputs=[p, total])
    sk.launch(struct_total, 3, inputs=[p, total])
    assert total.numpy()[0] == 6.0


def test_a_guarded_access_is_not_refused():
    x, total = sk.ones(4), sk.zeros(1)
    sk.launch(guarded_total, 64, inputs=[x, total])
    assert total.numpy()[0] == 4.0


def test_an_empty_grid_is_not_refused():
    sk.launch(gather_total, 0, inputs=[sk.ones(4), sk.zeros(1)])


def test_a_captured_launch_is_checked_when_captured():
    x, total = sk.ones(4), sk.zeros(1)
    with pytest.raises(ValueError, match="'x' has shape"):
        with sk.capture():
            sk.launch(gather_total, 8, inputs=[x, total])


@pytest.mark.cpu_only("the crash it guards against is a CPU process dying; the refusal is tested on every device")
def test_the_wide_launch_of_the_issue_ends_in_an_error_not_a_crash(tmp_path):
    out = run_program(tmp_path, """
        import simkit as sk

        @sk.kernel
        def double(x: sk.array(dtype=float), y: sk.array(dtype=float)):
            i = sk.tid()
            y[i] = x[i] * 2.0

        x, y = sk.zeros(4), sk.zeros(4)
        try:
            sk.launch(double, 1000, inputs=[x, y])
        except ValueError as e:
            print("refused:", e)
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused: double(): launched with dim=1000" in out.stdout


# -- integer division -------------------------------------------------------------------

DIVISION = """
    import numpy as np
    import simkit as sk

    @sk.kernel
    def divide(a: sk.array(dtype=sk.DTYPE), b: sk.array(dtype=sk.DTYPE), q: sk.array(dtype=sk.DTYPE),
               r: sk.array(dtype=sk.DTYPE)):
        i = sk.tid()
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]

    lo = np.iinfo(np.DTYPE).min
    a = sk.array(np.array([7, -7, 0, lo, lo, 7, -7, 7, -7], np.DTYPE))
    b = sk.array(np.array([0, 0, 0, -1, 1, 2, 2, -2, -2], np.DTYPE))
    q, r = sk.zeros(9, dtype=sk.DTYPE), sk.zeros(9, dtype=sk.DTYPE)
    sk.launch(divide, 9, inputs=[a, b, q, r])
    print(q.numpy().tolist(), r.numpy().tolist())
"""


@pytest.mark.cpu_only("runs in a subprocess on the CPU (x86 traps on these divisions); GPUs use the same header")
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_division_by_zero_and_the_overflowing_quotient_are_defined_in_release_mode(tmp_path, dtype):
    out = run_program(tmp_path, DIVISION.replace("DTYPE", dtype))
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-2000:]}"
    lo = int(np.iinfo(dtype).min)
    # x // 0 and x % 0 are 0; lo // -1 wraps to lo (remainder 0); the rest is Python's floor division
    assert out.stdout.strip() == f"{[0, 0, 0, lo, lo, 3, -4, -4, 3]} {[0, 0, 0, 0, 0, 1, 1, -1, -1]}"


@pytest.mark.cpu_only("runs in a subprocess on the CPU (a regression would kill the interpreter with SIGFPE)")
def test_integer_division_by_zero_in_debug_mode_names_kernel_and_line(tmp_path):
    out = run_program(tmp_path, """
        import simkit as sk

        sk.config.mode = "debug"

        @sk.kernel
        def ratio(a: sk.array(dtype=int), b: sk.array(dtype=int), out: sk.array(dtype=int)):
            i = sk.tid()
            out[i] = a[i] % b[i]

        try:
            sk.launch(ratio, 2, inputs=[sk.ones(2, dtype=int), sk.zeros(2, dtype=int), sk.zeros(2, dtype=int)])
        except ZeroDivisionError as e:
            print("raised:", e)
    """)
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-2000:]}"
    assert "raised: kernel 'ratio' (" in out.stdout and "program.py:9): integer division or modulo by zero" in out.stdout


def test_integer_division_keeps_python_semantics_for_nonzero_divisors():
    a = sk.array(np.array([7, -7, 7, -7, 6], np.int32))
    b = sk.array(np.array([2, 2, -2, -2, 3], np.int32))
    q, r = sk.zeros(5, dtype=int), sk.zeros(5, dtype=int)
    sk.launch(floor_and_mod, 5, inputs=[a, b, q, r])
    np.testing.assert_array_equal(q.numpy(), [3, -4, -4, 3, 2])
    np.testing.assert_array_equal(r.numpy(), [1, 1, -1, -1, 0])


@sk.kernel
def floor_and_mod(a: sk.array(dtype=int), b: sk.array(dtype=int), q: sk.array(dtype=int), r: sk.array(dtype=int)):
    i = sk.tid()
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


# -- SIMKIT_DEBUG ------------------------------------------------------------------------

@pytest.mark.cpu_only("reads the environment at import, in a subprocess")
def test_simkit_debug_turns_on_bounds_checks_of_computed_indices(tmp_path):
    out = run_program(tmp_path, """
        import simkit as sk

        @sk.kernel
        def shifted(x: sk.array(dtype=float), y: sk.array(dtype=float)):
            i = sk.tid()
            y[i - 5] = x[i]

        print(sk.config.mode)
        try:
            sk.launch(shifted, 4, inputs=[sk.zeros(4), sk.zeros(4)])
        except IndexError as e:
            print("raised:", e)
    """, env={"SIMKIT_DEBUG": "1"})
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-2000:]}"
    assert out.stdout.startswith("debug\n")
    assert "raised: kernel 'shifted' (" in out.stdout and "program.py:7): index (-5,) out of bounds" in out.stdout


@pytest.mark.cpu_only("reads the environment at import, in a subprocess")
@pytest.mark.parametrize("value, mode", [("0", "release"), ("", "release"), ("true", "debug")])
def test_simkit_debug_values(tmp_path, value, mode):
    out = run_program(tmp_path, "import simkit as sk\nprint(sk.config.mode)\n", env={"SIMKIT_DEBUG": value})
    assert out.stdout.strip() == mode, out.stderr[-2000:]


@pytest.mark.cpu_only("reads the environment at import, in a subprocess")
def test_a_malformed_simkit_debug_is_an_error_naming_it(tmp_path):
    out = run_program(tmp_path, "import simkit\n", env={"SIMKIT_DEBUG": "verbose"})
    assert out.returncode != 0
    assert "SIMKIT_DEBUG must be 1 (debug mode) or 0 (release mode), got 'verbose'" in out.stderr


# -- Ctrl-C ----------------------------------------------------------------------------

ENDLESS = """
    import signal
    import sys

    import simkit as sk
    from simkit.core.launch import plan_for

    @sk.kernel
    def endless(a: sk.array(dtype=float)):
        i = sk.tid()
        x = a[i]
        while True:
            x = x + 1.0
        a[i] = x

    HANDLER
    a = sk.zeros(NTHREADS)
    plan_for(endless).ensure_cpu()  # compile before saying ready: Ctrl-C must hit the launch
    print("ready", flush=True)
    try:
        sk.launch(endless, NTHREADS, inputs=[a])
    except KeyboardInterrupt as e:
        print("interrupted:", e, flush=True)
        sys.exit(3)
"""


def interrupt(tmp_path, source: str) -> subprocess.CompletedProcess:
    script = tmp_path / "endless.py"
    script.write_text(textwrap.dedent(source))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.cpu_only("Ctrl-C stops CPU launches; GPU kernels cannot be interrupted")
@pytest.mark.parametrize("threads", [1, 100_000], ids=["inline", "split-over-the-pool"])
def test_ctrl_c_stops_a_kernel_stuck_in_while_true(tmp_path, threads):
    try:
        out = interrupt(tmp_path, ENDLESS.replace("HANDLER", "").replace("NTHREADS", str(threads)))
    except subprocess.TimeoutExpired:
        pytest.fail("the kernel ran on for 15 s after SIGINT")
    assert out.returncode == 3, out.stderr[-2000:]
    assert "interrupted: kernel 'endless'" in out.stdout


@pytest.mark.cpu_only("Ctrl-C stops CPU launches; GPU kernels cannot be interrupted")
def test_ctrl_c_in_a_launch_runs_the_programs_own_sigint_handler(tmp_path):
    handler = "signal.signal(signal.SIGINT, lambda sig, frame: print('own handler', flush=True))"
    try:
        out = interrupt(tmp_path, ENDLESS.replace("HANDLER", handler).replace("NTHREADS", "1"))
    except subprocess.TimeoutExpired:
        pytest.fail("the kernel ran on for 15 s after SIGINT")
    assert out.returncode == 3, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0] == "own handler" and lines[1].startswith("interrupted: kernel 'endless'"), out.stdout


@pytest.mark.cpu_only("SIGINT handling of the CPU runtime")
def test_ctrl_c_between_launches_still_raises_keyboard_interrupt(tmp_path):
    out = interrupt(tmp_path, """
        import time
        import simkit as sk

        @sk.kernel
        def fill(a: sk.array(dtype=float)):
            i = sk.tid()
            a[i] = 1.0

        sk.launch(fill, 4, inputs=[sk.zeros(4)])
        print("ready", flush=True)
        try:
            time.sleep(30)
        except KeyboardInterrupt:
            print("python's handler ran", flush=True)
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "python's handler ran" in out.stdout
