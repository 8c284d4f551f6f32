"""The API as a careful client and an attacker meet it: a broken users file, and more.
Real server, real HTTP, real SQLite in tmp_path."""

from __future__ import annotations

import base64
import json
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from backends.api import create_api
from backends.api.app import MAX_OFFSET, MAX_PAGE_SIZE
from backends.server import build_server
from connectors.scripted import ScriptedModel, call
from gui_agent.auth import ProxyHeaderAuth, TokenService
from gui_agent.config import AppConfig
from gui_agent.export import MAX_IMPORT_DEPTH
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import DB_FILE_NAME, SQLiteStore
from gui_agent.store.sqlite import to_micros
from gui_agent.tokens import EstimateCounter
from gui_agent.tools import ToolContext, ToolOutput, ToolRegistry, execution, tool
from gui_agent.workspaces import session_folder
from schema import MessageCompleted, Role
from schema.requests import MAX_IMAGE_BYTES, MAX_IMAGES, MAX_MESSAGE_CHARS
from tests.backends.api.live import (
    SECRET,
    SSE,
    Api,
    Backend,
    ServerThread,
    is_idle,
    iter_sse,
    running_backend,
)

ALICE = ("alice", "alice-password-1")


def test_an_unreadable_users_file_is_503_and_names_no_server_path(tmp_path: Path) -> None:
    """A users file that others can read (or that is half written) is the server's fault,
    not the caller's: login and every other request answer 503, never 401 ("wrong
    password" would send a person to reset it), and the body names no file on the server
    (anyone can call login); the server log says why."""
    with running_backend(tmp_path, users=[ALICE]) as backend:
        alice = backend.client().login(*ALICE)
        assert backend.users is not None
        users_file = backend.users.path
        users_file.chmod(0o644)
        try:
            http = backend.client().http
            login = http.post("/api/login", json={"username": "alice", "password": ALICE[1]})
            listed = alice.get("/api/sessions")
        finally:
            users_file.chmod(0o600)
        for answer in (login, listed):
            assert answer.status_code == 503, answer.text
            error = answer.json()["error"]
            assert error["code"] == "login_unavailable"
            assert str(tmp_path) not in answer.text and "users.json" not in answer.text
            assert "server log" in error["message"]
        assert alice.get("/api/sessions").status_code == 200  # fixed: served again


@contextmanager
def few_live(tmp_path: Path, max_live: int) -> Iterator[Api]:
    """The API over a manager that keeps at most `max_live` sessions in memory."""

    async def factory() -> tuple[FastAPI, Callable[[], Awaitable[None]]]:
        manager = SessionManager(
            models=StaticCatalog(ScriptedModel(name="scripted", default="Hello again.")),
            store=SQLiteStore(tmp_path / "data" / DB_FILE_NAME),
            workspace_root=tmp_path / "data" / "workspaces",
            counter_factory=lambda _name: EstimateCounter(),
            max_live=max_live,
        )
        await manager.start()
        return create_api(manager, TokenService(SECRET)), manager.close

    server = ServerThread(factory).start()
    api = Api(server.base_url)
    try:
        yield api.login()
    finally:
        api.close()
        server.stop()


def test_a_chat_opened_while_every_live_one_is_in_use_is_served_not_404(
    tmp_path: Path,
) -> None:
    """The manager keeps a bounded number of sessions in memory and unloads idle ones. When
    every other live session is in use (someone follows its events), the session a request
    just loaded is the only idle one; it must still serve that request, not be closed
    under it (which answered 404 for a chat that exists)."""
    with few_live(tmp_path, max_live=1) as api:
        followed = api.create_session(title="followed")
        other = api.create_session(title="other")
        with api.events(followed):
            with api.events(other) as stream:  # loads it again, while `followed` is in use
                assert api.send(other, "are you there?")
                seen = stream.until(is_idle)
            replies = [
                e.message
                for e in seen
                if isinstance(e, MessageCompleted) and e.message.role is Role.ASSISTANT
            ]
            assert [m.content for m in replies] == ["Hello again."]
            fresh = api.create_session(title="fresh")
            sent = api.post(f"/api/sessions/{fresh}/messages", json={"text": "hi"})
            assert sent.status_code == 202, sent.text
            assert api.session(fresh)["session"]["title"] == "fresh"


