"""Every ```python block of README.md and docs/*.md runs as pasted, and prints what the text says.

Each block is written to a file of its own and run as-is in a fresh Python process
(kernels are compiled from their source file, as in a user's script), in a temporary
directory that is also its working directory: a block that writes files writes there.

A block that cannot run everywhere is marked by an HTML comment on the line just above
its opening fence (invisible on GitHub). Use them sparingly; every other block must run:

    <!-- not-run: needs a display -->          never run here; say why
    <!-- needs: cuda.bindings.nvrtc -->        skipped where that module cannot be imported

A comment beside a print call that starts with a value (``print(h)   # 0.1: at rest``,
``# [9.375]``, ``# about 0.05``) must agree with what that call prints: to the digits written,
or within 5% after ``about``/``~`` (the convention in full: tests/doc_comments.py). The block's
prints are recorded with their lines by tests/doc_prints/sitecustomize.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from doc_comments import commented_values, parse_comment

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT_S = 600  # a cold compile cache builds every kernel a block uses
PRINT_RECORDER = Path(__file__).resolve().parent / "doc_prints"  # its sitecustomize records each print

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>not-run|needs):\s*(?P<arg>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int           # 1-based line of the opening fence
    code: str
    marker: tuple | None  # ("not-run", reason) or ("needs", module)

    @property
    def id(self) -> str:
        code = (s.split("#")[0].strip() for s in self.code.splitlines())
        first = next((s for s in code if s and not s.startswith(("import ", "from ", "@"))), "")
        first = re.sub(r"[^\w .=(),:'\"-]", "", " ".join(first.split()))[:40]
        return f"{self.path.relative_to(ROOT)}:{self.line}:{first}"


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a markdown file, with the marker comment just above each, if any."""
    text = path.read_text()
    lines = text.splitlines()
    blocks = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        above = next((lines[k] for k in range(line - 2, -1, -1) if lines[k].strip()), "")
        mark = _MARKER.match(above)
        marker = (mark.group("kind"), mark.group("arg")) if mark else None
        blocks.append(Block(path, line, textwrap.dedent(m.group("code")), marker))
    return blocks


BLOCKS = [b for p in DOCS for b in python_blocks(p)]


def _module_missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def skip_reason(block: Block) -> str | None:
    if block.marker is None:
        return None
    kind, arg = block.marker
    if kind == "not-run":
        return f"marked not-run: {arg}"
    if _module_missing(arg):
        return f"needs the module {arg}, which is not installed"
    return None


