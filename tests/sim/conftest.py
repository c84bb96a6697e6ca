"""The fixtures of the simulation tests (their helpers are in sim_helpers.py)."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(7)
