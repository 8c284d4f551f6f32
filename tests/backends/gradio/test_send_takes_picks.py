"""A send takes the role and model the tab's pickers show (pickers.py), without a browser:
a pick the server refuses is left to the picker's own event, and the message still goes,
to the chat's own model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from connectors.scripted import ScriptedModel
from schema import AgentName
from tests.backends.gradio.kit import page_handlers


async def _last(updates: AsyncIterator[dict[Any, Any]]) -> dict[Any, Any]:
    last: dict[Any, Any] = {}
    async for update in updates:
        last = update
    return last


async def test_a_send_takes_the_role_shown_and_leaves_a_model_the_server_lacks(
    tmp_path: Path,
) -> None:
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="the reply"))
    try:
        first: dict[Any, Any] = {page.chat_input: "hello", page.session_id: "", page.ticket: "1"}
        await _last(handlers.send(first, None))  # type: ignore[arg-type]
        (chat,) = await manager.list("local")
        interpreter = await manager.get(chat.id, "local")
        await interpreter.wait_idle()
        model = interpreter.session.settings.model
        assert interpreter.session.agent is not AgentName.THOUGHT

        second: dict[Any, Any] = {
            page.chat_input: "and now?",
            page.session_id: chat.id,
            page.role_picker: AgentName.THOUGHT.value,
            page.model_picker: "a-model-this-server-lacks",
            page.ticket: "2",
        }
        await _last(handlers.send(second, None))  # type: ignore[arg-type]
        await interpreter.wait_idle()
        assert interpreter.session.agent is AgentName.THOUGHT
        assert interpreter.session.settings.model == model
        assert [m.content for m in interpreter.session.history if m.role == "user"] == [
            "hello",
            "and now?",
        ]
        assert interpreter.session.history[-1].content == "the reply"
    finally:
        await manager.close()
