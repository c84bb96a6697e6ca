"""Integrator steps that replay (simkit.sim.replay): the same states bit for bit as the
uncached path, a rebuild whenever something the recording baked in changes, and Tapes
that record as before."""

import os
import warnings

import numpy as np
import pytest

import simkit as sk
from sim_helpers import position_loss

F64 = sk.float64
DT = 1e-3


@pytest.fixture(autouse=True)
def _replay_on():
    yield
    sk.config.replay_steps = True


def cloth():
    """A horizontal sheet sliding on the ground (its particles touch it from the start)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, ground=True)
    b.add_cloth_grid((0.0, 0.0199, 0.0), (-0.7071068, 0.0, 0.0, 0.7071068), (0.3, -0.1, 0.0), 6, 6, 0.05, 0.05,
                     mass=0.01, radius=0.02)
    return b.finalize(dtype=F64)


def boxes():
    """Two boxes falling on the ground, one hanging from a hinge: XPBD's body scratch, joints
    and contact patches (its zero_() of the scratch each step is replayed)."""
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="y", ground=True)
    box = b.add_body(((0.0, 0.3, 0.0), (0.0, 0.0, 0.1, 0.995)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=box, density=500.0)
    arm = b.add_body(((1.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.3, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.3, 0.05, 0.05), body=arm, density=500.0)
    b.add_joint_revolute(-1, arm, ((1.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0)), axis=(0.0, 0.0, 1.0))
    return b.finalize(dtype=F64)


def ant():
    gymnasium = pytest.importorskip("gymnasium")
    from simkit.sim.importers import RobotFileWarning
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RobotFileWarning)
        b = sk.sim.ModelBuilder(up_axis="z", ground=True)
        b.add_mjcf(path)
    model = b.finalize(dtype=F64)
    q = model.joint_q.numpy().copy()
    q[7:] = [0.0, 1.0, 0.0, -1.0, 0.0, -1.0, 0.0, 1.0]        # ankles inside their limits
    q[2] = 0.6
    model.joint_q.assign(q)
    return model


def run(make_model, make_integrator, steps, replay, change=None, at=None, control=False):
    """``steps`` ping-pong steps from the model's initial state, with replays on or off;
    ``change(model, integrator, state_in, control)`` before step ``at``. Returns the last
    state, the integrator and the number of replays before the change."""
    sk.config.replay_steps = replay
    model, integrator = make_model(), make_integrator()
    ctrl = model.control() if control else None
    a, b = model.state(), model.state()
    replays_before = 0
    for k in range(steps):
        if k == at:
            replays_before = sum(e.replays for e in integrator.recorded_steps())
            change(model, integrator, a, ctrl)
        integrator.step(model, a, b, ctrl, DT)
        a, b = b, a
    return a, integrator, replays_before


def assert_same_states(x, y):
    for name in ("particle_q", "particle_qd", "body_q", "body_qd", "joint_q", "joint_qd"):
        np.testing.assert_array_equal(getattr(x, name).numpy(), getattr(y, name).numpy(), err_msg=name)


def assert_replays_like_the_uncached_path(make_model, make_integrator, steps=40, change=None, at=20,
                                          control=False):
    cached, integrator, before = run(make_model, make_integrator, steps, True, change, at if change else None,
                                     control)
    plain, _, _ = run(make_model, make_integrator, steps, False, change, at if change else None, control)
    assert_same_states(cached, plain)
    if change is not None:
        assert before >= at - 6          # it was replaying when the change came (both directions)
    else:
        # two calls per direction before it replays (Featherstone: one more, as the first state's
        # bodies were not placed by a step)
        assert sum(e.replays for e in integrator.recorded_steps()) >= steps - 5
    return integrator


# -- the same states bit for bit ---------------------------------------------------------------

def test_featherstone_replays_the_ant_bit_for_bit():
    integrator = assert_replays_like_the_uncached_path(ant, sk.sim.Featherstone, steps=300)
    launches = [e.program.launches for e in integrator.recorded_steps()]
    assert len(launches) == 2 and "ground_contact" in launches[0] and "eval_fk" in launches[0]


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD])
def test_maximal_coordinate_integrators_replay_cloth_bit_for_bit(integrator):
    assert_replays_like_the_uncached_path(cloth, integrator, steps=100)


def test_xpbd_replays_bodies_with_their_scratch_zeroed_each_step():
    integrator = assert_replays_like_the_uncached_path(boxes, sk.sim.XPBD, steps=100)
    assert "zero_()" in integrator.recorded_steps()[0].program.launches


def test_semi_implicit_euler_replays_bodies_and_joints_bit_for_bit():
    assert_replays_like_the_uncached_path(boxes, sk.sim.SemiImplicitEuler, steps=100)


# -- every change the recording baked in rebuilds it -------------------------------------------

def test_another_dt_rebuilds():
    def run_dts(replay):
        sk.config.replay_steps = replay
        model, integrator = cloth(), sk.sim.SemiImplicitEuler()
        a, b = model.state(), model.state()
        for k in range(40):
            integrator.step(model, a, b, None, DT if k < 20 else 0.5 * DT)
            a, b = b, a
        return a, integrator
    (cached, integrator), (plain, _) = run_dts(True), run_dts(False)
    assert_same_states(cached, plain)
    # rebuilt at the new dt (two calls each way), then replaying: 16 replays of the new recordings
    assert [e.guard[0] for e in integrator.recorded_steps()] == [0.5 * DT] * 2
    assert sum(e.replays for e in integrator.recorded_steps()) == 16


def set_gravity(model, integrator, state, control):
    model.gravity = sk.vec3d(0.0, -1.62, 0.0)


def gravity_in_place(model, integrator, state, control):
    model.gravity[1] = -1.62


def new_struct_array(model, integrator, state, control):
    model.triangles.k_mu = sk.array(10.0 * model.triangles.k_mu.numpy(), dtype=F64)


def new_state_array(model, integrator, state, control):
    state.particle_qd = sk.array(state.particle_qd.numpy() + 1.0, dtype=sk.vec3d)


def ground_off_in_struct(model, integrator, state, control):
    model.contact.ground = 0


def contacts_off(model, integrator, state, control):
    model.contacts_enabled = False


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler, sk.sim.XPBD])
@pytest.mark.parametrize("change", [set_gravity, gravity_in_place, new_struct_array, new_state_array, contacts_off])
def test_a_changed_model_or_state_rebuilds(integrator, change):
    assert_replays_like_the_uncached_path(cloth, integrator, steps=60, change=change, at=30)


def test_a_vector_of_the_users_own_edited_every_step_leaves_the_replays_alone():
    model, integrator = cloth(), sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()
    target = sk.vec3d(0.0, 0.0, 0.0)
    for k in range(40):
        target[0] = 0.01 * k                 # the user's loop computing something of its own
        integrator.step(model, a, b, None, DT)
        a, b = b, a
    assert sum(e.replays for e in integrator.recorded_steps()) >= 35


def test_a_struct_scalar_set_rebuilds():
    # XPBD's particle contact reads model.contact.ground in its kernel (a scalar field)
    assert_replays_like_the_uncached_path(cloth, sk.sim.XPBD, steps=60, change=ground_off_in_struct, at=30)


def test_changed_integrator_settings_rebuild():
    def fewer_iterations(model, integrator, state, control):
        integrator.iterations = 1
    assert_replays_like_the_uncached_path(cloth, sk.sim.XPBD, steps=60, change=fewer_iterations, at=30)


def test_featherstone_rebuilds_for_new_control_arrays_and_contacts_off():
    def push(model, integrator, state, control):
        control.joint_act = sk.array(np.full(model.joint_count, 0.3), dtype=F64)
        model.contacts_enabled = False
    assert_replays_like_the_uncached_path(ant, sk.sim.Featherstone, steps=60, change=push, at=30, control=True)


def test_featherstone_places_the_bodies_again_after_the_coordinates_are_written():
    def lift(model, integrator, state, control):
        q = state.joint_q.numpy().copy()
        q[2] += 0.05
        state.joint_q.assign(q)                  # contents only: the guard sees the bodies are stale
    assert_replays_like_the_uncached_path(ant, sk.sim.Featherstone, steps=60, change=lift, at=30)


@pytest.mark.parametrize("replay", [True, False])
@pytest.mark.parametrize("contact", ["penalty", "constraint"])
def test_a_coordinate_written_through_a_numpy_view_moves_the_bodies_at_the_next_step(replay, contact):
    # a .numpy() view counts no version: the step still sees that the bodies no longer are
    # where these coordinates put them, and lands where the same change by assign() lands
    def run(write):
        model = ant()
        integrator = sk.sim.Featherstone(contact=contact)
        integrator.replay = replay
        a, b = model.state(), model.state()
        for k in range(40):
            if k == 20:
                q = a.joint_q.numpy().copy()
                q[8] += 0.5                                  # a hip
                if write == "view":
                    a.joint_q.numpy()[:] = q
                else:
                    a.joint_q.assign(q)
            integrator.step(model, a, b, None, DT)
            a, b = b, a
        return a.joint_q.numpy().copy()
    np.testing.assert_array_equal(run("view"), run("assign"))


def test_under_a_tape_a_coordinate_written_through_a_numpy_view_moves_the_bodies():
    # the tape recorded the placement of b (by the first step), then b's hip moves
    model = ant()
    integrator = sk.sim.Featherstone()
    a, b, c = (model.state(requires_grad=True) for _ in range(3))
    with sk.Tape():
        integrator.step(model, a, b, None, DT)
        b.joint_q.numpy()[8] += 0.5
        integrator.step(model, b, c, None, DT)
    expected = model.state()
    sk.sim.eval_fk(model, b.joint_q, b.joint_qd, expected)
    np.testing.assert_array_equal(b.body_q.numpy(), expected.body_q.numpy())


def test_featherstone_replays_read_the_control_written_between_steps():
    def actuate(model, integrator, state, control):
        control.joint_act.assign(np.full(model.joint_count, 0.3))
    assert_replays_like_the_uncached_path(ant, sk.sim.Featherstone, steps=60, change=actuate, at=30,
                                          control=True)


def test_the_guard_agrees_with_featherstones_own_check():
    from simkit.sim.featherstone import _fk_current
    from simkit.sim.replay import featherstone_guard
    model, integrator = ant(), sk.sim.Featherstone()
    a, b = model.state(), model.state()
    seen = []
    for k in range(6):
        if k == 3:
            a.joint_qd.assign(a.joint_qd.numpy())
        seen.append((featherstone_guard(a)[0], _fk_current(a)))
        integrator.step(model, a, b, None, DT)
        a, b = b, a
    assert all(g == c for g, c in seen) and {g for g, _ in seen} == {True, False}


# -- what does not replay ------------------------------------------------------------------------

def test_featherstone_replays_the_constraint_contact_solve_bit_for_bit():
    integrator = assert_replays_like_the_uncached_path(ant, lambda: sk.sim.Featherstone(contact="constraint"),
                                                       steps=300)
    launches = [e.program.launches for e in integrator.recorded_steps()]
    assert len(launches) == 2 and "pgs" in launches[0] and "ground_rows" in launches[0]


def test_a_replayed_constraint_step_still_refuses_more_contacts_than_max_contacts():
    # a box falls flat onto the ground: its steps replay in the air (no contact), then its
    # four corners touch, more than max_contacts = 2, and the replayed step says so
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.2), (0.0, 0.0, 0.0, 1.0)))
    b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0)
    b.add_joint_free(-1, body)
    model = b.finalize(dtype=F64)
    integrator = sk.sim.Featherstone(contact="constraint", max_contacts=2)
    s0, s1 = model.state(), model.state()
    with pytest.raises(RuntimeError, match=r"max_contacts=2\).*4 contacts"):
        for _ in range(400):
            integrator.step(model, s0, s1, None, 1e-3)
            s0, s1 = s1, s0
    assert sum(e.replays for e in integrator.recorded_steps()) > 50


def test_integrator_replay_false_runs_every_step():
    integrator = sk.sim.SemiImplicitEuler()
    integrator.replay = False
    model = cloth()
    a, b = model.state(), model.state()
    for _ in range(5):
        integrator.step(model, a, b, None, DT)
        a, b = b, a
    assert integrator.recorded_steps() == []


@pytest.mark.parametrize("make_integrator", [sk.sim.SemiImplicitEuler, sk.sim.Featherstone])
def test_a_tape_records_a_step_the_cache_holds_with_the_same_gradients(make_integrator):
    def gradient(replay):
        sk.config.replay_steps = replay
        model = ant() if make_integrator is sk.sim.Featherstone else cloth()
        integrator = make_integrator()
        a, b = model.state(requires_grad=True), model.state(requires_grad=True)
        for _ in range(6):                       # (a, b) and (b, a) are both recorded and replaying
            integrator.step(model, a, b, None, DT)
            a, b = b, a
        tape = sk.Tape()
        with tape:
            integrator.step(model, a, b, None, DT)
            q = b.joint_q if make_integrator is sk.sim.Featherstone else b.particle_q
            loss = position_loss(b.particle_q, np.ones((model.particle_count, 3))) if q is b.particle_q else None
            if loss is None:
                loss = sk.zeros(1, dtype=F64, requires_grad=True)
                sk.launch(sum_kernel, q.shape[0], inputs=[q, loss])
        tape.backward(loss)
        grad = (a.joint_qd if make_integrator is sk.sim.Featherstone else a.particle_qd).grad.numpy().copy()
        return grad, integrator
    (cached, integrator), (plain, _) = gradient(True), gradient(False)
    np.testing.assert_array_equal(cached, plain)
    assert np.abs(cached).max() > 0.0
    assert sum(e.replays for e in integrator.recorded_steps()) >= 1     # it was replaying before the tape


@sk.kernel
def sum_kernel(q: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(out, 0, q[i])


def test_an_integrator_with_recordings_pickles_and_copies_without_them():
    import copy
    import pickle
    model, integrator = cloth(), sk.sim.XPBD(iterations=3)
    a, b = model.state(), model.state()
    for _ in range(4):
        integrator.step(model, a, b, None, DT)
        a, b = b, a
    for twin in (pickle.loads(pickle.dumps(integrator)), copy.deepcopy(integrator)):
        assert twin.iterations == 3 and twin.recorded_steps() == []


def test_a_user_capture_of_a_step_records_its_launches():
    model, integrator = cloth(), sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()
    for _ in range(4):
        integrator.step(model, a, b, None, DT)
        a, b = b, a
    with sk.capture() as graph:
        integrator.step(model, a, b, None, DT)
    assert len(graph) == len(integrator.recorded_steps()[0].program.launches)


@pytest.mark.parametrize("contact", ["penalty", "constraint"])
def test_stepping_the_same_pair_of_ant_states_replays_from_the_fourth_step(contact):
    # the step checks state_in's bodies against its coordinates (a write, as versions count
    # it): the mark it leaves must still let the next step replay
    model = ant()
    integrator = sk.sim.Featherstone(contact=contact)
    a, b = model.state(), model.state()
    for _ in range(10):
        integrator.step(model, a, b, None, DT)
    (entry,) = integrator.recorded_steps()
    assert entry.replays == 7                   # the first places a fresh state_in, the third records


def test_making_another_integrator_leaves_the_recorded_steps_replaying():
    model, integrator = cloth(), sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()
    for _ in range(6):
        integrator.step(model, a, b, None, DT)
        a, b = b, a
        sk.sim.XPBD(iterations=2)        # as a loop making a throwaway integrator would
    assert sum(e.replays for e in integrator.recorded_steps()) == 2   # steps 5 and 6: a, b and b, a

