"""ExternalInterpreterAgent: an LMC-streaming interpreter run as an agent role."""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import struct
import threading
import time
import zlib
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from connectors.external import ExternalInterpreterAgent
from gui_agent.approvals import ApprovalBroker
from gui_agent.exceptions import UserError
from gui_agent.session import Session
from schema import (
    DEFAULT_CONTINUATION_PROMPT,
    AgentName,
    AgentSwitched,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    Event,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    MessageType,
    PermissionMode,
    Role,
    SessionSettings,
    TextDelta,
)


def png_1x1() -> bytes:
    """A real one-pixel red PNG."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


PNG = png_1x1()
PNG_B64 = base64.b64encode(PNG).decode()


@dataclass
class Deps:
    """The part of AgentDeps this role uses."""

    approvals: ApprovalBroker = field(default_factory=ApprovalBroker)


@dataclass
class FakeInterpreter:
    """Plays Open Interpreter: `chat_core` streams a scripted list of LMC chunks."""

    script: list[dict[str, Any]]
    requests: list[Any] = field(default_factory=list)
    options: list[dict[str, bool]] = field(default_factory=list)
    yielded: int = 0
    closed: bool = False

    def chat_core(
        self, request: Any, display: bool = False, stream: bool = False, blocking: bool = False
    ) -> Iterator[dict[str, Any]]:
        self.requests.append(request)
        self.options.append({"display": display, "stream": stream, "blocking": blocking})
        return self._stream()

    def _stream(self) -> Iterator[dict[str, Any]]:
        try:
            for chunk in self.script:
                self.yielded += 1
                yield chunk
        finally:
            self.closed = True


def code_chunks(code: str, language: str = "python") -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "type": "code", "format": language, "start": True},
        {"role": "assistant", "type": "code", "format": language, "content": code},
        {"role": "assistant", "type": "code", "format": language, "end": True},
        {
            "role": "computer",
            "type": "confirmation",
            "format": "execution",
            "content": {"type": "code", "format": language, "content": code},
        },
    ]


def console_chunks(output: str) -> list[dict[str, Any]]:
    return [
        {"role": "computer", "type": "console", "start": True},
        {"role": "computer", "type": "console", "format": "active_line", "content": "1"},
        {"role": "computer", "type": "console", "format": "output", "content": output},
        {"role": "computer", "type": "console", "format": "active_line", "content": None},
        {"role": "computer", "type": "console", "end": True},
    ]


def message_chunks(*parts: str, agent_name: str | None = None) -> list[dict[str, Any]]:
    extra = {"agent_name": agent_name} if agent_name else {}
    return [
        {"role": "assistant", "type": "message", "start": True, **extra},
        *({"role": "assistant", "type": "message", "content": p, **extra} for p in parts),
        {"role": "assistant", "type": "message", "end": True, **extra},
    ]


async def run_answering(
    agent: ExternalInterpreterAgent,
    session: Session,
    deps: Deps,
    prompt: Message,
    answers: list[ApprovalDecision],
) -> list[Event]:
    """Run a turn, answering approval requests in order, like a person in the browser."""
    events: list[Event] = []
    pending = list(answers)
    async for event in agent.run(session, deps, prompt):
        events.append(event)
        if isinstance(event, ApprovalRequested) and event.approval_id in deps.approvals.pending:
            deps.approvals.resolve(event.approval_id, pending.pop(0), None)
    return events


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


# -- a full scripted turn --------------------------------------------------------------------------


async def test_every_chunk_type_becomes_events_and_history() -> None:
    script = [
        *message_chunks("Let me ", "compute."),
        *code_chunks("print(34 / 24)"),
        *console_chunks("1.4166666666666667\n"),
        {"role": "computer", "type": "image", "format": "base64.png", "content": PNG_B64},
        *message_chunks("Supervisor here.", agent_name="supervisor"),
        *message_chunks("Done."),
    ]
    interpreter = FakeInterpreter(script)
    agent = ExternalInterpreterAgent(interpreter)
    session, deps = Session(), Deps()
    prompt = user("What's 34/24?")

    events = await run_answering(agent, session, deps, prompt, [ApprovalDecision.ALLOW_ONCE])

    assert interpreter.requests == [{"role": "user", "type": "message", "content": "What's 34/24?"}]
    assert interpreter.options == [{"display": False, "stream": True, "blocking": False}]
    assert interpreter.closed

    kinds = [event.type for event in events]
    assert kinds == [
        "message_started",
        "text_delta",
        "text_delta",
        "message_completed",  # message
        "message_started",
        "text_delta",
        "message_completed",  # code
        "approval_requested",
        "approval_resolved",
        "message_started",
        "text_delta",
        "message_completed",  # console
        "message_completed",  # image, whole
        "agent_switched",
        "message_started",
        "text_delta",
        "message_completed",  # supervisor
        "agent_switched",
        "message_started",
        "text_delta",
        "message_completed",  # back to the adapter's role
    ]
    started = [e for e in events if isinstance(e, MessageStarted)]
    assert [(e.message_type, e.language, e.agent) for e in started] == [
        (MessageType.MESSAGE, None, AgentName.OTHER),
        (MessageType.CODE, "python", AgentName.OTHER),
        (MessageType.CONSOLE, None, AgentName.OTHER),
        (MessageType.MESSAGE, None, AgentName.SUPERVISOR),
        (MessageType.MESSAGE, None, AgentName.OTHER),
    ]
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert deltas[:4] == ["Let me ", "compute.", "print(34 / 24)", "1.4166666666666667\n"]

    requested = next(e for e in events if isinstance(e, ApprovalRequested))
    assert requested.call.name == "run_code"
    assert requested.call.id == requested.approval_id
    assert json.loads(requested.call.arguments) == {
        "language": "python",
        "code": "print(34 / 24)",
    }
    assert (requested.detail, requested.language) == ("print(34 / 24)", "python")
    resolved = next(e for e in events if isinstance(e, ApprovalResolved))
    assert (resolved.approval_id, resolved.decision, resolved.by) == (
        requested.approval_id,
        ApprovalDecision.ALLOW_ONCE,
        "user",
    )

    switches = [e for e in events if isinstance(e, AgentSwitched)]
    assert [(s.from_agent, s.to_agent) for s in switches] == [
        (AgentName.OTHER, AgentName.SUPERVISOR),
        (AgentName.SUPERVISOR, AgentName.OTHER),
    ]

    completed = [e.message for e in events if isinstance(e, MessageCompleted)]
    assert session.history == completed
    assert [(m.type, m.content) for m in completed if m.type is not MessageType.IMAGE] == [
        (MessageType.MESSAGE, "Let me compute."),
        (MessageType.CODE, "print(34 / 24)"),
        (MessageType.CONSOLE, "1.4166666666666667\n"),
        (MessageType.MESSAGE, "Supervisor here."),
        (MessageType.MESSAGE, "Done."),
    ]
    (image,) = [m for m in completed if m.type is MessageType.IMAGE]
    assert image.images[0].media_type == "image/png"
    assert base64.b64decode(image.images[0].data or "") == PNG
    for event in events:  # the interpreter stamps the envelope
        assert (event.seq, event.session_id, event.run_id) == (0, "", "")


async def test_a_denied_confirmation_stops_the_interpreter() -> None:
    script = [*code_chunks("rm -rf build"), *console_chunks("removed\n"), *message_chunks("ok")]
    interpreter = FakeInterpreter(script)
    agent = ExternalInterpreterAgent(interpreter, name=AgentName.AGENT_EXECUTOR)
    session, deps = Session(), Deps()

    events = await run_answering(agent, session, deps, user("clean"), [ApprovalDecision.DENY])

    assert interpreter.closed
    assert interpreter.yielded == 4  # nothing read past the confirmation
    resolved = next(e for e in events if isinstance(e, ApprovalResolved))
    assert resolved.decision is ApprovalDecision.DENY
    assert not any(
        isinstance(e, MessageStarted) and e.message_type is MessageType.CONSOLE for e in events
    )
    last = events[-1]
    assert isinstance(last, MessageCompleted)
    assert "denied" in last.message.content
    assert last.message.agent is AgentName.AGENT_EXECUTOR
    assert session.history[-1] == last.message
    assert [m.type for m in session.history] == [MessageType.CODE, MessageType.MESSAGE]


async def test_an_unanswered_confirmation_is_denied_after_the_session_timeout() -> None:
    interpreter = FakeInterpreter([*code_chunks("1"), *console_chunks("1\n")])
    session = Session(settings=SessionSettings(approval_timeout_s=0.01))
    events = [
        e async for e in ExternalInterpreterAgent(interpreter).run(session, Deps(), user("x"))
    ]
    resolved = next(e for e in events if isinstance(e, ApprovalResolved))
    assert (resolved.decision, resolved.by) == (ApprovalDecision.DENY, "timeout")
    assert interpreter.closed


async def test_allow_for_the_session_is_remembered_for_the_next_confirmation() -> None:
    script = [*code_chunks("a = 1"), *code_chunks("b = 2"), *message_chunks("ok")]
    session, deps = Session(), Deps()
    agent = ExternalInterpreterAgent(FakeInterpreter(script))

    events = await run_answering(agent, session, deps, user("go"), [ApprovalDecision.ALLOW_SESSION])

    resolved = [e for e in events if isinstance(e, ApprovalResolved)]
    assert [(r.decision, r.by) for r in resolved] == [
        (ApprovalDecision.ALLOW_SESSION, "user"),
        (ApprovalDecision.ALLOW_SESSION, "policy"),
    ]
    assert "run_code" in session.allowed_tools
    assert session.history[-1].content == "ok"


async def test_a_tool_denied_in_the_settings_is_denied_without_asking() -> None:
    session = Session(settings=SessionSettings(permissions={"run_code": PermissionMode.DENY}))
    interpreter = FakeInterpreter([*code_chunks("x"), *console_chunks("x\n")])
    events = [
        e async for e in ExternalInterpreterAgent(interpreter).run(session, Deps(), user("x"))
    ]
    resolved = next(e for e in events if isinstance(e, ApprovalResolved))
    assert (resolved.decision, resolved.by) == (ApprovalDecision.DENY, "policy")
    assert interpreter.closed


# -- other kinds of interpreter --------------------------------------------------------------------


async def test_a_callable_gets_the_conversation_as_lmc_messages() -> None:
    received: list[list[dict[str, Any]]] = []

    def interpreter(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        received.append(messages)
        return [{"role": "assistant", "type": "message", "content": "four"}]

    session = Session()
    session.add(user("hi"))
    session.add(Message(role=Role.ASSISTANT, content="hello"))
    prompt = user("2+2?")
    session.add(prompt)

    events = [e async for e in ExternalInterpreterAgent(interpreter).run(session, Deps(), prompt)]

    assert received == [
        [
            {"role": "user", "type": "message", "content": "hi"},
            {"role": "assistant", "type": "message", "content": "hello"},
            {"role": "user", "type": "message", "content": "2+2?"},
        ]
    ]
    assert [e.type for e in events] == ["message_started", "text_delta", "message_completed"]
    assert session.history[-1].content == "four"


async def test_an_async_generator_function_works_as_an_interpreter() -> None:
    async def interpreter(messages: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        yield {"role": "assistant", "type": "message", "content": messages[-1]["content"]}
        yield {"role": "assistant", "type": "message", "content": "!"}

    session = Session()
    events = [
        e async for e in ExternalInterpreterAgent(interpreter).run(session, Deps(), user("echo"))
    ]
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["echo", "!"]
    assert session.history[-1].content == "echo!"


async def test_an_async_chat_core_returning_a_list_works() -> None:
    class AsyncInterpreter:
        async def chat_core(
            self, request: Any, display: bool = False, stream: bool = False, blocking: bool = False
        ) -> list[Any]:
            return [[{"role": "assistant", "type": "message", "content": request["content"]}]]

    session = Session()
    agent = ExternalInterpreterAgent(AsyncInterpreter(), name=AgentName.CREW)
    events = [e async for e in agent.run(session, Deps(), user("nested"))]
    assert isinstance(events[-1], MessageCompleted)
    assert (events[-1].message.content, events[-1].message.agent) == ("nested", AgentName.CREW)
    assert agent.name is AgentName.CREW
    assert agent.description


async def test_an_autochat_continuation_reaches_the_interpreter_like_any_prompt() -> None:
    interpreter = FakeInterpreter(message_chunks("step"))
    agent = ExternalInterpreterAgent(interpreter)
    session, deps = Session(), Deps()
    first = user("build it")
    continuation = Message(
        role=Role.USER, content=DEFAULT_CONTINUATION_PROMPT, metadata={"autochat": True}
    )
    for prompt in (first, continuation):
        session.add(prompt)
        async for _ in agent.run(session, deps, prompt):
            pass
    assert [request["content"] for request in interpreter.requests] == [
        "build it",
        DEFAULT_CONTINUATION_PROMPT,
    ]
    assert [m.content for m in session.history] == [
        "build it",
        "step",
        DEFAULT_CONTINUATION_PROMPT,
        "step",
    ]


def test_something_that_is_not_an_interpreter_is_refused() -> None:
    with pytest.raises(UserError, match="chat_core"):
        ExternalInterpreterAgent(42)


# -- never block, always stop --------------------------------------------------------------


async def test_a_blocking_chat_core_does_not_block_the_loop() -> None:
    release = threading.Event()
    released_by_loop: list[bool] = []

    class BlockingInterpreter:
        def chat_core(
            self, request: Any, display: bool = False, stream: bool = False, blocking: bool = False
        ) -> list[dict[str, Any]]:
            # Only a task on the event loop sets this; a blocked loop would time out here.
            released_by_loop.append(release.wait(timeout=5))
            return [{"role": "assistant", "type": "message", "content": "finally"}]

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        for _ in range(5):
            await asyncio.sleep(0)
            ticks += 1
        release.set()

    session = Session()
    agent = ExternalInterpreterAgent(BlockingInterpreter())
    async with asyncio.TaskGroup() as group:
        group.create_task(ticker())
        events = [e async for e in agent.run(session, Deps(), user("slow"))]
    assert released_by_loop == [True]
    assert ticks == 5
    assert session.history[-1].content == "finally"
    assert isinstance(events[-1], MessageCompleted)


async def test_stop_closes_an_async_source_and_keeps_the_partial_reply() -> None:
    closed = asyncio.Event()
    never = asyncio.Event()

    async def interpreter(messages: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {"role": "assistant", "type": "message", "start": True}
            yield {"role": "assistant", "type": "message", "content": "Half a "}
            await never.wait()
            yield {"role": "assistant", "type": "message", "content": "reply"}
        finally:
            closed.set()

    session = Session()
    streaming = asyncio.Event()
    events: list[Event] = []

    async def consume() -> None:
        async for event in ExternalInterpreterAgent(interpreter).run(session, Deps(), user("x")):
            events.append(event)
            if isinstance(event, TextDelta):
                streaming.set()

    task = asyncio.create_task(consume())
    await streaming.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert closed.is_set()
    (partial,) = session.history
    assert (partial.content, partial.status) == ("Half a ", MessageStatus.INTERRUPTED)
    started = next(e for e in events if isinstance(e, MessageStarted))
    assert partial.id == started.message_id
    assert not any(isinstance(e, MessageCompleted) for e in events)


async def test_stop_during_a_blocking_step_returns_at_once_and_the_thread_closes_the_source() -> (
    None
):
    blocked = threading.Event()
    release = threading.Event()
    closed = threading.Event()

    class SlowInterpreter:
        def chat_core(
            self, request: Any, display: bool = False, stream: bool = False, blocking: bool = False
        ) -> Iterator[dict[str, Any]]:
            try:
                yield {"role": "assistant", "type": "message", "content": "working"}
                blocked.set()
                release.wait(timeout=5)
                yield {"role": "assistant", "type": "message", "content": " more"}
            finally:
                closed.set()

    session = Session()
    streaming = asyncio.Event()

    async def consume() -> None:
        async for event in ExternalInterpreterAgent(SlowInterpreter()).run(
            session, Deps(), user("x")
        ):
            if isinstance(event, TextDelta):
                streaming.set()

    task = asyncio.create_task(consume())
    await streaming.wait()
    await asyncio.to_thread(blocked.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # while the interpreter is still blocked in its thread
    assert session.history[-1].status is MessageStatus.INTERRUPTED
    assert not closed.is_set()
    release.set()
    assert await asyncio.to_thread(closed.wait, 5)


async def test_stop_during_a_blocking_chat_core_call_drops_its_late_result() -> None:
    entered = threading.Event()
    release = threading.Event()
    late: list[Coroutine[Any, Any, list[Any]]] = []

    async def reply() -> list[Any]:
        return ["never read"]

    class HangingInterpreter:
        def chat_core(
            self, request: Any, display: bool = False, stream: bool = False, blocking: bool = False
        ) -> Coroutine[Any, Any, list[Any]]:
            entered.set()
            release.wait(timeout=5)
            late.append(reply())
            return late[-1]

    session = Session()
    task = asyncio.ensure_future(
        anext(ExternalInterpreterAgent(HangingInterpreter()).run(session, Deps(), user("x")))
    )
    await asyncio.to_thread(entered.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # while chat_core is still blocked in its thread
    release.set()
    deadline = time.monotonic() + 5  # the thread finishes on its own (on a busy machine,
    # after many loop iterations); its result is closed, not awaited
    while (
        not (late and inspect.getcoroutinestate(late[0]) == inspect.CORO_CLOSED)
        and time.monotonic() < deadline
    ):
        await asyncio.sleep(0.001)
    assert late and inspect.getcoroutinestate(late[0]) == inspect.CORO_CLOSED
    assert session.history == []


async def test_stop_while_waiting_for_approval_closes_the_source() -> None:
    interpreter = FakeInterpreter([*code_chunks("x"), *console_chunks("x\n")])
    deps = Deps()
    asked = asyncio.Event()

    async def consume() -> None:
        async for event in ExternalInterpreterAgent(interpreter).run(Session(), deps, user("x")):
            if isinstance(event, ApprovalRequested):
                asked.set()

    task = asyncio.create_task(consume())
    await asked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert interpreter.closed
    assert deps.approvals.pending == ()


async def test_a_failing_interpreter_keeps_the_partial_reply_as_an_error() -> None:
    def interpreter(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield {"role": "assistant", "type": "message", "content": "so far"}
        raise ValueError("interpreter crashed")

    session = Session()
    with pytest.raises(ValueError, match="crashed"):
        async for _ in ExternalInterpreterAgent(interpreter).run(session, Deps(), user("x")):
            pass
    assert (session.history[-1].content, session.history[-1].status) == (
        "so far",
        MessageStatus.ERROR,
    )
