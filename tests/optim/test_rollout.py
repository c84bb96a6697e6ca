"""Rollout: checkpointed gradients against the full tape, memory of both modes, the loss API,
finite differences, optimization with Adam, and bad input. Gradients in float64."""

import gc
import tracemalloc

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def weighted_positions(q: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(q[i], w[i]))


@sk.kernel
def distance_sq(q: sk.array(dtype=sk.vec3d), index: int, target: sk.vec3d, loss: sk.array(dtype=sk.float64)):
    d = q[index] - target
    sk.atomic_add(loss, 0, sk.dot(d, d))


@sk.kernel
def body_point_loss(q: sk.array(dtype=sk.transformd), w: sk.vec3d, loss: sk.array(dtype=sk.float64)):
    p = sk.transform_point(q[sk.tid()], sk.vec3d(0.1, 0.2, 0.3))
    sk.atomic_add(loss, 0, sk.dot(p, w))


def weighted_loss(model, seed=0):
    """``loss(state, loss)`` adding ``sum_i dot(q_i, w_i)`` for fixed random weights."""
    w = sk.array(np.random.default_rng(seed).normal(size=(model.particle_count, 3)), dtype=sk.vec3d)

    def loss(state, out):
        sk.launch(weighted_positions, model.particle_count, inputs=[state.particle_q, w, out])
    return loss


def cloth(n, ground=True):
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=ground)
    b.add_cloth_grid((0.0, 0.3, 0.0), (0.0, 0.0, 0.0, 1.0), (0.2, 0.0, 0.3), n, n, 0.1, 0.1, mass=0.01,
                     fix_left=True, k_mu=50.0, k_lambda=50.0, k_damp=0.01, edge_ke=1e-3)
    return b.finalize(dtype=sk.float64, requires_grad=True)


def spring_chain():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.3, 0.6, 0.0), (0.1, 0.0, 0.2), mass=0.1)
    b.add_particle((0.6, 0.6, 0.1), (0.0, 0.0, 0.2), mass=0.1)
    b.add_spring(0, 1, ke=50.0, kd=0.1)
    b.add_spring(1, 2, ke=80.0, kd=0.2)
    return b.finalize(dtype=sk.float64, requires_grad=True)


def gradients(model, integrator, dt, steps, checkpoint_every, wrt, **kwargs):
    """Loss and gradients of one run from a fresh initial state; ``wrt(model, s0)`` picks the arrays."""
    s0 = model.state(requires_grad=True)
    arrays = wrt(model, s0)
    for a in arrays:
        a.grad.zero_()
    rollout = sk.optim.Rollout(model, integrator, steps=steps, dt=dt, checkpoint_every=checkpoint_every, **kwargs)
    return rollout.run(s0, wrt=arrays)


def assert_relative_close(got, want, rel=1e-6):
    scale = np.abs(want).max()
    assert scale > 0.0
    assert np.abs(got - want).max() <= rel * scale


def velocity_and_stiffness(model, s0):
    return [s0.particle_qd, model.triangles.k_mu]


@pytest.mark.parametrize("checkpoint_every", ["auto", 7])
def test_checkpointed_gradients_equal_full_tape_on_a_200_step_cloth(checkpoint_every):
    model = cloth(4)
    args = (model, sk.sim.SemiImplicitEuler(), 2e-3, 200)
    full = gradients(*args, None, velocity_and_stiffness, loss=weighted_loss(model))
    ckpt = gradients(*args, checkpoint_every, velocity_and_stiffness, loss=weighted_loss(model))
    assert ckpt.loss == pytest.approx(full.loss, rel=1e-12)
    for got, want in zip(ckpt.grads, full.grads):
        assert_relative_close(got, want)


def test_checkpointed_gradients_equal_full_tape_with_xpbd():
    model = cloth(3, ground=False)
    args = (model, sk.sim.XPBD(iterations=3), 1e-2, 40)
    full = gradients(*args, None, velocity_and_stiffness, loss=weighted_loss(model))
    ckpt = gradients(*args, 6, velocity_and_stiffness, loss=weighted_loss(model))
    for got, want in zip(ckpt.grads, full.grads):
        assert_relative_close(got, want)


