"""Fixtures: a running API server with no login configured, and a client logged in to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends.api.live import Api, Backend, running_backend


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    """No login configured: `POST /api/login` gives a token for "local"."""
    with running_backend(tmp_path) as running:
        yield running


@pytest.fixture
def api(backend: Backend) -> Api:
    return backend.client().login()
