"""A turn always ends: Stop at any moment, a second Stop, tools and agents failing in any
way, text that is not valid Unicode, a store that fails. The session stays usable."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, call
from gui_agent import SessionManager, StaticCatalog
from gui_agent.exceptions import StoreError
from gui_agent.interpreter import Interpreter
from gui_agent.quick import chat_sync, create_interpreter
from gui_agent.store import SQLiteStore
from gui_agent.tools import tool
from schema import (
    AgentName,
    ApprovalDecision,
    ErrorEvent,
    InterpreterState,
    Message,
    MessageStatus,
    ModelResponse,
    PermissionMode,
    Role,
    RunFinished,
    RunOutcome,
    valid_text,
)
from tests.gui_agent.helpers import make, next_event, of_type


class GatedStore(SQLiteStore):
    """A real SQLite store whose message writes wait at a gate the test opens."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = asyncio.Event()
        self.gate.set()
        self.waiting = asyncio.Event()

    async def append_message(self, session_id: str, message: Message) -> None:
        if not self.gate.is_set():
            self.waiting.set()
            await self.gate.wait()
        await super().append_message(session_id, message)


@pytest.fixture
async def gated(tmp_path: Path) -> AsyncIterator[tuple[SessionManager, GatedStore]]:
    store = GatedStore(tmp_path / "db.sqlite")
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(delay_s=0.01)),
        store=store,
        workspace_root=tmp_path,
    )
    await manager.start()
    yield manager, store
    await manager.close()


def scripted(interpreter: Interpreter) -> ScriptedModel:
    model = interpreter.deps.provider
    assert isinstance(model, ScriptedModel)
    return model


async def stored(manager: SessionManager, interpreter: Interpreter) -> list[Message]:
    return await manager.store.load_messages(interpreter.id)


async def test_a_stop_while_the_turn_is_still_starting_ends_it(
    gated: tuple[SessionManager, GatedStore],
) -> None:
    manager, store = gated
    interpreter = await manager.create("someone")
    scripted(interpreter).push("never streamed", "second answer")
    store.gate.clear()  # the user message's write waits: the turn is between BEGIN and run
    async with interpreter.subscribe() as sub:
        await interpreter.send("first")
        await store.waiting.wait()
        stopping = asyncio.create_task(interpreter.stop())
        await asyncio.sleep(0.01)
        store.gate.set()
        assert await stopping
        events = sub.pending()
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy
    finished = of_type(events, "run_finished")
    assert [e.outcome for e in finished] == [RunOutcome.INTERRUPTED]
    replies = [e async for e in interpreter.chat("again")]
    assert of_type(replies, "run_finished")[0].outcome is RunOutcome.COMPLETED
    assert [m.content for m in await stored(manager, interpreter)][:1] == ["first"]


async def test_a_second_stop_during_the_first_ones_clean_up_changes_nothing(
    gated: tuple[SessionManager, GatedStore],
) -> None:
    manager, store = gated
    interpreter = await manager.create("someone")
    scripted(interpreter).delay_s = 0.05
    scripted(interpreter).push("a long answer " * 20, "next")
    async with interpreter.subscribe() as sub:
        await interpreter.send("go")
        while not any(e.type == "text_delta" for e in sub.pending()):
            await asyncio.sleep(0.01)
        store.gate.clear()  # the clean-up's save of the partial reply waits at the gate
        first = asyncio.create_task(interpreter.stop())
        await store.waiting.wait()
        second = asyncio.create_task(interpreter.stop("stopped again"))
        await asyncio.sleep(0.02)
        store.gate.set()
        await asyncio.gather(first, second)
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy
    saved = await stored(manager, interpreter)
    assert saved[-1].role is Role.ASSISTANT and saved[-1].status is MessageStatus.INTERRUPTED
    assert saved[-1].content and ("a long answer " * 20).startswith(saved[-1].content)
    replies = [e async for e in interpreter.chat("more")]
    assert of_type(replies, "run_finished")[0].outcome is RunOutcome.COMPLETED


class Unusual(BaseException):
    """Not an Exception: what some libraries raise to unwind."""


@tool
async def unwinds() -> str:
    """Raises a BaseException that is not an Exception."""
    raise Unusual("deep unwind")


@tool
def interrupts() -> str:
    """A sync tool (run in a thread) raising KeyboardInterrupt."""
    raise KeyboardInterrupt


