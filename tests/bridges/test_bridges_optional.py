"""torch and jax stay optional: `import simkit` imports neither, and `import simkit.torch` /
`import simkit.jax` without them say how to install them. Each runs in a fresh interpreter
(the library hidden by a None entry in sys.modules), so they run whether it is installed or not."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_import_simkit_imports_neither_torch_nor_jax():
    done = run("import sys, simkit; print('torch' in sys.modules, 'jax' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False"


def test_import_simkit_and_its_sweep_api_do_not_import_ray():
    done = run("import sys, simkit; simkit.sweep, simkit.multi_start; print('ray' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_import_simkit_torch_without_torch_is_an_import_error_saying_how_to_install_it():
    done = run("import sys; sys.modules['torch'] = None\n"
               "try:\n    import simkit.torch\nexcept ImportError as e:\n    print(e)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ('simkit.torch needs PyTorch, which is not installed: pip install "simkit[torch]" '
                                   '(or pip install torch)')


def test_import_simkit_jax_without_jax_is_an_import_error_saying_how_to_install_it():
    done = run("import sys; sys.modules['jax'] = None\n"
               "try:\n    import simkit.jax\nexcept ImportError as e:\n    print(e)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ('simkit.jax needs JAX, which is not installed: pip install "simkit[jax]" '
                                   '(or pip install jax)')
