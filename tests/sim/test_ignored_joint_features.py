"""SemiImplicitEuler and XPBD say when they step a model with joint features only
Featherstone simulates (joint friction, ball and universal joint limits and drives), once per
model and integrator, instead of silently stepping without them."""

import warnings

import pytest

import simkit as sk


def pendulum(**joint):
    """A sphere hanging by a ball joint (``joint``: its keyword arguments) below the world."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_articulation()
    body = b.add_body(((0.0, -1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body)
    b.add_joint_ball(-1, body, child_xform=((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)), **joint)
    return b.finalize()


def hinge(**joint):
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_articulation()
    body = b.add_body(((0.0, -1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, 0.0, 0.0), 0.1, body=body)
    b.add_joint_revolute(-1, body, child_xform=((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)), axis=(0.0, 0.0, 1.0), **joint)
    return b.finalize()


def steps(model, integrator, n=3):
    a, b = model.state(), model.state()
    for _ in range(n):
        integrator.step(model, a, b, None, 1e-3)
        a, b = b, a


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD])
@pytest.mark.parametrize("model, what", [
    (lambda: hinge(friction=0.5), "joint friction on 1 joint"),
    (lambda: pendulum(limit_angle=0.5), "ball joint limits or drives on 1 joint"),
    (lambda: pendulum(target_ke=10.0), "ball joint limits or drives on 1 joint"),
])
def test_a_feature_only_featherstone_simulates_is_warned_once_naming_it(integrator, model, what):
    m = model()
    with pytest.warns(sk.sim.IgnoredJointFeatureWarning, match=what) as caught:
        steps(m, integrator())
    assert len([w for w in caught if issubclass(w.category, sk.sim.IgnoredJointFeatureWarning)]) == 1


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD, sk.sim.Featherstone])
def test_a_model_every_integrator_simulates_whole_steps_without_a_warning(integrator):
    m = hinge(limit_lower=-0.5, limit_upper=0.5, target_ke=10.0, target_kd=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sk.sim.IgnoredJointFeatureWarning)
        steps(m, integrator())


def test_featherstone_simulates_them_without_a_warning():
    m = pendulum(limit_angle=0.5, target_ke=10.0, friction=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sk.sim.IgnoredJointFeatureWarning)
        steps(m, sk.sim.Featherstone())
