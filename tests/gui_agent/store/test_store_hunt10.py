"""What the SQLite store saved, it reads back after a restart: a message nested as deeply
as it could be saved does not make the whole chat unreadable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gui_agent.exceptions import StoreError
from gui_agent.store import SQLiteStore
from schema import Message, Role, SessionRecord


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"inner": value}
    return value


@pytest.mark.parametrize("depth", [150, 220, 250])
async def test_every_message_saved_is_read_back_after_a_restart(db_path: Path, depth: int) -> None:
    """A tool result nested a couple of hundred levels deep (a page's element tree) is
    saved; it must load again. It did not past 200 levels (the JSON reader's limit, below
    the writer's): every later load of the chat, after a restart or an idle unload, was a
    StoreError, so the whole conversation was lost to its owner."""
    record = SessionRecord(owner="alice")
    before = Message(role=Role.USER, content="outline the page")
    deep = Message(role=Role.TOOL, tool_call_id="c1", content="tree", metadata=nested(depth))
    after = Message(role=Role.ASSISTANT, content="It is deep.")
    async with SQLiteStore(db_path) as store:
        await store.create_session(record)
        for message in (before, deep, after):
            await store.append_message(record.id, message)
    async with SQLiteStore(db_path) as store:  # a restart
        assert await store.load_messages(record.id) == [before, deep, after]
        assert await store.load_messages(record.id, limit=2) == [deep, after]


async def test_a_message_too_deep_to_save_is_still_refused_when_saved(db_path: Path) -> None:
    record = SessionRecord(owner="alice")
    async with SQLiteStore(db_path) as store:
        await store.create_session(record)
        too_deep = Message(role=Role.TOOL, tool_call_id="c1", metadata=nested(300))
        with pytest.raises(StoreError, match="cannot be saved"):
            await store.append_message(record.id, too_deep)
        assert await store.load_messages(record.id) == []
