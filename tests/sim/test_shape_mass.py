"""Mass properties of the shapes (simkit.sim.mass): a cylinder's against the closed form and
against MuJoCo's body inertia of the same cylinder geom; and add_shape_cylinder's checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.structs import SHAPE_CYLINDER
from simkit.sim.mass import shape_mass


def test_a_cylinders_mass_and_inertia_are_the_closed_form_about_its_axis_y():
    r, h, rho = 0.1, 0.25, 750.0
    m, inertia = shape_mass(SHAPE_CYLINDER, (r, h, 0.0), rho)
    expected = rho * math.pi * r * r * 2.0 * h
    assert m == pytest.approx(expected, rel=1e-15)
    transverse = expected * (3.0 * r * r + (2.0 * h) ** 2) / 12.0
    np.testing.assert_allclose(inertia, np.diag([transverse, 0.5 * expected * r * r, transverse]), rtol=1e-14)


def test_a_cylinder_bodys_inertia_matches_mujocos_for_the_same_geom():
    mujoco = pytest.importorskip("mujoco")
    r, h, rho = 0.07, 0.18, 1300.0
    tilt = (math.sin(0.35), 0.0, 0.0, math.cos(0.35))
    b = sk.sim.ModelBuilder(ground=False)
    body = b.add_body()
    b.add_shape_cylinder((0.1, 0.0, 0.0), tilt, r, h, body=body, density=rho)
    b.add_shape_sphere((-0.05, 0.02, 0.0), 0.03, body=body, density=rho)
    model = b.finalize(dtype=sk.float64)
    # the same body in MuJoCo: its cylinder along z, so the geom's frame is simkit's turned by
    # -90 degrees about x
    q = sk.sim.geometry.quat_multiply(np.array(tilt), np.array([math.sin(math.pi / 4), 0.0, 0.0,
                                                                 math.cos(math.pi / 4)]))
    m = mujoco.MjModel.from_xml_string(f"""<mujoco><worldbody><body><freejoint/>
        <geom type="cylinder" size="{r} {h}" pos="0.1 0 0" density="{rho}"
              quat="{q[3]:.17g} {q[0]:.17g} {q[1]:.17g} {q[2]:.17g}"/>
        <geom type="sphere" size="0.03" pos="-0.05 0.02 0" density="{rho}"/></body></worldbody></mujoco>""")
    assert model.bodies.mass.numpy()[0] == pytest.approx(m.body_mass[1], rel=1e-12)
    np.testing.assert_allclose(model.bodies.com.numpy()[0], m.body_ipos[1], atol=1e-14)
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, m.body_iquat[1])
    R = R.reshape(3, 3)
    np.testing.assert_allclose(model.bodies.inertia.numpy()[0], R @ np.diag(m.body_inertia[1]) @ R.T,
                               rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("kwargs,match", [
    (dict(radius=0.0, half_height=0.1), r"add_shape_cylinder: radius must be > 0, got 0.0"),
    (dict(radius=0.1, half_height=-1.0), r"add_shape_cylinder: half_height must be"),
    (dict(radius=0.1, half_height=0.0), r"add_shape_cylinder: half_height must be > 0"),
    (dict(radius=float("nan"), half_height=0.1), r"add_shape_cylinder: radius"),
    (dict(radius=0.1, half_height=0.1, density=-1.0), r"add_shape_cylinder: density"),
])
def test_add_shape_cylinder_refuses_bad_sizes_naming_the_argument(kwargs, match):
    b = sk.sim.ModelBuilder()
    body = b.add_body()
    with pytest.raises(ValueError, match=match):
        b.add_shape_cylinder((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), body=body, **kwargs)


def test_add_shape_cylinder_refuses_a_bad_rotation_and_body():
    b = sk.sim.ModelBuilder()
    with pytest.raises((ValueError, TypeError), match=r"add_shape_cylinder: rot"):
        b.add_shape_cylinder((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), 0.1, 0.1)
    with pytest.raises((ValueError, IndexError), match=r"add_shape_cylinder"):
        b.add_shape_cylinder((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.1, 0.1, body=3)
