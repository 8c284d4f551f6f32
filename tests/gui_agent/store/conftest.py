"""Fixtures for the store tests: both stores behind one fixture, a settable clock, and a
conversation holding every message type."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gui_agent.store import MemoryStore, SessionStore, SQLiteStore
from schema import (
    AgentName,
    ImagePart,
    Message,
    MessageStatus,
    MessageType,
    Role,
    ToolCall,
)

PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAC"
    "hwGA60e6kgAAAABJRU5ErkJggg=="
)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "gui-agent.db"


@pytest.fixture(params=["memory", "sqlite"])
async def store(
    request: pytest.FixtureRequest, db_path: Path, clock: FakeClock
) -> AsyncIterator[SessionStore]:
    opened: SessionStore
    if request.param == "memory":
        opened = MemoryStore(clock=clock)
    else:
        opened = SQLiteStore(db_path, clock=clock)
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def every_type() -> list[Message]:
    """One conversation using every message type and every optional field."""
    call = ToolCall(id="call_1", name="run_code", arguments='{"code": "print(2 + 2)"}')
    return [
        Message(role=Role.SYSTEM, content="You are terse."),
        Message(
            role=Role.USER,
            content="What is in this picture? <b>bold</b>",
            images=(ImagePart(media_type="image/png", data=PNG_1PX),),
        ),
        Message(
            role=Role.ASSISTANT,
            content="Let me run something.",
            agent=AgentName.AGENT_EXECUTOR,
            reasoning="The user wants arithmetic.",
            tool_calls=(call,),
            metadata={"turn": 1, "nested": {"a": [1, 2, None]}},
        ),
        Message(
            role=Role.ASSISTANT, type=MessageType.CODE, content="print(2 + 2)", language="python"
        ),
        Message(
            role=Role.ASSISTANT,
            type=MessageType.CONFIRMATION,
            content="Run this code?",
            metadata={"display_only": True},
        ),
        Message(role=Role.TOOL, type=MessageType.CONSOLE, content="4\n", tool_call_id="call_1"),
        Message(
            role=Role.TOOL,
            type=MessageType.FUNCTION,
            content='{"ok": true}',
            tool_call_id="call_1",
            name="run_code",
        ),
        Message(
            role=Role.ASSISTANT,
            type=MessageType.IMAGE,
            images=(ImagePart(media_type="image/jpeg", url="https://example.org/cat.jpg"),),
            agent=AgentName.CREW,
        ),
        Message(
            role=Role.ASSISTANT,
            content="Half a repl",
            status=MessageStatus.INTERRUPTED,
            agent=AgentName.THOUGHT,
        ),
        Message(role=Role.ASSISTANT, content="boom", status=MessageStatus.ERROR),
    ]
