"""`backends.api.async_client` against the real API server (uvicorn on a loopback port,
offline models), as `test_client` does for the synchronous client: a conversation,
approvals, Stop, a dropped stream resumed, typed errors, login; and what only an async
client can get wrong: a cancelled reader closes its connection and stays cancelled."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from backends.api import LoginThrottles
from backends.api.client import (
    ApiError,
    AsyncEventStream,
    AsyncGuiAgentClient,
    Conflict,
    ConnectionFailed,
    GuiAgentClient,
    NotFound,
    RateLimited,
    ResyncRequired,
    Unauthorized,
)
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
async def client(backend: Backend) -> AsyncIterator[AsyncGuiAgentClient]:
    async with AsyncGuiAgentClient(backend.base_url) as logged_in:
        await logged_in.login()
        yield logged_in


async def until(stream: AsyncEventStream, predicate: Callable[[Event], bool]) -> list[Event]:
    """Events up to and including the first one matching `predicate`."""
    seen = []
    async for event in stream:
        seen.append(event)
        if predicate(event):
            return seen
    raise AssertionError(f"the stream ended after {seen[-3:]}")


# -- a conversation ------------------------------------------------------------------------


async def test_a_whole_conversation_streams_the_reply_the_model_wrote(
    backend: Backend, client: AsyncGuiAgentClient
) -> None:
    health = await client.health()
    assert health.protocol_version == PROTOCOL_VERSION and health.auth == "none"
    assert (await client.models()).default == "scripted"
    assert AgentName.AGENT_EXECUTOR in [agent.name for agent in (await client.agents()).agents]
    backend.scripted.push("Hello back, typed all the way.")
    chat = await client.create_session(title="typed")
    async with client.events(chat.id) as events:
        assert events.hello is not None and events.hello.state is InterpreterState.INIT
        accepted = await client.send_message(chat.id, "hi there")
        assert accepted.queued is False
        seen = await until(events, is_idle)
        assert events.last_event_id == f"{events.hello.epoch}-{seen[-1].seq}"

    assert [event.seq for event in seen] == list(range(1, len(seen) + 1))
    deltas = [event.delta for event in seen if isinstance(event, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "Hello back, typed all the way."
    user, reply = completed(seen)
    assert user.message.id == accepted.message_id and user.message.content == "hi there"
    assert reply.message.content == "Hello back, typed all the way."
    assert any(isinstance(event, RunFinished) for event in seen)
    detail = await client.get_session(chat.id)
    assert detail.state is InterpreterState.STOP and detail.last_seq == seen[-1].seq
    assert [m.content for m in detail.messages] == ["hi there", "Hello back, typed all the way."]


async def test_sessions_are_listed_changed_exported_imported_and_deleted(
    client: AsyncGuiAgentClient,
) -> None:
    async with client.changes() as feed:
        chat = await client.create_session(settings={"temperature": 0.5})
        created = await anext(feed)
        assert (created.kind, created.session_id) == (ChatChangeKind.CREATED, chat.id)
        await client.send_message(chat.id, "remember this")
        renamed = await anext(feed)  # the first message names the chat
        assert (renamed.kind, renamed.title) == (ChatChangeKind.RENAMED, "remember this")
        async with client.events(chat.id, since=0) as events:
            await until(events, is_idle)
        changed = await client.update_session(chat.id, title="Kept", autochat={"max_turns": 3})
        assert changed.title == "Kept" and changed.settings.temperature == 0.5
        assert changed.autochat.max_turns == 3
        assert [s.id for s in (await client.list_sessions(query="Kept")).sessions] == [chat.id]

        imported = await client.import_session(await client.export_session(chat.id))
        assert imported.session.id != chat.id and imported.message_count == 2
        copy = await client.get_session(imported.session.id)
        original = await client.get_session(chat.id)
        assert [m.content for m in copy.messages] == [m.content for m in original.messages]
        await client.delete_session(chat.id)
        kinds = [(await anext(feed)).kind for _ in range(3)]
        assert kinds == [ChatChangeKind.RENAMED, ChatChangeKind.IMPORTED, ChatChangeKind.DELETED]
    with pytest.raises(NotFound):
        await client.get_session(chat.id)
    assert [s.id for s in (await client.list_sessions()).sessions] == [imported.session.id]


async def test_an_approval_is_answered_through_the_client(
    backend: Backend, client: AsyncGuiAgentClient
) -> None:
    backend.scripted.push(call("run_python", code="print(6*7)"), "The answer is 42.")
    chat = await client.create_session()
    events = await client.events(chat.id)  # awaited: connected, as `async with` does
    try:
        await client.send_message(chat.id, "what is 6 times 7?")
        request = (await until(events, lambda e: isinstance(e, ApprovalRequested)))[-1]
        assert isinstance(request, ApprovalRequested) and request.call.name == "run_python"
        answer = await client.answer_approval(
            chat.id, request.approval_id, ApprovalDecision.ALLOW_ONCE, note="go ahead"
        )
        assert answer.decision is ApprovalDecision.ALLOW_ONCE
        after = await until(events, is_idle)
    finally:
        await events.aclose()
    resolved = next(e for e in after if isinstance(e, ApprovalResolved))
    assert (resolved.decision, resolved.note, resolved.by) == ("allow_once", "go ahead", "user")
    tool = next(e.message for e in completed(after) if e.message.role is Role.TOOL)
    assert "42" in tool.content and not tool.metadata["is_error"]
    assert completed(after)[-1].message.content == "The answer is 42."
    with pytest.raises(Conflict) as again:
        await client.answer_approval(chat.id, request.approval_id, "deny")
    assert again.value.status == 409 and "already answered" in again.value.message


async def test_stop_mid_stream_keeps_the_partial_reply(client: AsyncGuiAgentClient) -> None:
    chat = await client.create_session(model="slow")
    await client.send_message(chat.id, "talk for a while")
    events = client.events(chat.id, since=0)  # not opened: `async for` connects it
    try:
        seen = await until(events, tick(3))
        assert seen[0].seq == 1  # from the start, as asked: the message sent before is in
        with pytest.raises(Conflict):  # nothing to retry while a turn runs
            await client.retry(chat.id)
        assert await client.stop(chat.id) is True
        rest = await until(events, is_idle)
    finally:
        await events.aclose()
    partial = completed(rest)[-1].message
    assert partial.status is MessageStatus.INTERRUPTED
    assert partial.content.startswith("tick0 tick1 tick2 tick3 ")
    assert "tick2999" not in partial.content
    assert await client.stop(chat.id) is False


# -- a dropped connection, a cancelled reader ----------------------------------------------


async def test_a_dropped_stream_resumes_with_no_gap_and_no_duplicate(
    backend: Backend, client: AsyncGuiAgentClient
) -> None:
    relay = Relay(backend.base_url)
    chat = await client.create_session(model="slow")
    try:
        async with (
            client.events(chat.id) as watcher,  # another tab, reading all along
            AsyncGuiAgentClient(relay.base_url, token=client.token) as relayed,
            relayed.events(chat.id) as events,
        ):
            await client.send_message(chat.id, "count")
            before = await until(events, tick(5))
            relay.cut()
            watched = await until(watcher, tick(40))  # the turn goes on meanwhile
            after = await until(events, tick(60))
            assert relay.accepted == 2  # it connected again, by itself, once
            assert await client.stop(chat.id) is True
            after += await until(events, is_idle)
            watched += await until(watcher, is_idle)
    finally:
        await asyncio.to_thread(relay.close)
    got = before + after
    assert [e.seq for e in got] == list(range(1, len(got) + 1))  # no gap, nothing twice
    assert [e.model_dump() for e in got] == [e.model_dump() for e in watched]
    text = "".join(e.delta for e in got if isinstance(e, TextDelta))
    assert text.startswith("tick0 tick1 tick2 ") and "tick60 " in text
    assert (await client.get_session(chat.id)).messages[1].content == text


async def test_a_cancelled_reader_closes_its_stream_and_stays_cancelled(
    backend: Backend, client: AsyncGuiAgentClient
) -> None:
    relay = Relay(backend.base_url)
    chat = await client.create_session(model="slow")
    reading = asyncio.Event()
    try:
        async with AsyncGuiAgentClient(relay.base_url, token=client.token) as relayed:
            events = await relayed.events(chat.id)

            async def read() -> None:
                async for event in events:
                    if tick(2)(event):
                        reading.set()

            reader = asyncio.create_task(read())
            try:
                await client.send_message(chat.id, "count")
                await reading.wait()
                reader.cancel()
                await asyncio.wait({reader}, timeout=30)  # (not cancelling it again)
                assert reader.cancelled()  # not swallowed, not turned into a stream error
            finally:
                reader.cancel()
            assert await asyncio.to_thread(relay.wait_hung_up, 1)  # its connection closed
            assert [event async for event in events] == []  # and it is over
            assert relay.accepted == 1  # nothing connected again
            assert await client.stop(chat.id) is True
    finally:
        await asyncio.to_thread(relay.close)


async def test_events_the_server_no_longer_holds_raise_resync(
    client: AsyncGuiAgentClient,
) -> None:
    chat = await client.create_session()
    with pytest.raises(ResyncRequired) as too_far:
        await client.events(chat.id, since=10_000)
    assert too_far.value.hello is not None and too_far.value.hello.resync is True
    with pytest.raises(ResyncRequired):  # numbers from before a restart
        async with client.events(chat.id, since=0, epoch="0123456789abcdef"):
            pass


async def test_a_stream_ends_cleanly_when_access_ends(tmp_path: Path) -> None:
    with running_backend(tmp_path, users=[ALICE], auth_recheck_s=0.2) as backend:
        async with AsyncGuiAgentClient(backend.base_url) as client:
            await client.login(*ALICE)
            chat = await client.create_session()
            async with client.events(chat.id) as events:
                assert backend.users is not None and backend.users.remove("alice")
                assert [event async for event in events] == []  # it ends: no error
            assert isinstance(events.closed, Unauthorized)
            assert events.closed.code == "unauthorized"
            with pytest.raises(Unauthorized):
                await client.events(chat.id)


# -- errors --------------------------------------------------------------------------------


async def test_failures_are_typed_errors(backend: Backend, client: AsyncGuiAgentClient) -> None:
    chat = await client.create_session()
    for token in (None, "not-a-token"):
        async with AsyncGuiAgentClient(backend.base_url, token=token) as stranger:
            with pytest.raises(Unauthorized) as refused:
                await stranger.list_sessions()
            assert (refused.value.status, refused.value.code) == (401, "unauthorized")
            with pytest.raises(Unauthorized):
                await stranger.events(chat.id)

    for missing in ("no-such-chat", "../models", ".."):
        with pytest.raises(NotFound) as unknown:
            await client.get_session(missing)
        assert unknown.value.status == 404
    with pytest.raises(NotFound):
        await client.events("no-such-chat")
    with pytest.raises(NotFound):
        await client.answer_approval(chat.id, "never-asked", "allow_once")

    with pytest.raises(ApiError) as malformed:
        await client.update_session(chat.id, settings={"temperature": 5})
    assert type(malformed.value) is ApiError
    assert (malformed.value.status, malformed.value.code) == (400, "invalid_request")
    assert "temperature" in malformed.value.message
    with pytest.raises(ApiError, match="limit"):
        await client.list_sessions(limit=0)

    with socket.socket() as bound_not_listening:
        bound_not_listening.bind(("127.0.0.1", 0))
        port = bound_not_listening.getsockname()[1]
        async with AsyncGuiAgentClient(f"http://127.0.0.1:{port}") as nobody:
            with pytest.raises(ConnectionFailed, match=f"127.0.0.1:{port}"):
                await nobody.health()
            with pytest.raises(ConnectionFailed):
                await nobody.events("any")


async def test_the_token_goes_to_the_base_urls_origin_only() -> None:
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
        async with AsyncGuiAgentClient(base, token="secret") as client:
            with pytest.raises(ApiError) as caught:
                await client.models()
        await asyncio.to_thread(server.join, 30)
        assert caught.value.status == 307 and target in caught.value.message
        assert b"authorization: bearer secret" in heard[0].lower()
        elsewhere.setblocking(False)
        with pytest.raises(BlockingIOError):  # nobody came (a redirect followed would have)
            elsewhere.accept()


def test_a_request_whose_connection_drops_is_not_sent_again() -> None:
    """Both clients: a message whose answer never came may have been taken, so it is not
    sent again behind the caller's back (a message sent twice is two messages)."""
    with socket.create_server(("127.0.0.1", 0)) as hanging_up:
        heard: list[bytes] = []

        def hang_up_on_each() -> None:
            while True:
                try:
                    connection, _ = hanging_up.accept()
                except OSError:  # closed: the test is over
                    return
                with connection:
                    heard.append(connection.recv(65536))

        server = threading.Thread(target=hang_up_on_each, daemon=True)
        server.start()
        base = f"http://127.0.0.1:{hanging_up.getsockname()[1]}"

        async def send_async() -> None:
            async with AsyncGuiAgentClient(base, token="t") as client:
                await client.send_message("chat", "once")

        with GuiAgentClient(base, token="t") as sync_client, pytest.raises(ConnectionFailed):
            sync_client.send_message("chat", "once")
        with pytest.raises(ConnectionFailed):
            asyncio.run(send_async())
        hanging_up.shutdown(socket.SHUT_RDWR)  # wakes the accept() waiting on it
        server.join(timeout=30)
    assert len(heard) == 2  # one each
    assert all(request.startswith(b"POST /api/sessions/chat/messages ") for request in heard)


