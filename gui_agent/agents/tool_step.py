"""The tool calls of one reply: decided and put to the person in call order, then the
allowed calls run (in parallel when there are several), their results appended to the
history in call order.

A call is refused without running when its arguments were cut off by the model's output
limit (`cut_off_call`), when the session's permissions deny its tool, or when the person
(or nobody, in time) denies it (`ask_person`); the model reads why in its result. A call
of a tool that does not exist runs, and its result says so (`execute_tool`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from gui_agent.agents.base import AgentDeps
from gui_agent.approvals import Verdict
from gui_agent.hooks import call_hook
from gui_agent.session import Session
from gui_agent.tools import (
    TASK_COMPLETE,
    ToolContext,
    approval_view,
    execute_tool,
)
from gui_agent.tools.execution import argument_error, decode_arguments
from gui_agent.wording import DONE
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    Event,
    Message,
    MessageCompleted,
    MessageType,
    PermissionMode,
    Role,
    SessionUpdated,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
    new_id,
)
from schema.builders import builder

NOT_RUN = "not_run"
"""The metadata key (True) of a refused call's result, and so of its tool message."""

# What every tool call of a turn builds (see `schema.builders`).
_call_started = builder(ToolCallStarted)
_call_finished = builder(ToolCallFinished)
_message = builder(Message)
_message_completed = builder(MessageCompleted)

__all__ = [
    "NOT_RUN",
    "ask_person",
    "completes",
    "cut_off_call",
    "denial_text",
    "keep_partial",
    "not_run",
    "run_one",
    "run_parallel",
    "run_tool_calls",
    "safe_args",
    "session_denial",
    "tool_permission",
    "with_allow_note",
]


async def run_tool_calls(
    session: Session,
    deps: AgentDeps,
    calls: Sequence[ToolCall],
    *,
    agent: AgentName,
    cut_off: bool = False,
) -> AsyncIterator[Event]:
    """Ask for approvals in order, then run the allowed calls in parallel; `agent` is the
    role whose reply made the calls. `cut_off`: that reply stopped at the model's output
    limit (see `cut_off_call`)."""
    parent = session.history[-1].id if session.history else None  # the assistant message
    refused: dict[str, ToolResult] = {}
    if cut_off:
        refused = {r.call_id: r for c in calls if (r := cut_off_call(c)) is not None}
    for tool_call in calls:
        if tool_call.id in refused:
            continue
        verdict = await tool_permission(session, deps, tool_call)
        if isinstance(verdict, ToolResult):
            refused[tool_call.id] = verdict
            continue
        if verdict is not None:
            async for event in verdict:
                yield event
            if (denial := session_denial(session, tool_call)) is not None:
                refused[tool_call.id] = denial
    for tool_call in calls:
        yield _call_started({"call": tool_call, "parent_message_id": parent, "agent": agent})
    results: dict[str, ToolResult] = dict(refused)
    for tool_call in calls:
        if tool_call.id in refused:
            yield ToolCallFinished(result=refused[tool_call.id], parent_message_id=parent)
    runnable = [c for c in calls if c.id not in refused]
    if len(runnable) == 1:  # the usual case needs no task and no generator
        result = await run_one(session, deps, runnable[0])
        results[result.call_id] = result
        yield _call_finished({"result": result, "parent_message_id": parent})
    else:
        async for result in run_parallel(session, deps, runnable):
            results[result.call_id] = result
            yield _call_finished({"result": result, "parent_message_id": parent})
    for tool_call in calls:
        result = results[tool_call.id]
        if tool_call.name == TASK_COMPLETE and not result.is_error:
            args = safe_args(tool_call)
            session.task_complete = str(args.get("summary", "")) or DONE
        message = _message(
            {
                "role": Role.TOOL,
                "type": result.message_type,
                "content": with_allow_note(session, tool_call, result.content),
                "tool_call_id": tool_call.id,
                "name": tool_call.name,
                "agent": agent,
                "images": result.images,
                "metadata": {
                    **result.metadata,
                    "is_error": result.is_error,
                    "truncated": result.truncated,
                    "duration_ms": round(result.duration_ms, 3),
                    "arguments": tool_call.arguments,
                },
            }
        )
        session.add(message)
        yield _message_completed({"message": message})


