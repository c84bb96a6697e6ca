"""Contact given per unit mass (a time constant and a damping ratio, the builder's default):
every mass sinks and settles alike in both integrators, bounces with the restitution of its
damping ratio, and differentiates through the new parameters; fixed gains still mean what
they meant."""

import math

import numpy as np
import pytest

import simkit as sk
from sim_helpers import central_difference, position_loss
from simkit.sim.contact_material import CONTACT_TIME_CONSTANT

G = 9.81
TC = CONTACT_TIME_CONSTANT
SINK = G * TC * TC            # how far any mass sinks under its weight with the default contact
DT = 1e-3
MASSES = (0.01, 1.0, 100.0)
INTEGRATORS = {"semi-implicit": sk.sim.SemiImplicitEuler, "xpbd": sk.sim.XPBD}
R = 0.05


def run(model, seconds, dt=DT, integrator="semi-implicit", state=None):
    return sk.sim.simulate(model, INTEGRATORS[integrator](), state or model.state(), int(round(seconds / dt)), dt,
                           keep_states=False)[-1]


def body_drop(kind, mass, **builder):
    b = sk.sim.ModelBuilder(**builder)
    body = b.add_body(sk.transform((0.0, 1.0, 0.0), (0.1, 0.0, 0.05, 1.0)))
    if kind == "box":
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (R, R, R), body=body, density=mass / (2 * R) ** 3)
    else:
        b.add_shape_sphere((0.0, 0.0, 0.0), R, body=body, density=mass / (4.0 / 3.0 * math.pi * R ** 3))
    return b.finalize(dtype=sk.float64)


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("mass", MASSES)
def test_a_dropped_particle_of_any_mass_settles_within_two_seconds(mass, integrator):
    b = sk.sim.ModelBuilder()
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=mass, radius=R)
    model = b.finalize(dtype=sk.float64)
    s = run(model, 2.0, integrator=integrator)
    assert np.abs(s.particle_qd.numpy()).max() < 1e-3
    height = s.particle_q.numpy()[0, 1]
    if integrator == "semi-implicit":
        assert R - height == pytest.approx(SINK, rel=0.02)     # m g / (m / tc^2)
    else:
        assert R - height == pytest.approx(0.0, abs=1e-6)      # XPBD's contact is rigid


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("mass", MASSES)
@pytest.mark.parametrize("kind", ["sphere", "box"])
def test_a_dropped_body_of_any_mass_settles_within_two_seconds(kind, mass, integrator):
    model = body_drop(kind, mass)
    s = run(model, 2.0, integrator=integrator)
    assert np.abs(s.body_qd.numpy()).max() < 1e-2
    height = s.body_q.numpy()[0, 1]
    assert -1e-6 <= R - height <= 1.1 * SINK


def rebound_speed(v0, zeta, tc=TC):
    """The speed at which a unit mass leaves a spring 1 / tc^2 and damper 2 zeta / tc that it
    hit at ``v0``: the contact lets go when the force (never pulling) reaches zero, at the
    first t with x'' = -(w^2 x + 2 zeta w x') = 0, x(t) = v0 / wd exp(-zeta w t) sin(wd t)."""
    w = 1.0 / tc
    wd = w * math.sqrt(1.0 - zeta * zeta)

    def state(t):
        decay = math.exp(-zeta * w * t)
        return v0 / wd * decay * math.sin(wd * t), v0 * decay * (math.cos(wd * t) - zeta * w / wd * math.sin(wd * t))

    def force(t):
        x, v = state(t)
        return w * w * x + 2.0 * zeta * w * v

    lo, hi = 1e-9, math.pi / wd      # pushing at the start, pulling (clamped) by half a period
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if force(mid) > 0.0 else (lo, mid)
    return -state(lo)[1]


@pytest.mark.parametrize("mass", [0.01, 100.0])
@pytest.mark.parametrize("zeta", [0.1, 0.3])
def test_the_rebound_of_any_mass_has_the_restitution_of_its_damping_ratio(zeta, mass):
    # no gravity: the rebound depends on the damping ratio only, never on the mass
    b = sk.sim.ModelBuilder(gravity=0.0, contact_damping_ratio=zeta)
    b.add_particle((0.0, 0.2, 0.0), (0.0, -3.0, 0.0), mass=mass, radius=R)
    model = b.finalize(dtype=sk.float64)
    s = run(model, 0.2, dt=1e-5)
    assert s.particle_qd.numpy()[0, 1] == pytest.approx(rebound_speed(3.0, zeta), rel=0.01)


def test_fixed_gains_keep_their_former_defaults_and_no_scaling_by_mass():
    b = sk.sim.ModelBuilder(contact_ke=2e3, rigid_contact_kd=50.0)
    b.add_body()
    box = b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (R, R, R), body=0, ke=3e4)
    model = b.finalize()
    c, shapes = model.contact, model.shapes
    assert [a.numpy()[0] for a in (c.ke, c.kd, c.kf, c.time_constant)] == [2e3, 10.0, 100.0, 0.0]
    # a shape's own gain; the rest from the builder's gains (rigid_contact_kd) or their defaults
    assert [a.numpy()[box] for a in (shapes.ke, shapes.kd, shapes.kf, shapes.time_constant)] == [3e4, 50.0, 100.0,
                                                                                                  0.0]


