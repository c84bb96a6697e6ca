"""Every core test runs on every device (see ``device`` in tests/conftest.py)."""

import pytest


@pytest.fixture(autouse=True)
def _on_every_device(device):
    yield device
