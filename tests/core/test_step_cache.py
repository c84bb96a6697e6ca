"""StepCache: a function of launches called again with the same objects replays what it
recorded, and anything it baked in that changes makes it run (and record) again."""

import numpy as np
import pytest

import simkit as sk
from simkit.core.step_cache import StepCache

F = sk.array(dtype=float)


@sk.struct
class Bodies:
    x: F
    v: F
    gain: float
    wind: sk.vec3


@sk.kernel
def advance(b: Bodies, dt: float):
    i = sk.tid()
    b.v[i] = b.v[i] + dt * b.gain * b.wind[1]
    b.x[i] = b.x[i] + dt * b.v[i]


@sk.kernel
def accumulate(x: F, total: F):
    i = sk.tid()
    sk.atomic_add(total, 0, x[i])


class Step:
    """A step of launches (and whatever else a test adds) that counts its Python runs."""

    def __init__(self, bodies: Bodies, extra=None):
        self.bodies, self.extra, self.calls = bodies, extra, 0

    def __call__(self, dt: float) -> None:
        self.calls += 1
        sk.launch(advance, len(self.bodies.x), inputs=[self.bodies, dt])
        if self.extra is not None:
            self.extra()


def bodies(n: int = 4) -> Bodies:
    return Bodies(x=sk.zeros(n), v=sk.zeros(n), gain=1.0, wind=sk.vec3(0.0, -2.0, 0.0))


def steps(cache: StepCache, step: Step, count: int, dt: float = 0.01) -> None:
    for _ in range(count):
        cache.run((step.bodies,), dt, lambda: step(dt))


def reference(count: int, dt: float = 0.01, n: int = 4) -> np.ndarray:
    b = bodies(n)
    for _ in range(count):
        sk.launch(advance, n, inputs=[b, dt])
    return b.x.numpy().copy()


@pytest.fixture(autouse=True)
def _cpu_only(device, request):
    if device != "cpu" and "gpu" not in request.node.name:
        pytest.skip("steps replay on the CPU (on a GPU they run as before)")


def test_a_step_on_a_gpu_keeps_running_its_python(device):
    if device == "cpu":
        pytest.skip("a step on a GPU")
    b = Bodies(x=sk.zeros(4, device=device), v=sk.zeros(4, device=device), gain=1.0,
               wind=sk.vec3(0.0, -2.0, 0.0))
    step, cache = Step(b), StepCache()
    steps(cache, step, 5)
    assert step.calls == 5 and "steps replay on the CPU" in cache.entries()[0].reason
    np.testing.assert_array_equal(b.x.numpy(), reference(5))


def test_the_third_call_replays_and_gives_the_same_result():
    step, cache = Step(bodies()), StepCache()
    steps(cache, step, 10)
    assert step.calls == 2                       # the first runs, the second records while running
    np.testing.assert_array_equal(step.bodies.x.numpy(), reference(10))
    (entry,) = cache.entries()
    assert entry.replays == 8 and entry.program.launches == ["advance"]


def test_a_replay_counts_the_writes_of_its_launches():
    step, cache = Step(bodies()), StepCache()
    steps(cache, step, 2)
    before = step.bodies.x._version
    steps(cache, step, 3)
    assert step.calls == 2 and step.bodies.x._version == before + 3


def test_a_replay_counts_no_writes_of_an_array_marked_scratch():
    from simkit.core.array import mark_scratch

    b = bodies()
    mark_scratch(b.v)                            # read by nothing that checks counts
    step, cache = Step(b), StepCache()
    steps(cache, step, 2)
    x, v = b.x._version, b.v._version
    steps(cache, step, 3)
    assert step.calls == 2 and b.x._version == x + 3 and b.v._version == v
    np.testing.assert_array_equal(b.x.numpy(), reference(5))


def test_another_guard_value_runs_again():
    step, cache = Step(bodies()), StepCache()
    steps(cache, step, 5, dt=0.01)
    steps(cache, step, 5, dt=0.02)
    assert step.calls == 4
    b = bodies()
    for dt in [0.01] * 5 + [0.02] * 5:
        sk.launch(advance, 4, inputs=[b, dt])
    np.testing.assert_array_equal(step.bodies.x.numpy(), b.x.numpy())


def test_a_struct_field_set_runs_again():
    step, cache = Step(bodies()), StepCache()
    steps(cache, step, 5)
    step.bodies.gain = 3.0
    steps(cache, step, 1)
    assert step.calls == 3
    b = bodies()
    for gain in [1.0] * 5 + [3.0]:
        b.gain = gain
        sk.launch(advance, 4, inputs=[b, 0.01])
    np.testing.assert_array_equal(step.bodies.x.numpy(), b.x.numpy())


def test_new_structs_built_between_calls_leave_the_recording_alone():
    step, cache = Step(bodies()), StepCache()
    for _ in range(5):
        bodies()                                 # no recording holds a struct being built
        steps(cache, step, 1)
    assert step.calls == 2


def test_a_value_changed_in_place_runs_again():
    step, cache = Step(bodies()), StepCache()
    steps(cache, step, 5)
    step.bodies.wind[1] = 4.0                    # the same vec3 object, another component
    steps(cache, step, 1)
    assert step.calls == 3
    assert step.bodies.v.numpy()[0] == pytest.approx(5 * 0.01 * -2.0 + 0.01 * 4.0)


