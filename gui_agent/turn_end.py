"""How a turn ends, whatever ended it: finished, failed, stopped or cut short by AutoChat's
time budget.

Everything the turn left open is closed in one synchronous step (`_close_turn`), so a Stop
cannot cut it short: the replies being streamed are kept (marked interrupted, or failed with
the error), every call left without a result is answered, running steps and open approvals
are closed, `run_finished` is said and the state goes to STOP. The hooks and store writes
that follow run to their end even through a second Stop (`_finish_saving`). Messages a
stopped turn never took up stay in the history, unanswered (`_file_unanswered`).

One layer of `Interpreter` (see `gui_agent.interpreter`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping

from gui_agent.agents.tool_step import NOT_RUN
from gui_agent.autochat_driver import AutoChatDriver
from gui_agent.cancels import uninterrupted
from gui_agent.hooks import call_hook
from gui_agent.session import (
    Session,
    marked_unanswered,
    unanswered_call_result,
    unanswered_calls,
    written_by_person,
)
from gui_agent.state import Trigger
from gui_agent.tracking import kept_error
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalResolved,
    AutoChatStopReason,
    ErrorEvent,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStatus,
    Role,
    RunFinished,
    RunOutcome,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
)
from schema.builders import builder
from schema.messages import UNANSWERED as UNANSWERED_KEY
from schema.messages import utcnow

_run_finished = builder(RunFinished)  # every turn's last event (see `schema.builders`)

UNANSWERED = UNANSWERED_KEY
"""Metadata key (True) of a message of the person's that a Stop left unanswered: the turn
it waited for was stopped before the agent read it (front ends say so beside it; it is
`display_only`, never sent to a model)."""


class TurnEnding(AutoChatDriver):
    """Ends a session's turns and files what they leave behind. The attributes are set by
    `Interpreter.__init__`."""

    # store writes of messages filed unanswered (None until there are some: an idle session
    # holds no empty set)
    _filing: set[asyncio.Future[None]] | None

    def _abandon_turn(self, detail: str) -> None:
        """The last resort when the run task failed in the interpreter's own code (closing
        the turn raised): end what it left open, without the store (nothing can be awaited
        here), so the session is never left RUNNING, WAITING or in AutoChat."""
        if self._auto.active:
            self._end_autochat(AutoChatStopReason.ERROR, detail)
        self._disarm_deadline()
        self._open.clear()
        self._open_calls.clear()
        if self._live is not None:
            self._live.close()
        for approval_id in list(self._open_approvals):
            del self._open_approvals[approval_id]
            resolved = ApprovalDecision.DENY
            self._publish(ApprovalResolved(approval_id=approval_id, decision=resolved, by="policy"))
        if self.state in (InterpreterState.RUNNING, InterpreterState.WAITING):
            self._publish(RunFinished(outcome=RunOutcome.ERROR, detail=detail))
            self._machine.fire(Trigger.FINISH, RunOutcome.ERROR.value)

    async def _fail(self, detail: str, error: BaseException, failure: ErrorEvent) -> None:
        """End the turn on `error`: say `failure`, then file the partial replies as failed,
        each keeping `failure` (see `tracking.Partial.message`)."""
        self._publish(failure)
        await self._end_turn(RunOutcome.ERROR, detail, MessageStatus.ERROR, error, failure)

    async def _end_turn(
        self,
        outcome: RunOutcome,
        detail: str,
        status: MessageStatus,
        error: BaseException | None = None,
        failure: ErrorEvent | None = None,
    ) -> None:
        """Close what the turn left open, so the history stays whole and sendable, and end
        the turn (state STOP). Then save, even through another Stop (see `_finish_saving`)."""
        saves = self._close_turn(outcome, detail, status, failure)
        if saves or self._store is not None or self.deps.hooked:
            await self._finish_saving(saves, outcome, error)

    def _close_turn(
        self,
        outcome: RunOutcome,
        detail: str,
        status: MessageStatus,
        failure: ErrorEvent | None = None,
    ) -> list[Awaitable[None]]:
        """Everything that ends a turn and needs no waiting: complete the partial replies,
        answer calls left without a result, close steps and approvals, say `run_finished`,
        fire FINISH. Returns the store calls to make. Synchronous, so a Stop cannot cut it
        short: once it has run, the turn is over."""
        session = self.session
        saves: list[Awaitable[None]] = []
        if self._live is not None:
            self._live.close()  # a call cut short: its answer says what it had printed
        was_writing = bool(self._open)  # (else a failure is kept in a note of its own)
        recent = {m.id: m for m in session.history[-8:]} if was_writing else {}
        for message_id, partial in list(self._open.items()):
            message = recent.get(message_id)
            if message is None:
                message = partial.message(message_id, status, failure)
                session.add(message)
            elif failure is not None and "error" not in message.metadata:
                message = _kept_failure(session, message, failure)  # (filed by the agent)
            if (saving := self._track(MessageCompleted(message=message))) is not None:
                saves.append(saving)
        if failure is not None and not was_writing:
            note = _failure_note(failure, self.session.turn_agent)
            session.add(note)
            if (saving := self._track(MessageCompleted(message=note))) is not None:
                saves.append(saving)
        reason = detail or outcome.value
        # A supervisor's worker's calls first: they stand before the delegate call's answer.
        worker_calls = _answer_worker_calls(session, reason, self._open_calls)
        for message in [*worker_calls, *_answer_dangling_calls(session, reason, self._open_calls)]:
            self._open_calls.pop(message.tool_call_id or "", None)
            self._publish(ToolCallFinished(result=_tool_result(message)))
            session.add(message)
            if (saving := self._track(MessageCompleted(message=message))) is not None:
                saves.append(saving)
        for started in self._open_calls.values():  # a call no message of the history asked
            # for: no answer is owed, but the step a front end shows must not stay running
            self._publish(
                ToolCallFinished(
                    result=ToolResult(
                        call_id=started.call.id,
                        name=started.call.name,
                        content=f"Not finished: the turn ended ({reason}).",
                        is_error=True,
                        duration_ms=_ran_ms(started),
                    )
                )
            )
        self._open_calls.clear()
        for approval_id in list(self._open_approvals):
            del self._open_approvals[approval_id]
            self._publish(
                ApprovalResolved(
                    approval_id=approval_id,
                    decision=ApprovalDecision.DENY,
                    note=detail or "the turn ended",
                    by="policy",
                )
            )
        unreported = session.unreported_usage  # a model call cut short: its estimate
        if unreported is not None:
            session.unreported_usage = None
            self._publish(unreported)
        self._publish(_run_finished({"outcome": outcome, "detail": detail}))
        self._machine.fire(Trigger.FINISH, outcome.value)
        return saves

    async def _finish_saving(
        self, saves: list[Awaitable[None]], outcome: RunOutcome, error: BaseException | None
    ) -> None:
        """The hooks and store calls that follow a turn's end, each run to completion even
        if the task is cancelled meanwhile (a second Stop); the cancellation is passed on
        when they are done."""
        steps: list[Awaitable[None]] = []
        if self.deps.hooked:
            if error is not None:
                steps.append(call_hook(self.deps.hooks.on_error(self.session, error)))
            steps.append(call_hook(self.deps.hooks.on_end(self.session, outcome.value)))
        steps.extend(self._store_call(saving) for saving in saves)
        if self._store is not None:
            steps.append(self._save_history())
            steps.append(self._save_record())
        cancelled = False
        for step in steps:
            cancelled |= await uninterrupted(asyncio.ensure_future(step))
        if cancelled:
            raise asyncio.CancelledError

    async def _left_unread(self, prompt: Message) -> None:
        """The turn's own message, when a Stop came before anything followed it (as the turn
        began: the agent never read it): marked unanswered, in place, as one the Stop left
        waiting is. Only the person's own words: an AutoChat prompt is not theirs to resend."""
        if not written_by_person(prompt):
            return
        marked = marked_unanswered(prompt)
        self.session.history[-1] = marked
        saving = self._track(MessageCompleted(message=marked))
        if saving is not None:
            await self._store_call(saving)

    def _file_unanswered(self) -> None:
        """What a stopped run task never took up (its prompt, if it was stopped before it
        began, and the messages queued behind it) stays in the history, unanswered: nothing
        said is lost. Called as the task is done, before anything waiting for it runs, so a
        message sent right after the Stop (which starts the next task) is never taken for
        one the stopped task left. The store writes go on in tasks of their own, in order;
        `_unanswered_saved` waits for them."""
        left = [] if self._unfiled is None else [self._unfiled]
        self._unfiled = None
        left.extend(self.session.inbox)
        self.session.inbox.clear()
        for message in left:
            saving = self._track(_unanswered(self.session, message))
            if saving is not None:
                write = asyncio.ensure_future(self._store_call(saving))
                filing = self._filing = self._filing or set()
                filing.add(write)
                write.add_done_callback(filing.discard)

    async def _unanswered_saved(self) -> None:
        """Until the messages `_file_unanswered` filed are saved."""
        while self._filing:
            await asyncio.wait(set(self._filing))
        self._filing = None


