"""The side panel's saves skip Gradio's queue, so the server may handle two of them in the
other order than the person made them (two boxes typed one after the other, each event on
its own connection). Each save changes only its own field: a late one cannot undo the
other. Driven as the browser's events would run them (no browser)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from backends.gradio.form import form_fields
from backends.gradio.handlers import Handlers, tab_of
from backends.gradio.layout import Page
from backends.gradio.sidepanel import SidePanel
from backends.gradio.stream import no_change
from connectors.scripted import ScriptedModel
from gui_agent.interpreter import Interpreter
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore
from tests.backends.gradio.kit import make_page


@pytest.fixture
async def panel(tmp_path: Path) -> AsyncIterator[tuple[Page, SidePanel, Interpreter]]:
    page = make_page()
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(default="ok")),
        store=MemoryStore(),
        workspace_root=tmp_path,
    )
    await manager.start()
    try:
        interpreter = await manager.create("local")
        yield (
            page,
            SidePanel(Handlers(manager, page, icons={}, languages=(), models=())),
            interpreter,
        )
    finally:
        await manager.close()


def limits(page: Page, session_id: str, turns: float, budget: float | None) -> dict[Any, Any]:
    """The form as the browser sends it: every field as it shows at that moment (a number
    box sends a number, or None when it is empty)."""
    return {
        page.session_id: session_id,
        page.max_turns: turns,
        page.delay: 0,
        page.token_budget: budget,
        page.time_budget: 0,
        page.ticket: "1",
    }


async def test_a_late_limit_save_does_not_undo_a_limit_saved_meanwhile(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    page, side, interpreter = panel
    sid = interpreter.id
    # The person types 12 turns (the budget box still shows 0), then a 5000-token budget;
    # the second event is handled first.
    second = await side.limit_saver("token_budget")(limits(page, sid, 12, 5000), None)
    first = await side.limit_saver("max_turns")(limits(page, sid, 12, 0), None)
    assert page.limits_note not in second and page.limits_note not in first  # (check_limits)
    auto = interpreter.session.autochat
    assert (auto.max_turns, auto.token_budget) == (12, 5000)


async def test_a_limit_is_saved_while_another_box_is_wrong_and_the_note_names_every_one(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    page, side, interpreter = panel
    sid = interpreter.id
    await side.limit_saver("max_turns")(limits(page, sid, 7, None), None)
    assert interpreter.session.autochat.max_turns == 7
    assert interpreter.session.autochat.token_budget is None, "the empty box saved nothing"
    said = (await side.check_limits(limits(page, sid, 7, None)))[page.limits_note]
    assert said == (
        "Token budget is empty: type a number (0 for none). "
        "Not saved: AutoChat keeps that limit as it was until you fix it."
    )
    await side.limit_saver("token_budget")(limits(page, sid, 7, -3), None)
    assert interpreter.session.autochat.token_budget is None
    said = (await side.check_limits(limits(page, sid, 0, -3)))[page.limits_note]
    assert said == (
        "Max automatic turns must be at least 1. Token budget must be 0 (none) or more. "
        "Not saved: AutoChat keeps those limits as they were until you fix them."
    )
    assert (await side.check_limits(limits(page, sid, 7, 0)))[page.limits_note] == ""


def advanced(page: Page, session_id: str, prompt: str, max_tokens: str) -> dict[Any, Any]:
    return {
        page.session_id: session_id,
        page.system_prompt: prompt,
        page.temperature: 0.7,
        page.max_tokens: max_tokens,
        page.ticket: "1",
    }


async def test_a_late_settings_save_does_not_undo_a_setting_saved_meanwhile(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    page, side, interpreter = panel
    sid = interpreter.id
    old_prompt = interpreter.session.settings.system_prompt
    # The prompt box is left (max tokens still empty), then 4096 typed in Max tokens and
    # that box left; the second save is handled first.
    second = await side.settings_saver("max_tokens")(advanced(page, sid, "Be brief.", "4096"), None)
    first = await side.settings_saver("system_prompt")(advanced(page, sid, "Be brief.", ""), None)
    assert second[page.settings_note] == first[page.settings_note] == ""
    settings = interpreter.session.settings
    assert (settings.system_prompt, settings.max_tokens) == ("Be brief.", 4096)
    assert settings.system_prompt != old_prompt
    assert settings.temperature is None, "the temperature was not touched by either save"


async def test_the_settings_note_says_what_the_newest_save_saw(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    """The prompt box left while Max tokens held 0 (event 8), then Max tokens put right and
    left (event 9): handled in the other order, the older event's "Max tokens must be at
    least 1" would be the last word under the settings, though both boxes are right. It
    leaves the note as it is."""
    page, side, interpreter = panel
    side.handlers.news.open(tab_of(None), "local")
    sid = interpreter.id
    newer = {**advanced(page, sid, "Be brief.", "64"), page.ticket: "9"}
    older = {**advanced(page, sid, "Be brief.", "0"), page.ticket: "8"}
    assert (await side.settings_saver("max_tokens")(newer, None))[page.settings_note] == ""
    assert page.settings_note not in await side.settings_saver("system_prompt")(older, None)
    settings = interpreter.session.settings
    assert (settings.system_prompt, settings.max_tokens) == ("Be brief.", 64)
    later = {**advanced(page, sid, "Be brief.", "0"), page.ticket: "10"}  # wrong again: said
    update = await side.settings_saver("system_prompt")(later, None)
    assert "Max tokens must be at least 1" in update[page.settings_note]


async def test_a_setting_out_of_range_saves_nothing_and_is_named(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    page, side, interpreter = panel
    before = interpreter.session.settings
    update = await side.settings_saver("max_tokens")(advanced(page, interpreter.id, "x", "0"), None)
    assert "Max tokens must be at least 1" in update[page.settings_note]
    assert interpreter.session.settings == before


async def test_an_older_save_of_a_field_handled_after_a_newer_one_changes_nothing(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    """The events are numbered by the tab: the temperature let go at 0.2 (event 9) is not
    undone by a save of 1.5 made before it (event 8) that the server handles after it."""
    page, side, interpreter = panel
    side.handlers.news.open(tab_of(None), "local")
    sid = interpreter.id
    save = side.settings_saver("temperature")
    newer = {**advanced(page, sid, "p", ""), page.temperature: 0.2, page.ticket: "9"}
    older = {**advanced(page, sid, "p", ""), page.temperature: 1.5, page.ticket: "8"}
    assert (await save(newer, None))[page.settings_note] == ""
    assert page.settings_note not in await save(older, None), "the newer one's note stands"
    assert interpreter.session.settings.temperature == 0.2
    later = {**older, page.ticket: "10"}
    await save(later, None)
    assert interpreter.session.settings.temperature == 1.5, "a newer one is saved"


async def test_a_send_saves_what_the_form_shows_and_an_older_box_save_cannot_undo_it(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    """A box left by clicking Send saves itself in an event of its own, which the server may
    handle after the send: the message still runs with what the form showed, and the late
    save (older than the send) changes nothing."""
    page, side, interpreter = panel
    handlers = side.handlers
    handlers.news.open(tab_of(None), "local")
    sid = interpreter.id
    form = {
        **limits(page, sid, 2, 0),
        **advanced(page, sid, "Answer like a pirate.", "321"),
        page.chat_input: "ahoy",
        page.ticket: "12",
    }
    async for _update in handlers.send(form, None):  # type: ignore[arg-type]
        pass
    await interpreter.wait_idle()
    settings = interpreter.session.settings
    assert (settings.system_prompt, settings.max_tokens) == ("Answer like a pirate.", 321)
    assert interpreter.session.autochat.max_turns == 2
    stale = {**advanced(page, sid, "Answer like a pirate.", "100"), page.ticket: "11"}
    await side.settings_saver("max_tokens")(stale, None)
    stale_limit = {**limits(page, sid, 9, 0), page.ticket: "11"}
    await side.limit_saver("max_turns")(stale_limit, None)
    assert interpreter.session.settings.max_tokens == 321
    assert interpreter.session.autochat.max_turns == 2


async def test_a_send_leaves_a_setting_the_person_did_not_change_as_it_is(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    """An unset temperature shows as 1.0 (and no budget as 0): sent as shown, the chat keeps
    them unset (the model's own default temperature need not be 1.0). A changed box is
    saved."""
    page, side, interpreter = panel
    handlers = side.handlers
    sid = interpreter.id
    assert interpreter.session.settings.temperature is None
    shown = handlers.settings_values(interpreter)
    form = {
        **{box: shown[box] for box in form_fields(page).values()},
        page.session_id: sid,
        page.chat_input: "as it is",
        page.ticket: "3",
    }
    async for _update in handlers.send(form, None):  # type: ignore[arg-type]
        pass
    await interpreter.wait_idle()
    assert interpreter.session.settings.temperature is None
    assert interpreter.session.autochat.token_budget is None
    before = interpreter.session.settings
    changed = {**form, page.temperature: 0.4, page.chat_input: "cooler", page.ticket: "4"}
    async for _update in handlers.send(changed, None):  # type: ignore[arg-type]
        pass
    await interpreter.wait_idle()
    assert interpreter.session.settings == before.model_copy(update={"temperature": 0.4})


async def test_a_tool_mode_set_is_given_back_as_set(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    """Picking a tool asks for its mode in the chat (`show_tool_mode`); a mode clicked before
    that answer came back could be overwritten by it. The mode set comes back with the
    change, so the last answer to land says what was set."""
    page, side, interpreter = panel
    handlers, sid = side.handlers, interpreter.id
    tool = interpreter.tool_standings()[0].name
    shown = await handlers.show_tool_mode(sid, tool, "", None)  # type: ignore[arg-type]
    assert shown == {page.tool_mode: ""}  # the app's own choice
    update = await handlers.set_tool_mode(sid, tool, "deny", None)  # type: ignore[arg-type]
    assert update[page.tool_mode] == "deny"
    assert interpreter.session.settings.permissions == {tool: "deny"}
    update = await handlers.set_tool_mode(sid, tool, "", None)  # type: ignore[arg-type]
    assert update[page.tool_mode] == ""
    assert interpreter.session.settings.permissions == {}


async def test_a_tool_pick_answered_after_another_chat_opened_leaves_the_page_as_it_is(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    """A pick's request can reach the server after the tab's next event, opening another
    chat, was handled (Gradio sends a tab's events at once, each on its own). Its answer
    would show the picked chat's mode beside the other chat, whose opening emptied the
    picker and the mode: numbered, it is answered with no change instead."""
    page, side, interpreter = panel
    handlers, sid = side.handlers, interpreter.id
    tool = interpreter.tool_standings()[0].name
    await handlers.set_tool_mode(sid, tool, "deny", None)  # type: ignore[arg-type]
    other = await handlers.manager.create("local")
    opened = await handlers.open_session(other.id, "5", None)  # type: ignore[arg-type]
    assert opened[page.tool_picker] is None and opened[page.tool_mode] is None
    late = await handlers.show_tool_mode(sid, tool, "4", None)  # type: ignore[arg-type]
    assert late == no_change()  # picked before the chat was opened: left as it is
    shown = await handlers.show_tool_mode(other.id, tool, "6", None)  # type: ignore[arg-type]
    assert shown == {page.tool_mode: ""}  # picked after: the open chat's own mode
    shown = await handlers.show_tool_mode(sid, tool, "0", None)  # type: ignore[arg-type]
    assert shown == {page.tool_mode: "deny"}  # (unnumbered, as an API client: answered)
