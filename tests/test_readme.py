"""The README's example is the first thing a newcomer pastes: it must run and print what it says."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_prints_what_it_promises(tmp_path):
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(code)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    printed = run.stdout.split("\n")
    assert printed[0] == "[9.375]"
    assert printed[1].split() == "[ 0.   2.5  5.   7.5 10. ]".split()


def test_readme_setup_is_the_two_commands():
    text = README.read_text()
    assert 'pip install -e ".[dev]"' in text
    assert re.search(r"^pytest$", text, re.M)


def test_readme_simulation_example_prints_a_positive_stiffness_gradient(tmp_path):
    # a stiffer spring sags less under gravity, so the final height grows with ke
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    sim = next(b for b in blocks if "sk.sim.ModelBuilder" in b)
    script = tmp_path / "sim_example.py"
    script.write_text("import numpy as np\nimport simkit as sk\n" + sim)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    grad = float(run.stdout.strip().strip("[]"))
    assert grad > 0.0


def test_readme_rigid_body_example_drops_the_box_onto_a_face(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    rigid = next(b for b in blocks if "add_joint_revolute" in b)
    script = tmp_path / "rigid_example.py"
    script.write_text("import numpy as np\nimport simkit as sk\n" + rigid)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert abs(float(run.stdout.strip()) - 0.1) < 1e-3


def test_readme_threads_example_runs_on_one_thread(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    threads = next(b for b in blocks if "sk.set_threads" in b)
    script = tmp_path / "threads_example.py"
    script.write_text("import simkit as sk\n" + threads + "print(sk.get_threads())\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-1] == "1"