def _unanswered(session: Session, message: Message) -> MessageCompleted:
    """`message` added to the history marked as left unanswered (`UNANSWERED`), and the
    event that says so."""
    marked = marked_unanswered(message)
    session.add(marked)
    return MessageCompleted(message=marked)


def _kept_failure(session: Session, message: Message, failure: ErrorEvent) -> Message:
    """`message`, a reply the failed turn was writing that its agent filed itself, with the
    failure kept in it (`metadata["error"]`, as `Partial.message` keeps it), in place."""
    kept = message.model_copy(
        update={"metadata": {**message.metadata, "error": kept_error(failure)}}
    )
    history = session.history
    for index in range(len(history) - 1, -1, -1):
        if history[index].id == message.id:
            history[index] = kept
            break
    return kept


def _failure_note(failure: ErrorEvent, agent: AgentName | None) -> Message:
    """What a turn that failed before any reply was begun leaves in the history: an empty
    failed reply keeping the failure, as a reply cut short by one keeps it, so the reason
    is still there after a reload, a restart or an import. Shown, never sent to a model."""
    return Message(
        role=Role.ASSISTANT,
        agent=agent,
        status=MessageStatus.ERROR,
        metadata={"display_only": True, "error": kept_error(failure)},
    )


def _answer_dangling_calls(
    session: Session, reason: str, started: Mapping[str, ToolCallStarted]
) -> list[Message]:
    """TOOL messages for calls of the last assistant message that got no result. A call in
    `started` was running when the turn ended (it may have done part of its work, for as
    long as its `duration_ms` says); the others never ran.

    Only the newest assistant message can have unanswered calls: every turn ends here, so
    older ones were answered when their turn ended.
    """
    found = unanswered_calls(session.history)
    made, session.stopped_output = session.stopped_output or {}, None
    if found is None:
        return []
    message, calls = found
    return [
        _dangling_answer(call, reason, started=started, made=made, agent=message.agent)
        for call in calls
    ]


