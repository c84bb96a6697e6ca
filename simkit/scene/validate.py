"""The typed values of a scene file and the one error they raise.

:class:`SceneError` is every problem with a scene config (or checkpoint): the file, the key
path (``cloth[0].dim_x``) and what was expected. :class:`Table` wraps one TOML table at a key
path: it refuses unknown keys (suggesting the closest valid one) and reads numbers, integers,
booleans, strings, names, vectors, quaternions, points, index arrays and sub-tables, each
checked and raising a SceneError that names the key. Which keys each table of the scene
format takes is :mod:`simkit.scene.schema`'s business, not this module's.

Example::

    t = Table({"dt": 0.01}, "sim", "scene.toml", ("dt", "frames"))
    t.number("dt", low=0.0, low_open=True)     # 0.01
    t.integer("frames")                         # SceneError: scene.toml: sim.frames: missing; ...
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from typing import Any, Iterable

import numpy as np

REQUIRED: Any = object()
IDENTITY_QUAT = (0.0, 0.0, 0.0, 1.0)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class SceneError(ValueError):
    """A scene config that cannot be used. ``file`` is the config (or checkpoint) it is about,
    ``key`` the key path of the problem (``"cloth[0].dim_x"``; empty for the file as a whole)
    and ``message`` what was expected; ``str(error)`` is ``"file: key: message"``.

    Example::

        try:
            load_scene("scenes/flag.toml")
        except SceneError as e:
            print(e.file, e.key, e.message)
    """

    def __init__(self, file: str | os.PathLike, key: str, message: str):
        self.file = os.fspath(file)
        self.key = key
        self.message = message
        super().__init__(f"{self.file}: {key}: {message}" if key else f"{self.file}: {message}")


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def describe(value: Any) -> str:
    """``value`` as an error message shows it: a short rendering and its TOML kind.

    Example::

        describe(0.5)       # '0.5 (a number)'
    """
    if isinstance(value, dict):
        return "a table"
    text = json.dumps(value) if isinstance(value, (str, bool)) else repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({_kind_of(value)})"


def _bounds(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high:g}"
    return ""


def is_number(value: Any) -> bool:
    """Whether ``value`` is a TOML number (an integer or a float, not a boolean).

    Example::

        is_number(1), is_number(0.5), is_number(True)     # True, True, False
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Table:
    """One TOML table of a scene at key path ``path``: refuses keys not in ``allowed`` at once,
    and reads typed values whose errors name the key path. The scene format's ``allowed``
    tuples (``SIM_KEYS``, ``CLOTH_KEYS``, ...) are in :mod:`simkit.scene.schema`.

    Example::

        sim = Table(data["sim"], "sim", "scene.toml", SIM_KEYS)
        dt = sim.number("dt", low=0.0, low_open=True)
    """

    def __init__(self, data: Any, path: str, file: str, allowed: Iterable[str], what: str = "a table"):
        self.path, self.file = path, file
        if not isinstance(data, dict):
            raise SceneError(file, path, f"expected {what}, got {describe(data)}")
        self.data = data
        allowed = tuple(allowed)
        for key in data:
            if key not in allowed:
                raise self.unknown(key, allowed)

    def key(self, name: str) -> str:
        """The key path of ``name`` in this table.

        Example::

            Table({}, "cloth[0]", "f.toml", CLOTH_KEYS).key("dim_x")    # 'cloth[0].dim_x'
        """
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str, message: str) -> SceneError:
        """A SceneError about key ``name`` of this table (``""``: the table itself).

        Example::

            raise t.error("pairs", "expected at least one pair")
        """
        return SceneError(self.file, self.key(name) if name else self.path, message)

    def unknown(self, key: str, allowed: tuple, why: str = "unknown key") -> SceneError:
        """The error for a key this table does not take, with the closest valid key.

        Example::

            raise t.unknown("dimx", CLOTH_KEYS)     # ... did you mean 'dim_x'? ...
        """
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return self.error(key, f"{why}; {hint}valid keys here: {', '.join(allowed)}")

    def has(self, name: str) -> bool:
        """Whether the table holds ``name``.

        Example::

            t.has("pairs")
        """
        return name in self.data

    def _get(self, name: str, default: Any, expected: str) -> Any:
        if name in self.data:
            return self.data[name]
        if default is REQUIRED:
            raise self.error(name, f"missing; expected {expected}")
        return default

    def number(self, name: str, default: Any = REQUIRED, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False) -> float:
        """A finite number (integers accepted) within the given bounds.

        Example::

            dt = t.number("dt", low=0.0, low_open=True)      # > 0, required
        """
        expected = "a number" + _bounds(low, high, low_open, high_open)
        value = self._get(name, default, expected)
        if name not in self.data:
            return value
        if not is_number(value) or not math.isfinite(value):
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        if (low is not None and (value < low or (low_open and value == low))) or \
                (high is not None and (value > high or (high_open and value == high))):
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        return float(value)

    def integer(self, name: str, default: Any = REQUIRED, *, low: int | None = None) -> int:
        """An integer ``>= low``.

        Example::

            substeps = t.integer("substeps", 1, low=1)
        """
        expected = "an integer" + _bounds(low, None, False, False)
        value = self._get(name, default, expected)
        if name not in self.data:
            return value
        if not isinstance(value, int) or isinstance(value, bool) or (low is not None and value < low):
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        return value

    def boolean(self, name: str, default: Any = REQUIRED) -> bool:
        """true or false.

        Example::

            ground = t.boolean("ground", True)
        """
        value = self._get(name, default, "true or false")
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {describe(value)}")
        return value

    def string(self, name: str, default: Any = REQUIRED) -> str:
        """A non-empty string.

        Example::

            usd = t.string("usd", "scene.usd")
        """
        value = self._get(name, default, "a string")
        if name not in self.data:
            return value
        if not isinstance(value, str) or not value:
            raise self.error(name, f"expected a non-empty string, got {describe(value)}")
        return value

    def choice(self, name: str, options: Iterable[str], default: Any = REQUIRED) -> str:
        """One of the strings ``options``.

        Example::

            kind = t.choice("kind", ("sphere", "box", "capsule"))
        """
        options = tuple(options)
        expected = "one of " + ", ".join(json.dumps(o) for o in options)
        value = self._get(name, default, expected)
        if value not in options or not isinstance(value, str):
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        return value

    def name(self, name: str = "name") -> str:
        """A name: letters, digits, ``_`` and ``-``, starting with a letter or ``_``.

        Example::

            name = t.name()
        """
        expected = "a name of letters, digits, '_' and '-' (starting with a letter or '_')"
        value = self._get(name, REQUIRED, expected)
        if not isinstance(value, str) or not _NAME.match(value):
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        return value

    def vector(self, name: str, length: int, default: Any = REQUIRED, *, nonzero: bool = False) -> tuple:
        """An array of ``length`` finite numbers (not all zero when ``nonzero``).

        Example::

            axis = t.vector("axis", 3, (0.0, 0.0, 1.0), nonzero=True)
        """
        expected = f"an array of {length} numbers" + (", not all zero" if nonzero else "")
        value = self._get(name, default, expected)
        if name not in self.data:
            return tuple(float(v) for v in value)
        if not isinstance(value, list) or len(value) != length or \
                not all(is_number(v) and math.isfinite(v) for v in value):
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        if nonzero and not any(value):
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        return tuple(float(v) for v in value)

    def quat(self, name: str = "rot") -> tuple:
        """A rotation quaternion ``[x, y, z, w]`` (normalized here), identity by default.

        Example::

            rot = t.quat()
        """
        q = self.vector(name, 4, IDENTITY_QUAT, nonzero=True)
        norm = math.sqrt(sum(v * v for v in q))
        return tuple(v / norm for v in q)

    def points(self, name: str) -> np.ndarray:
        """A non-empty array of ``[x, y, z]`` points, as an ``N x 3`` float64 array.

        Example::

            positions = t.points("positions")
        """
        expected = "a non-empty array of [x, y, z] points"
        value = self._get(name, REQUIRED, expected)
        if not isinstance(value, list) or not value:
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        for i, p in enumerate(value):
            if not isinstance(p, list) or len(p) != 3 or not all(is_number(v) and math.isfinite(v) for v in p):
                raise self.error(f"{name}[{i}]", f"expected a point [x, y, z] of 3 numbers, got {describe(p)}")
        return np.array(value, dtype=np.float64)

    def grid(self, name: str) -> np.ndarray:
        """A rectangular array of numbers, at least 2 x 2 (rows of equal length), as a float64
        array.

        Example::

            heights = t.grid("heights")      # [[0, 0.1], [0.2, 0.1]] -> shape (2, 2)
        """
        expected = "an array of at least 2 rows of at least 2 numbers each, all rows as long"
        value = self._get(name, REQUIRED, expected)
        if not isinstance(value, list) or len(value) < 2:
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        for i, row in enumerate(value):
            if (not isinstance(row, list) or len(row) < 2 or len(row) != len(value[0])
                    or not all(is_number(v) and math.isfinite(v) for v in row)):
                raise self.error(f"{name}[{i}]", "expected a row of at least 2 finite numbers, as long as the "
                                                 f"first row, got {describe(row)}")
        return np.array(value, dtype=np.float64)

    def indices(self, name: str, count: int, width: int, default: Any = REQUIRED) -> list:
        """An array of indices into ``count`` items (``width`` 1), or of ``width``-tuples of
        distinct indices.

        Example::

            pairs = t.indices("pairs", particle_count, 2)
        """
        item = "an index" if width == 1 else f"an array of {width} different indices"
        expected = f"an array whose entries are each {item} in 0..{count - 1}"
        value = self._get(name, default, expected)
        if name not in self.data:
            return list(value)
        if not isinstance(value, list):
            raise self.error(name, f"expected {expected}, got {describe(value)}")
        out = []
        for i, entry in enumerate(value):
            parts = [entry] if width == 1 else entry
            ok = isinstance(parts, list) and len(parts) == width and all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v < count for v in parts)
            if not ok or len(set(parts)) != width:
                raise self.error(f"{name}[{i}]", f"expected {item} in 0..{count - 1}, got {describe(entry)}")
            out.append(entry if width == 1 else tuple(parts))
        return out

    def table(self, name: str, allowed: Iterable[str], required: bool = False) -> Table | None:
        """The sub-table ``name`` (None when absent and not ``required``).

        Example::

            muscle = t.table("muscle", MUSCLE_KEYS)
        """
        if name not in self.data:
            if required:
                raise self.error(name, "missing; expected a table")
            return None
        return Table(self.data[name], self.key(name), self.file, allowed)

    def tables(self, name: str) -> list[Any]:
        """The raw entries of the array of tables ``name`` (empty when absent); each is
        checked when it is wrapped in a :class:`Table`.

        Example::

            for i, entry in enumerate(root.tables("cloth")): ...
        """
        value = self.data.get(name, [])
        if not isinstance(value, list):
            raise self.error(name, f"expected an array of tables ([[{name}]]), got {describe(value)}")
        return value
