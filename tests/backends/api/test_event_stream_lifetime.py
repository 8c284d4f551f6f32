"""An event stream whose session closes before the stream starts (deleted by another tab,
or unloaded while idle, between the request's lookup and its first byte) ends after its
`hello`, instead of staying open with keep-alives for a session that is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from backends.api.sse import event_stream
from connectors.scripted import ScriptedModel
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import DB_FILE_NAME, SQLiteStore


def hello(replay: Any, complete: bool) -> dict[str, Any]:
    return {"complete": complete}


async def test_a_stream_for_a_session_deleted_before_it_started_ends(tmp_path: Path) -> None:
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(name="scripted", default="hi")),
        store=SQLiteStore(tmp_path / DB_FILE_NAME),
        workspace_root=tmp_path / "work",
    )
    await manager.start()
    try:
        interpreter = await manager.create("alice")
        # What the events endpoint holds: the session, looked up; the stream not started.
        stream = event_stream(
            interpreter, since=None, epoch="0" * 16, keepalive_s=0.05, hello=hello
        )
        await manager.delete(interpreter.id, "alice")  # another tab deletes it meanwhile

        async with asyncio.timeout(30):  # (a stream that never ends would write keep-alives)
            chunks = [chunk async for chunk in stream]
    finally:
        await manager.close()
    assert len(chunks) == 1 and chunks[0].startswith(b"retry: 2000\nevent: hello\n")
    assert not interpreter.watched
