"""In a real browser: a tab whose keep-alive event ended while it stayed open (the server
shut down and came back, or ended the event) starts it again by itself, once the server
answers, and catches up on what changed meanwhile: the chat's title, settings and AutoChat
limits, the chats list and the chat itself. Without a reload, and without touching what the
person is typing."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from playwright.sync_api import APIResponse, Browser, Page, Request, Route, expect
from starlette.routing import Mount

from backends.gradio.handlers import Handlers
from backends.gradio.presence import Presence
from gui_agent.manager import SessionManager
from gui_agent.store import SQLiteStore
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    bot_messages,
    build,
    build_playing,
    closing,
    eventually,
    open_tab,
    play,
    send,
    served,
    session_starting,
    settle,
    user_messages,
    wait_idle,
)
from tests.backends.gradio.test_page_follow import manage
from tests.backends.gradio.test_page_settings_hunt8 import field, open_advanced

pytestmark = pytest.mark.browser

PROBES = "**/gradio_api/info"
"""What the page asks to know whether the server answers (page.js)."""


class Probes:
    """The page's asks whether the server answers (`PROBES`), failed as while the server is
    down until `up`, and counted as they fail.

    Decided when each ask is handled, not by adding and then removing a route: the page's
    request event reaches the test before the route does, so an ask seen just before the
    route was removed went on to the server, which answered. The tab then started its
    keep-alive while the test still held the server to be down, the restart test's flake."""

    def __init__(self, tab: Page) -> None:
        self.down = True
        self.refused = 0
        tab.route(PROBES, self._route)

    def _route(self, route: Route) -> None:
        if not self.down:
            route.continue_()
            return
        self.refused += 1
        route.abort()

    def up(self) -> None:
        self.down = False


@dataclass(frozen=True)
class Keeping:
    """The test server's sessions, its closing signal, the page's handlers and its
    keep-alive handler."""

    manager: SessionManager
    closing: asyncio.Event
    handlers: Handlers
    presence: Presence


async def build_keeping() -> tuple[FastAPI, Keeping]:
    app, state = await build()
    mount = next(route for route in app.routes if isinstance(route, Mount))
    blocks = mount.app.get_blocks()  # type: ignore[attr-defined]
    presence = next(fn.fn.__self__ for fn in blocks.fns.values() if fn.name == "keep_open")
    return app, Keeping(state.manager, state.closing, presence.handlers, presence)


@pytest.fixture
def server() -> Iterator[LiveServer]:
    """A server per test (a rerun finds only its own chats)."""
    with served(build_keeping) as running:
        yield running


def tab_key(tab: Page) -> str:
    """The server's key for the tab (handlers.tab_of)."""
    return "local\0" + str(tab.evaluate("() => window.__gradio_session_hash__"))


def mark_the_document(tab: Page) -> None:
    tab.evaluate("() => { window.__sameDocument = true; }")


def same_document(tab: Page) -> bool:
    """The page was not reloaded since `mark_the_document`."""
    return bool(tab.evaluate("() => window.__sameDocument === true"))


def while_away(
    server: LiveServer, tab: Page, change: Callable[[SessionManager], Awaitable[None]]
) -> None:
    """End the tab's keep-alive event as the server does when it shuts down (`closing`),
    make `change` while the tab has none, then serve on."""
    handlers: Handlers = server.state.handlers
    key = tab_key(tab)

    async def away() -> None:
        handlers.closing.set()
        try:
            while handlers.news.following(key):  # until its keep-alive has ended
                await asyncio.sleep(0.01)
            await change(server.state.manager)
        finally:
            handlers.closing.clear()

    server.call(away(), timeout_s=30)


def test_a_tab_whose_keep_alive_ended_catches_up_and_keeps_what_is_typed(
    tab: Page, server: LiveServer
) -> None:
    send(tab, "a chat whose tab lost its keep-alive")
    wait_idle(tab)
    chat = session_starting(server, "a chat whose tab lost its keep-alive")
    manage(tab)
    open_advanced(tab)
    tab.locator("#chat-input textarea").fill("half a thought")
    field(tab, "max-tokens").fill("777")  # typed, not saved yet: the box keeps the focus
    mark_the_document(tab)

    async def change(manager: SessionManager) -> None:
        await manager.rename(chat.id, "Renamed while the tab was away", "local")
        settings = chat.session.settings.model_copy(update={"temperature": 0.3})
        autochat = chat.session.autochat.model_copy(update={"max_turns": 7})
        await chat.update(settings=settings, autochat=autochat)
        await manager.create("local", title="Made while the tab was away")
        await chat.send("sent while the tab was away")
        await chat.wait_idle()

    while_away(server, tab, change)

    expect(tab.locator("#rename-input textarea")).to_have_value("Renamed while the tab was away")
    chats = tab.locator("#session-list")
    expect(chats).to_contain_text("Renamed while the tab was away")
    expect(chats).to_contain_text("Made while the tab was away")
    expect(tab.locator("#temperature input[type=number]")).to_have_value("0.3")
    expect(tab.locator("#autochat-max-turns input")).to_have_value("7")
    expect(user_messages(tab)).to_have_count(2)
    expect(bot_messages(tab).last).to_contain_text("You said: sent while the tab was away")
    expect(tab.locator("#chat-input textarea")).to_have_value("half a thought")
    expect(field(tab, "max-tokens")).to_have_value("777")
    assert same_document(tab)


