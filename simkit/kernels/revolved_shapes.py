"""Shapes of revolution about their local y axis, for :mod:`simkit.kernels.shapes`: the
cylinder (radius ``r``, flat faces at ``y = -h`` and ``y = h``) and the cone (base of radius
``r`` at ``y = -h``, apex at ``y = h``): their exact signed distances and their contact points
(docs/geometry.md).

Both have rim points: on a rim, the point farthest in the direction of ``toward``'s x and z
(see :func:`~simkit.kernels.shapes.plane_toward` and
:func:`~simkit.kernels.shapes.pair_toward`) and the two 120 degrees on from it, a support
triangle when the shape stands on that face. The lowest point of either shape over a plane is
a rim point or the cone's apex, so against a plane their depth is exact.

Example::

    dist, n = cone_distance(p_local, 0.1, 0.2)
    p, radius = cylinder_point(size, 0, toward)
"""

import simkit as sk

# A cylinder has 7 points of radius 0 but the last: 3 on each rim (even k the lower, at y = -h),
# then the point of its axis at ``toward``'s y, thickened by its radius (a sphere inside the
# cylinder that touches its side where the side touches something: two cylinders crossed side
# on side). Against a plane its 6 rim points.
CYLINDER_POINTS = 7
CYLINDER_PLANE_POINTS = 6
# A cone has 4 points of radius 0: 3 on the rim of its base, then its apex; all 4 against a plane.
CONE_POINTS = 4
CONE_PLANE_POINTS = 4
# The rim direction (``toward``'s x and z, at most a unit vector) leans towards the shape's x axis
# by this much: a cylinder standing square on a face has no lowest rim point, and without the
# lean its support triangle would turn at random with the rounding of its tilt (a depth error
# of r * RIM_LEAN^2 / (2 sin(tilt)) at most, under 1e-8 r at any tilt past 1e-4).
RIM_LEAN = 1.0e-6


@sk.func
def radial_of(p):
    """The distance of ``p`` from the y axis and the unit vector from the axis to it (x where
    ``p`` is on the axis: no sqrt(0), whose derivative would make the gradient NaN)."""
    rho2 = p[0] * p[0] + p[2] * p[2]
    rho = rho2 * 0.0
    radial = p * 0.0
    radial[0] = 1.0
    if rho2 > 0.0:
        rho = sk.sqrt(rho2)
        radial[0] = p[0] / rho
        radial[2] = p[2] / rho
    return rho, radial


@sk.func
def cylinder_distance(p, r, h):
    """Signed distance of local point ``p`` to a solid cylinder of radius ``r`` about the y
    axis between ``y = -h`` and ``y = h`` (exact), and the outward normal."""
    rho, radial = radial_of(p)
    axial = p * 0.0
    axial[1] = 1.0
    if p[1] < 0.0:
        axial[1] = -1.0
    q0 = rho - r
    q1 = sk.abs(p[1]) - h
    dist = q0
    n = radial
    if q0 > 0.0 and q1 > 0.0:
        # beyond the rim: the distance to the rim circle
        dist = sk.sqrt(q0 * q0 + q1 * q1)
        n = (radial * q0 + axial * q1) / dist
    elif q1 > q0:
        dist = q1
        n = axial
    return dist, n


