"""Stopping the server while a tab is open: the page's keep-alive event ends as soon as the
server says it is closing, so the tab's connection does not hold the shutdown up for the
whole grace period (and nothing is cancelled with a traceback)."""

from __future__ import annotations

import asyncio
import logging
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Browser, expect

from backends.gradio import create_app
from connectors.scripted import ScriptedModel
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore
from tests.backends.gradio.kit import mount_page

pytestmark = pytest.mark.browser

GRACE_S = 5


class ClosingServer(uvicorn.Server):
    """uvicorn that tells the page it is closing before it waits for connections (what
    `gui-agent serve` does through `create_app(closing=...)`)."""

    def __init__(self, config: uvicorn.Config, closing: asyncio.Event) -> None:
        super().__init__(config)
        self.closing = closing
        self.shutdown_s: float | None = None

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        began = time.monotonic()
        self.closing.set()
        await super().shutdown(sockets)
        self.shutdown_s = time.monotonic() - began


def test_a_tab_left_open_does_not_hold_up_the_shutdown(
    chromium: Browser, caplog: pytest.LogCaptureFixture
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    ready = threading.Event()
    servers: list[ClosingServer] = []

    async def serve() -> None:
        closing = asyncio.Event()
        manager = SessionManager(
            models=StaticCatalog(ScriptedModel(default="hi")),
            store=MemoryStore(),
            workspace_root=Path(tempfile.mkdtemp(prefix="gui-agent-shutdown-")),
        )
        blocks = create_app(manager, closing=closing)
        app, _assets = mount_page(blocks, manager)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=GRACE_S
        )
        server = ClosingServer(config, closing)
        servers.append(server)
        serving = asyncio.ensure_future(server.serve(sockets=[listener]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.01)
        ready.set()
        await serving

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert ready.wait(30)
    page = chromium.new_context().new_page()
    try:
        page.goto(f"http://127.0.0.1:{port}/", wait_until="load")
        expect(page.locator("#state-badge")).to_have_text("Ready", timeout=15_000)
        with caplog.at_level(logging.ERROR, logger="uvicorn.error"):
            servers[0].should_exit = True
            thread.join(GRACE_S + 10)
        assert not thread.is_alive()
        assert servers[0].shutdown_s is not None
        assert servers[0].shutdown_s < 2, servers[0].shutdown_s
        assert not [r for r in caplog.records if "graceful shutdown" in r.getMessage()]
    finally:
        page.context.close()
        listener.close()
