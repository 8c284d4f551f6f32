"""A tool's metadata is kept with its result, saved and sent in events: nested deeper than
the JSON readers take (a DOM tree, say) or too long, it is replaced by a note, so the
session stays saveable and its event stream readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connectors.scripted import ScriptedModel, call
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import SQLiteStore
from gui_agent.tools import ToolOutput, ToolRegistry, tool
from gui_agent.tools.execution import MAX_METADATA_DEPTH, _deeper_than
from schema import EVENT_ADAPTER, Role


def nested(levels: int) -> dict[str, Any]:
    tree: dict[str, Any] = {"tag": "span"}
    for _ in range(levels - 1):
        tree = {"tag": "div", "child": tree}
    return tree


@tool
def dom_snapshot(depth: int) -> ToolOutput:
    """A page's DOM as nested objects, with a small summary beside it."""
    return ToolOutput(
        content="snapshot taken",
        metadata={"dom": nested(depth), "nodes": depth, "shallow": nested(3)},
    )


@tool
def huge_metadata() -> ToolOutput:
    """Metadata far longer than a message should carry."""
    return ToolOutput(content="done", metadata={"blob": "x" * 2_000_000})


def test_depth_is_counted_in_levels_of_objects_and_lists() -> None:
    assert not _deeper_than("text", 1)
    assert not _deeper_than({"a": 1}, 1)
    assert _deeper_than({"a": [1]}, 1)
    assert not _deeper_than(nested(5), 5)
    assert _deeper_than(nested(6), 5)


async def test_metadata_too_deep_or_too_long_is_noted_and_the_session_saves(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            call("dom_snapshot", depth=300),
            call("dom_snapshot", depth=MAX_METADATA_DEPTH - 1),
            call("huge_metadata"),
            "Took the snapshots.",
        ]
    )

    def manager() -> SessionManager:
        return SessionManager(
            models=StaticCatalog(model),
            store=SQLiteStore(tmp_path / "chats.db"),
            workspace_root=tmp_path,
            tools_factory=lambda: ToolRegistry([dom_snapshot, huge_metadata]),
        )

    first = manager()
    await first.start()
    interpreter = await first.create("ada")
    events = [event async for event in interpreter.chat("snapshot the page")]
    for event in events:  # every event can be written and read back as JSON
        assert EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(event)) == event
    results = [m for m in interpreter.session.history if m.role is Role.TOOL]
    deep, kept, huge = (m.metadata for m in results)
    assert deep["dom"] == f"(not kept: nested more than {MAX_METADATA_DEPTH} levels deep)"
    assert deep["nodes"] == 300 and deep["shallow"] == nested(3), "the rest is kept"
    assert kept["dom"] == nested(MAX_METADATA_DEPTH - 1), "within the bound: kept as it is"
    assert "too long to keep" in huge["not_kept"] and "blob" not in huge
    history = list(interpreter.session.history)
    await first.close()

    again = manager()  # a restart: the chat reads back whole
    await again.start()
    reloaded = await again.get(interpreter.id, "ada")
    assert list(reloaded.session.history) == history
    await again.close()
