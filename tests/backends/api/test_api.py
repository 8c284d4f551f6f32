"""The HTTP + SSE API, end to end: a real uvicorn server, real HTTP, real SQLite."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from backends.api import DEFAULT_MAX_BODY_BYTES
from connectors.scripted import call
from schema import (
    MAX_MESSAGE_CHARS,
    ApprovalRequested,
    ApprovalResolved,
    Event,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    MessageType,
    Role,
    RunFinished,
    StateChanged,
    TextDelta,
)
from tests.backends.api.live import Api, Backend, is_idle, running_backend

SCRIPTED_REPLY = "Hello from the scripted model."


def completed(events: list[Event]) -> list[MessageCompleted]:
    return [e for e in events if isinstance(e, MessageCompleted)]


def error_of(response: object) -> dict[str, str]:
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]


# -- login and discovery -----------------------------------------------------------------


def test_login_without_configured_users_issues_a_token_for_local(backend: Backend) -> None:
    client = backend.client()
    response = client.http.post("/api/login")
    assert response.status_code == 200
    body = response.json()
    assert body["user"] == "local" and body["token_type"] == "bearer"
    assert backend.tokens.verify(body["token"]).subject == "local"
    assert body["expires_at"].startswith("20")

    client.token = body["token"]
    models = client.get("/api/models").json()
    assert models["default"] == "scripted"
    assert [m["name"] for m in models["models"]] == ["scripted", "slow"]
    assert models["left_out"] == []  # (no model the environment named was left out)
    agents = client.get("/api/agents").json()
    assert "AGENT_EXECUTOR" in [a["name"] for a in agents["agents"]]
    assert all(a["description"] for a in agents["agents"])


def test_health_needs_no_token_and_everything_else_does(backend: Backend) -> None:
    client = backend.client()
    assert client.http.get("/api/health").json()["status"] == "ok"
    response = client.http.get("/api/sessions")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert error_of(response)["code"] == "unauthorized"


# -- a turn over SSE ----------------------------------------------------------------------


def test_a_message_streams_text_deltas_then_the_completed_reply(api: Api) -> None:
    session_id = api.create_session()
    with api.events(session_id) as stream:
        assert stream.hello["state"] == "INIT"
        assert stream.hello["protocol_version"] and stream.hello["resync"] is False
        # The session id may be in the body too, when it is the path's.
        response = api.post(
            f"/api/sessions/{session_id}/messages",
            json={"text": "hi there", "session_id": session_id},
        )
        assert response.status_code == 202
        message_id = response.json()["message_id"]
        events = stream.until(is_idle)

    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(e.session_id == session_id for e in events)
    user, reply = completed(events)
    assert user.message.id == message_id and user.message.content == "hi there"
    started = next(e for e in events if isinstance(e, MessageStarted))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1 and all(d.message_id == started.message_id for d in deltas)
    assert "".join(d.delta for d in deltas) == SCRIPTED_REPLY
    last_delta = events.index(deltas[-1])
    assert events.index(reply) > last_delta
    assert reply.message.content == SCRIPTED_REPLY and reply.message.role is Role.ASSISTANT

    detail = api.session(session_id)
    assert detail["state"] == "STOP" and detail["session"]["title"] == "hi there"
    assert [m["content"] for m in detail["messages"]] == ["hi there", SCRIPTED_REPLY]
    assert detail["last_seq"] == events[-1].seq


def test_run_python_waits_for_approval_and_runs_when_allowed(backend: Backend, api: Api) -> None:
    backend.scripted.push(call("run_python", code="print(6*7)"), "The answer is 42.")
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "what is 6 times 7?")
        before = stream.until(lambda e: isinstance(e, ApprovalRequested))
        request = before[-1]
        assert isinstance(request, ApprovalRequested) and request.call.name == "run_python"
        states = [e.to_state.value for e in before if isinstance(e, StateChanged)]
        assert states[-1] == "WAITING"
        assert api.session(session_id)["pending_approvals"][0]["approval_id"] == (
            request.approval_id
        )
        response = api.post(
            f"/api/sessions/{session_id}/approvals/{request.approval_id}",
            json={"decision": "allow_once"},
        )
        assert response.status_code == 200, response.text
        after = stream.until(is_idle)

    resolved = next(e for e in after if isinstance(e, ApprovalResolved))
    assert resolved.decision.value == "allow_once" and resolved.by == "user"
    tool = next(e.message for e in completed(after) if e.message.role is Role.TOOL)
    assert tool.type is MessageType.CONSOLE
    assert "42" in tool.content and not tool.metadata["is_error"]
    assert completed(after)[-1].message.content == "The answer is 42."
    assert api.session(session_id)["pending_approvals"] == []


def test_a_denied_run_python_never_runs(backend: Backend, api: Api) -> None:
    backend.scripted.push(call("run_python", code="print(6*7)"), "Understood, not running it.")
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "compute it")
        request = stream.until(lambda e: isinstance(e, ApprovalRequested))[-1]
        assert isinstance(request, ApprovalRequested)
        response = api.post(
            f"/api/sessions/{session_id}/approvals/{request.approval_id}",
            json={"decision": "deny", "note": "not now"},
        )
        assert response.status_code == 200
        after = stream.until(is_idle)

    resolved = next(e for e in after if isinstance(e, ApprovalResolved))
    assert resolved.decision.value == "deny" and resolved.note == "not now"
    tool = next(e.message for e in completed(after) if e.message.role is Role.TOOL)
    assert tool.metadata["is_error"] and "42" not in tool.content
    assert completed(after)[-1].message.content == "Understood, not running it."


def test_answering_an_approval_that_is_not_open_is_404(api: Api) -> None:
    session_id = api.create_session()
    response = api.post(
        f"/api/sessions/{session_id}/approvals/nope", json={"decision": "allow_once"}
    )
    assert response.status_code == 404
    assert "nope" in error_of(response)["message"]
    bad = api.post(f"/api/sessions/{session_id}/approvals/nope", json={"decision": "maybe"})
    assert bad.status_code == 400 and "decision" in error_of(bad)["message"]


def test_stop_mid_stream_keeps_the_partial_reply_marked_interrupted(api: Api) -> None:
    session_id = api.create_session(model="slow")
    with api.events(session_id) as stream:
        api.send(session_id, "talk for a while")
        stream.until(lambda e: isinstance(e, TextDelta) and e.delta.startswith("tick3 "))
        response = api.post(f"/api/sessions/{session_id}/stop")
        assert response.status_code == 200 and response.json() == {"stopped": True}
        rest = stream.until(is_idle)

    partial = completed(rest)[-1].message
    assert partial.status is MessageStatus.INTERRUPTED
    assert partial.content.startswith("tick0 tick1 tick2 tick3 ")
    assert "tick2999" not in partial.content
    finished = next(e for e in rest if isinstance(e, RunFinished))
    assert finished.outcome.value == "interrupted"
    stored = api.messages(session_id)[-1]
    assert stored.id == partial.id and stored.status is MessageStatus.INTERRUPTED
    again = api.post(f"/api/sessions/{session_id}/stop")
    assert again.json() == {"stopped": False}


def test_last_event_id_replays_what_the_client_missed(api: Api) -> None:
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "first")
        live = stream.until(is_idle)
    last = live[-1].seq

    with api.events(session_id, last_event_id=3) as stream:
        assert stream.hello["replayed"] == last - 3 and stream.hello["resync"] is False
        replayed = stream.until(lambda e: e.seq == last)
    assert [e.seq for e in replayed] == list(range(4, last + 1))
    assert [e.model_dump() for e in replayed] == [e.model_dump() for e in live[3:]]

    with api.events(session_id, since=0) as stream:
        assert stream.until(lambda e: e.seq == last)[0].seq == 1
        # ...and then it follows the session live.
        api.send(session_id, "second")
        more = stream.until(is_idle)
    assert more[0].seq == last + 1
    assert completed(more)[0].message.content == "second"

    with api.events(session_id, last_event_id=10_000) as stream:
        assert stream.hello["resync"] is True and stream.hello["replayed"] == 0

    # A seq from an earlier run of the session's numbers (another epoch) is not replayed.
    epoch = api.session(session_id)["epoch"]
    with api.events(session_id, since=3, epoch=epoch) as stream:
        assert stream.hello["epoch"] == epoch and stream.hello["resync"] is False
        assert stream.next().seq == 4
    with api.events(session_id, since=3, epoch="an-older-epoch") as stream:
        assert stream.hello["resync"] is True and stream.hello["replayed"] == 0

    bad = api.get(f"/api/sessions/{session_id}/events", params={"since": "abc"})
    assert bad.status_code == 400


def test_an_event_id_from_before_a_restart_asks_the_client_to_reload(tmp_path: Path) -> None:
    # A browser's EventSource reconnects with the last id it saw and nothing else; the
    # epoch in the id tells the server those numbers belong to an earlier run.
    with running_backend(tmp_path) as backend:
        api = backend.client().login()
        session_id = api.create_session()
        with api.events(session_id) as stream:
            api.send(session_id, "first")
            seen = stream.until(is_idle)
            old_id = f"{stream.hello['epoch']}-{seen[-1].seq}"
    with running_backend(tmp_path) as backend:
        api = backend.client().login()
        with api.events(session_id) as stream:
            api.send(session_id, "second")
            again = stream.until(is_idle)
            api.send(session_id, "third")  # the new numbers go past the old ones
            again += stream.until(is_idle)
            epoch = stream.hello["epoch"]
        assert epoch != old_id.split("-", maxsplit=1)[0] and again[-1].seq > seen[-1].seq
        with api.events(session_id, last_event_id=old_id) as stream:
            assert stream.hello["resync"] is True and stream.hello["replayed"] == 0
        with api.events(session_id, last_event_id=f"{epoch}-{again[2].seq}") as stream:
            assert stream.hello["resync"] is False
            assert stream.hello["replayed"] == len(again) - 3
            assert stream.next().seq == again[3].seq


def test_idle_streams_get_keepalive_comments(tmp_path: Path) -> None:
    from tests.backends.api.live import iter_sse

    with running_backend(tmp_path, keepalive_s=0.1) as backend:
        api = backend.client().login()
        session_id = api.create_session()
        url = f"/api/sessions/{session_id}/events"
        with api.http.stream("GET", url, headers=api.headers) as response:
            items = iter_sse(response, comments=True)
            assert next(items).event == "hello"
            assert next(items).event == "comment"
            assert next(items).event == "comment"


def test_a_disconnected_client_leaves_no_stream_task_behind(backend: Backend, api: Api) -> None:
    session_id = api.create_session()
    with api.events(session_id) as stream:
        assert stream.hello["session_id"] == session_id

    async def stream_tasks() -> list[str]:
        names = {"sse-writer", "sse-disconnect", "sse-next-event"}
        for _ in range(200):  # bounded: the server notices the hang-up within milliseconds
            left = [t.get_name() for t in asyncio.all_tasks() if t.get_name() in names]
            if not left:
                return left
            await asyncio.sleep(0.01)
        return left

    assert backend.server.call(stream_tasks()) == []


# -- bad requests -------------------------------------------------------------------------


def test_malformed_json_is_refused_with_a_clear_error(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}/messages"
    broken = api.post(url, content=b'{"text": "hi"', headers={"Content-Type": "application/json"})
    assert broken.status_code == 400
    assert error_of(broken)["code"] == "invalid_json"
    assert "not valid JSON" in error_of(broken)["message"]
    not_object = api.post(url, json=["hi"])
    assert not_object.status_code == 400 and "JSON object" in error_of(not_object)["message"]
    wrong_type = api.post(url, json={"text": 5})
    assert wrong_type.status_code == 400 and "text" in error_of(wrong_type)["message"]
    typo = api.request("PATCH", f"/api/sessions/{session_id}", json={"titel": "x"})
    assert typo.status_code == 400 and "titel" in error_of(typo)["message"]


def test_empty_and_too_long_messages_are_refused(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}/messages"
    empty = api.post(url, json={"text": "   "})
    assert empty.status_code == 400 and "empty" in error_of(empty)["message"]
    too_long = api.post(url, json={"text": "x" * (MAX_MESSAGE_CHARS + 1)})
    assert too_long.status_code == 400
    assert str(MAX_MESSAGE_CHARS) in error_of(too_long)["message"].replace(",", "")
    file_image = api.post(url, json={"text": "look", "images": [{"url": "file:///etc/passwd"}]})
    assert file_image.status_code == 400 and "http" in error_of(file_image)["message"]
    assert api.session(session_id)["messages"] == []


def test_an_oversized_body_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    with running_backend(tmp_path, max_body_bytes=50_000) as backend:
        api = backend.client().login()
        session_id = api.create_session()
        url = f"/api/sessions/{session_id}/messages"
        # Not even valid JSON: the size is checked first.
        response = api.post(
            url, content=b"{" * 60_000, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 413
        assert error_of(response)["code"] == "too_large"
        assert api.post(url, json={"text": "small"}).status_code == 202
    assert DEFAULT_MAX_BODY_BYTES > 4 * MAX_MESSAGE_CHARS


def test_unknown_sessions_and_endpoints_are_404_json(api: Api) -> None:
    response = api.get("/api/sessions/does-not-exist")
    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert api.get("/api/sessions/" + "a" * 500).status_code == 404
    nowhere = api.get("/api/nowhere")
    assert nowhere.status_code == 404 and error_of(nowhere)["code"] == "not_found"


# -- session management -------------------------------------------------------------------


def test_sessions_are_listed_searched_patched_and_deleted(api: Api) -> None:
    first = api.create_session(title="Alpha project")
    second = api.create_session(model="slow")
    listed = api.get("/api/sessions").json()["sessions"]
    assert {s["id"] for s in listed} == {first, second}
    found = api.get("/api/sessions", params={"q": "alpha"}).json()["sessions"]
    assert [s["id"] for s in found] == [first]
    page = api.get("/api/sessions", params={"limit": 1, "offset": 1}).json()["sessions"]
    assert [s["id"] for s in page] == [listed[1]["id"]]
    assert api.get("/api/sessions", params={"limit": 0}).status_code == 400
    assert api.get("/api/sessions", params={"limit": "many"}).status_code == 400

    patch = api.request(
        "PATCH",
        f"/api/sessions/{first}",
        json={
            "title": "Renamed",
            "model": "slow",
            "agent": "THOUGHT",
            "autochat": {"enabled": False, "max_turns": 3},
            "settings": {"system_prompt": "Be brief.", "temperature": 0.5},
        },
    )
    assert patch.status_code == 200, patch.text
    record = patch.json()["session"]
    assert record["title"] == "Renamed" and record["agent"] == "THOUGHT"
    assert record["settings"]["model"] == "slow"
    assert record["settings"]["system_prompt"] == "Be brief."
    assert record["autochat"]["max_turns"] == 3
    assert api.session(first)["session"] == record

    unknown = api.request("PATCH", f"/api/sessions/{first}", json={"model": "gpt-9"})
    assert unknown.status_code == 400 and "gpt-9" in error_of(unknown)["message"]
    assert api.session(first)["session"]["settings"]["model"] == "slow"

    assert api.request("DELETE", f"/api/sessions/{second}").status_code == 204
    assert api.get(f"/api/sessions/{second}").status_code == 404
    assert [s["id"] for s in api.get("/api/sessions").json()["sessions"]] == [first]


def test_a_session_read_with_a_limit_gives_its_newest_messages_up_to_all_of_them(
    backend: Backend, api: Api
) -> None:
    """A limit just over the message count gave too few (the newest 1 of 4 for 5): the
    slice began at the count minus the limit, which Python counts from the end."""
    session_id = api.create_session()
    backend.scripted.push("first answer", "second answer")
    with api.events(session_id) as stream:
        for text in ("first question", "second question"):
            api.send(session_id, text)
            stream.until(is_idle)
    url = f"/api/sessions/{session_id}"
    everything = [m["content"] for m in api.get(url).json()["messages"]]
    assert everything == ["first question", "first answer", "second question", "second answer"]
    for limit in range(9):
        detail = api.get(url, params={"limit": limit}).json()
        assert [m["content"] for m in detail["messages"]] == everything[4 - min(limit, 4) :]
        assert detail["message_count"] == 4


def test_control_retries_edits_and_clears(backend: Backend, api: Api) -> None:
    session_id = api.create_session()
    backend.scripted.push("first answer", "second answer", "third answer")
    with api.events(session_id) as stream:
        api.send(session_id, "question")
        stream.until(is_idle)
        retry = api.post(f"/api/sessions/{session_id}/control", json={"action": "retry"})
        assert retry.status_code == 202, retry.text
        stream.until(is_idle)
        assert [m.content for m in api.messages(session_id)] == ["question", "second answer"]

        edit = api.post(
            f"/api/sessions/{session_id}/control", json={"action": "edit_last", "text": "better"}
        )
        assert edit.status_code == 202
        stream.until(is_idle)
        assert [m.content for m in api.messages(session_id)] == ["better", "third answer"]

    no_text = api.post(f"/api/sessions/{session_id}/control", json={"action": "edit_last"})
    assert no_text.status_code == 400
    clear = api.post(f"/api/sessions/{session_id}/control", json={"action": "clear"})
    assert clear.status_code == 200
    assert api.messages(session_id) == []
    nothing = api.post(f"/api/sessions/{session_id}/control", json={"action": "retry"})
    assert nothing.status_code == 400


def test_an_edit_of_a_message_another_tab_followed_is_refused_and_changes_nothing(
    backend: Backend, api: Api
) -> None:
    """edit_last edits the person's last message: from a tab that began editing before
    another tab sent one, it replaced that newer message and dropped its reply."""
    session_id = api.create_session()
    backend.scripted.push("first answer", "second answer", "edited answer")
    with api.events(session_id) as stream:
        for text in ("mine, being edited", "sent since, from another tab"):
            api.send(session_id, text)
            stream.until(is_idle)
        meant = api.messages(session_id)[0].id
        url = f"/api/sessions/{session_id}/control"
        stale = api.post(url, json={"action": "edit_last", "text": "edited", "message_id": meant})
        assert stale.status_code == 409, stale.text
        assert "another was sent since" in error_of(stale)["message"]
        assert api.post(url, json={"action": "retry", "message_id": meant}).status_code == 409
        assert [m.content for m in api.messages(session_id)] == [
            "mine, being edited",
            "first answer",
            "sent since, from another tab",
            "second answer",
        ]
        clear = api.post(url, json={"action": "clear", "message_id": meant})
        assert clear.status_code == 400
        last = api.messages(session_id)[2].id
        edited = api.post(url, json={"action": "edit_last", "text": "edited", "message_id": last})
        assert edited.status_code == 202, edited.text
        stream.until(is_idle)
    assert [m.content for m in api.messages(session_id)][2:] == ["edited", "edited answer"]


# -- export and import --------------------------------------------------------------------


def test_export_then_import_makes_an_equal_new_session(api: Api) -> None:
    session_id = api.create_session(title="Keep me")
    with api.events(session_id) as stream:
        api.send(session_id, "remember <script>alert(1)</script>")
        stream.until(is_idle)

    exported = api.get(f"/api/sessions/{session_id}/export")
    assert exported.status_code == 200
    disposition = exported.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="gui-agent-keep-me-')
    document = exported.json()
    assert document["format"] == "gui-agent-session"
    foreign = json.loads(exported.content)
    foreign["session"]["settings"]["model"] = "openai:a-model-this-server-lacks"
    adopted = api.post("/api/sessions/import", json=foreign)
    assert adopted.json()["session"]["settings"]["model"] == "scripted"
    api.request("DELETE", f"/api/sessions/{adopted.json()['session']['id']}")

    imported = api.post("/api/sessions/import", content=exported.content)
    assert imported.status_code == 201, imported.text
    new = imported.json()["session"]
    assert (
        new["id"] != session_id and new["owner"] == "local" and new["title"] == "Keep me (imported)"
    )
    original, copy = api.messages(session_id), api.messages(new["id"])
    assert [(m.id, m.role, m.content) for m in copy] == [
        (m.id, m.role, m.content) for m in original
    ]
    assert copy[0].content == "remember <script>alert(1)</script>"
    assert len(api.get("/api/sessions").json()["sessions"]) == 2
    # The copy is a working session.
    with api.events(new["id"]) as stream:
        api.send(new["id"], "still there?")
        assert completed(stream.until(is_idle))[-1].message.content == SCRIPTED_REPLY


def test_hostile_imports_are_refused_with_a_reason(tmp_path: Path) -> None:
    with running_backend(tmp_path, max_import_bytes=100_000) as backend:
        api = backend.client().login()
        session_id = api.create_session()
        with api.events(session_id) as stream:
            api.send(session_id, "hello")
            stream.until(is_idle)
        good = api.get(f"/api/sessions/{session_id}/export").json()

        def refused(document: object, *, raw: bytes | None = None) -> str:
            body = raw if raw is not None else json.dumps(document).encode()
            response = api.post("/api/sessions/import", content=body)
            assert response.status_code == 400, response.text
            return error_of(response)["message"]

        file_image = json.loads(json.dumps(good))
        file_image["messages"][0]["images"] = [
            {"media_type": "image/png", "url": "file:///etc/passwd"}
        ]
        assert "http(s)" in refused(file_image)
        path_meta = json.loads(json.dumps(good))
        path_meta["messages"][0]["metadata"] = {"path": "/etc/shadow"}
        assert "path" in refused(path_meta)
        extra = json.loads(json.dumps(good))
        extra["session"]["owner_override"] = "root"
        assert "owner_override" in refused(extra)
        assert "format" in refused({**good, "format": "something-else"})
        assert "JSON" in refused(None, raw=b"\x00\xff not json")
        assert "object" in refused(None, raw=b"[1, 2]")
        too_big = api.post("/api/sessions/import", content=b" " * 200_000)
        assert too_big.status_code == 413
        assert [s["id"] for s in api.get("/api/sessions").json()["sessions"]] == [session_id]


@pytest.mark.parametrize("text", ["plain", "ünïcödé ✓"])
def test_events_round_trip_through_the_event_adapter(api: Api, text: str) -> None:
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, text)
        events = stream.until(is_idle)
    assert completed(events)[0].message.content == text
