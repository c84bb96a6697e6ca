"""Checkpointed rollouts that replay: the forward pass through replayed steps, each backward
segment recorded on the second run and replayed from the third, with losses and gradients
bit-identical to runs through the Tape, including per-frame controls, a frame loss that
depends on the frame, and a stability check."""

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def frame_weighted(q: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), frame: sk.float64,
                   loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, frame * sk.dot(q[i], w[i]))


def chain():
    """A hanging chain of four particles on springs, the springs muscles."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    for k in range(1, 4):
        b.add_particle((0.25 * k, 1.0 - 0.1 * k, 0.02 * k), (0.1, 0.0, 0.2), mass=0.1)
        b.add_spring(k - 1, k, ke=60.0, kd=0.1)
    return b.finalize(dtype=sk.float64, requires_grad=True)


class Loss:
    """sum_i w_i . q_i, weighted by the frame number on every frame (or once, at the end)."""

    def __init__(self, model):
        self.w = sk.array(np.random.default_rng(1).normal(size=(model.particle_count, 3)), dtype=sk.vec3d)
        self.n = model.particle_count

    def final(self, state, out):
        sk.launch(frame_weighted, self.n, inputs=[state.particle_q, self.w, 1.0, out])

    def per_frame(self, frame, state, out):
        sk.launch(frame_weighted, self.n, inputs=[state.particle_q, self.w, float(frame), out])


def per_frame_controls(model, frames):
    controls = []
    for f in range(frames):
        c = model.control()
        c.spring_activation.assign(0.2 * np.sin(0.7 * f + np.arange(model.spring_count)))
        controls.append(c)
    return controls


def runs(model, n, velocity_seeds, **kwargs):
    """Loss and d loss / d (initial velocities, spring stiffness) of ``n`` runs of one Rollout over
    one initial state (new velocities each run), and the rollout."""
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=12, substeps=3, dt=3e-3, **kwargs)
    s0 = model.state(requires_grad=True)
    out = []
    for k in velocity_seeds[:n]:
        s0.particle_qd.assign(np.random.default_rng(k).normal(scale=0.3, size=(model.particle_count, 3)))
        for a in (s0.particle_q, s0.particle_qd, model.springs.ke):
            a.grad.zero_()
        res = rollout.run(s0, wrt=[s0.particle_qd, model.springs.ke])
        out.append((res.loss, res.grads))
    return out, rollout


def through_the_tape(model, seeds, **kwargs):
    sk.config.replay_steps = False
    try:
        return runs(model, len(seeds), seeds, **kwargs)[0]
    finally:
        sk.config.replay_steps = True


@pytest.fixture(scope="module")
def model():
    return chain()


CASES = {
    "one control, final loss": lambda m, L: dict(loss=L.final),
    "a control per frame": lambda m, L: dict(loss=L.final, control=per_frame_controls(m, 12)),
    "a frame loss that depends on the frame": lambda m, L: dict(frame_loss=L.per_frame),
    "a stability check": lambda m, L: dict(loss=L.final, check=2),
}


@pytest.mark.parametrize("case", CASES)
def test_a_checkpointed_rollout_replays_from_its_third_run_bit_identically(model, case):
    loss = Loss(model)
    seeds = [0, 1, 2, 3]
    got, rollout = runs(model, 4, seeds, checkpoint_every=3, **CASES[case](model, loss))
    assert rollout.segments == 4
    assert rollout.replays == 2, rollout.replay_reason
    want = through_the_tape(model, seeds, checkpoint_every=3, **CASES[case](model, loss))
    for (g_loss, g_grads), (w_loss, w_grads) in zip(got, want):
        assert g_loss == w_loss
        for g, w in zip(g_grads, w_grads):
            assert np.array_equal(g, w)
    assert np.abs(got[-1][1][0]).max() > 1e-3 and np.abs(got[-1][1][1]).max() > 1e-6


def test_a_checkpointed_replay_matches_the_full_tape(model):
    loss = Loss(model)
    ckpt, _ = runs(model, 3, [0, 1, 2], checkpoint_every=3, frame_loss=loss.per_frame)
    full, _ = runs(model, 3, [0, 1, 2], frame_loss=loss.per_frame)
    np.testing.assert_allclose(ckpt[-1][0], full[-1][0], rtol=1e-12)
    for c, f in zip(ckpt[-1][1], full[-1][1]):
        np.testing.assert_allclose(c, f, rtol=1e-9, atol=1e-12)


def test_a_new_initial_state_each_run_still_replays_the_later_segments(model):
    loss = Loss(model)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=12, substeps=3, dt=3e-3, loss=loss.final,
                               checkpoint_every=3)
    results = [rollout.run(model.state(requires_grad=True), wrt=[model.springs.ke]) for _ in range(4)]
    assert rollout.replays == 0     # the first segment starts from a new state each time
    assert rollout.replay_reason is None
    for r in results[1:]:
        assert r.loss == results[0].loss


def test_gradients_accumulate_into_the_initial_state_across_runs_as_tape_backward_does(model):
    loss = Loss(model)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=12, substeps=3, dt=3e-3, loss=loss.final,
                               checkpoint_every=3)
    s0 = model.state(requires_grad=True)
    once = rollout.run(s0, wrt=[s0.particle_qd]).grads[0]
    for _ in range(3):    # the later runs record and replay
        total = rollout.run(s0, wrt=[s0.particle_qd]).grads[0]
    np.testing.assert_allclose(total, 4.0 * once, rtol=1e-12)
