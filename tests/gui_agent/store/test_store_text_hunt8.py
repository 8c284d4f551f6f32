"""The SQLite store keeps saving whatever text it is given: lone surrogates are repaired,
values nested too deeply to save are a clear StoreError, unreadable rows are StoreErrors."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from connectors.scripted import ScriptedModel
from gui_agent import SessionManager, StaticCatalog
from gui_agent.exceptions import StoreError
from gui_agent.store import SQLiteStore
from schema import ErrorEvent, Message, Role, SessionRecord, SessionSettings

CUT_EMOJI = "Beach trip \ud83c"
"""A title a client cut in the middle of an emoji (🏖 is \\ud83c\\udfd6 in UTF-16)."""


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"inner": value}
    return value


async def test_a_title_cut_inside_an_emoji_does_not_stop_the_session_being_saved(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "sessions.db"
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(["first answer", "second answer"], name="scripted")),
        store=SQLiteStore(db_path),
        workspace_root=tmp_path / "work",
    )
    await manager.start()
    interpreter = await manager.create("alice")
    _ = [event async for event in interpreter.chat("first")]
    await manager.rename(interpreter.id, CUT_EMOJI, "alice")
    events = [event async for event in interpreter.chat("second")]
    session_id = interpreter.id
    await manager.close()

    assert [e.message for e in events if isinstance(e, ErrorEvent)] == []
    async with SQLiteStore(db_path) as store:
        record = await store.get_session(session_id, owner="alice")
        messages = await store.load_messages(session_id)
        found = await store.list_sessions("alice", query="trip \ud83c")
    assert record is not None
    assert record.title == "Beach trip \ufffd"
    assert record.usage.requests == 2  # the second turn's record was saved too
    assert [m.content for m in messages] == ["first", "first answer", "second", "second answer"]
    assert [r.id for r in found] == [session_id]


async def test_every_text_field_with_a_lone_surrogate_is_stored_repaired(db_path: Path) -> None:
    settings = SessionSettings(model="gpt\udc80", system_prompt="Be brief \ud800")
    record = SessionRecord(owner="alice", title="t\ud800", goal="g\udfff", settings=settings)
    reply_id = "reply\ud800"
    async with SQLiteStore(db_path) as store:
        await store.create_session(record)
        await store.upsert_partial(record.id, Message(id=reply_id, role=Role.ASSISTANT))
        await store.append_message(
            record.id, Message(id=reply_id, role=Role.ASSISTANT, content="done \ud800")
        )
        await store.update_session(record.model_copy(update={"title": "u\udc00"}))
        assert await store.rename_session(record.id, "v\ud801", owner="alice")

    async with SQLiteStore(db_path) as store:
        stored = await store.get_session(record.id, owner="alice")
        messages = await store.load_messages(record.id)
    assert stored is not None
    assert (stored.title, stored.goal) == ("v\ufffd", "g\ufffd")
    assert stored.settings.model == "gpt\ufffd"
    assert stored.settings.system_prompt == "Be brief \ufffd"
    assert [(m.id, m.content) for m in messages] == [("reply\ufffd", "done \ufffd")]


async def test_a_message_nested_too_deeply_is_a_store_error_and_nothing_else_is_lost(
    db_path: Path,
) -> None:
    record = SessionRecord(owner="alice")
    kept = Message(role=Role.USER, content="kept")
    async with SQLiteStore(db_path) as store:
        await store.create_session(record)
        await store.append_message(record.id, kept)
        deep = Message(role=Role.TOOL, tool_call_id="c1", metadata=nested(300))
        with pytest.raises(StoreError, match="cannot be saved"):
            await store.append_message(record.id, deep)
        with pytest.raises(StoreError, match="cannot be saved"):
            await store.replace_messages(record.id, [kept, deep])
        after = Message(role=Role.USER, content="after")
        await store.append_message(record.id, after)
        assert await store.load_messages(record.id) == [kept, after]


async def test_a_row_this_program_cannot_read_is_a_store_error(db_path: Path) -> None:
    async with SQLiteStore(db_path) as store:
        await store.create_session(SessionRecord(owner="alice", title="from a newer program"))
    with closing(sqlite3.connect(db_path)) as db:
        db.execute("UPDATE sessions SET agent = 'RESEARCHER'")
        db.commit()

    async with SQLiteStore(db_path) as store:
        with pytest.raises(StoreError, match="unreadable row"):
            await store.list_sessions("alice")
