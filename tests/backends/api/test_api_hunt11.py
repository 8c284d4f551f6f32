"""The API as QA met it: a misspelt tool permission, a login sent without credentials,
fixed paths taken for session ids, an image's unknown field, long path segments echoed,
a retry of a message the chat never had, import and replay bodies that are not JSON,
titles holding control characters, and token counts without an upper bound. Real server,
real HTTP, real SQLite in tmp_path."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from typing import Any

import pytest

from backends.api.client import ApiError, GuiAgentClient
from gui_agent.store import DB_FILE_NAME
from schema import PermissionMode
from schema.requests import MAX_TOKEN_COUNT
from tests.backends.api.live import ALICE, Api, Backend, is_idle


def error_of(response: Any) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, str] = body["error"]
    return error


# -- 1. a tool permission names a tool the chat has ---------------------------------------


def test_a_permission_for_a_tool_the_chat_lacks_is_refused_on_create_and_patch(
    backend: Backend, api: Api
) -> None:
    """A typo in a deny left the tool running: the map was stored as sent."""
    created = api.post("/api/sessions", json={"settings": {"permissions": {"run_pyhton": "deny"}}})
    assert created.status_code == 400, created.text
    message = error_of(created)["message"]
    assert "no tool 'run_pyhton'" in message and "did you mean 'run_python'?" in message
    assert "its tools: run_python, list_files" in message
    assert api.get("/api/sessions").json()["sessions"] == []  # nothing was made

    session_id = api.create_session(settings={"permissions": {"run_python": "deny"}})
    url = f"/api/sessions/{session_id}"
    patched = api.request("PATCH", url, json={"settings": {"permissions": {"write_flie": "deny"}}})
    assert patched.status_code == 400, patched.text
    assert "no tool 'write_flie'" in error_of(patched)["message"]
    assert api.session(session_id)["session"]["settings"]["permissions"] == {"run_python": "deny"}

    # A new chat takes a mode for every tool it will have (those its tools list shows).
    tools = [tool["name"] for tool in api.get(f"{url}/tools").json()["tools"]]
    every = {name: "ask" for name in tools}
    assert (
        api.session(api.create_session(settings={"permissions": every}))["session"]["settings"][
            "permissions"
        ]
        == every
    )


def test_a_permission_the_chat_already_had_can_be_sent_back(backend: Backend, api: Api) -> None:
    """The map as it was read (naming a tool the server no longer offers) saves again."""
    session_id = api.create_session()

    async def keep_an_old_mode() -> None:
        interpreter = await backend.manager.get(session_id, "local")
        settings = interpreter.session.settings
        old = settings.model_copy(update={"permissions": {"old_tool": PermissionMode.DENY}})
        await backend.manager.update(interpreter, settings=old)

    backend.server.call(keep_an_old_mode())
    sent = {"old_tool": "deny", "read_file": "allow"}
    patched = api.request(
        "PATCH", f"/api/sessions/{session_id}", json={"settings": {"permissions": sent}}
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["session"]["settings"]["permissions"] == sent


# -- 2. a login without credentials where they are needed ---------------------------------


def test_a_login_without_credentials_on_a_password_server_says_they_are_needed(
    two_users: Backend,
) -> None:
    http = two_users.client().http
    for response in (http.post("/api/login"), http.post("/api/login", json={})):
        assert response.status_code == 400, response.text
        assert error_of(response)["message"].startswith(
            "this server signs in with a user name and password"
        )
    # A sign-in form sent as it was left (both empty, or one) says which is empty
    for sent, said in [
        ({"username": "", "password": ""}, "the user name and the password are empty: type them"),
        ({"username": "alice", "password": ""}, "the password is empty: type it"),
        ({"username": "", "password": "x"}, "the user name is empty: type it"),
    ]:
        response = http.post("/api/login", json=sent)
        assert response.status_code == 400, response.text
        assert error_of(response)["message"] == f"{said} to sign in"
    client = GuiAgentClient(two_users.base_url)
    try:
        with pytest.raises(ApiError, match="signs in with a user name and password") as refused:
            client.login()
        assert refused.value.status == 400
        assert client.login(*ALICE).user == ALICE[0]  # and the right ones still work
    finally:
        client.close()


def test_a_login_with_misspelt_field_names_names_them_first(two_users: Backend) -> None:
    http = two_users.client().http
    response = http.post("/api/login", json={"user": "alice", "pass": "x"})
    assert response.status_code == 400, response.text
    assert error_of(response)["message"] == (
        "unknown field(s) 'user', 'pass'; username: Field required (and 1 more problem(s))"
    )


# -- 3. a fixed path is no session id -----------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("POST", "/api/sessions/changes", "GET"),
        ("DELETE", "/api/sessions/changes", "GET"),
        ("GET", "/api/sessions/import", "POST"),
        ("PATCH", "/api/sessions/import", "POST"),
        ("DELETE", "/api/sessions/import", "POST"),
        ("GET", "/api/sessions/replay", "POST"),
        ("HEAD", "/api/sessions/replay", "POST"),
    ],
)
def test_a_fixed_path_under_sessions_names_its_own_methods(
    api: Api, method: str, path: str, allowed: str
) -> None:
    """They were answered as /api/sessions/{session_id}: 404 "no such session", or 405
    naming the session's methods."""
    response = api.request(method, path)
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allowed
    if method != "HEAD":
        assert error_of(response)["message"].endswith(f"it takes {allowed}")


