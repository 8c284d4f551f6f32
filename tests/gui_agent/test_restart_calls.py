"""A server stopped while a tool call waited for approval or ran: after the restart, the
call is answered, so the conversation stays one every vendor accepts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from connectors.openai_mapping import messages_to_openai
from connectors.scripted import ScriptedModel
from gui_agent import SessionManager, StaticCatalog
from gui_agent.exceptions import StoreError
from gui_agent.manager import INTERRUPTED_NOTE, UNANSWERED_AT_START
from gui_agent.store import SQLiteStore
from schema import InterpreterState, Message, MessageStatus, Role, SessionRecord, ToolCall
from tests.connectors.wire_rules import openai_problems


def manager(tmp_path: Path, *replies: str) -> SessionManager:
    return SessionManager(
        models=StaticCatalog(ScriptedModel(replies, name="scripted")),
        store=SQLiteStore(tmp_path / "sessions.db"),
        workspace_root=tmp_path / "work",
    )


async def test_calls_left_unanswered_by_a_stop_are_answered_at_restart(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "sessions.db")
    await store.open()
    record = SessionRecord(owner="alice", state=InterpreterState.WAITING, title="cut")
    await store.create_session(record)
    await store.append_message(record.id, Message(role=Role.USER, content="tidy the folder"))
    first, second = (
        ToolCall(id="call_1", name="list_files", arguments="{}"),
        ToolCall(id="call_2", name="write_file", arguments='{"path": "a", "content": "b"}'),
    )
    asked = Message(role=Role.ASSISTANT, content="", tool_calls=(first, second))
    await store.append_message(record.id, asked)
    done = Message(role=Role.TOOL, content="a.txt", tool_call_id="call_1", name="list_files")
    await store.append_message(record.id, done)  # the first ran; the second awaited approval
    await store.close()

    m = manager(tmp_path, "recovered")
    await m.start()
    interpreter = await m.get(record.id, "alice")
    history = interpreter.session.history
    answer = next(msg for msg in history if msg.tool_call_id == "call_2")
    assert answer.role is Role.TOOL and answer.content == UNANSWERED_AT_START
    assert answer.status is MessageStatus.INTERRUPTED and answer.metadata["was_running"] is True
    assert history[-1].content == INTERRUPTED_NOTE
    _ = [e async for e in interpreter.chat("again")]
    assert interpreter.session.history[-1].content == "recovered"
    sent = interpreter.deps.provider.requests[-1].messages  # type: ignore[attr-defined]
    wire = messages_to_openai(sent)
    assert openai_problems(wire) == []
    await m.close()


async def test_a_stop_after_every_call_was_answered_adds_only_the_note(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "sessions.db")
    await store.open()
    record = SessionRecord(owner="alice", state=InterpreterState.RUNNING, title="cut")
    await store.create_session(record)
    call = ToolCall(id="call_1", name="list_files", arguments="{}")
    for message in (
        Message(role=Role.USER, content="go"),
        Message(role=Role.ASSISTANT, tool_calls=(call,)),
        Message(role=Role.TOOL, content="a.txt", tool_call_id="call_1", name="list_files"),
    ):
        await store.append_message(record.id, message)
    await store.close()

    m = manager(tmp_path)
    await m.start()
    history = (await m.get(record.id, "alice")).session.history
    assert [msg.role for msg in history] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert history[-1].content == INTERRUPTED_NOTE
    await m.close()


class _FailingWrites(SQLiteStore):
    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        raise StoreError("disk full")


async def test_an_import_whose_messages_cannot_be_saved_leaves_no_half_made_chat(
    tmp_path: Path,
) -> None:
    m = SessionManager(
        models=StaticCatalog(ScriptedModel(name="scripted")),
        store=_FailingWrites(tmp_path / "sessions.db"),
        workspace_root=tmp_path / "work",
    )
    await m.start()
    record = SessionRecord(owner="alice", title="imported chat")
    with pytest.raises(StoreError, match="disk full"):
        await m.import_session(record, [Message(role=Role.USER, content="hello")])
    assert await m.list("alice") == []
    await m.close()
