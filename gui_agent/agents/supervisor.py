"""SUPERVISOR: splits the work and delegates parts of it to worker roles, then answers.

The supervisor is a model with one special tool, ``delegate(worker, task)`` (and
`task_complete`). Each delegated task runs as a worker turn (the executor with its tools,
or the thinker) on a context of its own: the task alone, not the supervisor's conversation.
The worker's answer comes back as the tool result; the supervisor reads it and delegates
again or answers the person.

Everything the worker does is shown and kept, but as display-only messages (marked
``delegated_by`` = the delegate call's id) placed between the supervisor's call and its
result: people see every step, models never do, so the conversation each model is sent stays
in its vendor's shape. Approvals, Stop, limits and usage work inside a worker as in any turn;
the worker's tool permissions ("allow for this session") are the session's. A message the
person sends meanwhile is read before the supervisor's next step (as in the executor's loop),
so it can call off work not yet handed out. A worker that ends by calling `task_complete`
answers with what it wrote and the summary it gave. A worker that fails (its model call
errs, a custom role raises) answers with that failure, as an error result the supervisor
reads and acts on, like any tool's error; its streamed reply is kept, marked failed.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Mapping

from gui_agent.agents.base import AgentDeps, Architecture
from gui_agent.agents.executor import (
    ExecutorAgent,
    Turn,
    budget_spent,
    drain_inbox,
    max_steps_note,
    model_step,
)
from gui_agent.agents.thought import ThoughtAgent
from gui_agent.exceptions import ModelError
from gui_agent.log_text import loggable_failure
from gui_agent.session import Session
from gui_agent.tools import ToolRegistry, task_complete, tool
from gui_agent.tools.execution import decode_arguments
from schema import (
    AgentName,
    AutoChatSettings,
    ErrorEvent,
    Event,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    MessageType,
    Role,
    RunFinished,
    RunOutcome,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
    UsageReported,
)

__all__ = ["DELEGATE", "SupervisorAgent"]

DELEGATE = "delegate"

logger = logging.getLogger(__name__)


@tool(name=DELEGATE)
def delegate(worker: str, task: str) -> str:
    """Hand one self-contained task to a worker and get its answer back.

    Args:
        worker: Which worker does it (see the list in your instructions).
        task: Everything the worker needs to know: it sees only this text, not the conversation.
    """
    raise RuntimeError("delegate calls are run by the supervisor, not as a tool")


def supervisor_instruction(workers: Mapping[str, str]) -> str:
    listed = "\n".join(f"- {name}: {description}" for name, description in workers.items())
    return (
        "You are the supervisor. Split the person's request into self-contained tasks and "
        "hand each to a worker with the delegate tool; workers see only the task text you "
        f"write. Workers:\n{listed}\nWhen the workers' answers cover the request, answer "
        "the person yourself, without a tool call."
    )


def _shown(message: Message, call_id: str, worker: AgentName) -> Message:
    """A worker's message as kept in the supervisor's conversation: display-only."""
    return message.model_copy(
        update={
            "metadata": {
                **message.metadata,
                "display_only": True,
                "delegated_by": call_id,
                "worker": worker.value,
            }
        }
    )


def delegation(call: ToolCall) -> tuple[str, str] | str:
    """The (worker, task) a delegate call asks for, stripped; or what is wrong with its
    arguments, in words the model can act on."""
    try:
        args = decode_arguments(call.arguments)
    except ValueError as error:
        return f"the arguments are not valid JSON ({error})"
    if not isinstance(args, dict):
        return f"the arguments must be a JSON object, not {type(args).__name__}"
    worker, task = args.get("worker"), args.get("task", "")
    if not isinstance(worker, str) or not worker.strip():
        return "say which worker, by name, in `worker`"
    if not isinstance(task, str):
        return f"`task` must be text, not {type(task).__name__}"
    return worker.strip(), task.strip()


def worker_answer(context: Session) -> str:
    """What a worker's turn answers: its last reply with text; or, when it ended by calling
    `task_complete`, the text of that last message and the summary it gave (a worker often
    puts its whole answer in the summary and writes no reply after the call)."""
    replies = [m for m in context.history if m.role is Role.ASSISTANT and m.content.strip()]
    summary = context.task_complete
    if summary is None:
        return replies[-1].content if replies else "(the worker gave no answer)"
    last = next((m for m in reversed(context.history) if m.role is Role.ASSISTANT), None)
    said = last.content.strip() if last is not None else ""
    parts = [said] if summary.strip() in said else [said, f"Summary: {summary}"]
    return "\n\n".join(part for part in parts if part) or "(the worker gave no answer)"


class SupervisorAgent:
    """Delegates tasks to worker roles (by default the executor and the thinker)."""

    def __init__(
        self,
        *,
        name: AgentName = AgentName.SUPERVISOR,
        workers: Mapping[AgentName, Architecture] | None = None,
    ) -> None:
        self._name = name
        self._workers: Mapping[AgentName, Architecture] = (
            workers
            if workers is not None
            else {
                AgentName.AGENT_EXECUTOR: ExecutorAgent(),
                AgentName.THOUGHT: ThoughtAgent(),
            }
        )
        if not self._workers:
            raise ValueError("a supervisor needs at least one worker")
        self._tools = ToolRegistry([delegate, task_complete])

    @property
    def name(self) -> AgentName:
        return self._name

    @property
    def description(self) -> str:
        return "Splits the task and delegates the parts to worker roles, then answers."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        own = dataclasses.replace(deps, tools=self._tools)
        instruction = supervisor_instruction(
            {name.value: worker.description for name, worker in self._workers.items()}
        )
        turn = Turn()
        for _ in range(session.settings.max_iterations):
            # What the person wrote meanwhile is read before the next delegation, as the
            # executor does: it may call off work still to be handed out.
            for queued in drain_inbox(session):
                yield MessageCompleted(message=queued)
            async for event in model_step(
                session, own, agent=self._name, turn=turn, instruction=instruction
            ):
                yield event
            response = turn.last_response()
            if not response.tool_calls:
                return
            parent = session.history[-1].id
            others = [c for c in response.tool_calls if c.name != DELEGATE]
            if others:  # task_complete, or a tool that does not exist: the usual handling
                async for event in ExecutorAgent(name=self._name).run_tools(session, own, others):
                    yield event
            for call in response.tool_calls:
                if call.name != DELEGATE:
                    continue
                async for event in self._delegate(session, deps, call, parent, turn):
                    yield event
            if session.task_complete is not None:
                return
            if (spent := budget_spent(session)) is not None:
                yield spent
                return
        steps = session.settings.max_iterations
        note = max_steps_note(self._name, steps)
        session.add(note)
        yield MessageCompleted(message=note)
        yield RunFinished(
            outcome=RunOutcome.MAX_ITERATIONS, detail=f"stopped after {steps} supervisor steps"
        )

    def _worker(self, name: str) -> Architecture | None:
        """The worker a model named, in any letter case (models often write it lowercase),
        by its enum name or by the word people use for it (`executor` for AGENT_EXECUTOR,
        as `roles.ROLE_NAMES`: the last word of the enum name)."""
        wanted = name.strip().casefold()
        return next(
            (
                worker
                for role, worker in self._workers.items()
                if wanted in (role.value.casefold(), role.value.casefold().rsplit("_", 1)[-1])
            ),
            None,
        )

    async def _delegate(
        self,
        session: Session,
        deps: AgentDeps,
        call: ToolCall,
        parent: str,
        turn: Turn,
    ) -> AsyncIterator[Event]:
        yield ToolCallStarted(call=call, parent_message_id=parent, agent=self._name)
        began = time.perf_counter()
        request = delegation(call)
        worker, task = None, ""
        if isinstance(request, str):
            problem = request
        else:
            name, task = request
            worker = self._worker(name)
            problem = f"unknown worker {name!r}" if worker is None else "the task is empty"
        if worker is None or not task:
            known = ", ".join(n.value for n in self._workers)
            answer, is_error = f"Not delegated: {problem}. Workers: {known}.", True
        else:
            answer, is_error = "", False
            work = self._work(session, deps, worker, call, task=task, turn=turn)
            async for event in work:
                if isinstance(event, ToolResult):
                    answer, is_error = event.content, event.is_error
                else:
                    yield event
        took = round((time.perf_counter() - began) * 1000, 3)  # the worker's whole turn
        result = ToolResult(
            call_id=call.id, name=DELEGATE, content=answer, is_error=is_error, duration_ms=took
        )
        yield ToolCallFinished(result=result, parent_message_id=parent)
        message = Message(
            role=Role.TOOL,
            type=MessageType.FUNCTION,
            content=answer,
            tool_call_id=call.id,
            name=DELEGATE,
            agent=self._name,
            metadata={"is_error": is_error, "arguments": call.arguments, "duration_ms": took},
        )
        session.add(message)
        yield MessageCompleted(message=message)

    async def _work(
        self,
        session: Session,
        deps: AgentDeps,
        worker: Architecture,
        call: ToolCall,
        *,
        task: str,
        turn: Turn,
    ) -> AsyncIterator[Event | ToolResult]:
        """Run `worker` on `task` in a context of its own; its events, then its answer as a
        ToolResult (not an event). The worker's usage counts toward the supervisor's turn."""
        before = turn.usage
        context = Session(
            id=session.id,
            owner=session.owner,
            agent=worker.name,
            settings=session.settings,
            autochat=AutoChatSettings(),
            workdir=session.workdir,
            usage=session.usage,
            allowed_tools=session.allowed_tools,
            denials=session.denials,
            allow_notes=session.allow_notes,
            token_limit=session.token_limit,
            run_id=session.run_id,
        )
        prompt = Message(role=Role.USER, content=task, metadata={"delegated_by": call.id})
        context.history.append(prompt)
        shown = _shown(prompt, call.id, worker.name)
        session.add(shown)
        yield MessageCompleted(message=shown)
        finished: RunFinished | None = None
        failure: Exception | None = None
        drafts: dict[str, _Draft] = {}  # the worker's messages started, not completed
        calls: dict[str, ToolCall] = {}  # the worker's tool calls started, not finished
        try:
            async for event in worker.run(context, deps, prompt):
                if isinstance(event, TextDelta):
                    if (draft := drafts.get(event.message_id)) is not None:
                        draft.parts[event.channel].append(event.delta)
                    yield event
                elif isinstance(event, MessageCompleted):
                    drafts.pop(event.message.id, None)
                    shown = _shown(event.message, call.id, worker.name)
                    session.add(shown)
                    yield MessageCompleted(message=shown)
                elif isinstance(event, MessageStarted):
                    drafts[event.message_id] = _Draft(event)
                    yield event.model_copy(update={"parent_id": call.id})
                elif isinstance(event, UsageReported):
                    turn.usage = before + event.turn
                    yield UsageReported(turn=turn.usage, total=event.total)
                elif isinstance(event, RunFinished):
                    finished = event  # the worker's turn, not the supervisor's
                else:
                    if isinstance(event, ToolCallStarted):
                        calls[event.call.id] = event.call
                    elif isinstance(event, ToolCallFinished):
                        calls.pop(event.result.call_id, None)
                    yield event
        except Exception as error:  # the worker's failure is its answer; Stop goes through
            logger.info("the %s worker failed: %s", worker.name.value, loggable_failure(error))
            failure = error
        finally:
            session.usage = context.usage
            unreported = context.unreported_usage  # a worker's model call cut short
            if unreported is not None:  # on a Stop, the interpreter says it as the turn ends
                turn.usage = before + unreported.turn
                session.unreported_usage = UsageReported(turn=turn.usage, total=context.usage)
        answer = worker_answer(context)
        if failure is not None:
            said = f"{type(failure).__name__}: {failure}"
            for event in _worker_failed(
                session, worker.name, call_id=call.id, failure=failure, drafts=drafts, calls=calls
            ):
                yield event
            if unreported is not None:  # the turn goes on: said now, before newer totals
                yield UsageReported(turn=turn.usage, total=context.usage)
                session.unreported_usage = None
            answer += f"\n\n[The worker failed: {said}. Its work may be incomplete.]"
        elif finished is not None:
            answer += (
                f"\n\n[The worker stopped early: {finished.detail or finished.outcome.value}.]"
            )
        yield ToolResult(
            call_id=call.id,
            name=DELEGATE,
            content=answer,
            is_error=finished is not None or failure is not None,
        )


class _Draft:
    """A worker's message being streamed: its `message_started` and its text so far."""

    __slots__ = ("parts", "started")

    def __init__(self, started: MessageStarted) -> None:
        self.started = started
        self.parts: dict[str, list[str]] = {"content": [], "reasoning": []}


