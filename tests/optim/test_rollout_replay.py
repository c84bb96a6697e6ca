"""Full-tape rollouts that replay: from the third run over the same initial state, a Rollout
replays its recorded forward and backward; the losses and gradients are bit-identical to runs
through the Tape, whatever changed in the arrays' contents, and anything a replay would
get wrong (a changed closure value, a grad set or dropped, a host read) runs the Tape again."""

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def weighted_positions(q: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), scale: sk.float64,
                       loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, scale * sk.dot(q[i], w[i]))


def cloth():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_cloth_grid((0.0, 0.05, 0.0), (0.0, 0.0, 0.0, 1.0), (0.2, -0.5, 0.3), 4, 4, 0.1, 0.1, mass=0.01,
                     fix_left=True, k_mu=50.0, k_lambda=50.0, k_damp=0.01, edge_ke=1e-3)
    return b.finalize(dtype=sk.float64, requires_grad=True)


class Weighted:
    """A loss whose scale is a Python float the test changes between runs."""

    def __init__(self, model):
        self.w = sk.array(np.random.default_rng(0).normal(size=(model.particle_count, 3)), dtype=sk.vec3d)
        self.scale = 1.0
        self.n = model.particle_count

    def __call__(self, state, out):
        sk.launch(weighted_positions, self.n, inputs=[state.particle_q, self.w, self.scale, out])


def run(rollout, s0, model, velocity):
    """One optimization-loop iteration: new initial velocities into the same state, grads zeroed."""
    s0.particle_qd.assign(velocity)
    for a in (s0.particle_q, s0.particle_qd, model.triangles.k_mu):
        a.grad.zero_()
    res = rollout.run(s0, wrt=[s0.particle_qd, model.triangles.k_mu])
    return res.loss, res.grads


def through_the_tape(model, integrator, velocity, loss, steps=30):
    """The same run with replays off: the reference."""
    sk.config.replay_steps = False
    try:
        s0 = model.state(requires_grad=True)
        return run(sk.optim.Rollout(model, integrator, steps=steps, dt=1e-3, loss=loss), s0, model, velocity)
    finally:
        sk.config.replay_steps = True


def velocities(model, k):
    return np.random.default_rng(k).normal(scale=0.3, size=(model.particle_count, 3))


def replaying(model, loss):
    """A rollout run three times over one initial state, so that its third run replayed."""
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=30, dt=1e-3, loss=loss)
    s0 = model.state(requires_grad=True)
    for _ in range(3):
        run(rollout, s0, model, velocities(model, 0))
    assert rollout.replays == 1
    return rollout, s0


@pytest.fixture(scope="module")
def model():
    return cloth()


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD])
def test_a_rollout_run_again_replays_with_bit_identical_losses_and_gradients(model, integrator):
    loss = Weighted(model)
    rollout = sk.optim.Rollout(model, integrator(), steps=30, dt=1e-3, loss=loss)
    s0 = model.state(requires_grad=True)
    got = [run(rollout, s0, model, velocities(model, k)) for k in range(4)]
    assert rollout.replays == 2, rollout.replay_reason
    for k in range(4):
        want = through_the_tape(model, integrator(), velocities(model, k), loss)
        assert got[k][0] == want[0]
        for g, w in zip(got[k][1], want[1]):
            assert np.array_equal(g, w)


def test_a_parameter_changed_between_runs_is_what_the_replay_differentiates(model):
    loss = Weighted(model)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=30, dt=1e-3, loss=loss)
    s0 = model.state(requires_grad=True)
    k_mu = model.triangles.k_mu.numpy().copy()
    try:
        for k in range(3):
            run(rollout, s0, model, velocities(model, 0))
        model.triangles.k_mu.assign(2.0 * k_mu)        # as an optimizer's step writes it
        got = run(rollout, s0, model, velocities(model, 0))
        assert rollout.replays == 2
        want = through_the_tape(model, sk.sim.SemiImplicitEuler(), velocities(model, 0), loss)
    finally:
        model.triangles.k_mu.assign(k_mu)
    assert got[0] == want[0]
    assert np.array_equal(got[1][1], want[1][1])


