"""sk.capture / sk.replay: a recorded launch list, replayed natively on the CPU and as a CUDA graph on a GPU."""

import numpy as np
import pytest

import simkit as sk

F = sk.array(dtype=float)
F64 = sk.array(dtype=sk.float64)


@sk.kernel
def axpy(x: F, y: F, a: float):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def square_into(x: F, out: F):
    i = sk.tid()
    out[i] = x[i] * x[i]


@sk.kernel
def total(x: F, out: F):
    i = sk.tid()
    sk.atomic_add(out, 0, x[i])


@sk.kernel
def grid_fill(out: sk.array(dtype=float, ndim=2), scale: float):
    i, j = sk.tid()
    out[i, j] = scale * float(i * 100 + j)


@sk.kernel
def read_at(x: F, index: int, out: F):
    i = sk.tid()
    out[i] = x[index + i]


@sk.struct
class Body:
    pos: sk.array(dtype=sk.vec3)
    vel: sk.array(dtype=sk.vec3)
    dt: float


@sk.kernel
def integrate(b: Body):
    i = sk.tid()
    b.pos[i] = b.pos[i] + b.vel[i] * b.dt


@sk.kernel
def sin_into(x: F64, y: F64):
    i = sk.tid()
    y[i] = sk.sin(x[i])


def _chain(x, y, z, s):
    sk.launch(axpy, len(x), inputs=[x, y, 2.0])
    sk.launch(square_into, len(y), inputs=[y, z])
    sk.launch(total, len(z), inputs=[z, s])


def _arrays(n=5):
    x = sk.array(np.linspace(-1.0, 1.0, n), dtype=sk.float32)
    y = sk.array(np.arange(n, dtype=np.float32))
    return x, y, sk.zeros(n), sk.zeros(1)


# -- what a replay does ----------------------------------------------------------------

def test_capture_records_without_running(device):
    x, y, z, s = _arrays()
    before = y.numpy().copy()
    with sk.capture() as g:
        _chain(x, y, z, s)
    assert len(g) == 3 and g.device == device
    assert np.array_equal(y.numpy(), before) and not z.numpy().any() and s.numpy()[0] == 0


def test_replay_equals_the_same_launches_run_directly():
    x, y, z, s = _arrays()
    x2, y2, z2, s2 = _arrays()
    with sk.capture() as g:
        _chain(x, y, z, s)
    for _ in range(3):
        sk.replay(g)
        _chain(x2, y2, z2, s2)
        for a, b in ((y, y2), (z, z2), (s, s2)):
            assert np.array_equal(a.numpy(), b.numpy())


def test_later_launches_read_what_earlier_ones_wrote_in_the_same_replay():
    x, y, z, s = _arrays(3)
    with sk.capture() as g:
        _chain(x, y, z, s)
    sk.replay(g)
    want_y = 2.0 * x.numpy() + np.arange(3, dtype=np.float32)
    assert np.allclose(z.numpy(), want_y ** 2) and np.isclose(s.numpy()[0], (want_y ** 2).sum())


def test_replay_reads_the_current_contents_of_the_same_buffers():
    x, y, z, s = _arrays(4)
    with sk.capture() as g:
        sk.launch(square_into, 4, inputs=[x, z])
    x.assign(np.array([1.0, 2.0, 3.0, 4.0]))
    sk.replay(g)
    assert z.numpy().tolist() == [1.0, 4.0, 9.0, 16.0]
    x.fill_(0.5)
    sk.replay(g)
    assert z.numpy().tolist() == [0.25] * 4


def test_scalars_and_grid_sizes_are_baked_in():
    out = sk.zeros((3, 4))
    scale = 1.0
    with sk.capture() as g:
        sk.launch(grid_fill, (3, 4), inputs=[out, scale])
    scale = 2.0  # noqa: F841 - changing the Python variable does not change the graph
    sk.replay(g)
    want = np.arange(3)[:, None] * 100.0 + np.arange(4)[None, :]
    assert np.array_equal(out.numpy(), want)


