"""The browser client (`assets/gui-agent-client.js`, served at /api/client.js): what a React
front end imports. Driven in a real Chromium against a real server over HTTP: a chat with
its streamed reply, an approval, errors as ApiError and ConnectionFailed, a stream that
breaks mid-reply and goes on with nothing lost or twice, Stop, and a stream whose session
is deleted ending with 404."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from backends.api import routes_access
from backends.api.routes_access import CLIENT_FILE, CLIENT_PATH
from connectors.scripted import call
from tests.backends.api.live import Backend, running_backend

PASSWORD = "correct horse battery staple"

# Loaded once per page: the module, and a log of what each stream's handlers were told.
_LOAD = """async () => {
  window.ga = await import("/api/client.js");
  window.logs = {};
  window.follow = (client, sessionId, name) => {
    const log = window.logs[name] = {events: [], hellos: [], closed: null, reconnects: 0};
    return client.events(sessionId, {
      onEvent: (event) => log.events.push(event),
      onHello: (hello) => log.hellos.push(hello),
      onReconnecting: () => { log.reconnects += 1; },
      onClosed: (error) => {
        log.closed = {name: error.name, status: error.status, code: error.code};
      },
    });
  };
  // Signed in as ada, a new chat (its fields), followed as "chat" and connected.
  window.openChat = async (password, fields = {}) => {
    window.client = new ga.GuiAgentClient();
    await client.login("ada", password);
    const {session} = await client.createSession(fields);
    window.sessionId = session.id;
    window.chat = follow(client, session.id, "chat");
    await chat.ready;
    return session;
  };
}"""


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    with running_backend(tmp_path, users=[("ada", PASSWORD)]) as running:
        yield running


@pytest.fixture
def page(backend: Backend, chromium: Browser) -> Iterator[Page]:
    context = chromium.new_context()
    tab = context.new_page()
    tab.goto(f"{backend.base_url}/api/health")
    tab.evaluate(_LOAD)
    yield tab
    context.close()


def types_of(page: Page, name: str) -> list[str]:
    return [str(t) for t in page.evaluate("(name) => logs[name].events.map((e) => e.type)", name)]


def wait_for_type(page: Page, name: str, event_type: str) -> None:
    page.wait_for_function(
        "([name, type]) => logs[name].events.some((e) => e.type === type)",
        arg=[name, event_type],
        timeout=20_000,
    )


def test_the_module_is_served_without_a_token_and_revalidated_by_its_etag(
    backend: Backend,
) -> None:
    answer = httpx.get(f"{backend.base_url}{CLIENT_PATH}")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/javascript; charset=utf-8"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.content == CLIENT_FILE.read_bytes()
    assert "export class GuiAgentClient" in answer.text
    again = httpx.get(
        f"{backend.base_url}{CLIENT_PATH}", headers={"If-None-Match": answer.headers["etag"]}
    )
    assert again.status_code == 304 and again.content == b""
    stale = httpx.get(f"{backend.base_url}{CLIENT_PATH}", headers={"If-None-Match": '"old"'})
    assert stale.status_code == 200 and stale.content == answer.content
    openapi = backend.client().get("/api/openapi.json")
    if openapi.status_code == 200:  # (only with docs on) not an endpoint of the API
        assert CLIENT_PATH not in openapi.json()["paths"]


@pytest.mark.browser
def test_a_page_chats_through_the_client_and_sees_the_reply_stream(
    backend: Backend, page: Page
) -> None:
    session_id = page.evaluate(
        """async (password) => {
          window.client = new ga.GuiAgentClient();
          const answer = await client.login("ada", password);
          const {session} = await client.createSession({title: "From a page"});
          window.chat = follow(client, session.id, "chat");
          const hello = await chat.ready;
          if (hello.last_seq !== logs.chat.hellos[0].last_seq) return null;
          await client.sendMessage(session.id, "Hello there");
          return answer.user === "ada" ? session.id : null;
        }""",
        PASSWORD,
    )
    assert session_id
    wait_for_type(page, "chat", "run_finished")
    events: list[dict[str, Any]] = page.evaluate("() => logs.chat.events")
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # each once, in order
    streamed = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    assert streamed == "Hello from the scripted model."
    [finished] = [e for e in events if e["type"] == "run_finished"]
    assert finished["outcome"] == "completed"
    detail = page.evaluate("(id) => client.getSession(id)", session_id)
    assert [m["content"] for m in detail["messages"]] == [
        "Hello there",
        "Hello from the scripted model.",
    ]
    assert detail["session"]["title"] == "From a page"
    # the list, as the page would show it
    listed = page.evaluate("() => client.listSessions({q: 'From a'})")
    assert [s["id"] for s in listed["sessions"]] == [session_id]


@pytest.mark.browser
def test_an_approval_is_answered_from_the_page(backend: Backend, page: Page) -> None:
    backend.scripted.push(call("run_python", code="print(6*7)"), "The answer is 42.")
    page.evaluate(
        """async (password) => {
          const session = await openChat(password);
          await client.sendMessage(session.id, "compute it");
        }""",
        PASSWORD,
    )
    wait_for_type(page, "chat", "approval_requested")
    asked = page.evaluate("() => logs.chat.events.find((e) => e.type === 'approval_requested')")
    assert "print(6*7)" in asked["detail"]
    answer = page.evaluate(
        "(id) => client.answerApproval(sessionId, id, 'allow_once', {note: 'go ahead'})",
        asked["approval_id"],
    )
    assert answer["decision"] == "allow_once"
    wait_for_type(page, "chat", "run_finished")
    events: list[dict[str, Any]] = page.evaluate("() => logs.chat.events")
    [finished] = [e for e in events if e["type"] == "tool_call_finished"]
    assert finished["result"]["content"].startswith("42")
    # a second answer is a Conflict, with the server's words
    refused = page.evaluate(
        """(id) => client.answerApproval(sessionId, id, "deny").then(
             () => null, (e) => ({name: e.name, status: e.status, code: e.code}))""",
        asked["approval_id"],
    )
    assert refused == {"name": "ApiError", "status": 409, "code": "conflict"}


@pytest.mark.browser
def test_errors_reject_with_what_went_wrong(backend: Backend, page: Page) -> None:
    outcomes = page.evaluate(
        """async (password) => {
          const outcome = (promise) => promise.then(
            () => "resolved",
            (e) => ({name: e.name, status: e.status ?? null, code: e.code ?? null,
                     message: e.message}));
          const client = new ga.GuiAgentClient();
          const anonymous = await outcome(client.listSessions());
          const wrong = await outcome(client.login("ada", "not it"));
          await client.login("ada", password);
          const missing = await outcome(client.getSession("no-such-session"));
          const empty = await outcome(client.createSession({colour: "blue"}));
          const away = await outcome(new ga.GuiAgentClient("http://127.0.0.1:9").health());
          const unknown = await outcome(client.events("no-such-session").ready);
          const early = client.events("no-such-session");
          early.close();  // before it connected: whoever awaits it is not left waiting
          const closed = await outcome(early.ready);
          return {anonymous, wrong, missing, empty, away, unknown, closed};
        }""",
        PASSWORD,
    )
    assert outcomes["anonymous"]["status"] == 401
    assert outcomes["wrong"]["status"] == 401 and outcomes["wrong"]["name"] == "ApiError"
    assert outcomes["missing"]["status"] == 404 and outcomes["missing"]["code"] == "not_found"
    assert outcomes["empty"]["status"] == 400 and "colour" in outcomes["empty"]["message"]
    assert outcomes["away"]["name"] == "ConnectionFailed"
    assert "GET /api/health failed" in outcomes["away"]["message"]
    assert outcomes["unknown"]["status"] == 404  # a stream that cannot start says why
    assert outcomes["closed"]["name"] == "ConnectionFailed"
    assert "closed before it connected" in outcomes["closed"]["message"]


@pytest.mark.browser
def test_a_stream_broken_mid_reply_goes_on_with_nothing_lost_or_twice(
    backend: Backend, page: Page
) -> None:
    page.evaluate(
        """async (password) => {
          const session = await openChat(password, {model: "slow"});
          await client.sendMessage(session.id, "tick for me");
        }""",
        PASSWORD,
    )
    deltas = "() => logs.chat.events.filter((e) => e.type === 'text_delta').length"
    page.wait_for_function(f"({deltas})() > 5", timeout=20_000)
    # The connection breaks (as a network blip would): the client opens it again with the
    # last event id it gave, and the server replays what came meanwhile.
    page.evaluate("() => chat.stream.controller.abort()")
    page.wait_for_function("() => logs.chat.hellos.length === 2", timeout=20_000)
    seen = page.evaluate(deltas)
    page.wait_for_function(f"({deltas})() > {seen + 5}", timeout=20_000)
    assert page.evaluate("() => client.stop(sessionId)")["stopped"] is True
    wait_for_type(page, "chat", "run_finished")
    log: dict[str, Any] = page.evaluate("() => logs.chat")
    assert log["reconnects"] == 1 and log["closed"] is None
    seqs = [e["seq"] for e in log["events"]]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # nothing lost, nothing twice
    [finished] = [e for e in log["events"] if e["type"] == "run_finished"]
    assert finished["outcome"] == "interrupted"
    streamed = "".join(e["delta"] for e in log["events"] if e["type"] == "text_delta")
    detail = page.evaluate("() => client.getSession(sessionId)")
    reply = detail["messages"][-1]
    assert reply["status"] == "interrupted" and reply["content"] == streamed
    # the second hello said where the session was: its last seq was the last event given
    # before the break, or later (what was replayed)
    assert log["hellos"][1]["last_seq"] >= seqs[0]


@pytest.mark.browser
def test_a_stream_whose_session_is_deleted_ends_with_not_found(
    backend: Backend, page: Page
) -> None:
    page.evaluate(
        """async (password) => {
          const session = await openChat(password);
          await client.deleteSession(session.id);
        }""",
        PASSWORD,
    )
    page.wait_for_function("() => logs.chat.closed !== null", timeout=20_000)
    closed = page.evaluate("() => logs.chat.closed")
    assert closed == {"name": "ApiError", "status": 404, "code": "not_found"}
    assert page.evaluate("() => chat.done.then(() => 'ended')") == "ended"
    assert types_of(page, "chat") == []  # nothing was said in it


@pytest.mark.browser
def test_the_readme_example_runs_as_written(tmp_path: Path, chromium: Browser) -> None:
    """The README's JavaScript block, as a module script in a page of the server's origin
    (no login configured: `client.login()` as written)."""
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```javascript\n(.*?)```", readme, re.S)
    assert match is not None, "the README has no javascript example"
    with running_backend(tmp_path) as backend:
        context = chromium.new_context()
        tab = context.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda error: errors.append(str(error)))
        tab.goto(f"{backend.base_url}/api/health")
        tab.evaluate(
            "() => { document.body.innerHTML = '<p id=\"reply\"></p>'; }"  # where it writes
        )
        tab.add_script_tag(content=match.group(1), type="module")
        tab.wait_for_function(
            "() => document.querySelector('#reply').textContent === "
            "'Hello from the scripted model.'",
            timeout=20_000,
        )
        assert errors == []
        [record] = backend.client().login().get("/api/sessions").json()["sessions"]
        assert record["title"] == "From my page"
        context.close()


@pytest.mark.browser
def test_the_chats_list_follows_changes_from_elsewhere_and_says_when_to_read_it_again(
    backend: Backend, page: Page
) -> None:
    page.evaluate(
        """async (password) => {
          window.client = new ga.GuiAgentClient();
          await client.login("ada", password);
          window.list = {changes: [], resyncs: 0, users: []};
          window.feed = client.changes({
            onChange: (change) => list.changes.push(change),
            onHello: (hello) => list.users.push(hello.user),
            onResync: () => { list.resyncs += 1; },
          });
          await feed.ready;
        }""",
        PASSWORD,
    )
    other = backend.client().login("ada", PASSWORD)  # another client of the same person
    session_id = other.create_session(title="Made elsewhere")
    assert other.request(
        "PATCH", f"/api/sessions/{session_id}", json={"title": "Renamed elsewhere"}
    ).is_success
    page.wait_for_function("() => list.changes.length === 2", timeout=20_000)
    assert page.evaluate("() => list.changes") == [
        {"kind": "created", "session_id": session_id, "title": "Made elsewhere"},
        {"kind": "renamed", "session_id": session_id, "title": "Renamed elsewhere"},
    ]
    assert page.evaluate("() => list.resyncs") == 0
    # A drop: changes are not kept, so the page is told to read the list again.
    page.evaluate("() => feed.stream.controller.abort()")
    page.wait_for_function("() => list.resyncs === 1", timeout=20_000)
    assert page.evaluate("() => list.users") == ["ada", "ada"]
    other.request("DELETE", f"/api/sessions/{session_id}")
    page.wait_for_function("() => list.changes.length === 3", timeout=20_000)
    assert page.evaluate("() => list.changes[2].kind") == "deleted"


@pytest.mark.browser
def test_resuming_from_another_run_of_the_server_asks_to_load_the_session_again(
    backend: Backend, page: Page
) -> None:
    """An event id from before a restart (another epoch): the server cannot replay after
    it, so the client says to load the session again, then goes on live from there."""
    page.evaluate(
        """async (password) => {
          window.client = new ga.GuiAgentClient();
          await client.login("ada", password);
          const {session} = await client.createSession();
          window.sessionId = session.id;
          await client.sendMessage(session.id, "before");
          window.resyncs = [];
          window.log = [];
          window.chat = client.events(session.id, {
            onResync: (hello) => resyncs.push(hello.last_seq),
            onEvent: (event) => log.push(event),
          }, {since: "0123456789abcdef-3"});
          await chat.ready;
        }""",
        PASSWORD,
    )
    [last_seq] = page.evaluate("() => resyncs")
    assert last_seq > 0
    page.evaluate("() => client.sendMessage(sessionId, 'after')")
    page.wait_for_function("() => log.some((e) => e.type === 'run_finished')", timeout=20_000)
    seqs = page.evaluate("() => log.map((e) => e.seq)")
    assert seqs[0] == last_seq + 1  # live from where the server was; nothing replayed twice
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


@pytest.mark.browser
def test_a_handler_that_throws_loses_no_event_and_breaks_no_connection(
    backend: Backend, page: Page
) -> None:
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.evaluate(
        """async (password) => {
          window.client = new ga.GuiAgentClient();
          await client.login("ada", password);
          const {session} = await client.createSession();
          window.got = [];
          window.hellos = 0;
          window.chat = client.events(session.id, {
            onHello: () => { hellos += 1; },
            onEvent: (event) => {
              got.push([event.seq, event.type]);
              if (event.type === "message_started") throw new Error("a bug in the page");
            },
          });
          await chat.ready;
          await client.sendMessage(session.id, "hi");
        }""",
        PASSWORD,
    )
    page.wait_for_function("() => got.some(([, type]) => type === 'run_finished')")
    seqs = [seq for seq, _ in page.evaluate("() => got")]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert "message_started" in [kind for _, kind in page.evaluate("() => got")]
    assert page.evaluate("() => hellos") == 1  # never reconnected
    assert any("the onEvent handler failed" in line for line in console)


def test_a_server_installed_without_the_client_still_serves_the_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_access, "CLIENT_FILE", tmp_path / "not-there.js")
    with running_backend(tmp_path) as backend:
        missing = httpx.get(f"{backend.base_url}{CLIENT_PATH}")
        assert missing.status_code == 404
        assert missing.json()["error"]["message"] == (
            "this server was installed without its browser client"
        )
        assert httpx.get(f"{backend.base_url}/api/health").status_code == 200


@pytest.mark.browser
def test_a_chat_is_exported_as_a_file_and_imported_back(backend: Backend, page: Page) -> None:
    result = page.evaluate(
        """async (password) => {
          window.client = new ga.GuiAgentClient();
          await client.login("ada", password);
          const {session} = await client.createSession({title: "To keep"});
          const chat = follow(client, session.id, "chat");
          await chat.ready;
          await client.sendMessage(session.id, "remember this");
          while (!logs.chat.events.some((e) => e.type === "run_finished")) {
            await new Promise((done) => setTimeout(done, 20));
          }
          const file = await client.exportSession(session.id);
          const anyway = await client.exportSession(session.id, {allowUnimportable: true});
          const document = JSON.parse(await file.text());
          const imported = await client.importSession(new File([file], "chat.json"));
          const again = await client.importSession(document);  // the parsed object too
          let refused = null;
          try {
            await client.importSession('{"format": "something else"}');
          } catch (error) {
            refused = {name: error.name, status: error.status, message: error.message};
          }
          const messages = (text) => JSON.stringify(JSON.parse(text).messages);
          const same = messages(await anyway.text()) === messages(await file.text());
          return {type: file.type, same, document, imported, again, original: session.id,
                  refused};
        }""",
        PASSWORD,
    )
    assert result["type"].startswith("application/json") and result["same"]
    assert [m["content"] for m in result["document"]["messages"]] == [
        "remember this",
        "Hello from the scripted model.",
    ]
    for answer, title in zip(
        (result["imported"], result["again"]),
        ("To keep (imported)", "To keep (imported 2)"),  # (the original is still there)
        strict=True,
    ):
        assert answer["message_count"] == 2 and answer["session"]["id"] != result["original"]
        assert answer["session"]["title"] == title
    refused = result["refused"]
    assert refused["name"] == "ApiError" and refused["status"] == 400
    assert refused["message"]  # the server's words
