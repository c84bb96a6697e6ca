"""Trajectory optimization through contact: a slab on the ground (1 kg, friction 0.5) is pushed
to a target by a sphere on a prismatic slider, whose force over three intervals is optimized
by Gauss-Newton (sk.optim) through a taped Featherstone rollout, with penalty contact (its
friction sticks, then slides) and with the constraint solve (implicit-differentiation
gradients).

The pusher's contact is frictionless (condim 1) and the box a low slab: a tall box pushed at
mid height with a rubbing pusher rocks on its edges, and the final position then has kinks
(corners leaving and touching the ground) on which Gauss-Newton stalls.
"""

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64
HALF, HEIGHT, RADIUS = 0.1, 0.05, 0.04    # the slab's half extents (x, y) and z, the pusher's radius
TARGET = 0.15                              # where the slab must be at the end (m, from x = 0)
KNOTS, DURATION, START_FORCE = 3, 0.3, 6.0
# contact model -> (integrator, dt): penalty needs dt <= tc / 10 (tc = 0.01 s); the constraint
# solve is run well past its defaults so that the gradient it gives is exact to 1e-6
CONTACTS = {
    "penalty": (lambda: sk.sim.Featherstone(contact="penalty"), 1e-3),
    "constraint": (lambda: sk.sim.Featherstone(contact="constraint", iterations=300, tolerance=1e-12), 2e-3),
}


@sk.kernel
def miss(q: sk.array(dtype=sk.float64), at: int, target: sk.float64, r: sk.array(dtype=sk.float64)):
    r[0] = q[at] - target


def pushing(contact: str):
    """The scene, the pusher's force per interval (one Control each; the free joint ignores
    ``joint_act``) and ``residuals()``: the slab's final x minus the target, from a taped
    rollout when a Tape records."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.set_ground_material(mu=0.5)
    b.add_articulation()
    start = ((-HALF - RADIUS, 0.0, HEIGHT), (0.0, 0.0, 0.0, 1.0))     # touching the slab's back face
    pusher = b.add_body(start)
    b.add_shape_sphere((0.0, 0.0, 0.0), RADIUS, body=pusher, density=0.5 / (4.0 / 3.0 * np.pi * RADIUS ** 3),
                       mu=0.0, condim=1)
    b.add_joint_prismatic(-1, pusher, parent_xform=start, axis=(1.0, 0.0, 0.0))
    b.add_articulation()
    slab = b.add_body(((0.0, 0.0, HEIGHT), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (HALF, HALF, HEIGHT), body=slab,
                    density=1.0 / (8.0 * HALF * HALF * HEIGHT), mu=0.5, condim=1)
    slide = b.add_joint_free(-1, slab)
    model = b.finalize(dtype=F64)
    make, dt = CONTACTS[contact]
    integrator, steps = make(), int(round(DURATION / dt))
    at = int(model.joint_q_start.numpy()[slide])
    knots = [model.control() for _ in range(KNOTS)]
    for c in knots:
        c.joint_act.assign(np.array([START_FORCE, 0.0]))
    s0 = model.state()

    def residuals():
        s = s0
        for k in range(steps):
            nxt = model.state()
            integrator.step(model, s, nxt, knots[k * KNOTS // steps], dt)
            s = nxt
        r = sk.zeros(1, dtype=F64)
        sk.launch(miss, 1, inputs=[s.joint_q, at, TARGET, r])
        return r

    return knots, residuals


@pytest.mark.parametrize("contact", list(CONTACTS))
def test_the_gradient_of_a_push_through_contact_matches_finite_differences(contact):
    knots, residuals = pushing(contact)
    opt = sk.optim.GaussNewton([c.joint_act for c in knots], residuals, jacobian="reverse")
    r, J = opt.linearize()                   # J[0] = d r / d (each knot's joint_act: slider, free joint)
    assert r[0] < -0.05                       # the starting push falls well short
    expected = np.zeros(KNOTS)
    eps = 1e-6
    for i, c in enumerate(knots):             # the pusher's force in each interval
        for sign in (1.0, -1.0):
            c.joint_act.assign(np.array([START_FORCE + sign * eps, 0.0]))
            expected[i] += sign * residuals().numpy()[0] / (2.0 * eps)
        c.joint_act.assign(np.array([START_FORCE, 0.0]))
    assert np.all(expected > 1e-3)            # each interval's force moves the slab
    np.testing.assert_allclose(J[0, 0::2], expected, rtol=1e-4, atol=1e-9)
    assert np.all(J[0, 1::2] == 0.0)          # the free joint ignores joint_act


@pytest.mark.parametrize("contact", list(CONTACTS))
def test_gauss_newton_pushes_the_slab_to_its_target(contact):
    knots, residuals = pushing(contact)
    opt = sk.optim.GaussNewton([c.joint_act for c in knots], residuals, jacobian="reverse")
    first = opt.step()
    for _ in range(4):
        if opt.cost < 1e-10:
            break
        opt.step()
    assert first > 2e-3                       # more than 4.5 cm short at first
    assert opt.cost < 1e-8                    # within 0.1 mm of the target
    assert opt.cost < 1e-5 * first
    assert abs(residuals().numpy()[0]) < 1e-4
