"""Access ends while a client holds an event stream open: a user removed from the users
file (by `gui-agent users remove`, another process) or a token that expires ends the stream
within the recheck interval, with a final `closed` event saying why."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request

from backends.api.auth import Authenticator
from backends.api.errors import ApiError
from gui_agent.auth import TokenService, UserDB
from tests.backends.api.live import SECRET, SSE, Backend, EventReader, is_idle, running_backend

ALICE = ("alice", "alice-password-1")
BOB = ("bob", "bob-password-22")
RECHECK_S = 0.2


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    # No keep-alives: a stream that fails to end times the client out (20 s) instead.
    options = {"auth_recheck_s": RECHECK_S, "keepalive_s": 600.0}
    with running_backend(tmp_path, users=[ALICE, BOB], **options) as running:
        yield running


def remove_with_the_cli(backend: Backend, name: str) -> None:
    assert backend.users is not None
    cli = Path(sys.executable).with_name("gui-agent")
    command = [str(cli), "users", "remove", name, "--auth-file", str(backend.users.path)]
    command += ["--data-dir", str(backend.data_dir)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def closing_event(stream: EventReader) -> SSE:
    """The next event on the stream without an id (session events all have one)."""
    for item in stream.sse:
        if item.id is None:
            return item
    raise AssertionError("the stream ended without a closed event")


def test_removing_a_user_ends_their_open_event_streams(backend: Backend) -> None:
    alice = backend.client().login(*ALICE)
    bob = backend.client().login(*BOB)
    mine, theirs = alice.create_session(), bob.create_session()
    with alice.events(mine) as alices, bob.events(theirs) as bobs:
        remove_with_the_cli(backend, "bob")

        closed = closing_event(bobs)
        assert closed.event == "closed"
        assert json.loads(closed.data) == {
            "error": {"code": "unauthorized", "message": "the token's user no longer exists"}
        }
        assert next(bobs.sse, None) is None  # and the stream is over

        # Alice's stream has been rechecked as often, and goes on.
        alice.send(mine, "still there?")
        assert is_idle(alices.until(is_idle)[-1])
    reconnect = bob.get(f"/api/sessions/{theirs}/events")
    assert reconnect.status_code == 401


def test_a_token_expiring_ends_the_open_event_stream(backend: Backend) -> None:
    # Issued "an hour ago" with an hour to live: it expires in about three seconds.
    clock = time.time() - 3597
    assert backend.users is not None
    fingerprint = backend.users.fingerprints()["alice"]  # what a login would put in it
    token = TokenService(SECRET, ttl_s=3600, clock=lambda: clock).issue(
        "alice", password_fingerprint=fingerprint
    )
    alice = backend.client(token)
    session_id = alice.create_session()
    with alice.events(session_id) as stream:
        closed = closing_event(stream)
        assert next(stream.sse, None) is None
    error = json.loads(closed.data)["error"]
    assert closed.event == "closed" and error["code"] == "unauthorized"
    assert "token expired" in error["message"]


async def test_a_request_refused_for_a_removed_user_applies_the_change_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The refusal waits for the server to act on the change (`users_changed`); a user
    still in the file with their password costs no look; and a look that fails is logged
    while the request is refused all the same."""
    users = UserDB(tmp_path / "users.json")
    users.add(*ALICE)
    users.add(*BOB)
    tokens = TokenService(SECRET)
    fingerprints = users.fingerprints()
    looks: list[str] = []

    async def failing_look() -> None:
        looks.append("look")
        raise RuntimeError("the watcher broke")

    auth = Authenticator(tokens=tokens, users=users, users_changed=failing_look)

    def request_of(name: str) -> Request:
        token = tokens.issue(name, password_fingerprint=fingerprints[name])
        headers = [(b"authorization", f"Bearer {token}".encode())]
        return Request({"type": "http", "method": "GET", "path": "/api/x", "headers": headers})

    assert await auth.owner(request_of("alice")) == "alice"
    assert looks == []
    users.remove("bob")
    with (
        caplog.at_level(logging.ERROR, logger="backends.api.auth"),
        pytest.raises(ApiError) as refused,
    ):
        await auth.owner(request_of("bob"))
    assert (refused.value.status, refused.value.code) == (401, "unauthorized")
    assert looks == ["look"]
    assert "applying a change of the users file failed" in caplog.text
    assert "the watcher broke" in caplog.text
