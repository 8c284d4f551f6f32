"""What the Streamlit front end shows of a chat, without Streamlit: the history as entries
(who speaks, what kind of content, the tool calls a reply made with their results), and a
reply being streamed as events arrive, with what its running tool calls print as they run.
The app (`backends.streamlit.app`) only draws these.

Every message type is shown: text as Markdown, code with its language, console output as
plain text, images, tool calls with their arguments and results, and confirmations (what
was allowed or denied) as a note. Tool results are folded into the call that asked for
them, as on the Gradio page.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from backends.api.responses import MemoryAnswer
from gui_agent.agents.crew import CREW_SPEAKER
from gui_agent.agents.model_call import FILTERED
from gui_agent.live_output import SHOWN_CHARS, latest_output
from gui_agent.retry_words import retry_words
from gui_agent.session import is_handover
from gui_agent.turn_end import UNANSWERED
from gui_agent.wording import (
    confirmation_words,
    counted,
    crew_title,
    prompt_label,
    role_title,
    speaker_title,
)
from schema import (
    AgentName,
    ImagePart,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    MessageType,
    ModelRetrying,
    Role,
    RunFinished,
    StreamingReply,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
    Usage,
)

__all__ = [
    "FILTERED_NOTE",
    "LIVE_OUTPUT_CHARS",
    "UNANSWERED_NOTE",
    "CallView",
    "Entry",
    "LivePart",
    "LiveReply",
    "entries_of",
    "hidden_line",
    "image_source",
    "memory_lines",
    "plain_markdown",
    "pretty_arguments",
    "safe_markdown",
    "unanswered_calls",
    "usage_line",
]

FILTERED_NOTE = (
    "Stopped by the provider's content filter (or the model declined): what it wrote before "
    "is kept. Rephrase the request, or pick another model."
)
"""Under a reply stopped by the content filter, or refused (metadata `filtered`)."""

UNANSWERED_NOTE = (
    "Not answered: the turn it waited for was stopped before the agent read it. "
    "Send it again to have it answered."
)
"""Under a message of the person's that a Stop left unanswered (`turn_end.UNANSWERED`:
queued behind the stopped turn, or sent just before it began)."""


LIVE_OUTPUT_CHARS = SHOWN_CHARS
"""The most of a running call's output the page keeps and shows: its latest characters."""


def hidden_line(count: int) -> str:
    """Said above a running call's output when `count` older characters are not shown (the
    React front end says the same: keep the two alike)."""
    return f"… {counted(count, 'character')} not shown …"


@dataclass(slots=True)
class CallView:
    """One tool call, and its result once there is one; while it runs, what it has printed
    so far (`output`, its latest LIVE_OUTPUT_CHARS, after `hidden` characters not shown)."""

    call_id: str
    name: str
    arguments: str
    result: str | None = None
    is_error: bool = False
    not_run: bool = False
    output: str = ""
    hidden: int = 0

    def printed(self, text: str, omitted: int) -> None:
        """Take in a `tool_call_output` (see `latest_output`)."""
        self.output, self.hidden = latest_output(self.output, self.hidden, text, omitted)

    def forget_output(self) -> None:
        """The call is over: its result, not what it printed meanwhile, is what shows."""
        self.output, self.hidden = "", 0

    @property
    def label(self) -> str:
        if self.result is None:
            return f"{self.name} (running)"
        if self.not_run:
            return f"{self.name} (not run)"
        return f"{self.name} (error)" if self.is_error else self.name


