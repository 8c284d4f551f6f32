"""What an import did, in plain words, for every front end: the messages it brought, what of
the file it did not carry over (`Imported.reset`, the API's `reset`), and what it repaired so
any model can continue the chat (`HistoryRepairs`, the API's `repairs`). Only what happened
is said. The API's import answer carries it (`summary`), so every front end says the same."""

from __future__ import annotations

from collections.abc import Sequence

from gui_agent.history_repair import HistoryRepairs
from gui_agent.wording import counted

__all__ = ["RESET_WORDS", "import_summary"]

RESET_WORDS = {
    "settings.permissions": "the tools it allowed without asking (each asks you again)",
    "autochat.enabled": "AutoChat being on (switch it on again if you want it)",
}
"""What an import's `reset` names, in plain words."""


def import_summary(message_count: int, reset: Sequence[str], repairs: HistoryRepairs) -> str:
    said = [f"Imported {counted(message_count, 'message')} as a new chat."]
    words = [RESET_WORDS.get(name, name) for name in reset]
    if words:
        said.append(f"For safety, an import does not carry over {' or '.join(words)}.")
    repaired = _repairs(repairs)
    if repaired:
        said.append(f"Repaired so that any model can continue the chat: {'; '.join(repaired)}.")
    return " ".join(said)


def _repairs(repairs: HistoryRepairs) -> list[str]:
    said = []
    if count := repairs.orphan_results_dropped:
        were = _verb(count, "was", "were")
        said.append(f"{counted(count, 'tool result')} that answered no call {were} left out")
    if count := repairs.unanswered_calls_answered:
        said.append(
            f"{counted(count, 'tool call')} that had no result "
            + _verb(
                count,
                "is marked unanswered (it may have run: check before running it again)",
                "are marked unanswered (they may have run: check before running them again)",
            )
        )
    if count := repairs.system_messages_made_notes:
        said.append(
            f"{counted(count, 'system message')} {_verb(count, 'is', 'are')} kept as a note, "
            "shown but never sent to the model"
        )
    return said


def _verb(count: int, one: str, more: str) -> str:
    return one if count == 1 else more
