"""The login cookie: a browser's EventSource cannot send an Authorization header, so the
login also sets the token as an HttpOnly, SameSite=Strict cookie on /api, which the two
event streams (and only they) accept. `POST /api/logout` removes it. Tested over real HTTP,
and with a real browser's EventSource."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser

from tests.backends.api.live import Api, Backend, iter_sse, running_backend

PASSWORD = "correct horse battery staple"


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    with running_backend(tmp_path, users=[("ada", PASSWORD)]) as running:
        yield running


def cookie_login(backend: Backend) -> httpx.Client:
    """A client holding only the login cookie (as a browser would), never sending the
    token in a header."""
    client = httpx.Client(base_url=backend.base_url, timeout=httpx.Timeout(20.0))
    answer = client.post("/api/login", json={"username": "ada", "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return client


def test_the_login_sets_an_httponly_strict_cookie_on_the_api_only(backend: Backend) -> None:
    client = httpx.Client(base_url=backend.base_url)
    answer = client.post("/api/login", json={"username": "ada", "password": PASSWORD})
    set_cookie = answer.headers["set-cookie"]
    assert set_cookie.startswith(f"gui_agent_token={answer.json()['token']};")
    lowered = set_cookie.lower()
    assert "httponly" in lowered and "samesite=strict" in lowered and "path=/api" in lowered
    assert "max-age=" in lowered and "secure" not in lowered  # (plain HTTP: no Secure)
    refused = httpx.post(
        f"{backend.base_url}/api/login", json={"username": "ada", "password": "wrong"}
    )
    assert refused.status_code == 401 and "set-cookie" not in refused.headers
    client.close()


def test_the_event_streams_take_the_cookie_and_nothing_else_does(backend: Backend) -> None:
    owner = backend.client().login("ada", PASSWORD)
    session_id = owner.create_session()
    client = cookie_login(backend)
    with client.stream("GET", "/api/sessions/changes") as changes:
        assert changes.status_code == 200
        hello = next(iter_sse(changes))
        assert hello.event == "hello" and json.loads(hello.data)["user"] == "ada"
    with client.stream("GET", f"/api/sessions/{session_id}/events") as events:
        assert events.status_code == 200
        assert next(iter_sse(events)).event == "hello"
    # Everything else wants the header: the cookie can make nothing happen.
    for method, url, body in (
        ("GET", "/api/sessions", None),
        ("GET", f"/api/sessions/{session_id}", None),
        ("POST", f"/api/sessions/{session_id}/messages", {"text": "hi"}),
        ("POST", "/api/sessions", {}),
        ("DELETE", f"/api/sessions/{session_id}", None),
    ):
        refused = client.request(method, url, json=body)
        assert refused.status_code == 401, (method, url, refused.text)
    assert owner.session(session_id)["messages"] == []  # nothing was sent
    client.close()


def test_a_bad_cookie_is_refused_and_a_header_wins_over_the_cookie(backend: Backend) -> None:
    owner = backend.client().login("ada", PASSWORD)
    session_id = owner.create_session()
    forged = httpx.Client(base_url=backend.base_url, cookies={"gui_agent_token": "not.a.jwt"})
    answer = forged.get(f"/api/sessions/{session_id}/events")
    assert answer.status_code == 401 and "token was refused" in answer.text
    # a bad header is refused even with a good cookie beside it (the header is what counts)
    client = cookie_login(backend)
    answer = client.get(
        f"/api/sessions/{session_id}/events", headers={"Authorization": "Bearer nope"}
    )
    assert answer.status_code == 401
    forged.close()
    client.close()


def test_logout_removes_the_cookie(backend: Backend) -> None:
    client = cookie_login(backend)
    assert client.cookies.get("gui_agent_token")
    answer = client.post("/api/logout")
    assert answer.status_code == 204
    assert "gui_agent_token" not in client.cookies
    refused = client.get("/api/sessions/changes")
    assert refused.status_code == 401
    client.close()


@pytest.mark.browser
def test_a_browsers_eventsource_follows_the_chats_with_the_login_cookie(
    backend: Backend, chromium: Browser
) -> None:
    """What a React front end does: log in with fetch, then open an EventSource (no way to
    give it a header) and see a chat created elsewhere."""
    page = chromium.new_context().new_page()
    page.goto(f"{backend.base_url}/api/health")
    status = page.evaluate(
        """async (password) => {
            const answer = await fetch("/api/login", {
                method: "POST",
                headers: {"Content-Type": "application/json"},
                body: JSON.stringify({username: "ada", password}),
            });
            window.__changes = [];
            const source = new EventSource("/api/sessions/changes");
            source.addEventListener("hello", () => window.__changes.push("hello"));
            source.addEventListener("created", (e) => window.__changes.push(JSON.parse(e.data)));
            return answer.status;
        }""",
        PASSWORD,
    )
    assert status == 200
    assert "gui_agent_token" not in page.evaluate("() => document.cookie")  # HttpOnly
    page.wait_for_function("() => window.__changes.includes('hello')", timeout=20_000)
    owner: Api = backend.client().login("ada", PASSWORD)
    session_id = owner.create_session()
    page.wait_for_function("() => window.__changes.length > 1", timeout=20_000)
    created = page.evaluate("() => window.__changes[1]")
    assert created["kind"] == "created" and created["session_id"] == session_id
    page.context.close()
