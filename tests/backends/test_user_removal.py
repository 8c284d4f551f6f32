"""A user removed while the server runs: `gui-agent users remove` (another process) takes
them out of the users file, and the server (as `gui-agent serve` builds it) stops what they
have running, a turn and an AutoChat waiting for its next turn, ends their event streams
with a `closed` event and refuses them, while another user's work goes on. Everything they
said stays on disk. Also the manager's side of it: `revoke` and `readmit`."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from backends.api.sse import DEFAULT_RECHECK_S
from backends.server import build_server
from connectors.scripted import ScriptedModel
from gui_agent.auth import USERS_WATCH_S, UserDB
from gui_agent.config import AppConfig
from gui_agent.exceptions import AuthError
from gui_agent.llm import StaticCatalog
from gui_agent.manager import ChatChange, ChatChangeKind, SessionManager, SessionNotFound
from gui_agent.store import DB_FILE_NAME, SQLiteStore
from schema import AutoChatStopReason, Event, Message, MessageStatus, Role
from tests.backends.api.live import SSE, Api, EventReader, ServerThread

USERS = {"alice": "alice-password-1", "bob": "bob-password-22"}
LONG = " ".join(f"word{i}" for i in range(3000))  # the echo model takes ~30 s to say it
CLI = Path(sys.executable).with_name("gui-agent")
REASON = "the user was removed"


@dataclass
class Served:
    server: ServerThread
    users: UserDB
    data_dir: Path
    clients: list[Api]

    def login(self, name: str) -> Api:
        api = Api(self.server.base_url).login(name, USERS[name])
        self.clients.append(api)
        return api


def serve(
    tmp_path: Path, *, watch_s: float = USERS_WATCH_S, recheck_s: float = DEFAULT_RECHECK_S
) -> Iterator[Served]:
    users = UserDB(tmp_path / "users.json")
    for name, password in USERS.items():
        users.add(name, password)
    config = AppConfig(
        models=("scripted:echo",), data_dir=tmp_path / "data", auth_file=users.path, port=0
    )
    server = ServerThread(
        lambda: build_server(
            config, probe_local=False, users_watch_s=watch_s, auth_recheck_s=recheck_s
        )
    ).start()
    running = Served(server, users, tmp_path / "data", [])
    try:
        yield running
    finally:
        for api in running.clients:
            api.close()
        server.stop()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path)


@pytest.fixture
def served_unwatched(tmp_path: Path) -> Iterator[Served]:
    """The users file is looked at only once an hour, and an open stream checks its caller
    five times a second: the stream always meets a removal before the watcher does."""
    yield from serve(tmp_path, watch_s=3600.0, recheck_s=0.2)


def remove_with_the_cli(users: UserDB, name: str) -> None:
    command = [str(CLI), "users", "remove", name, "--auth-file", str(users.path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def until_closed(stream: EventReader) -> tuple[list[Event], SSE]:
    """The session events left on the stream, and the `closed` event that ends it."""
    events: list[Event] = []
    for item in stream.sse:
        if item.id is None:
            assert next(stream.sse, None) is None, "the stream goes on after `closed`"
            return events, item
        events.append(item.parsed())
    raise AssertionError(f"the stream ended without a closed event after {events[-3:]}")


def turn_stopped(ended: list[Event]) -> list[Message]:
    """Check that a removed user's stream showed their turn stopping (interrupted, with the
    removal as the reason, its partial reply marked so); that partial reply."""
    finished = [(e.outcome.value, e.detail) for e in ended if e.type == "run_finished"]
    assert finished == [("interrupted", REASON)]
    partial = [e.message for e in ended if e.type == "message_completed"]
    assert [m.status for m in partial] == [MessageStatus.INTERRUPTED]
    return partial


def of_type(kind: str) -> Callable[[Event], bool]:
    return lambda event: event.type == kind


def stored(data_dir: Path, session_id: str) -> list[Message]:
    """What the session's history is on disk (read after the server stopped)."""

    async def load() -> list[Message]:
        store = SQLiteStore(data_dir / DB_FILE_NAME)
        await store.open()
        try:
            return await store.load_messages(session_id)
        finally:
            await store.close()

    return asyncio.run(load())


