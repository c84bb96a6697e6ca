"""The figure of a sweep (``simkit sweep --plot``): one metric of the results table against each
swept key, one subplot per key. Runs that share the values of the other keys are joined by a
line, so a grid of two keys shows one curve per value of the other key. Needs matplotlib.

Example::

    result = sweep("scenes/ball_bounce.toml", {"contact.mu": [0.1, 0.5]}, out="mu", optimize=False)
    plot_sweep(result.rows, result.keys, "com_x", "mu/results.png", title="ball_bounce")
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Sequence

from .outputs import save_figure
from .task import OPTIMIZE_METRICS, RUN_METRICS

PLOT_NAME = "results.png"
_MAX_LEGEND = 8


def default_metric(optimizing: bool) -> str:
    """The metric ``sweep --plot`` draws when ``--metric`` is not given: the optimized loss,
    or the final kinetic energy of a run.

    Example::

        default_metric(False)      # "kinetic_energy"
    """
    return "loss" if optimizing else "kinetic_energy"


def metric_names(optimizing: bool) -> tuple[str, ...]:
    """The metric columns of a sweep's table (see :mod:`simkit.scene.task`).

    Example::

        "com_x" in metric_names(False)     # True
    """
    return RUN_METRICS + (OPTIMIZE_METRICS if optimizing else ())


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _label(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def sweep_series(rows: Sequence[dict], keys: Sequence[str], metric: str) -> dict[str, dict[str, list]]:
    """What :func:`plot_sweep` draws: for each key, the curves of ``metric`` against that key's
    value, one per combination of the other keys' values (named ``"k2=v, k3=w"``; ``""`` with
    one key), each a list of ``(value, metric)`` sorted by value, from the finished rows only.

    Example::

        sweep_series(rows, ["contact.mu"], "com_x")   # {"contact.mu": {"": [(0.1, 1.7), (0.5, 1.2)]}}
    """
    ok = [r for r in rows if r.get("status") == "ok" and _is_number(r.get(metric)) and math.isfinite(r[metric])]
    out: dict[str, dict[str, list]] = {}
    for key in keys:
        series: dict[str, list] = {}
        for r in ok:
            name = ", ".join(f"{k}={_label(r[k])}" for k in keys if k != key)
            series.setdefault(name, []).append((r[key], float(r[metric])))
        for points in series.values():
            if all(_is_number(p[0]) for p in points):
                points.sort(key=lambda p: p[0])
        out[key] = series
    return out


def plot_sweep(rows: Sequence[dict], keys: Sequence[str], metric: str, path: str | os.PathLike,
               title: str = "") -> Path:
    """Save ``metric`` of the finished (``status == "ok"``) ``rows`` against each of ``keys``,
    one subplot per key (three to a line), as an image at ``path`` (format from the
    extension), atomically. Numeric values get a numeric axis (a log axis when they are all
    > 0 and span a factor of 50 or more); other values (names, lists) are placed in the order
    they first appear. The curves are those of :func:`sweep_series`.

    Example::

        plot_sweep(result.rows, result.keys, "loss", "sweep/results.png")
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not keys:
        raise ValueError("plot_sweep: no swept keys to draw the metric against")
    data = sweep_series(rows, keys, metric)
    failed = sum(1 for r in rows if r.get("status") != "ok")
    columns = min(len(keys), 3)
    lines = (len(keys) + columns - 1) // columns
    fig = Figure(figsize=(4.6 * columns, 3.6 * lines))
    FigureCanvasAgg(fig)
    for i, key in enumerate(keys):
        ax = fig.add_subplot(lines, columns, i + 1)
        series = data[key]
        values = [p[0] for points in series.values() for p in points]
        numeric = all(_is_number(v) for v in values)
        order: dict[str, int] = {}
        for v in values:
            order.setdefault(_label(v), len(order))
        for name, points in series.items():
            xs = [float(p[0]) if numeric else float(order[_label(p[0])]) for p in points]
            ax.plot(xs, [p[1] for p in points], marker="o", markersize=4, label=name or None)
        if numeric and values and min(values) > 0 and max(values) >= 50 * min(values):
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(range(len(order)), list(order), rotation=20)
        if 1 < len(series) <= _MAX_LEGEND:
            ax.legend(fontsize="small")
        if not values:
            ax.text(0.5, 0.5, "no finished runs", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(key)
        ax.set_ylabel(metric)
        ax.grid(True, alpha=0.3)
    note = f" ({failed} failed run{'s' if failed != 1 else ''} not drawn)" if failed else ""
    fig.suptitle(f"{title}: {metric} per swept key{note}" if title else f"{metric} per swept key{note}")
    fig.tight_layout()
    path = Path(path)
    save_figure(fig, path)
    return path


__all__ = ["PLOT_NAME", "default_metric", "metric_names", "plot_sweep", "sweep_series"]