async def test_tools_raising_base_exceptions_give_error_results(tmp_path: Path) -> None:
    replies: list[ModelResponse | str] = [call("unwinds"), call("interrupts"), "handled both"]
    interpreter, _ = make(tmp_path, replies, tools=[unwinds, interrupts])
    events = [e async for e in interpreter.chat("try them")]
    results = [e.result for e in of_type(events, "tool_call_finished")]
    assert [(r.name, r.is_error) for r in results] == [("unwinds", True), ("interrupts", True)]
    assert "Unusual: deep unwind" in results[0].content
    assert "KeyboardInterrupt" in results[1].content
    assert interpreter.session.history[-1].content == "handled both"
    assert interpreter.state is InterpreterState.STOP


class UnwindingAgent:
    """An architecture that fails with a BaseException mid-turn."""

    name = AgentName.OTHER
    description = "fails"

    async def run(
        self, session: object, deps: object, prompt: Message
    ) -> AsyncIterator[ErrorEvent]:
        raise Unusual("agent unwound")
        yield  # pragma: no cover - makes this an async generator


async def test_an_agent_failing_with_a_base_exception_ends_the_turn_as_an_error(
    tmp_path: Path,
) -> None:
    interpreter = create_interpreter(
        ScriptedModel(),
        workdir=tmp_path,
        agent=AgentName.OTHER,
        architectures={AgentName.OTHER: UnwindingAgent()},
    )
    events = [e async for e in interpreter.chat("hello")]
    error = of_type(events, "error")[0]
    assert error.code == "agent_failed" and "agent unwound" in error.message
    assert of_type(events, "run_finished")[0].outcome is RunOutcome.ERROR
    assert interpreter.state is InterpreterState.STOP
    events = [e async for e in interpreter.chat("again")]  # still usable: it fails again
    assert of_type(events, "run_finished")[0].outcome is RunOutcome.ERROR


@tool
def broken_bytes() -> str:
    """Output holding a lone surrogate, as undecodable bytes become."""
    return "half: \udce9 and \ud800"


async def test_text_that_is_not_valid_unicode_is_repaired_and_saved(tmp_path: Path) -> None:
    model = ScriptedModel([call("broken_bytes"), "the model says \ud83d oops"])
    manager = SessionManager(
        models=StaticCatalog(model),
        store=SQLiteStore(tmp_path / "db.sqlite"),
        workspace_root=tmp_path,
    )
    await manager.start()
    interpreter = await manager.create("someone")
    interpreter.deps.tools.add(broken_bytes)
    events = [e async for e in interpreter.chat("user text \udcff here")]
    assert not of_type(events, "error")
    for event in events:  # every event can go out as JSON (SSE, the page)
        event.model_dump_json()
    saved = await stored(manager, interpreter)
    assert [m.content for m in saved] == [
        "user text \ufffd here",
        "",
        "half: \ufffd and \ufffd",
        "the model says \ufffd oops",
    ]
    assert [m.content for m in interpreter.session.history] == [m.content for m in saved]
    await manager.close()


def test_valid_text_keeps_valid_text_as_it_is() -> None:
    for text in ("plain", "é 😀 中文", ""):
        assert valid_text(text) == text
    assert valid_text("a\udc80b") == "a\ufffdb"


class FailingStore(SQLiteStore):
    """A real store with a bug: writing a message raises something that is not a StoreError."""

    async def append_message(self, session_id: str, message: Message) -> None:
        if message.role is Role.ASSISTANT:
            raise RuntimeError("disk gremlin")
        await super().append_message(session_id, message)


async def test_a_store_failing_unexpectedly_is_reported_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(["one", "two"])),
        store=FailingStore(tmp_path / "db.sqlite"),
        workspace_root=tmp_path,
    )
    await manager.start()
    interpreter = await manager.create("someone")
    events = [e async for e in interpreter.chat("hi")]
    errors = of_type(events, "error")
    assert [e.code for e in errors] == ["store_error"]
    assert "RuntimeError" in errors[0].message
    assert of_type(events, "run_finished")[0].outcome is RunOutcome.COMPLETED
    assert [m.content for m in interpreter.session.history] == ["hi", "one"]
    await manager.close()


async def test_a_step_that_asked_for_no_tools_drops_the_calls_the_model_made_anyway(
    tmp_path: Path,
) -> None:
    asks_anyway = ModelResponse(text="thinking", tool_calls=call("run_python").tool_calls)
    model = ScriptedModel([asks_anyway])
    interpreter = create_interpreter(model, workdir=tmp_path, agent=AgentName.THOUGHT)
    events = [e async for e in interpreter.chat("think")]
    reply = interpreter.session.history[-1]
    assert reply.content == "thinking" and reply.tool_calls == ()
    assert not of_type(events, "tool_call_started")
    assert of_type(events, "run_finished")[0].outcome is RunOutcome.COMPLETED


