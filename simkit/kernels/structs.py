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

# Shape kinds (``Shapes.kind``). A mesh's triangles live in ``Model.meshes`` (see
# simkit.kernels.meshes); its ``params`` hold its scale. A convex hull's vertices and
# triangles are the ``hull_*`` fields of ``Shapes``; its ``params`` hold its bounding radius.
# A plane (always static) faces its local +y; its ``params`` hold its half extents along
# local x and z, zero for an infinite plane.
(SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_CYLINDER, SHAPE_CONE, SHAPE_ELLIPSOID, SHAPE_CONVEX,
 SHAPE_PLANE, SHAPE_HFIELD) = range(10)

# Joint kinds (``Joints.kind``).
JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_BALL, JOINT_FIXED, JOINT_FREE, JOINT_UNIVERSAL = 0, 1, 2, 3, 4, 5

# Generalized coordinates and velocities of each joint kind, indexed by kind: a revolute or
# prismatic joint has one of each, a ball joint a quaternion (x, y, z, w) and an angular
# velocity, a fixed joint none, a free joint a position and a quaternion, a linear and an
# angular velocity, a universal joint two angles and their rates.
JOINT_Q_COUNT = (1, 1, 4, 0, 7, 2)
JOINT_QD_COUNT = (1, 1, 3, 0, 6, 2)

# Stored for a joint limit that is not set: far beyond any coordinate, finite in float32.
NO_LIMIT = 1.0e30


