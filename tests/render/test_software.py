"""The numpy software rasterizer: known shapes in front of a known camera land where the
camera projects them, shaded, over the clear color, with the nearest surface in front."""

import math

import numpy as np
import pytest

from simkit.render import Camera
from simkit.render.drawables import BACKGROUND, Drawable, mesh_drawable
from simkit.render.geometry import box_mesh, ground_mesh, sphere_mesh, transform_matrix
from simkit.render.software import rasterize

W, H = 96, 72
EYE, TARGET = (0.0, 0.0, 4.0), (0.0, 0.0, 0.0)
CLEAR = np.round(np.asarray(BACKGROUND) * 255.0)


def foreground(image):
    return (np.abs(image.astype(np.float64) - CLEAR) > 10.0).any(axis=2)


def half_heights_to_pixels(cam):
    """Pixels per unit of tan(angle) off the optical axis."""
    return H / 2 / math.tan(math.radians(cam.fov) / 2)


def test_sphere_is_shaded_at_its_projected_center_and_its_silhouette_has_the_projected_radius():
    cam = Camera.look_at(EYE, TARGET)
    radius = 0.5
    image = rasterize([mesh_drawable("ball", sphere_mesh(radius, rings=32, segments=64), (0.9, 0.3, 0.2))],
                      cam, W, H)
    assert image.shape == (H, W, 3) and image.dtype == np.uint8
    col, row = cam.project([TARGET], W, H)[0]
    center = image[int(row), int(col)].astype(float)
    assert center[0] > center[2] + 60 and center[0] > 120              # lit red, not the clear color
    for corner in (image[0, 0], image[0, -1], image[-1, 0], image[-1, -1]):
        np.testing.assert_array_equal(corner, CLEAR)
    # a sphere seen from distance d: a disk of angular radius asin(r / d)
    expected = math.tan(math.asin(radius / 4.0)) * half_heights_to_pixels(cam)
    fg = foreground(image)
    measured = math.sqrt(fg.sum() / math.pi)
    assert abs(measured - expected) < 1.0, (measured, expected)
    assert abs(fg[int(row)].sum() / 2 - expected) <= 1.0


def test_box_silhouette_is_the_projection_of_its_front_face():
    cam = Camera.look_at(EYE, TARGET)
    half = (0.6, 0.4, 0.3)
    image = rasterize([mesh_drawable("box", box_mesh(half), (0.3, 0.7, 0.4))], cam, W, H)
    corners = np.array([[sx * half[0], sy * half[1], half[2]] for sx in (-1, 1) for sy in (-1, 1)])
    pixels = cam.project(corners, W, H)
    rows, cols = np.nonzero(foreground(image))
    assert abs(cols.min() - pixels[:, 0].min()) <= 1.0 and abs(cols.max() + 1 - pixels[:, 0].max()) <= 1.0
    assert abs(rows.min() - pixels[:, 1].min()) <= 1.0 and abs(rows.max() + 1 - pixels[:, 1].max()) <= 1.0
    green = image[H // 2, W // 2].astype(float)
    assert green[1] > green[0] + 40 and green[1] > green[2] + 40


def test_point_is_drawn_as_a_sphere_of_its_radius():
    cam = Camera.look_at(EYE, TARGET)
    point = Drawable("p", "points", np.array([[0.5, 0.0, 0.0]], np.float32), np.array([[0.9, 0.7, 0.2]], np.float32),
                     radii=np.array([0.3], np.float32))
    fg = foreground(rasterize([point], cam, W, H))
    expected = 0.3 / 4.0 * half_heights_to_pixels(cam)                  # the viewer's point size
    assert abs(math.sqrt(fg.sum() / math.pi) - expected) < 1.0
    col, row = cam.project([(0.5, 0.0, 0.0)], W, H)[0]
    assert fg[int(row), int(col)] and not fg[H // 2, W // 2 - 4]


def test_the_nearer_surface_hides_the_farther_one_whatever_the_drawing_order():
    cam = Camera.look_at(EYE, TARGET)
    far = mesh_drawable("wall", box_mesh((1.0, 1.0, 0.1)), (0.2, 0.3, 0.9))
    near = mesh_drawable("ball", sphere_mesh(0.3), (0.9, 0.3, 0.2), transform_matrix([0, 0, 1.0, 0, 0, 0, 1]))
    for order in ([far, near], [near, far]):
        pixel = rasterize(order, cam, W, H)[H // 2, W // 2].astype(float)
        assert pixel[0] > pixel[2] + 60                                  # the red ball, not the blue wall


def test_ground_reaching_behind_the_camera_is_clipped_not_dropped():
    """Triangles crossing the near plane are cut, so the floor under the camera has no holes."""
    cam = Camera.look_at((0.0, 0.3, 0.0), (0.0, 0.3, -1.0))
    image = rasterize([mesh_drawable("ground", ground_mesh("y", 20.0, tile=20.0), (0.5, 0.5, 0.5))], cam, W, H)
    fg = foreground(image)
    assert fg[H // 2 + 2:].all() and not fg[: H // 2 - 2].any()


def test_lines_are_drawn_between_their_ends():
    cam = Camera.look_at(EYE, TARGET)
    line = Drawable("l", "lines", np.array([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], np.float32),
                    np.ones((2, 3), np.float32))
    fg = foreground(rasterize([line], cam, W, H, supersample=1))
    (a, b) = cam.project([(-1.0, 0.0, 0.0), (1.0, 0.0, 0.0)], W, H)
    rows, cols = np.nonzero(fg)
    assert set(rows.tolist()) <= {int(a[1]) - 1, int(a[1])}
    assert abs(cols.min() - a[0]) <= 1.0 and abs(cols.max() - b[0]) <= 1.0


@pytest.mark.parametrize("bad", [{"width": 0}, {"height": 2.5}, {"supersample": 0}])
def test_bad_sizes_are_refused_naming_the_argument(bad):
    args = {"width": W, "height": H, "supersample": 2} | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        rasterize([], Camera(), **args)
