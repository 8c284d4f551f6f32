"""A chat deleted while its event stream is open ends that stream saying why, as a signed-out
or removed user's does: a last `event: closed` with a `not_found` error in the API's error
shape, which the Python client keeps in `events.closed`. A reconnect then gets a 404, at
which a browser's bare EventSource stops for good."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from backends.api.client import GuiAgentClient, NotFound
from backends.api.routes_events import DELETED
from connectors.scripted import call
from schema import ApprovalRequested
from tests.backends.api.live import SSE, Api, Backend, EventReader, running_backend


def last_frames(stream: EventReader) -> list[SSE]:
    """Every frame the stream still sends, up to its end."""
    return list(stream.sse)


def test_deleting_a_chat_ends_its_open_stream_with_closed_not_found(
    backend: Backend, api: Api
) -> None:
    backend.scripted.push(call("run_python", code="print(1)"), "done")
    session_id = api.create_session(title="to delete")
    with api.events(session_id) as stream:
        api.send(session_id, "run something")
        stream.until(lambda event: isinstance(event, ApprovalRequested))  # a turn waits

        assert api.request("DELETE", f"/api/sessions/{session_id}").status_code == 204
        frames = last_frames(stream)

    closing = frames[-1]
    assert closing.event == "closed" and closing.id is None
    assert json.loads(closing.data) == {"error": {"code": "not_found", "message": DELETED}}
    assert all(frame.id is not None for frame in frames[:-1])  # the turn's last events
    again = api.get(f"/api/sessions/{session_id}/events")
    assert again.status_code == 404  # an EventSource that reconnects stops at this


def test_the_python_client_says_why_the_stream_of_a_deleted_chat_ended(tmp_path: Path) -> None:
    with (
        running_backend(tmp_path) as backend,
        GuiAgentClient(backend.base_url) as client,
        GuiAgentClient(backend.base_url) as other_tab,
    ):
        client.login()
        other_tab.login()
        chat = client.create_session(title="to delete")
        with client.events(chat.id) as events:
            other_tab.delete_session(chat.id)
            assert list(events) == []  # it ends: no error, no reconnecting
        assert isinstance(events.closed, NotFound)
        assert (events.closed.status, events.closed.code) == (404, "not_found")
        assert events.closed.message == DELETED


# A page of the server's origin follows a chat with a bare EventSource (the login cookie
# stands in for the token) and notes what it is told, until it gives up.
_FOLLOW = """async () => {
  const login = await fetch("/api/login", {method: "POST"});
  const token = (await login.json()).token;
  const headers = {Authorization: `Bearer ${token}`, "Content-Type": "application/json"};
  const made = await fetch("/api/sessions", {method: "POST", headers, body: "{}"});
  const id = (await made.json()).session.id;
  window.seen = {opened: 0, closed: null, state: null};
  const source = new EventSource(`/api/sessions/${id}/events`);
  source.onopen = () => { seen.opened += 1; };
  source.addEventListener("closed", (event) => { seen.closed = JSON.parse(event.data); });
  source.onerror = () => { seen.state = source.readyState; };
  await new Promise((opened) => source.addEventListener("hello", opened, {once: true}));
  await fetch(`/api/sessions/${id}`, {method: "DELETE", headers});
}"""


@pytest.mark.browser
def test_a_browsers_event_source_stops_once_its_chat_is_deleted(
    backend: Backend, chromium: Browser
) -> None:
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(f"{backend.base_url}/api/health")
        page.evaluate(_FOLLOW)
        # `retry: 2000`: it tries once more, is refused (404), and is closed for good.
        page.wait_for_function("() => seen.state === EventSource.CLOSED", timeout=20_000)
        seen = page.evaluate("() => seen")
    finally:
        context.close()
    assert seen["closed"] == {"error": {"code": "not_found", "message": DELETED}}
    assert seen["opened"] == 1
