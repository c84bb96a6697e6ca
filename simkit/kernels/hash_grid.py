"""A spatial hash grid: points binned into cubic cells, for neighbour queries in kernels.

Space is cut into cells of side ``cell_size``; cell ``(cx, cy, cz)`` has the 32-bit
hash ``h = cx * P0 + cy * P1 + cz * P2 (mod 2^32)`` and is stored in bucket
``h * num_buckets / 2^32`` of a fixed table, so the grid needs no bounding box and
works for points anywhere. A build is a counting
sort of the points by bucket: count with atomics, a prefix sum over the bucket
counts (hierarchical, in blocks of 32), a scatter, and a last pass that orders each
bucket by point index (atomics hand out slots in thread order; the ordering pass
makes the result, and every sum taken over it, identical from run to run).

Every pass is a kernel, so the build runs wherever the points live and nothing is
copied to the host. The buffers are allocated on the first build and reused;
a rebuild allocates only when the point count grows past the capacity. The loops
over one bucket (the ordering pass, the queries) run as many times as the bucket
holds points; under a Tape their adjoint replay allows sk.config.max_loop_iterations
of them (cuda_max_loop_iterations on GPUs), far above what particles of similar
radii ever pack into one cell.

Groups (the worlds of a model): ``build(points, cell_size, groups=g)`` puts each point in
a group, -1 (shared) or ``0 .. G - 1``, and hashes a cell of group ``g`` to
``hash(c) + (g + 1) * PG``, so groups that overlap in space fill different buckets and a
query does not wade through the points of other groups. A point of group ``g >= 0``
meets its own group and group -1 (searched only when it holds points); a point of group
-1 meets every group, so its search visits ``G + 1`` groups. Without groups every point
is in group -1 and the hashes are the plain ones.

Finding the neighbours of ``x`` (of group ``g``; -1 meets every group) closer than
``cell_size``: for each group to search, visit the 27 cells around ``grid_cell(grid, x)``;
in each cell's bucket keep the slots that carry that cell's hash (a bucket may hold other
cells too) and whose point is of the searched group (a cell of another group may share the
hash, and must not make a point count twice)::

    c = grid_cell(grid, x)
    for t in range(grid_group_searches(grid, g)):
        searched = grid_searched_group(g, t)
        key = grid_group_key(searched)
        for n in range(27):
            h = grid_hash(grid_neighbor_cell(c, n)) + key
            b = grid_bucket(grid, h)
            for k in range(grid.cell_start[b], grid.cell_start[b + 1]):
                j = grid.sorted_index[k]
                if grid.cell_hash[k] == h and grid_point_group(grid, j) == searched:
                    ...   # test the distance to points[j]

The 27 cells around any cell of one group have distinct 32-bit hashes, so no point is
visited twice; a far cell that shares the hash of a neighbouring one only contributes
points that fail the distance test, and a point is only taken in the search of its group.

Example::

    grid = HashGrid(dtype=sk.float32)
    grid.build(points, cell_size=0.1)
    offsets, neighbors = grid.query(points, radius=0.1)
    neighbors[offsets[i]:offsets[i + 1]]     # the points within 0.1 of points[i]
"""

# No ``from __future__ import annotations``: kernel annotations name closure types.
import functools
import math
from types import SimpleNamespace

import numpy as np

import simkit as sk
from simkit.core import device as D

# Large odd primes (Teschner et al. 2003). The hash is linear in wrapping uint32
# arithmetic, hash(c + d) = hash(c) + hash(d), and no offset d in {-2..2}^3 other than 0
# hashes to 0 (tests check this), so the 27 cells around any cell hash differently.
_PRIME_X, _PRIME_Y, _PRIME_Z = 73856093, 19349663, 83492791

# Spreads the groups over the hash space: a cell of group g hashes to hash(c) + (g + 1) * this.
_PRIME_GROUP = 50331653

# Cell coordinates are clamped to this range before the float -> int conversion, so a far
# away (or non-finite) point lands in a valid cell instead of overflowing int32.
_CELL_COORD_LIMIT = 1.0e9

# The prefix sum over the bucket counts is hierarchical, in blocks of this many entries, so
# that no build kernel loops longer than that: the Tape replays the build's adjoint too,
# and the replay stack of a dynamic loop is sk.config.cuda_max_loop_iterations (64) deep
# on GPUs.
_SCAN_BLOCK = 32

