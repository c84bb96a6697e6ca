"""The heightfield shape (``SHAPE_HFIELD``) for :mod:`simkit.kernels.shapes`: a static terrain,
heights over a regular grid on its local x-z plane, facing its local +y (docs/geometry.md).

Shape ``s`` has ``params = (hx, hz, reach)``: the grid spans ``[-hx, hx] x [-hz, hz]``, and
``reach`` is the radius of a sphere about its origin holding every vertex. Row ``s`` of
``Shapes.hfield`` is (first height, nx, nz): vertex ``(i, j)`` sits at ``x = -hx + 2 hx i /
(nx - 1)``, ``z = -hz + 2 hz j / (nz - 1)``, height ``y = hfield_heights[first + i * nz + j]``.
Each cell is two triangles split along its diagonal from vertex ``(i, j + 1)`` to ``(i + 1,
j)``, as MuJoCo splits an imported ``hfield``: the surface is the piecewise-linear
interpolation of the heights.

Signed distance of a point ``p``: the distance to the nearest point of the triangles of the
3 x 3 cells around the cell under ``p`` (clamped to the grid), negative where ``p`` is below
the surface within the grid's footprint. Only the surface pushes: the terrain has no sides or
bottom (a point beside the grid is outside, however low). A point deeper below the surface
than a cell's width may find a nearer point of the surface than the one its 3 x 3 cells hold;
it is still pushed up and out. The search for the nearest triangle carries no gradient (an
index); the distance to that triangle does, in ``p`` and in the triangle's three heights.

Example::

    dist, n = hfield_distance(shapes, s, p_local)
"""

from typing import Any

import simkit as sk
from .closest_point import closest_point_on_triangle

AnyArray = sk.array(dtype=Any)  # an array of any element type: each overload fixes it
ints2d = sk.array(dtype=sk.int32, ndim=2)


@sk.func
def hfield_vertex(heights: AnyArray, rows: ints2d, size: Any, s: int, i: int, j: int):
    """Vertex ``(i, j)`` of heightfield ``s`` in its frame."""
    nx = rows[s, 1]
    nz = rows[s, 2]
    v = size * 0.0
    v[0] = size[0] * (type(size[0])(2 * i) / type(size[0])(nx - 1) - 1.0)
    v[1] = heights[rows[s, 0] + i * nz + j]
    v[2] = size[1] * (type(size[0])(2 * j) / type(size[0])(nz - 1) - 1.0)
    return v


@sk.func
def hfield_triangle(heights: AnyArray, rows: ints2d, size: Any, s: int, t: int):
    """The corners of triangle ``t`` (cell ``t // 2``, half ``t % 2``), counterclockwise seen
    from above: half 0 is (i, j), (i, j + 1), (i + 1, j); half 1 (i, j + 1), (i + 1, j + 1),
    (i + 1, j)."""
    nz = rows[s, 2]
    cell = t // 2
    i = cell // (nz - 1)
    j = cell % (nz - 1)
    a = hfield_vertex(heights, rows, size, s, i, j)
    b = hfield_vertex(heights, rows, size, s, i, j + 1)
    c = hfield_vertex(heights, rows, size, s, i + 1, j)
    if t % 2 == 1:
        a = b
        b = hfield_vertex(heights, rows, size, s, i + 1, j + 1)
    return a, b, c


@sk.func
def hfield_cell(heights: AnyArray, rows: ints2d, size: Any, s: int, p: Any):
    """The cell ``(i, j)`` under ``p`` (clamped to the grid) and its fractions ``(u, w)`` along
    x and z (not clamped)."""
    nx = rows[s, 1]
    nz = rows[s, 2]
    u = (p[0] + size[0]) / (size[0] * 2.0) * type(p[0])(nx - 1)
    w = (p[2] + size[1]) / (size[1] * 2.0) * type(p[0])(nz - 1)
    # clamped before the cast, so that a point far off (or not finite) gives an edge cell
    i = sk.int32(sk.floor(sk.clamp(u, p[0] * 0.0, type(p[0])(nx - 2))))
    j = sk.int32(sk.floor(sk.clamp(w, p[0] * 0.0, type(p[0])(nz - 2))))
    return i, j, u - type(p[0])(i), w - type(p[0])(j)


@sk.func
def hfield_nearest(heights: AnyArray, rows: ints2d, size: Any, s: int, p: Any) -> int:
    """The triangle of the 3 x 3 cells around ``p``'s cell nearest to ``p``."""
    nx = rows[s, 1]
    nz = rows[s, 2]
    i, j, u, w = hfield_cell(heights, rows, size, s, p)
    best = 0
    best_d2 = p[0] * 0.0 - 1.0
    for di in range(3):
        for dj in range(3):
            ci = i + di - 1
            cj = j + dj - 1
            if ci >= 0 and ci < nx - 1 and cj >= 0 and cj < nz - 1:
                for half in range(2):
                    t = (ci * (nz - 1) + cj) * 2 + half
                    a, b, c = hfield_triangle(heights, rows, size, s, t)
                    d = p - closest_point_on_triangle(p, a, b, c)
                    d2 = sk.dot(d, d)
                    if best_d2 < 0.0 or d2 < best_d2:
                        best = t
                        best_d2 = d2
    return best


@sk.func_grad(hfield_nearest)
def hfield_nearest_grad(heights: AnyArray, rows: ints2d, size: Any, s: int, p: Any, adj_ret: int):
    # an index has no derivative: the triangle it picks carries the gradient
    return size * 0.0, 0, p * 0.0


@sk.func
def hfield_below(heights: AnyArray, rows: ints2d, size: Any, s: int, p: Any) -> int:
    """1 where ``p`` is within the grid's footprint and below its surface, else 0."""
    below = 0
    if sk.abs(p[0]) <= size[0] and sk.abs(p[2]) <= size[1]:
        i, j, u, w = hfield_cell(heights, rows, size, s, p)
        h01 = hfield_vertex(heights, rows, size, s, i, j + 1)[1]
        h10 = hfield_vertex(heights, rows, size, s, i + 1, j)[1]
        # the plane of the triangle holding (u, w): half 0 where u + w <= 1
        h = h01
        if u + w <= 1.0:
            h00 = hfield_vertex(heights, rows, size, s, i, j)[1]
            h = h00 + u * (h10 - h00) + w * (h01 - h00)
        else:
            h11 = hfield_vertex(heights, rows, size, s, i + 1, j + 1)[1]
            h = h11 + (1.0 - u) * (h01 - h11) + (1.0 - w) * (h10 - h11)
        if p[1] < h:
            below = 1
    return below


@sk.func_grad(hfield_below)
def hfield_below_grad(heights: AnyArray, rows: ints2d, size: Any, s: int, p: Any, adj_ret: int):
    return size * 0.0, 0, p * 0.0


@sk.func
def hfield_distance(shapes: Any, s: int, p: Any):
    """Signed distance of ``p`` (in shape ``s``'s frame) to heightfield ``s`` and the outward
    normal there (shape frame; the triangle's upward normal where ``p`` is on the surface)."""
    heights = shapes.hfield_heights
    rows = shapes.hfield
    size = shapes.params[s]
    t = hfield_nearest(heights, rows, size, s, p)
    a, b, c = hfield_triangle(heights, rows, size, s, t)
    d = p - closest_point_on_triangle(p, a, b, c)
    sign = p[0] * 0.0 + 1.0
    if hfield_below(heights, rows, size, s, p) == 1:
        sign = -sign
    r = sk.length(d)
    n = sk.normalize(sk.cross(b - a, c - a))
    dist = r * 0.0
    if r > 0.0:
        dist = sign * r
        n = d * (sign / r)
    return dist, n
