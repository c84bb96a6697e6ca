"""sk.sim.simulate(check=...): a run that diverged (NaN, or finite but far beyond the scene's
scales) stops with a SimulationError naming the step, the time and the array."""

import numpy as np
import pytest

import simkit as sk


def stiff_pendulum():
    """A 1 kg particle hanging on a spring of 1e6 N/m: stable for dt < 2 ms, NaN at dt = 10 ms."""
    b = sk.sim.ModelBuilder(ground=False)
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    b.add_particle((0.0, 1.5, 0.0), (0.0, 0.0, 0.0), mass=0.0)
    b.add_spring(0, 1, ke=1e6, kd=0.0)
    return b.finalize(dtype=sk.float64)


def kicked_ball():
    """A ball dropped on a ground 2500 times too stiff for dt = 1e-3 s: one contact step kicks it
    to ~1e4 m/s, and it flies off ballistically, finite."""
    dt = 1e-3
    ke = 4.0 / (dt / 2500.0) ** 2          # dt = 2500 x 2 sqrt(m / ke)
    b = sk.sim.ModelBuilder(ground=True, contact_ke=ke, contact_kd=0.0)
    b.add_particle((0.0, 0.5, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.1)
    return b.finalize(dtype=sk.float64), dt


@pytest.mark.parametrize("keep_states", [True, False])
def test_simulate_with_check_stops_a_run_that_went_nan_naming_step_time_and_array(keep_states):
    model = stiff_pendulum()
    with pytest.raises(sk.sim.SimulationError, match=r"simulate: the simulation diverged at step 10 \(t = 0\.1 s\): "
                                                     r"particle 0 moves at .* m/s.*lower dt"):
        sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 200, 1e-2, keep_states=keep_states,
                        check=10)


def test_simulate_without_check_is_unchanged_and_runs_into_nan():
    model = stiff_pendulum()
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 200, 1e-2, keep_states=False)
    assert not np.all(np.isfinite(states[-1].particle_q.numpy()))


def test_a_finite_but_absurd_state_is_refused_by_the_automatic_bounds():
    model, dt = kicked_ball()
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1000, dt, keep_states=False)
    assert np.all(np.isfinite(states[-1].particle_q.numpy()))           # finite...
    assert states[-1].particle_q.numpy()[0, 1] > 1e3                      # ...and nonsense
    with pytest.raises(sk.sim.SimulationError, match="particle 0 moves at .* m/s, over the bound"):
        sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1000, dt, keep_states=False, check=1)


def test_the_distance_bound_names_how_far_a_particle_went():
    model, dt = kicked_ball()
    check = sk.sim.StabilityCheck(every=1, max_speed=None, max_distance=10.0)
    with pytest.raises(sk.sim.SimulationError, match="particle 0 is .* m from the scene's initial center, over the "
                                                     "bound of 10 m"):
        sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1000, dt, keep_states=False, check=check)


def test_without_bounds_only_nan_and_infinity_are_refused():
    model, dt = kicked_ball()
    finite_only = sk.sim.StabilityCheck(every=1, max_speed=None, max_distance=None)
    sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1000, dt, keep_states=False, check=finite_only)
    with pytest.raises(sk.sim.SimulationError, match=r"particle_q\[0\] = \[nan nan nan\] is not finite|"
                                                     r"particle_qd\[0\] = .* is not finite"):
        pendulum = stiff_pendulum()
        sk.sim.simulate(pendulum, sk.sim.SemiImplicitEuler(), pendulum.state(), 200, 1e-2, check=finite_only)


def test_a_stable_run_passes_the_check_with_the_same_result():
    model = stiff_pendulum()
    plain = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 300, 1e-4, keep_states=False)
    checked = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 300, 1e-4, keep_states=False,
                              check=1)
    assert np.array_equal(plain[-1].particle_q.numpy(), checked[-1].particle_q.numpy())


def test_a_free_fall_over_a_long_run_is_not_refused():
    # 60 s of free fall reaches 590 m/s and 17.7 km: the automatic bounds grow with the run's length
    b = sk.sim.ModelBuilder(ground=False)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize(dtype=sk.float64)
    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 6000, 1e-2, keep_states=False,
                             check=100)
    assert states[-1].particle_qd.numpy()[0, 1] == pytest.approx(-9.81 * 60.0)


@pytest.mark.parametrize("check, message", [
    (0, "simulate: check must be None, an int >= 1"),
    (True, "simulate: check must be None, an int >= 1"),
    ("yes", "simulate: check must be None, an int >= 1"),
])
def test_simulate_refuses_a_malformed_check(check, message):
    model = stiff_pendulum()
    with pytest.raises(ValueError, match=message):
        sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), 1, 1e-3, check=check)


@pytest.mark.parametrize("kwargs, message", [
    (dict(every=0), "StabilityCheck: every must be an int >= 1"),
    (dict(max_speed=-1.0), "StabilityCheck: max_speed must be a finite number > 0"),
    (dict(max_distance=float("nan")), "StabilityCheck: max_distance must be a finite number > 0"),
])
def test_stability_check_refuses_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sk.sim.StabilityCheck(**kwargs)


def test_simulate_with_check_is_refused_inside_a_capture():
    model = stiff_pendulum()
    state = model.state()
    with pytest.raises(RuntimeError, match=r"simulate: check is not allowed inside sk.capture\(\)"):
        with sk.capture():
            sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), state, 1, 1e-3, check=1)
