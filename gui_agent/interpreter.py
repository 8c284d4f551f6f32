"""The per-session controller: the state machine, the run task, AutoChat, and the event stream.

One `Interpreter` per session. It owns exactly one task at a time (`_drive`), which runs turns
one after another: the person's message, then queued messages, then AutoChat continuations.
`stop()` cancels that task; whatever was streamed so far is kept and marked interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Literal

from gui_agent.agents.base import AgentDeps, Architecture
from gui_agent.approvals import ApprovalBroker
from gui_agent.autochat import AutoRun, goal_to_pin
from gui_agent.events import MAX_BEHIND, EventHub, Subscription
from gui_agent.exceptions import (
    Conflict,
    FellBehind,
    GuiAgentError,
    InvalidRequest,
    ModelError,
    SessionNotFound,
    StoreError,
)
from gui_agent.hooks import call_hook
from gui_agent.llm import LLMProvider
from gui_agent.memory import ContextWindow
from gui_agent.session import (
    Session,
    unanswered_call_result,
    unanswered_calls,
    written_by_person,
)
from gui_agent.state import StateMachine, Trigger
from gui_agent.store.base import SessionStore as Store
from schema import (
    MAX_MESSAGE_CHARS,
    AgentName,
    AgentSwitched,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    AutoChatSettings,
    AutoChatStopped,
    AutoChatStopReason,
    AutoChatTurn,
    ErrorEvent,
    Event,
    ImagePart,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    Role,
    RunFinished,
    RunOutcome,
    SessionSettings,
    SessionUpdated,
    StateChanged,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
    valid_text,
)
from schema.messages import utcnow
from schema.requests import MAX_TITLE_CHARS

logger = logging.getLogger(__name__)

PARTIAL_SAVE_INTERVAL_S = 0.5
"""How often a streaming reply is saved, so a crash loses at most this much of it."""

MAX_QUEUED = 20
"""Messages that may wait for a running turn; one more is refused (Conflict), so a client
that keeps sending cannot queue turns without end."""


class _Partial:
    """A reply being streamed: what its `message_started` said, and the text so far."""

    __slots__ = ("content", "reasoning", "saved_at", "started")

    def __init__(self, started: MessageStarted) -> None:
        self.started = started
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.saved_at = 0.0

    def message(
        self, message_id: str, status: MessageStatus, failure: ErrorEvent | None = None
    ) -> Message:
        """The reply as it stands. `failure`: the error that ended the turn, kept with the
        reply (`metadata["error"]`), so the reason outlives the event that announced it."""
        started = self.started
        role = started.role
        metadata: dict[str, object] = {}
        if started.parent_id is not None:  # a worker's message: kept for people only
            metadata = {"display_only": True, "delegated_by": started.parent_id}
        if role is Role.TOOL:  # output a role streamed as a tool's: no call id to answer
            role, metadata = (
                Role.ASSISTANT,
                {**metadata, "display_only": True, "streamed_as": "tool"},
            )
        if failure is not None:
            metadata["error"] = {"code": failure.code, "message": failure.message}
        return Message(
            id=message_id,
            role=role,
            type=started.message_type,
            agent=started.agent,
            language=started.language,
            content="".join(self.content),
            reasoning="".join(self.reasoning) or None,
            status=status,
            metadata=metadata,
        )


class Interpreter:
    """Runs one session's turns and publishes what happens as events.

    Public methods may be called from any task on the interpreter's event loop.
    """

    def __init__(
        self,
        session: Session,
        deps: AgentDeps,
        *,
        architectures: Mapping[AgentName, Architecture],
        store: Store | None = None,
        initial_state: InterpreterState = InterpreterState.INIT,
        on_titled: Callable[[Interpreter], None] | None = None,
    ) -> None:
        """`on_titled`: called when a turn gave the session its title (the person's first
        message), once that is saved; e.g. to tell whoever lists the owner's chats."""
        if not architectures:
            raise InvalidRequest("an interpreter needs at least one architecture")
        self.session = session
        self.deps = dataclasses.replace(deps, approvals=ApprovalBroker(), agents=architectures)
        self.architectures = architectures
        self._store = store
        self._on_titled = on_titled
        self._hub = EventHub(session.id)
        self._machine = StateMachine(self._on_state_change, initial_state)
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._auto = AutoRun()
        self._open: dict[str, _Partial] = {}
        self._open_approvals: dict[str, ApprovalRequested] = {}
        # started, not finished (for front ends): their `tool_call_started` events
        self._open_calls: dict[str, ToolCallStarted] = {}
        self._speaker: AgentName | None = None
        self._run_id = ""
        self._stop_reason = "stopped by the user"
        self._editing = False
        self._closed = False
        self._unsaved = False  # a store write failed: write the history again at the turn's end
        self._unfiled: Message | None = None  # the person's message a new task has not filed
        self._switch: dict[str, str] | None = None  # a role switch the next turn's prompt keeps
        self._deadline: asyncio.TimerHandle | None = None  # the time budget's end (a turn's)
        self._stopping: asyncio.Task[None] | None = None  # the run task a Stop is ending

    # -- what front ends read ---------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def state(self) -> InterpreterState:
        return self._machine.state

    @property
    def busy(self) -> bool:
        """True while the run task exists: a turn, or AutoChat waiting between turns."""
        return self._task is not None and not self._task.done()

    @property
    def autochat_active(self) -> bool:
        return self._auto.active

    @property
    def autochat_turns(self) -> int:
        return self._auto.turns

    @property
    def pending_approvals(self) -> tuple[ApprovalRequested, ...]:
        return tuple(self._open_approvals.values())

    @property
    def last_seq(self) -> int:
        return self._hub.seq

    @property
    def streaming(self) -> tuple[Message, ...]:
        """The replies being streamed now (started, not yet completed), each with what it
        said up to `last_seq`, as it would be kept if the turn stopped now (status
        INTERRUPTED). Not in `session.history` until their `message_completed`."""
        if not self._open:
            return ()
        kept = {m.id for m in self.session.history[-8:]}  # added, completion on its way
        return tuple(
            partial.message(message_id, MessageStatus.INTERRUPTED)
            for message_id, partial in self._open.items()
            if message_id not in kept
        )

    def subscribe(self) -> Subscription:
        return self._hub.subscribe()

    def events_since(self, seq: int) -> list[Event]:
        return self._hub.since(seq)

    def window(self) -> ContextWindow:
        """What the model would be sent next: the memory window over the history."""
        return self.deps.memory.window(
            self.session.history,
            system_prompt=self.session.settings.system_prompt,
            goal=goal_to_pin(self.session),
            exchanges=self.session.settings.memory_exchanges,
            token_budget=self.session.settings.memory_token_budget,
        )

    # -- what front ends do -----------------------------------------------------------------

    async def send(
        self, text: str, *, images: Sequence[ImagePart] = (), agent: AgentName | None = None
    ) -> Message:
        """Start a turn with the person's message, or queue it if a turn is running."""
        if self._closed:
            raise SessionNotFound("this session was closed (deleted or unloaded)")
        if not text.strip() and not images:
            raise InvalidRequest("the message is empty")
        if len(text) > MAX_MESSAGE_CHARS:
            raise InvalidRequest(
                f"the message has {len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}"
            )
        if (self.busy or self._editing) and len(self.session.inbox) >= MAX_QUEUED:
            raise Conflict(
                f"{len(self.session.inbox)} messages are already waiting for the agent: "
                "send this one when it has read them, or press Stop"
            )
        message = Message(role=Role.USER, content=valid_text(text), images=tuple(images))
        if agent is not None:
            await self.set_agent(agent)
        if self._auto.active:
            self._end_autochat(AutoChatStopReason.USER_MESSAGE, "the person sent a message")
        if self.session.autochat.enabled:
            self._auto.begin(self.session, text)
        await self._stopped()
        if self.busy or self._editing:  # during an edit it goes after the edited message
            self.session.inbox.append(message)
            self._wake.set()
        else:
            self._start(message)
        return message

    async def _stopped(self) -> None:
        """Wait while a Stop ends the turn (a tool may take a moment to end what it
        started): a message sent meanwhile starts the next turn; queued, it would be filed
        unanswered with the stopped turn's queue."""
        if self._stopping is not None and self._stopping is self._task:
            await self.wait_idle()
            if self._closed:
                raise SessionNotFound("this session was closed (deleted or unloaded)")

    async def stop(self, reason: str = "stopped by the user") -> bool:
        """Cancel the run task. The partial reply is kept, marked interrupted. False if idle."""
        if self._auto.active:
            self._end_autochat(AutoChatStopReason.STOPPED, reason)
        task = self._task
        if task is None or task.done():
            return False
        self._stop_reason = reason
        self._stopping = task
        task.cancel()
        await asyncio.wait({task})
        await self._file_unanswered()  # a task cancelled before it ran filed nothing itself
        return True

    def approve(
        self,
        approval_id: str,
        decision: ApprovalDecision,
        note: str | None = None,
        *,
        by: Literal["user", "policy"] = "user",
    ) -> bool:
        """Answer an approval request (`by="policy"`: code decided, not a person). False
        when no such request is open."""
        return self.deps.approvals.resolve(approval_id, decision, note, by=by)

    async def set_agent(self, agent: AgentName, *, reason: str = "picked by the person") -> None:
        if agent not in self.architectures:
            names = ", ".join(a.value for a in self.architectures)
            raise InvalidRequest(f"no agent role {agent.value!r} here; available: {names}")
        if agent is self.session.agent:
            return
        previous = self.session.agent
        self.session.agent = agent
        self._speaker = agent
        self._publish(AgentSwitched(from_agent=previous, to_agent=agent, reason=reason))
        # Kept with the next message that starts a turn (metadata "switched"), so the switch
        # and its reason outlive the event buffer: a rebuilt view, a restart, an export.
        pending = self._switch
        origin = previous.value if pending is None else pending["from_agent"]
        self._switch = (
            None
            if origin == agent.value
            else {"from_agent": origin, "to_agent": agent.value, "reason": reason}
        )
        await self._save_record()

    async def update(
        self,
        *,
        settings: SessionSettings | None = None,
        autochat: AutoChatSettings | None = None,
        title: str | None = None,
    ) -> None:
        """Change settings. Switching AutoChat on while idle after a turn starts it at once."""
        fields: dict[str, object] = {}
        if settings is not None:
            self.session.settings = settings
            fields["settings"] = settings.model_dump(mode="json")
        if title is not None:
            self.session.title = title.strip()[:MAX_TITLE_CHARS]
            fields["title"] = self.session.title
        start_auto = False
        delay_before = self.session.autochat.delay_s
        if autochat is not None:
            was_enabled = self.session.autochat.enabled
            self.session.autochat = autochat
            fields["autochat"] = autochat.model_dump(mode="json")
            start_auto = autochat.enabled and not was_enabled
            if self._auto.active:
                budget = autochat.token_budget  # a budget removed mid-run limits no more
                self.session.token_limit = self._auto.start_tokens + budget if budget else None
        if fields:
            self._publish(SessionUpdated(fields=fields))
            await self._save_record()
        if autochat is not None and not autochat.enabled and self._auto.active:
            # Switched off: no automatic turn after this, and a delay waiting for one ends.
            self._end_autochat(AutoChatStopReason.DISABLED, "AutoChat was switched off")
            self._wake.set()
        if autochat is not None and self._deadline is not None:
            self._arm_deadline(self._run_id)  # the running turn ends where the new budget does
        if autochat is not None and self._auto.waiting and autochat.delay_s != delay_before:
            self._wake.set()  # a delay being waited out ends where the new one does
        idle_after_a_turn = not self.busy and self.state is InterpreterState.STOP
        if start_auto and (idle_after_a_turn or self.busy) and not self._closed:
            # The person's latest message is the goal, not one an earlier AutoChat kept.
            self._auto.begin(self.session, self._latest_request())
            if idle_after_a_turn:
                self._auto.announce()
                self._publish_auto_turn()
                self._start(self._auto.continuation(self.session))
            # else: switched on while a turn runs; the run task goes on after it
            # (`_next_prompt`), as if AutoChat had been on when the person wrote.

    def _latest_request(self) -> str | None:
        """The text of the person's latest message: queued, about to be taken up, or in
        the history; else the goal kept (none written yet)."""
        for message in reversed(self.session.inbox):
            if written_by_person(message):
                return message.content
        if self._unfiled is not None and written_by_person(self._unfiled):
            return self._unfiled.content
        index = self.session.last_user_index()
        return self.session.goal if index is None else self.session.history[index].content

    def set_provider(self, provider: LLMProvider) -> None:
        """Use another model from the next model call on."""
        self.deps = dataclasses.replace(self.deps, provider=provider)

    async def retry(self) -> Message:
        """Run the last user message again, dropping what came after it."""
        with self._one_edit():
            index = await self._require_last_user("retry")
            last = self.session.history[index]
            await self._truncate(index)
            self._carry_switch(last)
            self._editing = False  # the edit is made: its message starts before any queued
            return await self.send(last.content, images=last.images)

    async def edit_last(self, text: str, *, images: Sequence[ImagePart] = ()) -> Message:
        """Replace the last user message with `text` (and `images`) and run it."""
        with self._one_edit():
            index = await self._require_last_user("edit")
            if not text.strip() and not images:
                raise InvalidRequest("the message is empty")
            last = self.session.history[index]
            await self._truncate(index)
            self._carry_switch(last)
            self._editing = False
            return await self.send(text, images=images)

    def _carry_switch(self, replaced: Message) -> None:
        """A message run again (retry, edit) keeps the role switch it carried, merged with
        one made since (from where the kept one started to the role now)."""
        kept = replaced.metadata.get("switched")
        if not isinstance(kept, dict) or not isinstance(kept.get("from_agent"), str):
            return
        pending = self._switch
        if pending is None:
            self._switch = {str(key): str(value) for key, value in kept.items()}
        elif kept["from_agent"] == pending["to_agent"]:
            self._switch = None  # switched back to where it started
        else:
            self._switch = {**pending, "from_agent": kept["from_agent"]}

    async def clear(self) -> None:
        with self._one_edit():
            await self._settle()
            if self.busy:
                raise Conflict("stop the running turn before clearing")
            await self._truncate(0)
            self.session.goal = None

    async def wait_idle(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    async def chat(self, text: str, **kwargs: AgentName | None) -> AsyncIterator[Event]:
        """Send a message and yield every event until the session is idle again."""
        await self._stopped()  # else the stopped turn's idle mark would end this reading
        async with self.subscribe() as subscription:
            await self.send(text, agent=kwargs.get("agent"))
            more = True
            while more:  # batches, not `until_idle()`: no generator between us and the events
                events, more = await subscription.next_events(stop_at_idle=True)
                for event in events:
                    yield event
            if subscription.fell_behind:
                raise FellBehind(
                    f"stopped reading this turn's events while more than {MAX_BEHIND:,} waited; "
                    "the turn goes on, and the session's history holds what it says"
                )

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def watched(self) -> bool:
        """Someone is subscribed to the events (a page, an event stream, a `chat()`)."""
        return self._hub.subscriber_count > 0

    async def close(self) -> None:
        """Stop the run and end every subscription. A closed interpreter starts no turn
        again: `send` raises SessionNotFound (the session was deleted or unloaded)."""
        self._closed = True
        await self.stop("the session was closed")
        self._hub.close()

    # -- the run task -----------------------------------------------------------------------

    def _start(self, prompt: Message) -> None:
        self._unfiled = prompt if prompt.role is Role.USER else None
        self._task = asyncio.create_task(self._drive(prompt), name=f"session-{self.id}")
        self._task.add_done_callback(self._on_task_done)

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if self._stopping is task:
            self._stopping = None
        if task.cancelled():
            self._hub.idle()
        elif (exc := task.exception()) is not None:
            logger.error("session %s: run task failed", self.id, exc_info=exc)
            self._publish(ErrorEvent(code="internal", message=str(exc), recoverable=True))
            self._abandon_turn(f"internal error: {type(exc).__name__}: {exc}")
            self._hub.idle()
        # else: _drive said so itself

    def _abandon_turn(self, detail: str) -> None:
        """The last resort when the run task failed in the interpreter's own code (closing
        the turn raised): end what it left open, without the store (nothing can be awaited
        here), so the session is never left RUNNING, WAITING or in AutoChat."""
        if self._auto.active:
            self._end_autochat(AutoChatStopReason.ERROR, detail)
        self._disarm_deadline()
        self._open.clear()
        self._open_calls.clear()
        for approval_id in list(self._open_approvals):
            del self._open_approvals[approval_id]
            resolved = ApprovalDecision.DENY
            self._publish(ApprovalResolved(approval_id=approval_id, decision=resolved, by="policy"))
        if self.state in (InterpreterState.RUNNING, InterpreterState.WAITING):
            self._publish(RunFinished(outcome=RunOutcome.ERROR, detail=detail))
            self._machine.fire(Trigger.FINISH, RunOutcome.ERROR.value)

    async def _drive(self, prompt: Message) -> None:
        next_prompt: Message | None = prompt
        try:
            while next_prompt is not None:
                if next_prompt.metadata.get("autochat"):
                    self._arm_deadline(next_prompt.id)
                try:
                    outcome = await self._turn(next_prompt)
                finally:
                    self._disarm_deadline()
                next_prompt = await self._next_prompt(outcome)
        except asyncio.CancelledError:
            # Filed before the task ends, so readers see them before the idle mark.
            await self._file_unanswered()
            raise
        # The last thing the task does, with no await after it: nothing can run before the
        # task is done, so whoever sees the idle mark also sees `busy` false. Saying it here
        # rather than in the done callback lets a reader take the whole turn in one wake.
        self._hub.idle()

    async def _turn(self, prompt: Message) -> RunOutcome:
        session = self.session
        session.run_id = self._run_id = prompt.id
        session.task_complete = None
        automatic = bool(prompt.metadata.get("autochat"))
        if automatic:
            self._auto.waiting = False  # the announced turn runs: it counts from now
        self._machine.fire(Trigger.BEGIN, "autochat" if automatic else "message")
        architecture = self.architectures.get(session.agent) or next(
            iter(self.architectures.values())
        )
        outcome, detail = RunOutcome.COMPLETED, ""
        # Every way out of this try goes through _end_turn, a Stop at any await included: a
        # turn that began always finishes, so the state never stays RUNNING.
        try:
            if self._speaker is not None and self._speaker is not architecture.name:
                self._publish(AgentSwitched(from_agent=self._speaker, to_agent=architecture.name))
            self._speaker = architecture.name
            title = session.title
            if self._switch is not None:
                metadata = {**prompt.metadata, "switched": self._switch}
                prompt = prompt.model_copy(update={"metadata": metadata})
                self._switch = None
            session.add(prompt)
            self._unfiled = None
            await self._emit(MessageCompleted(message=prompt))
            if self.deps.hooked:
                await call_hook(self.deps.hooks.on_start(session, prompt))
            titled = session.title != title
            if titled:
                self._publish(SessionUpdated(fields={"title": session.title}))
            await self._save_record()
            if titled and self._on_titled is not None:
                try:
                    self._on_titled(self)
                except Exception:  # whoever listens, the turn goes on
                    logger.exception("session %s: on_titled failed", self.id)
            publish, run_id, trackers = self._hub.publish, self._run_id, _TRACKERS
            async for event in architecture.run(session, self.deps, prompt):
                # `_track`, inlined: this runs for every event of every turn
                handler = trackers.get(type(event))
                if handler is None:
                    if type(event) is RunFinished:  # said by the interpreter, in _end_turn
                        outcome, detail = event.outcome, event.detail
                    else:
                        publish(event, run_id)
                elif (saving := handler(self, event)) is not None:
                    await self._store_call(saving)
        except asyncio.CancelledError:
            await self._end_turn(
                RunOutcome.INTERRUPTED, self._stop_reason, MessageStatus.INTERRUPTED
            )
            raise
        except GeneratorExit:  # the coroutine is being closed: nothing may be awaited now
            raise
        except GuiAgentError as exc:
            await self._fail(str(exc), exc, _error_event(exc))
            return RunOutcome.ERROR
        except (KeyboardInterrupt, SystemExit) as exc:  # the process is asked to end
            name = type(exc).__name__
            await self._fail(name, exc, ErrorEvent(code="agent_failed", message=name))
            raise
        except BaseException as exc:  # any other failure of the agent: the session goes on
            logger.exception("session %s: the %s agent failed", self.id, architecture.name.value)
            failure = ErrorEvent(code="agent_failed", message=f"{type(exc).__name__}: {exc}")
            await self._fail(str(exc), exc, failure)
            return RunOutcome.ERROR
        await self._end_turn(outcome, detail, MessageStatus.INTERRUPTED)
        return outcome

    async def _fail(self, detail: str, error: BaseException, failure: ErrorEvent) -> None:
        """End the turn on `error`: say `failure`, then file the partial replies as failed,
        each keeping `failure` (see `_Partial.message`)."""
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
        recent = {m.id: m for m in session.history[-8:]} if self._open else {}
        for message_id, partial in list(self._open.items()):
            message = recent.get(message_id)
            if message is None:
                message = partial.message(message_id, status, failure)
                session.add(message)
            if (saving := self._track(MessageCompleted(message=message))) is not None:
                saves.append(saving)
        reason = detail or outcome.value
        for message in _answer_dangling_calls(session, reason, self._open_calls):
            self._open_calls.pop(message.tool_call_id or "", None)
            self._publish(ToolCallFinished(result=_tool_result(message)))
            session.add(message)
            if (saving := self._track(MessageCompleted(message=message))) is not None:
                saves.append(saving)
        for started in self._open_calls.values():  # e.g. a supervisor's worker's call: no
            # answer is owed to any model, but the step a front end shows must not stay running
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
        self._publish(RunFinished(outcome=outcome, detail=detail))
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
            cancelled |= await _uninterrupted(asyncio.ensure_future(step))
        if cancelled:
            raise asyncio.CancelledError

    async def _next_prompt(self, outcome: RunOutcome) -> Message | None:
        if self.session.inbox:
            return self.session.inbox.popleft()
        if not self._auto.active:
            return None
        stop = self._auto.stop_reason(self.session, outcome)
        if stop is not None:
            self._end_autochat(*stop)
            return None
        self._auto.announce()
        self._publish_auto_turn()
        if self.session.autochat.delay_s > 0:
            # A new Event, not the last one cleared: that one may be bound to the event loop
            # of an earlier `asyncio.run` (two `chat_sync` calls), and waiting on it would fail.
            self._wake = asyncio.Event()
            await self._wait_delay()
        if self.session.inbox:
            return self.session.inbox.popleft()
        if not self._auto.active:
            return None
        return self._auto.continuation(self.session)

    async def _wait_delay(self) -> None:
        """Wait out AutoChat's delay before the turn it announced; a wake ends it (the
        person's message, AutoChat switched off). A delay changed meanwhile counts from when
        the wait began: `update` wakes the wait to look again."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        while True:
            delay = self.session.autochat.delay_s
            left = delay - (loop.time() - began)
            if left <= 0:
                return
            try:
                async with asyncio.timeout(left):
                    await self._wake.wait()
            except TimeoutError:
                return
            changed = self.session.autochat.delay_s != delay
            if not changed or self.session.inbox or not self._auto.active:
                return
            self._wake.clear()

    def _arm_deadline(self, run_id: str) -> None:
        """For the automatic turn `run_id` under a time budget: a timer that stops the turn
        where the budget ends, so a long tool or an approval nobody answers cannot run past
        it. Armed again when the budget is changed during the turn (`update`); disarmed
        when the turn ends, and when the AutoChat run it belongs to ends (`_end_autochat`):
        a run the person's message starts meanwhile has a clock of its own."""
        self._disarm_deadline()
        budget = self.session.autochat.time_budget_s
        if budget is None or not self._auto.active:
            return
        left = budget - (self._auto.clock() - self._auto.started_at)
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(max(left, 0.0), self._time_up, run_id)

    def _disarm_deadline(self) -> None:
        deadline, self._deadline = self._deadline, None
        if deadline is not None:
            deadline.cancel()

    def _time_up(self, run_id: str) -> None:
        self._deadline = None
        task = self._task
        if run_id != self._run_id or not self._auto.active or task is None or task.done():
            return
        budget = self.session.autochat.time_budget_s or 0.0
        self._end_autochat(
            AutoChatStopReason.TIME_BUDGET,
            f"the time budget of {budget:g}s ran out during an automatic turn, which was stopped",
        )
        self._stop_reason = "AutoChat's time budget ran out"
        self._stopping = task
        task.cancel()

    def _publish_auto_turn(self) -> None:
        max_turns = self.session.autochat.max_turns
        self._publish(
            AutoChatTurn(
                turn=self._auto.turns,
                max_turns=max_turns,
                remaining=max(0, max_turns - self._auto.turns),
            )
        )

    def _end_autochat(self, reason: AutoChatStopReason, detail: str) -> None:
        self._disarm_deadline()  # its time budget ended with it
        turns = self._auto.turns_run
        self._auto.end(self.session, reason)
        self._publish(AutoChatStopped(reason=reason, turns=turns, detail=detail))

    # -- publishing -------------------------------------------------------------------------

    def _publish(self, event: Event) -> None:
        self._hub.publish(event, self._run_id)

    def _on_state_change(
        self, source: InterpreterState, dest: InterpreterState, reason: str
    ) -> None:
        self._publish(StateChanged(from_state=source, to_state=dest, reason=reason))

    async def _emit(self, event: Event) -> None:
        """Publish an event from a turn, keeping state, partial replies and the store in step."""
        saving = self._track(event)
        if saving is not None:
            await self._store_call(saving)

    def _track(self, event: Event) -> Awaitable[None] | None:
        """`_emit` without the store: publishes `event` and returns the store call to await,
        if any. Synchronous, because most events need no I/O and a turn emits many; events
        that change what the interpreter tracks go to their handler in `_TRACKERS`."""
        handler = _TRACKERS.get(type(event))
        if handler is None:
            self._hub.publish(event, self._run_id)
            return None
        return handler(self, event)

    def _track_delta(self, event: TextDelta) -> Awaitable[None] | None:
        self._hub.publish(event, self._run_id)
        partial = self._open.get(event.message_id)
        if partial is None:
            return None
        (partial.content if event.channel == "content" else partial.reasoning).append(event.delta)
        store = self._store
        if store is not None:
            now = time.monotonic()
            if now - partial.saved_at >= PARTIAL_SAVE_INTERVAL_S:
                partial.saved_at = now
                message = partial.message(event.message_id, MessageStatus.INTERRUPTED)
                return store.upsert_partial(self.id, message)
        return None

    def _track_completed(self, event: MessageCompleted) -> Awaitable[None] | None:
        self._open.pop(event.message.id, None)
        self._hub.publish(event, self._run_id)
        store = self._store
        return None if store is None else store.append_message(self.id, event.message)

    def _track_started(self, event: MessageStarted) -> None:
        partial = _Partial(event)
        if self._store is not None:
            partial.saved_at = time.monotonic()
        self._open[event.message_id] = partial
        self._hub.publish(event, self._run_id)

    def _track_call_started(self, event: ToolCallStarted) -> None:
        self._open_calls[event.call.id] = event
        self._hub.publish(event, self._run_id)

    def _track_call_finished(self, event: ToolCallFinished) -> None:
        self._open_calls.pop(event.result.call_id, None)
        self._hub.publish(event, self._run_id)

    def _track_approval_requested(self, event: ApprovalRequested) -> None:
        self._open_approvals[event.approval_id] = event
        if self.state is InterpreterState.RUNNING:  # WAITING: another question is still open
            self._machine.fire(Trigger.AWAIT_APPROVAL, "approval needed")
        self._hub.publish(event, self._run_id)

    def _track_approval_resolved(self, event: ApprovalResolved) -> None:
        self._open_approvals.pop(event.approval_id, None)
        self._hub.publish(event, self._run_id)
        if self.state is InterpreterState.WAITING and not self._open_approvals:
            self._machine.fire(Trigger.RESUME, event.decision.value)

    async def _store_call(self, operation: Awaitable[None]) -> None:
        """Await a store call to its end, even through a Stop meanwhile (which is passed on
        once the write is done): a write cut short could lose what was said, or land after
        the writes that follow it. A failure is reported (and logged), never raised: what
        was said stays in the session, the turn goes on, and the history is written again
        whole when the turn ends (`_finish_saving`)."""
        write = asyncio.ensure_future(operation)
        interrupted = await _uninterrupted(write)
        try:
            write.result()
        except StoreError as exc:
            logger.error("session %s: could not save: %s", self.id, exc)
            self._publish(ErrorEvent(code="store_error", message=f"could not save: {exc}"))
            self._unsaved = True
        except Exception as exc:  # a bug or an unexpected value: say so, keep the session
            logger.exception("session %s: saving failed", self.id)
            self._publish(
                ErrorEvent(code="store_error", message=f"could not save: {type(exc).__name__}")
            )
            self._unsaved = True
        if interrupted:
            raise asyncio.CancelledError

    async def _save_history(self) -> None:
        """Write the whole history again after a write failed (a database locked too long),
        so a restart finds everything that was said."""
        store = self._store
        if store is None or not self._unsaved:
            return
        self._unsaved = False
        await self._store_call(store.replace_messages(self.id, list(self.session.history)))
        if not self._unsaved:
            logger.info("session %s: history saved again after a failed write", self.id)

    async def _save_record(self) -> None:
        if self._store is not None:
            await self._store_call(self._store.update_session(self.session.to_record(self.state)))

    # -- history edits ----------------------------------------------------------------------

    async def _settle(self) -> None:
        """Let a run task that already announced STOP finish saving, unless more is coming
        (AutoChat or a queued message); and a turn that a Stop is ending, end."""
        await self._stopped()
        if (
            self.busy
            and self.state is InterpreterState.STOP
            and not self._auto.active
            and not self.session.inbox
        ):
            await self.wait_idle()

    async def _require_last_user(self, action: str) -> int:
        await self._settle()
        if self.busy:
            raise Conflict("stop the running turn first")
        index = self.session.last_user_index()
        if index is None:
            raise InvalidRequest(f"there is no message of yours to {action}")
        return index

    @contextlib.contextmanager
    def _one_edit(self) -> Iterator[None]:
        """One history edit (retry, edit, clear) at a time: a second one arriving while the
        first waits on the store (a double click) is refused, not interleaved with it.

        A message sent meanwhile is queued: it is answered after the edited message (retry,
        edit), or once the conversation is cleared; if the edit fails, it starts then."""
        if self._editing:
            raise Conflict("another change to this conversation is still in progress")
        self._editing = True
        try:
            yield
        finally:
            self._editing = False
            if self.session.inbox and not self.busy and not self._closed:
                self._start(self.session.inbox.popleft())

    async def _truncate(self, length: int) -> None:
        del self.session.history[length:]
        if self._store is not None:
            await self._store_call(self._store.replace_messages(self.id, self.session.history))
        self._publish(SessionUpdated(fields={"history_length": length}))

    async def _file_unanswered(self) -> None:
        """A Stop before the turn took up its message, and messages queued behind it: they
        stay in the history, unanswered. Nothing said is lost."""
        prompt, self._unfiled = self._unfiled, None
        if prompt is not None:
            self.session.add(prompt)
            await self._emit(MessageCompleted(message=prompt))
        await self._flush_inbox()

    async def _flush_inbox(self) -> None:
        """Messages queued behind a stopped turn stay in the history, unanswered."""
        while self.session.inbox:
            message = self.session.inbox.popleft()
            self.session.add(message)
            await self._emit(MessageCompleted(message=message))


_Tracker = Callable[[Interpreter, Any], Awaitable[None] | None]
_TRACKERS: Final[Mapping[type, _Tracker]] = MappingProxyType(
    {
        TextDelta: Interpreter._track_delta,
        MessageCompleted: Interpreter._track_completed,
        MessageStarted: Interpreter._track_started,
        ToolCallStarted: Interpreter._track_call_started,
        ToolCallFinished: Interpreter._track_call_finished,
        ApprovalRequested: Interpreter._track_approval_requested,
        ApprovalResolved: Interpreter._track_approval_resolved,
    }
)
"""Events that change what an interpreter tracks, by exact type (events are not subclassed);
every other event is only published."""


async def _uninterrupted(future: asyncio.Future[None]) -> bool:
    """Wait until `future` is done, also when the waiting task is cancelled meanwhile (the
    future goes on). Returns whether it was: the caller then raises CancelledError itself,
    once it has finished what must not be cut short."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait((future,))
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


def _error_event(exc: GuiAgentError) -> ErrorEvent:
    code = "model_error" if isinstance(exc, ModelError) else type(exc).__name__
    return ErrorEvent(code=code, message=str(exc) or type(exc).__name__, recoverable=True)


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
    if found is None:
        return []
    message, calls = found
    return [
        unanswered_call_result(
            call,
            f"Interrupted while running: the turn ended ({reason}). It may have done "
            "part of its work; check before running it again."
            if call.id in started
            else f"Not run: the turn ended ({reason}).",
            agent=message.agent,
            was_running=call.id in started,
            duration_ms=_ran_ms(started[call.id]) if call.id in started else None,
        )
        for call in calls
    ]


def _tool_result(message: Message) -> ToolResult:
    duration = message.metadata.get("duration_ms")
    return ToolResult(
        call_id=message.tool_call_id or "",
        name=message.name or "",
        content=message.content,
        is_error=True,
        duration_ms=duration if isinstance(duration, float) else 0.0,
    )


def _ran_ms(started: ToolCallStarted) -> float:
    """How long the call has been running, from its `tool_call_started` event."""
    return round(max((utcnow() - started.at).total_seconds() * 1000, 0.0), 3)
