"""Forward mode through rollouts of both integrators: jvp against the reverse-mode gradient (float64)."""

import numpy as np
import pytest

import simkit as sk
from sim_helpers import position_loss, spring_triangle

STEPS = 20
W = np.array([[0.0, 0.0, 0.0], [0.3, -1.0, 0.7], [1.0, 0.5, -0.4]])
INTEGRATORS = {"semi-implicit": (sk.sim.SemiImplicitEuler, 2e-3, True), "xpbd": (sk.sim.XPBD, 1e-2, False)}
pytestmark = pytest.mark.cpu_only("the GPU path of tangent launches is tested in tests/autograd/test_forward.py")


@pytest.fixture(params=list(INTEGRATORS))
def setup(request):
    make, dt, ground = INTEGRATORS[request.param]
    return make(), dt, spring_triangle(ground)


def rollout_loss(integrator, dt, model, state):
    states = sk.sim.simulate(model, integrator, state, STEPS, dt)
    return position_loss(states[-1].particle_q, W)


def test_jvp_of_a_rollout_matches_the_reverse_gradient_along_the_direction(setup):
    integrator, dt, model = setup
    s0 = model.state(requires_grad=True)
    with sk.Tape() as tape:
        loss = rollout_loss(integrator, dt, model, s0)
    tape.backward(loss=loss)
    rng = np.random.default_rng(3)
    v_ke, v_qd = rng.standard_normal(model.spring_count), rng.standard_normal((model.particle_count, 3))
    want = model.springs.ke.grad.numpy() @ v_ke + np.sum(s0.particle_qd.grad.numpy() * v_qd)

    s1 = model.state()
    out, tan = sk.autograd.jvp(lambda ke, qd: rollout_loss(integrator, dt, model, s1),
                               [model.springs.ke, s1.particle_qd], [v_ke, v_qd])
    assert out.numpy()[0] == pytest.approx(loss.numpy()[0], rel=1e-12)
    assert tan.numpy()[0] == pytest.approx(want, rel=1e-8, abs=1e-12)


def test_jvp_leaves_the_arrays_grads_alone(setup):
    integrator, dt, model = setup
    model.springs.ke.grad.zero_()
    s1 = model.state()
    sk.autograd.jvp(lambda ke: rollout_loss(integrator, dt, model, s1), [model.springs.ke],
                    [np.ones(model.spring_count)])
    assert not np.any(model.springs.ke.grad.numpy())


def cloth():
    """A 3x3-cell cloth pinned on one side: membranes (triangles) and hinges (bending), float64."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_cloth_grid((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), 3, 3, 0.1, 0.1, mass=1e-2,
                     fix_left=True, k_mu=50.0, k_lambda=50.0, k_damp=0.1, edge_ke=1e-2, edge_kd=1e-3)
    return b.finalize(dtype=sk.float64)


@pytest.mark.parametrize("along", ["initial velocities", "membrane stiffness"])
def test_jvp_of_a_cloth_rollout_matches_central_differences(along):
    # along the state, the model's arrays carry no tangent (the constant-fields tangent entries);
    # along k_mu, the membranes' struct has one (the general entries)
    model = cloth()
    s0 = model.state()
    wrt = s0.particle_qd if along == "initial velocities" else model.triangles.k_mu
    v = np.random.default_rng(5).standard_normal(wrt.numpy().shape)
    if along == "membrane stiffness":
        v *= 10.0

    def final_q(_):
        return sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s0, 10, 1e-3)[-1].particle_q
    _, t = sk.autograd.jvp(final_q, [wrt], [v])
    base, h, qs = wrt.numpy().copy(), 1e-6, []
    for sign in (1.0, -1.0):
        wrt.assign(base + sign * h * v)
        qs.append(final_q(None).numpy().copy())
    wrt.assign(base)
    np.testing.assert_allclose(t.numpy(), (qs[0] - qs[1]) / (2 * h), rtol=1e-6, atol=1e-9)
