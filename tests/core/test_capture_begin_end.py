"""Warp's capture spelling: capture_begin() / capture_end() -> graph / capture_launch(graph)."""

import numpy as np
import pytest

import simkit as sk

F = sk.array(dtype=float)


@sk.kernel
def add_one(x: F):
    i = sk.tid()
    x[i] = x[i] + 1.0


def test_begin_end_records_without_running_and_launch_replays():
    x = sk.zeros(3)
    sk.capture_begin()
    sk.launch(add_one, 3, inputs=[x])
    sk.launch(add_one, 3, inputs=[x])
    graph = sk.capture_end()
    assert x.numpy().tolist() == [0.0, 0.0, 0.0]
    sk.capture_launch(graph)
    sk.capture_launch(graph)
    assert x.numpy().tolist() == [4.0, 4.0, 4.0]


def test_a_graph_from_capture_end_also_replays_with_sk_replay():
    x = sk.zeros(2)
    sk.capture_begin(device=sk.get_device(), force_module_load=False)
    sk.launch(add_one, 2, inputs=[x])
    graph = sk.capture_end(device=sk.get_device())
    sk.replay(graph)
    assert x.numpy().tolist() == [1.0, 1.0]


def test_capture_end_without_begin_is_an_error():
    with pytest.raises(RuntimeError, match="no capture is open"):
        sk.capture_end()


def test_capture_begin_twice_is_an_error_and_the_first_stays_usable():
    x = sk.zeros(1)
    sk.capture_begin()
    try:
        with pytest.raises(RuntimeError, match="already open"):
            sk.capture_begin()
        sk.launch(add_one, 1, inputs=[x])
    finally:
        graph = sk.capture_end()
    sk.capture_launch(graph)
    assert x.numpy().tolist() == [1.0]


def test_a_stream_argument_is_refused_by_name():
    with pytest.raises(ValueError, match="stream= is not supported"):
        sk.capture_begin(stream=object())


def test_capture_launch_of_something_else_is_a_type_error():
    with pytest.raises(TypeError, match="graph"):
        sk.capture_launch("not a graph")