def test_a_catch_up_keeps_a_title_typed_over_the_one_the_first_message_gave(
    tab: Page, server: LiveServer
) -> None:
    """A new chat's first message titles it, and the title offer fills the Title box. A
    keep-alive that started again after that set the box to the first title over one the
    person was typing (the tab's base did not hold the first title), and Rename saved the
    first title: the rename tests' CI flake."""
    send(tab, "a chat titled by its first message")
    wait_idle(tab)
    manage(tab)
    title = tab.locator("#rename-input textarea")
    expect(title).to_have_value("a chat titled by its first message")
    settle(tab)  # (the box's value came from the server just now)
    title.fill("A title being typed")

    async def change(manager: SessionManager) -> None:
        await manager.create("local", title="Made while the tab was away")

    while_away(server, tab, change)
    chats = tab.locator("#session-list")
    expect(chats).to_contain_text("Made while the tab was away")  # it caught up
    expect(title).to_have_value("A title being typed")
    title.press("Enter")
    expect(chats).to_contain_text("A title being typed")
    expect(chats).not_to_contain_text("a chat titled by its first message")


def test_a_keep_alive_started_again_follows_the_chat_the_tab_shows(
    tab: Page, server: LiveServer
) -> None:
    """After catching up, the tab hears of the chat's changes as before (its AutoChat limits
    reach it only from the chat it shows, which the server knew only from the browser)."""
    send(tab, "a chat followed again")
    wait_idle(tab)
    chat = session_starting(server, "a chat followed again")
    manage(tab)

    async def rename(manager: SessionManager) -> None:
        await manager.rename(chat.id, "Renamed while away", "local")

    while_away(server, tab, rename)
    expect(tab.locator("#rename-input textarea")).to_have_value("Renamed while away")

    async def limit() -> None:
        await chat.update(autochat=chat.session.autochat.model_copy(update={"max_turns": 9}))

    server.call(limit())
    expect(tab.locator("#autochat-max-turns input")).to_have_value("9")


def test_a_keep_alive_that_failed_is_started_again_and_catches_up(
    tab: Page, server: LiveServer
) -> None:
    send(tab, "a chat whose keep-alive fails")
    wait_idle(tab)
    chat = session_starting(server, "a chat whose keep-alive fails")
    manage(tab)
    mark_the_document(tab)
    presence: Presence = server.state.presence
    manager: SessionManager = server.state.manager
    key = tab_key(tab)

    async def fail_once() -> None:
        waiting = presence._next_wake

        async def failing(tab: str, listening: Any) -> Any:
            if tab != key:
                return await waiting(tab, listening)
            del presence._next_wake  # (once)
            await manager.rename(chat.id, "Renamed as its keep-alive failed", "local")
            raise RuntimeError("the keep-alive failed")

        presence._next_wake = failing  # type: ignore[method-assign]
        await manager.rename(chat.id, "Renamed to wake it", "local")  # its next wait fails

    server.call(fail_once())
    expect(tab.locator("#rename-input textarea")).to_have_value("Renamed as its keep-alive failed")
    assert same_document(tab)


# -- a real restart ----------------------------------------------------------------------------


def stored_in(folder: Path) -> Callable[[], Coroutine[Any, Any, tuple[FastAPI, Any]]]:
    """The test app, its chats kept in a file in `folder` (as a restarted server finds them)."""

    async def build() -> tuple[FastAPI, Any]:
        return await build_playing(
            play, store=SQLiteStore(folder / "chats.db"), workspace=folder / "work"
        )

    return build


class ServerOnPort(LiveServer):
    """A test server on the port a server before it used (the same address for the tab)."""

    def __init__(
        self, build: Callable[[], Coroutine[Any, Any, tuple[FastAPI, Any]]], port: int
    ) -> None:
        super().__init__(build)
        self._sock.close()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self.port = port
        self.url = f"http://127.0.0.1:{port}/"


def shut_down(server: LiveServer) -> None:
    """Stop the server as `gui-agent serve` does: the open tabs' keep-alive events end first."""
    server.call(closing(server))
    server.stop()


@dataclass
class Restarts:
    """A tab on a chat of a server that is stopped and started again on the same address,
    keeping its chats (`stop`, then `start_again`)."""

    tab: Page
    chat_id: str
    folder: Path
    running: list[LiveServer]

    @property
    def server(self) -> LiveServer:
        return self.running[-1]

    def stop(self) -> None:
        shut_down(self.running.pop())

    def start_again(self, port: int) -> LiveServer:
        server = ServerOnPort(stored_in(self.folder), port)
        server.start()
        self.running.append(server)
        return server


