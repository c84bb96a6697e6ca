"""Prove that a refactor left simkit's results bit for bit as they were.

Runs every scene in ``scenes/`` for a few frames (``load_scene`` and ``run_scene``, as the
``simkit run`` command does) and a short form of every example in ``examples/`` that has a
``main`` (a few optimizer iterations, so the digest covers the gradients that steered them:
each iteration's loss and the optimized parameters depend on every bit of the gradient).
Each run becomes a digest: the SHA-256 of the bytes of every final state array, and the
exact ``repr`` of the example's loss history and numeric results.

Example::

    python tools/check_identical.py --write /tmp/before.json      # on the old code
    python tools/check_identical.py --compare /tmp/before.json    # on the new code: exit 1 on a difference

Run both with the same ``SIMKIT_NUM_THREADS`` (1 makes the CPU launches' summation order
fixed) and on the same machine: the digest is of compiled native code.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "scenes"
EXAMPLES = ROOT / "examples"
SCENE_FRAMES = 3
# optimizer iterations of each example's short run: enough to take several gradient steps
EXAMPLE_ITERATIONS = {"ball_toss": 3, "cloth_throw": 2, "spring_walker": 2, "system_id": 3, "soft_id": 3,
                      "box_throw": 3, "arm_reach": 2, "cartpole_swingup": 2, "torch_policy": 2}


def array_digest(value: Any) -> str:
    """The SHA-256 of an array's dtype, shape and bytes (a simkit or numpy array).

    Example::

        array_digest(np.zeros(3))       # 'float64 (3,) 1f...'
    """
    a = np.ascontiguousarray(value.numpy() if hasattr(value, "numpy") else np.asarray(value))
    return f"{a.dtype} {a.shape} {hashlib.sha256(a.tobytes()).hexdigest()}"


def state_digest(state: Any) -> dict[str, str]:
    """The digest of each array attribute of a ``State`` (``particle_q``, ``body_q``, ...).

    Example::

        state_digest(model.state())["particle_q"]
    """
    import simkit as sk

    return {name: array_digest(value) for name, value in sorted(vars(state).items()) if isinstance(value, sk.Array)}


def result_digest(result: dict) -> dict[str, Any]:
    """The numbers of an example's result dict, exactly: floats as ``repr``, arrays by digest.
    Paths and wall-clock times are left out (they differ from run to run).

    Example::

        result_digest({"losses": [0.5, 0.25], "seconds": 1.2})      # {'losses': ['0.5', '0.25']}
    """
    def exact(value: Any) -> Any:
        if isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, (list, tuple)):
            return [exact(v) for v in value]
        if isinstance(value, np.ndarray) or hasattr(value, "numpy"):
            return array_digest(value)
        if isinstance(value, np.generic):
            return repr(value.item())
        return None

    out = {}
    for key, value in sorted(result.items()):
        if key.endswith("_path") or key == "seconds":
            continue
        digest = exact(value)
        if digest is not None:
            out[key] = digest
    return out


def scene_digests() -> dict[str, Any]:
    """Each scene's final state after ``SCENE_FRAMES`` frames, by file name.

    Example::

        scene_digests()["ball_bounce.toml"]["particle_q"]
    """
    from simkit.scene import load_scene, run_scene

    return {path.name: state_digest(run_scene(load_scene(path, frames=SCENE_FRAMES)).final_state)
            for path in sorted(SCENES.glob("*.toml"))}


def _load_example(name: str):
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def example_digests(out: Path) -> dict[str, Any]:
    """Each example's short run (``EXAMPLE_ITERATIONS``), its USD written under ``out``.
    An example whose optional dependency (torch) is missing is recorded as skipped.

    Example::

        example_digests(Path("/tmp/out"))["system_id"]["losses"]
    """
    digests: dict[str, Any] = {}
    for name, iterations in EXAMPLE_ITERATIONS.items():
        try:
            module = _load_example(name)
        except ImportError as e:
            digests[name] = f"skipped: {e}"
            continue
        digests[name] = result_digest(module.main(iterations=iterations, usd_path=out / f"{name}.usda", quiet=True))
    return digests


def differences(before: dict, after: dict, where: str = "") -> list[str]:
    """The paths at which two digests differ, one line each.

    Example::

        differences({"a": "1"}, {"a": "2"})          # ['a: 1 -> 2']
    """
    if isinstance(before, dict) and isinstance(after, dict):
        lines = []
        for key in sorted(set(before) | set(after)):
            here = f"{where}/{key}" if where else key
            if key not in after:
                lines.append(f"{here}: missing now")
            elif key not in before:
                lines.append(f"{here}: new")
            else:
                lines += differences(before[key], after[key], here)
        return lines
    return [] if before == after else [f"{where}: {before} -> {after}"]


def main(argv: list[str] | None = None) -> int:
    """Write or compare the digest of every scene and example; 0 when identical.

    Example::

        main(["--write", "/tmp/before.json"])
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path, help="write the digest to this JSON file")
    mode.add_argument("--compare", type=Path, help="compare with the digest in this JSON file")
    args = parser.parse_args(argv)
    if args.compare is not None and not args.compare.is_file():
        parser.error(f"--compare {args.compare}: no such file (write one first with --write on the old code)")
    with tempfile.TemporaryDirectory() as tmp:
        digest = {"scenes": scene_digests(), "examples": example_digests(Path(tmp))}
    if args.write is not None:
        args.write.write_text(json.dumps(digest, indent=1, sort_keys=True) + "\n")
        sys.stdout.write(f"wrote {args.write}: {len(digest['scenes'])} scenes, {len(digest['examples'])} examples\n")
        return 0
    lines = differences(json.loads(args.compare.read_text()), digest)
    if lines:
        sys.stdout.write("not identical:\n" + "\n".join(f"  {line}" for line in lines) + "\n")
        return 1
    sys.stdout.write(f"identical to {args.compare}: {len(digest['scenes'])} scenes, "
                     f"{len(digest['examples'])} examples\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