def test_values_no_recording_holds_change_without_running_again():
    step, cache = Step(bodies()), StepCache()
    mine, other = sk.vec3(0.0, 0.0, 0.0), bodies()
    for k in range(6):
        mine[0] = float(k)                       # a vec3 of the caller's own, edited in place
        other.gain = float(k)                    # a struct no recording was given
        steps(cache, step, 1)
    assert step.calls == 2                       # recorded at the second call, replayed since


def test_a_value_a_struct_took_after_the_recording_is_watched_once_recorded_again():
    step, cache = Step(bodies()), StepCache()
    steps(cache, step, 5)
    wind = sk.vec3(0.0, 1.0, 0.0)
    step.bodies.wind = wind                      # a set: runs and records again
    steps(cache, step, 2)
    wind[1] = 3.0                                # the struct holds this very vec3: runs again
    steps(cache, step, 1)
    assert step.calls == 5
    b = bodies()
    for w in [-2.0] * 5 + [1.0] * 2 + [3.0]:
        b.wind = sk.vec3(0.0, w, 0.0)
        sk.launch(advance, 4, inputs=[b, 0.01])
    np.testing.assert_array_equal(step.bodies.x.numpy(), b.x.numpy())


def test_an_array_replaced_by_a_longer_one_runs_again_over_its_size():
    step, cache = Step(bodies(4)), StepCache()
    steps(cache, step, 5)
    step.bodies.x, step.bodies.v = sk.zeros(6), sk.zeros(6)
    steps(cache, step, 5)
    assert step.calls == 4
    np.testing.assert_array_equal(step.bodies.x.numpy(), reference(5, n=6))


def test_host_writes_to_arrays_are_replayed_in_order():
    x, total = sk.array(np.arange(4.0)), sk.zeros(1)

    def extra():
        total.zero_()                        # the plain step zeroes, then accumulates: never a running sum
        sk.launch(accumulate, 4, inputs=[step.bodies.x, total])
        x.fill_(2.0)
        step.bodies.x.assign(x)

    step, cache = Step(bodies(), extra), StepCache()
    steps(cache, step, 6)
    assert step.calls == 2
    assert cache.entries()[0].program.launches == ["advance", "zero_()", "accumulate", "fill_()", "assign()"]
    np.testing.assert_array_equal(step.bodies.x.numpy(), 2.0)
    # the 6th step: x = 2 + dt v (v = 6 dt wind), summed from zero
    np.testing.assert_allclose(total.numpy(), 4 * (2.0 + 0.01 * 6 * 0.01 * -2.0), rtol=1e-6)


@pytest.mark.parametrize("extra, reason", [
    (lambda: float(sk.zeros(1).numpy()[0]), "allocates an array"),
    (lambda: float(HOST_READ.numpy()[0]), "reads an array's contents on the host"),
    (lambda: HOST_READ.assign(np.ones(1)), "assigns host data"),
])
def test_a_step_with_host_logic_keeps_running_its_python(extra, reason):
    step, cache = Step(bodies(), extra), StepCache()
    steps(cache, step, 5)
    assert step.calls == 5
    (entry,) = cache.entries()
    assert entry.program is None and reason in entry.reason


HOST_READ = sk.zeros(1)


def test_a_step_that_sets_struct_fields_while_it_runs_is_not_replayed():
    def extra():
        step.bodies.gain = 1.0                   # the same value, but a set: the run is not repeatable as bytes

    step, cache = Step(bodies(), extra), StepCache()
    steps(cache, step, 5)
    assert step.calls == 5 and "changes attributes" in cache.entries()[0].reason


def test_under_a_tape_the_step_runs_and_is_recorded_by_the_tape():
    b = Bodies(x=sk.zeros(4, requires_grad=True), v=sk.array(np.ones(4, np.float32), requires_grad=True), gain=1.0,
               wind=sk.vec3(0.0, 0.0, 0.0))
    step, cache = Step(b), StepCache()
    steps(cache, step, 4)
    tape = sk.Tape()
    with tape:
        steps(cache, step, 1)
    assert step.calls == 3 and len(tape.entries) == 1


def test_inside_a_capture_the_step_runs_into_the_graph():
    step, cache = Step(bodies()), StepCache()
    steps(cache, step, 4)
    with sk.capture() as graph:
        steps(cache, step, 1)
    assert step.calls == 3 and len(graph) == 1


def test_replay_steps_false_runs_every_call():
    step, cache = Step(bodies()), StepCache()
    sk.config.replay_steps = False
    try:
        steps(cache, step, 4)
    finally:
        sk.config.replay_steps = True
    assert step.calls == 4


def test_replay_steps_must_be_a_bool():
    with pytest.raises(TypeError, match="replay_steps must be True or False"):
        sk.config.replay_steps = 1
    assert sk.config.replay_steps is True


def test_a_ping_pong_pair_replays_both_ways():
    a, b = bodies(), bodies()
    sa, sb, cache = Step(a), Step(b), StepCache()
    for _ in range(6):
        cache.run((a,), 0.01, lambda: sa(0.01))
        cache.run((b,), 0.01, lambda: sb(0.01))
    assert (sa.calls, sb.calls) == (2, 2) and [e.replays for e in cache.entries()] == [4, 4]
