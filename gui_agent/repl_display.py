"""How the terminal chat shows what happens: events as lines of text, approval questions.

Pure text: nothing here writes. `format_event` says how one event reads in the terminal;
`EventLines` wraps it for one chat shown, knowing what was shown already (a call's output as
it ran, a reply's text as it streamed). `approval_question` shows what a person is asked to
allow exactly as it will run, and `parse_decision` reads their answer (only a whole
`y`/`yes` or `s`/`session` allows); `piped_answer` reads one from a pipe, and says what
it decided.

A prompt an agent or the app wrote in the person's place says who handed the work on, in
the words the pages use (`wording.prompt_label`): "Plan step 1/3: ...", "Crew, over to the
reviewer", "Task for Executor". AutoChat's prompts are said by the AutoChat turn line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from gui_agent.agents.model_call import FILTERED
from gui_agent.agents.planner import PLAN_LEFT
from gui_agent.agents.tool_step import NOT_RUN
from gui_agent.live_rows import OutputRows
from gui_agent.retry_words import retry_words
from gui_agent.turn_end import PRINTED_BY_THEN, UNANSWERED
from gui_agent.wording import (
    autochat_stopped,
    counted,
    prompt_label,
    role_title,
    speaker_title,
)
from schema import (
    AgentSwitched,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    AutoChatStopped,
    AutoChatTurn,
    ErrorEvent,
    Event,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    MessageType,
    ModelRetrying,
    Role,
    RunFinished,
    RunOutcome,
    TextDelta,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
    UsageReported,
)
from schema.messages import CREW_SPEAKER

APPROVAL_PROMPT = "  allow? [y]es once / [s] for this chat / [N]o: "
CUT_OFF_NOTE = "cut off at the model's output limit: raise max_tokens or say 'continue'"
FILTERED_NOTE = (
    "stopped by the provider's content filter (or the model declined): rephrase, or pick "
    "another model"
)
UNANSWERED_NOTE = "the turn it waited for was stopped before the agent read it; send it again"
"""Said of a message the person sent during a turn that was then stopped."""


class EventLines:
    """`format_event`, knowing what was shown already. Calls that show their output as it
    comes (`tool_call_output`): that output is shown then, under the call, and such a
    call's result then only says how it ended (run_python's exit status) instead of
    repeating it. Replies: one whose text did not stream (a role without tools that asked
    for one gets a note instead, written whole) is shown when it is complete, after its
    label; one that streamed is not shown again. One per chat shown."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._live: dict[str, OutputRows] = {}
        """Calls whose output is being shown, with what of it was shown (`OutputRows`)."""
        self._line_ended = False
        """The last text shown was output that ended its line: the next need not begin one."""
        self._streamed: dict[str, bool] = {}
        """Replies started and not complete: whether any of their text streamed."""
        self._labelled: str | None = None
        """The reply whose label ("[Thought] ") is the last thing shown: its text goes on
        after it."""

    def format(self, event: Event) -> str | None:
        text = self._text(event)
        if not text:
            return text
        if self._line_ended and not isinstance(event, ToolCallOutput):
            text = text.removeprefix("\n")
        self._line_ended = isinstance(event, ToolCallOutput) and text.endswith("\n")
        # (a retry's notice ends with the label again, for the text to come)
        started = event if isinstance(event, MessageStarted | ModelRetrying) else None
        self._labelled = started.message_id if started is not None else None
        return text

    def _text(self, event: Event) -> str | None:
        if isinstance(event, MessageStarted):
            self._streamed[event.message_id] = False
        elif isinstance(event, TextDelta) and event.channel == "content" and event.delta.strip():
            self._streamed[event.message_id] = True
        if isinstance(event, ToolCallOutput):
            return self._output(event)
        if not isinstance(event, MessageCompleted):
            return format_event(event)
        message = event.message
        streamed = self._streamed.pop(message.id, None)
        rows = self._live.pop(message.tool_call_id or "", None)
        if message.role is Role.TOOL and rows is not None:
            # its output was shown as it came: say only how it ended (after the last
            # drawing of a row drawn again, if it was not shown yet)
            if isinstance(status := message.metadata.get("status"), str):
                return f"{rows.flush()}\n  ┆ {status}"
            if message.status is MessageStatus.INTERRUPTED and PRINTED_BY_THEN in message.content:
                return f"{rows.flush()}\n  ┆ {message.content.split(PRINTED_BY_THEN, 1)[0]}"
        if not streamed and _written_whole(message):
            if self._labelled == message.id:  # its label was shown, nothing after it
                return message.content
            return f"\n[{_speaker(message)}] {message.content}"
        return format_event(event)

    def _output(self, event: ToolCallOutput) -> str:
        rows = self._live.get(event.call_id)
        shown = ""
        if rows is None:
            rows = self._live[event.call_id] = OutputRows(LIVE_MARK, clock=self._clock)
            shown = "\n  ┆ console:\n"
        text = event.text
        if event.omitted:  # (on a row of its own: what was left out ended the open row)
            note = f"…[{counted(event.omitted, 'character')} not shown]…\n"
            text = ("" if rows.ended else "\n") + note + text
        return shown + rows.show(text)