def test_a_message_at_every_documented_limit_at_once_is_taken(backend: Backend) -> None:
    """A message may carry `MAX_IMAGES` images of `MAX_IMAGE_BYTES` each (as the page's
    attach button takes them) and `MAX_MESSAGE_CHARS` of text: the body cap must not
    refuse, as "too large", a message every one of whose parts is within its limit (two
    phone photos were refused with 413)."""
    api = backend.client().login()
    session_id = api.create_session(model="slow")
    largest = b"\x89PNG\r\n\x1a\n" + b"\x00" * (MAX_IMAGE_BYTES - 8)
    photo = {"media_type": "image/png", "data": base64.b64encode(largest).decode()}
    text = "\U0001f600" * MAX_MESSAGE_CHARS  # each sent as the escape of a surrogate pair
    url = f"/api/sessions/{session_id}/messages"
    body = json.dumps({"text": text, "images": [photo] * MAX_IMAGES}).encode("ascii")
    sent = api.post(url, content=body, headers={"Content-Type": "application/json"})
    assert sent.status_code == 202, sent.text[:300]
    assert api.post(f"/api/sessions/{session_id}/stop").status_code == 200
    (kept,) = [m for m in api.messages(session_id) if m.role is Role.USER]
    assert len(kept.images) == MAX_IMAGES and kept.content == text


def test_retention_keeps_deleting_while_the_server_runs(tmp_path: Path) -> None:
    """`--retention-days` promises that chats nobody touched for that long are deleted. It
    ran only at start, so a server up for months kept them all. A chat aged past the limit
    while the server runs is deleted by the next sweep: one still open (a tab left on it)
    is closed, which ends its stream with `closed` (not_found), and its owner's lists are
    told; fresh ones stay."""
    data_dir = tmp_path / "data"
    config = AppConfig(models=("scripted:echo",), data_dir=data_dir, port=0, retention_days=30)
    server = ServerThread(
        lambda: build_server(config, probe_local=False, retention_sweep_s=0.2)
    ).start()
    api = Api(server.base_url)
    try:
        api.login()
        fresh = api.create_session(title="fresh")
        left_open = api.create_session(title="left open")
        idle = api.create_session(title="idle")
        with chat_changes(api) as changes, api.events(left_open) as stream:
            long_ago = datetime.now(UTC) - timedelta(days=31)
            with closing(sqlite3.connect(data_dir / DB_FILE_NAME, timeout=10)) as db:
                db.execute(
                    "UPDATE sessions SET updated_at = ? WHERE id IN (?, ?)",
                    (to_micros(long_ago), left_open, idle),
                )
                db.commit()
            deadline = time.monotonic() + 30  # a few keep-alives: no sweep came
            deleted = {json.loads(next_change(changes, deadline).data)["session_id"]}
            deleted.add(json.loads(next_change(changes, deadline).data)["session_id"])
            assert deleted == {left_open, idle}
            closed = next(stream.sse)  # its stream ended, saying why
            assert closed.event == "closed" and closed.id is None
            assert json.loads(closed.data)["error"]["code"] == "not_found"
            assert next(stream.sse, None) is None
        for gone in (left_open, idle):
            assert api.get(f"/api/sessions/{gone}").status_code == 404
        listed = api.get("/api/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [fresh]
    finally:
        api.close()
        server.stop()


def test_retention_at_start_deletes_the_chats_working_folders_too(tmp_path: Path) -> None:
    """The sweep at start deletes an old chat with the files its tools made (its working
    folder), as a delete by hand does; a fresh chat keeps its folder."""
    data_dir = tmp_path / "data"
    config = AppConfig(models=("scripted:echo",), data_dir=data_dir, port=0, retention_days=30)
    first = ServerThread(lambda: build_server(config, probe_local=False)).start()
    api = Api(first.base_url)
    try:
        api.login()
        old, fresh = api.create_session(title="old"), api.create_session(title="fresh")
        owner = api.session(old)["session"]["owner"]
    finally:
        api.close()
        first.stop()
    folders = {sid: session_folder(data_dir / "workspaces", owner, sid) for sid in (old, fresh)}
    for folder in folders.values():
        (folder / "out").mkdir(parents=True)
        (folder / "out" / "result.txt").write_text("made by a tool")
    with closing(sqlite3.connect(data_dir / DB_FILE_NAME, timeout=10)) as db:
        long_ago = to_micros(datetime.now(UTC) - timedelta(days=31))
        db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (long_ago, old))
        db.commit()
    second = ServerThread(lambda: build_server(config, probe_local=False)).start()
    api = Api(second.base_url)
    try:
        api.login()
        assert [s["id"] for s in api.get("/api/sessions").json()["sessions"]] == [fresh]
        assert not folders[old].exists()
        assert (folders[fresh] / "out" / "result.txt").read_text() == "made by a tool"
    finally:
        api.close()
        second.stop()


