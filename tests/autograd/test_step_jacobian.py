"""sk.autograd.jacobian of a Python function of launches (issue 30, item 3): the step Jacobian
of a Featherstone pendulum, of gymnasium's ant in the air and of a SemiImplicitEuler
particle step with respect to state and control, against central differences (float64),
reverse against forward mode, the matrix layout, what is left of the caller's arrays, and
the error paths. The comparison with MuJoCo's mjd_transitionFD is in
tests/sim/test_step_jacobian_mujoco.py."""

import os
import warnings

import numpy as np
import pytest

import simkit as sk

F64 = sk.float64


def double_pendulum():
    """Two spheres on two hinges about z (y up), damped and with an effort-free drive on each."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=False)
    b.add_articulation()
    upper = b.add_body(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.0, -1.0, 0.0), 0.1, body=upper)
    b.add_joint_revolute(-1, upper, axis=(0.0, 0.0, 1.0), target_kd=0.3)
    lower = b.add_body(((0.0, -1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere((0.3, -1.8, 0.0), 0.1, body=lower)
    b.add_joint_revolute(upper, lower, parent_xform=((0.0, -1.0, 0.0), (0.0, 0.0, 0.0, 1.0)), axis=(0.0, 0.0, 1.0),
                         target_ke=2.0, target_kd=0.1)
    return b.finalize(dtype=F64)


def central_differences(run, arrays, eps=1e-6):
    """Central differences of ``run()`` (a flat vector) with respect to every component of the
    float64 sk arrays ``arrays`` (columns stacked in their order), each put back after."""
    columns = []
    for a in arrays:
        x0 = a.numpy().copy()
        for k in range(x0.size):
            taken = []
            for step in (eps, -eps):
                x = x0.copy()
                x.reshape(-1)[k] += step
                a.assign(x)
                taken.append(run())
            a.assign(x0)
            columns.append((taken[0] - taken[1]) / (2.0 * eps))
    return np.stack(columns, axis=1)


def pendulum_step():
    model = double_pendulum()
    s0, s1, control = model.state(), model.state(), model.control()
    s0.joint_q.assign([0.3, -0.2])
    s0.joint_qd.assign([0.5, 1.0])
    control.joint_act.assign([0.1, 0.2])
    control.joint_target.assign([0.0, 0.4])
    integrator = sk.sim.Featherstone()
    step = lambda: integrator.step(model, s0, s1, control, 1e-2)
    return step, [s0.joint_q, s0.joint_qd, control.joint_act], [s1.joint_q, s1.joint_qd]


def stacked(arrays):
    return np.concatenate([a.numpy().reshape(-1) for a in arrays])


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_featherstone_pendulum_step_jacobian_matches_central_differences(mode):
    step, inputs, outputs = pendulum_step()
    J = sk.autograd.jacobian(step, inputs, outputs, mode=mode)
    assert J.shape == (4, 6)

    def run():
        step()
        return stacked(outputs)

    expected = central_differences(run, inputs)
    np.testing.assert_allclose(J, expected, rtol=0, atol=1e-8)
    assert np.abs(expected[2:, :2]).max() > 0.05  # the velocities depend on the angles (through the bodies)


def test_featherstone_pendulum_step_jacobian_is_the_same_in_both_modes():
    step, inputs, outputs = pendulum_step()
    Jr = sk.autograd.jacobian(step, inputs, outputs, mode="reverse")
    Jf = sk.autograd.jacobian(step, inputs, outputs, mode="forward")
    np.testing.assert_allclose(Jr, Jf, rtol=0, atol=1e-10)


def ant_in_the_air():
    gymnasium = pytest.importorskip("gymnasium")
    from simkit.sim.importers import RobotFileWarning
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=False)
        ant = b.add_mjcf(path)
    record, model = b.imports[ant], b.finalize(dtype=F64)
    return record, model


def test_featherstone_ant_step_jacobian_matches_central_differences_in_both_modes():
    _record, model = ant_in_the_air()
    rng = np.random.default_rng(3)
    s0, s1, control = model.state(), model.state(), model.control()
    q = model.joint_q.numpy().copy()
    q[7:] += rng.uniform(-0.3, 0.3, q.size - 7)
    s0.joint_q.assign(q)
    s0.joint_qd.assign(rng.normal(size=model.joint_dof_count))
    control.joint_act.assign(rng.normal(size=model.joint_count) * 20.0)
    integrator = sk.sim.Featherstone()
    step = lambda: integrator.step(model, s0, s1, control, 1e-3)
    inputs, outputs = [s0.joint_q, s0.joint_qd, control.joint_act], [s1.joint_q, s1.joint_qd]
    Jr = sk.autograd.jacobian(step, inputs, outputs, mode="reverse")
    Jf = sk.autograd.jacobian(step, inputs, outputs, mode="forward")
    assert Jr.shape == (15 + 14, 15 + 14 + model.joint_count)
    np.testing.assert_allclose(Jr, Jf, rtol=0, atol=1e-10 * max(1.0, np.abs(Jr).max()))

    def run():
        step()
        return stacked(outputs)

    expected = central_differences(run, inputs)
    np.testing.assert_allclose(Jr, expected, rtol=0, atol=1e-6 * np.abs(expected).max())


def particle_step():
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_particle((0.4, 0.8, 0.1), (0.3, -0.2, 0.5), mass=0.2)
    b.add_particle((0.1, 0.4, 0.3), (0.5, -0.1, 0.0), mass=0.3)
    b.add_spring(0, 1, ke=80.0, kd=0.3)
    b.add_spring(1, 2, ke=120.0, kd=0.2, rest_length=0.7)
    model = b.finalize(dtype=F64)
    s0, s1, control = model.state(), model.state(), model.control()
    control.spring_activation.assign([0.1, -0.05])
    integrator = sk.sim.SemiImplicitEuler()
    step = lambda: integrator.step(model, s0, s1, control, 1e-2)
    return step, [s0.particle_q, s0.particle_qd, control.spring_activation], [s1.particle_q, s1.particle_qd]


def test_semi_implicit_euler_particle_step_jacobian_matches_central_differences_in_both_modes():
    step, inputs, outputs = particle_step()
    Jr = sk.autograd.jacobian(step, inputs, outputs, mode="reverse")
    Jf = sk.autograd.jacobian(step, inputs, outputs, mode="forward")
    assert Jr.shape == (18, 20)    # rows: 3 positions x 3 + 3 velocities x 3; columns: + 2 activations
    np.testing.assert_allclose(Jr, Jf, rtol=0, atol=1e-10)

    def run():
        step()
        return stacked(outputs)

    np.testing.assert_allclose(Jr, central_differences(run, inputs), rtol=0, atol=1e-7)


# -- layout, modes and the caller's arrays ---------------------------------------------------------
@sk.kernel
def square_and_sum(x: sk.array(dtype=F64), w: sk.array(dtype=sk.vec3d), y: sk.array(dtype=F64),
                   z: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    y[i] = x[i] * x[i]
    z[i] = w[i] * x[i]


def test_rows_stack_the_outputs_and_columns_the_inputs_and_blocks_cut_them_per_pair():
    x = sk.array([1.0, 2.0], dtype=F64)
    w = sk.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=sk.vec3d)
    y, z = sk.zeros(2, dtype=F64), sk.zeros(2, dtype=sk.vec3d)

    def fn(x, w):
        sk.launch(square_and_sum, 2, inputs=[x, w], outputs=[y, z])

    J = sk.autograd.jacobian(fn, [x, w], [y, z])
    assert J.shape == (2 + 6, 2 + 6)
    blocks = sk.autograd.jacobian_blocks(J, [x, w], [y, z])
    np.testing.assert_array_equal(blocks[(0, 0)], np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(blocks[(1, 0)], np.zeros((2, 6)))
    dz_dx = np.zeros((6, 2))
    dz_dx[:3, 0], dz_dx[3:, 1] = (1.0, 2.0, 3.0), (4.0, 5.0, 6.0)
    np.testing.assert_array_equal(blocks[(0, 1)], dz_dx)                     # z[i][c] is row 3 i + c
    np.testing.assert_array_equal(blocks[(1, 1)], np.kron(np.diag([1.0, 2.0]), np.eye(3)))
    assert blocks[(1, 1)].base is J                                            # views, not copies


def test_auto_mode_takes_the_cheaper_side_and_both_give_the_same_matrix():
    step, inputs, outputs = pendulum_step()
    calls = []

    def counted():
        calls.append(1)
        step()

    wide = sk.autograd.jacobian(counted, inputs, outputs[:1])       # 2 rows < 6 columns: reverse
    tall = sk.autograd.jacobian(counted, inputs[2:], outputs)       # 2 columns < 4 rows: forward
    np.testing.assert_allclose(wide, sk.autograd.jacobian(step, inputs, outputs, mode="forward")[:2], atol=1e-12)
    np.testing.assert_allclose(tall, sk.autograd.jacobian(step, inputs, outputs, mode="reverse")[:, 4:], atol=1e-12)
    assert len(calls) == 2


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_function_runs_its_python_once_per_jacobian(mode):
    step, inputs, outputs = pendulum_step()
    calls = []

    def counted():
        calls.append(1)
        step()

    sk.autograd.jacobian(counted, inputs, outputs, mode=mode)
    assert len(calls) == 1     # reverse: one recording, forward: one run then replays


def test_reverse_rows_after_the_first_replay_its_recording_natively_with_the_same_numbers(monkeypatch):
    from simkit.autograd import function_jacobian

    step, inputs, outputs = pendulum_step()
    sweeps, python_rows = [], []
    sweep, captured = sk.Tape.sweep, function_jacobian._captured_sweeps
    monkeypatch.setattr(sk.Tape, "sweep", lambda tape, seeds: (sweeps.append(1), sweep(tape, seeds)))
    monkeypatch.setattr(function_jacobian, "_captured_sweeps", lambda *a: (python_rows.append(1), captured(*a))[1])
    replayed = sk.autograd.jacobian(step, inputs, outputs, mode="reverse")
    on_cpu = inputs[0].device == "cpu"
    # 4 rows: the first swept (and recorded); on the CPU three native replays, on a GPU Python sweeps
    assert (len(sweeps), len(python_rows)) == ((1, 0) if on_cpu else (1, 1))
    monkeypatch.setattr(sk.config, "mode", "debug")   # debug mode sweeps every row as Python
    swept = sk.autograd.jacobian(step, inputs, outputs, mode="reverse")
    assert len(python_rows) == (1 if on_cpu else 2)
    np.testing.assert_array_equal(replayed, swept)
    assert np.abs(replayed[2:, :2]).max() > 0.05


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_callers_arrays_end_as_one_step_leaves_them_with_their_grads_untouched(mode):
    step, inputs, outputs = pendulum_step()
    control_act = inputs[2]
    control_act.requires_grad = True
    control_act.grad.assign([5.0, 6.0])
    outer = sk.Tape()
    with outer:
        sk.autograd.jacobian(step, inputs, outputs, mode=mode)
    after = stacked(outputs)
    step()
    np.testing.assert_array_equal(after, stacked(outputs))
    assert not inputs[0].requires_grad and not inputs[1].requires_grad and not outputs[0].requires_grad
    np.testing.assert_array_equal(control_act.grad.numpy(), [5.0, 6.0])
    assert not outer.entries      # an active Tape records none of the Jacobian's passes


@sk.kernel
def add_squares(x: sk.array(dtype=F64), acc: sk.array(dtype=F64)):
    i = sk.tid()
    sk.atomic_add(acc, 0, x[i] * x[i])


@sk.kernel
def tripled(z: sk.array(dtype=F64), w: sk.array(dtype=F64)):
    i = sk.tid()
    w[i] = 3.0 * z[i]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_copies_and_host_writes_inside_the_function_are_differentiated_and_replayed(mode):
    # acc accumulates: each forward replay starts from its value before the call, so one call's
    # sum is left; the copy's gradient (tangent) passes to its source; the host write of
    # scratch cuts it
    x = sk.array([1.0, 2.0], dtype=F64)
    acc, copy, w = sk.array([10.0], dtype=F64), sk.zeros(1, dtype=F64), sk.zeros(1, dtype=F64)
    scratch = sk.zeros(1, dtype=F64)

    def fn():
        sk.launch(add_squares, 2, inputs=[x, acc])
        copy.assign(acc)
        sk.launch(tripled, 1, inputs=[copy, w])
        scratch.assign(np.array([5.0]))
        sk.launch(add_squares, 1, inputs=[x, scratch])

    J = sk.autograd.jacobian(fn, [x], [acc, w, scratch], mode=mode)
    np.testing.assert_array_equal(J, [[2.0, 4.0], [6.0, 12.0], [2.0, 0.0]])
    np.testing.assert_array_equal([acc.numpy()[0], w.numpy()[0], scratch.numpy()[0]], [15.0, 45.0, 6.0])


@sk.kernel
def doubled_and_peak(x: sk.array(dtype=F64), y: sk.array(dtype=F64), peak: sk.array(dtype=F64)):
    i = sk.tid()
    y[i] = 2.0 * x[i]
    sk.atomic_max(peak, 0, x[i])


def test_auto_falls_back_to_reverse_mode_when_a_kernel_has_no_tangent_rule():
    # float atomic_max has no tangent: forward mode refuses it, "auto" (1 column < 2 rows would
    # take forward) gives the adjoints' matrix and leaves one call's results
    x = sk.array([3.0], dtype=F64)
    y, peak = sk.zeros(1, dtype=F64), sk.array([-1.0], dtype=F64)

    def fn():
        sk.launch(doubled_and_peak, 1, inputs=[x, y, peak])

    with pytest.raises(sk.CompileError):
        sk.autograd.jacobian(fn, [x], [y, peak], mode="forward")
    peak.assign([-1.0])
    J = sk.autograd.jacobian(fn, [x], [y, peak])
    np.testing.assert_array_equal(J, [[2.0], [1.0]])
    assert (y.numpy()[0], peak.numpy()[0]) == (6.0, 3.0)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_function_that_raises_leaves_the_arrays_and_grads_as_they_were(mode):
    x = sk.array([3.0], dtype=F64)
    y, w = sk.array([7.0], dtype=F64), sk.zeros(1, dtype=F64)

    def fn():
        sk.launch(tripled, 1, inputs=[x, y])
        raise RuntimeError("the step failed")

    with pytest.raises(RuntimeError, match="the step failed"):
        sk.autograd.jacobian(fn, [x], [y, w], mode=mode)
    assert y.numpy()[0] == 7.0 and not x.requires_grad and not y.requires_grad


def test_fn_is_given_the_inputs_when_it_takes_them():
    x = sk.array([3.0], dtype=F64)
    y, z = sk.zeros(1, dtype=F64), sk.zeros(1, dtype=sk.vec3d)
    w = sk.array([[1.0, 1.0, 1.0]], dtype=sk.vec3d)
    J = sk.autograd.jacobian(lambda x: sk.launch(square_and_sum, 1, inputs=[x, w], outputs=[y, z]), [x], [y])
    np.testing.assert_array_equal(J, [[6.0]])


# -- errors ----------------------------------------------------------------------------------------
def test_an_input_no_launch_reads_is_an_error_naming_it():
    step, inputs, outputs = pendulum_step()
    unread = sk.zeros(3, dtype=F64)
    for mode in ("reverse", "forward"):
        with pytest.raises(ValueError, match=r"inputs\[1\] \(an array of float64 with shape \(3,\)\) is read by no "
                                             "launch"):
            sk.autograd.jacobian(step, [inputs[0], unread], outputs, mode=mode)


def test_an_output_no_launch_writes_is_an_error_naming_it():
    step, inputs, outputs = pendulum_step()
    with pytest.raises(ValueError, match=r"outputs\[0\] .* is written by no launch"):
        sk.autograd.jacobian(step, inputs, [sk.zeros(2, dtype=F64)], mode="reverse")


def test_non_float_and_non_array_inputs_and_outputs_are_type_errors():
    step, inputs, outputs = pendulum_step()
    with pytest.raises(TypeError, match=r"inputs\[1\] is an array of int32 with shape \(4,\); only float arrays"):
        sk.autograd.jacobian(step, [inputs[0], sk.zeros(4, dtype=sk.int32)], outputs)
    with pytest.raises(TypeError, match=r"outputs\[0\] must be an sk array, got ndarray"):
        sk.autograd.jacobian(step, inputs, [np.zeros(2)])
    with pytest.raises(TypeError, match="inputs must be a list of sk arrays, got Array"):
        sk.autograd.jacobian(step, inputs[0], outputs)
    with pytest.raises(ValueError, match=r"inputs\[1\] is the same array as inputs\[0\]"):
        sk.autograd.jacobian(step, [inputs[0], inputs[0]], outputs)


def test_a_wrong_mode_is_an_error_listing_the_modes():
    step, inputs, outputs = pendulum_step()
    with pytest.raises(ValueError, match="mode must be 'auto', 'forward' or 'reverse', got 'backward'"):
        sk.autograd.jacobian(step, inputs, outputs, mode="backward")


def test_a_function_taking_neither_nothing_nor_the_inputs_is_an_error():
    step, inputs, outputs = pendulum_step()
    with pytest.raises(TypeError, match=r"must take no arguments or one per input \(3\)"):
        sk.autograd.jacobian(lambda a, b: step(), inputs, outputs)


def test_jacobian_blocks_refuses_a_matrix_of_another_shape():
    x, y = sk.zeros(2, dtype=F64), sk.zeros(3, dtype=F64)
    with pytest.raises(ValueError, match=r"J must be a matrix of shape \(3, 2\)"):
        sk.autograd.jacobian_blocks(np.zeros((2, 3)), [x], [y])
