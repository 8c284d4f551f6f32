"""Fixtures: a running API server with no login configured, and a client logged in to it;
and one with two users (live.ALICE and live.BOB)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends.api.live import ALICE, BOB, Api, Backend, running_backend


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    """No login configured: `POST /api/login` gives a token for "local"."""
    with running_backend(tmp_path) as running:
        yield running


@pytest.fixture
def api(backend: Backend) -> Api:
    return backend.client().login()


@pytest.fixture
def two_users(tmp_path: Path) -> Iterator[Backend]:
    """Login configured, with ALICE and BOB as its users."""
    with running_backend(tmp_path, users=[ALICE, BOB]) as running:
        yield running