@pytest.fixture(scope="module")
def run_block(tmp_path_factory):
    """Runs a block once (the value checks below reuse the run of the parametrized test)."""
    runs: dict = {}

    def run(block: Block) -> subprocess.CompletedProcess:
        reason = skip_reason(block)
        if reason:
            pytest.skip(reason)
        if block not in runs:
            workdir = tmp_path_factory.mktemp("doc_block")
            script = workdir / "block.py"
            script.write_text(block.code)
            # the checkout's simkit, wherever the test is started from; the recorder of prints first
            path = os.pathsep.join(p for p in (str(PRINT_RECORDER), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
            env = {**os.environ, "PYTHONPATH": path, "SIMKIT_DOC_SCRIPT": str(script),
                   "SIMKIT_DOC_PRINTS": str(workdir / "prints.jsonl")}
            runs[block] = subprocess.run([sys.executable, str(script)], cwd=workdir, capture_output=True,
                                          text=True, timeout=TIMEOUT_S, env=env)
            runs[block].prints = workdir / "prints.jsonl"
        return runs[block]
    return run


def the_block(needle: str, path: Path = README) -> Block:
    found = [b for b in BLOCKS if b.path == path and needle in b.code]
    assert len(found) == 1, f"expected one python block of {path.name} containing {needle!r}, found {len(found)}"
    return found[0]


def stdout_of(run_block, block: Block) -> list[str]:
    run = run_block(block)
    assert run.returncode == 0, f"{block.id} failed:\n{run.stderr}"
    return run.stdout.splitlines()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_python_block_runs_as_pasted(block, run_block):
    run = run_block(block)
    assert run.returncode == 0, f"{block.id} failed (exit code {run.returncode}):\n{run.stderr}"


def printed_by_line(run) -> list:
    """``(line, text)`` of each print of a block's script, in order (tests/doc_prints)."""
    if not run.prints.exists():
        return []
    return [(r["line"], r["text"]) for r in map(json.loads, run.prints.read_text().splitlines())]


def comment_mismatches(block: Block, run) -> list:
    """What each print call with a value comment (tests/doc_comments.py) printed last, where
    that contradicts the comment; a commented call that never printed counts too."""
    printed = printed_by_line(run)
    problems = []
    for (first, last), expected in sorted(commented_values(block.code).items()):
        texts = [text for line, text in printed if first <= line <= last]
        if not texts:
            problems.append(f"line {last}: never printed, but its comment says {expected.comment!r}")
        elif (problem := expected.mismatch(texts[-1])) is not None:
            problems.append(f"line {last}: {problem}")
    return problems


CHECKED = [b for b in BLOCKS if commented_values(b.code)]


@pytest.mark.parametrize("block", CHECKED, ids=[b.id for b in CHECKED])
def test_printed_values_agree_with_their_comments(block, run_block):
    run = run_block(block)
    assert run.returncode == 0, f"{block.id} failed (exit code {run.returncode}):\n{run.stderr}"
    problems = comment_mismatches(block, run)
    assert not problems, f"{block.id} (block line numbers):\n" + "\n".join(problems)


def test_a_printed_value_that_contradicts_its_comment_fails(tmp_path, run_block):
    md = tmp_path / "page.md"
    md.write_text("```python\nheight = 0.202\nprint(round(height, 3))   # 0.1: the crate rests on the floor\n"
                  "for v in (1.0, 0.05):\n    print(v)                  # about 0.05\nprint(True)   # True\n```\n")
    block = python_blocks(md)[0]
    problems = comment_mismatches(block, run_block(block))
    assert len(problems) == 1 and problems[0].startswith("line 2: prints '0.202'"), problems


def test_a_print_with_a_value_comment_that_never_runs_fails(tmp_path, run_block):
    md = tmp_path / "page.md"
    md.write_text("```python\nif False:\n    print(1.0)   # 1.0\n```\n")
    block = python_blocks(md)[0]
    assert comment_mismatches(block, run_block(block)) == ["line 2: never printed, but its comment says '1.0'"]


@pytest.mark.parametrize("comment, printed, agrees", [
    ("0.1: the crate rests", "0.1", True), ("0.1", "0.149", True), ("0.1", "0.151", False),
    ("0.100", "0.1004", True), ("0.100", "0.1006", False), ("[16.]: 500 kg/m^3", "[16.]", True),
    ("about 0.05", "0.0524", True), ("~0.050", "0.0526", False), ("~0.05", "0.0549", True), ("~0.05", "0.0551", False), ("~[[2.5 0.99 0. ]] m/s", "[[2.4999 0.99 0.]]", True),
    ("[9.375]", "[9.375]", True), ("[9.375]", "[9.375 1.]", False), ("True", "False", False),
    ("0.25 (10,)", "0.25 (10,)", True), ("tensor(0.1400, dtype=torch.float64) = x.x", "tensor(0.1400, dtype=torch.float64)", True),
    ("5e-6", "5.4e-06", True), ("5e-6", "5.6e-06", False), ("1; or later", "1", True)])
def test_a_value_comment_agrees_to_the_digits_written_or_within_five_percent_when_about(comment, printed, agrees):
    assert (parse_comment(comment).mismatch(printed) is None) == agrees


@pytest.mark.parametrize("comment", ["the PTX of forward and adjoint", "d(final height) / d(stiffness)",
                                     "falls from 0.29 to ~5e-6", "copies back (and waits)"])
def test_a_comment_that_starts_with_words_states_no_value(comment):
    assert parse_comment(comment) is None


def test_every_markdown_file_with_python_is_collected():
    assert any(b.path == README for b in BLOCKS)
    assert any(b.path.name == "design.md" for b in BLOCKS)


def test_markers_are_known_and_name_their_reason():
    for b in BLOCKS:
        if b.marker is not None:
            assert b.marker[1], f"{b.id}: a <!-- {b.marker[0]}: ... --> marker must say why / which module"


def test_readme_first_example_prints_the_energy_and_its_gradient(run_block):
    printed = stdout_of(run_block, the_block("tape.backward(loss=energy)"))
    assert printed[0] == "[9.375]"
    assert printed[1].split() == "[ 0.   2.5  5.   7.5 10. ]".split()


def test_readme_setup_is_the_two_commands():
    text = README.read_text()
    assert 'pip install -e ".[dev]"' in text
    assert re.search(r"^pytest$", text, re.M)


def test_readme_simulation_example_prints_a_positive_stiffness_gradient(run_block):
    # a stiffer spring sags less under gravity, so the final height grows with ke
    printed = stdout_of(run_block, the_block("print(model.springs.ke.grad.numpy())"))
    assert float(printed[-1].strip().strip("[]")) > 0.0


def test_readme_rigid_body_example_drops_the_box_onto_a_face(run_block):
    printed = stdout_of(run_block, the_block("add_joint_revolute"))
    assert abs(float(printed[-1]) - 0.1) < 1e-3


def test_readme_optimization_loop_finds_the_throw(run_block):
    printed = stdout_of(run_block, the_block("sk.optim.Adam"))
    losses = [float(line.split()[1]) for line in printed[:-1]]
    assert losses[-1] < 1e-3 * losses[0]
    # x = vx t at t = 0.2 s puts the ball 0.5 m out: vx = 2.5 m/s
    vx = float(printed[-1].strip("[] ").split()[0])
    assert abs(vx - 2.5) < 0.02


def test_readme_scene_optimization_reaches_its_target(tmp_path):
    # the block's comments: the throw that puts the ball at the target 1 s later, the loss
    # falling from 1.4 to below 1e-9 m^2 in its 30 iterations. With the default, critically
    # damped contact (the block once left [contact] out) the ball landed and stayed 0.2 m up
    # whatever the throw, and the loss stalled at 0.361 m^2 (issue 28)
    from simkit.scene import Optimization, load_scene

    blocks = re.findall(r"^```toml\n(.*?)^```", README.read_text(), re.S | re.M)
    assert len(blocks) == 1, f"expected one toml block in README.md, found {len(blocks)}"
    scene = tmp_path / "ball.toml"
    scene.write_text(blocks[0])
    opt = Optimization(load_scene(scene), checkpoint=tmp_path / "ball.npz")
    opt.run()
    assert opt.iteration == 30
    assert opt.losses[-1] < 1e-9
    assert opt.losses[0] == pytest.approx(1.4, abs=0.05)
    final_loss, result = opt.replay(usd_path=None)
    np.testing.assert_allclose(result.final_state.particle_q.numpy()[0], [1.8, 0.8, 0.45], atol=1e-4)
    # it gets there by bouncing once: the ball was on the ground (its radius up) before 1 s
    v = opt.parameters[0].array.numpy()[0]
    landing = (v[1] + np.sqrt(v[1] ** 2 + 2.0 * 9.81 * (1.0 - 0.2))) / 9.81
    assert landing < 1.0


def test_readme_gpu_example_gives_the_same_energy_on_any_device(run_block):
    printed = stdout_of(run_block, the_block("sk.is_cuda_available()"))
    assert printed[0] == "[9.375]"


def test_readme_threads_example_runs_on_one_thread(run_block):
    assert stdout_of(run_block, the_block("sk.set_threads"))[-1] == "1"


def test_a_marker_is_read_from_the_line_above_the_fence(tmp_path):
    md = tmp_path / "page.md"
    md.write_text("Text.\n\n<!-- not-run: needs a display -->\n```python\nprint(1)\n```\n\n```python\nprint(2)\n```\n")
    marked, plain = python_blocks(md)
    assert marked.marker == ("not-run", "needs a display") and marked.code == "print(1)\n"
    assert plain.marker is None
    assert skip_reason(marked) == "marked not-run: needs a display"


def test_a_needs_marker_skips_only_where_the_module_is_missing(tmp_path):
    md = tmp_path / "page.md"
    md.write_text("<!-- needs: no_such_module_xyz -->\n```python\nx = 1\n```\n<!-- needs: numpy -->\n```python\nx = 2\n```\n")
    missing, present = python_blocks(md)
    assert "no_such_module_xyz" in skip_reason(missing)
    assert skip_reason(present) is None


def test_the_design_doc_lists_every_builtin_of_the_kernel_language():
    from simkit.core.lang import BUILTIN_STUBS

    text = re.sub(r"^```.*?^```", "", (ROOT / "docs" / "design.md").read_text(), flags=re.S | re.M)
    in_code = {w for span in re.findall(r"`([^`]+)`", text) for w in re.findall(r"\w+", span)}
    missing = sorted(set(BUILTIN_STUBS) - in_code)
    assert not missing, f"docs/design.md, 'Builtins', does not list: {', '.join(missing)}"


def test_articulations_example_prints_the_elbow_and_the_gradient_of_its_height(run_block):
    # elbow = (sin 30deg, 2 - cos 30deg, 0); its height 2 - cos(q0) has gradient (sin q0, 0)
    printed = stdout_of(run_block, the_block("sk.sim.eval_fk(model, q", ROOT / "docs" / "articulations.md"))
    assert [float(x) for x in printed[0].strip("[]").split()] == [0.5, 1.134, 0.0]
    assert [float(x) for x in printed[1].strip("[]").split()] == [0.5, 0.0]
    assert printed[2] == "(2, 2)"


def test_articulations_joint_limits_example_rests_at_the_ball_range_and_the_wrist_limit(run_block):
    # ball: 0.5 rad plus gravity's torque over limit_ke; the wrist's second angle at its -0.2 limit
    printed = stdout_of(run_block, the_block("limit_angle=0.5, target_kd=20.0", ROOT / "docs" / "articulations.md"))
    assert printed[-1] == "0.504 [ 0.292 -0.201]"


def test_articulations_ball_drive_example_rests_short_of_its_target_by_gravity(run_block):
    # target 0.5 (0, 0.6, 0.8); gravity's torque over target_ke lowers the lift about z by 0.019
    printed = stdout_of(run_block, the_block("target_ke=2000.0, target_kd=150.0", ROOT / "docs" / "articulations.md"))
    assert printed[-1] == "[-0.003  0.301  0.381]"


def test_articulations_velocity_drive_example_runs_at_the_target_rate_less_load_over_kd(run_block):
    # 5 - 0.04 / 0.02 = 3; SemiImplicitEuler's explicit load costs 1 + kd dt / I = 1.006 of its share
    block = the_block("control.joint_target_vel.assign([5.0])", ROOT / "docs" / "articulations.md")
    printed = stdout_of(run_block, block)
    assert printed == ["Featherstone 3.0", "SemiImplicitEuler 2.988", "XPBD 3.0"]