@sk.func
def cone_distance(p, r, h):
    """Signed distance of local point ``p`` to a solid cone about the y axis, its base of
    radius ``r`` at ``y = -h`` and its apex at ``y = h`` (exact), and the outward normal.

    In the half plane of ``p`` and the axis (coordinates ``rho``, ``y``) the cone's surface is
    two segments: the base, from ``(0, -h)`` to ``(r, -h)``, and the slant, from ``(r, -h)`` to
    the apex ``(0, h)``; inside, the distance is to the nearer of their lines, outside to the
    nearer segment."""
    rho, radial = radial_of(p)
    y = p[1]
    length = sk.sqrt(r * r + 4.0 * h * h)
    # the slant's outward unit normal (2h, r) / length and its unit direction (-r, 2h) / length
    n_rho = 2.0 * h / length
    n_y = r / length
    slant = (rho - r) * n_rho + (y + h) * n_y           # signed distance to the slant's line
    below = -(y + h)                                    # signed distance to the base's line
    dist = slant
    d_rho = n_rho
    d_y = n_y
    if slant <= 0.0 and below <= 0.0:
        if below > slant:
            dist = below
            d_rho = d_rho * 0.0
            d_y = d_y * 0.0 - 1.0
    else:
        # the nearest point of the base segment, then of the slant segment
        b_rho = rho - sk.clamp(rho, r * 0.0, r)
        b_y = y + h
        along = sk.clamp(((rho - r) * (-r) + (y + h) * 2.0 * h) / (length * length), r * 0.0, r * 0.0 + 1.0)
        s_rho = rho - (r - r * along)
        s_y = y - (2.0 * h * along - h)
        base2 = b_rho * b_rho + b_y * b_y
        slant2 = s_rho * s_rho + s_y * s_y
        e_rho = s_rho
        e_y = s_y
        e2 = slant2
        if base2 < slant2:
            e_rho = b_rho
            e_y = b_y
            e2 = base2
        if e2 > 0.0:
            dist = sk.sqrt(e2)
            d_rho = e_rho / dist
            d_y = e_y / dist
        else:
            dist = e2
    n = radial * d_rho
    n[1] = d_y
    return dist, n


@sk.func
def rim_point(size, j, toward, y):
    """The point of the rim of radius ``size[0]`` at height ``y``, ``j`` times 120 degrees on from
    the one farthest along ``toward``'s x and z (leaning ``RIM_LEAN`` towards x)."""
    ux = toward[0] + RIM_LEAN
    uz = toward[2]
    u2 = ux * ux + uz * uz
    if u2 > 0.0:
        u = sk.sqrt(u2)
        ux = ux / u
        uz = uz / u
    else:
        ux = uz * 0.0 + 1.0
    c = ux * 0.0 + 1.0
    s = ux * 0.0
    if j == 1:
        c = c * -0.5
        s = s + 0.8660254037844386
    elif j == 2:
        c = c * -0.5
        s = s - 0.8660254037844386
    p = size * 0.0
    # (ux, uz) turned by the angle of (c, s) about y
    p[0] = size[0] * (ux * c + uz * s)
    p[2] = size[0] * (uz * c - ux * s)
    p[1] = y
    return p


@sk.func
def cylinder_point(size, k, toward):
    """Contact point ``k`` of a cylinder (``size``: radius, half height) in its frame and its
    radius: ``k < 6`` on a rim (even ``k`` the lower, at ``y = -h``), ``k // 2`` times 120
    degrees on from the rim's point farthest along ``toward``'s x and z; ``k = 6`` the point
    of the axis at ``toward``'s y, thickened by the radius (by the half height on a cylinder
    shorter than it is wide, so that it stays inside)."""
    p = size * 0.0
    radius = size[0] * 0.0
    if k < 6:
        y = -size[1]
        if k % 2 == 1:
            y = size[1]
        p = rim_point(size, k // 2, toward, y)
    else:
        radius = sk.min(size[0], size[1])
        reach = size[1] - radius
        p[1] = sk.clamp(toward[1], -reach, reach)
    return p, radius


@sk.func
def cone_point(size, k, toward):
    """Contact point ``k`` of a cone (``size``: base radius, half height) in its frame and its
    radius (0): ``k < 3`` on the rim of its base, ``k`` times 120 degrees on from the point
    farthest along ``toward``'s x and z; ``k = 3`` its apex."""
    p = size * 0.0
    if k < 3:
        p = rim_point(size, k, toward, -size[1])
    else:
        p[1] = size[1]
    return p, size[0] * 0.0
