"""Mass properties of rigid bodies from their shapes (numpy, build time only).

Each shape contributes its mass ``density * volume``, its center and its inertia tensor
(rotated into the body frame); the body's inertia is taken about the combined center
of mass with the parallel-axis theorem.

Example::

    m, com, inertia = body_mass_properties([(SHAPE_BOX, xform, (0.1, 0.2, 0.3), 1000.0)])
"""

from __future__ import annotations

import math

import numpy as np

from ..kernels.structs import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_SPHERE
from .geometry import quat_to_matrix


def shape_mass(kind: int, params, density: float) -> tuple[float, np.ndarray]:
    """Mass and inertia tensor (about the shape's center of mass, :func:`shape_center_of_mass`,
    in its local frame) of a solid shape of uniform ``density``; ``params`` as in
    ``Shapes.params``.

    Example::

        m, inertia = shape_mass(SHAPE_CYLINDER, (0.1, 0.05, 0.0), 1000.0)    # 3.14 kg
    """
    p = np.asarray(params, dtype=np.float64)
    if kind == SHAPE_SPHERE:
        r = p[0]
        m = density * 4.0 / 3.0 * math.pi * r ** 3
        return m, np.eye(3) * (0.4 * m * r * r)
    if kind == SHAPE_BOX:
        hx, hy, hz = p
        m = density * 8.0 * hx * hy * hz
        return m, np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy]) * (m / 3.0)
    if kind == SHAPE_CAPSULE:
        # A cylinder of height 2h along y plus two hemispheres; each hemisphere's inertia about
        # a transverse axis through the capsule center is m_hemi (2/5 r^2 + h^2 + 3/4 h r).
        r, h = p[0], p[1]
        m_cyl = density * math.pi * r * r * 2.0 * h
        m_sph = density * 4.0 / 3.0 * math.pi * r ** 3
        axial = 0.5 * m_cyl * r * r + 0.4 * m_sph * r * r
        transverse = m_cyl * (r * r / 4.0 + h * h / 3.0) + m_sph * (0.4 * r * r + h * h + 0.75 * h * r)
        return m_cyl + m_sph, np.diag([transverse, axial, transverse])
    if kind == SHAPE_CYLINDER:
        # height 2h along y: axial m r^2 / 2, transverse m (3 r^2 + (2h)^2) / 12
        r, h = p[0], p[1]
        m = density * math.pi * r * r * 2.0 * h
        transverse = m * (r * r / 4.0 + h * h / 3.0)
        return m, np.diag([transverse, 0.5 * m * r * r, transverse])
    if kind == SHAPE_CONE:
        # height H = 2h: axial 3/10 m r^2, transverse about the center of mass 3/20 m r^2 + 3/80 m H^2
        r, h = p[0], p[1]
        m = density * math.pi * r * r * 2.0 * h / 3.0
        transverse = m * (0.15 * r * r + 0.15 * h * h)
        return m, np.diag([transverse, 0.3 * m * r * r, transverse])
    if kind == SHAPE_ELLIPSOID:
        a, b, c = p
        m = density * 4.0 / 3.0 * math.pi * a * b * c
        return m, np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * (m / 5.0)
    raise ValueError(f"shape_mass: unknown shape kind {kind}")


def shape_center_of_mass(kind: int, params) -> np.ndarray:
    """The center of mass of a solid shape in its local frame: its origin, but for a cone, a
    quarter of its height above its base (``y = -h/2``).

    Example::

        shape_center_of_mass(SHAPE_CONE, (0.1, 0.2, 0.0))       # [0, -0.1, 0]
    """
    c = np.zeros(3)
    if kind == SHAPE_CONE:
        c[1] = -0.5 * float(params[1])
    return c


def body_mass_properties(shapes) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, center of mass (body frame) and inertia about the center of mass (body frame)
    of a body made of ``shapes``: (kind, xform (p, q) in the body frame, params, density)."""
    parts = []
    for kind, xform, params, density in shapes:
        if density <= 0.0:
            continue
        m, inertia = shape_mass(kind, params, density)
        R = quat_to_matrix(np.asarray(xform[3:], dtype=np.float64))
        center = np.asarray(xform[:3], dtype=np.float64) + R @ shape_center_of_mass(kind, params)
        parts.append((m, center, R @ inertia @ R.T))
    return combine_mass_properties(parts)


def combine_mass_properties(parts) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, center of mass and inertia about it of rigid parts (mass, center, inertia about
    the center), all in one frame."""
    mass = sum(m for m, _, _ in parts)
    if mass <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(m * c for m, c, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, I in parts:
        d = c - com
        inertia += I + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia
