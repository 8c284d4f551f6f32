"""What the page says after an import (transfer.py): what it brought, what of the file it did
not carry over, and what it repaired, in plain words, and nothing more when nothing changed.
And a replay refuses the files an import refuses, and shows no chat chosen while it plays."""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr
import pytest

from backends.gradio.bases import Base
from backends.gradio.owners import tab_of
from backends.gradio.stream import no_change
from backends.gradio.transfer import Transfer, import_notice
from gui_agent.export import HistoryRepairs, Imported, export_session
from schema import Message, MessageStarted, Role, SessionRecord, SessionSettings
from tests.backends.gradio.kit import page_handlers


def imported(repairs: HistoryRepairs, reset: tuple[str, ...] = ()) -> str:
    record = SessionRecord(owner="me", title="t")
    messages = [Message(role=Role.USER, content="hi")]
    return import_notice(Imported(record, messages, reset, repairs))


def test_an_import_that_changed_nothing_says_only_what_it_brought() -> None:
    assert imported(HistoryRepairs()) == "Imported 1 message as a new chat."


def test_an_import_names_each_reset_and_each_repair_once_in_good_english() -> None:
    many = imported(HistoryRepairs(3, 2, 2), ("settings.permissions", "autochat.enabled"))
    assert many == (
        "Imported 1 message as a new chat. For safety, an import does not carry over the "
        "tools it allowed without asking (each asks you again) or AutoChat being on (switch "
        "it on again if you want it). Repaired so that any model can continue the chat: 3 "
        "tool results that answered no call were left out; 2 tool calls that had no result "
        "are marked unanswered (they may have run: check before running them again); 2 "
        "system messages are kept as a note, shown but never sent to the model."
    )
    one = imported(HistoryRepairs(unanswered_calls_answered=1))
    assert one.endswith(
        "1 tool call that had no result is marked unanswered "
        "(it may have run: check before running it again)."
    )
    assert "carry over" not in one


async def test_the_page_refuses_to_replay_a_file_an_import_refuses_though_it_has_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With recorded events, the page replayed them without reading the file's messages."""
    said: list[str] = []
    monkeypatch.setattr(gr, "Warning", lambda message, *_a, **_k: said.append(message))
    message = Message(role=Role.USER, content="hi")
    document = export_session(
        SessionRecord(owner="me", title="t"), [message], [MessageStarted(seq=1, message_id="m")]
    )
    document["messages"][0]["role"] = "nobody"
    data = json.dumps(document).encode()
    _page, manager, handlers = await page_handlers(tmp_path)
    transfer = Transfer(handlers)
    updates = [update async for update in transfer.replay(data, "1", None)]  # type: ignore[arg-type]
    await transfer.import_file(data, "2", None)  # type: ignore[arg-type]
    await manager.close()
    assert updates == [no_change()]  # nothing shown
    assert said == [
        said[1].replace("Could not import: ", "Could not replay: "),
        said[1],
    ]
    assert said[1].startswith("Could not import: message 0")


async def test_a_replay_of_a_file_that_is_not_json_says_the_replay_file_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said "Could not replay: the import is not valid JSON", though nothing was imported;
    an import of the same file still says "the import"."""
    said: list[str] = []
    monkeypatch.setattr(gr, "Warning", lambda message, *_a, **_k: said.append(message))
    _page, manager, handlers = await page_handlers(tmp_path)
    transfer = Transfer(handlers)
    updates = [update async for update in transfer.replay(b"{", "1", None)]  # type: ignore[arg-type]
    await transfer.import_file(b"{", "2", None)  # type: ignore[arg-type]
    await manager.close()
    assert updates == [no_change()]  # nothing shown
    replayed, imported = said
    assert replayed.startswith("Could not replay: the replay file is not valid JSON: "), said
    assert imported.startswith("Could not import: the import is not valid JSON: "), said


async def test_a_replay_shows_the_page_as_for_a_new_chat_not_the_chat_shown_before(
    tmp_path: Path,
) -> None:
    """The replay changed only the view: the list kept the chat shown before chosen (so
    picking it again did nothing), and its title and settings stayed in their boxes."""
    page, manager, handlers = await page_handlers(tmp_path)
    settings = SessionSettings(system_prompt="Answer in French.", temperature=0.2)
    shown = await manager.create("local", title="The chat shown before", settings=settings)
    tab = tab_of(None)
    await handlers.streams.supersede(tab, 1, shown.id)
    handlers.opened(tab, shown)
    record = SessionRecord(owner="local", title="Replayed")
    data = json.dumps(export_session(record, [Message(role=Role.USER, content="hi")])).encode()
    transfer = Transfer(handlers, step_s=0.0)
    updates = [update async for update in transfer.replay(data, "2", None)]  # type: ignore[arg-type]
    await manager.close()
    first = updates[0]
    assert first[page.session_id] == ""
    assert first[page.rename_box] == ""
    assert first[page.system_prompt] == SessionSettings().system_prompt
    assert first[page.temperature] == 1.0
    listed = first[page.session_list]
    assert listed["value"] is None
    assert [value for _label, value in listed["choices"]] == [shown.id]
    base = Base.decode(first[page.form_base])
    assert base is not None and base.session_id == ""
    assert handlers.streams.shown(tab) == ""
    later = [key for update in updates[1:] for key in update]
    assert later and set(later) == {page.chatbot}  # the steps change the chat only
    assert "End of the replay" in str(updates[-1][page.chatbot])