def test_a_changed_value_in_the_loss_closure_runs_the_tape_instead_of_a_stale_replay(model):
    loss = Weighted(model)
    rollout, s0 = replaying(model, loss)
    loss.scale = 3.0
    got = run(rollout, s0, model, velocities(model, 0))
    assert rollout.replays == 1                   # not replayed: the loss launches another scalar
    want = through_the_tape(model, sk.sim.SemiImplicitEuler(), velocities(model, 0), loss)
    assert got[0] == want[0]
    assert np.array_equal(got[1][0], want[1][0])
    loss.scale = 1.0


def test_a_grad_replaced_between_runs_receives_the_gradient_instead_of_a_stale_replay(model):
    loss = Weighted(model)
    rollout, s0 = replaying(model, loss)
    k_lambda = model.triangles.k_lambda
    k_lambda.grad = sk.zeros(k_lambda.shape, dtype=k_lambda.dtype)   # the recording holds the old buffer
    run(rollout, s0, model, velocities(model, 0))
    assert rollout.replays == 1
    assert np.any(k_lambda.grad.numpy() != 0.0)


def test_a_loss_that_reads_the_host_never_replays_and_says_why(model):
    w = Weighted(model)

    def loss(state, out):
        assert np.isfinite(state.particle_q.numpy()).all()
        w(state, out)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=30, dt=1e-3, loss=loss)
    s0 = model.state(requires_grad=True)
    for _ in range(3):
        got = run(rollout, s0, model, velocities(model, 0))
    assert rollout.replays == 0
    assert "reads an array's contents on the host" in rollout.replay_reason
    want = through_the_tape(model, sk.sim.SemiImplicitEuler(), velocities(model, 0), w)
    assert got[0] == want[0]


def test_a_new_initial_state_each_run_goes_through_the_tape(model):
    loss = Weighted(model)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=30, dt=1e-3, loss=loss)
    for _ in range(3):
        run(rollout, model.state(requires_grad=True), model, velocities(model, 0))
    assert rollout.replays == 0


def test_a_replayed_rollout_keeps_refusing_nothing_that_requires_grad():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize(dtype=sk.float64)
    loss = Weighted(model)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=5, dt=1e-3, loss=loss)
    s0 = model.state(requires_grad=True)
    for _ in range(3):
        rollout.run(s0)
    s0.particle_q.requires_grad = False
    s0.particle_qd.requires_grad = False
    s0.particle_f.requires_grad = False
    with pytest.raises(ValueError, match="nothing the rollout reads requires grad"):
        rollout.run(s0)


@sk.kernel
def body_height(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    p = sk.transform_get_translation(q[sk.tid()])
    sk.atomic_add(loss, 0, p[0] + 2.0 * p[1] + 3.0 * p[2])


def body_loss(state, out):
    sk.launch(body_height, state.body_q.shape[0], inputs=[state.body_q, out])


def test_a_featherstone_rollout_with_ground_contact_replays_bit_identically():
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True)
    b.add_articulation()
    box = b.add_body(((0.0, 0.095, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=box)
    b.add_joint_free(-1, box)
    model = b.finalize(dtype=sk.float64, requires_grad=True)

    def runs(s0, rollout, k):
        out = []
        for i in range(k):
            s0.joint_qd.assign([0.3 * i, 0.0, 0.1, 0.2, -0.1, 0.0])
            s0.joint_qd.grad.zero_()
            res = rollout.run(s0, wrt=[s0.joint_qd])
            out.append((res.loss, res.grads[0]))
        return out

    s0 = model.state(requires_grad=True)
    rollout = sk.optim.Rollout(model, sk.sim.Featherstone(), steps=25, dt=1e-3, loss=body_loss)
    got = runs(s0, rollout, 4)
    assert rollout.replays == 2, rollout.replay_reason
    sk.config.replay_steps = False
    try:
        want = runs(model.state(requires_grad=True),
                    sk.optim.Rollout(model, sk.sim.Featherstone(), steps=25, dt=1e-3, loss=body_loss), 4)
    finally:
        sk.config.replay_steps = True
    for (gl, gg), (wl, wg) in zip(got, want):
        assert gl == wl
        assert np.array_equal(gg, wg)
    assert np.any(want[-1][1] != 0.0)
