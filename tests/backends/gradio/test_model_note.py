"""The note under the model picker names the picked model in full (the picker's box cuts a
long id off), then what the server says of it; for a new chat, a picked model and a chat
opened alike. Driven as the browser's events would run them (no browser; the page itself:
test_page_model_picker.py)."""

from __future__ import annotations

from pathlib import Path

from backends.gradio.layout import model_note_text
from backends.gradio.sidepanel import SidePanel
from connectors.scripted import ScriptedModel
from tests.backends.gradio.kit import page_handlers

LONG = "openrouter:meta-llama/llama-3.3-70b-instruct-turbo-2025"


def test_the_note_names_the_model_in_full_as_code_then_the_servers_words() -> None:
    assert model_note_text(LONG) == f"Full name: ` {LONG} `"
    assert model_note_text(LONG, "Runs <b>offline</b>.") == (
        f"Full name: ` {LONG} `\n\nRuns &lt;b>offline&lt;/b>."
    )
    assert model_note_text("a`b") == "Full name: `` a`b ``"  # (a backtick stays in the code)
    assert model_note_text(None, "No model.") == "No model."
    assert model_note_text("") == ""


async def test_picking_a_model_and_opening_a_chat_name_its_model_under_the_picker(
    tmp_path: Path,
) -> None:
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(name=LONG, default="ok"))
    try:
        side = SidePanel(handlers)
        picked = await side.pick_model("", LONG, None)  # type: ignore[arg-type]
        assert picked == {page.model_note: model_note_text(LONG)}  # (a new chat)
        chat = await manager.create("local")
        assert handlers.settings_values(chat)[page.model_note] == model_note_text(LONG)
        assert handlers.settings_values(None)[page.model_note] == model_note_text(LONG)
    finally:
        await manager.close()
