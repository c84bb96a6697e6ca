"""tools/check_identical.py, the proof that a refactor changed no result: its digests see a
one-bit change in a state array and in a loss, leave out what differs from run to run, and
its comparison names where two digests differ. (The runs themselves are the scenes and
examples, checked by their own tests.)"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import simkit as sk

TOOL = Path(__file__).resolve().parents[2] / "tools" / "check_identical.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("check_identical", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_array_digest_changes_with_one_bit_of_one_element(tool):
    a = np.array([1.0, 2.0, 3.0])
    b = a.copy()
    b.view(np.uint64)[1] ^= 1
    assert tool.array_digest(a) == tool.array_digest(sk.array(a, dtype=sk.float64))
    assert tool.array_digest(a) != tool.array_digest(b)


def test_a_result_digest_keeps_floats_exactly_and_leaves_out_paths_and_times(tool):
    digest = tool.result_digest({"losses": [0.1, 0.2], "seconds": 1.5, "usd_path": "/tmp/x.usda", "bounces": 1})
    assert digest == {"losses": ["0.1", "0.2"], "bounces": 1}
    assert tool.result_digest({"loss": 0.1 + 2 ** -56}) != tool.result_digest({"loss": 0.1})


def test_differences_name_the_path_of_each_change(tool):
    before = {"scenes": {"a.toml": {"q": "x"}, "b.toml": {}}, "examples": {"e": {"losses": ["1.0"]}}}
    after = {"scenes": {"a.toml": {"q": "y"}}, "examples": {"e": {"losses": ["1.0"]}, "f": {}}}
    assert tool.differences(before, after) == ["examples/f: new", "scenes/a.toml/q: x -> y",
                                               "scenes/b.toml: missing now"]
    assert tool.differences(before, before) == []


def test_comparing_with_a_missing_file_is_a_usage_error(tool, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        tool.main(["--compare", str(tmp_path / "none.json")])
    assert exit_info.value.code == 2
    assert "no such file (write one first with --write" in capsys.readouterr().err
