"""tools/bench.py's GPU section runs end to end wherever the GPU path does.

Without a GPU it runs on the fake driver: its timings mean nothing there, but every call the
section makes (saxpy checked against numpy, copies, launches, graph replay, the taped chain
and its backward) goes through simkit's CUDA path, so a session lent a GPU finds a bench
that works.
"""

from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def test_the_gpu_bench_section_runs_every_row(gpu, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    import bench

    assert bench.main(["--only", "gpu", "--quick"]) == 0
    out = capsys.readouterr().out
    for row in ("saxpy bandwidth vs device-to-device copy", "sk.launch on the GPU, empty kernel",
                "sk.replay of a CUDA graph", "100-launch chain, 100k elements, forward",
                "100-launch chain, 100k elements, backward"):
        assert row in out
    assert "skipped: no CUDA GPU" not in out