LIVE_MARK = "  ┆ "
"""What each line of a tool's output starts with in the terminal."""


def format_event(event: Event) -> str | None:
    """How the terminal shows one event; None for events it does not print."""
    if isinstance(event, MessageStarted):  # (a crew member's by name, as the pages say it)
        return f"\n[{speaker_title(event.agent, event.speaker) or event.role.value}] "
    if isinstance(event, TextDelta):
        return event.delta if event.channel == "content" else None
    if isinstance(event, MessageCompleted):
        message = event.message
        if message.role is Role.TOOL:
            label = "console" if message.type is MessageType.CONSOLE else message.name or "tool"
            body = _shown_output(message.content)
            return f"\n  ┆ {label}:\n" + "\n".join("  ┆ " + line for line in body.splitlines())
        if message.role is Role.ASSISTANT and message.status.value != "complete":
            return f"  [{message.status.value}]"
        if message.role is Role.ASSISTANT and message.metadata.get("cut_off"):
            return f"\n  [{CUT_OFF_NOTE}]"
        if message.role is Role.ASSISTANT and message.metadata.get(FILTERED):
            return f"\n  [{FILTERED_NOTE}]"
        if message.role is Role.ASSISTANT and _said_whole(message):
            return f"\n[{_speaker(message)}] {message.content}"
        if message.role is Role.USER and message.metadata.get(UNANSWERED) is True:
            return f"\n  (not answered: {_gist(message.content)}: {UNANSWERED_NOTE})"
        if message.role is Role.USER:
            return _handed_on(message)
        return None
    if isinstance(event, ToolCallStarted):
        return f"\n  → {event.call.name}({event.call.arguments})"
    if isinstance(event, ToolCallFinished):
        result = event.result
        if result.metadata.get(NOT_RUN):
            return f"\n  ✗ {result.name} (not run)"
        mark = "✗" if result.is_error else "✓"
        return f"\n  {mark} {result.name} ({result.duration_ms:.0f} ms)"
    if isinstance(event, ApprovalResolved):
        return f"\n  approval: {event.decision.value} ({_resolved_by(event)})"
    if isinstance(event, AgentSwitched):
        return f"\n  ⇄ agent: {role_title(event.to_agent)}"
    if isinstance(event, UsageReported):
        return None
    if isinstance(event, ErrorEvent):
        return f"\n  ! {event.code}: {event.message}"
    if isinstance(event, RunFinished):
        return _run_finished(event)
    if isinstance(event, AutoChatTurn):
        return f"\n  ↻ AutoChat turn {event.turn}/{event.max_turns}"
    if isinstance(event, AutoChatStopped):
        return f"\n  ↻ {autochat_stopped(event.turns, event.reason, event.detail)}\n"
    if isinstance(event, ModelRetrying):
        # On the reply's label row (nothing streamed yet), then the label again for its text.
        who = role_title(event.agent) if event.agent else Role.ASSISTANT.value
        return f"⟳ {retry_words(event)}\n[{who}] "
    return None


def _speaker(message: Message) -> str:
    """The label a message's text shows under: the crew member who wrote it ("Crew ·
    reviewer"), else its agent's role, else its role."""
    return speaker_title(message.agent, message.metadata.get(CREW_SPEAKER)) or message.role.value


def _written_whole(message: Message) -> bool:
    """A complete reply with text that `format_event` has no note of its own for: shown
    whole when none of it streamed."""
    return (
        message.role is Role.ASSISTANT
        and message.type is MessageType.MESSAGE
        and message.status is MessageStatus.COMPLETE
        and bool(message.content.strip())
        and not message.metadata.get("cut_off")
        and not message.metadata.get(FILTERED)
    )


def _handed_on(message: Message) -> str | None:
    """The line that says an agent or the app handed the work on with `message` (written
    in the person's place: a plan step, a crew's hand-over, a supervisor's task); None for
    the person's own message, and for AutoChat's prompt (its turn line says it)."""
    label = prompt_label(message.metadata)
    if not label or message.metadata.get("autochat"):
        return None
    step = message.metadata.get("step")
    if isinstance(step, str) and step.strip():
        return f"\n  ⇢ {label}: {_shortened(step)}"
    return f"\n  ⇢ {label}"


def _resolved_by(event: ApprovalResolved) -> str:
    """Who settled an approval: the person, a timeout, or what ended it otherwise (a policy's
    note: the turn was stopped, by the person's Ctrl-C or /stop too, so it says so)."""
    if event.by == "policy" and event.note and event.note.strip():
        return _shortened(event.note)
    return event.by