@contextmanager
def chat_changes(api: Api) -> Iterator[Iterator[SSE]]:
    """`GET /api/sessions/changes`, past its hello."""
    headers = {**api.headers, "Accept": "text/event-stream"}
    with api.http.stream("GET", "/api/sessions/changes", headers=headers) as response:
        assert response.status_code == 200, response.read().decode()
        events = iter_sse(response, comments=True)
        assert next(events).event == "hello"
        yield events


def next_change(events: Iterator[SSE], deadline: float) -> SSE:
    """The next change, past keep-alive comments; fails once `deadline` has passed."""
    for item in events:
        if item.event != "comment":
            return item
        assert time.monotonic() < deadline, "no change came"
    raise AssertionError("the stream ended")


def test_a_proxy_header_sent_twice_names_nobody(tmp_path: Path) -> None:
    """A proxy that adds its user header instead of replacing it passes on the one the
    client sent as well. Which of the two counts must not be up to the order they came in:
    a client that sends `X-Forwarded-User: admin` ahead of the proxy's own would be admin.
    A request carrying the header twice is refused (401), at login and on every request."""
    proxy = ProxyHeaderAuth(trusted=True, header="X-Forwarded-User")
    with running_backend(tmp_path, proxy=proxy) as backend:
        http = backend.client().http
        forged = [("X-Forwarded-User", "admin"), ("X-Forwarded-User", "bob")]
        login = http.post("/api/login", headers=forged)
        assert login.status_code == 401, login.text
        assert "more than once" in login.json()["error"]["message"]

        as_admin = http.post("/api/login", headers={"X-Forwarded-User": "admin"})
        token = {"Authorization": f"Bearer {as_admin.json()['token']}"}
        listed = http.get("/api/sessions", headers=[*token.items(), *forged])
        assert listed.status_code == 401, listed.text
        only = http.get("/api/sessions", headers={**token, "X-Forwarded-User": "admin"})
        assert only.status_code == 200


def test_the_openapi_document_gives_the_bounds_the_list_and_detail_enforce(
    tmp_path: Path,
) -> None:
    """A client generated from /api/openapi.json keeps to the bounds it reads there: they
    must be the ones the server enforces (the document said any integer, the server
    refused `limit=0` or `limit=1001` with 400)."""
    with running_backend(tmp_path, docs=True) as backend:
        api = backend.client().login()
        session_id = api.create_session(title="mine")
        document = api.get("/api/openapi.json").json()

        def bounds(path: str, name: str) -> tuple[int | None, int | None]:
            (parameter,) = [
                p for p in document["paths"][path]["get"]["parameters"] if p["name"] == name
            ]
            schema = parameter["schema"]
            if "anyOf" in schema:  # an optional integer
                (schema,) = [s for s in schema["anyOf"] if s.get("type") == "integer"]
            return schema.get("minimum"), schema.get("maximum")

        assert bounds("/api/sessions", "limit") == (1, MAX_PAGE_SIZE)
        assert bounds("/api/sessions", "offset") == (0, MAX_OFFSET)
        assert bounds("/api/sessions/{session_id}", "limit") == (0, None)
        low, high, first, last = 1, MAX_PAGE_SIZE, 0, MAX_OFFSET
        for value, status in ((low, 200), (high, 200), (low - 1, 400), (high + 1, 400)):
            answer = api.get("/api/sessions", params={"limit": value})
            assert answer.status_code == status, (value, answer.text)
        for value, status in ((first, 200), (last, 200), (first - 1, 400), (last + 1, 400)):
            answer = api.get("/api/sessions", params={"offset": value})
            assert answer.status_code == status, (value, answer.text)
        url = f"/api/sessions/{session_id}"
        assert api.get(url, params={"limit": 0}).json()["messages"] == []
        refused = api.get(url, params={"limit": -1})
        assert refused.status_code == 400 and "limit" in refused.json()["error"]["message"]


