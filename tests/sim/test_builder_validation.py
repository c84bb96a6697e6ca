"""Every number a ModelBuilder takes is checked where it is given: a NaN or infinite value (or
one out of its physical range) is refused with an error naming the method and the parameter,
and a refused call leaves the builder as it was."""

import inspect
import os
import re

import numpy as np
import pytest

import simkit as sk
from simkit.sim import validate as V
from simkit.sim.columns import Column

NAN, INF = float("nan"), float("inf")
DATA = os.path.join(os.path.dirname(__file__), "data")
TET = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def scene() -> sk.sim.ModelBuilder:
    """Four particles (a tetrahedron) and one body with a sphere: every add_* has something to refer to."""
    b = sk.sim.ModelBuilder()
    for p in TET:
        b.add_particle(p, (0.0, 0.0, 0.0), mass=1.0)
    body = b.add_body(sk.transform((0.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body)
    return b


def other_builder() -> sk.sim.ModelBuilder:
    b = sk.sim.ModelBuilder()
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    return b


POSE = {"pos": (0.0, 1.0, 0.0), "rot": (0.0, 0.0, 0.0, 1.0), "vel": (0.0, 0.0, 0.0)}
MATERIAL = {"k_mu": 1e3, "k_lambda": 1e3, "k_damp": 0.0}
CONTACT = {"ke": 1e4, "kd": 10.0, "kf": 10.0, "mu": 0.5, "time_constant": 0.02, "damping_ratio": 0.5}
GAINS = {"limit_lower": -1.0, "limit_upper": 1.0, "limit_ke": 1e3, "limit_kd": 1.0, "target_ke": 1.0,
         "target_kd": 0.1, "linear_ke": 1e4, "linear_kd": 1.0, "angular_ke": 1e2, "angular_kd": 0.1}

# A valid call of each add_* method, every argument by name.
VALID = {
    "add_particle": dict(pos=(0.0, 1.0, 0.0), vel=(0.0, 0.0, 0.0), mass=1.0, radius=0.05),
    "add_spring": dict(i=0, j=1, ke=10.0, kd=0.1, rest_length=0.5),
    "add_triangle": dict(i=0, j=1, k=2, **MATERIAL),
    "add_edge": dict(o0=2, o1=3, v0=0, v1=1, ke=1.0, kd=0.0, rest_angle=0.1),
    "add_cloth_grid": dict(**POSE, dim_x=2, dim_y=2, cell_x=0.1, cell_y=0.1, mass=0.01, **MATERIAL, edge_ke=0.1,
                           edge_kd=0.0, radius=0.01),
    "add_tetrahedron": dict(i=0, j=1, k=2, l=3, **MATERIAL),
    "add_soft_grid": dict(**POSE, dim_x=1, dim_y=1, dim_z=1, cell_x=0.1, cell_y=0.1, cell_z=0.1, density=100.0,
                          **MATERIAL, radius=0.01),
    "add_soft_mesh": dict(**POSE, scale=1.0, vertices=TET, tet_indices=[[0, 1, 2, 3]], density=100.0, **MATERIAL,
                          radius=0.01),
    "add_body": dict(origin=(0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0), armature=0.01, velocity=(0.0, 0.0, 0.0),
                     angular_velocity=(0.0, 0.0, 0.0)),
    "add_shape_sphere": dict(pos=(0.0, 0.0, 0.0), radius=0.1, body=0, density=100.0, **CONTACT),
    "add_shape_mesh": dict(body=0, vertices=TET, indices=[[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
                           xform=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), scale=1.0, density=100.0, **CONTACT),
    "add_shape_box": dict(pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), half_extents=(0.1, 0.1, 0.1), body=0,
                          density=100.0, **CONTACT),
    "add_shape_capsule": dict(pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), radius=0.1, half_height=0.2, body=0,
                              density=100.0, **CONTACT),
    "add_shape_cylinder": dict(pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), radius=0.1, half_height=0.2, body=0,
                               density=100.0, **CONTACT),
    "add_shape_cone": dict(pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), radius=0.1, half_height=0.2, body=0,
                           density=100.0, **CONTACT),
    "add_shape_ellipsoid": dict(pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), semi_axes=(0.1, 0.2, 0.3), body=0,
                                density=100.0, **CONTACT),
    "add_shape_plane": dict(pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), half_extents=(0.5, 0.3), **CONTACT),
    "add_shape_heightfield": dict(pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), heights=np.zeros((2, 3)),
                                  half_extents=(0.5, 0.3), **CONTACT),
    "add_shape_convex": dict(pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0),
                             points=((0.0, 0.0, 0.0), (0.1, 0.0, 0.0), (0.0, 0.1, 0.0), (0.0, 0.0, 0.1)), body=0,
                             density=100.0, scale=1.0, **CONTACT),
    "add_joint_revolute": dict(parent=-1, child=0, parent_xform=(0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                               child_xform=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), axis=(0.0, 0.0, 1.0), armature=0.1,
                               effort_limit=50.0, friction=0.2, **GAINS),
    "add_joint_prismatic": dict(parent=-1, child=0, parent_xform=(0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                                child_xform=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), axis=(1.0, 0.0, 0.0), armature=0.1,
                                effort_limit=50.0, friction=0.2, **GAINS),
    "add_joint_ball": dict(parent=-1, child=0, parent_xform=(0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                           child_xform=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), linear_ke=1e4, linear_kd=1.0,
                           armature=0.1, limit_angle=0.5, limit_ke=1e3, limit_kd=1.0, target_ke=50.0, target_kd=0.5,
                           friction=0.2, effort_limit=10.0),
    "add_joint_fixed": dict(parent=-1, child=0, parent_xform=(0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                            child_xform=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), linear_ke=1e4, linear_kd=1.0,
                            angular_ke=1e2, angular_kd=0.1),
    "add_joint_free": dict(parent=-1, child=0, parent_xform=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                           child_xform=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), armature=0.1, friction=0.2),
    "add_joint_universal": dict(parent=-1, child=0, parent_xform=(0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                                child_xform=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), axis=(1.0, 0.0, 0.0),
                                axis2=(0.0, 0.0, 1.0), armature=0.1, linear_ke=1e4, linear_kd=1.0, angular_ke=1e2,
                                angular_kd=0.1, limit_lower=-0.5, limit_upper=0.5, limit2_lower=-0.3,
                                limit2_upper=0.3, limit_ke=1e3, limit_kd=1.0, target_ke=10.0, target_kd=1.0,
                                effort_limit=50.0, friction=0.2),
    "add_body_inertia": dict(body=0, mass=1.0, com=(0.0, 0.1, 0.0), inertia=np.eye(3) * 0.01),
    "add_articulation": dict(),
    "add_urdf": dict(path=os.path.join(DATA, "arm2.urdf"), xform=(0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0),
                     floating=False),
    "add_mjcf": dict(path=os.path.join(DATA, "pendulum.xml"), xform=(0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)),
    "add_builder": dict(other=None, xform=(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)),
}

