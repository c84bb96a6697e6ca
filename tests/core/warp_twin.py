"""The kernel text of a test module imported a second time with warp in simkit's place, so a
test runs the very same kernels under both (Warp refuses kernels built by ``exec``: the copy is
a file). The module's first ``import simkit as M`` line becomes ``import warp as M``."""

import importlib.util
import sys
from pathlib import Path

import pytest


def import_as_warp(module, directory: Path):
    """(warp, ``module``'s text imported as Warp), from a copy written under ``directory``.

    Example::

        wp, W = import_as_warp(interp_kernels, tmp_path_factory.mktemp("warp"))
    """
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    wp.init()
    lines = Path(module.__file__).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("import simkit as M"))
    lines[at] = "import warp as M\n"
    name = f"{module.__name__}_warp"
    path = directory / f"{name}.py"
    path.write_text("".join(lines))
    spec = importlib.util.spec_from_file_location(name, path)
    twin = importlib.util.module_from_spec(spec)
    sys.modules[name] = twin
    spec.loader.exec_module(twin)
    return wp, twin
