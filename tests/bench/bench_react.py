"""What the React front end costs the browser: Debian's Chromium, headless.

    python tests/bench/bench_react.py [--seconds S] [--sizes 2,402]

Serves the API with the React build at /react/ (the server's own `mount_react`, as `gui-agent
serve` does) under uvicorn in a thread of this process, with a model that writes 20 words a
second until it is told to stop. For each chat length (messages already in the chat):

1. open: seconds from opening the chat in the page until it shows every message;
2. idle: CPU of all the browser's processes while the chat is open and nothing happens, in
   cores (1.0 is one core);
3. streaming: the same while a reply streams into it for S seconds;
4. lag: seconds from the reply's end on the server until the page shows the turn over, that
   is how far the page had fallen behind the stream.

The same figures for the Gradio page are `bench_long_chat.py`'s. Prints a table, and as the
very last line one JSON object with the figures. Needs /usr/bin/chromium and the React build
(scripts/build-react.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from fastapi import FastAPI  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from backends.api import create_api  # noqa: E402
from backends.react_front import REACT_DIST, mount_react  # noqa: E402
from connectors.function import FunctionInfo, FunctionModel  # noqa: E402
from gui_agent.auth import TokenService  # noqa: E402
from gui_agent.llm import StaticCatalog  # noqa: E402
from gui_agent.manager import SessionManager  # noqa: E402
from gui_agent.store import DB_FILE_NAME, SQLiteStore  # noqa: E402
from gui_agent.tokens import EstimateCounter  # noqa: E402
from schema import Message  # noqa: E402
from tests.backends.api.live import ServerThread  # noqa: E402
from tests.backends.conftest import CHROMIUM  # noqa: E402
from tests.bench.bench_long_chat import earlier_exchanges  # noqa: E402
from tests.bench.bench_page import browser_cpu_s, launch  # noqa: E402

WORDS_PER_S = 20
WAIT_MS = 120_000


class Held:
    """Replies that go on until let go, by the key in the person's message."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ended: set[str] = set()

    def let_go(self, key: str) -> None:
        with self._lock:
            self._ended.add(key)

    def ended(self, key: str) -> bool:
        with self._lock:
            return key in self._ended

    def model(self) -> FunctionModel:
        async def words(messages: list[Message], info: FunctionInfo) -> AsyncIterator[str]:
            key = messages[-1].content.split()[-1]
            number = 0
            while not self.ended(key):
                yield f"word{number} "
                number += 1
                await asyncio.sleep(1 / WORDS_PER_S)

        return FunctionModel(words, name="words")


def serve(folder: Path, held: Held) -> tuple[ServerThread, Callable[[], SessionManager]]:
    managers: list[SessionManager] = []

    async def factory() -> tuple[FastAPI, Callable[[], Any]]:
        manager = SessionManager(
            models=StaticCatalog(held.model()),
            store=SQLiteStore(folder / DB_FILE_NAME),
            workspace_root=folder / "workspaces",
            counter_factory=lambda _name: EstimateCounter(),
        )
        await manager.start()
        managers.append(manager)
        app = create_api(manager, TokenService("a bench signing key of 32 chars!"))
        mount_react(app)
        return app, manager.close

    return ServerThread(factory).start(), lambda: managers[0]


def grow(server: ServerThread, manager: SessionManager, session_id: str, exchanges: int) -> None:
    """Give the chat this many questions and answers, as if they had been said."""

    async def add() -> None:
        interpreter = await manager.get(session_id, "local")
        interpreter.session.history.extend(earlier_exchanges(exchanges))

    server.call(add())


def measure(
    browser: Any,
    server: ServerThread,
    manager: SessionManager,
    held: Held,
    messages: int,
    seconds: float,
) -> dict[str, float]:
    title = f"a chat of {messages} messages {uuid.uuid4().hex[:8]}"
    created = server.call(manager.create("local", title=title))
    grow(server, manager, created.id, messages // 2)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    try:
        page.goto(f"{server.base_url}/react/", wait_until="load")
        chats = page.get_by_role("navigation", name="Your chats")
        started = time.monotonic()
        chats.get_by_role("button", name=title).click()
        entries = page.get_by_role("list", name="Conversation").locator("li")
        expect(entries).to_have_count(messages // 2 * 2)
        open_s = time.monotonic() - started
        page.wait_for_timeout(1000)  # what opening the chat set moving ends
        cpu, started = browser_cpu_s(), time.monotonic()
        page.wait_for_timeout(seconds * 1000)
        idle = (browser_cpu_s() - cpu) / (time.monotonic() - started)
        key = uuid.uuid4().hex[:8]
        box = page.get_by_label("Message")
        box.fill(f"hold {key}")
        box.press("Enter")
        expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "RUNNING")
        cpu, started = browser_cpu_s(), time.monotonic()
        page.wait_for_timeout(seconds * 1000)
        streaming = (browser_cpu_s() - cpu) / (time.monotonic() - started)
        ended = time.monotonic()
        held.let_go(key)
        expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
        lag = time.monotonic() - ended
    finally:
        context.close()
    return {
        "open_s": round(open_s, 2),
        "idle_cores": round(idle, 3),
        "cores": round(streaming, 3),
        "lag_s": round(lag, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sizes", default="2,402", help="messages in the chat")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"this benchmark needs {CHROMIUM} (apt-get install -y chromium)")
    if not (REACT_DIST / "index.html").is_file():
        sys.exit("this benchmark needs the React build: scripts/build-react.sh")
    sizes = [int(size) for size in args.sizes.split(",")]
    expect.set_options(timeout=WAIT_MS)
    held = Held()
    results: dict[str, dict[str, float]] = {}
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as folder:
        server, manager = serve(Path(folder), held)
        browser = launch(playwright)
        try:
            for size in sizes:
                results[str(size)] = measure(browser, server, manager(), held, size, args.seconds)
        finally:
            browser.close()
            server.stop()
    print(f"{'messages':>9} {'open s':>7} {'idle':>6} {'cores':>6} {'lag s':>6}")
    for size in sizes:
        row = results[str(size)]
        print(
            f"{size:>9} {row['open_s']:>7} {row['idle_cores']:>6} {row['cores']:>6} "
            f"{row['lag_s']:>6}"
        )
    print(
        "open: from a click on the chat until the page shows it; idle and cores: CPU of the "
        f"browser's processes with the chat open, then while a reply streams at {WORDS_PER_S} "
        "words a second; lag: how long after the reply ended the page showed it"
    )
    print(json.dumps({"bench": "react", "seconds": args.seconds, "sizes": results}))


if __name__ == "__main__":
    main()
