"""A front end that opens a chat while a reply is being written: the session detail and the
stream's `hello` carry that reply with its text so far, so the events that follow continue
it instead of starting mid-sentence for a message the client never saw begin; and the tool
calls running, with what they have printed so far."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from backends.server import build_server
from connectors.scripted import call
from gui_agent.config import AppConfig
from schema import (
    Event,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    Role,
    TextDelta,
    ToolCallOutput,
    ToolCallStarted,
)
from tests.backends.api.live import (
    SSE,
    Api,
    Backend,
    ServerThread,
    is_idle,
    iter_sse,
    running_backend,
    serving,
)


def _text_up_to(events: Sequence[Event], message_id: str, seq: int) -> str:
    return "".join(
        e.delta
        for e in events
        if isinstance(e, TextDelta) and e.message_id == message_id and e.seq <= seq
    )


def test_a_client_that_arrives_mid_reply_gets_the_reply_so_far(api: Api) -> None:
    session_id = api.create_session(model="slow")
    with api.events(session_id) as first:
        api.send(session_id, "write a long answer")
        seen = first.until(lambda e: isinstance(e, TextDelta) and e.delta == "tick5 ")
        started = next(e for e in seen if isinstance(e, MessageStarted))

        # GET the session, then follow it from its last_seq, as SessionDetail says to.
        detail = api.session(session_id)
        assert detail["busy"] and [m.role for m in api.messages(session_id)] == [Role.USER]
        (partial,) = [Message.model_validate(m) for m in detail["streaming"]]
        assert partial.id == started.message_id and partial.role is Role.ASSISTANT
        assert partial.agent == started.agent and partial.type is started.message_type
        first.until(lambda e: e.seq >= detail["last_seq"])
        assert partial.content == _text_up_to(first.seen, partial.id, detail["last_seq"])
        assert partial.content.startswith("tick0 tick1 tick2 tick3 tick4 tick5 ")

        # A stream opened now (no Last-Event-ID) says the same in its hello.
        with api.events(session_id) as second:
            hello = second.hello
            (opened,) = [Message.model_validate(m) for m in hello["streaming"]]
            first.until(lambda e: e.seq >= hello["last_seq"])
            assert opened.id == partial.id
            assert opened.content == _text_up_to(first.seen, partial.id, hello["last_seq"])
            delta = second.until(lambda e: isinstance(e, TextDelta))[-1]
            assert isinstance(delta, TextDelta) and delta.message_id == partial.id
            assert delta.seq > hello["last_seq"]  # it continues the reply, after the hello

        assert api.post(f"/api/sessions/{session_id}/stop").json() == {"stopped": True}
        ended = first.until(is_idle)

    reply = next(
        e.message for e in ended if isinstance(e, MessageCompleted) and e.message.id == partial.id
    )
    assert reply.status is MessageStatus.INTERRUPTED
    assert reply.content.startswith(opened.content) and opened.content.startswith(partial.content)
    after = api.session(session_id)
    assert after["streaming"] == [] and not after["busy"]
    with api.events(session_id) as idle:
        assert idle.hello["streaming"] == []


# -- refusals before the API: in the API's error shape too ----------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServerThread]:
    """What `gui-agent serve` builds (no login): the API behind its guards, and the page."""
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data", port=0)
    with serving(config) as server:
        yield server


def test_requests_refused_before_they_reach_the_api_answer_in_its_error_shape(
    served: ServerThread,
) -> None:
    """A client that reaches the app under another host name (no login: DNS rebinding is
    refused), or asks for CORS, reads the refusal as every other API error; the page's
    refusals stay plain text."""
    with httpx.Client(base_url=served.base_url, timeout=20) as http:
        misdirected = http.get("/api/health", headers={"Host": "chat.example"})
        preflight = http.options(
            "/api/sessions",
            headers={
                "Origin": "https://elsewhere.example",
                "Access-Control-Request-Method": "POST",
            },
        )
        page = http.get("/", headers={"Host": "chat.example"})
    assert misdirected.status_code == 421
    assert misdirected.headers["content-type"] == "application/json"
    error = misdirected.json()["error"]
    assert error["code"] == "misdirected_request" and "--auth-file" in error["message"]
    assert preflight.status_code == 403
    assert preflight.headers["content-type"] == "application/json"
    assert "access-control-allow-origin" not in preflight.headers
    error = preflight.json()["error"]
    assert error["code"] == "cross_origin_request" and "other web sites" in error["message"]
    assert page.status_code == 421 and page.headers["content-type"].startswith("text/plain")


# -- naming a model --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"model": ""}, "unknown model ''"),
        ({"settings": {"model": ""}}, "unknown model ''"),
        ({"model": "nope"}, "unknown model 'nope'"),
        ({"model": "scripted", "settings": {"model": "slow"}}, "different models"),
    ],
    ids=["empty", "empty-in-settings", "unknown", "two-models"],
)
def test_a_model_that_is_not_offered_is_refused_when_creating_or_patching(
    api: Api, body: dict[str, object], reason: str
) -> None:
    """An empty model name (a drop-down's blank option) is refused, never taken silently as
    "the default" or "no change"; create answers as PATCH does."""
    created = api.post("/api/sessions", json=body)
    assert created.status_code == 400, created.text
    assert created.json()["error"]["code"] == "invalid_request"
    assert reason in created.json()["error"]["message"]
    assert api.get("/api/sessions").json()["sessions"] == []

    session_id = api.create_session(model="slow")
    before = api.session(session_id)["session"]
    patched = api.request("PATCH", f"/api/sessions/{session_id}", json=body)
    assert patched.status_code == 400, patched.text
    assert reason in patched.json()["error"]["message"]
    assert api.session(session_id)["session"] == before


def test_the_model_can_be_named_either_way_when_creating(api: Api) -> None:
    for body in ({"model": "slow"}, {"settings": {"model": "slow"}}):
        created = api.post("/api/sessions", json=body)
        assert created.status_code == 201, created.text
        assert created.json()["session"]["settings"]["model"] == "slow"
    both = api.post("/api/sessions", json={"model": "slow", "settings": {"model": "slow"}})
    assert both.status_code == 201 and both.json()["session"]["settings"]["model"] == "slow"


# -- the chats list, live ---------------------------------------------------------------------

ALICE = ("alice", "alice-password-1")
BOB = ("bob", "bob-password-22")


@contextmanager
def chat_changes(api: Api, user: str) -> Iterator[Iterator[SSE]]:
    """`GET /api/sessions/changes`, past its hello (which names the caller)."""
    headers = {**api.headers, "Accept": "text/event-stream"}
    with api.http.stream("GET", "/api/sessions/changes", headers=headers) as response:
        assert response.status_code == 200, response.read().decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        events = iter_sse(response)
        hello = next(events)
        assert hello.event == "hello" and hello.id is None
        assert json.loads(hello.data)["user"] == user
        yield events


def change(events: Iterator[SSE]) -> tuple[str, dict[str, str]]:
    item = next(events)
    assert item.id is None
    data: dict[str, str] = json.loads(item.data)
    return item.event, data


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Backend]:
    # No keep-alives: a stream that fails to end times the client out (20 s) instead.
    options = {"auth_recheck_s": 0.2, "keepalive_s": 600.0}
    with running_backend(tmp_path, users=[ALICE, BOB], **options) as running:
        yield running


def _login(backend: Backend, user: tuple[str, str]) -> Api:
    return backend.client().login(*user)


def test_the_chats_list_follows_changes_made_anywhere(team: Backend) -> None:
    """A sidebar learns of its user's chats created, renamed (by hand or by the first
    message), imported and deleted, by another client or through the server itself (as the
    page does), and of nobody else's."""
    alice, other_tab, bob = _login(team, ALICE), _login(team, ALICE), _login(team, BOB)
    with chat_changes(alice, "alice") as changes:
        made = other_tab.create_session(title="Plans")
        assert change(changes) == (
            "created",
            {"kind": "created", "session_id": made, "title": "Plans"},
        )

        bob.create_session(title="Bob's")  # not Alice's: not in her list
        untitled = other_tab.create_session()
        assert change(changes) == (
            "created",
            {"kind": "created", "session_id": untitled, "title": ""},
        )
        with other_tab.events(untitled) as stream:
            other_tab.send(untitled, "what is new")
            stream.until(is_idle)
        assert change(changes) == (
            "renamed",
            {"kind": "renamed", "session_id": untitled, "title": "what is new"},
        )

        url = f"/api/sessions/{made}"
        assert other_tab.request("PATCH", url, json={"title": "Holiday plans"}).status_code == 200
        assert change(changes)[1] == {
            "kind": "renamed",
            "session_id": made,
            "title": "Holiday plans",
        }

        exported = other_tab.get(f"{url}/export").content
        imported = other_tab.post("/api/sessions/import", content=exported).json()["session"]
        assert change(changes)[1] == {
            "kind": "imported",
            "session_id": imported["id"],
            "title": "Holiday plans (imported)",  # (the original is still there)
        }

        assert other_tab.request("DELETE", url).status_code == 204
        assert change(changes)[1] == {
            "kind": "deleted",
            "session_id": made,
            "title": "Holiday plans",
        }

        # A chat made in the server's process (as the page makes it) is announced too.
        async def page_creates() -> str:
            interpreter = await team.manager.create("alice", title="From the page")
            return interpreter.id

        from_page = team.server.call(page_creates())
        assert change(changes)[1] == {
            "kind": "created",
            "session_id": from_page,
            "title": "From the page",
        }

    async def listeners_left() -> int:
        for _ in range(2000):  # bounded: the server notices the hang-up within milliseconds
            if not team.manager.changes.listener_count():
                break
            await asyncio.sleep(0.01)
        return team.manager.changes.listener_count()

    assert team.server.call(listeners_left()) == 0  # the stream let go when it closed


