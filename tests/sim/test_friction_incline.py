"""Coulomb friction of body contacts on an incline, against the closed forms: a 0.2 m box
holds where tan(theta) < mu and slides with 0.5 g (sin - mu cos) t^2 where it is above, in
SemiImplicitEuler, Featherstone (penalty contact, the box on a free joint) and XPBD.

The incline is the ground with gravity tilted by theta about z (exactly equivalent to a
tilted ground): downhill is +x. Gradients through sticking, sliding and the transitions
are checked against central differences (float64) in SemiImplicitEuler and Featherstone."""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference

G = 9.81
THETA = math.radians(20.0)
HALF = 0.1
IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)


def incline(integrator, mu, dtype=sk.float64, theta=THETA, requires_grad=False, boxes=1, density=1000.0):
    """A 0.2 m cube (8 kg) of friction ``mu`` resting on the ground under gravity tilted by
    ``theta`` (``boxes`` > 1: a stack; the pair's mu is the average of the two shapes')."""
    b = sk.sim.ModelBuilder()
    for i in range(boxes):
        if integrator == "featherstone":
            b.add_articulation()
        body = b.add_body(sk.transform((0.0, HALF * (2 * i + 1), 0.0), IDENTITY_Q))
        if integrator == "featherstone":
            b.add_joint_free(-1, body)
        b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (HALF, HALF, HALF), body=body, density=density, mu=mu)
    model = b.finalize(dtype=dtype, requires_grad=requires_grad)
    model.gravity = model.types.vec3(G * math.sin(theta), -G * math.cos(theta), 0.0)
    return model


INTEGRATORS = {"semi-implicit": sk.sim.SemiImplicitEuler, "featherstone": sk.sim.Featherstone, "xpbd": sk.sim.XPBD}


def downhill_at(model, integrator, dt, times):
    """The downhill displacement of the first box at each of ``times`` (s), and the last state."""
    s, t, out = model.state(), 0.0, []
    x0 = s.body_q.numpy()[0, 0]
    for t_next in times:
        s = sk.sim.simulate(model, INTEGRATORS[integrator](), s, int(round((t_next - t) / dt)), dt,
                            keep_states=False)[-1]
        t = t_next
        out.append(float(s.body_q.numpy()[0, 0] - x0))
    return np.array(out), s


# (integrator, dt, dtype, duration): 3 s everywhere but Featherstone at dt = 1e-4, whose 30,000
# steps take too long for CI: 1 s there.
CASES = [("semi-implicit", 1e-4, sk.float64, 3.0), ("semi-implicit", 1e-3, sk.float64, 3.0),
         ("featherstone", 1e-4, sk.float64, 1.0), ("featherstone", 1e-3, sk.float64, 3.0),
         ("xpbd", 1e-3, sk.float64, 3.0), ("xpbd", 1e-2, sk.float64, 3.0),
         ("semi-implicit", 1e-4, sk.float32, 3.0), ("semi-implicit", 1e-3, sk.float32, 3.0),
         ("featherstone", 1e-4, sk.float32, 1.0), ("featherstone", 1e-3, sk.float32, 3.0),
         ("xpbd", 1e-3, sk.float32, 3.0), ("xpbd", 1e-2, sk.float32, 3.0)]
IDS = [f"{name}-dt{dt:g}-{sk.float32.__name__ if real is sk.float32 else 'float64'}" for name, dt, real, _ in CASES]


@pytest.mark.parametrize("integrator,dt,real,duration", CASES, ids=IDS)
def test_a_box_with_mu_0_8_holds_on_a_20_degree_slope(integrator, dt, real, duration):
    x, s = downhill_at(incline(integrator, 0.8, real), integrator, dt, [duration / 3.0, duration])
    # it settles onto its tangential springs (g sin(theta) tc^2 = 0.3 mm) and then does not creep
    assert abs(x[1]) < 1e-3
    assert abs(x[1] - x[0]) < 1e-3 * (duration / 3.0) / 3.0
    assert np.abs(s.body_qd.numpy()[0, 3:]).max() < 1e-3


@pytest.mark.parametrize("integrator,dt,real,duration", CASES, ids=IDS)
def test_a_box_with_mu_0_2_slides_down_a_20_degree_slope_at_g_sin_minus_mu_cos(integrator, dt, real, duration):
    mu = 0.2
    x, _ = downhill_at(incline(integrator, mu, real), integrator, dt, [duration])
    closed = 0.5 * G * (math.sin(THETA) - mu * math.cos(THETA)) * duration ** 2
    assert x[0] == pytest.approx(closed, rel=0.02)


@pytest.mark.parametrize("integrator", ["semi-implicit", "featherstone"])
def test_a_box_just_inside_its_friction_angle_holds_and_just_outside_slides(integrator):
    # Released touching the ground, the box slips a few mm while its normal force builds up
    # (over about tc = 0.01 s); after that it holds, or accelerates at the closed form.
    mu = 0.5
    theta = math.atan(mu)
    held, _ = downhill_at(incline(integrator, mu, theta=theta - math.radians(0.5)), integrator, 1e-3, [1.0, 2.0])
    assert abs(held[1]) < 5e-3
    assert abs(held[1] - held[0]) < 1e-6
    steeper = theta + math.radians(0.5)
    x, _ = downhill_at(incline(integrator, mu, theta=steeper), integrator, 1e-3, [1.0, 2.0, 3.0])
    assert x[2] - 2.0 * x[1] + x[0] == pytest.approx(G * (math.sin(steeper) - mu * math.cos(steeper)), rel=0.02)