def test_a_session_path_still_names_the_sessions_methods(api: Api) -> None:
    session_id = api.create_session()
    response = api.post(f"/api/sessions/{session_id}")
    assert response.status_code == 405 and response.headers["allow"] == "DELETE, GET, PATCH"
    assert api.get(f"/api/sessions/{session_id}").status_code == 200


# -- 4. an image's unknown field ----------------------------------------------------------


def test_an_unknown_field_of_an_image_is_refused_not_dropped(api: Api) -> None:
    session_id = api.create_session()
    image = {"media_type": "image/png", "url": "https://example.com/x.png", "detail": "high"}
    url = f"/api/sessions/{session_id}"
    sent = api.post(f"{url}/messages", json={"text": "a", "images": [image]})
    assert sent.status_code == 400, sent.text
    assert "images.0.detail" in error_of(sent)["message"]
    edit = {"action": "edit_last", "text": "a", "images": [image]}
    edited = api.post(f"{url}/control", json=edit)
    assert edited.status_code == 400 and "images.0.detail" in error_of(edited)["message"]
    assert api.messages(session_id) == []


# -- 5. what an error repeats of a path ---------------------------------------------------


def test_an_error_repeats_only_the_start_of_a_long_path_segment(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}"
    cases = [
        ("PUT", f"{url}/tools/{'x' * 20_000}", {"mode": "deny"}, 400, "x"),
        ("POST", f"{url}/approvals/{'y' * 5_000}", {"decision": "deny"}, 404, "y"),
        ("GET", f"/api/{'z' * 5_000}", None, 404, "z"),
    ]
    for method, path, body, status, char in cases:
        response = api.request(method, path, json=body)
        assert response.status_code == status, response.text[:300]
        message = error_of(response)["message"]
        assert len(response.content) < 600, message[:300]
        assert char * 150 + "…" in message  # said, shortened with an ellipsis


# -- 6. a retry of a message the chat never had -------------------------------------------


def test_a_retry_naming_no_message_of_the_chat_is_no_such_message(api: Api) -> None:
    """It was 409 "another was sent since (in another tab or window)"."""
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "hello")
        stream.until(is_idle)
    url = f"/api/sessions/{session_id}/control"
    for action in ({"action": "retry"}, {"action": "edit_last", "text": "edited"}):
        response = api.post(url, json={**action, "message_id": "nope"})
        assert response.status_code == 400, response.text
        assert "no such message in this chat" in error_of(response)["message"]
    reply = api.messages(session_id)[-1].id
    response = api.post(url, json={"action": "retry", "message_id": reply})
    assert response.status_code == 400 and "not yours" in error_of(response)["message"]
    assert api.messages(session_id)[0].content == "hello"


# -- 7. import and replay bodies that are not JSON ----------------------------------------


@pytest.mark.parametrize("path", ["/api/sessions/import", "/api/sessions/replay"])
@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"", "the request body is empty"),
        (b"  \n", "the request body is empty"),
        (b"{", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
    ],
    ids=["empty", "blank", "broken", "array"],
)
def test_import_and_replay_refuse_a_body_that_is_not_json_as_every_endpoint_does(
    api: Api, path: str, body: bytes, words: str
) -> None:
    headers = {"Content-Type": "application/json"}
    response = api.post(path, content=body, headers=headers)
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "invalid_json" and words in error["message"], error
    assert "Expecting value" not in error["message"]


# -- 8. titles are one plain line ---------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("a\nb\tc", "a b c"),
        ("\u0000\u0001", ""),
        ("left\u202eright\u2066x\u2069", "leftrightx"),
        ("  two\r\n\r\nlines  ", "two lines"),
        ("Plan 👩\u200d💻", "Plan 👩\u200d💻"),  # a joiner inside an emoji stays
    ],
    ids=["newline-tab", "controls", "bidi", "crlf", "emoji"],
)
def test_a_title_is_kept_as_one_plain_line(
    backend: Backend, api: Api, sent: str, kept: str
) -> None:
    session_id = api.create_session()
    patched = api.request("PATCH", f"/api/sessions/{session_id}", json={"title": sent})
    assert patched.status_code == 200, patched.text
    assert patched.json()["session"]["title"] == kept
    listed = api.get("/api/sessions").json()["sessions"]
    assert [s["title"] for s in listed if s["id"] == session_id] == [kept]  # as stored


