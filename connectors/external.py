"""External interpreters (Open Interpreter style) as an agent role.

`ExternalInterpreterAgent` wraps something that streams LMC chunks and implements the
`Architecture` protocol, so it runs like any other role, AutoChat included (a continuation
prompt is just another prompt). It accepts:

(a) an object with ``chat_core(request, display=False, stream=False, blocking=False)``; it is
    called with ``stream=True`` and the prompt as an LMC user dict (a list of chunks when the
    prompt carries images). It may return a sync generator, an async generator, a coroutine or
    a list. Only the prompt is sent: such an interpreter keeps its own conversation;
(b) a callable ``fn(messages)`` taking the conversation as a list of LMC dicts and returning
    (a)sync chunks, a coroutine or a list;
(c) an (a)sync generator function with the same signature as (b).

Sync callables are called in a worker thread and sync generators are stepped in worker threads
(`StreamWrapper`), so a blocking interpreter never blocks the event loop.

Cancellation (the user's Stop) closes the source at once and re-raises `CancelledError`. A
generator in the middle of a blocking step in a thread cannot be interrupted: we stop waiting
for it, and the thread closes it as soon as that step returns. A blocking call still running in
a thread finishes on its own; what it returns late is closed and dropped. The message being
streamed when Stop arrives is appended to ``session.history`` with status INTERRUPTED, but no
`MessageCompleted` is yielded for it (a generator cannot yield once it is cancelled): the
interpreter announces interrupted messages. A failure of the source likewise keeps the partial
message, with status ERROR, and the exception propagates to the interpreter.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from connectors.log_text import loggable
from gui_agent.approvals import ApprovalBroker, Verdict
from gui_agent.converter import (
    AssemblyStep,
    ChunkAssembler,
    ConfirmationAsked,
    ContentAdded,
    MessageClosed,
    MessageOpened,
    RequestConverter,
)
from gui_agent.exceptions import UserError
from gui_agent.session import Session
from gui_agent.stream import StreamWrapper
from schema import (
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
    PermissionMode,
    Role,
    TextDelta,
    ToolCall,
    new_id,
)

__all__ = ["ApprovalDeps", "ExternalInterpreterAgent"]

logger = logging.getLogger(__name__)

DEFAULT_DESCRIPTION = "An external code interpreter that streams LMC chunks."


class ApprovalDeps(Protocol):
    """What this role needs from `AgentDeps`: only the approval broker."""

    @property
    def approvals(self) -> ApprovalBroker: ...


class ExternalInterpreterAgent:
    """An agent role backed by an external interpreter's chunk stream."""

    def __init__(
        self,
        target: object,
        *,
        name: AgentName = AgentName.OTHER,
        description: str = DEFAULT_DESCRIPTION,
        converter: RequestConverter | None = None,
    ) -> None:
        chat_core = getattr(target, "chat_core", None)
        if callable(chat_core):
            self._chat_core: Callable[..., object] | None = chat_core
            self._fn: Callable[[list[dict[str, Any]]], object] | None = None
        elif callable(target):
            self._chat_core = None
            self._fn = target
        else:
            raise UserError(
                f"{type(target).__name__} is neither an interpreter with chat_core() nor a "
                "callable taking the conversation as LMC messages"
            )
        self._name = name
        self._description = description
        self._converter = converter or RequestConverter()

    @property
    def name(self) -> AgentName:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    async def run(
        self, session: Session, deps: ApprovalDeps, prompt: Message
    ) -> AsyncIterator[Event]:
        """Stream the interpreter's reply to `prompt` as events; see the module docstring."""
        assembler = ChunkAssembler(agent=self._name)
        speaking = self._name
        stream = StreamWrapper[object](await self._start(session, prompt))
        try:
            async for raw in stream:
                for chunk in self._converter.flatten(raw):
                    for step in assembler.feed(chunk):
                        agent = _agent_of(step)
                        if agent is not None and agent is not speaking:
                            yield AgentSwitched(
                                from_agent=speaking, to_agent=agent, reason="interpreter agent"
                            )
                            speaking = agent
                        if not isinstance(step, ConfirmationAsked):
                            for event in _events_of(step, session):
                                yield event
                            continue
                        call, policy = _approval_call(step), _policy_verdict(session, step)
                        if policy is None:
                            deps.approvals.open(call.id)
                        yield ApprovalRequested(
                            approval_id=call.id,
                            call=call,
                            summary=f"Run {step.language or 'code'}",
                            detail=step.code,
                            language=step.language,
                        )
                        verdict = policy or await deps.approvals.wait(
                            call.id, session.settings.approval_timeout_s
                        )
                        yield ApprovalResolved(
                            approval_id=call.id,
                            decision=verdict.decision,
                            note=verdict.note,
                            by=verdict.by,
                        )
                        if verdict.decision is ApprovalDecision.ALLOW_SESSION:
                            session.allowed_tools.add(call.name)
                        elif verdict.decision is ApprovalDecision.DENY:
                            await stream.aclose()
                            denied = _denied_message(verdict, speaking, call.id)
                            session.add(denied)
                            yield MessageCompleted(message=denied)
                            return
            for step in assembler.finish():
                for event in _events_of(step, session):
                    yield event
        except BaseException as exc:
            failed = not isinstance(exc, asyncio.CancelledError | GeneratorExit)
            partial = assembler.interrupt(
                MessageStatus.ERROR if failed else MessageStatus.INTERRUPTED
            )
            if partial is not None:
                session.add(partial)
            raise
        finally:
            await stream.aclose()

    async def _start(self, session: Session, prompt: Message) -> object:
        """Call the interpreter; its (unread) reply: a generator, a coroutine, a list, …"""
        if self._chat_core is not None:
            chunks = self._converter.request_to_lmc(prompt)
            request: object = chunks[0] if len(chunks) == 1 else chunks
            return await _call_off_loop(
                self._chat_core, request, display=False, stream=True, blocking=False
            )
        assert self._fn is not None
        conversation = list(session.history)
        if all(message.id != prompt.id for message in conversation):
            conversation.append(prompt)
        return await _call_off_loop(self._fn, self._converter.messages_to_lmc(conversation))


