"""The page's handlers driven as the browser's events would run them (no browser): editing
a message that carried images, and the search box when the list shows every chat again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from backends.gradio.attach import attachments_note
from backends.gradio.handlers import tab_of
from backends.gradio.transfer import Transfer
from connectors.scripted import ScriptedModel
from gui_agent.session import written_by_person
from tests.backends.gradio.kit import page_handlers, tiny_png


async def _last(updates: AsyncIterator[dict[Any, Any]]) -> dict[Any, Any]:
    last: dict[Any, Any] = {}
    async for update in updates:
        last = update
    return last


async def test_editing_a_message_keeps_its_images_unless_taken_back(tmp_path: Path) -> None:
    """ "What is in this picture?" with a picture, edited to fix a typo: the edit still
    carries the picture (the tray shows it again, and "Remove images" takes it back)."""
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="a red square"))
    tab = tab_of(None)
    try:
        count, problems = handlers.trays.add(tab, [tiny_png()])
        assert (count, problems) == (1, [])
        form: dict[Any, Any] = {
            page.chat_input: "Wat is in this picture?",
            page.session_id: "",
            page.ticket: "1",
        }
        await _last(handlers.send(form, None))  # type: ignore[arg-type]
        (chat,) = await manager.list("local")
        session_id = chat.id
        interpreter = await manager.get(session_id, "local")
        await interpreter.wait_idle()
        (image,) = interpreter.session.history[0].images

        editing = await handlers.edit_last(session_id, None)  # type: ignore[arg-type]
        assert editing[page.chat_input] == "Wat is in this picture?"
        assert editing[page.edit_mode] is True
        assert editing[page.attach_note] == attachments_note(1)
        again = await handlers.edit_last(session_id, None)  # type: ignore[arg-type]
        assert again[page.attach_note] == attachments_note(1), "Edit twice: still one image"

        edit: dict[Any, Any] = {
            page.chat_input: "What is in this picture?",
            page.edit_mode: True,
            page.session_id: session_id,
            page.ticket: "2",
        }
        await _last(handlers.send(edit, None))  # type: ignore[arg-type]
        await interpreter.wait_idle()
        mine = [m for m in interpreter.session.history if written_by_person(m)]
        assert [m.content for m in mine] == ["What is in this picture?"]
        assert mine[0].images == (image,)
        assert handlers.trays.count(tab) == 0, "the edit took the images with it"
    finally:
        await manager.close()


async def test_new_chat_and_import_empty_the_search_box_with_the_list(tmp_path: Path) -> None:
    """A search narrows the list; New chat (also after Delete) and an import list every chat
    again, and the search box must not keep saying the old query over the full list."""
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="ok"))
    transfer = Transfer(handlers)
    try:
        # two chats, made as a tab makes them: a first message, New chat, a first message
        first = {page.chat_input: "zebra facts", page.session_id: "", page.ticket: "1"}
        await _last(handlers.send(first, None))  # type: ignore[arg-type]
        await handlers.new_chat("2", None)  # type: ignore[arg-type]
        second = {page.chat_input: "other things", page.session_id: "", page.ticket: "3"}
        await _last(handlers.send(second, None))  # type: ignore[arg-type]
        chats = await manager.list("local")
        for chat in chats:
            await (await manager.get(chat.id, "local")).wait_idle()
        narrowed = await handlers.session_list_update("local", "", "zebra")
        assert len(narrowed[page.session_list]["choices"]) == 1

        fresh = await handlers.new_chat("4", None)  # type: ignore[arg-type]
        assert len(fresh[page.session_list]["choices"]) == 2
        assert fresh[page.search] == "", "the box agrees with the list: no query"

        interpreter = await manager.get(chats[0].id, "local")
        exported = await transfer.export(interpreter.id, None)  # type: ignore[arg-type]
        document = json.dumps(json.loads(exported)["document"]).encode()
        imported = await transfer.import_file(document, "5", None)  # type: ignore[arg-type]
        assert len(imported[page.session_list]["choices"]) == 3
        assert imported[page.search] == ""
    finally:
        await manager.close()


async def test_an_edit_overtaken_by_a_message_from_another_tab_is_refused_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edit last message in one tab, a message sent from another, then the edit sent: it
    replaced the newer message and dropped its reply."""
    said: list[str] = []
    monkeypatch.setattr(gr, "Warning", lambda message, *_a, **_k: said.append(message))
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="ok"))
    tab = tab_of(None)
    try:
        first = {page.chat_input: "mine, to edit", page.session_id: "", page.ticket: "1"}
        await _last(handlers.send(first, None))  # type: ignore[arg-type]
        (chat,) = await manager.list("local")
        interpreter = await manager.get(chat.id, "local")
        await interpreter.wait_idle()
        editing = await handlers.edit_last(chat.id, None)  # type: ignore[arg-type]
        assert editing[page.chat_input] == "mine, to edit"
        await interpreter.send("sent since, from another tab")
        await interpreter.wait_idle()
        before = [m.content for m in interpreter.session.history]
        edit: dict[Any, Any] = {
            page.chat_input: "mine, edited",
            page.edit_mode: True,
            page.session_id: chat.id,
            page.ticket: "2",
        }
        await _last(handlers.send(edit, None))  # type: ignore[arg-type]
        await interpreter.wait_idle()
        assert [m.content for m in interpreter.session.history] == before
        assert any("another was sent since" in message for message in said), said
        draft = handlers.unsent.take(tab)  # given back to the box, with its tick
        assert draft is not None and (draft.text, draft.as_edit) == ("mine, edited", True)
        # Edit last message again: the edit is of the newer message, and goes through
        await handlers.edit_last(chat.id, None)  # type: ignore[arg-type]
        edit[page.chat_input], edit[page.ticket] = "sent since, edited", "3"
        await _last(handlers.send(edit, None))  # type: ignore[arg-type]
        await interpreter.wait_idle()
        assert [m.content for m in interpreter.session.history][2] == "sent since, edited"
    finally:
        await manager.close()
