"""`create_interpreter(store=...)`: a developer's session is kept in the store they give,
with no other step: the session is added to it before its first write."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel
from gui_agent import create_interpreter
from gui_agent.store import MemoryStore, SQLiteStore
from schema import Role


async def test_a_session_made_with_a_store_is_kept_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    store = SQLiteStore(tmp_path / "kept.db")
    await store.open()
    interpreter = create_interpreter(ScriptedModel(["Hello."]), workdir=tmp_path, store=store)
    _ = [event async for event in interpreter.chat("remember me")]
    await interpreter.close()

    record = await store.get_session(interpreter.id, owner=interpreter.session.owner)
    assert record is not None and record.title == "remember me"
    saved = await store.load_messages(interpreter.id)
    assert [(m.role, m.content) for m in saved] == [
        (Role.USER, "remember me"),
        (Role.ASSISTANT, "Hello."),
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    await store.close()


async def test_a_session_the_store_already_holds_is_not_added_twice(tmp_path: Path) -> None:
    store = MemoryStore()
    interpreter = create_interpreter(ScriptedModel(["One.", "Two."]), workdir=tmp_path, store=store)
    await store.create_session(interpreter.session.to_record(interpreter.state))
    _ = [event async for event in interpreter.chat("first")]
    _ = [event async for event in interpreter.chat("second")]
    assert [m.content for m in await store.load_messages(interpreter.id)] == [
        "first",
        "One.",
        "second",
        "Two.",
    ]
    assert len(await store.list_sessions(interpreter.session.owner)) == 1
