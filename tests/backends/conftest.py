"""Browser-test fixtures: Debian's Chromium through Playwright, and a live app server.

`chromium` starts Playwright (sync API) for one test module and stops it after: a
Playwright sync session keeps an event loop running in the main thread, and while it does,
pytest-asyncio cannot run the suite's async tests. (pytest-playwright's `browser` fixture
lives for the whole session, so it is not used; `browser_type_launch_args` is still
pointed at Debian's Chromium for anyone who does use it.)

`LiveServer` runs a FastAPI app with the Gradio page mounted, under uvicorn, in a background
thread with its own event loop; the app is built inside that loop (Gradio creates and leaks
a loop of its own when a Blocks is built without one running). `server.call(coro)` runs a
coroutine on the server's loop, so tests can look at sessions the way the server sees them.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import pytest
import uvicorn
from fastapi import FastAPI
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

import backends.gradio  # noqa: F401  imports Gradio as the app does (gradio_import), first

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

T = TypeVar("T")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright launches the system Chromium (`playwright install` cannot run here)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("browser tests need Debian's chromium: apt-get install -y chromium")
    # The suite runs on three workers sharing two cores; a page assertion waits up
    # to 20 s (Playwright's default is 5 s) so a busy moment is not taken for a failure. A
    # passing assertion returns as soon as it holds: only a real failure waits that long.
    expect.set_options(timeout=20_000)
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_FLAGS}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """A headless Chromium for the tests of one module."""
    if not Path(CHROMIUM).exists():
        pytest.skip("browser tests need Debian's chromium: apt-get install -y chromium")
    # The suite runs on three workers sharing two cores; a page assertion waits up
    # to 20 s (Playwright's default is 5 s) so a busy moment is not taken for a failure. A
    # passing assertion returns as soon as it holds: only a real failure waits that long.
    expect.set_options(timeout=20_000)
    playwright = sync_playwright().start()
    try:
        # (--process-per-site: a tab of `WarmTabs` opens in the renderer its keeper holds)
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_FLAGS, "--process-per-site"], headless=True
        )
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()


class WarmTabs:
    """Fresh tabs on one site for the tests of one module, each opening in about half the
    time of a tab in a new browser context, with 40% less CPU (the chat page, measured).

    The tabs are pages of one browser context, and the browser runs with
    `--process-per-site`: a keeper page on the site (a small document at `keeper_path`)
    holds the site's renderer process, so each tab opens in it, its scripts already
    compiled, instead of starting a process and compiling the page's scripts anew.
    `reset()` after each test keeps the tabs apart: every tab but the keeper is closed, and
    the context's cookies and the storage of every origin the tabs were on are cleared, so
    the next tab starts as a new browser's would (a new chat, no login, no remembered
    settings).
    The HTTP cache is kept, as a person's browser keeps it. A test that closes the context
    itself (`tab.context.close()`) only makes the next tab start a new one. `init_script`
    runs in every tab before the page's own scripts (`BrowserContext.add_init_script`)."""

    STORAGE = "local_storage,indexeddb,cache_storage,service_workers,file_systems,websql"

    def __init__(
        self, browser: Browser, keeper_path: str, *, init_script: str = "", **options: Any
    ) -> None:
        self._browser = browser
        self._keeper_path = keeper_path
        self._init_script = init_script
        self._options = options
        self._context: BrowserContext | None = None
        self._keeper: Page | None = None
        self._origins: set[str] = set()

    def open(self, url: str) -> Page:
        """A new blank tab, ready to go to `url` (or any page of its origin)."""
        if self._context is None:
            context = self._browser.new_context(**self._options)
            context.on("close", self._forget)
            if self._init_script:
                context.add_init_script(self._init_script)
            keeper = context.new_page()
            keeper.goto(urljoin(url, self._keeper_path))
            self._context, self._keeper = context, keeper
        self._add_origin(url)
        return self._context.new_page()

    def reset(self) -> None:
        """Close the tabs opened and clear what they stored (see the class)."""
        context, keeper = self._context, self._keeper
        if context is None or keeper is None:
            return
        if keeper.is_closed():  # (a test closed it: start again with a new context)
            context.close()
            return
        for page in context.pages:
            if page is not keeper:
                self._add_origin(page.url)
                page.close()
        context.clear_cookies()
        cdp = context.new_cdp_session(keeper)
        try:
            for origin in sorted(self._origins):
                cdp.send(
                    "Storage.clearDataForOrigin", {"origin": origin, "storageTypes": self.STORAGE}
                )
        finally:
            cdp.detach()
        self._origins.clear()

    def close(self) -> None:
        if self._context is not None:
            self._context.close()

    def _add_origin(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https"):
            self._origins.add(f"{parts.scheme}://{parts.netloc}")

    def _forget(self, _context: BrowserContext) -> None:
        self._context = self._keeper = None
        self._origins.clear()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


class LiveServer:
    """An app served on a free loopback port from a background thread."""

    def __init__(self, build: Callable[[], Coroutine[Any, Any, tuple[FastAPI, Any]]]) -> None:
        self._build = build
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.loop: asyncio.AbstractEventLoop | None = None
        self.state: Any = None
        self.app: FastAPI | None = None
        self._server: uvicorn.Server | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="live-server", daemon=True)

    def start(self, timeout_s: float = 30.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise RuntimeError("the test server did not start in time")
        if self._error is not None:
            raise RuntimeError("the test server failed to start") from self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to the test thread
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        app, self.state = await self._build()
        self.app = app
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=3
        )
        self._server = uvicorn.Server(config)
        serving = asyncio.ensure_future(self._server.serve(sockets=[self._sock]))
        while not self._server.started and not serving.done():
            await asyncio.sleep(0.01)
        self._ready.set()
        await serving

    def call(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 10.0) -> T:
        """Run a coroutine on the server's loop and return its result."""
        assert self.loop is not None
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout_s)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(15)
        self._sock.close()


@contextlib.contextmanager
def live_server(
    build: Callable[[], Coroutine[Any, Any, tuple[FastAPI, Any]]],
) -> Iterator[LiveServer]:
    server = LiveServer(build)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def started(manager: Any) -> AsyncIterator[None]:
    """A FastAPI lifespan body: open the session manager, close it at shutdown."""
    await manager.start()
    try:
        yield
    finally:
        await manager.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("workspace")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test that fails is run once more before it counts as failed, and the rerun
    is reported ("1 rerun"). Several page tests race Gradio's own commit of a value typed
    just before an action (see the closing notes): on two workers sharing two cores they
    fail about once in ten full runs; a behaviour that is broken fails both times."""
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.flaky(reruns=1))
