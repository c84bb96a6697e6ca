"""An orbit camera for the viewer (pure numpy): a target point, a distance, a yaw about the
up axis and a pitch above the horizontal; view and perspective matrices in OpenGL's
conventions, projection of world points to pixels, and automatic framing of scene bounds.

Example::

    cam = Camera.look_at(eye=(0, 1, 3), target=(0, 0.5, 0))
    cam.project([[0, 0.5, 0]], 640, 480)        # [[320., 240.]]: the target is the image center
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from .geometry import AXES

_MAX_PITCH = 89.0


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def perspective_matrix(fov: float, aspect: float, near: float, far: float) -> np.ndarray:
    """OpenGL's perspective projection (clip coordinates, depth -1..1): vertical field of view
    ``fov`` in degrees, ``aspect`` = width / height.

    Example::

        P = perspective_matrix(45.0, 4 / 3, 0.1, 100.0)
    """
    f = 1.0 / math.tan(math.radians(fov) / 2.0)
    m = np.zeros((4, 4))
    m[0, 0], m[1, 1] = f / aspect, f
    m[2, 2], m[2, 3] = (far + near) / (near - far), 2.0 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def look_at_matrix(eye: ArrayLike, target: ArrayLike, up: ArrayLike) -> np.ndarray:
    """The view matrix of a camera at ``eye`` looking at ``target`` with ``up`` roughly up:
    world to camera coordinates, the camera looking down its -z axis with +y up.

    Example::

        V = look_at_matrix((0, 0, 5), (0, 0, 0), (0, 1, 0))     # a translation by -5 along z
    """
    eye, target = np.asarray(eye, dtype=np.float64), np.asarray(target, dtype=np.float64)
    forward = _unit(target - eye)
    right = _unit(np.cross(forward, np.asarray(up, dtype=np.float64)))
    true_up = np.cross(right, forward)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = right, true_up, -forward
    m[:3, 3] = -m[:3, :3] @ eye
    return m


@dataclass(eq=False)
class Camera:
    """An orbit camera around ``target``: the eye is ``distance`` away, at ``pitch`` degrees
    above the plane normal to ``up_axis`` and turned by ``yaw`` degrees about it; ``fov`` is
    the vertical field of view in degrees. With yaw 0 and pitch 0 on a y-up scene the camera
    looks down -z with +x to the right (OpenGL's default view).

    :meth:`orbit`, :meth:`pan` and :meth:`zoom` are what mouse drags and the wheel do;
    :meth:`framing` fits bounds into view and :meth:`look_at` places the eye directly.

    Example::

        cam = Camera(target=(0, 0.5, 0), distance=4.0, yaw=30.0, pitch=20.0)
        cam.orbit(10.0, -5.0)
        view, proj = cam.view_matrix(), cam.projection_matrix(640 / 480)
    """

    target: np.ndarray = field(default_factory=lambda: np.zeros(3))
    distance: float = 5.0
    yaw: float = 0.0
    pitch: float = 20.0
    fov: float = 45.0
    up_axis: str = "y"

    def __post_init__(self) -> None:
        if self.up_axis not in AXES:
            raise ValueError(f"Camera: up_axis must be 'x', 'y' or 'z', got {self.up_axis!r}")
        self.target = np.asarray(self.target, dtype=np.float64).reshape(3).copy()
        self.distance = max(float(self.distance), 1e-6)
        self.pitch = float(np.clip(self.pitch, -_MAX_PITCH, _MAX_PITCH))
        self.yaw = float(self.yaw)
        self.fov = float(self.fov)

    # -- frame -------------------------------------------------------------------------------
    @property
    def up(self) -> np.ndarray:
        """The world up vector (a unit axis)."""
        return np.eye(3)[AXES[self.up_axis]]

    def _horizontal(self) -> tuple[np.ndarray, np.ndarray]:
        """Two unit axes spanning the ground plane, right-handed with ``up``: yaw 0 puts the eye
        along the first, yaw 90 along the second."""
        k = AXES[self.up_axis]
        return np.eye(3)[(k + 1) % 3], np.eye(3)[(k + 2) % 3]

    @property
    def eye(self) -> np.ndarray:
        """The camera position in world coordinates."""
        a, b = self._horizontal()
        yaw, pitch = math.radians(self.yaw), math.radians(self.pitch)
        offset = math.cos(pitch) * (math.cos(yaw) * a + math.sin(yaw) * b) + math.sin(pitch) * self.up
        return self.target + self.distance * offset

    @property
    def near(self) -> float:
        """The near clipping distance (a fixed fraction of ``distance``)."""
        return 0.01 * self.distance

    @property
    def far(self) -> float:
        """The far clipping distance (a fixed multiple of ``distance``)."""
        return 100.0 * self.distance

    def view_matrix(self) -> np.ndarray:
        """World to camera coordinates (4 x 4).

        Example::

            Camera(distance=2.0).view_matrix() @ [0, 0, 0, 1]     # the target, 2 in front
        """
        return look_at_matrix(self.eye, self.target, self.up)

    def projection_matrix(self, aspect: float) -> np.ndarray:
        """Camera to clip coordinates (4 x 4) for a viewport of width / height ``aspect``.

        Example::

            cam.projection_matrix(16 / 9)
        """
        return perspective_matrix(self.fov, aspect, self.near, self.far)

    def project(self, points: ArrayLike, width: int, height: int) -> np.ndarray:
        """Pixel coordinates (N x 2: column from the left, row from the top, pixel centers
        at half-integers) of world ``points`` (N x 3) in a ``width`` x ``height`` image;
        points behind the camera get NaN.

        Example::

            col, row = cam.project([cam.target], 640, 480)[0]       # (320.0, 240.0)
        """
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        clip = (self.projection_matrix(width / height) @ self.view_matrix() @ np.c_[p, np.ones(len(p))].T).T
        w = clip[:, 3:4]
        ndc = np.divide(clip[:, :2], w, out=np.full((len(p), 2), np.nan), where=w > 0.0)
        return np.stack([(ndc[:, 0] + 1.0) * 0.5 * width, (1.0 - ndc[:, 1]) * 0.5 * height], axis=1)

    # -- interaction -------------------------------------------------------------------------
    def orbit(self, d_yaw: float, d_pitch: float) -> None:
        """Turn the eye about the target by ``d_yaw`` degrees about the up axis and
        ``d_pitch`` degrees up (pitch stays within +-89 degrees).

        Example::

            cam.orbit(dx * 0.3, -dy * 0.3)           # a mouse drag of (dx, dy) pixels
        """
        self.yaw = (self.yaw + float(d_yaw)) % 360.0
        self.pitch = float(np.clip(self.pitch + float(d_pitch), -_MAX_PITCH, _MAX_PITCH))

    def pan(self, dx: float, dy: float) -> None:
        """Move the target (and the eye with it) across the view: ``dx`` to the right and ``dy``
        up, in fractions of the visible height at the target's distance.

        Example::

            cam.pan(-dx / window_height, -dy / window_height)     # the scene follows the mouse
        """
        view = self.view_matrix()
        height = 2.0 * self.distance * math.tan(math.radians(self.fov) / 2.0)
        self.target = self.target + height * (float(dx) * view[0, :3] + float(dy) * view[1, :3])

    def zoom(self, factor: float) -> None:
        """Multiply the distance to the target by ``factor`` (< 1 moves closer).

        Example::

            cam.zoom(0.9 ** scroll_y)
        """
        self.distance = max(self.distance * float(factor), 1e-6)

    # -- placement ---------------------------------------------------------------------------
    @classmethod
    def look_at(cls, eye: ArrayLike, target: ArrayLike, up_axis: str = "y", fov: float = 45.0) -> "Camera":
        """A camera at ``eye`` looking at ``target`` (``eye`` must not lie straight above or
        below ``target``: pitch is limited to +-89 degrees).

        Example::

            cam = Camera.look_at((0, 2, 5), (0, 0.5, 0))
        """
        eye, target = np.asarray(eye, dtype=np.float64), np.asarray(target, dtype=np.float64)
        cam = cls(target=target, up_axis=up_axis, fov=fov)
        offset = eye - target
        distance = float(np.linalg.norm(offset))
        if distance == 0.0:
            raise ValueError("Camera.look_at: eye and target are the same point")
        a, b = cam._horizontal()
        cam.distance = distance
        cam.yaw = math.degrees(math.atan2(offset @ b, offset @ a)) % 360.0
        cam.pitch = float(np.clip(math.degrees(math.asin(np.clip(offset @ cam.up / distance, -1.0, 1.0))),
                                  -_MAX_PITCH, _MAX_PITCH))
        return cam

    @classmethod
    def framing(cls, lo: ArrayLike, hi: ArrayLike, up_axis: str = "y", aspect: float = 4.0 / 3.0,
                yaw: float = 30.0, pitch: float = 20.0, fov: float = 45.0, margin: float = 1.1) -> "Camera":
        """A camera looking at the center of the box ``lo``..``hi`` from direction ``yaw``,
        ``pitch``, just far enough that the box's bounding sphere (times ``margin``) fits the
        narrower side of a viewport of width / height ``aspect``. An empty or degenerate box is
        framed as if it were 1 m across.

        Example::

            cam = Camera.framing((-1, 0, -1), (1, 2, 1), up_axis="y", aspect=640 / 480)
        """
        lo, hi = np.asarray(lo, dtype=np.float64).reshape(3), np.asarray(hi, dtype=np.float64).reshape(3)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi >= lo)):
            lo, hi = np.zeros(3), np.zeros(3)
        radius = max(0.5 * float(np.linalg.norm(hi - lo)), 0.5)
        half_fov = math.radians(fov) / 2.0
        half = min(half_fov, math.atan(math.tan(half_fov) * aspect))
        return cls(target=0.5 * (lo + hi), distance=margin * radius / math.sin(half), yaw=yaw, pitch=pitch, fov=fov,
                   up_axis=up_axis)
