"""Imports that nest too deeply or hold broken surrogate escapes, and an export that goes
through an import, the SQLite store and a restart without changing what was said."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from connectors.scripted import ScriptedModel
from gui_agent import SessionManager, StaticCatalog
from gui_agent.exceptions import InvalidRequest
from gui_agent.export import (
    MAX_IMPORT_DEPTH,
    HistoryRepairs,
    export_session,
    parse_export,
    read_import,
    replay_events,
)
from gui_agent.store import SQLiteStore
from schema import (
    AgentName,
    ImagePart,
    Message,
    MessageStatus,
    MessageType,
    Role,
    SessionRecord,
    SessionSettings,
    ToolCall,
    Usage,
)

PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAC"
    "hwGA60e6kgAAAABJRU5ErkJggg=="
)


def manager(tmp_path: Path) -> SessionManager:
    return SessionManager(
        models=StaticCatalog(ScriptedModel([], name="scripted")),
        store=SQLiteStore(tmp_path / "sessions.db"),
        workspace_root=tmp_path / "work",
    )


def conversation() -> tuple[SessionRecord, list[Message]]:
    record = SessionRecord(
        owner="alice",
        title="Charts",
        agent=AgentName.CREW,
        settings=SessionSettings(model="scripted", temperature=0.3, system_prompt="Be exact."),
        usage=Usage(input_tokens=120, output_tokens=45, requests=3, estimated=True),
        goal="draw a chart",
    )
    call = ToolCall(id="call_1", name="run_python", arguments='{"code": "plot()"}')
    messages = [
        Message(role=Role.USER, content="plot this", images=(ImagePart(data=PIXEL),)),
        Message(
            role=Role.ASSISTANT,
            content="Plotting.",
            reasoning="matplotlib will do",
            agent=AgentName.CREW,
            tool_calls=(call,),
            metadata={"model": "scripted", "provider_data": {"x": [1, {"y": None}]}},
        ),
        Message(
            role=Role.TOOL,
            type=MessageType.CONSOLE,
            content="saved chart.png",
            tool_call_id="call_1",
            name="run_python",
            images=(ImagePart(data=PIXEL),),
            metadata={"is_error": False, "duration_ms": 12.5, "files_created": ["chart.png"]},
        ),
        Message(
            role=Role.ASSISTANT,
            type=MessageType.IMAGE,
            images=(ImagePart(media_type="image/jpeg", url="https://example.org/chart.jpg"),),
        ),
        Message(role=Role.ASSISTANT, type=MessageType.CODE, content="plot()", language="python"),
        Message(
            role=Role.ASSISTANT,
            content="The model failed",
            status=MessageStatus.ERROR,
            metadata={"error": {"code": "model_error", "message": "rate limited"}},
        ),
        Message(role=Role.ASSISTANT, content="Half a", status=MessageStatus.INTERRUPTED),
    ]
    return record, messages


def with_metadata(metadata: dict[str, Any]) -> str:
    record, _ = conversation()
    document = export_session(record, [Message(role=Role.USER, content="hi")])
    document["messages"][0]["metadata"] = metadata
    return json.dumps(document)


def nested(levels: int) -> dict[str, Any]:
    """An object `levels` deep."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"inner": value}
    return value


def test_an_import_nested_deeper_than_the_limit_is_refused_with_a_reason() -> None:
    # The document, its message list and the message are three levels above the metadata.
    at_limit = with_metadata(nested(MAX_IMPORT_DEPTH - 3))
    assert read_import(at_limit, owner="bob").messages[0].model_dump_json()

    for levels in (MAX_IMPORT_DEPTH - 2, 300):  # 300: deeper than a message can be saved
        with pytest.raises(InvalidRequest, match=f"more than {MAX_IMPORT_DEPTH} levels deep"):
            read_import(with_metadata(nested(levels)), owner="bob")
    deep_event = json.loads(with_metadata({}))
    deep_event["events"] = [{"type": "session_updated", "fields": nested(300)}]
    with pytest.raises(InvalidRequest, match="levels deep"):
        replay_events(parse_export(json.dumps(deep_event)))


async def test_broken_surrogate_escapes_are_repaired_so_the_import_saves_and_replays(
    tmp_path: Path,
) -> None:
    record, messages = conversation()
    text = json.dumps(export_session(record, messages))
    for original, broken in (
        ('"title": "Charts"', '"title": "Charts \\ud83d"'),
        ('"content": "plot this"', '"content": "plot \\udcff this"'),
        ('"call_1"', '"call_\\ud800"'),  # the call and the result answering it
        ('"files_created"', '"files_\\udc00created"'),
    ):
        assert original in text
        text = text.replace(original, broken)

    imported = read_import(text.encode("utf-8"), owner="bob")
    assert imported.repairs == HistoryRepairs()  # the result still answers its call
    assert imported.record.title == "Charts \ufffd"
    for event in replay_events(parse_export(text)):
        event.model_dump_json()  # what a front end sends to the browser

    first = manager(tmp_path)
    await first.start()
    session_id = (await first.import_session(imported.record, imported.messages)).id
    await first.close()
    second = manager(tmp_path)
    await second.start()
    restored = await second.get(session_id, "bob")
    history = restored.session.history
    await second.close()
    assert restored.session.title == "Charts \ufffd"
    assert history[0].content == "plot \ufffd this"
    assert history[1].tool_calls[0].id == history[2].tool_call_id == "call_\ufffd"
    assert "files_\ufffdcreated" in history[2].metadata


async def test_export_import_restart_export_keeps_every_message_as_it_was(
    tmp_path: Path,
) -> None:
    record, messages = conversation()
    imported = read_import(json.dumps(export_session(record, messages)), owner="bob")

    first = manager(tmp_path)
    await first.start()
    session_id = (await first.import_session(imported.record, imported.messages)).id
    await first.close()
    second = manager(tmp_path)
    await second.start()
    restored = await second.get(session_id, "bob")
    again = export_session(restored.session.to_record(restored.state), restored.session.history)
    await second.close()

    assert again["messages"] == [m.model_dump(mode="json") for m in messages]
    session = again["session"]
    assert (session["owner"], session["title"], session["agent"]) == ("bob", "Charts", "CREW")
    assert session["usage"] == record.usage.model_dump(mode="json")
    assert session["goal"] == "draw a chart"
    assert session["settings"] == record.settings.model_dump(mode="json")