@contextmanager
def a_chat_across_restarts(chromium: Browser, folder: Path, text: str) -> Iterator[Restarts]:
    """A tab that sent `text` to a new chat, was answered and shows the chat's title box."""
    first = LiveServer(stored_in(folder))
    first.start()
    running = [first]
    tab = open_tab(chromium, first)
    try:
        send(tab, text)
        wait_idle(tab)
        chat_id = session_starting(first, text).id
        manage(tab)
        yield Restarts(tab, chat_id, folder, running)
    finally:
        tab.context.close()
        for server in running:
            shut_down(server)


def test_after_a_server_restart_a_tab_starts_again_once_the_server_answers(
    chromium: Browser, tmp_path: Path
) -> None:
    with a_chat_across_restarts(chromium, tmp_path, "a chat across a restart") as chat:
        tab, port = chat.tab, chat.server.port
        mark_the_document(tab)
        sent: list[str] = []
        probes = Probes(tab)  # as while the server is down
        chat.stop()
        tab.on("request", lambda request: _note_event(request, sent))
        second = chat.start_again(port)
        manager: SessionManager = second.state.manager
        second.call(manager.rename(chat.chat_id, "Renamed after the restart", "local"))
        # it keeps asking (each time after a longer wait), nothing more
        eventually(tab, lambda: probes.refused >= 2, "two asks whether the server answers")
        assert sent == []
        probes.up()

        expect(tab.locator("#rename-input textarea")).to_have_value("Renamed after the restart")
        expect(tab.locator("#session-list")).to_contain_text("Renamed after the restart")
        assert same_document(tab)
        waits = tab.evaluate("() => [0, 1, 2, 3, 20].map(window.guiAgentKeepAgain.delay)")
        assert waits == [500, 1000, 2000, 4000, 60_000]  # doubling, up to a minute


def _note_event(request: Request, sent: list[str]) -> None:
    if "/queue/join" in request.url:
        sent.append(request.url)


class HeldAnswers:
    """Holds the answers to the tab's requests to start a rename (of the Title box): the
    server gets each request and runs its event (whose messages reach the tab on its event
    stream), and the tab gets the answer only once let go. What a busy network or server
    can do to the order of the two, made certain."""

    def __init__(self, tab: Page) -> None:
        self.tab = tab
        self.held: list[tuple[Route, APIResponse]] = []
        self.sent: list[object] = []
        tab.route("**/gradio_api/queue/join*", self._route)

    def _route(self, route: Route) -> None:
        data = (route.request.post_data_json or {}).get("data")
        # The rename's inputs: the chat's id, the Title box, the search box, the tab's base.
        if isinstance(data, list) and len(data) == 4 and data[1] and data[2] == "":
            self.sent.append(data[1])
            self.held.append((route, route.fetch()))
        else:
            route.continue_()

    def let_go(self) -> None:
        self.tab.unroute("**/gradio_api/queue/join*", self._route)
        for route, answer in self.held:
            route.fulfill(response=answer)


def test_a_tab_whose_event_stream_broke_during_a_restart_still_hears_back(
    chromium: Browser, tmp_path: Path
) -> None:
    """Gradio's client counts its stream of server events as open after it broke. So the
    answer of a rename that comes in after the stream closed, while the server is down,
    had the client open a stream that failed, and the tab never heard back after: neither
    its keep-alive once the server was back, nor a reply (the page's early script mends
    such a stream: event_stream.js)."""
    with a_chat_across_restarts(chromium, tmp_path, "a chat whose stream breaks") as chat:
        tab, first = chat.tab, chat.server
        title = tab.locator("#rename-input textarea")
        expect(title).to_have_value("a chat whose stream breaks")  # (offered after the turn)
        mark_the_document(tab)
        held = HeldAnswers(tab)
        settle(tab)  # (the box's value came from the server just now)
        title.fill("Renamed before the restart")
        tab.get_by_role("button", name="Rename chat").click()
        manager: SessionManager = first.state.manager
        eventually(tab, lambda: bool(held.held), "the rename's answer held")
        assert held.sent == ["Renamed before the restart"]

        def saved() -> str:
            return str(first.call(manager.get(chat.chat_id, "local")).session.title)

        # the server renames it (the held answer says only that the event was queued: it
        # may not have run yet): only its answer is held
        eventually(tab, lambda: saved() == "Renamed before the restart", "the rename saved")
        tab.wait_for_timeout(500)  # (the rename's own messages reach the tab meanwhile)

        probes = Probes(tab)  # as while the server is down
        chat.stop()  # the tab's stream closes as its keep-alive ends
        held.let_go()  # the answer comes in now: the tab opens a stream, which fails
        second = chat.start_again(first.port)
        later: SessionManager = second.state.manager
        second.call(later.rename(chat.chat_id, "Renamed after the restart", "local"))
        probes.up()

        expect(title).to_have_value("Renamed after the restart")
        send(tab, "heard after the restart")
        expect(bot_messages(tab).last).to_contain_text("heard after the restart")
        assert same_document(tab)
