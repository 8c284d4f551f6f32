"""POST /api/sessions/replay: an export's events in order, for a front end to show the chat
step by step; nothing is saved, and what an import refuses a replay refuses too."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from backends.api.async_client import AsyncGuiAgentClient
from backends.api.client import GuiAgentClient
from connectors.scripted import call
from schema import MessageCompleted, MessageStarted, Role, TextDelta
from schema.events import EVENT_ADAPTER
from tests.backends.api.live import Api, Backend, is_idle, running_backend


def a_chat_with_a_tool_call(backend: Backend, api: Api) -> tuple[str, bytes]:
    """A chat whose turn called a tool, titled; its id and its export."""
    backend.scripted.push(call("list_files"), "The folder is empty.")
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "what is in the folder?")
        stream.until(is_idle)
    renamed = api.request("PATCH", f"/api/sessions/{session_id}", json={"title": "Folder check"})
    assert renamed.status_code == 200, renamed.text
    exported = api.get(f"/api/sessions/{session_id}/export")
    assert exported.status_code == 200, exported.text
    return session_id, exported.content


def test_an_export_is_replayed_message_by_message_and_nothing_is_saved(
    backend: Backend, api: Api
) -> None:
    session_id, exported = a_chat_with_a_tool_call(backend, api)
    messages = api.messages(session_id)
    listed = api.get("/api/sessions").json()["sessions"]
    response = api.post("/api/sessions/replay", content=exported)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["title"] == "Folder check" and body["message_count"] == len(messages) == 4
    parsed = [EVENT_ADAPTER.validate_python(raw) for raw in body["events"]]
    assert [e.seq for e in parsed] == list(range(1, len(parsed) + 1))
    assert {type(e) for e in parsed} == {MessageStarted, TextDelta, MessageCompleted}
    completed = [e.message for e in parsed if isinstance(e, MessageCompleted)]
    assert [m.id for m in completed] == [m.id for m in messages]
    assert [m.role for m in completed] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    text = "".join(
        e.delta for e in parsed if isinstance(e, TextDelta) and e.message_id == completed[-1].id
    )
    assert text == "The folder is empty."
    assert api.get("/api/sessions").json()["sessions"] == listed  # no session was made


def test_a_replay_refuses_what_an_import_refuses_in_the_same_words(api: Api) -> None:
    """The same words, but for the file's name: a replay's is "the replay file"."""
    for bad in (b"not json", b"[1, 2]", json.dumps({"format": "something else"}).encode()):
        replayed = api.post("/api/sessions/replay", content=bad)
        imported = api.post("/api/sessions/import", content=bad)
        assert replayed.status_code == imported.status_code == 400, replayed.text
        assert replayed.json()["error"]["code"] == imported.json()["error"]["code"]
        said = imported.json()["error"]["message"].replace("the import ", "the replay file ")
        assert replayed.json()["error"]["message"] == said
    broken = {
        "format": "gui-agent-session",
        "version": 1,
        "session": {"title": "t"},
        "messages": [{"role": "tool", "content": "a result answering no call"}],
    }
    replayed = api.post("/api/sessions/replay", json=broken)
    assert replayed.status_code == 400
    assert (
        replayed.json()["error"]["message"]
        == api.post("/api/sessions/import", json=broken).json()["error"]["message"]
    )


def test_a_file_that_is_not_json_is_named_a_replay_file_by_the_replay_not_an_import(
    api: Api,
) -> None:
    """A replay said "the import is not valid JSON", of a file nobody was importing."""
    replayed = api.post("/api/sessions/replay", content=b"{")
    assert replayed.status_code == 400, replayed.text
    error = replayed.json()["error"]
    assert error["code"] == "invalid_json"
    assert error["message"].startswith("the replay file is not valid JSON: "), error
    assert "import" not in error["message"], error
    imported = api.post("/api/sessions/import", content=b"{").json()["error"]
    assert imported["message"].startswith("the import is not valid JSON: "), imported


def test_a_replay_over_the_import_limit_is_refused_with_413(tmp_path: Path) -> None:
    with running_backend(tmp_path, max_import_bytes=2_000) as backend:
        api = backend.client().login()
        padded = {
            "format": "gui-agent-session",
            "version": 1,
            "session": {"title": "big"},
            "messages": [{"role": "user", "content": "x" * 3_000}],
        }
        response = api.post("/api/sessions/replay", json=padded)
        assert response.status_code == 413, response.text
        assert response.json()["error"]["code"] == "too_large"


def test_a_replay_needs_a_login(two_users: Backend) -> None:
    response = two_users.client().post("/api/sessions/replay", content=b"{}")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_the_clients_replay_an_export(backend: Backend, api: Api) -> None:
    _session_id, exported = a_chat_with_a_tool_call(backend, api)
    with GuiAgentClient(backend.base_url, token=api.token) as client:
        answer = client.replay_export(exported)
    assert answer.title == "Folder check" and answer.message_count == 4
    assert isinstance(answer.events[-1], MessageCompleted)

    async def replayed() -> int:
        async with AsyncGuiAgentClient(backend.base_url, token=api.token) as client:
            return len((await client.replay_export(json.loads(exported))).events)

    assert asyncio.run(replayed()) == len(answer.events)
