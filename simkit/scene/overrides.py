"""Overrides of scene keys: ``sim.dt = 5e-4`` or ``cloth[0].k_mu = 2000`` set on top of a
scene file, and the value lists a sweep takes (``--set cloth[0].k_mu=500:2000:4``).

An override is a key path, as scene errors name keys (``sim.dt``, ``cloth[0].k_mu``,
``springs[0].muscle.amplitude``, ``particles[0].velocity[1]``), and a TOML value. It is
written into the parsed file before the file is checked, so an overridden value passes
exactly the checks a value in the file passes (:func:`~simkit.scene.schema.read_config`
takes ``overrides=``); a key the scene does not have is the same "unknown key" error.

Value lists (:func:`parse_values`):

- ``v1,v2,...``: each a TOML value (``1e-3``, ``true``, ``"xpbd"``, ``[1, 0, 0]``); a bare
  word (``xpbd``, ``cuda:0``) is a string;
- ``lo:hi:n``: ``n >= 2`` evenly spaced numbers from ``lo`` to ``hi``, both included
  (integers when ``lo`` and ``hi`` are integers and every value is whole: ``500:2000:4`` is
  500, 1000, 1500, 2000);
- ``lo:hi:n:log``: ``n`` numbers spaced evenly on a log scale (``lo`` and ``hi`` > 0).

Example::

    key, values = parse_set("cloth[0].k_mu=500:2000:4")    # ('cloth[0].k_mu', [500, 1000, 1500, 2000])
    grid = expand_grid({"sim.dt": [1e-3, 5e-4], key: values})   # 8 dicts of overrides
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
import tomllib
from typing import Any, Mapping, Sequence

import numpy as np

from .validate import SceneError

_SEGMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:\[(?P<index>\d+)\])?$")
_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:/+-]*$")


class OverrideError(ValueError):
    """An override that cannot be read: a malformed ``KEY=VALUES`` or key path, or a value
    list that is not one (``str(error)`` names the override).

    Example::

        parse_set("sim.dt")      # OverrideError: --set sim.dt: expected KEY=VALUES, ...
    """


def split_key(key: str) -> list[tuple[str, int | None]]:
    """The segments of a key path: ``"cloth[0].k_mu"`` -> ``[("cloth", 0), ("k_mu", None)]``.
    An :class:`OverrideError` for anything else than names (with an optional ``[index]``)
    joined by dots.

    Example::

        split_key("springs[0].muscle.amplitude")
    """
    if not isinstance(key, str) or not key:
        raise OverrideError(f"expected a key path such as sim.dt or cloth[0].k_mu, got {key!r}")
    out = []
    for part in key.split("."):
        m = _SEGMENT.match(part.strip())
        if m is None:
            raise OverrideError(f"{key}: expected a key path of names joined by dots, each with an optional "
                                f"[index] (such as sim.dt or cloth[0].k_mu), got {part!r} in it")
        out.append((m.group("name"), None if m.group("index") is None else int(m.group("index"))))
    return out


def _text(value: Any) -> str:
    return json.dumps(value)


def apply_overrides(data: dict, overrides: Mapping[str, Any], file: str) -> dict:
    """A deep copy of the parsed scene ``data`` with every override written in. A table on
    the way that the file lacks is created (``contact.ke`` in a scene without ``[contact]``);
    an array index past the end of the array, or a path through a value that is not a table,
    is a :class:`SceneError` naming the key. Whether the key and the value are valid is
    left to the scene's checks, which run on the result.

    Example::

        data = apply_overrides(tomllib.load(f), {"sim.dt": 1e-3}, "scene.toml")
    """
    out = copy.deepcopy(data)
    for key, value in overrides.items():
        segments = split_key(key)
        node: Any = out
        where = ""
        for k, (name, index) in enumerate(segments):
            last = k == len(segments) - 1
            path = f"{where}.{name}" if where else name
            if not isinstance(node, dict):
                raise SceneError(file, where, f"expected a table to set {key} in, but the scene has "
                                              f"{_text(node) if not isinstance(node, list) else 'an array'} here")
            if index is None:
                if last:
                    node[name] = value
                else:
                    node = node.setdefault(name, {})
                where = path
                continue
            items = node.get(name)
            if not isinstance(items, list):
                raise SceneError(file, f"{path}[{index}]", f"the scene has no array {path} to index (to set {key})")
            if index >= len(items):
                raise SceneError(file, f"{path}[{index}]",
                                 f"index out of range: the scene's {path} has {len(items)} entr"
                                 f"{'y' if len(items) == 1 else 'ies'} (to set {key})")
            where = f"{path}[{index}]"
            if last:
                items[index] = value
            else:
                node = items[index]
    return out


def describe_overrides(overrides: Mapping[str, Any]) -> str:
    """The overrides as one line: ``sim.dt = 0.001, cloth[0].k_mu = 500``.

    Example::

        describe_overrides({"sim.dt": 1e-3})
    """
    return ", ".join(f"{k} = {_text(v)}" for k, v in overrides.items())


# ----------------------------------------------------------------------------------
# Value lists
# ----------------------------------------------------------------------------------

def _split_top(text: str) -> list[str]:
    """Split at the commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_value(text: str) -> Any:
    """One value of an override: a TOML value, a Python float (``.5``), or a bare word as a
    string. An :class:`OverrideError` for an empty text or one that is none of these.

    Example::

        parse_value("1e-3"), parse_value("[1, 0, 0]"), parse_value("xpbd")   # 0.001, [1, 0, 0], 'xpbd'
    """
    text = text.strip()
    if not text:
        raise OverrideError("expected a value, got nothing (an empty item in the list?)")
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if _BARE.match(text):
        return text
    raise OverrideError(f"expected a TOML value (a number, true/false, a quoted string, an array), got {text!r}")