def _worker_failed(
    session: Session,
    worker: AgentName,
    *,
    call_id: str,
    failure: Exception,
    drafts: Mapping[str, _Draft],
    calls: Mapping[str, ToolCall],
) -> list[Event]:
    """What closes a worker's turn that raised `failure`: the error said, the replies it
    was streaming kept (display-only, status error, with the error) and added to the
    history, its tool steps still open ended and answered there (display-only too, so a chat
    loaded again shows them ended). The supervisor's turn goes on: the failure comes back
    to it as the delegate call's error result, as any tool's error does."""
    said = f"{type(failure).__name__}: {failure}"
    code = "model_error" if isinstance(failure, ModelError) else "agent_failed"
    events: list[Event] = [
        ErrorEvent(code=code, message=f"the {worker.value} worker failed: {said}")
    ]
    for message_id, draft in drafts.items():
        started = draft.started
        kept = Message(
            id=message_id,
            role=Role.ASSISTANT if started.role is Role.TOOL else started.role,  # no call id
            type=started.message_type,
            agent=started.agent,
            language=started.language,
            content="".join(draft.parts["content"]),
            reasoning="".join(draft.parts["reasoning"]) or None,
            status=MessageStatus.ERROR,
            metadata={"error": {"code": code, "message": said}},
        )
        shown = _shown(kept, call_id, worker)
        session.add(shown)
        events.append(MessageCompleted(message=shown))
    for tool_call in calls.values():  # answered in the history too: a reload shows them ended
        ended = f"Not finished: the worker failed ({said})."
        result = ToolResult(call_id=tool_call.id, name=tool_call.name, content=ended, is_error=True)
        events.append(ToolCallFinished(result=result, parent_message_id=call_id))
        answer = Message(
            role=Role.TOOL,
            type=MessageType.FUNCTION,
            content=ended,
            tool_call_id=tool_call.id,
            name=tool_call.name,
            agent=worker,
            status=MessageStatus.ERROR,
            metadata={"is_error": True, "arguments": tool_call.arguments},
        )
        shown = _shown(answer, call_id, worker)
        session.add(shown)
        events.append(MessageCompleted(message=shown))
    return events
