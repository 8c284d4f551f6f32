"""A tool's mode set in a new chat, before its first message (no chat is saved yet), is the
chat's from its first turn on: it used to be refused ("Send a message first"). Driven as the
browser's events would run them (no browser)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from backends.gradio.handlers import tab_of
from connectors.scripted import ScriptedModel, call
from schema import InterpreterState, Role
from tests.backends.gradio.kit import page_handlers


@pytest.fixture
def toasts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    said: list[str] = []
    monkeypatch.setattr(gr, "Info", lambda message, *_a, **_k: said.append(f"info: {message}"))
    monkeypatch.setattr(gr, "Warning", lambda message, *_a, **_k: said.append(f"warn: {message}"))
    yield said


async def _last(updates: AsyncIterator[dict[Any, Any]]) -> dict[Any, Any]:
    last: dict[Any, Any] = {}
    async for update in updates:
        last = update
    return last


async def test_a_tool_mode_set_in_a_new_chat_holds_from_its_first_turn(
    tmp_path: Path, toasts: list[str]
) -> None:
    """write_file asks first by default. Set to "Run without asking" in the new chat, the
    first message's call of it runs at once: no approval, the file written."""
    model = ScriptedModel([call("write_file", path="note.txt", content="hi"), "Written."])
    page, manager, handlers = await page_handlers(tmp_path, model)
    try:
        shown = await handlers.set_tool_mode("", "write_file", "allow", None)  # type: ignore[arg-type]
        assert toasts == ["info: write_file: runs without asking (set for this chat)."]
        assert shown[page.tool_mode] == "allow"
        assert "write_file: runs without asking" in shown[page.tools_panel]
        picked = await handlers.show_tool_mode("", "write_file", "", None)  # type: ignore[arg-type]
        assert picked == {page.tool_mode: "allow"}, "picked again, it shows the mode set"

        form = {page.chat_input: "write a note", page.session_id: "", page.ticket: "1"}
        await asyncio.wait_for(_last(handlers.send(form, None)), 10)  # type: ignore[arg-type]
        (chat,) = await manager.list("local")
        interpreter = await manager.get(chat.id, "local")
        await asyncio.wait_for(interpreter.wait_idle(), 10)
        assert interpreter.session.settings.permissions == {"write_file": "allow"}
        assert interpreter.state is InterpreterState.STOP  # (it never waited for approval)
        results = [m for m in interpreter.session.history if m.role is Role.TOOL]
        workdir = interpreter.session.workdir
        assert len(results) == 1 and workdir is not None and (workdir / "note.txt").exists()
        assert handlers.new_modes.of(tab_of(None)) == {}, "the next new chat starts afresh"
    finally:
        await manager.close()


async def test_a_new_chat_forgets_the_modes_set_for_the_one_shown_before(
    tmp_path: Path, toasts: list[str]
) -> None:
    """Set in one new chat, a mode does not follow the person into the next one (New chat),
    nor into a chat opened; "As the app decides" takes it back; an unknown tool is named."""
    page, manager, handlers = await page_handlers(tmp_path)
    tab = tab_of(None)
    try:
        await handlers.set_tool_mode("", "run_python", "deny", None)  # type: ignore[arg-type]
        assert handlers.new_modes.of(tab) == {"run_python": "deny"}
        back = await handlers.set_tool_mode("", "run_python", "", None)  # type: ignore[arg-type]
        assert back[page.tool_mode] == "" and handlers.new_modes.of(tab) == {}
        await handlers.set_tool_mode("", "run_python", "deny", None)  # type: ignore[arg-type]
        fresh = await handlers.new_chat("2", None)  # type: ignore[arg-type]
        assert handlers.new_modes.of(tab) == {}
        assert "run_python: asks you first" in fresh[page.tools_panel]
        toasts.clear()
        await handlers.set_tool_mode("", "send_mail", "allow", None)  # type: ignore[arg-type]
        assert toasts and toasts[0].startswith("warn: This chat has no tool 'send_mail'")
        assert handlers.new_modes.of(tab) == {}
    finally:
        await manager.close()