@tool
async def page_outline(ctx: ToolContext, url: str) -> ToolOutput:
    """The outline of a web page (a tool of the kind people plug in): its element tree,
    as deep as the page nests it, kept in the result's metadata."""
    tree: dict[str, Any] = {"tag": "span"}
    for _ in range(MAX_IMPORT_DEPTH):
        tree = {"tag": "div", "child": tree}
    return ToolOutput(content=f"outline of {url}", metadata={"tree": tree})


def test_an_export_an_import_would_refuse_for_its_depth_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every export can be imported back, or the export says at once why not. A tool's
    result nested deeper than an import takes was exported as importable (200) and then
    refused on import; the export now answers 400 naming the depth, and the document is
    still there with `allow_unimportable`."""
    # Tool metadata is kept to MAX_METADATA_DEPTH levels since (tools/execution.py); a
    # plugged-in agent's messages are not bounded so. The bound is lifted to make the chat.
    monkeypatch.setattr(execution, "MAX_METADATA_DEPTH", 100_000)

    async def factory() -> tuple[FastAPI, Callable[[], Awaitable[None]]]:
        manager = SessionManager(
            models=StaticCatalog(scripted),
            store=SQLiteStore(tmp_path / "data" / DB_FILE_NAME),
            workspace_root=tmp_path / "data" / "workspaces",
            tools_factory=lambda: ToolRegistry([page_outline]),
            counter_factory=lambda _name: EstimateCounter(),
        )
        await manager.start()
        return create_api(manager, TokenService(SECRET)), manager.close

    scripted = ScriptedModel(name="scripted", default="Done.")
    scripted.push(call("page_outline", url="https://example.com"), "It is deep.")
    server = ServerThread(factory).start()
    api = Api(server.base_url)
    try:
        api.login()
        session_id = api.create_session()
        with api.events(session_id) as stream:
            api.send(session_id, "outline example.com")
            stream.until(is_idle)
        assert [m.role for m in api.messages(session_id)][-2:] == [Role.TOOL, Role.ASSISTANT]

        url = f"/api/sessions/{session_id}/export"
        refused = api.get(url)
        assert refused.status_code == 400, refused.text[:300]
        error = refused.json()["error"]
        assert error["code"] == "not_importable" and "levels deep" in error["message"]
        anyway = api.get(url, params={"allow_unimportable": "true"})
        assert anyway.status_code == 200
        imported = api.post("/api/sessions/import", content=anyway.content)
        assert imported.status_code == 400 and "levels deep" in imported.text
    finally:
        api.close()
        server.stop()


def serve_models(tmp_path: Path, *names: str) -> ServerThread:
    """The API over the data folder in `tmp_path`, offering scripted models `names`."""

    async def factory() -> tuple[FastAPI, Callable[[], Awaitable[None]]]:
        models = [ScriptedModel(name=name, default=f"Answered by {name}.") for name in names]
        manager = SessionManager(
            models=StaticCatalog(*models),
            store=SQLiteStore(tmp_path / "data" / DB_FILE_NAME),
            workspace_root=tmp_path / "data" / "workspaces",
            counter_factory=lambda _name: EstimateCounter(),
        )
        await manager.start()
        return create_api(manager, TokenService(SECRET)), manager.close

    return ServerThread(factory).start()


def test_a_chat_whose_model_is_gone_says_which_answers_and_its_settings_save(
    tmp_path: Path,
) -> None:
    """A chat made with a model the server no longer offers (restarted with other models)
    is answered by the default model. Its settings said the old model all the same, and a
    client that sent them back with one change (a settings form) was refused, 400 "unknown
    model", so no setting of that chat could be saved."""
    first = serve_models(tmp_path, "steady", "retired")
    try:
        api = Api(first.base_url).login()
        session_id = api.create_session(model="retired")
        api.close()
    finally:
        first.stop()
    second = serve_models(tmp_path, "steady")
    api = Api(second.base_url)
    try:
        api.login()
        settings = api.session(session_id)["session"]["settings"]
        assert settings["model"] == "steady"
        url = f"/api/sessions/{session_id}"
        saved = api.request("PATCH", url, json={"settings": {**settings, "temperature": 0.5}})
        assert saved.status_code == 200, saved.text
        assert saved.json()["session"]["settings"]["temperature"] == 0.5
        with api.events(session_id) as stream:
            api.send(session_id, "who answers?")
            stream.until(is_idle)
        reply = api.messages(session_id)[-1]
        assert reply.content == "Answered by steady." and reply.metadata["model"] == "steady"
    finally:
        api.close()
        second.stop()


