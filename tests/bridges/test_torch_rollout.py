"""simkit.torch.Rollout: a whole sk.optim.Rollout (full tape or checkpointed) as one torch op.
Gradients checked by torch.autograd.gradcheck (central differences) in float64."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import simkit as sk  # noqa: E402
import simkit.torch as skt  # noqa: E402

STEPS = 12


@sk.kernel
def weighted_positions(q: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(q[i], w[i]))


def springs():
    """A pinned particle and two free ones on two springs, in float64."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.3, 0.6, 0.0), (0.1, 0.0, 0.2), mass=0.1)
    b.add_particle((0.6, 0.6, 0.1), (0.0, 0.0, 0.2), mass=0.1)
    b.add_spring(0, 1, ke=50.0, kd=0.1)
    b.add_spring(1, 2, ke=80.0, kd=0.2)
    return b.finalize(dtype=sk.float64)


def make_op(checkpoint_every, params=lambda model, s0: [model.springs.ke, s0.particle_qd],
            controls=("spring_activation",)):
    model = springs()
    w = sk.array(np.random.default_rng(0).normal(size=(3, 3)), dtype=sk.vec3d)

    def loss(state, out):
        sk.launch(weighted_positions, 3, inputs=[state.particle_q, w, out])

    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=STEPS, substeps=2, dt=2e-2, loss=loss,
                               frame_loss=lambda frame, state, out: loss(state, out),
                               control=[model.control() for _ in range(STEPS)], checkpoint_every=checkpoint_every)
    s0 = model.state()
    return model, skt.Rollout(rollout, s0, params=params(model, s0), controls=controls)


def inputs(model):
    ke = torch.tensor([50.0, 80.0], dtype=torch.float64, requires_grad=True)
    qd = torch.tensor([[0.0, 0.0, 0.0], [0.1, 0.0, 0.2], [0.0, 0.0, 0.2]], dtype=torch.float64, requires_grad=True)
    act = (0.1 * torch.sin(torch.arange(STEPS * 2, dtype=torch.float64)).reshape(STEPS, 2)).requires_grad_()
    return ke, qd, act


@pytest.mark.parametrize("checkpoint_every", [None, 5])
def test_rollout_op_passes_gradcheck_on_parameters_initial_velocity_and_per_step_controls(checkpoint_every):
    model, op = make_op(checkpoint_every)
    assert torch.autograd.gradcheck(op, inputs(model))


def test_checkpointed_and_full_tape_ops_give_the_same_loss_and_gradients():
    grads = []
    for ck in (None, 4):
        model, op = make_op(ck)
        xs = inputs(model)
        loss = op(*xs)
        loss.backward()
        grads.append((loss.item(), [x.grad.clone() for x in xs]))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-12)
    for a, b in zip(grads[0][1], grads[1][1]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)


def test_the_op_twice_in_one_graph_at_different_values_gives_each_its_own_gradient():
    model, op = make_op(None)
    ke, qd, act = inputs(model)
    total = op(ke, qd, act) + 2.0 * op(ke * 1.5, qd, act)
    total.backward()
    got = ke.grad.clone()
    ke.grad = None
    qd.grad = None
    act.grad = None
    op(ke, qd, act).backward()
    first = ke.grad.clone()
    ke.grad = None
    op(ke * 1.5, qd, act).backward()
    second = ke.grad.clone()
    np.testing.assert_allclose(got.numpy(), (first + 2.0 * second).numpy(), rtol=1e-12)


def test_repeated_calls_at_the_same_values_give_bit_identical_gradients():
    model, op = make_op(5)
    xs = inputs(model)
    runs = []
    for _ in range(3):
        runs.append([g.clone() for g in torch.autograd.grad(op(*xs), xs)])
    for r in runs[1:]:
        for a, b in zip(r, runs[0]):
            assert torch.equal(a, b)


def test_the_last_result_holds_the_final_state():
    model, op = make_op(None)
    loss = op(*inputs(model))
    assert op.result.loss == loss.item()
    assert op.result.final_state.particle_q.numpy().shape == (3, 3)


def test_an_input_that_needs_no_grad_gets_none():
    model, op = make_op(None)
    ke, qd, act = inputs(model)
    ke.requires_grad_(False)
    op(ke, qd, act).backward()
    assert ke.grad is None
    assert qd.grad is not None and act.grad is not None


# -- bad input ----------------------------------------------------------------------------

def test_a_tensor_of_the_wrong_shape_is_a_value_error_naming_it():
    model, op = make_op(None)
    ke, qd, act = inputs(model)
    with pytest.raises(ValueError, match=r"controls 'spring_activation' must have shape \(12, 2\), got \(11, 2\)"):
        op(ke, qd, act[1:])


def test_a_float32_tensor_is_a_type_error_naming_it():
    model, op = make_op(None)
    ke, qd, act = inputs(model)
    with pytest.raises(TypeError, match=r"params\[0\] must be a tensor of float64 .* got torch.float32"):
        op(ke.float(), qd, act)


def test_the_wrong_number_of_tensors_is_a_type_error():
    model, op = make_op(None)
    with pytest.raises(TypeError, match=r"takes 3 tensors \(2 params, then 1 controls\), got 2"):
        op(*inputs(model)[:2])


def test_controls_without_one_control_per_frame_are_a_value_error():
    model = springs()
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=5, dt=1e-2,
                               loss=lambda state, out: None, control=model.control())
    with pytest.raises(ValueError, match="one Control per frame"):
        skt.Rollout(rollout, model.state(), controls=["spring_activation"])


def test_an_unknown_control_name_is_a_value_error():
    model = springs()
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=2, dt=1e-2, loss=lambda state, out: None,
                               control=[model.control() for _ in range(2)])
    with pytest.raises(ValueError, match="controls names 'spring_rest'"):
        skt.Rollout(rollout, model.state(), controls=["spring_rest"])


def test_the_unknown_control_name_error_lists_the_velocity_targets():
    model = springs()
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=2, dt=1e-2, loss=lambda state, out: None,
                               control=[model.control() for _ in range(2)])
    with pytest.raises(ValueError, match="joint_target_vel, joint_act, joint_dof_target, joint_dof_target_vel"):
        skt.Rollout(rollout, model.state(), controls=["joint_velocity"])
    op = skt.Rollout(rollout, model.state(), controls=["joint_target_vel", "joint_dof_target_vel"])
    assert op.controls == ["joint_target_vel", "joint_dof_target_vel"]


def test_nothing_to_differentiate_is_a_value_error():
    model = springs()
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=2, dt=1e-2, loss=lambda state, out: None)
    with pytest.raises(ValueError, match="give params"):
        skt.Rollout(rollout, model.state())
