"""torch stays optional: `import simkit` never imports it, and `import simkit.torch` without it
says how to install it. Both run in a fresh interpreter (torch hidden by a None entry in
sys.modules), so they run whether torch is installed or not."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_import_simkit_does_not_import_torch():
    done = run("import sys, simkit; print('torch' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_import_simkit_torch_without_torch_is_an_import_error_saying_how_to_install_it():
    done = run("import sys; sys.modules['torch'] = None\n"
               "try:\n    import simkit.torch\nexcept ImportError as e:\n    print(e)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ('simkit.torch needs PyTorch, which is not installed: pip install "simkit[torch]" '
                                   '(or pip install torch)')