def test_large_grids_are_split_over_the_thread_pool_as_launches_are():
    n = 200_000
    x = sk.array(np.random.default_rng(0).random(n, dtype=np.float32))
    y, y2 = sk.zeros(n), sk.zeros(n)
    with sk.capture() as g:
        sk.launch(axpy, n, inputs=[x, y, 0.5])
    sk.replay(g)
    sk.launch(axpy, n, inputs=[x, y2, 0.5])
    assert np.array_equal(y.numpy(), y2.numpy())


def test_struct_arguments_are_captured_by_value_with_their_arrays():
    b = Body(pos=sk.zeros(2, dtype=sk.vec3), vel=sk.full(2, sk.vec3(1.0, 0.0, 2.0)), dt=0.5)
    with sk.capture() as g:
        sk.launch(integrate, 2, inputs=[b])
    b.dt = 100.0  # baked in at capture
    for _ in range(4):
        sk.replay(g)
    assert np.allclose(b.pos.numpy(), [[2.0, 0.0, 4.0]] * 2)


def test_adjoint_launches_can_be_captured():
    x = sk.array([0.1, 0.2, 0.3], dtype=sk.float64, requires_grad=True)
    y = sk.zeros(3, dtype=sk.float64, requires_grad=True)
    y.grad.assign(np.ones(3))
    with sk.capture() as g:
        sk.launch(sin_into, 3, inputs=[x, y], adjoint=True)
    assert not x.grad.numpy().any()
    sk.replay(g)
    assert not y.grad.numpy().any()     # the adjoint of the store y[i] = ... takes y's grad
    y.grad.assign(np.ones(3))
    sk.replay(g)
    assert np.allclose(x.grad.numpy(), 2.0 * np.cos(x.numpy()))


def test_empty_capture_replays_as_a_no_op():
    with sk.capture() as g:
        pass
    assert len(g) == 0 and g.device is None
    sk.replay(g)


@pytest.mark.cpu_only("numpy buffers are CPU memory")
def test_numpy_and_torch_like_buffers_are_kept_alive_by_the_graph():
    x_np = np.arange(4, dtype=np.float32)
    out = sk.zeros(4)
    with sk.capture() as g:
        sk.launch(square_into, 4, inputs=[x_np, out])
    del x_np
    sk.replay(g)
    assert out.numpy().tolist() == [0.0, 1.0, 4.0, 9.0]


# -- version counters and the tape ---------------------------------------------------------

def test_replay_counts_writes_like_the_launches_would():
    x, y, z, s = _arrays()
    with sk.capture() as g:
        _chain(x, y, z, s)
        sk.launch(axpy, 5, inputs=[x, y, 1.0])
    versions = [a._version for a in (x, y, z, s)]
    assert versions == [0, 0, 0, 0]  # nothing ran during the capture
    sk.replay(g)
    assert [a._version for a in (x, y, z, s)] == [0, 2, 1, 1]


def test_a_tape_sees_a_replay_as_an_overwrite():
    x = sk.array([0.5, 1.0], requires_grad=True)
    y = sk.zeros(2)
    with sk.capture() as g:
        sk.launch(axpy, 2, inputs=[y, x, 1.0])  # writes x
    with sk.Tape() as tape:
        sk.launch(square_into, 2, inputs=[x, y])
    sk.replay(g)
    with pytest.raises(RuntimeError, match="overwrote"):
        tape.backward(grads={y: np.ones(2)})


def test_tape_inside_a_capture_is_refused():
    with sk.capture():
        with pytest.raises(RuntimeError, match="recording a Tape is not allowed inside sk.capture"):
            with sk.Tape():
                pass


def test_capture_inside_a_tape_is_refused():
    with sk.Tape():
        with pytest.raises(RuntimeError, match="inside a recording sk.Tape"):
            with sk.capture():
                pass


def test_replay_while_a_tape_records_is_refused():
    x, y, z, s = _arrays()
    with sk.capture() as g:
        sk.launch(square_into, 5, inputs=[x, z])
    with sk.Tape():
        with pytest.raises(RuntimeError, match="while an sk.Tape is recording"):
            sk.replay(g)


def test_backward_inside_a_capture_is_refused():
    x = sk.array([0.5], requires_grad=True)
    y = sk.zeros(1)
    with sk.Tape() as tape:
        sk.launch(square_into, 1, inputs=[x, y])
    with sk.capture():
        with pytest.raises(RuntimeError, match="tape.backward"):
            tape.backward(grads={y: np.ones(1)})


