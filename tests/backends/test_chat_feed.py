"""The session manager's change feed: each owner's listeners hear of every chat of theirs
created, imported, renamed or deleted through the manager (whichever front end asked), and
nobody else's; the feed keeps nothing of a listener once it is closed. Also through the HTTP
API: what the API changes reaches the owner's listeners."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel
from gui_agent.export import export_session, read_import
from gui_agent.llm import StaticCatalog
from gui_agent.manager import ChatChange, ChatChangeKind, Listening, SessionManager
from gui_agent.store import DB_FILE_NAME, SQLiteStore
from tests.backends.api.live import running_backend

CREATED, IMPORTED = ChatChangeKind.CREATED, ChatChangeKind.IMPORTED
RENAMED, DELETED = ChatChangeKind.RENAMED, ChatChangeKind.DELETED


@pytest.fixture
async def manager(tmp_path: Path) -> AsyncIterator[SessionManager]:
    sessions = SessionManager(
        models=StaticCatalog(ScriptedModel(default="fine", name="scripted")),
        store=SQLiteStore(tmp_path / DB_FILE_NAME),
        workspace_root=tmp_path / "work",
    )
    await sessions.start()
    yield sessions
    await sessions.close()


def kinds(changes: list[ChatChange]) -> list[tuple[ChatChangeKind, str, str]]:
    return [(c.kind, c.session_id, c.title) for c in changes]


async def test_each_owner_hears_of_every_change_to_their_chats_only(
    manager: SessionManager,
) -> None:
    first: list[ChatChange] = []
    second: list[ChatChange] = []
    bobs: list[ChatChange] = []
    with (
        manager.changes.listen("alice", first.append),
        manager.changes.listen("alice", second.append),
        manager.changes.listen("bob", bobs.append),
    ):
        made = await manager.create("alice", title="  A plan  ")
        _ = [event async for event in made.chat("hello")]  # a turn is no list change here
        await manager.rename(made.id, "The plan", "alice")
        await manager.update(made, title="The final plan")
        record = made.session.to_record(made.state)
        document = export_session(record, made.session.history)
        imported = read_import(json.dumps(document).encode(), owner="alice")
        copy = await manager.import_session(imported.record, imported.messages)
        await manager.update(copy)  # nothing renamed: nothing said
        await manager.delete(made.id, "alice")
        await manager.create("carol")  # nobody listens to carol: nothing happens
    assert kinds(first) == [
        (CREATED, made.id, "A plan"),
        (RENAMED, made.id, "The plan"),
        (RENAMED, made.id, "The final plan"),
        (IMPORTED, copy.id, "The final plan (imported)"),
        (DELETED, made.id, "The final plan"),  # the title it had
    ]
    assert first == second and all(change.owner == "alice" for change in first)
    assert bobs == []
    assert manager.changes.listener_count() == 0  # closed listeners leave nothing behind
    # Counted per owner, heard or not: a list shown before its listener can tell it missed one.
    assert [manager.changes.announced(owner) for owner in ("alice", "bob", "carol")] == [5, 0, 1]


async def test_a_failing_listener_is_logged_and_the_others_still_hear(
    manager: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[ChatChange] = []

    def broken(change: ChatChange) -> None:
        raise RuntimeError("a listener bug")

    with (
        caplog.at_level(logging.ERROR, logger="gui_agent.manager"),
        manager.changes.listen("alice", broken),
        manager.changes.listen("alice", heard.append),
    ):
        made = await manager.create("alice")
    assert kinds(heard) == [(CREATED, made.id, "")]
    assert "a listener bug" in caplog.text
    assert [r.id for r in await manager.list("alice")] == [made.id]  # the change stands


async def test_closing_a_registration_twice_or_out_of_order_is_harmless(
    manager: SessionManager,
) -> None:
    heard: list[ChatChange] = []
    same = heard.append
    one = manager.changes.listen("alice", same)
    two = manager.changes.listen("alice", same)
    one.close()
    one.close()
    assert manager.changes.listener_count("alice") == 1
    await manager.create("alice")
    two.close()
    await manager.create("alice")
    assert len(heard) == 1 and manager.changes.listener_count() == 0


def test_changes_made_through_the_api_reach_the_owners_listeners(tmp_path: Path) -> None:
    users = [("alice", "alice-password-1"), ("bob", "bob-password-22")]
    with running_backend(tmp_path, users=users) as backend:
        alice = backend.client().login(*users[0])
        bob = backend.client().login(*users[1])
        heard: list[ChatChange] = []
        listening = backend.server.call(_listen(backend.manager, "alice", heard))
        try:
            bob.create_session(title="not hers")
            made = alice.create_session(title="from a script")
            renamed = alice.request("PATCH", f"/api/sessions/{made}", json={"title": "renamed"})
            assert renamed.status_code == 200
            assert alice.request("DELETE", f"/api/sessions/{made}").status_code == 204
        finally:
            backend.server.call(_close(listening))
    assert kinds(heard) == [
        (CREATED, made, "from a script"),
        (RENAMED, made, "renamed"),
        (DELETED, made, "renamed"),  # the title it had
    ]


async def _listen(manager: SessionManager, owner: str, heard: list[ChatChange]) -> Listening:
    return manager.changes.listen(owner, heard.append)


async def _close(listening: Listening) -> None:
    listening.close()


async def test_a_first_message_that_titles_the_chat_is_announced_once_saved(
    manager: SessionManager, tmp_path: Path
) -> None:
    heard: list[ChatChange] = []
    saved: list[str] = []

    def listener(change: ChatChange) -> None:
        heard.append(change)
        # What a tab refreshing its list at once reads: the store, from another connection.
        with contextlib.closing(sqlite3.connect(tmp_path / DB_FILE_NAME)) as db:
            row = db.execute("SELECT title FROM sessions WHERE id = ?", (change.session_id,))
            saved.append(row.fetchone()[0])

    with manager.changes.listen("alice", listener):
        made = await manager.create("alice")
        _ = [event async for event in made.chat("What is the plan for Friday?")]
        _ = [event async for event in made.chat("and then?")]  # titled already: no news
    assert made.session.title.startswith("What is the plan")
    assert kinds(heard) == [(CREATED, made.id, ""), (RENAMED, made.id, made.session.title)]
    assert saved == ["", made.session.title]
