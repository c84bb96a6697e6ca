"""Gradients of rigid-body rollouts with contact (semi-implicit, float64, on a Tape) against
central finite differences: a thrown box's landing point w.r.t. its initial twist, and
w.r.t. the contact material of its shape.

The rollout loss is piecewise smooth with tiny jumps: the penalty's damping ``kd * v_n``
is already on when a corner crosses the surface, so moving the step at which a corner
first touches by one changes the loss by about ``kd |v_n| dt^2 / m`` (1e-5 here). Central
differences with steps of 1e-7 (of values of order one) stay inside one smooth piece;
steps of 1e-6 can straddle a jump in this rollout.
"""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference
from simkit.kernels.structs import model_structs

S = model_structs(sk.float64)
DT = 5e-4
STEPS = 800                 # 0.4 s: flight, landing on an edge, tumbling and sliding
W = np.array([0.7, 1.0, -0.4])


@sk.kernel
def weighted_origin(body_q: sk.array(dtype=S.transform), w: S.vec3, loss: sk.array(dtype=sk.float64)):
    sk.atomic_add(loss, 0, sk.dot(body_q[sk.tid()].p, w))


def thrown_box(**material):
    """A 1 kg box thrown at the ground, tilted and spinning, so that it lands on an edge (fixed
    contact gains, those of the shape given in ``material`` replacing them)."""
    b = sk.sim.ModelBuilder(rigid_contact_ke=1.0e5, rigid_contact_kd=1.0e2, rigid_contact_kf=1.0e2)
    angle = 0.5
    body = b.add_body(sk.transform((0.0, 0.35, 0.0), (math.sin(angle / 2) / math.sqrt(2), 0.0,
                                                     math.sin(angle / 2) / math.sqrt(2), math.cos(angle / 2))),
                      velocity=(1.5, -0.5, 0.4), angular_velocity=(1.0, 2.0, -3.0))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.12, 0.08, 0.1), body=body,
                    density=1.0 / (8 * 0.12 * 0.08 * 0.1), **material)
    return b.finalize(dtype=sk.float64, requires_grad=True)


def landing_loss(model, state):
    """dot(final body origin, W) of a STEPS rollout from ``state`` (recorded on an active Tape)."""
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, STEPS, DT)[-1]
    loss = sk.zeros(1, dtype=sk.float64)
    sk.launch(weighted_origin, 1, inputs=[final.body_q, S.vec3(*W), loss])
    return loss


def loss_value(model, state) -> float:
    return float(landing_loss(model, state).numpy()[0])


@pytest.fixture(scope="module")
def box():
    model = thrown_box(mu=0.2)
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = landing_loss(model, s0)
    tape.backward(loss=loss)
    return model, s0


def test_thrown_box_lands_and_slides_in_the_checked_rollout(box):
    model, s0 = box
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(requires_grad=False), STEPS, DT,
                             keep_states=False)
    final = states[-1]
    assert final.body_q.numpy()[0, 1] < 0.13                           # on the ground
    assert np.linalg.norm(final.body_qd.numpy()[0, 3:]) > 0.1          # still moving


@pytest.mark.parametrize("component", range(6), ids=["wx", "wy", "wz", "vx", "vy", "vz"])
def test_landing_point_gradient_wrt_initial_twist_matches_finite_differences(box, component):
    model, s0 = box
    grad = s0.body_qd.grad.numpy()[0, component]
    fresh = model.state(requires_grad=False)
    fd = central_difference(lambda: loss_value(model, fresh), fresh.body_qd.numpy(), (0, component), 1e-7)
    assert abs(fd) > 1e-3
    assert grad == pytest.approx(fd, rel=1e-4)


@pytest.mark.parametrize("field", ["mu", "ke", "kd"])
def test_landing_point_gradient_wrt_contact_material_matches_finite_differences(box, field):
    # (kf has no effect here: every contact of this rollout slides, at the Coulomb limit)
    model, _ = box
    grad = getattr(model.shapes, field).grad.numpy()[0]
    values = getattr(model.shapes, field).numpy()
    fd = central_difference(lambda: loss_value(model, model.state(requires_grad=False)), values, 0,
                            1e-7 * values[0])
    assert abs(fd) > 1e-7
    assert grad == pytest.approx(fd, rel=1e-4)


def test_gradient_through_body_body_contact_matches_finite_differences():
    # A box knocks a capsule sideways, no gravity: d(capsule's final origin)/d(box's initial twist).
    b = sk.sim.ModelBuilder(gravity=0.0, ground=False)
    box = b.add_body(sk.transform((-0.4, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)), velocity=(2.0, 0.1, 0.05),
                     angular_velocity=(0.3, -0.5, 1.0))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=box, density=500.0)
    cap = b.add_body(sk.transform((0.0, 0.03, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_capsule((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.05, 0.15, body=cap, density=800.0)
    model = b.finalize(dtype=sk.float64, requires_grad=True)

    def loss_of(state):
        final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, 300, 1e-3)[-1]
        loss = sk.zeros(1, dtype=sk.float64)
        sk.launch(weighted_origin, 2, inputs=[final.body_q, S.vec3(*W), loss])
        return loss

    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = loss_of(s0)
    tape.backward(loss=loss)
    grad = s0.body_qd.grad.numpy()
    fresh = model.state(requires_grad=False)
    assert sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), fresh, 300, 1e-3,
                           keep_states=False)[-1].body_qd.numpy()[1, 3] > 0.3       # the capsule was hit
    for component in (2, 3, 4):
        fd = central_difference(lambda: float(loss_of(fresh).numpy()[0]), fresh.body_qd.numpy(), (0, component),
                                1e-7)
        assert abs(fd) > 1e-3
        assert grad[0, component] == pytest.approx(fd, rel=1e-4)
