"""Parameter sweeps of a scene: the grid of some keys' values, every run a Ray task, one table.

:func:`sweep` checks every run's overrides against the scene before anything runs (each
value passes the checks a value in the file passes), then runs them, as Ray tasks by
default (``address``: a cluster to join; else a local Ray is started), and writes
``results.csv`` (and ``results.parquet`` when ``pyarrow`` is installed) in ``out``: one
row per finished run with its overrides, ``status`` (``ok`` or ``failed``), ``attempts``,
``seconds`` (wall time of the run in its worker), the metrics of
:mod:`simkit.scene.task` (or the optimized loss of a scene with ``[optimize]``), the USD
file written (``usd=True``) and the error of a failed run. The table is rewritten
atomically after every finished run, so an interrupt leaves a consistent one;
``resume=True`` runs only the runs it does not hold yet. A run that fails is run once
more, then recorded as failed; the sweep goes on.

``out`` also holds ``sweep.json`` (what was swept: the scene, its fingerprint, frames,
iterations and the grid; ``resume`` refuses a folder of another sweep), ``usd/run-NNNN.usd``
and, for optimizations, ``checkpoints/run-NNNN.npz`` (the optimized parameters; see
:class:`~simkit.scene.Optimization`).

On a cluster of several machines, the scene file (and its meshes) must be at the same path
on every node; results come back to the process that called :func:`sweep`, which alone
writes ``out``.

Example::

    import simkit as sk

    result = sk.sweep("scenes/ball_bounce.toml", {"contact.mu": [0.1, 0.5], "sim.dt": [1e-3, 5e-4]},
                      out="mu_dt", frames=10, optimize=False)
    for row in result.rows:
        print(row["contact.mu"], row["sim.dt"], row["com_x"])
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .outputs import check_writable, write_atomic
from .overrides import OverrideError, expand_grid, split_key
from .pool import Outcome, make_runner
from .schema import SceneConfig, read_config
from .task import OPTIMIZE_METRICS, RUN_METRICS, run_point
from .validate import SceneError

TABLE, PARQUET, META = "results.csv", "results.parquet", "sweep.json"
META_FORMAT, META_VERSION = "simkit-sweep", 1
_INTEGER_COLUMNS = ("run", "attempts", "frames", "steps", "iterations")


class SweepInterrupted(KeyboardInterrupt):
    """The sweep was interrupted (Ctrl-C); ``table`` holds the ``finished`` of ``total`` runs.

    Example::

        except SweepInterrupted as e:
            print(f"{e.finished}/{e.total} runs in {e.table}; resume=True continues")
    """

    def __init__(self, table: Path, finished: int, total: int):
        super().__init__(f"interrupted with {finished} of {total} runs in {table}")
        self.table, self.finished, self.total = table, finished, total


@dataclass
class SweepResult:
    """What :func:`sweep` returns: ``rows`` (one dict per run in grid order, the table's
    columns as keys, numbers as numbers), the ``table`` (``results.csv``), ``parquet`` (or
    None), and how many runs ``ran`` now, were ``skipped`` (finished before, ``resume``) and
    ``failed`` in all.

    Example::

        best = min((r for r in result.rows if r["status"] == "ok"), key=lambda r: r["kinetic_energy"])
    """

    rows: list[dict]
    columns: list[str]
    out: Path
    table: Path
    parquet: Path | None
    ran: int = 0
    skipped: int = 0
    failed: int = 0
    keys: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------------
# Checking the grid
# ----------------------------------------------------------------------------------

Grid = Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]


def grid_points(grid: Grid | None) -> tuple[list[str], list[dict]]:
    """The keys and the runs (dicts of overrides) of ``grid``: a mapping key -> values is
    the cartesian product of the values (:func:`~simkit.scene.overrides.expand_grid`); a
    list of dicts is taken run by run (every dict with the same keys); None is one run of
    the scene as it is.

    Example::

        keys, points = grid_points({"sim.dt": [1e-3, 5e-4]})
    """
    if grid is None:
        return [], [{}]
    if isinstance(grid, Mapping):
        return list(grid), expand_grid(grid)
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or not grid:
        raise OverrideError(f"grid: expected a mapping of key -> values or a non-empty list of dicts of overrides, "
                            f"got {grid!r}")
    points = []
    keys = list(grid[0]) if isinstance(grid[0], Mapping) else []
    for i, point in enumerate(grid):
        if not isinstance(point, Mapping) or list(point) != keys:
            raise OverrideError(f"grid[{i}]: expected a dict of overrides with the keys of grid[0] ({keys}), "
                                f"got {point!r}")
        for key in point:
            split_key(key)
        points.append(dict(point))
    return keys, points


def check_grid(scene: str | os.PathLike, points: Sequence[Mapping[str, Any]], *, frames: int | None = None,
               device: str | None = None, optimize: bool | None = None) -> tuple[SceneConfig, bool]:
    """Check every run of a sweep against the scene before any runs: each run's overrides
    pass the scene's checks, none sets ``sim.frames`` or ``sim.device`` next to ``frames`` or
    ``device``, and an optimization has an ``[optimize]`` table. Returns the scene's config
    (no overrides) and whether the runs optimize (``optimize=None``: when the scene has an
    ``[optimize]`` table). Raises the :class:`SceneError` of the first bad run.

    Example::

        config, optimizing = check_grid("scenes/flag.toml", [{"cloth[0].k_mu": 500}], frames=10)
    """
    base = read_config(scene, device=device, frames=frames)
    keys = {k for p in points for k in p}
    for key, option, given in (("sim.frames", "--frames", frames), ("sim.device", "--device", device)):
        if given is not None and key in keys:
            raise SceneError(scene, key, f"set by an override and by {option} ({given}); give one of them")
    optimizing = base.optimize is not None if optimize is None else bool(optimize)
    if optimizing and base.optimize is None:
        raise SceneError(scene, "optimize", "missing; the scene has no [optimize] table, so its runs cannot "
                                            "optimize (leave optimize=True out)")
    for point in points:
        read_config(scene, device=device, frames=frames, overrides=point)
    return base, optimizing


# ----------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    """A value as the CSV holds it: numbers exactly (repr), true/false, strings as they are,
    arrays as JSON, nothing as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    return json.dumps(value)


