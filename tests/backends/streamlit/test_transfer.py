"""The Streamlit front end's export and import (`backends.streamlit.transfer`) against a real
API server: an export as the chat stands, one too large to import back fetched anyway with
its reason in people's words, and an import's answer said as the page says it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends.api.client import GuiAgentClient
from backends.streamlit.transfer import fetch_export
from gui_agent.history_repair import HistoryRepairs
from gui_agent.import_words import import_summary
from tests.backends.api.live import is_idle, running_backend

pytest.importorskip("streamlit")


def chat_of(client: GuiAgentClient, words: str) -> str:
    """A chat holding `words` and the scripted reply, its turn over."""
    session_id = client.create_session(title="Notes: a/b").id
    client.send_message(session_id, words)
    with client.events(session_id, since=0) as stream:
        for event in stream:
            if is_idle(event):
                break
    return session_id


@pytest.fixture
def client(tmp_path: Path) -> Iterator[GuiAgentClient]:
    # an import takes at most 4 KiB here, so a long chat cannot be imported back
    with (
        running_backend(tmp_path, max_import_bytes=4096) as backend,
        GuiAgentClient(backend.base_url) as logged_in,
    ):
        logged_in.login()
        yield logged_in


def test_an_export_holds_the_chat_and_is_named_after_it(client: GuiAgentClient) -> None:
    session_id = chat_of(client, "remember the milk")
    export = fetch_export(client, session_id, "Notes: a/b")
    assert export.problem is None and export.session_id == session_id
    assert export.file_name.startswith("gui-agent-notes-a-b-") and export.file_name.endswith(
        ".json"
    )
    document = json.loads(export.data)
    assert [m["content"] for m in document["messages"]] == [
        "remember the milk",
        "Hello from the scripted model.",
    ]
    answer = client.import_session(export.data)  # and it comes back as a new chat
    assert answer.session.id != session_id and answer.message_count == 2
    assert answer.summary == "Imported 2 messages as a new chat."


def test_a_chat_too_large_to_import_back_is_exported_with_the_reason(
    client: GuiAgentClient,
) -> None:
    session_id = chat_of(client, "x" * 5000)
    export = fetch_export(client, session_id, "")
    assert export.problem is not None
    assert export.problem.startswith("this chat could not be imported back:")
    assert "allow_unimportable" not in export.problem  # the API's hint is not for people
    document = json.loads(export.data)  # the whole chat all the same
    assert document["messages"][0]["content"] == "x" * 5000
    assert export.file_name.startswith("gui-agent-chat-")


def test_what_an_import_did_is_said_in_plain_words() -> None:
    assert import_summary(3, ["autochat.enabled"], HistoryRepairs(2, 0, 1)) == (
        "Imported 3 messages as a new chat. For safety, an import does not carry over "
        "AutoChat being on (switch it on again if you want it). Repaired so that any model "
        "can continue the chat: 2 tool results that answered no call were left out; "
        "1 system message is kept as a note, shown but never sent to the model."
    )
