"""Names that moved out of `gui_agent.export` and `gui_agent.agents.executor` when each was
split by idea still import from where they were, as the same objects."""

from __future__ import annotations

import importlib

import pytest

MOVED = {
    "gui_agent.export": {
        "gui_agent.export_format": [
            "FORMAT",
            "VERSION",
            "MAX_IMPORT_BYTES",
            "MAX_IMPORT_MESSAGES",
            "MAX_IMPORT_EVENTS",
            "MAX_IMPORT_DEPTH",
            "ExportDocument",
            "export_session",
            "parse_export",
            "size_text",
            "too_large_to_import",
        ],
        "gui_agent.history_repair": ["HistoryRepairs", "sendable_history"],
    },
    "gui_agent.agents.executor": {
        "gui_agent.agents.model_call": [
            "Turn",
            "model_step",
            "memory_event",
            "reply_metadata",
            "budget_spent",
            "charge_unfinished",
        ],
        "gui_agent.agents.replies": ["valid_response", "distinct_calls", "without_calls"],
        "gui_agent.agents.tool_step": [
            "ask_person",
            "completes",
            "cut_off_call",
            "denial_text",
            "run_one",
            "run_parallel",
            "safe_args",
            "session_denial",
            "with_allow_note",
        ],
    },
}
CASES = [
    (old, new, name)
    for old, homes in MOVED.items()
    for new, names in homes.items()
    for name in names
]


@pytest.mark.parametrize(("old", "new", "name"), CASES)
def test_a_moved_name_imports_from_its_old_module_as_the_same_object(
    old: str, new: str, name: str
) -> None:
    assert getattr(importlib.import_module(old), name) is getattr(
        importlib.import_module(new), name
    )
    assert name in importlib.import_module(old).__all__


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_name_an_old_module_lists_resolves(old: str) -> None:
    module = importlib.import_module(old)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []
