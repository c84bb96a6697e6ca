"""A software rasterizer in numpy: draws the viewer's drawables without OpenGL, for machines
with no display and no EGL. Triangles are z-buffered with per-vertex (Gouraud) shading by the
viewer's light, points are shaded spheres, lines are unlit; 2 x 2 supersampling smooths the
edges. Slower than OpenGL, but it needs nothing but numpy, so it always works.

Every primitive becomes fragments (a pixel, a depth, a color), generated for many primitives
at once over their bounding boxes; the nearest fragment of each pixel wins.

Example::

    from simkit.render.software import rasterize
    image = rasterize(ModelDrawables(model).frame(state), camera, 320, 240)   # (240, 320, 3) uint8
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .camera import Camera
from .drawables import BACKGROUND, LIGHT_VIEW, Drawable

SUPERSAMPLE = 2
# Fragments generated at once (bounding-box pixels): bounds the memory of one batch.
_BATCH_PIXELS = 1 << 20


def _shade(base: np.ndarray, n: np.ndarray, to_eye: np.ndarray, to_light: np.ndarray) -> np.ndarray:
    """The viewer's Blinn-Phong shading (the same terms as its GLSL); rows of unit vectors."""
    diffuse = np.maximum((n * to_light).sum(-1), 0.0)
    facing = np.maximum((n * to_eye).sum(-1), 0.0)
    half = to_light + to_eye
    half /= np.maximum(np.linalg.norm(half, axis=-1, keepdims=True), 1e-12)
    specular = np.maximum((n * half).sum(-1), 0.0) ** 48
    return base * (0.28 + 0.62 * diffuse + 0.15 * facing)[..., None] + 0.18 * specular[..., None]


def _normalize(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


class _Target:
    """The color and depth buffers (depth: distance along the view axis, +inf when empty)
    and the camera's projection to pixels."""

    def __init__(self, camera: Camera, width: int, height: int):
        self.width, self.height = width, height
        self.color = np.empty((height, width, 3), np.float64)
        self.color[:] = BACKGROUND
        self.depth = np.full(height * width, np.inf)
        self.view = camera.view_matrix()
        self.projection = camera.projection_matrix(width / height)
        self.near = camera.near
        self.eye = camera.eye
        self.light_world = self.view[:3, :3].T @ LIGHT_VIEW

    def to_view(self, world: np.ndarray) -> np.ndarray:
        return world @ self.view[:3, :3].T + self.view[:3, 3]

    def to_screen(self, view: np.ndarray) -> np.ndarray:
        """Pixel coordinates (column, row from the top) of view-space points in front."""
        z = -view[..., 2]
        x = self.projection[0, 0] * view[..., 0] / z
        y = self.projection[1, 1] * view[..., 1] / z
        return np.stack([(x + 1.0) * 0.5 * self.width, (1.0 - y) * 0.5 * self.height], axis=-1)

    def boxes(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first pixel (column, row) and the pixel counts of the boxes ``lo``..``hi`` in
        pixel coordinates, clipped to the image: the pixels whose centers lie inside."""
        first = np.maximum(np.ceil(lo - 0.5), 0).astype(np.int64)
        last = np.minimum(np.floor(hi - 0.5), [self.width - 1, self.height - 1]).astype(np.int64)
        return first, np.maximum(last - first + 1, 0)

    def merge(self, pixel: np.ndarray, depth: np.ndarray, color: np.ndarray) -> None:
        """Keep, for every pixel, the nearest of its fragments and of what is there already."""
        if len(pixel) == 0:
            return
        order = np.lexsort((depth, pixel))
        pixel, depth, color = pixel[order], depth[order], color[order]
        first = np.ones(len(pixel), bool)
        first[1:] = pixel[1:] != pixel[:-1]
        pixel, depth, color = pixel[first], depth[first], color[first]
        nearer = depth < self.depth[pixel]
        pixel = pixel[nearer]
        self.depth[pixel] = depth[nearer]
        self.color.reshape(-1, 3)[pixel] = color[nearer]


def _fragments(first: np.ndarray, count: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every pixel of every box (``first`` column/row, ``count`` columns/rows), in batches:
    (box index, column, row) arrays. Boxes are sorted by area so that each batch pads the
    boxes to a similar size."""
    area = count[:, 0] * count[:, 1]
    order = np.argsort(area, kind="stable")
    order = order[area[order] > 0]
    start = 0
    while start < len(order):
        largest = area[order[start]]
        stop = start + 1
        while stop < len(order):
            largest = area[order[stop]]
            if largest * (stop + 1 - start) > _BATCH_PIXELS:
                break
            stop += 1
        items = order[start:stop]
        pad = int(area[items].max())
        k = np.arange(pad)
        item = np.repeat(items, pad)
        flat = np.tile(k, len(items))
        keep = flat < area[item]
        item, flat = item[keep], flat[keep]
        columns = count[item, 0]
        yield item, first[item, 0] + flat % columns, first[item, 1] + flat // columns
        start = stop


def _clip_near(view: np.ndarray, colors: np.ndarray, near: float) -> tuple[np.ndarray, np.ndarray]:
    """Cut triangles (K x 3 view-space corners, K x 3 x 3 colors) that cross the near plane:
    the part in front as one or two triangles."""
    out_v, out_c = [], []
    for tri, col in zip(view, colors):
        poly_v, poly_c = [], []
        for i in range(3):
            a, b, ca, cb = tri[i], tri[(i + 1) % 3], col[i], col[(i + 1) % 3]
            da, db = -a[2] - near, -b[2] - near
            if da >= 0.0:
                poly_v.append(a)
                poly_c.append(ca)
            if (da >= 0.0) != (db >= 0.0):
                t = da / (da - db)
                poly_v.append(a + t * (b - a))
                poly_c.append(ca + t * (cb - ca))
        for k in range(1, len(poly_v) - 1):
            out_v.append([poly_v[0], poly_v[k], poly_v[k + 1]])
            out_c.append([poly_c[0], poly_c[k], poly_c[k + 1]])
    return np.reshape(out_v, (-1, 3, 3)), np.reshape(out_c, (-1, 3, 3))


def _triangles(target: _Target, d: Drawable) -> None:
    world = d.world_positions()
    linear = d.matrix[:3, :3]
    normal_matrix = np.linalg.inv(linear).T if abs(np.linalg.det(linear)) > 1e-30 else linear
    normals = _normalize(np.asarray(d.normals, np.float64).reshape(-1, 3) @ normal_matrix.T)
    to_eye = _normalize(target.eye - world)
    normals = np.where(((normals * to_eye).sum(-1) < 0.0)[:, None], -normals, normals)     # both sides lit
    shaded = _shade(np.asarray(d.colors, np.float64).reshape(-1, 3), normals, to_eye, target.light_world)
    indices = np.asarray(d.indices, np.int64).reshape(-1, 3)
    view = target.to_view(world)[indices]
    colors = shaded[indices]
    in_front = -view[:, :, 2] > target.near
    whole = in_front.all(axis=1)
    cut = in_front.any(axis=1) & ~whole
    view, colors = view[whole], colors[whole]
    if cut.any():
        extra_v, extra_c = _clip_near(target.to_view(world)[indices[cut]], shaded[indices[cut]], target.near)
        view, colors = np.concatenate([view, extra_v]), np.concatenate([colors, extra_c])
    if len(view) == 0:
        return
    screen = target.to_screen(view)                       # K x 3 x 2
    a, b, c = screen[:, 0], screen[:, 1], screen[:, 2]
    area = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    first, count = target.boxes(screen.min(axis=1), screen.max(axis=1))
    count[np.abs(area) < 1e-12] = 0
    area = np.where(count[:, 0] > 0, area, 1.0)
    # the barycentric weight of each corner as a plane over the pixels: w = A x + B y + C,
    # from the edge opposite that corner
    edges = np.empty((len(view), 3, 3))
    for corner, (p, q) in enumerate(((b, c), (c, a), (a, b))):
        edges[:, corner] = np.stack([p[:, 1] - q[:, 1], q[:, 0] - p[:, 0], p[:, 0] * q[:, 1] - p[:, 1] * q[:, 0]],
                                    -1) / area[:, None]
    # 1/z and color/z are linear in screen space (perspective-correct interpolation): planes too
    inv_z = 1.0 / -view[:, :, 2]
    values = np.concatenate([inv_z[:, :, None], colors * inv_z[:, :, None]], axis=2)      # K x 3 x 4
    planes = np.einsum("kvm,kvj->kmj", values, edges)                                      # K x 4 x 3
    for k, col, row in _fragments(first, count):
        px, py = col + 0.5, row + 0.5
        for corner in range(3):           # drop the pixels outside each edge in turn
            e = edges[k, corner]
            inside = e[:, 0] * px + e[:, 1] * py + e[:, 2] >= 0.0
            k, col, row, px, py = k[inside], col[inside], row[inside], px[inside], py[inside]
        p = planes[k]
        v = p[:, :, 0] * px[:, None] + p[:, :, 1] * py[:, None] + p[:, :, 2]
        target.merge(row * target.width + col, 1.0 / v[:, 0], v[:, 1:] / v[:, :1])


def _points(target: _Target, d: Drawable) -> None:
    center = target.to_view(d.world_positions())
    radius = np.asarray(d.radii, np.float64).reshape(-1) * np.cbrt(abs(np.linalg.det(d.matrix[:3, :3])))
    z = -center[:, 2]
    front = z - radius > target.near
    center, radius, z = center[front], radius[front], z[front]
    base = np.asarray(d.colors, np.float64).reshape(-1, 3)[front]
    if len(center) == 0:
        return
    screen = target.to_screen(center)
    r_px = radius * target.projection[1, 1] * 0.5 * target.height / z
    first, count = target.boxes(screen - r_px[:, None], screen + r_px[:, None])
    for k, col, row in _fragments(first, count):
        dx = (col + 0.5 - screen[k, 0]) / r_px[k]
        dy = (row + 0.5 - screen[k, 1]) / r_px[k]
        r2 = dx * dx + dy * dy
        inside = r2 <= 1.0
        k, col, row, dx, dy, r2 = k[inside], col[inside], row[inside], dx[inside], dy[inside], r2[inside]
        n = np.stack([dx, -dy, np.sqrt(1.0 - r2)], -1)    # the sphere's normal, view coordinates
        surface = center[k] + radius[k, None] * n
        color = _shade(base[k], n, _normalize(-surface), LIGHT_VIEW)
        target.merge(row * target.width + col, -surface[:, 2], color)


def _lines(target: _Target, d: Drawable) -> None:
    view = target.to_view(d.world_positions())
    colors = np.asarray(d.colors, np.float64).reshape(-1, 3)
    count = len(view) // 2
    a, b = view[0:2 * count:2], view[1:2 * count:2]
    ca, cb = colors[0:2 * count:2], colors[1:2 * count:2]
    da, db = -a[:, 2] - target.near, -b[:, 2] - target.near
    keep = (da > 0.0) | (db > 0.0)
    a, b, ca, cb, da, db = a[keep], b[keep], ca[keep], cb[keep], da[keep], db[keep]
    # move an end behind the near plane onto it
    t = np.clip(da / np.where(da - db == 0.0, 1.0, da - db), 0.0, 1.0)[:, None]
    on_plane, on_plane_color = a + t * (b - a), ca + t * (cb - ca)
    a, ca = np.where(da[:, None] < 0.0, on_plane, a), np.where(da[:, None] < 0.0, on_plane_color, ca)
    b, cb = np.where(db[:, None] < 0.0, on_plane, b), np.where(db[:, None] < 0.0, on_plane_color, cb)
    if len(a) == 0:
        return
    sa, sb = target.to_screen(a), target.to_screen(b)
    steps = np.ceil(np.abs(sb - sa).max(axis=1)).astype(np.int64) + 1
    seg = np.repeat(np.arange(len(a)), steps)
    s = (np.arange(len(seg)) - np.repeat(np.cumsum(steps) - steps, steps)) / np.maximum(steps[seg] - 1, 1)
    p = sa[seg] + s[:, None] * (sb - sa)[seg]
    col, row = np.floor(p[:, 0]).astype(np.int64), np.floor(p[:, 1]).astype(np.int64)
    inside = (col >= 0) & (col < target.width) & (row >= 0) & (row < target.height)
    inv_a, inv_b = 1.0 / -a[:, 2], 1.0 / -b[:, 2]
    inv = (1.0 - s) * inv_a[seg] + s * inv_b[seg]
    color = ((1.0 - s)[:, None] * ca[seg] * inv_a[seg, None] + s[:, None] * cb[seg] * inv_b[seg, None]) / inv[:, None]
    target.merge((row * target.width + col)[inside], 1.0 / inv[inside], color[inside])


def rasterize(drawables: list[Drawable], camera: Camera, width: int, height: int,
              supersample: int = SUPERSAMPLE) -> np.ndarray:
    """Draw ``drawables`` seen by ``camera`` into a ``width`` x ``height`` image, cleared to the
    viewer's background: an (height, width, 3) uint8 RGB array, top row first. Each pixel
    averages ``supersample`` x ``supersample`` samples.

    Example::

        image = rasterize(drawables, Camera.look_at((0, 1, 4), (0, 0.5, 0)), 320, 240)
    """
    for name, value in (("width", width), ("height", height), ("supersample", supersample)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= 16384:
            raise ValueError(f"rasterize: {name} must be an int in 1..16384, got {value!r}")
    if not isinstance(camera, Camera):
        raise TypeError(f"rasterize: camera must be a simkit.render.Camera, got {type(camera).__name__}")
    n = int(supersample)
    target = _Target(camera, int(width) * n, int(height) * n)
    draw = {"triangles": _triangles, "points": _points, "lines": _lines}
    for d in drawables:
        if len(d.positions):
            draw[d.primitive](target, d)
    color = target.color.reshape(int(height), n, int(width), n, 3).mean(axis=(1, 3))
    return np.clip(np.rint(color * 255.0), 0, 255).astype(np.uint8)