def test_jacobian_inside_a_capture_is_refused():
    x, y = sk.array([0.5]), sk.zeros(1)
    with sk.capture():
        with pytest.raises(RuntimeError, match="jacobian"):
            sk.autograd.jacobian(square_into, 1, inputs=[x], outputs=[y])


# -- errors ---------------------------------------------------------------------------------

def test_nested_capture_is_an_error():
    with sk.capture():
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with sk.capture():
                pass


@pytest.mark.parametrize("write", [lambda a: a.zero_(), lambda a: a.fill_(1.0), lambda a: a.assign([1.0, 2.0]),
                                   lambda a: sk.copy(a, sk.zeros(2))], ids=["zero_", "fill_", "assign", "copy"])
def test_array_writes_inside_a_capture_are_refused(write):
    a = sk.zeros(2)
    with sk.capture():
        with pytest.raises(RuntimeError, match="not allowed inside sk.capture"):
            write(a)
    write(a)  # and allowed again afterwards


@pytest.mark.cpu_only("a CPU replay stops at the failing launch; tests/cuda/test_graph.py covers a CUDA graph")
def test_bounds_errors_of_a_replayed_kernel_still_raise_in_debug_mode(monkeypatch):
    monkeypatch.setattr(sk.config, "mode", "debug")
    x, out, later = sk.zeros(4), sk.zeros(2), sk.zeros(4)
    with sk.capture() as g:
        sk.launch(read_at, 2, inputs=[x, 1, out])
        sk.launch(read_at, 2, inputs=[x, 3, out])  # reads x[4]: out of bounds
        sk.launch(square_into, 4, inputs=[sk.ones(4), later])
    with pytest.raises(IndexError, match=r"kernel 'read_at' .*index \(4,\) out of bounds for array of shape \(4,\)"):
        sk.replay(g)
    assert not later.numpy().any()  # launches after the failing one did not run
    assert out._version == 1 and later._version == 0
    sk.launch(read_at, 2, inputs=[x, 1, out])  # the error record was cleared


def test_an_exception_inside_the_capture_spoils_the_graph():
    x, y, z, s = _arrays()
    with pytest.raises(KeyError):
        with sk.capture() as g:
            sk.launch(square_into, 5, inputs=[x, z])
            raise KeyError("boom")
    with pytest.raises(RuntimeError, match="interrupted by KeyError"):
        sk.replay(g)
    sk.launch(square_into, 5, inputs=[x, z])  # launches run normally again


def test_replaying_inside_the_capture_is_an_error():
    x, y, z, s = _arrays()
    with sk.capture() as g:
        sk.launch(square_into, 5, inputs=[x, z])
        with pytest.raises(RuntimeError, match="still open"):
            sk.replay(g)


def test_bad_launch_arguments_raise_at_capture_time():
    with sk.capture():
        with pytest.raises(TypeError, match="argument 'a' expects float32"):
            sk.launch(axpy, 2, inputs=[sk.zeros(2), sk.zeros(2), "two"])


def test_replay_takes_only_graphs():
    with pytest.raises(TypeError, match="sk.capture"):
        sk.replay([])


def test_capture_on_a_bad_device_names_the_parameter():
    with pytest.raises(ValueError, match="capture\\(device\\) must be 'cpu', 'cuda' or 'cuda:N'"):
        sk.capture("tpu")


@pytest.mark.skipif(sk.is_cuda_available(), reason="this machine has a GPU")
@pytest.mark.cpu_only("about a machine without a GPU driver")
def test_capture_on_cuda_without_a_gpu_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="no CUDA driver/GPU"):
        sk.capture("cuda")


@pytest.mark.cpu_only("a capture for the CPU")
def test_capture_for_the_cpu_refuses_nothing_on_the_cpu():
    x, y, z, s = _arrays()
    with sk.capture("cpu") as g:
        sk.launch(square_into, 5, inputs=[x, z], device="cpu")
    sk.replay(g)
    assert np.allclose(z.numpy(), x.numpy() ** 2)
