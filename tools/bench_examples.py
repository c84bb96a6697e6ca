"""Time per optimization iteration of the example scripts in examples/, at their default sizes.

Run from the repository root::

    python tools/bench_examples.py                 # every example (about a minute)
    python tools/bench_examples.py --only soft_id  # one example (repeat --only for more)

One iteration is what each example's loop does once: set the parameters, run the rollout
forward, evaluate the loss, backpropagate (recomputing the segments of a checkpointed
rollout) and update the parameters. It is measured on the example's own ``main``: the
time of ``main(iterations=1 + N)`` minus that of ``main(iterations=1)``, divided by N, so
that building the model, making the observation and writing the USD file cancel out, as
does the first iteration (which allocates the rollout's states). Each example runs once
first to compile (or load) its kernels; the figure is the median of a few rounds. The
reference column divides it by the integrator steps of one rollout (there is no other
implementation to compare with).

This is a tool for people, not a test; the tests run the examples in short forms.
"""

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import simkit as sk

from bench import Row, fmt, machine_line, print_table  # noqa: E402  (tools/ is the script's directory)

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = ("ball_toss", "cloth_throw", "spring_walker", "system_id", "soft_id", "box_throw", "arm_reach",
            "cartpole_swingup")
ITERATIONS = 4
ROUNDS = 3


def load_example(name: str):
    """Import ``examples/NAME.py`` as the module ``example_NAME`` (``examples/`` on the path for
    the helpers the examples share)."""
    if str(EXAMPLES_DIR) not in sys.path:
        sys.path.insert(0, str(EXAMPLES_DIR))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def seconds_per_iteration(module, iterations: int = ITERATIONS, rounds: int = ROUNDS) -> float:
    """Median over ``rounds`` of (time of ``main(1 + iterations)`` - time of ``main(1)``) / ``iterations``."""
    with tempfile.TemporaryDirectory() as folder:
        usd = Path(folder) / "bench.usdc"

        def timed(n: int) -> float:
            t0 = time.perf_counter()
            module.main(iterations=n, usd_path=usd, quiet=True)
            return time.perf_counter() - t0

        timed(1)  # compile (or load) the kernels
        samples = [(timed(1 + iterations) - timed(1)) / iterations for _ in range(rounds)]
    return statistics.median(samples)


def example_rows(names=EXAMPLES, iterations: int = ITERATIONS, rounds: int = ROUNDS) -> list:
    """One ``bench.Row`` per example: seconds per optimization iteration at the default size."""
    rows = []
    for name in names:
        module = load_example(name)
        steps = module.FRAMES * module.SUBSTEPS
        s = seconds_per_iteration(module, iterations, rounds)
        rows.append(Row(f"{name}: one iteration, {steps} steps [ms]", f"{fmt(1e3 * s)} ms",
                        f"{fmt(1e6 * s / steps)} us per step", "-", "(info)"))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", action="append", choices=EXAMPLES, help="bench only this example (repeatable)")
    args = p.parse_args(argv)
    names = tuple(args.only) if args.only else EXAMPLES
    print(f"simkit bench_examples: {machine_line()}")
    print(f"cache: {os.environ.get('SIMKIT_CACHE_DIR') or sk.config.cache_dir or '(default)'}")
    sys.stdout.flush()
    rows = example_rows(names)
    print()
    print_table([("[examples] time per optimization iteration (forward + loss + backward + update) at the default "
                  "size; reference column: the same per integrator step", rows)])
    print("notes:")
    print(f"  - (main(1 + {ITERATIONS}) - main(1)) / {ITERATIONS}, median of {ROUNDS} rounds after a compile run")
    print("  - ball_toss, cloth_throw and spring_walker use gradient checkpointing (every step runs forward twice), "
          "system_id, soft_id, arm_reach and cartpole_swingup a full tape")
    return 0


if __name__ == "__main__":
    sys.exit(main())
