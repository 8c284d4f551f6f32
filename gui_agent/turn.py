"""The run task and the turn: one task per busy session, running turns one after another.

`_start` creates the task (`_drive`); it runs the person's message, then each queued message,
then AutoChat's continuations (`_next_prompt`), one `_turn` at a time. A turn files its
prompt, runs the architecture and passes every event it yields on (`tracking.TRACKERS`);
however it ends, it ends through `turn_end` (`_end_turn`), so the state never stays RUNNING.
A Stop cancels the task; the task says the session is idle as the last thing it does.

One layer of `Interpreter` (see `gui_agent.interpreter`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

from gui_agent.agents.base import Architecture
from gui_agent.exceptions import GuiAgentError, ModelError, SessionNotFound
from gui_agent.hooks import call_hook
from gui_agent.log_text import loggable_traceback
from gui_agent.state import Trigger
from gui_agent.tracking import TRACKERS
from gui_agent.turn_end import TurnEnding
from schema import (
    AgentName,
    AgentSwitched,
    ErrorEvent,
    Message,
    MessageCompleted,
    MessageStatus,
    Role,
    RunFinished,
    RunOutcome,
    SessionUpdated,
)
from schema.builders import builder

if TYPE_CHECKING:
    from gui_agent.interpreter import Interpreter

logger = logging.getLogger(__name__)

_message_completed = builder(MessageCompleted)  # (see `schema.builders`)


class TurnRunner(TurnEnding):
    """Owns a session's run task and runs its turns. The attributes are set by
    `Interpreter.__init__`."""

    architectures: Mapping[AgentName, Architecture]
    _on_titled: Callable[[Interpreter], None] | None
    _speaker: AgentName | None
    _switch: dict[str, str] | None  # a role switch the next turn's prompt keeps
    _closed: bool

    @property
    def busy(self) -> bool:
        """True while the run task exists: a turn, or AutoChat waiting between turns."""
        return self._task is not None and not self._task.done()

    async def wait_idle(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    async def _stopped(self) -> None:
        """Wait while a Stop ends the turn (a tool may take a moment to end what it
        started): a message sent meanwhile starts the next turn; queued, it would be filed
        unanswered with the stopped turn's queue."""
        if self._stopping is not None and self._stopping is self._task:
            await self.wait_idle()
            if self._closed:
                raise SessionNotFound("this session was closed (deleted or unloaded)")

    def _start(self, prompt: Message) -> None:
        self._unfiled = prompt if prompt.role is Role.USER else None
        self._task = asyncio.create_task(self._drive(prompt), name=f"session-{self.id}")
        self._task.add_done_callback(self._on_task_done)

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if self._stopping is task:
            self._stopping = None
        if task.cancelled():
            self._file_unanswered()  # (before the idle mark: readers see them)
            self._hub.idle()
        elif (exc := task.exception()) is not None:
            # A bug in the interpreter: its traceback, escaped (its message may quote a
            # model's or a tool's words).
            logger.error("session %s: run task failed: %s", self.id, loggable_traceback(exc))
            self._publish(ErrorEvent(code="internal", message=str(exc), recoverable=True))
            self._abandon_turn(f"internal error: {type(exc).__name__}: {exc}")
            self._hub.idle()
        # else: _drive said so itself

    async def _drive(self, prompt: Message) -> None:
        next_prompt: Message | None = prompt
        while next_prompt is not None:
            if next_prompt.metadata.get("autochat"):
                self._arm_deadline(next_prompt.id)
            try:
                outcome = await self._turn(next_prompt)
            finally:
                self._disarm_deadline()
            next_prompt = await self._next_prompt(outcome)
        # (Cancelled, what the turn left is filed by the done callback: `_file_unanswered`.)
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
        session.turn_agent = session.agent
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
            await self._emit(_message_completed({"message": prompt}))
            if self.deps.hooked:
                await call_hook(self.deps.hooks.on_start(session, prompt))
            titled = session.title != title
            if titled:
                self._publish(SessionUpdated(fields={"title": session.title}))
            await self._save_record()
            if titled and self._on_titled is not None:
                try:
                    self._on_titled(cast("Interpreter", self))  # the only subclass
                except Exception as error:  # whoever listens, the turn goes on
                    logger.error(
                        "session %s: on_titled failed: %s", self.id, loggable_traceback(error)
                    )
            publish, run_id, trackers = self._hub.publish, self._run_id, TRACKERS
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
            try:
                if not self._open and session.history and session.history[-1] is prompt:
                    await self._left_unread(prompt)  # stopped before the agent read it
            finally:  # (a second Stop meanwhile: the turn still ends)
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
            logger.error(
                "session %s: the %s agent failed: %s",
                self.id,
                architecture.name.value,
                loggable_traceback(exc),
            )
            failure = ErrorEvent(code="agent_failed", message=f"{type(exc).__name__}: {exc}")
            await self._fail(str(exc), exc, failure)
            return RunOutcome.ERROR
        await self._end_turn(outcome, detail, MessageStatus.INTERRUPTED)
        return outcome


def _error_event(exc: GuiAgentError) -> ErrorEvent:
    code = "model_error" if isinstance(exc, ModelError) else type(exc).__name__
    return ErrorEvent(code=code, message=str(exc) or type(exc).__name__, recoverable=True)