@dataclass(slots=True)
class Entry:
    """One chat bubble: `role` is "user" or "assistant" (Streamlit's two avatars)."""

    role: str
    kind: MessageType
    text: str
    speaker: str = ""
    language: str | None = None
    reasoning: str | None = None
    images: tuple[ImagePart, ...] = ()
    calls: list[CallView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_IMAGE_SYNTAX = re.compile(r"!\[")


def safe_markdown(text: str) -> str:
    """`text` for `st.markdown` with its image syntax shown as written: a picture a model
    or a tool names by address would otherwise be fetched by the browser, telling that
    address who reads the chat. (Streamlit escapes raw HTML itself.)"""
    return _IMAGE_SYNTAX.sub(lambda _: "!\\[", text)


_MARKDOWN_SIGNS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def plain_markdown(text: str) -> str:
    """`text` shown as written where Streamlit reads Markdown (titles, labels, captions):
    every sign Markdown gives a meaning is escaped, so a chat title or a tool's name can
    neither format the page nor make it fetch a picture."""
    return _MARKDOWN_SIGNS.sub(r"\\\1", text)


def usage_line(usage: Usage) -> str:
    """The chat's tokens so far, in and out, and its model calls (as the page's usage panel
    says them)."""
    if not usage.requests:
        return "No model calls yet."
    estimated = " (estimated)" if usage.estimated else ""
    return (
        f"Tokens so far: {usage.input_tokens:,} in · {usage.output_tokens:,} out · "
        f"{counted(usage.requests, 'model call')}{estimated}"
    )


def memory_lines(memory: MemoryAnswer, history: Sequence[Message]) -> list[str]:
    """What the memory panel says: the window's size, what slid out, AutoChat's goal, then
    each message in the window (its role and the start of its text), as plain text."""
    estimated = " (estimated)" if memory.token_estimated else ""
    lines = [
        f"Context window: {counted(len(memory.message_ids), 'message')}, "
        f"{counted(memory.token_count, 'token')}{estimated}."
    ]
    if memory.dropped:
        lines.append(f"{counted(memory.dropped, 'older message')} slid out of the window.")
    if memory.goal:
        where = "pinned (re-inserted)" if memory.goal_pinned else "in the window"
        lines.append(f"Goal ({where}): {memory.goal}")
    else:
        lines.append("Goal: none pinned.")
    by_id = {message.id: message for message in history}
    for number, message_id in enumerate(memory.message_ids, start=1):
        message = by_id.get(message_id)
        text = " ".join(message.content.split()) if message else ""
        short = text if len(text) <= 80 else text[:79] + "…"
        lines.append(f"{number}. {message.role.value if message else '?'}: {short or '…'}")
    return lines


def pretty_arguments(arguments: str) -> str:
    """A call's JSON arguments indented, or as sent when they are not JSON."""
    try:
        return json.dumps(json.loads(arguments or "{}"), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def image_source(image: ImagePart) -> bytes | str:
    """The image's bytes for `st.image`, or what to say in its place: an image given by
    address is not fetched (see `safe_markdown`), and data that is not base64 is not one."""
    if image.data is None:
        return f"(an image at {image.url}, not loaded)"
    try:
        return base64.b64decode(image.data, validate=True)
    except (binascii.Error, ValueError):
        return "(an image whose data could not be read)"


def _speaker(message: Message, member: str | None = None) -> str:
    """Who wrote it: the role of an agent's message, or the crew member (`member`: "" for
    one not known yet, None for a message of no crew member's: `_CrewVoices`); for a user
    message the app or an agent wrote, which (as the Gradio page labels it)."""
    if message.role is not Role.USER:
        if member is not None:
            return crew_title(member)
        return role_title(message.agent) if message.agent else ""
    return prompt_label(message.metadata)


@dataclass(slots=True)
class _CrewVoices:
    """Which crew member wrote each reply of a history (`gui_agent.agents.crew`), as the
    Gradio page tells it (`backends.gradio.crew_voices`) as far as a history does.

    A crew's members make their model calls as roles (the default crew's doer as Executor,
    its reviewer as Thought). A reply a member writes is marked with its name
    (`CREW_SPEAKER`), one a Stop or an error ended too; a chat kept before that, or
    imported, may hold unmarked ones. While the crew's turn
    runs (one begun after a switch to the crew, or one a hand-over or a marked reply shows),
    such a reply is the member last seen speaking as its role (the hand-over before it
    names who goes on); after a message that starts a turn, the first to answer is the
    member that answered first last time. A switch to another role, kept by the message
    that starts the next turn (`switched`), makes the replies after it that role's again."""

    crew: bool
    """The turn being read is the crew's."""
    names: dict[str, str] = field(default_factory=dict)
    """The member last seen speaking as each role (named by a hand-over or a reply)."""
    first: tuple[str, str] | None = None
    """The member that answered first in the crew's last turn (role, name)."""
    opening: bool = False
    """A turn has started and no crew member has answered yet."""

    @classmethod
    def before(cls, history: Sequence[Message]) -> _CrewVoices:
        """What is known before the first of `history`: the crew speaks if the chat's first
        switch was away from the crew, or (a chat with no switch ran as one role) if a
        hand-over or a member's reply shows it. (Not the chat's role now: one picked and not
        used yet would relabel the history.)"""
        switches = (switch for message in history if (switch := _switch_of(message)))
        first = next(switches, None)
        if first is not None:
            return cls(crew=first.get("from_agent") == AgentName.CREW)
        shown = any(
            (message.role is Role.USER and message.metadata.get("crew_agent"))
            or message.metadata.get(CREW_SPEAKER)
            for message in history
        )
        return cls(crew=shown)

    def seen(self, message: Message) -> str | None:
        """Follow `message` and give the crew member who wrote it: None for a message of no
        crew member's, "" for a member not known yet."""
        if message.role is Role.USER:
            name, agent = message.metadata.get("crew_member"), message.metadata.get("crew_agent")
            if isinstance(name, str) and name.strip() and isinstance(agent, str):
                self.names[agent], self.crew = name, True  # a hand-over names who goes on
            elif not is_handover(message):  # a turn starts, as the role last switched to
                if (switch := _switch_of(message)) is not None:
                    self.crew = switch["to_agent"] == AgentName.CREW
                if self.first is not None:
                    agent, name = self.first
                    self.names[agent] = name
                self.opening = True
            return None
        if message.role is not Role.ASSISTANT or message.agent is None:
            return None
        writer = message.metadata.get(CREW_SPEAKER)
        if not isinstance(writer, str) or not writer.strip():
            return self.names.get(message.agent, "") if self.crew else None
        self.names[message.agent], self.crew = writer, True
        if self.opening:
            self.first, self.opening = (message.agent, writer), False
        return writer


def _switch_of(message: Message) -> dict[str, object] | None:
    """The role switch a message that starts a turn keeps (metadata `switched`; an imported
    chat's metadata may hold anything)."""
    switch = message.metadata.get("switched")
    if isinstance(switch, dict) and isinstance(switch.get("to_agent"), str):
        return switch
    return None


def _notes(message: Message) -> list[str]:
    notes = []
    if message.status is MessageStatus.INTERRUPTED:
        notes.append("Interrupted: the turn was stopped here.")
    elif message.status is MessageStatus.ERROR:
        notes.append("This reply ended with an error.")
    if message.metadata.get("cut_off"):
        notes.append('Cut off at the output limit (Max tokens): say "continue" for the rest.')
    if message.metadata.get(FILTERED) and message.role is Role.ASSISTANT:
        notes.append(FILTERED_NOTE)
    if message.metadata.get("truncated") and message.role is Role.ASSISTANT:
        notes.append("Stopped at the most steps one turn may take.")
    if message.metadata.get(UNANSWERED) is True:
        notes.append(UNANSWERED_NOTE)
    return notes


def unanswered_calls(history: Sequence[Message]) -> list[CallView]:
    """The calls of `history` without a result yet, in order: while a turn runs, the ones
    running (or waiting for approval)."""
    calls: dict[str, CallView] = {}
    for message in history:
        for call in message.tool_calls:
            calls[call.id] = _call_view(call)
        if message.role is Role.TOOL:
            calls.pop(message.tool_call_id or "", None)
    return list(calls.values())


def entries_of(history: list[Message], *, live: Collection[str] = ()) -> list[Entry]:
    """The history as chat entries, each tool result folded into the call that made it.
    `live`: calls a turn is running, shown with what they print by the live view instead
    (`LiveReply.following`), so not here too."""
    entries: list[Entry] = []
    calls: dict[str, CallView] = {}
    voices = _CrewVoices.before(history)
    for message in history:
        if message.role is Role.TOOL:
            view = calls.get(message.tool_call_id or "")
            if view is None:  # a result whose call is not shown: on its own
                entries.append(Entry("assistant", message.type, message.content))
                continue
            view.result = message.content
            view.is_error = bool(message.metadata.get("is_error"))
            view.not_run = bool(message.metadata.get("not_run"))
            continue
        # A worker's steps are display-only too, but they are the conversation: shown whole.
        if message.type is MessageType.CONFIRMATION or (
            message.metadata.get("display_only") and not message.metadata.get("delegated_by")
        ):
            # (a turn that failed before it wrote a reply keeps its error in an empty note)
            error = message.metadata.get("error")
            failed = f"Error: {error.get('message', '')}" if isinstance(error, dict) else ""
            note = message.content.strip() or failed or message.type.value
            decision = message.metadata.get("decision")
            if message.type is MessageType.CONFIRMATION and isinstance(decision, str):
                # what the approval decided, in words ("Allowed for this chat"), not its code
                by = message.metadata.get("by")
                note = confirmation_words(message.content.strip(), decision, by)
            if entries and entries[-1].role == "assistant":
                entries[-1].notes.append(note)
            else:
                entries.append(Entry("assistant", MessageType.CONFIRMATION, note))
            continue
        if message.role is Role.SYSTEM:
            continue  # the instructions, not the conversation
        entry = Entry(
            "user" if message.role is Role.USER else "assistant",
            message.type,
            message.content,
            speaker=_speaker(message, voices.seen(message)),
            language=message.language,
            reasoning=message.reasoning,
            images=message.images,
            notes=_notes(message),
        )
        for call in message.tool_calls:
            view = _call_view(call)
            calls[call.id] = view
            if call.id not in live:
                entry.calls.append(view)
        entries.append(entry)
    return entries


@dataclass(slots=True)
class LivePart:
    """One reply of a turn being written: who writes it, as the history heads it once it is
    kept (a crew member's "Crew · doer", else its role's), and its text so far."""

    speaker: str = ""
    text: str = ""


@dataclass(slots=True)
class LiveReply:
    """A turn as its events arrive: the replies being written (each headed by who writes
    it) and the calls being run, for the app to draw again after each event that changed
    it. The history, loaded again when the turn ends, is what stays."""

    parts: list[LivePart] = field(default_factory=list)
    reasoning: str = ""
    calls: list[CallView] = field(default_factory=list)
    replies: int = 0
    retrying: str = ""
    """Why the reply being written has not begun: the model is asked again (`retry_words`).
    Drawn under the text until the reply streams or is filed, or the turn ends."""

    @classmethod
    def following(
        cls,
        streaming: Sequence[StreamingReply],
        history: Sequence[Message] = (),
        running: Sequence[ToolCallOutput] = (),
    ) -> LiveReply:
        """The turn as a tab that comes mid-reply finds it (`SessionDetail.streaming`): the
        text so far and, while a reply's model is asked again, why it has not begun. That
        notice came before the detail's `last_seq`, where the events read next start: they
        do not say it again, and the first (often the only) one was never shown. The
        `history`'s calls without a result are running (the script ran again mid-call): they
        are shown here, with what they print, and not with the history (`entries_of`),
        beginning with what they printed up to `last_seq` (`SessionDetail.running_calls`)."""
        live = cls()
        for reply in streaming:
            speaker = speaker_title(reply.agent, reply.metadata.get(CREW_SPEAKER))
            live.parts.append(LivePart(speaker, reply.content))
            if reply.retrying is not None and not reply.content and not reply.reasoning:
                live.retrying = retry_words(reply.retrying)
        live.calls.extend(unanswered_calls(history))
        for printed in running:
            live.apply(printed)
        return live

    @property
    def text(self) -> str:
        """The text of the turn's replies so far, a blank line between two."""
        return "\n\n".join(part.text for part in self.parts if part.text)

    def apply(self, event: object) -> bool:
        """Take in one event; True when what is shown changed (a reply's heading shows with
        its first words)."""
        if isinstance(event, MessageStarted):
            self.replies += 1
            self.parts.append(LivePart(speaker_title(event.agent, event.speaker)))
            return self._drop_retry_line()
        if isinstance(event, TextDelta):
            if event.channel == "reasoning":
                self.reasoning += event.delta
            else:
                if not self.parts:  # (its start came before the events read here)
                    self.parts.append(LivePart())
                self.parts[-1].text += event.delta
            self.retrying = ""
            return True
        if isinstance(event, ModelRetrying):
            self.retrying = retry_words(event)
            return True
        if isinstance(event, RunFinished):  # nothing runs now: no call's output shows
            printed = [view for view in self.calls if view.output or view.hidden]
            for view in printed:
                view.forget_output()
            return self._drop_retry_line() or bool(printed)
        if isinstance(event, MessageCompleted) and self._drop_retry_line():
            return True
        if isinstance(event, ToolCallStarted):
            if any(view.call_id == event.call.id for view in self.calls):
                return False  # (known from the history already)
            self.calls.append(_call_view(event.call))
            return True
        if isinstance(event, ToolCallOutput):
            running = self._running(event.call_id)
            if running is None:
                return False
            running.printed(event.text, event.omitted)
            return True
        if isinstance(event, ToolCallFinished):
            for view in self.calls:
                if view.call_id == event.result.call_id:
                    view.result = event.result.content
                    view.is_error = event.result.is_error
                    view.not_run = bool(event.result.metadata.get("not_run"))
                    view.forget_output()
            return True
        return isinstance(event, MessageCompleted) and event.message.role is Role.TOOL

    def _running(self, call_id: str) -> CallView | None:
        """The view of running call `call_id`: shown since its start, or (begun before the
        events read here) taken from the history's calls without a result."""
        for view in self.calls:
            if view.call_id == call_id:
                return view if view.result is None else None
        return None

    def _drop_retry_line(self) -> bool:
        """Forget the retry line; True when one was shown."""
        shown, self.retrying = bool(self.retrying), ""
        return shown


def _call_view(call: ToolCall) -> CallView:
    return CallView(call.id, call.name, pretty_arguments(call.arguments))