def _said_whole(message: Message) -> bool:
    """An agent's note written whole, never streamed (so only its completion shows it): the
    step limit reached, a plan the person's message stopped."""
    return bool(message.metadata.get("truncated")) or message.metadata.get("note") == PLAN_LEFT


SHOWN_OUTPUT_CHARS = 2000
"""How much of a tool's output the terminal shows (the model and the history get it all)."""


def _shown_output(text: str) -> str:
    """A tool's output as the terminal shows it: the start, and how much was left out."""
    if len(text) <= SHOWN_OUTPUT_CHARS:
        return text
    rest = text[SHOWN_OUTPUT_CHARS:]
    lines = rest.count("\n") + (not rest.endswith("\n"))
    return (
        f"{text[:SHOWN_OUTPUT_CHARS]}…\n[{counted(len(rest), 'more character')} "
        f"({counted(lines, 'line')}) not shown here]"
    )


def _gist(text: str, limit: int = 60) -> str:
    """A message as the person will know it again: its first line, quoted, shortened."""
    return repr(_shortened(text, limit))


def _shortened(text: str, limit: int = 100) -> str:
    """The first line of `text`, cut to `limit` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _run_finished(event: RunFinished) -> str:
    """How a turn ended. A failed turn's detail is the error the `! code: message` line
    above has just shown (every failure says one first): it is not said twice."""
    if event.outcome is RunOutcome.ERROR or not event.detail:
        return f"\n  ({event.outcome.value})\n"
    return f"\n  ({event.outcome.value}: {event.detail})\n"


ALLOW_ONCE_ANSWERS: Final = frozenset({"y", "yes"})
ALLOW_SESSION_ANSWERS: Final = frozenset({"s", "session"})
"""Allow for the rest of the chat: the question offers `s` ("for this chat"); `session`,
the word it offered before, still answers (scripts that pipe it)."""
DENY_ANSWERS: Final = frozenset({"n", "no"})
DECISION_WORDS: Final[Mapping[ApprovalDecision, str]] = MappingProxyType(
    {
        ApprovalDecision.ALLOW_ONCE: "allowed once",
        ApprovalDecision.ALLOW_SESSION: "allowed for this chat",
        ApprovalDecision.DENY: "denied",
    }
)
"""What an answer read from a pipe decided, said after the question (`piped_answer`)."""
EMPTY_ANSWER: Final = "(empty line)"
NOT_AN_ANSWER: Final = "denied: not y, s or n, so this line is kept as your next message"
"""Said after the question of a line read from a pipe that is no answer (`piped_answer`)."""
ECHO_CHARS: Final = 60
"""How much of a line read from a pipe is shown after the question it answered."""


def is_answer(line: str) -> bool:
    """Whether `line` is one of the answers the question offers (`y`/`yes`, `s`/`session`,
    `n`/`no`, any case) or empty (Enter: the default, No)."""
    choice = line.strip().lower()
    return not choice or choice in ALLOW_ONCE_ANSWERS | ALLOW_SESSION_ANSWERS | DENY_ANSWERS


def piped_answer(line: str) -> tuple[ApprovalDecision, str, bool]:
    """A line read from a pipe at an approval question: the decision, what to show after
    the question (nobody saw the line typed: the line, and what it decided), and whether
    the line is kept as the next message. A script's line that is no answer
    (`is_answer`) is a message it meant to send next: the call is denied, the line kept."""
    shown = _shortened(line, ECHO_CHARS) or EMPTY_ANSWER
    if not is_answer(line):
        return ApprovalDecision.DENY, f"{shown} → {NOT_AN_ANSWER}", True
    decision = parse_decision(line)
    return decision, f"{shown} → {DECISION_WORDS[decision]}", False


def parse_decision(answer: str | None) -> ApprovalDecision:
    """`y` or `yes` allows once, `s` or `session` for the chat (any case); anything
    else, or end of input, denies. Whole words only: `stop`, `sure` or `skip` deny."""
    choice = (answer or "").strip().lower()
    if choice in ALLOW_ONCE_ANSWERS:
        return ApprovalDecision.ALLOW_ONCE
    if choice in ALLOW_SESSION_ANSWERS:
        return ApprovalDecision.ALLOW_SESSION
    return ApprovalDecision.DENY


# Bidirectional embeddings, overrides and isolates: they reorder how a line is shown, so the
# code an approval shows could read differently from the code that runs ("Trojan Source").
_BIDI_CONTROLS: Final = {
    code: f"<U+{code:04X}>" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def approval_question(request: ApprovalRequested) -> str:
    """What a person is asked to allow, shown exactly: no character in it can reorder or
    hide what will run (terminal controls are made visible when it is written out)."""
    return f"\n  ? {request.summary}\n{request.detail}\n".translate(_BIDI_CONTROLS)