def test_removing_a_user_stops_their_turn_and_autochat_and_ends_their_streams(
    served: Served,
) -> None:
    alice, bob = served.login("alice"), served.login("bob")
    running, waiting, hers = bob.create_session(), bob.create_session(), alice.create_session()
    autochat = {"autochat": {"enabled": True, "delay_s": 600, "max_turns": 5}}
    assert bob.request("PATCH", f"/api/sessions/{waiting}", json=autochat).status_code == 200
    with (
        bob.events(running) as turn,
        bob.events(waiting) as auto,
        alice.events(hers) as other,
    ):
        bob.send(waiting, "carry on by yourself")
        auto.until(of_type("autochat_turn"))  # AutoChat waits 600 s for its next turn
        bob.send(running, LONG)
        turn.until(of_type("text_delta"))
        alice.send(hers, LONG)
        other.until(of_type("text_delta"))

        remove_with_the_cli(served.users, "bob")

        # The stream shows the turn stopping, then ends, whichever noticed first: the
        # users-file watcher (once a second) or the stream's own access check.
        ended, closed = until_closed(turn)
        partial = turn_stopped(ended)
        assert closed.event == "closed"
        assert json.loads(closed.data) == {
            "error": {"code": "unauthorized", "message": "the token's user no longer exists"}
        }
        stopped, closed = until_closed(auto)
        autochat_end = [(e.reason, e.detail) for e in stopped if e.type == "autochat_stopped"]
        assert autochat_end == [(AutoChatStopReason.STOPPED, REASON)]
        assert json.loads(closed.data)["error"]["code"] == "unauthorized"

        # Alice's turn was not touched: it is still streaming.
        assert alice.session(hers)["busy"] is True
        other.until(of_type("text_delta"))
        assert alice.post(f"/api/sessions/{hers}/stop").json() == {"stopped": True}
    assert bob.get(f"/api/sessions/{running}").status_code == 401
    assert bob.post("/api/sessions", json={}).status_code == 401
    refused = bob.http.post("/api/login", json={"username": "bob", "password": USERS["bob"]})
    assert refused.status_code == 401
    served.server.stop()

    user, reply = stored(served.data_dir, running)
    assert (user.role, user.content) == (Role.USER, LONG)
    assert reply.status is MessageStatus.INTERRUPTED  # stopped, not said to its end
    assert reply.content.startswith("I am the built-in") and len(reply.content) < len(LONG)
    assert [m.content for m in partial] == [reply.content]
    said, answered = stored(served.data_dir, waiting)
    assert said.content == "carry on by yourself"
    assert answered.status is MessageStatus.COMPLETE


def test_a_stream_that_meets_the_removal_first_shows_the_turn_stopping_before_it_ends(
    served_unwatched: Served,
) -> None:
    """The stream's access check finds the user gone long before the watcher would look:
    it has the removal applied at once, writes the turn's stop, then `closed`."""
    served = served_unwatched
    bob = served.login("bob")
    running = bob.create_session()
    with bob.events(running) as turn:
        bob.send(running, LONG)
        turn.until(of_type("text_delta"))
        remove_with_the_cli(served.users, "bob")
        ended, closed = until_closed(turn)
    partial = turn_stopped(ended)
    states = [(e.to_state.value, e.reason) for e in ended if e.type == "state_changed"]
    assert states[-1] == ("STOP", "interrupted")
    assert json.loads(closed.data)["error"]["message"] == "the token's user no longer exists"
    served.server.stop()
    _, reply = stored(served.data_dir, running)
    assert reply.status is MessageStatus.INTERRUPTED
    assert reply.content == partial[0].content and len(reply.content) < len(LONG)


def test_a_request_that_meets_the_removal_first_stops_the_users_work(
    served_unwatched: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """Any refused request applies the removal, not only a stream's check: the removed
    user's turn stops and their session closes before the 401 is sent."""
    served = served_unwatched
    alice, bob = served.login("alice"), served.login("bob")
    running, hers = bob.create_session(), alice.create_session()
    bob.send(running, LONG)
    alice.send(hers, LONG)
    remove_with_the_cli(served.users, "bob")
    with caplog.at_level(logging.INFO, logger="backends.server"):
        assert bob.get(f"/api/sessions/{running}").status_code == 401
        applied = [r.getMessage() for r in caplog.records if "was removed" in r.getMessage()]
        assert bob.get(f"/api/sessions/{running}").status_code == 401
    assert applied == [
        "bob was removed from the users file: 0 page login(s) ended, 1 open session(s) stopped"
    ]
    again = [r.getMessage() for r in caplog.records if "was removed" in r.getMessage()]
    assert again == applied  # the second refusal found it applied already
    assert alice.session(hers)["busy"] is True  # another user's work goes on
    assert alice.post(f"/api/sessions/{hers}/stop").json() == {"stopped": True}
    served.server.stop()
    _, reply = stored(served.data_dir, running)
    assert reply.status is MessageStatus.INTERRUPTED
    assert len(reply.content) < len(LONG)


# -- the manager's side -------------------------------------------------------------------


async def test_a_revoked_owner_is_refused_until_readmitted_and_loses_nothing(
    tmp_path: Path,
) -> None:
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(default="noted", name="scripted")),
        store=SQLiteStore(tmp_path / DB_FILE_NAME),
        workspace_root=tmp_path / "work",
    )
    await manager.start()
    try:
        bobs = await manager.create("bob")
        _ = [event async for event in bobs.chat("keep this")]
        alices = await manager.create("alice")
        told: list[ChatChange] = []
        with manager.changes.listen("bob", told.append):
            assert await manager.revoke("bob", reason=REASON) == 1
        assert told == [ChatChange(ChatChangeKind.OWNER_REMOVED, "bob")]
        assert bobs.closed and not alices.closed
        with pytest.raises(SessionNotFound):
            await manager.get(bobs.id, "bob")
        with pytest.raises(AuthError, match="removed"):
            await manager.create("bob")
        assert await manager.list("bob") == []
        assert (await manager.get(alices.id, "alice")) is alices

        manager.readmit("bob")
        back = await manager.get(bobs.id, "bob")
        assert back is not bobs  # restored from the store, all of it
        assert [m.content for m in back.session.history] == ["keep this", "noted"]
        assert [r.id for r in await manager.list("bob")] == [bobs.id]
    finally:
        await manager.close()
