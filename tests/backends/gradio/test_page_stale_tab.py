"""In a real browser: a tab that stopped hearing of changes made elsewhere (its keep-alive
ended: the laptop slept, the connection dropped) still shows the old temperature after
another tab moved it. A message sent from it, the temperature untouched there, leaves the
other tab's change as it is."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, expect
from starlette.routing import Mount

from backends.gradio.handlers import Handlers
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    build,
    open_tab,
    send,
    served,
    session_starting,
    user_messages,
    wait_idle,
)
from tests.backends.gradio.test_page_follow import open_chat
from tests.backends.gradio.test_page_settings_hunt8 import open_settings

pytestmark = pytest.mark.browser


@dataclass(frozen=True)
class Kept:
    """The test server's sessions, its closing signal, and the page's handlers."""

    manager: SessionManager
    closing: asyncio.Event
    handlers: Handlers


async def build_keeping_handlers() -> tuple[FastAPI, Kept]:
    app, state = await build()
    mount = next(route for route in app.routes if isinstance(route, Mount))
    blocks = mount.app.get_blocks()  # type: ignore[attr-defined]
    handlers = next(fn.fn.__self__ for fn in blocks.fns.values() if fn.name == "send")
    return app, Kept(state.manager, state.closing, handlers)


@pytest.fixture
def server() -> Iterator[LiveServer]:
    with served(build_keeping_handlers) as running:
        yield running


def forget(server: LiveServer, tab: Page) -> None:
    """The server forgets what the tab follows, as when its keep-alive event ends."""
    session_hash = tab.evaluate("() => window.__gradio_session_hash__")
    handlers: Handlers = server.state.handlers

    async def drop() -> None:
        handlers.news.forget(f"local\0{session_hash}")

    server.call(drop())


def until_temperature(server: LiveServer, interpreter: Interpreter, value: float) -> None:
    """Until the chat's temperature is `value` (each change of it is an event of the chat)."""

    async def wait() -> None:
        subscription = interpreter.subscribe()
        try:
            while interpreter.session.settings.temperature != value:
                await subscription.next_events(stop_at_idle=False)
        finally:
            subscription.close()

    server.call(wait(), timeout_s=20)


def temperature_of(server: LiveServer, interpreter: Interpreter) -> float | None:
    async def read() -> float | None:
        return interpreter.session.settings.temperature

    return server.call(read())


def test_a_send_from_a_tab_that_missed_a_temperature_change_leaves_it(
    tab: Page, chromium: Browser, server: LiveServer
) -> None:
    send(tab, "a chat two tabs show")
    wait_idle(tab)
    interpreter = session_starting(server, "a chat two tabs show")
    sleepy = open_tab(chromium, server)
    try:
        open_chat(sleepy, "a chat two tabs show")
        open_settings(sleepy)
        shown = sleepy.locator("#temperature input[type=number]")
        before = shown.input_value()
        forget(server, sleepy)

        open_settings(tab)
        slider = tab.locator("#temperature input[type=range]")
        slider.focus()
        for _ in range(4):
            slider.press("ArrowLeft")
        expect(tab.locator("#temperature input[type=number]")).to_have_value("0.8")
        until_temperature(server, interpreter, 0.8)
        expect(shown).to_have_value(before)  # the sleepy tab missed it

        send(sleepy, "good morning")
        expect(user_messages(sleepy)).to_have_count(2)
        wait_idle(sleepy)
        assert temperature_of(server, interpreter) == 0.8
    finally:
        sleepy.context.close()