@tool
async def dom_snapshot(ctx: ToolContext, depth: int) -> ToolOutput:
    """A page's DOM as nested objects (a tool of the kind people plug in), deeper than
    JSON can be written by the server's serializer."""
    tree: dict[str, Any] = {"tag": "span"}
    for _ in range(depth):
        tree = {"tag": "div", "child": tree}
    return ToolOutput(content="snapshot taken", metadata={"dom": tree})


def test_an_event_that_cannot_be_written_neither_kills_the_stream_nor_loops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool result too deep to write as JSON ended the event stream mid-turn with a
    reset; an EventSource reconnecting from its last id met the same event and was reset
    again, forever. It is now sent as `unencodable` with its id: the stream goes on to the
    end of the turn and a resume from before it goes past it. A request that fails on it
    anyway is a 500 in the API's error shape, and the connection is not left broken."""
    # (as in the export test above: the tool bound is lifted to make such an event)
    monkeypatch.setattr(execution, "MAX_METADATA_DEPTH", 100_000)
    scripted = ScriptedModel(name="scripted", default="Done.")
    scripted.push(call("dom_snapshot", depth=300), "Took the snapshot.")

    async def factory() -> tuple[FastAPI, Callable[[], Awaitable[None]]]:
        manager = SessionManager(
            models=StaticCatalog(scripted),
            store=SQLiteStore(tmp_path / "data" / DB_FILE_NAME),
            workspace_root=tmp_path / "data" / "workspaces",
            tools_factory=lambda: ToolRegistry([dom_snapshot]),
            counter_factory=lambda _name: EstimateCounter(),
        )
        await manager.start()
        return create_api(manager, TokenService(SECRET)), manager.close

    server = ServerThread(factory).start()
    api = Api(server.base_url)
    try:
        api.login()
        session_id = api.create_session()
        url = f"/api/sessions/{session_id}/events"
        headers = {**api.headers, "Accept": "text/event-stream"}
        with api.http.stream("GET", url, headers=headers) as response:
            events = iter_sse(response)
            assert next(events).event == "hello"
            api.send(session_id, "snapshot the page")
            first_run = list(until_stopped(events))
        names = [item.event for item in first_run]
        assert "unencodable" in names and names[-1] == "state_changed"
        bad = first_run[names.index("unencodable")]
        assert bad.id is not None and json.loads(bad.data)["error"]["code"] == "unencodable"
        completed = [item.parsed() for item in first_run if item.event == "message_completed"]
        replies = [
            event.message.content
            for event in completed
            if isinstance(event, MessageCompleted) and event.message.role is Role.ASSISTANT
        ]
        assert replies[-1] == "Took the snapshot."

        before = first_run[names.index("unencodable") - 1].id
        assert before is not None
        with api.http.stream("GET", url, headers={**headers, "Last-Event-ID": before}) as response:
            events = iter_sse(response)
            hello = json.loads(next(events).data)
            resumed = [next(events) for _ in range(hello["replayed"])]
        after_bad = first_run[names.index("unencodable") :]
        assert resumed[0].id == bad.id and resumed[0].event == "unencodable"
        # replayed past it, to the end of the turn (and whatever came after)
        assert [i.id for i in resumed[: len(after_bad)]] == [i.id for i in after_bad]

        detail = api.get(f"/api/sessions/{session_id}")
        assert detail.status_code == 500
        assert detail.json()["error"]["code"] == "internal_error"
        assert api.get("/api/sessions").status_code == 200  # the client goes on
    finally:
        api.close()
        server.stop()


def until_stopped(events: Iterator[SSE]) -> Iterator[SSE]:
    """Events up to and including the turn's end (state_changed to STOP)."""
    for item in events:
        yield item
        if item.event == "state_changed" and json.loads(item.data)["to_state"] == "STOP":
            return
