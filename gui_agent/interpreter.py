"""The per-session controller: the state machine, the run task, AutoChat, and the event stream.

One `Interpreter` per session. It owns exactly one task at a time (`_drive`), which runs turns
one after another: the person's message, then queued messages, then AutoChat continuations.
`stop()` cancels that task; whatever was streamed so far is kept and marked interrupted.

This module is what front ends call (send, stop, approve, settings, reading the events).
The class is built in layers, one idea per module, each on the one before:

- `tracking.EventTracking`: publishing events; the replies, calls and approvals they open;
  the store writes.
- `autochat_driver.AutoChatDriver`: AutoChat between and during turns (next prompt, delay,
  time budget).
- `turn_end.TurnEnding`: how a turn ends, whatever ended it, and what it leaves unanswered.
- `turn.TurnRunner`: the run task and the turn itself.
- `history_edits.HistoryEdits`: retry, edit, clear.

Some of the public surface is defined there: `id` and `state` (tracking), `busy` and
`wait_idle` (turn), `retry`, `edit_last` and `clear` (history_edits).

The layers keep their state on the interpreter itself (set in `Interpreter.__init__`), so a
turn's hot loop reads plain attributes, with no object or call between it and the events.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from gui_agent.agents.base import AgentDeps, Architecture
from gui_agent.agents.roles import parse_role
from gui_agent.approvals import ApprovalBroker, decision_of
from gui_agent.autochat import AutoRun, goal_to_pin
from gui_agent.events import MAX_BEHIND, EventHub, Subscription
from gui_agent.exceptions import (
    Conflict,
    FellBehind,
    InvalidRequest,
    SessionNotFound,
)
from gui_agent.history_edits import HistoryEdits
from gui_agent.llm import LLMProvider
from gui_agent.memory import ContextWindow
from gui_agent.session import Session
from gui_agent.state import StateMachine
from gui_agent.store.base import SessionStore as Store
from gui_agent.tools.permissions import ToolStanding, standings, with_mode
from gui_agent.tracking import PARTIAL_SAVE_INTERVAL_S
from gui_agent.wording import SENT_A_MESSAGE, SWITCHED_OFF
from schema import (
    MAX_MESSAGE_CHARS,
    AgentName,
    AgentSwitched,
    ApprovalDecision,
    ApprovalRequested,
    AutoChatSettings,
    AutoChatStopReason,
    Event,
    ImagePart,
    InterpreterState,
    Message,
    PermissionMode,
    Role,
    SessionSettings,
    SessionUpdated,
    StreamingReply,
    ToolCallOutput,
    valid_text,
)
from schema.builders import builder
from schema.requests import MAX_TITLE_CHARS, plain_title

__all__ = ["MAX_QUEUED", "PARTIAL_SAVE_INTERVAL_S", "Interpreter"]

_message = builder(Message)  # the person's messages (see `schema.builders`)

MAX_QUEUED = 20
"""Messages that may wait for a running turn; one more is refused (Conflict), so a client
that keeps sending cannot queue turns without end."""


class Interpreter(HistoryEdits):
    """Runs one session's turns and publishes what happens as events.

    Public methods may be called from any task on the interpreter's event loop.
    """

    _removal: weakref.finalize[[Path], Interpreter] | None  # see `remove_when_closed`

    def __init__(
        self,
        session: Session,
        deps: AgentDeps,
        *,
        architectures: Mapping[AgentName, Architecture],
        store: Store | None = None,
        initial_state: InterpreterState = InterpreterState.INIT,
        on_titled: Callable[[Interpreter], None] | None = None,
        on_state: Callable[[Interpreter], None] | None = None,
        new_in_store: bool = False,
    ) -> None:
        """`on_titled`: called when a turn gave the session its title (the person's first
        message), once that is saved; e.g. to tell whoever lists the owner's chats.
        `on_state`: called at each change of `state` (a turn starts, waits for an approval,
        goes on, ends), right after it; it must only take note (it runs inside the change).
        `new_in_store`: `store` does not hold this session yet; it is added there before
        the first write (the session manager adds its sessions itself)."""
        if not architectures:
            raise InvalidRequest("an interpreter needs at least one architecture")
        self.session = session
        self.deps = dataclasses.replace(
            deps, approvals=ApprovalBroker(), agents=architectures, tool_output=self._tool_output
        )
        self.architectures = architectures
        self._store = store
        self._on_titled = on_titled
        self._on_state = on_state
        self._hub = EventHub(session.id)
        self._machine = StateMachine(self._on_state_change, initial_state)
        # Each is declared, typed and explained by the layer that first reads it.
        self._task = None
        self._wake = asyncio.Event()
        self._auto = AutoRun()
        self._open = {}
        self._open_approvals = {}
        self._open_calls = {}
        self._live = None
        self._speaker = None
        self._run_id = ""
        self._stop_reason = "stopped by the user"
        self._editing = False
        self._closed = False
        self._unsaved = False
        self._unrecorded = new_in_store and store is not None
        self._unfiled = None
        self._filing = None
        self._switch = None
        self._deadline = None
        self._stopping = None
        self._removal = None

    # -- what front ends read ---------------------------------------------------------------

    @property
    def autochat_active(self) -> bool:
        return self._auto.active

    @property
    def autochat_turns(self) -> int:
        return self._auto.turns

    @property
    def queued(self) -> tuple[Message, ...]:
        """Messages sent while a turn ran, waiting for the agent to read them, oldest first."""
        return tuple(self.session.inbox)

    @property
    def pending_approvals(self) -> tuple[ApprovalRequested, ...]:
        return tuple(self._open_approvals.values())

    @property
    def last_seq(self) -> int:
        return self._hub.seq

    @property
    def streaming(self) -> tuple[StreamingReply, ...]:
        """The replies being streamed now (started, not yet completed), each with what it
        said up to `last_seq`, as it would be kept if the turn stopped now (status
        INTERRUPTED), and the model's retry notice while it has not begun (`retrying`).
        Not in `session.history` until their `message_completed`."""
        if not self._open:
            return ()
        kept = {m.id for m in self.session.history[-8:]}  # added, completion on its way
        now = time.monotonic()
        return tuple(
            partial.snapshot(message_id, now)
            for message_id, partial in self._open.items()
            if message_id not in kept
        )

    @property
    def running_calls(self) -> tuple[ToolCallOutput, ...]:
        """The tool calls running now (started, not finished), oldest first, each as one
        `tool_call_output` holding what it has printed up to `last_seq`: the latest
        SHOWN_CHARS characters, `omitted` counting those before (empty text: nothing yet).
        Events after `last_seq` continue them."""
        live = self._live
        return tuple(
            (None if live is None else live.printed(call_id))
            or ToolCallOutput(call_id=call_id, text="", session_id=self.id, run_id=self._run_id)
            for call_id in self._open_calls
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
        self,
        text: str,
        *,
        images: Sequence[ImagePart] = (),
        agent: AgentName | str | None = None,
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
        message = _message(
            {"role": Role.USER, "content": valid_text(text), "images": tuple(images)}
        )
        if agent is not None:
            await self.set_agent(agent)
        if self._auto.active:
            self._end_autochat(AutoChatStopReason.USER_MESSAGE, SENT_A_MESSAGE)
        if self.session.autochat.enabled:
            self._auto.begin(self.session, text)
        await self._stopped()
        if (self.busy or self._editing) and self._store is not None:
            # On disk before it waits: a server that dies meanwhile files it when it starts
            # again (the history taking it up takes it off the store's queue).
            await self._store_call(self._store.queue_message(self.id, message))
        if self.busy or self._editing:  # during an edit it goes after the edited message
            self.session.inbox.append(message)
            self._wake.set()
        else:
            self._start(message)
        return message

    async def stop(self, reason: str = "stopped by the user") -> bool:
        """Cancel the run task. The partial reply is kept, marked interrupted. False if idle.
        A Stop while another one is ending the run waits for that one."""
        if self._auto.active:
            self._end_autochat(AutoChatStopReason.STOPPED, reason)
        task = self._task
        if task is None or task.done():
            await self._unanswered_saved()  # (a stopped task's filing may still be saving)
            return False
        # A Stop while another one ends the run only waits for it: a second cancel would cut
        # short what the run does as it ends (a tool ending the code it started, the
        # partial reply being filed), and leave that code running.
        if self._stopping is not task:
            self._stop_reason = reason
            self._stopping = task
            task.cancel()
        await asyncio.wait({task})
        await self._unanswered_saved()  # (what a task stopped before it ran left: turn.py)
        return True

    def approve(
        self,
        approval_id: str,
        decision: ApprovalDecision | str,
        note: str | None = None,
        *,
        by: Literal["user", "policy"] = "user",
    ) -> bool:
        """Answer an approval request (`by="policy"`: code decided, not a person). False
        when no such request is open. `decision` may be given by its value ("allow_once");
        anything that is no decision is InvalidRequest, and the request stays open."""
        return self.deps.approvals.resolve(approval_id, decision_of(decision), note, by=by)

    async def set_agent(
        self, agent: AgentName | str, *, reason: str = "picked by the person"
    ) -> None:
        """Switch the session's role (by name too: "planner"); InvalidRequest naming the
        roles it has for one it has not."""
        agent = parse_role(str(agent), self.architectures)
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
            self.session.title = plain_title(title)[:MAX_TITLE_CHARS]  # (one line, shown)
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
            self._end_autochat(AutoChatStopReason.DISABLED, SWITCHED_OFF)
            self._wake.set()
        if autochat is not None and self._deadline is not None:
            self._arm_deadline(self._run_id)  # the running turn ends where the new budget does
        if autochat is not None and self._auto.waiting and autochat.delay_s != delay_before:
            self._wake.set()  # a delay being waited out ends where the new one does
        if start_auto:
            self._begin_autochat()

    async def start_autochat(self) -> bool:
        """Run AutoChat toward the person's latest message: switched on if it is off, and
        started again if it is on but its last run ended (a limit, Stop, `task_complete`),
        without switching it off and on. At once after a reply; during a turn, after it.
        False when nothing starts: a run is going already, or there has been no turn yet
        (the person's next message starts it)."""
        if self._auto.active:
            return False
        autochat = self.session.autochat
        if not autochat.enabled:
            await self.update(autochat=autochat.model_copy(update={"enabled": True}))
            return self._auto.active
        return self._begin_autochat()

    def _begin_autochat(self) -> bool:
        """Begin an AutoChat run after a turn (its first automatic turn starts now) or
        during one (the run task goes on after it, `_next_prompt`, as if AutoChat had been
        on when the person wrote). False when idle before any turn, or closed."""
        idle_after_a_turn = not self.busy and self.state is InterpreterState.STOP
        if self._closed or not (idle_after_a_turn or self.busy):
            return False
        # The person's latest message is the goal, not one an earlier AutoChat kept.
        self._auto.begin(self.session, self._latest_request())
        if idle_after_a_turn:
            self._auto.announce()
            self._publish_auto_turn()
            self._start(self._auto.continuation(self.session))
        return True

    @property
    def allowed_tools(self) -> tuple[str, ...]:
        """The tools the person allowed for this session ("Allow for this session"), by name:
        they run without asking until forgotten. Kept in memory only: a restart, or the
        session unloaded, asks again."""
        return tuple(sorted(self.session.allowed_tools))

    def forget_allowed_tools(self, tool: str | None = None) -> tuple[str, ...]:
        """Ask again before `tool` (every tool allowed for this session when None) runs; a
        call already running goes on. Returns the tools still allowed."""
        allowed = self.session.allowed_tools
        if tool is None:
            forgotten = bool(allowed)
            allowed.clear()
        else:
            forgotten = tool in allowed
            allowed.discard(tool)
        if forgotten:
            self._publish(SessionUpdated(fields={"allowed_tools": sorted(allowed)}))
        return self.allowed_tools

    def tool_standings(self) -> tuple[ToolStanding, ...]:
        """How each of the chat's tools is treated now: what its next call does, the mode
        set for this chat (if any), and whether the person allowed it for the session."""
        session = self.session
        return standings(
            self.deps.permissions,
            self.deps.tools,
            session.settings.permissions,
            session.allowed_tools,
        )

    async def set_tool_mode(self, tool: str, mode: PermissionMode | None) -> ToolStanding:
        """Set what a call of `tool` does in this chat (kept with its settings); None: what
        the app decides (destructive tools ask first). Ask or never also take back an
        "Allow for this session" of it: the person's latest word holds. InvalidRequest for
        a tool the chat does not have."""
        if tool not in self.deps.tools:
            names = ", ".join(self.deps.tools.names) or "none"
            raise InvalidRequest(f"this chat has no tool {tool!r}; its tools: {names}")
        if mode in (PermissionMode.ASK, PermissionMode.DENY):
            self.forget_allowed_tools(tool)
        settings = self.session.settings
        modes = with_mode(settings.permissions, tool, mode)
        if modes != settings.permissions:
            await self.update(settings=settings.model_copy(update={"permissions": modes}))
        return next(s for s in self.tool_standings() if s.name == tool)

    def set_provider(self, provider: LLMProvider) -> None:
        """Use another model from the next model call on."""
        self.deps = dataclasses.replace(self.deps, provider=provider)

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
        if self._removal is not None:
            self._removal()

    def remove_when_closed(self, folder: Path) -> None:
        """Delete `folder` (a temporary one made for this session) when the interpreter is
        closed, or else when it is garbage-collected or the program ends."""
        self._removal = weakref.finalize(self, _remove_folder, folder)


def _remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