def test_every_way_a_title_is_set_keeps_it_plain(backend: Backend, api: Api) -> None:
    """Created with one, renamed by the page (the manager), the first message's, imported."""
    created = api.create_session(title="new\nchat\u202e")
    assert api.session(created)["session"]["title"] == "new chat"

    async def rename_as_the_page_does() -> str:
        interpreter = await backend.manager.get(created, "local")
        await backend.manager.update(interpreter, title="from\tthe\x00page")
        return interpreter.session.title

    assert backend.server.call(rename_as_the_page_does()) == "from thepage"

    first = api.create_session()
    with api.events(first) as stream:
        api.send(first, "\u202eFirst\nmessage")
        stream.until(is_idle)
    assert api.session(first)["session"]["title"] == "First message"

    exported = json.loads(api.get(f"/api/sessions/{created}/export").content)
    exported["session"]["title"] = "imported\u202e\nchat"
    imported = api.post("/api/sessions/import", content=json.dumps(exported))
    assert imported.status_code == 201, imported.text
    new_id = imported.json()["session"]["id"]
    listed = api.get("/api/sessions").json()["sessions"]
    assert [s["title"] for s in listed if s["id"] == new_id] == ["imported chat"]


# -- 9. token counts have an upper bound --------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"settings": {"max_tokens": 10**29}}, "settings.max_tokens"),
        ({"settings": {"memory_token_budget": MAX_TOKEN_COUNT + 1}}, "memory_token_budget"),
        ({"autochat": {"token_budget": 10**29}}, "autochat.token_budget"),
    ],
    ids=["max-tokens", "memory-budget", "autochat-budget"],
)
def test_a_token_count_past_the_bound_is_refused(
    api: Api, body: dict[str, Any], words: str
) -> None:
    session_id = api.create_session()
    before = api.session(session_id)["session"]
    response = api.request("PATCH", f"/api/sessions/{session_id}", json=body)
    assert response.status_code == 400, response.text
    message = error_of(response)["message"]
    assert words in message and f"{MAX_TOKEN_COUNT}" in message
    assert api.session(session_id)["session"] == before


def test_every_count_a_person_might_set_is_taken(api: Api) -> None:
    settings = {"max_tokens": 128_000, "memory_token_budget": 10_000_000}
    session_id = api.create_session(settings=settings)
    url = f"/api/sessions/{session_id}"
    limits = {"settings": {"max_tokens": MAX_TOKEN_COUNT}, "autochat": {"token_budget": 10**9}}
    patched = api.request("PATCH", url, json=limits)
    assert patched.status_code == 200, patched.text
    session = patched.json()["session"]
    assert session["settings"]["max_tokens"] == MAX_TOKEN_COUNT
    assert session["settings"]["memory_token_budget"] == 10_000_000
    assert session["autochat"]["token_budget"] == 10**9


def test_a_temperature_that_is_not_a_number_says_so(api: Api) -> None:
    session_id = api.create_session()
    for value in ("NaN", "Infinity"):
        response = api.request(
            "PATCH",
            f"/api/sessions/{session_id}",
            content=f'{{"settings": {{"temperature": {value}}}}}',
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 400, response.text
        assert (
            error_of(response)["message"] == "settings.temperature: Input should be a finite number"
        )


def test_a_chat_saved_with_a_count_past_the_bound_still_lists_and_opens(
    backend: Backend, api: Api
) -> None:
    """Saved before the bound existed: reading it back must not fail the whole list."""
    session_id = api.create_session(title="saved before the bound")
    backend.server.call(backend.manager.release(session_id))
    with closing(sqlite3.connect(backend.data_dir / DB_FILE_NAME)) as db, db:
        (settings,) = db.execute(
            "SELECT settings FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        old = {**json.loads(settings), "max_tokens": 10**29}
        db.execute("UPDATE sessions SET settings = ? WHERE id = ?", (json.dumps(old), session_id))
    listed = api.get("/api/sessions")
    assert listed.status_code == 200, listed.text
    assert [s["id"] for s in listed.json()["sessions"]] == [session_id]
    assert api.session(session_id)["session"]["settings"]["max_tokens"] == MAX_TOKEN_COUNT


# -- 9. endpoints that take no body refuse one they cannot have meant ------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/sessions/{id}/stop"),
        ("DELETE", "/api/sessions/{id}/allowed-tools"),
        ("DELETE", "/api/sessions/{id}"),
        ("POST", "/api/logout"),
    ],
    ids=["stop", "forget-allowed", "delete", "logout"],
)
def test_an_endpoint_that_takes_no_body_refuses_one_and_does_nothing(
    api: Api, method: str, path: str
) -> None:
    session_id = api.create_session(title="kept")
    url = path.format(id=session_id)
    json_type = {"Content-Type": "application/json"}
    broken = api.request(method, url, content=b"garbage{", headers=json_type)
    assert broken.status_code == 400 and error_of(broken)["code"] == "invalid_json"
    plain = api.request(method, url, content=b"garbage{", headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415, plain.text
    fields = api.request(method, url, content=b'{"session_id": "x"}', headers=json_type)
    assert fields.status_code == 400, fields.text
    assert error_of(fields) == {
        "code": "invalid_request",
        "message": "this endpoint takes no body (it was sent 'session_id')",
    }
    assert api.get(f"/api/sessions/{session_id}").status_code == 200  # nothing was done
    assert api.get("/api/sessions").status_code == 200  # still signed in
    done = api.request(method, url, content=b"{}", headers=json_type)
    assert done.status_code in (200, 204), done.text
