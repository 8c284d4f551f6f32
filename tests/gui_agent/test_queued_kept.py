"""A message sent while a turn runs waits for the agent in memory, and on disk: a server
that dies before the agent reads it (killed, out of memory) files it unanswered when it
starts again, as a Stop would have. Nothing the person said is lost."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, call
from gui_agent import SessionManager, StaticCatalog, create_interpreter, tool
from gui_agent.manager import INTERRUPTED_NOTE
from gui_agent.store import SQLiteStore
from schema import InterpreterState, Message, MessageStatus, Role, SessionRecord


def queued_rows(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT session_id, id FROM queued ORDER BY rowid").fetchall()
    connection.close()
    return [(str(session_id), str(message_id)) for session_id, message_id in rows]


def manager(tmp_path: Path, model: ScriptedModel) -> SessionManager:
    return SessionManager(
        models=StaticCatalog(model),
        store=SQLiteStore(tmp_path / "sessions.db"),
        workspace_root=tmp_path / "work",
    )


async def test_a_queued_message_is_on_disk_until_the_agent_takes_it_up(tmp_path: Path) -> None:
    running, release = asyncio.Event(), asyncio.Event()

    @tool
    async def slow() -> str:
        """Wait until released."""
        running.set()
        await release.wait()
        return "done"

    model = ScriptedModel([call("slow"), "Read both."])
    store = SQLiteStore(tmp_path / "sessions.db")
    await store.open()
    interpreter = create_interpreter(
        model, tools=[slow], builtin_tools=False, workdir=tmp_path / "work", store=store
    )
    await interpreter.send("first")
    await running.wait()
    waiting = await interpreter.send("while it works")
    assert queued_rows(tmp_path / "sessions.db") == [(interpreter.id, waiting.id)]

    release.set()
    await interpreter.wait_idle()
    assert queued_rows(tmp_path / "sessions.db") == []
    asked = [msg.content for msg in model.requests[-1].messages if msg.role is Role.USER]
    assert asked == ["first", "while it works"]  # answered once, in its turn
    await interpreter.close()
    await store.close()


async def test_messages_a_dead_server_left_queued_are_filed_unanswered_at_start(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "sessions.db")
    await store.open()
    record = SessionRecord(owner="alice", state=InterpreterState.RUNNING, title="cut")
    await store.create_session(record)
    prompt = Message(role=Role.USER, content="write the report")
    await store.append_message(record.id, prompt)
    later = [Message(role=Role.USER, content=f"and add part {i}") for i in (1, 2)]
    for message in later:
        await store.queue_message(record.id, message)
    await store.close()  # (no Stop ran: the process died)

    m = manager(tmp_path, ScriptedModel(["Here it is."]))
    await m.start()
    interpreter = await m.get(record.id, "alice")
    history = interpreter.session.history
    assert [(msg.id, msg.metadata) for msg in history[1:3]] == [
        (later[0].id, {"unanswered": True}),
        (later[1].id, {"unanswered": True}),
    ]
    assert [msg.content for msg in history[1:3]] == ["and add part 1", "and add part 2"]
    assert all(msg.display_only and msg.status is MessageStatus.COMPLETE for msg in history[1:3])
    assert history[-1].content == INTERRUPTED_NOTE
    assert queued_rows(tmp_path / "sessions.db") == []

    _ = [event async for event in interpreter.chat("add part 1 and 2")]
    assert interpreter.session.history[-1].content == "Here it is."
    model = interpreter.deps.provider
    assert isinstance(model, ScriptedModel)
    sent = [msg.content for msg in model.requests[-1].messages if msg.role is Role.USER]
    assert sent == ["write the report", "add part 1 and 2"]  # the unanswered ones are shown only
    await m.close()

    again = manager(tmp_path, ScriptedModel())
    await again.start()  # filed once: a second start adds nothing
    reloaded = (await again.get(record.id, "alice")).session.history
    assert [msg.id for msg in reloaded] == [msg.id for msg in interpreter.session.history]
    await again.close()


async def test_a_queued_message_that_cannot_be_read_does_not_stop_the_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(tmp_path / "sessions.db")
    await store.open()
    record = SessionRecord(owner="alice", state=InterpreterState.RUNNING)
    await store.create_session(record)
    await store.append_message(record.id, Message(role=Role.USER, content="go"))
    kept = Message(role=Role.USER, content="still here")
    await store.queue_message(record.id, Message(role=Role.USER, content="damaged"))
    await store.queue_message(record.id, kept)
    await store.close()
    with sqlite3.connect(tmp_path / "sessions.db") as db:
        db.execute("UPDATE queued SET data = '{not json' WHERE data LIKE '%damaged%'")
    db.close()

    m = manager(tmp_path, ScriptedModel())
    await m.start()  # (it used to fail the whole start)
    history = (await m.get(record.id, "alice")).session.history
    assert [(msg.content, msg.metadata) for msg in history[1:2]] == [
        ("still here", {"unanswered": True})
    ]
    assert "a queued message of session" in caplog.text and "cannot be read" in caplog.text
    await m.close()
