"""What a turn's events change in its interpreter, and how that is saved.

The replies being streamed (`Partial`), the tool calls running, the approvals open: each
event that opens or closes one of them goes to its handler in `TRACKERS`; every event is
published to the session's `EventHub`. Store calls are awaited through a Stop
(`uninterrupted`), and a failed one is reported and repaired at the turn's end, never raised.

`EventTracking` is the interpreter's lowest layer (see `gui_agent.interpreter`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from types import MappingProxyType
from typing import Any, Final

from gui_agent.agents.base import AgentDeps
from gui_agent.cancels import uninterrupted
from gui_agent.events import EventHub
from gui_agent.exceptions import StoreError
from gui_agent.live_output import LiveOutput
from gui_agent.log_text import loggable, loggable_traceback
from gui_agent.session import Session
from gui_agent.state import StateMachine, Trigger
from gui_agent.store.base import SessionStore as Store
from schema import (
    ApprovalRequested,
    ApprovalResolved,
    ErrorEvent,
    Event,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    ModelRetrying,
    Role,
    StateChanged,
    StreamingReply,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from schema.builders import builder
from schema.messages import CREW_SPEAKER

logger = logging.getLogger(__name__)

_state_changed = builder(StateChanged)  # each turn's first and last events (`schema.builders`)

PARTIAL_SAVE_INTERVAL_S = 0.5
"""How often a streaming reply is saved, so a crash loses at most this much of it."""


def kept_error(failure: ErrorEvent) -> dict[str, str]:
    """The failure that ended a turn as a failed reply keeps it (`metadata["error"]`), so
    the reason outlives the event that announced it."""
    return {"code": failure.code, "message": failure.message}


class Partial:
    """A reply being streamed: what its `message_started` said, the text so far, and the
    latest `model_retrying` of its model call (kept for readers that come later, see
    `snapshot`)."""

    __slots__ = ("content", "reasoning", "retried_at", "retrying", "saved_at", "started")

    def __init__(self, started: MessageStarted) -> None:
        self.started = started
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.saved_at = 0.0
        self.retrying: ModelRetrying | None = None
        self.retried_at = 0.0  # (monotonic)

    def snapshot(self, message_id: str, now: float) -> StreamingReply:
        """The reply as a reader that opens the chat `now` (monotonic) is shown it: as it
        would be kept if the turn stopped now, and why it has not begun if its model is
        being asked again, with the wait left. The notice is not cleared when text comes
        (the text-delta handler runs for every delta and stays as it was): a reply with
        text or reasoning has begun, so the notice is left out here."""
        message = self.message(message_id, MessageStatus.INTERRUPTED)
        retrying = self.retrying
        if retrying is not None and not self.content and not self.reasoning:
            left = max(0.0, retrying.wait_s - (now - self.retried_at))
            retrying = retrying.model_copy(update={"wait_s": round(left, 1)})
        else:
            retrying = None
        return StreamingReply(**dict(message), retrying=retrying)

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
        if started.speaker is not None:  # a crew member's
            metadata[CREW_SPEAKER] = started.speaker
        if failure is not None:
            metadata["error"] = kept_error(failure)
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


class EventTracking:
    """Publishes a session's events and keeps what they open (replies, calls, approvals)
    and the store in step. The attributes are set by `Interpreter.__init__`."""

    session: Session
    deps: AgentDeps
    _store: Store | None
    _hub: EventHub
    _machine: StateMachine
    _run_id: str
    _open: dict[str, Partial]
    _open_calls: dict[str, ToolCallStarted]  # started, not finished: for front ends
    _live: LiveOutput | None  # running calls' unsent output; made at a call's first print
    _open_approvals: dict[str, ApprovalRequested]
    _unsaved: bool  # a store write failed: write the history again at the turn's end
    _unrecorded: bool  # the store does not hold the session yet: add it before writing
    _on_state: Callable[[Any], None] | None  # told of each state change (Interpreter)

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def state(self) -> InterpreterState:
        return self._machine.state

    def _publish(self, event: Event) -> None:
        self._hub.publish(event, self._run_id)

    def _on_state_change(
        self, source: InterpreterState, dest: InterpreterState, reason: str
    ) -> None:
        event = _state_changed({"from_state": source, "to_state": dest, "reason": reason})
        self._hub.publish(event, self._run_id)
        if self._on_state is not None:
            try:
                self._on_state(self)
            except Exception as error:  # whoever listens, the state has changed
                logger.error("session %s: on_state failed: %s", self.id, loggable_traceback(error))

    async def _emit(self, event: Event) -> None:
        """Publish an event from a turn, keeping state, partial replies and the store in step."""
        saving = self._track(event)
        if saving is not None:
            await self._store_call(saving)

    def _track(self, event: Event) -> Awaitable[None] | None:
        """`_emit` without the store: publishes `event` and returns the store call to await,
        if any. Synchronous, because most events need no I/O and a turn emits many; events
        that change what the interpreter tracks go to their handler in `TRACKERS`."""
        handler = TRACKERS.get(type(event))
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
        partial = Partial(event)
        if self._store is not None:
            partial.saved_at = time.monotonic()
        self._open[event.message_id] = partial
        self._hub.publish(event, self._run_id)

    def _track_retrying(self, event: ModelRetrying) -> None:
        """Keep the notice with its reply (a newer one replaces it), so the detail and a
        stream's `hello` say it to a reader that comes after it (`Partial.snapshot`)."""
        self._hub.publish(event, self._run_id)
        partial = self._open.get(event.message_id)
        if partial is not None:
            partial.retrying = event
            partial.retried_at = time.monotonic()

    def _track_call_started(self, event: ToolCallStarted) -> None:
        self._open_calls[event.call.id] = event
        self._hub.publish(event, self._run_id)

    def _track_call_finished(self, event: ToolCallFinished) -> None:
        call_id = event.result.call_id
        if self._live is not None:
            self._live.finish(call_id)  # the last of what it printed, before it finishes
        self._open_calls.pop(call_id, None)
        self._hub.publish(event, self._run_id)

    def _tool_output(self, call_id: str, text: str) -> None:
        """What a running call printed (`ToolContext.show`): to `tool_call_output` events."""
        if self._live is None:
            self._live = LiveOutput(self._publish, self._open_calls.__contains__)
        self._live.feed(call_id, text)

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
        if self._unrecorded:
            self._unrecorded = False
            operation = self._recorded_first(operation)
        write = asyncio.ensure_future(operation)
        interrupted = await uninterrupted(write)
        try:
            write.result()
        except StoreError as exc:
            logger.error("session %s: could not save: %s", self.id, loggable(exc))
            self._publish(ErrorEvent(code="store_error", message=f"could not save: {exc}"))
            self._unsaved = True
        except Exception as exc:  # a bug or an unexpected value: say so, keep the session
            logger.error("session %s: saving failed: %s", self.id, loggable_traceback(exc))
            self._publish(
                ErrorEvent(code="store_error", message=f"could not save: {type(exc).__name__}")
            )
            self._unsaved = True
        if interrupted:
            raise asyncio.CancelledError

    async def _recorded_first(self, operation: Awaitable[None]) -> None:
        """`operation`, after the session is added to the store unless it is there already
        (see `new_in_store`). The writes that follow wait behind it in the store."""
        store, session = self._store, self.session
        assert store is not None
        try:
            if await store.get_session(session.id, owner=session.owner) is None:
                await store.create_session(session.to_record(self.state))
        except BaseException:
            if isinstance(operation, Coroutine):
                operation.close()  # never to run: the session could not be added
            raise
        await operation

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


_Tracker = Callable[[EventTracking, Any], Awaitable[None] | None]
TRACKERS: Final[Mapping[type, _Tracker]] = MappingProxyType(
    {
        TextDelta: EventTracking._track_delta,
        MessageCompleted: EventTracking._track_completed,
        MessageStarted: EventTracking._track_started,
        ModelRetrying: EventTracking._track_retrying,
        ToolCallStarted: EventTracking._track_call_started,
        ToolCallFinished: EventTracking._track_call_finished,
        ApprovalRequested: EventTracking._track_approval_requested,
        ApprovalResolved: EventTracking._track_approval_resolved,
    }
)
"""Events that change what an interpreter tracks, by exact type (events are not subclassed);
every other event is only published."""