# Table size: a power of two about twice the point count, within these bounds.
_MIN_BUCKETS, _MAX_BUCKETS = 64, 1 << 22


@sk.func
def grid_cell(grid, p):
    """Integer coordinates of the cell of ``grid`` that holds point ``p``."""
    s = grid.inv_cell_size
    return sk.vec3i(sk.int32(sk.floor(sk.clamp(p[0] * s, -_CELL_COORD_LIMIT, _CELL_COORD_LIMIT))),
                    sk.int32(sk.floor(sk.clamp(p[1] * s, -_CELL_COORD_LIMIT, _CELL_COORD_LIMIT))),
                    sk.int32(sk.floor(sk.clamp(p[2] * s, -_CELL_COORD_LIMIT, _CELL_COORD_LIMIT))))


@sk.func
def grid_hash(c):
    """The 32-bit hash of cell ``c`` (wrapping uint32 arithmetic)."""
    return sk.uint32(c[0]) * _PRIME_X + sk.uint32(c[1]) * _PRIME_Y + sk.uint32(c[2]) * _PRIME_Z


@sk.func
def grid_bucket(grid, h):
    """The bucket of ``grid`` that stores the cells of hash ``h`` (in ``0 .. num_buckets - 1``)."""
    # the high bits of the hash scaled onto the table, h * num_buckets / 2^32: no division
    return sk.int32((sk.int64(h) * sk.int64(grid.num_buckets)) // 4294967296)


@sk.func
def grid_neighbor_cell(c, n):
    """The ``n``-th (0 to 26) of the 27 cells around cell ``c``, ``c`` itself included (n = 13)."""
    return c + sk.vec3i(n % 3 - 1, (n // 3) % 3 - 1, n // 9 - 1)


@sk.func
def grid_point_group(grid, i):
    """The group of point ``i`` of ``grid`` (-1 when the grid was built without groups)."""
    g = -1
    if grid.grouped != 0:
        g = grid.point_group[i]
    return g


@sk.func
def grid_group_key(g):
    """What group ``g`` adds to the hash of its cells (0 for group -1)."""
    return sk.uint32(g + 1) * _PRIME_GROUP


@sk.func
def grid_group_searches(grid, g):
    """How many groups a point of group ``g`` searches: its own and group -1 (when that holds
    points), or every group for ``g = -1``."""
    count = grid.group_count + 1
    if g >= 0:
        count = 1 + grid.shared
    return count


@sk.func
def grid_searched_group(g, t):
    """The ``t``-th group a point of group ``g`` searches: its own first, then group -1; for
    ``g = -1``, group ``t - 1``."""
    searched = t - 1
    if g >= 0:
        searched = g
        if t > 0:
            searched = -1
    return searched


@functools.cache
def grid_struct(real):
    """The kernel-side view of a :class:`HashGrid` whose points have float type ``real``."""

    @sk.struct
    class HashGridView:
        """Bucket ``b`` holds the slots ``cell_start[b]`` to ``cell_start[b + 1] - 1``; slot ``k`` is point
        ``sorted_index[k]``, whose cell has hash ``cell_hash[k]`` (ascending point index within a bucket).
        When ``grouped`` is 1, ``point_group[i]`` is the group of point ``i`` (-1 to ``group_count - 1``)
        and ``shared`` is 1 when group -1 holds points."""
        cell_start: sk.array(dtype=sk.int32)
        sorted_index: sk.array(dtype=sk.int32)
        cell_hash: sk.array(dtype=sk.uint32)
        point_group: sk.array(dtype=sk.int32)
        num_buckets: sk.int32
        inv_cell_size: real
        grouped: sk.int32
        group_count: sk.int32
        shared: sk.int32

    return HashGridView


@functools.cache
def hash_grid_kernels(real) -> SimpleNamespace:
    """The build and query kernels of a hash grid over points of float type ``real``."""
    Grid = grid_struct(real)
    vec3s = sk.array(dtype=sk.vector(3, real))
    ints = sk.array(dtype=sk.int32)
    hashes = sk.array(dtype=sk.uint32)
    module = f"simkit.kernels.hash_grid.{real.__name__}"

    @sk.kernel(module=module)
    def clear(values: ints):
        values[sk.tid()] = 0

    @sk.kernel(module=module)
    def count_points(points: vec3s, grid: Grid, point_hash: hashes, rank: ints, count: ints):
        i = sk.tid()
        h = grid_hash(grid_cell(grid, points[i])) + grid_group_key(grid_point_group(grid, i))
        point_hash[i] = h
        rank[i] = sk.atomic_add(count, grid_bucket(grid, h), 1)

    @sk.kernel(module=module)
    def sum_blocks(values: ints, sums: ints):
        t = sk.tid()
        s = 0
        for k in range(t * _SCAN_BLOCK, t * _SCAN_BLOCK + _SCAN_BLOCK):
            s += values[k]
        sums[t] = s

    @sk.kernel(module=module)
    def scan_top(sums: ints, count: sk.int32, num_buckets: sk.int32, starts: ints, cell_start: ints):
        # One thread over at most _SCAN_BLOCK sums; it also writes the total past the last bucket.
        s = 0
        for t in range(count):
            starts[t] = s
            s += sums[t]
        cell_start[num_buckets] = s

    @sk.kernel(module=module)
    def spread_blocks(values: ints, block_start: ints, starts: ints):
        t = sk.tid()
        s = block_start[t]
        for k in range(t * _SCAN_BLOCK, t * _SCAN_BLOCK + _SCAN_BLOCK):
            starts[k] = s
            s += values[k]

    @sk.kernel(module=module)
    def scatter_points(point_hash: hashes, rank: ints, grid: Grid, slot_point: ints):
        i = sk.tid()
        slot_point[grid.cell_start[grid_bucket(grid, point_hash[i])] + rank[i]] = i

    @sk.kernel(module=module)
    def order_buckets(point_hash: hashes, grid: Grid, slot_point: ints, sorted_index: ints, cell_hash: hashes):
        # A point's place in its bucket is the number of bucket mates with a smaller index.
        i = sk.tid()
        h = point_hash[i]
        b = grid_bucket(grid, h)
        place = grid.cell_start[b]
        for k in range(grid.cell_start[b], grid.cell_start[b + 1]):
            if slot_point[k] < i:
                place += 1
        sorted_index[place] = i
        cell_hash[place] = h

    @sk.kernel(module=module)
    def count_neighbors(queries: vec3s, query_group: ints, points: vec3s, grid: Grid, radius: real, count: ints):
        i = sk.tid()
        x = queries[i]
        g = query_group[i]
        c = grid_cell(grid, x)
        found = 0
        for t in range(grid_group_searches(grid, g)):
            searched = grid_searched_group(g, t)
            key = grid_group_key(searched)
            for n in range(27):
                h = grid_hash(grid_neighbor_cell(c, n)) + key
                b = grid_bucket(grid, h)
                for k in range(grid.cell_start[b], grid.cell_start[b + 1]):
                    j = grid.sorted_index[k]
                    if grid.cell_hash[k] == h and grid_point_group(grid, j) == searched:
                        if sk.length(points[j] - x) < radius:
                            found += 1
        count[i] = found

    @sk.kernel(module=module)
    def list_neighbors(queries: vec3s, query_group: ints, points: vec3s, grid: Grid, radius: real, offsets: ints,
                       neighbors: ints):
        i = sk.tid()
        x = queries[i]
        g = query_group[i]
        c = grid_cell(grid, x)
        slot = offsets[i]
        for t in range(grid_group_searches(grid, g)):
            searched = grid_searched_group(g, t)
            key = grid_group_key(searched)
            for n in range(27):
                h = grid_hash(grid_neighbor_cell(c, n)) + key
                b = grid_bucket(grid, h)
                for k in range(grid.cell_start[b], grid.cell_start[b + 1]):
                    j = grid.sorted_index[k]
                    if grid.cell_hash[k] == h and grid_point_group(grid, j) == searched:
                        if sk.length(points[j] - x) < radius:
                            neighbors[slot] = j
                            slot += 1

    return SimpleNamespace(clear=clear, count_points=count_points, sum_blocks=sum_blocks, scan_top=scan_top,
                           spread_blocks=spread_blocks, scatter_points=scatter_points,
                           order_buckets=order_buckets, count_neighbors=count_neighbors,
                           list_neighbors=list_neighbors)


def _table_size(capacity: int) -> int:
    """A power of two about twice the capacity, so that few buckets hold more than one cell."""
    return min(max(_MIN_BUCKETS, 1 << math.ceil(math.log2(max(2 * capacity, 1)))), _MAX_BUCKETS)


class HashGrid:
    """Points of one float type (``sk.float32`` or ``sk.float64``) binned by cell for neighbour queries.

    ``build(points, cell_size, groups=None)`` sorts the points into cells (of their group,
    when given); kernels then read :attr:`view` (see the module docstring for the query
    loop) and Python code can call :meth:`query`. A search of the 27 surrounding cells
    finds every point closer than ``cell_size``. The grid lives on ``device`` (None: the
    default device), where the points must be.

    Example::

        grid = HashGrid(dtype=sk.float64)
        grid.build(state.particle_q, cell_size=0.2)
        sk.launch(my_kernel, n, inputs=[state.particle_q, grid.view, out])
    """

    def __init__(self, dtype=sk.float32, device: str | None = None):
        if dtype not in (sk.float32, sk.float64):
            raise TypeError(f"HashGrid: dtype must be sk.float32 or sk.float64, got {dtype!r}")
        self.dtype = dtype
        self.device = D.require(device, "HashGrid(device)")
        self.capacity = 0
        self.point_count = 0
        self.num_buckets = 0
        self.cell_size: float | None = None
        self.points = None
        self.groups = None
        self.view = None
        self._no_groups = sk.zeros(0, dtype=sk.int32, device=device)
        self._group_info: tuple | None = None

    def _allocate(self, capacity: int) -> None:
        def ints(n):
            return sk.zeros(n, dtype=sk.int32, device=self.device)

        self.capacity = capacity
        self.num_buckets = buckets = _table_size(capacity)
        self._point_hash = sk.zeros(capacity, dtype=sk.uint32, device=self.device)
        self._rank, self._slot_point = ints(capacity), ints(capacity)
        # scan level l holds the sums of _SCAN_BLOCK entries of level l - 1 (level 0: the bucket
        # counts) and their exclusive prefix sums (level 0: cell_start)
        sizes = [buckets]
        while sizes[-1] > _SCAN_BLOCK:
            sizes.append(sizes[-1] // _SCAN_BLOCK)
        self._scan_sizes = sizes
        self._scan_sums = [ints(n) for n in sizes]
        self.view = grid_struct(self.dtype)(cell_start=ints(buckets + 1), sorted_index=ints(capacity),
                                            cell_hash=sk.zeros(capacity, dtype=sk.uint32, device=self.device),
                                            point_group=self._no_groups, num_buckets=buckets, inv_cell_size=1.0,
                                            grouped=0, group_count=0, shared=0)
        self._scan_starts = [self.view.cell_start] + [ints(n) for n in sizes[1:]]

    def _groups_of(self, groups, n: int) -> tuple[int, int]:
        """(group count, 1 if group -1 holds points) of a valid ``groups`` array, recomputed
        only when ``groups`` is another array or was written since (its version changed)."""
        if not isinstance(groups, sk.Array) or groups.dtype is not sk.int32 or groups.ndim != 1 \
                or groups.shape[0] != n:
            raise TypeError(f"HashGrid.build: groups must be a 1-d sk int32 array with one entry per point ({n})")
        if groups.device != self.device:
            raise ValueError(f"HashGrid.build: groups are on {groups.device}, the grid on {self.device}")
        info = self._group_info
        if info is None or info[0] is not groups or info[1] != groups._version:
            g = groups.numpy()
            if g.size and g.min() < -1:
                raise ValueError(f"HashGrid.build: groups must be >= -1, got {int(g.min())}")
            count = int(g.max()) + 1 if g.size else 0
            info = self._group_info = (groups, groups._version, max(count, 0), int(bool((g < 0).any())))
        return info[2], info[3]

    def build(self, points, cell_size: float, groups=None) -> None:
        """Sort ``points`` (a 1-d array of 3-vectors of the grid's dtype) into cells of side ``cell_size``.

        ``groups`` (a 1-d int32 array, one per point, -1 or ``0 .. G - 1``) puts the points in
        groups that only meet themselves and group -1 (see the module docstring); the worlds
        of a model are such groups. The grid keeps a reference to ``points`` (and ``groups``)
        for :meth:`query`; rebuild after they move.

        Example::

            grid.build(state.particle_q, cell_size=2.0 * max_radius)
            grid.build(state.particle_q, 2.0 * max_radius, groups=model.particle_world)
        """
        vec3 = sk.vector(3, self.dtype)
        if not isinstance(points, sk.Array) or points.dtype is not vec3 or points.ndim != 1:
            got = f"array of {points.dtype!r} with ndim={points.ndim}" if isinstance(points, sk.Array) \
                else type(points).__name__
            raise TypeError(f"HashGrid.build: points must be a 1-d sk array of {vec3!r}, got {got}")
        if points.device != self.device:
            raise ValueError(f"HashGrid.build: points are on {points.device}, the grid on {self.device}")
        cell_size = float(cell_size)
        if not math.isfinite(cell_size) or cell_size <= 0.0:
            raise ValueError(f"HashGrid.build: cell_size must be a finite number > 0, got {cell_size!r}")
        n = points.shape[0]
        group_count, shared = self._groups_of(groups, n) if groups is not None else (0, 0)
        if self.view is None or n > self.capacity:
            self._allocate(max(n, 1))
        self.points, self.point_count, self.cell_size, self.groups = points, n, cell_size, groups
        view = self.view
        view.inv_cell_size = 1.0 / cell_size
        view.point_group = self._no_groups if groups is None else groups
        view.grouped, view.group_count, view.shared = int(groups is not None), group_count, shared
        k = hash_grid_kernels(self.dtype)
        sizes, sums, starts = self._scan_sizes, self._scan_sums, self._scan_starts
        sk.launch(k.clear, self.num_buckets, inputs=[sums[0]])
        sk.launch(k.count_points, n, inputs=[points, view, self._point_hash, self._rank, sums[0]])
        for level in range(1, len(sizes)):
            sk.launch(k.sum_blocks, sizes[level], inputs=[sums[level - 1], sums[level]])
        top = len(sizes) - 1
        sk.launch(k.scan_top, 1, inputs=[sums[top], sizes[top], self.num_buckets, starts[top], view.cell_start])
        for level in range(top, 0, -1):
            sk.launch(k.spread_blocks, sizes[level], inputs=[sums[level - 1], starts[level], starts[level - 1]])
        sk.launch(k.scatter_points, n, inputs=[self._point_hash, self._rank, view, self._slot_point])
        sk.launch(k.order_buckets, n, inputs=[self._point_hash, view, self._slot_point, view.sorted_index,
                                              view.cell_hash])

    def query(self, queries, radius: float, groups=None) -> tuple[np.ndarray, np.ndarray]:
        """For each query point, the indices of the grid's points closer than ``radius``
        (``radius <= cell_size``), as compressed rows: the neighbours of query ``i`` are
        ``neighbors[offsets[i]:offsets[i + 1]]``, in no particular order. Querying the built
        points themselves lists each point among its own neighbours. ``groups`` (int32, one
        per query) gives each query a group, whose points it meets with those of group -1;
        without it (or with -1) a query meets every group.

        Example::

            offsets, neighbors = grid.query(points, radius=0.1)
            offsets, neighbors = grid.query(points, radius=0.1, groups=model.particle_world)
        """
        if self.points is None:
            raise RuntimeError("HashGrid.query: build the grid first")
        radius = float(radius)
        if not 0.0 <= radius <= self.cell_size:
            raise ValueError(f"HashGrid.query: radius must be in [0, cell_size={self.cell_size}], got {radius!r}; "
                             "the 27-cell search misses points farther than one cell")
        vec3 = sk.vector(3, self.dtype)
        if not isinstance(queries, sk.Array) or queries.dtype is not vec3 or queries.ndim != 1:
            raise TypeError(f"HashGrid.query: queries must be a 1-d sk array of {vec3!r}")
        k = hash_grid_kernels(self.dtype)
        m = queries.shape[0]
        if groups is None:
            groups = sk.full(m, -1, dtype=sk.int32, device=self.device)
        elif not isinstance(groups, sk.Array) or groups.dtype is not sk.int32 or groups.shape != (m,) \
                or groups.device != self.device:
            raise TypeError(f"HashGrid.query: groups must be a 1-d sk int32 array on {self.device} with one entry "
                            f"per query ({m})")
        count = sk.zeros(m, dtype=sk.int32, device=self.device)
        sk.launch(k.count_neighbors, m, inputs=[queries, groups, self.points, self.view, radius, count])
        offsets = np.zeros(m + 1, dtype=np.int32)
        np.cumsum(count.numpy(), out=offsets[1:])
        neighbors = sk.zeros(int(offsets[-1]), dtype=sk.int32, device=self.device)
        sk.launch(k.list_neighbors, m, inputs=[queries, groups, self.points, self.view, radius,
                                               sk.array(offsets, dtype=sk.int32, device=self.device), neighbors])
        return offsets, neighbors.numpy().copy()
