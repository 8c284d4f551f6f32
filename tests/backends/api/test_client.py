"""`backends.api.client` against the real API server (uvicorn on a loopback port, offline
models): a conversation, approvals, Stop, a dropped stream resumed, typed errors, login."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from backends.api import LoginThrottles
from backends.api.client import (
    ApiError,
    Conflict,
    ConnectionFailed,
    EventStream,
    GuiAgentClient,
    NotFound,
    RateLimited,
    ResyncRequired,
    Unauthorized,
)
from backends.api.client_wire import FrameParser
from connectors.scripted import call
from gui_agent.auth import LoginThrottle
from gui_agent.changes import ChatChangeKind
from schema import (
    PROTOCOL_VERSION,
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    Event,
    InterpreterState,
    MessageStatus,
    Role,
    RunFinished,
    TextDelta,
)
from tests.backends.api.live import Backend, completed, is_idle, running_backend, tick
from tests.backends.api.relay import Relay

ROOT = Path(__file__).resolve().parents[3]
ALICE = ("alice", "alice-password-1")


@pytest.fixture
def client(backend: Backend) -> Iterator[GuiAgentClient]:
    with GuiAgentClient(backend.base_url) as logged_in:
        logged_in.login()
        yield logged_in


def until(stream: EventStream, predicate: Callable[[Event], bool]) -> list[Event]:
    """Events up to and including the first one matching `predicate`."""
    seen = []
    for event in stream:
        seen.append(event)
        if predicate(event):
            return seen
    raise AssertionError(f"the stream ended after {seen[-3:]}")


# -- a conversation ------------------------------------------------------------------------


def test_a_whole_conversation_streams_the_reply_the_model_wrote(
    backend: Backend, client: GuiAgentClient
) -> None:
    health = client.health()
    assert health.protocol_version == PROTOCOL_VERSION and health.auth == "none"
    assert client.models().default == "scripted"
    assert AgentName.AGENT_EXECUTOR in [agent.name for agent in client.agents().agents]
    backend.scripted.push("Hello back, typed all the way.")
    chat = client.create_session(title="typed")
    with client.events(chat.id) as events:
        assert events.hello is not None and events.hello.state is InterpreterState.INIT
        accepted = client.send_message(chat.id, "hi there")
        assert accepted.queued is False
        seen = until(events, is_idle)
        assert events.last_event_id == f"{events.hello.epoch}-{seen[-1].seq}"

    assert [event.seq for event in seen] == list(range(1, len(seen) + 1))
    deltas = [event.delta for event in seen if isinstance(event, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "Hello back, typed all the way."
    user, reply = completed(seen)
    assert user.message.id == accepted.message_id and user.message.content == "hi there"
    assert reply.message.content == "Hello back, typed all the way."
    assert any(isinstance(event, RunFinished) for event in seen)
    detail = client.get_session(chat.id)
    assert detail.state is InterpreterState.STOP and detail.last_seq == seen[-1].seq
    assert [m.content for m in detail.messages] == ["hi there", "Hello back, typed all the way."]


def test_sessions_are_listed_changed_exported_imported_and_deleted(
    client: GuiAgentClient,
) -> None:
    with client.changes() as feed:
        chat = client.create_session(settings={"temperature": 0.5})
        created = next(feed)
        assert (created.kind, created.session_id) == (ChatChangeKind.CREATED, chat.id)
        client.send_message(chat.id, "remember this")
        renamed = next(feed)  # the first message names the chat
        assert (renamed.kind, renamed.title) == (ChatChangeKind.RENAMED, "remember this")
        with client.events(chat.id, since=0) as events:
            until(events, is_idle)
        changed = client.update_session(chat.id, title="Kept", autochat={"max_turns": 3})
        assert changed.title == "Kept" and changed.settings.temperature == 0.5
        assert changed.autochat.max_turns == 3
        assert [s.id for s in client.list_sessions(query="Kept").sessions] == [chat.id]

        imported = client.import_session(client.export_session(chat.id))
        assert imported.session.id != chat.id and imported.message_count == 2
        copy = client.get_session(imported.session.id)
        assert [m.content for m in copy.messages] == [
            m.content for m in client.get_session(chat.id).messages
        ]
        client.delete_session(chat.id)
        kinds = [next(feed).kind for _ in range(3)]
        assert kinds == [ChatChangeKind.RENAMED, ChatChangeKind.IMPORTED, ChatChangeKind.DELETED]
    with pytest.raises(NotFound):
        client.get_session(chat.id)
    assert [s.id for s in client.list_sessions().sessions] == [imported.session.id]


def test_an_approval_is_answered_through_the_client(
    backend: Backend, client: GuiAgentClient
) -> None:
    backend.scripted.push(call("run_python", code="print(6*7)"), "The answer is 42.")
    chat = client.create_session()
    with client.events(chat.id) as events:
        client.send_message(chat.id, "what is 6 times 7?")
        request = until(events, lambda e: isinstance(e, ApprovalRequested))[-1]
        assert isinstance(request, ApprovalRequested) and request.call.name == "run_python"
        answer = client.answer_approval(
            chat.id, request.approval_id, ApprovalDecision.ALLOW_ONCE, note="go ahead"
        )
        assert answer.decision is ApprovalDecision.ALLOW_ONCE
        after = until(events, is_idle)
    resolved = next(e for e in after if isinstance(e, ApprovalResolved))
    assert (resolved.decision, resolved.note, resolved.by) == ("allow_once", "go ahead", "user")
    tool = next(e.message for e in completed(after) if e.message.role is Role.TOOL)
    assert "42" in tool.content and not tool.metadata["is_error"]
    assert completed(after)[-1].message.content == "The answer is 42."
    with pytest.raises(Conflict) as again:
        client.answer_approval(chat.id, request.approval_id, "deny")
    assert again.value.status == 409 and "already answered" in again.value.message


def test_stop_mid_stream_keeps_the_partial_reply(client: GuiAgentClient) -> None:
    chat = client.create_session(model="slow")
    with client.events(chat.id) as events:
        client.send_message(chat.id, "talk for a while")
        until(events, tick(3))
        with pytest.raises(Conflict):  # nothing to retry while a turn runs
            client.retry(chat.id)
        assert client.stop(chat.id) is True
        rest = until(events, is_idle)
    partial = completed(rest)[-1].message
    assert partial.status is MessageStatus.INTERRUPTED
    assert partial.content.startswith("tick0 tick1 tick2 tick3 ")
    assert "tick2999" not in partial.content
    assert client.stop(chat.id) is False


def test_an_edit_through_the_client_names_the_message_it_edits(client: GuiAgentClient) -> None:
    chat = client.create_session()
    with client.events(chat.id) as events:
        client.send_message(chat.id, "the first")
        until(events, is_idle)
        first = client.get_session(chat.id).messages[0]
        client.send_message(chat.id, "sent since")
        until(events, is_idle)
        with pytest.raises(Conflict, match="another was sent since"):
            client.edit_last(chat.id, "edited", message_id=first.id)
        last = client.get_session(chat.id).messages[2]
        assert last.content == "sent since"
        started = client.edit_last(chat.id, "edited", message_id=last.id)
        until(events, is_idle)
    assert [m.id for m in client.get_session(chat.id).messages][2] == started.message_id


def test_a_session_read_during_a_turn_has_the_messages_waiting_for_it(
    client: GuiAgentClient,
) -> None:
    """A client that opened a chat while a message waited (a reload, another tab) did not
    show it, and the person sent it again."""
    chat = client.create_session(model="slow")
    with client.events(chat.id) as events:
        client.send_message(chat.id, "talk for a while")
        until(events, tick(3))
        waiting = client.send_message(chat.id, "and then this")
        detail = client.get_session(chat.id)
        assert [(m.id, m.content) for m in detail.queued] == [(waiting.message_id, "and then this")]
        assert client.stop(chat.id) is True
        until(events, is_idle)
    assert client.get_session(chat.id).queued == []


# -- a dropped connection ----------------------------------------------------------------


def test_a_dropped_stream_resumes_with_no_gap_and_no_duplicate(
    backend: Backend, client: GuiAgentClient
) -> None:
    relay = Relay(backend.base_url)
    chat = client.create_session(model="slow")
    try:
        with (
            client.events(chat.id) as watcher,  # another tab, reading all along
            GuiAgentClient(relay.base_url, token=client.token) as relayed,
            relayed.events(chat.id) as events,
        ):
            client.send_message(chat.id, "count")
            before = until(events, tick(5))
            relay.cut()
            watched = until(watcher, tick(40))  # the turn goes on meanwhile
            after = until(events, tick(60))
            assert relay.accepted == 2  # it connected again, by itself, once
            assert client.stop(chat.id) is True
            after += until(events, is_idle)
            watched += until(watcher, is_idle)
    finally:
        relay.close()
    got = before + after
    assert [e.seq for e in got] == list(range(1, len(got) + 1))  # no gap, nothing twice
    assert [e.model_dump() for e in got] == [e.model_dump() for e in watched]
    text = "".join(e.delta for e in got if isinstance(e, TextDelta))
    assert text.startswith("tick0 tick1 tick2 ") and "tick60 " in text
    assert client.get_session(chat.id).messages[1].content == text


def test_events_the_server_no_longer_holds_raise_resync(client: GuiAgentClient) -> None:
    chat = client.create_session()
    with pytest.raises(ResyncRequired) as too_far:
        client.events(chat.id, since=10_000)
    assert too_far.value.hello is not None and too_far.value.hello.resync is True
    with pytest.raises(ResyncRequired):  # numbers from before a restart
        client.events(chat.id, since=0, epoch="0123456789abcdef")


def test_a_stream_ends_cleanly_when_access_ends(tmp_path: Path) -> None:
    with (
        running_backend(tmp_path, users=[ALICE], auth_recheck_s=0.2) as backend,
        GuiAgentClient(backend.base_url) as client,
    ):
        client.login(*ALICE)
        chat = client.create_session()
        with client.events(chat.id) as events:
            assert backend.users is not None and backend.users.remove("alice")
            assert list(events) == []  # it ends: no error, no reconnecting
        assert isinstance(events.closed, Unauthorized)
        assert events.closed.code == "unauthorized"
        with pytest.raises(Unauthorized):
            client.events(chat.id)


# -- errors --------------------------------------------------------------------------------


def test_failures_are_typed_errors(backend: Backend, client: GuiAgentClient) -> None:
    chat = client.create_session()
    for token in (None, "not-a-token"):
        with GuiAgentClient(backend.base_url, token=token) as stranger:
            with pytest.raises(Unauthorized) as refused:
                stranger.list_sessions()
            assert (refused.value.status, refused.value.code) == (401, "unauthorized")
            with pytest.raises(Unauthorized):
                stranger.events(chat.id)

    for missing in ("no-such-chat", "../models", ".."):
        with pytest.raises(NotFound) as unknown:
            client.get_session(missing)
        assert unknown.value.status == 404
    with pytest.raises(NotFound):
        client.events("no-such-chat")
    with pytest.raises(NotFound):
        client.answer_approval(chat.id, "never-asked", "allow_once")

    with pytest.raises(ApiError) as malformed:
        client.update_session(chat.id, settings={"temperature": 5})
    assert type(malformed.value) is ApiError
    assert (malformed.value.status, malformed.value.code) == (400, "invalid_request")
    assert "temperature" in malformed.value.message
    with pytest.raises(ApiError, match="limit"):
        client.list_sessions(limit=0)

    with socket.socket() as bound_not_listening:
        bound_not_listening.bind(("127.0.0.1", 0))
        port = bound_not_listening.getsockname()[1]
        with GuiAgentClient(f"http://127.0.0.1:{port}") as nobody:
            with pytest.raises(ConnectionFailed, match=f"127.0.0.1:{port}"):
                nobody.health()
            with pytest.raises(ConnectionFailed):
                nobody.events("any")


def test_the_token_goes_to_the_base_urls_origin_only() -> None:
    """A server (or something posing as one) that redirects elsewhere gets an error back;
    the token never reaches the other address."""
    with (
        socket.create_server(("127.0.0.1", 0)) as redirecting,
        socket.create_server(("127.0.0.1", 0)) as elsewhere,
    ):
        target = f"http://127.0.0.1:{elsewhere.getsockname()[1]}/api/models"
        heard: list[bytes] = []

        def redirect_once() -> None:
            connection, _ = redirecting.accept()
            with connection:
                heard.append(connection.recv(65536))
                head = f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\n"
                connection.sendall(f"{head}Content-Length: 0\r\n\r\n".encode())

        server = threading.Thread(target=redirect_once, daemon=True)
        server.start()
        base = f"http://127.0.0.1:{redirecting.getsockname()[1]}"
        with GuiAgentClient(base, token="secret") as client, pytest.raises(ApiError) as caught:
            client.models()
        server.join(timeout=30)
        assert caught.value.status == 307 and target in caught.value.message
        assert b"authorization: bearer secret" in heard[0].lower()
        elsewhere.setblocking(False)
        with pytest.raises(BlockingIOError):  # nobody came (a redirect followed would have)
            elsewhere.accept()


def test_login_with_a_users_file_keeps_the_token(tmp_path: Path) -> None:
    def frozen() -> float:
        return 1_000.0  # no throttle wait runs out during the test

    throttles = LoginThrottles(by_user=LoginThrottle(clock=frozen))
    with (
        running_backend(tmp_path, users=[ALICE], throttles=throttles) as backend,
        GuiAgentClient(backend.base_url) as client,
    ):
        assert client.health().auth == "password"
        with pytest.raises(Unauthorized):
            client.login("alice", "wrong")
        assert client.token is None
        answer = client.login(*ALICE)
        assert answer.user == "alice" and client.token == answer.token
        assert client.create_session().owner == "alice"

        free = LoginThrottle().free_attempts
        with pytest.raises(RateLimited) as throttled:
            for _ in range(free + 2):
                with pytest.raises(Unauthorized):
                    client.login("alice", "guess")
        assert throttled.value.status == 429 and throttled.value.retry_after
        assert throttled.value.retry_after > 0


# -- pure parts and the README -------------------------------------------------------------


def test_frames_are_parsed_as_the_sse_format_says() -> None:
    parser = FrameParser()
    lines = [": keep-alive", "", "retry: 2000", "event: hello", "data: {", "data: }", ""]
    lines += ["id: e-1", "event: text_delta", "data:x", "", "data: half", "id: e-2"]
    frames = [frame for line in lines if (frame := parser.feed(line)) is not None]
    assert [(f.event, f.data, f.id, f.retry_ms) for f in frames] == [
        ("hello", "{\n}", None, 2000),
        ("text_delta", "x", "e-1", None),
    ]
    parser.reset()  # the connection broke mid-frame: the half frame is forgotten
    assert parser.feed("") is None


def test_the_readme_example_runs_against_the_server(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"## Your own front end\n.*?```python\n(.*?)```", readme, re.S)
    assert found, "README.md has no python example under 'Your own front end'"
    backend.scripted.push(call("run_python", code="print(1)"), "Fine, I will not run it.")
    monkeypatch.setenv("GUI_AGENT_URL", backend.base_url)
    example: dict[str, object] = {"__name__": "__main__"}
    try:
        exec(compile(found.group(1), "README.md", "exec"), example)
    finally:
        if isinstance(client := example.get("client"), GuiAgentClient):
            client.close()  # (a script's end would close it)
    assert capsys.readouterr().out == "Fine, I will not run it."
    tool = backend.scripted.requests[-1].messages[-1]
    assert tool.role is Role.TOOL and "not from here" in tool.content
