"""AGENT_EXECUTOR: the tool-calling loop.

Each iteration: window the history, stream one model call, then run the tools it asked for
(approvals first, then all allowed calls in parallel; results appended in call order). Ends on
a reply without tool calls, on `task_complete`, on max iterations, or on the token budget.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from gui_agent.agents.base import AgentDeps
from gui_agent.approvals import Verdict
from gui_agent.autochat import goal_to_pin
from gui_agent.exceptions import ModelResponseError
from gui_agent.hooks import call_hook
from gui_agent.session import Session
from gui_agent.tools import (
    TASK_COMPLETE,
    ToolContext,
    approval_view,
    execute_tool,
)
from gui_agent.tools.execution import decode_arguments
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    Event,
    MemoryUpdated,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageType,
    ModelResponse,
    ModelSettings,
    ModelTextDelta,
    PermissionMode,
    Role,
    RunFinished,
    RunOutcome,
    SessionSettings,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
    Usage,
    UsageReported,
    new_id,
    valid_text,
)

logger = logging.getLogger(__name__)


def reply_metadata(final: ModelResponse, deps: AgentDeps) -> dict[str, object]:
    """What a reply message records about its model call."""
    metadata: dict[str, object] = {"model": final.model or deps.provider.name}
    if final.finish_reason == "length":  # the model hit its output limit mid-reply
        metadata["cut_off"] = True
    if final.provider_data:
        metadata["provider_data"] = final.provider_data
    return metadata


def valid_response(final: ModelResponse) -> ModelResponse:
    """`final` with lone surrogates in its text, reasoning and tool calls replaced (see
    `valid_text`): a reply holding one could be neither saved nor sent. Checks are O(1) per
    string when the text is ASCII."""
    reasoning = final.reasoning
    for call in final.tool_calls:
        if not (call.arguments.isascii() and call.name.isascii()):
            break
    else:
        if final.text.isascii() and (reasoning is None or reasoning.isascii()):
            return final
    calls = tuple(
        call.model_copy(
            update={"name": valid_text(call.name), "arguments": valid_text(call.arguments)}
        )
        for call in final.tool_calls
    )
    return final.model_copy(
        update={
            "text": valid_text(final.text),
            "reasoning": None if reasoning is None else valid_text(reasoning),
            "tool_calls": calls,
        }
    )


def distinct_calls(final: ModelResponse) -> ModelResponse:
    """`final` with every tool call under an id of its own: an empty id, or one an earlier
    call of the same reply already has, is replaced by a fresh one. Results are matched to
    calls by id (by the executor, the memory, the vendors), so two calls sharing one would
    get one result between them; a tool message without an id cannot even be built."""
    tool_calls = final.tool_calls
    if len(tool_calls) == 1:
        if tool_calls[0].id:
            return final
    elif not tool_calls:
        return final
    else:
        ids = {call.id for call in tool_calls}
        if len(ids) == len(tool_calls) and "" not in ids:
            return final
    seen: set[str] = set()
    fixed = []
    for call in tool_calls:
        own = call
        if not call.id or call.id in seen:
            own = call.model_copy(update={"id": "call_" + new_id()[:24]})
        seen.add(own.id)
        fixed.append(own)
    return final.model_copy(update={"tool_calls": tuple(fixed)})


def without_calls(final: ModelResponse, agent: AgentName) -> tuple[ModelResponse, list[str]]:
    """`final` without the tool calls a step that offers no tools got anyway, and the names
    they asked for. A reply that was nothing but such calls says so in its text, so that
    neither the person nor the next model call finds an empty message."""
    names = [call.name for call in final.tool_calls]
    update: dict[str, object] = {"tool_calls": ()}
    if not final.text.strip():
        asked = ", ".join(dict.fromkeys(names))
        update["text"] = (
            f"(No answer: the {agent.value} agent asked to call {asked}, but it has no tools "
            "here, so nothing was run.)"
        )
    return final.model_copy(update=update), names


def memory_event(session: Session, deps: AgentDeps) -> tuple[list[Message], MemoryUpdated]:
    """The context window for the next model call, and the event that shows it."""
    window = deps.memory.window(
        session.history,
        system_prompt=session.settings.system_prompt,
        goal=goal_to_pin(session) if session.autochat.enabled else None,
        exchanges=session.settings.memory_exchanges,
        token_budget=session.settings.memory_token_budget,
    )
    event = MemoryUpdated(
        message_ids=window.message_ids,
        token_count=window.token_count,
        token_estimated=window.token_estimated,
        goal=window.goal,
        goal_pinned=window.goal_pinned,
        dropped=window.dropped,
    )
    return list(window.messages), event


def drain_inbox(session: Session) -> list[Message]:
    """Messages the person sent while the turn ran, moved into the history."""
    moved = []
    while session.inbox:
        message = session.inbox.popleft()
        session.add(message)
        moved.append(message)
    return moved


@dataclass(slots=True, eq=False)
class Turn:
    """What the model calls of one turn share, whichever roles make them: the usage so far
    (reported as the turn's usage) and the last model response, to act on."""

    usage: Usage = field(default_factory=Usage)
    response: ModelResponse | None = None
    _settings: tuple[SessionSettings, ModelSettings] | None = None

    def last_response(self) -> ModelResponse:
        assert self.response is not None, "no model call in this turn yet"
        return self.response

    def model_settings(self, session: Session) -> ModelSettings:
        """What the session's settings ask of the model, built again only when they change."""
        known = self._settings
        if known is None or known[0] is not session.settings:
            settings = session.settings
            known = self._settings = (
                settings,
                ModelSettings(temperature=settings.temperature, max_tokens=settings.max_tokens),
            )
        return known[1]


async def model_step(
    session: Session,
    deps: AgentDeps,
    *,
    agent: AgentName,
    turn: Turn,
    use_tools: bool = True,
    instruction: str | None = None,
) -> AsyncIterator[Event]:
    """One model call on the memory window, streamed: memory_updated, message_started,
    deltas, message_completed (the reply, appended to the history), usage. The response
    (for its tool calls) is left in `turn.response`, and its usage added to `turn.usage`.

    `instruction` goes to the model as a SYSTEM message after the window, for this call
    only (it is not kept in the history)."""
    messages, memory = memory_event(session, deps)
    if instruction:
        messages.append(Message(role=Role.SYSTEM, content=instruction))
    yield memory
    message_id = new_id()
    yield MessageStarted(message_id=message_id, agent=agent)
    if deps.hooked:
        await call_hook(deps.hooks.on_llm_start(session, messages))
    tools = deps.tools.schemas() if use_tools else ()
    final: ModelResponse | None = None
    settings = turn.model_settings(session)
    streamed = 0  # characters of text and reasoning so far
    try:
        async for part in deps.provider.stream(messages, tools=tools, settings=settings):
            if isinstance(part, ModelTextDelta):
                text = part.text
                streamed += len(text)
                yield TextDelta(
                    message_id=message_id, delta=text if text.isascii() else valid_text(text)
                )
            elif isinstance(part, ModelResponse):
                final = part
            else:
                streamed += len(part.text)
                yield TextDelta(
                    message_id=message_id, delta=valid_text(part.text), channel="reasoning"
                )
    except BaseException:  # Stop, or an error after the model began to answer
        if streamed:
            charge_unfinished(session, turn, memory.token_count, streamed)
        raise
    if final is None:  # the person saw what streamed: an empty reply would lose it
        raise ModelResponseError(
            f"the model stream of {deps.provider.name!r} ended without its final response "
            "(an LLMProvider's stream must end with a ModelResponse)",
            provider=deps.provider.name,
        )
    final = valid_response(final)
    ignored: list[str] = []
    if final.tool_calls:
        if use_tools:
            final = distinct_calls(final)
        else:  # asked for no tools: calls nobody would answer go, and the reply says so
            final, ignored = without_calls(final, agent)
    if deps.hooked:
        await call_hook(deps.hooks.on_llm_end(session, final))
    metadata = reply_metadata(final, deps)
    if ignored:
        metadata["ignored_tool_calls"] = ignored
    reply = Message(
        id=message_id,
        role=Role.ASSISTANT,
        content=final.text,
        reasoning=final.reasoning,
        tool_calls=final.tool_calls,
        agent=agent,
        metadata=metadata,
    )
    session.add(reply)
    yield MessageCompleted(message=reply)
    session.usage = session.usage + final.usage
    turn.usage = turn.usage + final.usage
    turn.response = final
    yield UsageReported(turn=turn.usage, total=session.usage)


def budget_spent(session: Session) -> RunFinished | None:
    """The end of the turn when the session's token budget is used up (AutoChat's, workers'
    calls included), or None while there is room."""
    limit = session.token_limit
    if limit is None or session.usage.total_tokens < limit:
        return None
    return RunFinished(
        outcome=RunOutcome.BUDGET,
        detail=f"token budget reached ({session.usage.total_tokens} tokens)",
    )


def charge_unfinished(session: Session, turn: Turn, input_tokens: int, streamed: int) -> None:
    """Count a model call that ended before its usage came (the server sends it last): the
    window it read (`input_tokens`, the memory's count) and about a token per 4 characters
    of what it streamed (`streamed`), marked estimated. Without this a long reply the person
    stopped cost nothing in the usage panel or against a token budget. The interpreter
    announces it (`Session.unreported_usage`) when the turn ends."""
    usage = Usage(
        input_tokens=input_tokens, output_tokens=-(-streamed // 4), requests=1, estimated=True
    )
    session.usage = session.usage + usage
    turn.usage = turn.usage + usage
    session.unreported_usage = UsageReported(turn=turn.usage, total=session.usage)


class ExecutorAgent:
    """The default role: a model that calls tools until it has an answer."""

    def __init__(self, *, name: AgentName = AgentName.AGENT_EXECUTOR) -> None:
        self._name = name

    @property
    def name(self) -> AgentName:
        return self._name

    @property
    def description(self) -> str:
        return "Calls tools (run code, read and write files) until the task is answered."

    def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        return self.loop(session, deps, turn=Turn())

    async def loop(
        self, session: Session, deps: AgentDeps, *, turn: Turn, instruction: str | None = None
    ) -> AsyncIterator[Event]:
        """Model calls and tool runs on the history as it stands, until an answer, a limit or
        `task_complete`. `turn` may carry model calls other roles made first in this turn;
        `instruction` goes to each of these model calls (see `model_step`).

        Only this loop's own `task_complete` ends it: a crew member with tools that comes
        after one that declared the task done still works until its own answer."""
        completed_before = session.task_complete is not None
        for _ in range(session.settings.max_iterations):
            for queued in drain_inbox(session):
                yield MessageCompleted(message=queued)
            async for event in model_step(
                session, deps, agent=self._name, turn=turn, instruction=instruction
            ):
                yield event
            response = turn.last_response()
            if not response.tool_calls:
                return
            calls = response.tool_calls
            cut_off = response.finish_reason == "length"
            async for event in self.run_tools(session, deps, calls, cut_off=cut_off):
                yield event
            if session.task_complete is not None and (
                not completed_before or completes(session, calls)
            ):
                return
            if (spent := budget_spent(session)) is not None:
                yield spent
                return
        note = Message(
            role=Role.ASSISTANT,
            agent=self._name,
            content=(
                f"I stopped after {session.settings.max_iterations} steps (the maximum for one "
                "turn) without a final answer. Say 'continue' to let me go on."
            ),
            metadata={"truncated": True},
        )
        session.add(note)
        yield MessageCompleted(message=note)
        yield RunFinished(
            outcome=RunOutcome.MAX_ITERATIONS,
            detail=f"stopped after {session.settings.max_iterations} model calls",
        )

    async def run_tools(
        self,
        session: Session,
        deps: AgentDeps,
        calls: Sequence[ToolCall],
        *,
        cut_off: bool = False,
    ) -> AsyncIterator[Event]:
        """Ask for approvals in order, then run the allowed calls in parallel. `cut_off`: the
        reply that made the calls stopped at the model's output limit (see `cut_off_call`)."""
        parent = session.history[-1].id if session.history else None  # the assistant message
        refused: dict[str, ToolResult] = {}
        if cut_off:
            refused = {r.call_id: r for c in calls if (r := cut_off_call(c)) is not None}
        for tool_call in calls:
            if tool_call.id in refused:
                continue
            verdict = await self._permission(session, deps, tool_call)
            if isinstance(verdict, ToolResult):
                refused[tool_call.id] = verdict
                continue
            if verdict is not None:
                async for event in verdict:
                    yield event
                if (denial := session_denial(session, tool_call)) is not None:
                    refused[tool_call.id] = denial
        for tool_call in calls:
            yield ToolCallStarted(call=tool_call, parent_message_id=parent, agent=self._name)
        results: dict[str, ToolResult] = dict(refused)
        for tool_call in calls:
            if tool_call.id in refused:
                yield ToolCallFinished(result=refused[tool_call.id], parent_message_id=parent)
        runnable = [c for c in calls if c.id not in refused]
        if len(runnable) == 1:  # the usual case needs no task and no generator
            result = await run_one(session, deps, runnable[0])
            results[result.call_id] = result
            yield ToolCallFinished(result=result, parent_message_id=parent)
        else:
            async for result in run_parallel(session, deps, runnable):
                results[result.call_id] = result
                yield ToolCallFinished(result=result, parent_message_id=parent)
        for tool_call in calls:
            result = results[tool_call.id]
            if tool_call.name == TASK_COMPLETE and not result.is_error:
                args = safe_args(tool_call)
                session.task_complete = str(args.get("summary", "")) or "done"
            message = Message(
                role=Role.TOOL,
                type=result.message_type,
                content=with_allow_note(session, tool_call, result.content),
                tool_call_id=tool_call.id,
                name=tool_call.name,
                agent=self._name,
                images=result.images,
                metadata={
                    **result.metadata,
                    "is_error": result.is_error,
                    "truncated": result.truncated,
                    "duration_ms": round(result.duration_ms, 3),
                    "arguments": tool_call.arguments,
                },
            )
            session.add(message)
            yield MessageCompleted(message=message)

    async def _permission(
        self, session: Session, deps: AgentDeps, tool_call: ToolCall
    ) -> ToolResult | AsyncIterator[Event] | None:
        """None: run it. A ToolResult: refused by policy. An event stream: ask the person."""
        tool = deps.tools.get(tool_call.name)
        if tool is None:
            return None  # execute_tool reports the unknown name to the model
        mode = deps.permissions.with_modes(session.settings.permissions).decide(
            tool, session_allowed=session.allowed_tools
        )
        if mode is PermissionMode.ALLOW:
            return None
        if mode is PermissionMode.DENY:
            return ToolResult(
                call_id=tool_call.id,
                name=tool_call.name,
                content=f"Tool {tool_call.name!r} is not allowed in this session.",
                is_error=True,
            )
        return ask_person(session, deps, tool_call)


def cut_off_call(tool_call: ToolCall) -> ToolResult | None:
    """The result for a call whose arguments the model's output limit cut off (they are not
    a whole JSON object), or None. Such a call is neither run nor put to the person, and the
    model is told why: told only that its JSON is broken, it writes the same long call
    again and is cut off again, step after step."""
    try:
        whole = isinstance(decode_arguments(tool_call.arguments), dict)
    except ValueError:
        whole = False
    if whole:
        return None
    return ToolResult(
        call_id=tool_call.id,
        name=tool_call.name,
        content=(
            "Not run: your reply reached the output limit (max tokens) while you were writing "
            "this call, so its arguments are incomplete. Do less in one call (for example, "
            "write a long file in parts) or ask the person to raise Max tokens."
        ),
        is_error=True,
    )


def completes(session: Session, calls: Sequence[ToolCall]) -> bool:
    """Whether `calls`, whose results `run_tools` has just appended (one message each, at
    the end of the history), include a `task_complete` that succeeded."""
    results = session.history[-len(calls) :] if calls else []
    return any(
        message.role is Role.TOOL
        and message.name == TASK_COMPLETE
        and not message.metadata.get("is_error")
        for message in results
    )


def session_denial(session: Session, tool_call: ToolCall) -> ToolResult | None:
    """The result for a call the person (or nobody, in time) refused, if it was."""
    text = session.denials.pop(tool_call.id, None)
    if text is None:
        return None
    return ToolResult(call_id=tool_call.id, name=tool_call.name, content=text, is_error=True)


def with_allow_note(session: Session, tool_call: ToolCall, content: str) -> str:
    """A result's text, followed by the note the person gave when they allowed the call:
    the model reads it with what the call did (an allowed call's confirmation is never
    sent to the model)."""
    if not session.allow_notes:
        return content
    note = session.allow_notes.pop(tool_call.id, None)
    if note is None:
        return content
    return f"{content}\n\n[The user allowed this call with a note: {note}]"


def denial_text(verdict: Verdict, timeout_s: float | None) -> str:
    """What the model is told about a refused call: who refused it, and any note."""
    if verdict.by == "timeout":
        waited = f" within {timeout_s:g} s" if timeout_s is not None else ""
        return f"Nobody approved this tool call{waited}, so it was not run."
    if verdict.by == "policy":
        return f"This tool call was refused ({verdict.note or 'by policy'}); it was not run."
    text = "The user denied this tool call."
    if verdict.note:
        text += f" Their note: {verdict.note}"
    return text


async def ask_person(
    session: Session, deps: AgentDeps, tool_call: ToolCall
) -> AsyncIterator[Event]:
    """Announce an approval request, wait for the answer, announce the decision."""
    tool = deps.tools.get(tool_call.name)
    assert tool is not None
    view = approval_view(tool, tool_call)
    approval_id = new_id()
    deps.approvals.open(approval_id)
    yield ApprovalRequested(
        approval_id=approval_id,
        call=tool_call,
        summary=view.summary,
        detail=view.detail,
        language=view.language,
        destructive=tool.destructive,
    )
    timeout_s = session.settings.approval_timeout_s
    verdict = await deps.approvals.wait(approval_id, timeout_s)
    if verdict.decision is ApprovalDecision.DENY:
        session.denials[tool_call.id] = denial_text(verdict, timeout_s)
    else:
        if verdict.decision is ApprovalDecision.ALLOW_SESSION:
            session.allowed_tools.add(tool_call.name)
        if verdict.note and verdict.note.strip():
            session.allow_notes[tool_call.id] = verdict.note.strip()
    yield ApprovalResolved(
        approval_id=approval_id, decision=verdict.decision, note=verdict.note, by=verdict.by
    )
    confirmation = Message(
        role=Role.ASSISTANT,
        type=MessageType.CONFIRMATION,
        content=f"{view.summary}: {verdict.decision.value}"
        + (f" ({verdict.note})" if verdict.note else ""),
        metadata={"approval_id": approval_id, "decision": verdict.decision.value, "by": verdict.by},
    )
    session.add(confirmation)
    yield MessageCompleted(message=confirmation)


async def run_one(session: Session, deps: AgentDeps, tool_call: ToolCall) -> ToolResult:
    """Run one call in this task, with its hooks."""
    if deps.hooked:
        await call_hook(deps.hooks.on_tool_start(session, tool_call))
    ctx = ToolContext(
        session_id=session.id,
        run_id=session.run_id,
        call_id=tool_call.id,
        workdir=session.workdir_path(),
    )
    result = await execute_tool(deps.tools, tool_call, ctx)
    if deps.hooked:
        await call_hook(deps.hooks.on_tool_end(session, result))
    return result


async def run_parallel(
    session: Session, deps: AgentDeps, calls: Sequence[ToolCall]
) -> AsyncIterator[ToolResult]:
    """Run calls concurrently, each in a task of its own, yielding results as they finish.
    Cancelling ends them all. (A single call needs no task: `run_one`.)"""
    if not calls:
        return
    run_id = session.run_id
    workdir = session.workdir_path()
    tasks: dict[asyncio.Task[ToolResult], ToolCall] = {}
    for tool_call in calls:
        if deps.hooked:
            await call_hook(deps.hooks.on_tool_start(session, tool_call))
        ctx = ToolContext(
            session_id=session.id, run_id=run_id, call_id=tool_call.id, workdir=workdir
        )
        tasks[asyncio.create_task(execute_tool(deps.tools, tool_call, ctx))] = tool_call
    pending = set(tasks)
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                result = task.result()
                if deps.hooked:
                    await call_hook(deps.hooks.on_tool_end(session, result))
                yield result
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)


def safe_args(tool_call: ToolCall) -> dict[str, object]:
    try:
        args = decode_arguments(tool_call.arguments)
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}
