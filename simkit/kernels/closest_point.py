"""The closest point of a triangle to a point, shared by the mesh distance
(:mod:`simkit.kernels.meshes`) and the convex hull distance (:mod:`simkit.kernels.convex`).

Example::

    x = closest_point_on_triangle(p, a, b, c)
"""

import simkit as sk


@sk.func
def closest_point_on_triangle(p, a, b, c):
    """The point of triangle ``abc`` closest to ``p``: a corner, a point of an edge or of the
    face, by the signs of the barycentric coordinates of ``p``'s projection."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = sk.dot(ab, ap)
    d2 = sk.dot(ac, ap)
    bp = p - b
    d3 = sk.dot(ab, bp)
    d4 = sk.dot(ac, bp)
    cp = p - c
    d5 = sk.dot(ab, cp)
    d6 = sk.dot(ac, cp)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    x = a
    if d1 <= 0.0 and d2 <= 0.0:
        x = a
    elif d3 >= 0.0 and d4 <= d3:
        x = b
    elif d6 >= 0.0 and d5 <= d6:
        x = c
    elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        x = a + ab * (d1 / (d1 - d3))
    elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        x = a + ac * (d2 / (d2 - d6))
    elif va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        x = b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))
    else:
        inv = 1.0 / (va + vb + vc)
        x = a + ab * (vb * inv) + ac * (vc * inv)
    return x