def test_a_shape_with_a_time_constant_keeps_the_builder_damping_ratio():
    b = sk.sim.ModelBuilder(rigid_contact_damping_ratio=0.4)
    b.add_body()
    b.add_shape_sphere((0.0, 0.0, 0.0), R, body=0, time_constant=0.02)
    model = b.finalize()
    assert model.shapes.time_constant.numpy()[0] == pytest.approx(0.02)
    assert model.shapes.damping_ratio.numpy()[0] == pytest.approx(0.4)
    assert model.shapes.ke.numpy()[0] == 0.0


def test_fixed_gains_still_give_the_penalty_contact_of_those_gains():
    # ke and kd as given, for any mass: a 1 kg particle sinks m g / ke
    b = sk.sim.ModelBuilder(contact_ke=1e4, contact_kd=200.0)
    b.add_particle((0.0, 0.3, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=R)
    s = run(b.finalize(dtype=sk.float64), 2.0)
    assert R - s.particle_q.numpy()[0, 1] == pytest.approx(G / 1e4, rel=1e-3)


@pytest.mark.parametrize("kwargs, message", [
    (dict(contact_time_constant=0.0, contact_damping_ratio=0.5), "contact_damping_ratio=0.5 needs contact_time"),
    (dict(contact_time_constant=-0.01), "contact_time_constant must be a finite number >= 0"),
    (dict(rigid_contact_damping_ratio=float("nan")), "rigid_contact_damping_ratio must be a finite number"),
])
def test_bad_per_mass_contact_parameters_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sk.sim.ModelBuilder(**kwargs)


def test_a_shape_refuses_a_negative_time_constant_by_name():
    b = sk.sim.ModelBuilder()
    b.add_body()
    with pytest.raises(ValueError, match="add_shape_box: time_constant"):
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (R, R, R), body=0, time_constant=-1.0)


# -- gradients (float64) through the per-mass parameters --------------------------------------

def landing_loss(model, state=None, steps=250, dt=1e-3):
    """``w . x`` of the particles and body centers after a bounce that is still in contact."""
    final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state or model.state(), steps, dt)[-1]
    loss = position_loss(final.particle_q, np.array([[0.3, 1.0, -0.2]]))
    return loss


def thrown_particle(**builder):
    b = sk.sim.ModelBuilder(contact_damping_ratio=0.3, **builder)
    b.add_particle((0.0, 0.25, 0.0), (1.0, -1.5, 0.5), mass=0.7, radius=R)
    return b.finalize(dtype=sk.float64, requires_grad=True)


@pytest.mark.parametrize("field", ["time_constant", "damping_ratio"])
def test_the_gradient_wrt_the_contact_time_constant_and_damping_ratio_matches_finite_differences(field):
    model = thrown_particle(contact_mu=0.2)
    with sk.Tape() as tape:
        loss = landing_loss(model)
    tape.backward(loss=loss)
    values = getattr(model.contact, field)
    grad = values.grad.numpy()[0]
    data = values.numpy()
    fd = central_difference(lambda: landing_loss(model).numpy()[0], data, 0, 1e-6 * data[0])
    assert abs(fd) > 1e-4
    assert grad == pytest.approx(fd, rel=1e-5)


def test_the_gradient_wrt_the_initial_velocity_of_a_body_on_per_mass_contact_matches_finite_differences():
    b = sk.sim.ModelBuilder(rigid_contact_damping_ratio=0.5)
    body = b.add_body(sk.transform((0.0, 0.12, 0.0), (0.1, 0.0, 0.05, 1.0)), velocity=(0.5, -1.0, 0.0),
                      angular_velocity=(0.0, 1.0, 2.0))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (R, R, R), body=body, density=800.0, mu=0.3)
    model = b.finalize(dtype=sk.float64, requires_grad=True)
    qd = model.body_qd.numpy().copy()

    def loss_of(state):
        final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, 150, 1e-3)[-1]
        out = sk.zeros(1, dtype=sk.float64, requires_grad=True)
        sk.launch(body_origin_loss, 1, inputs=[final.body_q, out])
        return out

    s0 = model.state(requires_grad=True)
    s0.body_qd.assign(qd)
    with sk.Tape() as tape:
        loss = loss_of(s0)
    tape.backward(loss=loss)
    grad = s0.body_qd.grad.numpy()

    def value():
        s = model.state()
        s.body_qd.assign(qd)
        return loss_of(s).numpy()[0]

    for j in (1, 2, 3, 4):
        fd = central_difference(value, qd, (0, j), 1e-6)
        assert grad[0, j] == pytest.approx(fd, rel=1e-4, abs=1e-8), j


@sk.kernel
def body_origin_loss(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    X = q[0]
    loss[0] = X.p[0] + 2.0 * X.p[1] - 0.5 * X.p[2]