def test_the_chats_list_stream_ends_when_access_ends(team: Backend) -> None:
    alice, bob = _login(team, ALICE), _login(team, BOB)
    with chat_changes(alice, "alice") as alices, chat_changes(bob, "bob") as bobs:
        assert team.users is not None
        team.users.remove("bob")
        closed = next(bobs)
        assert closed.event == "closed"
        assert json.loads(closed.data)["error"]["code"] == "unauthorized"
        assert next(bobs, None) is None  # and the stream is over

        mine = alice.create_session(title="still here")
        assert change(alices)[1]["session_id"] == mine

        # Revoked by the server (as when it sees the users file change): at once, although
        # her token would still pass the recheck.
        team.server.call(team.manager.revoke("alice"))
        closed = next(alices)
        assert closed.event == "closed"
        assert json.loads(closed.data)["error"]["code"] == "unauthorized"
        assert "removed" in json.loads(closed.data)["error"]["message"]
        assert next(alices, None) is None
    assert bob.get("/api/sessions/changes").status_code == 401
    assert (
        alice.get("/api/sessions/changes", headers={"Authorization": "Bearer x"}).status_code == 401
    )


# -- images ----------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_an_image_type_in_capitals_is_kept_in_the_spelling_vision_apis_take(api: Api) -> None:
    """ "image/PNG" is taken, and kept as "image/png": sent on as declared, a vision API
    would refuse the message, and every later turn of the chat with it."""
    data = base64.b64encode(PNG).decode()
    session_id = api.create_session()
    with api.events(session_id) as stream:
        sent = api.post(
            f"/api/sessions/{session_id}/messages",
            json={"text": "look", "images": [{"media_type": "image/PNG", "data": data}]},
        )
        assert sent.status_code == 202, sent.text
        stream.until(is_idle)
        assert [i.media_type for i in api.messages(session_id)[0].images] == ["image/png"]
        edited = api.post(
            f"/api/sessions/{session_id}/control",
            json={
                "action": "edit_last",
                "text": "look again",
                "images": [{"media_type": "Image/Png", "data": data}],
            },
        )
        assert edited.status_code == 202, edited.text
        stream.until(is_idle)
    (user, _reply) = api.messages(session_id)
    assert user.content == "look again"
    assert [image.media_type for image in user.images] == ["image/png"]
    assert exported_image_types(api, session_id) == ["image/png"]


