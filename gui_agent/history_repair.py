"""An imported history made sendable to any model API, and a count of what that changed.

- SYSTEM messages become display-only notes: shown, never sent. A model reads a SYSTEM
  message in the history as an instruction, and instructions with that authority are not
  something a file may grant.
- A tool message that answers no call of the assistant message before it (an orphan, or a
  second answer to one call) is dropped: the APIs refuse it.
- A call left without a result is answered the way the interpreter answers the calls of a
  turn that ended: an error TOOL message, marked interrupted, saying it may have run.

See `gui_agent.export` for why each is done.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gui_agent.session import unanswered_call_result
from schema import Message, Role, ToolCall

__all__ = ["HistoryRepairs", "sendable_history"]


@dataclass(frozen=True, slots=True)
class HistoryRepairs:
    """What `sendable_history` changed: tool messages dropped as orphans, calls answered
    because they had no result, SYSTEM messages turned into display-only notes."""

    orphan_results_dropped: int = 0
    unanswered_calls_answered: int = 0
    system_messages_made_notes: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "orphan_results_dropped": self.orphan_results_dropped,
            "unanswered_calls_answered": self.unanswered_calls_answered,
            "system_messages_made_notes": self.system_messages_made_notes,
        }


def sendable_history(messages: Sequence[Message]) -> tuple[list[Message], HistoryRepairs]:
    """`messages` made safe to send to a model API, and what that changed (see the module
    docstring): SYSTEM messages made display-only notes, orphan tool messages dropped, calls
    without a result answered right after the results they have. Display-only messages are
    never sent, so they neither answer a call nor end a run of answers."""
    notes = sum(1 for m in messages if m.role is Role.SYSTEM and not m.display_only)
    out: list[Message] = []
    dropped = answered = 0
    caller: Message | None = None  # the newest sent message, when it calls tools
    open_calls: dict[str, ToolCall] = {}  # its calls still without a result
    for message in map(_as_note, messages):
        if message.display_only:
            out.append(message)
        elif message.role is Role.TOOL:
            if open_calls.pop(message.tool_call_id or "", None) is None:
                dropped += 1
            else:
                out.append(message)
        else:
            out.extend(_answer_missing(caller, open_calls.values()))
            answered += len(open_calls)
            caller, open_calls = message, {call.id: call for call in message.tool_calls}
            out.append(message)
    out.extend(_answer_missing(caller, open_calls.values()))
    answered += len(open_calls)
    return out, HistoryRepairs(dropped, answered, notes)


def _as_note(message: Message) -> Message:
    """A SYSTEM message as a display-only note; any other message as it is."""
    if message.role is not Role.SYSTEM or message.display_only:
        return message
    return message.model_copy(
        update={"metadata": {**message.metadata, "display_only": True, "imported_system": True}}
    )


def _answer_missing(caller: Message | None, calls: Iterable[ToolCall]) -> list[Message]:
    """Error TOOL messages for `calls` of `caller` that have no result, worded and marked as
    the interpreter marks the calls of a turn that ended (interrupted, `is_error`)."""
    if caller is None:
        return []
    return [
        unanswered_call_result(
            call,
            "No result: the imported session held none for this call. It may have run, "
            "in part or in full; check before running it again.",
            agent=caller.agent,
            was_running=True,
            created_at=caller.created_at,
        )
        for call in calls
    ]
