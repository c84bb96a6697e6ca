"""Featherstone(contact="constraint") keeps its warm start in the State: the same rollout
from the same state is bit-identical, whatever the model solved in between."""

import numpy as np

import simkit as sk

F64 = sk.float64


def boxes_on_ground():
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.set_ground_material(mu=0.5)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.1 - 1e-4), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0, mu=0.5)
    b.add_joint_free(-1, body)
    return b.finalize(dtype=F64, requires_grad=True)


def rollout(model, integrator, qd, steps: int = 200, dt: float = 1e-3):
    control = model.control()
    control.joint_dof_act.requires_grad = True
    control.joint_dof_act.assign(np.array([0.4, -0.2, 0.0, 0.0, 0.0, 0.02]))
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    states[0].joint_qd.assign(np.asarray(qd, dtype=np.float64))
    tape = sk.Tape()
    with tape:
        for k in range(steps):
            integrator.step(model, states[k], states[k + 1], control, dt)
    tape.backward(grads={states[-1].joint_q: np.ones(7)})
    return (states[-1].joint_q.numpy().copy(), states[0].joint_qd.grad.numpy().copy(),
            control.joint_dof_act.grad.numpy().copy())


def test_same_rollout_twice_is_bit_identical_after_another_rollout_in_between():
    model = boxes_on_ground()
    integrator = sk.sim.Featherstone(contact="constraint")
    first = rollout(model, integrator, [0.3, 0.1, 0.0, 0.0, 0.0, 0.5])
    rollout(model, integrator, [-0.5, 0.4, 0.2, 1.0, 0.0, -2.0])       # another scene of the same model
    second = rollout(model, integrator, [0.3, 0.1, 0.0, 0.0, 0.0, 0.5])
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_step_writes_the_contact_forces_into_state_out():
    model = boxes_on_ground()
    s0, s1 = model.state(), model.state()
    assert s0.contact_force is None
    sk.sim.Featherstone(contact="constraint").step(model, s0, s1, None, 1e-3)
    assert s1.contact_force is not None and s1.contact_force.numpy().sum() > 0.0
    assert not np.any(s0.contact_force.numpy())                   # state_in's warm start is left as it was


def steps_from(model, integrator, s, n: int = 30):
    a, b = s, model.state()
    for _ in range(n):
        integrator.step(model, a, b, None, 1e-3)
        a, b = b, a
    return a.joint_q.numpy().copy()


def test_a_state_copied_with_copy_from_steps_to_the_same_bits_as_its_original():
    model = boxes_on_ground()
    integrator = sk.sim.Featherstone(contact="constraint", tolerance=1e-4)
    mid = model.state()
    mid.copy_from(sk.sim.simulate(model, integrator, model.state(), 50, 1e-3)[-1])   # resting: a warm start
    assert mid.contact_force is not None
    copy = model.state()
    copy.copy_from(mid)
    np.testing.assert_array_equal(steps_from(model, integrator, copy), steps_from(model, integrator, mid))


def test_simulate_without_keeping_states_starts_from_the_given_warm_start():
    model = boxes_on_ground()
    integrator = sk.sim.Featherstone(contact="constraint", tolerance=1e-4)
    mid = sk.sim.simulate(model, integrator, model.state(), 50, 1e-3)[-1]
    kept = sk.sim.simulate(model, integrator, mid, 30, 1e-3)[-1].joint_q.numpy()
    lean = sk.sim.simulate(model, integrator, mid, 30, 1e-3, keep_states=False)[-1].joint_q.numpy()
    np.testing.assert_array_equal(lean, kept)
