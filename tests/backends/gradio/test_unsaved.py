"""Settings typed just before a reload (unsaved.py), without a browser: what the reloaded
page sends is read strictly, saved to the chat it was typed for as leaving the box would
have saved it, and a value that is wrong comes back as typed with its problem named."""

from __future__ import annotations

import json
from pathlib import Path

from backends.gradio.assets import load_assets
from backends.gradio.form import SETTINGS_NOT_SAVED
from backends.gradio.owners import tab_of
from backends.gradio.unsaved import MAX_KEPT_CHARS, Unsaved, kept_boxes, with_unsaved
from schema import PermissionMode
from tests.backends.gradio.kit import make_page, page_handlers


def _kept(chat: str, **boxes: str) -> str:
    """What page.js keeps: by element id (underscores in the names here are dashes)."""
    return json.dumps({"chat": chat, "boxes": {k.replace("_", "-"): v for k, v in boxes.items()}})


async def test_the_kept_boxes_are_the_ones_saved_when_left_by_their_element_ids() -> None:
    assert kept_boxes(make_page()) == {
        "system-prompt": "system_prompt",
        "max-tokens": "max_tokens",
        "max-iterations": "max_iterations",
        "memory-exchanges": "memory_exchanges",
        "memory-token-budget": "memory_token_budget",
        "approval-timeout": "approval_timeout_s",
    }


async def test_what_a_page_sends_is_read_strictly_and_anything_else_is_nothing_kept() -> None:
    page = make_page()
    for raw in ("", "not json", "[1, 2]", '{"chat": 3, "boxes": {}}', '{"chat": "a"}', None, 5):
        assert Unsaved.decode(raw, page) == Unsaved(), raw
    sent = json.dumps(
        {
            "chat": "abc",
            "boxes": {
                "max-tokens": "321",
                "session-id": "someone else's",  # a box that does not save when left
                "max-iterations": 7,  # not text
                "system-prompt": "x" * (MAX_KEPT_CHARS + 1),
                "memory-exchanges": "",
            },
        }
    )
    kept = Unsaved.decode(sent, page)
    assert kept == Unsaved("abc", {"max_tokens": "321", "memory_exchanges": ""})
    assert kept.of("abc") == {"max_tokens": "321", "memory_exchanges": ""}
    assert kept.of("another chat") == {} and kept.of("") == {}


async def test_the_page_script_gets_the_storage_key_and_the_boxes() -> None:
    page = make_page()
    script = with_unsaved(load_assets().page_js, page)
    assert "__GUI_AGENT" not in script
    assert '"gui-agent-unsaved:" + location.pathname' in script
    assert json.dumps(kept_boxes(page)) in script


async def test_a_reload_saves_what_was_typed_for_its_chat_and_shows_a_wrong_value_as_typed(
    tmp_path: Path,
) -> None:
    page, manager, handlers = await page_handlers(tmp_path)
    try:
        chat = await manager.create("local")
        sent = _kept(chat.id, system_prompt="Be brief.", max_tokens="321", max_iterations="0")
        loaded = await handlers.on_load(chat.id, "1", sent, None)  # type: ignore[arg-type]
        settings = chat.session.settings
        assert settings.system_prompt == "Be brief." and settings.max_tokens == 321
        assert settings.max_iterations == 10  # "0" is refused: the chat keeps its value
        stored = await manager.store.get_session(chat.id, owner="local")
        assert stored is not None and stored.settings.max_tokens == 321  # kept in the store too
        assert loaded[page.session_id] == chat.id
        assert loaded[page.system_prompt] == "Be brief." and loaded[page.max_tokens] == "321"
        assert loaded[page.max_iterations] == "0"  # as typed, and named under the settings
        problem = "Max steps per turn must be at least 1"
        assert loaded[page.settings_note] == SETTINGS_NOT_SAVED.format(problem=problem)
        # the tab's base is the chat's value: a send saves the box again (and names it)
        base = json.loads(loaded[page.form_base])
        assert base["values"]["max_iterations"] == "10" and base["values"]["max_tokens"] == "321"
    finally:
        await manager.close()


async def test_text_kept_for_another_chat_is_not_saved_to_the_one_the_page_opens(
    tmp_path: Path,
) -> None:
    page, manager, handlers = await page_handlers(tmp_path)
    try:
        opened, other = await manager.create("local"), await manager.create("local")
        sent = _kept(other.id, max_tokens="321")
        loaded = await handlers.on_load(opened.id, "1", sent, None)  # type: ignore[arg-type]
        assert opened.session.settings.max_tokens is None
        assert other.session.settings.max_tokens is None
        assert loaded[page.max_tokens] == "" and loaded[page.settings_note] == ""
    finally:
        await manager.close()


async def test_a_new_chat_shows_what_was_typed_in_its_boxes_again(tmp_path: Path) -> None:
    page, manager, handlers = await page_handlers(tmp_path)
    try:
        sent = _kept("", max_tokens="77", approval_timeout="soon")
        loaded = await handlers.on_load("", "1", sent, None)  # type: ignore[arg-type]
        assert loaded[page.max_tokens] == "77" and loaded[page.approval_timeout] == "soon"
        problem = "Approval timeout must be a number"
        assert loaded[page.settings_note] == SETTINGS_NOT_SAVED.format(problem=problem)
        assert page.session_id not in loaded  # still the new chat
        assert await manager.list("local") == []  # nothing made, nothing saved
    finally:
        await manager.close()


async def test_a_new_chats_tool_modes_come_back_for_the_reloaded_tab(tmp_path: Path) -> None:
    """The modes set in a new chat (new_chat_modes.py) are the server's by tab, and a reloaded
    page is another tab: those the page kept are set again for it, read strictly (a tool the
    new chat lacks, a mode that is not one, or modes kept for a chat are left out)."""
    page, manager, handlers = await page_handlers(tmp_path)
    try:
        modes = {"run_python": "allow", "write_file": "deny", "no_such_tool": "allow"}
        kept = {"chat": "", "boxes": {}, "modes": {**modes, "read_file": "maybe"}}
        assert Unsaved.decode(json.dumps(kept), page).modes == {
            "run_python": PermissionMode.ALLOW,
            "write_file": PermissionMode.DENY,
            "no_such_tool": PermissionMode.ALLOW,
        }
        for_a_chat = {"chat": "abc", "boxes": {}, "modes": modes}
        assert Unsaved.decode(json.dumps(for_a_chat), page).modes == {}
        for wrong in ([1], "allow", {"": "allow"}, {"run_python": 1}):
            assert Unsaved.decode(json.dumps({**kept, "modes": wrong}), page).modes == {}

        loaded = await handlers.on_load("", "1", json.dumps(kept), None)  # type: ignore[arg-type]
        panel = str(loaded[page.tools_panel])
        assert "run_python: runs without asking (set for this chat)" in panel
        assert "write_file: never runs (set for this chat)" in panel
        assert handlers.new_modes.of(tab_of(None)) == {
            "run_python": PermissionMode.ALLOW,
            "write_file": PermissionMode.DENY,
        }
        assert await manager.list("local") == []  # nothing made yet
        nothing = await handlers.on_load("", "1", _kept(""), None)  # type: ignore[arg-type]
        assert page.tools_panel not in nothing
    finally:
        await manager.close()
