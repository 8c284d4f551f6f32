"""An external interpreter as an agent role inside the real Interpreter: events, Stop,
approvals and AutoChat all work on it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from connectors.external import ExternalInterpreterAgent
from connectors.scripted import ScriptedModel
from gui_agent.agents import default_architectures
from gui_agent.quick import create_interpreter
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    AutoChatSettings,
    AutoChatStopReason,
    InterpreterState,
    MessageStatus,
    MessageType,
    RunOutcome,
    TextDelta,
)
from tests.gui_agent.helpers import next_event, of_type


class FakeOpenInterpreter:
    """Speaks Open Interpreter's chunk format; counts its calls; can be told to hang."""

    def __init__(self, *, hang: bool = False) -> None:
        self.calls = 0
        self.hang = hang
        self.closed = asyncio.Event()

    def chat_core(
        self, request: Any, display: bool = False, stream: bool = False, blocking: bool = False
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls += 1
        return self._chunks(request)

    async def _chunks(self, request: Any) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {"role": "assistant", "type": "message", "start": True}
            for word in ["Let", " me", " compute", "."]:
                yield {"role": "assistant", "type": "message", "content": word}
            yield {"role": "assistant", "type": "message", "end": True}
            if self.hang:
                await asyncio.Event().wait()
            yield {"role": "assistant", "type": "code", "format": "python", "start": True}
            yield {"role": "assistant", "type": "code", "format": "python", "content": "6*7"}
            yield {"role": "assistant", "type": "code", "format": "python", "end": True}
            yield {"role": "computer", "type": "console", "format": "output", "content": "42"}
        finally:
            self.closed.set()


def interpreter_with(target: object, tmp_path: Path, **kwargs: Any):  # type: ignore[no-untyped-def]
    roles = dict(default_architectures())
    roles[AgentName.OTHER] = ExternalInterpreterAgent(target)
    interpreter = create_interpreter(
        ScriptedModel(), architectures=roles, workdir=tmp_path, **kwargs
    )
    interpreter.session.agent = AgentName.OTHER
    return interpreter


async def test_chunks_become_typed_messages_and_events(tmp_path: Path) -> None:
    fake = FakeOpenInterpreter()
    interpreter = interpreter_with(fake, tmp_path)
    events = [e async for e in interpreter.chat("what is 6*7?")]
    assert of_type(events, "run_finished")[0].outcome is RunOutcome.COMPLETED
    kinds = [(m.type, m.content) for m in interpreter.session.history[1:]]
    assert (MessageType.MESSAGE, "Let me compute.") in kinds
    assert (MessageType.CODE, "6*7") in kinds
    assert (MessageType.CONSOLE, "42") in kinds
    code = next(m for m in interpreter.session.history if m.type is MessageType.CODE)
    assert code.language == "python" and code.agent is AgentName.OTHER
    assert interpreter.state is InterpreterState.STOP


async def test_stop_closes_the_external_stream_and_keeps_the_partial(tmp_path: Path) -> None:
    fake = FakeOpenInterpreter(hang=True)
    interpreter = interpreter_with(fake, tmp_path)
    async with interpreter.subscribe() as sub:
        await interpreter.send("go")
        await next_event(sub, lambda e: isinstance(e, TextDelta) and e.delta == ".")
        await interpreter.stop()
    assert fake.closed.is_set()
    assert interpreter.state is InterpreterState.STOP
    assert interpreter.session.history[-1].content == "Let me compute."
    # a later turn works
    fake.hang = False
    _ = [e async for e in interpreter.chat("again")]
    assert interpreter.session.history[-1].content == "42"


async def test_autochat_drives_an_external_interpreter(tmp_path: Path) -> None:
    fake = FakeOpenInterpreter()
    interpreter = interpreter_with(
        fake, tmp_path, autochat=AutoChatSettings(enabled=True, max_turns=2)
    )
    events = [e async for e in interpreter.chat("keep going")]
    stops = of_type(events, "autochat_stopped")
    assert stops and stops[0].reason is AutoChatStopReason.MAX_TURNS
    assert fake.calls == 3


async def test_a_confirmation_chunk_asks_the_person(tmp_path: Path) -> None:
    def chunks(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield {
            "role": "computer",
            "type": "confirmation",
            "format": "execution",
            "content": {"type": "code", "format": "python", "content": "import os"},
        }
        yield {"role": "computer", "type": "console", "format": "output", "content": "ran"}

    interpreter = interpreter_with(chunks, tmp_path)
    async with interpreter.subscribe() as sub:
        await interpreter.send("run it")
        request = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert isinstance(request, ApprovalRequested)
        assert interpreter.state is InterpreterState.WAITING
        assert "import os" in request.detail
        interpreter.approve(request.approval_id, ApprovalDecision.DENY, "no")
        _ = [e async for e in sub.until_idle()]
    assert interpreter.state is InterpreterState.STOP
    assert all(m.content != "ran" for m in interpreter.session.history)
    assert interpreter.session.history[-1].status in (
        MessageStatus.COMPLETE,
        MessageStatus.INTERRUPTED,
    )