async def test_login_with_a_users_file_keeps_the_token(tmp_path: Path) -> None:
    def frozen() -> float:
        return 1_000.0  # no throttle wait runs out during the test

    throttles = LoginThrottles(by_user=LoginThrottle(clock=frozen))
    with running_backend(tmp_path, users=[ALICE], throttles=throttles) as backend:
        async with AsyncGuiAgentClient(backend.base_url) as client:
            assert (await client.health()).auth == "password"
            with pytest.raises(Unauthorized):
                await client.login("alice", "wrong")
            assert client.token is None
            answer = await client.login(*ALICE)
            assert answer.user == "alice" and client.token == answer.token
            assert (await client.create_session()).owner == "alice"

            free = LoginThrottle().free_attempts
            with pytest.raises(RateLimited) as throttled:
                for _ in range(free + 2):
                    with pytest.raises(Unauthorized):
                        await client.login("alice", "guess")
            assert throttled.value.status == 429 and throttled.value.retry_after
            assert throttled.value.retry_after > 0


# -- the example ---------------------------------------------------------------------------


def test_the_async_example_runs_against_the_server(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's asyncio example, run as a script runs it (its own event loop)."""
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"### From asyncio\n.*?```python\n(.*?)```", readme, re.S)
    assert found, "README.md has no python example under 'From asyncio'"
    backend.scripted.push("Hello from the server, awaited.")
    monkeypatch.setenv("GUI_AGENT_URL", backend.base_url)
    exec(compile(found.group(1), "README.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out == "Hello from the server, awaited."
    assert backend.scripted.requests[-1].messages[-1].content == "Hello!"