async def tool_permission(
    session: Session, deps: AgentDeps, tool_call: ToolCall
) -> ToolResult | AsyncIterator[Event] | None:
    """None: run it. A ToolResult: refused, by policy or for arguments it cannot run with
    (nobody is asked about those). An event stream: ask the person."""
    tool = deps.tools.get(tool_call.name)
    if tool is None:
        return None  # execute_tool reports the unknown name to the model
    mode = deps.permissions.with_modes(session.settings.permissions).decide(
        tool, session_allowed=session.allowed_tools
    )
    if mode is PermissionMode.ALLOW:
        return None
    if mode is PermissionMode.DENY:
        return not_run(tool_call, f"Tool {tool_call.name!r} is not allowed in this chat.")
    if (problem := argument_error(tool, tool_call)) is not None:
        # nobody is asked to allow a call that cannot run: the model learns why at once
        return ToolResult(call_id=tool_call.id, name=tool_call.name, content=problem, is_error=True)
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
    return not_run(
        tool_call,
        "Not run: your reply reached the output limit (max tokens) while you were writing "
        "this call, so its arguments are incomplete. Do less in one call (for example, "
        "write a long file in parts) or ask the person to raise Max tokens.",
    )


def completes(session: Session, calls: Sequence[ToolCall]) -> bool:
    """Whether `calls`, whose results `run_tool_calls` has just appended (one message each,
    at the end of the history), include a `task_complete` that succeeded."""
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
    return not_run(tool_call, text)


def not_run(tool_call: ToolCall, why: str) -> ToolResult:
    """The result of a call refused before it ran (denied, not allowed, cut off): an error
    for the model, which reads `why`, and marked `not_run` for the people looking (the page
    and the terminal say "not run", not "error")."""
    return ToolResult(
        call_id=tool_call.id,
        name=tool_call.name,
        content=why,
        is_error=True,
        metadata={NOT_RUN: True},
    )


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
    newly_allowed = False
    if verdict.decision is ApprovalDecision.DENY:
        session.denials[tool_call.id] = denial_text(verdict, timeout_s)
    else:
        if verdict.decision is ApprovalDecision.ALLOW_SESSION:
            newly_allowed = tool_call.name not in session.allowed_tools
            session.allowed_tools.add(tool_call.name)
        if verdict.note and verdict.note.strip():
            session.allow_notes[tool_call.id] = verdict.note.strip()
    yield ApprovalResolved(
        approval_id=approval_id, decision=verdict.decision, note=verdict.note, by=verdict.by
    )
    if newly_allowed:  # front ends show what runs without asking, and offer to forget it
        yield SessionUpdated(fields={"allowed_tools": sorted(session.allowed_tools)})
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
        output_sink=deps.tool_output,
    )
    try:
        result = await execute_tool(deps.tools, tool_call, ctx)
    except asyncio.CancelledError:
        keep_partial(session, ctx)
        raise
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
    tasks: dict[asyncio.Task[ToolResult], ToolContext] = {}
    for tool_call in calls:
        if deps.hooked:
            await call_hook(deps.hooks.on_tool_start(session, tool_call))
        ctx = ToolContext(
            session_id=session.id,
            run_id=run_id,
            call_id=tool_call.id,
            workdir=workdir,
            output_sink=deps.tool_output,
        )
        tasks[asyncio.create_task(execute_tool(deps.tools, tool_call, ctx))] = ctx
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
        for task in pending:
            keep_partial(session, tasks[task])


def keep_partial(session: Session, ctx: ToolContext) -> None:
    """Keep what a call a Stop ended had made by then (`ToolContext.partial`), for its
    answer (`Session.stopped_output`)."""
    if ctx.partial:
        if session.stopped_output is None:
            session.stopped_output = {}
        session.stopped_output[ctx.call_id] = "".join(ctx.partial)


def safe_args(tool_call: ToolCall) -> dict[str, object]:
    """A call's arguments as an object, or an empty one when they are not one."""
    try:
        args = decode_arguments(tool_call.arguments)
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}