def _parse_range(text: str) -> list | None:
    parts = [p.strip() for p in text.split(":")]
    if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != "log"):
        return None
    try:
        lo, hi = (parse_value(p) for p in parts[:2])
        n = parse_value(parts[2])
    except OverrideError:
        return None
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi))
    if not numeric:
        return None
    form = "LO:HI:N" + (":log" if len(parts) == 4 else "")
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise OverrideError(f"{text}: expected {form} with an integer N >= 2 (how many values), got {parts[2]!r}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise OverrideError(f"{text}: expected finite LO and HI")
    if len(parts) == 4:
        if lo <= 0 or hi <= 0:
            raise OverrideError(f"{text}: expected LO and HI > 0 for a log-spaced range")
        values = np.geomspace(float(lo), float(hi), n)
        values[0], values[-1] = lo, hi
    else:
        values = np.linspace(float(lo), float(hi), n)
    out = [float(v) for v in values]
    if isinstance(lo, int) and isinstance(hi, int) and all(v.is_integer() for v in out):
        return [int(v) for v in out]
    return out


def parse_values(text: str) -> list:
    """The values of one swept key: ``lo:hi:n``, ``lo:hi:n:log`` or a comma-separated list
    (see the module docstring). An :class:`OverrideError` for a list that cannot be read, an
    empty one, or one with a value twice.

    Example::

        parse_values("1e-3,5e-4")      # [0.001, 0.0005]
        parse_values("0:1:5")          # [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    ranged = _parse_range(text)
    values = ranged if ranged is not None else [parse_value(p) for p in _split_top(text)]
    seen = set()
    for v in values:
        t = _text(v)
        if t in seen:
            raise OverrideError(f"{text}: expected each value once, got {t} twice")
        seen.add(t)
    return values


def parse_set(text: str) -> tuple[str, list]:
    """``KEY=VALUES`` (one ``--set``) as ``(key, values)``; the key path is checked for form
    here and against the scene later.

    Example::

        parse_set("sim.dt=1e-3,5e-4")      # ('sim.dt', [0.001, 0.0005])
    """
    key, eq, spec = text.partition("=")
    key = key.strip()
    if not eq or not key or not spec.strip():
        raise OverrideError(f"--set {text}: expected KEY=VALUES, such as sim.dt=1e-3,5e-4 or "
                            "cloth[0].k_mu=500:2000:4")
    try:
        split_key(key)
        return key, parse_values(spec)
    except OverrideError as e:
        raise OverrideError(f"--set {key}: {e}") from None


def expand_grid(axes: Mapping[str, Sequence[Any]]) -> list[dict]:
    """Every combination of the values of ``axes`` (key -> values), as dicts of overrides in
    the order of ``itertools.product``: the last key varies fastest. No axes: one run with
    no overrides.

    Example::

        expand_grid({"sim.dt": [1e-3, 5e-4], "contact.mu": [0.1, 0.5]})   # 4 dicts
    """
    keys = list(axes)
    for key in keys:
        split_key(key)
        if isinstance(axes[key], (str, bytes)) or not isinstance(axes[key], Sequence) or not axes[key]:
            raise OverrideError(f"{key}: expected a non-empty list of values, got {axes[key]!r}")
    return [dict(zip(keys, combo)) for combo in itertools.product(*(list(axes[k]) for k in keys))]


__all__ = ["OverrideError", "split_key", "apply_overrides", "describe_overrides", "parse_value", "parse_values",
           "parse_set", "expand_grid"]