def test_frame_loss_substeps_and_per_frame_controls_give_the_full_tape_gradient():
    model = spring_chain()
    steps = 30
    controls = []
    for k in range(steps):
        c = model.control()
        c.spring_activation.assign(0.1 * np.sin(0.2 * k + np.arange(model.spring_count)))
        c.spring_activation.requires_grad = True
        controls.append(c)
    w = sk.array(np.random.default_rng(1).normal(size=(3, 3)), dtype=sk.vec3d)

    def frame_loss(frame, state, out):
        assert 1 <= frame <= steps
        sk.launch(weighted_positions, 3, inputs=[state.particle_q, w, out])

    def wrt(model, s0):
        return [s0.particle_q, model.springs.ke, controls[0].spring_activation, controls[17].spring_activation]

    kwargs = dict(frame_loss=frame_loss, loss=weighted_loss(model), substeps=3, control=controls)
    full = gradients(model, sk.sim.SemiImplicitEuler(), 3e-3, steps, None, wrt, **kwargs)
    for a in wrt(model, model.state()):
        if a.grad is not None:
            a.grad.zero_()
    ckpt = gradients(model, sk.sim.SemiImplicitEuler(), 3e-3, steps, 4, wrt, **kwargs)
    assert ckpt.loss == pytest.approx(full.loss, rel=1e-12)
    for got, want in zip(ckpt.grads, full.grads):
        assert_relative_close(got, want)


def test_checkpoints_keep_rigid_body_poses_and_velocities():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    box = b.add_body(sk.transform((0.0, 0.3, 0.0), (0.0, 0.0, 0.0, 1.0)), velocity=(1.0, 0.0, 0.5),
                     angular_velocity=(0.5, 2.0, 1.0))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.05, 0.1), body=box, density=500.0)
    model = b.finalize(dtype=sk.float64, requires_grad=True)

    def loss(state, out):
        sk.launch(body_point_loss, model.body_count, inputs=[state.body_q, sk.vec3d(0.3, -1.0, 0.7), out])

    def wrt(model, s0):
        return [s0.body_q, s0.body_qd]

    full = gradients(model, sk.sim.SemiImplicitEuler(), 1e-3, 100, None, wrt, loss=loss)
    ckpt = gradients(model, sk.sim.SemiImplicitEuler(), 1e-3, 100, 9, wrt, loss=loss)
    for got, want in zip(ckpt.grads, full.grads):
        assert_relative_close(got, want)


def test_both_modes_return_the_same_loss_and_final_state():
    model = cloth(3)
    runs = [sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=50, dt=2e-3, loss=weighted_loss(model),
                             checkpoint_every=ck).run(model.state(requires_grad=True)) for ck in (None, 8)]
    assert runs[0].loss == runs[1].loss
    for name in ("particle_q", "particle_qd"):
        np.testing.assert_array_equal(getattr(runs[0].final_state, name).numpy(),
                                      getattr(runs[1].final_state, name).numpy())


def test_rollout_gradient_matches_finite_differences():
    model = spring_chain()
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=40, dt=2e-3, loss=weighted_loss(model),
                               checkpoint_every="auto")
    s0 = model.state(requires_grad=True)
    grad = rollout.run(s0, wrt=[model.springs.ke]).grads[0]
    ke = model.springs.ke.numpy()
    for s in range(model.spring_count):
        old = ke[s]
        values = []
        for x in (old + 1e-4, old - 1e-4):
            ke[s] = x
            values.append(rollout.run(model.state(requires_grad=True)).loss)
        ke[s] = old
        assert grad[s] == pytest.approx((values[0] - values[1]) / 2e-4, rel=1e-6)


def memory_of(model, steps, checkpoint_every):
    """(bytes the rollout reports, peak bytes tracemalloc saw) of one run after a warm-up run."""
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=steps, dt=1e-3, loss=weighted_loss(model),
                               checkpoint_every=checkpoint_every)
    rollout.run(model.state(requires_grad=True))
    gc.collect()
    tracemalloc.start()
    try:
        rollout.run(model.state(requires_grad=True))
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return rollout.peak_bytes, traced


def test_checkpointed_peak_memory_is_at_least_5x_lower_on_a_1000_step_rollout():
    model = spring_chain()
    full = memory_of(model, 1000, None)
    ckpt = memory_of(model, 1000, "auto")
    assert full[0] >= 5 * ckpt[0]   # the buffers the rollout reports
    assert full[1] >= 5 * ckpt[1]   # and everything Python allocated meanwhile


def test_checkpointed_peak_memory_grows_like_the_square_root_of_the_steps():
    model = spring_chain()
    small = memory_of(model, 100, "auto")[0]
    large = memory_of(model, 400, "auto")[0]
    assert 1.6 <= large / small <= 2.5     # 4x the steps, about 2x the memory
    full_small = memory_of(model, 100, None)[0]
    full_large = memory_of(model, 400, None)[0]
    assert 3.8 <= full_large / full_small <= 4.2


