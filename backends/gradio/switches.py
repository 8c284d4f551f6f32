"""Where the agent switches a session's recent events announced go in a view rebuilt from
its history. Pure.

A switch ("Switched to THOUGHT from AGENT_EXECUTOR (picked by the person)") is an event,
not a message: the history does not hold it. A view rebuilt from the history alone shows a
switch only where another role's reply begins, without its reason, and after the person's
message rather than before it. The session's event buffer holds its recent events, so a
switch still in it is put back where a tab that watched it live shows it: before the first
history message that came after it, or after the last one.

Where this differs from a live view: a switch followed by a retry or an edit that cut the
history back to before it stays, before the re-run (a live tab drops it); a clear drops it,
as live. A switch no longer in the buffer (an older one, or one from before a restart) is
not known: the rebuilt view marks that change of speaker without a reason, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from schema import AgentSwitched, Event, Message, MessageCompleted, MessageStarted, SessionUpdated

__all__ = ["placed_switches"]


def placed_switches(
    events: Sequence[Event], history: Sequence[Message]
) -> dict[int, list[AgentSwitched]]:
    """The switches among `events` (in order) that a view of `history` shows, by the index
    of the history message each stands before (`len(history)`: after the last one)."""
    index = {message.id: number for number, message in enumerate(history)}
    seen: set[str] = set()
    placed: dict[int, list[AgentSwitched]] = {}
    waiting: list[AgentSwitched] = []  # switches no history message has come after yet
    for event in events:
        if isinstance(event, AgentSwitched):
            waiting.append(event)
        elif isinstance(event, MessageStarted | MessageCompleted):
            message_id = _message_id(event)
            if message_id in index and message_id not in seen:
                seen.add(message_id)
                if waiting:
                    placed.setdefault(index[message_id], []).extend(waiting)
                    waiting = []
        elif isinstance(event, SessionUpdated) and event.fields.get("history_length") == 0:
            placed, waiting = {}, []  # cleared: nothing before it is shown
    if waiting:
        placed.setdefault(len(history), []).extend(waiting)
    return placed


def _message_id(event: MessageStarted | MessageCompleted) -> str:
    return event.message_id if isinstance(event, MessageStarted) else event.message.id