def _columns(keys: list[str], optimizing: bool) -> list[str]:
    return ["run", *keys, "status", "attempts", "seconds", *RUN_METRICS,
            *(OPTIMIZE_METRICS if optimizing else ()), "usd", *(("checkpoint",) if optimizing else ()), "error"]


def _csv_text(rows: list[dict], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([_cell(row.get(c)) for c in columns])
    return buf.getvalue()


def _parquet_bytes(rows: list[dict], columns: list[str]) -> bytes | None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    arrays = {}
    for c in columns:
        values = [row.get(c) for row in rows]
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, bool) for v in present):
            arrays[c] = pa.array(values, type=pa.bool_())
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            arrays[c] = pa.array(values, type=pa.int64())
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            arrays[c] = pa.array([None if v is None else float(v) for v in values], type=pa.float64())
        else:
            arrays[c] = pa.array([None if v is None else (v if isinstance(v, str) else _cell(v)) for v in values],
                                 type=pa.string())
    buf = io.BytesIO()
    pq.write_table(pa.table(arrays), buf)
    return buf.getvalue()


def _read_finished(table: Path, columns: list[str], keys: list[str], points: list[dict]) -> dict[int, dict]:
    """The finished runs of an earlier table, typed back; a SceneError when the table is not
    the one this sweep wrote."""
    def refuse(message: str) -> SceneError:
        return SceneError(table, "--resume", f"{message}; delete the folder's results (or choose another --out) to "
                                             "start over")
    try:
        with open(table, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != columns:
                raise refuse(f"the table's columns ({', '.join(reader.fieldnames or [])}) are not this sweep's")
            raw = list(reader)
    except (OSError, csv.Error, UnicodeDecodeError) as e:
        raise refuse(f"cannot be read ({e})") from None
    finished: dict[int, dict] = {}
    for line, r in enumerate(raw, start=2):
        try:
            run = int(r["run"])
            point = points[run]
        except (ValueError, IndexError):
            raise refuse(f"line {line}: run {r['run']!r} is not a run of this sweep (0..{len(points) - 1})") from None
        if r["status"] not in ("ok", "failed") or any(r[k] != _cell(point[k]) for k in keys):
            raise refuse(f"line {line}: run {run} does not match this sweep's run {run}")
        row: dict[str, Any] = {"run": run, **point}
        for c in columns[1 + len(keys):]:
            text = r[c]
            if c in ("status", "usd", "checkpoint", "error"):
                row[c] = text
            elif text == "":
                row[c] = None
            else:
                try:
                    row[c] = int(text) if c in _INTEGER_COLUMNS else float(text)
                except ValueError:
                    raise refuse(f"line {line}: {c} is {text!r}, not a number") from None
        finished[run] = row
    return finished


# ----------------------------------------------------------------------------------
# The sweep
# ----------------------------------------------------------------------------------

def _meta(scene: Path, base: SceneConfig, frames: int | None, optimizing: bool, iterations: int | None,
          keys: list[str], points: list[dict]) -> dict:
    return {"format": META_FORMAT, "version": META_VERSION, "scene": str(scene.resolve()),
            "fingerprint": base.fingerprint, "frames": base.sim["frames"], "optimize": optimizing,
            "iterations": (iterations or base.optimize["iterations"]) if optimizing else None, "keys": keys,
            "points": [{k: _cell(v) for k, v in p.items()} for p in points]}


def _check_resume(meta_path: Path, meta: dict) -> None:
    try:
        old = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise SceneError(meta_path, "--resume", "no sweep to resume here (run without --resume to start one)") \
            from None
    except (OSError, ValueError) as e:
        raise SceneError(meta_path, "--resume", f"cannot be read ({e}); delete the folder's results to start over") \
            from None
    if not isinstance(old, dict) or old.get("format") != META_FORMAT:
        raise SceneError(meta_path, "--resume", "not written by simkit sweep")
    for what, key in (("scene file differs", "scene"), ("scene differs (its contents changed)", "fingerprint"),
                      ("frames differ", "frames"), ("mode (run or optimize) differs", "optimize"),
                      ("iterations differ", "iterations"), ("swept keys or values differ", "keys"),
                      ("swept keys or values differ", "points")):
        if old.get(key) != meta[key]:
            raise SceneError(meta_path, "--resume", f"the results here are of another sweep: its {what} "
                                                    "from this one's; use the same scene and options, or another --out")


def sweep(scene: str | os.PathLike, grid: Grid | None = None,
          *, out: str | os.PathLike = "sweep", frames: int | None = None, device: str | None = None,
          optimize: bool | None = None, iterations: int | None = None, usd: bool = False, resume: bool = False,
          address: str | None = None, num_cpus: int | None = None, threads: int = 1, use_ray: bool = True,
          progress: bool = False) -> SweepResult:
    """Run the scene file ``scene`` once for every point of ``grid`` and tabulate the runs in
    the folder ``out`` (see the module docstring for the files).

    ``grid``: key path -> list of values (the cartesian product is run; the last key varies
    fastest), or a list of dicts of overrides (run as given). ``frames`` / ``device``
    override ``sim.frames`` / ``sim.device``. ``optimize``: run the scene's ``[optimize]``
    table (``iterations`` of it) and record its loss, instead of simulating it once; default:
    when the scene has one. ``usd``: keep each run's USD file. ``resume``: continue the
    sweep already in ``out``. The runs use the Ray already initialized in this process
    when there is one; else ``address``, a Ray cluster to join (``"auto"``,
    ``"ray://host:10001"``); else a new local Ray with ``num_cpus`` CPUs (default: all),
    shut down at the end. ``threads``: simkit's CPU threads per run (and the
    CPUs each Ray task reserves); simkit gives the same numbers for the same thread count, so
    a run's row does not depend on where it ran. ``use_ray=False`` runs one after another in
    this process, without Ray. ``progress``: a tqdm bar on stderr.

    Raises a :class:`SceneError` (or :class:`~simkit.scene.overrides.OverrideError`) for a
    bad override before anything runs, and :class:`SweepInterrupted` on Ctrl-C (the table
    then holds every run finished so far).

    Example::

        result = sweep("scenes/cloth_drape.toml", {"cloth[0].k_mu": [500, 1000, 2000]}, out="drape", frames=20)
        print(result.table.read_text())
    """
    path = Path(scene)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"sweep(threads=...): expected an integer >= 1, got {threads!r}")
    keys, points = grid_points(grid)
    if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1):
        raise SceneError(path, "--iterations", f"expected an integer >= 1, got {iterations!r}")
    base, optimizing = check_grid(path, points, frames=frames, device=device, optimize=optimize)
    if iterations is not None and not optimizing:
        raise SceneError(path, "--iterations", "only used by runs that optimize; the scene has no [optimize] table "
                                               "or the sweep does not optimize")
    out = Path(out)
    table, meta_path = out / TABLE, out / META
    check_writable(table, "--out", makes_folder=True)
    columns = _columns(keys, optimizing)
    meta = _meta(path, base, frames, optimizing, iterations, keys, points)
    if resume:
        _check_resume(meta_path, meta)
        finished = _read_finished(table, columns, keys, points) if table.exists() else {}
    else:
        for existing in (table, meta_path):
            if existing.exists():
                raise SceneError(existing, "--out", "exists: a sweep was written here before; pass --resume to "
                                                    "continue it, or choose another --out")
        finished = {}
    write_atomic(meta_path, json.dumps(meta, indent=1))
    parquet = out / PARQUET

    def save() -> None:
        rows = [finished[k] for k in sorted(finished)]
        write_atomic(table, _csv_text(rows, columns))
        data = _parquet_bytes(rows, columns)
        if data is not None:
            write_atomic(parquet, data)

    save()
    todo = [k for k in range(len(points)) if k not in finished]
    result = SweepResult([], columns, out, table, None, skipped=len(points) - len(todo), keys=keys)
    from tqdm import tqdm

    bar = tqdm(total=len(points), initial=result.skipped, unit="run", desc=path.stem, disable=not progress,
               file=sys.stderr, dynamic_ncols=True)

    def record(outcome: Outcome) -> None:
        k = outcome.key
        row: dict[str, Any] = dict.fromkeys(columns)
        row.update({"run": k, **points[k], "status": "ok" if outcome.ok else "failed", "attempts": outcome.attempts,
                    "usd": "", "error": outcome.error or ""})
        if optimizing:
            row["checkpoint"] = ""
        if outcome.ok:
            value = outcome.value
            row["seconds"] = value["seconds"]
            row.update({c: v for c, v in value["metrics"].items() if c in row})
            if value["usd"] is not None:
                row["usd"] = f"usd/run-{k:04d}.usd"
                write_atomic(out / row["usd"], value["usd"])
            if value["checkpoint"] is not None:
                row["checkpoint"] = f"checkpoints/run-{k:04d}.npz"
                write_atomic(out / row["checkpoint"], value["checkpoint"])
        else:
            result.failed += 1
        finished[k] = row
        result.ran += 1
        save()
        bar.update()
        if result.failed:
            bar.set_postfix(failed=result.failed)

    jobs = [(k, {"scene_path": str(path.resolve()), "overrides": points[k], "frames": frames, "device": device,
                 "optimize": optimizing, "iterations": iterations, "usd": usd, "threads": threads})
            for k in todo]
    try:
        if jobs:
            with make_runner(use_ray, address, num_cpus, cpus_per_job=threads) as runner:
                runner.run(run_point, jobs, record)
    except KeyboardInterrupt:
        raise SweepInterrupted(table, len(finished), len(points)) from None
    finally:
        bar.close()
    result.rows = [finished[k] for k in sorted(finished)]
    result.failed = sum(1 for r in result.rows if r["status"] == "failed")
    result.parquet = parquet if parquet.exists() else None
    return result


__all__ = ["sweep", "SweepResult", "SweepInterrupted", "grid_points", "check_grid", "TABLE", "PARQUET", "META"]