def _answer_worker_calls(
    session: Session, reason: str, started: Mapping[str, ToolCallStarted]
) -> list[Message]:
    """Display-only TOOL messages for the calls of a supervisor's worker that the turn ended
    without a result (`_answer_dangling_calls` for the worker's steps), kept with the
    worker's other messages (`delegated_by`), so a chat loaded again shows them ended, not
    waiting. No model is sent them: the worker's context is gone with the turn.

    Only the worker messages at the end of the history can have such calls: a delegation
    that ended answered its worker's calls, and its own answer comes after them."""
    answered: set[str] = set()
    asked: list[tuple[Message, ToolCall]] = []
    for message in reversed(session.history):
        if not (message.display_only and message.metadata.get("delegated_by")):
            break
        if message.role is Role.TOOL:
            answered.add(message.tool_call_id or "")
        elif message.role is Role.ASSISTANT:
            unanswered = [call for call in message.tool_calls if call.id not in answered]
            asked[:0] = [(message, call) for call in unanswered]
    made = session.stopped_output or {}
    answers = []
    for message, call in asked:
        answer = _dangling_answer(call, reason, started=started, made=made, agent=message.agent)
        shown = {key: message.metadata[key] for key in _WORKER_MARKS if key in message.metadata}
        metadata = {**answer.metadata, **shown, "display_only": True}
        answers.append(answer.model_copy(update={"metadata": metadata}))
    return answers


_WORKER_MARKS = ("delegated_by", "worker")
"""The metadata a supervisor's worker's messages carry (see `supervisor._shown`)."""


PRINTED_BY_THEN = " What it had printed by then:\n"
"""In the answer of a call a Stop cut short, before what its code had printed."""


def _dangling_answer(
    call: ToolCall,
    reason: str,
    *,
    started: Mapping[str, ToolCallStarted],
    made: Mapping[str, str],
    agent: AgentName | None,
) -> Message:
    """The answer to `call`, left without a result when the turn ended: interrupted when it
    was running (`started`, with what it had printed by then, `made`), else not run (marked
    `NOT_RUN`, as a refused call's result is)."""
    if call.id in started:
        return unanswered_call_result(
            call,
            f"Interrupted while running: the turn ended ({reason}). It may have done "
            "part of its work; check before running it again."
            + (f"{PRINTED_BY_THEN}{made[call.id]}" if call.id in made else ""),
            agent=agent,
            was_running=True,
            duration_ms=_ran_ms(started[call.id]),
        )
    answer = unanswered_call_result(
        call, f"Not run: the turn ended ({reason}).", agent=agent, was_running=False
    )
    return answer.model_copy(update={"metadata": {**answer.metadata, NOT_RUN: True}})


def _tool_result(message: Message) -> ToolResult:
    """The `tool_call_finished` result of a call the turn's end answered with `message`,
    keeping its `NOT_RUN` mark (the terminal and the page say "not run", not "0 ms")."""
    duration = message.metadata.get("duration_ms")
    return ToolResult(
        call_id=message.tool_call_id or "",
        name=message.name or "",
        content=message.content,
        is_error=True,
        duration_ms=duration if isinstance(duration, float) else 0.0,
        metadata={NOT_RUN: True} if message.metadata.get(NOT_RUN) else {},
    )


def _ran_ms(started: ToolCallStarted) -> float:
    """How long the call has been running, from its `tool_call_started` event."""
    return round(max((utcnow() - started.at).total_seconds() * 1000, 0.0), 3)
