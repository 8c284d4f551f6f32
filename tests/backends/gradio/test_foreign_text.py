"""Text the app did not write shows on the page as text, and its log lines stay one line.

Gradio renders a toast's message as HTML (`gr.Warning`: "Can be HTML, which will be
rendered in the modal"); its sanitizer keeps an `<img>` with a remote address, which the
browser fetches the moment the toast shows. The AutoChat panel and the chat are Markdown,
where the same holds. So a model name picked in a crafted request, a field of an uploaded
export, the words an agent declared its task done with, are escaped before they get there.
Driven as the browser's events would run the handlers (no browser).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from backends.gradio.handlers import Handlers
from backends.gradio.panels import AutoChatStatus
from backends.gradio.presence import Presence
from backends.gradio.renderer import ChatView
from backends.gradio.sidepanel import SidePanel
from backends.gradio.transfer import Transfer
from connectors.scripted import ScriptedModel, call
from gui_agent.export import read_import
from gui_agent.quick import create_interpreter
from schema import AutoChatSettings, AutoChatStopped, AutoChatStopReason
from tests.backends.gradio.kit import make_page
from tests.gui_agent.helpers import scripted_manager

HOSTILE = '<img src="https://attacker.example/x.png"> <a href="https://attacker.example">ok</a>'
ESCAPED = (
    '&lt;img src="https://attacker.example/x.png"&gt; '
    '&lt;a href="https://attacker.example"&gt;ok&lt;/a&gt;'
)


@pytest.fixture
def toasts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """What the handlers hand Gradio as toasts (`gr.Warning`, `gr.Info`)."""
    said: list[str] = []

    def toast(message: str, *args: Any, **kwargs: Any) -> None:
        said.append(message)

    monkeypatch.setattr(gr, "Warning", toast)
    monkeypatch.setattr(gr, "Info", toast)
    yield said


@pytest.fixture
async def handlers(tmp_path: Path) -> AsyncIterator[Handlers]:
    manager = scripted_manager(tmp_path, "ok")
    await manager.start()
    try:
        yield Handlers(manager, make_page(), icons={}, languages=(), models=())
    finally:
        await manager.close()


async def _last(updates: AsyncIterator[dict[Any, Any]]) -> dict[Any, Any]:
    last: dict[Any, Any] = {}
    async for update in updates:
        last = update
    return last


# --- toasts -----------------------------------------------------------------------------------


async def test_a_model_picked_in_a_crafted_request_is_named_as_text(
    handlers: Handlers, toasts: list[str]
) -> None:
    chat = await handlers.manager.create("local")
    side = SidePanel(handlers)
    await side.pick_model(chat.id, HOSTILE, None)  # type: ignore[arg-type]
    [toast] = toasts
    assert toast.startswith("unknown model") and ESCAPED in toast and "<img" not in toast


async def test_a_first_message_with_a_crafted_model_names_it_as_text(
    handlers: Handlers, toasts: list[str]
) -> None:
    page = handlers.page
    form = {
        page.chat_input: "hi",
        page.session_id: "",
        page.ticket: "1",
        page.model_picker: HOSTILE,
    }
    await _last(handlers.send(form, None))  # type: ignore[arg-type]
    [toast] = toasts
    assert ESCAPED in toast and "<img" not in toast
    assert await handlers.manager.list("local") == []  # (and no chat was made)


def _crafted_export() -> bytes:
    document = {
        "format": "gui-agent-session",
        "version": 1,
        "session": {"title": "notes"},
        "messages": [],
        HOSTILE: 1,  # a field no export has: the refusal names it
    }
    return json.dumps(document).encode()


async def test_an_import_refused_names_what_the_file_says_as_text(
    handlers: Handlers, toasts: list[str]
) -> None:
    await Transfer(handlers).import_file(_crafted_export(), "1", None)  # type: ignore[arg-type]
    [toast] = toasts
    assert toast.startswith("Could not import: unknown fields in the export: ")
    assert toast.endswith(ESCAPED) and "<img" not in toast


async def test_a_replay_refused_names_what_the_file_says_as_text(
    handlers: Handlers, toasts: list[str]
) -> None:
    await _last(Transfer(handlers).replay(_crafted_export(), "1", None))  # type: ignore[arg-type]
    [toast] = toasts
    assert toast.startswith("Could not replay: ") and toast.endswith(ESCAPED)


# --- Markdown ---------------------------------------------------------------------------------


async def test_the_words_an_agent_ended_autochat_with_show_as_text(tmp_path: Path) -> None:
    model = ScriptedModel([call("task_complete", summary=HOSTILE), "Done."])
    interpreter = create_interpreter(
        model, workdir=tmp_path, autochat=AutoChatSettings(enabled=True, max_turns=3)
    )
    events = [e async for e in interpreter.chat("tidy the notes")]
    status = AutoChatStatus(enabled=True)
    for event in events:
        status.apply(event)
    [stopped] = [e for e in events if isinstance(e, AutoChatStopped)]
    assert stopped.reason is AutoChatStopReason.TASK_COMPLETE and stopped.detail == HOSTILE
    shown = status.text()
    assert shown.startswith("AutoChat stopped after") and ESCAPED.replace("&gt;", ">") in shown
    assert "<img" not in shown and "<a " not in shown


def test_an_imported_autochat_prompt_shows_its_turn_as_text() -> None:
    document = {
        "format": "gui-agent-session",
        "version": 1,
        "session": {"title": "notes"},
        "messages": [
            {
                "role": "user",
                "content": "carry on",
                "metadata": {"autochat": True, "autochat_turn": HOSTILE},
            }
        ],
    }
    imported = read_import(json.dumps(document), owner="local")
    [entry] = ChatView.from_history(imported.messages).messages()
    shown = str(entry["content"])
    assert "carry on" in shown and "<img" not in shown and "<a " not in shown


# --- log lines --------------------------------------------------------------------------------


async def test_a_keep_alive_started_again_logs_what_the_browser_said_on_one_line(
    handlers: Handlers, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="backends.gradio.presence")
    keep = Presence(handlers).keep_open(None, "7\nFORGED \x1b[2J", "")  # type: ignore[arg-type]
    try:
        await anext(keep)
    finally:
        await keep.aclose()
    [record] = [r for r in caplog.records if "keep-alive starts again" in r.getMessage()]
    line = logging.Formatter("%(message)s").format(record)
    assert line.isprintable() and "(7\\nFORGED \\x1b[2J)" in line
