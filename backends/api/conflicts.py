"""Requests that are well formed but clash with what a session is doing: 409 Conflict.

The API keeps three answers apart (see `errors`): 404 for what does not exist (an unknown
session, another user's, an approval this session never asked), 400 for a request that
breaks the contract, and 409 for one that was fine a moment ago or will be again: an
approval already answered (by another tab, another client, the timeout or the end of the
turn), a retry, edit or clear while a turn is running or while another one is still being
made. The message says what happened and what to do.
"""

from __future__ import annotations

from backends.api.errors import ApiError, conflict, not_found
from gui_agent.interpreter import Interpreter
from schema import ApprovalRequested, ApprovalResolved, MessageType

EDITING = "retry, edit or clear of this conversation"


def approval_closed(interpreter: Interpreter, approval_id: str) -> ApiError:
    """Why an answer to `approval_id` was not taken: 409 when this session asked it and it
    is no longer open, naming how it was closed when that is known; 404 when it never
    asked it (or it is so old that neither the history nor the event buffer holds it)."""
    if any(open_.approval_id == approval_id for open_ in interpreter.pending_approvals):
        return conflict(
            f"approval {approval_id!r} was already answered; the answer is being applied"
        )
    for message in reversed(interpreter.session.history):
        if (
            message.type is MessageType.CONFIRMATION
            and message.metadata.get("approval_id") == approval_id
        ):
            decision = message.metadata.get("decision", "answered")
            by = message.metadata.get("by", "user")
            return conflict(_already(approval_id, str(decision), str(by)))
    for event in reversed(interpreter.events_since(0)):
        if isinstance(event, ApprovalResolved) and event.approval_id == approval_id:
            return conflict(_already(approval_id, event.decision.value, event.by))
        if isinstance(event, ApprovalRequested) and event.approval_id == approval_id:
            return conflict(f"approval {approval_id!r} is no longer open")
    return not_found(f"no approval {approval_id!r} in this session")


def _already(approval_id: str, decision: str, by: str) -> str:
    who = {"user": "by a person", "policy": "by policy", "timeout": "because nobody answered"}
    return (
        f"approval {approval_id!r} was already answered: {decision} "
        f"{who.get(by, 'by ' + by)}; nothing was changed"
    )


def turn_running(session_path: str) -> ApiError:
    """A retry, edit or clear while a turn runs."""
    return conflict(
        f"a turn is running in this session; stop it first (POST {session_path}/stop) or "
        "wait until it ends"
    )


def edit_in_progress() -> ApiError:
    """A second retry, edit or clear while the first is still being made (a double click)."""
    return conflict(f"another {EDITING} is still in progress; try again when it is done")
