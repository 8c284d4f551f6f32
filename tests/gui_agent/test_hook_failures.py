"""A lifecycle hook that fails does not break the turn, whatever it raises; Stop still stops
a turn whose hook is waiting."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, call
from gui_agent import tool
from gui_agent.hooks import AgentHooks
from gui_agent.quick import create_interpreter
from schema import (
    InterpreterState,
    Message,
    MessageStatus,
    ModelResponse,
    Role,
    RunFinished,
    RunOutcome,
    ToolCall,
    ToolResult,
)


class HookOwnError(BaseException):
    """What a hook might raise of its own: a BaseException that is not an Exception."""


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Raising(AgentHooks):
    """Every hook raises `HookOwnError`."""

    def __init__(self) -> None:
        self.called: list[str] = []

    def _fail(self, name: str) -> None:
        self.called.append(name)
        raise HookOwnError(f"{name} broke")

    async def on_start(self, session: object, prompt: Message) -> None:
        self._fail("on_start")

    async def on_llm_start(self, session: object, messages: list[Message]) -> None:
        self._fail("on_llm_start")

    async def on_llm_end(self, session: object, response: ModelResponse) -> None:
        self._fail("on_llm_end")

    async def on_tool_start(self, session: object, call: ToolCall) -> None:
        self._fail("on_tool_start")

    async def on_tool_end(self, session: object, result: ToolResult) -> None:
        self._fail("on_tool_end")

    async def on_end(self, session: object, outcome: str) -> None:
        self._fail("on_end")


async def test_a_hook_raising_a_base_exception_of_its_own_is_logged_and_the_turn_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = Raising()
    model = ScriptedModel([call("add", a=2, b=3), "It is 5.", "Again."])
    interpreter = create_interpreter(
        model, tools=[add], builtin_tools=False, workdir=tmp_path, hooks=hooks
    )
    with caplog.at_level(logging.ERROR, logger="gui_agent.hooks"):
        events = [e async for e in interpreter.chat("add 2 and 3")]
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.outcome for e in finished] == [RunOutcome.COMPLETED]
    assert interpreter.state is InterpreterState.STOP
    assert [m.content for m in interpreter.session.history if m.role is Role.TOOL] == ["5"]
    assert interpreter.session.history[-1].content == "It is 5."
    for name in ("on_start", "on_llm_start", "on_llm_end", "on_tool_start", "on_tool_end"):
        assert name in hooks.called
    failures = [r for r in caplog.records if "lifecycle hook failed" in r.getMessage()]
    assert len(failures) == len(hooks.called)
    assert "HookOwnError: on_tool_start broke" in " ".join(r.getMessage() for r in failures)
    # the session stays usable
    again = [e async for e in interpreter.chat("once more")]
    assert [e.outcome for e in again if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]
    assert interpreter.session.history[-1].content == "Again."


async def test_stop_still_ends_a_turn_whose_hook_is_waiting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    waiting = asyncio.Event()

    class Waiting(AgentHooks):
        async def on_tool_start(self, session: object, call: ToolCall) -> None:
            waiting.set()
            await asyncio.Event().wait()

    model = ScriptedModel([call("add", a=1, b=1), "never reached", "after"])
    interpreter = create_interpreter(
        model, tools=[add], builtin_tools=False, workdir=tmp_path, hooks=Waiting()
    )
    await interpreter.send("add")
    await asyncio.wait_for(waiting.wait(), 10)
    assert await interpreter.stop() is True
    assert interpreter.state is InterpreterState.STOP
    answer = interpreter.session.history[-1]
    assert answer.role is Role.TOOL and answer.status is MessageStatus.INTERRUPTED
    assert not [r for r in caplog.records if "lifecycle hook failed" in r.getMessage()]
