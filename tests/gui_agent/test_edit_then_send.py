"""A message sent while a retry, edit or clear waits on the store is answered after the
edited message (or after the clear), never before it, and is never lost."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from connectors.scripted import EchoModel
from gui_agent import SessionManager, StaticCatalog
from gui_agent.store import SQLiteStore
from schema import Message, Role


class _GatedWrites(SQLiteStore):
    """A real store whose history rewrites wait at a gate (a slow disk)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.reached = asyncio.Event()
        self.gate = asyncio.Event()

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        self.reached.set()
        await self.gate.wait()
        await super().replace_messages(session_id, messages)


async def _setup(tmp_path: Path) -> tuple[SessionManager, _GatedWrites, str]:
    store = _GatedWrites(tmp_path / "sessions.db")
    manager = SessionManager(
        models=StaticCatalog(EchoModel(delay_s=0.0)),
        store=store,
        workspace_root=tmp_path / "work",
    )
    await manager.start()
    interpreter = await manager.create("alice")
    await interpreter.send("first")
    await interpreter.wait_idle()
    return manager, store, interpreter.id


def _asked(history: list[Message]) -> list[str]:
    return [m.content for m in history if m.role is Role.USER]


def _last_answer(history: list[Message]) -> str:
    return [m.content for m in history if m.role is Role.ASSISTANT][-1]


@pytest.mark.parametrize("action", ["edit", "retry"])
async def test_a_message_sent_during_an_edit_is_answered_after_the_edited_one(
    tmp_path: Path, action: str
) -> None:
    manager, store, session_id = await _setup(tmp_path)
    interpreter = await manager.get(session_id, "alice")
    edit = interpreter.edit_last("edited") if action == "edit" else interpreter.retry()
    editing = asyncio.create_task(edit)
    await store.reached.wait()
    await interpreter.send("sent meanwhile")
    store.gate.set()
    await editing
    await interpreter.wait_idle()
    asked = "edited" if action == "edit" else "first"
    assert _asked(interpreter.session.history) == [asked, "sent meanwhile"]
    assert _last_answer(interpreter.session.history).endswith("sent meanwhile")
    await manager.close()


async def test_a_message_sent_during_a_clear_is_answered_after_it(tmp_path: Path) -> None:
    manager, store, session_id = await _setup(tmp_path)
    interpreter = await manager.get(session_id, "alice")
    clearing = asyncio.create_task(interpreter.clear())
    await store.reached.wait()
    await interpreter.send("sent meanwhile")
    store.gate.set()
    await clearing
    await interpreter.wait_idle()
    assert _asked(interpreter.session.history) == ["sent meanwhile"]
    assert _last_answer(interpreter.session.history).endswith("sent meanwhile")
    await manager.close()


async def test_a_message_sent_during_an_edit_cut_short_is_still_answered(tmp_path: Path) -> None:
    manager, store, session_id = await _setup(tmp_path)
    interpreter = await manager.get(session_id, "alice")
    editing = asyncio.create_task(interpreter.edit_last("edited"))
    await store.reached.wait()
    await interpreter.send("sent meanwhile")
    editing.cancel()  # the request that asked for the edit went away
    store.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await editing
    await interpreter.wait_idle()
    assert _asked(interpreter.session.history)[-1] == "sent meanwhile"
    assert _last_answer(interpreter.session.history).endswith("sent meanwhile")
    await manager.close()
