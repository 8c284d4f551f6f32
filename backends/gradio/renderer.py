"""Events → the chatbot's messages, in Gradio 6's OpenAI-style `messages` format. Pure.

`ChatView` is built from a session's history (`from_history`) and then fed the session's
events (`apply`); `messages()` is the chatbot value. No I/O and no Gradio import: icons come
in as data URLs, so the view is a plain function of its inputs and is unit-tested as such.

What each thing looks like:

- user message: its text (HTML shown as text), images inline; AutoChat's continuation
  prompts are labelled as such; each in a bubble of its own (two in a row, queued while
  the agent worked, were drawn as one: `chat_entries.apart`);
- assistant message: a header with the agent role's icon and name (a crew member's: the
  crew's icon and "Crew · reviewer", from its first word: `CrewVoices`), then the text as
  Markdown; CODE fenced with its language, CONSOLE fenced as output, IMAGE inline,
  FUNCTION as JSON; an interrupted or failed reply keeps its text and ends with a marker;
- model reasoning: a collapsible "Reasoning" step before the reply;
- tool call: a collapsible step (`metadata.title` = tool name, shown as written however a
  model names it: `escape_title`; `status` pending → done,
  `duration` in seconds) placed after the message that asked for it, showing what runs;
  its result is a child step (`metadata.parent_id` = the step's id);
- approval: a pending step while the person decides, then the CONFIRMATION message;
- a message of the person's a Stop left unanswered: a note of its own right after it, on
  the app's side (inside its bubble, it read as applying to the next message too, which
  Gradio groups with it);
- an empty reply (no text, images or tool calls): a note that the model sent no text;
- an error: "Error:" and its message, at the end of the failed reply that keeps it, the
  same live as after a reload (live, the error's event comes first, as a note of its own,
  which the failed reply then replaces);
- agent switch (picked or a hand-off): a visible "switched to …" line in a bubble of its
  own, before the new speaker's (not at the end of the reply before it: `Entry.alone`);
  a role the person
  picked is also kept with the message that next started a turn, so a view of the history
  alone shows it too (once);
- a reply the model cut off at its output limit ends with a note that says so;
- a model call asked again (`model_retrying`): the reply being written says why and when,
  in place of its text, until its text streams, the next notice or the reply is filed.

The view's parts: its entries (chat_entries.py), tool and approval steps (tool_steps.py),
the text of a history message (message_text.py) and who speaks for a crew (crew_voices.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from backends.gradio.autoturns import TurnTally, turns_phrase
from backends.gradio.chat_entries import ChatbotMessage, Entry
from backends.gradio.crew_voices import CrewVoices
from backends.gradio.looks import (
    ERROR_MARK,
    INTERRUPTED_MARK,
    UNANSWERED_MARK,
    agent_header,
    body_markdown,
    error_line,
    preview,
    tool_step_id,
)
from backends.gradio.markdown import MediaLink, escape_html
from backends.gradio.message_text import failure_of, header, message_text
from backends.gradio.switches import kept_switch
from backends.gradio.tool_steps import Call, ToolSteps
from gui_agent.agents.tool_step import NOT_RUN
from gui_agent.retry_words import retry_words
from gui_agent.session import is_handover
from gui_agent.turn_end import UNANSWERED
from gui_agent.wording import autochat_stop_words, role_title
from schema import (
    AgentName,
    AgentSwitched,
    ApprovalRequested,
    ApprovalResolved,
    AutoChatStopped,
    AutoChatTurn,
    ErrorEvent,
    Event,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageType,
    ModelRetrying,
    Role,
    RunFinished,
    RunOutcome,
    SessionUpdated,
    StateChanged,
    TextDelta,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
)

__all__ = [
    "ERROR_MARK",
    "INTERRUPTED_MARK",
    "ChatView",
    "ChatbotMessage",
    "agent_header",
    "failure_of",
    "tool_step_id",
]


@dataclass(slots=True)
class _Live:
    """A message being streamed."""

    role: Role
    type: MessageType
    agent: AgentName | None
    language: str | None
    crew_member: str | None = None
    """The crew member writing it, as far as the view knows (`CrewVoices.member`)."""
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    retrying: str = ""
    """Why the model is being asked again (`retry_words`), shown while nothing streamed."""


class ChatView(ToolSteps):
    """The chatbot's content for one session, kept in step with its events."""

    def __init__(
        self, *, icons: Mapping[str, str] | None = None, media: MediaLink | None = None
    ) -> None:
        super().__init__(media)
        self._icons: Mapping[str, str] = icons or {}
        self._live: dict[str, _Live] = {}
        self._committed: set[str] = set()
        self._previews: dict[str, tuple[str, str]] = {}
        self._speaker: AgentName | None = None
        self._handed_over = False
        """The last message shown was an agents' hand-over: the next speaker is announced."""
        self._picked: AgentName | None = None
        """The role the last switch shown went to (an event, or one a message keeps)."""
        self._announced: AgentName | None = None
        """The role the last agent_switched event this view saw switched to: a message that
        keeps that switch (`kept_switch`) does not show it again."""
        self._crew = CrewVoices()
        self._error_notes: dict[tuple[str, str], str] = {}
        """(code, message) of each error shown as a note → the note's key (a failed reply
        that keeps that error takes its place)."""
        self.autochat = TurnTally()
        """The AutoChat run's turns as the events tell them (a view of a session caught up
        mid-run is told its buffered ones: `PageView.of`)."""

    @property
    def media(self) -> MediaLink | None:
        """Where this view's images are served (None: inline), for entries shown beside it."""
        return self._media

    # -- building -------------------------------------------------------------------------

    @classmethod
    def from_history(
        cls,
        messages: Iterable[Message],
        *,
        icons: Mapping[str, str] | None = None,
        notes: Mapping[int, Sequence[Event]] | None = None,
        media: MediaLink | None = None,
        agent: AgentName | None = None,
    ) -> ChatView:
        """The view of a history. `notes`: the events shown as lines of their own (agent
        switches, errors, AutoChat stops) to place before the message of that index (after
        the last one: the history's length), as `placed_notes` finds them in the session's
        recent events; the history does not hold them. `media`: where the images shown are
        served (`image_markdown`); None shows them inline. `agent`: the session's role now,
        which its next turns run as (a chat begun as the crew's has no switch to say so:
        its replies read as the crew's from their first word, not as the roles' they are
        made as)."""
        view = cls(icons=icons, media=media)
        messages = list(messages)
        # A failed reply that keeps its error says it itself: its note is not repeated.
        said = {error for message in messages if (error := failure_of(message)) is not None}
        placed = {
            index: [n for n in shown if not (isinstance(n, ErrorEvent) and _key(n) in said)]
            for index, shown in (notes or {}).items()
        }
        count = 0
        for count, message in enumerate(messages, start=1):
            for note in placed.get(count - 1, ()):
                view.apply(note)
            view.add_message(message)
        for note in placed.get(count, ()):
            view.apply(note)
        if agent is not None:
            view._crew.role_now(agent)
        return view

    def add_message(self, message: Message) -> None:
        """Show a message that is part of the history (a new one, or the end of a stream)."""
        if message.id in self._committed:
            if message.id in self._by_key:  # e.g. completed twice: keep the newest look
                self._render_message(message, self._history.index(message.id))
            return
        index = len(self._history)
        self._history.append(message.id)
        self._kept_switch(message)
        self._committed.add(message.id)
        self._previews[message.id] = (message.role.value, preview(message))
        self._live.pop(message.id, None)
        if message.role is Role.TOOL:
            self._tool_result(
                message.tool_call_id or message.id,
                name=message.name or "tool",
                content=message.content,
                is_error=bool(message.metadata.get("is_error")),
                duration_ms=_float(message.metadata.get("duration_ms")),
                message_type=message.type,
                images=message.images,
                status=message.status,
                arguments=str(message.metadata.get("arguments", "")) or None,
                anchor=index,
                was_running=bool(message.metadata.get("was_running")),
                not_run=bool(message.metadata.get(NOT_RUN)),
            )
            return
        self._render_message(message, index)
        if message.role is Role.ASSISTANT:
            for call in message.tool_calls:
                self._calls[call.id] = Call(call.name, call.arguments, index)
                self._tool_step(call.id, call.name, call.arguments, anchor=index)
        self.version += 1

    # -- reading ----------------------------------------------------------------------------

    @property
    def history_ids(self) -> tuple[str, ...]:
        return tuple(self._history)

    def preview(self, message_id: str) -> tuple[str, str] | None:
        """(role, a short one-line preview) of a history message, for the memory panel."""
        return self._previews.get(message_id)

    # -- events -----------------------------------------------------------------------------

    def apply(self, event: Event) -> bool:
        """Update the view for one event; True when what the chatbot shows changed."""
        before = self.version
        if isinstance(event, TextDelta):
            self._delta(event)
        elif isinstance(event, MessageStarted):
            self._started(event)
        elif isinstance(event, MessageCompleted):
            self.add_message(event.message)
        elif isinstance(event, ToolCallStarted):
            call = event.call
            anchor = self._calls[call.id].anchor if call.id in self._calls else self._tail()
            self._tool_step(call.id, call.name, call.arguments, anchor=anchor)
        elif isinstance(event, ToolCallOutput):
            self._live_output(event)
        elif isinstance(event, ToolCallFinished):
            self._finished(event.result)
        elif isinstance(event, ApprovalRequested):
            self._approval(event)
        elif isinstance(event, ApprovalResolved):
            self._remove(f"approval:{event.approval_id}")
        elif isinstance(event, AgentSwitched):
            self._announced = event.to_agent
            self._switch(event.to_agent, event.from_agent, event.reason)
        elif isinstance(event, ErrorEvent):
            self._error_notes[_key(event)] = self._note(error_line(event.code, event.message))
        elif isinstance(event, RunFinished) and event.outcome is RunOutcome.BUDGET:
            self._note(f"_Stopped: {escape_html(event.detail or 'budget reached')}_")
        elif isinstance(event, AutoChatStopped):
            self._autochat_stopped(event)
        elif isinstance(event, AutoChatTurn | StateChanged):
            self.autochat.apply(event)
        elif isinstance(event, SessionUpdated) and "history_length" in event.fields:
            self.truncate(int(event.fields["history_length"]))
        elif isinstance(event, ModelRetrying):
            self._retrying(event)
        return self.version != before

    def note(self, markdown: str) -> None:
        """Add a line of the app's own (trusted Markdown) at the end, e.g. "end of replay"."""
        self._note(markdown)

    def truncate(self, length: int) -> None:
        """Keep the first `length` history messages (retry, edit and clear cut the rest)."""
        if length > 0 and length >= len(self._history):
            return
        dropped = self._history[length:]
        del self._history[length:]
        for message_id in dropped:
            self._committed.discard(message_id)
            self._previews.pop(message_id, None)
        kept = [
            entry
            for entry in self._entries
            if length > 0 and (entry.anchor <= length if entry.transient else entry.anchor < length)
        ]
        self._entries = kept
        self._by_key = {entry.key: entry for entry in kept}
        self._calls = {k: c for k, c in self._calls.items() if c.anchor < length}
        self._live.clear()
        self._speaker = None
        self._handed_over = False
        self._picked = None
        self.version += 1

    def _autochat_stopped(self, event: AutoChatStopped) -> None:
        """Say why AutoChat stopped and after how many turns that ran (as the status line)."""
        ran = turns_phrase(self.autochat.stop(event))
        words = escape_html(autochat_stop_words(event.reason, event.detail))
        self._note(f"_AutoChat stopped after {ran}: {words}_")

    def _see_speaker(self, agent: AgentName | None, before: str | None = None) -> None:
        """Mark a change of speaker that no agent_switched event announced. Not after an
        agents' hand-over ("Crew, over to the reviewer", a plan step), which says who goes
        on, nor while the crew is the role (`_picked`), which speaks through its members:
        "Switched to Thought from Executor" there made a crew's turn look like roles picked
        and dropped."""
        if agent is None:
            return
        handed_over, self._handed_over = self._handed_over, False
        if (
            self._speaker is not None
            and agent is not self._speaker
            and self._picked is not AgentName.CREW
            and not handed_over
        ):
            self._switch_marker(agent, self._speaker, "", before=before)
        self._speaker = agent

    def _switch(
        self,
        to_agent: AgentName,
        from_agent: AgentName | None,
        reason: str,
        *,
        before: str | None = None,
    ) -> None:
        previous, self._picked = self._picked, to_agent
        self._crew.switched(to_agent)
        if to_agent is self._speaker and previous is not AgentName.CREW:  # (the crew's
            return  # reviewer spoke last: a role picked after the crew is news all the same)
        self._switch_marker(to_agent, from_agent, reason, before=before)
        self._speaker = to_agent

    def _kept_switch(self, message: Message) -> None:
        """Show the role switch `message` keeps before it, unless this view saw the event
        that announced it (a tab that watched it, or a rebuild while it is still buffered)."""
        kept = kept_switch(message)
        if kept is None:
            return
        if kept.to_agent is not self._announced:
            self._switch(kept.to_agent, kept.from_agent, kept.reason, before=message.id)
        self._announced = None

    def _switch_marker(
        self,
        to_agent: AgentName,
        from_agent: AgentName | None,
        reason: str,
        *,
        before: str | None = None,
    ) -> None:
        source = f" from {role_title(from_agent)}" if from_agent is not None else ""
        why = f" ({escape_html(reason)})" if reason else ""
        text = (
            f'{agent_header(to_agent, self._icons)} <span class="ga-switch">'
            f"Switched to {role_title(to_agent)}{source}{why}</span>"
        )
        self._append(
            Entry(
                self._transient_key("switch"),
                "assistant",
                self._tail(),
                text,
                transient=True,
                alone=True,  # not at the end of the reply before it, nor atop the next
            ),
            before=before,
        )

    def _started(self, event: MessageStarted) -> None:
        if event.message_id in self._committed:
            return
        member = None
        if event.role is Role.ASSISTANT:  # (a crew member says who writes it: `speaker`)
            named = event.speaker
            member = named if named and named.strip() else self._crew.member(event.agent)
        live = _Live(event.role, event.message_type, event.agent, event.language, member)
        self._live[event.message_id] = live
        role: Literal["user", "assistant"] = "user" if event.role is Role.USER else "assistant"
        entry = Entry(event.message_id, role, self._tail())
        self._append(entry)
        if role == "assistant" and event.parent_id is None:  # a worker speaks for the supervisor
            self._see_speaker(event.agent, before=event.message_id)
        self._render_live(event.message_id, live)

    def _delta(self, event: TextDelta) -> None:
        live = self._live.get(event.message_id)
        if live is None:
            return
        if event.channel == "reasoning":
            live.reasoning.append(event.delta)
            self._reasoning(event.message_id, "".join(live.reasoning), pending=True)
            if live.retrying:  # the model answers: the wait is over
                live.retrying = ""
                self._render_live(event.message_id, live)
        else:
            live.content.append(event.delta)
            live.retrying = ""
            self._render_live(event.message_id, live)

    def _retrying(self, event: ModelRetrying) -> None:
        """Say, in the reply being written, why it has not begun (a newer notice replaces
        the last one)."""
        live = self._live.get(event.message_id)
        if live is None or live.content:
            return
        live.retrying = retry_words(event)
        self._render_live(event.message_id, live)

    def _render_live(self, message_id: str, live: _Live) -> None:
        entry = self._by_key.get(message_id)
        if entry is None:
            return
        if live.retrying:
            body = f'<span class="ga-retry">{escape_html(live.retrying)}</span>'
        else:
            body = body_markdown(live.type, "".join(live.content), live.language, ())
        top = header(live.agent, self._icons, live.crew_member) if entry.role == "assistant" else ""
        text = top + body
        entry.set(text.rstrip("\n"))
        self.version += 1

    def _reasoning(self, message_id: str, text: str, *, pending: bool) -> None:
        key = f"{message_id}:reasoning"
        entry = self._by_key.get(key)
        if entry is None:
            anchor = self._by_key[message_id].anchor if message_id in self._by_key else self._tail()
            entry = self._append(
                Entry(key, "assistant", anchor, metadata={"title": "Reasoning"}),
                before=message_id,
            )
        entry.set(escape_html(text), status="pending" if pending else "done")
        self.version += 1

    def _render_message(self, message: Message, index: int) -> None:
        entry = self._by_key.get(message.id)
        # An agent's hand-over (plan step, crew turn, a supervisor's task) is not the person's
        # message: it is shown on the agents' side, and its writer is not a new speaker.
        handover = is_handover(message)
        role: Literal["user", "assistant"] = (
            "user" if message.role is Role.USER and not handover else "assistant"
        )
        if entry is None:
            entry = self._append(Entry(message.id, role, index))
            speaks = message.type is not MessageType.CONFIRMATION and not handover
            if role == "assistant" and speaks:
                self._see_speaker(message.agent, before=message.id)
            self._handed_over = self._handed_over or handover
        entry.anchor = index
        entry.role = role
        member = self._crew.seen(message, person=role == "user")
        entry.set(message_text(message, icons=self._icons, link=self._media, crew_member=member))
        error = failure_of(message)
        if error is not None and error in self._error_notes:  # it says the error itself now
            self._remove(self._error_notes.pop(error))
        if role == "user" and message.metadata.get(UNANSWERED) is True:
            self._unanswered(entry)
        if message.reasoning:
            self._reasoning(message.id, message.reasoning, pending=False)
            self._by_key[f"{message.id}:reasoning"].anchor = index
        self.version += 1

    def _unanswered(self, message: Entry) -> None:
        """The note under a message of the person's a Stop left unanswered: an entry of its
        own on the app's side, right after the message (and kept or cut with it)."""
        key = f"{message.key}:unanswered"
        note = self._by_key.get(key)
        if note is None:
            note = Entry(key, "assistant", message.anchor, UNANSWERED_MARK)
            self._by_key[key] = note
            self._entries.insert(self._entries.index(message) + 1, note)
        note.anchor = message.anchor


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _key(event: ErrorEvent) -> tuple[str, str]:
    return event.code, event.message