def exported_image_types(api: Api, session_id: str) -> list[str]:
    """The media types of the images the export holds (what a restart or import reads)."""
    document = api.get(f"/api/sessions/{session_id}/export").json()
    return [image["media_type"] for message in document["messages"] for image in message["images"]]


def test_the_chats_list_stream_ends_when_the_server_shuts_down(tmp_path: Path) -> None:
    """Shutting down ends the stream at once, as it ends the sessions' streams, so the
    server does not wait out its graceful timeout for a sidebar to hang up."""
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data", port=0)
    cleanups: list[Callable[[], Awaitable[None]]] = []

    async def factory() -> tuple[FastAPI, Callable[[], Awaitable[None]]]:
        app, cleanup = await build_server(config, probe_local=False)
        cleanups.append(cleanup)
        return app, cleanup

    server = ServerThread(factory).start()
    try:
        api = Api(server.base_url).login()
        with chat_changes(api, "local") as changes:
            made = api.create_session(title="before")
            assert change(changes)[1]["session_id"] == made

            async def shut_down() -> None:  # what `serve` does first on SIGTERM
                await cleanups[0]()

            server.call(shut_down())
            pool = concurrent.futures.ThreadPoolExecutor(1)
            try:
                # Bounded (keep-alives would hold a stream left open for ever), generous.
                ended = pool.submit(next, changes, None)
                done, _ = concurrent.futures.wait([ended], timeout=60)
                assert ended in done, "the stream was still open after the shutdown began"
                assert ended.result() is None
            finally:
                pool.shutdown(wait=False)
        api.close()
    finally:
        server.stop()


