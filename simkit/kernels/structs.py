"""The parameter structs that physics kernels take, one family per float type.

Every float array here may carry a gradient (``finalize(requires_grad=True)``):
differentiating a loss with respect to a material parameter is reading the
``.grad`` of the matching field after ``tape.backward``.

Example::

    S = model_structs(sk.float64)
    springs = S.Springs(indices=..., rest_length=..., ke=..., kd=...)
"""

# No ``from __future__ import annotations``: field annotations name the closure's types.
import functools
from types import SimpleNamespace

from ..core import types as T
from ..core.array import ArrayType
from ..core.struct import struct

# Shape kinds of static colliders (``Shapes.kind``).
SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE = 0, 1, 2


@functools.cache
def model_structs(real) -> SimpleNamespace:
    """The struct types of a model whose floats are ``real`` (``sk.float32`` or ``sk.float64``)."""
    vec3 = T.vector(3, real)
    mat22 = T.matrix((2, 2), real)
    mat33 = T.matrix((3, 3), real)
    transform = T.transform_of(real)
    reals = ArrayType(real, 1)
    index2d = ArrayType(T.int32, 2)

    @struct
    class Particles:
        """Per-particle mass (0 = kinematic), inverse mass and contact radius."""
        mass: reals
        inv_mass: reals
        radius: reals

    @struct
    class Springs:
        """Damped springs between particles ``indices[s, 0]`` and ``indices[s, 1]``."""
        indices: index2d
        rest_length: reals
        ke: reals
        kd: reals

    @struct
    class Triangles:
        """Membrane elements: ``pose`` is the inverse of the rest edge matrix in the triangle's
        own 2-d frame, ``area`` the rest area; Lame parameters and a damping per triangle."""
        indices: index2d
        pose: ArrayType(mat22, 1)
        area: reals
        k_mu: reals
        k_lambda: reals
        k_damp: reals

    @struct
    class Edges:
        """Bending hinges: ``indices[e] = (o0, o1, v0, v1)``, the shared edge is v0-v1 and
        o0, o1 the opposite vertices of its two triangles; ``rest_angle`` the rest dihedral."""
        indices: index2d
        rest_angle: reals
        ke: reals
        kd: reals

    @struct
    class Tets:
        """Volume elements: ``pose`` is the inverse rest edge matrix, ``volume`` the rest volume."""
        indices: index2d
        pose: ArrayType(mat33, 1)
        volume: reals
        k_mu: reals
        k_lambda: reals
        k_damp: reals

    @struct
    class Contact:
        """Penalty contact: normal stiffness ``ke``, normal damping ``kd``, friction stiffness
        ``kf`` (the slope of the regularised Coulomb law at zero slip) and friction coefficient
        ``mu``. They are one-element arrays so that they can carry a gradient. The ground is
        the plane ``dot(ground_normal, x) = 0`` when ``ground`` is 1."""
        ke: reals
        kd: reals
        kf: reals
        mu: reals
        ground: T.int32
        ground_normal: vec3

    @struct
    class Shapes:
        """Static colliders: ``kind`` (SHAPE_SPHERE/BOX/CAPSULE), world ``xform`` and ``params``
        (sphere: radius, box: half extents, capsule: radius and half height along local y)."""
        kind: ArrayType(T.int32, 1)
        xform: ArrayType(transform, 1)
        params: ArrayType(vec3, 1)

    return SimpleNamespace(real=real, vec3=vec3, mat22=mat22, mat33=mat33, transform=transform,
                           Particles=Particles, Springs=Springs, Triangles=Triangles, Edges=Edges,
                           Tets=Tets, Contact=Contact, Shapes=Shapes)
