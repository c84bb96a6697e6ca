"""Shared helpers of the simulation tests: a scalar loss on positions and central differences."""

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def weighted_positions64(q: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(q[i], w[i]))


def position_loss(q: sk.Array, w: np.ndarray) -> sk.Array:
    """``sum_i dot(q[i], w[i])`` as a one-element float64 array (recorded when a Tape is active)."""
    loss = sk.zeros(1, dtype=sk.float64)
    sk.launch(weighted_positions64, q.shape[0], inputs=[q, sk.array(w, dtype=sk.vec3d), loss])
    return loss


def central_difference(run, values: np.ndarray, index, eps: float) -> float:
    """d run() / d values[index] by central differences; ``values`` is edited in place and restored."""
    old = values[index].copy() if isinstance(values[index], np.ndarray) else values[index]
    values[index] = old + eps
    up = run()
    values[index] = old - eps
    down = run()
    values[index] = old
    return (up - down) / (2.0 * eps)


@pytest.fixture
def rng():
    return np.random.default_rng(7)
