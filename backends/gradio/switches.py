"""Where the notes a session's recent events announced go in a view rebuilt from its
history. Pure.

A note is what the chat shows of an event that is not a message: an agent switch
("Switched to THOUGHT from AGENT_EXECUTOR (picked by the person)"), an error ("Error
(model_error): …"), why AutoChat stopped, a budget that ended a turn. The history does not
hold them. A view rebuilt from the history alone (after every send, a reload, another tab)
shows a switch only where another role's reply begins, without its reason, and after the
person's message rather than before it; and it shows no error, no AutoChat stop and no
budget stop at all: a failed reply is a bare "[error]". The session's event buffer holds
its recent events, so a note still in it is put back where a tab that watched it live shows
it: before the first history message that came after it, or after the last one.

As live, a retry or an edit drops the notes that came after a message it cut (the error of
the failed reply a retry replaced, the switch made before the message an edit replaced),
and keeps those that came after a message it kept; a clear drops them all. (A switch it
drops is shown again by the message run again, which keeps it: `kept_switch`.) A note no
longer in the buffer (an older one, or one from before
a restart) is not known, with one exception: a role the person picked is kept with the
message that next started a turn (its metadata "switched", `kept_switch`), so the view shows
that switch, with its reason, before that message, however old it is (once: not again when
the buffered event said it already). Any other change of speaker is marked without a
reason, and a failed reply only as failed.
"""

from __future__ import annotations

from collections.abc import Sequence

from schema import (
    AgentName,
    AgentSwitched,
    AutoChatStopped,
    ErrorEvent,
    Event,
    Message,
    MessageCompleted,
    MessageStarted,
    Role,
    RunFinished,
    RunOutcome,
    SessionUpdated,
)

__all__ = ["is_note", "kept_switch", "placed_notes"]


def is_note(event: Event) -> bool:
    """The chat shows this event as a line of its own (see `ChatView.apply`)."""
    if isinstance(event, RunFinished):
        return event.outcome is RunOutcome.BUDGET
    return isinstance(event, AgentSwitched | ErrorEvent | AutoChatStopped)


def placed_notes(events: Sequence[Event], history: Sequence[Message]) -> dict[int, list[Event]]:
    """The notes among `events` (in order) that a view of `history` shows, by the index of
    the history message each stands before (`len(history)`: after the last one)."""
    index = {message.id: number for number, message in enumerate(history)}
    seen: set[str] = set()
    placed: dict[int, list[Event]] = {}
    # Notes no history message has come after yet, each with the message completed last
    # before it (None: none in the buffer), which says whether a cut dropped it.
    waiting: list[tuple[Event, str | None]] = []
    last: str | None = None
    for event in events:
        if is_note(event):
            waiting.append((event, last))
        elif isinstance(event, MessageStarted | MessageCompleted):
            message_id = _message_id(event)
            if isinstance(event, MessageCompleted):
                last = message_id
            if message_id in index and message_id not in seen:
                seen.add(message_id)
                if waiting:
                    placed.setdefault(index[message_id], []).extend(n for n, _ in waiting)
                    waiting = []
        elif isinstance(event, SessionUpdated) and "history_length" in event.fields:
            length = int(event.fields["history_length"])
            if length <= 0:
                placed, waiting = {}, []  # cleared: nothing before it is shown
            else:  # cut back to `length` messages: a note after a message cut goes too
                waiting = [
                    (note, after)
                    for note, after in waiting
                    if after is None or index.get(after, length) < length
                ]
    if waiting:
        placed.setdefault(len(history), []).extend(n for n, _ in waiting)
    return placed


def _message_id(event: MessageStarted | MessageCompleted) -> str:
    return event.message_id if isinstance(event, MessageStarted) else event.message.id


def kept_switch(message: Message) -> AgentSwitched | None:
    """The role switch a message that started a turn keeps (`metadata["switched"]`: the
    person picked another role since the turn before), as the event that announced it; None
    when it keeps none, or what it keeps is not a switch between known roles (an imported
    chat may hold anything)."""
    kept = message.metadata.get("switched")
    if message.role is not Role.USER or not isinstance(kept, dict):
        return None
    to_agent, from_agent = _agent(kept.get("to_agent")), _agent(kept.get("from_agent"))
    if to_agent is None:
        return None
    reason = kept.get("reason")
    return AgentSwitched(
        from_agent=from_agent,
        to_agent=to_agent,
        reason=reason if isinstance(reason, str) else "",
        at=message.created_at,
    )


def _agent(value: object) -> AgentName | None:
    if not isinstance(value, str):
        return None
    try:
        return AgentName(value)
    except ValueError:
        return None