async def test_an_approval_nobody_gave_in_time_is_told_to_the_model_as_such(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, [call("run_python", code="print(1)"), "ok"])
    interpreter.session.settings = interpreter.session.settings.model_copy(
        update={"approval_timeout_s": 0.05}
    )
    _ = [e async for e in interpreter.chat("go")]
    answer = scripted(interpreter).requests[-1].messages[-1]
    assert answer.role is Role.TOOL
    assert answer.content == "Nobody approved this tool call within 0.05 s, so it was not run."


def test_chat_sync_without_an_approve_function_denies_at_once(tmp_path: Path) -> None:
    interpreter = create_interpreter(
        ScriptedModel([call("run_python", code="print(1)"), "understood"]), workdir=tmp_path
    )
    events = chat_sync(interpreter, "run it")  # the default timeout is minutes: no waiting
    resolved = of_type(events, "approval_resolved")
    assert [(e.decision, e.by) for e in resolved] == [(ApprovalDecision.DENY, "policy")]
    answer = scripted(interpreter).requests[-1].messages[-1]
    assert answer.content.startswith("This tool call was refused (nobody to ask")
    assert interpreter.session.history[-1].content == "understood"


def test_chat_sync_asks_the_approve_function(tmp_path: Path) -> None:
    asked: list[str] = []

    def approve(request: object) -> ApprovalDecision:
        asked.append(type(request).__name__)
        return ApprovalDecision.ALLOW_ONCE

    interpreter = create_interpreter(
        ScriptedModel([call("run_python", code="print(6 * 7)"), "done"]),
        workdir=tmp_path,
        permissions={"run_python": PermissionMode.ASK},
    )
    events = chat_sync(interpreter, "run it", approve=approve)
    assert asked == ["ApprovalRequested"]
    finished = of_type(events, "tool_call_finished")
    assert "42" in finished[0].result.content
    assert isinstance(events[-1], RunFinished) or events[-1].type == "state_changed"


class OnceLockedStore(SQLiteStore):
    """A real store that fails one message write, as a database locked too long does."""

    failed = False

    async def append_message(self, session_id: str, message: Message) -> None:
        if message.role is Role.ASSISTANT and not self.failed:
            self.failed = True
            raise StoreError("database is locked")
        await super().append_message(session_id, message)


async def test_a_failed_write_is_made_good_when_the_turn_ends(tmp_path: Path) -> None:
    store = OnceLockedStore(tmp_path / "db.sqlite")
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(["the reply"])),
        store=store,
        workspace_root=tmp_path,
    )
    await manager.start()
    interpreter = await manager.create("someone")
    events = [e async for e in interpreter.chat("remember this")]
    assert store.failed and [e.code for e in of_type(events, "error")] == ["store_error"]
    saved = await stored(manager, interpreter)
    assert [(m.role, m.content) for m in saved] == [
        (Role.USER, "remember this"),
        (Role.ASSISTANT, "the reply"),
    ]
    await manager.close()


async def test_messages_queued_behind_a_stop_are_announced_before_the_idle_mark(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, ["a long reply " * 50], delay_s=0.01)
    async with interpreter.subscribe() as sub:
        await interpreter.send("first")
        await next_event(sub, lambda e: e.type == "text_delta")
        await interpreter.send("queued behind")
        await interpreter.stop()
        seen = [e async for e in sub.until_idle()]  # ends at the idle mark
    filed = [e.message.content for e in of_type(seen, "message_completed")]
    assert filed[-1] == "queued behind"
    assert interpreter.session.history[-1].content == "queued behind"


async def test_a_stop_before_the_turn_took_up_its_message_keeps_the_message(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, ["never sent"])
    await interpreter.send("said just before the stop")
    await interpreter.send("and this one")
    assert await interpreter.stop()  # the run task had not started yet
    assert [m.content for m in interpreter.session.history] == [
        "said just before the stop",
        "and this one",
    ]
    assert interpreter.state is not InterpreterState.RUNNING and not interpreter.busy


async def test_a_call_stopped_while_running_says_how_long_it_ran(tmp_path: Path) -> None:
    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    interpreter, _ = make(tmp_path, [call("wait_forever"), "unused"], tools=[wait_forever])
    async with interpreter.subscribe() as sub:
        await interpreter.send("wait")
        await asyncio.wait_for(started.wait(), 10)
        before = time.monotonic()
        await asyncio.sleep(0.2)
        waited_ms = (time.monotonic() - before) * 1000  # the call was already running before
        await interpreter.stop()
        events = [e async for e in sub.until_idle()]
    [finished] = of_type(events, "tool_call_finished")
    [answer] = [m for m in interpreter.session.history if m.role is Role.TOOL]
    assert answer.metadata["was_running"] is True
    assert answer.metadata["duration_ms"] >= waited_ms - 1  # wall clock vs monotonic
    assert finished.result.duration_ms == answer.metadata["duration_ms"]