# Arguments that are not numbers but hold numbers (transforms, vertex arrays).
HOLDS_NUMBERS = {"origin", "parent_xform", "child_xform", "xform", "vertices"}


def _methods() -> list[str]:
    return sorted(n for n in dir(sk.sim.ModelBuilder) if n.startswith("add_"))


def _numeric_params(fn) -> list[str]:
    out = []
    for name, p in inspect.signature(fn).parameters.items():
        ann = str(p.annotation)
        if name in HOLDS_NUMBERS or "float" in ann:
            out.append(name)
    return out


def _poisoned(value, bad: float):
    """``value`` with its first number replaced by ``bad``."""
    a = np.array(value, dtype=np.float64)
    if a.ndim == 0:
        return bad
    a.reshape(-1)[0] = bad
    return a


def _cases():
    for method in _methods():
        for name in _numeric_params(getattr(sk.sim.ModelBuilder, method)):
            for bad in (NAN, INF):
                yield pytest.param(method, name, bad, id=f"{method}-{name}-{bad}")


def _lists(b: sk.sim.ModelBuilder) -> dict:
    """The length of every list and column of rows the builder holds."""
    return {k: len(v) for k, v in vars(b).items() if isinstance(v, (list, Column))}


def test_every_add_method_has_a_valid_call_in_this_test():
    assert set(_methods()) == set(VALID), "add the new add_* method to VALID so its numbers are checked"


@pytest.mark.parametrize("method", sorted(VALID))
def test_the_valid_call_of_each_add_method_is_accepted(method):
    kwargs = dict(VALID[method])
    if method == "add_builder":
        kwargs["other"] = other_builder()
    getattr(scene(), method)(**kwargs)


@pytest.mark.parametrize("method, name, bad", list(_cases()))
def test_a_non_finite_number_is_refused_naming_the_method_and_the_parameter(method, name, bad):
    b = scene()
    kwargs = dict(VALID[method])
    if method == "add_builder":
        kwargs["other"] = other_builder()
    if name not in kwargs:      # a keyword with a default: poison the default
        kwargs[name] = inspect.signature(getattr(sk.sim.ModelBuilder, method)).parameters[name].default
    kwargs[name] = _poisoned(kwargs[name], bad)
    before = _lists(b)
    with pytest.raises((ValueError, TypeError), match=rf"{method}: {name}\b"):
        getattr(b, method)(**kwargs)
    assert _lists(b) == before, "a refused call must leave the builder as it was"


def _constructor_params() -> list[str]:
    return _numeric_params(sk.sim.ModelBuilder.__init__)


@pytest.mark.parametrize("name", _constructor_params())
@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_a_non_finite_constructor_number_is_refused_naming_it(name, bad):
    with pytest.raises((ValueError, TypeError), match=rf"ModelBuilder: {name}\b"):
        sk.sim.ModelBuilder(**{name: bad})


def test_gravity_nan_is_refused():
    with pytest.raises(ValueError, match="ModelBuilder: gravity must be a finite number, got nan"):
        sk.sim.ModelBuilder(gravity=float("nan"))


def test_a_rest_angle_outside_minus_pi_to_pi_is_refused():
    with pytest.raises(ValueError, match=r"add_edge: rest_angle must be in \[-3.14159, 3.14159\], got 4.0"):
        scene().add_edge(2, 3, 0, 1, rest_angle=4.0)


def test_a_soft_mesh_with_a_degenerate_tetrahedron_leaves_the_builder_as_it_was():
    b = scene()
    flat = np.vstack([TET, [[1.0, 1.0, 0.0]]])             # the tet (0, 1, 2, 4) is flat
    before = _lists(b)
    with pytest.raises(ValueError, match="add_soft_mesh: add_tetrahedron: tetrahedron .* is degenerate"):
        b.add_soft_mesh((0, 0, 0), (0, 0, 0, 1), 1.0, (0, 0, 0), flat, [[0, 1, 2, 3], [0, 1, 2, 4]], 100.0, 1e3, 1e3,
                        0.0)
    assert _lists(b) == before


def test_finalize_refuses_a_non_finite_number_put_into_a_list_directly():
    b = scene()
    b.particle_mass[2] = float("nan")
    with pytest.raises(ValueError, match=r"finalize: particle_mass\[2\] holds a non-finite number"):
        b.finalize()


@pytest.mark.parametrize("where, value, expected", [
    ("particle_mass", 1e-300, r"finalize: particle_mass\[1\] = 1e-300 is 0 in float32"),
    ("particle_mass", 1e300, r"finalize: particle_mass\[1\] = 1e\+300 overflows to inf in float32"),
    ("particle_q", 1e39, r"finalize: particle_q\[1\] = 1e\+39 overflows to inf in float32"),
    ("gravity", -1e300, r"finalize: gravity = -1e\+300 overflows"),
], ids=["mass-that-is-0", "mass-that-overflows", "position-that-overflows", "gravity-that-overflows"])
def test_finalize_in_float32_refuses_a_number_float32_loses_naming_it(where, value, expected):
    b = sk.sim.ModelBuilder(gravity=-9.81)
    b.add_particle((0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 1.0)
    b.add_particle((0.0, 0.0, 2.0), (0.0, 0.0, 0.0), 1.0)
    if where == "gravity":
        b.gravity = value
    elif where == "particle_q":
        b.particle_q[1] = (value, 0.0, 2.0)
    else:
        b.particle_mass[1] = value
    with pytest.raises(ValueError, match=expected + r".*finalize\(dtype=sk.float64\) keeps it"):
        b.finalize(dtype=sk.float32)
    model = b.finalize(dtype=sk.float64)  # the builder kept everything
    assert model.particle_count == 2


def test_finalize_in_float32_lets_a_tiny_number_beside_larger_ones_round_to_zero():
    b = sk.sim.ModelBuilder()
    b.add_particle((1e-50, 0.0, 1.0), (0.0, 0.0, 0.0), 1.0)
    assert b.finalize(dtype=sk.float32).particle_q.numpy()[0, 0] == 0.0


@pytest.mark.parametrize("method, args, expected", [
    ("add_cloth_grid", (100000, 100000, 0.1, 0.1, 0.01),
     "add_cloth_grid: dim_x = 100000 by dim_y = 100000 cells make 10000200001 particles, more than a model can index"),
    ("add_cloth_grid", (40000, 40000, 0.1, 0.1, 0.01),
     "add_cloth_grid: dim_x = 40000 by dim_y = 40000 cells make 1600080001 particles and would need at least "
     "309.9 GiB of memory to build, more than this machine's 16.0 GiB"),
    ("add_soft_grid", (2000, 2000, 2000, 0.1, 0.1, 0.1, 1000.0, 1.0, 1.0, 0.0),
     "add_soft_grid: dim_x = 2000 by dim_y = 2000 by dim_z = 2000 cells make 8012006001 particles"),
])
def test_a_grid_too_big_to_build_is_refused_before_allocating_and_leaves_the_builder(method, args, expected,
                                                                                     monkeypatch):
    monkeypatch.setattr(V, "physical_memory", lambda: 16 * 2**30)   # the same on any machine
    b = scene()
    before = _lists(b)
    with pytest.raises(ValueError, match=re.escape(expected)):
        getattr(b, method)((0, 0, 0), (0, 0, 0, 1), (0, 0, 0), *args)
    assert _lists(b) == before
