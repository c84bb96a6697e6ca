"""sk.capture / sk.replay on the GPU: stream capture into a CUDA graph, with the CPU's rules."""

import numpy as np
import pytest

import simkit as sk

F = sk.array(dtype=float)


@sk.kernel
def axpy(x: F, y: F, a: float):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def square_into(x: F, out: F):
    i = sk.tid()
    out[i] = x[i] * x[i]


@sk.kernel
def read_at(x: F, index: int, out: F):
    i = sk.tid()
    out[i] = x[index + i]


def _step(x, y, z):
    sk.launch(axpy, len(x), inputs=[x, y, 0.5])
    sk.launch(square_into, len(y), inputs=[y, z])


def test_capture_records_and_replay_runs_like_the_cpu(gpu):
    data = np.linspace(-1, 1, 1000).astype(np.float32)
    results = {}
    for dev in ("cpu", gpu):
        x, y, z = sk.array(data, device=dev), sk.ones(1000, device=dev), sk.zeros(1000, device=dev)
        with sk.capture() as g:
            _step(x, y, z)
        assert len(g) == 2 and g.device == dev
        assert not z.numpy().any()  # nothing ran during the capture
        for _ in range(3):
            sk.replay(g)
        results[dev] = (y.numpy(), z.numpy(), y._version, z._version)
    (cy, cz, cvy, cvz), (gy, gz, gvy, gvz) = results["cpu"], results[gpu]
    np.testing.assert_allclose(gy, cy, rtol=1e-6)
    np.testing.assert_allclose(gz, cz, rtol=1e-6)
    assert (cvy, cvz) == (gvy, gvz) == (3, 3)


def test_replay_sees_new_contents_of_the_same_buffers(gpu):
    x, z = sk.zeros(4, device=gpu), sk.zeros(4, device=gpu)
    with sk.capture() as g:
        sk.launch(square_into, 4, inputs=[x, z])
    x.assign([1.0, 2.0, 3.0, 4.0])
    sk.replay(g)
    assert z.numpy().tolist() == [1.0, 4.0, 9.0, 16.0]


def test_allocation_and_copies_inside_a_gpu_capture_are_refused(gpu):
    x, z = sk.zeros(4, device=gpu), sk.zeros(4, device=gpu)
    with sk.capture() as g:
        sk.launch(square_into, 4, inputs=[x, z])
        with pytest.raises(RuntimeError, match="inside sk.capture"):
            sk.zeros(4, device=gpu)
        with pytest.raises(RuntimeError, match="inside sk.capture"):
            x.numpy()
    sk.replay(g)
    assert not z.numpy().any()


def test_one_capture_holds_one_device(gpu):
    with sk.capture() as g:
        sk.launch(square_into, 2, inputs=[sk.zeros(2, device=gpu), sk.zeros(2, device=gpu)])
        with pytest.raises(ValueError, match="records launches on cuda:0, but this launch runs on cpu"):
            sk.launch(square_into, 2, inputs=[sk.zeros(2), sk.zeros(2)])
    assert len(g) == 1


def test_a_failed_gpu_capture_leaves_the_stream_usable(gpu):
    x, z = sk.ones(4, device=gpu), sk.zeros(4, device=gpu)
    with pytest.raises(KeyError):
        with sk.capture() as g:
            sk.launch(square_into, 4, inputs=[x, z])
            raise KeyError("stop")
    with pytest.raises(RuntimeError, match="interrupted"):
        sk.replay(g)
    sk.launch(square_into, 4, inputs=[x, z])
    assert z.numpy().tolist() == [1.0] * 4


def test_debug_errors_of_a_replayed_gpu_graph_raise(gpu, monkeypatch):
    monkeypatch.setattr(sk.config, "mode", "debug")
    x, out = sk.zeros(4, device=gpu), sk.zeros(2, device=gpu)
    with sk.capture() as g:
        sk.launch(read_at, 2, inputs=[x, 3, out])
    with pytest.raises(IndexError, match=r"kernel 'read_at'.*out of bounds"):
        sk.replay(g)


def test_capture_on_the_gpu_by_name(gpu):
    x, z = sk.ones(3, device=gpu), sk.zeros(3, device=gpu)
    with sk.capture(device="cuda") as g:
        sk.launch(square_into, 3, inputs=[x, z])
    sk.replay(g)
    assert g.device == "cuda:0" and z.numpy().tolist() == [1.0] * 3