@pytest.mark.parametrize("mass", [0.01, 100.0])
def test_a_pebble_and_a_crate_both_hold_with_the_per_mass_gains(mass):
    model = incline("semi-implicit", 0.8, density=mass / (2.0 * HALF) ** 3)
    x, s = downhill_at(model, "semi-implicit", 1e-3, [1.0, 2.0])
    assert abs(x[1]) < 1e-3
    assert abs(x[1] - x[0]) < 1e-6
    assert np.abs(s.body_qd.numpy()[0]).max() < 1e-4


def test_a_box_resting_on_a_box_on_the_slope_holds_on_to_it():
    # the pair contact's anchors ride on the lower box: once settled, neither creeps
    model = incline("semi-implicit", 0.8, boxes=2)
    s = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 2000, 1e-3, keep_states=False)[-1]
    before = s.body_q.numpy()[:, 0].copy()
    s = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s, 1000, 1e-3, keep_states=False)[-1]
    assert np.abs(before).max() < 1e-2
    assert np.abs(s.body_q.numpy()[:, 0] - before).max() < 1e-6
    assert np.abs(s.body_qd.numpy()[:, 3:]).max() < 1e-6


def test_a_box_resting_on_flat_ground_comes_to_rest_without_jitter():
    model = incline("semi-implicit", 0.8, theta=0.0)
    _, s = downhill_at(model, "semi-implicit", 1e-3, [1.0])
    assert np.abs(s.body_qd.numpy()).max() < 1e-6
    assert abs(s.body_q.numpy()[0, 0]) < 1e-6


# -- gradients (float64) ---------------------------------------------------------------------

@sk.kernel
def downhill_loss(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    X = q[0]
    loss[0] = X.p[0] + 0.3 * X.p[1]


def settled(model, integrator="semi-implicit", seconds=0.3, dt=1e-3):
    """``model``'s box after ``seconds`` on the slope: stuck, its anchors set."""
    return sk.sim.simulate(model, INTEGRATORS[integrator](), model.state(requires_grad=False),
                           int(round(seconds / dt)), dt, keep_states=False)[-1]


def rollout_loss(model, start, v0, integrator="semi-implicit", steps=150, dt=1e-3):
    """The loss after ``steps`` from a copy of ``start`` given a downhill velocity ``v0`` (of
    the body in maximal coordinates, of its free joint in Featherstone)."""
    s0 = model.state(requires_grad=model.requires_grad)
    for name in sk.sim.State.INTEGRATED:
        getattr(s0, name).assign(getattr(start, name).numpy())
    velocity = s0.joint_qd if integrator == "featherstone" else s0.body_qd
    qd = velocity.numpy().copy()
    qd.reshape(-1)[DOWNHILL_DOF[integrator]] += v0
    velocity.assign(qd)
    final = sk.sim.simulate(model, INTEGRATORS[integrator](), s0, steps, dt)[-1]
    out = sk.zeros(1, dtype=sk.float64, requires_grad=True)
    sk.launch(downhill_loss, 1, inputs=[final.body_q, out])
    return velocity, out


# where the downhill velocity is: body_qd is (angular, linear), a free joint's qd (linear, angular)
DOWNHILL_DOF = {"semi-implicit": 3, "featherstone": 0}
# (mu, initial downhill speed, what the rollout goes through)
REGIMES = {"sticking": (0.8, 0.002), "sliding": (0.2, 0.1), "stick-slide-stick": (0.8, 0.3)}


@pytest.mark.parametrize("integrator", ["semi-implicit", "featherstone"])
@pytest.mark.parametrize("regime", list(REGIMES))
def test_the_gradient_through_sticking_and_sliding_friction_matches_finite_differences(regime, integrator):
    mu, v0 = REGIMES[regime]
    model = incline(integrator, mu, requires_grad=True)
    start = settled(model, integrator)
    assert start.contact_stuck.numpy().sum() == 4      # the bottom corners hold on to their anchors
    with sk.Tape() as tape:
        velocity, loss = rollout_loss(model, start, v0, integrator)
    tape.backward(loss=loss)
    d_v0 = velocity.grad.numpy().reshape(-1)[DOWNHILL_DOF[integrator]]
    d_mu = model.shapes.mu.grad.numpy()[0]
    speed = np.array([v0])
    fd_v0 = central_difference(lambda: rollout_loss(model, start, speed[0], integrator)[1].numpy()[0], speed, 0, 1e-6)
    mu_values = model.shapes.mu.numpy()
    fd_mu = central_difference(lambda: rollout_loss(model, start, v0, integrator)[1].numpy()[0], mu_values, 0, 1e-6)
    assert d_v0 == pytest.approx(fd_v0, rel=1e-5, abs=1e-9)
    assert d_mu == pytest.approx(fd_mu, rel=1e-5, abs=1e-9)
    if regime == "sticking":
        assert abs(d_mu) < 1e-9          # the spring holds within the cone: mu does not act
    else:
        assert abs(d_mu) > 1e-3