# -- queued or not -----------------------------------------------------------------------------


def test_a_message_sent_while_a_retry_is_being_made_says_it_is_queued(
    backend: Backend, api: Api
) -> None:
    """During a retry (its history still being saved) no turn runs yet, but a message sent
    then waits for the retried one: the answer says queued, and it is answered after it."""
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "first")
        stream.until(is_idle)

    store = backend.manager.store
    entered, release = threading.Event(), asyncio.Event()
    original = store.replace_messages

    async def held(session_id: str, messages: Sequence[Message]) -> None:
        entered.set()
        await release.wait()
        await original(session_id, messages)

    async def hold() -> None:
        store.replace_messages = held  # type: ignore[method-assign]

    async def let_go() -> None:
        store.replace_messages = original  # type: ignore[method-assign]
        release.set()

    backend.server.call(hold())
    with concurrent.futures.ThreadPoolExecutor(1) as pool, api.events(session_id) as stream:
        try:
            control = f"/api/sessions/{session_id}/control"
            retry = pool.submit(api.post, control, json={"action": "retry"})
            assert entered.wait(timeout=30), "the retry never saved its history"
            sent = other_client(backend, api).post(
                f"/api/sessions/{session_id}/messages", json={"text": "and then this"}
            )
        finally:
            backend.server.call(let_go())
        assert retry.result(timeout=30).status_code == 202
        assert sent.status_code == 202 and sent.json()["queued"] is True, sent.text
        queued_id = sent.json()["message_id"]
        stream.until(lambda e: isinstance(e, MessageCompleted) and e.message.id == queued_id)
        stream.until(is_idle)  # the turn that answers it
    messages = api.messages(session_id)
    assert [m.content for m in messages if m.role is Role.USER] == ["first", "and then this"]
    assert messages[-1].role is Role.ASSISTANT  # answered, after the retried message


def other_client(backend: Backend, api: Api) -> Api:
    return backend.client(api.token)


WAITING = """
import time
print("fetched page 1", flush=True)
time.sleep(60)  # until the test stops it
"""


def test_a_client_that_arrives_mid_call_gets_what_the_call_printed_so_far(
    api: Api, backend: Backend
) -> None:
    session_id = api.create_session(settings={"permissions": {"run_python": "allow"}})
    backend.scripted.push(call("run_python", code=WAITING), "Stopped.")
    with api.events(session_id) as first:
        api.send(session_id, "fetch")
        seen = first.until(lambda e: isinstance(e, ToolCallOutput))
        started = next(e for e in seen if isinstance(e, ToolCallStarted))

        detail = api.session(session_id)
        (printed,) = [ToolCallOutput.model_validate(c) for c in detail["running_calls"]]
        assert printed.call_id == started.call.id
        assert (printed.text, printed.omitted) == ("fetched page 1\n", 0)
        assert printed.session_id == session_id and 0 < printed.seq <= detail["last_seq"]
        with api.events(session_id) as second:  # a stream opened now says it in its hello
            (said,) = [ToolCallOutput.model_validate(c) for c in second.hello["running_calls"]]
            assert said == printed

        assert api.post(f"/api/sessions/{session_id}/stop").json() == {"stopped": True}
        first.until(is_idle)
    assert api.session(session_id)["running_calls"] == []