@functools.cache
def model_structs(real) -> SimpleNamespace:
    """The struct types of a model whose floats are ``real`` (``sk.float32`` or ``sk.float64``)."""
    vec3 = T.vector(3, real)
    mat22 = T.matrix((2, 2), real)
    mat33 = T.matrix((3, 3), real)
    transform = T.transform_of(real)
    spatial = T.vector(6, real)
    reals = ArrayType(real, 1)
    index2d = ArrayType(T.int32, 2)
    vec2 = T.vector(2, real)
    vec5 = T.vector(5, real)
    ints = ArrayType(T.int32, 1)

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
        ``mu``; where ``time_constant`` ``tc`` is > 0, the gains add ``m / tc^2``, ``2 zeta m /
        tc`` and ``m / tc`` for a contact of effective mass ``m`` (``zeta`` the
        ``damping_ratio``). They are one-element arrays so that they can carry a gradient. The
        ground is the plane ``dot(ground_normal, x) = 0`` when ``ground`` is 1.

        The ground's MuJoCo contact parameters (``ModelBuilder.set_ground_material``; one-element
        arrays, meaning as the ``Shapes`` fields of the same names): ``ground_mu``,
        ``ground_torsional_mu``, ``ground_rolling_mu``, ``ground_condim``, ``ground_solref``
        (vec2), ``ground_solimp`` (5-vector), ``ground_margin``, ``ground_gap``,
        ``ground_contype``, ``ground_conaffinity``. The penalty ground contact reads only the
        two masks."""
        ke: reals
        kd: reals
        kf: reals
        mu: reals
        time_constant: reals
        damping_ratio: reals
        ground: T.int32
        ground_normal: vec3
        ground_mu: reals
        ground_torsional_mu: reals
        ground_rolling_mu: reals
        ground_condim: ints
        ground_solref: ArrayType(vec2, 1)
        ground_solimp: ArrayType(vec5, 1)
        ground_margin: reals
        ground_gap: reals
        ground_contype: ints
        ground_conaffinity: ints

    @struct
    class Shapes:
        """Collision shapes: ``kind`` (SHAPE_SPHERE/BOX/CAPSULE/MESH/CYLINDER/CONE/ELLIPSOID/CONVEX/PLANE/HFIELD), the ``body`` they
        are attached to (-1: static), ``xform`` in the body's frame (in the world for static shapes)
        and ``params`` (sphere: radius, box: half extents, capsule, cylinder and cone: radius and
        half height along local y (a cone's base at -y, its apex at +y), ellipsoid: semi-axes, plane
        (static, facing local +y): half extents along local x and z (0: infinite), heightfield (static,
        facing local +y): half extents along local x and z and the radius holding its vertices, mesh: its scale; the triangles are in ``Model.meshes``). ``ke``, ``kd``, ``kf``, ``mu``, ``time_constant``, ``damping_ratio`` are the
        penalty contact material of the shape in body contacts (as in ``Contact``; a pair
        averages its two shapes); particle contacts use ``Contact``.

        MuJoCo's contact parameters (``add_shape_*`` keyword arguments, see
        :mod:`simkit.sim.contact_params`), read by the constraint-based contact solve and mixed
        per pair by :mod:`simkit.kernels.contact_params`: ``mu`` (sliding friction, shared with
        the penalty contact), ``torsional_mu``, ``rolling_mu``, ``condim`` (1, 3, 4, 6),
        ``solref`` (vec2: timeconst, dampratio, or -stiffness, -damping), ``solimp``
        (5-vector: dmin, dmax, width, midpoint, power), ``margin``, ``gap``, and the
        collision masks ``contype`` and ``conaffinity`` (32 bits, read as int32).

        Convex hulls (``add_shape_convex``, :mod:`simkit.kernels.convex`): row ``s`` of ``hull``
        is (first vertex, vertex count, first triangle, triangle count) of shape ``s`` (zeros for
        other kinds) in ``hull_vertices`` (shape frame), ``hull_triangles`` (rows of three
        indices into ``hull_vertices``, counterclockwise seen from outside) and the triangles'
        planes ``hull_normals . x = hull_offsets`` (outward normals); ``hull_center[s]`` is the
        centroid of hull ``s`` (shape frame).

        Heightfields (``add_shape_heightfield``, :mod:`simkit.kernels.heightfield`): row ``s`` of
        ``hfield`` is (first height, nx, nz) of shape ``s`` (zeros for other kinds) in
        ``hfield_heights``, ``nx * nz`` heights, x-major."""
        kind: ArrayType(T.int32, 1)
        body: ArrayType(T.int32, 1)
        xform: ArrayType(transform, 1)
        params: ArrayType(vec3, 1)
        ke: reals
        kd: reals
        kf: reals
        mu: reals
        time_constant: reals
        damping_ratio: reals
        torsional_mu: reals
        rolling_mu: reals
        condim: ints
        solref: ArrayType(vec2, 1)
        solimp: ArrayType(vec5, 1)
        margin: reals
        gap: reals
        contype: ints
        conaffinity: ints
        hull: index2d
        hull_vertices: ArrayType(vec3, 1)
        hull_triangles: index2d
        hull_normals: ArrayType(vec3, 1)
        hull_offsets: reals
        hull_center: ArrayType(vec3, 1)
        hfield: index2d
        hfield_heights: reals

    @struct
    class Bodies:
        """Rigid bodies: ``mass`` (0: kinematic), ``inv_mass``, ``inertia`` and ``inv_inertia``
        (body frame, about the center of mass) and ``com``, the center of mass in the body frame."""
        mass: reals
        inv_mass: reals
        inertia: ArrayType(mat33, 1)
        inv_inertia: ArrayType(mat33, 1)
        com: ArrayType(vec3, 1)

    @struct
    class Joints:
        """Joints between a ``parent`` body (-1: the world) and a ``child`` body. The joint frame
        is ``parent_xform`` in the parent's frame and ``child_xform`` in the child's; the joint
        holds the two frames together except along/about ``axis`` (in the joint frame) for
        revolute and prismatic joints, about every axis for ball joints, about ``axis`` and
        ``axis2`` (perpendicular, in the joint frame) for universal joints; a free joint holds
        nothing (the maximal-coordinate integrators apply no force for it).

        The coordinate of a revolute (prismatic) joint is the angle (displacement) of the child
        frame about (along) the axis. ``limit_lower/upper`` bound it with a penalty of stiffness
        ``limit_ke`` and damping ``limit_kd``; a drive pulls it towards ``Control.joint_target``
        with gain ``target_ke`` and its rate towards ``Control.joint_target_vel`` with
        ``target_kd``. ``linear_ke/kd`` and ``angular_ke/kd`` are the
        stiffness and damping that hold the joint together in the semi-implicit integrator.
        ``armature`` (kg m^2 or kg) is a rotor inertia added to the joint's own diagonal entries
        of the joint-space mass matrix and ``effort_limit`` bounds the torque (force) of drive and
        ``joint_act`` together (:class:`~simkit.sim.Featherstone` only; ``NO_LIMIT``: unbounded).

        :class:`~simkit.sim.Featherstone` only: ``friction`` (N m or N) is the joint's dry
        friction, a force of at most that magnitude opposing the rate of every degree of
        freedom (MuJoCo's ``frictionloss``). A ball joint's ``limit_upper`` bounds its total
        rotation angle (``limit_lower`` is unused) and ``target_kd`` damps its angular velocity.
        A universal joint's first angle is bounded by ``limit_lower/upper``, its second by
        ``limit2_lower/upper``; both angles share ``target_ke``/``target_kd``.

        With ``Featherstone(contact="constraint")`` the limits are MuJoCo's soft limit
        constraints instead of the penalty: ``limit_solref`` (timeconst, dampratio, or the
        direct form), ``limit_solimp`` (dmin, dmax, width, midpoint, power) and
        ``limit_margin`` (the constraint acts from this distance to the limit on), MuJoCo's
        ``solreflimit``, ``solimplimit`` and ``margin``."""
        kind: ArrayType(T.int32, 1)
        parent: ArrayType(T.int32, 1)
        child: ArrayType(T.int32, 1)
        parent_xform: ArrayType(transform, 1)
        child_xform: ArrayType(transform, 1)
        axis: ArrayType(vec3, 1)
        axis2: ArrayType(vec3, 1)
        limit_lower: reals
        limit_upper: reals
        limit_ke: reals
        limit_kd: reals
        target_ke: reals
        target_kd: reals
        linear_ke: reals
        linear_kd: reals
        angular_ke: reals
        angular_kd: reals
        armature: reals
        effort_limit: reals
        friction: reals
        limit2_lower: reals
        limit2_upper: reals
        limit_solref: ArrayType(vec2, 1)
        limit_solimp: ArrayType(vec5, 1)
        limit_margin: reals

    @struct
    class ParticleShapes:
        """The shapes each particle may touch, by world: particle ``i`` reads row
        ``r = world[i] + 1``, the shapes ``shape[start[r]]`` to ``shape[start[r + 1] - 1]``
        (ascending). Row 0 (particles of world -1, shared by all worlds) lists every shape,
        row ``w + 1`` the shapes of world ``w`` and of world -1. A model without worlds has
        only row 0. Built by :func:`simkit.kernels.shapes.particle_shape_rows`."""
        world: ArrayType(T.int32, 1)
        start: ArrayType(T.int32, 1)
        shape: ArrayType(T.int32, 1)

    return SimpleNamespace(real=real, vec2=vec2, vec3=vec3, vec5=vec5, mat22=mat22, mat33=mat33, transform=transform,
                           spatial=spatial,
                           Particles=Particles, Springs=Springs, Triangles=Triangles, Edges=Edges,
                           Tets=Tets, Contact=Contact, Shapes=Shapes, Bodies=Bodies, Joints=Joints,
                           ParticleShapes=ParticleShapes)