def _agent_of(step: AssemblyStep) -> AgentName | None:
    if isinstance(step, MessageOpened):
        return step.agent
    if isinstance(step, MessageClosed | ConfirmationAsked):
        return step.message.agent
    return None


def _events_of(step: AssemblyStep, session: Session) -> list[Event]:
    """The events of one assembled step; a closed message is appended to the history."""
    if isinstance(step, MessageOpened):
        return [
            MessageStarted(
                message_id=step.message_id,
                role=step.role,
                message_type=step.message_type,
                agent=step.agent,
                language=step.language,
            )
        ]
    if isinstance(step, ContentAdded):
        return [TextDelta(message_id=step.message_id, delta=step.text)]
    if isinstance(step, MessageClosed):
        session.add(step.message)
        return [MessageCompleted(message=step.message)]
    return []


def _approval_call(step: ConfirmationAsked) -> ToolCall:
    arguments = json.dumps({"language": step.language, "code": step.code})
    return ToolCall(id=new_id(), name=step.tool_name, arguments=arguments)


def _policy_verdict(session: Session, step: ConfirmationAsked) -> Verdict | None:
    """A decision the session's settings already made for this tool; None means ask."""
    mode = session.settings.permissions.get(step.tool_name)
    if mode is PermissionMode.DENY:
        return Verdict(ApprovalDecision.DENY, "denied by the session's settings", by="policy")
    if mode is PermissionMode.ALLOW or step.tool_name in session.allowed_tools:
        return Verdict(ApprovalDecision.ALLOW_SESSION, None, by="policy")
    return None


def _denied_message(verdict: Verdict, agent: AgentName, approval_id: str) -> Message:
    reason = f": {verdict.note}" if verdict.note else ""
    return Message(
        role=Role.ASSISTANT,
        content=f"The run was denied{reason}. The interpreter was stopped.",
        agent=agent,
        metadata={"approval_id": approval_id, "denied_by": verdict.by},
    )


async def _call_off_loop(fn: Callable[..., object], /, *args: Any, **kwargs: Any) -> object:
    """Call `fn` without blocking the loop: async functions directly, the rest in a thread.

    On cancellation we stop waiting; the thread finishes on its own and its late result (a
    generator or a coroutine) is closed, never read.
    """
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return fn(*args, **kwargs)
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    future = loop.run_in_executor(None, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        future.add_done_callback(_drop_late_result)
        raise


def _drop_late_result(future: asyncio.Future[object]) -> None:
    if future.cancelled():
        return
    error = future.exception()
    if error is not None:
        # On one line, escaped, without the traceback (which would repeat the words raw):
        # they are the interpreter's, and may quote a model or a program's output.
        logger.info(
            "an abandoned interpreter call failed: %s",
            loggable(f"{type(error).__name__}: {error}"),
        )
        return
    result = future.result()
    if inspect.iscoroutine(result) or inspect.isgenerator(result):
        result.close()
