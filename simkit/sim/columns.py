"""Column: one per-element attribute of a :class:`~simkit.sim.ModelBuilder` (particle positions,
spring stiffnesses, triangle indices, ...), grown one row at a time or a whole block at a time.

A row added with :meth:`Column.append` (what ``add_particle`` and the other per-element
methods do) is kept as it is, in a list; a block added with :meth:`Column.extend` (what
the grids, meshes and ``add_builder`` do) is kept as one numpy array, so a million-particle
grid costs its array bytes, not a Python object per particle; a block of one value repeated
(a grid's stiffness) is a read-only broadcast of that value, which costs nothing until it is
written to. :meth:`Column.array` joins the blocks (once; later calls return the joined array).

Example::

    c = Column((3,))
    c.append(np.array([0.0, 1.0, 0.0]))
    c.extend(np.zeros((1000, 3)))
    len(c), c[0], c.array().shape          # 1001, array([0., 1., 0.]), (1001, 3)
"""

from __future__ import annotations

import bisect
from typing import Any, Iterator

import numpy as np


class Column:
    """Rows of shape ``shape`` and type ``dtype``, in the order they were added."""

    def __init__(self, shape: tuple = (), dtype: Any = np.float64):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self._blocks: list = []   # numpy arrays, (rows,) + shape
        self._ends: list = []     # the row count after each block
        self._rows: list = []     # rows appended one at a time after the last block

    def __len__(self) -> int:
        return self._sealed() + len(self._rows)

    def _sealed(self) -> int:
        return self._ends[-1] if self._ends else 0

    def append(self, row: Any) -> None:
        """Add one row (kept as given until the column is next joined)."""
        self._rows.append(row)

    def extend(self, block: Any, copy: bool = True) -> None:
        """Add the rows of ``block`` (an array of shape ``(n,) + shape``), copied unless
        ``copy=False`` (the caller hands over an array nothing else writes to). A read-only
        array of the column's type (a broadcast value) is kept as it is."""
        block = np.asarray(block)
        if block.dtype != self.dtype or (copy and block.flags.writeable):
            block = np.array(block, dtype=self.dtype)
        block = block.reshape((-1,) + self.shape)
        self._seal()
        if len(block):
            self._blocks.append(block)
            self._ends.append(self._sealed() + len(block))

    def _seal(self) -> None:
        """Turn the rows appended one at a time into a block."""
        if self._rows:
            rows, self._rows = self._rows, []
            self.extend(np.asarray(rows, dtype=self.dtype), copy=False)

    def values(self) -> np.ndarray:
        """Every row as one array of shape ``(len(self),) + shape``, to read: it may be
        read-only (a broadcast value)."""
        self._seal()
        if len(self._blocks) != 1:
            joined = np.concatenate(self._blocks) if self._blocks else np.zeros((0,) + self.shape, self.dtype)
            self._blocks, self._ends = [joined], [len(joined)]
        return self._blocks[0]

    def array(self) -> np.ndarray:
        """Every row as one array of shape ``(len(self),) + shape``: the column's own storage,
        so writing into it writes the column."""
        self.values()
        return self._writeable(0)

    def _writeable(self, b: int) -> np.ndarray:
        """Block ``b``, made a writeable array of its own if it was a broadcast value."""
        if not self._blocks[b].flags.writeable:
            self._blocks[b] = self._blocks[b].copy()
        return self._blocks[b]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # a copy, as np.asarray of a list of rows was: writing into it leaves the column alone
        return np.array(self.values(), dtype=dtype)

    def _locate(self, i: Any, write: bool = False) -> tuple[list | np.ndarray, int]:
        """The storage holding row ``i`` (writeable if ``write``) and its index there."""
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"Column indices must be ints, got {type(i).__name__}")
        n, sealed = len(self), self._sealed()
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"row {i} is out of range (the column has {n} rows)")
        if i >= sealed:
            return self._rows, i - sealed
        b = bisect.bisect_right(self._ends, i)
        return self._writeable(b) if write else self._blocks[b], i - (self._ends[b - 1] if b else 0)

    def __getitem__(self, i: int) -> Any:
        # a row of several numbers is a view that may be written into, as the rows of a list were
        store, k = self._locate(i, write=bool(self.shape))
        return store[k]

    def __setitem__(self, i: int, value: Any) -> None:
        store, k = self._locate(i, write=True)
        store[k] = value

    def __iter__(self) -> Iterator:
        return iter(self.array())

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` rows (undoing what was added after them)."""
        if n >= len(self):
            return
        self._seal()
        keep = bisect.bisect_left(self._ends, n)
        start = self._ends[keep - 1] if keep else 0
        self._blocks, self._ends = self._blocks[:keep + 1], self._ends[:keep + 1]
        if n > start:
            self._blocks[keep] = self._blocks[keep][:n - start].copy()
            self._ends[keep] = n
        else:
            del self._blocks[keep:], self._ends[keep:]

    def __repr__(self) -> str:
        return f"Column(rows={len(self)}, shape={self.shape}, dtype={self.dtype})"
