"""What the HTTP API logs stays one printable line, whatever it quotes: a request's path, a
user name, the words of an error, what a server sent the API client. A newline in one would
start a log record of its own (a forged line), an ESC would rewrite the console."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from backends.api.client_wire import EventCursor, FrameParser, Reconnects, Step
from backends.api.sse import UNENCODABLE_EVENT, encode_event
from gui_agent.exceptions import StoreError
from schema import PROTOCOL_VERSION, SessionUpdated
from tests.backends.api.live import Backend

FOREIGN = "said:\n2030-01-01 CRITICAL root: all is well \x1b[2J"
SHOWN = "said:\\n2030-01-01 CRITICAL root: all is well \\x1b[2J"


def one_line(caplog: pytest.LogCaptureFixture, logger: str, words: str) -> str:
    found = [r for r in caplog.records if r.name == logger and words in r.getMessage()]
    assert len(found) == 1, [r.getMessage() for r in caplog.records]
    line = logging.Formatter("%(levelname)s %(name)s: %(message)s").format(found[0])
    assert line.isprintable(), line
    return line


def test_an_event_that_cannot_be_sent_is_logged_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A value the serializer refuses, its words quoting a name that is not ours.
    odd = type(FOREIGN, (), {})()
    event = SessionUpdated.model_construct(fields={"x": odd}, seq=4, session_id="s1", run_id="")
    assert f"event: {UNENCODABLE_EVENT}".encode() in encode_event(event, "e1")
    assert SHOWN in one_line(caplog, "backends.api.sse", "cannot be sent")


def test_a_store_error_names_the_requested_path_escaped(
    backend: Backend, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def failing(session_id: str, *, owner: str) -> None:
        raise StoreError(FOREIGN)

    monkeypatch.setattr(backend.manager.store, "get_session", failing)
    api = backend.client().login()
    # (a newline in a path never reaches the app: URL parsing drops it; ESC and U+2028 do)
    response = api.get("/api/sessions/no-such%1B%5B2J%E2%80%A8chat")
    assert response.status_code == 503
    line = one_line(caplog, "backends.api.errors", "store error while serving")
    assert "/api/sessions/no-such\\x1b[2J\\u2028chat" in line and SHOWN in line


def test_an_import_names_its_owner_escaped(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="backends.api.routes_sessions")
    owner = "ann\n2030-01-01 INFO root: bob imported \x1b[2J"
    api = backend.client(backend.tokens.issue(owner))
    document = {
        "format": "gui-agent-session",
        "version": 1,
        "session": {"title": "notes"},
        "messages": [{"role": "user", "content": "hello"}],
    }
    response = api.post("/api/sessions/import", json=document)
    assert response.status_code == 201, response.text
    line = one_line(caplog, "backends.api.routes_sessions", "imported session")
    assert "for ann\\n2030-01-01 INFO root: bob imported \\x1b[2J (1 messages)" in line


# --- what a server sends the API client ---------------------------------------------------


def _frames(lines: list[str]) -> list[Any]:
    parser = FrameParser()
    return [frame for line in lines if (frame := parser.feed(line)) is not None]


def test_an_event_the_client_skips_is_logged_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hello = {
        "protocol_version": PROTOCOL_VERSION,
        "session_id": "s1",
        "epoch": "e1",
        "state": "STOP",
        "busy": False,
        "last_seq": 0,
        "replayed": 0,
        "resync": False,
        "pending_approvals": [],
        "streaming": [],
    }
    frames = _frames(
        [
            "event: hello",
            f"data: {json.dumps(hello)}",
            "",
            "id: e1-1",
            "event: newer\x1b[2J",
            "data: one",
            "data: 2030-01-01 CRITICAL root: all is well \u2028",
            "",
        ]
    )
    cursor = EventCursor.starting("s1", None, None)
    assert [cursor.feed(frame) for frame in frames] == [Step.HELLO, Step.SKIP]
    line = one_line(caplog, "backends.api.client_wire", "skipped")
    assert "(newer\\x1b[2J) skipped: one\\n2030-01-01 CRITICAL root: all is well \\u2028" in line


def test_a_broken_stream_is_logged_on_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="backends.api.client_wire")
    reconnects = Reconnects(limit=3, greeted=True)
    reconnects.failed(httpx.RemoteProtocolError(FOREIGN), "the event stream of s1")
    line = one_line(caplog, "backends.api.client_wire", "opening it again")
    assert f"(RemoteProtocolError: {SHOWN})" in line
