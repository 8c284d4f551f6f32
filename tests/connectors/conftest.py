"""Fixtures for the vendor connector tests: a scripted HTTP peer and a no-wait retry policy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connectors.resilience import RetryPolicy
from tests.connectors.peers import FakeClock, ScriptedPeer, Sleeps


@pytest.fixture(scope="module")
def peer_server() -> Iterator[ScriptedPeer]:
    server = ScriptedPeer().start()
    yield server
    server.stop()


@pytest.fixture
def peer(peer_server: ScriptedPeer) -> ScriptedPeer:
    """The module's scripted peer with no replies queued and no requests recorded."""
    peer_server.reset()
    return peer_server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fast_retry(sleeps: Sleeps) -> RetryPolicy:
    """Four attempts, no jitter, and backoff that only records what it would have waited."""
    return RetryPolicy(max_attempts=4, base_delay_s=0.5, jitter=False, sleep=sleeps)