def test_reported_peak_counts_the_xpbd_scratch_of_every_state():
    model = cloth(2, ground=False)
    iterations = 4
    rollout = sk.optim.Rollout(model, sk.sim.XPBD(iterations=iterations), steps=10, dt=1e-2,
                               loss=weighted_loss(model))
    rollout.run(model.state(requires_grad=True))
    n, vec3 = model.particle_count, 24
    # per state: q, qd, f and, per iteration, a positions and a corrections buffer, each with a grad
    assert rollout.peak_bytes >= 10 * 2 * (3 + 2 * iterations) * n * vec3


def test_adam_on_a_rollout_reaches_a_target():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize(dtype=sk.float64)
    target = sk.vec3d(1.0, 0.5, -0.5)

    def miss(state, out):
        sk.launch(distance_sq, 1, inputs=[state.particle_q, 0, target, out])

    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=50, dt=0.02, loss=miss, checkpoint_every=8)
    s0 = model.state(requires_grad=True)
    opt = sk.optim.Adam([s0.particle_qd], lr=0.2)
    first = None
    for _ in range(150):
        opt.zero_grad()
        loss = rollout.run(s0).loss
        first = loss if first is None else first
        opt.step()
    assert first > 1.0
    assert rollout.run(s0).loss < 1e-4


# -- bad input ----------------------------------------------------------------------------

def test_a_rollout_without_a_loss_is_a_value_error():
    with pytest.raises(ValueError, match="give loss="):
        sk.optim.Rollout(spring_chain(), sk.sim.SemiImplicitEuler(), steps=10, dt=1e-3)


@pytest.mark.parametrize("kwargs, match", [
    ({"steps": 0}, "steps must be an int >= 1"),
    ({"dt": -1.0}, "dt must be a finite number > 0"),
    ({"dt": 1e-310}, "Rollout: dt = 1e-310 is a subnormal number in float64"),
    ({"substeps": 0}, "substeps must be an int >= 1"),
    ({"checkpoint_every": 0}, "checkpoint_every must be an int >= 1"),
    ({"checkpoint_every": "sqrt"}, "checkpoint_every must be None, 'auto' or an int"),
])
def test_bad_rollout_settings_are_value_errors_naming_them(kwargs, match):
    model = spring_chain()
    settings = dict(steps=10, dt=1e-3, loss=weighted_loss(model)) | kwargs
    with pytest.raises(ValueError, match=match):
        sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), **settings)


def test_a_control_sequence_of_the_wrong_length_is_a_value_error():
    model = spring_chain()
    with pytest.raises(ValueError, match=r"control has 3 entries, expected one per frame \(10\)"):
        sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=10, dt=1e-3, loss=weighted_loss(model),
                         control=[model.control() for _ in range(3)])


def test_wrt_an_array_without_grad_is_a_value_error_naming_it():
    model = spring_chain()
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=5, dt=1e-3, loss=weighted_loss(model))
    with pytest.raises(ValueError, match=r"wrt\[1\].*does not require grad"):
        rollout.run(model.state(), wrt=[model.springs.ke, sk.zeros(3)])


@pytest.mark.parametrize("checkpoint_every", [None, 2])
def test_a_rollout_where_nothing_requires_grad_is_a_value_error(checkpoint_every):
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize(dtype=sk.float64)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=5, dt=1e-3, loss=weighted_loss(model),
                               checkpoint_every=checkpoint_every)
    with pytest.raises(ValueError, match="nothing the rollout reads requires grad"):
        rollout.run(model.state())


def test_running_a_rollout_inside_a_tape_is_refused():
    model = spring_chain()
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=5, dt=1e-3, loss=weighted_loss(model))
    with sk.Tape(), pytest.raises(RuntimeError, match="outside `with sk.Tape\\(\\)`"):
        rollout.run(model.state())


def pinned_spring():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.3, 0.6, 0.0), (0.2, 0.0, 0.0), mass=0.1)
    b.add_spring(0, 1, ke=50.0, kd=0.1)
    return b.finalize(dtype=sk.float64, requires_grad=True)


