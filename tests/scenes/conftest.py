"""Shared helpers of the scene and command-line tests: the bundled scenes, edited copies of
them, and a stand-in for the viewer module that records its calls instead of opening windows."""

import shutil
import sys
import types
from pathlib import Path

import pytest

SCENES = Path(__file__).resolve().parents[2] / "scenes"


@pytest.fixture
def scenes_dir() -> Path:
    """The bundled scenes: ``scenes/`` of the checkout."""
    return SCENES


@pytest.fixture
def edit_scene(tmp_path):
    """``edit_scene(name, old, new)``: a copy of ``scenes/NAME.toml`` in ``tmp_path`` (with its
    meshes folder) with the first ``old`` replaced by ``new``; more ``(old, new)`` pairs may
    follow."""

    def edit(name: str, *replacements: str) -> Path:
        text = (SCENES / f"{name}.toml").read_text()
        for old, new in zip(replacements[::2], replacements[1::2]):
            assert old in text, f"{old!r} is not in {name}.toml"
            text = text.replace(old, new, 1)
        if not (tmp_path / "meshes").exists():
            shutil.copytree(SCENES / "meshes", tmp_path / "meshes")
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        return path
    return edit


@pytest.fixture
def fake_viewer(monkeypatch):
    """Replaces ``simkit.render.viewer`` by a module whose ``play_live`` and ``play_usd`` record
    their arguments (``calls`` is a list of ``(name, args, kwargs)``); ``play_live`` also drives
    the simulation for three frames, as a window would."""
    calls = []
    module = types.ModuleType("simkit.render.viewer")

    def play_live(model, reset, advance, fps=60.0, title="simkit"):
        calls.append(("play_live", (model, reset, advance), {"fps": fps, "title": title}))
        state = reset()
        for _ in range(3):
            state = advance(state)
        calls.append(("frames", (state,), {}))

    def play_usd(path, title=None):
        calls.append(("play_usd", (path,), {"title": title}))

    module.play_live = play_live
    module.play_usd = play_usd
    monkeypatch.setitem(sys.modules, "simkit.render.viewer", module)
    return calls
