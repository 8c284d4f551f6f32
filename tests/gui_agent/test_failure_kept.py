"""Why a reply failed is kept with it: in the history, the store after a restart, and the
page's view rebuilt from them once the `error` event is gone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from backends.gradio.renderer import ChatView
from backends.gradio.switches import placed_notes
from connectors import ExternalInterpreterAgent
from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import ScriptedModel
from gui_agent import SessionManager, StaticCatalog
from gui_agent.exceptions import ModelServerError
from gui_agent.quick import create_interpreter
from gui_agent.store import SQLiteStore
from schema import AgentName, ErrorEvent, Message, MessageStatus, Role


def exploding(messages: list[Message], info: FunctionInfo) -> Any:
    raise ModelServerError("upstream exploded", status=500, provider="scripted")


def crashing(messages: list[Message], info: FunctionInfo) -> Any:
    raise ZeroDivisionError("a bug in the agent")


def failed_replies(history: list[Message]) -> list[Message]:
    return [m for m in history if m.status is MessageStatus.ERROR]


async def test_a_failed_reply_keeps_the_error_that_ended_it(tmp_path: Path) -> None:
    interpreter = create_interpreter(FunctionModel(exploding), workdir=tmp_path)
    events = [e async for e in interpreter.chat("hello")]
    [said] = [e for e in events if isinstance(e, ErrorEvent)]
    [failed] = failed_replies(interpreter.session.history)
    assert failed.role is Role.ASSISTANT
    assert failed.metadata["error"] == {"code": said.code, "message": said.message}
    assert "upstream exploded" in said.message


async def test_an_agent_that_crashes_files_its_reply_with_the_crash(tmp_path: Path) -> None:
    interpreter = create_interpreter(FunctionModel(crashing), workdir=tmp_path)
    _ = [e async for e in interpreter.chat("hello")]
    [failed] = failed_replies(interpreter.session.history)
    assert failed.metadata["error"] == {
        "code": "agent_failed",
        "message": "ZeroDivisionError: a bug in the agent",
    }


async def test_the_reason_survives_a_restart_and_the_rebuilt_view_shows_it(
    tmp_path: Path,
) -> None:
    def manager() -> SessionManager:
        return SessionManager(
            models=StaticCatalog(FunctionModel(exploding, name="exploding")),
            store=SQLiteStore(tmp_path / "sessions.db"),
            workspace_root=tmp_path / "work",
        )

    first = manager()
    await first.start()
    try:
        interpreter = await first.create("alice")
        _ = [e async for e in interpreter.chat("hello")]
        session_id = interpreter.id
    finally:
        await first.close()

    second = manager()
    await second.start()
    try:
        restored = await second.get(session_id, "alice")
        history = list(restored.session.history)
        assert restored.events_since(0) == []  # the error event is gone with the old process
    finally:
        await second.close()
    [failed] = failed_replies(history)
    assert failed.metadata["error"]["message"].endswith("upstream exploded")
    shown = "\n".join(str(m["content"]) for m in ChatView.from_history(history).messages())
    assert 'data-code="model_error">Error:</strong> ' in shown
    assert shown.count("upstream exploded") == 1


async def test_a_view_shows_the_error_once_whether_live_or_rebuilt(tmp_path: Path) -> None:
    interpreter = create_interpreter(FunctionModel(exploding), workdir=tmp_path)
    events = [e async for e in interpreter.chat("hello")]
    history = list(interpreter.session.history)

    live = ChatView()
    for event in events:
        live.apply(event)
    rebuilt = ChatView.from_history(history, notes=placed_notes(events, history))
    for view in (live, rebuilt):
        shown = "\n".join(str(m["content"]) for m in view.messages())
        assert shown.count("upstream exploded") == 1, shown
        assert "Error:</strong>" in shown and "(model_error)" not in shown


async def _mid_stream(messages: object) -> AsyncIterator[str]:
    yield "half a "
    raise RuntimeError("the backend went away")


def _at_start(messages: object) -> object:
    raise ValueError("cannot start: no key")


async def test_an_external_agent_that_fails_keeps_why_in_the_saved_chat(tmp_path: Path) -> None:
    """A failure mid-reply is kept with the reply the agent filed itself; one before any
    reply, in an empty failed note no model is sent. Both outlive the event (a reload)."""
    store = SQLiteStore(tmp_path / "sessions.db")
    await store.open()
    kept: dict[str, list[Message]] = {}
    for name, agent in (("mid", _mid_stream), ("start", _at_start)):
        interpreter = create_interpreter(
            ScriptedModel(),
            architectures={AgentName.OTHER: ExternalInterpreterAgent(agent)},
            workdir=tmp_path,
            store=store,
        )
        said = [e async for e in interpreter.chat("hello") if isinstance(e, ErrorEvent)]
        assert len(said) == 1
        await interpreter.close()
        kept[name] = await store.load_messages(interpreter.id)
        [failed] = failed_replies(kept[name])
        assert failed.metadata["error"] == {"code": said[0].code, "message": said[0].message}
    await store.close()
    assert [m.content for m in kept["mid"]] == ["hello", "half a "]
    note = kept["start"][-1]
    assert note.role is Role.ASSISTANT and note.content == "" and note.display_only
    assert note.metadata["error"]["message"] == "ValueError: cannot start: no key"
    shown = "\n".join(str(m["content"]) for m in ChatView.from_history(kept["start"]).messages())
    assert 'data-code="agent_failed">Error:</strong> ValueError: cannot start: no key' in shown