@pytest.mark.parametrize("checkpoint_every", [None, "auto"])
def test_repeated_runs_of_one_rollout_give_bit_identical_gradients_equal_to_finite_differences(checkpoint_every):
    # The README's loop: zero_grad, run, step (here without the step), three times at the same
    # parameters. The initial state's force accumulator is written by every run's first step.
    model = pinned_spring()
    s0 = model.state(requires_grad=True)
    loss = weighted_loss(model, seed=3)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=200, dt=1e-3, loss=loss,
                               checkpoint_every=checkpoint_every)
    opt = sk.optim.Adam([s0.particle_qd], lr=1e-3)
    runs = []
    for _ in range(3):
        opt.zero_grad()
        runs.append(rollout.run(s0, wrt=[s0.particle_qd]).grads[0])
    for g in runs[1:]:
        np.testing.assert_array_equal(g, runs[0])

    qd0 = s0.particle_qd.numpy().copy()

    def value(qd):
        s = model.state()
        s.particle_qd.assign(qd)
        out = sk.zeros(1, dtype=sk.float64)
        final = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), s, steps=200, dt=1e-3)[-1]
        loss(final, out)
        return out.numpy()[0]
    eps = 1e-6
    for comp in range(3):
        plus, minus = qd0.copy(), qd0.copy()
        plus[1, comp] += eps
        minus[1, comp] -= eps
        fd = (value(plus) - value(minus)) / (2 * eps)
        assert runs[0][1, comp] == pytest.approx(fd, rel=1e-6, abs=1e-10)


def stiff_spring():
    """A 1 kg particle on a 1e6 N/m spring: dt = 1e-2 s is far over its stability bound."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_particle((0.0, 1.5, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_spring(0, 1, ke=1e6, kd=0.0)
    return b.finalize(dtype=sk.float64, requires_grad=True)


@pytest.mark.parametrize("checkpoint_every", [None, 5])
def test_a_rollout_with_check_stops_a_diverged_forward_before_backward(checkpoint_every):
    model = stiff_spring()
    s0 = model.state(requires_grad=True)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=100, dt=1e-2, loss=weighted_loss(model),
                               checkpoint_every=checkpoint_every, check=4)
    with pytest.raises(sk.sim.SimulationError, match=r"Rollout.run: the simulation diverged at step 4 \(t = 0\.04 s\)"
                                                     r": particle 0 moves at .*lower dt"):
        rollout.run(s0)
    assert not np.any(model.springs.ke.grad.numpy())          # no backward ran


def test_a_rollout_with_check_gives_the_gradient_of_a_stable_run_unchanged():
    model = cloth(3)
    runs = [gradients(model, sk.sim.SemiImplicitEuler(), 1e-3, 50, "auto", velocity_and_stiffness,
                      loss=weighted_loss(model), check=check) for check in (None, 1)]
    assert runs[0].loss == runs[1].loss
    for a, b in zip(runs[0].grads, runs[1].grads):
        assert np.array_equal(a, b)


@sk.kernel
def height_f32(q: sk.array(dtype=sk.vec3), loss: sk.array(dtype=sk.float32)):
    sk.atomic_add(loss, 0, q[sk.tid()][1])


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD], ids=["semi-implicit", "xpbd"])
def test_float32_cloth_gradients_are_bit_identical_run_to_run_on_a_busy_machine(integrator, busy_machine):
    # float32, the thread pool splitting or running alone as the load comes and goes: the
    # optimizer must see the same gradient at the same parameters every time
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_cloth_grid((0.0, 0.3, 0.0), (0.0, 0.0, 0.0, 1.0), (0.2, 0.0, 0.3), 16, 16, 0.02, 0.02, mass=0.01,
                     fix_left=True, k_mu=50.0, k_lambda=50.0, k_damp=0.01, edge_ke=1e-3)
    model = b.finalize(requires_grad=True)

    def loss(state, out):
        sk.launch(height_f32, model.particle_count, inputs=[state.particle_q, out])
    s0 = model.state(requires_grad=True)
    rollout = sk.optim.Rollout(model, integrator(), steps=120, dt=1e-3, loss=loss, checkpoint_every="auto")
    opt = sk.optim.Adam([s0.particle_qd, model.triangles.k_mu], lr=1e-3)
    runs = []
    for _ in range(3):
        opt.zero_grad()
        runs.append(rollout.run(s0, wrt=[s0.particle_qd, model.triangles.k_mu]))
    for r in runs[1:]:
        assert r.loss == runs[0].loss
        for g, g0 in zip(r.grads, runs[0].grads):
            np.testing.assert_array_equal(g, g0)
    assert all(np.isfinite(g).all() and np.abs(g).max() > 0 for g in runs[0].grads)
